// The headline command on CPU: `rtrace --sweep sms=... -- ./cuda_app` on an
// unannotated CUDA app gives, per point, kernel times from the partitioned run,
// kernel counts with their provenance, the partition's ceilings, and a roofline
// trajectory in `rtrace analyze`. Everything GPU-side is a fake: the MPS daemon
// (fake nvidia-cuda-mps-control), the driver and CUPTI the app loads
// (tests/gpu/fake_cuda: libcuda.so.1 through the app's RUNPATH,
// libcupti.so.13 through LD_LIBRARY_PATH, as on a GPU node), the ERT
// (rtrace-fake-gpu-ert) and the %smid probe. The fake CUPTI refuses the range
// profiler under MPS, as NVIDIA documents the real one does, unless
// FAKE_CUPTI_PROFILE_UNDER_MPS=1. Nothing here measures a GPU.
#include "fake_mps_sweep.hpp"

#include "rtrace/launcher/gpu.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iterator>

using namespace rtrace;
using rtrace::test::fields;
using rtrace::test::kTracerLib;
namespace fs = std::filesystem;

namespace {

const std::string kApp = RTRACE_FAKE_CUDA_APP;
const std::string kFakeErt = RTRACE_FAKE_GPU_ERT;
const std::string kFakeCudaDir = RTRACE_FAKE_CUDA_DIR;
const char* kTriad = "fake_triad(double*, double const*, double const*, double, long)";
constexpr double kN = 1 << 22;
constexpr int kIters = 3;

class sms_roofline : public rtrace::test::FakeMpsSweep {
 protected:
  // The sweep of the fake CUDA app with the fake GPU's ERT; --tracer auto.
  pid_t sweep(const std::string& sms, std::vector<std::string> extra_args = {},
              std::vector<std::string> extra_env = {}) {
    std::vector<std::string> args = {"--sweep", "sms=" + sms, "--ert", "quick", "-o", path("run.h5"),
                                     "--env", "LD_LIBRARY_PATH=" + kFakeCudaDir};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    args.insert(args.end(), {"--", kApp, "--iters", std::to_string(kIters), "--size", std::to_string(long(kN))});
    args.insert(args.end(), app_extra_.begin(), app_extra_.end());
    extra_env.push_back("RTRACE_TRACER_LIB=" + kTracerLib);
    extra_env.push_back("RTRACE_TEST_FAKE_GPU=sms=132,name=Fake H100,cc=9.0,ert=" + kFakeErt +
                        ",probe=" + path("rtrace-smid-probe") + ",cuda=1" + gpu_extra_);
    extra_env.push_back("FAKE_ERT_RECORD=" + path("ert.txt"));
    return spawn(args, extra_env);
  }
  std::vector<std::string> ert_runs() const {
    std::ifstream in(path("ert.txt"));
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }
  store::RankRecords rank0(store::File& f, std::int64_t point) {
    return store::read_rank(
        f.root().open_group("points").open_group(store::point_group_name(point)).open_group("ranks").open_group("r000000"));
  }
  static std::string name_of(const store::RankRecords& r, const store::KernelRow& k) {
    return r.names.at(static_cast<std::size_t>(k.name_id));
  }
  std::string point_log(store::File& f, std::int64_t point) {
    auto g = f.root().open_group("points").open_group(store::point_group_name(point));
    std::string all;
    if (g.has_attr("log"))
      for (const auto& l : g.attr_strings("log")) all += l + "\n";
    return all;
  }
  // Another program with the fixture's environment; output into rtrace.err.
  pid_t spawn_program(const std::string& exe, const std::vector<std::string>& args) {
    std::vector<std::string> argv{exe};
    argv.insert(argv.end(), args.begin(), args.end());
    auto envs = environment({});
    std::vector<char*> a, e;
    for (auto& x : argv) a.push_back(x.data());
    a.push_back(nullptr);
    for (auto& x : envs) e.push_back(x.data());
    e.push_back(nullptr);
    const std::string err = path("rtrace.err");
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      execve(exe.c_str(), a.data(), e.data());
      _exit(127);
    }
    return pid;
  }
  std::vector<std::string> app_extra_;  // more arguments of the fake app
  std::string gpu_extra_;               // more keys of the fake GPU (",mode=3")
  // rtrace analyze FILE [args]: exit status, stdout+stderr into `out`.
  int analyze(const std::vector<std::string>& args, std::string& out) {
    std::vector<std::string> a = {"analyze", path("run.h5")};
    a.insert(a.end(), args.begin(), args.end());
    const pid_t pid = spawn(a);
    const int rc = wait_for(pid, 120);
    out = err_text();
    return rc;
  }
};

}  // namespace

TEST_F(sms_roofline, AnUnannotatedCudaAppGetsCountsErtAndATrajectoryOnEveryPartition) {
  // A driver without green contexts: counts the fake CUPTI refuses under MPS
  // are replayed outside the partition (the whole device is its own partition).
  const pid_t pid = sweep("16,32,64,132", {}, {"FAKE_CUDA_NO_GREEN=1"});
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  const auto points = store::read_points(f);
  ASSERT_EQ(points.size(), 4u);
  double previous_triad_s = 0;
  for (const auto& p : points) {
    SCOPED_TRACE("sms=" + std::to_string(p.sms_requested));
    EXPECT_EQ(store::get_str(p.status), "ok");
    EXPECT_EQ(p.sms_achieved, p.sms_granted);
    auto g = f.root().open_group("points").open_group(store::point_group_name(p.point_id));
    // Counts replayed outside the partition: the fake CUPTI refused under MPS.
    const std::string want = p.sms_granted == 132 ? "in-partition" : "replayed outside the partition";
    ASSERT_TRUE(g.has_attr("metrics_provenance"));
    EXPECT_EQ(g.attr_string("metrics_provenance"), want);
    ASSERT_TRUE(g.exists("ceilings"));
    const auto rec = rank0(f, p.point_id);
    int trace_rows = 0, metric_rows = 0;
    double triad_s = 0;
    for (const auto& k : rec.kernels) {
      if (k.has_metrics) {
        ++metric_rows;
        EXPECT_EQ(std::string(k.metrics_provenance), want);
        EXPECT_EQ(k.start_ns, 0);  // no timeline: times never come from the replayed run
        EXPECT_EQ(k.end_ns, 0);
        if (name_of(rec, k) == kTriad) {
          EXPECT_DOUBLE_EQ(k.flops_fp64, 2 * kN);
        }
      } else {
        ++trace_rows;
        EXPECT_GT(k.end_ns, k.start_ns);
        EXPECT_STREQ(k.metrics_provenance, "");
        if (name_of(rec, k) == kTriad) triad_s += double(k.end_ns - k.start_ns) * 1e-9;
      }
    }
    EXPECT_EQ(trace_rows, 3 * kIters);
    EXPECT_EQ(metric_rows, 3 * kIters);
    // The times are the partition's: HBM-bound triad halves from 16 to 32 SMs
    // (the replayed run had all 132 SMs, and replay stretches kernels).
    if (previous_triad_s > 0 && p.sms_granted <= 64) {
      EXPECT_NEAR(previous_triad_s / triad_s, 2.0, 0.1);
    }
    previous_triad_s = triad_s;
  }
  const std::string log0 = point_log(f, 0);
  EXPECT_NE(log0.find("CUPTI refused to profile inside the SM partition (cuptiRangeProfilerEnable: "
                      "CUPTI_ERROR_NOT_SUPPORTED)"),
            std::string::npos)
      << log0;
  EXPECT_NE(point_log(f, 1).find("replayed outside the partition: CUPTI refused to profile inside an SM partition at "
                                 "sms=16"),
            std::string::npos);
  // One metrics run tried inside the partition (the first point), none after.
  int inside = 0;
  for (const auto& l : lines_starting("client role=cuda-app"))
    if (l.find("metrics=cuda-metrics") != std::string::npos) ++inside;
  EXPECT_EQ(inside, 1);
  // The ERT of every partition, on exactly the granted SMs.
  const auto erts = ert_runs();
  ASSERT_EQ(erts.size(), 4u);
  for (const auto& e : erts) EXPECT_EQ(fields(e)["sms"], fields(e)["achieved"]) << e;

#ifdef RTRACE_DEMO_CHECK
  // What tests/gpu/validate.sh reads from such a run (rtrace-demo-check).
  {
    const pid_t c = spawn_program(RTRACE_DEMO_CHECK, {"point-kernels", path("run.h5"), "fake_triad"});
    ASSERT_EQ(wait_for(c, 60), 0) << err_text();
    int lines = 0;
    std::istringstream in(err_text());
    for (std::string l; std::getline(in, l);) {
      if (l.empty() || l[0] == '#') continue;
      ++lines;
      std::vector<std::string> f;
      std::istringstream ls(l);
      for (std::string x; std::getline(ls, x, '\t');) f.push_back(x);
      ASSERT_EQ(f.size(), 8u) << l;
      EXPECT_EQ(f[2], std::to_string(kIters)) << l;  // traced launches
      EXPECT_GT(std::stod(f[3]), 0) << l;             // their seconds
      EXPECT_EQ(f[4], std::to_string(kIters)) << l;  // launches with counts
      EXPECT_EQ(f[7], f[1] == "132" ? "in-partition" : "replayed outside the partition") << l;
    }
    EXPECT_EQ(lines, 4);
    const pid_t e = spawn_program(RTRACE_DEMO_CHECK, {"ert-sms", path("run.h5")});
    ASSERT_EQ(wait_for(e, 60), 0) << err_text();
    std::istringstream ein(err_text());
    int erts = 0;
    for (std::string l; std::getline(ein, l);) {
      if (l.empty() || l[0] == '#') continue;
      std::istringstream ls(l);
      std::string id, granted, achieved;
      std::getline(ls, id, '\t');
      std::getline(ls, granted, '\t');
      std::getline(ls, achieved, '\t');
      EXPECT_EQ(granted, achieved) << l;
      ++erts;
    }
    EXPECT_EQ(erts, 4);
  }
#endif

  std::string out;
  ASSERT_EQ(analyze({"--json", path("analysis.json"), "--html", path("report.html")}, out), 0) << out;
  EXPECT_NE(out.find("kernel fake_triad"), std::string::npos) << out;
  EXPECT_NE(out.find("were replayed outside the SM partition"), std::string::npos) << out;
  {  // The HTML report says it too (one note for both).
    std::ifstream html(path("report.html"));
    const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
    EXPECT_NE(page.find("were replayed outside the SM partition"), std::string::npos);
  }
  EXPECT_NE(out.find("bandwidth-contention on HBM"), std::string::npos) << out;
  std::ifstream in(path("analysis.json"));
  const auto j = nlohmann::json::parse(in);
  bool triad_trajectory = false;
  for (const auto& t : j["trajectories"])
    if (t["kernel"] == kTriad && t["configurations"].size() == 4) triad_trajectory = true;
  EXPECT_TRUE(triad_trajectory) << j["trajectories"].dump();
  for (const auto& k : j["kernels"]) {
    if (k["name"] != kTriad) continue;
    for (const auto& pt : k["points"]) {
      EXPECT_EQ(pt["metrics_provenance"],
                pt["concurrency"] == 132 ? "in-partition" : "replayed outside the partition");
      EXPECT_GT(pt["performance"]["value"].get<double>(), 0);
    }
  }
}

TEST_F(sms_roofline, RefusedUnderMpsCountsComeFromAGreenContextOfThePartitionsSms) {
  // 16 SMs: a green context of exactly 16 takes every launch: in-partition.
  // 12 SMs: green contexts come in 8s (16): not the partition, so the launches
  // run on the whole device and say so. 132: the whole device is the partition.
  const pid_t pid = sweep("12,16,132");
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  const std::map<int, std::string> want = {
      {12, "replayed outside the partition"}, {16, "in-partition"}, {132, "in-partition"}};
  for (const auto& p : store::read_points(f)) {
    SCOPED_TRACE("sms=" + std::to_string(p.sms_granted));
    auto g = f.root().open_group("points").open_group(store::point_group_name(p.point_id));
    EXPECT_EQ(g.attr_string("metrics_provenance"), want.at(p.sms_granted));
    int counted = 0;
    for (const auto& k : rank0(f, p.point_id).kernels) {
      if (!k.has_metrics) continue;
      ++counted;
      EXPECT_EQ(std::string(k.metrics_provenance), want.at(p.sms_granted));
    }
    EXPECT_EQ(counted, 3 * kIters);
  }
  EXPECT_NE(point_log(f, 1).find("inside a green context of the partition's 16 SMs (every launch ran in it)"),
            std::string::npos)
      << point_log(f, 1);
  EXPECT_NE(point_log(f, 0).find("no green context of the partition's SMs took the app's launches"), std::string::npos)
      << point_log(f, 0);
  EXPECT_NE(point_log(f, 2).find("on the whole device, which is this point's partition"), std::string::npos);
}

TEST_F(sms_roofline, CountsAreTakenInsideThePartitionWhenCuptiAcceptsIt) {
  const pid_t pid = sweep("16,32", {}, {"FAKE_CUPTI_PROFILE_UNDER_MPS=1"});
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  for (const auto& p : store::read_points(f)) {
    auto g = f.root().open_group("points").open_group(store::point_group_name(p.point_id));
    EXPECT_EQ(g.attr_string("metrics_provenance"), "in-partition");
    for (const auto& k : rank0(f, p.point_id).kernels) {
      if (k.has_metrics) {
        EXPECT_STREQ(k.metrics_provenance, "in-partition");
      }
    }
  }
  // Every point's metrics run was an MPS client with its point's percentage.
  std::vector<std::string> pcts;
  for (const auto& l : lines_starting("client role=cuda-app"))
    if (l.find("metrics=cuda-metrics") != std::string::npos) pcts.push_back(fields(l)["pct"]);
  EXPECT_EQ(pcts, (std::vector<std::string>{"12", "24"}));
}

TEST_F(sms_roofline, CountersForAdminsOnlyKeepTheTimesUnderAutoAndFailAnExplicitCudaMetrics) {
  // Issue 31: with the driver's default NVreg_RestrictProfilingToAdminUsers=1,
  // --tracer auto failed every point whose times were good. Now the points
  // keep their times and say why there are no counts and what would give them;
  // one metrics run is tried, not one per point.
  pid_t pid = sweep("16,32", {}, {"FAKE_CUPTI_INSUFFICIENT_PRIVILEGES=1"});
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  {
    auto f = store::File::open(path("run.h5"));
    const auto points = store::read_points(f);
    ASSERT_EQ(points.size(), 2u);
    for (const auto& p : points) {
      EXPECT_EQ(store::get_str(p.status), "ok");
      int timed = 0;
      for (const auto& k : rank0(f, p.point_id).kernels) {
        EXPECT_EQ(k.has_metrics, 0);
        timed += k.end_ns > k.start_ns ? 1 : 0;
      }
      EXPECT_EQ(timed, 3 * kIters);
    }
    const std::string log0 = point_log(f, 0);
    EXPECT_NE(log0.find("warning: no kernel counts: GPU performance counters are restricted to administrators "
                        "(cuptiProfilerInitialize: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)"),
              std::string::npos)
        << log0;
    EXPECT_NE(log0.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos) << log0;
    EXPECT_NE(point_log(f, 1).find("restricted to administrators (seen at sms=16"), std::string::npos)
        << point_log(f, 1);
  }
  EXPECT_NE(err_text().find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos) << err_text();
  int metrics_runs = 0;
  for (const auto& l : lines_starting("client role=cuda-app"))
    if (l.find("metrics=cuda-metrics") != std::string::npos) ++metrics_runs;
  EXPECT_EQ(metrics_runs, 1);
  // Counts asked for explicitly: the point fails, with the reason.
  fs::remove_all(path("run.h5.d"));
  fs::remove(path("run.h5"));
  pid = sweep("16", {"--tracer", "cuda-metrics"}, {"FAKE_CUPTI_INSUFFICIENT_PRIVILEGES=1"});
  EXPECT_EQ(wait_for(pid, 300), 1) << err_text();
  auto f = store::File::open(path("run.h5"));
  const auto points = store::read_points(f);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(store::get_str(points[0].status), "failed");
  EXPECT_NE(point_log(f, 0).find("error: GPU performance counters not permitted"), std::string::npos)
      << point_log(f, 0);
  EXPECT_NE(err_text().find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), std::string::npos) << err_text();
}

TEST_F(sms_roofline, InExclusiveProcessModeRtracesMpsServerIsStoppedAroundTheRunOutsideThePartition) {
  // Issue 31: in EXCLUSIVE_PROCESS compute mode a process that is no MPS
  // client gets no context while an MPS server lives; the outside run only hid
  // the pipe directory, so it failed (exit 2, CUDA_ERROR_DEVICE_UNAVAILABLE).
  gpu_extra_ = ",mode=3";
  const pid_t pid = sweep("16,32", {}, {"FAKE_CUDA_COMPUTE_MODE=3"});
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  for (const auto& p : store::read_points(f)) {
    SCOPED_TRACE("sms=" + std::to_string(p.sms_granted));
    EXPECT_EQ(store::get_str(p.status), "ok");
    auto g = f.root().open_group("points").open_group(store::point_group_name(p.point_id));
    EXPECT_EQ(g.attr_string("metrics_provenance"), "in-partition");  // green contexts of 16 and 32 SMs
    EXPECT_NE(point_log(f, p.point_id).find("rtrace's MPS server (pid "), std::string::npos)
        << point_log(f, p.point_id);
  }
  EXPECT_EQ(lines_starting("shutdown_server server=").size(), 2u);  // once per outside run
  EXPECT_GE(lines_starting("server start").size(), 2u);            // started again by the next client (ERT, probe)
  EXPECT_NE(err_text().find("EXCLUSIVE_PROCESS compute mode: rtrace stops its MPS server"), std::string::npos)
      << err_text();
}

TEST_F(sms_roofline, AMultiThreadedLauncherIsCountedOnTheWholeDeviceNotInAGreenContext) {
  // Issue 31, item 8: the green context was made current on every thread;
  // cuda.h allows one. A kernel from a second thread refuses the green
  // partition and the point's counts come from the whole device, saying so.
  app_extra_ = {"--threads", "2"};
  const pid_t pid = sweep("16");
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  auto g = f.root().open_group("points").open_group("p000000");
  EXPECT_EQ(g.attr_string("metrics_provenance"), "replayed outside the partition");
  const std::string log = point_log(f, 0);
  EXPECT_NE(log.find("the green context of 16 SMs gave no kernel counts (green context: a kernel launched from a "
                     "second thread"),
            std::string::npos)
      << log;
  int counted = 0;
  for (const auto& k : rank0(f, 0).kernels) counted += k.has_metrics;
  EXPECT_EQ(counted, 4 * kIters);  // 2 triads, stencil and reduce per iteration
}

// Issue 31: rtrace's own cuInit ran in the user's environment, where an MPS
// client sees its share of the SMs as the device's count: the driver is now
// asked in a child that reaches no MPS daemon.
TEST_F(sms_roofline, DetectingTheGpuIsNeverAnMpsClient) {
  const std::string pipe = path("user-pipe");
  fs::create_directories(pipe);
  std::vector<std::string> env = environment({"CUDA_MPS_PIPE_DIRECTORY=" + pipe});
  std::vector<char*> e;
  for (auto& x : env) e.push_back(x.data());
  e.push_back(nullptr);
  const pid_t d = fork();
  if (d == 0) {
    execle(rtrace::test::kFake.c_str(), "nvidia-cuda-mps-control", "-d", nullptr, e.data());
    _exit(127);
  }
  int status = 0;
  waitpid(d, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The user's environment: an MPS client at 25%.
  setenv("CUDA_MPS_PIPE_DIRECTORY", pipe.c_str(), 1);
  setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25", 1);
  setenv("FAKE_MPS_RECORD", path("record.txt").c_str(), 1);
  const launcher::GpuInfo g = launcher::detect_gpu_with(kFakeCudaDir + "/libcuda.so.1", 30);
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  unsetenv("FAKE_MPS_RECORD");
  EXPECT_TRUE(g.found) << g.why_not;
  EXPECT_EQ(g.sm_count, 132);  // the device's, not an MPS client's 34
  EXPECT_EQ(g.compute_mode, 0);
  EXPECT_TRUE(lines_starting("client role=cuda-app").empty()) << "the detection reached the MPS daemon";
  // Stop the daemon.
  const pid_t q = fork();
  if (q == 0) {
    int in[2];
    if (pipe2(in, 0) != 0) _exit(1);
    (void)!write(in[1], "quit\n", 5);
    close(in[1]);
    dup2(in[0], 0);
    execle(rtrace::test::kFake.c_str(), "nvidia-cuda-mps-control", nullptr, e.data());
    _exit(127);
  }
  waitpid(q, &status, 0);
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

TEST_F(sms_roofline, WithoutCuptiThePointFailsNeverOkWithNothingTraced) {
  const pid_t pid = sweep("16", {"--tracer", "cuda"}, {"RTRACE_CUPTI_LIB=" + path("no/libcupti.so.13")});
  EXPECT_EQ(wait_for(pid, 300), 1) << err_text();
  auto f = store::File::open(path("run.h5"));
  const auto points = store::read_points(f);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(store::get_str(points[0].status), "failed");
  EXPECT_NE(point_log(f, 0).find("error: GPU tracing impossible: CUPTI missing: libcupti not loadable from "
                                 "RTRACE_CUPTI_LIB="),
            std::string::npos)
      << point_log(f, 0);
}

TEST_F(sms_roofline, TracerCudaTimesOnlyAndCudaMetricsIsAcceptedWithTheSmsAxis) {
  // --tracer cuda: times only (no metrics run, no ceilings: nothing to place).
  pid_t pid = sweep("16", {"--tracer", "cuda"});
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  {
    auto f = store::File::open(path("run.h5"));
    auto g = f.root().open_group("points").open_group("p000000");
    EXPECT_FALSE(g.has_attr("metrics_provenance"));
    for (const auto& k : rank0(f, 0).kernels) EXPECT_EQ(k.has_metrics, 0);
  }
  fs::remove_all(path("run.h5.d"));
  fs::remove(path("run.h5"));
  // --tracer cuda-metrics with an sms axis (refused before this issue): counts.
  pid = sweep("16", {"--tracer", "cuda-metrics"}, {"FAKE_CUDA_NO_GREEN=1"});
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  EXPECT_EQ(f.root().open_group("points").open_group("p000000").attr_string("metrics_provenance"),
            "replayed outside the partition");
}

TEST_F(sms_roofline, ACachedErtIsReusedOnlyForTheSmsItWasMeasuredOn) {
  // An ERT that ran on 2 SMs more than granted: its ceilings are marked
  // unreliable and never cached...
  pid_t pid = sweep("16", {}, {"FAKE_ERT_SMS_OFFSET=2"});
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  {
    auto f = store::File::open(path("run.h5"));
    const auto c = store::read_ceilings(f.root().open_group("points").open_group("p000000"));
    ASSERT_FALSE(c.empty());
    for (const auto& r : c) {
      EXPECT_EQ(r.unreliable, 1);
      EXPECT_NE(store::get_str(r.unreliable_reason).find("the ERT ran on 18 SMs (%smid), the partition grants 16"),
                std::string::npos);
    }
  }
  // ...so the next sweep measures again; a matching result is cached and then reused.
  for (int run = 0; run < 2; ++run) {
    fs::remove_all(path("run.h5.d"));
    fs::remove(path("run.h5"));
    pid = sweep("16");
    ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  }
  EXPECT_EQ(ert_runs().size(), 2u);  // the mismatched one, one good one; the third sweep used the cache
  // A cache entry that claims other SMs (copied from elsewhere) is not trusted.
  const fs::path cache = fs::path(path("cache")) / "ert";
  std::string entry;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().filename().string().find("sm16mps") != std::string::npos &&
        e.path().filename().string().find("unreliable") == std::string::npos)
      entry = e.path().string();
  ASSERT_FALSE(entry.empty());
  {
    auto ef = store::File::open(entry, store::Access::ReadWrite);
    ef.root().open_group("ert").set_attr("sms_achieved", std::int64_t(20));
  }
  fs::remove_all(path("run.h5.d"));
  fs::remove(path("run.h5"));
  pid = sweep("16");
  ASSERT_EQ(wait_for(pid, 300), 0) << err_text();
  EXPECT_EQ(ert_runs().size(), 3u);
}

TEST_F(sms_roofline, AHungErtIsStoppedAndThePointSaysSo) {
  const pid_t pid = sweep("16", {"--ert-timeout", "1"}, {"FAKE_ERT_SLEEP=30"});
  const double t0 = rtrace::test::now_s();
  ASSERT_EQ(wait_for(pid, 120), 0) << err_text();
  EXPECT_LT(rtrace::test::now_s() - t0, 25);
  auto f = store::File::open(path("run.h5"));
  EXPECT_FALSE(f.root().open_group("points").open_group("p000000").exists("ceilings"));
  EXPECT_NE(point_log(f, 0).find("timed out after 1 s (--ert-timeout)"), std::string::npos) << point_log(f, 0);
}
