// Fork safety of the tracer (issue 45), in real processes: an OpenMP app
// sampled at 1 kHz that forks children (which fork again), or runs system()
// and popen() from several threads at once, must never hang, and every
// process that exits through exit() leaves its own whole rank file. Each run
// has its own bound; a hung run shows every thread's stack of its tree.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "rtrace/store/run_file.hpp"
#include "traced_app.hpp"

namespace fs = std::filesystem;

namespace {

using rtrace::test::run;

class TracerFork : public rtrace::test::TraceDirTest {
 protected:
  TracerFork() : TraceDirTest("rtrace-fork-it-") {}
  std::map<std::string, std::string> env(const std::string& threads) const {
    return {{"LD_PRELOAD", TRACER_LIB}, {"RTRACE_TRACE_DIR", dir_.string()}, {"RTRACE_LOG", "error"},
            {"OMP_NUM_THREADS", threads}, {"RTRACE_SAMPLE_HZ", "1000"}};
  }
  // Every rank file complete, with the app's exit status 0.
  void expect_all_complete(std::size_t at_least) const {
    const auto ranks = read_ranks();
    EXPECT_GE(ranks.size(), at_least);
    for (const auto& r : ranks) {
      EXPECT_EQ(r.rec.info.complete, 1) << r.file;
      EXPECT_EQ(r.rec.info.exit_status, 0) << r.file;
    }
  }
};

}  // namespace

// Thread 0 of a busy parallel region forks 100 children, each of which
// forks a grandchild: 200 forked processes that symbolise their samples and
// write their files in exit(). Before the fix a child inherited the loader's
// lock held by a sampled OpenMP worker of the parent and waited for it forever
// in its exit path (libdw dlopening libdebuginfod).
TEST_F(TracerFork, ForkedChildrenOfABusySampledAppNeverHang) {
  const int rounds = 100;
  // 11-13 s in the regular build, 185 s under ASan beside other tests.
  const int status = run({FORK_STRESS_APP, "fork", std::to_string(rounds)}, env("2"), 500);
  ASSERT_TRUE(WIFEXITED(status)) << "the app hung (killed after 500 s) or died";
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // The parent, each child and each grandchild: its own file.
  EXPECT_EQ(files().size(), static_cast<std::size_t>(1 + 2 * rounds));
  expect_all_complete(1 + 2 * rounds);
}

// 4 threads, each running 25 helpers (this app again, traced too) through
// system() or popen(): 100 traced helpers exiting while the app works on.
TEST_F(TracerFork, SystemFromSeveralThreadsAtOnceNeverHangs) {
  const int status = run({FORK_STRESS_APP, "system", "25"}, env("4"), 200);
  ASSERT_TRUE(WIFEXITED(status)) << "the app hung (killed after 200 s) or died";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  expect_all_complete(1 + 100);
}

TEST_F(TracerFork, PopenFromSeveralThreadsAtOnceNeverHangs) {
  const int status = run({FORK_STRESS_APP, "popen", "25"}, env("4"), 200);
  ASSERT_TRUE(WIFEXITED(status)) << "the app hung (killed after 200 s) or died";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  expect_all_complete(1 + 100);
}

// ---------------------------------------------------------------- the exit bound

class TracerExitBound : public rtrace::test::TraceDirTest {
 protected:
  TracerExitBound() : TraceDirTest("rtrace-exit-bound-it-") {}
  // The sampled app in mode `status` (exit status 3), its exit path stalled
  // forever at `step`, bounded at 2 s. Returns the wait status; `seconds` the run's time.
  int run_stalled(const std::string& step, double* seconds) const {
    const auto t0 = std::chrono::steady_clock::now();
    const int status = run({SAMPLED_OMP_APP, "status", "5", "4"},
                           {{"LD_PRELOAD", TRACER_LIB}, {"RTRACE_TRACE_DIR", dir_.string()}, {"RTRACE_LOG", "error"},
                            {"OMP_NUM_THREADS", "2"}, {"RTRACE_SAMPLE_HZ", "1000"}, {"RTRACE_EXIT_TIMEOUT", "2"},
                            {"RTRACE_TEST_EXIT_STALL", step}},
                           120);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return status;
  }
};

// A deadlock while symbolising: the watchdog writes the records it can (no
// call paths, said so in the log), and the app ends with its own status.
TEST_F(TracerExitBound, AStuckSymbolisationEndsAtTheBoundWithTheAppsStatus) {
  double seconds = 0;
  const int status = run_stalled("records", &seconds);
  ASSERT_TRUE(WIFEXITED(status)) << "killed after 120 s: the exit path was not bounded";
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_LT(seconds, 60);
  const auto ranks = read_ranks();
  ASSERT_EQ(ranks.size(), 1u);
  const auto& r = ranks[0];
  EXPECT_EQ(r.rec.info.exit_status, 3);
  EXPECT_GE(r.rec.info.tracer_errors, 1);
  EXPECT_TRUE(r.log_has("the exit path did not finish within RTRACE_EXIT_TIMEOUT=2 s (stuck building the records"));
  ASSERT_EQ(r.rec.sampling.size(), 1u);
  EXPECT_GT(r.rec.sampling[0].samples, 0);
  EXPECT_TRUE(r.rec.callpaths.empty());
}

TEST_F(TracerExitBound, AStuckGpuFlushEndsAtTheBoundWithTheRecords) {
  double seconds = 0;
  const int status = run_stalled("gpu", &seconds);
  ASSERT_TRUE(WIFEXITED(status)) << "killed after 120 s: the exit path was not bounded";
  EXPECT_EQ(WEXITSTATUS(status), 3);
  const auto ranks = read_ranks();
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_TRUE(ranks[0].log_has("(stuck flushing the GPU records)"));
}

// A write that never ends cannot be helped by a second write: no file (never
// a half-written one), a line on stderr, and the app's status.
TEST_F(TracerExitBound, AStuckWriteEndsAtTheBoundWithoutAFile) {
  double seconds = 0;
  const int status = run_stalled("write", &seconds);
  ASSERT_TRUE(WIFEXITED(status)) << "killed after 120 s: the exit path was not bounded";
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_TRUE(files().empty());
}
