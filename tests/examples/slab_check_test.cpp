// The demo's stencil checks (examples/src/cpu_common.cpp, SlabCheck): the
// reference is taken after as many sweeps as its budget affords, the values
// are captured after exactly that sweep, and a mismatch names the sweep.
#include "cpu_kernels.hpp"
#include "reference.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rtrace::demo {
namespace {

// A reference whose value tells which point and sweep count it was asked for.
double fake_reference(std::int64_t, int sweeps, const std::array<std::int64_t, 3>& p) {
  return 1000.0 * sweeps + 100.0 * static_cast<double>(p[0]) + 10.0 * static_cast<double>(p[1]) +
         static_cast<double>(p[2]);
}
// Cost of a reference after k sweeps: k^4 point updates (a cone of radius k).
double quartic_cost(std::int64_t, int sweeps) { return 1.0 * sweeps * sweeps * sweeps * sweeps; }
double cheap_cost(std::int64_t, int) { return 1.0; }

// The n^3 grid (one slab, ghosts included) as the kernel would leave it after `sweeps`.
std::vector<double> slab_after(std::int64_t n, int sweeps) {
  const std::int64_t nx = n + 2;
  std::vector<double> slab(static_cast<std::size_t>(nx * nx * nx));
  for (std::int64_t k = 0; k < nx; ++k)
    for (std::int64_t j = 0; j < nx; ++j)
      for (std::int64_t i = 0; i < nx; ++i)
        slab[static_cast<std::size_t>((k * nx + j) * nx + i)] = fake_reference(n, sweeps, {i, j, k});
  return slab;
}

TEST(SlabCheck, AffordableRunsAreCheckedAtTheirEnd) {
  SlabCheck check(8, 0, 8, 30, fake_reference, cheap_cost);
  EXPECT_EQ(check.checked_sweeps(), 30);
  for (int done = 0; done <= 30; ++done) check.capture(slab_after(8, done).data(), done);
  EXPECT_EQ(check.verify("u", false), "");
}

TEST(SlabCheck, LongRunsAreCheckedAfterTheSweepsTheBudgetAffords) {
  const int iters = 1000;  // 2 * 1000^4 point updates: far over the budget
  SlabCheck check(8, 0, 8, iters, fake_reference, quartic_cost);
  const int k = check.checked_sweeps();
  ASSERT_GT(k, 0);
  ASSERT_LT(k, iters);
  EXPECT_LE(2.0 * quartic_cost(8, k), kReferenceBudget);
  EXPECT_GT(2.0 * quartic_cost(8, k + 1), kReferenceBudget);
  // Only the slab after sweep k counts: later states do not overwrite it.
  for (int done = 0; done <= iters; ++done) check.capture(slab_after(8, done).data(), done);
  EXPECT_EQ(check.verify("u", false), "");
  const std::string wrong = check.verify("u", true);
  EXPECT_NE(wrong.find("(after " + std::to_string(k) + " sweeps)"), std::string::npos) << wrong;
}

TEST(SlabCheck, NothingCapturedIsAFailure) {
  SlabCheck check(8, 0, 8, 5, fake_reference, cheap_cost);
  check.capture(slab_after(8, 4).data(), 4);  // not the checked sweep
  EXPECT_NE(check.verify("u", false).find("no values captured after 5 sweeps"), std::string::npos);
}

TEST(SlabCheck, ZeroSweepsChecksTheInitialState) {
  SlabCheck check(8, 0, 8, 0, fake_reference, cheap_cost);
  EXPECT_EQ(check.checked_sweeps(), 0);
  check.capture(slab_after(8, 0).data(), 0);
  EXPECT_EQ(check.verify("u", false), "");
}

}  // namespace
}  // namespace rtrace::demo
