// The exit path's watchdog (tracer/src/exit_watchdog.hpp): quiet when the
// path finishes in time, takes over once when it does not, and tells the
// step the path was stuck in. Runs under TSan too (scripts/sanitize.sh).
#include <gtest/gtest.h>

#include "exit_watchdog.hpp"

#include <atomic>
#include <chrono>
#include <thread>

using namespace rtrace::tracer;

namespace {

struct Seen {
  std::atomic<int> calls{0};
  std::atomic<int> step{-1};
};

void record_expiry(ExitStep stuck, void* arg) {
  auto* seen = static_cast<Seen*>(arg);
  seen->step.store(static_cast<int>(stuck));
  seen->calls.fetch_add(1);
}

}  // namespace

TEST(ExitWatchdog, APathThatFinishesInTimeIsNeverTakenOver) {
  Seen seen;
  const auto t0 = std::chrono::steady_clock::now();
  {
    ExitWatchdog watchdog(30, record_expiry, &seen);
    ASSERT_TRUE(watchdog.started());
    EXPECT_TRUE(watchdog.enter(ExitStep::Gpu));
    EXPECT_TRUE(watchdog.enter(ExitStep::Records));
    EXPECT_TRUE(watchdog.enter(ExitStep::Write));
  }  // done: the thread ends at once, not after the bound
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
  EXPECT_EQ(seen.calls.load(), 0);
}

TEST(ExitWatchdog, AStuckPathIsTakenOverOnceWithItsStep) {
  Seen seen;
  {
    ExitWatchdog watchdog(0.1, record_expiry, &seen);
    ASSERT_TRUE(watchdog.enter(ExitStep::Records));
    for (int i = 0; i < 500 && seen.calls.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(seen.calls.load(), 1);
    EXPECT_EQ(seen.step.load(), static_cast<int>(ExitStep::Records));
    // The path came back too late: it must not go on to write.
    EXPECT_FALSE(watchdog.enter(ExitStep::Write));
  }
  EXPECT_EQ(seen.calls.load(), 1);
}

TEST(ExitWatchdog, StepsAreNamedForTheLog) {
  EXPECT_STREQ(to_string(ExitStep::Records), "building the records and symbolising the samples");
  EXPECT_STREQ(to_string(ExitStep::Write), "writing the rank file");
}
