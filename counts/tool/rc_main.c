/* rtrace-count: a Valgrind tool that counts, per thread and per function,
   the FLOPs of every guest instruction (by precision and vector width, FMA =
   2) and the bytes moved at each level of a simulated cache hierarchy
   (L1d, L2, L3, memory; write-allocate, write-back): private levels per
   thread, a level that cores share one cache for the process's threads,
   fed their streams in concurrent order (rc_shared_cache.c). See
   counts/README.md.

   How it stays cheap (cachegrind is the bar):
   - instruction and FLOP counts need no helper call: the static content of
     each straight-line piece of a superblock (a "segment": from its start or
     a side exit to the next side exit) is known when it is instrumented, so
     the generated code only increments the running thread's execution
     counter of that segment, inline; products are formed at thread exit;
   - up to five data accesses per helper call (a read and a write of the
     same address in one instruction are one "modify"), which simulates the
     caches;
   - FMAs on the host's FMA unit, not VEX's software emulation (native_fma).

   Output: one text file per process, written at exit (temp file + rename)
   into --out-dir; format in counts/src/raw_file.cpp (the reader). */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_xarray.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

#include "rc_flops.h"
#include "rc_shared_cache.h"
#include "rc_window.h"

#include "libvex_guest_amd64.h"
#include "libvex_guest_offsets.h"

#ifndef RC_VERSION
#define RC_VERSION "0.0.0"
#endif
#ifndef RC_VALGRIND_VERSION
#define RC_VALGRIND_VERSION "unknown"
#endif

/* ------------------------------------------------------------------ options */

#define MAX_LEVELS 3
typedef struct {
   Long full_size;    /* one instance of the real cache */
   Int  assoc;
   Int  line;
   Int  sharers;      /* workers sharing one instance: each simulates size/sharers */
   Bool present;
   /* A level that cores share: one simulated cache for every `shared`
      threads of the process (in creation order), `shared`/`sharers` of an
      instance, `copies` of them for the process's threads; 0: a private
      level, one cache per thread. */
   Int  shared;
   Int  copies;
} LevelOption;

static const HChar* clo_out_dir = NULL;
static LevelOption clo_level[MAX_LEVELS] = {
   /* Defaults: a common x86 server core; the launcher passes the topology's. */
   {48 * 1024, 12, 64, 1, True, 0, 1},
   {2 * 1024 * 1024, 16, 64, 1, True, 0, 1},
   {32 * 1024 * 1024, 16, 64, 1, True, 1, 1},
};
static Bool clo_dump_fp = False;       /* print each instruction's FP ops (verification) */
static Bool clo_functions = True;      /* per-function split (off: one row per thread) */
static Bool clo_native_fma = True;     /* FMAs on the host's FMA unit (see native_fma) */

static Bool parse_level(const HChar* val, LevelOption* out)
{
   /* "none" or "SIZE,ASSOC,LINE" (sizes in bytes, optional K/M suffix). */
   if (VG_(strcmp)(val, "none") == 0) {
      out->present = False;
      return True;
   }
   HChar* end = NULL;
   Long v[3];
   const HChar* p = val;
   for (Int i = 0; i < 3; i++) {
      v[i] = VG_(strtoll10)(p, &end);
      if (end == p) return False;
      if (*end == 'K' || *end == 'k') { v[i] *= 1024; end++; }
      else if (*end == 'M' || *end == 'm') { v[i] *= 1024 * 1024; end++; }
      if (i < 2) {
         if (*end != ',') return False;
         p = end + 1;
      }
   }
   if (*end != '\0') return False;
   if (v[0] <= 0 || v[1] <= 0 || v[2] <= 0) return False;
   if ((v[2] & (v[2] - 1)) != 0) return False;           /* line: power of two */
   if (v[0] < v[1] * v[2]) return False;                  /* at least one set */
   out->full_size = v[0];
   out->assoc = (Int)v[1];
   out->line = (Int)v[2];
   out->present = True;
   return True;
}

/* "G" or "G,COPIES" (COPIES 1 by default). */
static Bool parse_shared(const HChar* val, LevelOption* out)
{
   HChar* end = NULL;
   const Long g = VG_(strtoll10)(val, &end);
   if (end == val || g < 0 || g > 4096) return False;
   Long copies = 1;
   if (*end == ',') {
      const HChar* p = end + 1;
      copies = VG_(strtoll10)(p, &end);
      if (end == p || copies < 1 || copies > 4096) return False;
   }
   if (*end != '\0') return False;
   out->shared = (Int)g;
   out->copies = (Int)copies;
   return True;
}

static Bool rc_process_cmd_line_option(const HChar* arg)
{
   /* Not `val`: the option macros declare their own. */
   const HChar* spec = NULL;
   if VG_STR_CLO(arg, "--out-dir", clo_out_dir) {}
   else if VG_STR_CLO(arg, "--L1", spec) {
      if (!parse_level(spec, &clo_level[0]) || !clo_level[0].present)
         VG_(fmsg_bad_option)(arg, "expected SIZE,ASSOC,LINE (bytes; K/M suffixes; LINE a power of two)\n");
   }
   else if VG_STR_CLO(arg, "--L2", spec) {
      if (!parse_level(spec, &clo_level[1]))
         VG_(fmsg_bad_option)(arg, "expected SIZE,ASSOC,LINE or none\n");
   }
   else if VG_STR_CLO(arg, "--L3", spec) {
      if (!parse_level(spec, &clo_level[2]))
         VG_(fmsg_bad_option)(arg, "expected SIZE,ASSOC,LINE or none\n");
   }
   else if VG_BINT_CLO(arg, "--L1-sharers", clo_level[0].sharers, 1, 4096) {}
   else if VG_BINT_CLO(arg, "--L2-sharers", clo_level[1].sharers, 1, 4096) {}
   else if VG_BINT_CLO(arg, "--L3-sharers", clo_level[2].sharers, 1, 4096) {}
   else if VG_STR_CLO(arg, "--L2-shared", spec) {
      if (!parse_shared(spec, &clo_level[1])) VG_(fmsg_bad_option)(arg, "expected THREADS[,COPIES] (0: private)\n");
   }
   else if VG_STR_CLO(arg, "--L3-shared", spec) {
      if (!parse_shared(spec, &clo_level[2])) VG_(fmsg_bad_option)(arg, "expected THREADS[,COPIES] (0: private)\n");
   }
   else if VG_BOOL_CLO(arg, "--dump-fp", clo_dump_fp) {}
   else if VG_BOOL_CLO(arg, "--functions", clo_functions) {}
   else if VG_BOOL_CLO(arg, "--native-fma", clo_native_fma) {}
   else if (rc_window_option(arg)) {}
   else return False;
   return True;
}

static void rc_print_usage(void)
{
   VG_(printf)(
"    --out-dir=DIR             write counts-<rank>-<pid>.txt here [required]\n"
"    --L1=SIZE,ASSOC,LINE      L1d cache, one instance [48K,12,64]\n"
"    --L2=SIZE,ASSOC,LINE|none L2 cache [2M,16,64]\n"
"    --L3=SIZE,ASSOC,LINE|none L3 cache [32M,16,64]\n"
"    --L<n>-sharers=N          workers sharing one instance; a private level simulates 1/N per thread [1]\n"
"    --L2/L3-shared=G[,C]      the process's threads share the level: one cache per G threads (creation\n"
"                              order), G/N of an instance, C of them [L3: 1,1; L2: 0 = private]\n"
"    --functions=no            no per-function split (one row per thread)\n"
"    --dump-fp=yes             print the FP ops counted for each instruction\n"
"    --native-fma=no           FMAs by Valgrind's software emulation, not the host's FMA unit\n");
   rc_window_usage();
}

static void rc_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

/* ------------------------------------------------------------------ cache simulation */

/* A set-associative, write-back, write-allocate cache with LRU replacement.
   Each set holds `assoc` entries ordered most- to least-recently used;
   an entry is (tag << 1) | dirty, EMPTY when unused. The tag is the line
   address ("wide" caches: 64-bit entries; the L1, whose MRU way the
   generated code reads) or, where it fits, the line address without its
   set index bits ("narrow": 32-bit entries, half the memory to scan in the
   large L2/L3 tag arrays). */
#define EMPTY (~(UWord)0)
#define EMPTY32 (~(UInt)0)

typedef struct {
   UWord* tags;       /* wide */
   UInt*  tags32;     /* narrow */
   Bool   narrow;
   UWord  sets;
   UWord  set_mask;   /* sets - 1 when sets is a power of two */
   Int    set_shift;  /* log2(sets) when a power of two */
   Bool   pow2;
   UWord  recip;      /* ceil(2^64 / sets) when not a power of two: set index without a divide */
   Int    assoc;
   Long   sim_size;   /* sets * assoc * line */
} Cache;

static Int  n_caches = 0;           /* simulated levels: 1..3 */
static Int  line_shift = 6;
static UWord line_bytes = 64;
static Cache cache_geometry[MAX_LEVELS];

/* Levels first_shared .. n_caches-1 are shared by the process's threads
   (first_shared = MAX_LEVELS: none): their caches are the process's, in
   `copies` instances, thread n using copy (n / group) % copies. What the
   threads' private levels send them is buffered per thread and merged in
   concurrent order (rc_shared_cache.c); applying_shared is set while a
   merged request runs through them. */
static Int  first_shared = MAX_LEVELS;
static Cache* shared_copy[MAX_LEVELS];
static Int  shared_copies[MAX_LEVELS];
static Int  shared_group[MAX_LEVELS];
static Bool applying_shared = False;

static void cache_init(Cache* c, const Cache* geometry)
{
   *c = *geometry;
   UWord n = c->sets * (UWord)c->assoc;
   if (c->narrow) {
      c->tags32 = VG_(malloc)("rc.cache", n * sizeof(UInt));
      for (UWord i = 0; i < n; i++) c->tags32[i] = EMPTY32;
   } else {
      c->tags = VG_(malloc)("rc.cache", n * sizeof(UWord));
      for (UWord i = 0; i < n; i++) c->tags[i] = EMPTY;
   }
}

/* line / sets and line % sets for sets not a power of two: a multiply by
   the precomputed reciprocal (a 64-bit divide costs 20-90 cycles, on every
   reference). The estimate is exact or one too large (lines < 2^58, sets <
   2^32); one compare corrects it. */
static inline UWord div_sets(const Cache* c, UWord line, UWord* rem)
{
   UWord q = (UWord)(((unsigned __int128)line * c->recip) >> 64);
   UWord prod = q * c->sets;
   if (prod > line) {
      q--;
      prod -= c->sets;
   }
   *rem = line - prod;
   return q;
}

/* References `line` in a wide cache. A hit moves it to the front (or-ing
   in `dirty`) and returns True. A miss inserts it at the front and returns
   the evicted line in *victim, (line << 1) | dirty (EMPTY: the way was free). */
static inline __attribute__((always_inline)) Bool cache_ref_wide(const Cache* c, UWord line, UWord dirty, UWord* victim)
{
   UWord s;
   if (LIKELY(c->pow2)) s = line & c->set_mask;
   else (void)div_sets(c, line, &s);
   UWord* set = c->tags + s * (UWord)c->assoc;
   const UWord key = line << 1;
   UWord prev = set[0];
   if ((prev & ~(UWord)1) == key) {
      set[0] = prev | dirty;
      return True;
   }
   /* One pass: each entry moves down one way until the line is found (it
      goes to the front) or the set ends (the last entry is the victim). */
   const Int assoc = c->assoc;
   for (Int i = 1; i < assoc; i++) {
      UWord e = set[i];
      set[i] = prev;
      if ((e & ~(UWord)1) == key) {
         set[0] = e | dirty;
         return True;
      }
      prev = e;
   }
   *victim = prev;
   set[0] = key | dirty;
   return False;
}

/* Four 32-bit entries at a time (SSE2, which every x86-64 has), for the
   narrow caches whose ways come in fours: a miss, the common case of a
   large L2/L3 under a stream, costs a few vector compares; sixteen ways are
   compared before one branch (the four compare masks packed into one). */
typedef UInt RcV4u __attribute__((vector_size(16)));
typedef float RcV4f __attribute__((vector_size(16)));
typedef short RcV8s __attribute__((vector_size(16)));
typedef char RcV16c __attribute__((vector_size(16)));
typedef int RcV4i __attribute__((vector_size(16)));

static inline __attribute__((always_inline)) RcV4i eq_narrow(const UInt* at, RcV4u keys)
{
   const RcV4u clean = {~1U, ~1U, ~1U, ~1U};
   RcV4u v;
   __builtin_memcpy(&v, at, sizeof v);
   return (RcV4i)((v & clean) == keys);
}

static inline __attribute__((always_inline)) Int find_narrow(const UInt* set, Int assoc, UInt key)
{
   if ((assoc & 3) == 0) {
      const RcV4u keys = {key, key, key, key};
      Int i = 0;
      for (; i + 16 <= assoc; i += 16) {
         const RcV8s lo = __builtin_ia32_packssdw128(eq_narrow(set + i, keys), eq_narrow(set + i + 4, keys));
         const RcV8s hi = __builtin_ia32_packssdw128(eq_narrow(set + i + 8, keys), eq_narrow(set + i + 12, keys));
         const Int m = __builtin_ia32_pmovmskb128(__builtin_ia32_packsswb128(lo, hi));
         if (m) return i + __builtin_ctz((UInt)m);
      }
      for (; i < assoc; i += 4) {
         const Int m = __builtin_ia32_movmskps((RcV4f)eq_narrow(set + i, keys));
         if (m) return i + __builtin_ctz((UInt)m);
      }
      return -1;
   }
   for (Int i = 0; i < assoc; i++)
      if ((set[i] & ~1U) == key) return i;
   return -1;
}

static inline __attribute__((always_inline)) Bool cache_ref_narrow(const Cache* c, UWord line, UWord dirty, UWord* victim)
{
   UWord s, tag;
   if (c->pow2) {
      s = line & c->set_mask;
      tag = line >> c->set_shift;
   } else {
      tag = div_sets(c, line, &s);
   }
   UInt* set = c->tags32 + s * (UWord)c->assoc;
   const UInt key = (UInt)(tag << 1);
   const Int assoc = c->assoc;
   const Int at = (set[0] & ~1U) == key ? 0 : find_narrow(set, assoc, key);
   if (at >= 0) {
      UInt e = set[at] | (UInt)dirty;
      for (Int j = at; j > 0; j--) set[j] = set[j - 1];
      set[0] = e;
      return True;
   }
   const UInt prev = set[assoc - 1];
   if (assoc >= 8 && (assoc & 3) == 0) {
      /* Everything one way down, four at a time from the end: each chunk
         reads its source before writing, and the sources below a chunk are
         not written by it; the last chunk (ways 1..4) overlaps the one before
         it with the same values. */
      RcV4u v;
      for (Int d = assoc - 4; d >= 1; d -= 4) {
         __builtin_memcpy(&v, set + d - 1, sizeof v);
         __builtin_memcpy(set + d, &v, sizeof v);
      }
      __builtin_memcpy(&v, set, sizeof v);
      __builtin_memcpy(set + 1, &v, sizeof v);
   } else {
      for (Int j = assoc - 1; j > 0; j--) set[j] = set[j - 1];
   }
   set[0] = key | (UInt)dirty;
   if (prev == EMPTY32) {
      *victim = EMPTY;
   } else {
      UWord vtag = prev >> 1;
      UWord vline = c->pow2 ? ((vtag << c->set_shift) | s) : (vtag * c->sets + s);
      *victim = (vline << 1) | (prev & 1);
   }
   return False;
}

static inline __attribute__((always_inline)) Bool cache_ref(const Cache* c, UWord line, UWord dirty, UWord* victim)
{
   return c->narrow ? cache_ref_narrow(c, line, dirty, victim) : cache_ref_wide(c, line, dirty, victim);
}

/* Bytes per level, per (thread, function). Index 0 = L1, 1 = L2, 2 = L3,
   3 = memory: rd[k] = bytes read from level k into the level above (L1:
   the core's loads), wr[k] = bytes written into level k from above. */
typedef struct {
   ULong rd[4];
   ULong wr[4];
} LevelBytes;

/* Level index of what lies below simulated cache k (0-based). */
static inline Int below(Int k) { return k + 1 < n_caches ? k + 1 : 3; }

typedef struct ThreadState ThreadState;

static void writeback(ThreadState* t, Int k, UWord line, LevelBytes* b);
static void fetch(ThreadState* t, Int k, UWord line, LevelBytes* b);

struct ThreadState {
   Int   number;          /* 0 = main thread, then in creation order */
   Bool  alive;
   ULong* seg_exec;       /* executions of each segment; NULL once folded at exit */
   UWord seg_cap;
   LevelBytes* bytes;     /* per function bucket */
   UWord bytes_cap;
   ULong* totals;         /* per bucket: TOTAL_FIELDS, filled by fold */
   UWord totals_cap;
   Cache cache[MAX_LEVELS];   /* its private levels */
   Cache* level[MAX_LEVELS];  /* the cache it uses at each level: its own, or its copy of a shared one */
   RcStream stream;           /* its requests to the shared levels, not merged yet */
   ULong first_ms, last_ms;
};
/* Per bucket: instructions, the FLOP kinds, L1 bytes read and written. */
#define TOTAL_FIELDS (1 + RC_FLOP_KINDS + 2)
#define TOTAL_L1_READ (1 + RC_FLOP_KINDS)
#define TOTAL_L1_WRITE (2 + RC_FLOP_KINDS)

/* The running thread and the two arrays the generated code and the helpers
   index (kept in globals so the generated code reaches them with one load). */
static ThreadState* cur = NULL;
static ULong* cur_seg_exec = NULL;
static LevelBytes* cur_bytes = NULL;

/* Helper calls: also the clock that places a thread's requests to the
   shared levels within its run (rc_shared_cache.c). */
static ULong n_helper_calls = 0, n_l1_misses = 0;

/* A request from a private level to the first shared one: buffered until
   the threads' streams are merged. */
static inline Bool to_shared(ThreadState* t, Int k, UWord line, UWord written_back, const LevelBytes* b)
{
   if (k < first_shared || applying_shared || rc_sc_direct) return False;
   rc_sc_push(&t->stream, (line << 1) | written_back, (UInt)(b - t->bytes), n_helper_calls);
   return True;
}

/* Line `line` was evicted dirty from the level above into cache k. */
static void writeback(ThreadState* t, Int k, UWord line, LevelBytes* b)
{
   while (k < n_caches) {                 /* below the last cache, memory absorbs it */
      if (to_shared(t, k, line, 1, b)) return;
      UWord victim = EMPTY;
      if (cache_ref(t->level[k], line, 1, &victim) || victim == EMPTY || !(victim & 1)) return;
      k = below(k);
      b->wr[k] += line_bytes;
      line = victim >> 1;
   }
}

/* The level above cache k missed `line`: fill it from cache k, which fills
   itself from below on a miss. */
static void fetch(ThreadState* t, Int k, UWord line, LevelBytes* b)
{
   while (k < n_caches) {
      if (to_shared(t, k, line, 0, b)) return;
      UWord victim = EMPTY;
      if (cache_ref(t->level[k], line, 0, &victim)) return;
      Int lower = below(k);
      b->rd[lower] += line_bytes;
      if (victim != EMPTY && (victim & 1)) {
         b->wr[lower] += line_bytes;
         writeback(t, lower, victim >> 1, b);
      }
      k = lower;
   }
}

/* Helper argument per access: the bucket in the high 32 bits, then the
   kind (read, write, modify = read then write) and the size in bytes. */
#define KIND_SHIFT 29
#define SIZE_MASK 0x1fffffffUL
#define INFO(bucket, kind, size) \
   ((((UWord)(bucket)) << 32) | ((UWord)(kind) << KIND_SHIFT) | (UWord)(size))

/* The running thread's L1 (its geometry and tag array), copied here when
   the running thread changes: the per-access path reads globals only, no
   ThreadState. */
static Cache cur_l1;

/* The L1 missed `line`: the fill from below (write-allocate included) and
   the write-back of the dirty victim. */
static __attribute__((noinline)) void l1_miss(UWord line, UWord victim, UWord info)
{
   ThreadState* t = cur;
   LevelBytes* b = &cur_bytes[info >> 32];
   n_l1_misses++;
   Int lower = below(0);
   b->rd[lower] += line_bytes;
   if (victim != EMPTY && (victim & 1)) {
      b->wr[lower] += line_bytes;
      writeback(t, lower, victim >> 1, b);
   }
   fetch(t, lower, line, b);
}

/* An access that spans lines: each line is one L1 reference. */
static __attribute__((noinline)) void access_lines(UWord line, UWord last, UWord dirty, UWord info)
{
   for (;;) {
      UWord victim = EMPTY;
      if (!cache_ref_wide(&cur_l1, line, dirty, &victim)) l1_miss(line, victim, info);
      if (line >= last) break;
      line++;
   }
}

/* One access whose L1 bytes are counted elsewhere: a hit costs a set scan;
   a miss fills the line from below (and writes back the dirty victim). */
static inline __attribute__((always_inline)) void do_access(Addr a, UWord info)
{
   const UWord size = info & SIZE_MASK;
   const UWord dirty = (info & (3UL << KIND_SHIFT)) != 0;   /* a write or a modify */
   const UWord line = a >> line_shift;
   const UWord last = (a + size - 1) >> line_shift;
   if (UNLIKELY(line != last)) {
      access_lines(line, last, dirty, info);
      return;
   }
   /* Within one line (nearly every access): one reference. */
   UWord victim = EMPTY;
   if (UNLIKELY(!cache_ref_wide(&cur_l1, line, dirty, &victim))) l1_miss(line, victim, info);
}

/* The unconditional accesses of a stretch of a superblock, up to five per
   call: their addresses are the call's arguments (no stores in the generated
   code, which would make VEX write guest registers back before each), their
   sizes, kinds and functions a per-translation table made when instrumenting. */
#define MAX_BATCH 5
typedef struct {
   UWord info[MAX_BATCH];
   /* The first call of a segment also counts the segment's execution (one
      fewer load/store pair in the generated code): its id + 1, else 0. */
   UWord count_segment;
} AccessBatch;

static inline __attribute__((always_inline)) void batch_counts(const AccessBatch* b)
{
   n_helper_calls++;
   if (b->count_segment) cur_seg_exec[b->count_segment - 1]++;
}

static void rc_access_batch1(const AccessBatch* b, Addr a0)
{
   batch_counts(b);
   do_access(a0, b->info[0]);
}
static void rc_access_batch2(const AccessBatch* b, Addr a0, Addr a1)
{
   batch_counts(b);
   do_access(a0, b->info[0]);
   do_access(a1, b->info[1]);
}
static void rc_access_batch3(const AccessBatch* b, Addr a0, Addr a1, Addr a2)
{
   batch_counts(b);
   do_access(a0, b->info[0]);
   do_access(a1, b->info[1]);
   do_access(a2, b->info[2]);
}
static void rc_access_batch4(const AccessBatch* b, Addr a0, Addr a1, Addr a2, Addr a3)
{
   batch_counts(b);
   do_access(a0, b->info[0]);
   do_access(a1, b->info[1]);
   do_access(a2, b->info[2]);
   do_access(a3, b->info[3]);
}
static void rc_access_batch5(const AccessBatch* b, Addr a0, Addr a1, Addr a2, Addr a3, Addr a4)
{
   batch_counts(b);
   do_access(a0, b->info[0]);
   do_access(a1, b->info[1]);
   do_access(a2, b->info[2]);
   do_access(a3, b->info[3]);
   do_access(a4, b->info[4]);
}

/* A guarded access (it may not happen): its own call, under its guard. */
static VG_REGPARM(2) void rc_access1(Addr a, UWord info)
{
   n_helper_calls++;
   /* Its L1 bytes: counted here (add_event could not, the access may not happen). */
   const UWord kind = (info >> KIND_SHIFT) & 3;   /* 0 read, 1 write, 2 modify */
   LevelBytes* b = &cur_bytes[info >> 32];
   if (kind != 1) b->rd[0] += info & SIZE_MASK;
   if (kind != 0) b->wr[0] += info & SIZE_MASK;
   do_access(a, info);
}

/* ------------------------------------------------------------------ functions, modules */

/* A bucket is what counts are attributed to: a function (module + symbol
   name), or, in code without symbols, a 256-byte chunk of a module. The
   reader names each bucket with rtrace's symboliser from its module and
   representative address (the first instruction seen), so the names match
   the sampled call paths; buckets that get the same name are merged. */
typedef struct {
   Int    module;        /* index into modules, -1 unknown */
   Addr   vaddr;         /* representative address, ELF (unbiased) */
   HChar* symbol;        /* Valgrind's name for it, NULL if none */
   Int    phase;         /* RcPhase: the counted window's phase it counts in */
   Int    hook;          /* RcHook: the window's interest in the function's entry */
} Bucket;

typedef struct {
   HChar*   path;
   PtrdiffT bias;
} Module;

static XArray* buckets;   /* of Bucket */
static XArray* modules;   /* of Module */

/* Open-addressing map from a key string to a bucket index. */
typedef struct {
   HChar* key;
   Int    bucket;
} MapSlot;
static MapSlot* bucket_map = NULL;
static UWord bucket_map_cap = 0, bucket_map_used = 0;

static UWord hash_str(const HChar* s)
{
   UWord h = 1469598103934665603ULL;
   for (; *s; s++) h = (h ^ (UChar)*s) * 1099511628211ULL;
   return h;
}

static void map_grow(void)
{
   UWord old_cap = bucket_map_cap;
   MapSlot* old = bucket_map;
   bucket_map_cap = old_cap ? old_cap * 2 : 1024;
   bucket_map = VG_(calloc)("rc.map", bucket_map_cap, sizeof(MapSlot));
   for (UWord i = 0; i < old_cap; i++) {
      if (!old[i].key) continue;
      UWord j = hash_str(old[i].key) & (bucket_map_cap - 1);
      while (bucket_map[j].key) j = (j + 1) & (bucket_map_cap - 1);
      bucket_map[j] = old[i];
   }
   if (old) VG_(free)(old);
}

static Int module_index(const HChar* path, PtrdiffT bias)
{
   Word n = VG_(sizeXA)(modules);
   for (Word i = n - 1; i >= 0; i--) {   /* few modules; the last ones are the likely ones */
      Module* m = VG_(indexXA)(modules, i);
      if (m->bias == bias && VG_(strcmp)(m->path, path) == 0) return (Int)i;
   }
   Module m = {VG_(strdup)("rc.mod", path), bias};
   VG_(addToXA)(modules, &m);
   return (Int)n;
}

/* Buckets are per phase of the counted window: code translated in another
   phase (every translation is discarded at a phase change) counts apart. */
static Int bucket_for(Addr pc)
{
   const Int phase = (Int)rc_window_phase();
   if (!clo_functions) return phase;
   DiEpoch ep = VG_(current_DiEpoch)();
   DebugInfo* di = VG_(find_DebugInfo)(ep, pc);
   const HChar* path = di ? VG_(DebugInfo_get_filename)(di) : NULL;
   PtrdiffT bias = di ? VG_(DebugInfo_get_text_bias)(di) : 0;
   const HChar* fn = NULL;
   Bool have_fn = VG_(get_fnname)(ep, pc, &fn) && fn && fn[0];
   /* The whole key, however long: C++ names can run to kilobytes, and two
      functions whose names differ past a fixed cut would be merged. */
   HChar small[512];
   const SizeT need = (path ? VG_(strlen)(path) : 0) + (have_fn ? VG_(strlen)(fn) : 0) + 64;
   HChar* key = need <= sizeof small ? small : VG_(malloc)("rc.key.tmp", need);
   if (!path) {
      VG_(snprintf)(key, need, "?|%d", phase);
   } else if (have_fn) {
      VG_(snprintf)(key, need, "%s|%lld|%d|%s", path, (Long)bias, phase, fn);
   } else {
      VG_(snprintf)(key, need, "%s|%lld|%d|#%lx", path, (Long)bias, phase, (UWord)pc >> 8);
   }
   if (2 * (bucket_map_used + 1) > bucket_map_cap) map_grow();
   UWord j = hash_str(key) & (bucket_map_cap - 1);
   while (bucket_map[j].key) {
      if (VG_(strcmp)(bucket_map[j].key, key) == 0) {
         if (key != small) VG_(free)(key);
         return bucket_map[j].bucket;
      }
      j = (j + 1) & (bucket_map_cap - 1);
   }
   Bucket b;
   b.module = path ? module_index(path, bias) : -1;
   b.vaddr = pc - (path ? bias : 0);
   b.symbol = have_fn ? VG_(strdup)("rc.sym", fn) : NULL;
   b.phase = phase;
   b.hook = have_fn ? (Int)rc_window_hook_of(fn) : RC_HOOK_NONE;
   Int index = (Int)VG_(sizeXA)(buckets);
   VG_(addToXA)(buckets, &b);
   bucket_map[j].key = VG_(strdup)("rc.key", key);
   if (key != small) VG_(free)(key);
   bucket_map[j].bucket = index;
   bucket_map_used++;
   return index;
}

/* ------------------------------------------------------------------ segments */

typedef struct {
   UInt bucket;
   UInt instructions;
   UInt flops[RC_FLOP_KINDS];
   UInt l1_read, l1_write;   /* bytes of the unconditional loads and stores */
} SegEntry;

typedef struct {
   UInt n, cap;
   SegEntry* e;
   Bool used;
} Segment;

static Segment* segments = NULL;
static UWord n_segments = 0, segments_cap = 0;   /* high-water mark, allocation */
static UWord* free_segments = NULL;
static UWord n_free_segments = 0, free_segments_cap = 0;

/* A translation's segments and access batches, found again when Valgrind
   discards it. */
typedef struct {
   VgHashNode node;     /* key: the translation's nraddr */
   UInt n;
   UWord* ids;
   UInt n_batches, batches_cap;
   void** batches;
} SBInfo;
static VgHashTable* sb_table;

static UWord segment_alloc(void)
{
   UWord id;
   if (n_free_segments > 0) {
      id = free_segments[--n_free_segments];
   } else {
      if (n_segments == segments_cap) {
         segments_cap = segments_cap ? segments_cap * 2 : 4096;
         segments = VG_(realloc)("rc.seg", segments, segments_cap * sizeof(Segment));
      }
      id = n_segments++;
   }
   segments[id].n = 0;
   segments[id].cap = 0;
   segments[id].e = NULL;
   segments[id].used = True;
   return id;
}

static SegEntry* segment_entry(UWord id, UInt bucket)
{
   Segment* s = &segments[id];
   if (s->n > 0 && s->e[s->n - 1].bucket == bucket) return &s->e[s->n - 1];
   for (UInt i = 0; i < s->n; i++)
      if (s->e[i].bucket == bucket) return &s->e[i];
   if (s->n == s->cap) {
      s->cap = s->cap ? s->cap * 2 : 2;
      s->e = VG_(realloc)("rc.segentry", s->e, s->cap * sizeof(SegEntry));
   }
   SegEntry* e = &s->e[s->n++];
   VG_(memset)(e, 0, sizeof *e);
   e->bucket = bucket;
   return e;
}

/* ------------------------------------------------------------------ threads */

/* By Valgrind ThreadId (reused after a thread exits). */
static ThreadState** thread_by_tid = NULL;
static UWord thread_by_tid_cap = 0;
static XArray* all_threads;   /* of ThreadState*, creation order */
static Int next_thread_number = 0;

static void grow_ulongs(ULong** a, UWord* cap, UWord need, UWord elem_size)
{
   if (*cap >= need) return;
   UWord n = *cap ? *cap : 1024;
   while (n < need) n *= 2;
   *a = VG_(realloc)("rc.grow", *a, n * elem_size);
   VG_(memset)((UChar*)*a + *cap * elem_size, 0, (n - *cap) * elem_size);
   *cap = n;
}

static void ensure_capacity(ThreadState* t)
{
   if (t->seg_exec && t->seg_cap < n_segments)
      grow_ulongs(&t->seg_exec, &t->seg_cap, n_segments, sizeof(ULong));
   UWord nb = (UWord)VG_(sizeXA)(buckets);
   if (t->bytes_cap < nb) grow_ulongs((ULong**)&t->bytes, &t->bytes_cap, nb, sizeof(LevelBytes));
   if (t == cur) {
      cur_seg_exec = t->seg_exec;
      cur_bytes = t->bytes;
   }
}

/* The thread's cache at each level: its own private ones, and its copy of
   each shared one (by its number, so OpenMP's threads fill the copies in
   order as they fill the cores; allocated on first use). */
static void assign_levels(ThreadState* t)
{
   for (Int k = 0; k < n_caches; k++) {
      if (k < first_shared) {
         t->level[k] = &t->cache[k];
         continue;
      }
      Cache* c = &shared_copy[k][(t->number / shared_group[k]) % shared_copies[k]];
      if (!c->tags && !c->tags32) cache_init(c, &cache_geometry[k]);
      t->level[k] = c;
   }
}

static ThreadState* new_thread_state(const ThreadState* creator)
{
   ThreadState* t = VG_(calloc)("rc.thread", 1, sizeof(ThreadState));
   t->number = next_thread_number++;
   t->alive = True;
   grow_ulongs(&t->seg_exec, &t->seg_cap, n_segments + 1, sizeof(ULong));
   for (Int k = 0; k < n_caches && k < first_shared; k++) cache_init(&t->cache[k], &cache_geometry[k]);
   assign_levels(t);
   if (first_shared < n_caches) rc_sc_stream_init(&t->stream, t, creator ? &creator->stream : NULL);
   t->first_ms = t->last_ms = VG_(read_millisecond_timer)();
   VG_(addToXA)(all_threads, &t);
   ensure_capacity(t);
   return t;
}

static void tid_slot(ThreadId tid)
{
   if (tid < thread_by_tid_cap) return;
   UWord n = thread_by_tid_cap ? thread_by_tid_cap : 64;
   while (n <= tid) n *= 2;
   thread_by_tid = VG_(realloc)("rc.tids", thread_by_tid, n * sizeof(ThreadState*));
   for (UWord i = thread_by_tid_cap; i < n; i++) thread_by_tid[i] = NULL;
   thread_by_tid_cap = n;
}

static ThreadState* thread_state(ThreadId tid)
{
   tid_slot(tid);
   if (!thread_by_tid[tid]) thread_by_tid[tid] = new_thread_state(NULL);
   return thread_by_tid[tid];
}

static void switch_to(ThreadId tid)
{
   ThreadState* t = thread_state(tid);
   cur = t;
   cur_l1 = t->cache[0];
   ensure_capacity(t);
}

static void rc_start_client_code(ThreadId tid, ULong blocks)
{
   rc_window_tick();
   if (!cur || tid >= thread_by_tid_cap || cur != thread_by_tid[tid]) switch_to(tid);
   else if (cur->seg_cap < n_segments || cur->bytes_cap < (UWord)VG_(sizeXA)(buckets)) ensure_capacity(cur);
   /* May merge the round that ends here: every thread's requests so far. */
   if (first_shared < n_caches) rc_sc_start(&cur->stream, blocks);
}

static void rc_stop_client_code(ThreadId tid, ULong blocks)
{
   if (first_shared < n_caches && tid < thread_by_tid_cap && thread_by_tid[tid])
      rc_sc_stop(&thread_by_tid[tid]->stream, blocks);
}

/* A thread waiting in a system call: the shared levels' rounds do not
   wait for it (rc_shared_cache.c). */
static void shared_syscall(ThreadId tid, Bool pre, UInt syscallno, const UWord* args, UInt nArgs)
{
   if (first_shared >= n_caches || tid >= thread_by_tid_cap || !thread_by_tid[tid]) return;
   if (pre) rc_sc_pre_syscall(&thread_by_tid[tid]->stream, syscallno, args, nArgs);
   else rc_sc_post_syscall(&thread_by_tid[tid]->stream);
}

/* A merged request: the line runs through the shared levels, its bytes
   charged to the thread and function that sent it. */
static void apply_shared(void* owner, UWord key, UInt bucket)
{
   ThreadState* t = owner;
   LevelBytes* b = &t->bytes[bucket];
   applying_shared = True;
   if (key & 1) writeback(t, first_shared, key >> 1, b);
   else fetch(t, first_shared, key >> 1, b);
   applying_shared = False;
}

/* Adds the thread's executions of segment `id` to its per-bucket totals. */
static void fold_segment(ThreadState* t, UWord id)
{
   if (!t->seg_exec || id >= t->seg_cap) return;
   ULong c = t->seg_exec[id];
   if (c == 0) return;
   t->seg_exec[id] = 0;
   const Segment* s = &segments[id];
   for (UInt i = 0; i < s->n; i++) {
      const SegEntry* e = &s->e[i];
      grow_ulongs(&t->totals, &t->totals_cap, (UWord)(e->bucket + 1) * TOTAL_FIELDS, sizeof(ULong));
      ULong* tot = t->totals + (UWord)e->bucket * TOTAL_FIELDS;
      tot[0] += c * e->instructions;
      for (Int k = 0; k < RC_FLOP_KINDS; k++) tot[1 + k] += c * e->flops[k];
      tot[TOTAL_L1_READ] += c * e->l1_read;
      tot[TOTAL_L1_WRITE] += c * e->l1_write;
   }
}

static void fold_thread(ThreadState* t)
{
   if (!t->seg_exec) return;
   for (UWord id = 0; id < n_segments && id < t->seg_cap; id++) fold_segment(t, id);
}

static void release_caches(ThreadState* t)
{
   for (Int k = 0; k < n_caches && k < first_shared; k++) {
      if (t->cache[k].tags) VG_(free)(t->cache[k].tags);
      if (t->cache[k].tags32) VG_(free)(t->cache[k].tags32);
      t->cache[k].tags = NULL;
      t->cache[k].tags32 = NULL;
   }
}

/* The bucket the write-backs at exit (or at the counted window's end) are
   counted in, per phase (no function did them). */
static Int exit_bucket[RC_PHASES] = {-1, -1, -1};
static Int writeback_bucket(void)
{
   const Int phase = (Int)rc_window_phase();
   if (!clo_functions) return phase;
   if (exit_bucket[phase] < 0) {
      Bucket b = {-1, 0, VG_(strdup)("rc.sym", "[dirty lines written back at exit]"), phase, RC_HOOK_NONE};
      exit_bucket[phase] = (Int)VG_(sizeXA)(buckets);
      VG_(addToXA)(buckets, &b);
   }
   return exit_bucket[phase];
}

/* Every dirty line of the thread's caches, level by level from the L1: with
   `write`, written into the level below (which may evict a dirty victim in
   turn, and is itself flushed next) and counted, so that what a thread wrote
   reaches memory by its exit; without, only made clean (a fork child does
   not write back its parent's data). */
static void flush_lines(ThreadState* t, Cache* c, Int k, LevelBytes* b)
{
   const UWord n = c->sets * (UWord)c->assoc;
   for (UWord i = 0; i < n; i++) {
      UWord line;
      if (c->narrow) {
         const UInt e = c->tags32[i];
         if (e == EMPTY32 || !(e & 1)) continue;
         c->tags32[i] = e & ~1U;
         const UWord s = i / (UWord)c->assoc, tag = e >> 1;
         line = c->pow2 ? ((tag << c->set_shift) | s) : tag * c->sets + s;
      } else {
         const UWord e = c->tags[i];
         if (e == EMPTY || !(e & 1)) continue;
         c->tags[i] = e & ~(UWord)1;
         line = e >> 1;
      }
      if (!b) continue;
      const Int lower = below(k);
      b->wr[lower] += line_bytes;
      writeback(t, lower, line, b);
   }
}

static LevelBytes* writeback_bytes(ThreadState* t)
{
   Int bk = writeback_bucket();
   ensure_capacity(t);
   return &t->bytes[bk];
}

/* The thread's private levels (what goes into a shared level joins its
   stream, to be merged). */
static void flush_dirty(ThreadState* t, Bool write)
{
   if (n_caches == 0 || (!t->cache[0].tags && !t->cache[0].tags32)) return;
   LevelBytes* b = write ? writeback_bytes(t) : NULL;
   for (Int k = 0; k < n_caches && k < first_shared; k++) flush_lines(t, &t->cache[k], k, b);
}

/* The process's shared levels, at its end (charged to thread `t`'s row of
   write-backs at exit: no thread did them then), or made clean in a fork
   child. Every stream is merged first. */
static void flush_shared(ThreadState* t, Bool write)
{
   if (first_shared >= n_caches) return;
   rc_sc_merge_all();
   LevelBytes* b = write && t ? writeback_bytes(t) : NULL;
   applying_shared = True;
   for (Int k = first_shared; k < n_caches; k++)
      for (Int i = 0; i < shared_copies[k]; i++)
         if (shared_copy[k][i].tags || shared_copy[k][i].tags32) flush_lines(t, &shared_copy[k][i], k, b);
   applying_shared = False;
}

/* The counted window closes: what its threads wrote and still hold dirty is
   written back now and counted in it, as at exit. */
static void flush_all_dirty(void)
{
   Word nt = VG_(sizeXA)(all_threads);
   for (Word k = 0; k < nt; k++) {
      ThreadState* t = *(ThreadState**)VG_(indexXA)(all_threads, k);
      if (t->alive) flush_dirty(t, True);
   }
   /* The shared levels' dirty lines, as at exit (rc_fini). */
   if (nt > 0) flush_shared(*(ThreadState**)VG_(indexXA)(all_threads, 0), True);
}

static void rc_thread_create(ThreadId parent, ThreadId child)
{
   tid_slot(child);
   thread_by_tid[child] = new_thread_state(parent < thread_by_tid_cap ? thread_by_tid[parent] : NULL);
}

static void rc_thread_exit(ThreadId tid)
{
   if (tid >= thread_by_tid_cap || !thread_by_tid[tid]) return;
   ThreadState* t = thread_by_tid[tid];
   flush_dirty(t, True);
   /* Its last requests (those dirty lines included) go in with the others'
      at the next merges; its ThreadState stays (it is never freed). */
   if (first_shared < n_caches) rc_sc_exit(&t->stream);
   fold_thread(t);
   VG_(free)(t->seg_exec);
   t->seg_exec = NULL;
   t->seg_cap = 0;
   release_caches(t);
   t->alive = False;
   t->last_ms = VG_(read_millisecond_timer)();
   thread_by_tid[tid] = NULL;
   if (cur == t) {
      cur = NULL;
      cur_seg_exec = NULL;
      cur_bytes = NULL;
      cur_l1.tags = NULL;
   }
}

/* A translation is going away: fold its segments for every live thread and
   recycle them (a retranslation gets fresh ones). */
static void rc_discard_superblock_info(Addr orig_addr, VexGuestExtents extents)
{
   SBInfo* sbi = VG_(HT_remove)(sb_table, orig_addr);
   if (!sbi) return;
   Word nt = VG_(sizeXA)(all_threads);
   for (UInt i = 0; i < sbi->n; i++) {
      UWord id = sbi->ids[i];
      for (Word k = 0; k < nt; k++) fold_segment(*(ThreadState**)VG_(indexXA)(all_threads, k), id);
      if (segments[id].e) VG_(free)(segments[id].e);
      segments[id].e = NULL;
      segments[id].n = segments[id].cap = 0;
      segments[id].used = False;
      if (n_free_segments == free_segments_cap) {
         free_segments_cap = free_segments_cap ? free_segments_cap * 2 : 1024;
         free_segments = VG_(realloc)("rc.free", free_segments, free_segments_cap * sizeof(UWord));
      }
      free_segments[n_free_segments++] = id;
   }
   VG_(free)(sbi->ids);
   for (UInt i = 0; i < sbi->n_batches; i++) VG_(free)(sbi->batches[i]);
   if (sbi->batches) VG_(free)(sbi->batches);
   VG_(free)(sbi);
}

/* A fork: what the parent's threads sent the shared levels is theirs; the
   child starts from the caches as they are then. */
static void rc_atfork_pre(ThreadId tid)
{
   rc_sc_merge_all();
}

/* A fork: the child counts from here, as thread 0 of a new process. */
static Bool forked_child = False;
static void rc_atfork_child(ThreadId tid)
{
   forked_child = True;
   Word nt = VG_(sizeXA)(all_threads);
   for (Word k = 0; k < nt; k++) {
      ThreadState* t = *(ThreadState**)VG_(indexXA)(all_threads, k);
      if (t->seg_exec) VG_(memset)(t->seg_exec, 0, t->seg_cap * sizeof(ULong));
      if (t->bytes) VG_(memset)(t->bytes, 0, t->bytes_cap * sizeof(LevelBytes));
      if (t->totals) VG_(memset)(t->totals, 0, t->totals_cap * sizeof(ULong));
   }
   /* Only the forking thread survives in the child. */
   ThreadState* self = tid < thread_by_tid_cap ? thread_by_tid[tid] : NULL;
   if (self) flush_dirty(self, False);
   for (UWord i = 0; i < thread_by_tid_cap; i++) {
      if (thread_by_tid[i] && thread_by_tid[i] != self) {
         release_caches(thread_by_tid[i]);
         if (first_shared < n_caches) rc_sc_stream_forget(&thread_by_tid[i]->stream);
         thread_by_tid[i] = NULL;
      }
   }
   flush_shared(NULL, False);
   VG_(deleteXA)(all_threads);
   all_threads = VG_(newXA)(VG_(malloc), "rc.threads", VG_(free), sizeof(ThreadState*));
   next_thread_number = 0;
   if (self) {
      self->number = next_thread_number++;
      assign_levels(self);
      self->first_ms = VG_(read_millisecond_timer)();
      VG_(addToXA)(all_threads, &self);
   }
   cur = NULL;
   cur_seg_exec = NULL;
   cur_bytes = NULL;
   cur_l1.tags = NULL;
}

/* ------------------------------------------------------------------ unsupported instructions */

/* Valgrind cannot decode an instruction (AVX-512 in 3.19): the generated
   code calls this just before the SIGILL it raises, so the output names it. */
static Addr nodecode_pc = 0;
static UChar nodecode_bytes[8];
static Int nodecode_len = 0;
static VG_REGPARM(1) void rc_nodecode(Addr pc)
{
   if (nodecode_pc) return;
   nodecode_pc = pc;
   nodecode_len = 0;
   for (Int i = 0; i < 8; i++) {
      if (!VG_(am_is_valid_for_client)(pc + i, 1, VKI_PROT_READ)) break;
      nodecode_bytes[i] = *(const UChar*)(pc + i);
      nodecode_len = i + 1;
   }
}

/* ------------------------------------------------------------------ instrumentation */

typedef enum { EvRead, EvWrite, EvModify } EvKind;
typedef struct {
   EvKind  kind;
   IRExpr* addr;
   Int     size;
   IRExpr* guard;   /* NULL: unconditional */
   UInt    bucket;
} Event;
#define N_EVENTS 15
static Event events[N_EVENTS];
static Int n_events = 0;
static SBInfo* cur_sbi = NULL;   /* the translation being instrumented */
static UWord cur_segment = 0;     /* its current segment */
static Bool cur_segment_uncounted = False;   /* no code counts its executions yet */

static AccessBatch* new_batch(SBInfo* sbi)
{
   AccessBatch* batch = VG_(malloc)("rc.batch", sizeof(AccessBatch));
   if (sbi->n_batches == sbi->batches_cap) {
      sbi->batches_cap = sbi->batches_cap ? 2 * sbi->batches_cap : 4;
      sbi->batches = VG_(realloc)("rc.batches", sbi->batches, sbi->batches_cap * sizeof(void*));
   }
   sbi->batches[sbi->n_batches++] = batch;
   return batch;
}

/* One call for events[first .. first+n), n <= MAX_BATCH, all unconditional. */
static void emit_batch(IRSB* sb, SBInfo* sbi, Int first, Int n)
{
   if (n == 0) return;
   AccessBatch* batch = new_batch(sbi);
   batch->count_segment = 0;
   if (cur_segment_uncounted) {
      batch->count_segment = cur_segment + 1;
      cur_segment_uncounted = False;
   }
   IRExpr* a[MAX_BATCH];
   for (Int k = 0; k < n; k++) {
      const Event* ev = &events[first + k];
      batch->info[k] = INFO(ev->bucket, ev->kind, ev->size);
      a[k] = ev->addr;
   }
   IRExpr* b = mkIRExpr_HWord((HWord)batch);
   IRDirty* di;
   switch (n) {
      case 1: di = unsafeIRDirty_0_N(0, "rc_access_batch1", VG_(fnptr_to_fnentry)(rc_access_batch1), mkIRExprVec_2(b, a[0])); break;
      case 2: di = unsafeIRDirty_0_N(0, "rc_access_batch2", VG_(fnptr_to_fnentry)(rc_access_batch2), mkIRExprVec_3(b, a[0], a[1])); break;
      case 3: di = unsafeIRDirty_0_N(0, "rc_access_batch3", VG_(fnptr_to_fnentry)(rc_access_batch3), mkIRExprVec_4(b, a[0], a[1], a[2])); break;
      case 4: di = unsafeIRDirty_0_N(0, "rc_access_batch4", VG_(fnptr_to_fnentry)(rc_access_batch4), mkIRExprVec_5(b, a[0], a[1], a[2], a[3])); break;
      default: di = unsafeIRDirty_0_N(0, "rc_access_batch5", VG_(fnptr_to_fnentry)(rc_access_batch5), mkIRExprVec_6(b, a[0], a[1], a[2], a[3], a[4])); break;
   }
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* Emits the calls for the buffered events, in their order: runs of
   unconditional accesses, up to five per call; a guarded access (it may not
   happen) as its own call under its guard. */
static void flush_events(IRSB* sb, SBInfo* sbi)
{
   Int first = 0, n = 0;
   for (Int i = 0; i < n_events; i++) {
      Event* ev = &events[i];
      if (ev->guard) {
         emit_batch(sb, sbi, first, n);
         n = 0;
         /* Counts its L1 bytes itself: add_event could not. */
         IRExpr** args = mkIRExprVec_2(ev->addr, mkIRExpr_HWord(INFO(ev->bucket, ev->kind, ev->size)));
         IRDirty* di = unsafeIRDirty_0_N(2, "rc_access1", VG_(fnptr_to_fnentry)(rc_access1), args);
         di->guard = ev->guard;
         addStmtToIRSB(sb, IRStmt_Dirty(di));
         continue;
      }
      if (n == 0) first = i;
      if (++n == MAX_BATCH) {
         emit_batch(sb, sbi, first, n);
         n = 0;
      }
   }
   emit_batch(sb, sbi, first, n);
   n_events = 0;
}

/* Outside a user's counted window: instructions and FLOPs only, no access. */
static Bool instrument_accesses = True;

static void add_event(IRSB* sb, SegEntry* entry, EvKind kind, IRExpr* addr, Int size, IRExpr* guard, UInt bucket)
{
   tl_assert(isIRAtom(addr));
   if (size <= 0 || !instrument_accesses) return;
   if (!guard) {
      /* Happens whenever the current segment runs. */
      if (kind == EvRead) entry->l1_read += (UInt)size;
      else entry->l1_write += (UInt)size;
   }
   /* A write to what the previous event of this instruction read: one "modify". */
   if (kind == EvWrite && !guard && n_events > 0) {
      Event* last = &events[n_events - 1];
      if (last->kind == EvRead && !last->guard && last->size == size && last->bucket == bucket &&
          eqIRAtom(last->addr, addr)) {
         last->kind = EvModify;
         return;
      }
   }
   if (n_events == N_EVENTS) flush_events(sb, cur_sbi);
   Event* ev = &events[n_events++];
   ev->kind = kind;
   ev->addr = addr;
   ev->size = size;
   ev->guard = guard;
   ev->bucket = bucket;
}

/* Emits: cur_seg_exec[id] += 1 (the running thread's counter of segment id). */
static void count_segment(IRSB* sb, UWord id)
{
   IRTemp base = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp slot = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp old = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp new = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(base, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&cur_seg_exec))));
   addStmtToIRSB(sb, IRStmt_WrTmp(slot, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(base),
                                                     mkIRExpr_HWord((HWord)(id * sizeof(ULong))))));
   addStmtToIRSB(sb, IRStmt_WrTmp(old, IRExpr_Load(Iend_LE, Ity_I64, IRExpr_RdTmp(slot))));
   addStmtToIRSB(sb, IRStmt_WrTmp(new, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(old), IRExpr_Const(IRConst_U64(1)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(slot), IRExpr_RdTmp(new)));
}

/* Per-translation state while instrumenting. */
typedef struct {
   SBInfo* sbi;
   UInt    ids_cap;
   UWord   seg;           /* current segment */
   Bool    in_insn;
   Addr    insn_pc;
   Int     insn_len;
   UInt    insn_bucket;
   RcInsnFp fp;          /* FP ops of the current instruction */
} InstrState;

static void start_segment(IRSB* sb, InstrState* st)
{
   UWord id = segment_alloc();
   if (st->sbi->n == st->ids_cap) {
      st->ids_cap = st->ids_cap ? st->ids_cap * 2 : 4;
      st->sbi->ids = VG_(realloc)("rc.sbids", st->sbi->ids, st->ids_cap * sizeof(UWord));
   }
   st->sbi->ids[st->sbi->n++] = id;
   st->seg = id;
   if (cur) ensure_capacity(cur);
   /* Counted by the segment's first access call, or inline at its end. */
   cur_segment = id;
   cur_segment_uncounted = True;
}

/* The segment ends (a side exit or the end of the translation): the
   generated code counts its execution unless an access call does. */
static void end_segment(IRSB* sb)
{
   /* An empty segment (typically after the last side exit) has nothing to
      count: no code for it. */
   if (cur_segment_uncounted && segments[cur_segment].n > 0) count_segment(sb, cur_segment);
   cur_segment_uncounted = False;
}

/* Adds the FP ops seen so far in the current instruction to the current
   segment (at its end, or at a side exit inside it: ops before the exit run
   whether or not it is taken). */
static void flush_insn_flops(InstrState* st)
{
   if (!st->in_insn || st->fp.n_ops == 0) return;
   UInt flops[RC_FLOP_KINDS];
   /* VEX has just decoded these bytes from the client's memory. */
   Bool wide = rc_insn_is_256((const UChar*)st->insn_pc, st->insn_len);
   if (rc_insn_flops(&st->fp, wide, flops)) {
      SegEntry* e = segment_entry(st->seg, st->insn_bucket);
      for (Int k = 0; k < RC_FLOP_KINDS; k++) e->flops[k] += flops[k];
      if (clo_dump_fp) {
         const HChar* fn = "?";
         VG_(get_fnname)(VG_(current_DiEpoch)(), st->insn_pc, &fn);
         VG_(printf)("rtrace-count fp %#lx %s:", st->insn_pc, fn);
         for (Int k = 0; k < RC_FLOP_KINDS; k++)
            if (flops[k]) VG_(printf)(" %s=%u", rc_flop_kind_name(k), flops[k]);
         VG_(printf)(" ops:");
         for (Int i = 0; i < st->fp.n_ops; i++) {
            VG_(printf)(" ");
            ppIROp(st->fp.ops[i]);
         }
         VG_(printf)("\n");
      }
   }
   rc_insn_reset(&st->fp);
}

static void note_fp_expr(InstrState* st, IRExpr* e)
{
   IROp op;
   switch (e->tag) {
      case Iex_Unop:  op = e->Iex.Unop.op; break;
      case Iex_Binop: op = e->Iex.Binop.op; break;
      case Iex_Triop: op = e->Iex.Triop.details->op; break;
      case Iex_Qop:   op = e->Iex.Qop.details->op; break;
      default: return;
   }
   rc_note_op(&st->fp, op);
}

/* ------------------------------------------------------------------ FMA */

/* Valgrind 3.19 computes every scalar FMA (and each lane of a vector one)
   with a software fused multiply-add (VEX's h_generic_calc_MAdd*: exact
   IEEE round-to-nearest, with two MXCSR writes): 20-30 ns each, a third of
   the time of an FMA-bound app under any tool. The host's FMA unit gives
   the same result (a fused multiply-add rounds once, in the host's MXCSR
   mode, as the emulation does; only the payload of a NaN made from two NaN
   operands may differ), so where the host has one the instrumented code
   calls it instead. The ops are counted from the original IR first. */
static Bool native_fma = False;

static Bool host_has_fma(void)
{
   UInt a, b, c, d;
   __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
   const UInt fma = 1u << 12, osxsave = 1u << 27, avx = 1u << 28;
   if ((c & (fma | osxsave | avx)) != (fma | osxsave | avx)) return False;
   UInt lo, hi;
   __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
   return (lo & 6) == 6;   /* the OS saves the SSE and AVX state */
}

static ULong rc_fma64(ULong x, ULong y, ULong z)
{
   ULong r;
   __asm__("vmovq %1, %%xmm0\n\tvmovq %2, %%xmm1\n\tvmovq %3, %%xmm2\n\t"
           "vfmadd213sd %%xmm2, %%xmm1, %%xmm0\n\tvmovq %%xmm0, %0"
           : "=r"(r) : "r"(x), "r"(y), "r"(z) : "xmm0", "xmm1", "xmm2");
   return r;
}

static ULong rc_fma32(ULong x, ULong y, ULong z)
{
   UInt r;
   __asm__("vmovd %k1, %%xmm0\n\tvmovd %k2, %%xmm1\n\tvmovd %k3, %%xmm2\n\t"
           "vfmadd213ss %%xmm2, %%xmm1, %%xmm0\n\tvmovd %%xmm0, %0"
           : "=r"(r) : "r"(x), "r"(y), "r"(z) : "xmm0", "xmm1", "xmm2");
   return r;
}

/* dst = MAddF64/MAddF32(rm, x, y, z) as a call of the host FMA (the
   emulation ignores rm too: both round in the host's mode). */
static void emit_native_fma(IRSB* sb, IRTemp dst, const IRQop* q)
{
   const Bool f64 = q->op == Iop_MAddF64;
   IRExpr* in[3] = {q->arg2, q->arg3, q->arg4};
   IRExpr* bits[3];
   for (Int i = 0; i < 3; i++) {
      IRTemp t = newIRTemp(sb->tyenv, Ity_I64);
      if (f64) {
         addStmtToIRSB(sb, IRStmt_WrTmp(t, IRExpr_Unop(Iop_ReinterpF64asI64, in[i])));
      } else {
         IRTemp t32 = newIRTemp(sb->tyenv, Ity_I32);
         addStmtToIRSB(sb, IRStmt_WrTmp(t32, IRExpr_Unop(Iop_ReinterpF32asI32, in[i])));
         addStmtToIRSB(sb, IRStmt_WrTmp(t, IRExpr_Unop(Iop_32Uto64, IRExpr_RdTmp(t32))));
      }
      bits[i] = IRExpr_RdTmp(t);
   }
   IRTemp r = newIRTemp(sb->tyenv, Ity_I64);
   IRCallee* callee = f64 ? mkIRCallee(0, "rc_fma64", VG_(fnptr_to_fnentry)(rc_fma64))
                          : mkIRCallee(0, "rc_fma32", VG_(fnptr_to_fnentry)(rc_fma32));
   addStmtToIRSB(sb, IRStmt_WrTmp(r, IRExpr_CCall(callee, Ity_I64, mkIRExprVec_3(bits[0], bits[1], bits[2]))));
   if (f64) {
      addStmtToIRSB(sb, IRStmt_WrTmp(dst, IRExpr_Unop(Iop_ReinterpI64asF64, IRExpr_RdTmp(r))));
   } else {
      IRTemp r32 = newIRTemp(sb->tyenv, Ity_I32);
      addStmtToIRSB(sb, IRStmt_WrTmp(r32, IRExpr_Unop(Iop_64to32, IRExpr_RdTmp(r))));
      addStmtToIRSB(sb, IRStmt_WrTmp(dst, IRExpr_Unop(Iop_ReinterpI32asF32, IRExpr_RdTmp(r32))));
   }
}

/* ------------------------------------------------------------------ window hooks */

/* The window's interest in the instruction at `pc`: the entry of a hooked
   function (by its bucket's name; by name lookup without per-function
   buckets). */
static RcHook hook_at(Addr pc, UInt bucket)
{
   const HChar* fn = NULL;
   if (clo_functions) {
      const Bucket* b = VG_(indexXA)(buckets, bucket);
      if (b->hook == RC_HOOK_NONE) return RC_HOOK_NONE;
      return VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), pc, &fn) ? (RcHook)b->hook : RC_HOOK_NONE;
   }
   if (!VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), pc, &fn)) return RC_HOOK_NONE;
   return rc_window_hook_of(fn);
}

/* Calls the window's helper with the guest stack pointer; when it says so,
   exits to the scheduler, which discards every translation (guest CMSTART,
   CMLEN) and resumes at this same instruction, translated anew. */
static void emit_window_hook(IRSB* sb, RcHook hook, Addr pc)
{
   IRTemp act = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp sp = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(sp, IRExpr_Get(OFFSET_amd64_RSP, Ity_I64)));
   IRDirty* di = hook != RC_HOOK_NONE
      ? unsafeIRDirty_1_N(act, 0, "rc_window_at_entry", VG_(fnptr_to_fnentry)(rc_window_at_entry),
                          mkIRExprVec_3(mkIRExpr_HWord((HWord)hook), mkIRExpr_HWord((HWord)pc), IRExpr_RdTmp(sp)))
      : unsafeIRDirty_1_N(act, 0, "rc_window_at_return", VG_(fnptr_to_fnentry)(rc_window_at_return),
                          mkIRExprVec_2(mkIRExpr_HWord((HWord)pc), IRExpr_RdTmp(sp)));
   /* The entry hook reads the return address on the stack. */
   di->mFx = Ifx_Read;
   di->mAddr = IRExpr_RdTmp(sp);
   di->mSize = sizeof(Addr);
   addStmtToIRSB(sb, IRStmt_Dirty(di));
   addStmtToIRSB(sb, IRStmt_Put(offsetof(VexGuestAMD64State, guest_CMSTART), IRExpr_Const(IRConst_U64(0x1000))));
   addStmtToIRSB(sb, IRStmt_Put(offsetof(VexGuestAMD64State, guest_CMLEN), IRExpr_Const(IRConst_U64(~(ULong)0xfff))));
   IRTemp go = newIRTemp(sb->tyenv, Ity_I1);
   addStmtToIRSB(sb, IRStmt_WrTmp(go, IRExpr_Binop(Iop_CmpNE64, IRExpr_RdTmp(act), IRExpr_Const(IRConst_U64(0)))));
   addStmtToIRSB(sb, IRStmt_Exit(IRExpr_RdTmp(go), Ijk_InvalICache, IRConst_U64(pc), OFFSET_amd64_RIP));
}

static IRSB* rc_instrument(VgCallbackClosure* closure, IRSB* sbIn, const VexGuestLayout* layout,
                           const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   if (gWordTy != hWordTy) VG_(tool_panic)("host/guest word size mismatch");
   if (!cur) switch_to(closure->tid);

   IRSB* sb = deepCopyIRSBExceptStmts(sbIn);
   Int i = 0;
   for (; i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark; i++) addStmtToIRSB(sb, sbIn->stmts[i]);

   InstrState st;
   VG_(memset)(&st, 0, sizeof st);
   st.sbi = VG_(malloc)("rc.sbinfo", sizeof(SBInfo));
   st.sbi->node.key = closure->nraddr;
   st.sbi->n = 0;
   st.sbi->ids = NULL;
   st.sbi->n_batches = st.sbi->batches_cap = 0;
   st.sbi->batches = NULL;
   n_events = 0;
   cur_sbi = st.sbi;
   instrument_accesses = rc_window_full();
   start_segment(sb, &st);

   for (; i < sbIn->stmts_used; i++) {
      IRStmt* s = sbIn->stmts[i];
      if (!s || s->tag == Ist_NoOp) continue;
      switch (s->tag) {
         case Ist_IMark: {
            flush_insn_flops(&st);
            st.in_insn = True;
            st.insn_pc = s->Ist.IMark.addr + s->Ist.IMark.delta;
            st.insn_len = (Int)s->Ist.IMark.len;
            st.insn_bucket = (UInt)bucket_for(st.insn_pc);
            rc_insn_reset(&st.fp);
            const RcHook hook = hook_at(st.insn_pc, st.insn_bucket);
            const Bool ret = rc_window_watches(st.insn_pc);
            if (hook != RC_HOOK_NONE || ret) {
               /* The window may change here: what ran before is counted
                  before the helper, this instruction after it (a segment
                  boundary, as at a side exit). */
               flush_events(sb, st.sbi);
               end_segment(sb);
               addStmtToIRSB(sb, s);
               if (hook != RC_HOOK_NONE) emit_window_hook(sb, hook, st.insn_pc);
               if (ret) emit_window_hook(sb, RC_HOOK_NONE, st.insn_pc);
               start_segment(sb, &st);
               segment_entry(st.seg, st.insn_bucket)->instructions += 1;
               continue;
            }
            /* Executed once the segment holding its IMark is entered. */
            segment_entry(st.seg, st.insn_bucket)->instructions += 1;
            break;
         }
         case Ist_WrTmp: {
            IRExpr* e = s->Ist.WrTmp.data;
            if (e->tag == Iex_Load) {
               add_event(sb, segment_entry(st.seg, st.insn_bucket), EvRead, e->Iex.Load.addr, sizeofIRType(e->Iex.Load.ty), NULL, st.insn_bucket);
            } else {
               note_fp_expr(&st, e);
               if (native_fma && e->tag == Iex_Qop &&
                   (e->Iex.Qop.details->op == Iop_MAddF64 || e->Iex.Qop.details->op == Iop_MAddF32)) {
                  emit_native_fma(sb, s->Ist.WrTmp.tmp, e->Iex.Qop.details);
                  continue;
               }
            }
            break;
         }
         case Ist_Store: {
            IRType ty = typeOfIRExpr(sbIn->tyenv, s->Ist.Store.data);
            add_event(sb, segment_entry(st.seg, st.insn_bucket), EvWrite, s->Ist.Store.addr, sizeofIRType(ty), NULL, st.insn_bucket);
            break;
         }
         case Ist_StoreG: {
            IRStoreG* sg = s->Ist.StoreG.details;
            IRType ty = typeOfIRExpr(sbIn->tyenv, sg->data);
            add_event(sb, segment_entry(st.seg, st.insn_bucket), EvWrite, sg->addr, sizeofIRType(ty), sg->guard, st.insn_bucket);
            break;
         }
         case Ist_LoadG: {
            IRLoadG* lg = s->Ist.LoadG.details;
            IRType ty_wide = Ity_INVALID, ty_arg = Ity_INVALID;
            typeOfIRLoadGOp(lg->cvt, &ty_wide, &ty_arg);
            add_event(sb, segment_entry(st.seg, st.insn_bucket), EvRead, lg->addr, sizeofIRType(ty_arg), lg->guard, st.insn_bucket);
            break;
         }
         case Ist_Dirty: {
            IRDirty* d = s->Ist.Dirty.details;
            if (d->mFx != Ifx_None) {
               tl_assert(d->mAddr && d->mSize > 0);
               IRExpr* guard = (d->guard && !(d->guard->tag == Iex_Const && d->guard->Iex.Const.con->Ico.U1))
                                   ? d->guard : NULL;
               if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
                  add_event(sb, segment_entry(st.seg, st.insn_bucket), EvRead, d->mAddr, d->mSize, guard, st.insn_bucket);
               if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
                  add_event(sb, segment_entry(st.seg, st.insn_bucket), EvWrite, d->mAddr, d->mSize, guard, st.insn_bucket);
            }
            break;
         }
         case Ist_CAS: {
            IRCAS* cas = s->Ist.CAS.details;
            Int size = sizeofIRType(typeOfIRExpr(sbIn->tyenv, cas->dataLo));
            if (cas->dataHi) size *= 2;
            add_event(sb, segment_entry(st.seg, st.insn_bucket), EvRead, cas->addr, size, NULL, st.insn_bucket);
            add_event(sb, segment_entry(st.seg, st.insn_bucket), EvWrite, cas->addr, size, NULL, st.insn_bucket);
            break;
         }
         case Ist_LLSC: {
            if (s->Ist.LLSC.storedata == NULL) {
               IRType ty = typeOfIRTemp(sbIn->tyenv, s->Ist.LLSC.result);
               add_event(sb, segment_entry(st.seg, st.insn_bucket), EvRead, s->Ist.LLSC.addr, sizeofIRType(ty), NULL, st.insn_bucket);
            } else {
               IRType ty = typeOfIRExpr(sbIn->tyenv, s->Ist.LLSC.storedata);
               add_event(sb, segment_entry(st.seg, st.insn_bucket), EvWrite, s->Ist.LLSC.addr, sizeofIRType(ty), NULL, st.insn_bucket);
            }
            break;
         }
         case Ist_Exit:
            /* Accesses before a side exit happen whether or not it is taken;
               what follows runs only when it is not: a new segment. */
            flush_events(sb, st.sbi);
            flush_insn_flops(&st);
            end_segment(sb);
            addStmtToIRSB(sb, s);
            start_segment(sb, &st);
            continue;
         default:
            break;
      }
      addStmtToIRSB(sb, s);
   }
   flush_insn_flops(&st);
   flush_events(sb, st.sbi);
   end_segment(sb);
   if (sbIn->jumpkind == Ijk_NoDecode) {
      IRExpr** args = mkIRExprVec_1(mkIRExpr_HWord((HWord)(st.in_insn ? st.insn_pc : vge->base[0] + vge->len[0])));
      /* The undecodable instruction's address is the SB's next guest IP. */
      if (sbIn->next->tag == Iex_Const) args = mkIRExprVec_1(sbIn->next);
      IRDirty* di = unsafeIRDirty_0_N(1, "rc_nodecode", VG_(fnptr_to_fnentry)(rc_nodecode), args);
      addStmtToIRSB(sb, IRStmt_Dirty(di));
   }
   VG_(HT_add_node)(sb_table, st.sbi);
   /* New segments and functions: every live thread's arrays must cover them
      before any thread runs this translation. */
   Word nt = VG_(sizeXA)(all_threads);
   for (Word k = 0; k < nt; k++) {
      ThreadState* t = *(ThreadState**)VG_(indexXA)(all_threads, k);
      if (t->alive) ensure_capacity(t);
   }
   return sb;
}

/* ------------------------------------------------------------------ output */

static const HChar* rank_env(void)
{
   static const HChar* vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
   for (Int i = 0; i < 4; i++) {
      const HChar* v = VG_(getenv)(vars[i]);
      if (v && v[0]) return v;
   }
   return NULL;
}

static UInt start_ms = 0;

static void put_escaped(VgFile* f, const HChar* s)
{
   /* Names and paths go last on their line; newlines would break it. */
   for (; *s; s++) VG_(fprintf)(f, "%c", (*s == '\n' || *s == '\r') ? ' ' : *s);
}

/* The process's real exit status. Valgrind 3.19 passes the tool's fini 0
   whatever the client exited with, so the status is taken from the exit
   syscalls themselves: exit_group, or exit of the last thread. None seen
   when fini runs: the process was killed by a fatal signal (-1). */
static Bool exit_seen = False;
static Long exit_status = -1;

static Word living_threads(void)
{
   Word n = 0, nt = VG_(sizeXA)(all_threads);
   for (Word k = 0; k < nt; k++) n += (*(ThreadState**)VG_(indexXA)(all_threads, k))->alive ? 1 : 0;
   return n;
}

static void rc_pre_syscall(ThreadId tid, UInt syscallno, UWord* args, UInt nArgs)
{
   shared_syscall(tid, True, syscallno, args, nArgs);
   if (nArgs < 1) return;
   if (syscallno == __NR_exit_group || (syscallno == __NR_exit && living_threads() <= 1)) {
      exit_seen = True;
      exit_status = (Long)(args[0] & 0xff);
   }
}

static void rc_post_syscall(ThreadId tid, UInt syscallno, UWord* args, UInt nArgs, SysRes res)
{
   shared_syscall(tid, False, syscallno, args, nArgs);
}

static void rc_fini(Int exitcode_from_valgrind)
{
   Word nt = VG_(sizeXA)(all_threads);
   if (first_shared < n_caches) rc_sc_merge_all();
   for (Word k = 0; k < nt; k++) {
      ThreadState* t = *(ThreadState**)VG_(indexXA)(all_threads, k);
      if (t->alive) flush_dirty(t, True);
   }
   /* The shared levels' dirty lines: the process's, in its main thread's row. */
   if (nt > 0) flush_shared(*(ThreadState**)VG_(indexXA)(all_threads, 0), True);
   for (Word k = 0; k < nt; k++) fold_thread(*(ThreadState**)VG_(indexXA)(all_threads, k));
   if (VG_(clo_stats)) {
      VG_(umsg)("rtrace-count: %llu helper calls, %llu L1 misses\n", n_helper_calls, n_l1_misses);
      if (first_shared < n_caches) rc_sc_print_stats();
   }
   if (!clo_out_dir) return;

   const HChar* rank = rank_env();
   Int pid = VG_(getpid)();
   HChar path[4096], tmp[4200];
   VG_(snprintf)(path, sizeof path, "%s/counts-%s-%d.txt", clo_out_dir, rank ? rank : "x", pid);
   VG_(snprintf)(tmp, sizeof tmp, "%s.tmp", path);
   VgFile* f = VG_(fopen)(tmp, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY, VKI_S_IRUSR | VKI_S_IWUSR | VKI_S_IRGRP);
   if (!f) {
      VG_(umsg)("rtrace-count: cannot write %s: counts of process %d are lost\n", tmp, pid);
      return;
   }
   VG_(fprintf)(f, "rtrace-count-raw 2\n");
   VG_(fprintf)(f, "tool rtrace-count %s valgrind-%s\n", RC_VERSION, RC_VALGRIND_VERSION);
   VG_(fprintf)(f, "pid %d\nppid %d\nforked %d\n", pid, VG_(getppid)(), forked_child ? 1 : 0);
   VG_(fprintf)(f, "rank %s\n", rank ? rank : "-1");
   VG_(fprintf)(f, "exit_code %lld\n", exit_seen ? exit_status : -1LL);
   VG_(fprintf)(f, "wall_ms %u\n", VG_(read_millisecond_timer)() - start_ms);
   VG_(fprintf)(f, "threads %ld\n", nt);
   VG_(fprintf)(f, "exe ");
   put_escaped(f, VG_(args_the_exename) ? VG_(args_the_exename) : "?");
   VG_(fprintf)(f, "\n");
   static const HChar* level_names[MAX_LEVELS] = {"L1d", "L2", "L3"};
   for (Int k = 0, sim = 0; k < MAX_LEVELS; k++) {
      if (!clo_level[k].present) continue;
      VG_(fprintf)(f, "level %s %lld %lld %d %d %d %d %d\n", level_names[k], cache_geometry[sim].sim_size,
                   clo_level[k].full_size, clo_level[k].line, cache_geometry[sim].assoc, clo_level[k].sharers,
                   sim >= first_shared ? shared_group[sim] : 0, sim >= first_shared ? shared_copies[sim] : 0);
      sim++;
   }
   if (nodecode_pc) {
      DebugInfo* di = VG_(find_DebugInfo)(VG_(current_DiEpoch)(), nodecode_pc);
      VG_(fprintf)(f, "nodecode %#lx", nodecode_pc - (di ? VG_(DebugInfo_get_text_bias)(di) : 0));
      for (Int i = 0; i < nodecode_len; i++) VG_(fprintf)(f, " %02x", nodecode_bytes[i]);
      VG_(fprintf)(f, " | ");
      put_escaped(f, di ? VG_(DebugInfo_get_filename)(di) : "?");
      VG_(fprintf)(f, "\n");
   }
   rc_window_write(f);
   Word nm = VG_(sizeXA)(modules);
   for (Word m = 0; m < nm; m++) {
      Module* mod = VG_(indexXA)(modules, m);
      VG_(fprintf)(f, "module %ld ", m);
      put_escaped(f, mod->path);
      VG_(fprintf)(f, "\n");
   }
   Word nb = VG_(sizeXA)(buckets);
   for (Word b = 0; b < nb; b++) {
      Bucket* bk = VG_(indexXA)(buckets, b);
      VG_(fprintf)(f, "fn %ld %d %#lx %d ", b, bk->module, bk->vaddr, bk->phase);
      put_escaped(f, bk->symbol ? bk->symbol : "-");
      VG_(fprintf)(f, "\n");
   }
   for (Word k = 0; k < nt; k++) {
      ThreadState* t = *(ThreadState**)VG_(indexXA)(all_threads, k);
      UWord nbk = (UWord)nb;
      for (UWord b = 0; b < nbk; b++) {
         const ULong* tot = (t->totals && (b + 1) * TOTAL_FIELDS <= t->totals_cap) ? t->totals + b * TOTAL_FIELDS : NULL;
         const LevelBytes* lb = (t->bytes && b < t->bytes_cap) ? &t->bytes[b] : NULL;
         Bool any = False;
         if (tot) for (Int q = 0; q < TOTAL_FIELDS; q++) any |= tot[q] != 0;
         if (lb) for (Int q = 0; q < 4; q++) any |= (lb->rd[q] | lb->wr[q]) != 0;
         if (!any) continue;
         VG_(fprintf)(f, "c %d %lu", t->number, b);
         for (Int q = 0; q < 1 + RC_FLOP_KINDS; q++) VG_(fprintf)(f, " %llu", tot ? tot[q] : 0ULL);
         VG_(fprintf)(f, " %llu %llu", (tot ? tot[TOTAL_L1_READ] : 0ULL) + (lb ? lb->rd[0] : 0ULL),
                      (tot ? tot[TOTAL_L1_WRITE] : 0ULL) + (lb ? lb->wr[0] : 0ULL));
         for (Int q = 1; q < 4; q++)
            VG_(fprintf)(f, " %llu %llu", lb ? lb->rd[q] : 0ULL, lb ? lb->wr[q] : 0ULL);
         VG_(fprintf)(f, "\n");
      }
   }
   VG_(fprintf)(f, "end\n");
   VG_(fclose)(f);
   if (VG_(rename)(tmp, path) != 0) VG_(umsg)("rtrace-count: cannot rename %s to %s\n", tmp, path);
}

/* ------------------------------------------------------------------ setup */

static void rc_post_clo_init(void)
{
   if (!clo_out_dir) {
      VG_(fmsg_bad_option)("--out-dir", "rtrace-count needs --out-dir=DIR (where each process writes its counts)\n");
   }
   Int line = 0;
   for (Int k = 0; k < MAX_LEVELS; k++) {
      if (!clo_level[k].present) {
         for (Int j = k + 1; j < MAX_LEVELS; j++)
            if (clo_level[j].present)
               VG_(fmsg_bad_option)(j == 2 ? "--L3" : "--L2", "a cache level below a missing one (--L%d=none)\n", k + 1);
         break;
      }
      if (line && clo_level[k].line != line)
         VG_(fmsg_bad_option)("--L2/--L3", "all levels must have the same line size (%d vs %d)\n", line, clo_level[k].line);
      line = clo_level[k].line;
      Cache* g = &cache_geometry[n_caches++];
      Long share = clo_level[k].full_size / clo_level[k].sharers;
      /* The L1 stays per thread (every access reads it). A shared level:
         the process's `shared` threads of the instance's `sharers` workers
         have one cache of that part of it. */
      const Bool shared = k > 0 && clo_level[k].shared > 0;
      if (first_shared < MAX_LEVELS && !shared)
         VG_(fmsg_bad_option)("--L3-shared", "a private level below a shared one\n");
      if (shared) {
         if (first_shared == MAX_LEVELS) first_shared = k;
         const Int g_threads = clo_level[k].shared < clo_level[k].sharers ? clo_level[k].shared : clo_level[k].sharers;
         share = clo_level[k].full_size * g_threads / clo_level[k].sharers;
         shared_group[k] = clo_level[k].shared;
         shared_copies[k] = clo_level[k].copies;
         shared_copy[k] = VG_(calloc)("rc.shared", (SizeT)shared_copies[k], sizeof(Cache));
      }
      UWord sets = (UWord)(share / ((Long)clo_level[k].assoc * clo_level[k].line));
      g->assoc = clo_level[k].assoc;
      if (sets == 0) {     /* a share smaller than one set: fewer ways */
         sets = 1;
         g->assoc = (Int)(share / clo_level[k].line);
         if (g->assoc < 1) g->assoc = 1;
      }
      g->sets = sets;
      g->pow2 = (sets & (sets - 1)) == 0;
      g->set_mask = sets - 1;
      g->recip = g->pow2 ? 0 : (~(UWord)0 / sets) + 1;
      g->set_shift = 0;
      while (g->pow2 && (1UL << g->set_shift) < sets) g->set_shift++;
      g->sim_size = (Long)sets * g->assoc * clo_level[k].line;
      g->tags = NULL;
      g->tags32 = NULL;
      /* Narrow entries below L1 where (tag << 1) | 1 stays below EMPTY32 for
         every user-space line (addresses below 2^47). */
      UWord max_line = (1UL << 47) / (UWord)clo_level[k].line;
      g->narrow = n_caches > 1 && (max_line / sets) < 0x7fffffffUL;
   }
   if (first_shared < n_caches) rc_sc_init(apply_shared, &n_helper_calls);
   native_fma = clo_native_fma && host_has_fma();
   line_bytes = (UWord)line;
   line_shift = 0;
   while ((1UL << line_shift) < line_bytes) line_shift++;

   buckets = VG_(newXA)(VG_(malloc), "rc.buckets", VG_(free), sizeof(Bucket));
   modules = VG_(newXA)(VG_(malloc), "rc.modules", VG_(free), sizeof(Module));
   all_threads = VG_(newXA)(VG_(malloc), "rc.threads", VG_(free), sizeof(ThreadState*));
   sb_table = VG_(HT_construct)("rc.sbtable");
   map_grow();
   rc_window_init();
   rc_window_on_close(flush_all_dirty);
   if (!clo_functions) {   /* one bucket per phase of the window: the whole thread */
      for (Int p = 0; p < RC_PHASES; p++) {
         Bucket b = {-1, 0, NULL, p, RC_HOOK_NONE};
         VG_(addToXA)(buckets, &b);
      }
   }
   start_ms = VG_(read_millisecond_timer)();
}

static void rc_pre_clo_init(void)
{
   VG_(details_name)("rtrace-count");
   VG_(details_version)(RC_VERSION);
   VG_(details_description)("FLOPs and bytes per cache level, per thread and function (rtrace)");
   VG_(details_copyright_author)("rtrace");
   VG_(details_bug_reports_to)("the rtrace project");
   VG_(details_avg_translation_sizeB)(500);

   VG_(basic_tool_funcs)(rc_post_clo_init, rc_instrument, rc_fini);
   VG_(needs_command_line_options)(rc_process_cmd_line_option, rc_print_usage, rc_print_debug_usage);
   VG_(needs_superblock_discards)(rc_discard_superblock_info);
   VG_(track_start_client_code)(rc_start_client_code);
   VG_(needs_syscall_wrapper)(rc_pre_syscall, rc_post_syscall);
   VG_(track_pre_thread_ll_create)(rc_thread_create);
   VG_(track_pre_thread_ll_exit)(rc_thread_exit);
   VG_(track_stop_client_code)(rc_stop_client_code);
   VG_(atfork)(rc_atfork_pre, NULL, rc_atfork_child);
}

VG_DETERMINE_INTERFACE_VERSION(rc_pre_clo_init)
