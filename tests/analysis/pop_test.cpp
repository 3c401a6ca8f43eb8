// The POP model on per-rank usage built in memory: known answers and the product identities.
#include "rtrace/analysis/pop.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace rtrace;
using namespace rtrace::analysis;

namespace {

std::int64_t name_id(store::RankRecords& r, const std::string& name) {
  for (std::size_t i = 0; i < r.names.size(); ++i)
    if (r.names[i] == name) return static_cast<std::int64_t>(i);
  r.names.push_back(name);
  return static_cast<std::int64_t>(r.names.size() - 1);
}

// A rank with wall time, CPU time and MPI rows (Init outside the window by its own row).
store::RankRecords rank(std::int64_t id, double wall, double init, double mpi, double user, double sys = 0) {
  store::RankRecords r;
  r.info = store::RankInfoRow{};
  r.info.rank = id;
  r.info.wall_s = wall;
  r.info.user_s = user;
  r.info.system_s = sys;
  r.info.omp_threads = 1;
  r.info.complete = 1;
  if (init > 0) {
    store::MpiRow row{};
    row.name_id = name_id(r, "MPI_Init");
    row.calls = 1;
    row.time_s = init;
    r.mpi.push_back(row);
  }
  if (mpi > 0) {
    store::MpiRow row{};
    row.name_id = name_id(r, "MPI_Barrier");
    row.calls = 4;
    row.time_s = mpi;
    row.bytes_sent = 0;
    r.mpi.push_back(row);
  }
  return r;
}

}  // namespace

TEST(Pop, ImbalancedRanksGiveLoadBalanceMeanOverMax) {
  // 2 ranks, window = wall (no window fields): useful 3 s and 1 s (+2 s in the barrier).
  PointUsage u = point_usage({rank(0, 3.0, 0.1, 0.0, 3.0), rank(1, 3.0, 0.1, 2.0, 3.0)});
  PopPoint p = pop_point(u, 1);
  EXPECT_EQ(p.basis, "mpi");
  EXPECT_NEAR(p.load_balance, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(p.communication_efficiency, 1.0, 1e-12);
  EXPECT_NEAR(p.parallel_efficiency, p.load_balance * p.communication_efficiency, 1e-15);
  EXPECT_NEAR(p.mpi_share, 2.0 / 6.0, 1e-12);  // MPI_Init is not MPI time
  ASSERT_EQ(u.calls.size(), 2u);
  EXPECT_EQ(u.calls[0].name, "MPI_Barrier");
  EXPECT_NEAR(u.calls[0].rank_min_s, 0.0, 1e-12);
  EXPECT_NEAR(u.calls[0].rank_max_s, 2.0, 1e-12);
  EXPECT_NEAR(u.calls[0].rank_mean_s, 1.0, 1e-12);
}

TEST(Pop, PlainProcessUsesTheCpuTimeBasis) {
  store::RankRecords r = rank(0, 1.0, 0, 0, 1.0);
  PointUsage u = point_usage({r});
  EXPECT_FALSE(u.mpi_initialised);  // nothing says MPI: a plain process
  PopPoint p = pop_point(u, 1);
  EXPECT_EQ(p.basis, "cpu-time");
  EXPECT_FALSE(available(p.mpi_share));
}

TEST(Pop, StepFactorsMultiplyToTheStepEfficiency) {
  PointUsage u1 = point_usage({rank(0, 4.0, 0.2, 0.1, 4.0)});
  PointUsage u2 = point_usage({rank(0, 2.6, 0.3, 0.2, 2.6), rank(1, 2.6, 0.3, 0.9, 2.6)});
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 1);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  EXPECT_NEAR(a.computation_scalability, 1.0, 1e-15);
  EXPECT_NEAR(b.global_efficiency, b.parallel_efficiency * b.computation_scalability, 1e-15);
  StepContext ctx;
  ctx.axis = "ranks";
  AppStep s = classify_app_step(a, b, 1, 2, a.wall_s, b.wall_s, 0, ctx, Thresholds{});
  double product = s.lb_factor * s.comm_factor * s.cs_factor * s.startup_factor;
  EXPECT_NEAR(product, s.efficiency, 1e-12);
  EXPECT_EQ(s.diagnosis, "loss");
  EXPECT_EQ(s.cause, "imbalance");
}

TEST(Pop, WeakScalingComparesTimePerUnitOfWork) {
  PointUsage u1 = point_usage({rank(0, 2.0, 0.0, 0.0, 2.0)});
  PointUsage u2 = point_usage({rank(0, 2.5, 0.0, 0.0, 2.5), rank(1, 2.5, 0.0, 0.0, 2.5)});
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 1);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 2.0});  // twice the work at 2 ranks
  EXPECT_NEAR(b.computation_scalability, (2.0 / 1) / (5.0 / 2), 1e-12);
  StepContext ctx;
  ctx.axis = "ranks";
  ctx.weak = true;
  AppStep s = classify_app_step(a, b, 1, 2, 2.0, 2.5, 0, ctx, Thresholds{});
  EXPECT_NEAR(s.efficiency, 0.8, 1e-12);
  EXPECT_NEAR(s.pe_factor * s.cs_factor, s.efficiency, 1e-12);
  EXPECT_EQ(s.cause, "computation-scaling");
}

TEST(Pop, ThreadsWithoutMpiUseCpuTime) {
  // 1 -> 2 threads; the app ignores them: CPU/wall stays 1.
  PointUsage u1 = point_usage({rank(0, 2.0, 0, 0, 2.0)});
  PointUsage u2 = point_usage({rank(0, 2.0, 0, 0, 2.0)});
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 2);
  EXPECT_EQ(b.basis, "cpu-time");
  EXPECT_NEAR(b.parallel_efficiency, 0.5, 1e-12);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  StepContext ctx;
  ctx.axis = "threads";
  AppStep s = classify_app_step(a, b, 1, 2, 2.0, 2.0, 0, ctx, Thresholds{});
  EXPECT_NEAR(s.pe_factor * s.cs_factor, s.efficiency, 1e-12);
  EXPECT_EQ(s.cause, "threads-unused");
}

TEST(Pop, SpinningThreadsAreSpinWait) {
  // 1 -> 2 threads: wall unchanged, CPU doubled, 40% of it system time.
  PointUsage u1 = point_usage({rank(0, 2.0, 0, 0, 2.0)});
  PointUsage u2 = point_usage({rank(0, 2.0, 0, 0, 2.4, 1.6)});
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 2);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  StepContext ctx;
  ctx.axis = "threads";
  AppStep s = classify_app_step(a, b, 1, 2, 2.0, 2.0, 0, ctx, Thresholds{});
  EXPECT_EQ(s.cause, "spin-wait");
}

TEST(Pop, SystemTimeThatDidNotRiseIsNotSpinWait) {
  // 1 -> 2 ranks of an app whose own loop runs mostly in the kernel (it times itself with
  // clock()): system share 0.8 at 1 rank, 0.5 at 2. Useful time per rank 1.9 s -> 1.5 s (CS 0.63):
  // a loss in the app's own work, not threads spinning.
  PointUsage u1 = point_usage({rank(0, 2.0, 0.1, 0, 0.4, 1.6)});
  PointUsage u2 = point_usage({rank(0, 1.6, 0.1, 0, 0.8, 0.8), rank(1, 1.6, 0.1, 0, 0.8, 0.8)});
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 1);
  ASSERT_EQ(b.basis, "mpi");
  EXPECT_NEAR(a.system_share, 0.8, 1e-12);
  EXPECT_NEAR(b.system_share, 0.5, 1e-12);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  StepContext ctx;
  ctx.axis = "ranks";
  AppStep s = classify_app_step(a, b, 1, 2, 2.0, 1.6, 0, ctx, Thresholds{});
  EXPECT_EQ(s.diagnosis, "loss");
  EXPECT_EQ(s.cause, "computation-scaling");
}

TEST(Pop, OversubscribedStepNamesOversubscription) {
  PointUsage u1 = point_usage({rank(0, 2.0, 0, 0, 2.0)});
  PointUsage u2 = point_usage({rank(0, 1.6, 0, 0, 3.0)});
  PopPoint a = pop_point(u1, 2), b = pop_point(u2, 4);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  StepContext ctx;
  ctx.axis = "threads";
  ctx.cores = 2;
  AppStep s = classify_app_step(a, b, 2, 4, 2.0, 1.6, 0, ctx, Thresholds{});
  EXPECT_EQ(s.cause, "oversubscription");
}

TEST(Pop, PreemptedWorkersOnABusyMachineNameMachineLoad) {
  // threads 1 -> 2 on 2 cores: CPU time for the same work grows 1.4x. With
  // few preemptions that is the app's (computation scaling); with 100 per
  // second per worker, up from 5, other processes took the cores.
  auto step = [](std::int64_t ivcsw1, std::int64_t ivcsw2) {
    auto r1 = rank(0, 2.0, 0, 0, 2.0), r2 = rank(0, 1.6, 0, 0, 2.8);
    r1.info.involuntary_ctxsw = ivcsw1;
    r2.info.involuntary_ctxsw = ivcsw2;
    r2.info.omp_threads = 2;
    PopPoint a = pop_point(point_usage({r1}), 1), b = pop_point(point_usage({r2}), 2);
    std::vector<PopPoint*> pts{&a, &b};
    pop_scaling(pts, {1.0, 1.0});
    StepContext ctx;
    ctx.axis = "threads";
    ctx.cores = 2;
    return classify_app_step(a, b, 1, 2, 2.0, 1.6, 0, ctx, Thresholds{});
  };
  AppStep quiet = step(10, 40);  // 5 -> 12.5 per second per worker
  EXPECT_EQ(quiet.diagnosis, "loss");
  EXPECT_EQ(quiet.cause, "computation-scaling") << quiet.explanation;
  AppStep busy = step(10, 320);  // 5 -> 100 per second per worker
  EXPECT_EQ(busy.diagnosis, "loss");
  EXPECT_EQ(busy.cause, "machine-load") << busy.explanation;
  EXPECT_NE(busy.explanation.find("100 involuntary context switches/s per worker (was 5)"), std::string::npos)
      << busy.explanation;
  // Busy at both points (80 -> 100 per worker): still the machine's.
  EXPECT_EQ(step(160, 320).cause, "machine-load");
}

TEST(Pop, ChangeWithinTheRepeatSpreadIsNoiseAndSuperlinearIsNeverIdeal) {
  PointUsage u1 = point_usage({rank(0, 2.0, 0, 0, 2.0)});
  PointUsage u2 = point_usage({rank(0, 0.7, 0, 0, 1.4)});
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 2);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  StepContext ctx;
  ctx.axis = "threads";
  // 1.43x efficiency, single sample: superlinear (not ideal), with the baseline caveat.
  AppStep s = classify_app_step(a, b, 1, 2, 2.0, 0.7, 0, ctx, Thresholds{});
  EXPECT_EQ(s.diagnosis, "superlinear");
  EXPECT_NE(s.explanation.find("single sample"), std::string::npos);
  // The same change with a 50% spread between repeats is noise.
  s = classify_app_step(a, b, 1, 2, 2.0, 0.7, 0.5, ctx, Thresholds{});
  EXPECT_EQ(s.diagnosis, "noise");
}

TEST(Pop, RepresentativeRepeatIsTheMedianWall) {
  std::vector<PointUsage> reps = {point_usage({rank(0, 3.0, 0, 0, 3.0)}), point_usage({rank(0, 1.0, 0, 0, 1.0)}),
                                  point_usage({rank(0, 2.0, 0, 0, 2.0)})};
  PopConfig c = combine_pop(reps, 1);
  EXPECT_EQ(c.representative, 2);
  EXPECT_NEAR(c.pop.wall_s, 2.0, 1e-12);
  EXPECT_NEAR(c.wall_spread, 1.0, 1e-12);
}

TEST(Pop, CounterFactorsMultiplyToTheRegionsTimeScalability) {
  auto with_counters = [](store::RankRecords r, double instructions, double cycles, double time) {
    store::RegionRow row{};
    row.name_id = name_id(r, "loop");
    row.calls = 1;
    row.time_s = time;
    row.hw_instructions = instructions;
    row.hw_cycles = cycles;
    r.regions.push_back(row);
    return r;
  };
  PointUsage u1 = point_usage({with_counters(rank(0, 2.0, 0, 0, 2.0), 4e9, 4e9, 1.6)});
  PointUsage u2 = point_usage({with_counters(rank(0, 1.2, 0, 0, 2.3), 2.2e9, 2.6e9, 1.0),
                               with_counters(rank(1, 1.2, 0, 0, 2.3), 2.2e9, 2.6e9, 1.0)});
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 1);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  EXPECT_NEAR(b.instruction_scalability, 4e9 / 4.4e9, 1e-12);
  EXPECT_NEAR(b.instruction_scalability * b.ipc_scalability * b.frequency_scalability, 1.6 / 2.0, 1e-12);
  EXPECT_FALSE(available(pop_point(point_usage({rank(0, 1, 0, 0, 1)}), 1).hw_instructions));
}
