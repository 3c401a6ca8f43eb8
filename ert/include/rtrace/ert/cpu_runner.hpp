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
  double setup_seconds = 0;      // of which pinning and allocating the blocks (and first-touching the first run's part)
  // First-touching each block's part a run reaches for the first time, before
  // the run (the slowest thread's total): a VM's host may have to fault in
  // every page (about 1.5 s a GiB on an Emerald Rapids VM).
  double first_touch_seconds = 0;
  // DramSearch (sweep.hpp): where DRAM's range was found to start (0: not
  // found), the LLC's bandwidth it was judged against, and the measurements
  // that ran (the plan less the skipped ones, one-worker points as cut).
  double dram_start_found_bytes = 0;
  double llc_gbytes_per_s = 0;
  std::vector<Measurement> measured;
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
// there are more threads than CPUs), allocates its own block (sized for the
// plan's largest measurement; first-touched as the runs reach it, below), brings its core to a
// steady clock (calibrate_clock) and runs the kernels.
// Every timed run starts from a spinning start gate (no thread sleeps between
// runs, none is still waking up when the run starts): once every thread of a
// rank spins at the gate, the ranks meet in MPI_Barrier and the gate opens.
// Each thread times its own kernel; every rank's span, its workers' shortest
// own time and their start skew are gathered after the end (one collective).
// Each thread allocates its block for the plan's largest working set but
// first-touches only what each run reaches, before that run: a DramSearch
// that ends the sweep early never touches the rest.
CpuRunResult run_cpu_plan(const std::vector<Measurement>& plan, const TrialPolicy& policy, int threads,
                          RankGroup& ranks, const DramSearch& dram_search = {});

}  // namespace rtrace::ert
