/* C = A B of order n through the system BLAS (Debian: OpenBLAS, unmodified):
   2 n^3 FLOPs (tests/counts, bench/counts_overhead.sh).
     dgemm N [REPS] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: dgemm N [REPS]\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  const int reps = argc > 2 ? atoi(argv[2]) : 1;
  double* a = malloc(sizeof(double) * (size_t)n * (size_t)n);
  double* b = malloc(sizeof(double) * (size_t)n * (size_t)n);
  double* c = calloc((size_t)n * (size_t)n, sizeof(double));
  if (!a || !b || !c) {
    fprintf(stderr, "dgemm: out of memory\n");
    return 1;
  }
  for (long i = 0; i < (long)n * n; ++i) {
    a[i] = (double)(i % 7) * 0.5;
    b[i] = (double)(i % 5) * 0.25;
  }
  for (int r = 0; r < reps; ++r)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
  printf("%g\n", c[(long)n * n / 2]);
  free(a);
  free(b);
  free(c);
  return 0;
}
