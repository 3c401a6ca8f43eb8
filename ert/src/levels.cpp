#include "rtrace/ert/levels.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rtrace::ert {

double median_of(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

double median3(double a, double b, double c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); }

std::string human_bytes(double b) {
  std::ostringstream os;
  os.precision(3);
  if (std::isinf(b)) return "inf";
  if (b >= 1024.0 * 1024 * 1024) os << b / (1024.0 * 1024 * 1024) << " GiB";
  else if (b >= 1024.0 * 1024) os << b / (1024.0 * 1024) << " MiB";
  else if (b >= 1024.0) os << b / 1024.0 << " KiB";
  else os << b << " B";
  return os.str();
}

}  // namespace

std::vector<Plateau> detect_plateaus(const std::vector<CurvePoint>& curve, const PlateauOptions& opt) {
  const std::size_t n = curve.size();
  if (n == 0) return {};
  const double tol = std::log1p(std::max(opt.tolerance, 0.0));
  const std::size_t min_points = std::max<std::size_t>(opt.min_points, 1);

  // Work in log space (a relative tolerance becomes an absolute one) on a
  // 3-point running median, which removes isolated spikes and dips.
  std::vector<double> lv(n);
  for (std::size_t i = 0; i < n; ++i) lv[i] = std::log(std::max(curve[i].value, 1e-300));
  std::vector<double> s(lv);
  if (n >= 3) {
    s[0] = median3(lv[0], lv[1], lv[2]);
    s[n - 1] = median3(lv[n - 3], lv[n - 2], lv[n - 1]);
    for (std::size_t i = 1; i + 1 < n; ++i) s[i] = median3(lv[i - 1], lv[i], lv[i + 1]);
  }

  // Greedy segmentation: extend a segment while the next point stays within
  // the tolerance of the segment's running median.
  std::vector<Plateau> segments;
  std::size_t start = 0;
  while (start < n) {
    std::vector<double> members{s[start]};
    std::size_t j = start + 1;
    while (j < n && std::abs(s[j] - median_of(members)) <= tol) members.push_back(s[j++]);
    segments.push_back(Plateau{start, j - 1, 0.0});
    start = j;
  }

  auto raw_median = [&](std::size_t first, std::size_t last) {
    std::vector<double> v;
    for (std::size_t i = first; i <= last; ++i) v.push_back(curve[i].value);
    return median_of(v);
  };

  // Keep long segments; merge neighbours that a short noise burst split
  // (gap of at most 2 points, values within the tolerance).
  std::vector<Plateau> plateaus;
  for (const Plateau& seg : segments) {
    if (seg.size() < min_points) continue;
    Plateau p{seg.first, seg.last, raw_median(seg.first, seg.last)};
    if (!plateaus.empty()) {
      Plateau& prev = plateaus.back();
      const std::size_t gap = p.first - prev.last - 1;
      if (gap <= 2 && std::abs(std::log(p.value / prev.value)) <= tol) {
        prev.last = p.last;
        prev.value = raw_median(prev.first, prev.last);
        continue;
      }
    }
    plateaus.push_back(p);
  }
  return plateaus;
}

std::vector<MemoryLevel> memory_levels(const std::vector<store::CacheRow>& caches, int pus_used, bool virtual_machine) {
  std::vector<store::CacheRow> data_caches;
  for (const auto& c : caches) {
    const std::string name = store::get_str(c.name);
    if (name.empty() || name == "L1i" || c.size_bytes <= 0) continue;
    data_caches.push_back(c);
  }
  std::stable_sort(data_caches.begin(), data_caches.end(),
                   [](const store::CacheRow& a, const store::CacheRow& b) { return a.depth < b.depth; });
  const int pus = std::max(pus_used, 1);
  std::vector<MemoryLevel> levels;
  for (const auto& c : data_caches) {
    const int shared_by = std::max(c.shared_by, 1);
    std::int64_t used = (pus + shared_by - 1) / shared_by;
    if (c.instances > 0) used = std::min<std::int64_t>(used, c.instances);
    levels.push_back(MemoryLevel{store::get_str(c.name), static_cast<double>(used) * static_cast<double>(c.size_bytes),
                                 c.size_bytes});
  }
  // DRAM's range starts at 4x the last cache. A VM whose guest sees one
  // instance of its last cache for all the PUs used cannot tell where its
  // vCPUs sit: the host may give each its own (and a larger one than the
  // guest is told): count one instance per PU used. A guest that sees
  // several instances has the host's layout.
  double dram_start = 4.0;
  if (virtual_machine && !levels.empty() && levels.back().level_bytes > 0 &&
      levels.back().capacity_bytes <= double(levels.back().level_bytes))
    dram_start *= double(pus);
  levels.push_back(MemoryLevel{"DRAM", std::numeric_limits<double>::infinity(), -1, std::max(dram_start, 4.0)});
  return levels;
}

double dram_search_earliest_bytes(const std::vector<MemoryLevel>& levels, bool virtual_machine) {
  if (!virtual_machine || levels.size() < 2) return 0;
  const double llc = levels[levels.size() - 2].capacity_bytes;
  return llc > 0 && std::isfinite(llc) ? std::sqrt(2.0) * llc : 0;
}

void start_dram_range_at(std::vector<MemoryLevel>& levels, double found_bytes) {
  if (levels.size() < 2 || !(found_bytes > 0)) return;
  const double below = levels[levels.size() - 2].capacity_bytes;
  if (!(below > 0)) return;
  // Just below the point, so the point itself is in the range (level_range's low is exclusive).
  MemoryLevel& dram = levels.back();
  dram.range_starts_at = std::min(dram.range_starts_at, 0.999 * found_bytes / below);
}

LevelRange level_range(const std::vector<MemoryLevel>& levels, std::size_t i) {
  LevelRange r;
  r.high = levels.at(i).capacity_bytes;
  if (i > 0) {
    const double below = levels[i - 1].capacity_bytes;
    const double start = levels[i].range_starts_at * below;
    r.low = start < r.high ? start : below;
  }
  return r;
}

LevelNaming name_levels(const std::vector<CurvePoint>& curve, const std::vector<Plateau>& plateaus,
                        const std::vector<MemoryLevel>& levels, std::size_t min_points_in_level) {
  LevelNaming out;
  for (std::size_t li = 0; li < levels.size(); ++li) {
    const LevelRange r = level_range(levels, li);
    auto in_range = [&](std::size_t k) {
      return curve[k].working_set_bytes > r.low && curve[k].working_set_bytes <= r.high;
    };
    std::size_t swept = 0;
    for (std::size_t k = 0; k < curve.size(); ++k) swept += in_range(k) ? 1 : 0;

    std::size_t best = plateaus.size();
    std::size_t best_count = 0;
    for (std::size_t p = 0; p < plateaus.size(); ++p) {
      std::size_t count = 0;
      for (std::size_t k = plateaus[p].first; k <= plateaus[p].last; ++k) count += in_range(k) ? 1 : 0;
      if (count > best_count || (count == best_count && count > 0 && plateaus[p].value > plateaus[best].value)) {
        best = p;
        best_count = count;
      }
    }
    const std::string range = human_bytes(r.low) + " .. " + human_bytes(r.high);
    if (swept == 0) {
      out.notes.push_back(levels[li].name + ": not observed: the sweep has no working set in its range (" + range + ")");
      continue;
    }
    const bool dram = std::isinf(levels[li].capacity_bytes);
    if ((best == plateaus.size() || best_count < std::max<std::size_t>(min_points_in_level, 1)) && dram) {
      // DRAM always exists and bounds every streaming kernel: without a clean
      // plateau (noise, preemption) its ceiling is the best of the working sets
      // beyond the last cache, which are DRAM-resident by construction.
      NamedLevel nl{levels[li].name, levels[li].level_bytes, plateaus.size(), {}};
      for (std::size_t k = 0; k < curve.size(); ++k)
        if (in_range(k)) nl.points.push_back(k);
      out.notes.push_back(levels[li].name + ": no clean plateau in " + range + "; ceiling from its " +
                          std::to_string(nl.points.size()) + " working sets (noisy curve?)");
      out.levels.push_back(std::move(nl));
      continue;
    }
    if (best == plateaus.size() || best_count < std::max<std::size_t>(min_points_in_level, 1)) {
      out.notes.push_back(levels[li].name + ": not observed: no bandwidth plateau in its working-set range (" + range +
                          ", " + std::to_string(swept) + " points)");
      continue;
    }
    NamedLevel nl{levels[li].name, levels[li].level_bytes, best, {}};
    for (std::size_t k = plateaus[best].first; k <= plateaus[best].last; ++k)
      if (in_range(k)) nl.points.push_back(k);
    out.levels.push_back(std::move(nl));
  }
  return out;
}

}  // namespace rtrace::ert
