// The demo problems: deterministic inputs, per-element math shared by the CPU
// kernels, the CUDA kernels and the serial references, and the analytic FLOP
// and compulsory-byte counts every kernel declares to rtrace.
//
// Inputs come from a hash of the global index, so any rank (or the GPU host
// code) can regenerate any part of a problem without communication, and a
// reference can be computed for any sample point.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define RTD_HD __host__ __device__ inline
#else
#define RTD_HD inline
#endif

namespace rtrace::demo {

// splitmix64 finaliser: a well-mixed 64-bit hash of an index.
RTD_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// Uniform in [0, 1).
RTD_HD double unit_hash(std::uint64_t x) { return static_cast<double>(mix64(x) >> 11) * 0x1.0p-53; }

// ------------------------------------------------------------------ triad
// a[i] = b[i] + s*c[i]: 2 FLOPs (one multiply, one add), 24 bytes (read b, c; write a).
inline constexpr double kTriadScalar = 0.5;
inline constexpr double kTriadFlopsPerElement = 2.0;
inline constexpr double kTriadBytesPerElement = 24.0;
// Cheap to regenerate (bit masks, no division) so init and check stay fast at 400 MB.
RTD_HD double triad_b(std::int64_t i) { return 1.0 + 0.001 * static_cast<double>(i & 1023); }
RTD_HD double triad_c(std::int64_t i) { return 2.0 - 0.0005 * static_cast<double>((i >> 3) & 511); }

// ------------------------------------------------------------------ 3-D grids
// stencil7 and gsrb work on an n^3 interior with one boundary layer: global
// indices 0..n+1 per dimension, x fastest. Boundary values never change.
RTD_HD std::uint64_t grid_key(std::int64_t gi, std::int64_t gj, std::int64_t gk, std::uint64_t salt) {
  return ((static_cast<std::uint64_t>(gk) * 2097143ULL + static_cast<std::uint64_t>(gj)) * 2097151ULL +
          static_cast<std::uint64_t>(gi)) ^ (salt << 58);
}
RTD_HD double grid_init(std::int64_t gi, std::int64_t gj, std::int64_t gk) { return unit_hash(grid_key(gi, gj, gk, 1)); }
RTD_HD double grid_rhs(std::int64_t gi, std::int64_t gj, std::int64_t gk) { return unit_hash(grid_key(gi, gj, gk, 2)) - 0.5; }

// stencil7 (Jacobi, constant coefficients): out = c0*u + c1*(sum of the 6 neighbours).
// FLOPs per interior point: 5 adds (neighbour sum) + 2 multiplies + 1 add = 8.
inline constexpr double kStencilC0 = 0.4;
inline constexpr double kStencilC1 = 0.1;
inline constexpr double kStencilFlopsPerPoint = 8.0;
RTD_HD double stencil7_point(double c, double xm, double xp, double ym, double yp, double zm, double zp) {
  return kStencilC0 * c + kStencilC1 * (xm + xp + ym + yp + zm + zp);
}

// gsrb: red-black Gauss-Seidel for A x = rhs with A x = a*x - b*(sum of the 6 neighbours).
// A point (i,j,k) is red (colour 0) when i+j+k is even. Per updated point:
// 5 adds (sum) + 2 multiplies + 1 subtract (Ax) + 1 subtract (residual) + 1 multiply
// (lambda) + 1 add = 11 FLOPs; the mask flavour multiplies by the mask as well: 12 FLOPs,
// but on every point of both colours.
inline constexpr double kGsrbA = 6.5;
inline constexpr double kGsrbB = 0.95;  // not 1.0: a multiply by 1 would be folded away and skew counted FLOPs
inline constexpr double kGsrbLambda = 1.0 / kGsrbA;
inline constexpr double kGsrbFlopsBranch = 11.0;
inline constexpr double kGsrbFlopsMask = 12.0;
RTD_HD double gsrb_residual(double x, double rhs, double nsum) { return rhs - (kGsrbA * x - kGsrbB * nsum); }
RTD_HD double gsrb_update(double x, double rhs, double nsum) { return x + kGsrbLambda * gsrb_residual(x, rhs, nsum); }
RTD_HD double gsrb_update_masked(double x, double rhs, double nsum, double mask) {
  return x + mask * kGsrbLambda * gsrb_residual(x, rhs, nsum);
}

// ------------------------------------------------------------------ spmv
// A generated CSR matrix: row i holds 8..32 entries (hash of i) on a strided band
// around the diagonal, so row lengths vary (load imbalance for row-per-thread on a GPU).
struct CsrMatrix {
  std::int64_t rows = 0;
  std::vector<std::int64_t> row_ptr;  // rows + 1
  std::vector<std::int32_t> col;      // nnz
  std::vector<double> val;            // nnz
  std::int64_t nnz() const { return static_cast<std::int64_t>(col.size()); }
};
CsrMatrix make_csr_matrix(std::int64_t rows);   // OpenMP-parallel generation
RTD_HD double spmv_x(std::int64_t j) { return 0.5 + unit_hash(static_cast<std::uint64_t>(j) ^ (3ULL << 58)); }
// FLOPs: 2 per non-zero. Compulsory bytes: values + column indices + row pointers
// + x (read once) + y (written once).
inline double spmv_flops(const CsrMatrix& m) { return 2.0 * static_cast<double>(m.nnz()); }
inline double spmv_bytes(const CsrMatrix& m) {
  return 12.0 * static_cast<double>(m.nnz()) + 8.0 * static_cast<double>(m.rows + 1) + 16.0 * static_cast<double>(m.rows);
}

// ------------------------------------------------------------------ gpp
// A BerkeleyGW-like GPP sigma kernel (see ../shared/seeds: roofline use cases):
//   for n1 < nbands, igp < ngpown, ig < ncouls, iw < nw:
//     mat   = conj(aqsm(n1,ig)) * aqsn(n1,igp) * vcoul(ig)
//     wdiff = wx(n1,iw) - wtilde(igp,ig);  delw = wtilde / wdiff;  sch = delw * eps(igp,ig)
//     cden  = wx^2 - wtilde^2;             ssx  = Omega2 / cden
//     ssx   = 0 if wx < 0 and |ssx| > ssxcut*|eps|
//     sch_sum(iw) += mat*sch;  ssx_sum(iw) += mat*ssx
// Complex arithmetic is spelled out (no std::complex) so the FLOP counts below are
// exactly what the code executes, on the CPU and on the GPU alike.
struct Cplx {
  double re, im;
};
RTD_HD Cplx cadd(Cplx a, Cplx b) { return {a.re + b.re, a.im + b.im}; }                             // 2
RTD_HD Cplx cmul(Cplx a, Cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }  // 6
RTD_HD Cplx conj(Cplx a) { return {a.re, -a.im}; }                                                  // 0
RTD_HD Cplx cscale(Cplx a, double s) { return {a.re * s, a.im * s}; }                               // 2
RTD_HD Cplx csquare(Cplx a) { return {a.re * a.re - a.im * a.im, 2.0 * (a.re * a.im)}; }          // 5
RTD_HD double cnorm2(Cplx a) { return a.re * a.re + a.im * a.im; }                                 // 3
// Textbook complex division with two divides: 3 + 2*(3 + 1) = 11 FLOPs.
RTD_HD Cplx cdiv(Cplx p, Cplx q) {
  const double d = cnorm2(q);
  return {(p.re * q.re + p.im * q.im) / d, (p.im * q.re - p.re * q.im) / d};
}
// real / complex: 3 + 2*(1 + 1) = 7 FLOPs.
RTD_HD Cplx rdiv(double p, Cplx q) {
  const double d = cnorm2(q);
  return {(p * q.re) / d, -(p * q.im) / d};
}
RTD_HD double cabs(Cplx a) { return sqrt(cnorm2(a)); }  // 4 (sqrt counted as one FLOP)

inline constexpr int kGppNw = 3;
inline constexpr double kGppOmega2 = 0.7;
inline constexpr double kGppSsxCut = 1.3;
inline constexpr double kGppSsxCut2 = kGppSsxCut * kGppSsxCut;
// FLOPs (divide and sqrt count one each):
//   mat 8; per iw, textbook: wdiff 1 + delw 11 + sch 6 + cden 7 + ssx 7 + cutoff 5+4 + sums 16 = 57
//   per iw, divides replaced (1/x once, then multiplies; |x| > c as x^2 > c^2):
//     wdiff 1 + delw 4+8 + sch 6 + cden 7 + ssx 4+2 + cutoff 4+3 + sums 16 = 55
inline constexpr double kGppFlopsMat = 8.0;
inline constexpr double kGppFlopsTermNaive = 57.0;
inline constexpr double kGppFlopsTermFast = 55.0;

RTD_HD Cplx gpp_mat(Cplx aqsm, Cplx aqsn, double vcoul) { return cscale(cmul(conj(aqsm), aqsn), vcoul); }

// One (n1, igp, ig, iw) term, textbook form. Both products are always computed
// (no short-circuit) so the work does not depend on the data.
RTD_HD void gpp_term_naive(Cplx mat, double wx, Cplx wt, Cplx eps, Cplx& sch_sum, Cplx& ssx_sum) {
  const Cplx wdiff{wx - wt.re, -wt.im};
  const Cplx delw = cdiv(wt, wdiff);
  const Cplx sch = cmul(delw, eps);
  const Cplx wt2 = csquare(wt);
  const Cplx cden{wx * wx - wt2.re, -wt2.im};
  Cplx ssx = rdiv(kGppOmega2, cden);
  const double cut = kGppSsxCut * cabs(eps);
  const bool drop = (wx < 0.0) & (cabs(ssx) > cut);
  if (drop) ssx = Cplx{0.0, 0.0};
  sch_sum = cadd(sch_sum, cmul(mat, sch));
  ssx_sum = cadd(ssx_sum, cmul(mat, ssx));
}

// The same term with divides replaced by one reciprocal and multiplies, and
// |ssx| > cut replaced by |ssx|^2 > cut^2 (seed steps v7 and v8).
RTD_HD void gpp_term_fast(Cplx mat, double wx, Cplx wt, Cplx eps, Cplx& sch_sum, Cplx& ssx_sum) {
  const Cplx wdiff{wx - wt.re, -wt.im};
  const double rw = 1.0 / cnorm2(wdiff);
  const Cplx delw = cscale(cmul(wt, conj(wdiff)), rw);
  const Cplx sch = cmul(delw, eps);
  const Cplx wt2 = csquare(wt);
  const Cplx cden{wx * wx - wt2.re, -wt2.im};
  const double rc = kGppOmega2 / cnorm2(cden);
  Cplx ssx{cden.re * rc, -cden.im * rc};
  const double cut2 = kGppSsxCut2 * cnorm2(eps);
  const bool drop = (wx < 0.0) & (cnorm2(ssx) > cut2);
  if (drop) ssx = Cplx{0.0, 0.0};
  sch_sum = cadd(sch_sum, cmul(mat, sch));
  ssx_sum = cadd(ssx_sum, cmul(mat, ssx));
}

struct GppProblem {
  int nbands = 0, ngpown = 0, ncouls = 0;
  static constexpr int nw = kGppNw;
  std::vector<Cplx> aqsm;     // (n1, ig)  nbands x ncouls
  std::vector<Cplx> aqsn;     // (n1, igp) nbands x ngpown
  std::vector<Cplx> wtilde;   // (igp, ig) ngpown x ncouls
  std::vector<Cplx> eps;      // (igp, ig)
  std::vector<double> vcoul;  // (ig)
  std::vector<double> wx;     // (n1, iw)  nbands x nw   (naive layout)
  std::vector<double> wx_t;   // (iw, n1)  nw x nbands   (swapped, seed step v5)
  double terms() const { return double(nbands) * ngpown * ncouls; }  // (n1, igp, ig) triples
};
GppProblem make_gpp_problem(std::int64_t ncouls);  // nbands = ncouls/16, ngpown = ncouls/8 (at least 1)

struct GppSums {
  Cplx sch[kGppNw];
  Cplx ssx[kGppNw];
};
// FLOPs of one evaluation over n1 in [n1_begin, n1_end) for a variant.
double gpp_flops(const GppProblem& p, int n1_begin, int n1_end, const char* variant);
// Compulsory bytes: every input array read once.
double gpp_bytes(const GppProblem& p, int n1_begin, int n1_end);

// ------------------------------------------------------------------ dgemm
// C += A*B, all n x n row-major: 2 n^3 FLOPs; compulsory bytes 8*(A + B + 2C) = 32 n^2.
RTD_HD double dgemm_a(std::int64_t i, std::int64_t k) { return unit_hash((static_cast<std::uint64_t>(i) << 32) ^ k ^ (4ULL << 58)) - 0.5; }
RTD_HD double dgemm_b(std::int64_t k, std::int64_t j) { return unit_hash((static_cast<std::uint64_t>(k) << 32) ^ j ^ (5ULL << 58)) - 0.5; }
RTD_HD double dgemm_c0(std::int64_t i, std::int64_t j) { return unit_hash((static_cast<std::uint64_t>(i) << 32) ^ j ^ (6ULL << 58)); }

}  // namespace rtrace::demo
