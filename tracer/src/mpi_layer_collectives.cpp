// C wrappers of the collectives added for issue 25: scans, the w-form and
// block reduce-scatter, every non-blocking collective and the neighbourhood
// collectives (blocking and non-blocking). Each books the payload this rank
// contributes and receives, as the blocking collectives in mpi_layer.cpp do:
// a non-blocking collective books it when it is started (its time is the
// start; the wait is booked by MPI_Wait*/MPI_Test*). Neighbourhood
// collectives exchange with the topology's in- and out-neighbours
// (neighbor_degrees).
#include <mpi.h>

#include <cstdint>

#include "mpi_common.hpp"
#include "tracer.hpp"

namespace rtrace::tracer::mpi {
namespace {

using Bytes = std::int64_t;

void book(Timed& t, Bytes sent, Bytes received) noexcept {
  t.sent = sent;
  t.received = received;
}

// Shapes shared by the blocking and non-blocking forms.
void bcast_payload(Timed& t, int count, MPI_Datatype type, int root, MPI_Comm comm) noexcept {
  if (is_root(comm, root)) t.sent = type_bytes(type, count);
  else t.received = type_bytes(type, count);
}
void reduce_payload(Timed& t, int count, MPI_Datatype type, int root, MPI_Comm comm) noexcept {
  t.sent = type_bytes(type, count);
  if (is_root(comm, root)) t.received = t.sent;
}
void symmetric_payload(Timed& t, int count, MPI_Datatype type) noexcept {  // allreduce, scan, exscan
  book(t, type_bytes(type, count), type_bytes(type, count));
}
void gather_payload(Timed& t, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm) noexcept {
  const bool at_root = is_root(comm, root);
  t.sent = (at_root && sendbuf == MPI_IN_PLACE) ? type_bytes(recvtype, recvcount) : type_bytes(sendtype, sendcount);
  if (at_root) t.received = type_bytes(recvtype, static_cast<Bytes>(recvcount) * comm_size(comm));
}
void gatherv_payload(Timed& t, const void* sendbuf, int sendcount, MPI_Datatype sendtype, const int recvcounts[],
                     MPI_Datatype recvtype, int root, MPI_Comm comm) noexcept {
  t.sent = sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount);
  if (is_root(comm, root)) t.received = counts_bytes(recvcounts, comm_size(comm), recvtype);
}
void scatter_payload(Timed& t, int sendcount, MPI_Datatype sendtype, const void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm) noexcept {
  const bool at_root = is_root(comm, root);
  if (at_root) t.sent = type_bytes(sendtype, static_cast<Bytes>(sendcount) * comm_size(comm));
  t.received = (at_root && recvbuf == MPI_IN_PLACE) ? type_bytes(sendtype, sendcount) : type_bytes(recvtype, recvcount);
}
void scatterv_payload(Timed& t, const int sendcounts[], MPI_Datatype sendtype, const void* recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm) noexcept {
  if (is_root(comm, root)) t.sent = counts_bytes(sendcounts, comm_size(comm), sendtype);
  t.received = recvbuf == MPI_IN_PLACE ? 0 : type_bytes(recvtype, recvcount);
}
void allgather_payload(Timed& t, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  t.sent = sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcount) : type_bytes(sendtype, sendcount);
  t.received = type_bytes(recvtype, static_cast<Bytes>(recvcount) * comm_size(comm));
}
void allgatherv_payload(Timed& t, const void* sendbuf, int sendcount, MPI_Datatype sendtype, const int recvcounts[],
                        MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  t.sent = sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount);
  t.received = counts_bytes(recvcounts, comm_size(comm), recvtype);
}
void alltoall_payload(Timed& t, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  const Bytes n = comm_size(comm);
  t.received = type_bytes(recvtype, static_cast<Bytes>(recvcount) * n);
  t.sent = sendbuf == MPI_IN_PLACE ? t.received : type_bytes(sendtype, static_cast<Bytes>(sendcount) * n);
}
void alltoallv_payload(Timed& t, const void* sendbuf, const int sendcounts[], MPI_Datatype sendtype,
                       const int recvcounts[], MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  const Bytes n = comm_size(comm);
  t.received = counts_bytes(recvcounts, n, recvtype);
  t.sent = sendbuf == MPI_IN_PLACE ? t.received : counts_bytes(sendcounts, n, sendtype);
}
void alltoallw_payload(Timed& t, const void* sendbuf, const int sendcounts[], const MPI_Datatype sendtypes[],
                       const int recvcounts[], const MPI_Datatype recvtypes[], MPI_Comm comm) noexcept {
  const Bytes n = comm_size(comm);
  t.received = typed_counts_bytes(recvcounts, recvtypes, n);
  t.sent = sendbuf == MPI_IN_PLACE ? t.received : typed_counts_bytes(sendcounts, sendtypes, n);
}
void reduce_scatter_payload(Timed& t, const int recvcounts[], MPI_Datatype type, MPI_Comm comm) noexcept {
  t.sent = counts_bytes(recvcounts, comm_size(comm), type);
  const int r = comm_rank(comm);
  if (r >= 0 && recvcounts) t.received = type_bytes(type, recvcounts[r]);
}
void reduce_scatter_block_payload(Timed& t, int recvcount, MPI_Datatype type, MPI_Comm comm) noexcept {
  book(t, type_bytes(type, static_cast<Bytes>(recvcount) * comm_size(comm)), type_bytes(type, recvcount));
}

// Neighbourhood collectives: out-neighbours receive what this rank sends,
// in-neighbours send what it receives.
void neighbor_allgather_payload(Timed& t, int sendcount, MPI_Datatype sendtype, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  int in = 0, out = 0;
  if (!neighbor_degrees(comm, in, out)) return;
  book(t, type_bytes(sendtype, static_cast<Bytes>(sendcount) * out), type_bytes(recvtype, static_cast<Bytes>(recvcount) * in));
}
void neighbor_allgatherv_payload(Timed& t, int sendcount, MPI_Datatype sendtype, const int recvcounts[],
                                 MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  int in = 0, out = 0;
  if (!neighbor_degrees(comm, in, out)) return;
  book(t, type_bytes(sendtype, static_cast<Bytes>(sendcount) * out), counts_bytes(recvcounts, in, recvtype));
}
void neighbor_alltoallv_payload(Timed& t, const int sendcounts[], MPI_Datatype sendtype, const int recvcounts[],
                                MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  int in = 0, out = 0;
  if (!neighbor_degrees(comm, in, out)) return;
  book(t, counts_bytes(sendcounts, out, sendtype), counts_bytes(recvcounts, in, recvtype));
}
void neighbor_alltoallw_payload(Timed& t, const int sendcounts[], const MPI_Datatype sendtypes[],
                                const int recvcounts[], const MPI_Datatype recvtypes[], MPI_Comm comm) noexcept {
  int in = 0, out = 0;
  if (!neighbor_degrees(comm, in, out)) return;
  book(t, typed_counts_bytes(sendcounts, sendtypes, out), typed_counts_bytes(recvcounts, recvtypes, in));
}

}  // namespace
}  // namespace rtrace::tracer::mpi

using namespace rtrace::tracer;
using namespace rtrace::tracer::mpi;

// Each wrapper: time the real call, book its payload when tracing.
#define RTRACE_C_PAYLOAD(name, PARAMS, ARGS, PAYLOAD)      \
  RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_##name PARAMS { \
    RTRACE_REAL(MPI_##name);                               \
    Timed t(MpiFn::name);                                  \
    if (t.active()) PAYLOAD;                               \
    return real_MPI_##name ARGS;                           \
  }

extern "C" {

// ---- blocking collectives not in mpi_layer.cpp
RTRACE_C_PAYLOAD(Scan, (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, MPI_Comm c),
                 (sb, rb, n, ty, op, c), symmetric_payload(t, n, ty))
RTRACE_C_PAYLOAD(Exscan, (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, MPI_Comm c),
                 (sb, rb, n, ty, op, c), symmetric_payload(t, n, ty))
RTRACE_C_PAYLOAD(Reduce_scatter_block, (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, MPI_Comm c),
                 (sb, rb, n, ty, op, c), reduce_scatter_block_payload(t, n, ty, c))
RTRACE_C_PAYLOAD(Alltoallw,
                 (const void* sb, const int sn[], const int sd[], const MPI_Datatype sty[], void* rb, const int rn[],
                  const int rd[], const MPI_Datatype rty[], MPI_Comm c),
                 (sb, sn, sd, sty, rb, rn, rd, rty, c), alltoallw_payload(t, sb, sn, sty, rn, rty, c))

// ---- non-blocking collectives (payload booked at the start)
RTRACE_C_PLAIN(Ibarrier, (MPI_Comm c, MPI_Request* rq), (c, rq))
RTRACE_C_PAYLOAD(Ibcast, (void* b, int n, MPI_Datatype ty, int root, MPI_Comm c, MPI_Request* rq),
                 (b, n, ty, root, c, rq), bcast_payload(t, n, ty, root, c))
RTRACE_C_PAYLOAD(Ireduce,
                 (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, int root, MPI_Comm c, MPI_Request* rq),
                 (sb, rb, n, ty, op, root, c, rq), reduce_payload(t, n, ty, root, c))
RTRACE_C_PAYLOAD(Iallreduce, (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, MPI_Comm c, MPI_Request* rq),
                 (sb, rb, n, ty, op, c, rq), symmetric_payload(t, n, ty))
RTRACE_C_PAYLOAD(Igather,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, int root, MPI_Comm c,
                  MPI_Request* rq),
                 (sb, sn, sty, rb, rn, rty, root, c, rq), gather_payload(t, sb, sn, sty, rn, rty, root, c))
RTRACE_C_PAYLOAD(Igatherv,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, const int rn[], const int dis[], MPI_Datatype rty,
                  int root, MPI_Comm c, MPI_Request* rq),
                 (sb, sn, sty, rb, rn, dis, rty, root, c, rq), gatherv_payload(t, sb, sn, sty, rn, rty, root, c))
RTRACE_C_PAYLOAD(Iscatter,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, int root, MPI_Comm c,
                  MPI_Request* rq),
                 (sb, sn, sty, rb, rn, rty, root, c, rq), scatter_payload(t, sn, sty, rb, rn, rty, root, c))
RTRACE_C_PAYLOAD(Iscatterv,
                 (const void* sb, const int sn[], const int dis[], MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty,
                  int root, MPI_Comm c, MPI_Request* rq),
                 (sb, sn, dis, sty, rb, rn, rty, root, c, rq), scatterv_payload(t, sn, sty, rb, rn, rty, root, c))
RTRACE_C_PAYLOAD(Iallgather,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, MPI_Comm c,
                  MPI_Request* rq),
                 (sb, sn, sty, rb, rn, rty, c, rq), allgather_payload(t, sb, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Iallgatherv,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, const int rn[], const int dis[], MPI_Datatype rty,
                  MPI_Comm c, MPI_Request* rq),
                 (sb, sn, sty, rb, rn, dis, rty, c, rq), allgatherv_payload(t, sb, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ialltoall,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, MPI_Comm c,
                  MPI_Request* rq),
                 (sb, sn, sty, rb, rn, rty, c, rq), alltoall_payload(t, sb, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ialltoallv,
                 (const void* sb, const int sn[], const int sd[], MPI_Datatype sty, void* rb, const int rn[],
                  const int rd[], MPI_Datatype rty, MPI_Comm c, MPI_Request* rq),
                 (sb, sn, sd, sty, rb, rn, rd, rty, c, rq), alltoallv_payload(t, sb, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ialltoallw,
                 (const void* sb, const int sn[], const int sd[], const MPI_Datatype sty[], void* rb, const int rn[],
                  const int rd[], const MPI_Datatype rty[], MPI_Comm c, MPI_Request* rq),
                 (sb, sn, sd, sty, rb, rn, rd, rty, c, rq), alltoallw_payload(t, sb, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ireduce_scatter,
                 (const void* sb, void* rb, const int rn[], MPI_Datatype ty, MPI_Op op, MPI_Comm c, MPI_Request* rq),
                 (sb, rb, rn, ty, op, c, rq), reduce_scatter_payload(t, rn, ty, c))
RTRACE_C_PAYLOAD(Ireduce_scatter_block,
                 (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, MPI_Comm c, MPI_Request* rq),
                 (sb, rb, n, ty, op, c, rq), reduce_scatter_block_payload(t, n, ty, c))
RTRACE_C_PAYLOAD(Iscan, (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, MPI_Comm c, MPI_Request* rq),
                 (sb, rb, n, ty, op, c, rq), symmetric_payload(t, n, ty))
RTRACE_C_PAYLOAD(Iexscan, (const void* sb, void* rb, int n, MPI_Datatype ty, MPI_Op op, MPI_Comm c, MPI_Request* rq),
                 (sb, rb, n, ty, op, c, rq), symmetric_payload(t, n, ty))

// ---- neighbourhood collectives
RTRACE_C_PAYLOAD(Neighbor_allgather,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, MPI_Comm c),
                 (sb, sn, sty, rb, rn, rty, c), neighbor_allgather_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Neighbor_allgatherv,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, const int rn[], const int dis[], MPI_Datatype rty,
                  MPI_Comm c),
                 (sb, sn, sty, rb, rn, dis, rty, c), neighbor_allgatherv_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Neighbor_alltoall,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, MPI_Comm c),
                 (sb, sn, sty, rb, rn, rty, c), neighbor_allgather_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Neighbor_alltoallv,
                 (const void* sb, const int sn[], const int sd[], MPI_Datatype sty, void* rb, const int rn[],
                  const int rd[], MPI_Datatype rty, MPI_Comm c),
                 (sb, sn, sd, sty, rb, rn, rd, rty, c), neighbor_alltoallv_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Neighbor_alltoallw,
                 (const void* sb, const int sn[], const MPI_Aint sd[], const MPI_Datatype sty[], void* rb,
                  const int rn[], const MPI_Aint rd[], const MPI_Datatype rty[], MPI_Comm c),
                 (sb, sn, sd, sty, rb, rn, rd, rty, c), neighbor_alltoallw_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ineighbor_allgather,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, MPI_Comm c,
                  MPI_Request* rq),
                 (sb, sn, sty, rb, rn, rty, c, rq), neighbor_allgather_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ineighbor_allgatherv,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, const int rn[], const int dis[], MPI_Datatype rty,
                  MPI_Comm c, MPI_Request* rq),
                 (sb, sn, sty, rb, rn, dis, rty, c, rq), neighbor_allgatherv_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ineighbor_alltoall,
                 (const void* sb, int sn, MPI_Datatype sty, void* rb, int rn, MPI_Datatype rty, MPI_Comm c,
                  MPI_Request* rq),
                 (sb, sn, sty, rb, rn, rty, c, rq), neighbor_allgather_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ineighbor_alltoallv,
                 (const void* sb, const int sn[], const int sd[], MPI_Datatype sty, void* rb, const int rn[],
                  const int rd[], MPI_Datatype rty, MPI_Comm c, MPI_Request* rq),
                 (sb, sn, sd, sty, rb, rn, rd, rty, c, rq), neighbor_alltoallv_payload(t, sn, sty, rn, rty, c))
RTRACE_C_PAYLOAD(Ineighbor_alltoallw,
                 (const void* sb, const int sn[], const MPI_Aint sd[], const MPI_Datatype sty[], void* rb,
                  const int rn[], const MPI_Aint rd[], const MPI_Datatype rty[], MPI_Comm c, MPI_Request* rq),
                 (sb, sn, sd, sty, rb, rn, rd, rty, c, rq), neighbor_alltoallw_payload(t, sn, sty, rn, rty, c))

}  // extern "C"
