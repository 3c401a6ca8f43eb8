#include "mpi_thread.hpp"

#include "rank_state.hpp"
#include "sampler.hpp"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>

namespace rtrace::tracer {

namespace {

MpiThreadTable::WallClock g_wall = &monotonic_ns;
MpiThreadTable::ThreadClock g_thread = &read_thread_times;
MpiThreadTable::HandlerClock g_handler = &Sampler::thread_handler_ns;

}  // namespace

ThreadTimes read_thread_times() noexcept {
  // The CPU time from the thread's CPU clock: getrusage's is the scheduler's
  // sum as of the thread's last tick or switch, up to a tick (4 ms) behind.
  ThreadTimes t;
  rusage ru{};
  timespec cpu{};
  if (getrusage(RUSAGE_THREAD, &ru) != 0 || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) != 0) return t;
  t.cpu_ns = static_cast<std::int64_t>(cpu.tv_sec) * 1'000'000'000 + cpu.tv_nsec;
  t.voluntary_switches = ru.ru_nvcsw;
  return t;
}

void MpiThreadTable::set_clocks(WallClock wall, ThreadClock thread, HandlerClock handler) noexcept {
  g_wall = wall ? wall : &monotonic_ns;
  g_thread = thread ? thread : &read_thread_times;
  g_handler = handler ? handler : &Sampler::thread_handler_ns;
}

int MpiThreadTable::next_stride() noexcept {
  // xorshift32: a stride of kSubsampleEvery/2 .. 3/2 kSubsampleEvery calls, so
  // an app whose calls come in a fixed pattern is not sampled in step with it.
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 17;
  rng_ ^= rng_ << 5;
  return kSubsampleEvery / 2 + static_cast<int>(rng_ % static_cast<std::uint32_t>(kSubsampleEvery + 1));
}

void MpiThreadTable::estimated(int i) noexcept {
  const auto ns = static_cast<std::int64_t>(rate_[i].mean_ns);
  fn_[i].time_ns.add(ns);
  fn_[i].estimated_calls.add(1);
  if (run_open_) {
    excluded_ns_ += ns;
    polls_since_done_ = 0;  // another MPI call: the polls before it were a loop of their own
  }
}

void MpiThreadTable::end_timed(MpiFn fn, std::int64_t start_ns, std::int64_t end_ns, std::int64_t sent,
                               std::int64_t received) noexcept {
  const int i = static_cast<int>(fn);
  timed_calls_.add(1);
  add_bytes(fn, sent, received);
  if (is_poll(fn)) {
    end_poll(i, start_ns, end_ns);
    return;
  }
  const std::int64_t ns = std::max<std::int64_t>(0, end_ns - start_ns);
  fn_[i].time_ns.add(ns);
  if (run_open_) {
    // A short call inside a polling run (the Irecv a poll loop posts next, the
    // Recv after an Iprobe) keeps the run; its time is its own. A long one
    // (a blocking wait) ends the run where it began.
    if (ns > kIntervalSlackNs) {
      close_run(start_ns);
    } else {
      excluded_ns_ += ns;
      polls_since_done_ = 0;  // another MPI call: the polls before it were a loop of their own
    }
  } else {
    // Any other call between two polls: the gap rule starts again.
    last_poll_end_ns_ = 0;
    short_gaps_ = 0;
  }
  Rate& r = rate_[i];
  // Outliers (a preemption inside one call) move the mean by at most 8x it.
  const double clamped = r.mean_ns > 0 ? std::min<double>(static_cast<double>(ns), 8 * r.mean_ns) : static_cast<double>(ns);
  r.mean_ns = r.mean_ns > 0 ? r.mean_ns + (clamped - r.mean_ns) / 8 : clamped;
  const std::int64_t calls = fn_[i].calls.get();
  if (r.window_start_ns == 0) {
    r.window_start_ns = start_ns;
    r.window_base_calls = calls - 1;
  } else if (end_ns - r.window_start_ns >= kRateWindowNs) {
    const double rate = static_cast<double>(calls - r.window_base_calls) * 1e9 /
                        static_cast<double>(end_ns - r.window_start_ns);
    if (!frozen_) r.subsampled = rate >= kSubsampleRate;
    r.window_start_ns = end_ns;
    r.window_base_calls = calls;
  }
  if (r.subsampled) r.countdown = next_stride();
}

void MpiThreadTable::end_poll(int i, std::int64_t start_ns, std::int64_t end_ns) noexcept {
  std::int64_t ns = std::max<std::int64_t>(0, end_ns - start_ns);
  if (run_open_) {
    // The poll an interval's checkpoint timed: its own time only; the
    // interval books the time.
    const double own = static_cast<double>(std::max<std::int64_t>(0, ns - clock_cost_ns_));
    mean_call_ns_ += (own - mean_call_ns_) / 8;
    last_poll_end_ns_ = end_ns;
    return;
  }
  const std::int64_t gap = start_ns - last_poll_end_ns_;
  // A gap this short between two polls is the polling loop's own branch back
  // (no work fits in it): it is booked to the poll, so a loop
  // `while (!flag) MPI_Iprobe(...)` is MPI time as a whole.
  if (last_poll_end_ns_ > 0 && gap >= 0 && gap < kPollLoopGapNs) {
    call_sum_ns_ += ns;
    ns += gap;
    cycle_sum_ns_ += ns;
    ++short_gaps_;
  } else {
    cycle_sum_ns_ = call_sum_ns_ = 0;
    short_gaps_ = 0;
  }
  fn_[i].time_ns.add(ns);
  last_poll_end_ns_ = end_ns;
  if (short_gaps_ >= kRunAfter && !frozen_) {
    open_run(end_ns);
    grant(static_cast<MpiFn>(i));
  }
}

void MpiThreadTable::settle() noexcept {
  any_allowance_ = false;
  int spent = 0;
  for (int p = 0; p < kPollFnCount; ++p) {
    const int left = allowance_[p].load(std::memory_order_relaxed);
    const int n = granted_[p].load(std::memory_order_relaxed) - left;
    if (left > 0) any_allowance_ = true;
    if (n <= 0) continue;
    fn_[static_cast<int>(kPollFns[p])].calls.add(n);
    granted_[p].store(left, std::memory_order_relaxed);
    spent += n;
  }
  countdown_ -= spent;
  polls_since_done_ += spent;
}

void MpiThreadTable::revoke() noexcept {
  if (any_allowance_) settle();
  clear_allowances();
}

void MpiThreadTable::clear_allowances() noexcept {
  for (int p = 0; p < kPollFnCount; ++p) {
    allowance_[p].store(0, std::memory_order_relaxed);
    granted_[p].store(0, std::memory_order_relaxed);
  }
  any_allowance_ = false;
}

void MpiThreadTable::open_run(std::int64_t now_ns) noexcept {
  pending_start_ = false;
  polls_since_done_ = 0;
  run_open_ = true;
  mean_cycle_ns_ = short_gaps_ > 0 ? static_cast<double>(cycle_sum_ns_) / short_gaps_ : 0;
  if (clock_cost_ns_ < 0) {
    // What a clock read adds to a timed call: the least of a few back-to-back reads.
    std::int64_t best = -1;
    for (int k = 0; k < 8; ++k) {
      const std::int64_t a = g_wall(), b = g_wall();
      if (best < 0 || b - a < best) best = std::max<std::int64_t>(0, b - a);
    }
    clock_cost_ns_ = best;
  }
  mean_call_ns_ = short_gaps_ > 0 ? std::max(0.0, static_cast<double>(call_sum_ns_) / short_gaps_ -
                                                       static_cast<double>(clock_cost_ns_))
                                  : 0;
  interval_ = kFirstInterval;
  stamp_valid_ = false;
  start_interval(now_ns);
}

void MpiThreadTable::start_interval(std::int64_t now_ns) noexcept {
  interval_start_ns_ = now_ns;
  excluded_ns_ = 0;
  handler_base_ns_ = g_handler();
  for (int p = 0; p < kPollFnCount; ++p) interval_base_[p] = fn_[static_cast<int>(kPollFns[p])].calls.get();
  countdown_ = interval_;
}

void MpiThreadTable::stamp(std::int64_t now_ns, const ThreadTimes& t) noexcept {
  stamp_valid_ = t.cpu_ns >= 0;
  stamp_wall_ns_ = now_ns;
  stamp_cpu_ns_ = t.cpu_ns;
  stamp_voluntary_ = t.voluntary_switches;
  since_stamp_ns_ = 0;
}

void MpiThreadTable::checkpoint() noexcept {
  if (frozen_) {
    countdown_ = 1 << 30;
    return;
  }
  const std::int64_t now = g_wall();
  if (pending_start_) {
    // A new loop of the run. A short gap since the last one counts as CPU
    // time in the preemption test (it may have been the app's work); after a
    // long one (which a preemption may have filled) the CPU time is read
    // again, its cost small against the gap.
    pending_start_ = false;
    const std::int64_t gap = std::max<std::int64_t>(0, now - gap_start_ns_);
    if (gap < kIntervalSlackNs) {
      since_stamp_ns_ += gap;
    } else {
      thread_reads_.add(1);
      stamp(now, g_thread());
    }
    start_interval(now);
    return;
  }
  if (!close_interval(now)) return;
  interval_ = std::min(2 * interval_, kMaxInterval);
  start_interval(now);
}

void MpiThreadTable::end_loop() noexcept {
  if (frozen_ || pending_start_ || !run_open_) return;
  const std::int64_t now = g_wall();
  if (!close_interval(now)) return;
  pending_start_ = true;
  gap_start_ns_ = now;
  interval_ = kFirstInterval;
  countdown_ = 1;
  revoke();  // the next poll, of any function, opens the next loop's interval
}

double MpiThreadTable::mpi_share(double cycle_ns) const noexcept {
  if (!(mean_call_ns_ > 0) || !(cycle_ns > 0)) return 1;
  const double gap = cycle_ns - mean_call_ns_;
  if (gap <= kLoopBranchNs || gap <= kInterleavedGapShare * cycle_ns) return 1;
  return std::min(1.0, (mean_call_ns_ + kLoopBranchNs) / cycle_ns);
}

bool MpiThreadTable::close_interval(std::int64_t now_ns) noexcept {
  intervals_.add(1);
  std::int64_t delta[kPollFnCount];
  std::int64_t n = 0;
  for (int p = 0; p < kPollFnCount; ++p) {
    delta[p] = fn_[static_cast<int>(kPollFns[p])].calls.get() - interval_base_[p];
    n += delta[p];
  }
  const std::int64_t span = std::max<std::int64_t>(0, now_ns - interval_start_ns_);
  const std::int64_t polls_ns = std::max<std::int64_t>(0, span - excluded_ns_);
  if (n <= 0) {
    since_stamp_ns_ += span;
    return true;
  }
  // The sampler's handler ran on this thread inside the interval: the tracer's
  // own time, not a sign of app work; so is the signal around it, which its
  // own clock does not see.
  const std::int64_t handler_ns = std::max<std::int64_t>(0, g_handler() - handler_base_ns_);
  const double limit = kIntervalFactor * static_cast<double>(n) * mean_cycle_ns_ + kIntervalSlackNs +
                       (handler_ns > 0 ? static_cast<double>(handler_ns + kSignalSlackNs) : 0.0);
  bool as_run = static_cast<double>(polls_ns) <= limit;
  bool keep = true;
  if (as_run) {
    if (handler_ns == 0) mean_cycle_ns_ += (static_cast<double>(polls_ns) / static_cast<double>(n) - mean_cycle_ns_) / 8;
    since_stamp_ns_ += span;
    if (!stamp_valid_ || now_ns - stamp_wall_ns_ >= kRestampNs) {
      thread_reads_.add(1);
      stamp(now_ns, g_thread());
    }
  } else {
    // Longer than its polls take: app work between two polls, a block, or a
    // preemption. Only a preemption uses neither CPU time nor a voluntary
    // context switch.
    thread_reads_.add(1);
    const ThreadTimes t = g_thread();
    if (stamp_valid_ && t.cpu_ns >= 0 && t.voluntary_switches == stamp_voluntary_) {
      const double cpu = static_cast<double>(t.cpu_ns - stamp_cpu_ns_ - since_stamp_ns_ - excluded_ns_);
      as_run = cpu <= limit + kCpuSlackNs;
    }
    if (as_run) {
      preempted_.add(1);
      stamp(now_ns, t);
    } else {
      work_.add(1);
      keep = false;
    }
  }
  // The polls' own share where the loop works between them: a property of
  // the loop (its mean cycle), so a preempted interval keeps it too.
  const double share = mpi_share(mean_cycle_ns_);
  const std::int64_t mpi_ns = as_run ? static_cast<std::int64_t>(static_cast<double>(polls_ns) * share) : 0;
  const double estimated_ns = mean_cycle_ns_ * share;
  std::int64_t booked = 0, left = n;
  for (int p = 0; p < kPollFnCount; ++p) {
    if (delta[p] <= 0) continue;
    MpiFnCounts& c = fn_[static_cast<int>(kPollFns[p])];
    if (as_run) {
      // The interval's time, shared by the polls made in it.
      left -= delta[p];
      const std::int64_t share = left == 0 ? mpi_ns - booked : mpi_ns * delta[p] / n;
      booked += share;
      c.time_ns.add(share);
      c.run_calls.add(delta[p]);
    } else {
      c.time_ns.add(static_cast<std::int64_t>(static_cast<double>(delta[p]) * estimated_ns));
      c.estimated_calls.add(delta[p]);
    }
  }
  if (!keep) {
    revoke();
    run_open_ = false;
    pending_start_ = false;
    stamp_valid_ = false;
    short_gaps_ = 0;
    last_poll_end_ns_ = 0;
  }
  return keep;
}

void MpiThreadTable::close_run(std::int64_t now_ns) noexcept {
  revoke();
  if (run_open_ && !pending_start_) close_interval(now_ns);
  run_open_ = false;
  pending_start_ = false;
  polls_since_done_ = 0;
  stamp_valid_ = false;
  short_gaps_ = 0;
  last_poll_end_ns_ = 0;
}

void MpiThreadTable::freeze(bool run_open) noexcept {
  revoke();
  frozen_ = true;
  run_open_ = run_open;
  countdown_ = 1 << 30;
}

void MpiThreadTable::reset() noexcept {
  clear_allowances();  // nothing settled: the counts go back to zero too
  run_open_ = frozen_ = stamp_valid_ = pending_start_ = false;
  countdown_ = interval_ = short_gaps_ = polls_since_done_ = 0;
  gap_start_ns_ = 0;
  last_poll_end_ns_ = cycle_sum_ns_ = call_sum_ns_ = interval_start_ns_ = excluded_ns_ = handler_base_ns_ = 0;
  mean_call_ns_ = 0;
  stamp_wall_ns_ = stamp_cpu_ns_ = stamp_voluntary_ = since_stamp_ns_ = 0;
  mean_cycle_ns_ = 0;
  for (auto& r : rate_) r = Rate{};
  for (auto& c : fn_) {
    c.calls.reset();
    c.time_ns.reset();
    c.sent.reset();
    c.received.reset();
    c.run_calls.reset();
    c.estimated_calls.reset();
  }
  timed_calls_.reset();
  intervals_.reset();
  thread_reads_.reset();
  preempted_.reset();
  work_.reset();
}

}  // namespace rtrace::tracer
