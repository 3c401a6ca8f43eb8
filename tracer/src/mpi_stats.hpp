// Per-rank MPI accounting: calls, time and payload bytes per wrapped function.
// Each thread books its calls in a table of its own (mpi_thread.hpp), so an
// MPI_THREAD_MULTIPLE app pays no lock and no shared cache line per call;
// the rank's rows are the sum of the threads' tables.
#pragma once

#include "names.hpp"
#include "rtrace/store/records.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rtrace::tracer {

// Every wrapped MPI function, in a fixed order (the C and Fortran layers
// share the slots; rank files store the names, so the order is free to grow).
#define RTRACE_MPI_FUNCTIONS(X)                                                                              \
  X(Init) X(Init_thread) X(Finalize)                                                                         \
  X(Send) X(Recv) X(Isend) X(Irecv) X(Wait) X(Waitall) X(Sendrecv)                                           \
  X(Bcast) X(Reduce) X(Allreduce) X(Allgather) X(Alltoall) X(Barrier) X(Gather) X(Scatter)                   \
  X(Ssend) X(Waitany) X(Test) X(Allgatherv) X(Alltoallv) X(Gatherv) X(Scatterv) X(Reduce_scatter)            \
  /* completion, probes, matched receives (issue 25) */                                                      \
  X(Issend) X(Testany) X(Testsome) X(Testall) X(Waitsome) X(Iprobe) X(Probe) X(Improbe) X(Mprobe) X(Mrecv)  \
  X(Imrecv)                                                                                                  \
  X(Scan) X(Exscan) X(Reduce_scatter_block) X(Alltoallw)                                                     \
  /* non-blocking collectives */                                                                             \
  X(Ibarrier) X(Ibcast) X(Ireduce) X(Iallreduce) X(Igather) X(Igatherv) X(Iscatter) X(Iscatterv)            \
  X(Iallgather) X(Iallgatherv) X(Ialltoall) X(Ialltoallv) X(Ialltoallw) X(Ireduce_scatter)                   \
  X(Ireduce_scatter_block) X(Iscan) X(Iexscan)                                                               \
  /* neighbourhood collectives */                                                                            \
  X(Neighbor_allgather) X(Neighbor_allgatherv) X(Neighbor_alltoall) X(Neighbor_alltoallv)                    \
  X(Neighbor_alltoallw) X(Ineighbor_allgather) X(Ineighbor_allgatherv) X(Ineighbor_alltoall)                 \
  X(Ineighbor_alltoallv) X(Ineighbor_alltoallw)                                                              \
  /* one-sided */                                                                                            \
  X(Put) X(Get) X(Accumulate) X(Get_accumulate) X(Fetch_and_op) X(Compare_and_swap) X(Rput) X(Rget)         \
  X(Win_fence) X(Win_lock) X(Win_unlock) X(Win_lock_all) X(Win_unlock_all) X(Win_flush) X(Win_flush_all)    \
  X(Win_flush_local) X(Win_flush_local_all) X(Win_post) X(Win_start) X(Win_complete) X(Win_wait)             \
  X(Win_create) X(Win_allocate) X(Win_allocate_shared) X(Win_create_dynamic) X(Win_free)                     \
  /* communicators */                                                                                        \
  X(Comm_split) X(Comm_split_type) X(Comm_dup) X(Comm_create) X(Comm_free)                                   \
  /* MPI-IO */                                                                                               \
  X(File_open) X(File_close) X(File_read) X(File_write) X(File_read_at) X(File_write_at) X(File_read_all)    \
  X(File_write_all) X(File_read_at_all) X(File_write_at_all) X(File_iread) X(File_iwrite) X(File_iread_at)  \
  X(File_iwrite_at) X(File_iread_all) X(File_iwrite_all) X(File_iread_at_all) X(File_iwrite_at_all)         \
  X(File_set_view) X(File_sync)

enum class MpiFn : int {
#define RTRACE_MPI_ENUM(name) name,
  RTRACE_MPI_FUNCTIONS(RTRACE_MPI_ENUM)
#undef RTRACE_MPI_ENUM
  Count
};
const char* mpi_function_name(MpiFn f) noexcept;  // "MPI_Allreduce"

class MpiThreadTable;

// The cost of the wrappers' own paths in this process (ns), measured at the
// end (mpi_layer.cpp calibrate_wrapper_costs): a call that is only counted
// (a poll inside a polling run), one monotonic clock read, one
// getrusage(RUSAGE_THREAD).
struct WrapperCosts {
  double counted_ns = 0, clock_ns = 0, thread_read_ns = 0;
};
// The wrappers' own work over all threads (s), and the part of it that lies
// outside the MPI time they booked (where the app's useful time would hold it).
struct MpiOwnCost {
  double total_s = 0, outside_mpi_s = 0;
  std::int64_t timed_calls = 0, counted_calls = 0, intervals = 0, thread_reads = 0;
  std::int64_t preempted_intervals = 0, work_intervals = 0;
};

class MpiStats {
 public:
  MpiStats() = default;
  MpiStats(const MpiStats&) = delete;
  MpiStats& operator=(const MpiStats&) = delete;
  // Frees the threads' tables. The tracer's rank state is never destroyed
  // (threads may call MPI until the very end); an owner that is (a test)
  // has joined its threads first.
  ~MpiStats();

  // Books one call in the rank's shared slots (atomics): the calls of a
  // thread that got no table of its own, and tests.
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
  // A table for the calling thread: one a finished thread gave back (its
  // counts stay in it and are the rank's), else a new one; nullptr when out
  // of memory. Tables live as long as the stats: the snapshot may read them
  // any time.
  MpiThreadTable* attach() noexcept;
  void release(MpiThreadTable* table) noexcept;  // its thread ended

  // One row per function called at least once, in enum order; a function
  // with a call still open has time_s NaN (unknown, not zero).
  std::vector<store::MpiRow> rows(NameTable& names) const;
  double total_time_s() const noexcept;
  MpiOwnCost own_cost(const WrapperCosts& costs) const noexcept;
  // Everything back to zero (a fork child); every table but `keep` (the
  // forking thread's) is free for reuse.
  void reset(const MpiThreadTable* keep = nullptr) noexcept;

 private:
  struct Slot {
    std::atomic<std::int64_t> calls{0}, time_ns{0}, sent{0}, received{0}, open{0};
  };
  struct Registered;
  Slot slots_[static_cast<int>(MpiFn::Count)];
  std::atomic<Registered*> tables_{nullptr};
  std::mutex free_mutex_;
  std::vector<MpiThreadTable*> free_;
};

}  // namespace rtrace::tracer
