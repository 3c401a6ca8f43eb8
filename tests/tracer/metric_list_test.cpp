// Validates the metrics-mode metric list with the CUPTI Profiler Host API for
// GH100 and GA100. The Host API needs only a chip name, no GPU.
#include "metric_list.hpp"

#include <cupti_profiler_host.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace rtrace::tracer;

namespace {
HostApi linked_api() {
  HostApi api;
  api.initialize = cuptiProfilerHostInitialize;
  api.deinitialize = cuptiProfilerHostDeinitialize;
  api.metric_properties = cuptiProfilerHostGetMetricProperties;
  api.add_metrics = cuptiProfilerHostConfigAddMetrics;
  api.config_image_size = cuptiProfilerHostGetConfigImageSize;
  api.config_image = cuptiProfilerHostGetConfigImage;
  api.num_passes = cuptiProfilerHostGetNumOfPasses;
  api.result_string = cuptiGetResultString;
  return api;
}

bool kept(const MetricPlan& p, const std::string& name) {
  return std::any_of(p.metrics.begin(), p.metrics.end(), [&](const MetricSpec& m) { return m.name == name; });
}

class TracerMetricListOnChip : public ::testing::TestWithParam<const char*> {};
}  // namespace

TEST_P(TracerMetricListOnChip, CoreRooflineMetricsAreValidAndPassesCounted) {
  HostApi api = linked_api();
  MetricPlan plan = plan_metrics(api, GetParam(), nullptr, roofline_metrics());
  ASSERT_TRUE(plan.ok) << plan.error;
  // The metrics the roofline cannot do without exist on both chips.
  for (const char* m : {"gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
                        "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
                        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
                        "sm__sass_thread_inst_executed_op_hfma_pred_on.sum", "l1tex__t_bytes.sum", "lts__t_bytes.sum",
                        "dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum",
                        "smsp__thread_inst_executed_pred_on.sum"})
    EXPECT_TRUE(kept(plan, m)) << m << " missing on " << GetParam();
  EXPECT_GE(plan.passes, 1u);
  EXPECT_FALSE(plan.config_image.empty());
  // Every dropped metric is said, not silently lost.
  EXPECT_EQ(plan.metrics.size() + plan.warnings.size(), roofline_metrics().size());
  std::printf("%s: %zu of %zu metrics, %zu pass(es)\n", GetParam(), plan.metrics.size(), roofline_metrics().size(),
              plan.passes);
  for (const auto& w : plan.warnings) std::printf("  %s\n", w.c_str());
  release_plan(api, plan);
}

INSTANTIATE_TEST_SUITE_P(Chips, TracerMetricListOnChip, ::testing::Values("GH100", "GA100"));

TEST(TracerMetricList, AnUnknownMetricIsDroppedWithAWarning) {
  HostApi api = linked_api();
  std::vector<MetricSpec> wanted = {{"gpu__time_duration.sum", MetricTarget::DurationNs, 1},
                                    {"no_such__metric.sum", MetricTarget::FlopsFp64, 1}};
  MetricPlan plan = plan_metrics(api, "GH100", nullptr, wanted);
  ASSERT_TRUE(plan.ok) << plan.error;
  ASSERT_EQ(plan.metrics.size(), 1u);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("no_such__metric.sum not available on GH100"), std::string::npos);
  release_plan(api, plan);
}

TEST(TracerMetricList, AnUnknownChipIsAnErrorNotACrash) {
  HostApi api = linked_api();
  MetricPlan plan = plan_metrics(api, "NOSUCHCHIP", nullptr, roofline_metrics());
  EXPECT_FALSE(plan.ok);
  EXPECT_NE(plan.error.find("NOSUCHCHIP"), std::string::npos);
}

TEST(TracerMetricList, FmaCountsTwiceAndNaNMeansNotMeasured) {
  rtrace::store::KernelRow row{};
  clear_metrics(row);
  EXPECT_TRUE(std::isnan(row.flops_fp64));
  for (const auto& m : roofline_metrics()) {
    if (m.name == "sm__sass_thread_inst_executed_op_dfma_pred_on.sum") apply_metric(row, m, 10);
    if (m.name == "sm__sass_thread_inst_executed_op_dadd_pred_on.sum") apply_metric(row, m, 3);
    if (m.name == "sm__sass_thread_inst_executed_op_dmul_pred_on.sum") apply_metric(row, m, 4);
  }
  EXPECT_DOUBLE_EQ(row.flops_fp64, 27.0);  // 3 + 4 + 2 x 10
  EXPECT_TRUE(std::isnan(row.flops_fp32));
}
