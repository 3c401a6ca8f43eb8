/* Known-answer OpenMP app for the analysis tests: SECONDS of busy work, timed by
 * the wall clock so the known answers do not depend on the machine's load.
 *   omp_threads work SECONDS     split over the OpenMP threads (scales)
 *   omp_threads ignore SECONDS   one thread does everything: the app ignores OMP_NUM_THREADS
 *   omp_threads spin SECONDS     thread 0 does everything while the others spin on a flag
 *                                (busy waiting, as OpenMP runtimes and BLAS libraries do with an
 *                                active wait policy) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double busy(double seconds) {
  double start = now_seconds(), x = 1.0;
  while (now_seconds() - start < seconds)
    for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s work|ignore|spin SECONDS\n", argv[0]);
    return 2;
  }
  const double total = atof(argv[2]);
  double sink = 0;
  if (strcmp(argv[1], "work") == 0) {
#pragma omp parallel reduction(+ : sink)
    sink += busy(total / omp_get_num_threads());
  } else if (strcmp(argv[1], "ignore") == 0) {
    sink = busy(total);
  } else if (strcmp(argv[1], "spin") == 0) {
    volatile int done = 0;
#pragma omp parallel shared(done) reduction(+ : sink)
    {
      if (omp_get_thread_num() == 0) {
        sink += busy(total);
        __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
      } else {
        while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        }
      }
    }
  } else {
    fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
    return 2;
  }
  printf("%g\n", sink > 0 ? 1.0 : 0.0);
  return 0;
}
