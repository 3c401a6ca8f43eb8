// Chart ticks (analysis/src/chart_axes.cpp, issue 25) and legend lines (text_format.cpp, issue 30).
#include "chart_axes.hpp"
#include "text_format.hpp"

#include <gtest/gtest.h>

using namespace rtrace::analysis::chart;

TEST(ChartAxes, LinearTicksAreNiceNotRangeFractions) {
  // The function chart's old ticks were max x 1.05 x k/4: 0.347, 0.693, ...
  const auto a = nice_linear_axis(0, 1.32, 5);
  EXPECT_EQ(a.ticks, (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4}));
  EXPECT_DOUBLE_EQ(a.hi, 1.4);
  std::vector<std::string> labels;
  for (double t : a.ticks) labels.push_back(tick_label(t));
  EXPECT_EQ(labels, (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1", "1.2", "1.4"}));
  EXPECT_EQ(tick_label(10), "10");
  EXPECT_EQ(tick_label(0.35), "0.35");
  EXPECT_EQ(tick_label(2500), "2500");
  EXPECT_EQ(tick_label(2e-5), "2e-05");
}

TEST(ChartAxes, LogTicksFillShortRanges) {
  // A 2-point sweep's speedup axis showed only 1 and 2.
  EXPECT_EQ(log2_ticks(1, 2), (std::vector<double>{1, 1.2, 1.5, 2}));
  EXPECT_EQ(log2_ticks(1, 64), (std::vector<double>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(log10_ticks(0.01, 10), (std::vector<double>{0.01, 0.1, 1, 10}));
  const auto mid = log10_ticks(0.5, 20);
  EXPECT_LE(mid.size(), 8u);
  EXPECT_GE(mid.size(), 3u);
}

// Legends wrap instead of shortening (issue 30: "cache-capacity at r…ers"):
// every word whole, and names that differ anywhere stay different.
TEST(ChartAxes, LegendLinesWrapWordsAndNeverCutThem) {
  using rtrace::analysis::format::wrap_lines;
  const std::string step = "1 -> 2: cache-capacity at registers (L1d AI falls)";
  const auto lines = wrap_lines(step, 24);
  ASSERT_GE(lines.size(), 2u);
  std::string joined;
  for (const auto& l : lines) {
    EXPECT_LE(l.size(), 24u) << l;
    joined += (joined.empty() ? "" : " ") + l;
  }
  EXPECT_EQ(joined, step);  // broken at spaces only: nothing lost, no word cut
  // An identifier longer than a line breaks after its separators, never inside a word.
  const std::string x = "hydro::solver::compute_flux_in_the_x_direction_with_limiters";
  const auto id = wrap_lines(x, 32);
  std::string whole;
  for (const auto& l : id) {
    EXPECT_LE(l.size(), 32u) << l;
    EXPECT_TRUE(l.back() == ':' || l.back() == '_' || &l == &id.back()) << l;
    whole += l;
  }
  EXPECT_EQ(whole, x);
  EXPECT_EQ(wrap_lines("short", 32), std::vector<std::string>{"short"});
  // A word longer than the line with no separator stays whole (the chart widens).
  EXPECT_EQ(wrap_lines("abcdefghijklmnopqrstuvwxyz", 10), std::vector<std::string>{"abcdefghijklmnopqrstuvwxyz"});
}
