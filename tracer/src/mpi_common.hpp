// What the C (mpi_layer.cpp) and Fortran (mpi_fortran.cpp) MPI wrappers
// share: the timer that books a call, payload sizes, and the Init/Finalize
// steps (the MPI window, rank from MPI_COMM_WORLD, the collective write).
// Every PMPI_* is resolved with dlsym; nothing here binds to one MPI.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "pmpi.hpp"

#include "mpi_stats.hpp"
#include "mpi_thread.hpp"
#include "tracer.hpp"

// Code that only forwards an MPI call (every C and Fortran wrapper, and the
// Fortran wrappers' shared *_impl functions) is placed in a section of its
// own, so the symbolizer can tell a sample under a wrapped call (MPI time,
// whatever binding made the call) from the tracer's own work (category
// rtrace: payload sizes in helpers, the ranks.h5 write at MPI_Finalize).
// Issue 25: Fortran wait in mpi_alltoall_ -> allgather_like_impl ->
// PMPI_Alltoall was booked as "rtrace tracer". See symbolize.cpp.
#define RTRACE_MPI_WRAPPER __attribute__((section("rtrace_mpi_wrappers")))

namespace rtrace::tracer::mpi {

// A traced process, and not the tracer's own MPI traffic.
inline bool tracing() noexcept { return state() != nullptr && !in_tracer(); }

// count x size of `type` in bytes; 0 when unknown.
std::int64_t type_bytes(MPI_Datatype type, std::int64_t count) noexcept;
// Sum of counts[0..n) x size of `type`; of counts[i] x size of types[i] (the
// w-forms); 0 when unknown.
std::int64_t counts_bytes(const int counts[], std::int64_t n, MPI_Datatype type) noexcept;
std::int64_t typed_counts_bytes(const int counts[], const MPI_Datatype types[], std::int64_t n) noexcept;
// In- and out-degree of a communicator's topology (cartesian: 2 x ndims each;
// graph: the rank's neighbours; distributed graph: its sources and
// destinations), what a neighbourhood collective exchanges with. False when
// the communicator has no topology.
bool neighbor_degrees(MPI_Comm comm, int& in, int& out) noexcept;
std::int64_t comm_size(MPI_Comm comm) noexcept;
int comm_rank(MPI_Comm comm) noexcept;  // -1 when unknown
bool is_root(MPI_Comm comm, int root) noexcept;
// Bytes received according to a completed status (MPI_Get_count in bytes).
std::int64_t received_bytes(const MPI_Status* status) noexcept;

// The calling thread's MPI table, made on its first traced MPI call
// (nullptr: not traced, or no memory for a table). Its thread's end gives it
// back for reuse; a fork child keeps only the forking thread's.
MpiThreadTable* attach_thread() noexcept;
// Ends the calling thread's polling run, if any (MPI_Finalize, the exit path).
void close_thread_run() noexcept;

// Books one call on destruction (mpi_thread.hpp says how: counted only, or
// timed between two clock reads). While it runs, the thread is marked
// internal: an MPI call the library makes from inside it (an MPI-IO
// collective reducing with MPI_Allreduce, a Fortran binding calling the C
// MPI_*) is part of this call's time, not booked twice.
class Timed {
 public:
  // Inlined into each wrapper (its section, so samples there are MPI time):
  // a call costs the app what it does, not a function call more.
  __attribute__((always_inline)) explicit Timed(MpiFn fn) noexcept : fn_(fn) {
    ThreadHot& hot = t_hot;
    if (hot.internal) return;
    MpiThreadTable* table = hot.mpi;
    if (!table) {
      table = attach_thread();
      if (!table) {
        shared_ = tracing();  // no table of its own: the rank's shared slots, timed
        if (shared_) {
          ++hot.internal;
          timed_ = true;
          start_ = monotonic_ns();
        }
        return;
      }
    }
    table_ = table;
    ++hot.internal;
    if (!table->begin(fn)) {
      timed_ = true;
      start_ = monotonic_ns();
    }
  }
  __attribute__((always_inline)) ~Timed() {
    if (table_) {
      --t_hot.internal;
      if (timed_) {
        table_->end_timed(fn_, start_, monotonic_ns(), sent, received);
      } else if (sent | received) {
        table_->add_bytes(fn_, sent, received);
      }
      if (done_) table_->poll_completed();  // a checkpoint's timed poll may end the loop
    } else if (shared_) {
      --t_hot.internal;
      state()->mpi().add(fn_, monotonic_ns() - start_, sent, received);
    }
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;
  bool active() const noexcept { return table_ != nullptr || shared_; }
  // A poll found what it polled for (flag set, a request done, a message
  // there): the end of a polling loop, where its run's interval closes.
  void completed(bool done) noexcept { done_ = done; }
  std::int64_t sent = 0, received = 0;

 private:
  MpiFn fn_;
  MpiThreadTable* table_ = nullptr;
  bool shared_ = false;
  bool timed_ = false;
  bool done_ = false;
  std::int64_t start_ = 0;
};

// The C layer's PMPI entry for `fn`, looked up once; a missing one is an
// error in the log and MPI_ERR_INTERN to the app.
int missing_pmpi(const char* name) noexcept;
#define RTRACE_REAL(fn)                                                                          \
  static const auto real_##fn = ::rtrace::tracer::resolve_pmpi<decltype(&P##fn)>("P" #fn);       \
  if (!real_##fn) return ::rtrace::tracer::mpi::missing_pmpi("P" #fn)

// A C wrapper that books calls and time only (no payload is defined):
// RTRACE_C_PLAIN(Win_fence, (int a, MPI_Win w), (a, w)).
#define RTRACE_C_PLAIN(name, PARAMS, ARGS)                 \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_##name PARAMS { \
    RTRACE_REAL(MPI_##name);                               \
    ::rtrace::tracer::mpi::Timed t(::rtrace::tracer::MpiFn::name); \
    return real_MPI_##name ARGS;                           \
  }

// A C poll wrapper: DONE (an expression of the parameters, read after a
// successful call) says the poll found what it polled for:
// RTRACE_C_POLL(Iprobe, (..., int* flag, ...), (..., flag, ...), *flag).
//
// Inside a polling run a poll is only counted and the wrapper ends in a jump
// to PMPI_* (MpiThreadTable::count_poll): no stack frame, no register saved,
// one store. An app that updates memory between its polls (HPCC's
// RandomAccess: a random store and a test, 4e8 times) keeps fewer of its
// cache misses in flight the more stores each iteration queues: with a frame
// and the completion check after the call the tracer cost that loop 16 ns an
// iteration, with the jump and three stores 12 ns, with one store 1-2 ns. Every other case (the first call, no run,
// the end of an interval, a loop long enough that its completion closes the
// interval) takes the full path, a function of its own in the same section.
#define RTRACE_C_POLL(name, PARAMS, ARGS, DONE)                                                    \
  static std::atomic<decltype(&PMPI_##name)> rtrace_real_slot_MPI_##name{nullptr};                 \
  __attribute__((noinline)) RTRACE_MPI_WRAPPER static int rtrace_full_MPI_##name PARAMS {          \
    RTRACE_REAL(MPI_##name);                                                                       \
    rtrace_real_slot_MPI_##name.store(real_MPI_##name, std::memory_order_relaxed);                 \
    ::rtrace::tracer::mpi::Timed t(::rtrace::tracer::MpiFn::name);                                 \
    const int rc = real_MPI_##name ARGS;                                                           \
    t.completed(rc == MPI_SUCCESS && (DONE));                                                      \
    return rc;                                                                                     \
  }                                                                                                \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_##name PARAMS {                                         \
    const auto real = rtrace_real_slot_MPI_##name.load(std::memory_order_relaxed);                 \
    ::rtrace::tracer::ThreadHot& hot = ::rtrace::tracer::t_hot;                                    \
    ::rtrace::tracer::MpiThreadTable* table = hot.mpi;                                             \
    if (__builtin_expect(real && table && !hot.internal &&                                         \
                             table->count_poll(::rtrace::tracer::MpiFn::name), 1))                 \
      return real ARGS;                                                                            \
    return rtrace_full_MPI_##name ARGS;                                                            \
  }

// After a successful MPI_Init/MPI_Init_thread (any binding): closes the
// startup part of the MPI window, takes the MPI_COMM_WORLD rank, puts the
// fatal-signal handlers back in front of MPI's.
void after_init() noexcept;

// MPI_Finalize (any binding), around the real call:
//   const bool traced = finalize_begin();  rc = real();  finalize_end(traced, ns);
// finalize_begin opens the window's end, books the call as open and writes
// ranks.h5 collectively (before the real finalize, while MPI still works).
bool finalize_begin() noexcept;
void finalize_end(bool traced, std::int64_t real_ns) noexcept;

// At exit: MPI was initialised although no wrapped MPI_Init saw it (a binding
// the tracer does not wrap). Logs one warning line (see docs/tracer.md).
void check_unseen_init() noexcept;

}  // namespace rtrace::tracer::mpi
