#include "demo_common.hpp"

#include <rtrace/rtrace.h>

#include <cmath>
#include <cstdio>

namespace rtrace::demo {

// rtrace-demo-plain is built with RTRACE_DEMO_UNANNOTATED: the same kernels
// with no region calls at all, as a user's unmodified code would be; its
// FLOPs and bytes come only from the counting pass (`rtrace run --counts sim`).
#ifdef RTRACE_DEMO_UNANNOTATED
AnnotatedRegion::AnnotatedRegion(std::string name) : name_(std::move(name)) {}
AnnotatedRegion::~AnnotatedRegion() = default;
void AnnotatedRegion::finish(double, double) { open_ = false; }
void AnnotatedRegion::finish(double, int, double) { open_ = false; }
#else
AnnotatedRegion::AnnotatedRegion(std::string name) : name_(std::move(name)) { rtrace_region_begin(name_.c_str()); }

AnnotatedRegion::~AnnotatedRegion() {
  if (open_) rtrace_region_end(name_.c_str());
}

void AnnotatedRegion::finish(double flops_fp64, double bytes_dram) { finish(flops_fp64, RTRACE_FP64, bytes_dram); }

void AnnotatedRegion::finish(double flops, int precision, double bytes_dram) {
  if (!open_) return;
  // Only the levels we can justify are declared; the others stay "not declared".
  rtrace_region_add_flops(name_.c_str(), precision, flops);
  rtrace_region_add_bytes(name_.c_str(), RTRACE_DRAM, bytes_dram);
  rtrace_region_end(name_.c_str());
  open_ = false;
}
#endif

std::string region_name(const std::string& kernel, const std::string& variant) {
  return variant.empty() || variant == "-" ? kernel : kernel + "-" + variant;
}

KernelResult start_result(const KernelConfig& cfg) {
  KernelResult r;
  r.kernel = cfg.kernel;
  r.variant = cfg.variant;
  r.region = region_name(cfg.kernel, cfg.variant);
  r.size = cfg.size;
  r.iters = cfg.iters;
  return r;
}

std::string summary_line(const std::string& program, const KernelResult& r, int threads, int ranks) {
  const double gflops = r.seconds > 0 ? r.flops / r.seconds * 1e-9 : 0.0;
  const double gbs = r.seconds > 0 ? r.bytes_dram / r.seconds * 1e-9 : 0.0;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: kernel=%-8s variant=%-16s size=%lld iters=%d threads=%d ranks=%d time=%.4fs "
                "GFLOP/s=%.3f GB/s=%.3f AI=%.3f check=%s",
                program.c_str(), r.kernel.c_str(), r.variant.c_str(), static_cast<long long>(r.size), r.iters,
                threads, ranks, r.seconds, gflops, gbs, r.bytes_dram > 0 ? r.flops / r.bytes_dram : 0.0,
                r.ok ? "ok" : "FAILED");
  return buf;
}

double rel_diff(double got, double want, double scale) {
  if (std::isnan(got) || std::isnan(want)) return INFINITY;
  return std::fabs(got - want) / (std::fabs(want) + scale);
}

}  // namespace rtrace::demo
