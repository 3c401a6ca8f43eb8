// The MPI accounting of one thread: calls, time and payload per wrapped
// function, written only by the thread that makes the calls (relaxed loads
// and stores, no read-modify-write, no cache line shared with another
// thread), read by the snapshot from any thread (MpiStats sums the tables).
//
// What a wrapped call costs the app (docs/tracer.md "What the MPI wrappers
// cost"):
//   * a call timed on its own: two monotonic clock reads (vDSO);
//   * a poll (Test, Testany, Testsome, Testall, Iprobe, Improbe) inside a
//     polling run: one store (the C wrappers' fast path spends an allowance
//     the table granted its function; the next call that enters the table
//     settles the spent part into the counts), no clock. A run starts after
//     kRunAfter polls in a row with gaps under kPollLoopGapNs; it is timed as
//     intervals of up to kMaxInterval polls, one clock read each. An interval
//     whose time is what its polls take (kIntervalFactor x the run's mean
//     cycle, plus kIntervalSlackNs) is MPI time as a whole, the loop's branch
//     included. A longer one held either app work or a preemption: the
//     thread's CPU time and voluntary context switches (two system calls)
//     tell them apart. A preempted interval is MPI time as a whole (the
//     thread was runnable inside its poll loop); one that held work books
//     each poll at the run's mean cycle (`estimated_calls`) and ends the run;
//   * a function called more than kSubsampleRate times a second on a thread
//     (any but the polls) is timed one call in about kSubsampleEvery; the
//     others book the mean of the timed ones (`estimated_calls`).
// Counts and payload bytes are exact on every path.
#pragma once

#include "mpi_stats.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace rtrace::tracer {

// A counter that one thread writes and any thread reads.
class OwnedCounter {
 public:
  void add(std::int64_t v) noexcept { v_.store(v_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed); }
  std::int64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }
  void reset() noexcept { v_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> v_{0};
};

// The non-blocking completion and probe calls an app polls with.
constexpr bool is_poll(MpiFn fn) noexcept {
  return fn == MpiFn::Test || fn == MpiFn::Testany || fn == MpiFn::Testsome || fn == MpiFn::Testall ||
         fn == MpiFn::Iprobe || fn == MpiFn::Improbe;
}
inline constexpr MpiFn kPollFns[] = {MpiFn::Test,    MpiFn::Testany, MpiFn::Testsome,
                                     MpiFn::Testall, MpiFn::Iprobe,  MpiFn::Improbe};
inline constexpr int kPollFnCount = sizeof kPollFns / sizeof kPollFns[0];
// A poll function's index in kPollFns (-1: not a poll).
constexpr int poll_index(MpiFn fn) noexcept {
  for (int p = 0; p < kPollFnCount; ++p)
    if (kPollFns[p] == fn) return p;
  return -1;
}

// The calling thread's CPU time (its CPU clock) and voluntary context
// switches (getrusage(RUSAGE_THREAD)); -1 each when unreadable.
struct ThreadTimes {
  std::int64_t cpu_ns = -1;
  std::int64_t voluntary_switches = -1;
};
ThreadTimes read_thread_times() noexcept;

struct MpiFnCounts {
  OwnedCounter calls, time_ns, sent, received;
  OwnedCounter run_calls;        // polls whose time came from a polling run's intervals
  OwnedCounter estimated_calls;  // calls whose time is an estimate (a mean), not measured
};

class MpiThreadTable {
 public:
  static constexpr std::int64_t kPollLoopGapNs = 10'000;   // a gap this short between polls is the loop's own
  static constexpr int kRunAfter = 8;                      // polls in a row with short gaps that start a run
  static constexpr int kFirstInterval = 16;                // polls in a run's first interval (doubling from there)
  static constexpr int kMaxInterval = 256;
  // A loop of this many polls without a completion seen or another MPI call
  // is a wait: from there on one poll in kWaitWatchEvery takes the full
  // path, where a poll that completes it closes the run's interval (the
  // app's work after it is in no interval). The C wrappers' fast path cannot
  // see the flag a poll returns; a completion it hides leaves the interval
  // open over the app's work after the wait, which the interval's close
  // finds (longer than its polls take, the thread's CPU time used) and books
  // at the run's mean cycle. Every poll on the full path cost HPCC's
  // RandomAccess at 1 rank (MPI_Testany on a receive that never completes,
  // a table update between: 3.4e7 polls) 1.6x its plain time.
  static constexpr int kLoopEndPolls = 4096;
  static constexpr int kWaitWatchEvery = 16;
  // A loop that does the app's work between its polls (HPCC's RandomAccess:
  // a table update and a test an iteration) is MPI time only for its polls'
  // own share: where the gap between polls (the cycle less a poll's own
  // time) is over kLoopBranchNs and kInterleavedGapShare of the cycle, an
  // interval books (a poll's own time + kLoopBranchNs) / cycle of its span.
  // A poll's own time: the polls timed before the run, then the poll each
  // interval's checkpoint times (less one clock read).
  static constexpr double kLoopBranchNs = 10;
  static constexpr double kInterleavedGapShare = 0.25;
  static constexpr double kIntervalFactor = 2;
  static constexpr std::int64_t kIntervalSlackNs = 50'000;  // interrupts, a page fault
  // A sampler signal costs the thread CPU time beyond the handler's own
  // account of it (80-130 us here, its delivery and the timer's expiry in the
  // kernel, measured on intervals a sample and a preemption fell in).
  static constexpr std::int64_t kSignalSlackNs = 250'000;
  // CPU time an interval may hold beyond its polls and still count as
  // preempted: the switches out and back in and the interrupts around them
  // cost the thread 50-100 us of CPU time here (Linux 6.x on a KVM guest); a
  // few polls may also take longer (one that receives the message).
  static constexpr std::int64_t kCpuSlackNs = 250'000;
  static constexpr std::int64_t kRestampNs = 2'000'000;     // CPU time read again after this long in a run
  static constexpr std::int64_t kRateWindowNs = 10'000'000;
  static constexpr double kSubsampleRate = 50'000;          // calls/s of one function on one thread
  static constexpr int kSubsampleEvery = 16;

  // Clocks of the slow paths; tests replace them.
  using WallClock = std::int64_t (*)();
  using ThreadClock = ThreadTimes (*)();
  using HandlerClock = std::int64_t (*)();  // the thread's time in the sampler's signal handler
  static void set_clocks(WallClock wall, ThreadClock thread, HandlerClock handler) noexcept;

  // A call of `fn` starts. True: it is only counted (a poll inside a polling
  // run, or a subsampled call not timed this time); add its payload with
  // add_bytes. False: the caller reads the monotonic clock around the real
  // call and books it with end_timed.
  __attribute__((always_inline)) bool begin(MpiFn fn) noexcept {
    const int i = static_cast<int>(fn);
    if (any_allowance_) settle();
    if (is_poll(fn)) {
      if (run_open_) {
        // A checkpoint's poll is timed (the poll's own time, for a loop
        // that works between its polls); the run's intervals book its time.
        bool timed = false;
        if (--countdown_ <= 0) {
          checkpoint();
          timed = run_open_ && !frozen_;
        }
        fn_[i].calls.add(1);
        ++polls_since_done_;
        grant(fn);
        return !timed;
      }
      fn_[i].calls.add(1);
      return false;
    }
    fn_[i].calls.add(1);
    Rate& r = rate_[i];
    if (r.subsampled && --r.countdown > 0) {
      estimated(i);
      return true;
    }
    return false;
  }
  // The fast path of a C poll wrapper: while `fn` has an allowance (inside a
  // polling run, an interval not ending within it and a loop still short
  // enough that its completion does not matter) the poll spends one of it
  // (true) and nothing is left to do after the call; false: the wrapper takes
  // the full path (begin, end_timed or poll_completed). One load and one
  // store, no call, so the wrapper needs no frame: an app that updates memory
  // between its polls (HPCC's RandomAccess) keeps fewer of its cache misses
  // in flight for each store its iteration queues (bench/src/mpi_poll_app.c
  // `updates` at 1 rank: 55 ns an iteration plain, 67 with the three stores
  // of a count, a countdown and the loop's length, 56 with one).
  __attribute__((always_inline)) bool count_poll(MpiFn fn) noexcept {
    std::atomic<int>& left = allowance_[poll_index(fn)];
    const int n = left.load(std::memory_order_relaxed);
    if (n <= 0) return false;
    left.store(n - 1, std::memory_order_relaxed);
    return true;
  }
  // Calls of `fn` so far, the fast polls not yet settled included (exact on
  // the owner thread; read from another while the owner polls, off by at
  // most the polls of one allowance).
  std::int64_t calls(MpiFn fn) const noexcept {
    const int p = poll_index(fn);
    const std::int64_t spent =
        p < 0 ? 0
              : std::max(0, granted_[p].load(std::memory_order_relaxed) - allowance_[p].load(std::memory_order_relaxed));
    return fn_[static_cast<int>(fn)].calls.get() + spent;
  }
  void end_timed(MpiFn fn, std::int64_t start_ns, std::int64_t end_ns, std::int64_t sent,
                 std::int64_t received) noexcept;
  __attribute__((always_inline)) void add_bytes(MpiFn fn, std::int64_t sent, std::int64_t received) noexcept {
    if (sent) fn_[static_cast<int>(fn)].sent.add(sent);
    if (received) fn_[static_cast<int>(fn)].received.add(received);
  }
  // A counted poll found what it polled for. After a loop of kLoopEndPolls
  // polls or more, the run's interval closes here (what follows may be the
  // app's work) and the next interval starts at the next poll.
  __attribute__((always_inline)) void poll_completed() noexcept {
    if (polls_since_done_ >= kLoopEndPolls) end_loop();
    polls_since_done_ = 0;
  }
  // Ends the polling run (MPI_Finalize, the thread's end, the snapshot): its
  // last interval is booked as of `now_ns`.
  void close_run(std::int64_t now_ns) noexcept;
  // All counters and states back to zero (a fork child; a table reused).
  void reset() noexcept;

  const MpiFnCounts& counts(MpiFn fn) const noexcept { return fn_[static_cast<int>(fn)]; }
  // Calls timed on their own, polling-run intervals closed, getrusage reads.
  std::int64_t timed_calls() const noexcept { return timed_calls_.get(); }
  std::int64_t intervals() const noexcept { return intervals_.get(); }
  std::int64_t thread_reads() const noexcept { return thread_reads_.get(); }
  // Intervals longer than their polls take, found preempted (booked whole)
  // or holding work (booked at the mean cycle; the run ended there).
  std::int64_t preempted_intervals() const noexcept { return preempted_.get(); }
  std::int64_t work_intervals() const noexcept { return work_.get(); }
  bool run_open() const noexcept { return run_open_; }

  // Calibration (own cost): a table that keeps its polls in a run forever
  // (begin() only counts) or never starts one and never subsamples.
  void freeze(bool run_open) noexcept;

 private:
  struct Rate {
    std::int64_t window_start_ns = 0, window_base_calls = 0;
    double mean_ns = 0;  // of this function's timed calls (outliers clamped)
    int countdown = 0;
    bool subsampled = false;
  };
  void checkpoint() noexcept;
  // Books the fast polls spent since the last settle (counts, the interval's
  // countdown, the loop's length); the allowances left stay granted.
  void settle() noexcept;
  // Gives `fn` the polls it may make on the fast path from here: as many as
  // the interval and the loop have left before a poll must enter the table.
  // Other functions keep theirs (a loop that alternates Test and Iprobe stays
  // on the fast path), so an interval or a loop may run a few allowances
  // longer than kMaxInterval or kLoopEndPolls: both are granularities, and
  // the booking uses the polls counted.
  __attribute__((always_inline)) void grant(MpiFn fn) noexcept {
    if (!run_open_ || frozen_ || pending_start_) return;
    const int loop_left = kLoopEndPolls - polls_since_done_;
    const int n = std::min(countdown_ - 1, loop_left > 0 ? loop_left : kWaitWatchEvery - 1);
    if (n <= 0) return;
    const int p = poll_index(fn);
    allowance_[p].store(n, std::memory_order_relaxed);
    granted_[p].store(n, std::memory_order_relaxed);
    any_allowance_ = true;
  }
  // Settles and takes every allowance back: the next poll of any function
  // enters the table (an interval ends, the loop ended, the run closed).
  void revoke() noexcept;
  void clear_allowances() noexcept;  // every allowance and grant to zero, unsettled
  void end_loop() noexcept;
  void estimated(int i) noexcept;
  void end_poll(int i, std::int64_t start_ns, std::int64_t end_ns) noexcept;
  // The share of a polling interval of this cycle (ns a poll and its gap)
  // that is MPI time: 1, or a poll's own share where the loop works between
  // its polls.
  double mpi_share(double cycle_ns) const noexcept;
  void open_run(std::int64_t now_ns) noexcept;
  // Books the interval [interval start, now) of the open run; false when it
  // held work (the run is over then).
  bool close_interval(std::int64_t now_ns) noexcept;
  void start_interval(std::int64_t now_ns) noexcept;
  void stamp(std::int64_t now_ns, const ThreadTimes& t) noexcept;
  int next_stride() noexcept;

  // Hot: the fast path reads and writes only its function's allowance.
  std::atomic<int> allowance_[kPollFnCount] = {};
  std::atomic<int> granted_[kPollFnCount] = {};  // the allowance as of the last grant or settle
  bool any_allowance_ = false;
  bool run_open_ = false;
  bool frozen_ = false;
  int countdown_ = 0;
  int polls_since_done_ = 0;
  // Between a loop's end and the next poll: no interval is open (the gap is
  // the app's), the next poll opens one.
  bool pending_start_ = false;
  std::int64_t gap_start_ns_ = 0;
  // Polling run (owner only).
  int interval_ = 0;
  int short_gaps_ = 0;
  std::int64_t last_poll_end_ns_ = 0;
  std::int64_t cycle_sum_ns_ = 0;  // of the short-gap polls before a run (call + gap)
  double mean_cycle_ns_ = 0;       // one poll and its gap in the run
  std::int64_t call_sum_ns_ = 0;   // of the short-gap polls before a run (the calls alone)
  double mean_call_ns_ = 0;        // a poll's own time in the run (a clock read less)
  std::int64_t clock_cost_ns_ = -1;  // a monotonic clock read (measured at the first run)
  std::int64_t interval_start_ns_ = 0;
  std::int64_t excluded_ns_ = 0;   // other MPI calls inside the interval (their time is their own)
  std::int64_t handler_base_ns_ = 0;
  std::int64_t interval_base_[kPollFnCount] = {};
  bool stamp_valid_ = false;
  std::int64_t stamp_wall_ns_ = 0, stamp_cpu_ns_ = 0, stamp_voluntary_ = 0;
  std::int64_t since_stamp_ns_ = 0;  // wall time of the run's intervals (and excluded calls) since the stamp
  std::uint32_t rng_ = 0x9e3779b9u;
  Rate rate_[static_cast<int>(MpiFn::Count)];
  MpiFnCounts fn_[static_cast<int>(MpiFn::Count)];
  OwnedCounter timed_calls_, intervals_, thread_reads_, preempted_, work_;
};

}  // namespace rtrace::tracer
