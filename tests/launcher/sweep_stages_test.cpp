// The sweep's stages one by one (launcher/include/rtrace/launcher/sweep_stages.hpp).
#include "rtrace/launcher/sweep_runner.hpp"
#include "rtrace/launcher/sweep_stages.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

using namespace rtrace::launcher;
namespace fs = std::filesystem;

namespace {

RunOptions options(std::vector<std::string> sweep, const std::string& output = "run.h5") {
  RunOptions o;
  o.sweep = std::move(sweep);
  o.app_argv = {"true"};
  o.output = output;
  o.ert = ErtMode::None;
  o.tracer = TracerChoice::None;
  o.quiet = true;
  return o;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("rtrace-stages-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

ProcessResult exited(int code) {
  ProcessResult r;
  r.kind = ExitKind::Exited;
  r.exit_code = code;
  r.pid = 4242;
  r.start_time = 1000;
  r.end_time = 1001.5;
  r.wall_s = 1.5;
  r.stdout_tail = "hello\n";
  r.stdout_bytes = 6;
  return r;
}

}  // namespace

TEST(LauncherSweepStages, PlanSelectsPointsAndRejectsAnEnvThatIsSwept) {
  auto o = options({"threads=1..4"});
  o.points = "1,3";
  const auto ctx = plan_sweep(o);
  EXPECT_EQ(ctx.plan.points.size(), 4u);
  EXPECT_EQ(ctx.total(), 2);
  EXPECT_TRUE(ctx.is_selected(1));
  EXPECT_FALSE(ctx.is_selected(2));

  auto bad = options({"env:N=1,2"});
  bad.env = {{"N", "3"}};
  EXPECT_THROW(plan_sweep(bad), UsageError);
}

TEST(LauncherSweepStages, SetupBuildsOneCommandPerPointAndRefusesAMissingApp) {
  auto ctx = plan_sweep(options({"threads=1..2"}));
  const auto env = Environment::current();
  const auto setup = check_setup(ctx, env);
  ASSERT_EQ(setup.commands.size(), 2u);
  EXPECT_EQ(setup.commands[1].partition.name(), "t2");
  EXPECT_EQ(setup.launch.tracer_mode, "none");
  EXPECT_EQ(setup.trace_dir(1), setup.scratch_root + "/p000001");

  auto missing = options({});
  missing.app_argv = {"/nonexistent/rtrace-app"};
  EXPECT_THROW(check_setup(plan_sweep(missing), env), UsageError);
}

TEST(LauncherSweepStages, PointResultMapsExitStatusAndTimeout) {
  const auto ctx = plan_sweep(options({"threads=1"}));
  const auto env = Environment::current();
  const auto setup = check_setup(ctx, env);
  std::vector<std::string> log;
  auto failed = point_result(ctx.plan.points[0], setup.commands[0], ctx.opts, env, exited(3), log);
  EXPECT_EQ(failed.status, rtrace::store::PointStatus::Failed);
  EXPECT_EQ(failed.status_text, "failed (exit 3)");
  EXPECT_EQ(failed.row.exit_code, 3);
  EXPECT_DOUBLE_EQ(failed.row.wall_s, 1.5);
  EXPECT_FALSE(failed.interrupted);

  auto t = exited(0);
  t.kind = ExitKind::TimedOut;
  t.signal = SIGKILL;
  log.clear();
  auto timed_out = point_result(ctx.plan.points[0], setup.commands[0], ctx.opts, env, t, log);
  EXPECT_EQ(timed_out.status, rtrace::store::PointStatus::Timeout);
  EXPECT_EQ(timed_out.row.exit_code, -1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("timed out"), std::string::npos);

  auto i = exited(0);
  i.kind = ExitKind::Interrupted;
  EXPECT_TRUE(point_result(ctx.plan.points[0], setup.commands[0], ctx.opts, env, i, log).interrupted);
}

TEST(LauncherSweepStages, CeilingsStageWithErtNoneMeasuresNothing) {
  const auto ctx = plan_sweep(options({"threads=1"}));
  const auto env = Environment::current();
  CeilingProvider provider(ctx.opts, env, false);
  Progress progress(Progress::Mode::Quiet, 1, 0);
  std::vector<std::string> log;
  const auto c = ceilings_for_point(provider, Partition{}, progress, 1, "threads=1", log);
  ASSERT_NE(c.ceilings, nullptr);
  EXPECT_FALSE(c.interrupted);
  EXPECT_TRUE(c.ceilings->rows.empty());
  EXPECT_TRUE(c.ceilings->error.empty());
  EXPECT_TRUE(log.empty());
}

TEST(LauncherSweepStages, CommitMarksThePointCompleteWithItsRankAndLog) {
  TempDir dir;
  const auto ctx = plan_sweep(options({"threads=1..2"}, dir.file("run.h5")));
  const auto env = Environment::current();
  const auto setup = check_setup(ctx, env);
  auto rf = open_run_file(ctx, setup, env, {"rtrace", "run"});
  ASSERT_EQ(rf.points().size(), 2u);
  EXPECT_FALSE(rf.points()[0].complete);
  EXPECT_THROW(open_run_file(ctx, setup, env, {"rtrace"}), UsageError);  // never clobbers

  std::vector<std::string> log{"info: from the test"};
  const auto result = point_result(ctx.plan.points[0], setup.commands[0], ctx.opts, env, exited(0), log);
  const PartitionCeilings none;
  commit_point(rf, PointCommit{setup.commands[0], none, result, "", "none"}, log);
  EXPECT_TRUE(rf.points()[0].complete);
  EXPECT_FALSE(rf.points()[1].complete);

  auto f = rtrace::store::File::open(dir.file("run.h5"));
  const auto g = f.root().open_group("points").open_group("p000000");
  EXPECT_EQ(g.attr_strings("log"), (std::vector<std::string>{"info: from the test"}));
  EXPECT_FALSE(g.exists("ceilings"));
  const auto rank = rtrace::store::read_rank(g.open_group("ranks").open_group("r000000"));
  EXPECT_EQ(rank.info.pid, 4242);

  SweepOutcome outcome;
  EXPECT_EQ(summarize(ctx, rf, outcome), kExitSomeFailed);  // one point not run
  outcome.interrupted = SIGINT;
  EXPECT_EQ(summarize(ctx, rf, outcome), 128 + SIGINT);
}

TEST(LauncherSweepStages, RooflineCountsNeedFlopsBytesCountersOrKernelMetrics) {
  rtrace::store::RankRecords rank;
  EXPECT_FALSE(roofline_counts(rank).any);
  rtrace::store::RegionRow region{};
  region.time_s = 1;
  region.flops_fp64 = region.flops_fp32 = region.flops_fp16 = std::nan("");
  region.bytes_l1 = region.bytes_l2 = region.bytes_l3 = region.bytes_dram = std::nan("");
  region.hw_instructions = 1e9;  // instructions alone place nothing on a FLOP roofline
  region.hw_cycles = 1e9;
  region.hw_fp64_ops = region.hw_fp32_ops = std::nan("");
  rank.regions.push_back(region);
  EXPECT_FALSE(roofline_counts(rank).any);
  rank.regions[0].hw_fp64_ops = 5e6;
  EXPECT_EQ(roofline_counts(rank).what, "hardware counters");
  rank.regions[0].bytes_dram = 8e6;
  EXPECT_EQ(roofline_counts(rank).what, "annotated regions with FLOPs or bytes");

  rtrace::store::RankRecords gpu;
  rtrace::store::KernelRow k{};
  k.has_metrics = 0;
  k.flops_fp64 = 1e9;  // a trace row: no metrics
  gpu.kernels.push_back(k);
  EXPECT_FALSE(roofline_counts(gpu).any);
  gpu.kernels[0].has_metrics = 1;
  EXPECT_EQ(roofline_counts(gpu).what, "GPU kernel metrics");
}

TEST(LauncherSweepStages, CeilingsStageSkipsPointsWithoutCountsAndSaysSoOnce) {
  auto o = options({"threads=1"});
  o.ert = ErtMode::Auto;
  o.quiet = false;
  const auto env = Environment::current();
  CeilingsStage stage(o, env, nullptr);
  Progress progress(Progress::Mode::Quiet, 2, 0);
  std::vector<std::string> log;
  EXPECT_FALSE(stage.wanted(RooflineCounts{}));
  EXPECT_TRUE(stage.wanted(RooflineCounts{true, "GPU kernel metrics"}));
  const auto c = stage.for_point(Partition{}, RooflineCounts{}, progress, 1, "threads=1", log);
  ASSERT_NE(c.ceilings, nullptr);
  EXPECT_TRUE(c.ceilings->rows.empty());
  EXPECT_TRUE(c.ceilings->error.empty());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("no ceilings measured"), std::string::npos);

  o.ert = ErtMode::None;
  CeilingsStage none(o, env, nullptr);
  EXPECT_FALSE(none.wanted(RooflineCounts{true, "hardware counters"}));
}

TEST(LauncherSweepStages, LargerPartitionBelowASmallerOneIsMarkedUnreliable) {
  Partition t1, t2, r2;
  t2.threads = 2;
  r2.ranks = 2;
  EXPECT_TRUE(smaller_partition_of_same_kind(t1, t2));
  EXPECT_TRUE(smaller_partition_of_same_kind(t1, r2));
  EXPECT_FALSE(smaller_partition_of_same_kind(t2, r2));  // neither is a subset
  EXPECT_FALSE(smaller_partition_of_same_kind(t2, t1));

  rtrace::store::CeilingRow small{};
  rtrace::store::set_str(small.name, "FP64 FMA");
  rtrace::store::set_str(small.kind, "compute");
  rtrace::store::set_str(small.unit, "GFLOP/s");
  small.value = 50;
  small.min = 48;
  small.max = 52;
  rtrace::store::CeilingRow large = small;
  large.value = 40;  // 20% below, repeats apart: beyond noise
  large.min = 39;
  large.max = 41;
  std::vector<rtrace::store::CeilingRow> rows{large};
  auto reasons = compare_with_smaller_partition(rows, {small}, "t1", 2.0);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("below 50.0 on the smaller partition t1"), std::string::npos) << reasons[0];
  mark_unreliable(rows, reasons);
  EXPECT_EQ(rows[0].unreliable, 1);
  EXPECT_EQ(unreliable_names(rows), (std::vector<std::string>{"FP64 FMA"}));
  EXPECT_EQ(unreliable_summary(rows), reasons[0]);
  auto twice = rows;
  twice.push_back(rows[0]);  // the same reason on two ceilings (a busy machine) is said once
  rtrace::store::set_str(twice[1].name, "FP32 FMA");
  EXPECT_EQ(unreliable_summary(twice), reasons[0]);

  rows[0] = large;
  rows[0].max = 49;  // repeats spread that far: noise
  EXPECT_TRUE(compare_with_smaller_partition(rows, {small}, "t1", 2.0).empty());
  rows[0].max = 41;
  rows[0].value = 47;  // within the tolerance
  EXPECT_TRUE(compare_with_smaller_partition(rows, {small}, "t1", 2.0).empty());
}

// Issue 23: twice the workers do at most twice the work. A ceiling above
// that counted FLOPs or bytes that did not happen (or the smaller partition
// was disturbed); either way the pair is not a roofline to trust.
TEST(LauncherSweepStages, LargerPartitionAboveItsWorkersTimesASmallerOneIsMarkedUnreliable) {
  Partition t1, t2, r2t2;
  t2.threads = 2;
  r2t2.ranks = 2;
  r2t2.threads = 2;
  EXPECT_EQ(partition_workers(t1), 1);
  EXPECT_EQ(partition_workers(r2t2), 4);
  rtrace::store::CeilingRow small{};
  rtrace::store::set_str(small.name, "L1d");
  rtrace::store::set_str(small.kind, "bandwidth");
  rtrace::store::set_str(small.unit, "GB/s");
  small.value = 128.8;
  small.min = 128.6;
  small.max = 131.3;
  rtrace::store::CeilingRow large = small;
  large.value = 400;
  large.min = 398;
  large.max = 401;
  std::vector<rtrace::store::CeilingRow> rows{large};
  auto reasons = compare_with_smaller_partition(rows, {small}, "t1", 2.0);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0], "L1d 400.0 GB/s above 2.0 x 128.8 on the smaller partition t1");
  // Four workers may do that.
  EXPECT_TRUE(compare_with_smaller_partition(rows, {small}, "t1", 4.0).empty());
  // This VM at 2 threads: 2.01x one thread's L1, within the repeats' noise.
  rows[0].value = 259.3;
  rows[0].min = 256.1;
  rows[0].max = 261.5;
  EXPECT_TRUE(compare_with_smaller_partition(rows, {small}, "t1", 2.0).empty());
  // An unreliable smaller ceiling bounds nothing.
  small.unreliable = 1;
  rows[0].value = 400;
  EXPECT_TRUE(compare_with_smaller_partition(rows, {small}, "t1", 2.0).empty());
}
