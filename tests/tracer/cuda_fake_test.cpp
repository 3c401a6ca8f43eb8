// The CUPTI layer of the tracer on CPU, against the fakes of the driver and
// CUPTI in tests/gpu/fake_cuda (an unannotated driver-API app; the fake
// libcuda.so.1 loads the tracer from CUDA_INJECTION64_PATH in cuInit, the
// tracer dlopens the fake libcupti.so.13 from LD_LIBRARY_PATH, exactly the
// paths of a GPU node). The fake CUPTI tears itself down at exit and fails
// every later call, as a real library may: the final flush must come first.
// Nothing here measures a GPU; it checks what the tracer does with what CUPTI
// hands it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "traced_app.hpp"

using namespace rtrace;

namespace {

const std::string kTracer = TRACER_LIB;
const std::string kApp = FAKE_CUDA_APP;
const std::string kFakeDir = FAKE_CUDA_DIR;
const char* kTriad = "fake_triad(double*, double const*, double const*, double, long)";
const char* kStencil = "fake_stencil7(double*, double const*, int)";
const char* kReduce = "fake_reduce(double const*, double*, int)";
const char* kGraphA = "fake_graph_a(double*)";
const char* kOther = "fake_other_ctx_k(double*)";
constexpr double kN = 1 << 20;

class TracerCudaFake : public test::TraceDirTest {
 protected:
  TracerCudaFake() : TraceDirTest("rtrace-cuda-fake-") {}

  // Runs the fake app under the tracer (preloaded and injected); stderr to a file.
  int run_app(const std::string& mode, const std::vector<std::string>& args,
              std::map<std::string, std::string> env = {}) {
    env.emplace("LD_PRELOAD", kTracer);
    env.emplace("CUDA_INJECTION64_PATH", kTracer);
    env.emplace("LD_LIBRARY_PATH", kFakeDir);
    env.emplace("RTRACE_TRACE_DIR", dir_.string());
    env.emplace("RTRACE_TRACER_MODE", mode);
    std::vector<std::string> argv{kApp, "--size", std::to_string(static_cast<long>(kN))};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (!env.count(kv.substr(0, kv.find('='))) && kv.rfind("FAKE_", 0) != 0 && kv.rfind("RTRACE_", 0) != 0)
        env_strings.push_back(kv);
    }
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : env_strings) e.push_back(s.data());
    e.push_back(nullptr);
    const std::string err = (dir_ / "stderr.txt").string();
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 2);
      execve(a[0], a.data(), e.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    std::ifstream in(err);
    std::stringstream ss;
    ss << in.rdbuf();
    stderr_ = ss.str();
    std::filesystem::remove(err);
    return status;
  }

  store::RankRecords only_rank() {
    auto ranks = read_ranks();
    EXPECT_EQ(ranks.size(), 1u) << stderr_;
    return ranks.empty() ? store::RankRecords{} : ranks.front().rec;
  }

  static std::string name_of(const store::RankRecords& r, const store::KernelRow& k) {
    return r.names.at(static_cast<std::size_t>(k.name_id));
  }
  static std::map<std::string, int> launches(const store::RankRecords& r) {
    std::map<std::string, int> n;
    for (const auto& k : r.kernels) ++n[name_of(r, k)];
    return n;
  }
  void expect_no_late_cupti_calls() {
    EXPECT_EQ(stderr_.find("after CUPTI's own exit-time teardown"), std::string::npos) << stderr_;
    EXPECT_EQ(stderr_.find("discards"), std::string::npos) << stderr_;
  }

  std::string stderr_;
};

}  // namespace

TEST_F(TracerCudaFake, TheFinalFlushRunsBeforeCuptiTearsItselfDown) {
  // The app exits with its context alive: every record is still inside CUPTI
  // when exit() starts. A flush after CUPTI's teardown (an exit handler
  // registered before libcupti was loaded) gets nothing.
  ASSERT_EQ(run_app("cuda-trace", {"--iters", "3"}), 0) << stderr_;
  const auto r = only_rank();
  const auto n = launches(r);
  EXPECT_EQ(n.count(kTriad) ? n.at(kTriad) : 0, 3) << stderr_;
  EXPECT_EQ(n.count(kStencil) ? n.at(kStencil) : 0, 3);
  EXPECT_EQ(n.count(kReduce) ? n.at(kReduce) : 0, 3);
  EXPECT_STREQ(r.info.gpu_status, "traced");
  for (const auto& k : r.kernels) EXPECT_GT(k.end_ns, k.start_ns);
  expect_no_late_cupti_calls();
}

TEST_F(TracerCudaFake, MetricsOfTheLastContextSurviveTheExitToo) {
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "2"}), 0) << stderr_;
  const auto r = only_rank();
  ASSERT_EQ(r.kernels.size(), 6u) << stderr_;
  for (const auto& k : r.kernels) EXPECT_EQ(k.has_metrics, 1) << name_of(r, k);
  EXPECT_STREQ(r.info.gpu_status, "metrics");
  expect_no_late_cupti_calls();
}

TEST_F(TracerCudaFake, ContextDestructionFlushesItsKernelsAndRanges) {
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "2", "--release"}), 0) << stderr_;
  const auto r = only_rank();
  EXPECT_EQ(r.kernels.size(), 6u) << stderr_;
  for (const auto& k : r.kernels) EXPECT_EQ(k.has_metrics, 1) << name_of(r, k);
  expect_no_late_cupti_calls();
}

TEST_F(TracerCudaFake, MetricsFollowTheirKernelPastGraphNodesAndASecondContext) {
  // Per iteration: triad, the other context's kernel, stencil, a graph of two
  // kernels (no ranges: graph nodes are not profiled), reduce. Matched by
  // launch order alone, the graph nodes would shift reduce's and every later
  // kernel's metrics; by name and context each kernel keeps its own.
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "3", "--graph", "--second-context"}), 0) << stderr_;
  const auto r = only_rank();
  const std::map<std::string, double> fp64_per_launch = {
      {kTriad, 2 * kN}, {kStencil, 8 * kN}, {kReduce, kN / 4}, {kOther, 2 * kN / 16}};
  std::map<std::string, int> with_metrics, without;
  for (const auto& k : r.kernels) {
    const std::string name = name_of(r, k);
    if (!k.has_metrics) {
      ++without[name];
      continue;
    }
    ++with_metrics[name];
    ASSERT_TRUE(fp64_per_launch.count(name)) << name << " got metrics";
    EXPECT_DOUBLE_EQ(k.flops_fp64, fp64_per_launch.at(name)) << name << " launch " << k.launch_index;
    EXPECT_STREQ(k.metrics_provenance, "whole device");
  }
  for (const auto& [name, flops] : fp64_per_launch) EXPECT_EQ(with_metrics[name], 3) << name;
  EXPECT_EQ(without[kGraphA], 3);
  EXPECT_EQ(r.info.metrics_unmatched_launches, 6);  // the graph nodes, counted
  EXPECT_EQ(r.info.metrics_unmatched_ranges, 0);
  bool said = false;
  for (const auto& l : r.log) said |= l.find("6 kernel launch(es) had no profiled range") != std::string::npos &&
                                      l.find("6 of them CUDA graph nodes") != std::string::npos;
  EXPECT_TRUE(said);
  expect_no_late_cupti_calls();
}

TEST_F(TracerCudaFake, ARangeWhoseLaunchWasNotTracedIsDroppedNotGivenToAnother) {
  // The stencil's activity records are dropped (counted by CUPTI): its ranges
  // have no launch, and must not land on reduce or triad.
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "2"}, {{"FAKE_CUPTI_DROP_RECORD", "_Z13fake_stencil7PdPKdi"}}), 0)
      << stderr_;
  const auto r = only_rank();
  EXPECT_EQ(launches(r).count(kStencil), 0u);
  for (const auto& k : r.kernels) {
    ASSERT_EQ(k.has_metrics, 1) << name_of(r, k);
    EXPECT_DOUBLE_EQ(k.flops_fp64, name_of(r, k) == kTriad ? 2 * kN : kN / 4) << name_of(r, k);
  }
  EXPECT_EQ(r.info.metrics_unmatched_ranges, 2);
  EXPECT_EQ(r.info.metrics_unmatched_launches, 0);
  EXPECT_EQ(r.info.dropped_records, 2);
}

TEST_F(TracerCudaFake, CounterPermissionDeniedIsTheStatusNotSilence) {
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "1"}, {{"FAKE_CUPTI_INSUFFICIENT_PRIVILEGES", "1"}}), 0) << stderr_;
  const auto r = only_rank();
  EXPECT_STREQ(r.info.gpu_status, "metrics-denied");
  EXPECT_NE(std::string(r.info.gpu_status_detail).find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), std::string::npos)
      << r.info.gpu_status_detail;
  EXPECT_EQ(r.kernels.size(), 3u);  // the trace still works
  for (const auto& k : r.kernels) EXPECT_EQ(k.has_metrics, 0);
}

TEST_F(TracerCudaFake, NoCuptiIsTheStatusWithWhereItLooked) {
  ASSERT_EQ(run_app("cuda-trace", {"--iters", "1"}, {{"RTRACE_CUPTI_LIB", "/nonexistent/libcupti.so.13"}}), 0)
      << stderr_;
  const auto r = only_rank();
  EXPECT_STREQ(r.info.gpu_status, "no-cupti");
  EXPECT_NE(std::string(r.info.gpu_status_detail).find("/nonexistent/libcupti.so.13"), std::string::npos)
      << r.info.gpu_status_detail;
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_GE(r.info.tracer_errors, 1);
}

TEST_F(TracerCudaFake, AProvenanceFromTheLauncherIsStampedOnMetricRows) {
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "1"}, {{"RTRACE_METRICS_PROVENANCE", "replayed outside the partition"}}),
            0)
      << stderr_;
  const auto r = only_rank();
  ASSERT_FALSE(r.kernels.empty());
  for (const auto& k : r.kernels) EXPECT_STREQ(k.metrics_provenance, "replayed outside the partition");
}

TEST_F(TracerCudaFake, AGreenContextMadeCurrentTakesTheAppsLaunchesAndOnlyThoseCountInPartition) {
  // The app retains the primary context and makes it current; the tracer makes
  // the green context current at the entry of each driver call, so every
  // launch runs in it (16 SMs: an exact green partition).
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "2", "--second-context"},
                    {{"RTRACE_GREEN_CTX_SMS", "16"}, {"RTRACE_METRICS_PROVENANCE", "in-partition"}}),
            0)
      << stderr_;
  auto r = only_rank();
  ASSERT_EQ(r.kernels.size(), 8u);
  const std::int32_t green = r.kernels.front().context;
  for (const auto& k : r.kernels) {
    EXPECT_EQ(k.context, green) << name_of(r, k);  // the second context's launches too
    EXPECT_STREQ(k.metrics_provenance, "in-partition");
  }
  bool said = false;
  for (const auto& l : r.log) said |= l.find("of 16 SMs made current for the app's CUDA calls") != std::string::npos;
  EXPECT_TRUE(said);
  // 12 SMs cannot be a green partition (groups of 8): nothing is claimed in-partition.
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "1"},
                    {{"RTRACE_GREEN_CTX_SMS", "12"}, {"RTRACE_METRICS_PROVENANCE", "in-partition"}}),
            0)
      << stderr_;
  r = only_rank();
  ASSERT_EQ(r.kernels.size(), 3u);
  for (const auto& k : r.kernels) EXPECT_STREQ(k.metrics_provenance, "replayed outside the partition");
  said = false;
  for (const auto& l : r.log) said |= l.find("12 SMs would be 16, not the partition") != std::string::npos;
  EXPECT_TRUE(said);
}

// ---------------------------------------------------------------- issue 31
// The fakes are as strict as the CUDA 13 headers here: one profiling session
// per device (cupti_profiler_target.h), cuGreenCtxCreate retains the primary
// context, a green context is current to one thread at a time (cuda.h).

TEST_F(TracerCudaFake, AGreenPartitionProfilesTheGreenContextOnlyNeverItsParent) {
  // cuGreenCtxCreate creates and retains the primary context first: profiled
  // then, it held the device's one session and the green context's profiler
  // was refused (metrics-refused: no in-partition counts on a GPU).
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "2"},
                    {{"RTRACE_GREEN_CTX_SMS", "16"}, {"RTRACE_METRICS_PROVENANCE", "in-partition"}}),
            0)
      << stderr_;
  const auto r = only_rank();
  EXPECT_STREQ(r.info.gpu_status, "metrics") << r.info.gpu_status_detail;
  ASSERT_EQ(r.kernels.size(), 6u);
  for (const auto& k : r.kernels) {
    EXPECT_EQ(k.has_metrics, 1) << name_of(r, k);
    EXPECT_STREQ(k.metrics_provenance, "in-partition");
  }
  EXPECT_EQ(stderr_.find("a profiling session is active on its device"), std::string::npos) << stderr_;
  bool said = false;
  for (const auto& l : r.log) said |= l.find("not profiled: only the green context is") != std::string::npos;
  EXPECT_TRUE(said);
  expect_no_late_cupti_calls();
}

TEST_F(TracerCudaFake, MoreLaunchesThanTheRangeBufferHoldsAllGetMetrics) {
  // 1400 iterations x 3 kernels = 4200 launches in one context: past the
  // 4096 ranges of one counter data image, the profiler is stopped, decoded
  // and restarted; before, the last 104 launches had no metrics.
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "1400", "--size", "1024"}), 0) << stderr_;
  const auto r = only_rank();
  ASSERT_EQ(r.kernels.size(), 4200u);
  std::size_t without = 0;
  for (const auto& k : r.kernels) without += k.has_metrics ? 0 : 1;
  EXPECT_EQ(without, 0u);
  EXPECT_EQ(r.info.metrics_unmatched_launches, 0);
  EXPECT_EQ(r.info.dropped_records, 0);
  bool said = false;
  for (const auto& l : r.log) said |= l.find("the range buffer (4096 ranges) filled 1 time(s)") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(TracerCudaFake, AKernelLaunchedFromASecondThreadRefusesTheGreenPartition) {
  // The triad comes from 2 threads: the green context belongs to one; making
  // it current on the others (as the tracer did on every thread) breaks cuda.h's
  // one-thread rule. Now those launches refuse the partition: metrics-refused,
  // so the launcher counts on the whole device instead.
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "2", "--threads", "2"},
                    {{"RTRACE_GREEN_CTX_SMS", "16"}, {"RTRACE_METRICS_PROVENANCE", "in-partition"}}),
            0)
      << stderr_;
  EXPECT_EQ(stderr_.find("made current on a second thread"), std::string::npos) << stderr_;
  const auto r = only_rank();
  EXPECT_STREQ(r.info.gpu_status, "metrics-refused");
  EXPECT_NE(std::string(r.info.gpu_status_detail).find("a kernel launched from a second thread"), std::string::npos)
      << r.info.gpu_status_detail;
}

TEST_F(TracerCudaFake, ADynamicParallelismModuleIsFlaggedInAGreenPartition) {
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "1", "--cdp"},
                    {{"RTRACE_GREEN_CTX_SMS", "16"}, {"RTRACE_METRICS_PROVENANCE", "in-partition"}}),
            0)
      << stderr_;
  const auto r = only_rank();
  bool said = false;
  for (const auto& l : r.log)
    said |= l.find("warning: metrics: green context: module 1 uses dynamic parallelism (CDP)") != std::string::npos &&
            l.find("2 SMs more than the partition's 16") != std::string::npos;
  EXPECT_TRUE(said);
  // Without it, nothing is flagged.
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "1"}, {{"RTRACE_GREEN_CTX_SMS", "16"}}), 0) << stderr_;
  for (const auto& l : only_rank().log) EXPECT_EQ(l.find("dynamic parallelism"), std::string::npos) << l;
}

TEST_F(TracerCudaFake, TensorOpsAreRecordedPerSourceType) {
  ASSERT_EQ(run_app("cuda-metrics", {"--iters", "1", "--tensor"}), 0) << stderr_;
  const auto r = only_rank();
  int seen = 0;
  for (const auto& k : r.kernels) {
    const std::string name = name_of(r, k);
    if (name.rfind("fake_hgemm", 0) == 0) {
      ++seen;
      EXPECT_DOUBLE_EQ(k.tensor_ops_fp16, 64 * kN);
      EXPECT_DOUBLE_EQ(k.tensor_ops_fp64, 0);
      EXPECT_DOUBLE_EQ(k.tensor_ops, 64 * kN);
      EXPECT_DOUBLE_EQ(k.flops_fp32, 2 * kN / 4);  // the FFMA epilogue
    } else if (name.rfind("fake_dmma", 0) == 0) {
      ++seen;
      EXPECT_DOUBLE_EQ(k.tensor_ops_fp64, 16 * kN);
      EXPECT_DOUBLE_EQ(k.tensor_ops_fp16, 0);
      EXPECT_DOUBLE_EQ(k.tensor_ops, 16 * kN);
    }
  }
  EXPECT_EQ(seen, 2);
}
