/* Known-answer MPI app for the analysis tests: a fixed amount of busy work
 * split over the ranks, then one barrier.
 *   mpi_split balanced SECONDS   every rank gets SECONDS / ranks
 *   mpi_split 3:1 SECONDS        rank 0 gets 3 parts, every other rank 1 part
 *   mpi_split last3x SECONDS     every rank gets SECONDS / ranks, the last rank 3 times that
 *                                (issue 23: at 2 ranks the total work doubles and the ranks
 *                                are imbalanced: factors 2x and 1.5x)
 *   mpi_split none SECONDS       no MPI call between Init and Finalize (communication-free)
 *   ... SECONDS init_thread       the same, MPI started with MPI_Init_thread (FUNNELED), as
 *                                most hybrid codes start it (issue 30)
 * Work is busy computing for a wall-clock time, so the shares (and the known
 * answers) do not depend on how loaded the machine is. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile double sink;

static void busy(double seconds) {
  double start = now_seconds(), x = 1.0;
  while (now_seconds() - start < seconds)
    for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
}

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && strcmp(argv[3], "init_thread") == 0)) {
    fprintf(stderr, "usage: %s balanced|3:1|last3x|none SECONDS [init_thread]\n", argv[0]);
    return 2;
  }
  double total = atof(argv[2]);
  if (argc == 4) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double share = total / size;
  if (strcmp(argv[1], "3:1") == 0 && size > 1) {
    double part = total / (size + 2);  /* rank 0: 3 parts, the others 1 part each */
    share = rank == 0 ? 3 * part : part;
  }
  if (strcmp(argv[1], "last3x") == 0 && size > 1 && rank == size - 1) share *= 3;
  busy(share);
  if (strcmp(argv[1], "none") != 0) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
