// CSR sparse matrix-vector product y = A x, one row per loop iteration.
#include "cpu_kernels.hpp"
#include "problems.hpp"
#include "reference.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace rtrace::demo {

KernelResult run_spmv(const KernelConfig& cfg, ProcessGroup& group) {
  KernelResult r = start_result(cfg);
  if (group.size() > 1) throw std::invalid_argument("spmv runs on a single rank only");
  const CsrMatrix a = make_csr_matrix(cfg.size);
  const std::int64_t rows = a.rows;
  AlignedArray x(rows), y(rows);
#pragma omp parallel for schedule(static)
  for (std::int64_t j = 0; j < rows; ++j) {
    x[j] = spmv_x(j);
    y[j] = 0.0;
  }
  const std::int64_t* __restrict rp = a.row_ptr.data();
  const std::int32_t* __restrict col = a.col.data();
  const double* __restrict val = a.val.data();
  const double* __restrict px = x.data();
  double* __restrict py = y.data();

  Stopwatch clock;
  AnnotatedRegion region(r.region);
  for (int it = 0; it < cfg.iters; ++it) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < rows; ++i) {
      double s = 0.0;
      for (std::int64_t e = rp[i]; e < rp[i + 1]; ++e) s += val[e] * px[col[e]];
      py[i] = s;
    }
  }
  const double seconds = clock.seconds();
  const double flops = spmv_flops(a) * cfg.iters, bytes = spmv_bytes(a) * cfg.iters;
  region.finish(flops, bytes);

  std::vector<double> want, scale;
  spmv_reference(a, 0, rows, want, scale);
  if (cfg.inject_error && rows > 0) y[rows / 2] += 1.0;
  std::string problem;
  for (std::int64_t i = 0; i < rows; ++i)
    if (!(std::fabs(y[i] - want[i]) <= 1e-13 * (scale[i] + 1e-300))) {
      std::ostringstream os;
      os.precision(17);
      os << "y[" << i << "] = " << y[i] << ", reference " << want[i];
      problem = os.str();
      break;
    }
  combine_ranks(r, group, seconds, flops, bytes, problem.empty(), problem);
  return r;
}

}  // namespace rtrace::demo
