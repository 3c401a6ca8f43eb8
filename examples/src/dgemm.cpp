// Tiled DGEMM, C += A*B (n x n, row-major). Ranks own blocks of rows of C (and A);
// every rank holds all of B. Checked with Freivalds' test (C x vs C0 x + iters*A(B x)).
#include "cpu_kernels.hpp"
#include "problems.hpp"
#include "reference.hpp"

#include <algorithm>
#include <sstream>

namespace rtrace::demo {
namespace {

constexpr std::int64_t kRowTile = 64, kColTile = 512, kDepthTile = 256;

// C[rows ib..ie) x [jb..je) += A[.., kb..ke) * B[kb..ke, jb..je): four rows of C
// per pass so each loaded row of B feeds four FMAs; the j loop vectorises.
void tile_kernel(std::int64_t n, const double* __restrict a, const double* __restrict b, double* __restrict c,
                 std::int64_t ib, std::int64_t ie, std::int64_t jb, std::int64_t je, std::int64_t kb,
                 std::int64_t ke) {
  std::int64_t i = ib;
  for (; i + 4 <= ie; i += 4) {
    double* c0 = c + i * n;
    double* c1 = c0 + n;
    double* c2 = c1 + n;
    double* c3 = c2 + n;
    for (std::int64_t k = kb; k < ke; ++k) {
      const double a0 = a[i * n + k], a1 = a[(i + 1) * n + k], a2 = a[(i + 2) * n + k], a3 = a[(i + 3) * n + k];
      const double* brow = b + k * n;
#pragma omp simd
      for (std::int64_t j = jb; j < je; ++j) {
        const double bj = brow[j];
        c0[j] += a0 * bj;
        c1[j] += a1 * bj;
        c2[j] += a2 * bj;
        c3[j] += a3 * bj;
      }
    }
  }
  for (; i < ie; ++i)
    for (std::int64_t k = kb; k < ke; ++k) {
      const double ai = a[i * n + k];
#pragma omp simd
      for (std::int64_t j = jb; j < je; ++j) c[i * n + j] += ai * b[k * n + j];
    }
}

}  // namespace

KernelResult run_dgemm(const KernelConfig& cfg, ProcessGroup& group) {
  KernelResult r = start_result(cfg);
  const std::int64_t n = cfg.size;
  const std::int64_t r0 = group.share_begin(n), rows = group.share_end(n) - r0;
  AlignedArray a(rows * n), b(n * n), c(rows * n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      b[i * n + j] = dgemm_b(i, j);
      if (i < rows) {
        a[i * n + j] = dgemm_a(r0 + i, j);
        c[i * n + j] = dgemm_c0(r0 + i, j);
      }
    }

  const std::int64_t row_tiles = (rows + kRowTile - 1) / kRowTile, col_tiles = (n + kColTile - 1) / kColTile;
  group.barrier();
  Stopwatch clock;
  AnnotatedRegion region(r.region);
  for (int it = 0; it < cfg.iters; ++it) {
#pragma omp parallel for collapse(2) schedule(static)
    for (std::int64_t ti = 0; ti < row_tiles; ++ti)
      for (std::int64_t tj = 0; tj < col_tiles; ++tj)
        for (std::int64_t kb = 0; kb < n; kb += kDepthTile)
          tile_kernel(n, a.data(), b.data(), c.data(), ti * kRowTile, std::min(rows, (ti + 1) * kRowTile),
                      tj * kColTile, std::min(n, (tj + 1) * kColTile), kb, std::min(n, kb + kDepthTile));
  }
  const double seconds = clock.seconds();
  const double flops = 2.0 * double(rows) * double(n) * double(n) * cfg.iters;
  // Compulsory: A and B read once, C read and written once (per iteration).
  const double bytes = 8.0 * (double(rows) * n + double(n) * n + 2.0 * double(rows) * n) * cfg.iters;
  region.finish(flops, bytes);

  if (cfg.inject_error && rows > 0) c[(rows / 2) * n + n / 2] += 1.0;
  std::int64_t bad_row = -1;
  const double err = dgemm_check_rows(n, cfg.iters, r0, r0 + rows, c.data(), bad_row);
  std::string problem;
  if (!(err <= 1e-10)) {
    std::ostringstream os;
    os << "row " << bad_row << " of C fails Freivalds' check (relative error " << err << ")";
    problem = os.str();
  }
  combine_ranks(r, group, seconds, flops, bytes, problem.empty(), problem);
  return r;
}

}  // namespace rtrace::demo
