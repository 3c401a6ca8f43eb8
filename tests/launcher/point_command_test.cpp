#include "rtrace/launcher/gpu.hpp"
#include "rtrace/launcher/counting.hpp"
#include "rtrace/launcher/point_command.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>

#include <algorithm>

using namespace rtrace::launcher;

namespace {

RunOptions options(std::vector<std::string> sweep) {
  RunOptions o;
  o.sweep = std::move(sweep);
  o.app_argv = {"./app", "in put"};
  return o;
}

LaunchSetup setup(const std::string& tracer = "cpu") {
  LaunchSetup s;
  s.cores = 2;
  s.root = true;
  s.app_path = "/abs/app";
  s.mpirun_path = "/usr/bin/mpirun";
  s.srun_path = "/usr/bin/srun";
  s.tracer_mode = tracer;
  s.tracer_lib = "/opt/rtrace/lib/librtrace_tracer.so";
  s.base.set("PATH", "/usr/bin");
  s.base.set("LD_PRELOAD", "/site/pre.so");
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST(LauncherPointCommand, DirectRunWithThreadsBindingAndTracer) {
  auto o = options({"threads=1..2", "env:N=100"});
  o.env = {{"X", "1"}};
  auto plan = make_sweep_plan(o.sweep, false, 1);
  auto s = setup();
  auto c = build_point_command(plan.points[1], plan, o, s, "/scratch/p000001");
  EXPECT_EQ(c.launch, LaunchKind::Direct);
  EXPECT_EQ(c.path, "/abs/app");
  EXPECT_EQ(c.argv, (std::vector<std::string>{"./app", "in put"}));
  EXPECT_EQ(c.env.get("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(c.env.get("OMP_PROC_BIND"), "close");
  EXPECT_EQ(c.env.get("OMP_PLACES"), "cores");
  EXPECT_EQ(c.env.get("N"), "100");
  EXPECT_EQ(c.env.get("X"), "1");
  EXPECT_EQ(c.env.get("RTRACE_TRACE_DIR"), "/scratch/p000001");
  EXPECT_EQ(c.env.get("RTRACE_TRACER_MODE"), "cpu");
  EXPECT_EQ(c.env.get("RTRACE_POINT_ID"), "1");
  EXPECT_EQ(c.env.get("RTRACE_SAMPLE_HZ"), "250");  // sampling on by default with the cpu tracer
  EXPECT_EQ(c.env.get("LD_PRELOAD"), "/opt/rtrace/lib/librtrace_tracer.so:/site/pre.so");
  EXPECT_FALSE(c.env.has("CUDA_INJECTION64_PATH"));
  EXPECT_EQ(c.partition.name(), "t2");
}

TEST(LauncherPointCommand, UserBindingWinsAndOversubscribedThreadsAreNotPinned) {
  auto o = options({"threads=4"});
  o.env = {{"OMP_PROC_BIND", "spread"}};
  auto plan = make_sweep_plan(o.sweep, false, 1);
  auto c = build_point_command(plan.points[0], plan, o, setup(), "/s");
  EXPECT_EQ(c.env.get("OMP_PROC_BIND"), "spread");
  EXPECT_FALSE(c.env.has("OMP_PLACES"));
}

TEST(LauncherPointCommand, MpirunCarriesThePreloadToRanksOnly) {
  auto o = options({"ranks=1,3"});
  auto plan = make_sweep_plan(o.sweep, false, 1);
  auto s = setup();
  auto one = build_point_command(plan.points[0], plan, o, s, "/s/p0");
  EXPECT_EQ(one.launch, LaunchKind::Direct);  // ranks=1 outside Slurm: no mpirun
  auto c = build_point_command(plan.points[1], plan, o, s, "/s/p1");
  EXPECT_EQ(c.launch, LaunchKind::Mpirun);
  EXPECT_EQ(c.path, "/usr/bin/mpirun");
  EXPECT_EQ(std::vector<std::string>(c.argv.begin(), c.argv.begin() + 6),
            (std::vector<std::string>{"mpirun", "-np", "3", "--oversubscribe", "--bind-to", "none"}));
  EXPECT_TRUE(contains(c.argv, "LD_PRELOAD=/opt/rtrace/lib/librtrace_tracer.so:/site/pre.so"));
  EXPECT_TRUE(contains(c.argv, "RTRACE_TRACE_DIR"));
  EXPECT_EQ(c.argv[c.argv.size() - 2], "/abs/app");
  EXPECT_EQ(c.argv.back(), "in put");
  EXPECT_EQ(c.env.get("LD_PRELOAD"), "/site/pre.so");  // mpirun itself is not traced
  EXPECT_EQ(c.env.get("OMPI_ALLOW_RUN_AS_ROOT"), "1");
  EXPECT_EQ(c.env.get("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), "1");
  EXPECT_FALSE(c.env.has("OMP_PROC_BIND"));
  EXPECT_EQ(c.partition.name(), "r3t1");
}

TEST(LauncherPointCommand, SrunInsideAnAllocation) {
  auto o = options({"ranks=2", "threads=2"});
  o.srun_mpi = "pmix";
  o.mpi_args = {"--overcommit"};
  auto plan = make_sweep_plan(o.sweep, false, 1);
  auto s = setup();
  s.in_slurm = true;
  auto c = build_point_command(plan.points[0], plan, o, s, "/s");
  EXPECT_EQ(c.launch, LaunchKind::Srun);
  EXPECT_EQ(c.argv, (std::vector<std::string>{"srun", "-n", "2", "--mpi=pmix", "--cpus-per-task=2",
                                              "--kill-on-bad-exit=1",
                                              "--export=ALL,LD_PRELOAD=/opt/rtrace/lib/librtrace_tracer.so:/site/pre.so",
                                              "--overcommit", "/abs/app", "in put"}));
  EXPECT_EQ(c.env.get("LD_PRELOAD"), "/site/pre.so");
  o.srun_mpi = "none";
  auto n = build_point_command(plan.points[0], plan, o, s, "/s");
  EXPECT_FALSE(contains(n.argv, "--mpi=pmix"));
}

TEST(LauncherPointCommand, LauncherChoicesThatCannotWork) {
  auto o = options({"ranks=2"});
  o.launcher = LauncherChoice::None;
  auto plan = make_sweep_plan(o.sweep, false, 1);
  EXPECT_THROW(build_point_command(plan.points[0], plan, o, setup(), "/s"), UsageError);
  auto on = options({"nodes=2"});
  auto nplan = make_sweep_plan(on.sweep, false, 1);
  try {
    build_point_command(nplan.points[0], nplan, on, setup(), "/s");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a Slurm allocation"), std::string::npos);
  }
  auto s = setup();
  s.mpirun_path.clear();
  try {
    build_point_command(plan.points[0], plan, options({"ranks=2"}), s, "/s");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "point `ranks=2` needs mpirun, but `mpirun` is not in PATH");
  }
}

TEST(LauncherPointCommand, CudaTracerUsesTheInjectionPath) {
  auto o = options({});
  auto plan = make_sweep_plan(o.sweep, false, 1);
  auto c = build_point_command(plan.points[0], plan, o, setup("cuda-trace"), "/s");
  EXPECT_EQ(c.env.get("CUDA_INJECTION64_PATH"), "/opt/rtrace/lib/librtrace_tracer.so");
  EXPECT_EQ(c.env.get("RTRACE_TRACER_MODE"), "cuda-trace");
  EXPECT_EQ(c.env.get("RTRACE_SAMPLE_HZ"), "0");  // off by default with the CUDA tracers
  auto none = build_point_command(plan.points[0], plan, o, setup("none"), "/s");
  EXPECT_EQ(none.env.get("LD_PRELOAD"), "/site/pre.so");
  EXPECT_FALSE(none.env.has("RTRACE_TRACE_DIR"));
}

TEST(LauncherPointCommand, PartitionNames) {
  Partition p;
  p.threads = 4;
  EXPECT_EQ(p.name(), "t4");
  p.ranks = 2;
  p.threads = 1;
  EXPECT_EQ(p.name(), "r2t1");
  p.nodes = 2;
  EXPECT_EQ(p.name(), "n2r2t1");
  Partition g;
  g.sms = 32;
  EXPECT_EQ(g.name(), "sm32");
  g.sm_method = "mps";  // ceilings measured under MPS are cached apart from green-context ones
  EXPECT_EQ(g.name(), "sm32mps");
}

TEST(LauncherMps, SnapsToTpcGranularity) {
  auto a = snap_sms_for_mps(15, 132);
  EXPECT_EQ(a.granted, 16);
  EXPECT_EQ(a.thread_percentage, 12);  // 12% of 132 = 15.84 -> 16; 13% would be 17.16 -> 18
  EXPECT_EQ(mps_grant(a.thread_percentage, 132), 16);
  auto full = snap_sms_for_mps(132, 132);
  EXPECT_EQ(full.granted, 132);
  EXPECT_EQ(full.thread_percentage, 100);
  EXPECT_EQ(snap_sms_for_mps(133, 132).granted, 132);
  EXPECT_EQ(snap_sms_for_mps(2, 132).granted, 2);  // 1% = 1.32 -> 2
  EXPECT_EQ(snap_sms_for_mps(2, 132).thread_percentage, 1);
}

TEST(LauncherMps, PercentageAlwaysGrantsWhatIsRecorded) {
  // Whatever the device, the recorded grant is what the model gives at the
  // recorded percentage, and never less than the request.
  for (int n : {14, 46, 108, 114, 132, 144})
    for (int r = 1; r <= n; ++r) {
      const auto s = snap_sms_for_mps(r, n);
      ASSERT_EQ(s.granted, mps_grant(s.thread_percentage, n)) << r << " of " << n;
      ASSERT_GE(s.granted, std::min(r, n)) << r << " of " << n;
      ASSERT_LE(s.granted, std::min(n, r + 2 + n / 100 * 2)) << r << " of " << n;
    }
}

TEST(LauncherMps, RequestsGrantingTheSameSmsAreOnePoint) {
  const auto m = merge_equal_sm_grants({15, 16, 24, 23, 200, 40}, 132);
  EXPECT_EQ(m.kept, (std::vector<std::int64_t>{15, 24, 200, 40}));
  ASSERT_EQ(m.warnings.size(), 2u);
  EXPECT_NE(m.warnings[0].find("sms=15 and sms=16 both get 16 SMs"), std::string::npos) << m.warnings[0];
  EXPECT_NE(m.warnings[1].find("sms=24 and sms=23 both get 24 SMs"), std::string::npos) << m.warnings[1];
}

TEST(LauncherGpu, DetectionReportsWhyNot) {
  auto g = detect_gpu();
  // Decided by the machine (device node + driver library), not by detect_gpu()
  // itself: a detect_gpu() that invents a GPU must fail here.
  const bool device = std::filesystem::exists("/dev/nvidiactl") || std::filesystem::exists("/dev/nvidia0");
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver) dlclose(driver);
  if (device && driver) GTEST_SKIP() << "an NVIDIA device and libcuda.so.1 are present (detect_gpu: " << g.name << ")";
  EXPECT_FALSE(g.found) << "detect_gpu() claims `" << g.name << "` on a machine without an NVIDIA device or driver";
  EXPECT_NE(g.why_not.find("no GPU found"), std::string::npos) << g.why_not;
}

#include "rtrace/launcher/ceilings.hpp"

TEST(LauncherErtCommand, SingleRankRunsItselfMultiRankUnderTheLauncher) {
  auto o = options({});
  auto s = setup();
  std::string path;
  Environment env;
  Partition t4;
  t4.threads = 4;
  auto a = ert_command("/b/rtrace", t4, true, "/c/x.h5", o, &s, path, env);
  EXPECT_EQ(path, "/b/rtrace");
  EXPECT_EQ(a, (std::vector<std::string>{"rtrace", "ert", "--threads", "4", "--quick", "-o", "/c/x.h5", "--quiet"}));
  Partition r2;
  r2.ranks = 2;
  r2.threads = 1;
  auto m = ert_command("/b/rtrace", r2, false, "/c/y.h5", o, &s, path, env);
  EXPECT_EQ(path, "/usr/bin/mpirun");
  EXPECT_EQ(m, (std::vector<std::string>{"mpirun", "-np", "2", "--bind-to", "none", "/b/rtrace", "ert", "--threads",
                                         "1", "--ranks", "2", "-o", "/c/y.h5", "--quiet"}));
  EXPECT_EQ(env.get("OMPI_ALLOW_RUN_AS_ROOT"), "1");
  s.in_slurm = true;
  auto sr = ert_command("/b/rtrace", r2, false, "/c/y.h5", o, &s, path, env);
  EXPECT_EQ(path, "/usr/bin/srun");
  EXPECT_EQ(sr[0], "srun");
  EXPECT_EQ(sr[3], "--mpi=pmix");
  Partition sm;
  sm.sms = 32;
  auto g = ert_command("/b/rtrace", sm, true, "/c/z.h5", o, &s, path, env);
  EXPECT_EQ(g, (std::vector<std::string>{"rtrace", "ert", "--sms", "32", "--quick", "-o", "/c/z.h5", "--quiet"}));
}

TEST(LauncherPointCommand, PlaceholdersInTheAppArgumentsArePerPoint) {
  RunOptions o;
  o.sweep = {"ranks=1,2", "env:N=1000,2000"};
  o.app_argv = {"./app", "--size", "{env:N}", "--t={threads}x{ranks}", "{{literal}}", "p{point}-n{nodes}", "{env:X}"};
  o.env = {{"X", "from --env"}};
  auto plan = make_sweep_plan(o.sweep, /*zip=*/true, 1);
  auto s = setup();
  auto direct = build_point_command(plan.points[0], plan, o, s, "/s");
  EXPECT_EQ(direct.argv, (std::vector<std::string>{"./app", "--size", "1000", "--t=2x1", "{literal}", "p0-n1",
                                                    "from --env"}));  // threads: the 2 cores of one rank
  auto mpi = build_point_command(plan.points[1], plan, o, s, "/s");
  ASSERT_EQ(mpi.launch, LaunchKind::Mpirun);
  const std::vector<std::string> tail(mpi.argv.end() - 6, mpi.argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"--size", "2000", "--t=1x2", "{literal}", "p1-n1", "from --env"}));
  EXPECT_EQ(mpi.argv[mpi.argv.size() - 7], "/abs/app");
}

TEST(LauncherPointCommand, PlaceholderValuesThatDoNotExistAreOneLine) {
  auto error_of = [](std::vector<std::string> app, std::vector<std::string> sweep) {
    RunOptions o;
    o.sweep = std::move(sweep);
    o.app_argv = std::move(app);
    auto plan = make_sweep_plan(o.sweep, false, 1);
    try {
      build_point_command(plan.points[0], plan, o, setup(), "/s");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of({"./app", "--size", "{env:NOT_SET_ANYWHERE}"}, {"threads=1"}),
            "app argument `{env:NOT_SET_ANYWHERE}`: {env:NOT_SET_ANYWHERE}: NOT_SET_ANYWHERE is not set (sweep it with "
            "--sweep env:NOT_SET_ANYWHERE=..., or pass --env NOT_SET_ANYWHERE=...)");
  EXPECT_EQ(error_of({"./app", "--sms={sms}"}, {"threads=1"}),
            "app argument `--sms={sms}`: {sms} needs an `sms` sweep axis or a GPU");
  EXPECT_EQ(error_of({"./app", "{env:API_TOKEN}"}, {"env:API_TOKEN=a"}),
            "app argument placeholder `{env:API_TOKEN}`: API_TOKEN matches a deny pattern, and the command line is "
            "recorded in the run file; let the app read it from its environment instead");
}

TEST(LauncherPointCommand, CountsPmuTellsTheTracerAndTheCountingPassRunsUntraced) {
  auto o = options({"ranks=2"});
  auto plan = make_sweep_plan(o.sweep, false, 1);
  auto s = setup();
  s.counts_mode = "pmu";
  auto timed = build_point_command(plan.points[0], plan, o, s, "/s/p0");
  EXPECT_TRUE(contains(timed.argv, "RTRACE_COUNTS"));  // mpirun -x: the ranks read it
  EXPECT_EQ(timed.env.get("RTRACE_COUNTS"), "pmu");
  s.counts_mode = "sim";
  auto sim = build_point_command(plan.points[0], plan, o, s, "/s/p0");
  EXPECT_FALSE(sim.env.has("RTRACE_COUNTS"));  // the counting pass is a run of its own
  // The counting pass: the same mpirun line, the app under the tool, no tracer.
  LaunchSetup untraced_setup = setup("none");
  auto untraced = build_point_command(plan.points[0], plan, o, untraced_setup, "");
  TimedRun timed_run;
  timed_run.wall_s = 1.5;
  timed_run.cpu_s = 3;
  timed_run.dispatch_from = "/tmp";  // the tracer's trace directory (it exists)
  o.counts_window = "step:2-3";
  auto inv = counting_invocation(untraced, "/abs/app", "/s/counts.h5", timed_run, o, "/s/calibration.txt");
  EXPECT_EQ(inv.argv[1], "counts");
  // The timed run's dispatch and the user's window reach `rtrace counts`; the
  // cost forecast is a calibration run of its own, with the same caches.
  EXPECT_TRUE(contains(inv.argv, "--dispatch-from"));
  EXPECT_TRUE(contains(inv.argv, "--no-calibrate"));
  const auto window = std::find(inv.argv.begin(), inv.argv.end(), "--counts-window");
  ASSERT_NE(window, inv.argv.end());
  EXPECT_EQ(*(window + 1), "step:2-3");
  EXPECT_EQ(inv.calibrate_argv.at(2), "--calibrate");
  EXPECT_TRUE(contains(inv.calibrate_argv, "--timed-cpu"));
  EXPECT_TRUE(contains(inv.calibrate_argv, "/s/calibration.txt"));
  EXPECT_TRUE(contains(inv.calibrate_argv, "--ranks-per-node"));
  const auto dashes = std::find(inv.argv.begin(), inv.argv.end(), "--");
  ASSERT_NE(dashes, inv.argv.end());
  const std::vector<std::string> command(dashes + 1, inv.argv.end());
  EXPECT_EQ(command.front(), "/usr/bin/mpirun");
  EXPECT_FALSE(contains(command, "LD_PRELOAD=/opt/rtrace/lib/librtrace_tracer.so:/site/pre.so"));
  const auto app_index = std::find(inv.argv.begin(), inv.argv.end(), "--app-index");
  ASSERT_NE(app_index, inv.argv.end());
  EXPECT_EQ(command.at(std::stoul(*(app_index + 1))), "/abs/app");
  EXPECT_TRUE(contains(inv.argv, "--ranks"));
  EXPECT_TRUE(contains(inv.argv, "--timed-run"));
  // No threads axis and no OMP_NUM_THREADS: the threads per rank the caches
  // are planned for are an assumption (a pure-MPI app runs 1), said as such.
  EXPECT_TRUE(contains(inv.argv, "--assume-threads"));
  EXPECT_FALSE(contains(inv.argv, "--threads"));
  // The raw files go next to the output, in the point's scratch on the
  // output's filesystem (ranks on other nodes cannot write a local /tmp).
  const auto keep_raw = std::find(inv.argv.begin(), dashes, "--keep-raw");
  ASSERT_NE(keep_raw, dashes);
  EXPECT_EQ(*(keep_raw + 1), "/s/counts.raw");
  EXPECT_EQ(inv.raw_dir, "/s/counts.raw");
  auto direct = build_point_command(make_sweep_plan({"threads=2"}, false, 1).points[0],
                                    make_sweep_plan({"threads=2"}, false, 1), o, untraced_setup, "");
  auto dinv = counting_invocation(direct, "/abs/app", "/s/c.h5", TimedRun{}, o);
  EXPECT_TRUE(dinv.calibrate_argv.empty());  // no timed time: no forecast
  EXPECT_FALSE(contains(dinv.argv, "--dispatch-from"));
  const auto ddash = std::find(dinv.argv.begin(), dinv.argv.end(), "--");
  EXPECT_EQ(*(ddash + 1), "/abs/app");
  EXPECT_EQ(dinv.argv.back(), "in put");
  const auto threads = std::find(dinv.argv.begin(), ddash, "--threads");  // a threads axis: known
  ASSERT_NE(threads, ddash);
  EXPECT_EQ(*(threads + 1), "2");
}

TEST(LauncherPointCommand, NodesSpreadRanksOverTheFirstNodesOfTheAllocation) {
  auto s = setup();
  s.in_slurm = true;
  s.nodelist = {"node1", "node2", "node3", "node4"};
  auto o = options({"nodes=1,2,4", "ranks-per-node=1"});
  o.srun_mpi = "pmix";
  auto plan = make_sweep_plan(o.sweep, false, 1);
  auto c = build_point_command(plan.points[1], plan, o, s, "/s");
  EXPECT_EQ(c.launch, LaunchKind::Srun);
  // Before: `srun -n 1 -N 2`, one rank on one node whatever nodes said.
  EXPECT_EQ(std::vector<std::string>(c.argv.begin(), c.argv.begin() + 8),
            (std::vector<std::string>{"srun", "-n", "2", "-N", "2", "--ntasks-per-node=1", "-w", "node1,node2"}));
  EXPECT_EQ(c.partition.name(), "n2r2t1");  // the allocation gives each task 1 CPU (no --cpus-per-task)
  EXPECT_EQ(partition_hosts(c.partition, s), (std::vector<std::string>{"node1", "node2"}));
  auto four = build_point_command(plan.points[2], plan, o, s, "/s");
  EXPECT_TRUE(contains(four.argv, "node1,node2,node3,node4"));
  EXPECT_EQ(four.partition.ranks, 4);

  // Nodes alone: the allocation's tasks per node on every node.
  auto alone = options({"nodes=2"});
  auto aplan = make_sweep_plan(alone.sweep, false, 1);
  s.tasks_per_node = 3;
  auto a = build_point_command(aplan.points[0], aplan, alone, s, "/s");
  EXPECT_EQ(a.partition.ranks, 6);
  EXPECT_TRUE(contains(a.argv, "--ntasks-per-node=3"));

  // More nodes than the allocation, fewer ranks than nodes: refused before anything runs.
  s.nodelist = {"node1", "node2"};
  try {
    build_point_command(plan.points[2], plan, o, s, "/s");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "partition n4r4t1 needs 4 nodes, but the allocation has 2 (node1,node2)");
  }
  auto few = options({"nodes=2", "ranks=1"});
  auto fplan = make_sweep_plan(few.sweep, false, 1);
  try {
    build_point_command(fplan.points[0], fplan, few, s, "/s");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "point `nodes=2 ranks=1`: 1 rank cannot spread over 2 nodes (srun would run them on fewer); "
                           "sweep ranks-per-node instead of ranks, or give ranks >= nodes");
  }
}
