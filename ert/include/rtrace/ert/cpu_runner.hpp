// Runs a plan on CPU threads (OpenMP), optionally across MPI ranks.
#pragma once

#include "rtrace/ert/clock.hpp"
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
  double setup_seconds = 0;      // of which pinning, allocating and first-touching the blocks
  ClockCalibration clock;        // and the clock calibration before the first run (slowest worker; lowest clock)
  std::size_t runs = 0;          // timed runs including warm-ups
  std::size_t runs_redone = 0;   // runs thrown away: a thread was preempted or the workers started apart
  std::size_t runs_skewed = 0;   // of those, redone because the workers did not start together
  std::size_t kept_disturbed = 0;  // disturbed runs kept once the redo budget was spent
};

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();
// CPUID's hypervisor bit: a guest, whose caches may not be the host's
// (memory_levels). False off x86.
bool running_in_virtual_machine() noexcept;

// Every thread is pinned to its own CPU from allowed_cpus() (round-robin when
// there are more threads than CPUs), allocates and first-touches its own
// block (sized for the plan's largest measurement), brings its core to a
// steady clock (calibrate_clock) and runs the kernels.
// Every timed run starts from a spinning start gate (no thread sleeps between
// runs, none is still waking up when the run starts): once every thread of a
// rank spins at the gate, the ranks meet in MPI_Barrier and the gate opens.
// Each thread times its own kernel; every rank's span, its workers' shortest
// own time and their start skew are gathered after the end (one collective).
CpuRunResult run_cpu_plan(const std::vector<Measurement>& plan, const TrialPolicy& policy, int threads,
                          RankGroup& ranks);

}  // namespace rtrace::ert
