/* A shared library for the stripped-module test: an exported kernel (still
 * named from .dynsym when the library is stripped) calling a static helper
 * (no symbol at all once stripped). */
#include "sampled_lib_kernel.h"

static double __attribute__((noinline)) kernel_helper(long n) {
  volatile double a = 1;
  for (long i = 0; i < n; ++i) a = a * 0.9999999 + 1e-9 * (double)(i & 7);
  return a;
}

double sampled_kernel(long n) {
  volatile double a = 1;
  for (long i = 0; i < n; ++i) a = a * 0.9999999 + 1e-9 * (double)(i & 7);
  return a + kernel_helper(n);
}
