/* Replicated work (tests/counts, issue 29): every OpenMP thread runs the
   whole triad over its own copy of N doubles REPS times, so the counted
   FLOPs of `replicated_triad` double from 1 thread to 2: the work itself
   changes between the points of a strong-scaling sweep.
     replicated N REPS */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void replicated_triad(double* restrict a, const double* restrict b,
                                                const double* restrict c, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: replicated N REPS\n");
    return 2;
  }
  const long n = atol(argv[1]);
  const int reps = atoi(argv[2]);
  double sum = 0;
#pragma omp parallel reduction(+ : sum)
  {
    double* a = malloc(sizeof(double) * (size_t)n);
    double* b = malloc(sizeof(double) * (size_t)n);
    double* c = malloc(sizeof(double) * (size_t)n);
    for (long i = 0; i < n; ++i) {
      b[i] = (double)i;
      c[i] = 1.0;
    }
    for (int r = 0; r < reps; ++r) replicated_triad(a, b, c, n);
    sum += a[n - 1];
    free(a);
    free(b);
    free(c);
  }
  printf("%g\n", sum);
  return 0;
}
