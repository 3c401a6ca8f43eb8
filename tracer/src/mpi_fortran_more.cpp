// Fortran bindings of the calls added to the C layer for issue 25
// (mpi_layer.cpp, mpi_layer_collectives.cpp, mpi_layer_onesided_io.cpp):
// completion and probes, matched receives, scans, the w-forms, non-blocking
// and neighbourhood collectives, one-sided communication, communicators and
// MPI-IO, in every mangling mpi_fortran.cpp handles (mpi_x_, mpi_x__, mpi_x,
// MPI_X, mpi_x_f08_). Payloads are those of the C wrappers; everything is by
// reference (mpif.h: INTEGER handles; mpi_f08: one-integer derived types),
// MPI_Aint and MPI_Offset arguments are INTEGER(KIND=MPI_ADDRESS_KIND /
// MPI_OFFSET_KIND), and a CHARACTER argument adds its length as a hidden last
// argument, which is passed on unchanged.
#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "mpi_common.hpp"
#include "mpi_fortran.hpp"
#include "tracer.hpp"

namespace rtrace::tracer::mpi {
namespace {

using Bytes = std::int64_t;

// Payload shapes on Fortran handles (the C layer's, converted).
void book_root_or_not(Timed& t, const Fint* comm, const Fint* root, Bytes b) noexcept {
  if (root_here(comm, root)) t.sent = b;
  else t.received = b;
}
void book_gather(Timed& t, const void* sb, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                 const Fint* root, const Fint* comm) noexcept {
  const bool at_root = root_here(comm, root);
  t.sent = (at_root && in_place().is(sb)) ? bytes(rty, *rn) : bytes(sty, *sn);
  if (at_root) t.received = bytes(rty, static_cast<Bytes>(*rn) * size_of(comm));
}
void book_gatherv(Timed& t, const void* sb, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                  const Fint* root, const Fint* comm) noexcept {
  t.sent = in_place().is(sb) ? 0 : bytes(sty, *sn);
  if (root_here(comm, root)) t.received = bytes(rty, sum(rn, size_of(comm)));
}
void book_scatter(Timed& t, const Fint* sn, const Fint* sty, const void* rb, const Fint* rn, const Fint* rty,
                  const Fint* root, const Fint* comm) noexcept {
  const bool at_root = root_here(comm, root);
  if (at_root) t.sent = bytes(sty, static_cast<Bytes>(*sn) * size_of(comm));
  t.received = (at_root && in_place().is(rb)) ? bytes(sty, *sn) : bytes(rty, *rn);
}
void book_scatterv(Timed& t, const Fint* sn, const Fint* sty, const void* rb, const Fint* rn, const Fint* rty,
                   const Fint* root, const Fint* comm) noexcept {
  if (root_here(comm, root)) t.sent = bytes(sty, sum(sn, size_of(comm)));
  t.received = in_place().is(rb) ? 0 : bytes(rty, *rn);
}
void book_allgather(Timed& t, const void* sb, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                    const Fint* comm) noexcept {
  t.sent = in_place().is(sb) ? bytes(rty, *rn) : bytes(sty, *sn);
  t.received = bytes(rty, static_cast<Bytes>(*rn) * size_of(comm));
}
void book_allgatherv(Timed& t, const void* sb, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                     const Fint* comm) noexcept {
  t.sent = in_place().is(sb) ? 0 : bytes(sty, *sn);
  t.received = bytes(rty, sum(rn, size_of(comm)));
}
void book_alltoall(Timed& t, const void* sb, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                   const Fint* comm) noexcept {
  const Bytes n = size_of(comm);
  t.received = bytes(rty, static_cast<Bytes>(*rn) * n);
  t.sent = in_place().is(sb) ? t.received : bytes(sty, static_cast<Bytes>(*sn) * n);
}
void book_alltoallv(Timed& t, const void* sb, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                    const Fint* comm) noexcept {
  const Bytes n = size_of(comm);
  t.received = bytes(rty, sum(rn, n));
  t.sent = in_place().is(sb) ? t.received : bytes(sty, sum(sn, n));
}
void book_alltoallw(Timed& t, const void* sb, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                    const Fint* comm) noexcept {
  const Bytes n = size_of(comm);
  t.received = typed_counts(rn, rty, n);
  t.sent = in_place().is(sb) ? t.received : typed_counts(sn, sty, n);
}
void book_reduce_scatter(Timed& t, const Fint* rn, const Fint* ty, const Fint* comm) noexcept {
  t.sent = bytes(ty, sum(rn, size_of(comm)));
  MPI_Comm c = comm_of(comm);
  const int r = c == MPI_COMM_NULL ? -1 : comm_rank(c);
  if (r >= 0 && rn) t.received = bytes(ty, rn[r]);
}
void book_neighbor_each(Timed& t, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                        const Fint* comm) noexcept {  // allgather, alltoall
  int in = 0, out = 0;
  if (!fortran_neighbor_degrees(comm, in, out)) return;
  t.sent = bytes(sty, static_cast<Bytes>(*sn) * out);
  t.received = bytes(rty, static_cast<Bytes>(*rn) * in);
}
void book_neighbor_allgatherv(Timed& t, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                              const Fint* comm) noexcept {
  int in = 0, out = 0;
  if (!fortran_neighbor_degrees(comm, in, out)) return;
  t.sent = bytes(sty, static_cast<Bytes>(*sn) * out);
  t.received = bytes(rty, sum(rn, in));
}
void book_neighbor_alltoallv(Timed& t, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                             const Fint* comm) noexcept {
  int in = 0, out = 0;
  if (!fortran_neighbor_degrees(comm, in, out)) return;
  t.sent = bytes(sty, sum(sn, out));
  t.received = bytes(rty, sum(rn, in));
}
void book_neighbor_alltoallw(Timed& t, const Fint* sn, const Fint* sty, const Fint* rn, const Fint* rty,
                             const Fint* comm) noexcept {
  int in = 0, out = 0;
  if (!fortran_neighbor_degrees(comm, in, out)) return;
  t.sent = typed_counts(sn, sty, out);
  t.received = typed_counts(rn, rty, in);
}

}  // namespace
}  // namespace rtrace::tracer::mpi

using namespace rtrace::tracer;
using namespace rtrace::tracer::mpi;
using Aint = MPI_Aint;
using Offset = MPI_Offset;

extern "C" {

// ---- point to point, completion, probes
RTRACE_F_BODY(mpi_issend, MPI_ISSEND, Issend,
              (void* b, Fint* n, Fint* ty, Fint* d, Fint* tg, Fint* c, Fint* rq, Fint* e), (b, n, ty, d, tg, c, rq, e),
              e, t.sent = n ? bytes(ty, *n) : 0)
RTRACE_F_POLL(mpi_testany, MPI_TESTANY, Testany, (Fint* n, Fint* rq, Fint* i, Fint* f, Fint* st, Fint* e),
              (n, rq, i, f, st, e), e, f && *f)
RTRACE_F_POLL(mpi_testsome, MPI_TESTSOME, Testsome, (Fint* n, Fint* rq, Fint* out, Fint* idx, Fint* st, Fint* e),
              (n, rq, out, idx, st, e), e, out && *out > 0)
RTRACE_F_POLL(mpi_testall, MPI_TESTALL, Testall, (Fint* n, Fint* rq, Fint* f, Fint* st, Fint* e), (n, rq, f, st, e), e,
              f && *f)
RTRACE_F_PLAIN(mpi_waitsome, MPI_WAITSOME, Waitsome, (Fint* n, Fint* rq, Fint* out, Fint* idx, Fint* st, Fint* e),
               (n, rq, out, idx, st, e), e)
RTRACE_F_POLL(mpi_iprobe, MPI_IPROBE, Iprobe, (Fint* s, Fint* tg, Fint* c, Fint* f, Fint* st, Fint* e),
              (s, tg, c, f, st, e), e, f && *f)
RTRACE_F_PLAIN(mpi_probe, MPI_PROBE, Probe, (Fint* s, Fint* tg, Fint* c, Fint* st, Fint* e), (s, tg, c, st, e), e)
RTRACE_F_POLL(mpi_improbe, MPI_IMPROBE, Improbe, (Fint* s, Fint* tg, Fint* c, Fint* f, Fint* m, Fint* st, Fint* e),
              (s, tg, c, f, m, st, e), e, f && *f)
RTRACE_F_PLAIN(mpi_mprobe, MPI_MPROBE, Mprobe, (Fint* s, Fint* tg, Fint* c, Fint* m, Fint* st, Fint* e),
               (s, tg, c, m, st, e), e)
RTRACE_F_STATUS(mpi_mrecv, MPI_MRECV, Mrecv, (void* b, Fint* n, Fint* ty, Fint* m, Fint* status, Fint* ierr),
                (b, n, ty, m, st, e), status, ierr, received)
RTRACE_F_BODY(mpi_imrecv, MPI_IMRECV, Imrecv, (void* b, Fint* n, Fint* ty, Fint* m, Fint* rq, Fint* e),
              (b, n, ty, m, rq, e), e, t.received = n ? bytes(ty, *n) : 0)

// ---- blocking collectives not in mpi_fortran.cpp
RTRACE_F_BODY(mpi_scan, MPI_SCAN, Scan, (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* e),
              (sb, rb, n, ty, op, c, e), e, t.sent = t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_exscan, MPI_EXSCAN, Exscan, (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* e),
              (sb, rb, n, ty, op, c, e), e, t.sent = t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, Reduce_scatter_block,
              (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* e), (sb, rb, n, ty, op, c, e), e,
              t.sent = bytes(ty, static_cast<Bytes>(*n) * size_of(c)); t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_alltoallw, MPI_ALLTOALLW, Alltoallw,
              (void* sb, Fint* sn, Fint* sd, Fint* sty, void* rb, Fint* rn, Fint* rd, Fint* rty, Fint* c, Fint* e),
              (sb, sn, sd, sty, rb, rn, rd, rty, c, e), e, book_alltoallw(t, sb, sn, sty, rn, rty, c))

// ---- non-blocking collectives
RTRACE_F_PLAIN(mpi_ibarrier, MPI_IBARRIER, Ibarrier, (Fint* c, Fint* rq, Fint* e), (c, rq, e), e)
RTRACE_F_BODY(mpi_ibcast, MPI_IBCAST, Ibcast, (void* b, Fint* n, Fint* ty, Fint* r, Fint* c, Fint* rq, Fint* e),
              (b, n, ty, r, c, rq, e), e, book_root_or_not(t, c, r, bytes(ty, *n)))
RTRACE_F_BODY(mpi_ireduce, MPI_IREDUCE, Ireduce,
              (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* r, Fint* c, Fint* rq, Fint* e),
              (sb, rb, n, ty, op, r, c, rq, e), e, t.sent = bytes(ty, *n);
              if (root_here(c, r)) t.received = t.sent)
RTRACE_F_BODY(mpi_iallreduce, MPI_IALLREDUCE, Iallreduce,
              (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* rq, Fint* e),
              (sb, rb, n, ty, op, c, rq, e), e, t.sent = t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_igather, MPI_IGATHER, Igather,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* r, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, rty, r, c, rq, e), e, book_gather(t, sb, sn, sty, rn, rty, r, c))
RTRACE_F_BODY(mpi_igatherv, MPI_IGATHERV, Igatherv,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* dis, Fint* rty, Fint* r, Fint* c, Fint* rq,
               Fint* e),
              (sb, sn, sty, rb, rn, dis, rty, r, c, rq, e), e, book_gatherv(t, sb, sn, sty, rn, rty, r, c))
RTRACE_F_BODY(mpi_iscatter, MPI_ISCATTER, Iscatter,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* r, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, rty, r, c, rq, e), e, book_scatter(t, sn, sty, rb, rn, rty, r, c))
RTRACE_F_BODY(mpi_iscatterv, MPI_ISCATTERV, Iscatterv,
              (void* sb, Fint* sn, Fint* dis, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* r, Fint* c, Fint* rq,
               Fint* e),
              (sb, sn, dis, sty, rb, rn, rty, r, c, rq, e), e, book_scatterv(t, sn, sty, rb, rn, rty, r, c))
RTRACE_F_BODY(mpi_iallgather, MPI_IALLGATHER, Iallgather,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, rty, c, rq, e), e, book_allgather(t, sb, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_iallgatherv, MPI_IALLGATHERV, Iallgatherv,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* dis, Fint* rty, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, dis, rty, c, rq, e), e, book_allgatherv(t, sb, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ialltoall, MPI_IALLTOALL, Ialltoall,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, rty, c, rq, e), e, book_alltoall(t, sb, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ialltoallv, MPI_IALLTOALLV, Ialltoallv,
              (void* sb, Fint* sn, Fint* sd, Fint* sty, void* rb, Fint* rn, Fint* rd, Fint* rty, Fint* c, Fint* rq,
               Fint* e),
              (sb, sn, sd, sty, rb, rn, rd, rty, c, rq, e), e, book_alltoallv(t, sb, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ialltoallw, MPI_IALLTOALLW, Ialltoallw,
              (void* sb, Fint* sn, Fint* sd, Fint* sty, void* rb, Fint* rn, Fint* rd, Fint* rty, Fint* c, Fint* rq,
               Fint* e),
              (sb, sn, sd, sty, rb, rn, rd, rty, c, rq, e), e, book_alltoallw(t, sb, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ireduce_scatter, MPI_IREDUCE_SCATTER, Ireduce_scatter,
              (void* sb, void* rb, Fint* rn, Fint* ty, Fint* op, Fint* c, Fint* rq, Fint* e),
              (sb, rb, rn, ty, op, c, rq, e), e, book_reduce_scatter(t, rn, ty, c))
RTRACE_F_BODY(mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK, Ireduce_scatter_block,
              (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* rq, Fint* e),
              (sb, rb, n, ty, op, c, rq, e), e, t.sent = bytes(ty, static_cast<Bytes>(*n) * size_of(c));
              t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_iscan, MPI_ISCAN, Iscan, (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* rq, Fint* e),
              (sb, rb, n, ty, op, c, rq, e), e, t.sent = t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_iexscan, MPI_IEXSCAN, Iexscan,
              (void* sb, void* rb, Fint* n, Fint* ty, Fint* op, Fint* c, Fint* rq, Fint* e),
              (sb, rb, n, ty, op, c, rq, e), e, t.sent = t.received = bytes(ty, *n))

// ---- neighbourhood collectives (Fortran displacements of the w-forms are MPI_Aint)
RTRACE_F_BODY(mpi_neighbor_allgather, MPI_NEIGHBOR_ALLGATHER, Neighbor_allgather,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* e),
              (sb, sn, sty, rb, rn, rty, c, e), e, book_neighbor_each(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_neighbor_allgatherv, MPI_NEIGHBOR_ALLGATHERV, Neighbor_allgatherv,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* dis, Fint* rty, Fint* c, Fint* e),
              (sb, sn, sty, rb, rn, dis, rty, c, e), e, book_neighbor_allgatherv(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_neighbor_alltoall, MPI_NEIGHBOR_ALLTOALL, Neighbor_alltoall,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* e),
              (sb, sn, sty, rb, rn, rty, c, e), e, book_neighbor_each(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_neighbor_alltoallv, MPI_NEIGHBOR_ALLTOALLV, Neighbor_alltoallv,
              (void* sb, Fint* sn, Fint* sd, Fint* sty, void* rb, Fint* rn, Fint* rd, Fint* rty, Fint* c, Fint* e),
              (sb, sn, sd, sty, rb, rn, rd, rty, c, e), e, book_neighbor_alltoallv(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_neighbor_alltoallw, MPI_NEIGHBOR_ALLTOALLW, Neighbor_alltoallw,
              (void* sb, Fint* sn, Aint* sd, Fint* sty, void* rb, Fint* rn, Aint* rd, Fint* rty, Fint* c, Fint* e),
              (sb, sn, sd, sty, rb, rn, rd, rty, c, e), e, book_neighbor_alltoallw(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ineighbor_allgather, MPI_INEIGHBOR_ALLGATHER, Ineighbor_allgather,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, rty, c, rq, e), e, book_neighbor_each(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ineighbor_allgatherv, MPI_INEIGHBOR_ALLGATHERV, Ineighbor_allgatherv,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* dis, Fint* rty, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, dis, rty, c, rq, e), e, book_neighbor_allgatherv(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ineighbor_alltoall, MPI_INEIGHBOR_ALLTOALL, Ineighbor_alltoall,
              (void* sb, Fint* sn, Fint* sty, void* rb, Fint* rn, Fint* rty, Fint* c, Fint* rq, Fint* e),
              (sb, sn, sty, rb, rn, rty, c, rq, e), e, book_neighbor_each(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ineighbor_alltoallv, MPI_INEIGHBOR_ALLTOALLV, Ineighbor_alltoallv,
              (void* sb, Fint* sn, Fint* sd, Fint* sty, void* rb, Fint* rn, Fint* rd, Fint* rty, Fint* c, Fint* rq,
               Fint* e),
              (sb, sn, sd, sty, rb, rn, rd, rty, c, rq, e), e, book_neighbor_alltoallv(t, sn, sty, rn, rty, c))
RTRACE_F_BODY(mpi_ineighbor_alltoallw, MPI_INEIGHBOR_ALLTOALLW, Ineighbor_alltoallw,
              (void* sb, Fint* sn, Aint* sd, Fint* sty, void* rb, Fint* rn, Aint* rd, Fint* rty, Fint* c, Fint* rq,
               Fint* e),
              (sb, sn, sd, sty, rb, rn, rd, rty, c, rq, e), e, book_neighbor_alltoallw(t, sn, sty, rn, rty, c))

// ---- one-sided communication
RTRACE_F_BODY(mpi_put, MPI_PUT, Put,
              (void* o, Fint* n, Fint* ty, Fint* tr, Aint* d, Fint* tn, Fint* tty, Fint* w, Fint* e),
              (o, n, ty, tr, d, tn, tty, w, e), e, t.sent = bytes(ty, *n))
RTRACE_F_BODY(mpi_rput, MPI_RPUT, Rput,
              (void* o, Fint* n, Fint* ty, Fint* tr, Aint* d, Fint* tn, Fint* tty, Fint* w, Fint* rq, Fint* e),
              (o, n, ty, tr, d, tn, tty, w, rq, e), e, t.sent = bytes(ty, *n))
RTRACE_F_BODY(mpi_get, MPI_GET, Get,
              (void* o, Fint* n, Fint* ty, Fint* tr, Aint* d, Fint* tn, Fint* tty, Fint* w, Fint* e),
              (o, n, ty, tr, d, tn, tty, w, e), e, t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_rget, MPI_RGET, Rget,
              (void* o, Fint* n, Fint* ty, Fint* tr, Aint* d, Fint* tn, Fint* tty, Fint* w, Fint* rq, Fint* e),
              (o, n, ty, tr, d, tn, tty, w, rq, e), e, t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_accumulate, MPI_ACCUMULATE, Accumulate,
              (void* o, Fint* n, Fint* ty, Fint* tr, Aint* d, Fint* tn, Fint* tty, Fint* op, Fint* w, Fint* e),
              (o, n, ty, tr, d, tn, tty, op, w, e), e, t.sent = bytes(ty, *n))
RTRACE_F_BODY(mpi_get_accumulate, MPI_GET_ACCUMULATE, Get_accumulate,
              (void* o, Fint* n, Fint* ty, void* res, Fint* rn, Fint* rty, Fint* tr, Aint* d, Fint* tn, Fint* tty,
               Fint* op, Fint* w, Fint* e),
              (o, n, ty, res, rn, rty, tr, d, tn, tty, op, w, e), e, t.sent = bytes(ty, *n);
              t.received = bytes(rty, *rn))
RTRACE_F_BODY(mpi_fetch_and_op, MPI_FETCH_AND_OP, Fetch_and_op,
              (void* o, void* res, Fint* ty, Fint* tr, Aint* d, Fint* op, Fint* w, Fint* e),
              (o, res, ty, tr, d, op, w, e), e, t.sent = t.received = bytes(ty, 1))
RTRACE_F_BODY(mpi_compare_and_swap, MPI_COMPARE_AND_SWAP, Compare_and_swap,
              (void* o, void* cmp, void* res, Fint* ty, Fint* tr, Aint* d, Fint* w, Fint* e),
              (o, cmp, res, ty, tr, d, w, e), e, t.sent = bytes(ty, 2); t.received = bytes(ty, 1))
RTRACE_F_PLAIN(mpi_win_fence, MPI_WIN_FENCE, Win_fence, (Fint* a, Fint* w, Fint* e), (a, w, e), e)
RTRACE_F_PLAIN(mpi_win_lock, MPI_WIN_LOCK, Win_lock, (Fint* lt, Fint* r, Fint* a, Fint* w, Fint* e), (lt, r, a, w, e), e)
RTRACE_F_PLAIN(mpi_win_unlock, MPI_WIN_UNLOCK, Win_unlock, (Fint* r, Fint* w, Fint* e), (r, w, e), e)
RTRACE_F_PLAIN(mpi_win_lock_all, MPI_WIN_LOCK_ALL, Win_lock_all, (Fint* a, Fint* w, Fint* e), (a, w, e), e)
RTRACE_F_PLAIN(mpi_win_unlock_all, MPI_WIN_UNLOCK_ALL, Win_unlock_all, (Fint* w, Fint* e), (w, e), e)
RTRACE_F_PLAIN(mpi_win_flush, MPI_WIN_FLUSH, Win_flush, (Fint* r, Fint* w, Fint* e), (r, w, e), e)
RTRACE_F_PLAIN(mpi_win_flush_all, MPI_WIN_FLUSH_ALL, Win_flush_all, (Fint* w, Fint* e), (w, e), e)
RTRACE_F_PLAIN(mpi_win_flush_local, MPI_WIN_FLUSH_LOCAL, Win_flush_local, (Fint* r, Fint* w, Fint* e), (r, w, e), e)
RTRACE_F_PLAIN(mpi_win_flush_local_all, MPI_WIN_FLUSH_LOCAL_ALL, Win_flush_local_all, (Fint* w, Fint* e), (w, e), e)
RTRACE_F_PLAIN(mpi_win_post, MPI_WIN_POST, Win_post, (Fint* g, Fint* a, Fint* w, Fint* e), (g, a, w, e), e)
RTRACE_F_PLAIN(mpi_win_start, MPI_WIN_START, Win_start, (Fint* g, Fint* a, Fint* w, Fint* e), (g, a, w, e), e)
RTRACE_F_PLAIN(mpi_win_complete, MPI_WIN_COMPLETE, Win_complete, (Fint* w, Fint* e), (w, e), e)
RTRACE_F_PLAIN(mpi_win_wait, MPI_WIN_WAIT, Win_wait, (Fint* w, Fint* e), (w, e), e)
RTRACE_F_PLAIN(mpi_win_create, MPI_WIN_CREATE, Win_create,
               (void* base, Aint* size, Fint* unit, Fint* info, Fint* c, Fint* w, Fint* e),
               (base, size, unit, info, c, w, e), e)
RTRACE_F_PLAIN(mpi_win_allocate, MPI_WIN_ALLOCATE, Win_allocate,
               (Aint* size, Fint* unit, Fint* info, Fint* c, void* base, Fint* w, Fint* e),
               (size, unit, info, c, base, w, e), e)
RTRACE_F_PLAIN(mpi_win_allocate_shared, MPI_WIN_ALLOCATE_SHARED, Win_allocate_shared,
               (Aint* size, Fint* unit, Fint* info, Fint* c, void* base, Fint* w, Fint* e),
               (size, unit, info, c, base, w, e), e)
RTRACE_F_PLAIN(mpi_win_create_dynamic, MPI_WIN_CREATE_DYNAMIC, Win_create_dynamic,
               (Fint* info, Fint* c, Fint* w, Fint* e), (info, c, w, e), e)
RTRACE_F_PLAIN(mpi_win_free, MPI_WIN_FREE, Win_free, (Fint* w, Fint* e), (w, e), e)

// ---- communicators
RTRACE_F_PLAIN(mpi_comm_split, MPI_COMM_SPLIT, Comm_split, (Fint* c, Fint* color, Fint* key, Fint* out, Fint* e),
               (c, color, key, out, e), e)
RTRACE_F_PLAIN(mpi_comm_split_type, MPI_COMM_SPLIT_TYPE, Comm_split_type,
               (Fint* c, Fint* type, Fint* key, Fint* info, Fint* out, Fint* e), (c, type, key, info, out, e), e)
RTRACE_F_PLAIN(mpi_comm_dup, MPI_COMM_DUP, Comm_dup, (Fint* c, Fint* out, Fint* e), (c, out, e), e)
RTRACE_F_PLAIN(mpi_comm_create, MPI_COMM_CREATE, Comm_create, (Fint* c, Fint* g, Fint* out, Fint* e), (c, g, out, e), e)
RTRACE_F_PLAIN(mpi_comm_free, MPI_COMM_FREE, Comm_free, (Fint* c, Fint* e), (c, e), e)

// ---- MPI-IO (written bytes are "sent", read bytes "received")
RTRACE_F_PLAIN(mpi_file_open, MPI_FILE_OPEN, File_open,
               (Fint* c, char* name, Fint* amode, Fint* info, Fint* fh, Fint* e, std::size_t name_len),
               (c, name, amode, info, fh, e, name_len), e)
RTRACE_F_PLAIN(mpi_file_close, MPI_FILE_CLOSE, File_close, (Fint* fh, Fint* e), (fh, e), e)
RTRACE_F_PLAIN(mpi_file_set_view, MPI_FILE_SET_VIEW, File_set_view,
               (Fint* fh, Offset* disp, Fint* etype, Fint* ftype, char* rep, Fint* info, Fint* e, std::size_t rep_len),
               (fh, disp, etype, ftype, rep, info, e, rep_len), e)
RTRACE_F_PLAIN(mpi_file_sync, MPI_FILE_SYNC, File_sync, (Fint* fh, Fint* e), (fh, e), e)
RTRACE_F_STATUS(mpi_file_read, MPI_FILE_READ, File_read,
                (Fint* fh, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr), (fh, b, n, ty, st, e), status, ierr,
                received)
RTRACE_F_STATUS(mpi_file_write, MPI_FILE_WRITE, File_write,
                (Fint* fh, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr), (fh, b, n, ty, st, e), status, ierr,
                sent)
RTRACE_F_STATUS(mpi_file_read_all, MPI_FILE_READ_ALL, File_read_all,
                (Fint* fh, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr), (fh, b, n, ty, st, e), status, ierr,
                received)
RTRACE_F_STATUS(mpi_file_write_all, MPI_FILE_WRITE_ALL, File_write_all,
                (Fint* fh, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr), (fh, b, n, ty, st, e), status, ierr,
                sent)
RTRACE_F_STATUS(mpi_file_read_at, MPI_FILE_READ_AT, File_read_at,
                (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr),
                (fh, off, b, n, ty, st, e), status, ierr, received)
RTRACE_F_STATUS(mpi_file_write_at, MPI_FILE_WRITE_AT, File_write_at,
                (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr),
                (fh, off, b, n, ty, st, e), status, ierr, sent)
RTRACE_F_STATUS(mpi_file_read_at_all, MPI_FILE_READ_AT_ALL, File_read_at_all,
                (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr),
                (fh, off, b, n, ty, st, e), status, ierr, received)
RTRACE_F_STATUS(mpi_file_write_at_all, MPI_FILE_WRITE_AT_ALL, File_write_at_all,
                (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* status, Fint* ierr),
                (fh, off, b, n, ty, st, e), status, ierr, sent)
RTRACE_F_BODY(mpi_file_iread, MPI_FILE_IREAD, File_iread, (Fint* fh, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e),
              (fh, b, n, ty, rq, e), e, t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_file_iwrite, MPI_FILE_IWRITE, File_iwrite, (Fint* fh, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e),
              (fh, b, n, ty, rq, e), e, t.sent = bytes(ty, *n))
RTRACE_F_BODY(mpi_file_iread_all, MPI_FILE_IREAD_ALL, File_iread_all,
              (Fint* fh, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e), (fh, b, n, ty, rq, e), e,
              t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_file_iwrite_all, MPI_FILE_IWRITE_ALL, File_iwrite_all,
              (Fint* fh, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e), (fh, b, n, ty, rq, e), e,
              t.sent = bytes(ty, *n))
RTRACE_F_BODY(mpi_file_iread_at, MPI_FILE_IREAD_AT, File_iread_at,
              (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e), (fh, off, b, n, ty, rq, e), e,
              t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_file_iwrite_at, MPI_FILE_IWRITE_AT, File_iwrite_at,
              (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e), (fh, off, b, n, ty, rq, e), e,
              t.sent = bytes(ty, *n))
RTRACE_F_BODY(mpi_file_iread_at_all, MPI_FILE_IREAD_AT_ALL, File_iread_at_all,
              (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e), (fh, off, b, n, ty, rq, e), e,
              t.received = bytes(ty, *n))
RTRACE_F_BODY(mpi_file_iwrite_at_all, MPI_FILE_IWRITE_AT_ALL, File_iwrite_at_all,
              (Fint* fh, Offset* off, void* b, Fint* n, Fint* ty, Fint* rq, Fint* e), (fh, off, b, n, ty, rq, e), e,
              t.sent = bytes(ty, *n))

}  // extern "C"
