#include "rtrace/analysis/counted_work.hpp"

#include "rtrace/analysis/profile.hpp"
#include "text_format.hpp"

#include <algorithm>
#include <cctype>

namespace rtrace::analysis {
namespace {

std::string width_name(int w) { return w == 0 ? std::string("scalar") : std::to_string(kWidthBits[w]) + "-bit"; }

// "a", "a or b", "a, b or c".
std::string join_or(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  return out;
}

std::string join_and(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
  return out;
}

// A module's name up to ".so" ("libopenblasp-r0.3.21" of "libopenblasp-r0.3.21.so").
std::string module_stem(const std::string& m) {
  const auto at = m.find(".so");
  return at == std::string::npos ? m : m.substr(0, at);
}

// The same module seen by both runs: equal, unknown on a side, or one
// name's stem extending the other's (a symlink's name against the file's:
// libopenblas.so.0 -> libopenblasp-r0.3.21.so).
bool same_module(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty() || a == b) return true;
  const std::string sa = module_stem(a), sb = module_stem(b);
  return !sa.empty() && !sb.empty() && (sa.rfind(sb, 0) == 0 || sb.rfind(sa, 0) == 0);
}

// Length of the names' common stem, cut back to a word boundary: 12 for
// dgemm_kernel_PRESCOTT / dgemm_kernel_HASWELL ("dgemm_kernel"); 0 below 3
// letters or digits.
std::size_t common_stem(const std::string& a, const std::string& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  if (n == a.size() && n == b.size()) return n;
  auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
  // Cut inside a word ("foo" of "foobar"): back to the word's start.
  if (n > 0 && word(a[n - 1]) && ((n < a.size() && word(a[n])) || (n < b.size() && word(b[n]))))
    while (n > 0 && word(a[n - 1])) --n;
  while (n > 0 && !word(a[n - 1])) --n;  // no trailing separators
  std::size_t letters = 0;
  for (std::size_t i = 0; i < n; ++i) letters += std::isalnum(static_cast<unsigned char>(a[i])) ? 1 : 0;
  return letters >= 3 ? n : 0;
}

bool is_library(const std::string& module) {
  return module.rfind("lib", 0) == 0 && module.find(".so") != std::string::npos;
}

std::string quoted(const std::string& fn) { return "`" + fn + "`"; }

// Code without a symbol ("libfoo.so+0x4d50"): each run names it by the
// addresses it saw (a block's, a PC's), so its names do not identify code
// across runs.
bool unnamed(const std::string& fn) { return fn.find("+0x") != std::string::npos && fn.find(' ') == std::string::npos; }

}  // namespace

FlopMix flop_mix_of(const store::CountRow& r) {
  FlopMix m;
  m.flops = {{{r.flops_fp64_scalar, r.flops_fp64_v128, r.flops_fp64_v256, r.flops_fp64_v512},
              {r.flops_fp32_scalar, r.flops_fp32_v128, r.flops_fp32_v256, r.flops_fp32_v512},
              {r.flops_fp16_scalar, r.flops_fp16_v128, r.flops_fp16_v256, r.flops_fp16_v512}}};
  return m;
}

std::string flop_mix_sentence(const FlopMix& mix, int machine_vector_bits, bool simulated) {
  int p = -1;
  double total = 0;
  for (int i = 0; i < kMixPrecisionCount; ++i) {
    const double t = mix.precision_total(i);
    if (available(t) && t > total) {
      total = t;
      p = i;
    }
  }
  if (p < 0) return "";
  static const char* const kNames[kMixPrecisionCount] = {"FP64", "FP32", "FP16"};
  const std::string prec = kNames[p];
  double share[kWidthCount];
  for (int w = 0; w < kWidthCount; ++w) {
    const double v = mix.flops[static_cast<std::size_t>(p)][static_cast<std::size_t>(w)];
    share[w] = available(v) ? v / total : 0;
  }
  std::string out;
  const int machine = machine_vector_bits;
  if (machine > 0) {
    double below = 0;
    std::vector<std::string> narrower;
    for (int w = 0; w < kWidthCount; ++w)
      if (kWidthBits[w] < machine && share[w] > 0) {
        below += share[w];
        narrower.push_back(width_name(w));
      }
    if (below >= 0.5)
      out = format::percent(below) + " of " + prec + " FLOPs " + join_or(narrower) + "; this CPU runs " +
            std::to_string(machine) + "-bit";
    else
      out = format::percent(1 - below) + " of " + prec + " FLOPs " + std::to_string(machine) +
            "-bit, the widest this CPU runs";
    if (simulated && machine > 256)
      out += " (counted under Valgrind, which hides AVX-512: code that picks its width at run time may run wider "
             "when timed)";
  } else {
    std::vector<std::string> parts;
    for (int w = 0; w < kWidthCount; ++w)
      if (share[w] > 0) parts.push_back(format::percent(share[w]) + " " + width_name(w));
    out = prec + " FLOPs " + join_and(parts) + " (the machine's widest vector width is not recorded in this file)";
  }
  return out;
}

void RuntimeCounts::add(const std::string& category, const std::string& function, const Counts& c,
                        double instr) {
  counts.add(c);
  instructions = nan_add(instructions, instr);
  if (available(instr)) {
    category_instructions[category] += instr;
    if (!function.empty()) function_instructions[function] += instr;
  }
}

bool RuntimeCounts::any() const noexcept {
  return (available(instructions) && instructions > 0) || counts.any_bytes() ||
         (available(counts.total_flops()) && counts.total_flops() > 0);
}

std::string runtime_sentence(const RuntimeCounts& rt, const Counts& app, double app_instructions) {
  if (!rt.any()) return "";
  auto share = [](double part, double whole_rest) {
    if (!available(part) || !(part > 0)) return 0.0;
    const double whole = part + (available(whole_rest) ? whole_rest : 0);
    return whole > 0 ? part / whole : 0.0;
  };
  const double instr = share(rt.instructions, app_instructions);
  const double l1 = share(rt.counts.bytes[0], app.bytes[0]);
  const double flops = share(rt.counts.total_flops(), app.total_flops());
  if (instr < 0.005 && l1 < 0.005 && flops < 0.005) return "";
  std::vector<std::string> what;
  if (instr > 0) what.push_back(format::percent(instr) + " of the counted instructions");
  if (l1 > 0) what.push_back(format::percent(l1) + " of the L1 bytes");
  if (flops >= 0.005) what.push_back(format::percent(flops) + " of the FLOPs");
  std::vector<std::string> where;
  for (const auto& [cat, n] : rt.category_instructions) {
    if (!(n > 0)) continue;
    where.push_back(cat == "mpi"      ? "the MPI library"
                    : cat == "openmp" ? "the OpenMP runtime"
                    : cat == "rtrace" ? "the rtrace tracer"
                                      : "code outside any module");
  }
  if (where.empty()) where.push_back("the runtimes");
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [fn, n] : rt.function_instructions)
    if (fn.empty() || fn.front() != '[') top.emplace_back(n, fn);  // "[unknown code]" names nothing
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> names;
  for (std::size_t i = 0; i < top.size() && i < 3; ++i) names.push_back(top[i].second);
  std::string out = join_and(what) + " ran in " + join_and(where);
  if (!names.empty()) {
    out += " (";
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
    out += ")";
  }
  return out + ": a waiting rank or thread spins there under the counting tool, so these counts grow with the "
               "wait; kept apart, in no roofline";
}

std::string code_mismatch_sentence(const CodeMismatch& m, double timed_lo, double timed_hi, double counted_lo,
                                   double counted_hi) {
  auto shares = [](double lo, double hi) {
    return lo == hi || !available(hi) ? format::percent(lo) : format::percent(lo) + "-" + format::percent(hi);
  };
  const std::string timed = "timed " + quoted(m.timed) + " " + shares(timed_lo, timed_hi) + " of samples";
  const std::string counted = "counted " + quoted(m.counted) + " " + shares(counted_lo, counted_hi) +
                              " of counted instructions";
  if (m.counted.empty())
    return timed + ", never counted: the counting run did not run it (code picked at run time differs under the "
                   "counting tool)";
  if (m.timed.empty())
    return counted + ", no sample in the timed run: the counting run ran code the timed run did not";
  const std::string module = !m.counted_module.empty() ? m.counted_module : m.timed_module;
  std::string out = timed + ", " + counted + (module.empty() ? "" : " (" + module + ")") + ": " +
                    (is_library(module) ? "the library" : "the program") +
                    " picked other code under the counting tool (a choice made at run time: by CPU, or a plan per "
                    "run)";
  // FFTW measures candidate plans in every run: the timed and the counting runs may keep different ones.
  if (module.rfind("libfftw", 0) == 0)
    out += "; FFTW plans anew in each run: load the same wisdom in both runs, or plan with FFTW_ESTIMATE";
  return out;
}

std::vector<CodeMismatch> compare_code(const std::map<std::string, SampledCode>& timed, double timed_work_samples,
                                       const std::map<std::string, CountedCode>& counted,
                                       double counted_instructions, double min_share, double min_samples) {
  std::vector<CodeMismatch> out;
  if (timed.empty() || counted.empty() || !(timed_work_samples > 0) || !(counted_instructions > 0)) return out;
  struct Side {
    std::string name, module;
    double share;
    bool used = false;
  };
  std::vector<Side> timed_only, counted_only;
  for (const auto& [fn, c] : timed) {
    if (c.category != "app" && c.category != "system") continue;  // runtime code is no one's work
    if (unnamed(fn)) continue;
    const double share = c.samples / timed_work_samples;
    if (share < min_share || c.samples < min_samples || counted.count(fn)) continue;
    timed_only.push_back({fn, c.module, share});
  }
  for (const auto& [fn, c] : counted) {
    const double share = c.instructions / counted_instructions;
    // A share that would have given it min_samples samples in the timed run, had it run there.
    if (!(share >= min_share) || share * timed_work_samples < min_samples || timed.count(fn) || unnamed(fn)) continue;
    counted_only.push_back({fn, c.module, share});
  }
  auto by_share = [](const Side& a, const Side& b) { return a.share > b.share; };
  std::sort(timed_only.begin(), timed_only.end(), by_share);
  std::sort(counted_only.begin(), counted_only.end(), by_share);
  for (auto& t : timed_only) {
    // The counted function of the same module with the longest common name stem.
    Side* best = nullptr;
    std::size_t best_stem = 0;
    for (auto& c : counted_only) {
      if (c.used || !same_module(t.module, c.module)) continue;
      const std::size_t stem = common_stem(t.name, c.name);
      if (stem > best_stem) {
        best_stem = stem;
        best = &c;
      }
    }
    if (!best && !t.module.empty()) {
      // No common stem: the only unpaired function of that module on each side.
      Side* only = nullptr;
      int n_counted = 0, n_timed = 0;
      for (auto& c : counted_only)
        if (!c.used && !c.module.empty() && same_module(t.module, c.module)) { ++n_counted; only = &c; }
      for (const auto& o : timed_only)
        if (!o.used && same_module(t.module, o.module)) ++n_timed;
      if (n_counted == 1 && n_timed == 1) best = only;
    }
    if (!best) continue;
    t.used = best->used = true;
    out.push_back({t.name, t.module, t.share, best->name, best->module, best->share, ""});
  }
  for (const auto& t : timed_only)
    if (!t.used) out.push_back({t.name, t.module, t.share, "", "", kNaN, ""});
  for (const auto& c : counted_only)
    if (!c.used) out.push_back({"", "", kNaN, c.name, c.module, c.share, ""});
  for (auto& m : out) m.sentence = code_mismatch_sentence(m, m.timed_share, m.timed_share, m.counted_share, m.counted_share);
  return out;
}

}  // namespace rtrace::analysis
