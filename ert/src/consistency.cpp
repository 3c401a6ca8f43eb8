#include "rtrace/ert/consistency.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

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

// The working sets a bandwidth re-measurement needs: those of the levels
// the violations name, from the shallowest one's range (above twice the
// level below it) to the deepest one's capacity; all of them when a name is
// not in the hierarchy. A DRAM-only violation re-measures only the DRAM-sized
// working sets (most of a sweep's time, but not the caches' again).
void violating_range(const std::vector<Violation>& violations, const std::vector<MemoryLevel>& levels,
                     RemeasureRequest& request) {
  double low = INFINITY, high = 0;
  for (const auto& v : violations) {
    if (v.series != Series::Bandwidth) continue;
    for (const auto& name : v.ceilings) {
      auto it = std::find_if(levels.begin(), levels.end(), [&](const MemoryLevel& l) { return l.name == name; });
      if (it == levels.end()) {
        request.min_working_set_bytes = 0;
        request.max_working_set_bytes = INFINITY;
        return;
      }
      const LevelRange r = level_range(levels, std::size_t(it - levels.begin()));
      low = std::min(low, r.low);
      high = std::max(high, r.high);
    }
  }
  request.min_working_set_bytes = std::isfinite(low) ? low : 0;
  request.max_working_set_bytes = high > 0 ? high : INFINITY;
}

// Marks a ceiling unreliable, adding `reason` to the reasons it already has.
void add_unreliable_reason(store::CeilingRow& c, const std::string& reason) {
  std::string text = store::get_str(c.unreliable_reason);
  text += (text.empty() ? "" : "; ") + reason;
  c.unreliable = 1;
  store::set_text(c.unreliable_reason, text);
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
  if (!(in >> khz)) khz = 0;
  double cpuid_mhz = 0;
#if defined(__x86_64__) || defined(__i386__)
  // Leaf 0x16 (Intel since Skylake): EBX = the maximum frequency in MHz.
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) >= 0x16 && __get_cpuid(0x16, &a, &b, &c, &d)) cpuid_mhz = double(b & 0xFFFF);
#endif
  return peak_clock_ghz(khz, cpuid_mhz, nominal_mhz, basis);
}

double peak_clock_ghz(double khz, double cpuid_mhz, double nominal_mhz, std::string& basis) {
  if (khz > 0) {
    basis = "max clock " + fmt(khz / 1e6) + " GHz (cpufreq)";
    return khz / 1e6;
  }
  if (cpuid_mhz > 0) {
    basis = "max clock " + fmt(cpuid_mhz / 1e3) + " GHz (CPUID 0x16)";
    return cpuid_mhz / 1e3;
  }
  if (nominal_mhz > 0) {
    // The largest base-to-boost ratio of current server CPUs: Xeon Platinum
    // 8592+ 1.9 -> 3.9 GHz (2.05x); an AMD EPYC VM reporting 2.6 GHz ran
    // AVX-512 FMAs at 4.0 GHz (1.54x), past the 1.5 allowed before.
    basis = "nominal clock " + fmt(nominal_mhz / 1e3) + " GHz x " + fmt(kTurboAllowance) + " turbo allowance";
    return nominal_mhz / 1e3 * kTurboAllowance;
  }
  basis.clear();
  return 0;
}

namespace {

std::uint16_t u16_at(const std::string& t, std::size_t at) {
  return std::uint16_t(std::uint8_t(t[at]) | (std::uint8_t(t[at + 1]) << 8));
}

}  // namespace

double smbios_memory_peak_gbs(const std::string& t, std::string& basis) {
  double total = 0;
  int devices = 0;
  double lowest_speed = 0, highest_speed = 0;
  for (std::size_t at = 0; at + 4 <= t.size();) {
    const int type = std::uint8_t(t[at]);
    const std::size_t length = std::uint8_t(t[at + 1]);
    if (length < 4 || at + length > t.size()) break;
    // Type 17, memory device: data width (bits) at 0x0A, size at 0x0C (0:
    // empty slot, 0xFFFF: unknown), speed (MT/s) at 0x15, configured speed
    // at 0x20 (SMBIOS 2.7).
    if (type == 17 && length >= 0x17) {
      const int width = u16_at(t, at + 0x0A);
      const int size = u16_at(t, at + 0x0C);
      int speed = u16_at(t, at + 0x15);
      if (length >= 0x22 && u16_at(t, at + 0x20) > 0) speed = u16_at(t, at + 0x20);
      if (size != 0 && size != 0xFFFF && width > 0 && width != 0xFFFF && speed > 0 && speed != 0xFFFF) {
        total += double(speed) * 1e6 * double(width) / 8.0 / 1e9;
        lowest_speed = devices ? std::min(lowest_speed, double(speed)) : double(speed);
        highest_speed = std::max(highest_speed, double(speed));
        ++devices;
      }
    }
    if (type == 127) break;  // end of table
    // The strings after the formatted area end with two NULs.
    std::size_t next = at + length;
    while (next + 1 < t.size() && !(t[next] == 0 && t[next + 1] == 0)) ++next;
    at = next + 2;
  }
  if (devices == 0) {
    basis = "unknown (no SMBIOS memory device with a speed and width)";
    return 0;
  }
  basis = std::to_string(devices) + " DIMMs at " + std::to_string(int(lowest_speed)) +
          (highest_speed > lowest_speed ? "-" + std::to_string(int(highest_speed)) : std::string()) + " MT/s (SMBIOS)";
  return total;
}

double smbios_memory_peak_gbs_of_this_node(std::string& basis) {
  std::ifstream in("/sys/firmware/dmi/tables/DMI", std::ios::binary);
  if (!in) {
    basis = "unknown (/sys/firmware/dmi/tables/DMI not readable: not root, or a VM without SMBIOS)";
    return 0;
  }
  const std::string table((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return smbios_memory_peak_gbs(table, basis);
}

double relative_spread(const store::CeilingRow& c) { return store::ceiling_relative_spread(c); }

double noise_tolerance(const store::CeilingRow& a, const store::CeilingRow& b, const ConsistencyLimits& limits) {
  return store::ceiling_noise_tolerance(a, b, limits.tolerance_floor, limits.tolerance_cap);
}

std::vector<Violation> check_consistency(const std::vector<store::CeilingRow>& ceilings, const ConsistencyLimits& limits,
                                         const std::vector<store::CeilingRow>& one_worker) {
  std::vector<Violation> out;
  auto pct = [](double tol) { return std::to_string(int(std::lround(tol * 100))) + "%"; };
  // Bandwidth: rows come in hierarchy order (L1 first, DRAM last).
  std::vector<const store::CeilingRow*> bw;
  for (const auto& c : ceilings)
    if (store::get_str(c.kind) == "bandwidth" && c.value > 0) bw.push_back(&c);
  for (std::size_t i = 0; i < bw.size(); ++i)
    for (std::size_t j = i + 1; j < bw.size(); ++j)
      if (bw[j]->value > bw[i]->value * (1 + noise_tolerance(*bw[i], *bw[j], limits))) {
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
  auto compute_row = [&](const std::string& name) -> const store::CeilingRow* {
    for (const auto& c : ceilings)
      if (store::get_str(c.kind) == "compute" && store::get_str(c.name) == name && c.value > 0) return &c;
    return nullptr;
  };
  auto check_ratio = [&](const std::string& fast, const std::string& slow, double max_ratio, const char* why) {
    const store::CeilingRow* f = compute_row(fast);
    const store::CeilingRow* sl = compute_row(slow);
    if (!f || !sl) return;
    const double r = f->value / sl->value;
    const double tol = noise_tolerance(*f, *sl, limits);
    if (r < 1.0 / (1 + tol) || r > max_ratio * (1 + tol))
      out.push_back(Violation{Series::Flops, {fast, slow},
                              fast + " " + fmt(f->value) + " GFLOP/s is " + fmt(r) + "x " + slow + " " + fmt(sl->value) +
                                  " GFLOP/s (" + why + ")"});
  };
  for (const char* prec : {"FP64", "FP32"})
    check_ratio(std::string(prec) + " FMA", std::string(prec) + " no-FMA", 2.0,
                "an FMA is two FLOPs in one instruction: 1x to 2x");
  for (const char* variant : {"FMA", "no-FMA"})
    check_ratio(std::string("FP32 ") + variant, std::string("FP64 ") + variant, INFINITY,
                "FP32 has twice the SIMD lanes: never slower");
  // Not above the theoretical peaks (2 % for the clock's rounding).
  for (const auto& c : ceilings) {
    const std::string kind = store::get_str(c.kind), name = store::get_str(c.name);
    if (kind == "compute") {
      const std::string prec = store::get_str(c.precision);
      const double peak = prec == "fp64" ? limits.fp64_peak_gflops : prec == "fp32" ? limits.fp32_peak_gflops : 0;
      if (peak > 0 && c.value > peak * (1 + 0.02))
        out.push_back(Violation{Series::Flops, {name},
                                name + " " + fmt(c.value) + " GFLOP/s above the theoretical peak " + fmt(peak) + " (" +
                                    limits.peak_basis + ")"});
    } else if (kind == "bandwidth" && name == "DRAM" && limits.dram_peak_gbs > 0 &&
               c.value > limits.dram_peak_gbs * (1 + 0.02)) {
      out.push_back(Violation{Series::Bandwidth, {name},
                              name + " " + fmt(c.value) + " GB/s above the memory's peak " + fmt(limits.dram_peak_gbs) +
                                  " (" + limits.dram_peak_basis + ")"});
    }
  }
  // The one-worker bound: N workers do at least what one does (they include
  // it) and at most N times it (each adds at most one worker's share). The
  // case of issue 23: FLOP ceilings at 2 threads 100x below 1 thread's, from
  // timing a worker's wake-up; every ratio check passed.
  if (limits.workers > 1)
    for (const auto& c : ceilings) {
      if (!(c.value > 0)) continue;
      const std::string name = store::get_str(c.name);
      const auto ref = std::find_if(one_worker.begin(), one_worker.end(), [&](const store::CeilingRow& r) {
        return store::get_str(r.name) == name && r.value > 0;
      });
      if (ref == one_worker.end()) continue;
      const Series series = store::get_str(c.kind) == "bandwidth" ? Series::Bandwidth : Series::Flops;
      const std::string unit = store::get_str(c.unit);
      const double tol = noise_tolerance(c, *ref, limits);
      const std::string n = std::to_string(limits.workers);
      if (c.value < ref->value * (1 - tol))
        out.push_back(Violation{series, {name},
                                name + " " + fmt(c.value) + " " + unit + " at " + n + " workers below 1 worker's " +
                                    fmt(ref->value) + " (tolerance " + pct(tol) + ")"});
      else if (c.value > limits.workers * ref->value * (1 + tol))
        out.push_back(Violation{series, {name},
                                name + " " + fmt(c.value) + " " + unit + " at " + n + " workers above " + n +
                                    " x 1 worker's " + fmt(ref->value) + " (tolerance " + pct(tol) + ")"});
    }
  return out;
}

std::vector<Violation> check_disturbed(const CeilingAnalysis& analysis) {
  std::vector<Violation> out;
  for (std::size_t i = 0; i < analysis.ceilings.size() && i < analysis.disturbed_repeats.size(); ++i) {
    const auto& c = analysis.ceilings[i];
    const int disturbed = analysis.disturbed_repeats[i];
    if (disturbed * 2 <= c.repeats || disturbed == 0) continue;
    const std::string name = store::get_str(c.name);
    out.push_back(Violation{store::get_str(c.kind) == "bandwidth" ? Series::Bandwidth : Series::Flops,
                            {name},
                            name + ": " + std::to_string(disturbed) + " of " + std::to_string(c.repeats) +
                                " repeats kept disturbed runs (preempted or started apart)"});
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

bool machine_was_busy(std::size_t runs, std::size_t runs_redone) noexcept { return runs_redone * 4 > runs; }

bool mark_if_disturbed(CeilingAnalysis& analysis, std::size_t runs, std::size_t runs_redone) {
  if (!machine_was_busy(runs, runs_redone)) return false;
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
    out.one_worker = one_worker_ceilings(samples, limits.one_worker_levels);
    out.violations = check_consistency(out.analysis.ceilings, limits, out.one_worker);
    for (auto& v : check_disturbed(out.analysis)) out.violations.push_back(std::move(v));
    RemeasureRequest redo;
    if (!policy.busy.empty()) break;
    if (has_series(out.violations, Series::Bandwidth) && retries_bw < policy.max_remeasures) {
      redo.series = Series::Bandwidth;
      violating_range(out.violations, levels, redo);
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
    out.analysis.notes.push_back(
        "warning: unreliable " +
        (policy.busy.empty() ? "after " + std::to_string(out.remeasured) + " re-measurement(s)"
                             : std::string("(not re-measured: the machine was busy, ") + policy.busy + ")") +
        ": " + v.reason);
  return out;
}

}  // namespace rtrace::ert
