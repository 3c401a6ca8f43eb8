/* The MPI app of the cluster tests: every rank names its host, works on an
 * annotated triad (declared FLOPs and bytes, so a sweep measures ceilings),
 * and the ranks meet in an MPI_Allreduce after every step.
 *
 *   cluster_mpi_app [--steps N] [--size ELEMENTS] [--slow-host HOST FACTOR]
 *                   [--hold-file PATH] [--hold-seconds S] [--hold-alone]
 *
 * --slow-host: ranks on HOST do FACTOR times the work (a slower node).
 * --hold-file: rank 0 creates PATH.running after MPI_Init; then every rank
 *   keeps meeting in MPI_Allreduce (every 50 ms) until PATH exists or
 *   --hold-seconds pass (default 120): the app a test can kill a node under.
 *   --hold-alone: while holding, every rank only polls PATH itself (no MPI
 *   call), so a rank outlives the death of any other: only Slurm can stop it.
 * Rank 0 prints "hosts: <distinct hosts in rank order>" and one line per
 * rank "rank R of N on HOST". */
#include <rtrace/rtrace.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOST_LEN 64

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* a = b + 3c, `repeat` times over. Each repeat adds to what the previous one
 * left in a and the caller uses a[] / repeat: no optimiser can drop a repeat
 * (issue 30: GCC -O3 ran `a[i] = b[i] + 3.0 * c[i]` once for repeat 1 and 8
 * alike, so the slow host was not slow in a Release build). */
static void triad(double* a, const double* b, const double* c, long n, int repeat) {
  rtrace_region_begin("triad");
  for (long i = 0; i < n; ++i) a[i] = 0;
  for (int r = 0; r < repeat; ++r)
    for (long i = 0; i < n; ++i) a[i] += b[i] + 3.0 * c[i];
  rtrace_region_end("triad");
  rtrace_region_counts("triad", 3.0 * (double)n * repeat, 0, 0, 0, 0, (8.0 + 32.0 * repeat) * (double)n);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int steps = 4;
  long n = 1L << 18;
  const char* slow_host = NULL;
  int slow_factor = 1;
  const char* hold_file = NULL;
  double hold_seconds = 120;
  int hold_alone = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--size") && i + 1 < argc) n = atol(argv[++i]);
    else if (!strcmp(argv[i], "--slow-host") && i + 2 < argc) {
      slow_host = argv[++i];
      slow_factor = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--hold-file") && i + 1 < argc) hold_file = argv[++i];
    else if (!strcmp(argv[i], "--hold-seconds") && i + 1 < argc) hold_seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--hold-alone")) hold_alone = 1;
    else {
      if (rank == 0) fprintf(stderr, "cluster_mpi_app: unknown argument `%s`\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }

  char host[HOST_LEN] = {0};
  gethostname(host, sizeof host - 1);
  char* hosts = malloc((size_t)size * HOST_LEN);
  MPI_Allgather(host, HOST_LEN, MPI_CHAR, hosts, HOST_LEN, MPI_CHAR, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("hosts:");
    for (int r = 0; r < size; ++r) {
      int seen = 0;
      for (int q = 0; q < r; ++q) seen |= !strcmp(hosts + (size_t)q * HOST_LEN, hosts + (size_t)r * HOST_LEN);
      if (!seen) printf(" %s", hosts + (size_t)r * HOST_LEN);
    }
    printf("\n");
    for (int r = 0; r < size; ++r) printf("rank %d of %d on %s\n", r, size, hosts + (size_t)r * HOST_LEN);
    fflush(stdout);
  }
  free(hosts);

  if (hold_file) {
    if (rank == 0) {
      char running[4096];
      snprintf(running, sizeof running, "%s.running", hold_file);
      FILE* f = fopen(running, "w");
      if (f) fclose(f);
    }
    const double until = now_s() + hold_seconds;
    int stop = 0;
    while (!stop) {
      usleep(50000);
      if (hold_alone) {
        stop = access(hold_file, F_OK) == 0 || now_s() > until;
        continue;
      }
      int mine = (rank == 0 && (access(hold_file, F_OK) == 0 || now_s() > until)) ? 1 : 0;
      MPI_Allreduce(&mine, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
  }

  double* a = malloc((size_t)n * sizeof *a);
  double* b = malloc((size_t)n * sizeof *b);
  double* c = malloc((size_t)n * sizeof *c);
  for (long i = 0; i < n; ++i) { a[i] = 0; b[i] = 1; c[i] = 2; }
  const int repeat = (slow_host && !strcmp(host, slow_host)) ? slow_factor : 1;
  double check = 0;
  for (int s = 0; s < steps; ++s) {
    triad(a, b, c, n, repeat);
    double local = a[n / 2] / repeat, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check += total;
  }
  if (rank == 0) printf("check %.1f (expected %.1f)\n", check, 7.0 * size * steps);
  free(a);
  free(b);
  free(c);
  MPI_Finalize();
  return 0;
}
