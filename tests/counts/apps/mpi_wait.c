/* A fixed amount of work in PHASES phases, phase i computed by rank i % size
   (a triad of N doubles, REPS times). Schedule `wait`: every rank meets the
   others at a barrier after each phase, so with 2 ranks each waits half the
   time (under the counting tool it spins in Open MPI's progress engine);
   `free`: each rank runs its own phases back to back, one barrier at the end.
   Both do the same FLOPs and bytes per rank (tests/counts, issue 29).
     mpi_wait wait|free N REPS PHASES */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void phase_triad(double* restrict a, const double* restrict b, const double* restrict c,
                                           long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 5 || (strcmp(argv[1], "wait") != 0 && strcmp(argv[1], "free") != 0)) {
    if (rank == 0) fprintf(stderr, "usage: mpi_wait wait|free N REPS PHASES\n");
    MPI_Finalize();
    return 2;
  }
  const int wait = strcmp(argv[1], "wait") == 0;
  const long n = atol(argv[2]);
  const int reps = atoi(argv[3]), phases = atoi(argv[4]);
  double* a = malloc(sizeof(double) * (size_t)n);
  double* b = malloc(sizeof(double) * (size_t)n);
  double* c = malloc(sizeof(double) * (size_t)n);
  for (long i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = (double)i;
    c[i] = 1.0;
  }
  for (int p = 0; p < phases; ++p) {
    if (p % size == rank)
      for (int r = 0; r < reps; ++r) phase_triad(a, b, c, n);
    if (wait) MPI_Barrier(MPI_COMM_WORLD);
  }
  if (!wait) MPI_Barrier(MPI_COMM_WORLD);
  double local = a[n - 1], global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%g\n", global);
  free(a);
  free(b);
  free(c);
  MPI_Finalize();
  return 0;
}
