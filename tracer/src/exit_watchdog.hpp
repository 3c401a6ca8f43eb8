// A bound on the traced process's exit path.
//
// The exit path (GPU flush, the rank's records with the symbolised samples,
// the file write) runs inside the app's exit(). Anything in it that waits for
// a lock (a library's, the loader's) would keep a finished job holding its
// allocation forever. The watchdog is a thread that waits for the path to
// finish; past the bound it takes over once: it is told the step the path was
// in (the caller's expiry action writes what can still be written safely and
// ends the process with the app's own status). See docs/tracer.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace rtrace::tracer {

enum class ExitStep : int { Start = 0, Gpu, Records, Write, Done, TakenOver };
const char* to_string(ExitStep step) noexcept;

// Where the exit path must not go on (the watchdog has taken over, or a
// test's RTRACE_TEST_EXIT_STALL): the calling thread waits to be ended.
[[noreturn]] void wait_to_be_ended() noexcept;

class ExitWatchdog {
 public:
  using Expiry = void (*)(ExitStep stuck, void* arg);
  // Starts the watching thread; without a thread (pthread_create failed) the
  // path runs unbounded and started() says so.
  ExitWatchdog(double bound_s, Expiry on_expiry, void* arg) noexcept;
  // Marks the path done and joins the thread (it returns at once then).
  ~ExitWatchdog();
  ExitWatchdog(const ExitWatchdog&) = delete;
  ExitWatchdog& operator=(const ExitWatchdog&) = delete;

  bool started() const noexcept { return thread_.joinable(); }
  // The path moves to `step`. False when the watchdog has taken over: the
  // caller must not touch what the expiry action now uses (it waits to be
  // ended).
  bool enter(ExitStep step) noexcept;

 private:
  void watch() noexcept;
  double bound_s_;
  Expiry on_expiry_;
  void* arg_;
  std::atomic<int> step_{static_cast<int>(ExitStep::Start)};
  std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace rtrace::tracer
