// The plan of an ERT run and the adaptive-trials state machine that drives it.
//
// A plan is a list of Measurements (kernel x working set). The SweepController
// decides, for each, how many trials one timed run needs to last at least
// TrialPolicy::min_seconds: it predicts from the previous measurement of the
// same kernel, runs once (a warm-up that is also the calibration), rescales
// when the run was too short, then records `repeats` timed runs. It is pure
// logic (times come from outside), so the device drivers (OpenMP threads,
// MPI ranks, CUDA) share it and tests can drive it with synthetic times.
#pragma once

#include "rtrace/ert/kernel_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rtrace::ert {

enum class Series { Bandwidth, Flops };
const char* to_string(Series s) noexcept;  // "bandwidth", "flops"

struct Measurement {
  Series series = Series::Bandwidth;
  KernelSpec kernel;
  std::int64_t elements_per_worker = 0;  // per thread (CPU) or per SM (GPU)
};

struct TrialPolicy {
  double min_seconds = 0.005;  // a timed run lasts at least this long
  int repeats = 5;             // timed runs kept per measurement
  int max_calibrations = 8;    // warm-up runs allowed to find the trial count
  // A run during which some thread was off its CPU (preempted) for more than
  // this fraction of the time is redone, up to max_redo_per_measurement times.
  double min_on_cpu_fraction = 0.9;
  int max_redo_per_measurement = 10;
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
  double seconds = 0;                  // barrier to barrier: the slowest rank
  std::vector<double> rank_seconds;    // every rank's own time
  double bytes = 0;
  double flops = 0;
  double gbytes_per_s() const noexcept { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; }
  double gflops_per_s() const noexcept { return seconds > 0 ? flops / seconds / 1e9 : 0.0; }
};

class SweepController {
 public:
  SweepController(std::vector<Measurement> plan, TrialPolicy policy, int workers, int ranks);

  // The next run to do; false when the plan is finished.
  bool next(PlannedRun& run);
  // The time of the run last returned by next(): the slowest rank's seconds,
  // each rank's own (empty = one rank with `seconds`), and the smallest
  // fraction of its run any thread spent on its CPU (1 = undisturbed).
  void record(double seconds, const std::vector<double>& rank_seconds = {}, double on_cpu_fraction = 1.0);

  const std::vector<Measurement>& plan() const noexcept { return plan_; }
  const std::vector<Sample>& samples() const noexcept { return samples_; }
  std::vector<Sample> take_samples() { return std::move(samples_); }
  std::size_t runs_done() const noexcept { return runs_; }
  std::size_t runs_redone() const noexcept { return redone_; }  // disturbed runs thrown away

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
  int redo_in_measurement_ = 0;
  // seconds per (element x trial) of the last measurement, per kernel family
  struct Rate {
    KernelSpec kernel;
    double seconds_per_element_trial = 0;
  };
  std::vector<Rate> rates_;
  std::vector<Sample> samples_;
};

// What a CPU plan needs to know about the partition.
struct CpuPlanInputs {
  int threads = 1;
  int ranks = 1;
  bool quick = false;
  double l1_bytes_per_thread = 32 * 1024.0;     // data-cache share of one thread
  double llc_capacity_bytes = 32 * 1048576.0;   // last-level cache usable by the whole partition
  double max_working_set_bytes = 0;             // memory cap for the sweep (0 = none)
  std::vector<Precision> precisions{Precision::FP64, Precision::FP32};
};

// Working sets (total bytes) of the bandwidth sweep: from 4 KiB per worker to
// 4x the LLC capacity (or the memory cap), geometric with 4 points per octave
// (2 below the LLC when quick) and 4 per octave above the LLC, where the DRAM
// plateau must have enough points.
std::vector<double> bandwidth_working_sets(const CpuPlanInputs& in);

// The whole CPU plan: FP64 F=1 over bandwidth_working_sets(), then for each
// precision, FMA and no-FMA, every F = 1..1024 on a block that fits in L1.
std::vector<Measurement> make_cpu_plan(const CpuPlanInputs& in, std::size_t block_elements_fp64,
                                       std::size_t block_elements_fp32);

TrialPolicy default_policy(bool quick);

}  // namespace rtrace::ert
