// What the Fortran MPI wrappers share (mpi_fortran*.cpp): the next binding
// of a symbol, handle conversions to size payloads, the sentinels of
// MPI_IN_PLACE and MPI_STATUS_IGNORE, and the macros that define one
// wrapper under every Fortran name mangling. See mpi_fortran.cpp.
#pragma once

#include <mpi.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "mpi_common.hpp"
#include "pmpi.hpp"
#include "tracer.hpp"

namespace rtrace::tracer::mpi {

using Fint = MPI_Fint;

// The next definition of `name` after this library: never RTLD_DEFAULT,
// which would find the wrapper itself.
template <class Fn>
inline Fn next_symbol(const char* name) noexcept {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

inline void missing(const char* name, MPI_Fint* ierr) noexcept {
  if (auto* s = state()) s->error(std::string("Fortran MPI wrapper: ") + name + " not found after the tracer");
  if (ierr) *ierr = MPI_ERR_INTERN;
}

// Addresses of a Fortran sentinel (a common block) in whichever mangling the
// MPI defines; the binding compares argument addresses against it.
class Sentinel {
 public:
  explicit Sentinel(const char* base) noexcept {
    const std::string b = base;
    std::string upper;
    for (char c : b) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    int i = 0;
    for (const std::string& n : {b + "_", b + "__", b, upper}) addr_[i++] = dlsym(RTLD_DEFAULT, n.c_str());
  }
  bool is(const void* p) const noexcept {
    if (!p) return false;
    for (const void* a : addr_)
      if (a == p) return true;
    return false;
  }

 private:
  const void* addr_[4] = {};
};

inline const Sentinel& status_ignore() {
  static const Sentinel s("mpi_fortran_status_ignore");
  return s;
}
inline const Sentinel& in_place() {
  static const Sentinel s("mpi_fortran_in_place");
  return s;
}

inline MPI_Datatype type_of(const MPI_Fint* t) noexcept {
  static const auto f2c = RTRACE_PMPI(Type_f2c);
  return (f2c && t) ? f2c(*t) : MPI_DATATYPE_NULL;
}
inline MPI_Comm comm_of(const MPI_Fint* c) noexcept {
  static const auto f2c = RTRACE_PMPI(Comm_f2c);
  return (f2c && c) ? f2c(*c) : MPI_COMM_NULL;
}
inline std::int64_t bytes(const MPI_Fint* type, std::int64_t count) noexcept {
  MPI_Datatype t = type_of(type);
  return t == MPI_DATATYPE_NULL ? 0 : type_bytes(t, count);
}
inline std::int64_t size_of(const MPI_Fint* comm) noexcept {
  MPI_Comm c = comm_of(comm);
  return c == MPI_COMM_NULL ? 0 : comm_size(c);
}
inline bool root_here(const MPI_Fint* comm, const MPI_Fint* root) noexcept {
  MPI_Comm c = comm_of(comm);
  return c != MPI_COMM_NULL && root && is_root(c, *root);
}
inline std::int64_t sum(const MPI_Fint* counts, std::int64_t n) noexcept {
  std::int64_t total = 0;
  for (std::int64_t i = 0; counts && i < n; ++i) total += counts[i];
  return total;
}
// Bytes received per a Fortran status (an MPI_Fint array, or mpi_f08's
// TYPE(MPI_Status), which has the same layout).
inline std::int64_t received(const MPI_Fint* status) noexcept {
  static const auto f2c = RTRACE_PMPI(Status_f2c);
  MPI_Status c{};
  if (!f2c || f2c(status, &c) != MPI_SUCCESS) return 0;
  return received_bytes(&c);
}

// A status the caller asked to ignore is replaced by one of ours, so the
// received size can still be read (as the C layer does).
constexpr int kStatusInts = 16;  // >= MPI_STATUS_SIZE (6 in Open MPI)

// Bytes of counts[i] x types[i] over n Fortran handles (the w-forms).
inline std::int64_t typed_counts(const Fint* counts, const Fint* types, std::int64_t n) noexcept {
  std::int64_t total = 0;
  for (std::int64_t i = 0; counts && types && i < n; ++i) total += bytes(&types[i], counts[i]);
  return total;
}

// In/out-degree of a Fortran communicator's topology (neighbourhood collectives).
inline bool fortran_neighbor_degrees(const Fint* comm, int& in, int& out) noexcept {
  MPI_Comm c = comm_of(comm);
  return c != MPI_COMM_NULL && neighbor_degrees(c, in, out);
}

// The real binding runs with the tracer marked internal: an MPI whose Fortran
// layer calls the C MPI_* (not PMPI_*) is then not counted twice.
#define RTRACE_FORWARD(...)  \
  do {                       \
    ::rtrace::tracer::InternalScope internal_; \
    real(__VA_ARGS__);       \
  } while (0)

}  // namespace rtrace::tracer::mpi

#define RTRACE_UNPAREN(...) __VA_ARGS__

// One wrapper per symbol name; each forwards to the next definition of its
// own name. PARAMS and ARGS are parenthesised lists; LEAD are the impl's
// arguments before the wrapper's own (e.g. the MpiFn of a shared impl).
#define RTRACE_F_ONE(sym, impl, Fn, LEAD, PARAMS, ARGS)                      \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER void sym PARAMS {                         \
    static const Fn real = next_symbol<Fn>(#sym);                            \
    impl(RTRACE_UNPAREN LEAD real, #sym, RTRACE_UNPAREN ARGS);               \
  }
#define RTRACE_FORTRAN(lower, UPPER, impl, Fn, LEAD, PARAMS, ARGS)           \
  RTRACE_F_ONE(lower##_, impl, Fn, LEAD, PARAMS, ARGS)                       \
  RTRACE_F_ONE(lower##__, impl, Fn, LEAD, PARAMS, ARGS)                      \
  RTRACE_F_ONE(lower, impl, Fn, LEAD, PARAMS, ARGS)                          \
  RTRACE_F_ONE(UPPER, impl, Fn, LEAD, PARAMS, ARGS)                          \
  RTRACE_F_ONE(lower##_f08_, impl, Fn, LEAD, PARAMS, ARGS)


// A wrapper whose body is written in place (no shared *_impl): the payload
// statements (the variadic tail) run when the call is traced, before the real
// binding, and may read the parameters by name; IERR names the ierror
// parameter. Time only: RTRACE_F_PLAIN.
#define RTRACE_F_BODY_ONE(sym, MPIFN, PARAMS, ARGS, IERR, ...)                   \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER void sym PARAMS {                             \
    using Fn = void(*) PARAMS;                                                   \
    static const Fn real = ::rtrace::tracer::mpi::next_symbol<Fn>(#sym);         \
    if (!real) return ::rtrace::tracer::mpi::missing(#sym, IERR);                \
    ::rtrace::tracer::mpi::Timed t(::rtrace::tracer::MpiFn::MPIFN);              \
    if (t.active()) {                                                            \
      __VA_ARGS__;                                                               \
    }                                                                            \
    RTRACE_FORWARD ARGS;                                                         \
  }
#define RTRACE_F_BODY(lower, UPPER, MPIFN, PARAMS, ARGS, IERR, ...)      \
  RTRACE_F_BODY_ONE(lower##_, MPIFN, PARAMS, ARGS, IERR, __VA_ARGS__)    \
  RTRACE_F_BODY_ONE(lower##__, MPIFN, PARAMS, ARGS, IERR, __VA_ARGS__)   \
  RTRACE_F_BODY_ONE(lower, MPIFN, PARAMS, ARGS, IERR, __VA_ARGS__)       \
  RTRACE_F_BODY_ONE(UPPER, MPIFN, PARAMS, ARGS, IERR, __VA_ARGS__)       \
  RTRACE_F_BODY_ONE(lower##_f08_, MPIFN, PARAMS, ARGS, IERR, __VA_ARGS__)
#define RTRACE_F_PLAIN(lower, UPPER, MPIFN, PARAMS, ARGS, IERR) \
  RTRACE_F_BODY(lower, UPPER, MPIFN, PARAMS, ARGS, IERR, (void)t)

// A poll (no payload): DONE, read after the call when it succeeded, says it
// found what it polled for (a LOGICAL flag is true when nonzero).
#define RTRACE_F_POLL_ONE(sym, MPIFN, PARAMS, ARGS, IERR, DONE)                        \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER void sym PARAMS {                                   \
    using Fn = void(*) PARAMS;                                                         \
    static const Fn real = ::rtrace::tracer::mpi::next_symbol<Fn>(#sym);               \
    if (!real) return ::rtrace::tracer::mpi::missing(#sym, IERR);                      \
    ::rtrace::tracer::mpi::Timed t(::rtrace::tracer::MpiFn::MPIFN);                    \
    RTRACE_FORWARD ARGS;                                                               \
    t.completed((!(IERR) || *(IERR) == MPI_SUCCESS) && (DONE));                        \
  }
#define RTRACE_F_POLL(lower, UPPER, MPIFN, PARAMS, ARGS, IERR, DONE)      \
  RTRACE_F_POLL_ONE(lower##_, MPIFN, PARAMS, ARGS, IERR, DONE)            \
  RTRACE_F_POLL_ONE(lower##__, MPIFN, PARAMS, ARGS, IERR, DONE)           \
  RTRACE_F_POLL_ONE(lower, MPIFN, PARAMS, ARGS, IERR, DONE)               \
  RTRACE_F_POLL_ONE(UPPER, MPIFN, PARAMS, ARGS, IERR, DONE)               \
  RTRACE_F_POLL_ONE(lower##_f08_, MPIFN, PARAMS, ARGS, IERR, DONE)

// A blocking call whose received (READ_OR_SENT=received) or sent payload is
// the count in its status: the app's status, or the tracer's own when it
// passed MPI_STATUS_IGNORE; ARGS names `st` and `e` for the status and ierror.
#define RTRACE_F_STATUS_ONE(sym, MPIFN, PARAMS, ARGS, STATUS, IERR, SIDE)                    \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER void sym PARAMS {                                         \
    using Fn = void(*) PARAMS;                                                               \
    static const Fn real = ::rtrace::tracer::mpi::next_symbol<Fn>(#sym);                     \
    if (!real) return ::rtrace::tracer::mpi::missing(#sym, IERR);                            \
    ::rtrace::tracer::mpi::Timed t(::rtrace::tracer::MpiFn::MPIFN);                          \
    ::rtrace::tracer::mpi::Fint own_status[::rtrace::tracer::mpi::kStatusInts] = {};         \
    ::rtrace::tracer::mpi::Fint own_ierr = MPI_SUCCESS;                                      \
    ::rtrace::tracer::mpi::Fint* st =                                                        \
        (t.active() && ::rtrace::tracer::mpi::status_ignore().is(STATUS)) ? own_status : STATUS; \
    ::rtrace::tracer::mpi::Fint* e = IERR ? IERR : &own_ierr;                                \
    RTRACE_FORWARD ARGS;                                                                     \
    if (t.active() && *e == MPI_SUCCESS) t.SIDE = ::rtrace::tracer::mpi::received(st);       \
  }
#define RTRACE_F_STATUS(lower, UPPER, MPIFN, PARAMS, ARGS, STATUS, IERR, SIDE)    \
  RTRACE_F_STATUS_ONE(lower##_, MPIFN, PARAMS, ARGS, STATUS, IERR, SIDE)          \
  RTRACE_F_STATUS_ONE(lower##__, MPIFN, PARAMS, ARGS, STATUS, IERR, SIDE)         \
  RTRACE_F_STATUS_ONE(lower, MPIFN, PARAMS, ARGS, STATUS, IERR, SIDE)             \
  RTRACE_F_STATUS_ONE(UPPER, MPIFN, PARAMS, ARGS, STATUS, IERR, SIDE)             \
  RTRACE_F_STATUS_ONE(lower##_f08_, MPIFN, PARAMS, ARGS, STATUS, IERR, SIDE)
