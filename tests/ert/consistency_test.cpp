// Physical consistency of ceilings: violations, bounded re-measurement, marks.
#include "rtrace/ert/consistency.hpp"

#include <gtest/gtest.h>

#include "synthetic_samples.hpp"

#include <algorithm>
#include <cmath>

using namespace rtrace::ert;
using rtrace::store::get_str;

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

TEST(ErtConsistency, AViolationNamingDramRemeasuresEveryWorkingSet) {
  auto samples = curve(300, 15);  // L2 15 GB/s below DRAM 20
  std::vector<double> requested;
  auto checked = derive_checked_ceilings(samples, levels(), PlateauOptions{}, ConsistencyLimits{}, RetryPolicy{},
                                         [&](const RemeasureRequest& r) {
                                           requested.push_back(r.max_working_set_bytes);
                                           std::vector<Sample> again;
                                           for (const auto& x : curve(300, 150))
                                             if (x.series == Series::Bandwidth) again.push_back(x);
                                           return again;
                                         },
                                         nullptr);
  ASSERT_EQ(requested.size(), 1u);
  EXPECT_TRUE(std::isinf(requested[0]));
  EXPECT_TRUE(checked.violations.empty());
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
