/* Built with -mavx512f: the AVX-512 instruction Valgrind 3.19 cannot decode
   must end the counting run with one clear line (tests/counts). */
#include <immintrin.h>
#include <stdio.h>

__attribute__((noinline)) double add512(const double* a, const double* b) {
  __m512d x = _mm512_loadu_pd(a);
  __m512d y = _mm512_loadu_pd(b);
  double out[8];
  _mm512_storeu_pd(out, _mm512_add_pd(x, y));
  return out[0] + out[7];
}

int main(void) {
  double a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  printf("%g\n", add512(a, b));
  return 0;
}
