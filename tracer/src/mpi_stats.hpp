// Per-rank MPI accounting: calls, time and payload bytes per wrapped function.
// Lock-free (relaxed atomics) so MPI_THREAD_MULTIPLE apps pay no lock.
#pragma once

#include "names.hpp"
#include "rtrace/store/records.hpp"

#include <atomic>
#include <cstdint>
#include <vector>

namespace rtrace::tracer {

enum class MpiFn : int {
  Init, Init_thread, Finalize,
  Send, Recv, Isend, Irecv, Wait, Waitall, Sendrecv,
  Bcast, Reduce, Allreduce, Allgather, Alltoall, Barrier, Gather, Scatter,
  Ssend, Waitany, Test, Allgatherv, Alltoallv, Gatherv, Scatterv, Reduce_scatter,
  Count
};
const char* mpi_function_name(MpiFn f) noexcept;  // "MPI_Allreduce"

class MpiStats {
 public:
  void add(MpiFn f, std::int64_t ns, std::int64_t sent, std::int64_t received) noexcept {
    auto& s = slots_[static_cast<int>(f)];
    s.calls.fetch_add(1, std::memory_order_relaxed);
    s.time_ns.fetch_add(ns, std::memory_order_relaxed);
    if (sent) s.sent.fetch_add(sent, std::memory_order_relaxed);
    if (received) s.received.fetch_add(received, std::memory_order_relaxed);
  }
  // A call that is still running when the records are taken (MPI_Finalize:
  // ranks.h5 is written inside it): counted, time unknown until close().
  void open_call(MpiFn f) noexcept { slots_[static_cast<int>(f)].open.fetch_add(1, std::memory_order_relaxed); }
  void close_call(MpiFn f, std::int64_t ns) noexcept {
    slots_[static_cast<int>(f)].open.fetch_sub(1, std::memory_order_relaxed);
    add(f, ns, 0, 0);
  }
  // One row per function called at least once, in enum order; a function
  // with a call still open has time_s NaN (unknown, not zero).
  std::vector<store::MpiRow> rows(NameTable& names) const;
  double total_time_s() const noexcept;
  void reset() noexcept;

 private:
  struct Slot {
    std::atomic<std::int64_t> calls{0}, time_ns{0}, sent{0}, received{0}, open{0};
  };
  Slot slots_[static_cast<int>(MpiFn::Count)];
};

}  // namespace rtrace::tracer
