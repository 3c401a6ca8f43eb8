#include "mpi_stats.hpp"

#include "mpi_thread.hpp"

#include <algorithm>
#include <new>

namespace rtrace::tracer {

struct MpiStats::Registered {
  MpiThreadTable table;
  Registered* next = nullptr;
};

const char* mpi_function_name(MpiFn f) noexcept {
  static const char* const kNames[] = {
#define RTRACE_MPI_NAME(name) "MPI_" #name,
      RTRACE_MPI_FUNCTIONS(RTRACE_MPI_NAME)
#undef RTRACE_MPI_NAME
  };
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<int>(MpiFn::Count), "one name per MpiFn");
  int i = static_cast<int>(f);
  return (i >= 0 && i < static_cast<int>(MpiFn::Count)) ? kNames[i] : "MPI_?";
}

MpiStats::~MpiStats() {
  for (Registered* r = tables_.exchange(nullptr); r;) {
    Registered* next = r->next;
    delete r;
    r = next;
  }
}

MpiThreadTable* MpiStats::attach() noexcept {
  try {
    std::lock_guard<std::mutex> lock(free_mutex_);
    if (!free_.empty()) {
      MpiThreadTable* t = free_.back();
      free_.pop_back();
      return t;
    }
  } catch (...) {
  }
  auto* r = new (std::nothrow) Registered;
  if (!r) return nullptr;
  Registered* head = tables_.load();
  do r->next = head;
  while (!tables_.compare_exchange_weak(head, r));
  return &r->table;
}

void MpiStats::release(MpiThreadTable* table) noexcept {
  if (!table) return;
  try {
    std::lock_guard<std::mutex> lock(free_mutex_);
    free_.push_back(table);
  } catch (...) {
    // Not reusable then; its counts are still read.
  }
}

std::vector<store::MpiRow> MpiStats::rows(NameTable& names) const {
  std::vector<store::MpiRow> out;
  for (int i = 0; i < static_cast<int>(MpiFn::Count); ++i) {
    const Slot& s = slots_[i];
    const std::int64_t open = s.open.load(std::memory_order_relaxed);
    std::int64_t calls = s.calls.load(std::memory_order_relaxed) + open;
    std::int64_t time_ns = s.time_ns.load(std::memory_order_relaxed);
    std::int64_t sent = s.sent.load(std::memory_order_relaxed);
    std::int64_t received = s.received.load(std::memory_order_relaxed);
    std::int64_t run_calls = 0, estimated = 0;
    for (const Registered* r = tables_.load(); r; r = r->next) {
      const MpiFnCounts& c = r->table.counts(static_cast<MpiFn>(i));
      calls += r->table.calls(static_cast<MpiFn>(i));
      time_ns += c.time_ns.get();
      sent += c.sent.get();
      received += c.received.get();
      run_calls += c.run_calls.get();
      estimated += c.estimated_calls.get();
    }
    if (calls == 0) continue;
    store::MpiRow row{};
    row.name_id = names.id(mpi_function_name(static_cast<MpiFn>(i)));
    row.calls = calls;
    row.time_s = open > 0 ? store::kUnavailable : static_cast<double>(time_ns) * 1e-9;
    row.bytes_sent = sent;
    row.bytes_received = received;
    row.run_calls = run_calls;
    row.estimated_calls = estimated;
    const bool poll = is_poll(static_cast<MpiFn>(i));
    store::set_str(row.time_method, run_calls + estimated == 0 ? store::kTimedPerCall
                                    : poll                       ? store::kTimedPollingRuns
                                                                 : store::kTimedSubsampled);
    out.push_back(row);
  }
  return out;
}

double MpiStats::total_time_s() const noexcept {
  std::int64_t ns = 0;
  for (const auto& s : slots_) ns += s.time_ns.load(std::memory_order_relaxed);
  for (const Registered* r = tables_.load(); r; r = r->next)
    for (int i = 0; i < static_cast<int>(MpiFn::Count); ++i) ns += r->table.counts(static_cast<MpiFn>(i)).time_ns.get();
  return static_cast<double>(ns) * 1e-9;
}

MpiOwnCost MpiStats::own_cost(const WrapperCosts& costs) const noexcept {
  MpiOwnCost c;
  std::int64_t estimated_non_poll = 0, calls = 0;
  for (const Registered* r = tables_.load(); r; r = r->next) {
    c.timed_calls += r->table.timed_calls();
    c.intervals += r->table.intervals();
    c.thread_reads += r->table.thread_reads();
    c.preempted_intervals += r->table.preempted_intervals();
    c.work_intervals += r->table.work_intervals();
    for (int i = 0; i < static_cast<int>(MpiFn::Count); ++i) {
      const MpiFnCounts& f = r->table.counts(static_cast<MpiFn>(i));
      calls += r->table.calls(static_cast<MpiFn>(i));
      if (!is_poll(static_cast<MpiFn>(i))) estimated_non_poll += f.estimated_calls.get();
    }
  }
  c.counted_calls = std::max<std::int64_t>(0, calls - c.timed_calls);
  const double ns = static_cast<double>(c.counted_calls) * costs.counted_ns +
                    static_cast<double>(c.timed_calls) * (2 * costs.clock_ns + costs.counted_ns) +
                    static_cast<double>(c.intervals) * (costs.clock_ns + costs.counted_ns) +
                    static_cast<double>(c.thread_reads) * costs.thread_read_ns;
  // A timed call's clock reads fall half inside its interval; its bookkeeping
  // before the first and after the second lies outside, as does a subsampled
  // call's. A polling run's counting, checkpoints and getrusage lie inside
  // the run's intervals, which are MPI time.
  const double outside_ns = static_cast<double>(c.timed_calls) * (costs.clock_ns + costs.counted_ns) +
                            static_cast<double>(estimated_non_poll) * costs.counted_ns;
  c.total_s = ns * 1e-9;
  c.outside_mpi_s = outside_ns * 1e-9;
  return c;
}

void MpiStats::reset(const MpiThreadTable* keep) noexcept {
  for (auto& s : slots_) {
    s.calls.store(0);
    s.time_ns.store(0);
    s.sent.store(0);
    s.received.store(0);
    s.open.store(0);
  }
  new (&free_mutex_) std::mutex();  // may have been held by a thread the fork left behind
  try {
    std::lock_guard<std::mutex> lock(free_mutex_);
    free_.clear();
    for (Registered* r = tables_.load(); r; r = r->next) {
      r->table.reset();
      if (&r->table != keep) free_.push_back(&r->table);
    }
  } catch (...) {
  }
}

}  // namespace rtrace::tracer
