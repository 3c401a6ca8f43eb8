// Statistical call-stack sampling of every thread of the process.
//
// Each sampled thread has a POSIX timer on its own CPU-time clock
// (CLOCK_THREAD_CPUTIME_ID) that sends a real-time signal to that thread
// (SIGEV_THREAD_ID). The handler unwinds with libunwind and counts the stack
// in the thread's preallocated, lock-free table: no malloc and no waiting for
// a lock. The one call not on POSIX's async-signal-safe list is the trylock of
// the loader's lock, where loader_lock.hpp says why it is safe there.
// Aggregation and symbolisation happen later, outside the handler (collect(),
// then profile.cpp). See docs/tracer.md.
#pragma once

#include "rtrace/store/records.hpp"

#include <signal.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rtrace::tracer {

inline constexpr double kDefaultSampleHz = 250;  // the launcher's --sample default
inline constexpr int kMaxSampleDepth = 64;

// One distinct stack of one thread, innermost frame first.
struct SampledStack {
  std::vector<std::uintptr_t> pcs;
  std::int64_t count = 0;
};
struct ThreadSamples {
  int thread = 0;  // 0 = first sampled thread (main), then creation order
  std::vector<SampledStack> stacks;
};

class Sampler {
 public:
  using Log = std::function<void(const std::string&)>;

  // Picks a free real-time signal, installs the handler and arms the calling
  // thread. False (with the reason in `why`) when sampling cannot run; the app
  // is untouched then. hz <= 0 means off.
  static bool start(double hz, std::string* why) noexcept;
  static bool running() noexcept;

  // Called on a new thread before its start routine, and when it ends.
  static void thread_begin() noexcept;
  static void thread_end() noexcept;
  // Around exec: a pending sample signal would kill the new program (its
  // disposition is reset to default), so the caller's timer is disarmed first.
  static void before_exec() noexcept;
  static void after_failed_exec() noexcept;
  // The app installs its own handler for our signal: stop sampling for good.
  // Returns true when `sig` is the sampler's signal.
  static bool is_sample_signal(int sig) noexcept;
  static void back_off(const std::string& why) noexcept;

  // Stops every timer; samples taken so far stay readable.
  static void stop() noexcept;
  // The samples so far (safe while other threads still sample).
  static std::vector<ThreadSamples> collect();
  static store::SamplingRow info() noexcept;
  // Time spent inside the signal handler over all threads (unwinding and
  // recording; the kernel's signal delivery is not in it).
  static double handler_seconds() noexcept;
  // The calling thread's CPU time in the handler so far (ns; 0 when it is not sampled).
  static std::int64_t thread_handler_ns() noexcept;
  // Lines for the rank's log (back-off, table full, ...), taken once.
  static std::vector<std::string> take_notes();

  // For tests: the real sigaction, bypassing the interposed one.
  static int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) noexcept;
};

}  // namespace rtrace::tracer
