/* A time-stepping loop with a known FLOP count per step (tests/counts):
   setup() before the loop, STEPS calls of timestep(), wrapup() after it.
     timestep: a[i] = 0.5 a[i] + b[i] for N elements, 2 N FLOPs per call
     setup:    N FLOPs (one multiply per element), wrapup: N FLOPs (a sum)
     steps N STEPS */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void setup(double* a, double* b, long n) {
  for (long i = 0; i < n; ++i) {
    a[i] = (double)i;
    b[i] = (double)i * 0.25;
  }
}

__attribute__((noinline)) void timestep(double* restrict a, const double* restrict b, long n) {
  for (long i = 0; i < n; ++i) a[i] = a[i] * 0.5 + b[i];
}

__attribute__((noinline)) double wrapup(const double* a, long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += a[i];
  return s;
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 1000;
  const int steps = argc > 2 ? atoi(argv[2]) : 10;
  double* a = malloc(sizeof(double) * (size_t)n);
  double* b = malloc(sizeof(double) * (size_t)n);
  if (!a || !b) return 1;
  setup(a, b, n);
  for (int s = 0; s < steps; ++s) timestep(a, b, n);
  printf("%g\n", wrapup(a, n));
  free(a);
  free(b);
  return 0;
}
