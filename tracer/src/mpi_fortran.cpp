// Fortran MPI interposition. Open MPI's Fortran bindings (mpif.h, `use mpi`,
// `use mpi_f08`) call PMPI_* directly, so the C wrappers never see a Fortran
// app's calls. The tracer therefore also defines the Fortran entry points of
// the calls the C layer wraps, in the usual manglings
//   mpi_send_  mpi_send__  mpi_send  MPI_SEND   (mpif.h / use mpi)
//   mpi_send_f08_                               (use mpi_f08, Open MPI 4.1)
// and forwards each to the next definition of the same symbol (dlsym
// RTLD_NEXT: the MPI's own binding, which does the Fortran conversions).
// Handles are only converted (PMPI_*_f2c via dlsym) to size payloads.
//
// Fortran passes everything by reference; handles are MPI_Fint (mpi_f08's
// TYPE(MPI_Comm) etc. hold one integer, so a pointer to it is the same). The
// f08 `ierror` is OPTIONAL: a null pointer when absent.
#include <mpi.h>

#include <dlfcn.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "mpi_common.hpp"
#include "mpi_fortran.hpp"
#include "pmpi.hpp"
#include "tracer.hpp"

namespace rtrace::tracer::mpi {
namespace {

// Each wrapper: the real binding for its own symbol name, looked up once.
using InitFn = void (*)(Fint*);
using InitThreadFn = void (*)(Fint*, Fint*, Fint*);
using FinalizeFn = void (*)(Fint*);
using PtpFn = void (*)(void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*);  // Send, Ssend
using RecvFn = void (*)(void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*);
using IptpFn = void (*)(void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*);  // Isend, Irecv
using WaitFn = void (*)(Fint*, Fint*, Fint*);
using WaitallFn = void (*)(Fint*, Fint*, Fint*, Fint*);
using WaitanyFn = void (*)(Fint*, Fint*, Fint*, Fint*, Fint*);
using TestFn = void (*)(Fint*, Fint*, Fint*, Fint*);
using SendrecvFn = void (*)(void*, Fint*, Fint*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*,
                            Fint*);
using BcastFn = void (*)(void*, Fint*, Fint*, Fint*, Fint*, Fint*);
using ReduceFn = void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*);
using AllreduceFn = void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*);
using ReduceScatterFn = void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*);
using GatherLikeFn = void (*)(void*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*, Fint*);  // Gather, Scatter
using AllgatherLikeFn = void (*)(void*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*);     // Allgather, Alltoall
using AllgathervFn = void (*)(void*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*, Fint*);
using AlltoallvFn = void (*)(void*, Fint*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*, Fint*);
using BarrierFn = void (*)(Fint*, Fint*);
using GathervFn = void (*)(void*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*);
using ScattervFn = void (*)(void*, Fint*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*, Fint*);

RTRACE_MPI_WRAPPER void init_impl(InitFn real, const char* name, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Fint own = MPI_SUCCESS;
  Fint* e = ierr ? ierr : &own;
  {
    Timed t(MpiFn::Init);
    RTRACE_FORWARD(e);
  }
  if (*e == MPI_SUCCESS) after_init();
}

RTRACE_MPI_WRAPPER void init_thread_impl(InitThreadFn real, const char* name, Fint* required, Fint* provided, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Fint own = MPI_SUCCESS;
  Fint* e = ierr ? ierr : &own;
  {
    Timed t(MpiFn::Init_thread);
    RTRACE_FORWARD(required, provided, e);
  }
  if (*e == MPI_SUCCESS) after_init();
}

RTRACE_MPI_WRAPPER void finalize_impl(FinalizeFn real, const char* name, Fint* ierr) {
  if (!real) return missing(name, ierr);
  const bool traced = finalize_begin();
  const std::int64_t t0 = monotonic_ns();
  RTRACE_FORWARD(ierr);
  finalize_end(traced, monotonic_ns() - t0);
}

RTRACE_MPI_WRAPPER void ptp_impl(MpiFn fn, PtpFn real, const char* name, void* buf, Fint* count, Fint* type, Fint* dest, Fint* tag,
              Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(fn);
  if (t.active() && count) t.sent = bytes(type, *count);
  RTRACE_FORWARD(buf, count, type, dest, tag, comm, ierr);
}

RTRACE_MPI_WRAPPER void recv_impl(RecvFn real, const char* name, void* buf, Fint* count, Fint* type, Fint* source, Fint* tag,
               Fint* comm, Fint* status, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Recv);
  Fint own_status[kStatusInts] = {};
  Fint own_ierr = MPI_SUCCESS;
  Fint* st = (t.active() && status_ignore().is(status)) ? own_status : status;
  Fint* e = ierr ? ierr : &own_ierr;
  RTRACE_FORWARD(buf, count, type, source, tag, comm, st, e);
  if (t.active() && *e == MPI_SUCCESS) t.received = received(st);
}

RTRACE_MPI_WRAPPER void iptp_impl(MpiFn fn, IptpFn real, const char* name, void* buf, Fint* count, Fint* type, Fint* peer, Fint* tag,
               Fint* comm, Fint* request, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(fn);
  // Non-blocking receives book the posted size (as in the C layer).
  if (t.active() && count) (fn == MpiFn::Isend ? t.sent : t.received) = bytes(type, *count);
  RTRACE_FORWARD(buf, count, type, peer, tag, comm, request, ierr);
}

RTRACE_MPI_WRAPPER void wait_impl(WaitFn real, const char* name, Fint* request, Fint* status, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Wait);
  RTRACE_FORWARD(request, status, ierr);
}

RTRACE_MPI_WRAPPER void waitall_impl(WaitallFn real, const char* name, Fint* count, Fint* requests, Fint* statuses, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Waitall);
  RTRACE_FORWARD(count, requests, statuses, ierr);
}

RTRACE_MPI_WRAPPER void waitany_impl(WaitanyFn real, const char* name, Fint* count, Fint* requests, Fint* index, Fint* status,
                  Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Waitany);
  RTRACE_FORWARD(count, requests, index, status, ierr);
}

RTRACE_MPI_WRAPPER void test_impl(TestFn real, const char* name, Fint* request, Fint* flag, Fint* status, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Test);
  RTRACE_FORWARD(request, flag, status, ierr);
  t.completed((!ierr || *ierr == MPI_SUCCESS) && flag && *flag);
}

RTRACE_MPI_WRAPPER void sendrecv_impl(SendrecvFn real, const char* name, void* sendbuf, Fint* sendcount, Fint* sendtype, Fint* dest,
                   Fint* sendtag, void* recvbuf, Fint* recvcount, Fint* recvtype, Fint* source, Fint* recvtag,
                   Fint* comm, Fint* status, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Sendrecv);
  Fint own_status[kStatusInts] = {};
  Fint own_ierr = MPI_SUCCESS;
  Fint* st = (t.active() && status_ignore().is(status)) ? own_status : status;
  Fint* e = ierr ? ierr : &own_ierr;
  RTRACE_FORWARD(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, st,
                 e);
  if (t.active() && *e == MPI_SUCCESS) {
    t.sent = sendcount ? bytes(sendtype, *sendcount) : 0;
    t.received = received(st);
  }
}

RTRACE_MPI_WRAPPER void bcast_impl(BcastFn real, const char* name, void* buf, Fint* count, Fint* type, Fint* root, Fint* comm,
                Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Bcast);
  if (t.active() && count) (root_here(comm, root) ? t.sent : t.received) = bytes(type, *count);
  RTRACE_FORWARD(buf, count, type, root, comm, ierr);
}

RTRACE_MPI_WRAPPER void reduce_impl(ReduceFn real, const char* name, void* sendbuf, void* recvbuf, Fint* count, Fint* type, Fint* op,
                 Fint* root, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Reduce);
  if (t.active() && count) {
    t.sent = bytes(type, *count);
    if (root_here(comm, root)) t.received = t.sent;
  }
  RTRACE_FORWARD(sendbuf, recvbuf, count, type, op, root, comm, ierr);
}

RTRACE_MPI_WRAPPER void allreduce_impl(AllreduceFn real, const char* name, void* sendbuf, void* recvbuf, Fint* count, Fint* type,
                    Fint* op, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Allreduce);
  if (t.active() && count) t.sent = t.received = bytes(type, *count);
  RTRACE_FORWARD(sendbuf, recvbuf, count, type, op, comm, ierr);
}

RTRACE_MPI_WRAPPER void reduce_scatter_impl(ReduceScatterFn real, const char* name, void* sendbuf, void* recvbuf, Fint* recvcounts,
                         Fint* type, Fint* op, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Reduce_scatter);
  if (t.active() && recvcounts) {
    t.sent = bytes(type, sum(recvcounts, size_of(comm)));
    MPI_Comm c = comm_of(comm);
    const int r = c == MPI_COMM_NULL ? -1 : comm_rank(c);
    if (r >= 0) t.received = bytes(type, recvcounts[r]);
  }
  RTRACE_FORWARD(sendbuf, recvbuf, recvcounts, type, op, comm, ierr);
}

// Allgather and Alltoall (same signature, different payloads).
RTRACE_MPI_WRAPPER void allgather_like_impl(MpiFn fn, AllgatherLikeFn real, const char* name, void* sendbuf, Fint* sendcount,
                         Fint* sendtype, void* recvbuf, Fint* recvcount, Fint* recvtype, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(fn);
  if (t.active() && sendcount && recvcount) {
    const std::int64_t n = size_of(comm);
    const bool inplace = in_place().is(sendbuf);
    if (fn == MpiFn::Allgather) {
      t.sent = inplace ? bytes(recvtype, *recvcount) : bytes(sendtype, *sendcount);
      t.received = bytes(recvtype, static_cast<std::int64_t>(*recvcount) * n);
    } else {
      t.received = bytes(recvtype, static_cast<std::int64_t>(*recvcount) * n);
      t.sent = inplace ? t.received : bytes(sendtype, static_cast<std::int64_t>(*sendcount) * n);
    }
  }
  RTRACE_FORWARD(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr);
}

RTRACE_MPI_WRAPPER void allgatherv_impl(AllgathervFn real, const char* name, void* sendbuf, Fint* sendcount, Fint* sendtype,
                     void* recvbuf, Fint* recvcounts, Fint* displs, Fint* recvtype, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Allgatherv);
  if (t.active() && sendcount) {
    t.sent = in_place().is(sendbuf) ? 0 : bytes(sendtype, *sendcount);
    t.received = bytes(recvtype, sum(recvcounts, size_of(comm)));
  }
  RTRACE_FORWARD(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierr);
}

RTRACE_MPI_WRAPPER void alltoallv_impl(AlltoallvFn real, const char* name, void* sendbuf, Fint* sendcounts, Fint* sdispls,
                    Fint* sendtype, void* recvbuf, Fint* recvcounts, Fint* rdispls, Fint* recvtype, Fint* comm,
                    Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Alltoallv);
  if (t.active()) {
    const std::int64_t n = size_of(comm);
    t.received = bytes(recvtype, sum(recvcounts, n));
    t.sent = in_place().is(sendbuf) ? t.received : bytes(sendtype, sum(sendcounts, n));
  }
  RTRACE_FORWARD(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, ierr);
}

RTRACE_MPI_WRAPPER void barrier_impl(BarrierFn real, const char* name, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Barrier);
  RTRACE_FORWARD(comm, ierr);
}

// Gather and Scatter (same signature).
RTRACE_MPI_WRAPPER void gather_like_impl(MpiFn fn, GatherLikeFn real, const char* name, void* sendbuf, Fint* sendcount, Fint* sendtype,
                      void* recvbuf, Fint* recvcount, Fint* recvtype, Fint* root, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(fn);
  if (t.active() && sendcount && recvcount) {
    const bool at_root = root_here(comm, root);
    const std::int64_t n = at_root ? size_of(comm) : 0;
    if (fn == MpiFn::Gather) {
      t.sent = (at_root && in_place().is(sendbuf)) ? bytes(recvtype, *recvcount) : bytes(sendtype, *sendcount);
      if (at_root) t.received = bytes(recvtype, static_cast<std::int64_t>(*recvcount) * n);
    } else {
      if (at_root) t.sent = bytes(sendtype, static_cast<std::int64_t>(*sendcount) * n);
      t.received = (at_root && in_place().is(recvbuf)) ? bytes(sendtype, *sendcount) : bytes(recvtype, *recvcount);
    }
  }
  RTRACE_FORWARD(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr);
}

RTRACE_MPI_WRAPPER void gatherv_impl(GathervFn real, const char* name, void* sendbuf, Fint* sendcount, Fint* sendtype, void* recvbuf,
                  Fint* recvcounts, Fint* displs, Fint* recvtype, Fint* root, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Gatherv);
  if (t.active() && sendcount) {
    t.sent = in_place().is(sendbuf) ? 0 : bytes(sendtype, *sendcount);
    if (root_here(comm, root)) t.received = bytes(recvtype, sum(recvcounts, size_of(comm)));
  }
  RTRACE_FORWARD(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, ierr);
}

RTRACE_MPI_WRAPPER void scatterv_impl(ScattervFn real, const char* name, void* sendbuf, Fint* sendcounts, Fint* displs, Fint* sendtype,
                   void* recvbuf, Fint* recvcount, Fint* recvtype, Fint* root, Fint* comm, Fint* ierr) {
  if (!real) return missing(name, ierr);
  Timed t(MpiFn::Scatterv);
  if (t.active() && recvcount) {
    if (root_here(comm, root)) t.sent = bytes(sendtype, sum(sendcounts, size_of(comm)));
    t.received = in_place().is(recvbuf) ? 0 : bytes(recvtype, *recvcount);
  }
  RTRACE_FORWARD(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr);
}

}  // namespace
}  // namespace rtrace::tracer::mpi

using namespace rtrace::tracer;
using namespace rtrace::tracer::mpi;

extern "C" {

RTRACE_FORTRAN(mpi_init, MPI_INIT, init_impl, InitFn, (), (Fint* e), (e))
RTRACE_FORTRAN(mpi_init_thread, MPI_INIT_THREAD, init_thread_impl, InitThreadFn, (),
               (Fint* req, Fint* prov, Fint* e), (req, prov, e))
RTRACE_FORTRAN(mpi_finalize, MPI_FINALIZE, finalize_impl, FinalizeFn, (), (Fint* e), (e))

RTRACE_FORTRAN(mpi_send, MPI_SEND, ptp_impl, PtpFn, (MpiFn::Send,),
               (void* b, Fint* n, Fint* ty, Fint* d, Fint* tg, Fint* c, Fint* e), (b, n, ty, d, tg, c, e))
RTRACE_FORTRAN(mpi_ssend, MPI_SSEND, ptp_impl, PtpFn, (MpiFn::Ssend,),
               (void* b, Fint* n, Fint* ty, Fint* d, Fint* tg, Fint* c, Fint* e), (b, n, ty, d, tg, c, e))
RTRACE_FORTRAN(mpi_recv, MPI_RECV, recv_impl, RecvFn, (),
               (void* b, Fint* n, Fint* ty, Fint* s, Fint* tg, Fint* c, Fint* st, Fint* e),
               (b, n, ty, s, tg, c, st, e))
RTRACE_FORTRAN(mpi_isend, MPI_ISEND, iptp_impl, IptpFn, (MpiFn::Isend,),
               (void* b, Fint* n, Fint* ty, Fint* d, Fint* tg, Fint* c, Fint* rq, Fint* e),
               (b, n, ty, d, tg, c, rq, e))
RTRACE_FORTRAN(mpi_irecv, MPI_IRECV, iptp_impl, IptpFn, (MpiFn::Irecv,),
               (void* b, Fint* n, Fint* ty, Fint* s, Fint* tg, Fint* c, Fint* rq, Fint* e),
               (b, n, ty, s, tg, c, rq, e))
RTRACE_FORTRAN(mpi_wait, MPI_WAIT, wait_impl, WaitFn, (), (Fint* rq, Fint* st, Fint* e), (rq, st, e))
RTRACE_FORTRAN(mpi_waitall, MPI_WAITALL, waitall_impl, WaitallFn, (), (Fint* n, Fint* rq, Fint* st, Fint* e),
               (n, rq, st, e))
RTRACE_FORTRAN(mpi_waitany, MPI_WAITANY, waitany_impl, WaitanyFn, (),
               (Fint* n, Fint* rq, Fint* i, Fint* st, Fint* e), (n, rq, i, st, e))
RTRACE_FORTRAN(mpi_test, MPI_TEST, test_impl, TestFn, (), (Fint* rq, Fint* f, Fint* st, Fint* e), (rq, f, st, e))
RTRACE_FORTRAN(mpi_sendrecv, MPI_SENDRECV, sendrecv_impl, SendrecvFn, (),
               (void* sb, Fint* sn, Fint* sty, Fint* d, Fint* stg, void* rb, Fint* rn, Fint* rty, Fint* s,
                Fint* rtg, Fint* c, Fint* st, Fint* e),
               (sb, sn, sty, d, stg, rb, rn, rty, s, rtg, c, st, e))
RTRACE_FORTRAN(mpi_bcast, MPI_BCAST, bcast_impl, BcastFn, (),
               (void* b, Fint* n, Fint* ty, Fint* r, Fint* c, Fint* e), (b, n, ty, r, c, e))
RTRACE_FORTRAN(mpi_reduce, MPI_REDUCE, reduce_impl, ReduceFn, (),
               (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* r, Fint* c, Fint* e),
               (sb, rb, n, ty, op, r, c, e))
RTRACE_FORTRAN(mpi_allreduce, MPI_ALLREDUCE, allreduce_impl, AllreduceFn, (),
               (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* e), (sb, rb, n, ty, op, c, e))
RTRACE_FORTRAN(mpi_reduce_scatter, MPI_REDUCE_SCATTER, reduce_scatter_impl, ReduceScatterFn, (),
               (void* sb, void* rb, Fint* rn, Fint* ty, Fint* op, Fint* c, Fint* e), (sb, rb, rn, ty, op, c, e))
RTRACE_FORTRAN(mpi_allgather, MPI_ALLGATHER, allgather_like_impl, AllgatherLikeFn, (MpiFn::Allgather,),
               (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* e),
               (sb, sn, sty, rb, rn, rty, c, e))
RTRACE_FORTRAN(mpi_alltoall, MPI_ALLTOALL, allgather_like_impl, AllgatherLikeFn, (MpiFn::Alltoall,),
               (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* e),
               (sb, sn, sty, rb, rn, rty, c, e))
RTRACE_FORTRAN(mpi_allgatherv, MPI_ALLGATHERV, allgatherv_impl, AllgathervFn, (),
               (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* dis, Fint* rty, Fint* c, Fint* e),
               (sb, sn, sty, rb, rn, dis, rty, c, e))
RTRACE_FORTRAN(mpi_alltoallv, MPI_ALLTOALLV, alltoallv_impl, AlltoallvFn, (),
               (void* sb, Fint* sn, Fint* sd, Fint* sty, void* rb, Fint* rn, Fint* rd, Fint* rty, Fint* c, Fint* e),
               (sb, sn, sd, sty, rb, rn, rd, rty, c, e))
RTRACE_FORTRAN(mpi_barrier, MPI_BARRIER, barrier_impl, BarrierFn, (), (Fint* c, Fint* e), (c, e))
RTRACE_FORTRAN(mpi_gather, MPI_GATHER, gather_like_impl, GatherLikeFn, (MpiFn::Gather,),
               (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* r, Fint* c, Fint* e),
               (sb, sn, sty, rb, rn, rty, r, c, e))
RTRACE_FORTRAN(mpi_scatter, MPI_SCATTER, gather_like_impl, GatherLikeFn, (MpiFn::Scatter,),
               (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* r, Fint* c, Fint* e),
               (sb, sn, sty, rb, rn, rty, r, c, e))
RTRACE_FORTRAN(mpi_gatherv, MPI_GATHERV, gatherv_impl, GathervFn, (),
               (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* dis, Fint* rty, Fint* r, Fint* c, Fint* e),
               (sb, sn, sty, rb, rn, dis, rty, r, c, e))
RTRACE_FORTRAN(mpi_scatterv, MPI_SCATTERV, scatterv_impl, ScattervFn, (),
               (void* sb, Fint* sn, Fint* dis, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* r, Fint* c, Fint* e),
               (sb, sn, dis, sty, rb, rn, rty, r, c, e))

}  // extern "C"
