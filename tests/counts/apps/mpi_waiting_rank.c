/* Rank 0 runs a triad REPS times while every other rank waits for its result
   in MPI_Recv: under the counting tool a waiting rank polls Open MPI's
   progress engine for as long as rank 0 computes (tests/counts).
     mpi_waiting_rank N REPS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void triad(double* restrict a, const double* restrict b, const double* restrict c, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long n = argc > 1 ? atol(argv[1]) : 100000;
  const int reps = argc > 2 ? atoi(argv[2]) : 1;
  double result = 0;
  if (rank == 0) {
    double* a = malloc(sizeof(double) * (size_t)n);
    double* b = malloc(sizeof(double) * (size_t)n);
    double* c = malloc(sizeof(double) * (size_t)n);
    for (long i = 0; i < n; ++i) {
      b[i] = (double)i;
      c[i] = 1.0;
    }
    for (int r = 0; r < reps; ++r) triad(a, b, c, n);
    result = a[n - 1];
    for (int to = 1; to < size; ++to) MPI_Send(&result, 1, MPI_DOUBLE, to, 0, MPI_COMM_WORLD);
    free(a);
    free(b);
    free(c);
  } else {
    MPI_Recv(&result, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (rank == size - 1) printf("%g\n", result);
  MPI_Finalize();
  return 0;
}
