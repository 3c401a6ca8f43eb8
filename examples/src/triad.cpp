// STREAM-style triad: a[i] = b[i] + s*c[i], 2 FLOPs and 24 compulsory bytes per element.
#include "cpu_kernels.hpp"
#include "problems.hpp"

#include <cmath>
#include <string>

namespace rtrace::demo {

KernelResult run_triad(const KernelConfig& cfg, ProcessGroup& group) {
  KernelResult r = start_result(cfg);
  const std::int64_t first = group.share_begin(cfg.size), n = group.share_end(cfg.size) - first;
  AlignedArray a(n), b(n), c(n);
  double* __restrict pa = a.data();
  const double* __restrict pb = b.data();
  const double* __restrict pc = c.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {  // first touch by the thread that streams it later
    a[i] = 0.0;
    b[i] = triad_b(first + i);
    c[i] = triad_c(first + i);
  }

  group.barrier();
  Stopwatch clock;
  AnnotatedRegion region(r.region);
  for (int it = 0; it < cfg.iters; ++it) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) pa[i] = pb[i] + kTriadScalar * pc[i];
  }
  const double seconds = clock.seconds();
  const double flops = kTriadFlopsPerElement * double(n) * cfg.iters;
  const double bytes = kTriadBytesPerElement * double(n) * cfg.iters;
  region.finish(flops, bytes);

  if (cfg.inject_error && n > 0) a[n / 2] += 1.0;
  std::int64_t bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
  for (std::int64_t i = 0; i < n; ++i) {
    const double want = triad_b(first + i) + kTriadScalar * triad_c(first + i);  // regenerated, not read back
    if (!(std::fabs(a[i] - want) <= 1e-14 * std::fabs(want))) bad = std::min(bad, i);
  }
  std::string problem;
  if (bad < n)
    problem = "a[" + std::to_string(first + bad) + "] = " + std::to_string(a[bad]) + ", expected " +
              std::to_string(triad_b(first + bad) + kTriadScalar * triad_c(first + bad));
  combine_ranks(r, group, seconds, flops, bytes, bad == n, problem);
  return r;
}

}  // namespace rtrace::demo
