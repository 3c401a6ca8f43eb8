// The process-wide tracer instance and the hooks its layers share
// (PMPI wrappers, CUPTI, exit/signal/fork handling). Internal to the .so.
#pragma once

#include "rank_state.hpp"

#include <atomic>

#define RTRACE_EXPORT __attribute__((visibility("default")))

namespace rtrace::tracer {

// The active tracer, or nullptr when inert (launcher process, no trace dir).
RankState* state() noexcept;

class MpiThreadTable;

// What every wrapped MPI call reads first, one thread-local block (the
// initial-exec model: an offset from the thread pointer, no
// __tls_get_addr call; the library is preloaded, or dlopened by CUDA after
// the preload, so its TLS is static).
// Zero-initialised and defined here (not extern), so no access goes through
// a TLS init wrapper.
struct ThreadHot {
  int internal;                 // InternalScope depth
  MpiThreadTable* mpi;          // this thread's MPI table (mpi_common.hpp attach_thread)
};
inline thread_local ThreadHot t_hot __attribute__((tls_model("initial-exec")));

// True while the tracer itself is running on this thread: MPI calls made by
// HDF5 during our own writes pass straight through, uncounted.
inline bool in_tracer() noexcept { return t_hot.internal > 0; }
class InternalScope {
 public:
  InternalScope() noexcept { ++t_hot.internal; }
  ~InternalScope() { --t_hot.internal; }
  InternalScope(const InternalScope&) = delete;
  InternalScope& operator=(const InternalScope&) = delete;
};

// This process's final data are in a file (ranks.h5 or its own rank file):
// the exit path must not write again.
void mark_written() noexcept;
bool written() noexcept;
// True in the child of a fork(): it must not take part in collective I/O.
bool is_fork_child() noexcept;

// The GPU layer registers a flush that delivers all buffered activity records.
void set_gpu_flush(void (*flush)()) noexcept;
void flush_gpu() noexcept;

// Re-installs the fatal-signal handlers in front of whatever MPI/CUDA set up
// (they replace ours in MPI_Init); the previous handlers are chained.
void install_signal_handlers(bool chain_existing) noexcept;

// Writes rank-<rank>-<pid>.h5 now. Never throws; logs and counts failures.
bool write_own_file(bool complete, int exit_status) noexcept;

}  // namespace rtrace::tracer
