/* The stub of rtrace/rtrace.h: every call does nothing, so an instrumented
 * application builds and runs without rtrace. Under `rtrace run` the injected
 * librtrace_tracer.so (LD_PRELOAD) defines the same symbols and wins. */
#include "rtrace/rtrace.h"

void rtrace_region_begin(const char* name) { (void)name; }
void rtrace_region_end(const char* name) { (void)name; }
void rtrace_region_add_flops(const char* name, int precision, double flops) {
  (void)name; (void)precision; (void)flops;
}
void rtrace_region_add_bytes(const char* name, int level, double bytes) {
  (void)name; (void)level; (void)bytes;
}
void rtrace_region_counts(const char* name, double flops_fp64, double flops_fp32, double bytes_l1,
                          double bytes_l2, double bytes_l3, double bytes_dram) {
  (void)name; (void)flops_fp64; (void)flops_fp32; (void)bytes_l1; (void)bytes_l2; (void)bytes_l3;
  (void)bytes_dram;
}
int rtrace_active(void) { return 0; }
