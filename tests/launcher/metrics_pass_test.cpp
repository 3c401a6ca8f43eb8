// The pure parts of an sms point's metrics run (metrics_pass.hpp) and the
// MPS daemon's device (mps.hpp).
#include "rtrace/launcher/metrics_pass.hpp"
#include "rtrace/launcher/mps.hpp"

#include <gtest/gtest.h>

using namespace rtrace;
using namespace rtrace::launcher;

TEST(metrics_pass, TracingThatCouldNotRunFailsThePointWithItsReason) {
  EXPECT_FALSE(cuda_tracing_failure({"", ""}, true));
  EXPECT_FALSE(cuda_tracing_failure({"traced", "x"}, false));
  EXPECT_FALSE(cuda_tracing_failure({"metrics", "x"}, true));
  EXPECT_EQ(*cuda_tracing_failure({"no-cupti", "libcupti.so.13 not found"}, false),
            "GPU tracing impossible: CUPTI missing: libcupti.so.13 not found");
  const auto denied = cuda_tracing_failure({"metrics-denied", "cuptiProfilerInitialize: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}, false);
  ASSERT_TRUE(denied);
  EXPECT_NE(denied->find("not permitted (cuptiProfilerInitialize: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)"), std::string::npos);
  // A refusal is a failure only when metrics were asked for explicitly.
  EXPECT_FALSE(cuda_tracing_failure({"metrics-refused", "NOT_SUPPORTED"}, false));
  EXPECT_TRUE(cuda_tracing_failure({"metrics-refused", "NOT_SUPPORTED"}, true));
}

TEST(metrics_pass, OutsideThePartitionNoMpsDaemonIsReachableAndTheUsersDevicesComeBack) {
  Environment point;
  point.set("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "12");
  point.set("CUDA_MPS_PIPE_DIRECTORY", "/tmp/rtrace-mps-x/pipe");
  point.set("CUDA_MPS_LOG_DIRECTORY", "/tmp/rtrace-mps-x/log");
  point.set("CUDA_VISIBLE_DEVICES", "0");
  point.set("OMP_NUM_THREADS", "4");
  Environment user;
  user.set("CUDA_VISIBLE_DEVICES", "GPU-1234,1");
  const Environment out = outside_partition_env(point, user, "/scratch/p0-metrics/no-mps");
  EXPECT_FALSE(out.has("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
  EXPECT_EQ(out.get("CUDA_MPS_PIPE_DIRECTORY"), "/scratch/p0-metrics/no-mps");
  EXPECT_EQ(out.get("CUDA_VISIBLE_DEVICES"), "GPU-1234,1");
  EXPECT_EQ(out.get("OMP_NUM_THREADS"), "4");
  EXPECT_FALSE(outside_partition_env(point, Environment{}, "/d").has("CUDA_VISIBLE_DEVICES"));
}

TEST(metrics_pass, TheDaemonServesTheFirstVisibleDevice) {
  EXPECT_EQ(first_visible_device(""), "0");
  EXPECT_EQ(first_visible_device("3,1"), "3");
  EXPECT_EQ(first_visible_device(" GPU-8f2e,GPU-11"), "GPU-8f2e");
  EXPECT_EQ(first_visible_device("MIG-abc"), "MIG-abc");
}

TEST(metrics_pass, MetricRowsJoinTheTraceWithoutATimeline) {
  store::RankRecords trace, metrics;
  trace.names = {"k1", "k2"};
  store::KernelRow t{};
  t.name_id = 1;
  t.launch_index = 0;
  t.start_ns = 100;
  t.end_ns = 200;
  trace.kernels.push_back(t);
  metrics.names = {"k2", "k3"};
  store::KernelRow m{};
  m.name_id = 0;  // k2
  m.has_metrics = 1;
  m.start_ns = 5000;
  m.end_ns = 9000;  // replay-stretched: must not become a time
  m.flops_fp64 = 42;
  store::set_str(m.metrics_provenance, store::kMetricsOutsidePartition);
  store::KernelRow no_metrics = m;
  no_metrics.has_metrics = 0;
  store::KernelRow m3 = m;
  m3.name_id = 1;  // k3: a new name for the trace rank
  metrics.kernels = {m, no_metrics, m3};
  metrics.info.metrics_unmatched_launches = 1;
  metrics.info.metrics_unmatched_ranges = 0;
  merge_metric_rows(trace, metrics);
  ASSERT_EQ(trace.kernels.size(), 3u);
  EXPECT_EQ(trace.kernels[1].name_id, 1);  // k2 -> the trace's id
  EXPECT_EQ(trace.kernels[1].start_ns, 0);
  EXPECT_EQ(trace.kernels[1].end_ns, 0);
  EXPECT_DOUBLE_EQ(trace.kernels[1].flops_fp64, 42);
  EXPECT_EQ(trace.names.at(static_cast<std::size_t>(trace.kernels[2].name_id)), "k3");
  EXPECT_EQ(trace.info.metrics_unmatched_launches, 1);
  ASSERT_FALSE(trace.log.empty());
  EXPECT_NE(trace.log.back().find("2 kernel launch(es) with counts from the metrics run (replayed outside the partition"),
            std::string::npos)
      << trace.log.back();
}
