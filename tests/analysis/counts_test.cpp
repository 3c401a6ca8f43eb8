// Counted operations (run-file schema 1.7 count tables) in the analysis:
// synthetic runs written through the store API with known answers, for the
// counting pass ("sim:") and the PMU ("pmu:") alike.
#include "rtrace/analysis/analyze.hpp"
#include "rtrace/analysis/dataset.hpp"
#include "rtrace/analysis/report.hpp"
#include "synthetic_run.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace rtrace;
using namespace rtrace::analysis;

namespace {

const double kNan = std::nan("");
const char* const kSim = "sim:rtrace-count 0.1.0 valgrind-3.19.0";
const char* const kKernelFn = "stream_kernel(double*, long) [clone ._omp_fn.0]";

std::string temp_path(const std::string& name) {
  return std::string(RTRACE_BINARY_DIR) + "/tests/analysis/counts-" + name + "-" + std::to_string(::getpid()) + ".h5";
}
void remove_run(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::filesystem::remove_all(path + ".d", ec);
}

struct Roof {
  double l1, l2, l3, dram, fp64;
};
std::vector<store::CeilingRow> ceilings(const Roof& r) {
  return {synth::bandwidth("L1d", r.l1), synth::bandwidth("L2", r.l2), synth::bandwidth("L3", r.l3),
          synth::bandwidth("DRAM", r.dram), synth::compute("FP64 FMA", "fp64", "fma", r.fp64)};
}

// An unannotated OpenMP app at `threads`: one rank, wall `wall_s`, counted by
// the counting pass: 90% of the FLOPs and bytes in the OpenMP region of
// `stream_kernel`, split evenly over the threads, 10% in `main` on thread 0.
// The sampled time follows the same split (1 ms samples) when `sample`.
synth::SynthPoint omp_point(std::int64_t id, int threads, const Roof& roof, double wall_s, double flops,
                            const std::array<double, 4>& bytes, bool sample = true, int repeat = 0,
                            bool with_counts = true) {
  synth::SynthPoint p;
  p.row = synth::point_row(id, "threads=" + std::to_string(threads), threads, 1, 1, -1, repeat);
  p.ceilings = ceilings(roof);
  store::RankRecords rr = synth::rank(0, wall_s);
  rr.info.omp_threads = threads;
  rr.info.user_s = wall_s * threads;
  if (with_counts) {
    synth::counts_info(rr, kSim, "ok", "", threads, true);
    synth::count_level(rr, "L3", (32 << 20) / threads, 32 << 20, threads);
    const double kernel_instructions = 4 * flops, main_instructions = 0.4 * flops;
    for (int t = 0; t < threads; ++t)
      synth::count_row(rr, t, kKernelFn, 0.9 * flops / threads, 0.9 * bytes[0] / threads, 0.9 * bytes[1] / threads,
                       0.9 * bytes[2] / threads, 0.9 * bytes[3] / threads, kernel_instructions / threads);
    synth::count_row(rr, 0, "main", 0.1 * flops, 0.1 * bytes[0], 0.1 * bytes[1], 0.1 * bytes[2], 0.1 * bytes[3],
                     main_instructions);
    synth::count_row(rr, 0, "", 0, 0, 0, 0, 0, 1000);  // startup code the tool did not attribute
  }
  if (sample) {
    for (int t = 0; t < threads; ++t)
      synth::sampled(rr, t, kKernelFn, static_cast<std::int64_t>(std::llround(0.9 * wall_s * 1000)));
    synth::sampled(rr, 0, "main", static_cast<std::int64_t>(std::llround(0.1 * wall_s * 1000)));
  }
  p.ranks.push_back(std::move(rr));
  return p;
}

AnalysisResult analyze_points(const std::string& name, const std::vector<synth::SynthPoint>& points) {
  const std::string path = temp_path(name);
  synth::write_run(path, {{"threads", "1,2"}}, points);
  AnalysisResult res = analyze(load_run(path), AnalyzeOptions{});
  remove_run(path);
  return res;
}

int kernel_index(const AnalysisResult& res, const std::string& kind, const std::string& name = "") {
  for (std::size_t i = 0; i < res.kernels.size(); ++i)
    if (res.kernels[i].kind == kind && (name.empty() || res.kernels[i].name == name)) return static_cast<int>(i);
  return -1;
}

const TrajectoryStep& first_step(const AnalysisResult& res, int kernel) {
  for (const auto& t : res.trajectories)
    if (t.kernel == kernel && !t.steps.empty()) return t.steps.front();
  ADD_FAILURE() << "no trajectory for kernel " << kernel;
  static TrajectoryStep none;
  return none;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// Known answer: the per-thread table fits its share of L3 at 1 thread and
// not at 2: the L3 -> DRAM bytes jump 20x, the FLOPs stay. Roofline model
// times: 1 thread bound by L1/L2 at 12.5 GFLOP/s, 2 threads by DRAM at
// 12 GB/s x AI 0.5 = 6 GFLOP/s, both at 80% of their bound.
const Roof kRoof1{100, 50, 30, 10, 100}, kRoof2{200, 100, 60, 12, 200};
const double kF = 1e9;
const std::array<double, 4> kFits{8e9, 4e9, 2e9, 1e8}, kSpills{8e9, 4e9, 2e9, 2e9};
const double kT1 = kF / (0.8 * 12.5e9), kT2 = kF / (0.8 * 6e9);

}  // namespace

TEST(Counts, RowsSumOverThreadsAndFunctionsWithReadsAndWriteBacks) {
  store::RankRecords rr = synth::rank(0, 1.0);
  synth::counts_info(rr, kSim, "ok", "", 2, true);
  synth::count_row(rr, 0, "f", 1e6, 8e6, 4e6, 2e6, 1e6, 5e6);
  synth::count_row(rr, 1, "f", 1e6, 8e6, 4e6, 2e6, 1e6, 5e6);
  synth::count_row(rr, 0, "", 0, 1e3, 0, 0, 0, 1e3);  // not attributed: the application only
  store::CountRow& fp32 = rr.counts.front();
  fp32.flops_fp32_scalar = 5e5;
  PointAggregate agg = aggregate_ranks({rr});
  ASSERT_TRUE(agg.counts.usable);
  EXPECT_EQ(agg.counts.source, kSim);
  EXPECT_TRUE(agg.counts.serialised);
  ASSERT_EQ(agg.kernels.size(), 2u);
  const KernelAtPoint& app = agg.kernels[0];
  EXPECT_EQ(app.kind, "application");
  EXPECT_EQ(app.counts_source, kSim);
  EXPECT_DOUBLE_EQ(app.counts.flops_fp64, 2e6);
  EXPECT_DOUBLE_EQ(app.counts.flops_fp32, 5e5);
  EXPECT_DOUBLE_EQ(app.counts.bytes[0], 16e6 + 1e3);  // reads + write-backs
  EXPECT_DOUBLE_EQ(app.counts.bytes[3], 2e6);
  EXPECT_DOUBLE_EQ(app.counted_instructions, 10e6 + 1e3);
  EXPECT_TRUE(std::isnan(app.time_s));                // times come from the timed run, later
  const KernelAtPoint& f = agg.kernels[1];
  EXPECT_EQ(f.kind, "function");
  EXPECT_EQ(f.name, "f");
  EXPECT_DOUBLE_EQ(f.counts.total_flops(), 2.5e6);
  EXPECT_DOUBLE_EQ(f.counts.bytes[1], 8e6);
  EXPECT_EQ(f.ranks_present, 1);
}

TEST(Counts, TheToolsOwnRowsCountForTheApplicationAndAreNoFunction) {
  store::RankRecords rr = synth::rank(0, 1.0);
  synth::counts_info(rr, kSim, "ok", "", 1, true);
  synth::count_row(rr, 0, "f", 1e6, 8e6, 4e6, 2e6, 1e6, 5e6);
  synth::count_row(rr, 0, "[dirty lines written back at exit]", 0, 0, 64, 64, 64, 0);
  PointAggregate agg = aggregate_ranks({rr});
  ASSERT_EQ(agg.kernels.size(), 2u);
  EXPECT_EQ(agg.kernels[0].kind, "application");
  EXPECT_DOUBLE_EQ(agg.kernels[0].counts.bytes[3], 1e6 + 64);
  EXPECT_EQ(agg.kernels[1].name, "f");
}

TEST(Counts, WhatTheSourceCannotSeeStaysUnavailableNeverZero) {
  // A PMU without L3 events and without write-back events: L3 n/a, DRAM = reads only.
  store::RankRecords rr = synth::rank(0, 1.0);
  synth::counts_info(rr, "pmu:skl FP_ARITH_INST_RETIRED.*", "partial", "no L3 event", 1);
  synth::count_row(rr, -1, "", 1e9, kNan, 2e8, kNan, 1e8);
  rr.counts.back().bytes_dram_write = kNan;
  rr.counts.back().bytes_l2_read = kNan;  // write-backs alone do not make a level
  PointAggregate agg = aggregate_ranks({rr});
  ASSERT_EQ(agg.kernels.size(), 1u);
  const auto& k = agg.kernels[0];
  EXPECT_TRUE(std::isnan(k.counts.bytes[0]));
  EXPECT_TRUE(std::isnan(k.counts.bytes[1]));
  EXPECT_TRUE(std::isnan(k.counts.bytes[2]));
  EXPECT_DOUBLE_EQ(k.counts.bytes[3], 0.75e8);
  EXPECT_EQ(agg.counts.status, "partial");
  KernelAtPoint timed = k;
  timed.time_s = 1;
  RooflineEval e = evaluate(timed, CeilingSet{});
  EXPECT_TRUE(std::isnan(e.ai[2]));
  EXPECT_NEAR(e.ai[3], 1e9 / 0.75e8, 1e-9);
}

TEST(Counts, UnavailableCountsGiveNoKernelsAndSayWhy) {
  auto a = omp_point(0, 1, kRoof1, kT1, kF, kFits, false, 0, false);
  auto b = omp_point(1, 2, kRoof2, kT2, kF, kSpills, false, 0, false);
  for (auto* p : {&a, &b})
    synth::counts_info(p->ranks[0], "pmu:perf_event", "unavailable",
                       "perf_event_open: No such file or directory (no PMU in this VM)");
  AnalysisResult res = analyze_points("unavailable", {a, b});
  EXPECT_TRUE(res.kernels.empty());
  EXPECT_FALSE(res.counts_available);
  EXPECT_TRUE(any_contains(res.warnings, "counts unavailable at threads=1, threads=2"));
  EXPECT_TRUE(any_contains(res.warnings, "no PMU in this VM"));
  EXPECT_TRUE(any_contains(res.warnings, "whole-application diagnosis only"));
  EXPECT_TRUE(any_contains(res.hints, "--counts sim"));
}

TEST(Counts, UnannotatedOmpAppSpillingItsL3ShareIsCacheCapacityAtL3FromCountsAlone) {
  AnalysisResult res = analyze_points("cache", {omp_point(0, 1, kRoof1, kT1, kF, kFits),
                                                omp_point(1, 2, kRoof2, kT2, kF, kSpills)});
  EXPECT_EQ(res.axis, "threads");
  EXPECT_TRUE(res.counts_available);
  EXPECT_FALSE(any_contains(res.warnings, "whole-application diagnosis only"));
  const int app = kernel_index(res, "application");
  ASSERT_EQ(app, 0) << "the application leads";
  const auto& s = res.kernels[static_cast<std::size_t>(app)];
  EXPECT_NEAR(s.eval[0].ai[3], 10, 1e-9);
  EXPECT_NEAR(s.eval[1].ai[3], 0.5, 1e-9);
  EXPECT_NEAR(s.eval[0].ai[0], 0.125, 1e-12);
  EXPECT_NEAR(s.eval[0].gflops, 10, 1e-6);          // F / the timed run's wall time
  EXPECT_EQ(s.eval[1].binding_ceiling, "DRAM");
  const auto& st = first_step(res, app);
  EXPECT_EQ(st.d.diagnosis, "cache-capacity");
  EXPECT_EQ(st.d.cache, "L3");
  EXPECT_EQ(st.d.level, "DRAM");
  EXPECT_NEAR(st.d.factors.ai_ratio, 0.05, 1e-9);
  // The OpenMP region of stream_kernel: its sampled time, the same verdict.
  const int fn = kernel_index(res, "function", "stream_kernel (OpenMP region)");
  ASSERT_GE(fn, 0);
  const auto& fs = res.kernels[static_cast<std::size_t>(fn)];
  EXPECT_NEAR(res.run.configs[0].kernels[static_cast<std::size_t>(fs.at[0])].time_s, 0.9 * kT1, 1e-3);
  EXPECT_NEAR(fs.eval[0].gflops, 0.9 * kF / (0.9 * kT1) / 1e9, 0.01);
  EXPECT_EQ(first_step(res, fn).d.diagnosis, "cache-capacity");
  // In words, with the source.
  ASSERT_EQ(res.summaries.size(), 1u);
  EXPECT_TRUE(any_contains(res.summaries[0].sentences, std::string("Counted roofline (") + kSim +
                                                           "): the application stops scaling past threads=1: "
                                                           "cache-capacity at L3 (DRAM AI falls)"));
}

TEST(Counts, StreamingAppOnAFlatDramCeilingIsBandwidthContention) {
  const double F = 2e9;
  const std::array<double, 4> bytes{32e9, 24e9, 24e9, 24e9};
  const Roof r1{400, 200, 100, 10, 100}, r2{800, 400, 200, 11, 200};
  const double t1 = F / (0.9 * 10e9 * F / 24e9), t2 = F / (0.9 * 11e9 * F / 24e9);
  AnalysisResult res = analyze_points("stream", {omp_point(0, 1, r1, t1, F, bytes), omp_point(1, 2, r2, t2, F, bytes)});
  const auto& st = first_step(res, kernel_index(res, "application"));
  EXPECT_EQ(st.d.diagnosis, "bandwidth-contention");
  EXPECT_EQ(st.d.level, "DRAM");
  EXPECT_NEAR(st.d.speedup, 1.1, 1e-6);
  EXPECT_NEAR(st.d.factors.ai_ratio, 1, 1e-12);
}

TEST(Counts, ComputeBoundAppOnAPeakThatDoesNotDoubleIsComputeBound) {
  const double F = 1e12;
  const std::array<double, 4> bytes{1e11, 1e10, 1e9, 1e8};
  const Roof r1{400, 200, 100, 10, 100}, r2{800, 400, 200, 20, 110};
  AnalysisResult res =
      analyze_points("compute", {omp_point(0, 1, r1, F / 90e9, F, bytes), omp_point(1, 2, r2, F / 99e9, F, bytes)});
  const auto& st = first_step(res, kernel_index(res, "application"));
  EXPECT_EQ(st.d.diagnosis, "compute-bound");
  EXPECT_EQ(st.d.factors.basis, "compute");
}

TEST(Counts, OneRepeatsCountsServeAllRepeatsAndTimesStayTheTimedRuns) {
  // threads=1 and threads=2 with 3 repeats each; only repeat 0 was counted.
  std::vector<synth::SynthPoint> pts;
  const double walls1[] = {kT1, kT1 * 1.1, kT1 * 0.95}, walls2[] = {kT2, kT2 * 1.2, kT2 * 0.9};
  for (int r = 0; r < 3; ++r) pts.push_back(omp_point(r, 1, kRoof1, walls1[r], kF, kFits, true, r, r == 0));
  for (int r = 0; r < 3; ++r) pts.push_back(omp_point(3 + r, 2, kRoof2, walls2[r], kF, kSpills, true, r, r == 0));
  const std::string path = temp_path("repeats");
  synth::write_run(path, {{"threads", "1,2"}}, pts);
  RunData run = load_run(path);
  remove_run(path);
  ASSERT_EQ(run.configs.size(), 2u);
  const KernelAtPoint* app = run.configs[0].find("application", "application");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->repeats, 3);
  EXPECT_NEAR(app->time_s, kT1, 1e-12);              // the median wall of the three repeats
  EXPECT_NEAR(app->counts.flops_fp64, kF, 1);        // counted once
  EXPECT_NEAR(app->time_spread, 0.15 * kT1 / kT1, 1e-9);
  const KernelAtPoint* fn = run.configs[1].find("function", "stream_kernel (OpenMP region)");
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn->repeats, 3);                          // sampled in every repeat
  EXPECT_NEAR(fn->time_s, 0.9 * kT2, 2e-3);
  EXPECT_EQ(run.configs[1].counts.source, kSim);
  ASSERT_EQ(run.configs[1].counts.levels.size(), 1u);
  EXPECT_EQ(run.configs[1].counts.levels[0].size_bytes, 16 << 20);
}

TEST(Counts, FunctionWithoutSamplesHasAiButNoPerformance) {
  AnalysisResult res = analyze_points("nosamples", {omp_point(0, 1, kRoof1, kT1, kF, kFits, false),
                                                    omp_point(1, 2, kRoof2, kT2, kF, kSpills, false)});
  const int fn = kernel_index(res, "function", "stream_kernel (OpenMP region)");
  ASSERT_GE(fn, 0);
  const auto& s = res.kernels[static_cast<std::size_t>(fn)];
  EXPECT_NEAR(s.eval[0].ai[3], 10, 1e-9);
  EXPECT_TRUE(std::isnan(s.eval[0].gflops));
  const std::string text = render_text(res);
  EXPECT_NE(text.find("no sampled time"), std::string::npos) << text;
}

TEST(Counts, TopFunctionsByCountedInstructionsAHandfulAtMost) {
  std::vector<store::CeilingRow> roof = ceilings(kRoof1);
  synth::SynthPoint p;
  p.row = synth::point_row(0, "threads=1", 1);
  p.ceilings = roof;
  store::RankRecords rr = synth::rank(0, 1.0);
  synth::counts_info(rr, kSim);
  // f0..f7: instruction shares 30, 20, 15, 10, 8, 6, 3 (below 5%), 8 (no FLOPs: no roofline).
  const double share[] = {0.30, 0.20, 0.15, 0.10, 0.08, 0.06, 0.03, 0.08};
  for (int i = 0; i < 8; ++i)
    synth::count_row(rr, 0, "f" + std::to_string(i) + "(int)", i == 7 ? 0 : 1e6, 1e6, 0, 0, 0, share[i] * 1e9);
  p.ranks.push_back(rr);
  const std::string path = temp_path("top");
  synth::write_run(path, {{"threads", "1"}}, {p});
  RunData run = load_run(path);
  remove_run(path);
  std::vector<std::string> names;
  for (const auto& k : run.configs[0].kernels)
    if (k.kind == "function") names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"f0", "f1", "f2", "f3", "f4"}));
}

TEST(Counts, DeclaredRegionsWinAndDisagreementsAboveTenPercentAreSaid) {
  // Region "stream_kernel" declares 20% fewer FLOPs than its counted OpenMP region.
  auto a = omp_point(0, 1, kRoof1, kT1, kF, kFits);
  auto b = omp_point(1, 2, kRoof2, kT2, kF, kSpills);
  synth::region(a.ranks[0], "stream_kernel", 0.9 * kT1, 0.72 * kF, kNan, kNan, kNan, 0.9 * kFits[3]);
  synth::region(b.ranks[0], "stream_kernel", 0.9 * kT2, 0.72 * kF, kNan, kNan, kNan, 0.9 * kSpills[3]);
  AnalysisResult res = analyze_points("declared", {a, b});
  EXPECT_LT(kernel_index(res, "function", "stream_kernel (OpenMP region)"), 0) << "the declaration wins";
  EXPECT_GE(kernel_index(res, "region", "stream_kernel"), 0);
  EXPECT_GE(kernel_index(res, "application"), 0);
  // Two FLOP checks per configuration: the region against its function (-20%),
  // the declared regions' sum against the whole application (0.72 of 1: -28%).
  const auto& checks = res.run.configs[0].counts_checks;
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].kernel, "application");
  EXPECT_NEAR(checks[0].difference, -0.28, 1e-9);
  EXPECT_EQ(checks[1].kernel, "stream_kernel");
  EXPECT_EQ(checks[1].function, kKernelFn);
  EXPECT_EQ(checks[1].quantity, "FLOPs");
  EXPECT_NEAR(checks[1].difference, 0.72 / 0.9 - 1, 1e-9);
  EXPECT_TRUE(any_contains(res.counts_notes, "declared regions (sum) and the counted application disagree: FLOPs"));
  EXPECT_TRUE(any_contains(res.counts_notes, "region stream_kernel and its counted function"));
  EXPECT_TRUE(any_contains(res.counts_notes, "FLOPs declared -20%"));
  // The DRAM bytes agree (within 10%): not said.
  EXPECT_FALSE(any_contains(res.counts_notes, "region stream_kernel and its counted function " +
                                                  std::string(kKernelFn) + " disagree: DRAM"));
  const std::string text = render_text(res);
  EXPECT_NE(text.find("Declared vs counted"), std::string::npos);
  EXPECT_NE(text.find("counts: annotation"), std::string::npos);
}

TEST(Counts, ReportsCarryTheSourceAndJsonValidates) {
  AnalysisResult res = analyze_points("report", {omp_point(0, 1, kRoof1, kT1, kF, kFits),
                                                 omp_point(1, 2, kRoof2, kT2, kF, kSpills)});
  nlohmann::json doc = to_json(res);
  auto errors = validate_json(doc, nlohmann::json::parse(kAnalysisSchemaJson));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(doc["schema_version"], "1.6.0");
  EXPECT_EQ(doc["kernels"][0]["kind"], "application");
  EXPECT_EQ(doc["kernels"][0]["points"][0]["counts_source"], kSim);
  EXPECT_EQ(doc["counts"]["configurations"][1]["levels"][0]["size_bytes"], 16 << 20);
  bool app_trajectory = false;
  for (const auto& t : doc["trajectories"])
    if (t["kind"] == "application") {
      app_trajectory = true;
      EXPECT_EQ(t["steps"][0]["diagnosis"], "cache-capacity");
      EXPECT_EQ(t["steps"][0]["cache"], "L3");
    }
  EXPECT_TRUE(app_trajectory);
  const std::string text = render_text(res);
  EXPECT_NE(text.find("application (whole program, counted)"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string("counts: ") + kSim), std::string::npos) << text;
  EXPECT_NE(text.find("cache:L3"), std::string::npos) << text;
  auto charts = render_svgs(res);
  bool roofline_with_app = false;
  for (const auto& c : charts)
    if (c.file == "roofline-c001.svg") roofline_with_app = c.svg.find(">application<") != std::string::npos;
  EXPECT_TRUE(roofline_with_app);
  const std::string html = render_html(res, charts);
  EXPECT_NE(html.find(kSim), std::string::npos);
}

TEST(Counts, MpiAppSumsItsRanksAndIsTimedOnTheMpiWindow) {
  // A fixed problem on 1 and 2 ranks, counted by a PMU per process (thread -1,
  // no function split): the ranks' counts sum to the 1-rank total; the
  // application's time is the slowest rank's MPI window (startup 0.5 s left out).
  auto point = [](std::int64_t id, int ranks, double window) {
    synth::SynthPoint p;
    p.row = synth::point_row(id, "ranks=" + std::to_string(ranks), -1, ranks);
    p.ceilings = ceilings({400, 200, 100, 10, 100});
    for (int r = 0; r < ranks; ++r) {
      store::RankRecords rr = synth::rank(r, 0.5 + window + 0.01);
      rr.info.mpi_init_end = 0.5;
      rr.info.mpi_finalize_start = 0.5 + window;
      synth::mpi(rr, "MPI_Init", 1, 0.4);
      synth::mpi(rr, "MPI_Allreduce", 10, 0.01 * window);
      synth::mpi(rr, "MPI_Finalize", 1, 0.005);
      synth::counts_info(rr, "pmu:skl FP_ARITH_INST_RETIRED.*,L1D.REPLACEMENT,LONGEST_LAT_CACHE.MISS", "partial",
                         "no L2 or write-back events");
      synth::count_row(rr, -1, "", 1e9 / ranks, kNan, kNan, 4e9 / ranks, 2e9 / ranks);
      p.ranks.push_back(std::move(rr));
    }
    return p;
  };
  const std::string path = temp_path("mpi");
  synth::write_run(path, {{"ranks", "1,2"}}, {point(0, 1, 2.0), point(1, 2, 1.25)});
  AnalysisResult res = analyze(load_run(path), {});
  remove_run(path);
  const int app = kernel_index(res, "application");
  ASSERT_GE(app, 0);
  const auto& s = res.kernels[static_cast<std::size_t>(app)];
  EXPECT_EQ(kernel_index(res, "function"), -1);  // a PMU has no per-function split
  const auto& k2 = res.run.configs[1].kernels[static_cast<std::size_t>(s.at[1])];
  EXPECT_DOUBLE_EQ(k2.counts.flops_fp64, 1e9);
  EXPECT_EQ(k2.ranks_present, 2);
  EXPECT_DOUBLE_EQ(k2.time_s, 1.25);
  EXPECT_TRUE(std::isnan(s.eval[1].ai[0]));
  EXPECT_TRUE(std::isnan(s.eval[1].ai[1]));
  EXPECT_NEAR(s.eval[1].ai[3], 1e9 / 2e9, 1e-12);
  EXPECT_NEAR(first_step(res, app).d.speedup, 1.6, 1e-9);
  EXPECT_TRUE(any_contains(res.warnings, "counts partial at ranks=1, ranks=2"));
  const std::string text = render_text(res);
  EXPECT_NE(text.find("    n/a     n/a"), std::string::npos) << text;  // L1 and L2: n/a, never 0
}

TEST(Counts, FlopsOfUnknownPrecisionGiveIntensityButNoComputeCeiling) {
  // An AMD PMU counts all FP operations together: AI and GFLOP/s, and the
  // binding ceiling among the memory levels only.
  store::RankRecords rr = synth::rank(0, 1.0);
  synth::counts_info(rr, "pmu:amd64_fam19h_zen4 RETIRED_SSE_AVX_FLOPS:ANY");
  synth::count_row(rr, -1, "", kNan, kNan, 4e9, 2e9, 1e9);
  rr.counts.back().flops_unsplit = 1e10;
  PointAggregate agg = aggregate_ranks({rr});
  ASSERT_EQ(agg.kernels.size(), 1u);
  KernelAtPoint k = agg.kernels[0];
  EXPECT_DOUBLE_EQ(k.counts.total_flops(), 1e10);
  EXPECT_EQ(k.counts.dominant_precision(), "");
  k.time_s = 1;
  RooflineEval e = evaluate(k, CeilingSet({Ceiling{"DRAM", "bandwidth", "", "", "GB/s", 50, 50, 50},
                                           Ceiling{"FP64 FMA", "compute", "fp64", "fma", "GFLOP/s", 100, 100, 100}}));
  EXPECT_DOUBLE_EQ(e.gflops, 10);
  EXPECT_DOUBLE_EQ(e.ai[3], 10);
  EXPECT_TRUE(e.peak_name.empty());
  EXPECT_EQ(e.binding, "DRAM");
  EXPECT_DOUBLE_EQ(e.bound_gflops, 500);
}
