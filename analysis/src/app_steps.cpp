// Whole-application steps of a scaling group: POP factors, named causes, words.
#include "rtrace/analysis/analyze.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace rtrace::analysis {
void summarise_steps(AppSummary& sum, const std::string& axis, int cores, const Thresholds& th,
                     const ProfileResult* profile) {
  if (sum.points.empty()) return;
  std::vector<PopPoint*> pops;
  std::vector<double> work;
  const double c0 = sum.points.front().concurrency;
  for (auto& p : sum.points) {
    pops.push_back(&p.pop);
    work.push_back(sum.weak ? p.concurrency / c0 : 1.0);
  }
  pop_scaling(pops, work);
  StepContext ctx;
  ctx.cores = cores;
  ctx.weak = sum.weak;
  ctx.axis = axis;
  sum.steps.clear();
  sum.breaks_after = -1;
  for (std::size_t i = 0; i + 1 < sum.points.size(); ++i) {
    const AppPoint& a = sum.points[i];
    const AppPoint& b = sum.points[i + 1];
    // The POP factors come from each configuration's representative repeat;
    // its wall time keeps the step's product identity exact.
    double t1 = available(a.pop.wall_s) ? a.pop.wall_s : a.time_s;
    double t2 = available(b.pop.wall_s) ? b.pop.wall_s : b.time_s;
    // The samples' shapes only where they show most of the CPU time at both points: a busy
    // machine's time slicing can delay a thread's timer signals for its whole run.
    const bool covered = !(available(a.pop.sampled_coverage) && a.pop.sampled_coverage < kMinSampledCoverage) &&
                         !(available(b.pop.sampled_coverage) && b.pop.sampled_coverage < kMinSampledCoverage);
    ctx.sampled = profile && covered
                      ? sampled_step(*profile, a.config, b.config, a.concurrency, b.concurrency, sum.weak)
                      : SampledStep{};
    AppStep st = classify_app_step(a.pop, b.pop, a.concurrency, b.concurrency, t1, t2, std::max(a.spread, b.spread),
                                   ctx, th);
    if (profile && !covered && (st.diagnosis == "loss" || st.diagnosis == "offsetting")) {
      const AppPoint& low = available(a.pop.sampled_coverage) &&
                                    (!available(b.pop.sampled_coverage) || a.pop.sampled_coverage < b.pop.sampled_coverage)
                                ? a
                                : b;
      char pct_text[32];
      std::snprintf(pct_text, sizeof pct_text, "%.0f%%", 100 * low.pop.sampled_coverage);
      st.explanation += std::string("; the samples show only ") + pct_text + " of the CPU time at " + axis + "=" +
                        fmt(low.concurrency, 6) + " (time slicing with other processes delays the CPU-time timer " +
                        "signals), so their shapes are not used";
    }
    st.from = static_cast<int>(i);
    st.to = static_cast<int>(i + 1);
    if (st.diagnosis == "loss" && sum.breaks_after < 0) sum.breaks_after = static_cast<int>(i);
    sum.steps.push_back(std::move(st));
  }
}

std::string cause_names(const AppStep& st) {
  std::string out;
  for (const auto& c : st.causes) out += (out.empty() ? "" : " + ") + c.cause;
  return out.empty() ? st.cause : out;
}

std::vector<std::string> step_sentences(const AppSummary& sum, const std::string& axis, const Thresholds& th) {
  std::vector<std::string> out;
  if (sum.steps.empty()) return out;
  bool superlinear = false, noise = false, offsetting = false;
  for (const auto& st : sum.steps) {
    superlinear |= st.diagnosis == "superlinear";
    noise |= st.diagnosis == "noise";
    offsetting |= st.diagnosis == "offsetting";
  }
  if (sum.breaks_after >= 0) {
    const AppStep& st = sum.steps[static_cast<std::size_t>(sum.breaks_after)];
    out.push_back("Scaling breaks past " + axis + "=" + fmt(st.c1, 6) + ": " + cause_names(st) + " - " +
                  st.explanation + ".");
    // Later losses with other causes, once each.
    std::string seen = " " + cause_names(st) + " ";
    for (std::size_t i = static_cast<std::size_t>(sum.breaks_after) + 1; i < sum.steps.size(); ++i) {
      const AppStep& s = sum.steps[i];
      if (s.diagnosis != "loss" || seen.find(" " + cause_names(s) + " ") != std::string::npos) continue;
      seen += cause_names(s) + " ";
      out.push_back("Past " + axis + "=" + fmt(s.c1, 6) + ": " + cause_names(s) + " - " + s.explanation + ".");
    }
  } else if (!superlinear && !noise && !offsetting) {
    // Ideal means every POP factor of every step within tolerance, not only the efficiency.
    out.push_back("The application scales within " + fmt(100 * th.ideal_tolerance, 3) +
                  "% of ideal at every step, every POP factor within tolerance.");
  } else if (!superlinear && !offsetting) {
    out.push_back("No step loses more than the repeats' spread: the remaining differences are noise.");
  }
  for (const auto& st : sum.steps) {
    const std::string where = axis + " " + fmt(st.c1, 6) + "->" + fmt(st.c2, 6);
    if (st.diagnosis == "superlinear")
      out.push_back("Superlinear at " + where + ": " + st.explanation + ".");
    else if (st.diagnosis == "noise")
      out.push_back("Noise at " + where + ": " + st.explanation + ".");
    else if (st.diagnosis == "offsetting")
      out.push_back("Factors offset at " + where + " (" + cause_names(st) + "): " + st.explanation + ".");
  }
  return out;
}

}  // namespace rtrace::analysis
