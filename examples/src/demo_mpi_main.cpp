// rtrace-demo-mpi: the demo kernels split across MPI ranks (OpenMP inside each
// rank). stencil7 and gsrb are split into z-slabs with a halo exchange before
// every sweep; triad splits the arrays, dgemm the rows of C, gpp the bands.
#include "demo_driver.hpp"

#include <mpi.h>

#include <cstdio>

namespace {

class MpiProcessGroup : public rtrace::demo::ProcessGroup {
 public:
  MpiProcessGroup() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  void sum(double* values, int count) override {
    MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  double max(double value) override {
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return value;
  }
  bool all(bool value) override {
    int v = value ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return v != 0;
  }
  void abort(int code) override {
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }
  void exchange_planes(double* ghost_lo, const double* first, double* ghost_hi, const double* last,
                       std::size_t count) override {
    const int down = rank_ > 0 ? rank_ - 1 : MPI_PROC_NULL;
    const int up = rank_ + 1 < size_ ? rank_ + 1 : MPI_PROC_NULL;
    const int n = static_cast<int>(count);
    // Upward: my top plane to the rank above, the one below's top plane into my lower ghost.
    MPI_Sendrecv(last, n, MPI_DOUBLE, up, 1, ghost_lo, n, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    // Downward: my bottom plane to the rank below, the one above's bottom plane into my upper ghost.
    MPI_Sendrecv(first, n, MPI_DOUBLE, down, 2, ghost_hi, n, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  // FUNNELED: only the main thread calls MPI (between OpenMP parallel loops).
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int code = 0;
  {
    rtrace::demo::ProgramInfo program;
    program.name = "rtrace-demo-mpi";
    program.kernels = {"triad", "stencil7", "gsrb", "gpp", "dgemm", "all"};
    MpiProcessGroup group;
    code = rtrace::demo::run_cpu_demo(program, argc, argv, group);
  }
  // Every rank reaches the same exit code (errors are collective or usage errors
  // seen by all ranks); runtime exceptions on one rank abort the job instead.
  MPI_Finalize();
  return code;
}
