#include "rtrace/ert/consistency.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

namespace rtrace::ert {

namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

bool has_series(const std::vector<Violation>& v, Series s) {
  return std::any_of(v.begin(), v.end(), [&](const Violation& x) { return x.series == s; });
}

// The working sets a bandwidth re-measurement needs: up to the capacity of
// the deepest cache level a violation names; all of them when it names DRAM
// or a level the hierarchy does not know.
double violating_capacity(const std::vector<Violation>& violations, const std::vector<MemoryLevel>& levels) {
  double deepest = 0;
  for (const auto& v : violations) {
    if (v.series != Series::Bandwidth) continue;
    for (const auto& name : v.ceilings) {
      auto it = std::find_if(levels.begin(), levels.end(), [&](const MemoryLevel& l) { return l.name == name; });
      if (it == levels.end() || !std::isfinite(it->capacity_bytes)) return INFINITY;
      deepest = std::max(deepest, it->capacity_bytes);
    }
  }
  return deepest > 0 ? deepest : INFINITY;
}

// Marks a ceiling unreliable, adding `reason` to the reasons it already has.
void add_unreliable_reason(store::CeilingRow& c, const std::string& reason) {
  std::string text = store::get_str(c.unreliable_reason);
  text += (text.empty() ? "" : "; ") + reason;
  c.unreliable = 1;
  store::set_str(c.unreliable_reason, text);
}

}  // namespace

double theoretical_cpu_peak_gflops(Precision p, int cores, int vector_bytes, double ghz) {
  if (cores <= 0 || vector_bytes <= 0 || !(ghz > 0)) return 0;
  const double lanes = double(vector_bytes) / double(element_bytes(p));
  return double(cores) * lanes * 2.0 /* FMA pipes */ * 2.0 /* FLOPs per FMA */ * ghz;
}

double peak_clock_ghz(double nominal_mhz, std::string& basis) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (in >> khz && khz > 0) {
    basis = "max clock " + fmt(khz / 1e6) + " GHz (cpufreq)";
    return khz / 1e6;
  }
  if (nominal_mhz > 0) {
    basis = "nominal clock " + fmt(nominal_mhz / 1e3) + " GHz x 1.5 turbo allowance";
    return nominal_mhz / 1e3 * 1.5;
  }
  basis.clear();
  return 0;
}

std::vector<Violation> check_consistency(const std::vector<store::CeilingRow>& ceilings, const ConsistencyLimits& limits) {
  std::vector<Violation> out;
  // Bandwidth: rows come in hierarchy order (L1 first, DRAM last).
  std::vector<const store::CeilingRow*> bw;
  for (const auto& c : ceilings)
    if (store::get_str(c.kind) == "bandwidth" && c.value > 0) bw.push_back(&c);
  for (std::size_t i = 0; i < bw.size(); ++i)
    for (std::size_t j = i + 1; j < bw.size(); ++j)
      if (bw[j]->value > bw[i]->value * (1 + limits.tolerance)) {
        const std::string a = store::get_str(bw[i]->name), b = store::get_str(bw[j]->name);
        out.push_back(Violation{Series::Bandwidth, {a, b},
                                a + " " + fmt(bw[i]->value) + " GB/s below " + b + " " + fmt(bw[j]->value) +
                                    " GB/s (bandwidth cannot rise towards DRAM)"});
      }
  // Compute ratios. An FMA does two FLOPs in one instruction, the no-FMA
  // kernel the same two in two (an add and a multiply): FMA runs at 1x to 2x
  // the no-FMA rate of its precision. FP32 packs twice the FP64 lanes into a
  // SIMD register: never slower than FP64 in the same variant (no upper
  // bound: its arrays are half the bytes, so more of them stay in L1).
  // Outside, one of the two was disturbed (seen on a loaded VM: FP64 FMA
  // 22.7 GFLOP/s below its no-FMA 63.3).
  auto compute_value = [&](const std::string& name) -> double {
    for (const auto& c : ceilings)
      if (store::get_str(c.kind) == "compute" && store::get_str(c.name) == name && c.value > 0) return c.value;
    return 0;
  };
  auto check_ratio = [&](const std::string& fast, const std::string& slow, double max_ratio, const char* why) {
    const double f = compute_value(fast), sl = compute_value(slow);
    if (!(f > 0 && sl > 0)) return;
    const double r = f / sl;
    if (r < 1.0 / (1 + limits.tolerance) || r > max_ratio * (1 + limits.tolerance))
      out.push_back(Violation{Series::Flops, {fast, slow},
                              fast + " " + fmt(f) + " GFLOP/s is " + fmt(r) + "x " + slow + " " + fmt(sl) +
                                  " GFLOP/s (" + why + ")"});
  };
  for (const char* prec : {"FP64", "FP32"})
    check_ratio(std::string(prec) + " FMA", std::string(prec) + " no-FMA", 2.0,
                "an FMA is two FLOPs in one instruction: 1x to 2x");
  for (const char* variant : {"FMA", "no-FMA"})
    check_ratio(std::string("FP32 ") + variant, std::string("FP64 ") + variant, INFINITY,
                "FP32 has twice the SIMD lanes: never slower");
  // Compute: not above the theoretical peak.
  for (const auto& c : ceilings) {
    if (store::get_str(c.kind) != "compute") continue;
    const std::string prec = store::get_str(c.precision);
    const double peak = prec == "fp64" ? limits.fp64_peak_gflops : prec == "fp32" ? limits.fp32_peak_gflops : 0;
    if (peak > 0 && c.value > peak * (1 + 0.02))
      out.push_back(Violation{Series::Flops, {store::get_str(c.name)},
                              store::get_str(c.name) + " " + fmt(c.value) + " GFLOP/s above the theoretical peak " +
                                  fmt(peak) + " (" + limits.peak_basis + ")"});
  }
  return out;
}

void mark_unreliable(std::vector<store::CeilingRow>& ceilings, const std::vector<Violation>& violations) {
  for (auto& c : ceilings) {
    const std::string name = store::get_str(c.name);
    for (const auto& v : violations)
      if (std::find(v.ceilings.begin(), v.ceilings.end(), name) != v.ceilings.end()) add_unreliable_reason(c, v.reason);
  }
}

bool mark_if_disturbed(CeilingAnalysis& analysis, std::size_t runs, std::size_t runs_redone) {
  if (runs_redone * 4 <= runs) return false;
  const std::string busy = std::to_string(runs_redone) + " of " + std::to_string(runs) +
                           " runs were disturbed by other processes (threads preempted)";
  analysis.notes.push_back("warning: " + busy + "; the ceilings are unreliable on a machine this busy");
  for (auto& c : analysis.ceilings) add_unreliable_reason(c, "measured on a busy machine: " + busy);
  return true;
}

CheckedCeilings derive_checked_ceilings(std::vector<Sample>& samples, const std::vector<MemoryLevel>& levels,
                                        const PlateauOptions& options, const ConsistencyLimits& limits,
                                        const RetryPolicy& policy,
                                        const std::function<std::vector<Sample>(const RemeasureRequest&)>& remeasure,
                                        const std::function<void(double)>& pause) {
  CheckedCeilings out;
  int retries_bw = 0, retries_flops = 0;
  for (;;) {
    out.analysis = derive_ceilings(samples, levels, options);
    out.violations = check_consistency(out.analysis.ceilings, limits);
    RemeasureRequest redo;
    if (has_series(out.violations, Series::Bandwidth) && retries_bw < policy.max_remeasures) {
      redo.series = Series::Bandwidth;
      redo.max_working_set_bytes = violating_capacity(out.violations, levels);
      ++retries_bw;
    } else if (has_series(out.violations, Series::Flops) && retries_flops < policy.max_remeasures) {
      redo.series = Series::Flops;
      ++retries_flops;
    } else {
      break;
    }
    if (pause) pause(policy.pause_s);
    std::vector<Sample> fresh = remeasure(redo);
    samples.erase(std::remove_if(samples.begin(), samples.end(), [&](const Sample& s) { return redo.covers(s); }),
                  samples.end());
    for (auto& s : fresh)
      if (redo.covers(s)) samples.push_back(std::move(s));
    ++out.remeasured;
  }
  mark_unreliable(out.analysis.ceilings, out.violations);
  for (const auto& v : out.violations)
    out.analysis.notes.push_back("warning: unreliable after " + std::to_string(out.remeasured) +
                                 " re-measurement(s): " + v.reason);
  return out;
}

}  // namespace rtrace::ert
