/* Streams of requests to the shared cache levels and their merge in
   concurrent order: see rc_shared_cache.h. */

#include "rc_shared_cache.h"

#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_vkiscnums.h"
#include "pub_tool_options.h"

/* A buffer that reaches this many requests is merged with the others at
   once (4 MiB a thread). A time slice of a streaming thread sends about
   50,000; a thread ahead of the others keeps up to 2 slices more. */
#define MAX_REQUESTS (1U << 18)

/* Valgrind 3.19's time slice (SCHEDULING_QUANTUM, not an option there). */
#define SLICE_BLOCKS 100000ULL
/* Positions are kept in 1/16 blocks (requests come a few per block). */
#define POS_UNIT 16ULL
/* Positions must fit 32 bits: an extent past this is merged at once. */
#define MAX_EXTENT (1ULL << 31)

static void (*apply_request)(void* owner, UWord key, UInt bucket) = NULL;
static const ULong* helper_clock = NULL;

static RcStream** streams = NULL;   /* every registered stream */
static UInt n_streams = 0, streams_cap = 0;
Bool rc_sc_direct = True;
static Bool merging = False;
static RcStream* last_started = NULL;   /* the stream whose thread ran last */

static void update_direct(void)
{
   rc_sc_direct = n_streams == 0 || (n_streams == 1 && streams[0]->n == streams[0]->head);
}

/* Blocks per helper call over every closed run period: where a running
   thread's blocks are not known yet (a merge while it runs), they are
   estimated from its clock. */
static ULong total_blocks = 0, total_calls = 0;

static ULong n_merges = 0, n_merged = 0, n_multi = 0, max_streams = 0, n_carried = 0;

void rc_sc_init(void (*apply)(void*, UWord, UInt), const ULong* clock)
{
   apply_request = apply;
   helper_clock = clock;
}

void rc_sc_stream_init(RcStream* s, void* owner, const RcStream* creator)
{
   VG_(memset)(s, 0, sizeof *s);
   s->owner = owner;
   /* A new thread starts where its creator is (it is in the clone call:
      its positions are all known). */
   if (creator && creator->registered) s->extent = creator->extent;
   if (n_streams == streams_cap) {
      streams_cap = streams_cap ? 2 * streams_cap : 64;
      streams = VG_(realloc)("rc.sc.streams", streams, streams_cap * sizeof(RcStream*));
   }
   streams[n_streams++] = s;
   s->registered = True;
   update_direct();
}

void rc_sc_stream_forget(RcStream* s)
{
   if (s->registered) {
      for (UInt i = 0; i < n_streams; i++)
         if (streams[i] == s) {
            streams[i] = streams[--n_streams];
            break;
         }
      s->registered = False;
   }
   if (last_started == s) last_started = NULL;
   if (s->req) VG_(free)(s->req);
   s->req = NULL;
   s->head = s->n = s->cap = s->timed = 0;
   update_direct();
}

static void merge(Bool round);

void rc_sc_grow(RcStream* s)
{
   /* A full buffer: the round so far, and all if that leaves it full. */
   if (s->n - s->head >= MAX_REQUESTS) merge(True);
   if (s->n - s->head >= MAX_REQUESTS) merge(False);
   if (s->head > 0) {   /* what a merge left: to the front */
      VG_(memmove)(s->req, s->req + s->head, (s->n - s->head) * sizeof(RcRequest));
      s->n -= s->head;
      s->timed -= s->head;
      s->head = 0;
   }
   if (s->n < s->cap) return;
   s->cap = s->cap ? 2 * s->cap : 4096;
   s->req = VG_(realloc)("rc.sc.req", s->req, s->cap * sizeof(RcRequest));
}

/* The open run period of `s` ends (or is cut by a merge) after `blocks`
   blocks and `calls` helper calls: its requests get block positions, in
   proportion to their helper calls within it. */
static void close_period(RcStream* s, ULong blocks, ULong calls)
{
   const ULong base = s->extent;
   for (UInt j = s->timed; j < s->n; j++) {
      const ULong c = s->req[j].pos;
      s->req[j].pos = (UInt)(base + (calls ? c * blocks * POS_UNIT / calls : 0));
   }
   s->timed = s->n;
   s->extent += blocks * POS_UNIT;
   s->ran_since_merge += blocks * POS_UNIT;
   s->period_calls0 += calls;
   s->period_blocks0 += blocks;
}

/* Where the threads that can run are: the least position among them
   (the horizon a round would reach), else `fallback`. */
static ULong common_position(const RcStream* except, ULong fallback);

void rc_sc_start(RcStream* s, ULong blocks)
{
   /* Back from a wait while others ran: it goes on from where it was woken
      (or, woken by no thread we saw, from where the others are). */
   if (s->waited && s != last_started) {
      const ULong at = s->woken ? s->woken_at : common_position(s, s->extent);
      if (at > s->extent) s->extent = at;
   }
   s->waited = s->woken = False;
   /* Another thread ran since this one did, and this one ran since the
      last merge: the round is complete. The same thread going on after a
      system call or a new translation is the same round, until it has run
      a whole time slice: then it runs alone (the others wait or sleep), and
      the round is closed there, so that a thread that wakes up later starts
      from then, not from when this one began. */
   if ((s != last_started && s->ran) || (s == last_started && s->ran_since_merge >= SLICE_BLOCKS * POS_UNIT))
      merge(True);
   last_started = s;
   s->running = True;
   s->ran = True;
   s->period_blocks0 = blocks;
   s->period_calls0 = *helper_clock;
}

void rc_sc_stop(RcStream* s, ULong blocks)
{
   if (!s->running) return;
   const ULong calls = *helper_clock - s->period_calls0;
   const ULong b = blocks > s->period_blocks0 ? blocks - s->period_blocks0 : 0;
   total_blocks += b;
   total_calls += calls;
   close_period(s, b, calls);
   s->running = False;
   if (s->extent >= MAX_EXTENT) merge(False);
}

/* futex(2) commands (the op without FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME). */
enum { FUTEX_WAIT_ = 0, FUTEX_WAKE_ = 1, FUTEX_REQUEUE_ = 3, FUTEX_CMP_REQUEUE_ = 4, FUTEX_WAKE_OP_ = 5,
       FUTEX_LOCK_PI_ = 6, FUTEX_UNLOCK_PI_ = 7, FUTEX_WAIT_BITSET_ = 9, FUTEX_WAKE_BITSET_ = 10,
       FUTEX_WAIT_REQUEUE_PI_ = 11, FUTEX_CMP_REQUEUE_PI_ = 12, FUTEX_LOCK_PI2_ = 13 };

static void wake_waiters(const RcStream* waker, UWord futex)
{
   for (UInt i = 0; i < n_streams; i++) {
      RcStream* w = streams[i];
      if (w == waker || !w->waiting || w->futex != futex) continue;
      w->woken = True;
      w->woken_at = waker->extent;
   }
}

void rc_sc_pre_syscall(RcStream* s, UWord sysno, const UWord* args, UInt n_args)
{
   Bool waits = False;
   s->futex = 0;
   switch (sysno) {
      case __NR_futex: {
         if (n_args < 2) break;
         const UWord cmd = args[1] & 127;
         if (cmd == FUTEX_WAIT_ || cmd == FUTEX_WAIT_BITSET_ || cmd == FUTEX_WAIT_REQUEUE_PI_ || cmd == FUTEX_LOCK_PI_ ||
             cmd == FUTEX_LOCK_PI2_) {
            waits = True;
            s->futex = args[0];
         } else if (cmd == FUTEX_WAKE_ || cmd == FUTEX_WAKE_BITSET_ || cmd == FUTEX_REQUEUE_ ||
                    cmd == FUTEX_CMP_REQUEUE_ || cmd == FUTEX_UNLOCK_PI_ || cmd == FUTEX_CMP_REQUEUE_PI_) {
            wake_waiters(s, args[0]);
         } else if (cmd == FUTEX_WAKE_OP_) {
            wake_waiters(s, args[0]);
            if (n_args >= 5) wake_waiters(s, args[4]);
         }
         break;
      }
      case __NR_nanosleep: case __NR_clock_nanosleep: case __NR_poll: case __NR_ppoll: case __NR_select:
      case __NR_pselect6: case __NR_epoll_wait: case __NR_epoll_pwait: case __NR_wait4: case __NR_waitid:
      case __NR_pause: case __NR_rt_sigsuspend: case __NR_rt_sigtimedwait:
         waits = True;
         break;
      default:
         break;
   }
   s->waiting = waits;
   if (waits) {
      s->waited = True;
      s->woken = False;
   }
}

void rc_sc_exit(RcStream* s)
{
   s->gone = True;
   s->running = False;
   if (last_started == s) last_started = NULL;
   if (s->n == s->head) rc_sc_stream_forget(s);
}

/* ---------------------------------------------------------------- merge */

typedef struct {
   RcStream* s;
   UInt next, end;   /* requests next..end go in now */
} Source;

static inline Bool before(const Source* a, const Source* b)
{
   const UInt pa = a->s->req[a->next].pos, pb = b->s->req[b->next].pos;
   return pa < pb || (pa == pb && a->s < b->s);
}

static void sift_down(Source* h, UInt n, UInt i)
{
   for (;;) {
      UInt l = 2 * i + 1, m = i;
      if (l < n && before(&h[l], &h[m])) m = l;
      if (l + 1 < n && before(&h[l + 1], &h[m])) m = l + 1;
      if (m == i) return;
      Source t = h[i];
      h[i] = h[m];
      h[m] = t;
      i = m;
   }
}

/* Requests of `s` at positions up to `horizon`: req[head..end). */
static UInt end_at(const RcStream* s, ULong horizon)
{
   UInt lo = s->head, hi = s->n;   /* positions grow along the buffer */
   while (lo < hi) {
      const UInt mid = lo + (hi - lo) / 2;
      if ((ULong)s->req[mid].pos <= horizon) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

/* Merges up to `horizon` (1/16 blocks since the origin); the requests past
   it stay, with the origin moved to the horizon. */
static void merge_to(ULong horizon)
{
   Source* heap = VG_(malloc)("rc.sc.heap", n_streams * sizeof(Source));
   UInt k = 0;
   ULong requests = 0;
   for (UInt i = 0; i < n_streams; i++) {
      RcStream* s = streams[i];
      const UInt end = end_at(s, horizon);
      if (end == s->head) continue;
      heap[k].s = s;
      heap[k].next = s->head;
      heap[k].end = end;
      requests += end - s->head;
      k++;
   }
   if (k == 1) {
      /* One thread's requests: in its own order. */
      RcStream* s = heap[0].s;
      for (UInt j = heap[0].next; j < heap[0].end; j++) apply_request(s->owner, s->req[j].key, s->req[j].bucket);
   } else if (k > 1) {
      for (Int i = (Int)k / 2 - 1; i >= 0; i--) sift_down(heap, k, (UInt)i);
      UInt live = k;
      while (live > 0) {
         Source* top = &heap[0];
         const RcRequest* r = &top->s->req[top->next];
         apply_request(top->s->owner, r->key, r->bucket);
         if (++top->next == top->end) heap[0] = heap[--live];
         sift_down(heap, live, 0);
      }
      n_multi++;
   }
   VG_(free)(heap);
   for (UInt i = 0; i < n_streams; i++) {
      RcStream* s = streams[i];
      s->head = end_at(s, horizon);
      if (s->head == s->n) s->head = s->n = s->timed = 0;
      for (UInt j = s->head; j < s->n; j++) s->req[j].pos -= (UInt)horizon;
      n_carried += s->n - s->head;
      s->extent = s->extent > horizon ? s->extent - horizon : 0;
      s->woken_at = s->woken_at > horizon ? s->woken_at - horizon : 0;
      s->ran_since_merge = 0;
      s->ran = s->running;   /* the running thread goes on running in the next round */
   }
   /* Exited threads whose requests are all in. */
   for (UInt i = 0; i < n_streams;) {
      RcStream* s = streams[i];
      if (s->gone && s->n == s->head) rc_sc_stream_forget(s);   /* moves the last one here */
      else i++;
   }
   update_direct();
   n_merges++;
   n_merged += requests;
   if (k > max_streams) max_streams = k;
}

/* A thread lagging this far behind the furthest one must be waiting in a
   way not seen (a read on a pipe), or starved: it holds no round back. */
#define MAX_LAG (2 * SLICE_BLOCKS * POS_UNIT)

static ULong common_position(const RcStream* except, ULong fallback)
{
   ULong furthest = 0, least = ~0ULL;
   for (UInt i = 0; i < n_streams; i++)
      if (streams[i]->extent > furthest) furthest = streams[i]->extent;
   for (UInt i = 0; i < n_streams; i++) {
      const RcStream* s = streams[i];
      /* Every thread that can run, whether it ran in this round or not:
         Valgrind's lock is not always fair (a thread the kernel has not
         scheduled yet misses its turn), and one that missed a turn is
         behind, not absent. */
      if (s == except || s->gone || (s->waiting && !s->woken)) continue;
      /* Woken, it can run from there (it waits for Valgrind's lock). */
      const ULong at = s->waiting && s->woken_at > s->extent ? s->woken_at : s->extent;
      if (at + MAX_LAG < furthest) continue;
      if (at < least) least = at;
   }
   return least == ~0ULL ? fallback : least;
}

/* Every request so far, or (a round) those up to the horizon that every
   thread of the round still able to run has reached. */
static void merge(Bool round)
{
   if (merging || n_streams == 0) return;
   merging = True;
   /* A thread running now (a buffer filled): its run so far closes a
      period, its blocks estimated from its clock. */
   const ULong now = *helper_clock;
   for (UInt i = 0; i < n_streams; i++) {
      RcStream* s = streams[i];
      if (!s->running) continue;
      const ULong calls = now - s->period_calls0;
      const ULong blocks = total_calls ? calls * total_blocks / total_calls : calls;
      close_period(s, blocks, calls);
   }
   ULong horizon = round ? common_position(NULL, ~0ULL) : ~0ULL;
   if (!round || horizon == ~0ULL) {
      horizon = 0;   /* everything: the greatest position */
      for (UInt i = 0; i < n_streams; i++)
         if (streams[i]->extent > horizon) horizon = streams[i]->extent;
      for (UInt i = 0; i < n_streams; i++)
         if (streams[i]->n > streams[i]->head && streams[i]->req[streams[i]->n - 1].pos > horizon)
            horizon = streams[i]->req[streams[i]->n - 1].pos;
   }
   if (UNLIKELY(VG_(clo_verbosity) > 2)) {   /* -v -v: each merge, for checking the rounds */
      VG_(umsg)("rtrace-count: merge %s to %llu blocks:", round ? "round" : "all", horizon / POS_UNIT);
      for (UInt i = 0; i < n_streams; i++)
         VG_(umsg)(" [%p at %llu, %u pending, ran %d waits %d gone %d]", streams[i], streams[i]->extent / POS_UNIT,
                   streams[i]->n - streams[i]->head, streams[i]->ran, streams[i]->waiting, streams[i]->gone);
      VG_(umsg)("\n");
   }
   merge_to(horizon);
   merging = False;
}

void rc_sc_merge_all(void) { merge(False); }

void rc_sc_print_stats(void)
{
   VG_(umsg)("rtrace-count: shared levels: %llu merges (%llu of several threads, up to %llu), %llu requests, "
             "%llu carried to the next round\n", n_merges, n_multi, max_streams, n_merged, n_carried);
}
