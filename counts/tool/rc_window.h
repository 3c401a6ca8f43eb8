/* The counted window of rtrace-count: which part of the run the counts are
   "inside" of, and where the tool switches between counting fully (cache
   simulation) and cheaply (instructions and FLOPs only).

   Two kinds of window:
   - the MPI window (default): from the return of the outermost MPI_Init /
     MPI_Init_thread (PMPI_ names too: Open MPI's Fortran bindings call
     PMPI_Init) to the entry of MPI_Finalize, the window the POP summary
     times. The whole run is counted fully; each count says whether it was
     before, inside or after the window. A run that never calls MPI_Init has
     the whole run as its window.
   - a user window (--window-fn/--window-calls, --window-ms): from the entry
     of the Nth call of a named function to the return of its Mth call, and/or
     a range of the counting run's own clock. Outside it the tool counts only
     instructions and FLOPs (no cache simulation, no memory-access calls).

   A phase change discards every translation, so that code translated since
   carries the new phase in its buckets (and the new instrumentation): the
   counts attributed before the change stay with the phase they were made in.
   Pure bookkeeping here; rc_main.c instruments the hooks. */
#ifndef RC_WINDOW_H
#define RC_WINDOW_H

#include "pub_tool_basics.h"
#include "pub_tool_libcprint.h"

typedef enum { RC_PHASE_BEFORE = 0, RC_PHASE_INSIDE = 1, RC_PHASE_AFTER = 2 } RcPhase;
#define RC_PHASES 3

/* Functions whose entry is a hook. */
typedef enum { RC_HOOK_NONE = 0, RC_HOOK_MPI_INIT, RC_HOOK_MPI_FINALIZE, RC_HOOK_USER } RcHook;

Bool rc_window_option(const HChar* arg);   /* True: the option was the window's */
void rc_window_usage(void);
void rc_window_init(void);                 /* after the options: the initial phase */

/* The phase that code translated now counts in. */
RcPhase rc_window_phase(void);
/* Whether code translated now is fully instrumented (caches simulated). */
Bool rc_window_full(void);
/* Whether a phase ever simulated the caches (its byte counts are valid). */
Bool rc_window_phase_full(RcPhase p);

/* The hook of a function, by Valgrind's name of it (RC_HOOK_NONE: none). */
RcHook rc_window_hook_of(const HChar* fnname);
/* Whether `pc` is a return address the window waits for (instrumented with
   rc_window_at_return at its first instruction). */
Bool rc_window_watches(Addr pc);

/* Dirty helpers, at the first instruction of a hooked function / a watched
   return address, with the guest stack pointer there. Non-zero: the
   translations must be discarded now (the generated code then exits to the
   scheduler with Ijk_InvalICache and resumes at the same instruction, whose
   hook the window knows to skip once). */
ULong rc_window_at_entry(ULong hook, Addr pc, Addr sp);
ULong rc_window_at_return(Addr pc, Addr sp);

/* From the scheduler (start_client_code): the time window's bounds; changes
   the phase and discards the translations itself when one is passed. */
void rc_window_tick(void);

/* Called just before the window closes (inside -> after), while the phase
   is still "inside": rc_main.c writes the dirty lines back there. */
void rc_window_on_close(void (*fn)(void));

/* The window's lines of the raw file. */
void rc_window_write(VgFile* f);

#endif
