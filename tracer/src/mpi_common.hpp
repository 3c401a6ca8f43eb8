// What the C (mpi_layer.cpp) and Fortran (mpi_fortran.cpp) MPI wrappers
// share: the timer that books a call, payload sizes, and the Init/Finalize
// steps (the MPI window, rank from MPI_COMM_WORLD, the collective write).
// Every PMPI_* is resolved with dlsym; nothing here binds to one MPI.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "mpi_stats.hpp"
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
std::int64_t comm_size(MPI_Comm comm) noexcept;
int comm_rank(MPI_Comm comm) noexcept;  // -1 when unknown
bool is_root(MPI_Comm comm, int root) noexcept;
// Bytes received according to a completed status (MPI_Get_count in bytes).
std::int64_t received_bytes(const MPI_Status* status) noexcept;

// Times one call and books it on destruction.
class Timed {
 public:
  explicit Timed(MpiFn fn) noexcept : fn_(fn), active_(tracing()), start_(active_ ? monotonic_ns() : 0) {}
  ~Timed() {
    if (active_) state()->mpi().add(fn_, monotonic_ns() - start_, sent, received);
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;
  bool active() const noexcept { return active_; }
  std::int64_t sent = 0, received = 0;

 private:
  MpiFn fn_;
  bool active_;
  std::int64_t start_;
};

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
