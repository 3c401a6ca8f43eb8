/* An MPI app with a lot of work outside the MPI window (tests/counts): a
   serial loop before MPI_Init and after MPI_Finalize, a known one inside.
   Each loop iteration is one multiply and one add (2 FLOPs; -ffp-contract=off):
     outside_work(N_OUT) before MPI_Init, outside_work(2 N_OUT) after MPI_Finalize,
     inside_work(N_IN) between them, then one MPI_Allreduce of one double (MPI_MAX).
     mpi_window N_IN N_OUT */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) double outside_work(long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s = s * 0.999 + 1.0;
  return s;
}

__attribute__((noinline)) double inside_work(long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s = s * 0.5 + 2.0;
  return s;
}

int main(int argc, char** argv) {
  const long n_in = argc > 1 ? atol(argv[1]) : 100000;
  const long n_out = argc > 2 ? atol(argv[2]) : 1000000;
  double x = outside_work(n_out);
  MPI_Init(&argc, &argv);
  double local = inside_work(n_in), global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  x += outside_work(2 * n_out);
  printf("%g %g\n", global, x);
  return 0;
}
