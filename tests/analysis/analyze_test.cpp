// Synthetic runs with known answers, written through the store API and read back.
#include "rtrace/analysis/analyze.hpp"
#include "rtrace/analysis/compare.hpp"
#include "rtrace/analysis/dataset.hpp"
#include "rtrace/analysis/report.hpp"
#include "synthetic_run.hpp"

#include <filesystem>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <unistd.h>

using namespace rtrace;
using namespace rtrace::analysis;

namespace {

std::string temp_path(const std::string& name) {
  return std::string(RTRACE_BINARY_DIR) + "/tests/analysis/" + name + "-" + std::to_string(::getpid()) + ".h5";
}

// A run is an index plus its points directory (`run.h5.d/`): remove both, so the
// same path can be written again.
void remove_run(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::filesystem::remove_all(path + ".d", ec);
}

const double kNan = std::nan("");

// A single-region CPU point: ceilings DRAM/FP64 and one region per rank.
synth::SynthPoint cpu_point(std::int64_t id, int threads, int ranks, double dram_gbs, double fp64_gflops,
                            const std::vector<double>& rank_times, double flops, double dram_bytes) {
  synth::SynthPoint p;
  p.row = synth::point_row(id, "threads=" + std::to_string(threads) + " ranks=" + std::to_string(ranks), threads, ranks);
  p.ceilings = {synth::bandwidth("DRAM", dram_gbs), synth::compute("FP64 FMA", "fp64", "fma", fp64_gflops)};
  for (std::size_t r = 0; r < rank_times.size(); ++r) {
    store::RankRecords rr = synth::rank(static_cast<std::int64_t>(r), rank_times[r]);
    synth::region(rr, "k", rank_times[r], flops / rank_times.size(), kNan, kNan, kNan, dram_bytes / rank_times.size());
    p.ranks.push_back(std::move(rr));
  }
  return p;
}

AnalysisResult run_two_points(const std::string& name, const synth::SynthPoint& a, const synth::SynthPoint& b,
                              const std::string& axis) {
  std::string path = temp_path(name);
  synth::write_run(path, {{axis, "synthetic"}}, {a, b});
  AnalysisResult res = analyze(load_run(path), AnalyzeOptions{});
  remove_run(path);
  return res;
}

const TrajectoryStep& only_step(const AnalysisResult& res) {
  EXPECT_EQ(res.trajectories.size(), 1u);
  EXPECT_EQ(res.trajectories.at(0).steps.size(), 1u);
  return res.trajectories.at(0).steps.at(0);
}

}  // namespace

TEST(Analyze, DramIntensityHalvesIsCacheCapacityAtDram) {
  auto res = run_two_points("cache", cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8),
                            cpu_point(1, 2, 1, 20, 2000, {0.01}, 1e9, 2e8), "threads");
  EXPECT_EQ(res.axis, "threads");
  const auto& st = only_step(res);
  EXPECT_EQ(st.d.diagnosis, "cache-capacity");
  EXPECT_EQ(st.d.level, "DRAM");
  EXPECT_NEAR(st.d.factors.ai_ratio, 0.5, 1e-9);
}

TEST(Analyze, PinnedCeilingGrowing1p2xIsBandwidthContention) {
  auto res = run_two_points("contention", cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8),
                            cpu_point(1, 2, 1, 12, 2000, {1e9 / 120e9}, 1e9, 1e8), "threads");
  const auto& st = only_step(res);
  EXPECT_EQ(st.d.diagnosis, "bandwidth-contention");
  EXPECT_NEAR(st.d.speedup, 1.2, 1e-9);
  EXPECT_NEAR(st.d.factors.ceiling_ratio, 1.2, 1e-9);
}

TEST(Analyze, PerfectScalingIsIdeal) {
  auto res = run_two_points("ideal", cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8),
                            cpu_point(1, 2, 1, 20, 2000, {0.005}, 1e9, 1e8), "threads");
  EXPECT_EQ(only_step(res).d.diagnosis, "ideal");
  ASSERT_EQ(res.summaries.size(), 1u);
  EXPECT_NEAR(res.summaries[0].final_efficiency, 1.0, 1e-9);
  EXPECT_EQ(res.summaries[0].breaks_after, -1);
}

TEST(Analyze, RankImbalanceIsOtherWithCauseImbalance) {
  // 2 -> 4 ranks: counts summed over ranks; the slowest rank keeps the old time.
  auto res = run_two_points("imbalance", cpu_point(0, 1, 2, 10, 1000, {0.01, 0.01}, 1e9, 1e8),
                            cpu_point(1, 1, 4, 20, 2000, {0.005, 0.005, 0.005, 0.01}, 1e9, 1e8), "ranks");
  EXPECT_EQ(res.axis, "ranks");
  const auto& k = res.run.configs[1].kernels.at(0);
  EXPECT_NEAR(k.imbalance, 0.01 / 0.00625 - 1, 1e-9);
  EXPECT_NEAR(k.counts.flops_fp64, 1e9, 1);
  EXPECT_NEAR(k.time_s, 0.01, 1e-12);
  const auto& st = only_step(res);
  EXPECT_EQ(st.d.diagnosis, "other");
  EXPECT_EQ(st.d.cause, "imbalance");
}

TEST(Analyze, RepeatsTakeTheMedianAndKeepTheSpread) {
  std::string path = temp_path("repeats");
  std::vector<synth::SynthPoint> pts;
  const double times[] = {0.010, 0.012, 0.011};
  for (int i = 0; i < 3; ++i) {
    auto p = cpu_point(i, 1, 1, 10, 1000, {times[i]}, 1e9, 1e8);
    p.row.repeat = i;
    pts.push_back(p);
  }
  synth::write_run(path, {{"threads", "1"}}, pts);
  RunData run = load_run(path);
  remove_run(path);
  ASSERT_EQ(run.configs.size(), 1u);
  EXPECT_EQ(run.configs[0].repeats(), 3);
  EXPECT_NEAR(run.configs[0].kernels[0].time_s, 0.011, 1e-12);
  EXPECT_NEAR(run.configs[0].kernels[0].time_spread, 0.002 / 0.011, 1e-9);
}

TEST(Analyze, TraceOnlyLaunchesJoinMetricsByNameAndLaunchOrder) {
  store::RankRecords rr = synth::rank(0, 1.0, "cuda-metrics");
  for (int i = 0; i < 3; ++i) {
    rr.kernels.push_back(synth::kernel_launch(rr, "axpy", i, 1000 * i, 100, 64, false));  // timing
    auto m = synth::kernel_launch(rr, "axpy", i, 0, 999, 64, true);                       // metrics, replayed
    m.start_ns = m.end_ns = 0;
    m.flops_fp64 = 10;
    m.bytes_dram_read = 3;
    m.bytes_dram_write = 1;
    rr.kernels.push_back(m);
  }
  PointAggregate agg = aggregate_ranks({rr});
  ASSERT_EQ(agg.kernels.size(), 1u);
  const auto& k = agg.kernels[0];
  EXPECT_EQ(k.kind, "gpu-kernel");
  EXPECT_EQ(k.calls, 3);
  EXPECT_NEAR(k.time_s, 300e-9, 1e-15);          // from the trace rows
  EXPECT_NEAR(k.counts.flops_fp64, 30, 1e-12);   // from the metric rows
  EXPECT_NEAR(k.counts.bytes[3], 12, 1e-12);     // DRAM read + write
  EXPECT_NEAR(k.metric_coverage, 1.0, 1e-12);
}

// Issue 31, item 7: a count of the same kernel and launch index but another
// grid (a library's other split on another SM count) must not join the launch.
TEST(Analyze, ACountJoinsOnlyALaunchOfTheSameGridAndBlock) {
  store::RankRecords rr = synth::rank(0, 1.0, "cuda-metrics");
  for (int i = 0; i < 3; ++i) {
    rr.kernels.push_back(synth::kernel_launch(rr, "gemm", i, 1000 * i, 100, 64, false));
    auto m = synth::kernel_launch(rr, "gemm", i, 0, 999, i == 2 ? 128 : 64, true);  // launch 2: split otherwise
    m.start_ns = m.end_ns = 0;
    m.flops_fp64 = 10;
    rr.kernels.push_back(m);
  }
  PointAggregate agg = aggregate_ranks({rr});
  ASSERT_EQ(agg.kernels.size(), 1u);
  const auto& k = agg.kernels[0];
  EXPECT_EQ(k.calls, 3);
  EXPECT_NEAR(k.counts.flops_fp64, 20, 1e-12);  // launches 0 and 1 only
  EXPECT_NEAR(k.metric_coverage, 2.0 / 3.0, 1e-12);
  bool warned = false;
  for (const auto& w : agg.rank_warnings)
    warned |= w.find("1 kernel launch(es) without counts: the metrics run launched them with other grid or block "
                     "sizes") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(Analyze, PhiMatchesHandComputation) {
  // Platform A: eta 0.5 (50 of 100 GFLOP/s); platform B: eta 0.25. Phi = 2 / (1/0.5 + 1/0.25) = 1/3.
  std::string a = temp_path("pp-a"), b = temp_path("pp-b");
  synth::write_run(a, {{"threads", "1"}}, {cpu_point(0, 1, 1, 10, 1000, {0.02}, 1e9, 1e8)});
  auto pb = cpu_point(0, 1, 1, 40, 1000, {0.01}, 1e9, 1e8);  // bound 400, P 100
  store::RankRecords& r0 = pb.ranks[0];
  synth::region(r0, "only_on_b", 0.1, 1e6, kNan, kNan, kNan, 1e6);
  synth::write_run(b, {{"threads", "1"}}, {pb});
  std::vector<AnalysisResult> runs{analyze(load_run(a), {}), analyze(load_run(b), {})};
  std::remove(a.c_str());
  std::remove(b.c_str());
  PortabilityResult pp = portability(runs);
  ASSERT_EQ(pp.kernels.size(), 1u);
  EXPECT_EQ(pp.kernels[0].name, "k");
  EXPECT_NEAR(pp.kernels[0].efficiency[0], 0.5, 1e-9);
  EXPECT_NEAR(pp.kernels[0].efficiency[1], 0.25, 1e-9);
  EXPECT_NEAR(pp.kernels[0].phi, 1.0 / 3.0, 1e-9);
  ASSERT_EQ(pp.missing.size(), 1u);
  EXPECT_EQ(pp.missing[0], "only_on_b");
  auto errors = validate_json(to_json(pp), nlohmann::json::parse(kAnalysisSchemaJson));
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST(Analyze, JsonValidatesAgainstSchemaAndWriteBackStoresIt) {
  std::string path = temp_path("json");
  synth::write_run(path, {{"threads", "1..4:x2"}},
                   {cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8), cpu_point(1, 2, 1, 20, 2000, {0.01}, 1e9, 2e8),
                    cpu_point(2, 4, 1, 24, 4000, {0.008}, 1e9, 2e8)});
  AnalysisResult res = analyze(load_run(path), {});
  nlohmann::json doc = to_json(res);
  nlohmann::json schema = nlohmann::json::parse(kAnalysisSchemaJson);
  auto errors = validate_json(doc, schema);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(doc["trajectories"][0]["steps"][0]["diagnosis"], "cache-capacity");
  // The validator does reject a bad document.
  nlohmann::json bad = doc;
  bad["trajectories"][0]["steps"][0]["diagnosis"] = "slow";
  bad["kernels"][0].erase("points");
  EXPECT_EQ(validate_json(bad, schema).size(), 2u);

  write_back(res, doc);
  store::File f = store::File::open(path);
  ASSERT_TRUE(f.root().exists("analysis"));
  store::Group g = f.root().open_group("analysis");
  EXPECT_EQ(nlohmann::json::parse(g.read_text("result_json"))["kind"], "analysis");
  EXPECT_EQ(g.attr_string("axis"), "threads");
  remove_run(path);
}

TEST(Analyze, BadInputsGiveOneLineErrors) {
  auto message = [](const std::string& path) -> std::string {
    try {
      load_run(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message("/nonexistent/run.h5").find("no such file"), std::string::npos);
  std::string text = temp_path("text");
  std::ofstream(text) << "hello\n";
  EXPECT_NE(message(text).find("not an HDF5 file"), std::string::npos);
  std::remove(text.c_str());
  std::string plain = temp_path("plain");
  { store::File::create(plain, true); }
  EXPECT_NE(message(plain).find("not an rtrace run file"), std::string::npos);
  std::remove(plain.c_str());
  // A planned run whose points never completed.
  std::string pending = temp_path("pending");
  {
    auto row = synth::point_row(0, "threads=1", 1);
    store::set_str(row.status, "pending");
    row.complete = 0;
    store::RunFile::create(pending, store::RunMetadata{}, store::MachineInfo{}, {}, {row}, true);
  }
  std::string m = message(pending);
  EXPECT_NE(m.find("no complete points"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  std::remove(pending.c_str());
}

namespace {
// An unannotated MPI point: per-rank wall times, the MPI window and one barrier row per rank.
synth::SynthPoint mpi_point(std::int64_t id, const std::string& label, int ranks, const std::vector<double>& useful,
                            double startup) {
  synth::SynthPoint p;
  p.row = synth::point_row(id, label, -1, ranks);
  double max_useful = 0;
  for (double u : useful) max_useful = std::max(max_useful, u);
  for (int r = 0; r < ranks; ++r) {
    double wall = startup + max_useful + 0.01;
    store::RankRecords rr = synth::rank(r, wall);
    rr.info.mpi_init_end = startup;
    rr.info.mpi_finalize_start = startup + max_useful;
    synth::mpi(rr, "MPI_Init", 1, startup * 0.8);
    synth::mpi(rr, "MPI_Barrier", 1, max_useful - useful[static_cast<std::size_t>(r)]);
    synth::mpi(rr, "MPI_Finalize", 1, 0.005);
    p.ranks.push_back(std::move(rr));
  }
  return p;
}
}  // namespace

TEST(Analyze, ZippedSizeAxisIsWeakScalingWithOneGroupAndPopInTheJson) {
  std::string path = temp_path("weak");
  // Work per rank constant (1 s), 2 ranks 10% slower: weak efficiency 1/1.1.
  synth::write_run(path, {{"ranks", "1,2"}, {"env:N", "100,200"}},
                   {mpi_point(0, "ranks=1 env:N=100", 1, {1.0}, 0.3), mpi_point(1, "ranks=2 env:N=200", 2, {1.1, 1.1}, 0.3)});
  AnalysisResult res = analyze(load_run(path), {});
  remove_run(path);
  EXPECT_EQ(res.scaling, "weak");
  ASSERT_EQ(res.summaries.size(), 1u);
  const auto& sum = res.summaries[0];
  ASSERT_EQ(sum.points.size(), 2u);
  EXPECT_EQ(sum.grows_with, std::vector<std::string>{"env:N"});
  EXPECT_NEAR(sum.points[1].efficiency, 1.0 / 1.1, 1e-9);  // T(ref)/T(p) on the MPI window
  ASSERT_EQ(sum.steps.size(), 1u);
  const auto& st = sum.steps[0];
  EXPECT_NEAR(st.lb_factor * st.comm_factor * st.cs_factor, st.efficiency, 1e-12);
  EXPECT_NEAR(st.efficiency * st.startup_factor, st.wall_efficiency, 1e-12);
  EXPECT_NEAR(st.wall_efficiency, 1.31 / 1.41, 1e-9);  // wall = startup + useful + 0.01
  EXPECT_NEAR(sum.points[1].pop.computation_scalability, 1.0 / 1.1, 1e-9);  // per unit of work
  EXPECT_NEAR(sum.points[1].pop.global_efficiency,
              sum.points[1].pop.parallel_efficiency * sum.points[1].pop.computation_scalability, 1e-15);
  // Strong scaling on request: the zip then falls apart into one-point groups.
  AnalyzeOptions strong;
  strong.scaling = "strong";
  synth::write_run(path, {{"ranks", "1,2"}, {"env:N", "100,200"}},
                   {mpi_point(0, "ranks=1 env:N=100", 1, {1.0}, 0.3), mpi_point(1, "ranks=2 env:N=200", 2, {1.1, 1.1}, 0.3)});
  EXPECT_EQ(analyze(load_run(path), strong).summaries.size(), 2u);
  remove_run(path);

  nlohmann::json schema = nlohmann::json::parse(kAnalysisSchemaJson);
  nlohmann::json doc = to_json(res);
  auto errors = validate_json(doc, schema);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(doc["summary"][0]["scaling"], "weak");
  for (const char* key : {"load_balance", "communication_efficiency", "parallel_efficiency", "computation_scalability",
                          "global_efficiency"})
    EXPECT_TRUE(doc["summary"][0]["points"][1]["pop"][key].is_number()) << key;
  EXPECT_EQ(doc["configurations"][1]["mpi_calls"][0]["name"], "MPI_Init");

  CompareResult cmp = compare_runs({res, res});
  ASSERT_EQ(cmp.configs.size(), 2u);
  EXPECT_NEAR(cmp.configs[1].runs[1].time_change, 0.0, 1e-12);
  EXPECT_TRUE(cmp.notes.empty());
  errors = validate_json(to_json(cmp), schema);
  EXPECT_TRUE(errors.empty()) << errors.front();

  // Runs over different axes share no configuration: the comparison says why.
  AnalysisResult other = res;
  other.axis = "threads";
  for (auto& c : other.run.configs) c.label = "threads=" + c.label;
  CompareResult apart = compare_runs({res, other});
  ASSERT_EQ(apart.notes.size(), 2u);
  EXPECT_EQ(apart.notes[0], "run 2 sweeps `threads`, run 1 sweeps `" + res.axis + "`: their configurations cannot pair up");
  EXPECT_EQ(apart.notes[1].rfind("no configuration is in two runs: nothing to compare", 0), 0u);
  EXPECT_NE(render_compare_text(apart).find("  note: run 2 sweeps `threads`"), std::string::npos);
  errors = validate_json(to_json(apart), schema);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST(Analyze, ImbalancedMpiRunIsDiagnosedAsImbalanceWithWindowedMpiShare) {
  std::string path = temp_path("imbalance-pop");
  synth::write_run(path, {{"ranks", "1,2"}},
                   {mpi_point(0, "ranks=1", 1, {2.0}, 0.3), mpi_point(1, "ranks=2", 2, {1.5, 0.5}, 0.3)});
  AnalysisResult res = analyze(load_run(path), {});
  remove_run(path);
  ASSERT_EQ(res.summaries.size(), 1u);
  const auto& sum = res.summaries[0];
  EXPECT_NEAR(sum.points[1].pop.load_balance, 1.0 / 1.5, 1e-9);
  EXPECT_NEAR(sum.points[1].mpi_share, 1.0 / 3.0, 1e-9);  // MPI_Init and MPI_Finalize are outside the window
  EXPECT_EQ(sum.steps.at(0).cause, "imbalance");
  EXPECT_NEAR(sum.steps.at(0).efficiency, 2.0 / (2 * 1.5), 1e-9);  // window 2.0 s -> 1.5 s
  ASSERT_GE(sum.sentences.size(), 2u);
  EXPECT_EQ(sum.sentences[1].rfind("Scaling breaks past ranks=1: imbalance - ", 0), 0u) << sum.sentences[1];
}

// rtrace's own work (run-file 1.8 rank_info.tracer_*): at 2 ranks the
// sampler's handler and the MPI wrappers took 0.4 s of each rank's window,
// outside MPI time (issue 30: HPCC was told its computation did not scale).
// The app itself scales perfectly: the step is ideal, the tracer's share is
// said first with the way out, and it is in the JSON.
TEST(Analyze, TracerOwnWorkIsTakenOutOfTheUsefulTimeAndSaidFirstNeverTheAppsCause) {
  std::string path = temp_path("tracer-own");
  synth::SynthPoint p1 = mpi_point(0, "ranks=1", 1, {2.0}, 0.3), p2 = mpi_point(1, "ranks=2", 2, {1.0, 1.0}, 0.3);
  auto own = [](store::RankRecords& rr, double sampler, double wrappers, double exit) {
    rr.info.tracer_sampler_s = sampler;
    rr.info.tracer_wrapper_s = wrappers;
    rr.info.tracer_code_s = 0;
    rr.info.tracer_exit_s = exit;
    rr.info.tracer_outside_mpi_s = sampler + wrappers;
    rr.info.mpi_finalize_start += sampler + wrappers;  // the window holds the tracer's work
    rr.info.wall_s += sampler + wrappers + exit;
  };
  for (auto& rr : p1.ranks) own(rr, 0.004, 0.001, 0.01);
  for (auto& rr : p2.ranks) own(rr, 0.3, 0.1, 0.02);
  synth::write_run(path, {{"ranks", "1,2"}}, {p1, p2});
  AnalysisResult res = analyze(load_run(path), {});
  remove_run(path);
  ASSERT_EQ(res.summaries.size(), 1u);
  const auto& sum = res.summaries[0];
  EXPECT_NEAR(sum.points[1].pop.computation_scalability, 1.0, 1e-9);
  EXPECT_NEAR(sum.points[1].pop.load_balance, 1.0, 1e-9);
  ASSERT_EQ(sum.steps.size(), 1u);
  for (const auto& c : sum.steps[0].causes) EXPECT_NE(c.cause, "computation-scaling") << sum.steps[0].explanation;
  EXPECT_EQ(sum.steps[0].diagnosis, "ideal") << sum.steps[0].explanation;
  const double share = (0.3 + 0.1 + 0.02) / (sum.points[1].pop.wall_s + 0.42);  // of the wall as recorded
  EXPECT_NEAR(sum.points[1].pop.tracer_share, share, 1e-9);
  ASSERT_FALSE(res.warnings.empty());
  char said[64];
  std::snprintf(said, sizeof said, "rtrace's own work took %.1f%% of the ranks' time", 100 * share);
  EXPECT_EQ(res.warnings.front().rfind(said, 0), 0u) << res.warnings.front();
  EXPECT_NE(res.warnings.front().find("at 'ranks=2' (the sampler's signal handler"), std::string::npos);
  EXPECT_NE(res.warnings.front().find("never counted as the app's loss"), std::string::npos);
  EXPECT_NE(res.warnings.front().find("`--sample 0`"), std::string::npos);
  EXPECT_NE(render_text(res).find("  warning: rtrace's own work took"), std::string::npos);
  nlohmann::json doc = to_json(res);
  auto errors = validate_json(doc, nlohmann::json::parse(kAnalysisSchemaJson));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_NEAR(doc["configurations"][1]["tracer"]["share"].get<double>(), share, 1e-9);
  EXPECT_NEAR(doc["configurations"][1]["tracer"]["sampler"]["value"].get<double>(), 0.6, 1e-9);
  EXPECT_EQ(doc["warnings"][0].get<std::string>().rfind("rtrace's own work took", 0), 0u);
}

TEST(Analyze, SuperlinearSingleSampleIsNeverWithinTenPercentOfIdeal) {
  std::string path = temp_path("superlinear");
  // 2.0 s -> 0.7 s on 2 ranks: 143% step efficiency, one sample each.
  synth::write_run(path, {{"ranks", "1,2"}},
                   {mpi_point(0, "ranks=1", 1, {2.0}, 0.01), mpi_point(1, "ranks=2", 2, {0.7, 0.7}, 0.01)});
  AnalysisResult res = analyze(load_run(path), {});
  remove_run(path);
  ASSERT_EQ(res.summaries.size(), 1u);
  EXPECT_EQ(res.summaries[0].steps.at(0).diagnosis, "superlinear");
  for (const auto& s : res.summaries[0].sentences) EXPECT_EQ(s.find("within"), std::string::npos) << s;
  // The repeat hint (the other one says how to get a counted roofline: this run has no counts).
  ASSERT_EQ(res.hints.size(), 2u);
  EXPECT_NE(res.hints[0].find("--repeat 3"), std::string::npos);
  EXPECT_NE(res.hints[1].find("--counts sim"), std::string::npos);
}

TEST(Analyze, StepWithinTheRepeatSpreadIsNoise) {
  std::string path = temp_path("noise");
  std::vector<synth::SynthPoint> pts;
  // ranks=1: walls 2.02 / 2.62 / 3.22 s (spread 46%); ranks=2: 1.82 s: 72% step efficiency, inside the spread.
  const double t1[] = {2.0, 2.6, 3.2};
  for (int i = 0; i < 3; ++i) {
    auto p = mpi_point(i, "ranks=1", 1, {t1[i]}, 0.01);
    p.row.repeat = i;
    pts.push_back(p);
  }
  for (int i = 0; i < 3; ++i) {
    auto p = mpi_point(3 + i, "ranks=2", 2, {1.8, 1.8}, 0.01);
    p.row.repeat = i;
    pts.push_back(p);
  }
  synth::write_run(path, {{"ranks", "1,2"}}, pts);
  AnalysisResult res = analyze(load_run(path), {});
  remove_run(path);
  ASSERT_EQ(res.summaries.size(), 1u);
  EXPECT_EQ(res.summaries[0].steps.at(0).diagnosis, "noise");
  EXPECT_GT(res.summaries[0].points[0].spread, 0.4);
  for (const auto& h : res.hints) EXPECT_EQ(h.find("--repeat"), std::string::npos) << h;  // repeats were run
}

TEST(Analyze, FixedStartupIsNotAScalingLossButGrowingStartupIs) {
  std::string path = temp_path("startup");
  // Window 4 s -> 2 s (ideal); startup 1 s at both: wall 5.01 -> 3.01 s (83%), a fixed cost.
  synth::write_run(path, {{"ranks", "1,2"}},
                   {mpi_point(0, "ranks=1", 1, {4.0}, 1.0), mpi_point(1, "ranks=2", 2, {2.0, 2.0}, 1.0)});
  AnalysisResult res = analyze(load_run(path), {});
  EXPECT_EQ(res.summaries.at(0).steps.at(0).diagnosis, "ideal");
  EXPECT_LT(res.summaries.at(0).steps.at(0).wall_efficiency, 0.9);
  // Startup growing 1 s -> 2 s with the ranks: the cause `startup`.
  synth::write_run(path, {{"ranks", "1,2"}},
                   {mpi_point(0, "ranks=1", 1, {4.0}, 1.0), mpi_point(1, "ranks=2", 2, {2.0, 2.0}, 2.0)});
  res = analyze(load_run(path), {});
  remove_run(path);
  EXPECT_EQ(res.summaries.at(0).steps.at(0).cause, "startup");
}

TEST(Analyze, OffsettingFactorsAreReportedAsSuchNotAsIdeal) {
  // 1 -> 2 ranks: load balance 0.85 offset by computation scalability 1.2 (the
  // ranks' useful time shrinks to 0.98 s and 0.69 s from 2 s): efficiency 1.02.
  std::string path = temp_path("offset");
  synth::write_run(path, {{"ranks", "1,2"}},
                   {mpi_point(0, "ranks=1", 1, {2.0}, 0.3), mpi_point(1, "ranks=2", 2, {0.98, 0.6867}, 0.3)});
  AnalysisResult res = analyze(load_run(path), {});
  remove_run(path);
  ASSERT_EQ(res.summaries.size(), 1u);
  const auto& st = res.summaries[0].steps.at(0);
  EXPECT_NEAR(st.efficiency, 2.0 / (2 * 0.98), 1e-9);
  EXPECT_EQ(st.diagnosis, "offsetting") << st.explanation;
  EXPECT_EQ(st.cause, "imbalance");
  const std::string text = render_text(res);
  EXPECT_EQ(text.find("scales within"), std::string::npos) << text;
  EXPECT_NE(text.find("Factors offset at ranks 1->2 (imbalance)"), std::string::npos) << text;
  EXPECT_NE(text.find("offsetting: imbalance"), std::string::npos) << text;  // the table's step column
  nlohmann::json doc = to_json(res);
  auto errors = validate_json(doc, nlohmann::json::parse(kAnalysisSchemaJson));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(doc["summary"][0]["steps"][0]["causes"][0]["cause"], "imbalance");
}

// Issue 30: QE at threads=2 while other processes took half the cores was
// called bandwidth-contention. The same contention step (DRAM ceiling grows
// 1.2x, the kernel pinned on it) measured on a busy second point is not
// contention: it carries the measured load and names machine-load.
TEST(Analyze, ContentionOnABusyPointIsNotClaimedAndSaysTheLoad) {
  auto quiet = run_two_points("quiet-contention", cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8),
                              cpu_point(1, 2, 1, 12, 2000, {1e9 / 120e9}, 1e9, 1e8), "threads");
  EXPECT_EQ(only_step(quiet).d.diagnosis, "bandwidth-contention");
  auto a = cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8);
  auto b = cpu_point(1, 2, 1, 12, 2000, {1e9 / 120e9}, 1e9, 1e8);
  a.machine_load = {synth::machine_load(2, 1.0, 0.02)};
  b.machine_load = {synth::machine_load(2, 1.0, 1.06)};  // 53% of the point's two cores
  auto busy = run_two_points("busy-contention", a, b, "threads");
  const auto& st = only_step(busy);
  EXPECT_NE(st.d.diagnosis, "bandwidth-contention");
  EXPECT_NE(st.d.diagnosis, "compute-bound");
  EXPECT_EQ(st.d.cause, "machine-load");
  EXPECT_NEAR(st.d.machine_load, 0.53, 1e-9);
  EXPECT_NE(st.d.explanation.find("other processes took 53% of the point's cores at 2"), std::string::npos)
      << st.d.explanation;
  EXPECT_NE(st.d.explanation.find("bandwidth-contention not claimed"), std::string::npos) << st.d.explanation;
  const std::string text = render_text(busy);
  EXPECT_NE(text.find("busy machine"), std::string::npos) << text;
  const auto json = to_json(busy);
  EXPECT_NEAR(json["trajectories"][0]["steps"][0]["machine_load"].get<double>(), 0.53, 1e-9);
  EXPECT_EQ(json["trajectories"][0]["steps"][0]["cause"], "machine-load");
  EXPECT_TRUE(validate_json(json, nlohmann::json::parse(kAnalysisSchemaJson)).empty());
  // Below the tolerance (load_share, 15%) the step stays contention, its load said nowhere.
  b.machine_load = {synth::machine_load(2, 1.0, 0.1)};
  auto light = run_two_points("light-contention", a, b, "threads");
  EXPECT_EQ(only_step(light).d.diagnosis, "bandwidth-contention");
  EXPECT_EQ(only_step(light).d.explanation.find("busy machine"), std::string::npos);
}

// `rtrace analyze --axis rank`: the sweep side's did-you-mean (issue 30).
TEST(Analyze, UnknownAxisOffersWhatTheUserMeant) {
  const std::string path = temp_path("axis-hint");
  synth::write_run(path, {{"threads", "1,2"}},
                   {cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8), cpu_point(1, 2, 1, 20, 2000, {0.005}, 1e9, 1e8)});
  auto error_for = [&](const std::string& axis) -> std::string {
    AnalyzeOptions o;
    o.axis = axis;
    try {
      analyze(load_run(path), o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_for("rank"), "--axis rank: expected one of threads, ranks, nodes, sms; did you mean `ranks`?");
  EXPECT_EQ(error_for("thread"), "--axis thread: expected one of threads, ranks, nodes, sms; did you mean `threads`?");
  EXPECT_EQ(error_for("Nodes"), "--axis Nodes: expected one of threads, ranks, nodes, sms; did you mean `nodes`?");
  EXPECT_EQ(error_for("bogus"), "--axis bogus: expected one of threads, ranks, nodes, sms");
  remove_run(path);
}

// Issue 30: ceilings the ERT marked unreliable were drawn as ordinary roofs.
// The text's bound cell is marked "!" like the "! unreliable ceiling" note
// under the table, the HTML cell says "(unreliable)", the SVG draws the roof
// dotted and labelled, the JSON carries the flag.
TEST(Analyze, UnreliableCeilingsAreLabelledInEveryRendering) {
  auto a = cpu_point(0, 1, 1, 10, 1000, {0.01}, 1e9, 1e8);
  auto b = cpu_point(1, 2, 1, 12, 2000, {1e9 / 120e9}, 1e9, 1e8);
  b.ceilings[0].unreliable = 1;
  store::set_text(b.ceilings[0].unreliable_reason, "measured on a busy machine: 308 of 650 runs were disturbed");
  auto res = run_two_points("unreliable", a, b, "threads");
  const std::string text = render_text(res);
  EXPECT_NE(text.find(" DRAM! "), std::string::npos) << text;  // the bound cell, marked as the note below
  std::string flat;  // the wrapped lines as one
  for (char ch : text)
    if (!(ch == ' ' || ch == '\n') || (!flat.empty() && flat.back() != ' ')) flat += ch == '\n' ? ' ' : ch;
  EXPECT_NE(flat.find("! unreliable ceiling at 2: DRAM (measured on a busy machine: 308 of 650 runs were disturbed)"),
            std::string::npos)
      << text;
  const auto json = to_json(res);
  EXPECT_EQ(json["configurations"][1]["ceilings"][0]["unreliable"], true);
  EXPECT_EQ(json["configurations"][0]["ceilings"][0]["unreliable"], false);
  EXPECT_TRUE(validate_json(json, nlohmann::json::parse(kAnalysisSchemaJson)).empty());
  bool drawn = false;
  for (const auto& c : render_svgs(res))
    if (c.file == "roofline-c001.svg") {
      drawn = true;
      EXPECT_NE(c.svg.find("DRAM 12 GB/s (unreliable)"), std::string::npos);
      EXPECT_NE(c.svg.find("stroke-dasharray=\"2,4\""), std::string::npos);
    } else if (c.file == "roofline-c000.svg") {
      EXPECT_EQ(c.svg.find("unreliable"), std::string::npos);
    }
  EXPECT_TRUE(drawn);
  const std::string html = render_html(res, render_svgs(res));
  EXPECT_NE(html.find("DRAM <span class=\"unreliable\""), std::string::npos);
}

// Issue 30: the text's table cells were cut to their column ("(threads )",
// an MPI call name cut at 18 characters): a cell never loses characters.
TEST(Analyze, TextTablesNeverCutACell) {
  std::string path = temp_path("long-call");
  auto a = mpi_point(0, "ranks=1", 1, {2.0}, 0.3);
  auto b = mpi_point(1, "ranks=2", 2, {1.5, 0.5}, 0.3);
  for (auto& r : b.ranks) synth::mpi(r, "MPI_Reduce_scatter_block", 40, 0.4);
  synth::write_run(path, {{"ranks", "1,2"}}, {a, b});
  const std::string text = render_text(analyze(load_run(path), {}));
  remove_run(path);
  EXPECT_NE(text.find("    MPI_Reduce_scatter_block "), std::string::npos) << text;
  // The table still lines up: the header's call column as wide as the longest name.
  // "call" padded to 24, a space, "calls" right-aligned in 9.
  EXPECT_NE(text.find("    call" + std::string(20 + 1 + 4, ' ') + "calls "), std::string::npos) << text;
}

// Issue 32: a point whose FP64 FMA was measured at half the machine (marked
// against the machine's reference, which stands in) is analysed on the
// reference, keeps its own value, and every report says where each ceiling
// used came from and whether it was marked.
TEST(Analyze, EveryCeilingUsedSaysWhereItComesFrom) {
  auto a = cpu_point(0, 1, 1, 40, 86, {1.0}, 40e9, 10e9);
  auto b = cpu_point(1, 2, 1, 45, 172, {0.5}, 40e9, 10e9);
  for (auto* p : {&a, &b})
    for (auto& c : p->ceilings) {
      store::set_str(c.source, "measured");
      c.measured = c.value;
    }
  auto& fma = b.ceilings[1];
  fma.unreliable = 1;
  store::set_str(fma.unreliable_reason,
                 "FP64 FMA 87.5 GFLOP/s, 0.51x the 172.0 measured on this machine on 2026-11-28: the machine was "
                 "slower or busier now");
  store::set_str(fma.source, "reference");
  store::set_str(fma.reference_date, "2026-11-28");
  fma.measured = 87.5;
  const AnalysisResult res = run_two_points("provenance", a, b, "threads");
  ASSERT_EQ(res.kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(res.kernels[0].eval[1].peak_gflops, 172);  // the reference, not 87.5
  const Ceiling* peak = res.run.configs[1].ceilings.peak("fp64");
  ASSERT_TRUE(peak);
  EXPECT_FALSE(peak->unreliable);  // the reference stands in: verdicts may rest on it
  EXPECT_TRUE(peak->marked);
  EXPECT_DOUBLE_EQ(peak->measured, 87.5);
  ASSERT_EQ(res.ceilings_used.size(), 4u);  // DRAM and FP64 FMA at both points

  const std::string text = render_text(res);
  EXPECT_NE(text.find("Ceilings used (where each comes from):"), std::string::npos) << text;
  EXPECT_NE(text.find("threads=1 ranks=1: DRAM 40 GB/s, FP64 FMA 86 GFLOP/s measured by this point's ERT"),
            std::string::npos)
      << text;
  // The line wraps at the report's width: read it with its wraps undone.
  std::string unwrapped = text;
  for (std::size_t at; (at = unwrapped.find("\n    ")) != std::string::npos;) unwrapped.replace(at, 5, " ");
  EXPECT_NE(unwrapped.find("threads=2 ranks=1: FP64 FMA 172 GFLOP/s the machine's reference of 2026-11-28, not this "
                           "point's 87.5 (marked: FP64 FMA 87.5 GFLOP/s, 0.51x the 172.0"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("! unreliable ceiling"), std::string::npos) << text;

  nlohmann::json doc = to_json(res);
  auto errors = validate_json(doc, nlohmann::json::parse(kAnalysisSchemaJson));
  EXPECT_TRUE(errors.empty()) << errors.front();
  const auto& c2 = doc["configurations"][1]["ceilings"];
  ASSERT_EQ(c2.size(), 2u);
  EXPECT_EQ(c2[1]["name"], "FP64 FMA");
  EXPECT_EQ(c2[1]["source"], "reference");
  EXPECT_EQ(c2[1]["reference_date"], "2026-11-28");
  EXPECT_EQ(c2[1]["value"]["value"], 172.0);
  EXPECT_EQ(c2[1]["measured"]["value"], 87.5);
  EXPECT_EQ(c2[1]["marked"], true);
  EXPECT_EQ(c2[1]["used"], true);
  EXPECT_EQ(c2[0]["source"], "measured");
  EXPECT_EQ(c2[0]["marked"], false);

  const std::string html = render_html(res, {});
  EXPECT_NE(html.find("<h2>Ceilings used</h2>"), std::string::npos);
  EXPECT_NE(html.find("machine reference of 2026-11-28"), std::string::npos);
}
