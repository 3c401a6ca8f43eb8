// Physical consistency of ERT ceilings (docs: ert/README.md, "Trust").
//
// Checks: bandwidth does not rise from L1 towards DRAM beyond the noise
// tolerance; no FLOP ceiling above the partition's theoretical peak where it
// can be computed (cores x SIMD lanes x 2 FMA pipes x 2 FLOPs x clock), no
// DRAM ceiling above the memory's (SMBIOS: DIMM speed x width, where
// readable); FMA at 1x to 2x the no-FMA rate, FP32 not below FP64 (CPU SIMD);
// each ceiling of N workers between 1x and Nx the same ceiling of one worker
// (measured in the same run: Measurement::one_worker); no ceiling whose
// repeats mostly kept disturbed runs. The noise tolerance of a comparison
// comes from the two ceilings' own spread over repeats. (A larger partition
// against a smaller one measured separately is checked by the launcher,
// which sees several partitions: launcher/ceilings.hpp.)
// A violation re-measures the offending series (bounded, after a pause), then
// marks the ceilings unreliable with the reason.
#pragma once

#include <cmath>

#include "rtrace/ert/ceilings.hpp"

#include <functional>
#include <string>
#include <vector>

namespace rtrace::ert {

struct ConsistencyLimits {
  // The noise allowed between two ceilings: tolerance_floor plus both
  // ceilings' relative spread over repeats ((max - min) / median), at most
  // tolerance_cap. A fixed 10 % let a 1-thread L1 ~ L2 ~ L3 flip between
  // pass and fail; repeats that agree to 1 % now allow ~6 %, noisy ones more.
  double tolerance_floor = 0.04;
  double tolerance_cap = 0.5;
  double fp64_peak_gflops = 0;  // 0: not computable
  double fp32_peak_gflops = 0;
  std::string peak_basis;       // how the peak was computed, for the reason text
  double dram_peak_gbs = 0;     // the partition's memory peak; 0: unknown (a VM hides its DIMMs)
  std::string dram_peak_basis;
  // The one-worker bound: `workers` = threads x ranks of the partition, and
  // the hierarchy as one worker sees it (memory_levels(caches, 1)), which
  // names the reference's bandwidth levels.
  int workers = 1;
  std::vector<MemoryLevel> one_worker_levels;
};

// The relative spread of a ceiling's repeats: (max - min) / value (0 when unknown).
double relative_spread(const store::CeilingRow& c);
// The tolerance of comparing `a` with `b` (see ConsistencyLimits).
double noise_tolerance(const store::CeilingRow& a, const store::CeilingRow& b, const ConsistencyLimits& limits);

struct Violation {
  Series series;
  std::vector<std::string> ceilings;  // the names it concerns
  std::string reason;
};

// The theoretical FP peak of `cores` physical cores: cores x (vector_bytes /
// element bytes) lanes x 2 FMA pipes x 2 FLOPs x GHz.
double theoretical_cpu_peak_gflops(Precision p, int cores, int vector_bytes, double ghz);
// The clock to bound the peak with: cpufreq's cpuinfo_max_freq when the kernel
// exposes it, else CPUID leaf 0x16's maximum, else the nominal `cpu MHz` x
// kTurboAllowance. Sets `basis`.
inline constexpr double kTurboAllowance = 2.1;
double peak_clock_ghz(double nominal_mhz, std::string& basis);
// The same from explicit sources (tests): cpufreq's max kHz (0: none), the
// CPUID leaf 0x16 max MHz (0: none), the nominal MHz.
double peak_clock_ghz(double cpufreq_max_khz, double cpuid_max_mhz, double nominal_mhz, std::string& basis);

// The memory's peak bandwidth from the SMBIOS memory devices (type 17) of a
// raw DMI table (/sys/firmware/dmi/tables/DMI, readable by root): the sum
// over installed DIMMs of configured speed (MT/s) x data width. An upper
// bound of the node's peak (DIMMs that share a channel share its bandwidth).
// 0 and `basis` saying why when the table has no usable device.
double smbios_memory_peak_gbs(const std::string& dmi_table, std::string& basis);
double smbios_memory_peak_gbs_of_this_node(std::string& basis);

// `one_worker`: the reference ceilings (one_worker_ceilings()); empty = no
// one-worker bound.
std::vector<Violation> check_consistency(const std::vector<store::CeilingRow>& ceilings, const ConsistencyLimits& limits,
                                         const std::vector<store::CeilingRow>& one_worker = {});
// A ceiling whose repeats' best runs were mostly kept disturbed
// (CeilingAnalysis::disturbed_repeats).
std::vector<Violation> check_disturbed(const CeilingAnalysis& analysis);
// Sets unreliable=1 on every ceiling a violation names and adds the
// violation's reason to its `unreliable_reason`.
void mark_unreliable(std::vector<store::CeilingRow>& ceilings, const std::vector<Violation>& violations);

// Over a quarter of the runs redone because a thread was preempted: the redo
// budget is then spent and disturbed runs are among the samples. Marks every
// ceiling unreliable (so the launcher never caches them as good), adds the
// note, and returns true.
bool mark_if_disturbed(CeilingAnalysis& analysis, std::size_t runs, std::size_t runs_redone);
// The condition of mark_if_disturbed: over a quarter of the runs redone.
bool machine_was_busy(std::size_t runs, std::size_t runs_redone) noexcept;

struct RetryPolicy {
  int max_remeasures = 2;   // per series
  double pause_s = 0.5;     // before each re-measurement (let a burst of load pass)
  // Non-empty: the machine was busy while the sweep ran (machine_was_busy;
  // says how busy). Nothing is re-measured then: a re-measurement on a
  // machine that stays busy is as disturbed, and it cost minutes (issue 29);
  // the violating ceilings are marked at once.
  std::string busy;
};

struct CheckedCeilings {
  CeilingAnalysis analysis;
  std::vector<store::CeilingRow> one_worker;  // the reference's ceilings (empty without one)
  int remeasured = 0;                 // series re-measurements done
  std::vector<Violation> violations;  // what is still wrong (the rows are marked)
};

// What to measure again: a series, and for bandwidth only the working sets
// in (min_working_set_bytes, max_working_set_bytes]: the ranges of the
// violating levels (a violation naming L1d and L2 does not measure the DRAM
// sizes again, one naming only DRAM not the caches).
struct RemeasureRequest {
  Series series = Series::Bandwidth;
  double min_working_set_bytes = 0;
  double max_working_set_bytes = INFINITY;
  bool covers(const Sample& s) const noexcept {
    const double ws = double(s.working_set_bytes);
    return s.series == series &&
           (series != Series::Bandwidth || (ws > min_working_set_bytes && ws <= max_working_set_bytes));
  }
};

// Derives the ceilings, checks them, and while a series violates a check
// (at most policy.max_remeasures times each) pauses, replaces the samples the
// request covers with `remeasure(request)` (the one-worker reference samples
// of the series included) and derives again. `samples` ends
// up with the samples the ceilings came from. `remeasure` and `pause` must be
// called identically on every rank (the decisions depend only on the samples).
CheckedCeilings derive_checked_ceilings(std::vector<Sample>& samples, const std::vector<MemoryLevel>& levels,
                                        const PlateauOptions& options, const ConsistencyLimits& limits,
                                        const RetryPolicy& policy,
                                        const std::function<std::vector<Sample>(const RemeasureRequest&)>& remeasure,
                                        const std::function<void(double)>& pause);

}  // namespace rtrace::ert
