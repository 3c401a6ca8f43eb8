#include "rtrace/analysis/model.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace rtrace::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The least share of a kernel's time a level's traffic must need at that
// level's ceiling for its intensity to decide a cache-capacity verdict: a
// deliberately low bar (0.1%) that only levels with no traffic to speak of
// miss; how much of the loss a level explains is issue 39's loss accounting.
constexpr double kLevelTrafficMin = 0.001;

// A cache's size as its data sheets give it: "48 KiB", "1 MiB", "1.5 MiB".
std::string cache_size_text(double bytes) {
  if (bytes >= 1024.0 * 1024) return fmt(bytes / (1024.0 * 1024), 3) + " MiB";
  return fmt(bytes / 1024.0, 3) + " KiB";
}

}  // namespace

std::string fmt(double v, int precision) {
  if (!available(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

const char* level_key(MemLevel level) noexcept {
  switch (level) {
    case MemLevel::L1: return "L1";
    case MemLevel::L2: return "L2";
    case MemLevel::L3: return "L3";
    case MemLevel::DRAM: return "DRAM";
  }
  return "?";
}

bool level_from_ceiling_name(const std::string& name, MemLevel& level) noexcept {
  if (name == "L1" || name == "L1d") level = MemLevel::L1;
  else if (name == "L2") level = MemLevel::L2;
  else if (name == "L3") level = MemLevel::L3;
  else if (name == "DRAM" || name == "HBM") level = MemLevel::DRAM;
  else return false;
  return true;
}

bool CeilingSet::unreliable(const std::string& name) const noexcept {
  for (const auto& c : all_)
    if (c.name == name) return c.unreliable;
  return false;
}

const Ceiling* CeilingSet::bandwidth(MemLevel level) const noexcept {
  for (const auto& c : all_) {
    MemLevel l;
    if (c.kind == "bandwidth" && level_from_ceiling_name(c.name, l) && l == level && available(c.value) && c.value > 0)
      return &c;
  }
  return nullptr;
}

const Ceiling* CeilingSet::peak(const std::string& precision, bool tensor) const noexcept {
  const Ceiling* best = nullptr;
  for (const auto& c : all_) {
    if (c.kind != "compute" || c.precision != precision || !available(c.value) || c.value <= 0) continue;
    if (c.variant.rfind("mma", 0) == 0 && !tensor) continue;  // "mma", "mma.sync": tensor cores only
    if (!best || c.value > best->value) best = &c;
  }
  return best;
}

const Ceiling* CeilingSet::tensor_peak(const std::string& precision) const noexcept {
  const Ceiling* best = nullptr;
  for (const auto& c : all_) {
    if (c.kind != "compute" || c.precision != precision || c.variant.rfind("mma", 0) != 0 || !available(c.value) ||
        c.value <= 0)
      continue;
    if (!best || c.value > best->value) best = &c;
  }
  return best;
}

const char* tensor_source_key(int source) noexcept {
  static const char* const kKeys[kTensorSourceCount] = {"fp16", "bf16", "tf32", "fp64", "fp8"};
  return source >= 0 && source < kTensorSourceCount ? kKeys[source] : "";
}

std::string Counts::tensor_precision() const {
  int best = -1;
  for (int i = 0; i < kTensorSourceCount; ++i)
    if (available(tensor_by_source[i]) && tensor_by_source[i] > 0 &&
        (best < 0 || tensor_by_source[i] > tensor_by_source[best]))
      best = i;
  return best < 0 ? "" : tensor_source_key(best);
}

double Counts::total_flops() const noexcept {
  double t = kNaN;
  // tensor_ops are math ops (multiply-accumulates): 2 FLOPs each, as the ERT's tensor ceilings count.
  for (double v : {flops_fp64, flops_fp32, flops_fp16, 2.0 * tensor_ops, flops_unsplit}) t = nan_add(t, v);
  return t;
}

std::string Counts::dominant_precision() const {
  const std::pair<const char*, double> all[] = {{"fp64", flops_fp64}, {"fp32", flops_fp32}, {"fp16", flops_fp16}};
  const char* best = "";
  double best_value = 0;
  for (const auto& [name, v] : all) {
    if (available(v) && v > best_value) { best = name; best_value = v; }
  }
  // Mostly FLOPs of unknown precision: no precision, so no compute ceiling is claimed.
  if (available(flops_unsplit) && flops_unsplit > best_value) return "";
  if (best_value == 0 && uses_tensor()) return "fp16";
  return best;
}

bool Counts::any_bytes() const noexcept {
  return std::any_of(bytes.begin(), bytes.end(), [](double b) { return available(b) && b > 0; });
}

void Counts::add(const Counts& b) noexcept {
  flops_fp64 = nan_add(flops_fp64, b.flops_fp64);
  flops_fp32 = nan_add(flops_fp32, b.flops_fp32);
  flops_fp16 = nan_add(flops_fp16, b.flops_fp16);
  tensor_ops = nan_add(tensor_ops, b.tensor_ops);
  for (int i = 0; i < kTensorSourceCount; ++i) tensor_by_source[i] = nan_add(tensor_by_source[i], b.tensor_by_source[i]);
  flops_unsplit = nan_add(flops_unsplit, b.flops_unsplit);
  for (int i = 0; i < kLevelCount; ++i) bytes[i] = nan_add(bytes[i], b.bytes[i]);
}

void Counts::scale(double f) noexcept {
  flops_fp64 *= f; flops_fp32 *= f; flops_fp16 *= f; tensor_ops *= f; flops_unsplit *= f;
  for (double& t : tensor_by_source) t *= f;
  for (double& b : bytes) b *= f;
}

void FlopMix::add(const FlopMix& b) noexcept {
  for (int p = 0; p < kMixPrecisionCount; ++p)
    for (int w = 0; w < kWidthCount; ++w) flops[p][w] = nan_add(flops[p][w], b.flops[p][w]);
}

double FlopMix::precision_total(int precision) const noexcept {
  double t = kNaN;
  for (double v : flops[static_cast<std::size_t>(precision)]) t = nan_add(t, v);
  return t;
}

bool FlopMix::any() const noexcept {
  for (int p = 0; p < kMixPrecisionCount; ++p)
    if (available(precision_total(p)) && precision_total(p) > 0) return true;
  return false;
}

bool flop_less(const KernelAtPoint& k) noexcept {
  const double flops = k.counts.total_flops(), instructions = k.counted_instructions;
  return available(instructions) && instructions > 0 &&
         !(available(flops) && flops >= kFlopLessPerInstruction * instructions);
}

std::array<double, kLevelCount> bytes_per_instruction(const KernelAtPoint& k) noexcept {
  std::array<double, kLevelCount> out{kNaN, kNaN, kNaN, kNaN};
  const double instructions = k.counted_instructions;
  if (!available(instructions) || instructions <= 0) return out;
  for (int i = 0; i < kLevelCount; ++i)
    if (available(k.counts.bytes[static_cast<std::size_t>(i)]))
      out[static_cast<std::size_t>(i)] = k.counts.bytes[static_cast<std::size_t>(i)] / instructions;
  return out;
}

RooflineEval evaluate(const KernelAtPoint& k, const CeilingSet& ceilings) {
  RooflineEval e;
  e.flops = k.counts.total_flops();
  e.flop_less = flop_less(k);
  if (!e.counts_available()) { e.flops = available(e.flops) ? e.flops : kNaN; return e; }
  double t = available(k.counts_time_s) && k.counts_time_s > 0 ? k.counts_time_s : k.time_s;
  if (available(t) && t > 0) e.gflops = e.flops / t / 1e9;
  for (MemLevel l : kAllLevels) {
    int i = static_cast<int>(l);
    double b = k.counts.bytes[i];
    if (available(b) && b > 0) e.ai[i] = e.flops / b;
  }
  // The compute roof: a kernel whose tensor FLOPs are most of its work is
  // judged against the tensor ceiling of its largest source type (an HGEMM
  // with an FFMA epilogue against FP16's, a DMMA kernel against FP64's), any
  // other against its dominant scalar precision's non-tensor ceilings. Files
  // before schema 1.8 know tensor ops only as a sum: as before, any ceiling.
  const std::string tensor = k.counts.tensor_precision();
  double scalar_flops = kNaN;
  for (double v : {k.counts.flops_fp64, k.counts.flops_fp32, k.counts.flops_fp16, k.counts.flops_unsplit})
    scalar_flops = nan_add(scalar_flops, v);
  const bool tensor_bound = !tensor.empty() && (!available(scalar_flops) || 2.0 * k.counts.tensor_ops >= scalar_flops);
  e.precision = tensor_bound ? tensor : k.counts.dominant_precision();
  const Ceiling* compute = tensor_bound ? ceilings.tensor_peak(tensor)
                                        : ceilings.peak(e.precision, tensor.empty() && k.counts.uses_tensor());
  double bound = kNaN;
  if (const Ceiling* peak = compute) {
    e.peak_name = peak->name;
    e.peak_gflops = peak->value;
    bound = peak->value;
    e.binding = "compute";
    e.binding_ceiling = peak->name;
  }
  for (MemLevel l : kAllLevels) {
    int i = static_cast<int>(l);
    const Ceiling* bw = ceilings.bandwidth(l);
    if (!bw || !available(e.ai[i])) continue;
    e.level_bound[i] = bw->value * e.ai[i];  // GB/s * FLOP/B = GFLOP/s
    if (!available(bound) || e.level_bound[i] < bound) {
      bound = e.level_bound[i];
      e.binding = level_key(l);
      e.binding_ceiling = bw->name;
    }
  }
  e.bound_gflops = bound;
  if (available(bound) && bound > 0 && available(e.gflops)) e.efficiency = e.gflops / bound;
  return e;
}

StepFactors decompose(const RooflineEval& a, const RooflineEval& b, const CeilingSet& ca, const CeilingSet& cb) {
  StepFactors f;
  if (!a.counts_available() || !b.counts_available() || !available(a.gflops) || !available(b.gflops) ||
      b.binding.empty())
    return f;
  if (b.compute_bound()) {
    const Ceiling* pa = b.peak_name.find("TC") == 0 ? ca.tensor_peak(b.precision) : ca.peak(b.precision, false);
    if (!pa) return f;
    f.basis = "compute";
    f.basis_ceiling = b.peak_name;
    f.ceiling_ratio = b.peak_gflops / pa->value;
    f.ai_ratio = 1.0;
    f.efficiency_ratio = (b.gflops / b.peak_gflops) / (a.gflops / pa->value);
    return f;
  }
  MemLevel level;
  if (!level_from_ceiling_name(b.binding, level)) return f;
  int i = static_cast<int>(level);
  const Ceiling* ba = ca.bandwidth(level);
  const Ceiling* bb = cb.bandwidth(level);
  if (!ba || !bb || !available(a.ai[i]) || !available(b.ai[i])) return f;
  f.basis = b.binding;
  f.basis_ceiling = bb->name;
  f.ceiling_ratio = bb->value / ba->value;
  f.ai_ratio = b.ai[i] / a.ai[i];
  f.efficiency_ratio = (b.gflops / (bb->value * b.ai[i])) / (a.gflops / (ba->value * a.ai[i]));
  return f;
}

void Thresholds::validate() const {
  auto check = [](const char* name, double v, double lo, double hi) {
    if (!available(v) || v < lo || v > hi) {
      std::ostringstream os;
      os << "threshold " << name << "=" << v << ": expected a value in [" << lo << ", " << hi << "]";
      throw InputError(os.str());
    }
  };
  check("ideal-tolerance", ideal_tolerance, 0, 0.99);
  check("superlinear-margin", superlinear_margin, 0, 10);
  check("ai-drop", ai_drop, 0.001, 0.99);
  check("ai-rise", ai_rise, 0.001, 100);
  check("on-ceiling", on_ceiling, 0.01, 1);
  check("cause-min", cause_min, 0, 10);
  check("launch-floor-us", launch_floor_s * 1e6, 0, 1e6);
  check("tail-efficiency", tail_efficiency, 0, 1);
  check("mpi-share-rise", mpi_share_rise, 0, 1);
  check("load-share", load_share, 0.001, 1);
  check("work-change", work_change, 0.001, 10);
  check("headline-share", headline_share, 0, 1);
}

bool unmatched_step(const KernelAtPoint& k1, const KernelAtPoint& k2, const RooflineEval& e1, const RooflineEval& e2,
                    double c1, double c2, bool weak, const Thresholds& th, StepDiagnosis& d) {
  const std::string& note = !k2.code_note.empty() ? k2.code_note : k1.code_note;
  // Code without FLOPs: its work is its instructions.
  const bool by_instructions = e1.flop_less || e2.flop_less;
  const double f1 = by_instructions ? k1.counted_instructions : e1.flops;
  const double f2 = by_instructions ? k2.counted_instructions : e2.flops;
  const bool changed = !weak && available(f1) && available(f2) && f1 > 0 && f2 > 0 &&
                       std::fabs(f2 / f1 - 1) > th.work_change;
  if (note.empty() && !changed) return false;
  d = StepDiagnosis{};
  d.concurrency_ratio = (c1 > 0 && c2 > 0) ? c2 / c1 : kNaN;
  // The time ratio: counted rates of different work (or of other code) are no speedup.
  if (available(k1.time_s) && available(k2.time_s) && k2.time_s > 0) d.speedup = k1.time_s / k2.time_s;
  d.step_efficiency = d.speedup / d.concurrency_ratio;
  d.karp_flatt = karp_flatt(d.speedup, d.concurrency_ratio);
  std::ostringstream why;
  if (!note.empty()) {
    d.diagnosis = "code-differs";
    why << "the counted code is not the timed code: " << note << "; no roofline verdict";
  } else {
    d.diagnosis = "work-changed";
    why << "the work itself changed (" << (by_instructions ? "instructions " : "FLOPs ") << fmt(f1) << " -> "
        << fmt(f2) << ", " << fmt(f2 / f1) << "x"
        << "): no roofline verdict";
    if (available(d.speedup)) why << "; time speedup " << fmt(d.speedup) << "x on " << fmt(d.concurrency_ratio) << "x concurrency";
  }
  d.explanation = why.str();
  return true;
}

double karp_flatt(double speedup, double p) noexcept {
  if (!available(speedup) || !available(p) || speedup <= 0 || p <= 1) return kNaN;
  return (1.0 / speedup - 1.0 / p) / (1.0 - 1.0 / p);
}

double tail_efficiency(double blocks, double sms) noexcept {
  if (!available(blocks) || !available(sms) || blocks <= 0 || sms <= 0) return kNaN;
  double waves = blocks / sms;
  return waves / std::ceil(waves);
}

double performance_portability(const std::vector<double>& efficiencies) noexcept {
  if (efficiencies.empty()) return 0;
  double inv = 0;
  for (double e : efficiencies) {
    if (!available(e) || e <= 0) return 0;  // unsupported on one platform
    inv += 1.0 / e;
  }
  return static_cast<double>(efficiencies.size()) / inv;
}

double Ceiling::relative_spread() const noexcept {
  if (!available(value) || !(value > 0) || !available(min) || !available(max) || max < min) return 0;
  return (max - min) / value;
}

namespace {
const Ceiling* ceiling_named(const CeilingSet& set, const std::string& name) {
  for (const auto& c : set.all())
    if (c.name == name) return &c;
  return nullptr;
}
std::string level_display_name(int i, const CeilingSet& a, const CeilingSet& b) {
  for (const CeilingSet* set : {&b, &a})
    if (const Ceiling* c = set->bandwidth(static_cast<MemLevel>(i))) return c->name;
  return i == 0 ? "L1d" : level_key(static_cast<MemLevel>(i));
}

}  // namespace

std::string cache_above(int level_index, const CeilingSet& c1set, const CeilingSet& c2set) {
  if (level_index <= 0) return "";  // above L1 are the registers: no cache, no capacity to lose
  // The nearest level above with a measured ceiling: a GPU (L1, L2, HBM) has no L3.
  for (int j = level_index - 1; j >= 0; --j)
    if (c1set.bandwidth(static_cast<MemLevel>(j)) || c2set.bandwidth(static_cast<MemLevel>(j)))
      return level_display_name(j, c1set, c2set);
  return level_display_name(level_index - 1, c1set, c2set);
}

double ceiling_ratio_noise(const CeilingSet& c1set, const CeilingSet& c2set, const std::string& ceiling_name) {
  if (ceiling_name.empty()) return 0;
  const Ceiling* a = ceiling_named(c1set, ceiling_name);
  const Ceiling* b = ceiling_named(c2set, ceiling_name);
  return (a ? a->relative_spread() : 0) + (b ? b->relative_spread() : 0);
}

std::string unreliable_ceiling_note(const CeilingSet& c1set, const CeilingSet& c2set, const std::string& ceiling_name) {
  if (ceiling_name.empty()) return {};
  for (const CeilingSet* set : {&c1set, &c2set}) {
    const Ceiling* c = ceiling_named(*set, ceiling_name);
    if (c && c->unreliable)
      return "the " + ceiling_name + " ceiling is unreliable" +
             (c->unreliable_reason.empty() ? std::string() : " (" + c->unreliable_reason + ")");
  }
  return {};
}

StepDiagnosis classify_step(const KernelAtPoint& k1, const KernelAtPoint& k2, const RooflineEval& e1,
                            const RooflineEval& e2, const CeilingSet& c1set, const CeilingSet& c2set,
                            double c1, double c2, const StepEvidence& ev1, const StepEvidence& ev2,
                            const Thresholds& th) {
  StepDiagnosis d;
  d.concurrency_ratio = (c1 > 0 && c2 > 0) ? c2 / c1 : kNaN;
  const bool counts = available(e1.gflops) && available(e2.gflops) && e1.gflops > 0;
  // Speedups from times (issue 39): a ratio of FLOP rates counts work that
  // changed between the points as speed (QE's FFTW codelets read 2.03x on 2x
  // with 9.6% more FLOPs). Weak scaling: the caller passes c2's time per unit
  // of work. Rates only where a time is missing.
  if (available(k1.time_s) && available(k2.time_s) && k1.time_s > 0 && k2.time_s > 0) d.speedup = k1.time_s / k2.time_s;
  else if (counts) d.speedup = e2.gflops / e1.gflops;
  d.step_efficiency = d.speedup / d.concurrency_ratio;
  d.karp_flatt = karp_flatt(d.speedup, d.concurrency_ratio);
  d.factors = decompose(e1, e2, c1set, c2set);
  const double r = d.concurrency_ratio;
  std::ostringstream why;
  // Other processes' share of the cores (launcher), said with every verdict of a busy step.
  for (double load : {ev1.machine_load, ev2.machine_load})
    if (available(load) && (!available(d.machine_load) || load > d.machine_load)) d.machine_load = load;
  const bool busy = available(d.machine_load) && d.machine_load >= th.load_share;
  std::string load_evidence, load_words;
  if (busy) {
    auto share = [](double v) { return available(v) ? fmt(100 * v, 2) + "%" : std::string("not measured"); };
    load_evidence = "other processes took " + share(ev2.machine_load) + " of the point's cores at " + fmt(c2, 6) +
                    " (" + share(ev1.machine_load) + " at " + fmt(c1, 6) + ", measured by the launcher)";
    load_words = "measured on a busy machine: " + load_evidence;
  }
  auto with_load = [&](const std::string& text) {
    return busy && text.find(load_evidence) == std::string::npos ? text + "; " + load_words : text;
  };

  if (!available(d.step_efficiency)) {
    // Nothing to judge: no cause is named (a function the counting pass saw but
    // the timed run's samples missed at one point has counts and no time).
    d.diagnosis = "other";
    d.explanation = std::string("speedup unavailable (no ") +
                    (!available(d.concurrency_ratio) ? "concurrency" : available(k1.time_s) ? "time at the second point"
                                                                        : "time at the first point") +
                    " recorded): no cause is named";
    return d;
  }

  // AI ratio per level where both points have it.
  std::array<double, kLevelCount> ai_ratio{kNaN, kNaN, kNaN, kNaN};
  if (counts)
    for (int i = 0; i < kLevelCount; ++i)
      if (available(e1.ai[i]) && available(e2.ai[i])) ai_ratio[i] = e2.ai[i] / e1.ai[i];
  auto level_name = [&](int i) {
    const Ceiling* c = c2set.bandwidth(static_cast<MemLevel>(i));
    return c ? c->name : std::string(level_key(static_cast<MemLevel>(i)));
  };

  if (d.step_efficiency > 1 + th.superlinear_margin) {
    d.diagnosis = "superlinear";
    why << "speedup " << fmt(d.speedup) << "x on " << fmt(r) << "x concurrency";
    int best = -1;
    for (int i = 0; i < kLevelCount; ++i)
      if (available(ai_ratio[i]) && ai_ratio[i] > 1 + th.ai_rise && (best < 0 || ai_ratio[i] > ai_ratio[best])) best = i;
    if (best >= 0) {
      d.level = level_name(best);
      why << "; " << d.level << " intensity rises " << fmt(ai_ratio[best]) << "x: the aggregate cache now holds more of the working set";
    }
    d.explanation = with_load(why.str());
    return d;
  }
  // The ceilings' own spread (ERT repeats) widens what counts as ideal: a
  // shortfall within it cannot be told from ceiling noise.
  const double ceiling_noise = counts ? ceiling_ratio_noise(c1set, c2set, d.factors.basis_ceiling) : 0;
  const std::string unreliable = counts ? unreliable_ceiling_note(c1set, c2set, d.factors.basis_ceiling) : "";
  if (d.step_efficiency >= 1 - std::max(th.ideal_tolerance, ceiling_noise)) {
    d.diagnosis = "ideal";
    why << "speedup " << fmt(d.speedup) << "x on " << fmt(r) << "x concurrency (" << fmt(100 * d.step_efficiency, 3)
        << "% step efficiency)";
    if (d.step_efficiency < 1 - th.ideal_tolerance)
      why << "; within the " << d.factors.basis_ceiling << " ceiling's spread (" << fmt(100 * ceiling_noise, 2) << "%)";
    if (!unreliable.empty()) why << "; " << unreliable;
    d.explanation = with_load(why.str());
    return d;
  }

  why << "speedup only " << fmt(d.speedup) << "x on " << fmt(r) << "x concurrency";
  // The cache above level i kept its room per worker (a private L1d or L2
  // of a ranks or threads sweep, one worker a core): the traffic per FLOP
  // rose for another reason (halo or ghost data, another access order).
  auto room_kept = [&](int i) {
    const double r1 = ev1.cache_per_worker[i - 1], r2 = ev2.cache_per_worker[i - 1];
    return available(r1) && available(r2) && r1 > 0 && r2 >= r1;
  };
  // The step's loss in logarithms, ln(r / S): a fall of intensity is the
  // cause only where it explains the larger part of it (issue 39).
  const double step_loss = std::log(r / d.speedup);
  auto explains_most = [&](double intensity_ratio) {
    return !(intensity_ratio > 0) || -std::log(intensity_ratio) >= 0.5 * step_loss;
  };
  if (counts) {
    // cache-capacity: more traffic per FLOP below some cache. Prefer the
    // binding level. Not from L1: its bytes are the core's own loads and
    // stores, so a fall of the L1 AI is more memory instructions per FLOP
    // (another code path, spilled registers, a runtime's polling), no cache
    // running out of room.
    // Nor where the code that does the FLOPs keeps its intensity (a counted
    // application): the added traffic is then in code without FLOPs.
    auto work_ai_ratio = [&](int i) {
      const double f1 = k1.work_counts.total_flops(), f2 = k2.work_counts.total_flops();
      const double b1 = k1.work_counts.bytes[i], b2 = k2.work_counts.bytes[i];
      if (!(f1 > 0) || !(f2 > 0) || !available(b1) || !available(b2)) return kNaN;
      if (b1 == 0 && b2 == 0) return 1.0;  // no traffic at either point: flat
      if (b1 == 0 || b2 == 0) return b1 == 0 ? 0.0 : kInf;
      return (f2 / b2) / (f1 / b1);
    };
    // A level whose traffic at its ceiling would take under kLevelTrafficMin
    // of the later point's time carries no traffic to speak of (QE's FFTW
    // codelets at 1.2e7 FLOPs per DRAM byte, issue 39): its intensity may fall
    // tenfold and explain none of the lost time.
    auto carries_traffic = [&](int i) {
      return !(available(e2.gflops) && available(e2.level_bound[i]) && e2.level_bound[i] > 0 &&
               e2.gflops / e2.level_bound[i] < kLevelTrafficMin);
    };
    auto capacity_loss = [&](int i) {
      if (!available(ai_ratio[i]) || ai_ratio[i] >= 1 - th.ai_drop) return false;
      if (!carries_traffic(i)) return false;
      if (room_kept(i)) return false;
      const double w = work_ai_ratio(i);
      return !(w >= 1 - th.ai_drop);  // unknown (NaN) or falling too
    };
    int pick = -1, outside = -1, kept = -1;
    int idle = -1;
    for (int i = 1; i < kLevelCount; ++i) {
      if (!available(ai_ratio[i]) || ai_ratio[i] >= 1 - th.ai_drop) continue;
      if (!carries_traffic(i)) {
        if (idle < 0 || ai_ratio[i] < ai_ratio[idle]) idle = i;
        continue;
      }
      if (room_kept(i)) {
        if (kept < 0 || ai_ratio[i] < ai_ratio[kept]) kept = i;
        continue;
      }
      if (!capacity_loss(i)) {
        if (outside < 0 || ai_ratio[i] < ai_ratio[outside]) outside = i;
        continue;
      }
      if (pick < 0 || ai_ratio[i] < ai_ratio[pick]) pick = i;
    }
    MemLevel bind;
    if (level_from_ceiling_name(e2.binding, bind)) {
      int b = static_cast<int>(bind);
      if (b > 0 && capacity_loss(b)) pick = b;
    }
    if (pick >= 0 && !explains_most(ai_ratio[pick])) {
      why << "; " << level_name(pick) << " arithmetic intensity falls " << fmt(1 / ai_ratio[pick])
          << "x, which explains only " << fmt(100 * -std::log(ai_ratio[pick]) / step_loss, 2)
          << "% of the step's loss: not the main cause";
      pick = -1;
    }
    if (pick >= 0) {
      d.diagnosis = "cache-capacity";
      d.capacity_ratio = ai_ratio[pick];
      d.level = level_name(pick);
      d.cache = cache_above(pick, c1set, c2set);
      why << "; " << d.level << " arithmetic intensity falls " << fmt(1 / ai_ratio[pick]) << "x (more " << d.level
          << " traffic per FLOP: the working set no longer fits the " << d.cache
          << " as this configuration shares it)";
      d.explanation = with_load(why.str());
      return d;
    }
    if (available(ai_ratio[0]) && ai_ratio[0] < 1 - th.ai_drop)
      why << "; " << level_name(0) << " arithmetic intensity falls " << fmt(1 / ai_ratio[0])
          << "x (more loads and stores per FLOP: not a cache-capacity loss)";
    if (idle >= 0)
      why << "; " << level_name(idle) << " arithmetic intensity falls " << fmt(1 / ai_ratio[idle]) << "x, but its "
          << "traffic would take " << fmt(100 * e2.gflops / e2.level_bound[idle], 2) << "% of the time at its ceiling "
          << "(" << fmt(e2.ai[idle], 3) << " FLOPs per byte): no traffic to speak of, not a cache-capacity loss";
    if (kept >= 0) {
      const std::string above = cache_above(kept, c1set, c2set);
      why << "; " << level_name(kept) << " arithmetic intensity falls " << fmt(1 / ai_ratio[kept])
          << "x, yet each worker has as much " << above << " as before ("
          << cache_size_text(ev2.cache_per_worker[kept - 1]) << " of its own at both points): more " << level_name(kept)
          << " traffic per FLOP (halo or ghost data, another access order), not a cache-capacity loss";
    }
    if (outside >= 0)
      why << "; " << level_name(outside) << " arithmetic intensity falls " << fmt(1 / ai_ratio[outside])
          << "x, but not in the code that does the FLOPs (its " << level_name(outside) << " AI "
          << (work_ai_ratio(outside) >= 1 ? "holds" : "falls only " + fmt(1 / work_ai_ratio(outside)) + "x")
          << "): the added traffic is in code without FLOPs (start-up, the loader, exit write-backs, halo "
             "copies), which each process repeats; not a cache-capacity loss";
    // Otherwise attribute the loss ln(r/S) to its largest factor: the ceiling's
    // shortfall from r (contention / compute) or the fall in efficiency (other).
    const double eta2 = e2.efficiency;
    const auto& f = d.factors;
    const double loss_ceiling = available(f.ceiling_ratio) ? std::log(r / f.ceiling_ratio) : kNaN;
    const double loss_eff = available(f.efficiency_ratio) ? -std::log(f.efficiency_ratio) : kNaN;
    // A ceiling loss must exceed the ceilings' spread, and rest on reliable ceilings.
    const bool ceiling_dominates = available(loss_ceiling) && loss_ceiling > std::log1p(ceiling_noise) &&
                                   (!available(loss_eff) || loss_ceiling >= loss_eff);
    const bool pinned = available(eta2) && eta2 >= th.on_ceiling && available(f.ceiling_ratio) &&
                        f.ceiling_ratio < r * (1 - std::max(th.ideal_tolerance, ceiling_noise));
    // A ceiling binds only a kernel that runs near it (issue 39: the demo's
    // triad at eta 0.17 was "bandwidth-contention on DRAM"): below the
    // on-ceiling floor the ceiling's slow growth explains nothing yet.
    const bool below_floor = !available(eta2) || eta2 < th.on_ceiling;
    if (!f.basis.empty() && ceiling_dominates && below_floor)
      why << "; " << (e2.compute_bound() ? "compute-bound" : "bandwidth-contention") << " not claimed: eta "
          << (available(eta2) ? fmt(eta2, 2) : std::string("unknown")) << " is below the on-ceiling "
          << fmt(th.on_ceiling, 2) << " of the " << f.basis_ceiling << " ceiling";
    if (!f.basis.empty() && (ceiling_dominates || pinned) && !below_floor && !unreliable.empty())
      why << "; " << (e2.compute_bound() ? "compute-bound" : "bandwidth-contention") << " not claimed: "
          << unreliable;
    // On a busy machine the other processes shared the ceiling: its shortfall is theirs as much as the app's.
    else if (!f.basis.empty() && (ceiling_dominates || pinned) && !below_floor && busy)
      why << "; " << (e2.compute_bound() ? "compute-bound" : "bandwidth-contention")
          << " not claimed on a busy machine";
    if (!f.basis.empty() && (ceiling_dominates || pinned) && !below_floor && unreliable.empty() && !busy) {
      d.diagnosis = e2.compute_bound() ? "compute-bound" : "bandwidth-contention";
      if (!e2.compute_bound()) d.level = f.basis_ceiling;
      why << "; bound by the " << f.basis_ceiling << " ceiling (eta " << fmt(eta2, 2) << "), which grows only "
          << fmt(f.ceiling_ratio) << "x";
      d.explanation = why.str();
      return d;
    }
  }

  // Work without FLOPs (issue 39: hash probes, sorts, joins, graph codes):
  // the same capacity rule on instructions per byte, the instruction
  // intensity the counting pass feeds.
  const double i1 = k1.counted_instructions, i2 = k2.counted_instructions;
  if (!counts && available(i1) && available(i2) && i1 > 0 && i2 > 0) {
    int pick = -1;
    double pick_ratio = kNaN;
    for (int i = 1; i < kLevelCount; ++i) {
      const double b1 = k1.counts.bytes[i], b2 = k2.counts.bytes[i];
      if (!available(b1) || !available(b2) || !(b2 > 0) || b1 < 0) continue;
      const double ratio = b1 > 0 ? (i2 / b2) / (i1 / b1) : 0.0;  // c2 over c1; 0: no traffic at c1
      if (ratio >= 1 - th.ai_drop || room_kept(i) || !explains_most(ratio)) continue;
      // No traffic to speak of: at the level's ceiling its bytes take under kLevelTrafficMin of the time.
      const Ceiling* bw = c2set.bandwidth(static_cast<MemLevel>(i));
      if (bw && available(k2.time_s) && k2.time_s > 0 && b2 / (bw->value * 1e9) < kLevelTrafficMin * k2.time_s)
        continue;
      if (pick < 0 || ratio < pick_ratio) { pick = i; pick_ratio = ratio; }
    }
    if (pick >= 0) {
      d.diagnosis = "cache-capacity";
      d.intensity = "instructions";
      d.capacity_ratio = pick_ratio;
      d.level = level_name(pick);
      d.cache = cache_above(pick, c1set, c2set);
      why << "; no FLOPs: " << d.level << " bytes per instruction rise ";
      if (pick_ratio > 0) why << fmt(1 / pick_ratio) << "x";
      else why << "from none";
      why << " (instructions " << fmt(i1) << " -> " << fmt(i2) << ", " << d.level << " bytes "
          << fmt(k1.counts.bytes[pick]) << " -> " << fmt(k2.counts.bytes[pick])
          << "): the working set no longer fits the " << d.cache << " as this configuration shares it";
      d.explanation = with_load(why.str());
      return d;
    }
  }
  // other: name the likeliest cause from the evidence.
  d.diagnosis = "other";
  if (counts) {
    // Named by its level (the bound's): another level's fall may have been
    // said above. A compute bound has no intensity factor to be flat.
    const bool level_basis = !d.factors.basis.empty() && d.factors.basis != "compute";
    if (level_basis) why << "; " << d.factors.basis_ceiling << " arithmetic intensity flat";
    if (available(e1.efficiency) && available(e2.efficiency))
      why << (level_basis ? ", " : "; ") << "efficiency " << fmt(e1.efficiency, 2) << " -> " << fmt(e2.efficiency, 2);
  } else {
    why << " (no operation counts: time scaling only)";
  }
  struct Candidate { const char* cause; double factor; std::string words; };
  std::vector<Candidate> candidates;
  {
    double l1 = available(ev1.imbalance) ? ev1.imbalance : 0, l2 = ev2.imbalance;
    if (available(l2))
      candidates.push_back({"imbalance", (1 + l2) / (1 + l1),
                            "rank imbalance max/mean-1 " + fmt(l1, 2) + " -> " + fmt(l2, 2)});
  }
  // The application's MPI share is no evidence about a counted function's
  // own time: its samples are its code, the MPI calls are functions of their
  // own (QE's FFTW codelets and LAMMPS's pair force were "mpi", issue 39).
  if (available(ev2.mpi_share) && k2.kind != "function") {
    double m1 = available(ev1.mpi_share) ? ev1.mpi_share : 0, m2 = ev2.mpi_share;
    if (m2 - m1 >= th.mpi_share_rise && m2 < 1)
      candidates.push_back({"mpi", (1 - m1) / (1 - m2),
                            "MPI share of wall time " + fmt(100 * m1, 3) + "% -> " + fmt(100 * m2, 3) + "%"});
  }
  {
    double t1 = tail_efficiency(ev1.mean_blocks, ev1.sms), t2 = tail_efficiency(ev2.mean_blocks, ev2.sms);
    if (available(t2) && t2 < th.tail_efficiency)
      candidates.push_back({"tail-effect", (available(t1) ? t1 : 1.0) / t2,
                            fmt(ev2.mean_blocks, 4) + " blocks on " + fmt(ev2.sms, 4) + " SMs fill the last wave to " +
                                fmt(100 * t2, 3) + "%"});
  }
  {
    // A kernel whose mean-rank time barely drops has a serial part (Karp-Flatt >= 0.5).
    double sm = (available(k1.mean_rank_time_s) && available(k2.mean_rank_time_s) && k2.mean_rank_time_s > 0)
                    ? k1.mean_rank_time_s / k2.mean_rank_time_s
                    : kNaN;
    double kf = karp_flatt(sm, r);
    // Launches below the floor make that serial part the launch overhead.
    const bool short_launches = available(ev2.mean_launch_s) && ev2.mean_launch_s < th.launch_floor_s;
    if (available(sm) && sm < 1 - th.cause_min)
      // Slower with more resources: Karp-Flatt exceeds 1 and no serial part
      // explains it; something the added workers share got worse.
      candidates.push_back({"slowdown", r / sm,
                            "mean-rank time rose " + fmt(1 / sm) + "x on " + fmt(r) +
                                "x concurrency (contention for a shared cache, bandwidth or oversubscribed cores, "
                                "or run-to-run noise)"});
    else if (available(kf) && kf >= 0.5)
      candidates.push_back(short_launches
                               ? Candidate{"launch-overhead", r / sm,
                                           "launches average " + fmt(ev2.mean_launch_s * 1e6) + " us (below the " +
                                               fmt(th.launch_floor_s * 1e6) + " us launch floor), Karp-Flatt " + fmt(kf, 2)}
                               : Candidate{"serial-fraction", r / sm, "Karp-Flatt serial fraction " + fmt(kf, 2) + " (mean rank)"});
  }
  if (busy)  // up to 1 / (1 - share): the time the other processes' share of the cores explains
    candidates.push_back({"machine-load", 1 / std::max(1e-3, 1 - d.machine_load), "machine load: " + load_evidence});
  const Candidate* best = nullptr;
  for (const auto& c : candidates)
    if (c.factor >= 1 + th.cause_min && (!best || c.factor > best->factor * 1.01)) best = &c;  // ties: the specific cause
  if (best) {
    d.cause = best->cause;
    why << "; " << best->words << (best->cause == std::string("machine-load") ? " accounts for up to " : " accounts for ")
        << fmt(best->factor) << "x over ideal";
  } else if (available(ev2.mean_launch_s) && ev2.mean_launch_s < th.launch_floor_s) {
    d.cause = "launch-overhead";
    why << "; launches average " << fmt(ev2.mean_launch_s * 1e6) << " us, below the "
        << fmt(th.launch_floor_s * 1e6) << " us launch floor";
  } else if (d.speedup < 1 - th.cause_min) {
    d.cause = "slowdown";
    why << "; slower on " << fmt(r) << "x concurrency (speedup " << fmt(d.speedup)
        << "x): contention for a shared resource or run-to-run noise";
  } else if (!(d.karp_flatt < 0.5)) {
    d.cause = "serial-fraction";
    why << "; Karp-Flatt serial fraction " << fmt(d.karp_flatt, 2);
  } else {
    // No evidence names a cause and the Karp-Flatt fraction is small: no
    // serial part to speak of (LAMMPS's pair force, 1.72x on 2x, read
    // "serial-fraction" at 0.16, issue 39); its work per unit took longer.
    d.cause = "computation-scaling";
    why << "; Karp-Flatt serial fraction only " << fmt(d.karp_flatt, 2)
        << ": no serial part to speak of; its time per unit of work grew (no other evidence names why)";
  }
  if (!unreliable.empty() && why.str().find(unreliable) == std::string::npos) why << "; efficiencies rest on " << unreliable;
  d.explanation = with_load(why.str());
  return d;
}

}  // namespace rtrace::analysis
