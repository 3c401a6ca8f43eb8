#include "chart_axes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace rtrace::analysis::chart {
namespace {

// Ticks m x 10^k inside [lo, hi] for the mantissas in `set`.
std::vector<double> decade_ticks(double lo, double hi, const std::vector<double>& set) {
  std::vector<double> out;
  const int k0 = static_cast<int>(std::floor(std::log10(lo))) - 1, k1 = static_cast<int>(std::ceil(std::log10(hi)));
  for (int k = k0; k <= k1; ++k)
    for (double m : set) {
      const double v = m * std::pow(10.0, k);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
    }
  return out;
}

// Drops to every n-th tick (keeping the first) until at most max remain.
std::vector<double> thin(const std::vector<double>& ticks, int max_ticks) {
  if (static_cast<int>(ticks.size()) <= max_ticks) return ticks;
  const std::size_t every = (ticks.size() + static_cast<std::size_t>(max_ticks) - 1) / static_cast<std::size_t>(max_ticks);
  std::vector<double> out;
  for (std::size_t i = 0; i < ticks.size(); i += every) out.push_back(ticks[i]);
  return out;
}

}  // namespace

LinearAxis nice_linear_axis(double lo, double hi, int target) {
  LinearAxis a;
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  a.lo = std::floor(lo / step + 1e-9) * step;
  a.hi = std::ceil(hi / step - 1e-9) * step;
  // i x step, rounded to 12 significant digits: 3 x 0.2 is 0.6, not 0.6000000000000001.
  const long first = std::lround(a.lo / step), last = std::lround(a.hi / step);
  for (long i = first; i <= last; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.12g", static_cast<double>(i) * step);
    a.ticks.push_back(std::strtod(buf, nullptr));
  }
  return a;
}

std::vector<double> log10_ticks(double lo, double hi, int max_ticks) {
  if (!(lo > 0) || !(hi >= lo)) return {};
  for (const std::vector<double>& set : {std::vector<double>{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8},
                                         std::vector<double>{1, 2, 3, 5}, std::vector<double>{1, 2, 5},
                                         std::vector<double>{1}}) {
    auto t = decade_ticks(lo, hi, set);
    if (static_cast<int>(t.size()) <= max_ticks && t.size() >= 2) return t;
    if (set.size() == 1) return thin(t, max_ticks);
  }
  return {};
}

std::vector<double> log2_ticks(double lo, double hi, int max_ticks) {
  if (!(lo > 0) || !(hi >= lo)) return {};
  auto dense = decade_ticks(lo, hi, {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8});
  if (static_cast<int>(dense.size()) <= max_ticks) return dense;
  std::vector<double> pow2;
  for (int k = static_cast<int>(std::floor(std::log2(lo))); k <= static_cast<int>(std::ceil(std::log2(hi))); ++k) {
    const double v = std::pow(2.0, k);
    if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) pow2.push_back(v);
  }
  return thin(pow2, max_ticks);
}

std::string tick_label(double v) {
  char buf[48];
  const double mag = std::fabs(v);
  if (v != 0 && (mag >= 1e6 || mag < 1e-4)) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
  }
  for (int decimals = 0; decimals <= 6; ++decimals) {  // as few decimals as the value needs
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    if (std::fabs(std::strtod(buf, nullptr) - v) <= 1e-9 * std::max(1.0, mag)) return buf;
  }
  return buf;
}

}  // namespace rtrace::analysis::chart
