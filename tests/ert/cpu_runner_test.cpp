// The CPU runner on this machine's CPUs (short plans: milliseconds).
#include "rtrace/ert/cpu_runner.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace rtrace::ert;

namespace {

std::vector<Measurement> tiny_plan() {
  return {{Series::Flops, {Precision::FP64, Variant::Fma, 64}, 1024}};
}

TrialPolicy quick_policy() {
  TrialPolicy p;
  p.min_seconds = 1e-4;
  p.repeats = 1;
  return p;
}

}  // namespace

// A re-measurement is a second plan in the same process. The first one pins
// the calling thread (worker 0) to one CPU; the second must still spread its
// workers over every allowed CPU (it put them all on CPU 0, so they ran one
// after the other and every re-measured ceiling was half or less).
TEST(CpuRunner, ASecondPlanStillUsesEveryAllowedCpu) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU";
  auto ranks = make_single_rank_group();
  for (int plan = 0; plan < 2; ++plan) {
    const CpuRunResult r = run_cpu_plan(tiny_plan(), quick_policy(), 2, *ranks);
    ASSERT_EQ(r.thread_cpus.size(), 2u);
    EXPECT_NE(r.thread_cpus[0], r.thread_cpus[1]) << "plan " << plan << ": both workers on CPU " << r.thread_cpus[0];
    EXPECT_EQ(allowed_cpus(), cpus) << "plan " << plan << " left the calling thread pinned";
  }
}

// The one-worker reference runs on thread 0 alone and counts one worker.
TEST(CpuRunner, AOneWorkerMeasurementCountsOneWorker) {
  Measurement m{Series::Flops, {Precision::FP64, Variant::Fma, 64}, 1024};
  m.one_worker = true;
  auto ranks = make_single_rank_group();
  const CpuRunResult r = run_cpu_plan({m}, quick_policy(), 2, *ranks);
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_TRUE(r.samples[0].one_worker);
  EXPECT_EQ(r.samples[0].workers, 1);
  EXPECT_DOUBLE_EQ(r.samples[0].flops, 64.0 * 1024 * double(r.samples[0].trials));
}
