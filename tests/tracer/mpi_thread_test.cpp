// The per-thread MPI table (tracer/src/mpi_thread.hpp) against scripted
// clocks: a polling loop is MPI time as a whole, its preemptions included,
// the app's work between loops never; counts stay exact on every path.
#include <gtest/gtest.h>

#include "mpi_thread.hpp"

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "names.hpp"

namespace rtrace::tracer {
namespace {

// The thread's clocks as the test scripts them.
std::int64_t g_wall = 0, g_cpu = 0, g_voluntary = 0, g_handler = 0;
std::int64_t wall() { return g_wall; }
ThreadTimes thread_times() { return ThreadTimes{g_cpu, g_voluntary}; }
std::int64_t handler() { return g_handler; }

class MpiThreadTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_wall = 1'000'000'000;
    g_cpu = 5'000'000;
    g_voluntary = 3;
    g_handler = 0;
    MpiThreadTable::set_clocks(&wall, &thread_times, &handler);
  }
  void TearDown() override { MpiThreadTable::set_clocks(nullptr, nullptr, nullptr); }

  // One call as the wrapper makes it: `ns` inside the library (running), then
  // `gap_ns` of the app's loop around it.
  void call(MpiFn fn, std::int64_t ns, bool done = false, std::int64_t gap_ns = 5) {
    if (!table.begin(fn)) {
      const std::int64_t start = g_wall;
      run(ns);
      table.end_timed(fn, start, g_wall, 0, 0);
    } else {
      run(ns);
    }
    if (done) table.poll_completed();
    run(gap_ns);
  }
  void polls(int n, std::int64_t ns = 95, MpiFn fn = MpiFn::Test) {
    for (int i = 0; i < n; ++i) call(fn, ns);
  }
  // A poll as the C wrapper makes it: the fast path (count_poll, then a jump
  // to PMPI_*) when the table allows it, else the full path. Returns whether
  // it took the fast path.
  bool wrapper_poll(std::int64_t ns, std::int64_t gap_ns, bool done = false) {
    if (!table.count_poll(MpiFn::Test)) {
      call(MpiFn::Test, ns, done, gap_ns);
      return false;
    }
    run(ns + gap_ns);
    return true;
  }
  static void run(std::int64_t ns) {
    g_wall += ns;
    g_cpu += ns;
  }
  static void preempted(std::int64_t ns) { g_wall += ns; }  // runnable, not running
  static void blocked(std::int64_t ns) {
    g_wall += ns;
    ++g_voluntary;
  }
  double seconds(MpiFn fn) const { return static_cast<double>(table.counts(fn).time_ns.get()) * 1e-9; }
  std::int64_t calls(MpiFn fn) const { return table.calls(fn); }

  MpiThreadTable table;
};

TEST_F(MpiThreadTableTest, TightPollingLoopIsMpiTimeAsAWholeWithoutAClockPerCall) {
  const std::int64_t t0 = g_wall;
  polls(100'000);  // 100 ns a poll and its branch back
  call(MpiFn::Test, 95, /*done=*/true);
  const double loop_s = static_cast<double>(g_wall - t0) * 1e-9;
  table.close_run(g_wall);
  EXPECT_EQ(calls(MpiFn::Test), 100'001);
  EXPECT_NEAR(seconds(MpiFn::Test), loop_s, 0.001 * loop_s);
  // Timed one by one only until the run starts; then one poll per interval
  // of up to 256 (its own time: does the loop work between its polls?).
  EXPECT_LE(table.timed_calls(), MpiThreadTable::kRunAfter + 1 + table.intervals());
  EXPECT_LT(table.intervals(), 100'001 / 200);
  EXPECT_GT(table.counts(MpiFn::Test).run_calls.get(), 99'000);
  EXPECT_EQ(table.counts(MpiFn::Test).estimated_calls.get(), 0);
  EXPECT_EQ(table.work_intervals(), 0);
}

TEST_F(MpiThreadTableTest, APreemptionInsideThePollingLoopIsMpiTime) {
  const std::int64_t t0 = g_wall;
  polls(20'000);
  preempted(30'000'000);  // 30 ms on the run queue, mid-loop
  polls(20'000);
  call(MpiFn::Test, 95, true);
  const double loop_s = static_cast<double>(g_wall - t0) * 1e-9;
  table.close_run(g_wall);
  EXPECT_NEAR(seconds(MpiFn::Test), loop_s, 0.001 * loop_s);
  EXPECT_EQ(table.preempted_intervals(), 1);
  EXPECT_EQ(table.work_intervals(), 0);
}

TEST_F(MpiThreadTableTest, WorkBetweenPollingLoopsIsNotMpiTime) {
  double loops_s = 0;
  for (int loop = 0; loop < 5; ++loop) {
    const std::int64_t t0 = g_wall;
    polls(3'000 + 37 * loop);
    call(MpiFn::Test, 95, true);
    loops_s += static_cast<double>(g_wall - t0) * 1e-9;
    run(2'000'000);  // 2 ms of the app's own work
    call(MpiFn::Irecv, 400);  // posts the next receive
  }
  table.close_run(g_wall);
  EXPECT_EQ(calls(MpiFn::Test), 5 * 3'001 + 37 * 10);
  EXPECT_NEAR(seconds(MpiFn::Test), loops_s, 0.02 * loops_s);
}

TEST_F(MpiThreadTableTest, WorkAndBlockingInsideALoopWithoutCompletionAreNotMpiTime) {
  polls(5'000);
  run(3'000'000);  // the app computes between two polls that found nothing
  polls(5'000);
  blocked(3'000'000);  // or sleeps: no CPU time, a voluntary switch
  polls(5'000);
  table.close_run(g_wall);
  EXPECT_EQ(calls(MpiFn::Test), 15'000);
  EXPECT_NEAR(seconds(MpiFn::Test), 15'000 * 100e-9, 0.05 * 15'000 * 100e-9);
  EXPECT_EQ(table.work_intervals(), 2);
}

// The C wrappers' fast path cannot see the flag a poll returns. A loop that
// calls other MPI every so often (HPCC's RandomAccess: an update and a test
// an iteration, an MPI_Irecv after each batch received) keeps it; a loop of
// kLoopEndPolls polls and nothing else is a wait, watched for the poll that
// ends it.
TEST_F(MpiThreadTableTest, AWorkingLoopKeepsTheFastPathAWaitingLoopIsWatchedForItsEnd) {
  int fast = 0;
  for (int i = 0; i < 20'000; ++i) {
    fast += wrapper_poll(30, 120, i % 1000 == 999);  // an update between polls
    if (i % 1000 == 999) call(MpiFn::Irecv, 400);
  }
  EXPECT_GT(fast, 19'500);
  table.close_run(g_wall);
  // The app's update between polls is not MPI time: the polls' own 30 ns and
  // the loop's branch are.
  const double working_s = seconds(MpiFn::Test);
  EXPECT_NEAR(working_s, 20'000 * 40e-9, 0.05 * 20'000 * 40e-9);
  fast = 0;
  const std::int64_t t0 = g_wall;
  for (int i = 0; i < 20'000; ++i) fast += wrapper_poll(95, 5, i == 19'999);  // nothing between polls
  const double wait_s = static_cast<double>(g_wall - t0) * 1e-9;
  run(3'000'000);  // the app's work after the wait: not the poll's
  table.close_run(g_wall);
  // Past kLoopEndPolls one poll in kWaitWatchEvery enters the table.
  const int watched = (20'000 - MpiThreadTable::kLoopEndPolls) / MpiThreadTable::kWaitWatchEvery;
  EXPECT_LT(fast, 20'000 - watched + 100);
  EXPECT_GT(fast, 20'000 - watched - 300);
  EXPECT_EQ(calls(MpiFn::Test), 40'000);
  EXPECT_NEAR(seconds(MpiFn::Test), working_s + wait_s, 0.02 * wait_s);
}

// Past kLoopEndPolls a wait's completing poll is seen only where it is one
// of the watched polls; where the fast path hides it, the interval left open
// over the app's work after the wait is found at its close (the thread's CPU
// time used) and its polls booked at the run's mean cycle. Every alignment
// of the completing poll against the watch books the wait, not the work.
TEST_F(MpiThreadTableTest, AWaitIsBookedRightWhetherItsCompletionIsWatchedOrHidden) {
  for (int extra = 0; extra < MpiThreadTable::kWaitWatchEvery; ++extra) {
    table.reset();
    const int n = 10'000 + extra;
    const std::int64_t t0 = g_wall;
    for (int i = 0; i < n; ++i) wrapper_poll(95, 5, i == n - 1);
    const double wait_s = static_cast<double>(g_wall - t0) * 1e-9;
    run(3'000'000);  // the app's work after the wait
    call(MpiFn::Irecv, 400);  // its next MPI call
    table.close_run(g_wall);
    EXPECT_EQ(calls(MpiFn::Test), n);
    EXPECT_NEAR(seconds(MpiFn::Test), wait_s, 0.02 * wait_s) << n << " polls";
  }
}

// What the fast path costs an app that updates memory between its polls is
// the stores it queues (tracer/src/mpi_thread.hpp count_poll): one word of
// the table changes per fast poll, never a count, a countdown and the loop's
// length each.
TEST_F(MpiThreadTableTest, AFastPollWritesOneWordOfTheTable) {
  polls(100);  // a run is open: the next polls take the fast path
  ASSERT_TRUE(table.run_open());
  static_assert(sizeof(MpiThreadTable) % sizeof(std::uint32_t) == 0);
  constexpr std::size_t kWords = sizeof(MpiThreadTable) / sizeof(std::uint32_t);
  std::vector<std::uint32_t> before(kWords), after(kWords);
  int fast = 0;
  for (int i = 0; i < 50; ++i) {
    std::memcpy(before.data(), static_cast<const void*>(&table), sizeof table);
    if (!table.count_poll(MpiFn::Test)) {
      call(MpiFn::Test, 95);
      continue;
    }
    ++fast;
    std::memcpy(after.data(), static_cast<const void*>(&table), sizeof table);
    int changed = 0;
    for (std::size_t w = 0; w < kWords; ++w) changed += before[w] != after[w];
    EXPECT_EQ(changed, 1) << "fast poll " << i;
  }
  EXPECT_GT(fast, 40);
  EXPECT_EQ(calls(MpiFn::Test), 150);  // the unsettled fast polls included
  table.close_run(g_wall);
  EXPECT_EQ(table.counts(MpiFn::Test).calls.get(), 150);  // settled
}

// A loop that alternates two poll functions (a Test of its receive and an
// Iprobe for anything else) stays on the fast path with both, counts exact.
TEST_F(MpiThreadTableTest, AlternatingPollFunctionsBothStayOnTheFastPath) {
  const std::int64_t t0 = g_wall;
  int fast = 0, n = 0;
  for (int i = 0; i < 20'000; ++i) {
    const MpiFn fn = i % 2 ? MpiFn::Iprobe : MpiFn::Test;
    ++n;
    if (table.count_poll(fn)) {
      ++fast;
      run(100);
    } else {
      call(fn, 95);
    }
    if (i % 1000 == 999) call(MpiFn::Irecv, 400);  // a loop that works, not a wait
  }
  call(MpiFn::Test, 95, /*done=*/true);
  const double loop_s = static_cast<double>(g_wall - t0) * 1e-9;
  table.close_run(g_wall);
  EXPECT_GT(fast, 19'000);
  EXPECT_EQ(calls(MpiFn::Test) + calls(MpiFn::Iprobe), n + 1);
  EXPECT_EQ(calls(MpiFn::Test), 10'001);
  EXPECT_NEAR(seconds(MpiFn::Test) + seconds(MpiFn::Iprobe) + seconds(MpiFn::Irecv), loop_s, 0.01 * loop_s);
}

TEST_F(MpiThreadTableTest, PollsBetweenComputeChunksAreTimedOneByOne) {
  // HPL tests for its panel between update chunks: no run starts.
  for (int chunk = 0; chunk < 200; ++chunk) {
    run(500'000);
    call(MpiFn::Iprobe, 2'000);
  }
  EXPECT_EQ(table.timed_calls(), 200);
  EXPECT_FALSE(table.run_open());
  EXPECT_NEAR(seconds(MpiFn::Iprobe), 200 * 2'000e-9, 1e-12);
}

TEST_F(MpiThreadTableTest, ShortCallsInsideARunKeepItTheirTimeTheirOwn) {
  polls(1'000);
  for (int i = 0; i < 50; ++i) {
    polls(300);
    call(MpiFn::Irecv, 1'000);  // a loop that posts receives as it polls
  }
  table.close_run(g_wall);
  EXPECT_NEAR(seconds(MpiFn::Irecv), 50 * 1'000e-9, 1e-12);
  EXPECT_NEAR(seconds(MpiFn::Test), 16'000 * 100e-9 + 50 * 5e-9, 0.01 * 16'000 * 100e-9);
  EXPECT_EQ(table.work_intervals(), 0);
}

TEST_F(MpiThreadTableTest, ASampleInsideAnIntervalIsNotTakenForWork) {
  polls(2'000);
  g_handler += 40'000;  // the sampler's handler ran 40 us on this thread
  run(120'000);         // with its signal's cost around it
  polls(2'000);
  table.close_run(g_wall);
  EXPECT_EQ(table.work_intervals(), 0);
}

TEST_F(MpiThreadTableTest, AHighRateCallIsSubsampledWithExactCounts) {
  // 40 ms of MPI_Isend at 1 us each plus 1 us of packing: 500 k calls/s.
  for (int i = 0; i < 20'000; ++i) {
    call(MpiFn::Isend, 1'000, false, 1'000);
    table.add_bytes(MpiFn::Isend, 8, 0);
  }
  EXPECT_EQ(calls(MpiFn::Isend), 20'000);
  EXPECT_EQ(table.counts(MpiFn::Isend).sent.get(), 8 * 20'000);
  EXPECT_LT(table.timed_calls(), 20'000 / 3);  // the first 10 ms window, then about 1 in 16
  EXPECT_GT(table.counts(MpiFn::Isend).estimated_calls.get(), 20'000 / 2);
  EXPECT_NEAR(seconds(MpiFn::Isend), 20'000 * 1e-6, 0.01 * 20'000 * 1e-6);
}

TEST_F(MpiThreadTableTest, AModerateRateCallStaysTimedPerCall) {
  for (int i = 0; i < 2'000; ++i) call(MpiFn::Allreduce, 20'000, false, 80'000);  // 10 k calls/s
  EXPECT_EQ(table.timed_calls(), 2'000);
  EXPECT_EQ(table.counts(MpiFn::Allreduce).estimated_calls.get(), 0);
}

TEST_F(MpiThreadTableTest, ResetForgetsEverything) {
  polls(3'000);
  table.reset();
  EXPECT_EQ(calls(MpiFn::Test), 0);
  EXPECT_EQ(table.counts(MpiFn::Test).time_ns.get(), 0);
  EXPECT_FALSE(table.run_open());
  polls(5);  // timed one by one again: no run before kRunAfter short gaps
  EXPECT_EQ(table.timed_calls(), 5);
}

// MPI_THREAD_MULTIPLE: every thread books in a table of its own; the rank's
// rows are their sum, exact, also for tables a finished thread gave back and
// the next thread took over.
TEST(MpiStatsThreads, TablesOfManyThreadsSumToTheRanksRows) {
  MpiStats stats;
  auto work = [&stats](int calls) {
    MpiThreadTable* t = stats.attach();
    ASSERT_NE(t, nullptr);
    for (int i = 0; i < calls; ++i) {
      if (!t->begin(MpiFn::Iprobe)) t->end_timed(MpiFn::Iprobe, 1'000 + 100 * i, 1'050 + 100 * i, 0, 0);
      if (!t->begin(MpiFn::Isend)) t->end_timed(MpiFn::Isend, 5'000, 5'400, 16, 0);
      else t->add_bytes(MpiFn::Isend, 16, 0);
    }
    t->close_run(1'000'000'000);
    stats.release(t);
  };
  for (int round = 0; round < 2; ++round) {
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k) threads.emplace_back(work, 10'000 + k);
    for (auto& th : threads) th.join();
  }
  NameTable names;
  const auto rows = stats.rows(names);
  const auto names_list = names.take();
  std::int64_t probes = -1, sends = -1, sent = -1;
  for (const auto& r : rows) {
    const std::string& n = names_list.at(static_cast<std::size_t>(r.name_id));
    if (n == "MPI_Iprobe") probes = r.calls;
    if (n == "MPI_Isend") {
      sends = r.calls;
      sent = r.bytes_sent;
    }
  }
  const std::int64_t calls = 2 * (4 * 10'000 + 0 + 1 + 2 + 3);
  EXPECT_EQ(probes, calls);
  EXPECT_EQ(sends, calls);
  EXPECT_EQ(sent, 16 * calls);
}

}  // namespace
}  // namespace rtrace::tracer
