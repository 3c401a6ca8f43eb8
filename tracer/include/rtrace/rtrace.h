/* rtrace/rtrace.h — the application-side API of rtrace (C, C++, Fortran).
 *
 * Link with -lrtrace_api (a stub whose calls do nothing) so an instrumented
 * application builds and runs without rtrace. Under `rtrace run` the injected
 * tracer library interposes these symbols and records each region's time and
 * the work it declares.
 *
 * Declared counts follow the ERT approach: the code knows how many FLOPs and
 * bytes it moves, so the CPU roofline needs no hardware counters. Counts
 * accumulate: declare the work of each execution (or the total, once).
 *
 * Fortran: every function is bind(C)-friendly (scalars by value, C strings):
 *   interface
 *     subroutine rtrace_region_begin(name) bind(C)
 *       use iso_c_binding; character(kind=c_char) :: name(*)
 *     end subroutine
 *   end interface
 *   call rtrace_region_begin("solve"//c_null_char)
 */
#ifndef RTRACE_RTRACE_H
#define RTRACE_RTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#define RTRACE_API_VERSION 1

/* Precisions for rtrace_region_add_flops. */
enum rtrace_precision { RTRACE_FP64 = 0, RTRACE_FP32 = 1, RTRACE_FP16 = 2 };
/* Memory levels for rtrace_region_add_bytes. */
enum rtrace_level { RTRACE_L1 = 0, RTRACE_L2 = 1, RTRACE_L3 = 2, RTRACE_DRAM = 3 };

/* Starts/ends a named region on the calling thread. Regions nest; a region's
 * time is inclusive wall time, summed over calls (and over threads that
 * enter it, so annotate outside OpenMP parallel regions for wall time). */
void rtrace_region_begin(const char* name);
void rtrace_region_end(const char* name);

/* Adds `flops` of the given precision to region `name`. */
void rtrace_region_add_flops(const char* name, int precision, double flops);
/* Adds `bytes` moved at the given memory level to region `name`. */
void rtrace_region_add_bytes(const char* name, int level, double bytes);
/* Convenience: FP64 and FP32 FLOPs and bytes per level in one call. Pass 0
 * for what does not apply; negative values are ignored. */
void rtrace_region_counts(const char* name, double flops_fp64, double flops_fp32,
                          double bytes_l1, double bytes_l2, double bytes_l3, double bytes_dram);

/* 1 when running under the rtrace tracer, 0 with the stub library. */
int rtrace_active(void);

#ifdef __cplusplus
}
#endif

#endif /* RTRACE_RTRACE_H */
