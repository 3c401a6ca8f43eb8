// The POP model on per-rank usage built in memory: known answers and the product identities.
#include "rtrace/analysis/analyze.hpp"
#include "rtrace/analysis/pop.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

// A step 1 -> 2 threads of one rank (wall 2.0 s -> t2), the samples' serial
// share given (NaN: no samples to tell) with `serial_function` the largest.
// `taken_share`: other processes' share of the second point's cores (the launcher's measurement).
AppStep thread_step(const store::RankRecords& r1, const store::RankRecords& r2, double t2, double serial_share,
                    const char* serial_function, double taken_share = kNaN) {
  PopPoint a = pop_point(point_usage({r1}), 1), b = pop_point(point_usage({r2}), 2);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  if (available(taken_share)) {
    b.load_measured = true;
    b.other_share = b.taken_share = taken_share;
    b.taken_cpu_s = taken_share * 2 * t2;
    b.load_cpus = 2;
  }
  StepContext ctx;
  ctx.axis = "threads";
  ctx.cores = 2;
  ctx.sampled.available = available(serial_share);
  ctx.sampled.serial_share = serial_share;
  ctx.sampled.serial_function = serial_function;
  return classify_app_step(a, b, 1, 2, 2.0, t2, 0, ctx, Thresholds{});
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

// rtrace's own work inside the MPI time its wrappers booked (the bookkeeping
// of a polling run) and outside it (the sampler's handler in app code) is
// neither the app's MPI time nor its useful time; its samples are neither
// work nor wait.
TEST(Pop, TheTracersOwnWorkIsNeitherMpiNorUsefulTime) {
  store::RankRecords r = rank(0, 4.0, 0.1, 1.0, 4.0);
  r.info.mpi_init_end = 0.2;
  r.info.mpi_finalize_start = 3.9;  // window 3.7 s
  r.info.tracer_wrapper_s = 0.2;    // inside the 1.0 s booked to MPI
  r.info.tracer_sampler_s = 0.1;    // outside it
  r.info.tracer_code_s = 0;
  r.info.tracer_exit_s = 0.05;
  r.info.tracer_outside_mpi_s = 0.1;
  PointUsage u = point_usage({r});
  ASSERT_EQ(u.ranks.size(), 1u);
  EXPECT_NEAR(u.ranks[0].mpi_s, 0.8, 1e-12);
  EXPECT_NEAR(u.ranks[0].window_s(), 3.7 - 0.3, 1e-12);
  PopPoint p = pop_point(u, 1);
  EXPECT_NEAR(p.useful_max_s, 3.7 - 1.0 - 0.1, 1e-12);
  EXPECT_NEAR(p.mpi_share, 0.8 / 3.4, 1e-12);
  EXPECT_NEAR(p.tracer_s, 0.35, 1e-12);
  EXPECT_NEAR(p.tracer_share, 0.35 / 4.0, 1e-12);
  // A file without the fields (before 1.8): nothing taken out, nothing said.
  store::RankRecords old = rank(0, 4.0, 0.1, 1.0, 4.0);
  PopPoint q = pop_point(point_usage({old}), 1);
  EXPECT_FALSE(available(q.tracer_share));
  EXPECT_NEAR(q.useful_max_s, 3.0, 1e-12);
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

// The node's load as the launcher measured it (run-file 1.7 machine_load).
MachineLoadUsage load(int cpus, double interval, double other_cpu, double steal = 0) {
  MachineLoadUsage m;
  m.measured = true;
  m.cpus = cpus;
  m.interval_s = interval;
  m.other_cpu_s = other_cpu;
  m.steal_s = steal;
  m.tree_cpu_s = 0;
  m.load_average = 1;
  return m;
}

std::vector<std::string> cause_list(const AppStep& s) {
  std::vector<std::string> out;
  for (const auto& c : s.causes) out.push_back(c.cause);
  return out;
}

// The MPI app of issue 23: at 2 ranks each rank gets half the work and the last
// rank three times that, so the total work doubles (CS 0.5, 2x) and the ranks
// are imbalanced (LB 1/1.5, 1.5x). `busy`: a competing process took half of
// the point's cores at both points.
// The rank with its MPI window recorded: MPI_Init ends at `init`, MPI_Finalize starts at the end.
store::RankRecords windowed(store::RankRecords r, double init) {
  r.info.mpi_init_end = init;
  r.info.mpi_finalize_start = r.info.wall_s;
  return r;
}

AppStep last_rank_triple(bool busy, std::int64_t ivcsw_per_rank) {
  // 1 rank: window 1.0 s of work. 2 ranks: 0.5 s and 1.5 s of work (rank 0 waits 1.0 s).
  PointUsage u1 = point_usage({windowed(rank(0, 1.4, 0.4, 0.0, 1.4), 0.4)});
  auto a0 = windowed(rank(0, 1.9, 0.4, 1.0, 1.9), 0.4), a1 = windowed(rank(1, 1.9, 0.4, 0.0, 1.9), 0.4);
  a0.info.involuntary_ctxsw = a1.info.involuntary_ctxsw = ivcsw_per_rank;
  PointUsage u2 = point_usage({a0, a1});
  // 1 rank on 2 cores: the competitor's 1.5 core-s/s leave 0.5 on the rank's core.
  u1.machine_load = busy ? load(2, 1.4, 1.5 * 1.4) : load(2, 1.4, 0.01);
  u2.machine_load = busy ? load(2, 1.9, 1.0 * 1.9) : load(2, 1.9, 0.02);
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 1);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  StepContext ctx;
  ctx.axis = "ranks";
  ctx.cores = 2;
  return classify_app_step(a, b, 1, 2, a.wall_s, b.wall_s, 0, ctx, Thresholds{});
}

TEST(Pop, EveryLargeFactorIsNamedLargestFirst) {
  AppStep s = last_rank_triple(false, 10);
  EXPECT_EQ(s.diagnosis, "loss");
  ASSERT_EQ(cause_list(s), (std::vector<std::string>{"computation-scaling", "imbalance"})) << s.explanation;
  EXPECT_EQ(s.cause, "computation-scaling");
  EXPECT_NEAR(s.causes[0].factor, 2.0, 0.01);
  EXPECT_NEAR(s.causes[1].factor, 1.5, 0.01);
  EXPECT_NEAR(s.lb_factor * s.comm_factor * s.cs_factor, s.efficiency, 1e-12);
  // The sentence gives each factor.
  EXPECT_NE(s.explanation.find("computation-scaling: "), std::string::npos) << s.explanation;
  EXPECT_NE(s.explanation.find("explains 2x"), std::string::npos) << s.explanation;
  EXPECT_NE(s.explanation.find("imbalance: load balance 1 -> 0.667"), std::string::npos) << s.explanation;
  EXPECT_NE(s.explanation.find("explains 1.5x"), std::string::npos) << s.explanation;
}

TEST(Pop, PreemptionsAloneAreNotMachineLoad) {
  // 124 involuntary switches/s per rank (Open MPI's helpers and the sampler
  // share the cores) on a machine the launcher measured as quiet: the app's
  // own causes, no machine-load (issue 23).
  AppStep s = last_rank_triple(false, static_cast<std::int64_t>(124 * 1.9));
  EXPECT_EQ(cause_list(s), (std::vector<std::string>{"computation-scaling", "imbalance"})) << s.explanation;
  // Without the launcher's measurement (files before 1.7) there is no machine-load either.
  auto r1 = rank(0, 2.0, 0, 0, 2.0), r2 = rank(0, 1.6, 0, 0, 2.8);
  r1.info.involuntary_ctxsw = 10;
  r2.info.involuntary_ctxsw = 320;
  r2.info.omp_threads = 2;
  AppStep t = thread_step(r1, r2, 1.6, kNaN, "");
  EXPECT_EQ(t.diagnosis, "loss");
  for (const auto& c : t.causes) EXPECT_NE(c.cause, "machine-load") << t.explanation;
}

TEST(Pop, MachineLoadIsNamedBesidesTheAppsCauses) {
  AppStep s = last_rank_triple(true, 300);
  EXPECT_EQ(s.diagnosis, "loss");
  const auto causes = cause_list(s);
  ASSERT_EQ(causes.size(), 3u) << s.explanation;
  EXPECT_NE(std::find(causes.begin(), causes.end(), "machine-load"), causes.end()) << s.explanation;
  EXPECT_NE(std::find(causes.begin(), causes.end(), "computation-scaling"), causes.end()) << s.explanation;
  EXPECT_NE(std::find(causes.begin(), causes.end(), "imbalance"), causes.end()) << s.explanation;
  for (std::size_t i = 1; i < s.causes.size(); ++i) EXPECT_GE(s.causes[i - 1].factor, s.causes[i].factor);
  EXPECT_NE(s.explanation.find("other processes took 50% of the 2 cores the point used"), std::string::npos)
      << s.explanation;
  // Steal time alone is evidence too.
  PointUsage u1 = point_usage({rank(0, 2.0, 0, 0, 2.0)}), u2 = point_usage({rank(0, 1.0, 0, 0, 2.0)});
  u1.machine_load = load(2, 2.0, 0.0, 0.0);
  u2.machine_load = load(2, 1.0, 0.0, 0.5);  // 25% of the node's time stolen
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 2);
  EXPECT_NEAR(b.taken_share, 0.25, 1e-12);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  StepContext ctx;
  ctx.axis = "threads";
  ctx.cores = 2;
  AppStep t = classify_app_step(a, b, 1, 2, 2.0, 1.0, 0, ctx, Thresholds{});
  EXPECT_EQ(t.diagnosis, "ideal");  // a busy machine alone never makes a loss
  EXPECT_NE(t.explanation.find("busy machine"), std::string::npos) << t.explanation;
}

TEST(Pop, OtherProcessesOnIdleCoresAreNotTheAppsLoad) {
  // 1 rank on a 2-core node while another process keeps the second core busy:
  // the point's own core was free, so no evidence.
  PointUsage u = point_usage({rank(0, 2.0, 0, 0, 2.0)});
  u.machine_load = load(2, 2.0, 2.0);
  PopPoint p = pop_point(u, 1);
  EXPECT_TRUE(p.load_measured);
  EXPECT_NEAR(p.other_share, 0.0, 1e-12);
  u.machine_load = load(2, 2.0, 3.0);  // 1.5 cores: half of the point's core
  EXPECT_NEAR(pop_point(u, 1).other_share, 0.5, 1e-12);
}

// Synthetic POP numbers of an MPI step from 1 to 2 ranks: load balance `lb`
// (= parallel efficiency) and computation scalability `cs` at 2 ranks.
struct MpiStep {
  PopPoint a, b;
  MpiStep(double lb, double cs, double useful_max_s, double useful_mean_s) {
    a.basis = b.basis = "mpi";
    a.load_balance = a.communication_efficiency = a.parallel_efficiency = a.computation_scalability = 1;
    a.wall_s = a.window_s = 2.0;
    b.load_balance = b.parallel_efficiency = lb;
    b.communication_efficiency = 1;
    b.computation_scalability = cs;
    b.wall_s = b.window_s = 2.0 / (2 * lb * cs);
    b.useful_max_s = useful_max_s;
    b.useful_mean_s = useful_mean_s;
    a.workers = 1;
    b.workers = 2;
  }
  AppStep classify() const {
    StepContext ctx;
    ctx.axis = "ranks";
    return classify_app_step(a, b, 1, 2, a.wall_s, b.wall_s, 0, ctx, Thresholds{});
  }
};

// A gain out of tolerance with no losing factor is ideal, not "offsetting"
// with a negative Karp-Flatt fraction as its cause: a stream app at 109%
// (computation scalability 1.11, Release build) read "offsetting:
// serial-fraction ... Karp-Flatt serial fraction -0.089 explains 0.911x".
TEST(Pop, AGainWithNoLosingFactorIsIdealAndNamesNoSerialFraction) {
  const AppStep s = MpiStep(0.98, 1.11, 0.9, 0.88).classify();
  EXPECT_NEAR(s.efficiency, 0.98 * 1.11, 1e-9);
  EXPECT_EQ(s.diagnosis, "ideal") << s.explanation;
  EXPECT_EQ(s.explanation.find("serial"), std::string::npos) << s.explanation;
  EXPECT_NE(s.explanation.find("no factor loses, computation scalability 1.11 gain"), std::string::npos)
      << s.explanation;
}

TEST(Pop, IdealOnlyWhenEveryFactorIsWithinTolerance) {
  // Synthetic POP numbers: PE 0.85 offset by CS 1.20 -> step efficiency 1.02.
  MpiStep step(0.85, 1.2, 0.98, 0.83);
  PopPoint &a = step.a, &b = step.b;
  StepContext ctx;
  ctx.axis = "ranks";
  AppStep s = step.classify();
  EXPECT_NEAR(s.efficiency, 1.02, 1e-9);
  EXPECT_EQ(s.diagnosis, "offsetting") << s.explanation;
  EXPECT_EQ(s.cause, "imbalance");
  EXPECT_NE(s.explanation.find("factors offset: load balance 0.85 lose, computation scalability 1.2 gain"),
            std::string::npos)
      << s.explanation;
  // 90.3% with load balance 0.88 (out of tolerance) and CS 1.026: a loss, not ideal.
  b.load_balance = b.parallel_efficiency = 0.88;
  b.computation_scalability = 0.903 / 0.88;
  b.wall_s = b.window_s = 2.0 / (2 * 0.903);
  s = classify_app_step(a, b, 1, 2, a.wall_s, b.wall_s, 0, ctx, Thresholds{});
  EXPECT_NEAR(s.efficiency, 0.903, 1e-9);
  EXPECT_EQ(s.diagnosis, "loss") << s.explanation;
  EXPECT_EQ(s.cause, "imbalance");
  // Every factor within tolerance: ideal.
  b.load_balance = b.parallel_efficiency = 0.95;
  b.computation_scalability = 0.97;
  b.wall_s = b.window_s = 2.0 / (2 * 0.95 * 0.97);
  EXPECT_EQ(classify_app_step(a, b, 1, 2, a.wall_s, b.wall_s, 0, ctx, Thresholds{}).diagnosis, "ideal");
}

TEST(Pop, StartupGrowingOnABusyMachineNamesMachineLoadToo) {
  // The window scales (2 s -> 1.02 s) but startup and teardown grow 0.76 s -> 0.99 s,
  // while other processes took 83% of the point's cores: startup and machine-load
  // (a sanitizer CI run: the step named startup alone).
  PopPoint a, b;
  a.basis = b.basis = "mpi";
  a.window_measured = b.window_measured = true;
  a.load_balance = a.communication_efficiency = a.parallel_efficiency = a.computation_scalability = 1;
  b.load_balance = b.communication_efficiency = b.parallel_efficiency = b.computation_scalability = 0.99;
  a.window_s = 2.0;
  a.wall_s = 2.76;
  b.window_s = 1.02;
  b.wall_s = 2.02;
  a.workers = 1;
  b.workers = 2;
  b.load_measured = true;
  b.other_share = b.taken_share = 0.83;
  b.taken_cpu_s = 3.0;
  b.load_cpus = 2;
  StepContext ctx;
  ctx.axis = "ranks";
  ctx.cores = 2;
  AppStep s = classify_app_step(a, b, 1, 2, a.wall_s, b.wall_s, 0, ctx, Thresholds{});
  EXPECT_EQ(s.diagnosis, "loss") << s.explanation;
  const auto causes = cause_list(s);
  EXPECT_NE(std::find(causes.begin(), causes.end(), "startup"), causes.end()) << s.explanation;
  EXPECT_NE(std::find(causes.begin(), causes.end(), "machine-load"), causes.end()) << s.explanation;
  for (std::size_t i = 1; i < s.causes.size(); ++i) EXPECT_GE(s.causes[i - 1].factor, s.causes[i].factor);
  EXPECT_EQ(s.cause, s.causes.front().cause);
  EXPECT_NE(s.explanation.find("other processes took 83%"), std::string::npos) << s.explanation;
}

TEST(Pop, ThreadsUnderMpiHaveTheirOwnUsefulTime) {
  // An OpenMP code linked with MPI, one rank: 1 -> 2 threads, CPU/wall 1.88 at 2
  // threads (6% idle). The thread level puts the idle time in PE, not in CS (issue 25).
  PointUsage u1 = point_usage({windowed(rank(0, 2.4, 0.4, 0.0, 2.0), 0.4)});  // window 2.0 s, 2.0 s CPU of work
  auto r2 = windowed(rank(0, 1.4, 0.4, 0.0, 1.88), 0.4);                     // window 1.0 s, 1.88 s CPU of work
  r2.info.omp_threads = 2;
  PointUsage u2 = point_usage({r2});
  // rusage CPU includes MPI_Init's: the rank spent init_s in it, busy (Open MPI polls).
  u1.ranks[0].user_s += 0.4;
  u2.ranks[0].user_s += 0.4;
  PopPoint a = pop_point(u1, 1), b = pop_point(u2, 2);
  std::vector<PopPoint*> pts{&a, &b};
  pop_scaling(pts, {1.0, 1.0});
  EXPECT_EQ(b.basis, "mpi");
  EXPECT_EQ(b.thread_basis, "cpu-time");
  EXPECT_EQ(a.thread_basis, "cpu-time");  // one basis for the whole group
  EXPECT_NEAR(b.thread_efficiency, 0.94, 1e-9);
  EXPECT_NEAR(b.parallel_efficiency, 0.94, 1e-9);
  EXPECT_NEAR(a.parallel_efficiency, 1.0, 1e-9);
  EXPECT_NEAR(b.computation_scalability, 2.0 / 1.88, 1e-9);
  EXPECT_NEAR(b.global_efficiency, b.parallel_efficiency * b.computation_scalability, 1e-12);
  StepContext ctx;
  ctx.axis = "threads";
  AppStep s = classify_app_step(a, b, 1, 2, a.wall_s, b.wall_s, 0, ctx, Thresholds{});
  EXPECT_NEAR(s.lb_factor * s.comm_factor * s.te_factor * s.cs_factor, s.efficiency, 1e-12);
  // A rank sweep keeps the process level only.
  PopPoint c = pop_point(point_usage({rank(0, 2.0, 0.1, 0.0, 2.0)}), 1);
  EXPECT_EQ(c.thread_basis, "");
  EXPECT_FALSE(available(c.thread_efficiency));
}

namespace {
// Call paths of one thread: `work` samples in main, `wait` in the OpenMP runtime.
void add_samples(store::RankRecords& r, int thread, std::int64_t work, std::int64_t wait) {
  if (r.sampling.empty()) {
    store::SamplingRow row{};
    row.rate_hz = 250;
    row.period_s = 0.004;
    r.sampling.push_back(row);
  }
  auto node = [&](std::int64_t parent, const char* fn, const char* cat, std::int64_t self) {
    store::CallPathRow c{};
    c.node_id = static_cast<std::int64_t>(r.callpaths.size());
    c.parent_id = parent;
    c.thread = thread;
    c.function_id = name_id(r, fn);
    c.module_id = -1;
    c.file_id = -1;
    store::set_str(c.category, cat);
    c.self_samples = self;
    c.inclusive_samples = self;
    r.callpaths.push_back(c);
    return c.node_id;
  };
  const auto root = node(-1, "main", "app", work);
  if (wait > 0) node(root, "gomp_barrier_wait", "openmp", wait);
}
}  // namespace

TEST(Pop, SampledOpenMpWaitIsIdleThreadTime) {
  // 2 threads, 1 s window: thread 1 spins 0.4 s at the barrier (CPU/wall 2.0,
  // so the CPU time says nothing); its samples in the OpenMP runtime are idle time.
  auto r1 = rank(0, 1.0, 0, 0, 1.0);
  add_samples(r1, 0, 250, 0);
  auto r2 = rank(0, 1.0, 0, 0, 2.0);
  r2.info.omp_threads = 2;
  add_samples(r2, 0, 250, 0);
  add_samples(r2, 1, 150, 100);
  PopPoint a = pop_point(point_usage({r1}), 1), b = pop_point(point_usage({r2}), 2);
  EXPECT_EQ(b.basis, "cpu-time");
  EXPECT_EQ(b.thread_basis, "sampled");
  EXPECT_NEAR(b.parallel_efficiency, 0.8, 1e-9);  // 20% of the workers' time idle
  EXPECT_EQ(b.working_threads, 2);
  EXPECT_NEAR(b.sampled_wait_share, 0.2, 1e-9);
}


// An MPI-linked OpenMP code, one rank, 2 threads, a 1.0 s window in which the
// threads did 1.6 s of work (20 % idle, waiting asleep: no samples of it).
// MPI_Init took 0.27 s of wall and 0.08 s of CPU (the omp known answer here:
// 0.078 s). The CPU time at the window's ends (run-file 1.9) keeps that
// start-up out of both thread bases, and MPI_Init's samples out of the
// sampled share: PE 0.8. With the whole process's CPU time the sampled basis
// read 0.80 only because MPI_Init's samples counted as waits (0.84 without
// them); the cpu-time basis, which took MPI_Init out by its wall time, 0.705.
TEST(Pop, TheThreadBasesCountTheWindowsCpuTimeNotMpisStartup) {
  const auto point = [](bool cpu_stamps, bool sampled) {
    auto r = windowed(rank(0, 1.32, 0.27, 0.0, 1.68), 0.3);  // window 0.3 .. 1.3 s
    r.info.mpi_finalize_start = 1.3;
    r.info.omp_threads = 2;
    if (cpu_stamps) {
      r.info.cpu_at_mpi_init_end = 0.08;
      r.info.cpu_at_mpi_finalize_start = 1.68;
    }
    if (sampled) {
      add_samples(r, 0, 200, 0);
      add_samples(r, 1, 200, 0);
      // MPI_Init's 0.08 s of CPU: 20 samples in Open MPI's start-up, under main.
      store::CallPathRow init{};
      init.node_id = static_cast<std::int64_t>(r.callpaths.size());
      init.parent_id = 0;  // thread 0's main
      init.thread = 0;
      init.function_id = name_id(r, "MPI_Init");
      init.module_id = init.file_id = -1;
      store::set_str(init.category, "rtrace");
      r.callpaths.push_back(init);
      store::CallPathRow ompi = init;
      ompi.node_id = init.node_id + 1;
      ompi.parent_id = init.node_id;
      ompi.function_id = name_id(r, "ompi_mpi_init");
      store::set_str(ompi.category, "mpi");
      ompi.self_samples = ompi.inclusive_samples = 20;
      r.callpaths.push_back(ompi);
    }
    return pop_point(point_usage({r}), 2);
  };
  for (bool sampled : {true, false}) {
    const PopPoint p = point(true, sampled);
    EXPECT_EQ(p.thread_basis, sampled ? "sampled" : "cpu-time");
    EXPECT_NEAR(p.thread_efficiency, 0.8, 1e-9) << p.thread_basis;
    EXPECT_NEAR(p.parallel_efficiency, 0.8, 1e-9) << p.thread_basis;
    if (sampled) {
      EXPECT_NEAR(p.sampled_wait_share, 0.0, 1e-12);  // MPI_Init's samples are outside the window
    }
  }
  // Files without the stamps (before 1.9) keep the old estimates: the whole
  // process's CPU time, MPI_Init's samples among the waits.
  EXPECT_NEAR(point(false, true).thread_efficiency, 1.68 * 400 / 420 / 2, 1e-9);
  EXPECT_NEAR(point(false, false).thread_efficiency, 0.705, 1e-9);
}

// 1 -> 2 threads, wall 2.0 -> 1.8, CPU 2.0 -> 2.16 s (CPU/wall 1.2 at 2
// threads), `working` of the two threads with samples, and each point's
// voluntary context switches.
static AppStep two_thread_step(int working, std::int64_t vcsw1, std::int64_t vcsw2, double serial_share,
                               const char* serial_function, double taken_share = kNaN) {
  auto r1 = rank(0, 2.0, 0, 0, 2.0), r2 = rank(0, 1.8, 0, 0, 2.16);
  r2.info.omp_threads = 2;
  r1.info.voluntary_ctxsw = vcsw1;
  r2.info.voluntary_ctxsw = vcsw2;
  add_samples(r1, 0, 500, 0);
  add_samples(r2, 0, 400, 0);
  if (working == 2) add_samples(r2, 1, 100, 0);  // else the second thread never ran
  return thread_step(r1, r2, 1.8, serial_share, serial_function, taken_share);
}

TEST(Pop, ThreadLossIsNamedFromSamplesAndSwitches) {
  // 1 -> 2 threads, wall 2.0 -> 1.8, CPU/wall 1.2 at 2 threads.
  auto step = [](int working_threads_of_two, double vcsw_per_s, double serial_share) {
    return two_thread_step(working_threads_of_two, 10, static_cast<std::int64_t>(vcsw_per_s * 1.8), serial_share,
                           "setup_mesh");
  };
  // The sampled functions say serial: serial-fraction, not threads-unused (CPU/wall 1.2).
  AppStep serial = step(2, 20, 0.9);
  EXPECT_EQ(serial.cause, "serial-fraction") << serial.explanation;
  EXPECT_NE(serial.explanation.find("`setup_mesh`"), std::string::npos) << serial.explanation;
  // Only one thread ran at all: the app ignores its threads.
  EXPECT_EQ(step(1, 20, 0.9).cause, "threads-unused");
  // Hundreds of voluntary switches per thread and second: threads block on a lock.
  EXPECT_EQ(step(2, 2000, 0.1).cause, "lock-wait");
  // Work under a lock is serialised, so its samples look constant-time too: the
  // switches decide (the lock app on a quiet machine was named serial-fraction).
  EXPECT_EQ(step(2, 2000, 1.0).cause, "lock-wait");
  // Nothing says why: CPU/wall says the added thread waits.
  EXPECT_EQ(step(2, 20, kNaN).cause, "threads-unused");
}

// Under other processes' load a thread waiting at a barrier for a partner the
// scheduler took off the CPU blocks too: the stream app (no lock) under two
// busy loops made 61-67 voluntary switches per CPU second and was named
// lock-wait (a CI run); a lock under load makes hundreds.
TEST(Pop, BarrierWaitsOnABusyMachineAreNotALock) {
  auto step = [](double vcsw_per_cpu_s, double taken_share) {
    return two_thread_step(2, 2, static_cast<std::int64_t>(vcsw_per_cpu_s * 2.16), 0.1, "stream_passes", taken_share);
  };
  const auto has = [](const AppStep& s, const char* c) {
    const auto l = cause_list(s);
    return std::find(l.begin(), l.end(), c) != l.end();
  };
  AppStep busy = step(67, 0.5);
  EXPECT_FALSE(has(busy, "lock-wait")) << busy.explanation;
  EXPECT_TRUE(has(busy, "machine-load")) << busy.explanation;
  AppStep lock = step(430, 0.5);
  EXPECT_TRUE(has(lock, "lock-wait")) << lock.explanation;
  AppStep quiet = step(67, kNaN);  // the same switches on a quiet machine: blocking
  EXPECT_TRUE(has(quiet, "lock-wait")) << quiet.explanation;
}

// A busy machine: the second thread's timer signals never came (its CPU time
// is in the sampling table's `dropped`, 2 threads armed, 1 with samples). The
// samples cannot say it never ran: not threads-unused (the serial samples
// decide). Before, the serial app under two competing loops was threads-unused.
TEST(Pop, ThreadsTheSamplesMissedAreNotUnused) {
  auto step = [](std::int64_t dropped) {
    auto r1 = rank(0, 2.0, 0, 0, 2.0), r2 = rank(0, 1.8, 0, 0, 2.16);
    r2.info.omp_threads = 2;
    add_samples(r1, 0, 500, 0);
    add_samples(r2, 0, 440, 0);
    r2.sampling[0].threads = 2;
    r2.sampling[0].dropped = dropped;
    return thread_step(r1, r2, 1.8, 0.9, "setup");
  };
  EXPECT_EQ(step(0).cause, "threads-unused");   // every armed thread's CPU time sampled: it never ran
  const AppStep missed = step(12);              // 48 ms of CPU time no sample shows
  EXPECT_EQ(missed.cause, "serial-fraction") << missed.explanation;
  auto r = rank(0, 1.8, 0, 0, 2.16);
  add_samples(r, 0, 440, 0);
  r.sampling[0].dropped = 110;
  EXPECT_NEAR(pop_point(point_usage({r}), 2).sampled_coverage, 440.0 / 550.0, 1e-12);
  // No signal at all (no call paths), its CPU time all dropped: coverage 0, not unknown.
  auto silent = rank(0, 1.0, 0, 0, 0.5);
  store::SamplingRow row{};
  row.rate_hz = 250;
  row.period_s = 0.004;
  row.threads = 1;
  row.dropped = 125;
  silent.sampling.push_back(row);
  EXPECT_DOUBLE_EQ(pop_point(point_usage({silent}), 1).sampled_coverage, 0.0);
}

// Samples that show under 80% of the CPU time at a point are not read for
// shapes, and the step's sentence says so (a busy machine's time slicing).
TEST(Pop, LowSampledCoverageIsSaidAndItsShapesUnused) {
  auto r1 = rank(0, 2.0, 0, 0, 2.0), r2 = rank(0, 1.8, 0, 0, 2.16);
  r2.info.omp_threads = 2;
  add_samples(r1, 0, 500, 0);
  add_samples(r2, 0, 300, 0);
  r2.sampling[0].dropped = 240;  // 300 of 540 periods sampled: 56%
  AppSummary sum;
  for (int i = 0; i < 2; ++i) {
    AppPoint p;
    p.config = i;
    p.concurrency = i + 1;
    p.time_s = i == 0 ? 2.0 : 1.8;
    p.pop = pop_point(point_usage({i == 0 ? r1 : r2}), i + 1);
    sum.points.push_back(p);
  }
  ProfileResult profile;  // present, so the shapes would be read
  summarise_steps(sum, "threads", 2, Thresholds{}, &profile);
  ASSERT_EQ(sum.steps.size(), 1u);
  const std::string& e = sum.steps[0].explanation;
  EXPECT_NE(e.find("the samples show only 56% of the CPU time at threads=2"), std::string::npos) << e;
}

// Both threads busy (CPU/wall 1.8), 12% of the thread time lost to waits in the
// runtime, and the samples' lost time in parallel code: the threads wait for
// each other. Before, the fallback named it serial-fraction ("part of the run
// uses fewer threads") though the samples said no function was serial (the
// bandwidth-bound known answer at PE 0.895, issue 23).
TEST(Pop, ThreadWaitsWithoutSerialSamplesAreImbalance) {
  auto step = [](double serial_share) {
    auto r1 = rank(0, 2.0, 0, 0, 2.0), r2 = rank(0, 1.1, 0, 0, 1.98);
    r2.info.omp_threads = 2;
    add_samples(r1, 0, 500, 0);
    add_samples(r2, 0, 250, 0);
    add_samples(r2, 1, 190, 60);  // the second thread waits at the barriers
    return thread_step(r1, r2, 1.1, serial_share, "setup");
  };
  const AppStep parallel = step(0.1);
  ASSERT_FALSE(parallel.causes.empty()) << parallel.explanation;
  EXPECT_EQ(parallel.cause, "imbalance") << parallel.explanation;
  EXPECT_NE(parallel.explanation.find("the threads wait for each other"), std::string::npos) << parallel.explanation;
  EXPECT_NE(parallel.explanation.find("90% of the sampled lost time"), std::string::npos) << parallel.explanation;
  // Serial samples: serial-fraction, the function named.
  EXPECT_EQ(step(0.8).cause, "serial-fraction");
  // A third serial, the rest a loop's contention (the demo): the serial reading, its share said.
  const AppStep mixed = step(0.33);
  EXPECT_EQ(mixed.cause, "serial-fraction") << mixed.explanation;
  EXPECT_NE(mixed.explanation.find("33% of the sampled lost time is in functions whose time stays constant on one "
                                   "thread, the largest `setup`"),
            std::string::npos)
      << mixed.explanation;
  // No samples to tell: the Karp-Flatt reading stays.
  EXPECT_EQ(step(kNaN).cause, "serial-fraction");
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

TEST(Pop, SampledSpinInTheRuntimeIsSpinWaitAndAppCodeThatSlowsIsComputationScaling) {
  auto step = [](std::int64_t wait1, double serial_share) {
    // 1 -> 2 threads, wall 2 s at both, CPU 2 s -> 4 s (CPU/wall 2).
    auto r1 = rank(0, 2.0, 0, 0, 2.0), r2 = rank(0, 2.0, 0, 0, 4.0);
    r2.info.omp_threads = 2;
    add_samples(r1, 0, 500, 0);
    add_samples(r2, 0, 500, 0);
    add_samples(r2, 1, 500 - wait1, wait1);
    return thread_step(r1, r2, 2.0, serial_share, "setup");
  };
  // The second thread spins at the barrier (an active wait policy): idle time, spin-wait.
  AppStep spin = step(500, kNaN);
  EXPECT_EQ(spin.cause, "spin-wait") << spin.explanation;
  EXPECT_NEAR(spin.pe_factor, 0.5, 1e-9);
  // ... while the first runs serial code: the serial part is the cause, the spinning its symptom.
  AppStep serial = step(500, 1.0);
  EXPECT_EQ(serial.cause, "serial-fraction") << serial.explanation;
  EXPECT_NE(serial.explanation.find("the waiting threads spin"), std::string::npos) << serial.explanation;
  // Both threads in app code for twice the CPU time (memory bandwidth, replicated work): CS, not spinning.
  AppStep slow = step(0, kNaN);
  EXPECT_EQ(slow.cause, "computation-scaling") << slow.explanation;
}

TEST(Pop, RanksGroupedByHostNameTheSlowestNode) {
  // 4 hosts of 2 ranks; node3's ranks compute 3 s, the others 1 s (rest of a 3 s window in MPI).
  std::vector<store::RankRecords> ranks;
  for (int r = 0; r < 8; ++r) {
    const bool slow = r / 2 == 2;
    ranks.push_back(rank(r, 3.0, 0.1, slow ? 0.0 : 2.0, 3.0));
    store::set_str(ranks.back().info.host, "node" + std::to_string(r / 2 + 1));
  }
  PointUsageBuilder b;
  for (const auto& r : ranks) b.add(r);  // one rank at a time: the same as point_usage
  const PointUsage u = b.finish();
  EXPECT_EQ(u.ranks.size(), 8u);
  const NodeBalance nb = node_balance(u, {0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_EQ(nb.nodes.size(), 4u);
  EXPECT_EQ(nb.nodes[0].host, "node1");
  EXPECT_EQ(nb.nodes[2].rank_list, "4-5");
  EXPECT_NEAR(nb.nodes[2].useful_mean_s, 3.0, 1e-12);
  EXPECT_NEAR(nb.nodes[0].useful_mean_s, 1.0, 1e-12);
  EXPECT_EQ(nb.slowest, "node3");
  EXPECT_NEAR(nb.balance, (1.0 + 1.0 + 3.0 + 1.0) / 4 / 3.0, 1e-12);
  EXPECT_NEAR(nb.slowest_over_others, 3.0, 1e-12);
  // One host: nothing to compare.
  const NodeBalance one = node_balance(point_usage({rank(0, 1.0, 0, 0, 1.0)}), {0});
  EXPECT_EQ(one.nodes.size(), 1u);
  EXPECT_TRUE(std::isnan(one.balance));
  EXPECT_TRUE(one.slowest.empty());
}
