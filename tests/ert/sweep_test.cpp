// The sweep plan and the adaptive-trials controller, driven by synthetic times.
#include "rtrace/ert/sweep.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace rtrace::ert;

namespace {

// A fake device: time = trials * elements * seconds_per_element_trial.
double fake_time(const Measurement& m, std::int64_t trials, double spet = 1e-9) {
  return double(trials) * double(m.elements_per_worker) * spet * m.kernel.flops_per_element;
}

}  // namespace

TEST(SweepController, CalibratesThenKeepsRepeatsLongEnough) {
  std::vector<Measurement> plan = {{Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, 1000},
                                   {Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, 4000}};
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 3;
  SweepController c(plan, policy, 2, 1);
  PlannedRun run;
  int warmups = 0;
  while (c.next(run)) {
    if (run.warmup) ++warmups;
    c.record(fake_time(plan[run.measurement], run.trials));
  }
  ASSERT_EQ(c.samples().size(), 6u);
  for (const Sample& s : c.samples()) {
    EXPECT_GE(s.seconds, policy.min_seconds);
    EXPECT_LE(s.seconds, 6 * policy.min_seconds);
    EXPECT_EQ(s.workers, 2);
    EXPECT_EQ(s.working_set_bytes, s.elements_per_worker * 8 * 2);
    EXPECT_DOUBLE_EQ(s.bytes, 16.0 * s.elements_per_worker * 2 * s.trials);
  }
  EXPECT_EQ(c.samples()[0].repeat, 0);
  EXPECT_EQ(c.samples()[2].repeat, 2);
  // The second measurement is predicted from the first: one warm-up only.
  EXPECT_LE(warmups, 4);
  EXPECT_GE(warmups, 2);
}

TEST(SweepController, PreemptedRunsAreRedone) {
  std::vector<Measurement> plan = {{Series::Flops, {Precision::FP32, Variant::NoFma, 64}, 512}};
  TrialPolicy policy;
  policy.min_seconds = 1e-4;
  policy.repeats = 2;
  SweepController c(plan, policy, 1, 1);
  PlannedRun run;
  int n = 0;
  while (c.next(run)) {
    const bool disturbed = (n++ % 2) == 1;  // every other run preempted
    c.record(fake_time(plan[run.measurement], run.trials) * (disturbed ? 10 : 1), {}, disturbed ? 0.1 : 1.0);
  }
  ASSERT_EQ(c.samples().size(), 2u);
  EXPECT_GT(c.runs_redone(), 0u);
  for (const Sample& s : c.samples()) EXPECT_LT(s.seconds, 10 * policy.min_seconds);
}

TEST(SweepController, GivesUpRedoingAfterTheLimit) {
  std::vector<Measurement> plan = {{Series::Flops, {Precision::FP64, Variant::Fma, 2}, 64}};
  TrialPolicy policy;
  policy.min_seconds = 1e-6;
  policy.repeats = 1;
  policy.max_redo_per_measurement = 3;
  SweepController c(plan, policy, 1, 1);
  PlannedRun run;
  int runs = 0;
  while (c.next(run) && runs < 100) {
    ++runs;
    c.record(1e-3, {}, 0.0);  // always disturbed
  }
  EXPECT_EQ(c.samples().size(), 1u);
  EXPECT_LT(runs, 10);
}

TEST(SweepController, KeepsEveryRanksTime) {
  std::vector<Measurement> plan = {{Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, 100}};
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 1;
  SweepController c(plan, policy, 1, 3);
  PlannedRun run;
  while (c.next(run)) c.record(2e-3, {1e-3, 2e-3, 1.5e-3});
  ASSERT_EQ(c.samples().size(), 1u);
  EXPECT_EQ(c.samples()[0].rank_seconds.size(), 3u);
  EXPECT_EQ(c.samples()[0].ranks, 3);
  EXPECT_DOUBLE_EQ(c.samples()[0].seconds, 2e-3);
  EXPECT_EQ(c.samples()[0].working_set_bytes, 100 * 8 * 3);
}

TEST(CpuPlan, WorkingSetsSpanAFewKiBIntoDramsRange) {
  CpuPlanInputs in;
  in.threads = 2;
  in.llc_capacity_bytes = 105.0 * 1048576;
  auto full = bandwidth_working_sets(in);
  EXPECT_DOUBLE_EQ(full.front(), 2 * 4096.0);
  EXPECT_GE(full.back(), 8 * in.llc_capacity_bytes * 0.999);  // DRAM's range (4x the LLC) swept to twice its start
  // Issue 32: points in DRAM's range (above 4x the LLC: the host's caches a
  // VM does not see), 4 when full, 2 when quick; none just at its start.
  in.quick = true;
  auto quick = bandwidth_working_sets(in);
  EXPECT_LT(quick.size(), full.size());
  auto dram_points = [&](const std::vector<double>& sizes, double start) {
    int n = 0;
    for (double ws : sizes) {
      n += ws > start ? 1 : 0;
      EXPECT_FALSE(ws > start * 0.995 && ws < start * 1.1) << ws << " partly cached, named DRAM";
    }
    return n;
  };
  EXPECT_EQ(dram_points(full, 4 * in.llc_capacity_bytes), 4);
  EXPECT_EQ(dram_points(quick, 4 * in.llc_capacity_bytes), 2);
  // A VM that must sweep further (levels.hpp: one LLC instance per vCPU):
  // its range's start comes with the inputs.
  in.quick = false;
  in.dram_start_bytes = 8 * in.llc_capacity_bytes;
  auto vm = bandwidth_working_sets(in);
  EXPECT_EQ(dram_points(vm, in.dram_start_bytes), 4);
  EXPECT_GE(vm.back(), 16 * in.llc_capacity_bytes * 0.999);
  // A memory cap bounds the sweep.
  in.max_working_set_bytes = 64.0 * 1048576;
  EXPECT_LE(bandwidth_working_sets(in).back(), 64.0 * 1048576 * 1.0001);
}

TEST(CpuPlan, BandwidthSweepThenEveryFlopKernelPerPrecisionAndVariant) {
  CpuPlanInputs in;
  in.threads = 2;
  in.llc_capacity_bytes = 32.0 * 1048576;
  auto plan = make_cpu_plan(in, 64, 128);
  std::size_t bw = 0, flops = 0;
  for (const Measurement& m : plan) {
    EXPECT_EQ(m.elements_per_worker % (m.kernel.precision == Precision::FP64 ? 64 : 128), 0);
    if (m.series == Series::Bandwidth) {
      ++bw;
      EXPECT_EQ(m.kernel.flops_per_element, 1);
    } else {
      ++flops;
      // FLOP kernels run in L1: at most 16 KiB per thread.
      EXPECT_LE(m.elements_per_worker * std::int64_t(element_bytes(m.kernel.precision)), 16384);
    }
  }
  // 2 precisions x 2 variants: 8 low F once, the 3 highest F in 3 groups.
  EXPECT_EQ(flops, 2u * 2u * (8u + 3u * 3u));
  EXPECT_GT(bw, 30u);
}

// Issue 32: a slowdown lasting a third of the run (a host SMT sibling running
// someone else's FMAs) lowered every FLOP ceiling of a quick run measured in
// one block. The kernels the ceilings come from now run at the start, the
// middle and the end of the plan, the one-worker reference before the end,
// each group with its own repeat numbers.
TEST(CpuPlan, TheCeilingsFlopKernelsRunAtTheStartMiddleAndEnd) {
  for (bool quick : {true, false}) {
    CpuPlanInputs in;
    in.threads = 2;
    in.quick = quick;
    in.llc_capacity_bytes = 32.0 * 1048576;
    Measurement reference{Series::Flops, {Precision::FP64, Variant::Fma, 1024}, 64};
    reference.one_worker = true;
    auto plan = make_cpu_plan(in, 64, 128, {reference});
    const int per_group = flop_group_repeats(quick);
    EXPECT_EQ(per_group, quick ? 1 : 2);
    std::vector<std::size_t> at;  // positions of FP64 FMA F=1024
    std::size_t first_bw = plan.size(), last_bw = 0, reference_at = plan.size();
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const Measurement& m = plan[i];
      if (m.one_worker) reference_at = i;
      if (m.series == Series::Bandwidth) first_bw = std::min(first_bw, i), last_bw = i;
      if (m.series == Series::Flops && !m.one_worker && m.kernel.precision == Precision::FP64 &&
          m.kernel.variant == Variant::Fma && m.kernel.flops_per_element == 1024) {
        EXPECT_EQ(m.repeats, per_group);
        EXPECT_EQ(m.first_repeat, int(at.size()) * per_group);
        at.push_back(i);
      }
      if (m.series == Series::Flops && m.kernel.flops_per_element < 256) {
        EXPECT_EQ(m.repeats, 0);
      }
    }
    ASSERT_EQ(at.size(), 3u);
    EXPECT_LT(at[0], first_bw);        // the start
    EXPECT_GT(at[1], last_bw);         // the middle: after the bandwidth sweep
    EXPECT_LT(at[1], reference_at);
    EXPECT_GT(at[2], reference_at);    // the end
    EXPECT_GE(at[2], plan.size() - 12);  // the end group: the last 2 x 2 x 3 measurements
  }
}

// Each measurement keeps its own number of runs and numbers its samples from
// its first repeat.
TEST(SweepController, AMeasurementsRepeatsAndTheirNumbers) {
  Measurement m{Series::Flops, {Precision::FP64, Variant::Fma, 64}, 100};
  m.repeats = 2;
  m.first_repeat = 4;
  std::vector<Measurement> plan = {m, {Series::Flops, {Precision::FP64, Variant::Fma, 64}, 100}};
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 3;
  SweepController c(plan, policy, 1, 1);
  PlannedRun run;
  while (c.next(run)) c.record(fake_time(plan[run.measurement], run.trials));
  ASSERT_EQ(c.samples().size(), 5u);
  EXPECT_EQ(c.samples()[0].repeat, 4);
  EXPECT_EQ(c.samples()[1].repeat, 5);
  EXPECT_EQ(c.samples()[2].repeat, 0);
  EXPECT_EQ(c.samples()[4].repeat, 2);
}

// Under heavy load, once redoing stops, a preempted warm-up lasts far longer
// than the kernel: it must not shorten the kept runs to one trial (whose time
// would then be the threads' start-up skew).
TEST(SweepController, ADisturbedWarmupDoesNotShortenTheRuns) {
  std::vector<Measurement> plan = {{Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, 1000},
                                   {Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, 1000}};
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 2;
  policy.max_redo_per_measurement = 0;
  SweepController c(plan, policy, 1, 1);
  PlannedRun run;
  while (c.next(run)) {
    const bool disturbed = run.measurement == 1 && run.warmup;
    c.record(fake_time(plan[run.measurement], run.trials) * (disturbed ? 50 : 1), {}, disturbed ? 0.0 : 1.0);
  }
  ASSERT_EQ(c.samples().size(), 4u);
  EXPECT_GT(c.samples()[2].trials, c.samples()[0].trials / 2) << "the disturbed warm-up shortened the runs";
}

namespace {

// A worker that takes `latency` seconds to start (a vCPU waking up): the
// span is the kernel's time plus the latency, and so is the start skew.
RunTiming late_start(const Measurement& m, std::int64_t trials, double latency) {
  RunTiming t;
  t.worker_seconds = fake_time(m, trials);
  t.seconds = t.worker_seconds + latency;
  t.start_skew = latency;
  return t;
}

}  // namespace

// Issue 23: a second thread that took a scheduler tick (4 ms) to wake made
// every run last >= 4 ms, so calibration never raised the trial count above
// 1 and the FLOP rate was FLOPs over wake-up time (100x low). Calibration now
// uses the workers' own time, and a run that is mostly skew is never kept as
// an undisturbed sample.
TEST(SweepController, CalibratesOnTheWorkersOwnTimeNotOnAWakeUpLatency) {
  std::vector<Measurement> plan = {{Series::Flops, {Precision::FP64, Variant::Fma, 64}, 2048}};
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 3;
  SweepController c(plan, policy, 2, 1);
  PlannedRun run;
  int runs = 0;
  std::int64_t first_kept_trials = 0;
  while (c.next(run) && runs++ < 1000) {
    if (!run.warmup && first_kept_trials == 0) first_kept_trials = run.trials;
    c.record(late_start(plan[run.measurement], run.trials, 4e-3));
  }
  // The calibration alone (the warm-ups) found the trials: the first run to
  // keep is already long enough, before any skew redo raised them.
  EXPECT_GE(fake_time(plan[0], first_kept_trials), policy.min_seconds) << first_kept_trials << " trials";
  ASSERT_EQ(c.samples().size(), 3u);
  for (const Sample& s : c.samples()) {
    EXPECT_GE(fake_time(plan[0], s.trials), policy.min_seconds) << "calibrated on the span, not the kernel";
    // 4 ms of skew is never a small part of a run of <= max_seconds_per_run:
    // redone until the budget is spent, then kept but marked disturbed.
    EXPECT_TRUE(s.disturbed);
  }
  EXPECT_GT(c.runs_skewed(), 0u);
  EXPECT_EQ(c.kept_disturbed(), 3u);
}

TEST(SweepController, ASkewedRunIsRedoneWithMoreTrials) {
  std::vector<Measurement> plan = {{Series::Flops, {Precision::FP64, Variant::Fma, 64}, 2048}};
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 3;
  SweepController c(plan, policy, 2, 1);
  PlannedRun run;
  std::vector<std::int64_t> kept_trials;
  std::int64_t skewed_trials = 0;
  bool skew_done = false;
  while (c.next(run)) {
    // The first kept run starts 1 ms apart (a one-off wake-up), the others together.
    const bool skew = !run.warmup && !skew_done;
    if (skew) skewed_trials = run.trials;
    skew_done = skew_done || skew;
    c.record(late_start(plan[run.measurement], run.trials, skew ? 1e-3 : 1e-6));
  }
  ASSERT_EQ(c.samples().size(), 3u);
  EXPECT_EQ(c.runs_skewed(), 1u);
  EXPECT_EQ(c.runs_redone(), 1u);
  for (const Sample& s : c.samples()) {
    EXPECT_FALSE(s.disturbed);
    EXPECT_GE(s.trials, 2 * skewed_trials) << "redone with the same trials";
    EXPECT_LE(fake_time(plan[0], s.trials), policy.max_seconds_per_run);
  }
}

TEST(SweepController, AWarmUpIsNotCheckedForSkew) {
  std::vector<Measurement> plan = {{Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, 4096}};
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 2;
  SweepController c(plan, policy, 2, 1);
  PlannedRun run;
  while (c.next(run)) c.record(late_start(plan[run.measurement], run.trials, run.warmup ? 1e-3 : 0));
  EXPECT_EQ(c.runs_skewed(), 0u);
  EXPECT_EQ(c.samples().size(), 2u);
}

// The one-worker reference (consistency.hpp): thread 0 of rank 0 alone.
TEST(SweepController, AOneWorkerMeasurementCountsOneWorker) {
  Measurement m{Series::Flops, {Precision::FP32, Variant::NoFma, 256}, 4096};
  m.one_worker = true;
  TrialPolicy policy;
  policy.min_seconds = 1e-4;
  policy.repeats = 1;
  SweepController c({m}, policy, 4, 2);
  PlannedRun run;
  while (c.next(run)) c.record(fake_time(m, run.trials), {fake_time(m, run.trials), 0.0});
  ASSERT_EQ(c.samples().size(), 1u);
  const Sample& s = c.samples()[0];
  EXPECT_EQ(s.workers, 1);
  EXPECT_EQ(s.ranks, 1);
  EXPECT_EQ(s.working_set_bytes, 4096 * 4);
  EXPECT_DOUBLE_EQ(s.flops, 256.0 * 4096 * double(s.trials));
  EXPECT_EQ(s.rank_seconds.size(), 1u);
}

// Issue 32: a cache's bandwidth falls across its range (two Zen 5 workers:
// 1050 GB/s at 4 KiB each in L1, 780 at 24 KiB). The partition's ceiling is
// the best over its plateau, so one worker's is measured at three working
// sets across the range (L1: from the sweep's smallest, 4 KiB, to half the
// cache), or the one-worker bound (the partition at most 2x one worker)
// fails in every other run.
TEST(CpuPlan, OneWorkerCachesAtThreeWorkingSetsAcrossTheirRange) {
  const std::vector<MemoryLevel> levels = {{"L1d", 48 * 1024.0, 48 * 1024}, {"L2", 1048576.0, 1048576},
                                           {"DRAM", INFINITY, -1, 4.0}};
  const auto sizes = one_worker_working_sets(levels, 0);
  ASSERT_EQ(sizes.size(), 7u);  // L1d and L2 three each, DRAM one
  EXPECT_DOUBLE_EQ(sizes[0], 4096);
  EXPECT_DOUBLE_EQ(sizes[2], 24 * 1024);
  EXPECT_GT(sizes[1], sizes[0]);
  EXPECT_LT(sizes[1], sizes[2]);
  for (int k = 3; k < 6; ++k) {
    EXPECT_GT(sizes[k], 2 * 48 * 1024.0);  // inside L2's range
    EXPECT_LT(sizes[k], 1048576.0);
  }
  EXPECT_DOUBLE_EQ(sizes[6], 1.25 * 4 * 1048576);
}

namespace {

constexpr double kMiB = 1048576.0;

// A partition of two workers sweeping FP64 F=1 over `sizes_mib` (total),
// then one worker at `one_worker_mib`, on a machine whose total bandwidth at
// a working set is `gbs(ws_mib)` (one worker: half of it). Returns the
// controller after the plan ran.
template <class Curve>
SweepController run_bandwidth_curve(const std::vector<double>& sizes_mib, double one_worker_mib, Curve gbs,
                                    const DramSearch& search) {
  std::vector<Measurement> plan;
  for (double mib : sizes_mib)
    plan.push_back({Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, std::int64_t(mib * kMiB / 8 / 2)});
  Measurement one{Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, std::int64_t(one_worker_mib * kMiB / 8)};
  one.one_worker = true;
  plan.push_back(one);
  TrialPolicy policy;
  policy.min_seconds = 1e-3;
  policy.repeats = 3;
  SweepController c(plan, policy, 2, 1, search);
  PlannedRun run;
  while (c.next(run)) {
    const Measurement& m = c.plan()[run.measurement];
    const int workers = m.one_worker ? 1 : 2;
    const double ws_mib = double(m.elements_per_worker) * 8 * workers / kMiB;
    const double bytes = 16.0 * double(m.elements_per_worker) * workers * double(run.trials);
    c.record(bytes / (gbs(ws_mib) * (m.one_worker ? 0.5 : 1.0) * 1e9));
  }
  return c;
}

DramSearch search_beyond(double llc_mib, double plan_dram_start_mib, int points) {
  DramSearch s;
  s.earliest_bytes = std::sqrt(2.0) * llc_mib * kMiB;
  s.latest_bytes = plan_dram_start_mib * kMiB;
  s.llc_low_bytes = 8 * kMiB;
  s.llc_high_bytes = llc_mib * kMiB;
  s.points = points;
  s.block_elements = 8;
  return s;
}

const std::vector<double> kSizesMib = {16, 32, 64, 128, 181, 256, 362, 512, 724, 1024, 1448, 2048, 2435, 2896};

}  // namespace

// Issue 32: on an Emerald Rapids VM the guest's 260 MiB L3 is the host's,
// shared by both vCPUs: the bandwidth is DRAM's (57-60 GB/s against the L3's
// 100) from about 1.5x it on, and the plan's DRAM range (4x the L3 per vCPU,
// 2 GiB) first-touched 3 GiB, 4.4 s of a 7 s quick run. The sweep finds
// where the bandwidth stopped falling, runs the points DRAM's range needs
// there and skips the larger ones; the one-worker DRAM point is cut to the
// found start.
TEST(SweepController, FindsWhereDramStartsAndSkipsTheLargerWorkingSets) {
  auto emerald_rapids = [](double mib) {
    return mib <= 128 ? 100.0 : mib <= 181 ? 80.0 : mib <= 256 ? 70.0 : mib <= 362 ? 64.0 : mib <= 512 ? 60.0 : 59.0;
  };
  for (int points : {2, 4}) {
    SweepController c = run_bandwidth_curve(kSizesMib, 1300, emerald_rapids, search_beyond(260, 2080, points));
    EXPECT_NEAR(c.dram_start_found_bytes(), 512 * kMiB, 1 * kMiB) << points << " points";
    EXPECT_NEAR(c.llc_gbytes_per_s(), 100.0, 1.0);
    double largest = 0, one_worker = 0;
    for (const Sample& s : c.samples()) {
      if (s.one_worker) one_worker = double(s.working_set_bytes);
      else largest = std::max(largest, double(s.working_set_bytes));
    }
    // 512 and 724 MiB (362 fell 6% to 512: still falling); full: two more.
    EXPECT_NEAR(largest, (points == 2 ? 724 : 1448) * kMiB, 1 * kMiB) << points << " points";
    EXPECT_NEAR(one_worker, 512 * kMiB, 1 * kMiB);
    EXPECT_EQ(c.skipped().size(), points == 2 ? 5u : 3u);
  }
}

// The Zen 5 VM of issue 32: the guest is told of a 32 MiB L3, each vCPU has
// a host cache of about 96 MiB, and two stream 192 MiB at the L3's 125 GB/s.
// That plateau is flat but as high as the LLC's: a hidden cache, not DRAM.
// DRAM's range starts where the bandwidth is flat below 0.8x the LLC's.
TEST(SweepController, AFlatPlateauAsHighAsTheLastCachesIsAHiddenCacheNotDram) {
  auto zen5_vm = [](double mib) { return mib <= 192 ? 125.0 : mib <= 256 ? 60.0 : mib <= 362 ? 31.0 : 30.0; };
  SweepController c = run_bandwidth_curve(kSizesMib, 160, zen5_vm, search_beyond(32, 256, 2));
  // 362 -> 512 is flat and low, but past the plan's own start (256): the plan's range stands.
  EXPECT_EQ(c.dram_start_found_bytes(), 0);
  EXPECT_TRUE(c.skipped().empty());
  // With the plan's start further out the search finds it at 362 MiB, never in the hidden cache.
  SweepController later = run_bandwidth_curve(kSizesMib, 160, zen5_vm, search_beyond(32, 2048, 2));
  EXPECT_NEAR(later.dram_start_found_bytes(), 362 * kMiB, 1 * kMiB);
  for (const Sample& s : later.samples())
    if (s.one_worker) {
      EXPECT_NEAR(double(s.working_set_bytes), 160 * kMiB, 1 * kMiB);  // below the found start: kept
    }
}

// Outside a VM (no search) the plan runs as it is.
TEST(SweepController, WithoutASearchEveryWorkingSetRuns) {
  auto curve = [](double mib) { return mib <= 128 ? 100.0 : 59.0; };
  SweepController c = run_bandwidth_curve(kSizesMib, 1300, curve, DramSearch{});
  EXPECT_EQ(c.dram_start_found_bytes(), 0);
  EXPECT_TRUE(c.skipped().empty());
  EXPECT_EQ(c.samples().size(), (kSizesMib.size() + 1) * 3);
}
