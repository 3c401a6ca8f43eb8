/* A tiny MPI program for the launcher tests: every rank reports itself.
 * `test_mpi abort-unless FILE`: on more than one rank, unless FILE exists,
 * rank 0 prints an ERROR line and calls MPI_Abort (mpirun then appends its
 * own notices to stderr): a point that fails with a reason, fixable by the user.
 * `test_mpi stdout-error-unless FILE`: the same failure as LAMMPS reports it
 * (issue 30): rank 0 prints its ERROR line and the last command on stdout,
 * every rank finalizes and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 2 && strcmp(argv[1], "abort-unless") == 0 && size > 1 && access(argv[2], F_OK) != 0) {
    if (rank == 0) {
      fprintf(stderr, "reading the grid\nERROR: cannot decompose the grid over %d ranks\n", size);
      fflush(stderr);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (argc > 2 && strcmp(argv[1], "stdout-error-unless") == 0 && size > 1 && access(argv[2], F_OK) != 0) {
    if (rank == 0) {
      printf("ERROR: Specified processors != physical processors (src/comm.cpp:313)\nLast command: processors 1 1 1\n");
      fflush(stdout);
    }
    MPI_Finalize();
    return 1;
  }
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d of %d sum %d\n", rank, size, sum);
  MPI_Finalize();
  return 0;
}
