/* The app of the stripped-module test: calls the library's exported kernel and
 * burns as long in a static function of its own (no symbol once stripped).
 *   sampled_lib_app [iterations, default 1e8] */
#include <stdio.h>
#include <stdlib.h>

#include "sampled_lib_kernel.h"

static double __attribute__((noinline)) app_local_work(long n) {
  volatile double a = 1;
  for (long i = 0; i < n; ++i) a = a * 0.9999999 + 1e-9 * (double)(i & 7);
  return a;
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 100000000L;
  printf("%f\n", sampled_kernel(n) + app_local_work(2 * n));
  return 0;
}
