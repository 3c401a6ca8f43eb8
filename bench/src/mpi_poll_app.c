/* An MPI app that spends its time polling: what a tracer's MPI_Test wrapper
 * costs when an app calls it hundreds of millions of times (HPCC does, about
 * 4e8 times at 2 ranks). bench/tracer_poll_overhead.sh runs it plain and traced.
 *
 *   mpi_poll_app null N [OUT]     N x MPI_Test on a completed request (MPI_REQUEST_NULL):
 *                                 the wrapper's cost per call over the library's cheapest path
 *   mpi_poll_app pending N [OUT]  N x MPI_Test on a pending receive (each call runs the
 *                                 library's progress engine), then the message is sent:
 *                                 nothing but polling, the worst case for a wrapper
 *   mpi_poll_app updates N [OUT]  N iterations over the ranks of HPCC's RandomAccess loop
 *                                 in small: an update of a 64 MiB table at a random index,
 *                                 then MPI_Test of the receive of the previous rank's next
 *                                 batch of 1024 updates, one every 2048 iterations (HPCC
 *                                 makes about 4e8 such calls at 2 ranks)
 *   mpi_poll_app mixed MS [OUT]   polling as apps do it (any number of ranks, best 2): rank r
 *                                 computes MS ms while the others poll its message with
 *                                 MPI_Test, in turns; then tests between compute chunks
 *                                 (as HPL does between its update chunks)
 *
 * Every rank prints one line `rank R: poll_s P work_s W calls C ns_per_call X
 * cpu_ns_per_call Y` on stdout: its own timers (CLOCK_MONOTONIC around its
 * polling loops, less the compute chunks it ran inside them; Y from the
 * thread's CPU clock, -1 for mixed). With OUT each rank also writes that line
 * to the file OUT.R (tests/analysis/polling_test.sh reads them). */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The calling thread's CPU time: a loop's cost without the time other
 * processes took its core (preemptions), on a busy machine. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile double sink;

/* Work for `ms` milliseconds of wall time; returns the time it took. */
static double compute_for(double ms) {
  const double t0 = now(), end = t0 + ms * 1e-3;
  double acc = 1;
  while (now() < end)
    for (int i = 0; i < 2000; ++i) acc = acc * 0.999999 + 1e-9;
  sink = acc;
  return now() - t0;
}

static int rank, size;
static const char* out_path = NULL;

/* cpu_s: the polling loops' CPU time where it is measured (null, pending), else -1. */
static void report(double poll_s, double work_s, long long calls, double cpu_s) {
  char line[320];
  snprintf(line, sizeof line, "rank %d: poll_s %.6f work_s %.6f calls %lld ns_per_call %.2f cpu_ns_per_call %.2f\n",
           rank, poll_s, work_s, calls, calls > 0 ? 1e9 * poll_s / (double)calls : 0.0,
           calls > 0 && cpu_s >= 0 ? 1e9 * cpu_s / (double)calls : -1.0);
  fputs(line, stdout);
  if (out_path && *out_path) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", out_path, rank);
    FILE* f = fopen(path, "w");
    if (f) {
      fputs(line, f);
      fclose(f);
    }
  }
}

/* N tests of a completed request: MPI_Test returns at once with flag = 1. */
static void null_tests(long long n) {
  MPI_Request rq = MPI_REQUEST_NULL;
  int flag = 0;
  long long done = 0;
  const double t0 = now(), c0 = cpu_now();
  for (long long i = 0; i < n; ++i) {
    MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
    done += flag;
  }
  const double t = now() - t0, c = cpu_now() - c0;
  if (done != n) fprintf(stderr, "rank %d: MPI_Test on MPI_REQUEST_NULL gave flag 0\n", rank);
  report(t, 0, n, c);
}

/* N tests of a receive that stays pending: its message is sent only after
 * every rank has made its N calls (the barrier), so no call completes it. */
static void pending_tests(long long n) {
  const int from = (rank + size - 1) % size, to = (rank + 1) % size;
  int token = rank, got = -1, flag = 0;
  MPI_Request rq;
  MPI_Irecv(&got, 1, MPI_INT, from, 99, MPI_COMM_WORLD, &rq);
  const double t0 = now(), c0 = cpu_now();
  for (long long i = 0; i < n && !flag; ++i) MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
  const double t = now() - t0, c = cpu_now() - c0;
  if (flag) fprintf(stderr, "rank %d: the pending receive completed early\n", rank);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Send(&token, 1, MPI_INT, to, 99, MPI_COMM_WORLD);
  if (!flag) MPI_Wait(&rq, MPI_STATUS_IGNORE);
  report(t, 0, n, c);
}

/* The loop of HPCC's RandomAccess in small, N iterations over the ranks:
 * an update of a 64 MiB table at a random index (HPCC's xorshift stream),
 * then MPI_Test of the receive of the previous rank's next batch of updates
 * (applied and the receive posted again when it came), and every 2 x kBatch
 * iterations a batch of kBatch updates to the next rank with MPI_Isend, once
 * the batch before it has gone (MPI_Test; HPCC sends its buckets so: half of
 * the updates of 2 ranks are the other's). No rank waits for another inside
 * the loop. */
enum { kBatch = 1024 };  /* HPCC: LOCAL_BUFFER_SIZE */
static void updates(long long n) {
  const unsigned long long words = 1ull << 23;
  unsigned long long* table = malloc(words * sizeof *table);
  if (!table) {
    fprintf(stderr, "rank %d: no memory for the table\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (unsigned long long i = 0; i < words; ++i) table[i] = i;
  static unsigned long long in[kBatch], out[2][kBatch];
  const int from = (rank + size - 1) % size, to = (rank + 1) % size;
  const long long iters = n / size, every = 2 * kBatch, batches = iters / every;
  unsigned long long ran = 0x123456789abcdefull + (unsigned long long)rank;
  MPI_Request inreq, outreq = MPI_REQUEST_NULL;
  long long received = 0, sent = 0, due = 0;
  int buf = 0, flag = 0;
  long long calls = 0;
  if (batches > 0) MPI_Irecv(in, kBatch, MPI_UNSIGNED_LONG_LONG, from, 97, MPI_COMM_WORLD, &inreq);
  const double t0 = now(), c0 = cpu_now();
  for (long long i = 0; i < iters; ++i) {
    ran = (ran << 1) ^ ((long long)ran < 0 ? 7ull : 0ull);
    table[ran & (words - 1)] ^= ran;
    out[buf][i % kBatch] = ran;
    if (received < batches) {
      MPI_Test(&inreq, &flag, MPI_STATUS_IGNORE);
      ++calls;
      if (flag) {
        for (int k = 0; k < kBatch; ++k) table[in[k] & (words - 1)] ^= in[k];
        if (++received < batches) MPI_Irecv(in, kBatch, MPI_UNSIGNED_LONG_LONG, from, 97, MPI_COMM_WORLD, &inreq);
      }
    }
    if (i % every == every - 1 && due < batches) ++due;
    if (sent < due) {
      int gone = 1;
      if (outreq != MPI_REQUEST_NULL) {
        MPI_Test(&outreq, &gone, MPI_STATUS_IGNORE);
        ++calls;
      }
      if (gone) {
        MPI_Isend(out[buf], kBatch, MPI_UNSIGNED_LONG_LONG, to, 97, MPI_COMM_WORLD, &outreq);
        buf ^= 1;
        ++sent;
      }
    }
  }
  const double t = now() - t0, c = cpu_now() - c0;
  /* A rank behind the others sends and receives the rest now. */
  while (sent < batches) {
    MPI_Wait(&outreq, MPI_STATUS_IGNORE);
    MPI_Isend(out[buf], kBatch, MPI_UNSIGNED_LONG_LONG, to, 97, MPI_COMM_WORLD, &outreq);
    buf ^= 1;
    ++sent;
  }
  while (received < batches) {
    MPI_Wait(&inreq, MPI_STATUS_IGNORE);
    for (int k = 0; k < kBatch; ++k) table[in[k] & (words - 1)] ^= in[k];
    if (++received < batches) MPI_Irecv(in, kBatch, MPI_UNSIGNED_LONG_LONG, from, 97, MPI_COMM_WORLD, &inreq);
  }
  MPI_Wait(&outreq, MPI_STATUS_IGNORE);
  unsigned long long sum = 0;
  for (unsigned long long i = 0; i < words; i += 4096) sum += table[i];
  sink = (double)sum;
  free(table);
  report(t, 0, calls, c);
}

/* Turns: rank r computes `ms` while the others poll for its message; then
 * every rank tests once after each of 20 compute chunks for a message its
 * left neighbour sends after its own 20, and then polls for it. */
static void mixed(double ms) {
  double poll_s = 0, work_s = 0;
  long long calls = 0;
  const int turns = 4;
  for (int turn = 0; turn < turns * size; ++turn) {
    const int root = turn % size;
    double token = turn;
    if (rank == root) {
      work_s += compute_for(ms);
      for (int r = 0; r < size; ++r)
        if (r != rank) MPI_Send(&token, 1, MPI_DOUBLE, r, turn, MPI_COMM_WORLD);
    } else {
      MPI_Request rq;
      int flag = 0;
      MPI_Irecv(&token, 1, MPI_DOUBLE, root, turn, MPI_COMM_WORLD, &rq);
      const double t0 = now();
      while (!flag) {
        MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        ++calls;
      }
      poll_s += now() - t0;
    }
  }
  /* Polls between compute chunks: the chunks are the app's work, not MPI. */
  if (size > 1) {
    const int from = (rank + size - 1) % size, to = (rank + 1) % size;
    double token = 0, got = 0;
    MPI_Request rq;
    int flag = 0;
    MPI_Irecv(&got, 1, MPI_DOUBLE, from, 1000, MPI_COMM_WORLD, &rq);
    const double t0 = now();
    double chunks_s = 0;
    for (int chunk = 0; chunk < 20; ++chunk) {
      chunks_s += compute_for(ms / 20);
      if (!flag) {
        MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        ++calls;
      }
    }
    MPI_Send(&token, 1, MPI_DOUBLE, to, 1000, MPI_COMM_WORLD);
    while (!flag) {
      MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
      ++calls;
    }
    poll_s += now() - t0 - chunks_s;
    work_s += chunks_s;
  }
  report(poll_s, work_s, calls, -1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "";
  const double arg = argc > 2 ? atof(argv[2]) : 0;
  if (argc > 3) out_path = argv[3];
  int rc = 0;
  if (strcmp(mode, "null") == 0 && arg > 0) null_tests((long long)arg);
  else if (strcmp(mode, "pending") == 0 && arg > 0) pending_tests((long long)arg);
  else if (strcmp(mode, "updates") == 0 && arg > 0) updates((long long)arg);
  else if (strcmp(mode, "mixed") == 0 && arg > 0) mixed(arg);
  else {
    if (rank == 0) fprintf(stderr, "usage: mpi_poll_app null|pending|updates N [OUT] | mixed MS [OUT]\n");
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
