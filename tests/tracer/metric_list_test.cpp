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
  // Every wanted metric is kept, dropped with a warning, or covered by its
  // stand-ins / the metric it stands in for: nothing is silently lost.
  auto warned = [&](const std::string& name) {
    return std::any_of(plan.warnings.begin(), plan.warnings.end(),
                       [&](const std::string& w) { return w.find(name + " not available") != std::string::npos; });
  };
  for (const auto& m : roofline_metrics()) {
    bool covered = kept(plan, m.name) || warned(m.name) || (!m.fallback_for.empty() && kept(plan, m.fallback_for));
    for (const auto& w : roofline_metrics())
      if (w.fallback_for == m.name && kept(plan, w.name)) covered = true;
    EXPECT_TRUE(covered) << m.name << " silently lost on " << GetParam();
  }
  // No work counted twice: a stand-in and the metric it replaces are never both kept.
  for (const auto& m : plan.metrics) {
    if (!m.fallback_for.empty()) {
      EXPECT_FALSE(kept(plan, m.fallback_for)) << m.name << " and " << m.fallback_for;
    }
  }
  std::printf("%s: %zu of %zu metrics, %zu pass(es)\n", GetParam(), plan.metrics.size(), roofline_metrics().size(),
              plan.passes);
  for (const auto& w : plan.warnings) std::printf("  %s\n", w.c_str());
  for (const auto& n : plan.notes) std::printf("  note: %s\n", n.c_str());
  release_plan(api, plan);
}

INSTANTIATE_TEST_SUITE_P(Chips, TracerMetricListOnChip, ::testing::Values("GH100", "GA100"));

// FP16 tensor work: GH100 has sm__ops_path_tensor_src_fp16; GA100 rejects it and
// splits it by destination (fp16, fp32). Both chips must count it, once.
TEST(TracerMetricList, Fp16TensorOpsAreCountedOnGH100AndGA100) {
  HostApi api = linked_api();
  MetricPlan gh = plan_metrics(api, "GH100", nullptr, roofline_metrics());
  ASSERT_TRUE(gh.ok) << gh.error;
  EXPECT_TRUE(kept(gh, "sm__ops_path_tensor_src_fp16.sum"));
  EXPECT_FALSE(kept(gh, "sm__ops_path_tensor_src_fp16_dst_fp32.sum"));
  EXPECT_FALSE(kept(gh, "sm__ops_path_tensor_src_fp16_dst_fp16.sum"));
  EXPECT_TRUE(kept(gh, "sm__ops_path_tensor_src_fp64.sum"));
  release_plan(api, gh);
  MetricPlan ga = plan_metrics(api, "GA100", nullptr, roofline_metrics());
  ASSERT_TRUE(ga.ok) << ga.error;
  EXPECT_FALSE(kept(ga, "sm__ops_path_tensor_src_fp16.sum"));
  EXPECT_TRUE(kept(ga, "sm__ops_path_tensor_src_fp16_dst_fp32.sum"));
  EXPECT_TRUE(kept(ga, "sm__ops_path_tensor_src_fp16_dst_fp16.sum"));
  EXPECT_TRUE(kept(ga, "sm__ops_path_tensor_src_fp64.sum"));
  ASSERT_EQ(ga.notes.size(), 2u);
  EXPECT_NE(ga.notes[0].find("sm__ops_path_tensor_src_fp16.sum not available on GA100"), std::string::npos);
  for (const auto& w : ga.warnings) EXPECT_EQ(w.find("tensor_src_fp16"), std::string::npos) << w;
  release_plan(api, ga);
}

// FP16 (issue 22): the HFMA/HADD/HMUL counters are taken as counting lanes
// (a packed HFMA2 thread instruction counts 2, scalar HFMA 1), the rule of
// NVIDIA's own tools (Nsight Compute's half-precision roofline, likwid's
// FLOPS_HP: HFMA x 2, HADD and HMUL x 1), so scalar HFMA is 2 FLOPs and HFMA2
// 4. The counter's semantics is checked on a GPU by validate.sh's `fma half`
// and `fma half2` rows. Tensor ops stay in math ops (weight 1).
TEST(TracerMetricList, Fp16CountsLanesScalarHfmaTwoPackedFourAndTensorOpsStayMathOps) {
  auto fp16_of = [](double hfma, double hadd, double hmul) {
    rtrace::store::KernelRow row{};
    clear_metrics(row);
    for (const auto& m : roofline_metrics()) {
      if (m.name == "sm__sass_thread_inst_executed_op_hfma_pred_on.sum") apply_metric(row, m, hfma);
      if (m.name == "sm__sass_thread_inst_executed_op_hadd_pred_on.sum") apply_metric(row, m, hadd);
      if (m.name == "sm__sass_thread_inst_executed_op_hmul_pred_on.sum") apply_metric(row, m, hmul);
    }
    return row.flops_fp16;
  };
  // 10 scalar HFMA (10 lane ops): 20 FLOPs, not 40.
  EXPECT_DOUBLE_EQ(fp16_of(10, 0, 0), 20.0);
  // 10 packed HFMA2 (20 lane ops): 40 FLOPs, the ERT's 4 per HFMA2.
  EXPECT_DOUBLE_EQ(fp16_of(20, 0, 0), 40.0);
  EXPECT_DOUBLE_EQ(fp16_of(0, 3, 5), 8.0);
  rtrace::store::KernelRow row{};
  clear_metrics(row);
  for (const auto& m : roofline_metrics())
    if (m.name == "sm__ops_path_tensor_src_fp16.sum") apply_metric(row, m, 4096);
  EXPECT_DOUBLE_EQ(row.tensor_ops, 4096);
}

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

// Issue 31, item 6: tensor math ops were summed over FP16, BF16, TF32 and FP64
// sources into one number (FP8 was not collected), so no kernel could be
// judged against the tensor ceiling of its own type. Each source has its own
// column now; tensor_ops stays their sum.
TEST(TracerMetricList, TensorOpsAreKeptPerSourceTypeAndSummed) {
  rtrace::store::KernelRow row{};
  clear_metrics(row);
  const std::pair<const char*, double> ops[] = {{"sm__ops_path_tensor_src_fp16.sum", 100},
                                                {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", 5},
                                                {"sm__ops_path_tensor_src_tf32_dst_fp32.sum", 3},
                                                {"sm__ops_path_tensor_src_fp64.sum", 10},
                                                {"sm__ops_path_tensor_src_fp8.sum", 7}};
  for (const auto& m : roofline_metrics())
    for (const auto& [name, value] : ops)
      if (m.name == name) apply_metric(row, m, value);
  EXPECT_DOUBLE_EQ(row.tensor_ops_fp16, 100);
  EXPECT_DOUBLE_EQ(row.tensor_ops_bf16, 5);
  EXPECT_DOUBLE_EQ(row.tensor_ops_tf32, 3);
  EXPECT_DOUBLE_EQ(row.tensor_ops_fp64, 10);
  EXPECT_DOUBLE_EQ(row.tensor_ops_fp8, 7);
  EXPECT_DOUBLE_EQ(row.tensor_ops, 125);
  // GA100's FP16 stand-ins (by destination) land in the FP16 column.
  rtrace::store::KernelRow ga{};
  clear_metrics(ga);
  for (const auto& m : roofline_metrics())
    if (m.name == "sm__ops_path_tensor_src_fp16_dst_fp16.sum" || m.name == "sm__ops_path_tensor_src_fp16_dst_fp32.sum")
      apply_metric(ga, m, 8);
  EXPECT_DOUBLE_EQ(ga.tensor_ops_fp16, 16);
  EXPECT_TRUE(std::isnan(ga.tensor_ops_fp64));  // not measured, not 0
  EXPECT_DOUBLE_EQ(ga.tensor_ops, 16);
  // FP8 is collected where the chip has it (Hopper), dropped with a warning where not.
  HostApi api = linked_api();
  MetricPlan gh = plan_metrics(api, "GH100", nullptr, roofline_metrics());
  ASSERT_TRUE(gh.ok) << gh.error;
  EXPECT_TRUE(kept(gh, "sm__ops_path_tensor_src_fp8.sum"));
  release_plan(api, gh);
  MetricPlan a100 = plan_metrics(api, "GA100", nullptr, roofline_metrics());
  ASSERT_TRUE(a100.ok) << a100.error;
  EXPECT_FALSE(kept(a100, "sm__ops_path_tensor_src_fp8.sum"));
  release_plan(api, a100);
}
