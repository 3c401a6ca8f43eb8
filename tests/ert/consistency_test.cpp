// Physical consistency of ceilings: violations, bounded re-measurement, marks.
#include "rtrace/ert/consistency.hpp"

#include <gtest/gtest.h>

#include "synthetic_samples.hpp"

#include <algorithm>
#include <array>
#include <cmath>

using namespace rtrace::ert;
using rtrace::store::get_str;
using rtrace::store::set_str;

namespace {

using test::bw_sample;

// The FP64 FMA F=64 kernel at `gflops`.
Sample flop_sample(int repeat, double gflops) {
  return test::flop_sample(Precision::FP64, Variant::Fma, 64, repeat, gflops);
}

std::vector<MemoryLevel> levels() { return test::two_cache_levels(); }

// A bandwidth curve with the given L1 and L2 plateaus (DRAM 20 GB/s), 3 repeats.
std::vector<Sample> curve(double l1, double l2) {
  std::vector<Sample> samples;
  for (double ws = 8192; ws <= 64 * 1048576.0; ws *= std::pow(2.0, 0.25)) {
    const double v = ws <= 64 * 1024 ? l1 : ws <= 2 * 1048576 ? l2 : 20;
    for (int r = 0; r < 3; ++r) samples.push_back(bw_sample(ws, r, v));
  }
  for (int r = 0; r < 3; ++r) samples.push_back(flop_sample(r, 50));
  return samples;
}

const rtrace::store::CeilingRow* find(const CeilingAnalysis& a, const std::string& name) {
  for (const auto& c : a.ceilings)
    if (get_str(c.name) == name) return &c;
  return nullptr;
}

}  // namespace

TEST(ErtConsistency, L1BelowL2IsRemeasuredThenMarkedUnreliable) {
  auto samples = curve(150, 220);  // L1d below L2: cannot be
  int remeasures = 0;
  double paused = 0;
  auto remeasure = [&](const RemeasureRequest& r) {
    EXPECT_EQ(r.series, Series::Bandwidth);
    EXPECT_DOUBLE_EQ(r.max_working_set_bytes, 2 * 1048576.0);  // L1d and L2 only: no DRAM-sized working set again
    ++remeasures;
    std::vector<Sample> again;
    for (const auto& x : curve(150, 220))
      if (x.series == Series::Bandwidth) again.push_back(x);
    return again;
  };
  RetryPolicy policy;
  policy.max_remeasures = 2;
  policy.pause_s = 0.25;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, policy, remeasure,
                                         [&](double s) { paused += s; });
  EXPECT_EQ(remeasures, 2);
  EXPECT_EQ(checked.remeasured, 2);
  EXPECT_DOUBLE_EQ(paused, 0.5);
  EXPECT_EQ(samples.size(), curve(150, 220).size());  // the re-measured sizes replaced, the DRAM ones kept
  const auto* l1 = find(checked.analysis, "L1d");
  const auto* l2 = find(checked.analysis, "L2");
  const auto* dram = find(checked.analysis, "DRAM");
  ASSERT_TRUE(l1 && l2 && dram);
  EXPECT_EQ(l1->unreliable, 1);
  EXPECT_EQ(l2->unreliable, 1);
  EXPECT_NE(get_str(l1->unreliable_reason).find("below L2"), std::string::npos) << get_str(l1->unreliable_reason);
  EXPECT_EQ(dram->unreliable, 0);
  EXPECT_EQ(find(checked.analysis, "FP64 FMA")->unreliable, 0);
  ASSERT_FALSE(checked.violations.empty());
}

TEST(ErtConsistency, AViolationNamingDramRemeasuresFromTheShallowestLevelItNames) {
  auto samples = curve(300, 15);  // L2 15 GB/s below DRAM 20
  std::vector<RemeasureRequest> requested;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [&](const RemeasureRequest& r) {
                                           requested.push_back(r);
                                           std::vector<Sample> again;
                                           for (const auto& x : curve(300, 150))
                                             if (r.covers(x)) again.push_back(x);
                                           return again;
                                         },
                                         nullptr);
  ASSERT_EQ(requested.size(), 1u);
  EXPECT_DOUBLE_EQ(requested[0].min_working_set_bytes, 2 * 64 * 1024.0);  // L2's range: above twice L1d
  EXPECT_TRUE(std::isinf(requested[0].max_working_set_bytes));
  EXPECT_TRUE(checked.violations.empty());
}

// A DRAM ceiling above N x one worker's re-measures the DRAM-sized working
// sets only (and the reference's DRAM run), not the caches.
TEST(ErtConsistency, ADramOnlyViolationRemeasuresOnlyTheDramWorkingSets) {
  auto samples = curve(300, 150);  // DRAM 20 GB/s at 2 workers
  for (int r = 0; r < 3; ++r) samples.push_back(test::one_worker(bw_sample(128 * 1048576.0, r, 5)));  // one: 5
  ConsistencyLimits limits;
  limits.workers = 2;
  limits.one_worker_levels = test::two_cache_levels_one_worker();
  std::vector<RemeasureRequest> requested;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, limits, RetryPolicy{},
                                         [&](const RemeasureRequest& r) {
                                           requested.push_back(r);
                                           std::vector<Sample> again;
                                           for (int k = 0; k < 3; ++k)
                                             again.push_back(test::one_worker(bw_sample(128 * 1048576.0, k, 15)));
                                           for (const auto& x : curve(300, 150))
                                             if (r.covers(x)) again.push_back(x);
                                           return again;
                                         },
                                         nullptr);
  ASSERT_EQ(requested.size(), 1u);
  EXPECT_DOUBLE_EQ(requested[0].min_working_set_bytes, 2 * 2 * 1048576.0);  // above twice the L2
  EXPECT_FALSE(requested[0].covers(bw_sample(2 * 1048576.0, 0, 1)));
  EXPECT_TRUE(requested[0].covers(test::one_worker(bw_sample(128 * 1048576.0, 0, 1))));
  EXPECT_TRUE(checked.violations.empty()) << checked.violations[0].reason;
}

TEST(ErtConsistency, ARemeasurementThatComesOutRightIsReliable) {
  auto samples = curve(150, 220);
  int remeasures = 0;
  auto remeasure = [&](const RemeasureRequest&) {
    ++remeasures;
    std::vector<Sample> again;
    for (const auto& x : curve(300, 150))
      if (x.series == Series::Bandwidth) again.push_back(x);
    return again;
  };
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         remeasure, nullptr);
  EXPECT_EQ(remeasures, 1);
  EXPECT_TRUE(checked.violations.empty());
  for (const auto& c : checked.analysis.ceilings) EXPECT_EQ(c.unreliable, 0) << get_str(c.name);
  EXPECT_NEAR(find(checked.analysis, "L1d")->value, 300, 1e-9);
}

TEST(ErtConsistency, ConsistentCurveIsNotRemeasured) {
  auto samples = curve(300, 150);
  int remeasures = 0;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [&](const RemeasureRequest&) {
                                           ++remeasures;
                                           return std::vector<Sample>{};
                                         },
                                         nullptr);
  EXPECT_EQ(remeasures, 0);
  EXPECT_TRUE(checked.violations.empty());
}

TEST(ErtConsistency, FlopsAboveTheTheoreticalPeak) {
  // 2 cores x 256-bit (4 fp64 lanes) x 2 FMA x 2 x 3 GHz = 96 GFLOP/s
  EXPECT_DOUBLE_EQ(theoretical_cpu_peak_gflops(Precision::FP64, 2, 32, 3.0), 96);
  EXPECT_DOUBLE_EQ(theoretical_cpu_peak_gflops(Precision::FP32, 2, 32, 3.0), 192);
  ConsistencyLimits limits;
  limits.fp64_peak_gflops = 96;
  limits.peak_basis = "test";
  auto samples = curve(300, 150);
  for (auto& s : samples)
    if (s.series == Series::Flops) s.flops *= 4;  // 200 GFLOP/s
  int remeasures = 0;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, limits, RetryPolicy{},
                                         [&](const RemeasureRequest& r) {
                                           EXPECT_EQ(r.series, Series::Flops);
                                           ++remeasures;
                                           std::vector<Sample> again;
                                           for (int r = 0; r < 3; ++r) again.push_back(flop_sample(r, 200));
                                           return again;
                                         },
                                         nullptr);
  EXPECT_EQ(remeasures, 2);
  const auto* fma = find(checked.analysis, "FP64 FMA");
  ASSERT_TRUE(fma);
  EXPECT_EQ(fma->unreliable, 1);
  EXPECT_NE(get_str(fma->unreliable_reason).find("above the theoretical peak 96.0"), std::string::npos);
  EXPECT_EQ(find(checked.analysis, "L1d")->unreliable, 0);
}


namespace {

// The four CPU FLOP series at the given rates (3 repeats each).
std::vector<Sample> flop_series(double fp64_fma, double fp64_nofma, double fp32_fma, double fp32_nofma) {
  std::vector<Sample> samples;
  for (int r = 0; r < 3; ++r) {
    samples.push_back(test::flop_sample(Precision::FP64, Variant::Fma, 64, r, fp64_fma));
    samples.push_back(test::flop_sample(Precision::FP64, Variant::NoFma, 64, r, fp64_nofma));
    samples.push_back(test::flop_sample(Precision::FP32, Variant::Fma, 64, r, fp32_fma));
    samples.push_back(test::flop_sample(Precision::FP32, Variant::NoFma, 64, r, fp32_nofma));
  }
  return samples;
}

std::vector<Sample> curve_with_flops(double fp64_fma, double fp64_nofma, double fp32_fma, double fp32_nofma) {
  auto samples = curve(300, 150);
  samples.erase(std::remove_if(samples.begin(), samples.end(), [](const Sample& s) { return s.series == Series::Flops; }),
                samples.end());
  for (auto& s : flop_series(fp64_fma, fp64_nofma, fp32_fma, fp32_nofma)) samples.push_back(s);
  return samples;
}

}  // namespace

// This VM, quiet (`rtrace ert --quick --threads 2`): FMA 1.5x no-FMA, FP32 2x FP64.
TEST(ErtConsistency, FlopRatiosOfAQuietMachinePass) {
  auto samples = curve_with_flops(97.4, 63.1, 191.9, 128.7);
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [&](const RemeasureRequest&) {
                                           ADD_FAILURE() << "nothing to re-measure";
                                           return std::vector<Sample>{};
                                         },
                                         nullptr);
  for (const auto& v : checked.violations) ADD_FAILURE() << v.reason;
}

// Seen under load here: FP64 FMA 22.7 below its no-FMA 63.3, FP32 no-FMA 7.0.
TEST(ErtConsistency, FmaBelowNoFmaIsRemeasuredThenMarkedUnreliable) {
  auto samples = curve_with_flops(22.7, 63.3, 191.9, 128.7);
  int remeasures = 0;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [&](const RemeasureRequest& r) {
                                           EXPECT_EQ(r.series, Series::Flops);
                                           ++remeasures;
                                           return flop_series(22.7, 63.3, 191.9, 128.7);
                                         },
                                         nullptr);
  EXPECT_EQ(remeasures, 2);
  for (const char* name : {"FP64 FMA", "FP64 no-FMA"}) {
    const auto* c = find(checked.analysis, name);
    ASSERT_TRUE(c) << name;
    EXPECT_EQ(c->unreliable, 1) << name;
    EXPECT_NE(get_str(c->unreliable_reason).find("FP64 FMA 22.7 GFLOP/s is 0.4x FP64 no-FMA 63.3"), std::string::npos)
        << get_str(c->unreliable_reason);
  }
  // Only the pair at fault: FP32 (191.9 / 128.7 = 1.5x) is fine.
  EXPECT_EQ(find(checked.analysis, "FP32 FMA")->unreliable, 0);
  EXPECT_EQ(find(checked.analysis, "FP32 no-FMA")->unreliable, 0);
  EXPECT_EQ(find(checked.analysis, "L1d")->unreliable, 0);
}

TEST(ErtConsistency, AFlopRemeasurementThatComesOutRightIsReliable) {
  auto samples = curve_with_flops(97.4, 63.1, 191.9, 7.0);  // FP32 no-FMA disturbed: FMA 27x, FP32 below FP64
  int remeasures = 0;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [&](const RemeasureRequest&) {
                                           ++remeasures;
                                           return flop_series(97.4, 63.1, 191.9, 128.7);
                                         },
                                         nullptr);
  EXPECT_EQ(remeasures, 1);
  EXPECT_TRUE(checked.violations.empty());
  EXPECT_EQ(find(checked.analysis, "FP32 no-FMA")->unreliable, 0);
  EXPECT_NEAR(find(checked.analysis, "FP32 no-FMA")->value, 128.7, 0.1);
}

// ERT's own verdict on a busy machine marks the ceilings, not only a note.
TEST(ErtConsistency, ABusyMachineMarksEveryCeiling) {
  auto samples = curve(300, 150);
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [](const RemeasureRequest&) { return std::vector<Sample>{}; }, nullptr);
  ASSERT_TRUE(checked.violations.empty());
  CeilingAnalysis quiet = checked.analysis;
  EXPECT_FALSE(mark_if_disturbed(quiet, 650, 162));  // 24.9%: redone and replaced, the samples are clean
  for (const auto& c : quiet.ceilings) EXPECT_EQ(c.unreliable, 0) << get_str(c.name);
  CeilingAnalysis busy = checked.analysis;
  EXPECT_TRUE(mark_if_disturbed(busy, 650, 308));
  ASSERT_FALSE(busy.ceilings.empty());
  for (const auto& c : busy.ceilings) {
    EXPECT_EQ(c.unreliable, 1) << get_str(c.name);
    EXPECT_NE(get_str(c.unreliable_reason).find("busy machine: 308 of 650 runs were disturbed"), std::string::npos);
  }
  EXPECT_NE(busy.notes.back().find("unreliable on a machine this busy"), std::string::npos);
}

// A ceiling with a reason already (the 2-rank DRAM below the 1-rank one) that a
// busy machine marks too: the two reasons overflow the file's field (320 bytes) and
// the stored text ends between words (issue 30: "measured on a busy mac)").
TEST(ErtConsistency, ReasonsThatOverflowTheFieldEndBetweenWords) {
  auto samples = curve(300, 150);
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [](const RemeasureRequest&) { return std::vector<Sample>{}; }, nullptr);
  ASSERT_FALSE(checked.analysis.ceilings.empty());
  CeilingAnalysis busy = checked.analysis;
  const std::string first =
      "DRAM 14.3 GB/s at 2 ranks below 39.2 GB/s at 1 rank (the aggregate bandwidth fell); DRAM 14.3 GB/s, 0.37x "
      "the 39.2 measured on this machine on 2026-11-28 (the machine was slower or busier now); one worker's DRAM "
      "26.1 GB/s above the 2-worker aggregate";
  set_str(busy.ceilings[0].unreliable_reason, first);
  busy.ceilings[0].unreliable = 1;
  ASSERT_TRUE(mark_if_disturbed(busy, 650, 308));
  const std::string reason = get_str(busy.ceilings[0].unreliable_reason);
  const std::string full = first + "; measured on a busy machine: 308 of 650 runs were disturbed by other processes "
                                   "(threads preempted)";
  ASSERT_GT(full.size(), sizeof busy.ceilings[0].unreliable_reason - 1);
  ASSERT_GE(reason.size(), 4u);
  EXPECT_EQ(reason.substr(reason.size() - 3), "...") << reason;
  const std::string kept = reason.substr(0, reason.size() - 3);
  ASSERT_EQ(full.compare(0, kept.size(), kept), 0) << reason;
  EXPECT_EQ(full[kept.size()], ' ') << "a word was cut: " << reason;
  EXPECT_EQ(std::count(kept.begin(), kept.end(), '('), std::count(kept.begin(), kept.end(), ')')) << reason;
}

// Issue 29: on a busy machine a re-measurement was as disturbed as the run it
// replaced, and counted sweeps spent minutes re-measuring. A run that was
// busy (over a quarter of its runs redone) re-measures nothing: what violates
// a check is marked at once, and the note says why it was not re-measured.
TEST(ErtConsistency, ABusyMachineIsMarkedNotRemeasured) {
  auto samples = curve(150, 220);  // L1d below L2
  int remeasures = 0, pauses = 0;
  RetryPolicy policy;
  policy.busy = "308 of 650 runs redone";
  auto checked = derive_checked_ceilings(
      samples, levels(), PlateauOptions{}, ConsistencyLimits{}, policy,
      [&](const RemeasureRequest&) {
        ++remeasures;
        return std::vector<Sample>{};
      },
      [&](double) { ++pauses; });
  EXPECT_EQ(remeasures, 0);
  EXPECT_EQ(pauses, 0);
  EXPECT_EQ(checked.remeasured, 0);
  const auto* l1 = find(checked.analysis, "L1d");
  ASSERT_TRUE(l1);
  EXPECT_EQ(l1->unreliable, 1);
  EXPECT_NE(get_str(l1->unreliable_reason).find("L1d 150.0 GB/s below L2 220.0 GB/s"), std::string::npos);
  bool said = false;
  for (const auto& n : checked.analysis.notes)
    said |= n.find("not re-measured: the machine was busy, 308 of 650 runs redone") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_TRUE(machine_was_busy(650, 163));
  EXPECT_FALSE(machine_was_busy(650, 162));
}

// ---- absolute plausibility (issue 23): the one-worker bound, the
// theoretical peaks, the tolerance from the repeats' own spread.

namespace {

using test::ceiling_row;

// The FP64 FMA family at `gflops` (F = 256, 512, 1024), 3 repeats; the
// one-worker reference's when `reference`.
std::vector<Sample> fp64_fma(double gflops, bool reference) {
  std::vector<Sample> out;
  for (int r = 0; r < 3; ++r)
    for (int f : {256, 512, 1024}) {
      Sample s = test::flop_sample(Precision::FP64, Variant::Fma, f, r, gflops);
      out.push_back(reference ? test::one_worker(s) : s);
    }
  return out;
}

bool mentions(const std::vector<Violation>& v, const std::string& text) {
  return std::any_of(v.begin(), v.end(), [&](const Violation& x) { return x.reason.find(text) != std::string::npos; });
}

}  // namespace

TEST(ErtPlausibility, ToleranceComesFromTheRepeatsSpread) {
  ConsistencyLimits limits;
  const auto tight = ceiling_row("L1d", "bandwidth", 100, 99.5, 100.5);
  const auto noisy = ceiling_row("L2", "bandwidth", 100, 85, 115);
  EXPECT_NEAR(relative_spread(tight), 0.01, 1e-12);
  EXPECT_NEAR(relative_spread(noisy), 0.30, 1e-12);
  EXPECT_NEAR(noise_tolerance(tight, tight, limits), limits.tolerance_floor + 0.02, 1e-12);
  EXPECT_NEAR(noise_tolerance(tight, noisy, limits), limits.tolerance_floor + 0.31, 1e-12);
  EXPECT_DOUBLE_EQ(noise_tolerance(noisy, noisy, limits), limits.tolerance_cap);
  // No spread known (files before min/max): the floor.
  auto unknown = tight;
  unknown.min = unknown.max = std::nan("");
  EXPECT_DOUBLE_EQ(noise_tolerance(unknown, unknown, limits), limits.tolerance_floor);
}

// One thread on this VM (2026-11-27, quick): L1 ~ L2 ~ L3 within their
// repeats. Not a violation, whichever way the medians fall.
TEST(ErtPlausibility, OneThreadWithFlatCachesPasses) {
  std::vector<rtrace::store::CeilingRow> rows = {ceiling_row("L1d", "bandwidth", 128.8, 128.6, 131.3),
                                                 ceiling_row("L2", "bandwidth", 131.0, 125.5, 131.0),
                                                 ceiling_row("L3", "bandwidth", 128.0, 122.6, 129.5),
                                                 ceiling_row("DRAM", "bandwidth", 46.2, 45.3, 51.6)};
  EXPECT_TRUE(check_consistency(rows, ConsistencyLimits{}).empty());
  // Tight repeats and L2 15 % above L1 is a real inversion...
  rows[1] = ceiling_row("L2", "bandwidth", 148.0, 147.5, 148.5);
  EXPECT_TRUE(mentions(check_consistency(rows, ConsistencyLimits{}), "L1d 128.8 GB/s below L2 148.0"));
  // ...but not when the repeats themselves spread that much.
  rows[1] = ceiling_row("L2", "bandwidth", 148.0, 120.0, 150.0);
  EXPECT_TRUE(check_consistency(rows, ConsistencyLimits{}).empty());
}

TEST(ErtPlausibility, NWorkersBetweenOneAndNTimesOneWorker) {
  ConsistencyLimits limits;
  limits.workers = 2;
  // This VM, 2 threads and 1 (2026-11-27): each ceiling 1x-2x one worker's.
  const std::vector<rtrace::store::CeilingRow> one = {
      ceiling_row("L1d", "bandwidth", 128.8, 128.6, 131.3), ceiling_row("DRAM", "bandwidth", 46.2, 45.3, 51.6),
      ceiling_row("FP64 FMA", "compute", 58.7, 58.2, 59.0, "fp64", "fma")};
  std::vector<rtrace::store::CeilingRow> two = {
      ceiling_row("L1d", "bandwidth", 259.3, 256.1, 261.5), ceiling_row("DRAM", "bandwidth", 56.3, 55.2, 56.8),
      ceiling_row("FP64 FMA", "compute", 114.8, 112.4, 116.4, "fp64", "fma")};
  EXPECT_TRUE(check_consistency(two, limits, one).empty());
  // Issue 23: FLOPs over wake-up time, 1.0 GFLOP/s at 2 threads.
  two[2] = ceiling_row("FP64 FMA", "compute", 1.0, 1.0, 1.1, "fp64", "fma");
  auto v = check_consistency(two, limits, one);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].series, Series::Flops);
  EXPECT_EQ(v[0].ceilings, std::vector<std::string>{"FP64 FMA"});
  EXPECT_NE(v[0].reason.find("FP64 FMA 1.0 GFLOP/s at 2 workers below 1 worker's 58.7 (tolerance"), std::string::npos)
      << v[0].reason;
  // Above N times one worker: counted FLOPs or bytes that did not happen.
  two[2] = ceiling_row("FP64 FMA", "compute", 114.8, 112.4, 116.4, "fp64", "fma");
  two[0] = ceiling_row("L1d", "bandwidth", 400.0, 398.0, 401.0);
  v = check_consistency(two, limits, one);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].series, Series::Bandwidth);
  EXPECT_NE(v[0].reason.find("L1d 400.0 GB/s at 2 workers above 2 x 1 worker's 128.8"), std::string::npos)
      << v[0].reason;
  // Just below one worker, within the repeats' noise: fine.
  two[0] = ceiling_row("L1d", "bandwidth", 125.0, 120.0, 131.0);
  EXPECT_TRUE(check_consistency(two, limits, one).empty());
  // One worker's partition has no bound.
  limits.workers = 1;
  two[2] = ceiling_row("FP64 FMA", "compute", 1.0, 1.0, 1.1, "fp64", "fma");
  EXPECT_TRUE(check_consistency(two, limits, one).empty());
}

// End to end on samples: the reference samples are measured in the same run;
// a ceiling below them is re-measured with them, then marked with the numbers.
TEST(ErtPlausibility, ACeilingBelowOneWorkerIsRemeasuredThenMarkedUnreliable) {
  auto samples = curve(300, 150);
  samples.erase(std::remove_if(samples.begin(), samples.end(), [](const Sample& s) { return s.series == Series::Flops; }),
                samples.end());
  for (auto& s : fp64_fma(1.0, false)) samples.push_back(s);
  for (auto& s : fp64_fma(58.0, true)) samples.push_back(s);
  ConsistencyLimits limits;
  limits.workers = 2;
  limits.one_worker_levels = test::two_cache_levels_one_worker();
  int remeasures = 0;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, limits, RetryPolicy{},
                                         [&](const RemeasureRequest& r) {
                                           EXPECT_EQ(r.series, Series::Flops);
                                           ++remeasures;
                                           auto again = fp64_fma(1.0, false);
                                           for (auto& s : fp64_fma(58.0, true)) again.push_back(s);
                                           for (const auto& s : again) EXPECT_TRUE(r.covers(s));
                                           return again;
                                         },
                                         nullptr);
  EXPECT_EQ(remeasures, 2);
  // The reference is not a ceiling of the partition; it is reported beside it.
  const auto* fma = find(checked.analysis, "FP64 FMA");
  ASSERT_TRUE(fma);
  EXPECT_NEAR(fma->value, 1.0, 1e-9);
  ASSERT_EQ(checked.one_worker.size(), 1u);
  EXPECT_NEAR(checked.one_worker[0].value, 58.0, 1e-9);
  EXPECT_EQ(fma->unreliable, 1);
  EXPECT_NE(get_str(fma->unreliable_reason).find("FP64 FMA 1.0 GFLOP/s at 2 workers below 1 worker's 58.0"),
            std::string::npos)
      << get_str(fma->unreliable_reason);
  EXPECT_EQ(find(checked.analysis, "L1d")->unreliable, 0);
}

TEST(ErtPlausibility, OneWorkerBandwidthComesFromTheLevelsRanges) {
  std::vector<Sample> samples;
  for (int r = 0; r < 3; ++r) {
    samples.push_back(test::one_worker(bw_sample(16 * 1024, r, 130 + r)));          // L1d of one worker
    samples.push_back(test::one_worker(bw_sample(256 * 1024, r, 120)));             // L2
    samples.push_back(test::one_worker(bw_sample(128 * 1048576.0, r, 45)));         // DRAM
    samples.push_back(bw_sample(16 * 1024, r, 999));                                // not the reference
  }
  const auto rows = one_worker_ceilings(samples, test::two_cache_levels_one_worker());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(get_str(rows[0].name), "L1d");
  EXPECT_DOUBLE_EQ(rows[0].value, 131);
  EXPECT_DOUBLE_EQ(rows[0].min, 130);
  EXPECT_EQ(get_str(rows[1].name), "L2");
  EXPECT_EQ(get_str(rows[2].name), "DRAM");
  EXPECT_DOUBLE_EQ(rows[2].value, 45);
  // And the partition's own ceilings never see the reference.
  const auto analysis = derive_ceilings(samples, levels(), PlateauOptions{});
  for (const auto& c : analysis.ceilings) EXPECT_GT(c.value, 500) << get_str(c.name);
}

TEST(ErtPlausibility, TheClockOfThePeakFromWhatTheHardwareSays) {
  std::string basis;
  EXPECT_DOUBLE_EQ(peak_clock_ghz(3900000, 3500, 2600, basis), 3.9);
  EXPECT_EQ(basis, "max clock 3.9 GHz (cpufreq)");
  EXPECT_DOUBLE_EQ(peak_clock_ghz(0, 3500, 2600, basis), 3.5);
  EXPECT_EQ(basis, "max clock 3.5 GHz (CPUID 0x16)");
  // A VM: no cpufreq, no leaf 0x16; the nominal clock and a turbo allowance.
  EXPECT_DOUBLE_EQ(peak_clock_ghz(0, 0, 2600, basis), 2.6 * 2.1);
  EXPECT_EQ(basis, "nominal clock 2.6 GHz x 2.1 turbo allowance");
  // An AMD EPYC VM (2026-11-28) reporting 2.6 GHz ran its AVX-512 FMAs at 4.0 GHz:
  // 255.4 GFLOP/s on 2 cores must stay under the bound (1.5x flagged it unreliable).
  EXPECT_GT(theoretical_cpu_peak_gflops(Precision::FP64, 2, 64, peak_clock_ghz(0, 0, 2600, basis)), 255.4 * 1.02);
  EXPECT_DOUBLE_EQ(peak_clock_ghz(0, 0, 0, basis), 0);
  EXPECT_EQ(basis, "");
}

namespace {

// A raw SMBIOS table: type 17 memory devices (width bits, size MiB, speed
// and configured speed MT/s), then the end marker.
std::string dmi_table(const std::vector<std::array<int, 4>>& dimms) {
  std::string t;
  auto u16 = [](std::string& s, std::size_t at, int v) {
    s[at] = char(v & 0xFF);
    s[at + 1] = char((v >> 8) & 0xFF);
  };
  // A type 0 (BIOS) structure with a string first: the parser must skip strings.
  t += std::string("\x00\x04\x00\x00", 4) + "BIOS" + std::string(2, '\0');
  for (const auto& d : dimms) {
    std::string s(0x28, '\0');
    s[0] = 17;
    s[1] = 0x28;
    u16(s, 0x0A, d[0]);
    u16(s, 0x0C, d[1]);
    u16(s, 0x15, d[2]);
    u16(s, 0x20, d[3]);
    t += s + "DIMM" + std::string(1, '\0') + "Vendor" + std::string(2, '\0');
  }
  t += std::string("\x7f\x04\x00\x00", 4) + std::string(2, '\0');
  return t;
}

}  // namespace

TEST(ErtPlausibility, MemoryPeakFromSmbios) {
  std::string basis;
  // Two DDR5-4800 DIMMs running at 4400, one empty slot.
  const double gbs = smbios_memory_peak_gbs(dmi_table({{64, 16384, 4800, 4400}, {64, 16384, 4800, 4400}, {64, 0, 0, 0}}), basis);
  EXPECT_DOUBLE_EQ(gbs, 2 * 4400e6 * 8 / 1e9);
  EXPECT_EQ(basis, "2 DIMMs at 4400 MT/s (SMBIOS)");
  // Without a configured speed, the rated one.
  EXPECT_DOUBLE_EQ(smbios_memory_peak_gbs(dmi_table({{64, 8192, 3200, 0}}), basis), 25.6);
  // A VM's device without speed: unknown, not zero bandwidth.
  EXPECT_DOUBLE_EQ(smbios_memory_peak_gbs(dmi_table({{64, 8192, 0, 0}}), basis), 0);
  EXPECT_NE(basis.find("unknown"), std::string::npos);
  EXPECT_DOUBLE_EQ(smbios_memory_peak_gbs(std::string("\x11\x02", 2), basis), 0);  // truncated: no crash

  ConsistencyLimits limits;
  limits.dram_peak_gbs = 70.4;
  limits.dram_peak_basis = "2 DIMMs at 4400 MT/s (SMBIOS)";
  std::vector<rtrace::store::CeilingRow> rows = {ceiling_row("L3", "bandwidth", 300, 290, 310),
                                                 ceiling_row("DRAM", "bandwidth", 95.0, 94.0, 96.0)};
  auto v = check_consistency(rows, limits);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].reason.find("DRAM 95.0 GB/s above the memory's peak 70.4 (2 DIMMs at 4400 MT/s (SMBIOS))"),
            std::string::npos)
      << v[0].reason;
  rows[1] = ceiling_row("DRAM", "bandwidth", 60.0, 59.0, 61.0);
  EXPECT_TRUE(check_consistency(rows, limits).empty());
}

TEST(ErtPlausibility, ACeilingFromRunsKeptDisturbedIsUnreliable) {
  auto samples = curve(300, 150);
  for (auto& s : samples)
    if (s.series == Series::Flops && s.repeat < 2) s.disturbed = true;  // 2 of 3 repeats
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [&](const RemeasureRequest& r) {
                                           EXPECT_EQ(r.series, Series::Flops);
                                           std::vector<Sample> again;
                                           for (const auto& s : samples)
                                             if (r.covers(s)) again.push_back(s);
                                           return again;
                                         },
                                         nullptr);
  const auto* fma = find(checked.analysis, "FP64 FMA");
  ASSERT_TRUE(fma);
  EXPECT_EQ(fma->unreliable, 1);
  EXPECT_NE(get_str(fma->unreliable_reason).find("2 of 3 repeats kept disturbed runs"), std::string::npos);
  EXPECT_EQ(find(checked.analysis, "L1d")->unreliable, 0);
  // One disturbed repeat of three: the median is an undisturbed one.
  for (auto& s : samples) s.disturbed = s.series == Series::Flops && s.repeat == 0;
  EXPECT_TRUE(check_disturbed(derive_ceilings(samples, levels(), PlateauOptions{})).empty());
}
