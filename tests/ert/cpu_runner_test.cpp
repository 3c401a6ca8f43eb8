// The CPU runner on this machine's CPUs (short plans: milliseconds).
#include "rtrace/ert/cpu_runner.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>

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

namespace {
long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}
}  // namespace

// Issue 32: the blocks are first-touched as the runs reach them, so the
// working sets a DramSearch skips are never touched (the plan's DRAM range
// first-touched 3 GiB on an Emerald Rapids VM, 4.4 s of a 7 s quick run).
// A search made to end at the first pair skips the 1 GiB point: the process
// never grows by it, and what ran is what `measured` lists.
TEST(CpuRunner, WorkingSetsASearchSkipsAreNeverTouched) {
  auto ranks = make_single_rank_group();
  std::vector<Measurement> plan;
  for (std::int64_t elems : {1 << 14, 1 << 15, 1 << 16, 1 << 27})  // 128 KiB .. 1 GiB per worker
    plan.push_back({Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, elems});
  DramSearch search;
  search.earliest_bytes = 1;
  search.llc_low_bytes = 0;
  search.llc_high_bytes = 1e12;  // every point is "the LLC's"
  search.below_llc = 10;         // and below it
  search.flat_tolerance = 1;     // and flat
  search.points = 2;
  const long before = max_rss_kib();
  const CpuRunResult r = run_cpu_plan(plan, quick_policy(), 1, *ranks, search);
  EXPECT_NEAR(r.dram_start_found_bytes, (1 << 14) * 8.0, 1);
  ASSERT_EQ(r.measured.size(), 2u);
  for (const Sample& s : r.samples) EXPECT_LE(s.elements_per_worker, 1 << 15);
  EXPECT_LT(max_rss_kib() - before, 256 * 1024) << "KiB: the skipped 1 GiB working set was touched";
}
