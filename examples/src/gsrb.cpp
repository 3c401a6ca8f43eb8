// Red-black Gauss-Seidel smoother in the two flavours of the seed (HPGMG):
//  - branch: in place, `if` the point has the sweep's colour (half the FLOPs);
//  - mask:   out of place, every point computed and multiplied by a 0/1 colour
//            mask read from memory (twice the FLOPs, no branch).
#include "cpu_kernels.hpp"
#include "problems.hpp"
#include "reference.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace rtrace::demo {

KernelResult run_gsrb(const KernelConfig& cfg, ProcessGroup& group) {
  KernelResult r = start_result(cfg);
  const bool masked = cfg.variant == "mask";
  const std::int64_t n = cfg.size;
  if (n < group.size())
    throw std::invalid_argument("gsrb: --size " + std::to_string(n) + " is smaller than the number of ranks");
  const std::int64_t k0 = group.share_begin(n), nz = group.share_end(n) - k0;
  const std::int64_t nx = n + 2, plane = nx * nx, total = plane * (nz + 2);
  AlignedArray x(total), rhs(total), xo(masked ? total : 0);
  // mask[(colour*2 + (k&1)) * plane + j*nx + i] = 1 where (i+j+k) has the colour's parity.
  AlignedArray mask(masked ? 4 * plane : 0);
#pragma omp parallel for schedule(static)
  for (std::int64_t l = 0; l < nz + 2; ++l)
    for (std::int64_t j = 0; j < nx; ++j)
      for (std::int64_t i = 0; i < nx; ++i) {
        const std::int64_t c = (l * nx + j) * nx + i;
        x[c] = grid_init(i, j, k0 + l);
        rhs[c] = grid_rhs(i, j, k0 + l);
        if (masked) xo[c] = x[c];
      }
  if (masked)
    for (int colour = 0; colour < 2; ++colour)
      for (int kpar = 0; kpar < 2; ++kpar)
        for (std::int64_t j = 0; j < nx; ++j)
          for (std::int64_t i = 0; i < nx; ++i)
            mask[(colour * 2 + kpar) * plane + j * nx + i] = ((i + j + kpar) & 1) == colour ? 1.0 : 0.0;

  SlabCheck check(n, k0, nz, cfg.iters, gsrb_reference_point, gsrb_reference_cost);
  check.capture(x.data(), 0);
  group.barrier();
  Stopwatch clock;
  AnnotatedRegion region(r.region);
  for (int it = 0; it < cfg.iters; ++it) {
    for (int colour = 0; colour < 2; ++colour) {
      group.exchange_planes(x.data(), x.data() + plane, x.data() + (nz + 1) * plane, x.data() + nz * plane,
                            static_cast<std::size_t>(plane));
      const double* __restrict b = rhs.data();
      if (!masked) {
        double* __restrict u = x.data();
#pragma omp parallel for collapse(2) schedule(static)
        for (std::int64_t l = 1; l <= nz; ++l)
          for (std::int64_t j = 1; j <= n; ++j) {
            const std::int64_t row = (l * nx + j) * nx;
            for (std::int64_t i = 1; i <= n; ++i) {
              if (((i + j + k0 + l) & 1) != colour) continue;
              const std::int64_t c = row + i;
              const double nsum = u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - plane] + u[c + plane];
              u[c] = gsrb_update(u[c], b[c], nsum);
            }
          }
      } else {
        const double* __restrict u = x.data();
        double* __restrict out = xo.data();
#pragma omp parallel for collapse(2) schedule(static)
        for (std::int64_t l = 1; l <= nz; ++l)
          for (std::int64_t j = 1; j <= n; ++j) {
            const std::int64_t row = (l * nx + j) * nx;
            const double* m = mask.data() + (colour * 2 + ((k0 + l) & 1)) * plane + j * nx;
            for (std::int64_t i = 1; i <= n; ++i) {
              const std::int64_t c = row + i;
              const double nsum = u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - plane] + u[c + plane];
              out[c] = gsrb_update_masked(u[c], b[c], nsum, m[i]);
            }
          }
        x.swap(xo);
      }
    }
    check.capture(x.data(), it + 1);
  }
  const double seconds = clock.seconds();
  const double points = double(n) * double(n) * double(nz);
  // Branch: every point is updated once per iteration (half per colour sweep).
  // Mask: every point is computed in both colour sweeps.
  const double flops = (masked ? 2.0 * kGsrbFlopsMask : kGsrbFlopsBranch) * points * cfg.iters;
  // Compulsory per colour sweep: read x (with ghosts) and rhs, write x (whole cache
  // lines, so the full interior in both flavours); the mask adds its two planes.
  const double per_sweep = 8.0 * (double(plane) * double(nz + 2) + 2.0 * points) + (masked ? 16.0 * plane : 0.0);
  const double bytes = 2.0 * per_sweep * cfg.iters;
  region.finish(flops, bytes);

  const std::string problem = check.verify("x", cfg.inject_error);
  const bool ok = problem.empty();
  combine_ranks(r, group, seconds, flops, bytes, ok, problem);
  return r;
}

}  // namespace rtrace::demo
