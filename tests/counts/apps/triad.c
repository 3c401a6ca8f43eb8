/* STREAM triad a[i] = b[i] + s * c[i] over n doubles, `reps` times, in its
   own function: 2 FLOPs and 24 bytes (two 8-byte loads, one store) per
   element. Before it, a read-only sweep over `flush_bytes` pushes the dirty
   lines of the initialisation out of every cache level, so that the triad's
   own traffic is what the counts measure (tests/counts).
     triad N [REPS] [FLUSH_BYTES] */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void triad(double* restrict a, const double* restrict b, const double* restrict c,
                                     double s, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

__attribute__((noinline)) double flush(const double* buf, long n) {
  double sum = 0;
  for (long i = 0; i < n; i += 8) sum += buf[i];   /* one load per 64-byte line */
  return sum;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: triad N [REPS] [FLUSH_BYTES]\n");
    return 2;
  }
  const long n = atol(argv[1]);
  const int reps = argc > 2 ? atoi(argv[2]) : 1;
  const long flush_n = argc > 3 ? atol(argv[3]) / (long)sizeof(double) : 0;
  double* a = malloc(sizeof(double) * (size_t)n);
  double* b = malloc(sizeof(double) * (size_t)n);
  double* c = malloc(sizeof(double) * (size_t)n);
  double* f = flush_n > 0 ? calloc((size_t)flush_n, sizeof(double)) : NULL;
  if (!a || !b || !c || (flush_n > 0 && !f)) {
    fprintf(stderr, "triad: out of memory\n");
    return 1;
  }
  for (long i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  double sink = f ? flush(f, flush_n) : 0.0;
  for (int r = 0; r < reps; ++r) triad(a, b, c, 3.0, n);
  printf("%g %g\n", a[n / 2], sink);
  free(a);
  free(b);
  free(c);
  free(f);
  return 0;
}
