// PMPI interposition: the preloaded library defines MPI_* and forwards each
// call to PMPI_*, resolved with dlsym at first use (never bound at link time,
// so one tracer binary serves whatever MPI the app loaded). Per function it
// counts calls, wall time and payload bytes (count x type size as the caller
// passed them; receives with a status use the received count).
//
// MPI_Finalize writes every rank's records collectively into ranks.h5 before
// finalizing (collective_writer.cpp).
#include <mpi.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <new>
#include <string>

#include "collective_writer.hpp"
#include "pmpi.hpp"
#include "mpi_common.hpp"
#include "tracer.hpp"

namespace rtrace::tracer::mpi {
namespace {

std::atomic<bool> g_init_seen{false};

pthread_key_t g_table_key;
bool g_table_key_made = false;

// A thread ends: its polling run is booked and its table goes back for the
// next thread (its counts stay in it).
void on_thread_end(void* p) {
  auto* table = static_cast<MpiThreadTable*>(p);
  table->close_run(monotonic_ns());
  if (t_hot.mpi == table) t_hot.mpi = nullptr;
  if (RankState* s = state()) s->mpi().release(table);
}

void make_table_key() { g_table_key_made = pthread_key_create(&g_table_key, on_thread_end) == 0; }

volatile int g_calibration_sink = 0;
__attribute__((noinline)) void calibration_call() { g_calibration_sink = g_calibration_sink + 1; }

// Nanoseconds per call of `body`: the least over a few batches (a batch that
// a preemption or an interrupt hit is not the path's cost).
template <class Body>
double ns_per_call(Body body, int calls) noexcept {
  double best = -1;
  for (int batch = 0; batch < 5; ++batch) {
    const std::int64_t t0 = monotonic_ns();
    for (int i = 0; i < calls; ++i) body();
    const double ns = static_cast<double>(monotonic_ns() - t0) / calls;
    if (best < 0 || ns < best) best = ns;
  }
  return best;
}

// The cost of the wrappers' own paths, measured here at the end of the run
// (a few milliseconds): a poll inside a polling run through the real Timed
// (on a scratch table, so nothing is booked) and the forwarding call a
// wrapper adds, one monotonic clock read, one getrusage(RUSAGE_THREAD).
WrapperCosts calibrate_wrapper_costs() {
  static MpiThreadTable* scratch = new (std::nothrow) MpiThreadTable;
  WrapperCosts c;
  if (!scratch) return c;
  ThreadHot& hot = t_hot;
  MpiThreadTable* const own = hot.mpi;
  const int internal = hot.internal;
  scratch->reset();
  scratch->freeze(/*run_open=*/true);
  hot.mpi = scratch;
  hot.internal = 0;
  c.counted_ns = ns_per_call(
      [] {
        Timed t(MpiFn::Test);
        calibration_call();
      },
      20000);
  hot.mpi = own;
  hot.internal = internal;
  static volatile std::int64_t sink = 0;
  c.clock_ns = ns_per_call([] { sink = sink + monotonic_ns(); }, 2000);
  c.thread_read_ns = ns_per_call([] { sink = sink + read_thread_times().cpu_ns; }, 100);
  return c;
}

}  // namespace

MpiThreadTable* attach_thread() noexcept {
  RankState* s = state();
  if (!s || in_tracer()) return nullptr;
  MpiThreadTable* table = s->mpi().attach();
  if (!table) return nullptr;
  s->set_wrapper_cost_probe(&calibrate_wrapper_costs);
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, make_table_key);
  if (g_table_key_made) pthread_setspecific(g_table_key, table);
  t_hot.mpi = table;
  return table;
}

void close_thread_run() noexcept {
  if (MpiThreadTable* table = t_hot.mpi) table->close_run(monotonic_ns());
}

int missing_pmpi(const char* name) noexcept {
  if (auto* s = state()) s->error(std::string("MPI wrapper: ") + name + " not found in the loaded MPI library");
  return MPI_ERR_INTERN;
}

std::int64_t type_bytes(MPI_Datatype type, std::int64_t count) noexcept {
  static const auto real_size = RTRACE_PMPI(Type_size);
  int size = 0;
  if (!real_size || count <= 0 || real_size(type, &size) != MPI_SUCCESS) return 0;
  return count * size;
}

std::int64_t counts_bytes(const int counts[], std::int64_t n, MPI_Datatype type) noexcept {
  std::int64_t total = 0;
  for (std::int64_t i = 0; counts && i < n; ++i) total += counts[i];
  return type_bytes(type, total);
}

std::int64_t typed_counts_bytes(const int counts[], const MPI_Datatype types[], std::int64_t n) noexcept {
  std::int64_t total = 0;
  for (std::int64_t i = 0; counts && types && i < n; ++i) total += type_bytes(types[i], counts[i]);
  return total;
}

bool neighbor_degrees(MPI_Comm comm, int& in, int& out) noexcept {
  static const auto topo_test = RTRACE_PMPI(Topo_test);
  static const auto cartdim = RTRACE_PMPI(Cartdim_get);
  static const auto graph_count = RTRACE_PMPI(Graph_neighbors_count);
  static const auto dist_count = RTRACE_PMPI(Dist_graph_neighbors_count);
  in = out = 0;
  int kind = MPI_UNDEFINED;
  if (!topo_test || topo_test(comm, &kind) != MPI_SUCCESS) return false;
  if (kind == MPI_CART) {
    int ndims = 0;
    if (!cartdim || cartdim(comm, &ndims) != MPI_SUCCESS) return false;
    in = out = 2 * ndims;
    return true;
  }
  if (kind == MPI_GRAPH) {
    const int rank = comm_rank(comm);
    int n = 0;
    if (rank < 0 || !graph_count || graph_count(comm, rank, &n) != MPI_SUCCESS) return false;
    in = out = n;
    return true;
  }
  if (kind == MPI_DIST_GRAPH) {
    int weighted = 0;
    return dist_count && dist_count(comm, &in, &out, &weighted) == MPI_SUCCESS;
  }
  return false;
}

std::int64_t comm_size(MPI_Comm comm) noexcept {
  static const auto real = RTRACE_PMPI(Comm_size);
  int n = 0;
  if (!real || real(comm, &n) != MPI_SUCCESS) return 0;
  return n;
}

int comm_rank(MPI_Comm comm) noexcept {
  static const auto real = RTRACE_PMPI(Comm_rank);
  int r = -1;
  if (!real || real(comm, &r) != MPI_SUCCESS) return -1;
  return r;
}

bool is_root(MPI_Comm comm, int root) noexcept { return comm_rank(comm) == root && root >= 0; }

std::int64_t received_bytes(const MPI_Status* status) noexcept {
  static const auto real = RTRACE_PMPI(Get_count);
  int n = 0;
  if (!real || real(status, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED) return 0;
  return n;
}

void after_init() noexcept {
  g_init_seen.store(true);
  RankState* s = state();
  if (!s || in_tracer()) return;
  s->mark_mpi_init_end(monotonic_ns());
  int rank = comm_rank(MPI_COMM_WORLD);
  if (rank >= 0) {
    if (rank != s->rank())
      s->log(LogLevel::Info, "rank " + std::to_string(rank) + " from MPI_COMM_WORLD (environment said " +
                                 std::to_string(s->rank()) + ")");
    s->set_rank(rank);
  }
  // MPI installs its own fatal-signal handlers in MPI_Init; put ours in front.
  install_signal_handlers(/*chain_existing=*/true);
}

// The window closes at entry, before the tracer's own ranks.h5 write. The
// call is booked open (time unknown) for that write, and with its real
// duration afterwards, which a rank file written at exit then holds.
bool finalize_begin() noexcept {
  const bool traced = tracing();
  if (!traced) return false;
  RankState* s = state();
  close_thread_run();
  s->mark_mpi_finalize_start(monotonic_ns());
  s->mpi().open_call(MpiFn::Finalize);
  if (!is_fork_child() && !written() && s->config().collective) {
    InternalScope internal;
    flush_gpu();
    std::string error;
    std::int64_t t0 = monotonic_ns();
    if (write_collective(*s, &error)) {
      mark_written();
      s->log(LogLevel::Info, "ranks.h5 written collectively in " +
                                 std::to_string(static_cast<double>(monotonic_ns() - t0) * 1e-9) + " s");
    } else {
      s->error("collective write of ranks.h5 failed (" + error + "); this rank writes its own file at exit");
    }
  }
  return true;
}

void finalize_end(bool traced, std::int64_t real_ns) noexcept {
  if (traced && state()) state()->mpi().close_call(MpiFn::Finalize, real_ns);
}

void check_unseen_init() noexcept {
  RankState* s = state();
  if (!s || g_init_seen.load()) return;
  // MPI_Initialized may be called at any time, before Init and after Finalize.
  // Only asked when an MPI library is loaded at all.
  static const auto initialized = RTRACE_PMPI(Initialized);
  int flag = 0;
  if (initialized && initialized(&flag) == MPI_SUCCESS && flag)
    s->log(LogLevel::Warn,
           "MPI was initialised but no wrapped MPI_Init saw it: this process's MPI calls went through bindings the "
           "tracer does not wrap and are not recorded");
}

}  // namespace rtrace::tracer::mpi

using namespace rtrace::tracer;
using namespace rtrace::tracer::mpi;

extern "C" {

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Init(int* argc, char*** argv) {
  RTRACE_REAL(MPI_Init);
  int rc;
  {
    Timed t(MpiFn::Init);
    rc = real_MPI_Init(argc, argv);
  }
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  RTRACE_REAL(MPI_Init_thread);
  int rc;
  {
    Timed t(MpiFn::Init_thread);
    rc = real_MPI_Init_thread(argc, argv, required, provided);
  }
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Finalize(void) {
  RTRACE_REAL(MPI_Finalize);
  const bool traced = finalize_begin();
  const std::int64_t t0 = monotonic_ns();
  const int rc = real_MPI_Finalize();
  finalize_end(traced, monotonic_ns() - t0);
  return rc;
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  RTRACE_REAL(MPI_Send);
  Timed t(MpiFn::Send);
  if (t.active()) t.sent = type_bytes(type, count);
  return real_MPI_Send(buf, count, type, dest, tag, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  RTRACE_REAL(MPI_Ssend);
  Timed t(MpiFn::Ssend);
  if (t.active()) t.sent = type_bytes(type, count);
  return real_MPI_Ssend(buf, count, type, dest, tag, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                           MPI_Status* status) {
  RTRACE_REAL(MPI_Recv);
  Timed t(MpiFn::Recv);
  MPI_Status own;
  MPI_Status* st = (status == MPI_STATUS_IGNORE) ? &own : status;
  int rc = real_MPI_Recv(buf, count, type, source, tag, comm, t.active() ? st : status);
  if (t.active() && rc == MPI_SUCCESS) t.received = received_bytes(st);
  return rc;
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                            MPI_Request* request) {
  RTRACE_REAL(MPI_Isend);
  Timed t(MpiFn::Isend);
  if (t.active()) t.sent = type_bytes(type, count);
  return real_MPI_Isend(buf, count, type, dest, tag, comm, request);
}

// Non-blocking receives book the posted size: the received size is only known
// at completion, and matching requests would cost a lookup per Wait.
RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                            MPI_Request* request) {
  RTRACE_REAL(MPI_Irecv);
  Timed t(MpiFn::Irecv);
  if (t.active()) t.received = type_bytes(type, count);
  return real_MPI_Irecv(buf, count, type, source, tag, comm, request);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  RTRACE_REAL(MPI_Wait);
  Timed t(MpiFn::Wait);
  return real_MPI_Wait(request, status);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  RTRACE_REAL(MPI_Waitall);
  Timed t(MpiFn::Waitall);
  return real_MPI_Waitall(count, requests, statuses);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  RTRACE_REAL(MPI_Waitany);
  Timed t(MpiFn::Waitany);
  return real_MPI_Waitany(count, requests, index, status);
}

RTRACE_C_POLL(Test, (MPI_Request * request, int* flag, MPI_Status* status), (request, flag, status), flag && *flag)

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                              MPI_Comm comm, MPI_Request* request) {
  RTRACE_REAL(MPI_Issend);
  Timed t(MpiFn::Issend);
  if (t.active()) t.sent = type_bytes(type, count);
  return real_MPI_Issend(buf, count, type, dest, tag, comm, request);
}

// Completion and probes: no payload of their own (the posted operation booked
// it), but an app that polls with them spends its waiting time inside them
// (issue 25: MPI_Testany and MPI_Iprobe loops counted as useful work).
RTRACE_C_POLL(Testany, (int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status),
              (count, requests, index, flag, status), flag && *flag)
RTRACE_C_POLL(Testsome,
              (int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]),
              (incount, requests, outcount, indices, statuses), outcount && *outcount > 0)
RTRACE_C_POLL(Testall, (int count, MPI_Request requests[], int* flag, MPI_Status statuses[]),
              (count, requests, flag, statuses), flag && *flag)
RTRACE_C_PLAIN(Waitsome,
               (int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]),
               (incount, requests, outcount, indices, statuses))
RTRACE_C_POLL(Iprobe, (int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status),
              (source, tag, comm, flag, status), flag && *flag)
RTRACE_C_PLAIN(Probe, (int source, int tag, MPI_Comm comm, MPI_Status* status), (source, tag, comm, status))
RTRACE_C_POLL(Improbe, (int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status),
              (source, tag, comm, flag, message, status), flag && *flag)
RTRACE_C_PLAIN(Mprobe, (int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status),
               (source, tag, comm, message, status))

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                                             MPI_Status* status) {
  RTRACE_REAL(MPI_Mrecv);
  Timed t(MpiFn::Mrecv);
  MPI_Status own;
  MPI_Status* st = (status == MPI_STATUS_IGNORE) ? &own : status;
  int rc = real_MPI_Mrecv(buf, count, type, message, t.active() ? st : status);
  if (t.active() && rc == MPI_SUCCESS) t.received = received_bytes(st);
  return rc;
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                                              MPI_Request* request) {
  RTRACE_REAL(MPI_Imrecv);
  Timed t(MpiFn::Imrecv);
  if (t.active()) t.received = type_bytes(type, count);
  return real_MPI_Imrecv(buf, count, type, message, request);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                               void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                               MPI_Comm comm, MPI_Status* status) {
  RTRACE_REAL(MPI_Sendrecv);
  Timed t(MpiFn::Sendrecv);
  MPI_Status own;
  MPI_Status* st = (status == MPI_STATUS_IGNORE) ? &own : status;
  int rc = real_MPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, t.active() ? st : status);
  if (t.active() && rc == MPI_SUCCESS) {
    t.sent = type_bytes(sendtype, sendcount);
    t.received = received_bytes(st);
  }
  return rc;
}

// Collectives book the payload this rank contributes and receives (the
// logical data, not the algorithm's internal traffic).
RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  RTRACE_REAL(MPI_Bcast);
  Timed t(MpiFn::Bcast);
  if (t.active()) (is_root(comm, root) ? t.sent : t.received) = type_bytes(type, count);
  return real_MPI_Bcast(buf, count, type, root, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                             MPI_Comm comm) {
  RTRACE_REAL(MPI_Reduce);
  Timed t(MpiFn::Reduce);
  if (t.active()) {
    t.sent = type_bytes(type, count);
    if (is_root(comm, root)) t.received = t.sent;
  }
  return real_MPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                                MPI_Comm comm) {
  RTRACE_REAL(MPI_Allreduce);
  Timed t(MpiFn::Allreduce);
  if (t.active()) t.sent = t.received = type_bytes(type, count);
  return real_MPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype type,
                                     MPI_Op op, MPI_Comm comm) {
  RTRACE_REAL(MPI_Reduce_scatter);
  Timed t(MpiFn::Reduce_scatter);
  if (t.active()) {
    std::int64_t n = comm_size(comm), total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += recvcounts[i];
    t.sent = type_bytes(type, total);
    const int r = comm_rank(comm);
    if (r >= 0) t.received = type_bytes(type, recvcounts[r]);
  }
  return real_MPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  RTRACE_REAL(MPI_Allgather);
  Timed t(MpiFn::Allgather);
  if (t.active()) {
    t.sent = sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcount) : type_bytes(sendtype, sendcount);
    t.received = type_bytes(recvtype, static_cast<std::int64_t>(recvcount) * comm_size(comm));
  }
  return real_MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  RTRACE_REAL(MPI_Allgatherv);
  Timed t(MpiFn::Allgatherv);
  if (t.active()) {
    std::int64_t n = comm_size(comm), total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += recvcounts[i];
    t.sent = sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount);
    t.received = type_bytes(recvtype, total);
  }
  return real_MPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  RTRACE_REAL(MPI_Alltoall);
  Timed t(MpiFn::Alltoall);
  if (t.active()) {
    std::int64_t n = comm_size(comm);
    t.received = type_bytes(recvtype, static_cast<std::int64_t>(recvcount) * n);
    t.sent = sendbuf == MPI_IN_PLACE ? t.received : type_bytes(sendtype, static_cast<std::int64_t>(sendcount) * n);
  }
  return real_MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm) {
  RTRACE_REAL(MPI_Alltoallv);
  Timed t(MpiFn::Alltoallv);
  if (t.active()) {
    std::int64_t n = comm_size(comm), s = 0, r = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (sendbuf != MPI_IN_PLACE) s += sendcounts[i];
      r += recvcounts[i];
    }
    t.sent = sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, r) : type_bytes(sendtype, s);
    t.received = type_bytes(recvtype, r);
  }
  return real_MPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Barrier(MPI_Comm comm) {
  RTRACE_REAL(MPI_Barrier);
  Timed t(MpiFn::Barrier);
  return real_MPI_Barrier(comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  RTRACE_REAL(MPI_Gather);
  Timed t(MpiFn::Gather);
  if (t.active()) {
    bool root_here = is_root(comm, root);
    t.sent = (root_here && sendbuf == MPI_IN_PLACE) ? type_bytes(recvtype, recvcount) : type_bytes(sendtype, sendcount);
    if (root_here) t.received = type_bytes(recvtype, static_cast<std::int64_t>(recvcount) * comm_size(comm));
  }
  return real_MPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                              const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                              MPI_Comm comm) {
  RTRACE_REAL(MPI_Gatherv);
  Timed t(MpiFn::Gatherv);
  if (t.active()) {
    bool root_here = is_root(comm, root);
    t.sent = sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount);
    if (root_here) {
      std::int64_t n = comm_size(comm), total = 0;
      for (std::int64_t i = 0; i < n; ++i) total += recvcounts[i];
      t.received = type_bytes(recvtype, total);
    }
  }
  return real_MPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  RTRACE_REAL(MPI_Scatter);
  Timed t(MpiFn::Scatter);
  if (t.active()) {
    bool root_here = is_root(comm, root);
    if (root_here) t.sent = type_bytes(sendtype, static_cast<std::int64_t>(sendcount) * comm_size(comm));
    t.received = (root_here && recvbuf == MPI_IN_PLACE) ? type_bytes(sendtype, sendcount) : type_bytes(recvtype, recvcount);
  }
  return real_MPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

RTRACE_EXPORT RTRACE_MPI_WRAPPER int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                               void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  RTRACE_REAL(MPI_Scatterv);
  Timed t(MpiFn::Scatterv);
  if (t.active()) {
    if (is_root(comm, root)) {
      std::int64_t n = comm_size(comm), total = 0;
      for (std::int64_t i = 0; i < n; ++i) total += sendcounts[i];
      t.sent = type_bytes(sendtype, total);
    }
    t.received = recvbuf == MPI_IN_PLACE ? 0 : type_bytes(recvtype, recvcount);
  }
  return real_MPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

}  // extern "C"
