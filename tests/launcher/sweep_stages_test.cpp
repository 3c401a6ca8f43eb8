// The sweep's stages one by one (launcher/include/rtrace/launcher/sweep_stages.hpp).
#include "rtrace/launcher/sweep_runner.hpp"
#include "rtrace/launcher/sweep_stages.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

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
