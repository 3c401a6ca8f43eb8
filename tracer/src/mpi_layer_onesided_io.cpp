// C wrappers of one-sided communication, communicator construction and MPI-IO
// (issue 25). Payloads:
//  * Put/Rput/Accumulate: the origin data sent; Get/Rget: the origin data
//    received; Get_accumulate: origin sent, result received;
//    Fetch_and_op: one element each way; Compare_and_swap: two elements sent
//    (origin and compare), one received. Synchronisation (fence, lock, flush,
//    post/start/complete/wait) and window creation: time only.
//  * Communicators (split, dup, create, free): time only (they synchronise).
//  * MPI-IO: bytes written are "sent", bytes read "received"; blocking calls
//    take the count from the status (what was really read or written: a read
//    at the end of a file gets less), non-blocking ones book the posted size.
#include <mpi.h>

#include <cstdint>

#include "mpi_common.hpp"
#include "tracer.hpp"

using namespace rtrace::tracer;
using namespace rtrace::tracer::mpi;

// A blocking MPI-IO read or write: the payload from the status (the app's,
// or ours when it passed MPI_STATUS_IGNORE). WRITE: 1 books it as sent.
#define RTRACE_C_FILE_RW(name, WRITE, PARAMS, ARGS_BEFORE_STATUS)                     \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_##name PARAMS {                            \
    RTRACE_REAL(MPI_##name);                                                          \
    Timed t(MpiFn::name);                                                             \
    MPI_Status own;                                                                   \
    MPI_Status* st = (status == MPI_STATUS_IGNORE) ? &own : status;                   \
    const int rc = real_MPI_##name(RTRACE_UNPAREN_C ARGS_BEFORE_STATUS, t.active() ? st : status); \
    if (t.active() && rc == MPI_SUCCESS) (WRITE ? t.sent : t.received) = received_bytes(st); \
    return rc;                                                                        \
  }
// A non-blocking MPI-IO read or write: the posted size.
#define RTRACE_C_FILE_IRW(name, WRITE, PARAMS, ARGS)       \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_##name PARAMS { \
    RTRACE_REAL(MPI_##name);                               \
    Timed t(MpiFn::name);                                  \
    if (t.active()) (WRITE ? t.sent : t.received) = type_bytes(ty, n); \
    return real_MPI_##name ARGS;                           \
  }
#define RTRACE_UNPAREN_C(...) __VA_ARGS__

extern "C" {

// ---- one-sided communication
RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Put(const void* origin, int n, MPI_Datatype ty, int target, MPI_Aint disp,
                                           int target_n, MPI_Datatype target_ty, MPI_Win win) {
  RTRACE_REAL(MPI_Put);
  Timed t(MpiFn::Put);
  if (t.active()) t.sent = type_bytes(ty, n);
  return real_MPI_Put(origin, n, ty, target, disp, target_n, target_ty, win);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Rput(const void* origin, int n, MPI_Datatype ty, int target, MPI_Aint disp,
                                            int target_n, MPI_Datatype target_ty, MPI_Win win, MPI_Request* rq) {
  RTRACE_REAL(MPI_Rput);
  Timed t(MpiFn::Rput);
  if (t.active()) t.sent = type_bytes(ty, n);
  return real_MPI_Rput(origin, n, ty, target, disp, target_n, target_ty, win, rq);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Get(void* origin, int n, MPI_Datatype ty, int target, MPI_Aint disp,
                                           int target_n, MPI_Datatype target_ty, MPI_Win win) {
  RTRACE_REAL(MPI_Get);
  Timed t(MpiFn::Get);
  if (t.active()) t.received = type_bytes(ty, n);
  return real_MPI_Get(origin, n, ty, target, disp, target_n, target_ty, win);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Rget(void* origin, int n, MPI_Datatype ty, int target, MPI_Aint disp,
                                            int target_n, MPI_Datatype target_ty, MPI_Win win, MPI_Request* rq) {
  RTRACE_REAL(MPI_Rget);
  Timed t(MpiFn::Rget);
  if (t.active()) t.received = type_bytes(ty, n);
  return real_MPI_Rget(origin, n, ty, target, disp, target_n, target_ty, win, rq);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Accumulate(const void* origin, int n, MPI_Datatype ty, int target,
                                                  MPI_Aint disp, int target_n, MPI_Datatype target_ty, MPI_Op op,
                                                  MPI_Win win) {
  RTRACE_REAL(MPI_Accumulate);
  Timed t(MpiFn::Accumulate);
  if (t.active()) t.sent = type_bytes(ty, n);
  return real_MPI_Accumulate(origin, n, ty, target, disp, target_n, target_ty, op, win);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Get_accumulate(const void* origin, int n, MPI_Datatype ty, void* result,
                                                      int result_n, MPI_Datatype result_ty, int target, MPI_Aint disp,
                                                      int target_n, MPI_Datatype target_ty, MPI_Op op, MPI_Win win) {
  RTRACE_REAL(MPI_Get_accumulate);
  Timed t(MpiFn::Get_accumulate);
  if (t.active()) {
    t.sent = type_bytes(ty, n);
    t.received = type_bytes(result_ty, result_n);
  }
  return real_MPI_Get_accumulate(origin, n, ty, result, result_n, result_ty, target, disp, target_n, target_ty, op,
                                 win);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Fetch_and_op(const void* origin, void* result, MPI_Datatype ty, int target,
                                                    MPI_Aint disp, MPI_Op op, MPI_Win win) {
  RTRACE_REAL(MPI_Fetch_and_op);
  Timed t(MpiFn::Fetch_and_op);
  if (t.active()) t.sent = t.received = type_bytes(ty, 1);
  return real_MPI_Fetch_and_op(origin, result, ty, target, disp, op, win);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Compare_and_swap(const void* origin, const void* compare, void* result,
                                                        MPI_Datatype ty, int target, MPI_Aint disp, MPI_Win win) {
  RTRACE_REAL(MPI_Compare_and_swap);
  Timed t(MpiFn::Compare_and_swap);
  if (t.active()) {
    t.sent = type_bytes(ty, 2);
    t.received = type_bytes(ty, 1);
  }
  return real_MPI_Compare_and_swap(origin, compare, result, ty, target, disp, win);
}

RTRACE_C_PLAIN(Win_fence, (int a, MPI_Win w), (a, w))
RTRACE_C_PLAIN(Win_lock, (int lock_type, int rank, int a, MPI_Win w), (lock_type, rank, a, w))
RTRACE_C_PLAIN(Win_unlock, (int rank, MPI_Win w), (rank, w))
RTRACE_C_PLAIN(Win_lock_all, (int a, MPI_Win w), (a, w))
RTRACE_C_PLAIN(Win_unlock_all, (MPI_Win w), (w))
RTRACE_C_PLAIN(Win_flush, (int rank, MPI_Win w), (rank, w))
RTRACE_C_PLAIN(Win_flush_all, (MPI_Win w), (w))
RTRACE_C_PLAIN(Win_flush_local, (int rank, MPI_Win w), (rank, w))
RTRACE_C_PLAIN(Win_flush_local_all, (MPI_Win w), (w))
RTRACE_C_PLAIN(Win_post, (MPI_Group g, int a, MPI_Win w), (g, a, w))
RTRACE_C_PLAIN(Win_start, (MPI_Group g, int a, MPI_Win w), (g, a, w))
RTRACE_C_PLAIN(Win_complete, (MPI_Win w), (w))
RTRACE_C_PLAIN(Win_wait, (MPI_Win w), (w))
RTRACE_C_PLAIN(Win_create, (void* base, MPI_Aint size, int unit, MPI_Info info, MPI_Comm c, MPI_Win* w),
               (base, size, unit, info, c, w))
RTRACE_C_PLAIN(Win_allocate, (MPI_Aint size, int unit, MPI_Info info, MPI_Comm c, void* base, MPI_Win* w),
               (size, unit, info, c, base, w))
RTRACE_C_PLAIN(Win_allocate_shared, (MPI_Aint size, int unit, MPI_Info info, MPI_Comm c, void* base, MPI_Win* w),
               (size, unit, info, c, base, w))
RTRACE_C_PLAIN(Win_create_dynamic, (MPI_Info info, MPI_Comm c, MPI_Win* w), (info, c, w))
RTRACE_C_PLAIN(Win_free, (MPI_Win * w), (w))

// ---- communicators
RTRACE_C_PLAIN(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm* out), (c, color, key, out))
RTRACE_C_PLAIN(Comm_split_type, (MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm* out),
               (c, type, key, info, out))
RTRACE_C_PLAIN(Comm_dup, (MPI_Comm c, MPI_Comm* out), (c, out))
RTRACE_C_PLAIN(Comm_create, (MPI_Comm c, MPI_Group g, MPI_Comm* out), (c, g, out))
RTRACE_C_PLAIN(Comm_free, (MPI_Comm * c), (c))

// ---- MPI-IO
RTRACE_C_PLAIN(File_open, (MPI_Comm c, const char* name, int amode, MPI_Info info, MPI_File* fh),
               (c, name, amode, info, fh))
RTRACE_C_PLAIN(File_close, (MPI_File * fh), (fh))
RTRACE_C_PLAIN(File_set_view,
               (MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char* datarep,
                MPI_Info info),
               (fh, disp, etype, filetype, datarep, info))
RTRACE_C_PLAIN(File_sync, (MPI_File fh), (fh))

RTRACE_C_FILE_RW(File_read, 0, (MPI_File fh, void* b, int n, MPI_Datatype ty, MPI_Status* status), (fh, b, n, ty))
RTRACE_C_FILE_RW(File_write, 1, (MPI_File fh, const void* b, int n, MPI_Datatype ty, MPI_Status* status),
                 (fh, b, n, ty))
RTRACE_C_FILE_RW(File_read_all, 0, (MPI_File fh, void* b, int n, MPI_Datatype ty, MPI_Status* status), (fh, b, n, ty))
RTRACE_C_FILE_RW(File_write_all, 1, (MPI_File fh, const void* b, int n, MPI_Datatype ty, MPI_Status* status),
                 (fh, b, n, ty))
RTRACE_C_FILE_RW(File_read_at, 0, (MPI_File fh, MPI_Offset off, void* b, int n, MPI_Datatype ty, MPI_Status* status),
                 (fh, off, b, n, ty))
RTRACE_C_FILE_RW(File_write_at, 1,
                 (MPI_File fh, MPI_Offset off, const void* b, int n, MPI_Datatype ty, MPI_Status* status),
                 (fh, off, b, n, ty))
RTRACE_C_FILE_RW(File_read_at_all, 0,
                 (MPI_File fh, MPI_Offset off, void* b, int n, MPI_Datatype ty, MPI_Status* status),
                 (fh, off, b, n, ty))
RTRACE_C_FILE_RW(File_write_at_all, 1,
                 (MPI_File fh, MPI_Offset off, const void* b, int n, MPI_Datatype ty, MPI_Status* status),
                 (fh, off, b, n, ty))

RTRACE_C_FILE_IRW(File_iread, 0, (MPI_File fh, void* b, int n, MPI_Datatype ty, MPI_Request* rq), (fh, b, n, ty, rq))
RTRACE_C_FILE_IRW(File_iwrite, 1, (MPI_File fh, const void* b, int n, MPI_Datatype ty, MPI_Request* rq),
                  (fh, b, n, ty, rq))
RTRACE_C_FILE_IRW(File_iread_all, 0, (MPI_File fh, void* b, int n, MPI_Datatype ty, MPI_Request* rq),
                  (fh, b, n, ty, rq))
RTRACE_C_FILE_IRW(File_iwrite_all, 1, (MPI_File fh, const void* b, int n, MPI_Datatype ty, MPI_Request* rq),
                  (fh, b, n, ty, rq))
RTRACE_C_FILE_IRW(File_iread_at, 0, (MPI_File fh, MPI_Offset off, void* b, int n, MPI_Datatype ty, MPI_Request* rq),
                  (fh, off, b, n, ty, rq))
RTRACE_C_FILE_IRW(File_iwrite_at, 1,
                  (MPI_File fh, MPI_Offset off, const void* b, int n, MPI_Datatype ty, MPI_Request* rq),
                  (fh, off, b, n, ty, rq))
RTRACE_C_FILE_IRW(File_iread_at_all, 0,
                  (MPI_File fh, MPI_Offset off, void* b, int n, MPI_Datatype ty, MPI_Request* rq),
                  (fh, off, b, n, ty, rq))
RTRACE_C_FILE_IRW(File_iwrite_at_all, 1,
                  (MPI_File fh, MPI_Offset off, const void* b, int n, MPI_Datatype ty, MPI_Request* rq),
                  (fh, off, b, n, ty, rq))

}  // extern "C"
