// Chart ticks and legend labels (analysis/src/chart_axes.cpp), issue 25.
#include "chart_axes.hpp"

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

TEST(ChartAxes, LegendNamesStayDistinguishable) {
  const std::string x = "hydro::solver::compute_flux_in_the_x_direction_with_limiters";
  const std::string y = "hydro::solver::compute_flux_in_the_y_direction_with_limiters";
  // Cut at the end (as before), both read "hydro::solver::compute_flux_in_".
  const auto labels = distinct_labels({x, y, "short"}, 32);
  EXPECT_NE(labels[0], labels[1]);
  EXPECT_NE(labels[0].find("x_direction"), std::string::npos) << labels[0];
  EXPECT_NE(labels[1].find("y_direction"), std::string::npos) << labels[1];
  EXPECT_EQ(labels[2], "short");
  for (const auto& l : labels) EXPECT_LE(l.size(), 32u + 6u) << l;  // an ellipsis is 3 bytes
  // One long name alone: both ends kept.
  const std::string m = shorten_middle("physics::radiation::transport_sweep_group_low(double*, int)", 30);
  EXPECT_EQ(m.rfind("physics::", 0), 0u) << m;
  EXPECT_NE(m.find("\u2026"), std::string::npos) << m;
  EXPECT_EQ(m.substr(m.size() - 5), " int)") << m;
}
