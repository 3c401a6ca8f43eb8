/* The counted window: see rc_window.h. */
#include "rc_window.h"

#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_options.h"

/* Valgrind's core discards translations for its own reasons (munmap, self-
   modifying code); a tool gets only the client-request variant, which is not
   where the window's phase changes. The scheduler calls start_client_code
   between two runs of translated code, where discarding is what it does
   itself for Ijk_InvalICache. */
extern void VG_(discard_translations)(Addr guest_start, ULong range, const HChar* who);

/* ------------------------------------------------------------------ options */

static Bool clo_mpi_window = True;     /* --mpi-window=no: the whole run is the window */
static const HChar* clo_fn = NULL;     /* --window-fn=NAME */
static Long clo_first_call = 0;        /* --window-calls=N-M: 1-based; 0 none */
static Long clo_last_call = 0;         /* 0: to the end */
static Long clo_from_ms = -1;          /* --window-ms=A-B; -1 none */
static Long clo_to_ms = -1;            /* -1: to the end */

/* "A-B" or "A-" (to the end): non-negative integers, A <= B. */
static Bool parse_range(const HChar* s, Long* a, Long* b)
{
   HChar* end = NULL;
   *a = VG_(strtoll10)(s, &end);
   if (end == s || *end != '-' || *a < 0) return False;
   const HChar* p = end + 1;
   if (*p == '\0') {
      *b = -1;
      return True;
   }
   *b = VG_(strtoll10)(p, &end);
   return end != p && *end == '\0' && *b >= *a;
}

Bool rc_window_option(const HChar* arg)
{
   const HChar* spec = NULL;
   if VG_BOOL_CLO(arg, "--mpi-window", clo_mpi_window) {}
   else if VG_STR_CLO(arg, "--window-fn", clo_fn) {}
   else if VG_STR_CLO(arg, "--window-calls", spec) {
      Long a = 0, b = 0;
      if (!parse_range(spec, &a, &b) || a < 1)
         VG_(fmsg_bad_option)(arg, "expected N-M or N- (calls counted from 1, N <= M)\n");
      clo_first_call = a;
      clo_last_call = b < 0 ? 0 : b;
   }
   else if VG_STR_CLO(arg, "--window-ms", spec) {
      if (!parse_range(spec, &clo_from_ms, &clo_to_ms))
         VG_(fmsg_bad_option)(arg, "expected A-B or A- (milliseconds of the counting run, A <= B)\n");
   }
   else return False;
   return True;
}

void rc_window_usage(void)
{
   VG_(printf)(
"    --mpi-window=no           no MPI window: the whole run is the counted window\n"
"    --window-fn=NAME          count from the entry of call N of NAME ...\n"
"    --window-calls=N-M|N-     ... to the return of its call M (outside: instructions and FLOPs only)\n"
"    --window-ms=A-B|A-        count from A to B ms of this process's run (with --window-fn: both)\n");
}

/* ------------------------------------------------------------------ state */

static Bool user_window = False;       /* a user window replaces the MPI window */
static RcPhase phase = RC_PHASE_INSIDE;
static Bool phase_was_full[RC_PHASES] = {False, False, False};
static UInt start_ms = 0;

/* The conditions whose conjunction is the window. Each opens once, closes once. */
static Bool calls_open = True, calls_closed = False;   /* no --window-fn: always open */
static Bool time_open = True, time_closed = False;      /* no --window-ms: always open */
static Bool mpi_seen_init = False;     /* an MPI_Init entry: its return is watched */

static ULong calls = 0;                /* entries of the window's function */
static Long opened_ms = -1, closed_ms = -1;
static ULong discards = 0;

/* The return being waited for: the first instruction after a hooked call,
   with the stack pointer it returns with. */
static Bool watch_active = False;
static Addr watch_pc = 0, watch_sp = 0;

/* The hook that made the translations go: re-run once at the same place. */
static Bool skip_pending = False;
static Addr skip_pc = 0, skip_sp = 0;

static void (*on_close)(void) = NULL;

static UInt now_ms(void) { return VG_(read_millisecond_timer)() - start_ms; }

RcPhase rc_window_phase(void) { return phase; }

/* Outside a user window only instructions and FLOPs are counted. */
Bool rc_window_full(void) { return !user_window || phase == RC_PHASE_INSIDE; }

Bool rc_window_phase_full(RcPhase p) { return phase_was_full[p]; }

static RcPhase user_phase(void)
{
   if (calls_closed || time_closed) return RC_PHASE_AFTER;
   if (calls_open && time_open) return RC_PHASE_INSIDE;
   return RC_PHASE_BEFORE;
}

/* Moves to the phase the conditions give. True when it changed. */
static Bool settle(RcPhase next)
{
   if (next == phase || next < phase) return False;   /* phases only go forward */
   if (phase == RC_PHASE_INSIDE && on_close) on_close();
   phase = next;
   if (phase == RC_PHASE_INSIDE && opened_ms < 0) opened_ms = now_ms();
   if (phase == RC_PHASE_AFTER && closed_ms < 0) closed_ms = now_ms();
   phase_was_full[phase] = phase_was_full[phase] || rc_window_full();
   discards++;
   return True;
}

void rc_window_init(void)
{
   start_ms = VG_(read_millisecond_timer)();
   if ((clo_fn != NULL) != (clo_first_call > 0))
      VG_(fmsg_bad_option)("--window-fn/--window-calls", "give both: the function and its calls N-M\n");
   user_window = clo_fn != NULL || clo_from_ms >= 0;
   if (clo_fn) calls_open = False;
   if (clo_from_ms > 0) time_open = False;
   if (user_window) phase = user_phase();
   else phase = clo_mpi_window ? RC_PHASE_BEFORE : RC_PHASE_INSIDE;
   if (phase == RC_PHASE_INSIDE) opened_ms = 0;
   phase_was_full[phase] = rc_window_full();
}

void rc_window_on_close(void (*fn)(void)) { on_close = fn; }

/* ------------------------------------------------------------------ hooks */

/* The name Valgrind gives the function, against the window's name: as
   written, a Fortran external (name_), a gfortran module procedure
   (__mod_MOD_name; `mod::name` as rtrace names it), a C++ function without
   its parameter list (`ns::f` for `ns::f(int)`). */
static Bool user_name_matches(const HChar* fn)
{
   const HChar* want = clo_fn;
   const SizeT n = VG_(strlen)(want), m = VG_(strlen)(fn);
   if (VG_(strcmp)(fn, want) == 0) return True;
   if (m == n + 1 && fn[n] == '_' && VG_(strncmp)(fn, want, n) == 0) return True;
   if (m > n && fn[n] == '(' && VG_(strncmp)(fn, want, n) == 0) return True;
   const HChar* sep = VG_(strstr)(want, "::");
   if (sep && !VG_(strstr)(sep + 2, "::")) {
      /* mod::proc -> __mod_MOD_proc */
      const SizeT mod = (SizeT)(sep - want), proc = n - mod - 2;
      return m == 2 + mod + 5 + proc && fn[0] == '_' && fn[1] == '_' && VG_(strncmp)(fn + 2, want, mod) == 0 &&
             VG_(strncmp)(fn + 2 + mod, "_MOD_", 5) == 0 && VG_(strcmp)(fn + 2 + mod + 5, sep + 2) == 0;
   }
   if (m > n + 5 && VG_(strcmp)(fn + m - n, want) == 0 && VG_(strncmp)(fn + m - n - 5, "_MOD_", 5) == 0) return True;
   return False;
}

RcHook rc_window_hook_of(const HChar* fn)
{
   if (!fn || !fn[0]) return RC_HOOK_NONE;
   if (user_window) return clo_fn && user_name_matches(fn) ? RC_HOOK_USER : RC_HOOK_NONE;
   if (!clo_mpi_window) return RC_HOOK_NONE;
   if (VG_(strcmp)(fn, "MPI_Init") == 0 || VG_(strcmp)(fn, "PMPI_Init") == 0 ||
       VG_(strcmp)(fn, "MPI_Init_thread") == 0 || VG_(strcmp)(fn, "PMPI_Init_thread") == 0)
      return RC_HOOK_MPI_INIT;
   if (VG_(strcmp)(fn, "MPI_Finalize") == 0 || VG_(strcmp)(fn, "PMPI_Finalize") == 0) return RC_HOOK_MPI_FINALIZE;
   return RC_HOOK_NONE;
}

Bool rc_window_watches(Addr pc) { return watch_active && pc == watch_pc; }

/* The hooked call returns to the address on top of the stack at its entry,
   with the stack pointer one word above it. */
static void watch_return_of(Addr sp)
{
   watch_active = True;
   watch_pc = *(const Addr*)sp;
   watch_sp = sp + sizeof(Addr);
}

static ULong discard_and_rerun(Addr pc, Addr sp)
{
   skip_pending = True;
   skip_pc = pc;
   skip_sp = sp;
   return 1;
}

ULong rc_window_at_entry(ULong hook, Addr pc, Addr sp)
{
   if (skip_pending && pc == skip_pc && sp == skip_sp) {   /* the same entry, re-run after the discard */
      skip_pending = False;
      return 0;
   }
   switch ((RcHook)hook) {
      case RC_HOOK_MPI_INIT:
         /* The outermost one: PMPI_Init_thread's own calls are inside it. */
         if (phase != RC_PHASE_BEFORE || mpi_seen_init) return 0;
         mpi_seen_init = True;
         watch_return_of(sp);
         discards++;
         return discard_and_rerun(pc, sp);   /* its return address gets its hook */
      case RC_HOOK_MPI_FINALIZE:
         if (phase != RC_PHASE_INSIDE || !mpi_seen_init) return 0;
         settle(RC_PHASE_AFTER);
         return discard_and_rerun(pc, sp);
      case RC_HOOK_USER: {
         calls++;
         Bool watch = False;
         if ((ULong)clo_first_call == calls) calls_open = True;
         if (clo_last_call > 0 && (ULong)clo_last_call == calls && !calls_closed) {
            watch_return_of(sp);
            watch = True;
         }
         if (settle(user_phase()) || watch) {
            if (watch) discards++;
            return discard_and_rerun(pc, sp);
         }
         return 0;
      }
      default:
         return 0;
   }
}

ULong rc_window_at_return(Addr pc, Addr sp)
{
   if (!watch_active || pc != watch_pc || sp != watch_sp) return 0;
   watch_active = False;
   if (!user_window) return settle(RC_PHASE_INSIDE) ? 1 : 0;   /* MPI_Init returned */
   calls_closed = True;
   return settle(user_phase()) ? 1 : 0;
}

void rc_window_tick(void)
{
   if (clo_from_ms < 0 || phase == RC_PHASE_AFTER) return;
   const Long t = (Long)now_ms();
   if (!time_open && t >= clo_from_ms) time_open = True;
   if (clo_to_ms >= 0 && t >= clo_to_ms) time_closed = True;
   if (settle(user_phase())) VG_(discard_translations)((Addr)0x1000, ~(ULong)0xfff, "rtrace-count window");
}

/* ------------------------------------------------------------------ output */

static const HChar* phase_name(Int p)
{
   return p == RC_PHASE_BEFORE ? "before" : p == RC_PHASE_INSIDE ? "inside" : "after";
}

void rc_window_write(VgFile* f)
{
   if (!user_window) {
      /* No MPI_Init: the whole run is the window (its rows are "before"
         only because nothing opened it); the reader says so. */
      VG_(fprintf)(f, "window mpi %s\n", !clo_mpi_window ? "off" : mpi_seen_init ? "seen" : "none");
   } else {
      VG_(fprintf)(f, "window user");
      if (clo_fn) {
         VG_(fprintf)(f, " calls %lld %lld ", clo_first_call, clo_last_call);
         for (const HChar* s = clo_fn; *s; s++) VG_(fprintf)(f, "%c", (*s == ' ' || *s == '\n') ? '_' : *s);
      }
      if (clo_from_ms >= 0) VG_(fprintf)(f, " ms %lld %lld", clo_from_ms, clo_to_ms);
      VG_(fprintf)(f, "\n");
      if (clo_fn) VG_(fprintf)(f, "window_calls %llu\n", calls);
   }
   if (opened_ms >= 0) VG_(fprintf)(f, "window_open_ms %lld\n", opened_ms);
   if (closed_ms >= 0) VG_(fprintf)(f, "window_close_ms %lld\n", closed_ms);
   VG_(fprintf)(f, "window_discards %llu\n", discards);
   for (Int p = 0; p < RC_PHASES; p++)
      VG_(fprintf)(f, "phase %d %s %s\n", p, phase_name(p), phase_was_full[p] ? "full" : "light");
}
