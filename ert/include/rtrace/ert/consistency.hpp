// Physical consistency of ERT ceilings (docs: ert/README.md, "Trust").
//
// Checks: bandwidth does not rise from L1 towards DRAM beyond the noise
// tolerance; no FLOP ceiling above the partition's theoretical peak where it
// can be computed (cores x SIMD lanes x 2 FMA pipes x 2 FLOPs x clock); FMA
// at 1x to 2x the no-FMA rate, FP32 not below FP64 (CPU SIMD). (A
// larger partition not below a smaller one is checked by the launcher, which
// sees several partitions: launcher/ceilings.hpp.)
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
  double tolerance = 0.10;  // relative noise allowed between levels / partitions
  double fp64_peak_gflops = 0;  // 0: not computable
  double fp32_peak_gflops = 0;
  std::string peak_basis;       // how the peak was computed, for the reason text
};

struct Violation {
  Series series;
  std::vector<std::string> ceilings;  // the names it concerns
  std::string reason;
};

// The theoretical FP peak of `cores` physical cores: cores x (vector_bytes /
// element bytes) lanes x 2 FMA pipes x 2 FLOPs x GHz.
double theoretical_cpu_peak_gflops(Precision p, int cores, int vector_bytes, double ghz);
// The clock to bound the peak with: cpufreq's cpuinfo_max_freq when the kernel
// exposes it, else the nominal `cpu MHz` x 1.5 (turbo allowance). Sets `basis`.
double peak_clock_ghz(double nominal_mhz, std::string& basis);

std::vector<Violation> check_consistency(const std::vector<store::CeilingRow>& ceilings, const ConsistencyLimits& limits);
// Sets unreliable=1 on every ceiling a violation names and adds the
// violation's reason to its `unreliable_reason`.
void mark_unreliable(std::vector<store::CeilingRow>& ceilings, const std::vector<Violation>& violations);

// Over a quarter of the runs redone because a thread was preempted: the redo
// budget is then spent and disturbed runs are among the samples. Marks every
// ceiling unreliable (so the launcher never caches them as good), adds the
// note, and returns true.
bool mark_if_disturbed(CeilingAnalysis& analysis, std::size_t runs, std::size_t runs_redone);

struct RetryPolicy {
  int max_remeasures = 2;   // per series
  double pause_s = 0.5;     // before each re-measurement (let a burst of load pass)
};

struct CheckedCeilings {
  CeilingAnalysis analysis;
  int remeasured = 0;                 // series re-measurements done
  std::vector<Violation> violations;  // what is still wrong (the rows are marked)
};

// What to measure again: a series, and for bandwidth only the working sets up
// to `max_working_set_bytes` (the violating cache levels; +inf when DRAM is
// one of them: the large working sets are most of a sweep's time).
struct RemeasureRequest {
  Series series = Series::Bandwidth;
  double max_working_set_bytes = INFINITY;
  bool covers(const Sample& s) const noexcept {
    return s.series == series && (series != Series::Bandwidth || double(s.working_set_bytes) <= max_working_set_bytes);
  }
};

// Derives the ceilings, checks them, and while a series violates a check
// (at most policy.max_remeasures times each) pauses, replaces the samples the
// request covers with `remeasure(request)` and derives again. `samples` ends
// up with the samples the ceilings came from. `remeasure` and `pause` must be
// called identically on every rank (the decisions depend only on the samples).
CheckedCeilings derive_checked_ceilings(std::vector<Sample>& samples, const std::vector<MemoryLevel>& levels,
                                        const PlateauOptions& options, const ConsistencyLimits& limits,
                                        const RetryPolicy& policy,
                                        const std::function<std::vector<Sample>(const RemeasureRequest&)>& remeasure,
                                        const std::function<void(double)>& pause);

}  // namespace rtrace::ert
