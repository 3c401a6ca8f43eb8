// Runs a plan on CPU threads (OpenMP), optionally across MPI ranks.
#pragma once

#include "rtrace/ert/rank_group.hpp"
#include "rtrace/ert/sweep.hpp"

#include <stdexcept>
#include <vector>

namespace rtrace::ert {

// Allocation or pinning failed; the message names the thread and size.
class CpuRunError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CpuRunResult {
  std::vector<Sample> samples;
  std::vector<int> thread_cpus;  // logical CPU each thread was pinned to (rank 0's view)
  std::vector<int> rank_cpus;    // the CPU of each rank's thread 0, in rank order
  double seconds = 0;            // wall time of the whole sweep
  std::size_t runs = 0;          // timed runs including warm-ups
  std::size_t runs_redone = 0;   // runs thrown away because a thread was preempted
};

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

// Every thread is pinned to its own CPU from allowed_cpus() (round-robin when
// there are more threads than CPUs), allocates and first-touches its own
// block (sized for the plan's largest measurement), and runs the kernels
// between barriers; rank 0's master times each run (MPI_Barrier before the
// start, every rank's time gathered after the end).
CpuRunResult run_cpu_plan(const std::vector<Measurement>& plan, const TrialPolicy& policy, int threads,
                          RankGroup& ranks);

}  // namespace rtrace::ert
