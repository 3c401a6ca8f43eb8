/* Known-answer OpenMP app for the analysis tests. Busy work is a fixed amount of
 * CPU time of the thread that does it (CLOCK_THREAD_CPUTIME_ID), as a real
 * code's fixed work: on a loaded machine the wall time grows, the CPU time and
 * the samples do not, so the causes that rest on them keep their answer.
 *   omp_threads work SECONDS     split over the OpenMP threads (scales)
 *   omp_threads ignore SECONDS   one thread does everything: the app ignores OMP_NUM_THREADS
 *   omp_threads spin SECONDS     thread 0 does everything inside a parallel region while the
 *                                others wait at its end in the OpenMP runtime (they spin there
 *                                with OMP_WAIT_POLICY=active)
 *   omp_threads serial SECONDS   80% in a serial setup function, 20% split over the threads
 *   omp_threads lock SECONDS     the work is 2 ms units taken under one pthread mutex, with a
 *                                little private work between them: the threads wait their turn
 *   omp_threads idle SECONDS     SECONDS of work shared so that the last thread gets 60% of the
 *                                others' share and waits at the region's barrier (a known idle
 *                                share: 20% of the workers' time at 2 threads)
 *   omp_threads stream SECONDS   a fixed number of passes over three 64 MiB arrays (triad),
 *                                split over the threads: bound by memory bandwidth; SECONDS is
 *                                the wanted time at one thread on a machine with ~40 GB/s
 * Built as analysis_mpi_omp_threads with -DWITH_MPI: MPI_Init/MPI_Finalize around
 * it (an MPI-linked OpenMP code run as one rank). */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef WITH_MPI
#include <mpi.h>
#endif

static double thread_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Inlined into its callers, so the samples name them (`busy [inlined in serial_setup]`). */
static inline __attribute__((always_inline)) double busy(double seconds) {
  double start = thread_cpu_seconds(), x = 1.0;
  while (thread_cpu_seconds() - start < seconds)
    for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

/* Named, not inlined: the sampled profile must see the serial part as its own function. */
__attribute__((noinline)) double serial_setup(double seconds) { return busy(seconds); }
__attribute__((noinline)) double parallel_work(double seconds) { return busy(seconds); }

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) double locked_units(double total) {
  const double unit = 0.002;
  const long units = (long)(total / unit);
  long taken = 0;
  double sink = 0;
#pragma omp parallel reduction(+ : sink)
  {
    for (;;) {
      sink += busy(unit / 10); /* private work between the locked units */
      pthread_mutex_lock(&g_lock);
      const int done = taken >= units;
      if (!done) {
        ++taken;
        sink += busy(unit);
      }
      pthread_mutex_unlock(&g_lock);
      if (done) break;
    }
  }
  return sink;
}

__attribute__((noinline)) double stream_passes(long passes) {
  const long n = 8L << 20; /* 8 Mi doubles = 64 MiB per array */
  double* a = malloc((size_t)n * sizeof *a);
  double* b = malloc((size_t)n * sizeof *b);
  double* c = malloc((size_t)n * sizeof *c);
  if (!a || !b || !c) return 0;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  for (long p = 0; p < passes; ++p) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + 0.5 * c[i];
  }
  double s = a[n / 2];
  free(a), free(b), free(c);
  return s;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s work|ignore|spin|serial|lock|idle|stream SECONDS\n", argv[0]);
    return 2;
  }
#ifdef WITH_MPI
  MPI_Init(&argc, &argv);
#endif
  const double total = atof(argv[2]);
  double sink = 0;
  if (strcmp(argv[1], "work") == 0) {
#pragma omp parallel reduction(+ : sink)
    sink += busy(total / omp_get_num_threads());
  } else if (strcmp(argv[1], "ignore") == 0) {
    sink = busy(total);
  } else if (strcmp(argv[1], "spin") == 0) {
    /* Thread 0 does everything; the others wait at the region's end, in the OpenMP runtime
     * (spinning there under OMP_WAIT_POLICY=active, as BLAS libraries and tuned runtimes do). */
#pragma omp parallel reduction(+ : sink)
    {
      if (omp_get_thread_num() == 0) sink += serial_setup(total);
    }
  } else if (strcmp(argv[1], "serial") == 0) {
    sink = serial_setup(0.8 * total);
#pragma omp parallel reduction(+ : sink)
    sink += parallel_work(0.2 * total / omp_get_num_threads());
  } else if (strcmp(argv[1], "lock") == 0) {
    sink = locked_units(total);
  } else if (strcmp(argv[1], "idle") == 0) {
    /* SECONDS of work in all: every thread a share s, the last 0.6 s (t s - 0.4 s = SECONDS). */
#pragma omp parallel reduction(+ : sink)
    {
      const int t = omp_get_num_threads();
      const double share = t > 1 ? total / (t - 0.4) : total;
      sink += parallel_work(t > 1 && omp_get_thread_num() == t - 1 ? 0.6 * share : share);
    }
  } else if (strcmp(argv[1], "stream") == 0) {
    /* 3 x 64 MiB moved per pass: about 5 ms at 40 GB/s (6 ms on one thread of the project's VM).
     * The passes must dominate: freeing the arrays is serial kernel work (16-18 ms on that VM,
     * on one thread or two), and at 26 passes it was 6% of the one-thread run, so the app lost
     * more than the 5% tolerance to a real serial part and was rightly named serial-fraction. */
    sink = stream_passes((long)(total / 0.005) + 1);
  } else {
    fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
#ifdef WITH_MPI
    MPI_Finalize();
#endif
    return 2;
  }
#ifdef WITH_MPI
  MPI_Finalize();
#endif
  printf("%g\n", sink > 0 ? 1.0 : 0.0);
  return 0;
}
