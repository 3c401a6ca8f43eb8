// Axis ticks shared by the hand-written SVG charts (svg.cpp, profile_svg.cpp):
// ticks at values a reader can use (1, 2, 5 x 10^k; 1.2, 1.5 on short log
// ranges) instead of range/4 fractions (issue 25: "0.347, 0.693"). Legends
// show names in full, wrapped over lines (format::wrap_lines): issue 25's
// names cut at the end looked identical, issue 30's cut in the middle lost words.
#pragma once

#include <string>
#include <vector>

namespace rtrace::analysis::chart {

// A linear axis from `lo` to at least `hi` with about `target` nice steps:
// the axis end is rounded up to a tick.
struct LinearAxis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
};
LinearAxis nice_linear_axis(double lo, double hi, int target = 5);

// Ticks inside [lo, hi] (lo > 0) on a log axis, at most `max_ticks`: the
// densest of 1-1.2-1.5-2-2.5-3-4-5-6-8, 1-2-3-5, 1-2-5 and 1 per decade
// that fits, then every n-th power of ten.
std::vector<double> log10_ticks(double lo, double hi, int max_ticks = 8);
// The same for a base-2 quantity (speedups): the dense decade set when it
// fits (a speedup between 1 and 2 gets 1, 1.2, 1.5, 2), else powers of two.
std::vector<double> log2_ticks(double lo, double hi, int max_ticks = 8);

// A tick label: no more digits than the tick needs ("0.35", "1.2", "2000").
std::string tick_label(double v);

}  // namespace rtrace::analysis::chart
