#include "reference.hpp"

#include "demo_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace rtrace::demo {
namespace {

// The box of global grid indices (boundary included) within `radius` of p.
struct Box {
  std::int64_t lo[3], hi[3];
  std::int64_t dim(int d) const { return hi[d] - lo[d] + 1; }
};

Box cone_box(std::int64_t n, const GridPoint& p, std::int64_t radius) {
  Box b{};
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = std::max<std::int64_t>(0, p[d] - radius);
    b.hi[d] = std::min<std::int64_t>(n + 1, p[d] + radius);
  }
  return b;
}

// Work estimate of a cone reference: updates of every box point per sweep.
double cone_cost(std::int64_t n, std::int64_t radius, double sweeps) {
  const double edge = static_cast<double>(std::min<std::int64_t>(n + 2, 2 * radius + 1));
  return sweeps * edge * edge * edge;
}

// Iterates `sweep(x, box, ...)` on a box; values on the box edge stay fixed.
// They are wrong after the first sweep, but the error moves one point per
// sweep (stencil reach 1), so with radius >= sweeps the centre stays exact.
template <class Sweep>
double cone_iterate(std::int64_t n, const GridPoint& p, std::int64_t radius, int sweeps, Sweep sweep) {
  const Box b = cone_box(n, p, radius);
  const std::int64_t nx = b.dim(0), ny = b.dim(1), nz = b.dim(2);
  std::vector<double> x(static_cast<std::size_t>(nx * ny * nz));
  for (std::int64_t k = 0; k < nz; ++k)
    for (std::int64_t j = 0; j < ny; ++j)
      for (std::int64_t i = 0; i < nx; ++i) x[(k * ny + j) * nx + i] = grid_init(b.lo[0] + i, b.lo[1] + j, b.lo[2] + k);
  // A box point is updated when it is interior to the box and to the global grid.
  auto updatable = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    const std::int64_t g[3] = {b.lo[0] + i, b.lo[1] + j, b.lo[2] + k};
    const std::int64_t l[3] = {i, j, k};
    const std::int64_t dims[3] = {nx, ny, nz};
    for (int d = 0; d < 3; ++d)
      if (l[d] == 0 || l[d] == dims[d] - 1 || g[d] < 1 || g[d] > n) return false;
    return true;
  };
  for (int s = 0; s < sweeps; ++s) sweep(x, b, nx, ny, nz, s, updatable);
  return x[((p[2] - b.lo[2]) * ny + (p[1] - b.lo[1])) * nx + (p[0] - b.lo[0])];
}

}  // namespace

std::vector<GridPoint> grid_sample_points(std::int64_t n, std::int64_t k_lo, std::int64_t k_hi,
                                          double cost_per_point) {
  const int count = static_cast<int>(std::clamp(kReferenceBudget / std::max(cost_per_point, 1.0), 2.0, 12.0));
  std::vector<GridPoint> pts;
  pts.push_back({1, 1, k_lo});
  pts.push_back({n, n, k_hi});
  pts.push_back({(n + 1) / 2, (n + 1) / 2, (k_lo + k_hi) / 2});
  pts.push_back({n, 1, k_lo});
  for (std::uint64_t s = 0; static_cast<int>(pts.size()) < count; ++s) {
    const auto r = [&](std::uint64_t salt, std::int64_t lo, std::int64_t hi) {
      return lo + static_cast<std::int64_t>(mix64(s * 8 + salt) % static_cast<std::uint64_t>(hi - lo + 1));
    };
    pts.push_back({r(1, 1, n), r(2, 1, n), r(3, k_lo, k_hi)});
  }
  pts.resize(static_cast<std::size_t>(count));
  return pts;
}

double stencil7_reference_cost(std::int64_t n, int iters) { return cone_cost(n, iters, iters); }

double stencil7_reference_point(std::int64_t n, int iters, const GridPoint& p) {
  std::vector<double> next;
  return cone_iterate(n, p, iters, iters, [&](std::vector<double>& x, const Box&, std::int64_t nx, std::int64_t ny,
                                             std::int64_t nz, int, auto updatable) {
    next = x;
    for (std::int64_t k = 0; k < nz; ++k)
      for (std::int64_t j = 0; j < ny; ++j)
        for (std::int64_t i = 0; i < nx; ++i) {
          if (!updatable(i, j, k)) continue;
          const std::int64_t c = (k * ny + j) * nx + i;
          next[c] = stencil7_point(x[c], x[c - 1], x[c + 1], x[c - nx], x[c + nx], x[c - nx * ny], x[c + nx * ny]);
        }
    x.swap(next);
  });
}

double gsrb_reference_cost(std::int64_t n, int iters) { return cone_cost(n, 2 * iters + 1, 2.0 * iters); }

double gsrb_reference_point(std::int64_t n, int iters, const GridPoint& p) {
  // One sweep per colour: red (i+j+k even) then black.
  return cone_iterate(n, p, 2 * static_cast<std::int64_t>(iters) + 1, 2 * iters,
                      [&](std::vector<double>& x, const Box& b, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                          int sweep, auto updatable) {
                        const int colour = sweep % 2;
                        for (std::int64_t k = 0; k < nz; ++k)
                          for (std::int64_t j = 0; j < ny; ++j)
                            for (std::int64_t i = 0; i < nx; ++i) {
                              const std::int64_t gi = b.lo[0] + i, gj = b.lo[1] + j, gk = b.lo[2] + k;
                              if (((gi + gj + gk) & 1) != colour || !updatable(i, j, k)) continue;
                              const std::int64_t c = (k * ny + j) * nx + i;
                              const double nsum =
                                  x[c - 1] + x[c + 1] + x[c - nx] + x[c + nx] + x[c - nx * ny] + x[c + nx * ny];
                              x[c] = gsrb_update(x[c], grid_rhs(gi, gj, gk), nsum);
                            }
                      });
}

CsrMatrix make_csr_matrix(std::int64_t rows) {
  CsrMatrix m;
  m.rows = rows;
  m.row_ptr.assign(static_cast<std::size_t>(rows + 1), 0);
  // Row i: len = 8..32 entries at columns i + (t - len/2)*stride_i, stride 1..64,
  // distinct and sorted by construction; those outside [0, rows) are dropped.
  auto row_shape = [](std::int64_t i, int& len, std::int64_t& stride) {
    const std::uint64_t h = mix64(static_cast<std::uint64_t>(i) ^ (7ULL << 58));
    len = 8 + static_cast<int>(h % 25);
    stride = 1 + static_cast<std::int64_t>((h >> 8) % 64);
  };
  auto for_each_col = [&](std::int64_t i, auto&& fn) {
    int len;
    std::int64_t stride;
    row_shape(i, len, stride);
    for (int t = 0; t < len; ++t) {
      const std::int64_t c = i + (t - len / 2) * stride;
      if (c >= 0 && c < rows) fn(c);
    }
  };
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) {
    std::int64_t cnt = 0;
    for_each_col(i, [&](std::int64_t) { ++cnt; });
    m.row_ptr[static_cast<std::size_t>(i + 1)] = cnt;
  }
  for (std::int64_t i = 0; i < rows; ++i) m.row_ptr[i + 1] += m.row_ptr[i];
  m.col.resize(static_cast<std::size_t>(m.row_ptr[rows]));
  m.val.resize(m.col.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) {
    std::int64_t e = m.row_ptr[i];
    for_each_col(i, [&](std::int64_t c) {
      m.col[e] = static_cast<std::int32_t>(c);
      m.val[e] = unit_hash(static_cast<std::uint64_t>(e) ^ (8ULL << 58)) - 0.5;
      ++e;
    });
  }
  return m;
}

void spmv_reference(const CsrMatrix& a, std::int64_t row_begin, std::int64_t row_end, std::vector<double>& y,
                    std::vector<double>& scale) {
  y.assign(static_cast<std::size_t>(row_end - row_begin), 0.0);
  scale.assign(y.size(), 0.0);
  for (std::int64_t i = row_begin; i < row_end; ++i) {
    double s = 0, sa = 0;
    for (std::int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const double t = a.val[e] * spmv_x(a.col[e]);
      s += t;
      sa += std::fabs(t);
    }
    y[i - row_begin] = s;
    scale[i - row_begin] = sa;
  }
}

GppProblem make_gpp_problem(std::int64_t ncouls) {
  GppProblem p;
  p.ncouls = static_cast<int>(ncouls);
  p.nbands = static_cast<int>(std::max<std::int64_t>(1, ncouls / 16));
  p.ngpown = static_cast<int>(std::max<std::int64_t>(1, ncouls / 8));
  auto c = [](std::uint64_t key, double lo, double hi, double ilo, double ihi) {
    return Cplx{lo + (hi - lo) * unit_hash(key), ilo + (ihi - ilo) * unit_hash(key ^ (1ULL << 57))};
  };
  const std::size_t nb = p.nbands, ng = p.ngpown, nc = p.ncouls;
  p.aqsm.resize(nb * nc);
  p.aqsn.resize(nb * ng);
  p.wtilde.resize(ng * nc);
  p.eps.resize(ng * nc);
  p.vcoul.resize(nc);
  p.wx.resize(nb * GppProblem::nw);
  p.wx_t.resize(nb * GppProblem::nw);
  for (std::size_t i = 0; i < p.aqsm.size(); ++i) p.aqsm[i] = c(i ^ (10ULL << 58), -1, 1, -1, 1);
  for (std::size_t i = 0; i < p.aqsn.size(); ++i) p.aqsn[i] = c(i ^ (11ULL << 58), -1, 1, -1, 1);
  // wtilde: real part in [0.5, 2], imaginary in [0.5, 1.5], so |wx - wtilde| >= 0.5
  // and |wx^2 - wtilde^2| >= 0.5 (no division blows up).
  for (std::size_t i = 0; i < p.wtilde.size(); ++i) p.wtilde[i] = c(i ^ (12ULL << 58), 0.5, 2.0, 0.5, 1.5);
  for (std::size_t i = 0; i < p.eps.size(); ++i) p.eps[i] = c(i ^ (13ULL << 58), -1, 1, -1, 1);
  for (std::size_t i = 0; i < nc; ++i) p.vcoul[i] = 0.1 + unit_hash(i ^ (14ULL << 58));
  for (std::size_t n1 = 0; n1 < nb; ++n1)
    for (int iw = 0; iw < GppProblem::nw; ++iw) {
      const double w = -2.0 + 4.0 * unit_hash((n1 * GppProblem::nw + iw) ^ (15ULL << 58));
      p.wx[n1 * GppProblem::nw + iw] = w;
      p.wx_t[iw * nb + n1] = w;
    }
  return p;
}

double gpp_flops(const GppProblem& p, int n1_begin, int n1_end, const char* variant) {
  const double triples = double(n1_end - n1_begin) * p.ngpown * p.ncouls;
  const std::string v = variant;
  if (v == "naive") return triples * (kGppFlopsMat + GppProblem::nw * kGppFlopsTermNaive);  // mat once per triple
  if (v == "iw-outside") return triples * GppProblem::nw * (kGppFlopsMat + kGppFlopsTermNaive);
  return triples * GppProblem::nw * (kGppFlopsMat + kGppFlopsTermFast);  // divides-replaced, blocked
}

double gpp_bytes(const GppProblem& p, int n1_begin, int n1_end) {
  const double nb = n1_end - n1_begin, ng = p.ngpown, nc = p.ncouls;
  return 16.0 * (nb * nc + nb * ng + 2.0 * ng * nc) + 8.0 * (nc + nb * GppProblem::nw);
}

GppSums gpp_reference(const GppProblem& p, int n1_begin, int n1_end, double& scale) {
  // Partial sums per n1 (in parallel), added in order: deterministic.
  const int nb = n1_end - n1_begin;
  std::vector<GppSums> part(static_cast<std::size_t>(std::max(nb, 0)));
  std::vector<double> part_scale(part.size(), 0.0);
#pragma omp parallel for schedule(dynamic)
  for (int b = 0; b < nb; ++b) {
    const int n1 = n1_begin + b;
    GppSums s{};
    double sc = 0;
    for (int igp = 0; igp < p.ngpown; ++igp)
      for (int ig = 0; ig < p.ncouls; ++ig) {
        const std::size_t gi = static_cast<std::size_t>(igp) * p.ncouls + ig;
        const Cplx mat = gpp_mat(p.aqsm[static_cast<std::size_t>(n1) * p.ncouls + ig],
                                 p.aqsn[static_cast<std::size_t>(n1) * p.ngpown + igp], p.vcoul[ig]);
        for (int iw = 0; iw < GppProblem::nw; ++iw) {
          Cplx sch{0, 0}, ssx{0, 0};
          gpp_term_naive(mat, p.wx[static_cast<std::size_t>(n1) * GppProblem::nw + iw], p.wtilde[gi], p.eps[gi], sch,
                         ssx);
          s.sch[iw] = cadd(s.sch[iw], sch);
          s.ssx[iw] = cadd(s.ssx[iw], ssx);
          sc += std::sqrt(cnorm2(sch)) + std::sqrt(cnorm2(ssx));
        }
      }
    part[b] = s;
    part_scale[b] = sc;
  }
  GppSums total{};
  scale = 0;
  for (int b = 0; b < nb; ++b) {
    for (int iw = 0; iw < GppProblem::nw; ++iw) {
      total.sch[iw] = cadd(total.sch[iw], part[b].sch[iw]);
      total.ssx[iw] = cadd(total.ssx[iw], part[b].ssx[iw]);
    }
    scale += part_scale[b];
  }
  return total;
}

double gpp_compare(const GppSums& got, const GppSums& want, double scale) {
  double worst = 0;
  // Scale per sum: the total |term| mass divided over the 4*nw real sums is a
  // fair magnitude for each; rounding differences are ~1e-16 of it.
  const double s = scale / (4.0 * GppProblem::nw);
  for (int iw = 0; iw < GppProblem::nw; ++iw) {
    worst = std::max(worst, rel_diff(got.sch[iw].re, want.sch[iw].re, s));
    worst = std::max(worst, rel_diff(got.sch[iw].im, want.sch[iw].im, s));
    worst = std::max(worst, rel_diff(got.ssx[iw].re, want.ssx[iw].re, s));
    worst = std::max(worst, rel_diff(got.ssx[iw].im, want.ssx[iw].im, s));
  }
  return worst;
}

double dgemm_check_rows(std::int64_t n, int iters, std::int64_t row_begin, std::int64_t row_end,
                        const double* c_rows, std::int64_t& bad_row) {
  std::vector<double> x(static_cast<std::size_t>(n)), bx(static_cast<std::size_t>(n), 0.0),
      bx_abs(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t j = 0; j < n; ++j) x[j] = 0.5 + unit_hash(static_cast<std::uint64_t>(j) ^ (9ULL << 58));
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < n; ++k) {
    double s = 0, sa = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double b = dgemm_b(k, j);
      s += b * x[j];
      sa += std::fabs(b) * x[j];
    }
    bx[k] = s;
    bx_abs[k] = sa;
  }
  double worst = 0;
  bad_row = -1;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = row_begin; i < row_end; ++i) {
    double want = 0, scale = 0, got = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      const double a = dgemm_a(i, k);
      want += a * bx[k];
      scale += std::fabs(a) * bx_abs[k];
    }
    want *= iters;
    scale *= iters;
    for (std::int64_t j = 0; j < n; ++j) {
      want += dgemm_c0(i, j) * x[j];
      got += c_rows[(i - row_begin) * n + j] * x[j];
    }
    const double err = std::fabs(got - want) / (scale + std::fabs(want));
#pragma omp critical(rtrace_demo_dgemm_check)
    if (err > worst || std::isnan(err)) {
      worst = std::isnan(err) ? INFINITY : err;
      bad_row = i;
    }
  }
  return worst;
}

}  // namespace rtrace::demo
