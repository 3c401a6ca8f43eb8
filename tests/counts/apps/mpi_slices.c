/* A fixed problem of N elements split among the MPI ranks: each rank runs a
   triad over its slice REPS times, then one MPI_Allreduce of one double.
   The ranks' counts of `triad_slice` add up to the 1-rank count (tests/counts).
     mpi_slices N REPS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void triad_slice(double* restrict a, const double* restrict b, const double* restrict c,
                                           long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long n = argc > 1 ? atol(argv[1]) : 100000;
  const int reps = argc > 2 ? atoi(argv[2]) : 1;
  const long first = n * rank / size, last = n * (rank + 1) / size, mine = last - first;
  double* a = malloc(sizeof(double) * (size_t)(mine > 0 ? mine : 1));
  double* b = malloc(sizeof(double) * (size_t)(mine > 0 ? mine : 1));
  double* c = malloc(sizeof(double) * (size_t)(mine > 0 ? mine : 1));
  for (long i = 0; i < mine; ++i) {
    b[i] = (double)(first + i);
    c[i] = 1.0;
  }
  for (int r = 0; r < reps; ++r) triad_slice(a, b, c, mine);
  double local = mine > 0 ? a[mine - 1] : 0.0, global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%g\n", global);
  free(a);
  free(b);
  free(c);
  MPI_Finalize();
  return 0;
}
