/* MPI calls the tracer wraps since issue 25, with known payloads. Run on 2 ranks.
 *   mpi_calls_app poll-iprobe MS    rank 0 computes MS ms, then sends; rank 1 polls MPI_Iprobe
 *   mpi_calls_app poll-testany MS   the same, rank 1 polls MPI_Testany / MPI_Testsome / MPI_Testall
 *   mpi_calls_app rma               one-sided: every window and synchronisation call, known bytes
 *   mpi_calls_app io FILE           MPI-IO on FILE (created): every read/write form, known bytes
 *   mpi_calls_app collectives       non-blocking, neighbourhood and w-form collectives,
 *                                   communicators, probes and matched receives
 * Payloads per rank are listed next to each call (see integration_test.cpp). */
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

/* Work for `ms` milliseconds of wall time (the other rank waits that long). */
static double compute_for(double ms) {
  volatile double acc = 1;
  const double end = now() + ms * 1e-3;
  while (now() < end)
    for (int i = 0; i < 10000; ++i) acc = acc * 0.999999 + 1e-9;
  return acc;
}

static int rank, peer;

static void poll_iprobe(double ms) {
  double buf[100] = {0};
  if (rank == 0) {
    compute_for(ms);
    MPI_Send(buf, 100, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
  } else {
    int flag = 0;
    while (!flag) MPI_Iprobe(0, 7, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Recv(buf, 100, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
}

static void poll_testany(double ms) {
  double a[10] = {0}, b[10] = {0}, c[10] = {0};
  if (rank == 0) {
    compute_for(ms);
    MPI_Send(a, 10, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
    compute_for(ms / 4);
    MPI_Send(b, 10, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD);
    compute_for(ms / 4);
    MPI_Send(c, 10, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
  } else {
    MPI_Request rq[3];
    MPI_Irecv(a, 10, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(b, 10, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Irecv(c, 10, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, &rq[2]);
    int index = -1, flag = 0, outcount = 0, indices[3];
    while (!flag) MPI_Testany(3, rq, &index, &flag, MPI_STATUS_IGNORE);
    while (outcount == 0) MPI_Testsome(3, rq, &outcount, indices, MPI_STATUSES_IGNORE);
    flag = 0;
    while (!flag) MPI_Testall(3, rq, &flag, MPI_STATUSES_IGNORE);
  }
}

static void rma(void) {
  /* Window of 1000 doubles per rank, from MPI_Win_allocate. */
  double* base = NULL;
  MPI_Win win;
  MPI_Win_allocate(1000 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  for (int i = 0; i < 1000; ++i) base[i] = rank;
  double src[100], dst[100], res[10];
  for (int i = 0; i < 100; ++i) src[i] = i;
  MPI_Win_fence(0, win);
  MPI_Put(src, 100, MPI_DOUBLE, peer, 0, 100, MPI_DOUBLE, win);           /* sent 800 */
  MPI_Win_fence(0, win);
  MPI_Get(dst, 50, MPI_DOUBLE, peer, 100, 50, MPI_DOUBLE, win);           /* received 400 */
  MPI_Win_fence(0, win);
  MPI_Accumulate(src, 10, MPI_DOUBLE, peer, 200, 10, MPI_DOUBLE, MPI_SUM, win); /* sent 80 */
  MPI_Win_fence(0, win);
  MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
  MPI_Get_accumulate(src, 5, MPI_DOUBLE, res, 5, MPI_DOUBLE, peer, 300, 5, MPI_DOUBLE, MPI_SUM, win); /* 40 / 40 */
  MPI_Fetch_and_op(src, res, MPI_DOUBLE, peer, 400, MPI_SUM, win);        /* 8 / 8 */
  MPI_Win_flush(peer, win);
  MPI_Win_flush_local(peer, win);
  MPI_Win_unlock(peer, win);
  MPI_Win_lock_all(0, win);
  MPI_Request rq[2];
  MPI_Rput(src, 20, MPI_DOUBLE, peer, 500, 20, MPI_DOUBLE, win, &rq[0]);   /* sent 160 */
  MPI_Rget(dst, 30, MPI_DOUBLE, peer, 600, 30, MPI_DOUBLE, win, &rq[1]);   /* received 240 */
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  MPI_Win_flush_all(win);
  MPI_Win_flush_local_all(win);
  MPI_Win_unlock_all(win);
  /* Post-start-complete-wait with the peer's group. */
  MPI_Group world, peer_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, 1, &peer, &peer_group);
  MPI_Win_post(peer_group, 0, win);
  MPI_Win_start(peer_group, 0, win);
  MPI_Put(src, 1, MPI_DOUBLE, peer, 700, 1, MPI_DOUBLE, win);             /* sent 8 (Put: 808 in all) */
  MPI_Win_complete(win);
  MPI_Win_wait(win);
  MPI_Group_free(&peer_group);
  MPI_Group_free(&world);
  MPI_Win_free(&win);

  /* Compare_and_swap needs an integer type: a window of longs from MPI_Win_create. */
  long counters[4] = {0, 0, 0, 0};
  long mine = 1, compare = 0, old = -1;
  MPI_Win lwin;
  MPI_Win_create(counters, sizeof counters, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &lwin);
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, lwin);
  MPI_Compare_and_swap(&mine, &compare, &old, MPI_LONG, peer, 0, lwin);   /* sent 16, received 8 */
  MPI_Win_unlock(peer, lwin);
  MPI_Win_free(&lwin);

  MPI_Win dwin, swin;
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dwin);
  MPI_Win_free(&dwin);
  double* shared = NULL;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Win_allocate_shared(64, 8, MPI_INFO_NULL, node, &shared, &swin);
  MPI_Win_free(&swin);
  MPI_Comm_free(&node);
}

static void io(const char* path) {
  MPI_File fh;
  int data[1000], back[1000];
  for (int i = 0; i < 1000; ++i) data[i] = rank * 1000 + i;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  /* Layout: [0, 8000) write_at, [8000, 12000) write_at_all, [12000, 14000) iwrite_at,
   * [14000, 16000) iwrite_at_all: each rank its half of every block. */
  MPI_File_write_at(fh, rank * 4000, data, 1000, MPI_INT, MPI_STATUS_IGNORE);            /* sent 4000 */
  MPI_File_write_at_all(fh, 8000 + rank * 2000, data, 500, MPI_INT, MPI_STATUS_IGNORE);  /* sent 2000 */
  MPI_Request rq;
  MPI_File_iwrite_at(fh, 12000 + rank * 1000, data, 250, MPI_INT, &rq);                  /* sent 1000 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_File_iwrite_at_all(fh, 14000 + rank * 1000, data, 250, MPI_INT, &rq);              /* sent 1000 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_File_read_at(fh, peer * 4000, back, 1000, MPI_INT, MPI_STATUS_IGNORE);             /* received 4000 */
  if (back[0] != peer * 1000 || back[999] != peer * 1000 + 999) {
    fprintf(stderr, "rank %d: read back wrong data\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_File_read_at_all(fh, 8000 + peer * 2000, back, 500, MPI_INT, MPI_STATUS_IGNORE);   /* received 2000 */
  MPI_File_iread_at(fh, 12000, back, 250, MPI_INT, &rq);                                 /* received 1000 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_File_iread_at_all(fh, 14000, back, 250, MPI_INT, &rq);                             /* received 1000 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  /* A read past the end gets what is there: 400 of the 4000 bytes asked for,
   * booked from the status (File_read_at: 4400 in all). */
  MPI_Status st;
  MPI_File_read_at(fh, 16000 - 400, back, 1000, MPI_INT, &st);
  MPI_File_close(&fh);

  /* The individual file pointer forms, each rank on its own file. */
  char own[4096];
  snprintf(own, sizeof own, "%s.%d", path, rank);
  MPI_File_open(MPI_COMM_SELF, own, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_write(fh, data, 100, MPI_INT, MPI_STATUS_IGNORE);       /* sent 400 */
  MPI_File_write_all(fh, data, 100, MPI_INT, MPI_STATUS_IGNORE);   /* sent 400 */
  MPI_File_iwrite(fh, data, 100, MPI_INT, &rq);                    /* sent 400 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_File_iwrite_all(fh, data, 100, MPI_INT, &rq);                /* sent 400 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  MPI_File_read(fh, back, 100, MPI_INT, MPI_STATUS_IGNORE);        /* received 400 */
  MPI_File_read_all(fh, back, 100, MPI_INT, MPI_STATUS_IGNORE);    /* received 400 */
  MPI_File_iread(fh, back, 100, MPI_INT, &rq);                     /* received 400 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_File_iread_all(fh, back, 100, MPI_INT, &rq);                 /* received 400 */
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
}

static void collectives(void) {
  int n = 2, ints[20], got[20], counts[2] = {5, 5}, displs[2] = {0, 5};
  double d[100], r[100];
  for (int i = 0; i < 20; ++i) ints[i] = rank + i;
  for (int i = 0; i < 100; ++i) d[i] = rank;
  MPI_Request rq;
#define WAIT() MPI_Wait(&rq, MPI_STATUS_IGNORE)
  MPI_Ibarrier(MPI_COMM_WORLD, &rq); WAIT();
  MPI_Ibcast(ints, 10, MPI_INT, 0, MPI_COMM_WORLD, &rq); WAIT();                   /* root sent 40 / received 40 */
  MPI_Iallreduce(d, r, 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq); WAIT();     /* 800 / 800 */
  MPI_Ireduce(d, r, 100, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &rq); WAIT();     /* 800 / root 800 */
  MPI_Igather(ints, 3, MPI_INT, got, 3, MPI_INT, 0, MPI_COMM_WORLD, &rq); WAIT();   /* 12 / root 24 */
  MPI_Igatherv(ints, 5, MPI_INT, got, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &rq); WAIT(); /* 20 / root 40 */
  MPI_Iscatter(ints, 3, MPI_INT, got, 3, MPI_INT, 0, MPI_COMM_WORLD, &rq); WAIT();  /* root 24 / 12 */
  MPI_Iscatterv(ints, counts, displs, MPI_INT, got, 5, MPI_INT, 0, MPI_COMM_WORLD, &rq); WAIT(); /* root 40 / 20 */
  MPI_Iallgather(ints, 4, MPI_INT, got, 4, MPI_INT, MPI_COMM_WORLD, &rq); WAIT();   /* 16 / 32 */
  MPI_Iallgatherv(ints, 5, MPI_INT, got, counts, displs, MPI_INT, MPI_COMM_WORLD, &rq); WAIT(); /* 20 / 40 */
  MPI_Ialltoall(ints, 6, MPI_INT, got, 6, MPI_INT, MPI_COMM_WORLD, &rq); WAIT();    /* 48 / 48 */
  MPI_Ialltoallv(ints, counts, displs, MPI_INT, got, counts, displs, MPI_INT, MPI_COMM_WORLD, &rq); WAIT(); /* 40/40 */
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  int wdispls[2] = {0, 20};
  MPI_Ialltoallw(ints, counts, wdispls, types, got, counts, wdispls, types, MPI_COMM_WORLD, &rq); WAIT(); /* 40/40 */
  MPI_Alltoallw(ints, counts, wdispls, types, got, counts, wdispls, types, MPI_COMM_WORLD);           /* 40/40 */
  MPI_Ireduce_scatter(d, r, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq); WAIT();   /* 80 / 40 */
  MPI_Ireduce_scatter_block(d, r, 7, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq); WAIT();  /* 112 / 56 */
  MPI_Reduce_scatter_block(d, r, 7, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);               /* 112 / 56 */
  MPI_Iscan(d, r, 9, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq); WAIT();                 /* 72 / 72 */
  MPI_Iexscan(d, r, 9, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq); WAIT();               /* 72 / 72 */
  MPI_Scan(d, r, 9, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);                               /* 72 / 72 */
  MPI_Exscan(d, r, 9, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);                             /* 72 / 72 */

  /* A periodic ring of the 2 ranks: 2 in- and 2 out-neighbours each. */
  int dims[1] = {2}, periods[1] = {1};
  MPI_Comm ring;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  int nc[2] = {3, 3}, nd[2] = {0, 3};
  MPI_Aint nad[2] = {0, 12};
  MPI_Neighbor_allgather(ints, 3, MPI_INT, got, 3, MPI_INT, ring);                         /* 24 / 24 */
  MPI_Neighbor_allgatherv(ints, 3, MPI_INT, got, nc, nd, MPI_INT, ring);                   /* 24 / 24 */
  MPI_Neighbor_alltoall(ints, 3, MPI_INT, got, 3, MPI_INT, ring);                          /* 24 / 24 */
  MPI_Neighbor_alltoallv(ints, nc, nd, MPI_INT, got, nc, nd, MPI_INT, ring);               /* 24 / 24 */
  MPI_Neighbor_alltoallw(ints, nc, nad, types, got, nc, nad, types, ring);                 /* 24 / 24 */
  MPI_Ineighbor_allgather(ints, 3, MPI_INT, got, 3, MPI_INT, ring, &rq); WAIT();
  MPI_Ineighbor_allgatherv(ints, 3, MPI_INT, got, nc, nd, MPI_INT, ring, &rq); WAIT();
  MPI_Ineighbor_alltoall(ints, 3, MPI_INT, got, 3, MPI_INT, ring, &rq); WAIT();
  MPI_Ineighbor_alltoallv(ints, nc, nd, MPI_INT, got, nc, nd, MPI_INT, ring, &rq); WAIT();
  MPI_Ineighbor_alltoallw(ints, nc, nad, types, got, nc, nad, types, ring, &rq); WAIT();
  MPI_Comm_free(&ring);

  /* Communicators. */
  MPI_Comm split, dup, created;
  MPI_Group world;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Comm_create(MPI_COMM_WORLD, world, &created);
  MPI_Group_free(&world);
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&created);

  /* Probes and matched receives: rank 0 sends four messages of 10 doubles. */
  if (rank == 0) {
    MPI_Issend(d, 10, MPI_DOUBLE, 1, 11, MPI_COMM_WORLD, &rq); WAIT();   /* sent 80 */
    for (int tag = 12; tag <= 14; ++tag) MPI_Send(d, 10, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD);
  } else {
    MPI_Status st;
    MPI_Message msg;
    int flag = 0, outcount = 0, idx[1];
    MPI_Probe(0, 11, MPI_COMM_WORLD, &st);
    MPI_Recv(r, 10, MPI_DOUBLE, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Mprobe(0, 12, MPI_COMM_WORLD, &msg, &st);
    MPI_Mrecv(r, 10, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE);               /* received 80 */
    while (!flag) MPI_Improbe(0, 13, MPI_COMM_WORLD, &flag, &msg, &st);
    MPI_Imrecv(r, 10, MPI_DOUBLE, &msg, &rq); WAIT();                     /* received 80 */
    MPI_Irecv(r, 10, MPI_DOUBLE, 0, 14, MPI_COMM_WORLD, &rq);
    while (outcount == 0) MPI_Waitsome(1, &rq, &outcount, idx, MPI_STATUSES_IGNORE);
  }
  (void)n;
#undef WAIT
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  peer = 1 - rank;
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "poll-iprobe") == 0 && argc > 2) poll_iprobe(atof(argv[2]));
  else if (strcmp(mode, "poll-testany") == 0 && argc > 2) poll_testany(atof(argv[2]));
  else if (strcmp(mode, "rma") == 0) rma();
  else if (strcmp(mode, "io") == 0 && argc > 2) io(argv[2]);
  else if (strcmp(mode, "collectives") == 0) collectives();
  else {
    fprintf(stderr, "usage: mpi_calls_app poll-iprobe MS | poll-testany MS | rma | io FILE | collectives\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  printf("rank %d: %s done\n", rank, mode);
  MPI_Finalize();
  return 0;
}
