// Serial references and input generation for the demo kernels. Every check
// compares a kernel's result with an independent, straightforward computation.
#pragma once

#include "problems.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace rtrace::demo {

using GridPoint = std::array<std::int64_t, 3>;  // global (i, j, k), interior is 1..n

// Point updates of reference work per check: well under a second.
inline constexpr double kReferenceBudget = 4e7;

// Sample points of the n^3 interior whose k lies in [k_lo, k_hi] (a rank's
// slab): corners, centre and hash-chosen points, as many as a budget of
// reference work allows for `cost_per_point` updates each (at least 2).
std::vector<GridPoint> grid_sample_points(std::int64_t n, std::int64_t k_lo, std::int64_t k_hi,
                                          double cost_per_point);

// Value at p after `iters` stencil7 Jacobi sweeps, computed serially on the
// cone of points p depends on (a box of radius iters), not on the whole grid.
double stencil7_reference_point(std::int64_t n, int iters, const GridPoint& p);
double stencil7_reference_cost(std::int64_t n, int iters);
// The same for `iters` red+black GSRB iterations (radius 2*iters + 1).
double gsrb_reference_point(std::int64_t n, int iters, const GridPoint& p);
double gsrb_reference_cost(std::int64_t n, int iters);

// y = A x for rows [row_begin, row_end), serially; `scale` gets sum |a_ij x_j| per row.
void spmv_reference(const CsrMatrix& a, std::int64_t row_begin, std::int64_t row_end, std::vector<double>& y,
                    std::vector<double>& scale);

// GPP sums over n1 in [n1_begin, n1_end) in the textbook form; `scale` gets the
// sum of |terms| (the tolerance scale for each sum).
GppSums gpp_reference(const GppProblem& p, int n1_begin, int n1_end, double& scale);
// Largest relative difference between two sets of sums.
double gpp_compare(const GppSums& got, const GppSums& want, double scale);

// Freivalds check of rows [row_begin, row_end) of C = C0 + iters*A*B (n x n):
// compares C x with C0 x + iters*A(B x) for a fixed vector x. `c_rows` holds
// the rank's rows, row-major. Returns the largest relative error; `bad_row`
// gets the worst row.
double dgemm_check_rows(std::int64_t n, int iters, std::int64_t row_begin, std::int64_t row_end,
                        const double* c_rows, std::int64_t& bad_row);

}  // namespace rtrace::demo
