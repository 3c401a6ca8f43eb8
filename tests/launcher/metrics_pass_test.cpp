// The pure parts of an sms point's metrics run (metrics_pass.hpp) and the
// MPS daemon's device (mps.hpp).
#include "rtrace/launcher/metrics_pass.hpp"
#include "rtrace/launcher/mps.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace rtrace;
using namespace rtrace::launcher;

TEST(metrics_pass, TracingThatCouldNotRunFailsThePointWithItsReason) {
  EXPECT_FALSE(cuda_tracing_failure({"", ""}, true));
  EXPECT_FALSE(cuda_tracing_failure({"traced", "x"}, false));
  EXPECT_FALSE(cuda_tracing_failure({"metrics", "x"}, true));
  EXPECT_EQ(*cuda_tracing_failure({"no-cupti", "libcupti.so.13 not found"}, false),
            "GPU tracing impossible: CUPTI missing: libcupti.so.13 not found");
  // Counters restricted to administrators fail only an explicit --tracer
  // cuda-metrics; under auto the times stand (issue 31).
  EXPECT_FALSE(cuda_tracing_failure({"metrics-denied", "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}, false));
  const auto denied = cuda_tracing_failure({"metrics-denied", "cuptiProfilerInitialize: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}, true);
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
  ASSERT_EQ(trace.kernels.size(), 2u);
  EXPECT_EQ(trace.kernels[1].name_id, 1);  // k2 -> the trace's id
  EXPECT_EQ(trace.kernels[1].start_ns, 0);
  EXPECT_EQ(trace.kernels[1].end_ns, 0);
  EXPECT_DOUBLE_EQ(trace.kernels[1].flops_fp64, 42);
  // k3 never ran in the timed run: its counts have no launch to join (issue 31).
  EXPECT_EQ(trace.names.size(), 2u);
  EXPECT_EQ(trace.info.metrics_unmatched_launches, 1);
  ASSERT_GE(trace.log.size(), 2u);
  EXPECT_NE(trace.log[0].find("1 kernel launch(es) with counts from the metrics run (replayed outside the partition"),
            std::string::npos)
      << trace.log[0];
  EXPECT_NE(trace.log[1].find("1 with no such launch in the timed run"), std::string::npos) << trace.log[1];
}

// Issue 31, item 7: counts were joined by kernel name and launch order only;
// with fewer SMs cuBLAS/cuDNN may launch the same kernel with another grid
// (split-K, other tiles). A count joins a launch of equal grid and block sizes.
TEST(metrics_pass, CountsJoinOnlyALaunchOfTheSameGridAndBlockSizes) {
  store::RankRecords trace, metrics;
  trace.names = {"gemm"};
  metrics.names = {"gemm"};
  for (int i = 0; i < 3; ++i) {
    store::KernelRow t{};
    t.name_id = 0;
    t.launch_index = i;
    t.grid_x = 128;
    t.grid_y = t.grid_z = 1;
    t.block_x = 256;
    t.block_y = t.block_z = 1;
    t.start_ns = 100 * (i + 1);
    t.end_ns = t.start_ns + 50;
    trace.kernels.push_back(t);
    store::KernelRow m = t;
    m.has_metrics = 1;
    m.flops_fp64 = 10;
    if (i == 1) m.grid_x = 64;  // split differently in the metrics run
    if (i == 2) m.block_y = 2;
    metrics.kernels.push_back(m);
  }
  metrics.info.metrics_unmatched_launches = 0;
  merge_metric_rows(trace, metrics);
  ASSERT_EQ(trace.kernels.size(), 4u);  // 3 timed + 1 count
  EXPECT_EQ(trace.kernels[3].launch_index, 0);
  EXPECT_EQ(trace.info.metrics_unmatched_launches, 2);
  bool said = false;
  for (const auto& l : trace.log)
    said |= l.find("2 launch(es) of the metrics run left out: 2 with other grid or block sizes") != std::string::npos &&
            l.find("`gemm` launch 1: grid 128x1x1 block 256x1x1 timed, grid 64x1x1 block 256x1x1 counted") !=
                std::string::npos;
  EXPECT_TRUE(said);
}

// MPS processes from a process table: control daemons and servers by argv[0]
// (comm is cut at 15 characters), nothing else.
TEST(metrics_pass, MpsProcessesAreFoundByNameInTheProcessTable) {
  namespace fs = std::filesystem;
  const fs::path proc = fs::temp_directory_path() / ("rtrace-proc-" + std::to_string(getpid()));
  fs::remove_all(proc);
  auto add = [&](const char* pid, const char* comm, const std::string& argv0) {
    fs::create_directories(proc / pid);
    std::ofstream(proc / pid / "comm") << comm << "\n";
    std::ofstream(proc / pid / "cmdline", std::ios::binary) << argv0 << '\0' << "-d" << '\0';
  };
  add("17", "nvidia-cuda-mps", "nvidia-cuda-mps-control");
  add("230", "nvidia-cuda-mps", "/usr/bin/nvidia-cuda-mps-server");
  add("5", "bash", "/bin/bash");
  fs::create_directories(proc / "self");
  const auto found = find_mps_processes(proc.string());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].pid, 17);
  EXPECT_EQ(found[0].name, "nvidia-cuda-mps-control");
  EXPECT_FALSE(found[0].server());
  EXPECT_EQ(found[1].pid, 230);
  EXPECT_TRUE(found[1].server());
  EXPECT_TRUE(find_mps_processes((proc / "none").string()).empty());
  fs::remove_all(proc);
  EXPECT_LT(max_mps_pipe_dir_length(), 108u);
}
