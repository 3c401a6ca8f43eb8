// The roofline model and the step classifier on numbers with known answers.
#include "rtrace/analysis/model.hpp"

#include <gtest/gtest.h>

using namespace rtrace::analysis;

namespace {

Ceiling bw(const std::string& name, double v) { return Ceiling{name, "bandwidth", "", "", "GB/s", v, v, v}; }
Ceiling peak(const std::string& name, const std::string& prec, const std::string& var, double v) {
  return Ceiling{name, "compute", prec, var, "GFLOP/s", v, v, v};
}
CeilingSet cpu(double dram, double fp64) {
  return CeilingSet({bw("L1d", 1000), bw("L2", 500), bw("L3", 200), bw("DRAM", dram), peak("FP64 FMA", "fp64", "fma", fp64),
                     peak("FP64 no-FMA", "fp64", "nofma", fp64 / 2)});
}
KernelAtPoint kernel(double flops, double dram_bytes, double time_s) {
  KernelAtPoint k;
  k.name = "k";
  k.kind = "region";
  k.counts.flops_fp64 = flops;
  k.counts.bytes[3] = dram_bytes;
  k.time_s = k.counts_time_s = k.mean_rank_time_s = time_s;
  k.imbalance = 0;
  return k;
}
StepDiagnosis step(const KernelAtPoint& a, const KernelAtPoint& b, const CeilingSet& ca, const CeilingSet& cb,
                   double c1 = 1, double c2 = 2) {
  StepEvidence ea, eb;
  ea.imbalance = a.imbalance;
  eb.imbalance = b.imbalance;
  return classify_step(a, b, evaluate(a, ca), evaluate(b, cb), ca, cb, c1, c2, ea, eb, Thresholds{});
}

}  // namespace

TEST(Model, EvaluateFindsBindingLevelAndEfficiency) {
  // F = 1e9, B_DRAM = 1e8 -> AI 10; DRAM 10 GB/s -> bound 100 GFLOP/s < 1000 peak.
  RooflineEval e = evaluate(kernel(1e9, 1e8, 0.02), cpu(10, 1000));
  EXPECT_DOUBLE_EQ(e.ai[3], 10);
  EXPECT_DOUBLE_EQ(e.gflops, 50);
  EXPECT_DOUBLE_EQ(e.bound_gflops, 100);
  EXPECT_DOUBLE_EQ(e.efficiency, 0.5);
  EXPECT_EQ(e.binding, "DRAM");
  EXPECT_EQ(e.peak_name, "FP64 FMA");  // the best non-tensor ceiling of the precision
  // Compute bound when AI is high.
  RooflineEval c = evaluate(kernel(1e12, 1e8, 2), cpu(10, 1000));
  EXPECT_EQ(c.binding, "compute");
  EXPECT_DOUBLE_EQ(c.efficiency, 0.5);
}

TEST(Model, UnavailableCountsStayUnavailable) {
  KernelAtPoint k;
  k.time_s = 1;
  RooflineEval e = evaluate(k, cpu(10, 100));
  EXPECT_FALSE(e.counts_available());
  EXPECT_TRUE(std::isnan(e.gflops));
  EXPECT_TRUE(std::isnan(e.efficiency));
  EXPECT_TRUE(e.binding.empty());
}

TEST(Model, DecompositionIsExact) {
  auto a = kernel(1e9, 1e8, 0.02), b = kernel(1e9, 1.6e8, 0.015);
  auto ca = cpu(10, 1000), cb = cpu(17, 2000);
  StepFactors f = decompose(evaluate(a, ca), evaluate(b, cb), ca, cb);
  ASSERT_EQ(f.basis, "DRAM");
  double s = evaluate(b, cb).gflops / evaluate(a, ca).gflops;
  EXPECT_NEAR(std::log(s), std::log(f.ceiling_ratio) + std::log(f.ai_ratio) + std::log(f.efficiency_ratio), 1e-12);
  EXPECT_NEAR(f.ai_ratio, 1 / 1.6, 1e-12);
  EXPECT_NEAR(f.ceiling_ratio, 1.7, 1e-12);
}

TEST(Model, DramIntensityHalvingIsCacheCapacityAtDram) {
  // Both on the DRAM roof; the ceiling doubles but AI halves: no speedup.
  auto d = step(kernel(1e9, 1e8, 0.01), kernel(1e9, 2e8, 0.01), cpu(10, 1000), cpu(20, 2000));
  EXPECT_EQ(d.diagnosis, "cache-capacity");
  EXPECT_EQ(d.level, "DRAM");
  EXPECT_NEAR(d.factors.ai_ratio, 0.5, 1e-12);
}

TEST(Model, CacheCapacityNamesTheCacheAboveTheLevelWhoseIntensityFell) {
  // DRAM AI halves: the working set no longer fits L3 (the level above DRAM).
  StepDiagnosis d = step(kernel(1e9, 1e8, 0.01), kernel(1e9, 2e8, 0.01), cpu(10, 1000), cpu(20, 2000));
  EXPECT_EQ(d.diagnosis, "cache-capacity");
  EXPECT_EQ(d.level, "DRAM");
  EXPECT_EQ(d.cache, "L3");
  EXPECT_NE(d.explanation.find("no longer fits the L3 as this configuration shares it"), std::string::npos) << d.explanation;
  // A GPU has no L3: above HBM is L2. Above L1 is no cache: "registers" is no level (issue 29).
  CeilingSet gpu({bw("L1", 1000), bw("L2", 500), bw("HBM", 100)});
  EXPECT_EQ(cache_above(3, gpu, gpu), "L2");
  EXPECT_EQ(cache_above(0, gpu, gpu), "");
  EXPECT_EQ(cache_above(2, cpu(10, 1000), cpu(10, 1000)), "L2");
  EXPECT_EQ(cache_above(1, CeilingSet{}, CeilingSet{}), "L1d");  // no ceilings: the canonical names
}

TEST(Model, PinnedAtSublinearCeilingIsBandwidthContention) {
  auto d = step(kernel(1e9, 1e8, 0.01), kernel(1e9, 1e8, 1e9 / 120e9), cpu(10, 1000), cpu(12, 2000));
  EXPECT_EQ(d.diagnosis, "bandwidth-contention");
  EXPECT_EQ(d.level, "DRAM");
  EXPECT_NEAR(d.speedup, 1.2, 1e-9);
  EXPECT_NEAR(d.factors.ceiling_ratio, 1.2, 1e-12);
  EXPECT_NEAR(d.factors.efficiency_ratio, 1.0, 1e-9);
}

TEST(Model, PerfectScalingIsIdeal) {
  auto d = step(kernel(1e9, 1e8, 0.01), kernel(1e9, 1e8, 0.005), cpu(10, 1000), cpu(20, 2000));
  EXPECT_EQ(d.diagnosis, "ideal");
  EXPECT_NEAR(d.step_efficiency, 1, 1e-12);
}

TEST(Model, ComputeBoundOnSublinearPeak) {
  auto d = step(kernel(1e12, 1e8, 1.0), kernel(1e12, 1e8, 1.0 / 1.3), cpu(100, 1000), cpu(200, 1300));
  EXPECT_EQ(d.diagnosis, "compute-bound");
}

TEST(Model, RisingIntensityWithSuperlinearSpeedup) {
  auto d = step(kernel(1e9, 2e8, 0.02), kernel(1e9, 0.5e8, 0.0025), cpu(10, 1000), cpu(20, 2000));
  EXPECT_EQ(d.diagnosis, "superlinear");
  EXPECT_EQ(d.level, "DRAM");
}

TEST(Model, ImbalanceIsNamedForOther) {
  auto a = kernel(1e9, 1e8, 0.01), b = kernel(1e9, 1e8, 0.01);
  b.mean_rank_time_s = 0.00625;
  b.imbalance = 0.6;
  auto d = step(a, b, cpu(10, 1000), cpu(20, 2000));
  EXPECT_EQ(d.diagnosis, "other");
  EXPECT_EQ(d.cause, "imbalance");
}

TEST(Model, FlatTimeWithoutCountsIsSerialFraction) {
  KernelAtPoint a, b;
  a.time_s = a.mean_rank_time_s = 1.0;
  b.time_s = b.mean_rank_time_s = 0.98;
  a.imbalance = b.imbalance = 0;
  auto d = step(a, b, CeilingSet{}, CeilingSet{});
  EXPECT_EQ(d.diagnosis, "other");
  EXPECT_EQ(d.cause, "serial-fraction");
  EXPECT_NEAR(d.karp_flatt, (1 / (1 / 0.98) - 0.5) / 0.5, 1e-12);
}

// A function the counting pass saw but the samples missed at the second point:
// no time, no speedup, so no cause (it was serial-fraction, a guess).
TEST(Model, NoTimeAtAPointNamesNoCause) {
  KernelAtPoint a, b;
  a.time_s = a.mean_rank_time_s = 1.0;
  a.imbalance = b.imbalance = 0;
  auto d = step(a, b, CeilingSet{}, CeilingSet{});
  EXPECT_EQ(d.diagnosis, "other");
  EXPECT_EQ(d.cause, "");
  EXPECT_NE(d.explanation.find("no time at the second point"), std::string::npos) << d.explanation;
}

TEST(Model, SlowerWithMoreConcurrencyIsSlowdownNotSerialFraction) {
  KernelAtPoint a, b;
  a.time_s = a.mean_rank_time_s = 1.0;
  b.time_s = b.mean_rank_time_s = 1.25;  // 2x the workers, 25% slower
  a.imbalance = b.imbalance = 0;
  auto d = step(a, b, CeilingSet{}, CeilingSet{});
  EXPECT_EQ(d.diagnosis, "other");
  EXPECT_EQ(d.cause, "slowdown");
  EXPECT_NEAR(d.speedup, 0.8, 1e-12);
  EXPECT_NE(d.explanation.find("rose 1.25x"), std::string::npos) << d.explanation;
}

TEST(Model, ShortLaunchesAndTailEffect) {
  KernelAtPoint a, b;
  a.kind = b.kind = "gpu-kernel";
  a.time_s = a.mean_rank_time_s = 1.0;
  b.time_s = b.mean_rank_time_s = 0.9;
  StepEvidence ea, eb;
  ea.mean_blocks = eb.mean_blocks = 64;
  ea.sms = 32;
  eb.sms = 66;  // 64 blocks on 66 SMs: one partial wave... fill 97%: no tail effect
  eb.mean_launch_s = 4e-6;
  auto d = classify_step(a, b, {}, {}, {}, {}, 32, 66, ea, eb, Thresholds{});
  EXPECT_EQ(d.cause, "launch-overhead");
  // 100 blocks: two full waves on 50 SMs, but a 52%-full second wave on 66 SMs: no speedup.
  eb.mean_blocks = ea.mean_blocks = 100;
  ea.sms = 50;
  eb.sms = 66;
  eb.mean_launch_s = 1e-3;
  b.time_s = b.mean_rank_time_s = 1.0;
  d = classify_step(a, b, {}, {}, {}, {}, 50, 66, ea, eb, Thresholds{});
  EXPECT_EQ(d.cause, "tail-effect");
  EXPECT_NEAR(tail_efficiency(100, 66), (100.0 / 66) / 2, 1e-12);
}

TEST(Model, PhiIsHarmonicMeanOrZero) {
  EXPECT_NEAR(performance_portability({0.5, 0.25}), 2.0 / (2 + 4), 1e-12);
  EXPECT_NEAR(performance_portability({0.8, 0.4, 0.2}), 3.0 / (1.25 + 2.5 + 5), 1e-12);
  EXPECT_EQ(performance_portability({0.5, kNaN}), 0);
  EXPECT_EQ(performance_portability({0.5, 0}), 0);
}

TEST(Model, ThresholdsAreValidated) {
  Thresholds t;
  t.ai_drop = 1.5;
  try {
    t.validate();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ai-drop"), std::string::npos);
  }
}

TEST(Model, UnreliableCeilingIsNotClaimedAsBandwidthContention) {
  auto c2 = cpu(12, 2000);
  std::vector<Ceiling> rows = c2.all();
  for (auto& c : rows)
    if (c.name == "DRAM") {
      c.unreliable = true;
      c.unreliable_reason = "DRAM 12.0 GB/s below 15.0 on the smaller partition t1";
    }
  const CeilingSet shaky(rows);
  auto d = step(kernel(1e9, 1e8, 0.01), kernel(1e9, 1e8, 1e9 / 120e9), cpu(10, 1000), shaky);
  EXPECT_NE(d.diagnosis, "bandwidth-contention");
  EXPECT_NE(d.explanation.find("bandwidth-contention not claimed: the DRAM ceiling is unreliable"), std::string::npos)
      << d.explanation;
}

TEST(Model, CeilingSpreadWidensIdeal) {
  // 85% step efficiency: a loss at the 10% tolerance, but within a DRAM
  // ceiling whose ERT repeats spread by 10% at each point (20% on the ratio).
  auto noisy = [](double dram, double fp64) {
    std::vector<Ceiling> rows = cpu(dram, fp64).all();
    for (auto& c : rows)
      if (c.name == "DRAM") {
        c.min = dram * 0.95;
        c.max = dram * 1.05;
      }
    return CeilingSet(rows);
  };
  auto a = kernel(1e9, 1e8, 0.01), b = kernel(1e9, 1e8, 0.01 / 1.7);
  auto sharp = step(a, b, cpu(10, 1000), cpu(17, 2000));
  EXPECT_NE(sharp.diagnosis, "ideal");
  auto d = step(a, b, noisy(10, 1000), noisy(17, 2000));
  EXPECT_EQ(d.diagnosis, "ideal");
  EXPECT_NE(d.explanation.find("within the DRAM ceiling's spread"), std::string::npos) << d.explanation;
  EXPECT_NEAR(ceiling_ratio_noise(noisy(10, 1000), noisy(17, 2000), "DRAM"), 0.2, 1e-12);
}

TEST(AnalysisModel, TensorCeilingsOfEitherMmaKindServeOnlyTensorKernels) {
  // Hopper: wgmma is "TC FP16->FP32" (variant mma), mma.sync its own ceiling.
  const CeilingSet h100({bw("HBM", 3000), peak("FP16 half2", "fp16", "half2", 120000),
                         peak("TC FP16->FP32", "fp16", "mma", 800000),
                         peak("TC FP16->FP32 mma.sync", "fp16", "mma.sync", 500000)});
  ASSERT_NE(h100.peak("fp16", true), nullptr);
  EXPECT_EQ(h100.peak("fp16", true)->name, "TC FP16->FP32");
  ASSERT_NE(h100.peak("fp16", false), nullptr);
  EXPECT_EQ(h100.peak("fp16", false)->name, "FP16 half2");  // neither tensor ceiling caps a non-tensor kernel
}

// Issue 31, item 6: a kernel was judged against the FP16 tensor roof only when
// it had no scalar FLOPs, and against FP16's whatever its tensor source type:
// an HGEMM with an FFMA epilogue landed on the FP32 roof, a DMMA kernel on
// FP16's. With tensor ops per source type, tensor-dominated work is judged
// against the tensor ceiling of its own type, scalar-dominated work against
// the scalar roof.
namespace {
CeilingSet h100_tc() {
  return CeilingSet({bw("HBM", 3000), peak("FP64 FMA", "fp64", "fma", 60000), peak("FP32 FMA", "fp32", "fma", 60000),
                     peak("FP16 half2", "fp16", "half2", 120000), peak("TC FP16->FP32", "fp16", "mma", 800000),
                     peak("TC FP64", "fp64", "mma", 60000 * 1.1)});
}
KernelAtPoint tensor_kernel(double fp16_ops, double fp64_ops, double bf16_ops, double ffma_flops, double dfma_flops) {
  KernelAtPoint k = kernel(dfma_flops > 0 ? dfma_flops : kNaN, 1e9, 1.0);
  k.kind = "gpu-kernel";
  if (ffma_flops > 0) k.counts.flops_fp32 = ffma_flops;
  k.counts.tensor_by_source = {fp16_ops, bf16_ops, kNaN, fp64_ops, kNaN};
  k.counts.tensor_ops = 0;
  for (double v : {fp16_ops, fp64_ops, bf16_ops})
    if (available(v)) k.counts.tensor_ops += v;
  return k;
}
}  // namespace

TEST(AnalysisModel, AnHgemmWithAnFfmaEpilogueIsJudgedAgainstTheFp16TensorRoof) {
  const RooflineEval e = evaluate(tensor_kernel(1e12, kNaN, kNaN, 1e9, 0), h100_tc());
  EXPECT_EQ(e.precision, "fp16");
  EXPECT_EQ(e.peak_name, "TC FP16->FP32");
  EXPECT_DOUBLE_EQ(e.flops, 2e12 + 1e9);
}

TEST(AnalysisModel, ADmmaKernelIsJudgedAgainstTheFp64TensorRoof) {
  const RooflineEval e = evaluate(tensor_kernel(kNaN, 1e12, kNaN, 0, 0), h100_tc());
  EXPECT_EQ(e.precision, "fp64");
  EXPECT_EQ(e.peak_name, "TC FP64");
  // Its few scalar DFMAs do not move it to the FP64 FMA roof.
  const RooflineEval f = evaluate(tensor_kernel(kNaN, 1e12, kNaN, 0, 1e10), h100_tc());
  EXPECT_EQ(f.peak_name, "TC FP64");
}

TEST(AnalysisModel, ScalarWorkWithALittleTensorWorkIsJudgedAgainstTheScalarRoof) {
  // 1e12 DFMA FLOPs and 1e9 DMMA ops: the FP64 FMA roof, not the higher TC FP64.
  const RooflineEval e = evaluate(tensor_kernel(kNaN, 1e9, kNaN, 0, 1e12), h100_tc());
  EXPECT_EQ(e.precision, "fp64");
  EXPECT_EQ(e.peak_name, "FP64 FMA");
}

TEST(AnalysisModel, TensorWorkWithoutAMeasuredCeilingOfItsTypeGetsNoComputeRoof) {
  // BF16 GEMM: the ERT measures no BF16 tensor ceiling; FP16's is not claimed for it.
  const RooflineEval e = evaluate(tensor_kernel(kNaN, kNaN, 1e12, 0, 0), h100_tc());
  EXPECT_EQ(e.precision, "bf16");
  EXPECT_TRUE(e.peak_name.empty()) << e.peak_name;
  EXPECT_EQ(e.binding, "DRAM");  // the memory roof still holds
}

TEST(AnalysisModel, TensorOpsWithoutTheirSourceTypeKeepTheOldRule) {
  // A file before schema 1.8: tensor_ops only; no scalar FLOPs -> FP16's tensor roof, as before.
  KernelAtPoint k = kernel(kNaN, 1e9, 1.0);
  k.counts.tensor_ops = 1e12;
  const RooflineEval e = evaluate(k, h100_tc());
  EXPECT_EQ(e.peak_name, "TC FP16->FP32");
}

// Issue 29: under the counting tool a waiting MPI rank spins in the progress
// engine, so L1 bytes grow while FLOPs stay; and any code path with more
// loads and stores per FLOP lowers the L1 AI. Neither is a cache running out
// of room: L1 bytes are the core's own loads and stores.
TEST(Model, AnL1IntensityFallAloneIsNotCacheCapacity) {
  auto with_l1 = [](KernelAtPoint k, double l1) {
    k.counts.bytes[0] = l1;
    return k;
  };
  // L1 AI 1 -> 0.4 (L1-bound at the second point), DRAM AI flat, no speedup on 2x.
  const KernelAtPoint a = with_l1(kernel(1e9, 1e7, 0.01), 1e9), b = with_l1(kernel(1e9, 1e7, 0.01), 2.5e9);
  CeilingSet c1({bw("L1d", 1000), bw("L2", 500), bw("L3", 200), bw("DRAM", 10), peak("FP64 FMA", "fp64", "fma", 1000)});
  CeilingSet c2({bw("L1d", 2000), bw("L2", 1000), bw("L3", 400), bw("DRAM", 20), peak("FP64 FMA", "fp64", "fma", 2000)});
  ASSERT_EQ(evaluate(b, c2).binding, "L1");
  StepDiagnosis d = step(a, b, c1, c2);
  EXPECT_NE(d.diagnosis, "cache-capacity") << d.explanation;
  EXPECT_EQ(d.cache, "");
  EXPECT_EQ(d.explanation.find("registers"), std::string::npos) << d.explanation;
  EXPECT_NE(d.explanation.find("L1d arithmetic intensity falls 2.5x (more loads and stores per FLOP: not a "
                               "cache-capacity loss)"),
            std::string::npos)
      << d.explanation;
  // A fall below a cache (L2 AI: the working set left L1d) still is.
  KernelAtPoint a2 = a, b2 = b;
  b2.counts.bytes[0] = 1e9;
  a2.counts.bytes[1] = 1e8;
  b2.counts.bytes[1] = 4e8;
  StepDiagnosis d2 = step(a2, b2, c1, c2);
  EXPECT_EQ(d2.diagnosis, "cache-capacity") << d2.explanation;
  EXPECT_EQ(d2.cache, "L1d");
}

// Issue 29 (LAMMPS at 1 -> 2 ranks): the L2 AI of PairLJCut::compute fell
// 1.42x, and the step was "cache-capacity at L1d: the working set no longer
// fits the L1d", though each rank had a 48 KiB L1d of its own at both points
// and half the atoms at the second. A cache whose room per worker did not
// shrink cannot have run out of it; one that the workers share (the L3 of a
// threads sweep) can.
TEST(Model, APrivateCacheThatKeptItsRoomPerWorkerIsNoCapacityLoss) {
  KernelAtPoint a = kernel(1e9, 1e7, 0.01), b = kernel(1e9, 1e7, 0.01);
  a.counts.bytes[0] = b.counts.bytes[0] = 1e9;
  a.counts.bytes[1] = 1e8;
  b.counts.bytes[1] = 1.42e8;
  a.counts.bytes[2] = b.counts.bytes[2] = 5e7;
  CeilingSet c1({bw("L1d", 1000), bw("L2", 500), bw("L3", 200), bw("DRAM", 10), peak("FP64 FMA", "fp64", "fma", 1000)});
  CeilingSet c2({bw("L1d", 2000), bw("L2", 1000), bw("L3", 400), bw("DRAM", 20), peak("FP64 FMA", "fp64", "fma", 2000)});
  auto with_caches = [&](double l1, double l2, double l3, double c1_, double c2_) {
    StepEvidence ea, eb;
    ea.cache_per_worker = {48 * 1024.0, l2, l3, kNaN};
    eb.cache_per_worker = {l1, l2, l3 / 2, kNaN};
    return classify_step(a, b, evaluate(a, c1), evaluate(b, c2), c1, c2, c1_, c2_, ea, eb, Thresholds{});
  };
  // Without the counting pass's caches (PMU counts): a capacity loss, as before.
  StepDiagnosis unknown = step(a, b, c1, c2);
  EXPECT_EQ(unknown.diagnosis, "cache-capacity") << unknown.explanation;
  EXPECT_EQ(unknown.cache, "L1d");
  // Each rank's L1d the same at both points: no capacity loss, and said why.
  StepDiagnosis d = with_caches(48 * 1024.0, 1 << 20, 32 << 20, 1, 2);
  EXPECT_NE(d.diagnosis, "cache-capacity") << d.explanation;
  EXPECT_EQ(d.cache, "");
  EXPECT_NE(d.explanation.find("L2 arithmetic intensity falls 1.42x, yet each worker has as much L1d as before (48 "
                               "KiB of its own at both points): more L2 traffic per FLOP (halo or ghost data, "
                               "another access order), not a cache-capacity loss"),
            std::string::npos)
      << d.explanation;
  // No sentence says "arithmetic intensity flat" after one said it falls
  // (a level's flat intensity is said with the level's name).
  EXPECT_EQ(d.explanation.find("; arithmetic intensity flat"), std::string::npos) << d.explanation;
  // Two threads on one L1d (SMT): half the room each, a capacity loss again.
  StepDiagnosis smt = with_caches(24 * 1024.0, 1 << 20, 32 << 20, 1, 2);
  EXPECT_EQ(smt.diagnosis, "cache-capacity") << smt.explanation;
  // The L3 a threads sweep shares: DRAM AI falls with half the L3 per thread.
  KernelAtPoint a3 = kernel(1e9, 1e8, 0.01), b3 = kernel(1e9, 2e8, 0.01);
  StepEvidence e1, e2;
  e1.cache_per_worker = {48 * 1024.0, 1 << 20, 32 << 20, kNaN};
  e2.cache_per_worker = {48 * 1024.0, 1 << 20, 16 << 20, kNaN};
  StepDiagnosis l3 = classify_step(a3, b3, evaluate(a3, cpu(10, 1000)), evaluate(b3, cpu(20, 2000)), cpu(10, 1000),
                                   cpu(20, 2000), 1, 2, e1, e2, Thresholds{});
  EXPECT_EQ(l3.diagnosis, "cache-capacity") << l3.explanation;
  EXPECT_EQ(l3.cache, "L3");
}

// Issue 29: counted work that changes between the points of a strong-scaling
// step (FFTW picking other plans: 1.14e9 -> 2.87e9 FLOPs) gets no verdict,
// and its speedup is the time ratio the scaling chart shows (0.76), not the
// ratio of rates (1.9, "ideal").
TEST(Model, CountedWorkThatChangesGetsNoVerdictAndTheTimeSpeedup) {
  KernelAtPoint a = kernel(1.14e9, 1e8, 1.0), b = kernel(2.87e9, 1e8, 1.32);
  a.kind = b.kind = "function";
  const CeilingSet c = cpu(10, 1000);
  StepDiagnosis d;
  ASSERT_TRUE(unmatched_step(a, b, evaluate(a, c), evaluate(b, c), 1, 2, false, Thresholds{}, d));
  EXPECT_EQ(d.diagnosis, "work-changed");
  EXPECT_NEAR(d.speedup, 1.0 / 1.32, 1e-12);
  EXPECT_NE(d.explanation.find("the work itself changed (FLOPs 1.14e+09 -> 2.87e+09"), std::string::npos)
      << d.explanation;
  // The rates alone would have called it ideal (S = 1.9 on 2x); the step's
  // speedup is the time ratio (issue 39: speedups from times, never rates).
  const StepDiagnosis judged = step(a, b, c, c);
  EXPECT_NEAR(judged.speedup, 1.0 / 1.32, 1e-12);
  EXPECT_NE(judged.diagnosis, "ideal");
  // Within the tolerance (10%) the roofline judges; weak scaling expects the work to grow.
  KernelAtPoint b_same = kernel(1.2e9, 1e8, 0.5);
  EXPECT_FALSE(unmatched_step(a, b_same, evaluate(a, c), evaluate(b_same, c), 1, 2, false, Thresholds{}, d));
  EXPECT_FALSE(unmatched_step(a, b, evaluate(a, c), evaluate(b, c), 1, 2, true, Thresholds{}, d));
}

TEST(Model, CountedCodeThatIsNotTheTimedCodeGetsNoVerdict) {
  KernelAtPoint a = kernel(1e9, 1e8, kNaN), b = kernel(1e9, 1e8, kNaN);
  b.code_note = "timed `k_PRESCOTT` 61% of samples, counted `k_HASWELL` 58% of counted instructions";
  const CeilingSet c = cpu(10, 1000);
  StepDiagnosis d;
  ASSERT_TRUE(unmatched_step(a, b, evaluate(a, c), evaluate(b, c), 1, 2, false, Thresholds{}, d));
  EXPECT_EQ(d.diagnosis, "code-differs");
  EXPECT_TRUE(std::isnan(d.speedup));
  EXPECT_NE(d.explanation.find("the counted code is not the timed code: timed `k_PRESCOTT`"), std::string::npos);
}

// Issue 29 (LAMMPS at 1 -> 2 ranks): the application's DRAM AI halves because
// each process repeats its start-up (the loader: 10 MB per rank), exit
// write-backs and halo copies, code without FLOPs, while the code that does
// the FLOPs keeps its DRAM traffic. No cache ran out of room.
TEST(Model, AnIntensityFallOutsideTheCodeThatDoesTheFlopsIsNotCacheCapacity) {
  KernelAtPoint a = kernel(1.4e9, 2.1e7, 1.0), b = kernel(1.4e9, 4.0e7, 0.9);
  a.kind = b.kind = "application";
  a.work_counts.flops_fp64 = b.work_counts.flops_fp64 = 1.39e9;
  a.work_counts.bytes[3] = 0.73e6;
  b.work_counts.bytes[3] = 0.68e6;
  StepDiagnosis d = step(a, b, cpu(10, 1000), cpu(20, 2000));
  EXPECT_NE(d.diagnosis, "cache-capacity") << d.explanation;
  EXPECT_NE(d.explanation.find("DRAM arithmetic intensity falls 1.9x, but not in the code that does the FLOPs (its "
                               "DRAM AI holds): the added traffic is in code without FLOPs"),
            std::string::npos)
      << d.explanation;
  // Where that code's own intensity falls too, it is one.
  b.work_counts.bytes[3] = 1.5e6;
  EXPECT_EQ(step(a, b, cpu(10, 1000), cpu(20, 2000)).diagnosis, "cache-capacity");
}

// Issue 39: the demo's triad ran at eta 0.17 of a DRAM ceiling that grew
// 1.2x on 2x the threads and was named bandwidth-contention on DRAM. A
// ceiling binds only a kernel that runs near it.
TEST(Model, BelowTheOnCeilingFloorIsNeverBandwidthContention) {
  // eta 0.17 at both points; the DRAM ceiling grows 1.2x, and so does the rate.
  const double p1 = 0.17 * 100, p2 = 0.17 * 120;  // bound = DRAM GB/s x AI 10
  auto d = step(kernel(1e9, 1e8, 1e9 / (p1 * 1e9)), kernel(1e9, 1e8, 1e9 / (p2 * 1e9)), cpu(10, 1000), cpu(12, 2000));
  EXPECT_NEAR(d.speedup, 1.2, 1e-9);
  EXPECT_NE(d.diagnosis, "bandwidth-contention");
  EXPECT_NE(d.explanation.find("bandwidth-contention not claimed: eta 0.17 is below the on-ceiling 0.8 of the DRAM ceiling"),
            std::string::npos)
      << d.explanation;
  // The same step on the ceiling (eta 0.9) is contention.
  auto on = step(kernel(1e9, 1e8, 1e9 / (90e9)), kernel(1e9, 1e8, 1e9 / (108e9)), cpu(10, 1000), cpu(12, 2000));
  EXPECT_EQ(on.diagnosis, "bandwidth-contention");
}

// Issue 39: QE's FFTW codelets were "cache-capacity at L3 (DRAM AI falls
// 1.39x)" at 1.18e7 FLOPs per DRAM byte: no DRAM traffic to speak of.
TEST(Model, ALevelWithoutTrafficNeverDecidesCacheCapacity) {
  // 1e6 FLOPs per DRAM byte, then 5e5: DRAM would take 1e-5 of the time.
  auto d = step(kernel(1e9, 1e3, 0.02), kernel(1e9, 2e3, 0.02), cpu(10, 1000), cpu(20, 2000));
  EXPECT_NE(d.diagnosis, "cache-capacity");
  EXPECT_NE(d.explanation.find("DRAM arithmetic intensity falls 2x, but its traffic would take"), std::string::npos)
      << d.explanation;
  EXPECT_NE(d.explanation.find("no traffic to speak of"), std::string::npos) << d.explanation;
}

// Issue 39 (QE's FFTW codelets, LAMMPS's pair force at ranks=1,2): the
// application's rising MPI share is no cause of a counted function's own
// time, whose samples are its own code.
TEST(Model, ACountedFunctionIsNeverMpiBoundByTheApplicationsMpiShare) {
  KernelAtPoint a = kernel(1e9, 1e8, 1.0), b = kernel(1e9, 1e8, 0.7);
  a.kind = b.kind = "function";
  StepEvidence e1, e2;
  e1.mpi_share = 0.001;
  e2.mpi_share = 0.13;
  const CeilingSet c = cpu(10, 1000);
  const StepDiagnosis d = classify_step(a, b, evaluate(a, c), evaluate(b, c), c, c, 1, 2, e1, e2, Thresholds{});
  EXPECT_NE(d.cause, "mpi") << d.explanation;
  // An annotated region may hold MPI calls: there the share is evidence.
  a.kind = b.kind = "region";
  const StepDiagnosis r = classify_step(a, b, evaluate(a, c), evaluate(b, c), c, c, 1, 2, e1, e2, Thresholds{});
  EXPECT_EQ(r.cause, "mpi") << r.explanation;
}

// Issue 39 (LAMMPS's pair force, 1.72x on 2x ranks): with no evidence for a
// cause and a small Karp-Flatt fraction (0.16) the step is not "serial".
TEST(Model, ASmallKarpFlattFractionIsNoSerialFraction) {
  KernelAtPoint a = kernel(1e9, 1e8, 1.0), b = kernel(1e9, 1e8, 1.0 / 1.72);
  a.mean_rank_time_s = 1.0;
  b.mean_rank_time_s = 1.0 / 1.72;
  const CeilingSet c = cpu(10, 1000);
  const StepDiagnosis d = step(a, b, c, c);
  EXPECT_EQ(d.diagnosis, "other") << d.explanation;
  EXPECT_EQ(d.cause, "computation-scaling") << d.explanation;
  // Half the time serial: Karp-Flatt 0.5 and more stays serial-fraction.
  KernelAtPoint s = kernel(1e9, 1e8, 0.75);
  s.mean_rank_time_s = 0.75;
  EXPECT_EQ(step(a, s, c, c).cause, "serial-fraction");
}
