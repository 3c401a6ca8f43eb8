// 2-rank (or more) MPI test app for the tracer's PMPI layer.
//   mpi_app [finalize|init-thread|no-finalize|pmpi] [PAUSE_MS]
// init-thread: as finalize, MPI started with MPI_Init_thread (FUNNELED), as
// most hybrid codes start it.
// pmpi: initialises and finalizes through PMPI_* (as a binding the tracer
// does not wrap would) and makes no other MPI call.
// PAUSE_MS (default 0): sleeps that long before MPI_Init and again before
// MPI_Finalize, so the MPI window (info.mpi_init_end/mpi_finalize_start) has
// known lower bounds.
// Each rank sends rank 0 <-> 1 a known payload so bytes can be checked:
//   Send/Recv: 1000 doubles (8000 bytes) each way per iteration, 5 iterations;
//   Allreduce: 100 doubles; Bcast: 10 ints from rank 0; Barrier, which rank 0
//   enters 300 ms late: the other ranks' MPI_Barrier time is >= 0.3 s.
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rtrace/rtrace.h"

int main(int argc, char** argv) {
  const int pause_ms = argc > 2 ? std::atoi(argv[2]) : 0;
  if (pause_ms > 0) usleep(static_cast<useconds_t>(pause_ms) * 1000);
  std::string mode = argc > 1 ? argv[1] : "finalize";
  if (mode == "pmpi") {
    PMPI_Init(&argc, &argv);
    PMPI_Finalize();
    return 0;
  }
  if (mode == "init-thread") {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<double> buf(1000, rank), sum(100), in(100, 1.0);
  rtrace_region_begin("exchange");
  for (int it = 0; it < 5; ++it) {
    if (rank == 0 && size > 1) {
      MPI_Send(buf.data(), 1000, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), 1000, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf.data(), 1000, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), 1000, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    }
  }
  rtrace_region_end("exchange");
  MPI_Allreduce(in.data(), sum.data(), 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int ints[10] = {0};
  MPI_Bcast(ints, 10, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) usleep(300 * 1000);
  MPI_Barrier(MPI_COMM_WORLD);
  std::printf("rank %d of %d sum %.0f active %d\n", rank, size, sum[0], rtrace_active());
  std::fflush(stdout);
  if (pause_ms > 0) usleep(static_cast<useconds_t>(pause_ms) * 1000);
  if (mode == "no-finalize") std::exit(0);
  MPI_Finalize();
  return 0;
}
