// Ranges to launches by context, order and kernel name (metric_join.hpp).
#include "metric_join.hpp"

#include <gtest/gtest.h>

using namespace rtrace::tracer;

namespace {

LaunchKey launch(const std::string& raw, std::uint32_t ctx = 1, bool graph = false) {
  return LaunchKey{raw, demangle_kernel_name(raw), ctx, graph};
}

MetricRange range(const std::string& name, std::uint32_t ctx = 1) {
  MetricRange r;
  r.context_id = ctx;
  r.name = name;
  return r;
}

}  // namespace

TEST(TracerMetricJoin, RangeNamesMatchMangledDemangledOrBareFunctionNames) {
  const std::string raw = "_Z10fake_triadPdPKdS1_dl";
  const std::string dem = demangle_kernel_name(raw);
  EXPECT_EQ(dem, "fake_triad(double*, double const*, double const*, double, long)");
  EXPECT_TRUE(same_kernel(raw, raw, dem));
  EXPECT_TRUE(same_kernel(dem, raw, dem));
  EXPECT_TRUE(same_kernel("fake_triad", raw, dem));
  EXPECT_FALSE(same_kernel("fake_triad2", raw, dem));
  EXPECT_FALSE(same_kernel("_Z13fake_stencil7PdPKdi", raw, dem));
  // Templates: the return type and parameters differ in print, the function does not.
  const std::string t = "_Z6kernelIfEvPT_i";  // void kernel<float>(float*, int)
  EXPECT_TRUE(same_kernel("kernel<float>", t, demangle_kernel_name(t)));
  EXPECT_FALSE(same_kernel("kernel<double>", t, demangle_kernel_name(t)));
}

TEST(TracerMetricJoin, OneRangePerLaunchPairsInOrder) {
  const std::vector<LaunchKey> l = {launch("a"), launch("b"), launch("a")};
  const auto j = join_ranges(l, {range("a"), range("b"), range("a")});
  EXPECT_EQ(j.range_of_launch, (std::vector<std::ptrdiff_t>{0, 1, 2}));
  EXPECT_EQ(j.launches_without_range + j.launches_after_last_range + j.ranges_without_launch, 0);
}

TEST(TracerMetricJoin, ALaunchWithoutARangeIsSkippedAndCountedNotShifted) {
  // A graph node in the middle: by order alone, b's range would go to the
  // node and c's to b.
  const std::vector<LaunchKey> l = {launch("a"), launch("node", 1, true), launch("b"), launch("c")};
  const auto j = join_ranges(l, {range("a"), range("b"), range("c")});
  EXPECT_EQ(j.range_of_launch, (std::vector<std::ptrdiff_t>{0, -1, 1, 2}));
  EXPECT_EQ(j.launches_without_range, 1);
  EXPECT_EQ(j.graph_launches_without_range, 1);
}

TEST(TracerMetricJoin, ARangeOfNoLaunchIsDroppedAndTheRestStillPair) {
  const std::vector<LaunchKey> l = {launch("a"), launch("c")};
  const auto j = join_ranges(l, {range("a"), range("b"), range("c")});
  EXPECT_EQ(j.range_of_launch, (std::vector<std::ptrdiff_t>{0, 2}));
  EXPECT_EQ(j.ranges_without_launch, 1);
  ASSERT_EQ(j.examples.size(), 1u);
  EXPECT_NE(j.examples[0].find("range `b`"), std::string::npos);
}

TEST(TracerMetricJoin, ContextsAreJoinedApartWhateverTheirInterleaving) {
  const std::vector<LaunchKey> l = {launch("a", 1), launch("x", 2), launch("b", 1), launch("x", 2), launch("a", 1)};
  const auto j = join_ranges(l, {range("x", 2), range("a", 1), range("b", 1), range("x", 2), range("a", 1)});
  EXPECT_EQ(j.range_of_launch, (std::vector<std::ptrdiff_t>{1, 0, 2, 3, 4}));
}

TEST(TracerMetricJoin, LaunchesAfterTheLastRangeAreCountedSeparately) {
  // The range buffer was full after two launches.
  const std::vector<LaunchKey> l = {launch("a"), launch("a"), launch("a"), launch("a")};
  const auto j = join_ranges(l, {range("a"), range("a")});
  EXPECT_EQ(j.range_of_launch, (std::vector<std::ptrdiff_t>{0, 1, -1, -1}));
  EXPECT_EQ(j.launches_after_last_range, 2);
  EXPECT_EQ(j.launches_without_range, 0);
}

TEST(TracerMetricJoin, AContextWithoutRangesCountsNothing) {
  // Its profiler was refused: no metrics, but nothing mismatched either.
  const std::vector<LaunchKey> l = {launch("a", 1), launch("b", 2)};
  const auto j = join_ranges(l, {range("a", 1)});
  EXPECT_EQ(j.range_of_launch, (std::vector<std::ptrdiff_t>{0, -1}));
  EXPECT_EQ(j.launches_without_range + j.launches_after_last_range + j.ranges_without_launch, 0);
}
