/* An independent STREAM-style triad, a[i] = b[i] + q*c[i], for comparing
 * with rtrace's DRAM ceiling (bench/ert_vs_stream.sh). Written for rtrace,
 * following STREAM's rules: each array at least 4x the last-level cache,
 * parallel first-touch, best of NTIMES, 24 bytes counted per element.
 * usage: stream_triad [array_bytes] [ntimes]        (threads: OMP_NUM_THREADS) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static double now(void) { return omp_get_wtime(); }

int main(int argc, char** argv) {
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (llc <= 0) llc = 32L << 20;
  size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)(4 * llc);
  if (bytes < (64UL << 20)) bytes = 64UL << 20;
  const int ntimes = argc > 2 ? atoi(argv[2]) : 20;
  const size_t n = bytes / sizeof(double);
  double *a, *b, *c;
  if (posix_memalign((void**)&a, 2 << 20, n * sizeof(double)) || posix_memalign((void**)&b, 2 << 20, n * sizeof(double)) ||
      posix_memalign((void**)&c, 2 << 20, n * sizeof(double))) {
    fprintf(stderr, "stream_triad: cannot allocate 3 x %zu bytes\n", bytes);
    return 1;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) {
    a[i] = 1.0;
    b[i] = 2.0;
    c[i] = 0.5;
  }
  const double q = 3.0;
  double best = 1e30, sum = 0;
  for (int k = 0; k < ntimes; ++k) {
    const double t0 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + q * c[i];
    const double t = now() - t0;
    if (k > 0 && t < best) best = t; /* the first pass is a warm-up, as in STREAM */
    sum += a[n / 2];
  }
  const double gbs = 3.0 * sizeof(double) * (double)n / best / 1e9;
  /* What really moves: the store's cache line is read first (write-allocate). */
  const double moved_gbs = 4.0 * sizeof(double) * (double)n / best / 1e9;
  printf("threads %d array_bytes %zu best_s %.6f triad_gbs %.3f triad_moved_gbs %.3f check %.1f\n", omp_get_max_threads(),
         bytes, best, gbs, moved_gbs, sum);
  free(a);
  free(b);
  free(c);
  return 0;
}
