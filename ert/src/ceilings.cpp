#include "rtrace/ert/ceilings.hpp"

#include <algorithm>
#include <cmath>
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

CeilingAnalysis derive_ceilings(const std::vector<Sample>& samples, const std::vector<MemoryLevel>& levels,
                                const PlateauOptions& options) {
  CeilingAnalysis out;

  // ---- bandwidth: one point per working set, repeats kept apart
  std::map<std::int64_t, std::map<int, double>> by_ws;  // ws -> repeat -> best GB/s
  for (const Sample& s : samples) {
    if (s.series != Series::Bandwidth) continue;
    double& v = by_ws[s.working_set_bytes][s.repeat];
    v = std::max(v, s.gbytes_per_s());
  }
  std::vector<std::map<int, double>> point_repeats;
  for (const auto& [ws, reps] : by_ws) {
    std::vector<double> values;
    for (const auto& [r, v] : reps) values.push_back(v);
    out.curve.push_back(CurvePoint{double(ws), spread(values).median});
    point_repeats.push_back(reps);
  }
  if (!out.curve.empty()) {
    out.plateaus = detect_plateaus(out.curve, options);
    LevelNaming naming = name_levels(out.curve, out.plateaus, levels, std::min<std::size_t>(2, options.min_points));
    out.notes = naming.notes;
    for (const NamedLevel& level : naming.levels) {
      std::map<int, double> best;  // repeat -> best over the level's points
      for (std::size_t k : level.points)
        for (const auto& [r, v] : point_repeats[k]) best[r] = std::max(best[r], v);
      std::vector<double> per_repeat;
      for (const auto& [r, v] : best) per_repeat.push_back(v);
      out.ceilings.push_back(make_row(level.name, "bandwidth", "", "", spread(per_repeat), "GB/s", level.level_bytes));
    }
  }

  // ---- compute: per precision/variant, best of the high-intensity end
  std::map<std::tuple<int, int>, std::vector<const Sample*>> families;
  std::vector<std::tuple<int, int>> order;
  for (const Sample& s : samples) {
    if (s.series != Series::Flops) continue;
    auto key = std::make_tuple(int(s.kernel.precision), int(s.kernel.variant));
    if (!families.count(key)) order.push_back(key);
    families[key].push_back(&s);
  }
  for (const auto& key : order) {
    const auto& family = families[key];
    std::vector<int> fs;
    for (const Sample* s : family) fs.push_back(s->kernel.flops_per_element);
    const std::vector<int> high = high_intensity_flops(fs);
    std::map<int, double> best;  // repeat -> best GFLOP/s
    for (const Sample* s : family)
      if (std::find(high.begin(), high.end(), s->kernel.flops_per_element) != high.end())
        best[s->repeat] = std::max(best[s->repeat], s->gflops_per_s());
    std::vector<double> per_repeat;
    for (const auto& [r, v] : best) per_repeat.push_back(v);
    const auto p = Precision(std::get<0>(key));
    const auto v = Variant(std::get<1>(key));
    out.ceilings.push_back(
        make_row(compute_ceiling_name(p, v), "compute", to_string(p), to_string(v), spread(per_repeat), "GFLOP/s", -1));
  }
  return out;
}

}  // namespace rtrace::ert
