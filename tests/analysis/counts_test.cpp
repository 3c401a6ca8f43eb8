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
#include <map>
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

// Counted on a virtual machine's topology: the L3 hwloc reports there may be
// the host's whole cache (this VM: 32 MiB for 2 vCPUs); the report says so
// and how to give the real one, once; a host's own topology says nothing.
TEST(Counts, CachesOfAVirtualMachinesTopologySayTheL3MayBeTheHosts) {
  for (const std::string geometry : {"hwloc-vm", "hwloc", ""}) {
    std::vector<synth::SynthPoint> points = {omp_point(0, 1, kRoof1, kT1, kF, kFits),
                                             omp_point(1, 2, kRoof2, kT2, kF, kSpills)};
    for (auto& p : points) store::set_str(p.ranks[0].counts_info[0].cache_geometry, geometry);
    AnalysisResult res = analyze_points("vm" + geometry, points);
    int said = 0;
    for (const auto& n : res.warnings) said += n.find("virtual machine") != std::string::npos ? 1 : 0;
    EXPECT_EQ(said, geometry == "hwloc-vm" ? 1 : 0) << geometry;
    if (geometry == "hwloc-vm") {
      ASSERT_FALSE(res.warnings.empty());
      EXPECT_TRUE(any_contains(res.warnings, "L3 of 32 MiB may be the host's")) << res.warnings.front();
      EXPECT_TRUE(any_contains(res.warnings, "$RTRACE_COUNTS_GEOMETRY")) << res.warnings.front();
      EXPECT_TRUE(any_contains(res.warnings, "--geometry")) << res.warnings.front();
    }
  }
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
  // f0..f10: instruction shares 20, 15, 12, 10, 8, 7, 6, 5.5, 5.2 (the ninth
  // over 5%: past the cap of 8), 3 (below 5%), 8 (no FLOPs: kept, judged by
  // its bytes per instruction, issue 39; f7 then falls past the cap).
  // QE's ZGEMM kernel was the seventh function over 5% of Si8, behind FFTW
  // codelets and pw.x's loops: a cap of 5 left it without a rate.
  const double share[] = {0.20, 0.15, 0.12, 0.10, 0.08, 0.07, 0.06, 0.055, 0.052, 0.03, 0.08};
  for (int i = 0; i < 11; ++i)
    synth::count_row(rr, 0, "f" + std::to_string(i) + "(int)", i == 10 ? 0 : 1e6, 1e6, 0, 0, 0, share[i] * 1e9);
  p.ranks.push_back(rr);
  const std::string path = temp_path("top");
  synth::write_run(path, {{"threads", "1"}}, {p});
  RunData run = load_run(path);
  remove_run(path);
  std::vector<std::string> names;
  for (const auto& k : run.configs[0].kernels)
    if (k.kind == "function") names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"f0", "f1", "f10", "f2", "f3", "f4", "f5", "f6"}));
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
  EXPECT_EQ(doc["schema_version"], "1.7.0");
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
  Ceiling dram, fma;
  dram.name = "DRAM", dram.kind = "bandwidth", dram.unit = "GB/s";
  dram.value = dram.min = dram.max = 50;
  fma.name = "FP64 FMA", fma.kind = "compute", fma.precision = "fp64", fma.variant = "fma", fma.unit = "GFLOP/s";
  fma.value = fma.min = fma.max = 100;
  RooflineEval e = evaluate(k, CeilingSet({dram, fma}));
  EXPECT_DOUBLE_EQ(e.gflops, 10);
  EXPECT_DOUBLE_EQ(e.ai[3], 10);
  EXPECT_TRUE(e.peak_name.empty());
  EXPECT_EQ(e.binding, "DRAM");
  EXPECT_DOUBLE_EQ(e.bound_gflops, 500);
}

// ---------------------------------------------------------------- issue 29: counted code = timed code, the app's own work

namespace {

const char* const kOpenPal = "libopen-pal.so.40.30.2";
const char* const kBlas = "libopenblasp-r0.3.21.so";

// An MPI app of a fixed problem at `ranks`: each rank computes its share in
// `compute` (2e9 FLOPs, 16e9 L1 bytes, 8e9 instructions in all). With
// `waiting`, rank 1 also spins in Open MPI's progress engine while the other
// works (under the counting tool): instructions and L1 bytes, no FLOPs.
synth::SynthPoint mpi_point(std::int64_t id, int ranks, double window, bool waiting) {
  synth::SynthPoint p;
  p.row = synth::point_row(id, "ranks=" + std::to_string(ranks), -1, ranks);
  p.ceilings = ceilings({400, 200, 100, 10, 100});
  for (int r = 0; r < ranks; ++r) {
    store::RankRecords rr = synth::rank(r, 0.5 + window + 0.01);
    rr.info.mpi_init_end = 0.5;
    rr.info.mpi_finalize_start = 0.5 + window;
    synth::mpi(rr, "MPI_Init", 1, 0.4);
    synth::mpi(rr, "MPI_Barrier", 10, r == 1 && waiting ? 0.5 * window : 0.01);
    synth::counts_info(rr, kSim);
    synth::count_row(rr, 0, "compute", 2e9 / ranks, 16e9 / ranks, 2e9 / ranks, 1e9 / ranks, 1e8 / ranks,
                     8e9 / ranks, "app");
    if (waiting && r == 1) {
      synth::count_row(rr, 0, "opal_progress", 0, 6e9, 1e6, 1e6, 0, 5e9, kOpenPal);
      synth::count_row(rr, 0, "mca_btl_vader_component_progress", 0, 3e9, 1e6, 1e6, 0, 2e9, "mca_btl_vader.so");
      // Its clock reads in the vDSO: code outside any module, no FLOPs.
      synth::count_row(rr, 0, "[unknown code]", 0, 1e8, 0, 0, 0, 5e7, "[unknown]");
    }
    p.ranks.push_back(std::move(rr));
  }
  return p;
}

AnalysisResult analyze_ranks(const std::string& name, const std::vector<synth::SynthPoint>& points) {
  const std::string path = temp_path(name);
  synth::write_run(path, {{"ranks", "1,2"}}, points);
  AnalysisResult res = analyze(load_run(path), AnalyzeOptions{});
  remove_run(path);
  return res;
}

}  // namespace

// Known answer (issue 29): a rank that waits half the time spins in
// opal_progress under the counting tool. The application's FLOPs, bytes and
// AI are those of the same app with a barrier-free schedule; the MPI bucket
// holds the rest, reported apart; the step is never cache-capacity.
TEST(Counts, MpiPollingIsCountedApartAndNeverEntersTheApplicationsRoofline) {
  AnalysisResult waits = analyze_ranks("waits", {mpi_point(0, 1, 2.0, false), mpi_point(1, 2, 1.5, true)});
  AnalysisResult free = analyze_ranks("free", {mpi_point(0, 1, 2.0, false), mpi_point(1, 2, 1.5, false)});
  const int a = kernel_index(waits, "application"), b = kernel_index(free, "application");
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  const auto& kw = waits.run.configs[1].kernels[static_cast<std::size_t>(waits.kernels[a].at[1])];
  const auto& kf = free.run.configs[1].kernels[static_cast<std::size_t>(free.kernels[b].at[1])];
  EXPECT_DOUBLE_EQ(kw.counts.total_flops(), kf.counts.total_flops());
  for (int i = 0; i < kLevelCount; ++i) EXPECT_DOUBLE_EQ(kw.counts.bytes[i], kf.counts.bytes[i]) << i;
  EXPECT_DOUBLE_EQ(kw.counted_instructions, 8e9);
  EXPECT_DOUBLE_EQ(waits.kernels[a].eval[1].ai[0], free.kernels[b].eval[1].ai[0]);
  // The MPI bucket: 7.05e9 of 15.05e9 instructions, 9.1e9 of 25.1e9 L1 bytes; no function of its own.
  const RuntimeCounts& rt = waits.run.configs[1].counts.runtime;
  EXPECT_DOUBLE_EQ(rt.instructions, 7.05e9);
  EXPECT_DOUBLE_EQ(rt.counts.bytes[0], 9.1e9);
  EXPECT_DOUBLE_EQ(rt.category_instructions.at("unattributed"), 5e7);
  EXPECT_EQ(kernel_index(waits, "function", "opal_progress"), -1);
  ASSERT_EQ(waits.counted_work.size(), 2u);
  EXPECT_NEAR(waits.counted_work[1].runtime_instruction_share, 7.05 / 15.05, 1e-12);
  EXPECT_NEAR(waits.counted_work[1].runtime_l1_share, 9.1 / 25.1, 1e-12);
  EXPECT_TRUE(any_contains(waits.counted_work_notes,
                           "at ranks=2: 46.8% of the counted instructions and 36.3% of the L1 bytes ran in the MPI "
                           "library and code outside any module (opal_progress, mca_btl_vader_component_progress)"));
  // The verdict: never cache-capacity, never "registers".
  for (const AnalysisResult* r : {&waits, &free}) {
    const auto& st = first_step(*r, r == &waits ? a : b);
    EXPECT_NE(st.d.diagnosis, "cache-capacity") << st.d.explanation;
    EXPECT_EQ(render_text(*r).find("registers"), std::string::npos);
  }
  const std::string text = render_text(waits);
  EXPECT_NE(text.find("Counted work (what the counting pass saw besides the rooflines):"), std::string::npos) << text;
  nlohmann::json doc = to_json(waits);
  EXPECT_TRUE(validate_json(doc, nlohmann::json::parse(kAnalysisSchemaJson)).empty());
  EXPECT_NEAR(doc["counts"]["configurations"][1]["runtime"]["instruction_share"].get<double>(), 7.05 / 15.05, 1e-12);
  EXPECT_DOUBLE_EQ(doc["counts"]["configurations"][1]["runtime"]["categories"]["mpi"].get<double>(), 7e9);
}

// Code outside any module is the application's where it computes (JIT code),
// apart where it does no FLOP (a runtime's clock reads in the vDSO).
TEST(Counts, CodeOutsideAnyModuleIsTheApplicationsOnlyWhereItComputes) {
  store::RankRecords rr = synth::rank(0, 1.0);
  synth::counts_info(rr, kSim);
  synth::count_row(rr, 0, "[unknown code]", 1e6, 8e6, 0, 0, 0, 4e6, "[unknown]");
  synth::count_row(rr, 1, "[unknown code]", 0, 2e6, 0, 0, 0, 1e6, "[unknown]");
  PointAggregate agg = aggregate_ranks({rr});
  ASSERT_EQ(agg.kernels.size(), 1u);  // the application; a bracketed name is no function
  EXPECT_DOUBLE_EQ(agg.kernels[0].counts.total_flops(), 1e6);
  EXPECT_DOUBLE_EQ(agg.kernels[0].counted_instructions, 4e6);
  EXPECT_DOUBLE_EQ(agg.counts.runtime.instructions, 1e6);
  EXPECT_DOUBLE_EQ(agg.counts.runtime.counts.bytes[0], 2e6);
}

// Known answer (issue 29): OpenBLAS ran its PRESCOTT kernel when timed and its
// HASWELL kernel under the counting tool. The report names both; the counted
// kernel gets no rate and no verdict (not "no sampled time (run with --sample)").
TEST(Counts, CountedCodeThatIsNotTheTimedCodeIsNamedAndGetsNoRate) {
  auto point = [](std::int64_t id, int threads, double wall) {
    synth::SynthPoint p;
    p.row = synth::point_row(id, "threads=" + std::to_string(threads), threads);
    p.ceilings = ceilings(kRoof1);
    store::RankRecords rr = synth::rank(0, wall);
    synth::counts_info(rr, kSim, "ok", "", threads, true);
    synth::count_row(rr, 0, "dgemm_kernel_HASWELL", 9e9, 4e10, 1e9, 1e8, 1e7, 5.8e9, kBlas);
    synth::count_row(rr, 0, "main", 1e8, 1e9, 1e8, 1e7, 1e6, 4.2e9, "dgemm");
    synth::sampled(rr, 0, "dgemm_kernel_PRESCOTT", static_cast<std::int64_t>(610 * wall), kBlas);
    synth::sampled(rr, 0, "main", static_cast<std::int64_t>(390 * wall), "dgemm");
    p.ranks.push_back(std::move(rr));
    return p;
  };
  AnalysisResult res = analyze_points("dispatch", {point(0, 1, 2.0), point(1, 2, 1.2)});
  ASSERT_EQ(res.run.configs[0].code_mismatches.size(), 1u);
  const CodeMismatch& m = res.run.configs[0].code_mismatches[0];
  EXPECT_EQ(m.timed, "dgemm_kernel_PRESCOTT");
  EXPECT_EQ(m.counted, "dgemm_kernel_HASWELL");
  EXPECT_EQ(m.sentence, "timed `dgemm_kernel_PRESCOTT` 61% of samples, counted `dgemm_kernel_HASWELL` 58% of counted "
                        "instructions (libopenblasp-r0.3.21.so): the library picked other code under the counting "
                        "tool (a choice made at run time: by CPU, or a plan per run)");
  const int fn = kernel_index(res, "function", "dgemm_kernel_HASWELL");
  ASSERT_GE(fn, 0);
  const auto& s = res.kernels[static_cast<std::size_t>(fn)];
  EXPECT_TRUE(std::isnan(s.eval[0].gflops));
  EXPECT_NE(s.counts_note.find("at threads=1: timed `dgemm_kernel_PRESCOTT`"), std::string::npos) << s.counts_note;
  EXPECT_EQ(first_step(res, fn).d.diagnosis, "code-differs");
  const std::string text = render_text(res, 200);
  EXPECT_EQ(text.find("run with --sample"), std::string::npos) << text;
  EXPECT_NE(text.find("at threads=1, threads=2: timed `dgemm_kernel_PRESCOTT` 61% of samples"), std::string::npos)
      << text;
  EXPECT_NE(render_html(res, {}).find("counted `dgemm_kernel_HASWELL`"), std::string::npos);
  nlohmann::json doc = to_json(res);
  EXPECT_TRUE(validate_json(doc, nlohmann::json::parse(kAnalysisSchemaJson)).empty());
  EXPECT_EQ(doc["counts"]["configurations"][0]["code_mismatches"][0]["timed"], "dgemm_kernel_PRESCOTT");
  // Where the timed run ran the counted kernel, nothing is said.
  auto same = [](std::int64_t id, int threads) {
    synth::SynthPoint p;
    p.row = synth::point_row(id, "threads=" + std::to_string(threads), threads);
    store::RankRecords rr = synth::rank(0, 1.0);
    synth::counts_info(rr, kSim);
    synth::count_row(rr, 0, "dgemm_kernel_HASWELL", 9e9, 4e10, 1e9, 1e8, 1e7, 5.8e9, kBlas);
    synth::sampled(rr, 0, "dgemm_kernel_HASWELL", 600, "libopenblas.so.0");
    p.ranks.push_back(std::move(rr));
    return p;
  };
  AnalysisResult ok = analyze_points("dispatch-same", {same(0, 1), same(1, 2)});
  EXPECT_TRUE(ok.run.configs[0].code_mismatches.empty());
  EXPECT_TRUE(ok.counted_work_notes.empty() || !any_contains(ok.counted_work_notes, "timed `"));
}

TEST(Counts, CodeMismatchesArePairedByModuleAndNameStemAndSayWhatToDo) {
  std::map<std::string, SampledCode> timed = {
      {"dgemm_kernel_PRESCOTT", {"libopenblasp-r0.3.21.so", "app", 610}},
      {"__memmove_sse2_unaligned_erms", {"libc.so.6", "system", 100}},
      {"fftw_codelet_n1_64", {"libfftw3.so.3", "app", 90}},
      {"opal_progress", {"libopen-pal.so.40", "mpi", 150}},  // runtime code: never compared
      {"main", {"app", "app", 50}},
      {"libstripped.so+0x4d61", {"libstripped.so", "app", 200}}};  // no symbol: no name to compare
  std::map<std::string, CountedCode> counted = {
      {"dgemm_kernel_HASWELL", {"libopenblas.so.0", 58, 9e9}},
      {"__memmove_avx_unaligned_erms", {"libc.so.6", 10, 0}},
      {"fftw_codelet_t1_32", {"libfftw3.so.3", 12, 1e8}},
      {"main", {"app", 20, 1e6}},
      {"libstripped.so+0x4d50", {"libstripped.so", 30, 0}}};
  auto m = compare_code(timed, 1050, counted, 130);
  ASSERT_EQ(m.size(), 3u);
  std::map<std::string, std::string> pairs;
  for (const auto& x : m) pairs[x.timed] = x.counted;
  EXPECT_EQ(pairs["dgemm_kernel_PRESCOTT"], "dgemm_kernel_HASWELL");  // a symlink's name against the file's
  EXPECT_EQ(pairs["__memmove_sse2_unaligned_erms"], "__memmove_avx_unaligned_erms");  // glibc's ifunc
  EXPECT_EQ(pairs["fftw_codelet_n1_64"], "fftw_codelet_t1_32");  // another plan
  for (const auto& x : m) {
    if (x.timed == "fftw_codelet_n1_64") {
      EXPECT_NE(x.sentence.find("load the same wisdom in both runs, or plan with FFTW_ESTIMATE"), std::string::npos);
    }
  }
  // Too few samples to tell: nothing is said.
  EXPECT_TRUE(compare_code(timed, 1050, counted, 130, 0.05, 1000).empty());
}

// Known answer (issue 29): a function whose counted FLOPs grow 1.5x between
// the configurations of a strong-scaling sweep (replicated work, another FFT
// plan) gets "the work itself changed", not a roofline verdict. (Work that
// grows with the concurrency itself is weak scaling: the next test.)
TEST(Counts, FunctionWhoseCountedFlopsGrowGetsTheWorkChangedNotAVerdict) {
  AnalysisResult res = analyze_points("work", {omp_point(0, 1, kRoof1, kT1, kF, kFits),
                                               omp_point(1, 2, kRoof2, kT2, 1.5 * kF, kFits)});
  const int fn = kernel_index(res, "function", "stream_kernel (OpenMP region)");
  ASSERT_GE(fn, 0);
  const auto& st = first_step(res, fn);
  EXPECT_EQ(st.d.diagnosis, "work-changed");
  EXPECT_NE(st.d.explanation.find("the work itself changed (FLOPs 9e+08 -> 1.35e+09, 1.5x)"), std::string::npos)
      << st.d.explanation;
  EXPECT_NEAR(st.d.speedup, kT1 / kT2, 1e-3);  // the time ratio, as the scaling chart
  const std::string text = render_text(res, 200);
  EXPECT_NE(text.find("threads 1->2: work-changed"), std::string::npos) << text;
  EXPECT_NE(text.find("function stream_kernel (OpenMP region) from threads=1 to 2: the work itself changed"),
            std::string::npos)
      << text;
}

// Known answer (issue 39): counted work that grows in proportion to the
// concurrency is weak scaling, found and said, and its steps get a verdict;
// --scaling strong overrides.
TEST(Counts, WorkThatGrowsWithTheThreadsIsFoundToBeWeakScaling) {
  AnalysisResult res = analyze_points("weakfound", {omp_point(0, 1, kRoof1, kT1, kF, kFits),
                                                    omp_point(1, 2, kRoof2, kT2, 2 * kF, kFits)});
  EXPECT_EQ(res.scaling, "weak");
  ASSERT_EQ(res.summaries.size(), 1u);
  EXPECT_NE(res.summaries[0].weak_found.find("the counted FLOPs grow with threads"), std::string::npos);
  const int fn = kernel_index(res, "function", "stream_kernel (OpenMP region)");
  ASSERT_GE(fn, 0);
  const auto& st = first_step(res, fn);
  EXPECT_NE(st.d.diagnosis, "work-changed") << st.d.explanation;
  // Weak: the time per unit of work, 2 x T1 / T2.
  EXPECT_NEAR(st.d.speedup, 2 * kT1 / kT2, 1e-3);
  const std::string text = render_text(res, 200);
  EXPECT_NE(text.find("Weak scaling found"), std::string::npos) << text;
}

// A function's rate divides its FLOPs by the wall-clock time it took: its
// share of the thread's samples times the rank's wall time (issue 29: CPU-time
// samples of a descheduled rank made LAMMPS's pair force "superlinear 2.26x").
TEST(Counts, FunctionTimeIsItsShareOfTheSamplesTimesTheWallTime) {
  store::RankRecords rr = synth::rank(0, 2.0);  // 2 s of wall time, 1 s of CPU time sampled
  synth::counts_info(rr, kSim);
  synth::count_row(rr, 0, "f", 1e9, 8e9, 0, 0, 0, 4e9);
  synth::sampled(rr, 0, "f", 750);
  synth::sampled(rr, 0, "main", 250);
  PointAggregate agg = aggregate_ranks({rr});
  EXPECT_DOUBLE_EQ(agg.sampled_time_s.at("f"), 1.5);
  EXPECT_DOUBLE_EQ(agg.sampled_work, 1000);
}

TEST(Counts, FlopMixSaysHowMuchUsedTheWidestRegisters) {
  FlopMix mix;
  mix.flops[0] = {4e8, 92e8, kNan, 4e8};  // FP64: scalar, 128, 256, 512 bits
  EXPECT_EQ(flop_mix_sentence(mix, 512, false), "96% of FP64 FLOPs scalar or 128-bit; this CPU runs 512-bit");
  mix.flops[0] = {2e8, kNan, kNan, 98e8};
  EXPECT_EQ(flop_mix_sentence(mix, 512, false), "98% of FP64 FLOPs 512-bit, the widest this CPU runs");
  mix.flops[0] = {kNan, kNan, 1e9, kNan};
  mix.flops[1] = {1e8, kNan, kNan, kNan};  // FP32 is not the dominant precision
  EXPECT_EQ(flop_mix_sentence(mix, 512, true),
            "100% of FP64 FLOPs 256-bit; this CPU runs 512-bit (counted under Valgrind, which hides AVX-512: code "
            "that picks its width at run time may run wider when timed)");
  EXPECT_EQ(flop_mix_sentence(mix, 0, false),
            "FP64 FLOPs 100% 256-bit (the machine's widest vector width is not recorded in this file)");
  EXPECT_EQ(flop_mix_sentence(FlopMix{}, 512, false), "");
  // In the reports: the application's and each function's mix (the synthetic machine runs 512-bit).
  AnalysisResult res = analyze_points("mix", {omp_point(0, 1, kRoof1, kT1, kF, kFits),
                                              omp_point(1, 2, kRoof2, kT2, kF, kSpills)});
  EXPECT_EQ(res.vector_bits, 512);
  const std::string text = render_text(res, 200);
  EXPECT_NE(text.find("FLOPs: 100% of FP64 FLOPs 256-bit; this CPU runs 512-bit"), std::string::npos) << text;
  EXPECT_TRUE(any_contains(res.counted_work_notes, "the application's FLOPs: 100% of FP64 FLOPs 256-bit"));
  nlohmann::json doc = to_json(res);
  EXPECT_TRUE(validate_json(doc, nlohmann::json::parse(kAnalysisSchemaJson)).empty());
  EXPECT_EQ(doc["machine_vector_bits"], 512);
  EXPECT_DOUBLE_EQ(doc["kernels"][0]["points"][0]["flop_mix"]["fp64"]["v256"].get<double>(), kF);
  EXPECT_NE(render_html(res, {}).find("FLOPs: 100% of FP64 FLOPs 256-bit"), std::string::npos);
}

// Text tables keep a number's exponent (issue 29: 4075.5 was printed
// `4.08e+0`), and a level whose counted bytes are zero reads 0, not n/a.
TEST(Counts, TextTablesKeepExponentsAndZeroBytesReadZero) {
  const std::array<double, 4> bytes{1e9, 4e8, 1e6 * kF / 4075.5e6, 0};
  AnalysisResult res = analyze_points("cells", {omp_point(0, 1, kRoof1, kT1, kF, bytes),
                                                omp_point(1, 2, kRoof2, kT2, kF, bytes)});
  const int app = kernel_index(res, "application");
  ASSERT_GE(app, 0);
  EXPECT_NEAR(res.kernels[static_cast<std::size_t>(app)].eval[0].ai[2], 4075.5, 1e-6);
  const std::string text = render_text(res, 200);
  EXPECT_EQ(text.find("4.08e+0 "), std::string::npos) << text;
  EXPECT_NE(text.find(" 4.08e3 "), std::string::npos) << text;
  EXPECT_NE(text.find("     0 B"), std::string::npos) << text;  // AI DRAM: no DRAM byte, not unavailable
  EXPECT_NE(render_html(res, {}).find("<td>0 B</td>"), std::string::npos);
}

namespace {

// A function of a synthetic OpenMP point: counted (FLOPs, bytes per level,
// instructions: totals over its threads) and sampled (its time on each thread
// that runs it: all threads when `parallel`, thread 0 otherwise).
struct SynthFunction {
  std::string name;
  double flops;
  std::array<double, 4> bytes;
  double instructions;
  double time_s;
  bool parallel;
};
synth::SynthPoint functions_point(std::int64_t id, int threads, const Roof& roof,
                                  const std::vector<SynthFunction>& functions) {
  synth::SynthPoint p;
  p.row = synth::point_row(id, "threads=" + std::to_string(threads), threads, 1, 1, -1, 0);
  p.ceilings = ceilings(roof);
  double wall = 0, cpu = 0;
  for (const auto& f : functions) {
    wall += f.time_s;
    cpu += f.time_s * (f.parallel ? threads : 1);
  }
  store::RankRecords rr = synth::rank(0, wall);
  rr.info.omp_threads = threads;
  rr.info.user_s = cpu;
  synth::counts_info(rr, kSim, "ok", "", threads, true);
  synth::count_level(rr, "L3", (32 << 20) / threads, 32 << 20, threads);
  for (const auto& f : functions) {
    const int n = f.parallel ? threads : 1;
    for (int t = 0; t < n; ++t) {
      synth::count_row(rr, t, f.name, f.flops / n, f.bytes[0] / n, f.bytes[1] / n, f.bytes[2] / n, f.bytes[3] / n,
                       f.instructions / n);
      synth::sampled(rr, t, f.name, static_cast<std::int64_t>(std::llround(f.time_s * 1000)));
    }
  }
  p.ranks.push_back(std::move(rr));
  return p;
}

const Roof kFlatDram1{400, 200, 100, 20, 64}, kFlatDram2{800, 400, 200, 20, 128};

std::string account_headline(const AnalysisResult& res) {
  if (res.summaries.empty() || res.summaries[0].accounts.empty()) return "(no account)";
  return res.summaries[0].accounts[0].headline;
}

}  // namespace

// Known answer (issue 39): a serial phase that loses most of the time beside
// a kernel that scales 1.9x while its tables outgrow the L3. The whole
// program's DRAM intensity falls 80x, but the fall explains a few
// milliseconds: the application's verdict is the serial phase's, in seconds.
TEST(Counts, ASerialPhaseBesideAnIdealKernelWhoseIntensityFallsIsNotCacheCapacity) {
  const char* const serial = "serial_phase(table&)";
  const char* const kernel = "sweep_tables(table&) [clone ._omp_fn.0]";
  AnalysisResult res = analyze_points(
      "serial", {functions_point(0, 1, kFlatDram1,
                                 {{serial, 0, {1e9, 1e8, 1e7, 1e6}, 1e10, 4.0, false},
                                  {kernel, 4e9, {3.2e10, 1.6e10, 8e9, 1e8}, 1.6e10, 0.2, true}}),
                 functions_point(1, 2, kFlatDram2,
                                 {{serial, 0, {1e9, 1e8, 1e7, 1e6}, 1e10, 4.0, false},
                                  {kernel, 4e9, {3.2e10, 1.6e10, 8e9, 1.6e9}, 1.6e10, 0.105, true}})});
  const int app = kernel_index(res, "application");
  ASSERT_GE(app, 0);
  const auto& st = first_step(res, app);
  EXPECT_NE(st.d.diagnosis, "cache-capacity") << st.d.explanation;
  EXPECT_EQ(st.d.cause, "serial-fraction") << st.d.explanation;
  EXPECT_EQ(account_headline(res), "serial-fraction");
  const StepAccount& acc = res.summaries[0].accounts[0];
  EXPECT_NEAR(acc.lost_s, 4.105 - 4.2 / 2, 1e-3);
  double named = 0;
  for (const auto& c : acc.causes) named += c.seconds;
  EXPECT_NEAR(named, acc.lost_s, 1e-6);  // the causes add up to the lost time
  EXPECT_GT(acc.causes.front().share, 0.9);
  const std::string text = render_text(res, 200);
  EXPECT_EQ(text.find("the application stops scaling past threads=1: cache-capacity"), std::string::npos) << text;
  EXPECT_NE(text.find("Headline: serial-fraction"), std::string::npos) << text;
  if (std::getenv("SHOW")) std::cout << text;
}

// Known answer (issue 39): an integer hash probe (no FLOPs) whose tables fit
// the L3 at 1 thread and not at 2: DRAM bytes per instruction rise 7.3x and
// the probe loses nearly all the time. It is cache-capacity, by name, in the
// function's verdict, the account and the application's step.
TEST(Counts, AnIntegerProbeThatOutgrowsItsL3ShareIsCacheCapacity) {
  const char* const probe = "probe_table(table const&, key const*, long) [clone ._omp_fn.0]";
  AnalysisResult res = analyze_points(
      "probe", {functions_point(0, 1, kFlatDram1,
                                {{"main", 1e7, {1e8, 1e7, 1e6, 1e5}, 1e8, 0.1, false},
                                 {probe, 0, {4e10, 2e10, 1e10, 2e8}, 8e9, 2.0, true}}),
                functions_point(1, 2, kFlatDram2,
                                {{"main", 1e7, {1e8, 1e7, 1e6, 1e5}, 1e8, 0.1, false},
                                 {probe, 0, {4e10, 2e10, 1e10, 1.46e9}, 8e9, 1.9, true}})});
  const int fn = kernel_index(res, "function", "probe_table (OpenMP region)");
  ASSERT_GE(fn, 0) << render_text(res, 200);
  const auto& fst = first_step(res, fn);
  EXPECT_EQ(fst.d.diagnosis, "cache-capacity") << fst.d.explanation;
  EXPECT_EQ(fst.d.cache, "L3");
  EXPECT_NE(fst.d.explanation.find("bytes per instruction rise 7.3x"), std::string::npos) << fst.d.explanation;
  EXPECT_EQ(account_headline(res), "cache-capacity at L3");
  const auto& st = first_step(res, kernel_index(res, "application"));
  EXPECT_EQ(st.d.diagnosis, "cache-capacity") << st.d.explanation;
  EXPECT_EQ(st.d.cache, "L3");
}

// Known answer (issue 39): each thread sweeps its own table, so the work grows
// with the threads; no axis says so. Weak scaling is found from the counts,
// said in words, and the step gets a verdict: its tables outgrow the L3.
TEST(Counts, AWeakScaledThreadsSweepIsFoundAndGetsAVerdict) {
  const char* const sweep = "sweep_own_table(table&) [clone ._omp_fn.0]";
  AnalysisResult res = analyze_points(
      "weakverdict", {functions_point(0, 1, kFlatDram1, {{sweep, 2e9, {1.6e10, 8e9, 4e9, 1e7}, 8e9, 1.0, true}}),
                      functions_point(1, 2, kFlatDram2, {{sweep, 4e9, {3.2e10, 1.6e10, 8e9, 8e9}, 1.6e10, 1.6, true}})});
  EXPECT_EQ(res.scaling, "weak");
  const auto& st = first_step(res, kernel_index(res, "application"));
  EXPECT_EQ(st.d.diagnosis, "cache-capacity") << st.d.explanation;
  EXPECT_NE(st.d.diagnosis, "work-changed");
  const std::string text = render_text(res, 200);
  EXPECT_NE(text.find("weak scaling"), std::string::npos) << text;
  EXPECT_EQ(account_headline(res), "cache-capacity at L3");
}

namespace {

// An MPI point of `ranks` ranks: each rank computes `compute_s` in `compute`
// (counted: FLOPs split over the ranks) and spends `mpi_s` in MPI_Send
// (sampled in the MPI library, and in the MPI table inside the window).
// `off_cpu_s`: window time off the CPU (no samples: blocked or sleeping).
synth::SynthPoint mpi_point(std::int64_t id, int ranks, const Roof& roof, double compute_s, double mpi_s,
                            double off_cpu_s = 0) {
  synth::SynthPoint p;
  p.row = synth::point_row(id, "ranks=" + std::to_string(ranks), 1, ranks, 1, -1, 0);
  p.ceilings = ceilings(roof);
  const double init = 0.05, wall = init + compute_s + mpi_s + off_cpu_s + 0.01;
  for (int r = 0; r < ranks; ++r) {
    store::RankRecords rr = synth::rank(r, wall);
    rr.info.user_s = wall;
    synth::counts_info(rr, kSim, "ok", "", 1, false);
    synth::count_level(rr, "L3", 32 << 20, 32 << 20, 1);
    synth::count_row(rr, 0, "compute(double*)", 8e9 / ranks, 6.4e10 / ranks, 3.2e10 / ranks, 1.6e10 / ranks,
                     1e8 / ranks, 3.2e10 / ranks);
    synth::sampled(rr, 0, "compute(double*)", static_cast<std::int64_t>(std::llround(compute_s * 1000)));
    synth::mpi(rr, "MPI_Init", 1, init);
    synth::mpi(rr, "MPI_Finalize", 1, 0.01);
    if (mpi_s > 0) {
      synth::mpi(rr, "MPI_Send", 100, mpi_s);
      synth::sampled(rr, 0, "MPI_Send", static_cast<std::int64_t>(std::llround(mpi_s * 1000)), "libmpi.so.40", "mpi");
    }
    rr.info.mpi_init_end = init;
    rr.info.mpi_finalize_start = wall - 0.01;
    p.ranks.push_back(std::move(rr));
  }
  return p;
}

}  // namespace

// Issue 39 (LAMMPS at ranks=1,2): the pair force lost 0.64 s of its own while
// the MPI share rose; its step's "other (mpi)" named its own seconds mpi and
// the account said mpi 79%. A function's own loss is never the application's
// MPI evidence: the MPI functions carry the MPI seconds.
TEST(Counts, AComputeFunctionsOwnLossIsNotNamedMpi) {
  const std::string path = temp_path("mpiaccount");
  synth::write_run(path, {{"ranks", "1,2"}},
                   {mpi_point(0, 1, kFlatDram1, 4.0, 0), mpi_point(1, 2, kFlatDram1, 2.4, 0.6)});
  AnalysisResult res = analyze(load_run(path), AnalyzeOptions{});
  remove_run(path);
  ASSERT_EQ(res.summaries.size(), 1u);
  ASSERT_FALSE(res.summaries[0].accounts.empty()) << render_text(res, 200);
  const StepAccount& acc = res.summaries[0].accounts[0];
  bool seen = false;
  for (const auto& f : acc.functions) {
    if (f.name.rfind("compute", 0) != 0) continue;
    seen = true;
    EXPECT_NEAR(f.lost_s, 2.4 - 4.0 / 2, 0.01);
    for (const auto& c : f.causes) EXPECT_NE(c.cause, "mpi") << render_text(res, 200);
  }
  EXPECT_TRUE(seen) << render_text(res, 200);
  double mpi = 0;
  for (const auto& c : acc.causes)
    if (c.cause == "mpi") mpi = c.seconds;
  EXPECT_NEAR(mpi, 0.6, 0.02) << acc.sentence;
}

// Issue 39 (HPCC at ranks=1,2): time off the CPU that shrinks between the
// points is a gain. The causes less the gains are the lost time (they summed
// 10.5 s for 8.18 s lost).
TEST(Counts, LessTimeOffTheCpuIsAGainInTheAccount) {
  const std::string path = temp_path("offcpu");
  synth::write_run(path, {{"ranks", "1,2"}},
                   {mpi_point(0, 1, kFlatDram1, 4.0, 0, 1.0), mpi_point(1, 2, kFlatDram1, 2.4, 0.6, 0)});
  AnalysisResult res = analyze(load_run(path), AnalyzeOptions{});
  remove_run(path);
  ASSERT_EQ(res.summaries.size(), 1u);
  ASSERT_FALSE(res.summaries[0].accounts.empty()) << render_text(res, 200);
  const StepAccount& acc = res.summaries[0].accounts[0];
  double causes = 0;
  for (const auto& c : acc.causes) causes += c.seconds;
  EXPECT_NEAR(causes + acc.gained_s, acc.lost_s, 1e-6) << acc.sentence;
  EXPECT_NEAR(acc.unsampled_s, -0.5, 0.02) << acc.sentence;  // 1 s off the CPU at 1 rank: 0.5 s ideal at 2
  EXPECT_NE(acc.sentence.find("less time off the CPU"), std::string::npos) << acc.sentence;
}
