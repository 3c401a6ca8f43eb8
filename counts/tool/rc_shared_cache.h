/* The streams of requests that a process's threads send to the cache levels
   they share (an L3, a shared L2), and the merge that feeds them into the
   one simulated cache in the order concurrent threads would (docs/counts.md,
   "The cache simulation").

   Valgrind runs a process's threads one at a time, each for a time slice of
   100,000 blocks. Fed slice by slice into a shared cache, one thread's slice
   would sweep it before the next thread's slice touched it: no competition
   for capacity within a slice, and data that two threads read together
   would look read twice, apart. So each thread's requests to the shared
   levels (the misses and dirty victims of its private levels, with the
   function bucket they are charged to) are buffered with their position in
   the thread's run (blocks executed since a common origin), and merged by
   that position: as if the threads had run side by side at the same pace
   since the origin.

   A merge happens when a round of the scheduler completes (a thread that
   ran since the last merge is about to run again, or one thread has run a
   whole slice alone), and goes up to the horizon that every thread of the
   round still able to run has reached (the least of their positions):
   what a thread ran beyond it waits for the next round, so that a thread
   that got less of a round (its slice cut short) is not left behind. A
   thread waiting in a system call (a futex wait, a sleep, a poll) does not
   hold the horizon back (it is not waited for); what it ran before goes in
   at its positions, and it comes back at the position of the thread that
   woke it (a futex wake: from then on it holds the horizon, even while it
   still waits for Valgrind's lock), else where the others are.
   A new thread starts at its creator's position; a thread that exits is
   waited for no more, what it buffered goes in at its positions. Everything
   is merged at a fork and at the end, and what a full buffer holds.

   Pure bookkeeping: applying a request to the caches is the caller's
   (rc_main.c), through the function given to rc_sc_init. */
#ifndef RC_SHARED_CACHE_H
#define RC_SHARED_CACHE_H

#include "pub_tool_basics.h"

/* One request to the first shared level. */
typedef struct {
   UWord key;      /* line << 1, | 1 for a dirty line written back into it */
   UInt  bucket;   /* the function bucket its bytes are charged to */
   UInt  pos;      /* its position: 1/16 blocks since the origin; while its run
                      period is open, the helper calls since the period began */
} RcRequest;

/* One thread's requests not merged yet, and how far it ran. */
typedef struct {
   RcRequest* req;
   UInt head, n, cap;        /* req[head..n) are pending */
   UInt timed;               /* req[head..timed) have their position in blocks */
   void* owner;              /* the thread, passed back to apply */
   ULong extent;             /* 1/16 blocks it ran since the origin (closed run periods) */
   ULong ran_since_merge;    /* 1/16 blocks it ran since the last merge */
   ULong period_blocks0;     /* the open run period: block count and clock at its start */
   ULong period_calls0;
   Bool running;             /* inside a run period (start_client_code .. stop_client_code) */
   Bool ran;                 /* ran since the last merge */
   Bool waiting;             /* inside a system call that waits (futex wait, sleep, poll, ...) */
   Bool waited;              /* went into such a call since it last ran */
   Bool woken;               /* another thread woke it (a futex wake) at position woken_at */
   ULong woken_at;
   UWord futex;              /* the futex it waits on */
   Bool gone;                /* the thread exited: its requests go in, then the stream goes */
   Bool registered;
} RcStream;

/* One thread, nothing buffered: its requests go to the shared levels at
   once (nothing to interleave them with; the same counts, cheaper). */
extern Bool rc_sc_direct;

/* `apply(owner, key, bucket)` feeds one request into the shared levels;
   `clock` is the tool's count of helper calls (it only grows). */
void rc_sc_init(void (*apply)(void* owner, UWord key, UInt bucket), const ULong* clock);

/* `creator`: the thread that created this one (NULL: the first). */
void rc_sc_stream_init(RcStream* s, void* owner, const RcStream* creator);
/* The thread exited: like a blocked one, it holds no round back; what it
   buffered (its dirty lines included) goes in at its positions, and then
   the stream is forgotten. Its owner must stay valid until then. */
void rc_sc_exit(RcStream* s);
/* The thread never runs in this process (a fork child's other threads):
   its buffer is dropped. */
void rc_sc_stream_forget(RcStream* s);

/* The scheduler starts / stops running `s`'s thread (may merge a round). */
void rc_sc_start(RcStream* s, ULong blocks);
void rc_sc_stop(RcStream* s, ULong blocks);
/* The thread enters / leaves a system call: one that waits (for another
   thread, a timer, a file descriptor) takes the thread out of the rounds
   until it runs again; a futex wake from another thread says where it was
   woken. */
void rc_sc_pre_syscall(RcStream* s, UWord sysno, const UWord* args, UInt n_args);
static inline void rc_sc_post_syscall(RcStream* s) { s->waiting = False; }

/* Merges every buffered request into the shared levels (callable at any
   time; the running thread's position is estimated from its clock). */
void rc_sc_merge_all(void);

void rc_sc_grow(RcStream* s);
/* Buffers one request of the running thread (or of a stopped one: its
   dirty lines at its exit) at its current position. */
static inline void rc_sc_push(RcStream* s, UWord key, UInt bucket, ULong now)
{
   if (UNLIKELY(s->n == s->cap)) rc_sc_grow(s);
   ULong pos;
   if (LIKELY(s->running)) {
      pos = now - s->period_calls0;
      if (UNLIKELY(pos >= (1ULL << 32))) {   /* a 32-bit position: merge and begin afresh */
         rc_sc_merge_all();
         pos = now - s->period_calls0;
      }
   } else {
      pos = s->extent;   /* at its end (all before it have their block positions) */
   }
   RcRequest* r = &s->req[s->n++];
   r->key = key;
   r->bucket = bucket;
   r->pos = (UInt)pos;
   if (!s->running) s->timed = s->n;
}

/* --stats=yes */
void rc_sc_print_stats(void);

#endif
