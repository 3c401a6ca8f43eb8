/* A 7-point Jacobi sweep over an N^3 grid, ITERS times: the counting pass's
   cost on a stencil with some reuse (bench/counts_overhead.sh).
     stencil N ITERS */
#include <stdio.h>
#include <stdlib.h>

#define IDX(i, j, k) ((size_t)(i) * (size_t)n * (size_t)n + (size_t)(j) * (size_t)n + (size_t)(k))

__attribute__((noinline)) void sweep(double* restrict out, const double* restrict in, int n) {
  for (int i = 1; i < n - 1; ++i)
    for (int j = 1; j < n - 1; ++j)
      for (int k = 1; k < n - 1; ++k)
        out[IDX(i, j, k)] = 0.4 * in[IDX(i, j, k)] + 0.1 * (in[IDX(i - 1, j, k)] + in[IDX(i + 1, j, k)] +
                                                            in[IDX(i, j - 1, k)] + in[IDX(i, j + 1, k)] +
                                                            in[IDX(i, j, k - 1)] + in[IDX(i, j, k + 1)]);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: stencil N ITERS\n");
    return 2;
  }
  const int n = atoi(argv[1]), iters = atoi(argv[2]);
  double* a = calloc((size_t)n * n * n, sizeof(double));
  double* b = calloc((size_t)n * n * n, sizeof(double));
  if (!a || !b) return 1;
  for (size_t i = 0; i < (size_t)n * n * n; ++i) a[i] = (double)(i % 13);
  for (int t = 0; t < iters; ++t) {
    sweep(b, a, n);
    double* x = a;
    a = b;
    b = x;
  }
  printf("%g\n", a[IDX(n / 2, n / 2, n / 2)]);
  free(a);
  free(b);
  return 0;
}
