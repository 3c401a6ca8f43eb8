/* An independent read-modify-write stream: a[i] = a[i] * s + t in place over
 * BYTES bytes split across the OpenMP threads (each first-touches its part).
 * 16 B per element and pass (one read, one write, no write-allocate: the line
 * is read anyway), the same accounting as ERT's F=1 kernel.
 * usage: rmw_stream BYTES   prints "rmw_gbs <best GB/s over the passes>". */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static double now(void) { return omp_get_wtime(); }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: rmw_stream BYTES\n");
    return 2;
  }
  const long n = atol(argv[1]) / 8;
  if (n < 1024) {
    fprintf(stderr, "rmw_stream: BYTES too small\n");
    return 2;
  }
  double* a = NULL;
  if (posix_memalign((void**)&a, 2 << 20, (size_t)n * sizeof(double)) != 0) {
    fprintf(stderr, "rmw_stream: cannot allocate %ld bytes\n", n * 8);
    return 1;
  }
#ifdef MADV_HUGEPAGE
  /* The same pages as ERT's working sets (transparent huge pages where the
   * kernel gives them only on request): TLB misses of 4 KiB pages cost a
   * stream 10-25% of its bandwidth, which is not what is compared. */
  madvise(a, (size_t)n * sizeof(double), MADV_HUGEPAGE);
#endif
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 1.0;
  const double s = 0.999999, t = 1e-7;
  double best = 0;
  double spent = 0;
  int passes = 0;
  /* At least 10 passes and 1 s of passes, the best kept (as ERT keeps a repeat's best sample). */
  while (passes < 10 || spent < 1.0) {
    const double t0 = now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = a[i] * s + t;
    const double dt = now() - t0;
    spent += dt;
    ++passes;
    const double gbs = 16.0 * (double)n / dt / 1e9;
    if (gbs > best) best = gbs;
  }
  double check = 0;
  for (long i = 0; i < n; i += 4096) check += a[i];
  printf("rmw_gbs %.3f passes %d threads %d bytes %ld check %.3f\n", best, passes, omp_get_max_threads(), n * 8, check);
  free(a);
  return 0;
}
