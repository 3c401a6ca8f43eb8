// Annotated regions: per-thread stacks, aggregated only when collected.
//
// The hot path (begin/end) touches thread-local data only: a pointer-keyed
// cache finds the region's entry (the name is re-checked with strcmp, so a
// reused buffer cannot alias another region), the stack gets a frame and the
// entry its time. Each thread's data sits behind an uncontended spin flag so
// the collector can merge it while other threads still run (exit() in a
// thread) and a signal handler can merge it without ever blocking.
#pragma once

#include "counters.hpp"
#include "names.hpp"
#include "rtrace/store/records.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rtrace::tracer {

class RegionRecorder {
 public:
  // `counters` may be null (no hardware counters); it must outlive the recorder.
  explicit RegionRecorder(CounterProvider* counters = nullptr);
  ~RegionRecorder();
  RegionRecorder(const RegionRecorder&) = delete;
  RegionRecorder& operator=(const RegionRecorder&) = delete;

  void begin(const char* name) noexcept;
  void end(const char* name) noexcept;
  void add_flops(const char* name, int precision, double flops) noexcept;
  void add_bytes(const char* name, int level, double bytes) noexcept;

  struct Collected {
    std::vector<store::RegionRow> rows;
    std::vector<std::string> warnings;   // misuse and skipped threads, capped
    std::int64_t errors = 0;             // misuse count (unbalanced ends, bad args)
    std::int64_t open_frames = 0;        // regions still open (not counted)
    std::int64_t skipped_threads = 0;    // busy threads left out (non-blocking collect)
  };
  // Merges every thread's regions by name; name ids come from `names`.
  // `blocking=false` (signal handlers) skips threads whose data is in use.
  Collected collect(NameTable& names, bool blocking = true) const;

  // In a fork child: forget the parent's threads and start from zero.
  void reset_after_fork() noexcept;

  struct ThreadData;

 private:
  ThreadData* this_thread() noexcept;
  ThreadData* register_thread() noexcept;

  CounterProvider* counters_;
  std::uint64_t id_;                      // unique per recorder, validates thread caches
  std::atomic<std::uint64_t> generation_{0};
  mutable std::mutex threads_mutex_;      // guards threads_ (registration and collection only)
  std::vector<std::unique_ptr<ThreadData>> threads_;
  std::vector<std::unique_ptr<ThreadData>> retired_;  // pre-fork data, kept alive, never read
};

}  // namespace rtrace::tracer
