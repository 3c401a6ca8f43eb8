// BerkeleyGW-like GPP sigma kernel along the seed's optimisation path:
//  naive            n1, igp, ig collapsed (parallel), iw innermost, textbook divides
//  iw-outside       iw loop outside the parallel loop (seed v4) with wx(iw, n1)
//                   swapped (v5); n1 innermost; mat recomputed per iw
//  divides-replaced as iw-outside, complex divides -> reciprocal + multiplies and
//                   |x| > c -> |x|^2 > c^2 (v7, v8)
//  blocked          as divides-replaced with ig cache-blocked so the inner loop
//                   runs over a contiguous block of ig for each n1 (v9)
#include "cpu_kernels.hpp"
#include "problems.hpp"
#include "reference.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace rtrace::demo {
namespace {

constexpr int kIgBlock = 256;

void add_into(GppSums& total, const GppSums& part) {
  for (int iw = 0; iw < kGppNw; ++iw) {
    total.sch[iw] = cadd(total.sch[iw], part.sch[iw]);
    total.ssx[iw] = cadd(total.ssx[iw], part.ssx[iw]);
  }
}

GppSums gpp_naive(const GppProblem& p, int n1b, int n1e) {
  GppSums total{};
  const int ng = p.ngpown, nc = p.ncouls;
#pragma omp parallel
  {
    GppSums mine{};
#pragma omp for collapse(3) schedule(static)
    for (int n1 = n1b; n1 < n1e; ++n1)
      for (int igp = 0; igp < ng; ++igp)
        for (int ig = 0; ig < nc; ++ig) {
          const std::size_t g = std::size_t(igp) * nc + ig;
          const Cplx mat = gpp_mat(p.aqsm[std::size_t(n1) * nc + ig], p.aqsn[std::size_t(n1) * ng + igp], p.vcoul[ig]);
          for (int iw = 0; iw < kGppNw; ++iw)
            gpp_term_naive(mat, p.wx[std::size_t(n1) * kGppNw + iw], p.wtilde[g], p.eps[g], mine.sch[iw], mine.ssx[iw]);
        }
#pragma omp critical(rtrace_demo_gpp)
    add_into(total, mine);
  }
  return total;
}

template <bool Fast>
GppSums gpp_iw_outside(const GppProblem& p, int n1b, int n1e) {
  GppSums total{};
  const int nb = p.nbands, ng = p.ngpown, nc = p.ncouls;
  for (int iw = 0; iw < kGppNw; ++iw) {
    const double* wx = p.wx_t.data() + std::size_t(iw) * nb;
#pragma omp parallel
    {
      Cplx sch{0, 0}, ssx{0, 0};
#pragma omp for collapse(2) schedule(static)
      for (int igp = 0; igp < ng; ++igp)
        for (int ig = 0; ig < nc; ++ig) {
          const std::size_t g = std::size_t(igp) * nc + ig;
          const Cplx wt = p.wtilde[g], eps = p.eps[g];
          for (int n1 = n1b; n1 < n1e; ++n1) {
            const Cplx mat = gpp_mat(p.aqsm[std::size_t(n1) * nc + ig], p.aqsn[std::size_t(n1) * ng + igp], p.vcoul[ig]);
            if constexpr (Fast)
              gpp_term_fast(mat, wx[n1], wt, eps, sch, ssx);
            else
              gpp_term_naive(mat, wx[n1], wt, eps, sch, ssx);
          }
        }
#pragma omp critical(rtrace_demo_gpp)
      {
        total.sch[iw] = cadd(total.sch[iw], sch);
        total.ssx[iw] = cadd(total.ssx[iw], ssx);
      }
    }
  }
  return total;
}

GppSums gpp_blocked(const GppProblem& p, int n1b, int n1e) {
  GppSums total{};
  const int nb = p.nbands, ng = p.ngpown, nc = p.ncouls;
  const int nblocks = (nc + kIgBlock - 1) / kIgBlock;
  for (int iw = 0; iw < kGppNw; ++iw) {
    const double* wx = p.wx_t.data() + std::size_t(iw) * nb;
#pragma omp parallel
    {
      Cplx sch{0, 0}, ssx{0, 0};
      // One (igp, ig block) per task: its wtilde/eps block stays in L1 while n1 runs.
#pragma omp for collapse(2) schedule(static)
      for (int igp = 0; igp < ng; ++igp)
        for (int blk = 0; blk < nblocks; ++blk) {
          const int ig_end = std::min(nc, (blk + 1) * kIgBlock);
          const Cplx* wt = p.wtilde.data() + std::size_t(igp) * nc;
          const Cplx* eps = p.eps.data() + std::size_t(igp) * nc;
          for (int n1 = n1b; n1 < n1e; ++n1) {
            const Cplx* aqsm = p.aqsm.data() + std::size_t(n1) * nc;
            const Cplx aqsn = p.aqsn[std::size_t(n1) * ng + igp];
            const double w = wx[n1];
            for (int ig = blk * kIgBlock; ig < ig_end; ++ig)
              gpp_term_fast(gpp_mat(aqsm[ig], aqsn, p.vcoul[ig]), w, wt[ig], eps[ig], sch, ssx);
          }
        }
#pragma omp critical(rtrace_demo_gpp)
      {
        total.sch[iw] = cadd(total.sch[iw], sch);
        total.ssx[iw] = cadd(total.ssx[iw], ssx);
      }
    }
  }
  return total;
}

}  // namespace

KernelResult run_gpp(const KernelConfig& cfg, ProcessGroup& group) {
  KernelResult r = start_result(cfg);
  const GppProblem p = make_gpp_problem(cfg.size);
  if (p.nbands < group.size())
    throw std::invalid_argument("gpp: nbands = " + std::to_string(p.nbands) + " (--size/16) is smaller than the number of ranks");
  const int n1b = static_cast<int>(group.share_begin(p.nbands)), n1e = static_cast<int>(group.share_end(p.nbands));

  group.barrier();
  GppSums sums{};
  Stopwatch clock;
  AnnotatedRegion region(r.region);
  for (int it = 0; it < cfg.iters; ++it) {
    if (cfg.variant == "naive") sums = gpp_naive(p, n1b, n1e);
    else if (cfg.variant == "iw-outside") sums = gpp_iw_outside<false>(p, n1b, n1e);
    else if (cfg.variant == "divides-replaced") sums = gpp_iw_outside<true>(p, n1b, n1e);
    else sums = gpp_blocked(p, n1b, n1e);
  }
  const double seconds = clock.seconds();
  const double flops = gpp_flops(p, n1b, n1e, cfg.variant.c_str()) * cfg.iters;
  const double bytes = gpp_bytes(p, n1b, n1e) * cfg.iters;
  region.finish(flops, bytes);

  // Each rank checks its partial sums against the reference over its n1 range.
  double scale = 0;
  const GppSums want = gpp_reference(p, n1b, n1e, scale);
  if (cfg.inject_error) sums.sch[0].re += 1e-3 * scale + 1.0;
  const double err = gpp_compare(sums, want, scale);
  std::string problem;
  if (!(err <= 1e-10)) {
    std::ostringstream os;
    os.precision(17);
    os << "sch(iw=0) = " << sums.sch[0].re << "+" << sums.sch[0].im << "i, reference " << want.sch[0].re << "+"
       << want.sch[0].im << "i (largest relative error " << err << ")";
    problem = os.str();
  }
  combine_ranks(r, group, seconds, flops, bytes, problem.empty(), problem);
  return r;
}

}  // namespace rtrace::demo
