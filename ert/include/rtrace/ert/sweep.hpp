// The plan of an ERT run and the adaptive-trials state machine that drives it.
//
// A plan is a list of Measurements (kernel x working set). The SweepController
// decides, for each, how many trials one timed run needs to last at least
// TrialPolicy::min_seconds: it predicts from the previous measurement of the
// same kernel, runs once (a warm-up that is also the calibration), rescales
// when the run was too short, then records `repeats` timed runs. Calibration
// uses each worker's own kernel time, never the span from the first worker's
// start to the last one's end: on a VM a worker can take a scheduler tick to
// wake, and a span made of that latency once kept 1-trial runs whose rate was
// FLOPs over wake-up time (issue 23). A kept run whose workers did not start
// together (start skew over TrialPolicy::max_start_skew_fraction of its span)
// is redone with more trials. It is pure
// logic (times come from outside), so the device drivers (OpenMP threads,
// MPI ranks, CUDA) share it and tests can drive it with synthetic times.
#pragma once

#include "rtrace/ert/kernel_spec.hpp"
#include "rtrace/ert/levels.hpp"

#include <cstddef>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace rtrace::ert {

enum class Series { Bandwidth, Flops };
const char* to_string(Series s) noexcept;  // "bandwidth", "flops"

struct Measurement {
  Series series = Series::Bandwidth;
  KernelSpec kernel;
  std::int64_t elements_per_worker = 0;  // per thread (CPU) or per SM (GPU)
  // The one-worker reference of the plausibility checks (consistency.hpp):
  // only thread 0 of rank 0 runs it, the other workers wait.
  bool one_worker = false;
  // Kept runs of this measurement (0: TrialPolicy::repeats) and the repeat
  // number of its first: the FLOP kernels the ceilings come from run in
  // groups at the start, the middle and the end of the plan, each group its
  // own repeats (make_cpu_plan), so a slowdown of part of the run is one
  // group's and the best group is the ceiling.
  int repeats = 0;
  int first_repeat = 0;
};

struct TrialPolicy {
  double min_seconds = 0.005;  // a timed run lasts at least this long
  int repeats = 5;             // timed runs kept per measurement
  int max_calibrations = 8;    // warm-up runs allowed to find the trial count
  // A run during which some thread was off its CPU (preempted) for more than
  // this fraction of the time is redone, up to max_redo_per_measurement times.
  double min_on_cpu_fraction = 0.9;
  int max_redo_per_measurement = 10;
  // A kept run whose last worker started more than this fraction of the run's
  // span after the first is redone with more trials (a redo like a preempted
  // run's); warm-ups are not checked (they calibrate on the workers' own time).
  double max_start_skew_fraction = 0.03;
  // Raising the trials of a skewed run stops at runs this long.
  double max_seconds_per_run = 0.02;
};

// The times of one run, as the device driver measured them.
struct RunTiming {
  double seconds = 0;                // the run's time: the slowest rank's first worker start to last worker end
  std::vector<double> rank_seconds;  // every rank's own span (empty = one rank with `seconds`)
  double on_cpu_fraction = 1.0;      // smallest fraction of its run any worker spent on its CPU (1 = undisturbed)
  double worker_seconds = NAN;       // the shortest worker's own kernel time (its start to its end); NaN = seconds
  double start_skew = 0;             // last worker start minus first, among workers that share a clock (a node)
};

// Planned run handed to the workers.
struct PlannedRun {
  std::size_t measurement = 0;  // index into the plan
  std::int64_t trials = 1;
  bool warmup = false;          // calibration/warm-up: timed but not kept
  bool first_of_measurement = false;
};

// One kept, timed run.
struct Sample {
  Series series = Series::Bandwidth;
  KernelSpec kernel;
  std::int64_t elements_per_worker = 0;
  std::int64_t working_set_bytes = 0;  // total over workers and ranks
  std::int64_t trials = 0;
  int workers = 1;                     // threads per rank, or SMs
  int ranks = 1;
  int repeat = 0;
  bool disturbed = false;              // kept although preempted or skewed: the redo budget was spent
  bool one_worker = false;             // the one-worker reference (Measurement::one_worker)
  double seconds = 0;                  // first worker start to last worker end: the slowest rank
  std::vector<double> rank_seconds;    // every rank's own time
  double bytes = 0;
  double flops = 0;
  double gbytes_per_s() const noexcept { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; }
  double gflops_per_s() const noexcept { return seconds > 0 ? flops / seconds / 1e9 : 0.0; }
};

// Where DRAM's range starts, found by the sweep itself (issue 32). A guest
// does not see its host's caches: on a Zen 5 VM each vCPU had a host cache
// of 3x the 32 MiB L3 it was told of (two vCPUs streamed 192 MiB from cache
// at 120-130 GB/s), on an Emerald Rapids VM the 260 MiB L3 it was told of is
// the host's, shared by both vCPUs (DRAM's 57 GB/s from 384 MiB on). The
// plan's DRAM start (dram_start_bytes) must hold for the first; sized for
// the second it first-touched 3 GiB, 4.4 s of a 7 s quick run. So the sweep
// looks: DRAM's range starts at the first of two consecutive points of the
// partition's bandwidth sweep, both at or above `earliest_bytes`, whose
// bandwidth (median of their repeats) stopped falling (the second at least
// 1 - flat_tolerance of the first) and both at most `below_llc` of the LLC's
// (the median over the sweep's points in the LLC's range): a plateau as high
// as the LLC's is a cache the guest is not told of (the Zen 5 VM's), not
// DRAM. Once found, the sweep runs `points` bandwidth points in DRAM's range
// and skips the larger ones, and a one-worker bandwidth point above the
// found start is cut to `one_worker_factor` x it (in whole blocks). Not
// found (no such pair before the plan's own start): the plan as it is.
struct DramSearch {
  double earliest_bytes = 0;  // 0: no search
  double latest_bytes = INFINITY;  // the plan's own start: no search beyond it
  double llc_low_bytes = 0, llc_high_bytes = 0;
  int points = 2;
  double flat_tolerance = 0.05;
  double below_llc = 0.8;
  double one_worker_factor = 1.0;
  std::int64_t block_elements = 1;
};

class SweepController {
 public:
  SweepController(std::vector<Measurement> plan, TrialPolicy policy, int workers, int ranks,
                  DramSearch dram_search = {});

  // The next run to do; false when the plan is finished.
  bool next(PlannedRun& run);
  // The time of the run last returned by next(): the slowest rank's seconds,
  // each rank's own (empty = one rank with `seconds`), and the smallest
  // fraction of its run any thread spent on its CPU (1 = undisturbed).
  void record(double seconds, const std::vector<double>& rank_seconds = {}, double on_cpu_fraction = 1.0);
  void record(const RunTiming& timing);

  const std::vector<Measurement>& plan() const noexcept { return plan_; }
  const std::vector<Sample>& samples() const noexcept { return samples_; }
  std::vector<Sample> take_samples() { return std::move(samples_); }
  std::size_t runs_done() const noexcept { return runs_; }
  std::size_t runs_redone() const noexcept { return redone_; }  // disturbed runs thrown away
  std::size_t runs_skewed() const noexcept { return skewed_; }  // of those, redone for their start skew
  std::size_t kept_disturbed() const noexcept { return kept_disturbed_; }  // disturbed runs kept (budget spent)
  // DramSearch: the working set DRAM's range was found to start at (0: not
  // found), the LLC's bandwidth it was judged against, and the measurements
  // skipped (plan indices).
  double dram_start_found_bytes() const noexcept { return dram_found_bytes_; }
  double llc_gbytes_per_s() const noexcept { return llc_gbs_; }
  const std::vector<std::size_t>& skipped() const noexcept { return skipped_; }

 private:
  std::int64_t predict_trials(const Measurement& m) const;

  std::vector<Measurement> plan_;
  TrialPolicy policy_;
  int workers_, ranks_;
  std::size_t current_ = 0;     // measurement index
  bool started_ = false;        // the current measurement has had its first run
  bool warming_ = true;         // its runs are still warm-ups (calibration)
  int calibrations_ = 0;
  int kept_ = 0;
  std::int64_t trials_ = 1;
  PlannedRun last_;
  std::size_t runs_ = 0;
  std::size_t redone_ = 0;
  std::size_t skewed_ = 0;
  std::size_t kept_disturbed_ = 0;
  int redo_in_measurement_ = 0;
  // seconds per (element x trial) of the last measurement, per series and kernel
  struct Rate {
    Series series;
    bool one_worker;
    KernelSpec kernel;
    double seconds_per_element_trial = 0;
  };
  std::vector<Rate> rates_;
  std::vector<Sample> samples_;
  // DramSearch state: the partition's bandwidth points done so far (working
  // set, median GB/s), what was found, the points since.
  void search_dram(const Measurement& done);
  bool skip_for_dram(std::size_t i);
  DramSearch search_;
  std::vector<std::pair<double, double>> bandwidth_points_;
  double dram_found_bytes_ = 0;
  double llc_gbs_ = 0;
  int dram_points_ = 0;
  std::vector<std::size_t> skipped_;
};

// The working set a measurement covers (total bytes over the workers and
// ranks that run it): what its samples record.
std::int64_t measurement_working_set_bytes(const Measurement& m, int workers, int ranks);

// What a CPU plan needs to know about the partition.
struct CpuPlanInputs {
  int threads = 1;
  int ranks = 1;
  bool quick = false;
  double l1_bytes_per_thread = 32 * 1024.0;     // data-cache share of one thread
  double llc_capacity_bytes = 32 * 1048576.0;   // last-level cache usable by the whole partition
  double dram_start_bytes = 0;                  // where DRAM's range starts (levels.hpp); 0: 4x the LLC
  double max_working_set_bytes = 0;             // memory cap for the sweep (0 = none)
  std::vector<Precision> precisions{Precision::FP64, Precision::FP32};
};

// Working sets (total bytes) of the bandwidth sweep: from 4 KiB per worker
// into DRAM's range (dram_start_bytes, level_range) up to kDramRangeSwept
// (quick: kDramRangeSweptQuick) times its start (or the memory cap),
// geometric: 4 points per octave below the LLC (2 when quick), 2 from the
// LLC to DRAM's range (the fall towards DRAM; no ceiling comes from there)
// and 4 in DRAM's range, where its plateau needs the points (full: 4, quick:
// 2, the first just past the start).
inline constexpr double kDramRangeSwept = 2.0;
inline constexpr double kDramRangeSweptQuick = 1.4143;  // sqrt(2): two points at 4 per octave
std::vector<double> bandwidth_working_sets(const CpuPlanInputs& in);

// The elements per worker of the FLOP series of precision `p`: a block that
// fits in L1 (half a thread's share, at most 16 KiB), whole register blocks.
std::int64_t flop_elements_per_worker(const CpuPlanInputs& in, Precision p, std::size_t block_elements);

// How many groups the FLOP kernels the ceilings come from are spread over
// (start, middle, end of the plan), and the kept runs of each group: the
// policy's repeats over the groups, rounded up (quick: 1 each, full: 2).
inline constexpr int kFlopTimeGroups = 3;
int flop_group_repeats(bool quick);

// The whole CPU plan, in this order: the high-F FLOP kernels (the three
// highest F of each precision and variant: the ceilings' samples) as group 0
// (the start), FP64 F=1 over bandwidth_working_sets(), every other F of each
// precision and variant, the high-F kernels again as group 1 (the middle),
// `before_end` (the one-worker reference), and group 2 (the end). Each
// group's measurements have flop_group_repeats() kept runs, numbered from
// group x flop_group_repeats() (Sample::repeat).
std::vector<Measurement> make_cpu_plan(const CpuPlanInputs& in, std::size_t block_elements_fp64,
                                       std::size_t block_elements_fp32,
                                       const std::vector<Measurement>& before_end = {});

// The one-worker reference of a partition of several workers (appended to
// its plan): for every precision and variant the FLOP kernels of the three
// highest F on the FLOP series' L1 block (`flop_elements(p)`), and one
// bandwidth working set per level of the hierarchy as one worker sees it
// (`one_worker_levels`: memory_levels(caches, 1)), in the middle of the
// level's range (DRAM: 1.25x its range's start, capped by
// `max_working_set_bytes`); the first cache three, from 4 KiB to half of it
// (its bandwidth falls across them: the partition's L1 ceiling is its best).
std::vector<double> one_worker_working_sets(const std::vector<MemoryLevel>& one_worker_levels,
                                            double max_working_set_bytes);
std::vector<Measurement> make_one_worker_plan(const std::vector<Precision>& precisions,
                                              const std::vector<double>& level_working_sets,
                                              std::int64_t flop_elements_fp64, std::int64_t flop_elements_fp32,
                                              std::size_t block_elements_fp64);

TrialPolicy default_policy(bool quick);

}  // namespace rtrace::ert
