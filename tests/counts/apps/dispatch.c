/* Run-time dispatch as OpenBLAS does it (tests/counts, issue 29): the dot
   product's kernel is picked when the program starts, `dot_kernel_PRESCOTT`
   when it runs natively and `dot_kernel_HASWELL` under Valgrind (the counting
   tool), as OpenBLAS picks its Prescott kernels on a CPU it does not know and
   its Haswell kernels on the CPU Valgrind shows. Both do the same FLOPs.
     dispatch N REPS */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

__attribute__((noinline)) double dot_kernel_PRESCOTT(const double* x, const double* y, long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

__attribute__((noinline)) double dot_kernel_HASWELL(const double* x, const double* y, long n) {
  double s0 = 0, s1 = 0;  // another code path: two accumulators
  long i = 0;
  for (; i + 1 < n; i += 2) {
    s0 += x[i] * y[i];
    s1 += x[i + 1] * y[i + 1];
  }
  for (; i < n; ++i) s0 += x[i] * y[i];
  return s0 + s1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: dispatch N REPS\n");
    return 2;
  }
  const long n = atol(argv[1]);
  const int reps = atoi(argv[2]);
  double (*dot)(const double*, const double*, long) = RUNNING_ON_VALGRIND ? dot_kernel_HASWELL : dot_kernel_PRESCOTT;
  double* x = malloc(sizeof(double) * (size_t)n);
  double* y = malloc(sizeof(double) * (size_t)n);
  for (long i = 0; i < n; ++i) {
    x[i] = 1.0 / (double)(i + 1);
    y[i] = (double)(i % 7);
  }
  double s = 0;
  for (int r = 0; r < reps; ++r) s += dot(x, y, n);
  printf("%g\n", s);
  free(x);
  free(y);
  return 0;
}
