// Test app for the sampler under MPI: rank 0 alone runs `rank0_setup`, every
// rank then does its share of `distributed_work` and meets in MPI_Allreduce.
//   sampled_mpi_app [serial_units] [parallel_units]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#define BURN(units, acc)                                          \
  for (long burn_i = 0; burn_i < (units) * 2000000L; ++burn_i) { \
    acc = acc * 0.999999 + static_cast<double>(burn_i & 7) * 1e-9; \
  }

__attribute__((noinline)) double rank0_setup(long units) {
  volatile double acc = 1;
  BURN(units, acc);
  return acc;
}

__attribute__((noinline)) double distributed_work(long units) {
  volatile double acc = 1;
  BURN(units, acc);
  return acc;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long serial = argc > 1 ? std::atol(argv[1]) : 30;
  const long parallel = argc > 2 ? std::atol(argv[2]) : 60;
  double local = 0;
  if (rank == 0) local += rank0_setup(serial);
  local += distributed_work(parallel / size);
  double total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("total %.3f ranks %d\n", total, size);
  MPI_Finalize();
  return 0;
}
