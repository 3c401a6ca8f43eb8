// 7-point constant-coefficient Jacobi sweeps on an n^3 grid, split into z-slabs
// across ranks with a one-plane halo exchange before every sweep.
#include "cpu_kernels.hpp"
#include "problems.hpp"
#include "reference.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace rtrace::demo {

KernelResult run_stencil7(const KernelConfig& cfg, ProcessGroup& group) {
  KernelResult r = start_result(cfg);
  const std::int64_t n = cfg.size;
  if (n < group.size())
    throw std::invalid_argument("stencil7: --size " + std::to_string(n) + " is smaller than the number of ranks");
  // This rank's interior planes are global k in [k0 + 1, k0 + nz]; local plane l is global k0 + l.
  const std::int64_t k0 = group.share_begin(n), nz = group.share_end(n) - k0;
  const std::int64_t nx = n + 2, plane = nx * nx;
  AlignedArray u(plane * (nz + 2)), v(plane * (nz + 2));
#pragma omp parallel for schedule(static)
  for (std::int64_t l = 0; l < nz + 2; ++l)
    for (std::int64_t j = 0; j < nx; ++j)
      for (std::int64_t i = 0; i < nx; ++i) u[(l * nx + j) * nx + i] = v[(l * nx + j) * nx + i] = grid_init(i, j, k0 + l);

  SlabCheck check(n, k0, nz, cfg.iters, stencil7_reference_point, stencil7_reference_cost);
  check.capture(u.data(), 0);
  group.barrier();
  Stopwatch clock;
  AnnotatedRegion region(r.region);
  for (int it = 0; it < cfg.iters; ++it) {
    group.exchange_planes(u.data(), u.data() + plane, u.data() + (nz + 1) * plane, u.data() + nz * plane,
                          static_cast<std::size_t>(plane));
    const double* __restrict in = u.data();
    double* __restrict out = v.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (std::int64_t l = 1; l <= nz; ++l)
      for (std::int64_t j = 1; j <= n; ++j) {
        const std::int64_t row = (l * nx + j) * nx;
        for (std::int64_t i = 1; i <= n; ++i) {
          const std::int64_t c = row + i;
          out[c] = stencil7_point(in[c], in[c - 1], in[c + 1], in[c - nx], in[c + nx], in[c - plane], in[c + plane]);
        }
      }
    u.swap(v);
    check.capture(u.data(), it + 1);
  }
  const double seconds = clock.seconds();
  const double points = double(n) * double(n) * double(nz);
  const double flops = kStencilFlopsPerPoint * points * cfg.iters;
  // Compulsory per sweep: read the slab with its ghost planes, write the interior.
  const double bytes = 8.0 * (double(plane) * double(nz + 2) + points) * cfg.iters;
  region.finish(flops, bytes);

  const std::string problem = check.verify("u", cfg.inject_error);
  const bool ok = problem.empty();
  combine_ranks(r, group, seconds, flops, bytes, ok, problem);
  return r;
}

}  // namespace rtrace::demo
