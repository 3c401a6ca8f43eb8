#include "rtrace/ert/ceilings.hpp"
#include <set>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace rtrace::ert {

SpreadStats spread(const std::vector<double>& values) {
  SpreadStats s;
  std::vector<double> v;
  for (double x : values)
    if (!std::isnan(x)) v.push_back(x);
  if (v.empty()) {
    s.median = s.max = s.min = std::nan("");
    return s;
  }
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  s.count = int(n);
  return s;
}

std::vector<int> high_intensity_flops(const std::vector<int>& measured) {
  std::vector<int> f(measured);
  std::sort(f.begin(), f.end());
  f.erase(std::unique(f.begin(), f.end()), f.end());
  if (f.size() > 3) f.erase(f.begin(), f.end() - 3);
  return f;
}

namespace {

std::string fmt1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

store::CeilingRow make_row(const std::string& name, const char* kind, const char* precision, const char* variant,
                           const SpreadStats& s, const char* unit, std::int64_t level_bytes) {
  store::CeilingRow row{};
  store::set_str(row.name, name);
  store::set_str(row.kind, kind);
  store::set_str(row.precision, precision);
  store::set_str(row.variant, variant);
  row.value = s.median;
  row.max = s.max;
  row.min = s.min;
  row.repeats = s.count;
  store::set_str(row.unit, unit);
  row.level_bytes = level_bytes;
  return row;
}

}  // namespace

namespace {

// Per repeat, the best sample of a set (the ceiling of that repeat).
struct RepeatBests {
  std::map<int, const Sample*> best;
  void add(const Sample& s) {
    const Sample*& b = best[s.repeat];
    if (!b || value(s) > value(*b)) b = &s;
  }
  static double value(const Sample& s) { return s.series == Series::Flops ? s.gflops_per_s() : s.gbytes_per_s(); }
  SpreadStats stats() const {
    std::vector<double> v;
    for (const auto& [r, s] : best) v.push_back(value(*s));
    return spread(v);
  }
  int disturbed() const {
    int n = 0;
    for (const auto& [r, s] : best) n += s->disturbed ? 1 : 0;
    return n;
  }
};

// A memory level's bandwidth in one repeat, over its plateau's working sets:
// their upper median (the best of two; of an even number, the higher middle
// one), not their best. The plateau is what the level sustains across its
// working sets; its best point can be a quirk of one or two sizes. On the
// Zen 5 VM of issue 32 the L2 range held 755-790 GB/s from 54 to 430 KiB per
// worker and 820-1015 at 512-724 KiB, in ERT and in likwid-bench alike, at
// sizes and heights that moved between runs: the best point made L2 770 in
// one run and 856 in the next, and the machine's reference then marked every
// later run. Repeats still take maxima over time (RepeatBests, as before).
const Sample* upper_median(std::vector<const Sample*> samples) {
  std::sort(samples.begin(), samples.end(), [](const Sample* a, const Sample* b) {
    return RepeatBests::value(*a) < RepeatBests::value(*b);
  });
  return samples[samples.size() / 2];
}

// Compute ceilings: per precision/variant, best of the high-intensity end.
void add_compute_ceilings(const std::vector<const Sample*>& flop_samples, std::vector<store::CeilingRow>& rows,
                          std::vector<int>* disturbed, std::vector<std::string>* notes) {
  std::map<std::tuple<int, int>, std::vector<const Sample*>> families;
  std::vector<std::tuple<int, int>> order;
  for (const Sample* s : flop_samples) {
    auto key = std::make_tuple(int(s->kernel.precision), int(s->kernel.variant));
    if (!families.count(key)) order.push_back(key);
    families[key].push_back(s);
  }
  for (const auto& key : order) {
    const auto& family = families[key];
    std::vector<int> fs;
    for (const Sample* s : family) fs.push_back(s->kernel.flops_per_element);
    const std::vector<int> high = high_intensity_flops(fs);
    RepeatBests bests;
    std::vector<const Sample*> high_samples;
    for (const Sample* s : family)
      if (std::find(high.begin(), high.end(), s->kernel.flops_per_element) != high.end()) {
        bests.add(*s);
        high_samples.push_back(s);
      }
    const auto p = Precision(std::get<0>(key));
    const auto v = Variant(std::get<1>(key));
    // The upper median of every run of the three highest F over all the
    // repeats, which are spread over the run (make_cpu_plan): what the
    // machine sustained. Not the best run, as ERT takes maxima: on an
    // Emerald Rapids VM the host's clock jumps for a few milliseconds at a
    // time (FP64 FMA 207-227 GFLOP/s in a whole ~1 ms group of runs, 165-190
    // around it, LIKWID's 0.2 s runs 180-188), and in 7 of 12 quick runs the
    // best run made FP64 FMA or FP32 FMA 1.13-1.2x LIKWID. A slowdown of a
    // third of the run (a host SMT sibling running someone else's FMAs
    // halved FP64 FMA on a 2-vCPU VM) still leaves the median with the rest;
    // one of two thirds is the machine's reference's to catch. min and max
    // are the slowest and fastest repeat's own median: the spread between
    // the parts of the run that the tolerances take as its noise (single
    // runs' extremes made it 32% where the repeats differed by 19%, and a
    // whole run at half speed then passed against the machine's reference).
    std::map<int, std::vector<const Sample*>> by_repeat;
    for (const Sample* s : high_samples) by_repeat[s->repeat].push_back(s);
    std::vector<double> repeat_medians;
    for (const auto& [r, list] : by_repeat) repeat_medians.push_back(RepeatBests::value(*upper_median(list)));
    SpreadStats stats = spread(repeat_medians);
    if (!high_samples.empty()) {
      stats.median = RepeatBests::value(*upper_median(high_samples));
      stats.min = std::min(stats.min, stats.median);
      stats.max = std::max(stats.max, stats.median);
    }
    const std::string name = compute_ceiling_name(p, v);
    rows.push_back(make_row(name, "compute", to_string(p), to_string(v), stats, "GFLOP/s", -1));
    if (disturbed) disturbed->push_back(bests.disturbed());
    if (notes && stats.count > 1 && stats.min < stats.max * (1 - kFlopSpreadNoted))
      notes->push_back(name + " ranged " + fmt1(stats.min) + "-" + fmt1(stats.max) + " GFLOP/s over " +
                       std::to_string(stats.count) +
                       " repeats spread over the run (start, middle, end): the machine's speed changed while it ran; "
                       "the ceiling is their median");
  }
}

}  // namespace

CeilingAnalysis derive_ceilings(const std::vector<Sample>& samples, const std::vector<MemoryLevel>& levels,
                                const PlateauOptions& options) {
  CeilingAnalysis out;

  // ---- bandwidth: one point per working set, repeats kept apart
  std::map<std::int64_t, std::map<int, const Sample*>> by_ws;  // ws -> repeat -> best sample
  for (const Sample& s : samples) {
    if (s.series != Series::Bandwidth || s.one_worker) continue;
    const Sample*& b = by_ws[s.working_set_bytes][s.repeat];
    if (!b || s.gbytes_per_s() > b->gbytes_per_s()) b = &s;
  }
  std::vector<std::map<int, const Sample*>> point_repeats;
  for (const auto& [ws, reps] : by_ws) {
    std::vector<double> values;
    for (const auto& [r, s] : reps) values.push_back(s->gbytes_per_s());
    out.curve.push_back(CurvePoint{double(ws), spread(values).median});
    point_repeats.push_back(reps);
  }
  if (!out.curve.empty()) {
    out.plateaus = detect_plateaus(out.curve, options);
    LevelNaming naming = name_levels(out.curve, out.plateaus, levels, std::min<std::size_t>(2, options.min_points));
    out.notes = naming.notes;
    for (const NamedLevel& level : naming.levels) {
      std::map<int, std::vector<const Sample*>> by_repeat;  // repeat -> its sample at each of the level's points
      for (std::size_t k : level.points)
        for (const auto& [r, s] : point_repeats[k]) by_repeat[r].push_back(s);
      // DRAM without a plateau (noise, preemption) takes the best of its
      // working sets: the low ones were disturbed.
      const bool plateau = level.plateau < out.plateaus.size();
      RepeatBests bests;  // repeat -> the level's value in it
      for (const auto& [r, at_points] : by_repeat)
        if (plateau)
          bests.add(*upper_median(at_points));
        else
          for (const Sample* s : at_points) bests.add(*s);
      out.ceilings.push_back(make_row(level.name, "bandwidth", "", "", bests.stats(), "GB/s", level.level_bytes));
      out.disturbed_repeats.push_back(bests.disturbed());
    }
  }

  // ---- compute: per precision/variant, best of the high-intensity end
  std::vector<const Sample*> flops;
  for (const Sample& s : samples)
    if (s.series == Series::Flops && !s.one_worker) flops.push_back(&s);
  add_compute_ceilings(flops, out.ceilings, &out.disturbed_repeats, &out.notes);
  return out;
}

std::vector<store::CeilingRow> one_worker_ceilings(const std::vector<Sample>& samples,
                                                   const std::vector<MemoryLevel>& levels) {
  std::vector<store::CeilingRow> rows;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const LevelRange r = level_range(levels, i);
    RepeatBests bests;
    for (const Sample& s : samples)
      if (s.one_worker && s.series == Series::Bandwidth && double(s.working_set_bytes) > r.low &&
          double(s.working_set_bytes) <= r.high)
        bests.add(s);
    if (!bests.best.empty())
      rows.push_back(make_row(levels[i].name, "bandwidth", "", "", bests.stats(), "GB/s", levels[i].level_bytes));
  }
  std::vector<const Sample*> flops;
  for (const Sample& s : samples)
    if (s.series == Series::Flops && s.one_worker) flops.push_back(&s);
  add_compute_ceilings(flops, rows, nullptr, nullptr);
  return rows;
}

std::vector<store::CeilingRow> slowest_node_ceilings(const std::vector<store::CeilingRow>& node_rows, int nodes) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const store::CeilingRow*>> by_name;
  std::set<std::string> hosts;
  for (const auto& r : node_rows) {
    const std::string name = store::get_str(r.name);
    if (!by_name.count(name)) order.push_back(name);
    by_name[name].push_back(&r);
    hosts.insert(store::get_str(r.host));
  }
  std::vector<store::CeilingRow> out;
  for (const auto& name : order) {
    const auto& rows = by_name[name];
    if (rows.size() < hosts.size()) continue;  // some node has no such ceiling
    const store::CeilingRow* slowest = rows.front();
    for (const auto* r : rows)
      if (r->value < slowest->value) slowest = r;
    store::CeilingRow c = *slowest;
    c.value *= nodes;
    c.min *= nodes;
    c.max *= nodes;
    if (c.level_bytes > 0) c.level_bytes *= nodes;
    out.push_back(c);
  }
  return out;
}

}  // namespace rtrace::ert
