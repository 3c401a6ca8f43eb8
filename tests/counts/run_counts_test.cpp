// `rtrace run --counts sim` end to end: the counting pass once per
// configuration, its tables in the ranks of the configuration's first point,
// failures that keep the timed data, ^C and --resume (docs/counts.md).
#include "counts_test_util.hpp"

#include "rtrace/store/validate.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <thread>

using namespace counts_test;
using rtrace::store::get_str;

namespace {

const std::string kRtrace = RTRACE_BIN;
const std::string kGeometry = "RTRACE_COUNTS_GEOMETRY=L1=4K,4,64;L2=32K,8,64;L3=256K,8,64";

struct PointCounts {
  std::string label, status;
  int repeat = 0;
  std::map<std::int64_t, rtrace::store::RankRecords> ranks;
  std::vector<std::string> log;
};

std::vector<PointCounts> read_points(const std::string& path) {
  std::vector<PointCounts> out;
  auto rf = rtrace::store::RunFile::open(path);
  auto f = rtrace::store::File::open(path);
  const auto points = f.root().open_group("points");
  for (const auto& row : rf.points()) {
    PointCounts pc;
    pc.label = get_str(row.label);
    pc.status = get_str(row.status);
    pc.repeat = row.repeat;
    const auto name = rtrace::store::point_group_name(row.point_id);
    if (row.complete && points.exists(name)) {
      const auto g = points.open_group(name);
      if (g.has_attr("log")) pc.log = g.attr_strings("log");
      const auto ranks = g.open_group("ranks");
      for (const auto& r : ranks.children()) {
        auto rec = rtrace::store::read_rank(ranks.open_group(r));
        pc.ranks[rec.info.rank] = rec;
      }
    }
    out.push_back(pc);
  }
  return out;
}

double fn_flops(const rtrace::store::RankRecords& r, const std::string& fn) {
  double s = 0;
  for (const auto& c : r.counts)
    if (r.names.at(static_cast<std::size_t>(c.function_id)) == fn)
      s += c.flops_fp64_scalar + c.flops_fp64_v128 + c.flops_fp64_v256 + c.flops_fp64_v512;
  return s;
}

}  // namespace

TEST(RunCounts, FirstRepeatOfEachConfigurationGetsTheCounts) {
  TempDir d;
  const std::string out = d.file("run.h5");
  Ran r = run({kRtrace, "--sweep", "threads=1,2", "--repeat", "2", "--ert", "none", "--counts", "sim", "-o", out,
               "--", TRIAD_APP, "100000"},
              {kGeometry});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("counting pass under Valgrind"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("once per configuration"), std::string::npos) << r.err;
  const auto points = read_points(out);
  ASSERT_EQ(points.size(), 4u);
  int counted = 0;
  for (const auto& p : points) {
    ASSERT_EQ(p.status, "ok");
    ASSERT_TRUE(p.ranks.count(0)) << p.label;
    const auto& rank = p.ranks.at(0);
    if (p.repeat != 0) {
      EXPECT_TRUE(rank.counts_info.empty()) << p.label << " repeat " << p.repeat;
      continue;
    }
    ++counted;
    ASSERT_EQ(rank.counts_info.size(), 1u) << p.label;
    EXPECT_EQ(get_str(rank.counts_info[0].status), "ok") << get_str(rank.counts_info[0].note);
    EXPECT_DOUBLE_EQ(fn_flops(rank, "triad"), 200000.0) << p.label;
    // The tracer's names and the counts' share one table: every id resolves.
    for (const auto& c : rank.counts) {
      ASSERT_LT(static_cast<std::size_t>(c.function_id), rank.names.size());
      ASSERT_LT(static_cast<std::size_t>(c.module_id), rank.names.size());
    }
    EXPECT_EQ(get_str(rank.info.tracer_mode), "cpu");  // the timed run's rank info is kept
  }
  EXPECT_EQ(counted, 2);
  const auto report = rtrace::store::validate_file(out);
  EXPECT_EQ(report.verdict, rtrace::store::ValidationReport::Verdict::Valid)
      << (report.deviations.empty() ? report.fatal : report.deviations.front());
}

TEST(RunCounts, CountingRunCrashKeepsTheTimedPoint) {
  TempDir d;
  const std::string out = d.file("run.h5");
  Ran r = run({kRtrace, "--sweep", "threads=1", "--ert", "none", "--counts", "sim", "-o", out, "--", CRASH_APP},
              {kGeometry});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // the point itself is fine
  const auto points = read_points(out);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].status, "ok");
  const auto& rank = points[0].ranks.at(0);
  ASSERT_EQ(rank.counts_info.size(), 1u);
  EXPECT_EQ(get_str(rank.counts_info[0].status), "failed");
  EXPECT_NE(get_str(rank.counts_info[0].note).find("signal"), std::string::npos) << get_str(rank.counts_info[0].note);
  EXPECT_EQ(get_str(rank.info.tracer_mode), "cpu");  // the timed run's records are there
  bool logged = false;
  for (const auto& l : points[0].log) logged = logged || l.find("counts of rank 0: failed") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(RunCounts, MpiRanksAreEachCountedUnderTheTool) {
  TempDir d;
  const std::string out = d.file("run.h5");
  Ran r = run({kRtrace, "--sweep", "ranks=2", "--ert", "none", "--counts", "sim", "-o", out, "--", MPI_SLICES_APP,
               "100000", "1"},
              {kGeometry, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto points = read_points(out);
  ASSERT_EQ(points.size(), 1u);
  ASSERT_EQ(points[0].ranks.size(), 2u);
  double total = 0;
  for (const auto& [rank, rec] : points[0].ranks) {
    ASSERT_EQ(rec.counts_info.size(), 1u) << rank;
    EXPECT_EQ(get_str(rec.counts_info[0].status), "ok") << rank << ": " << get_str(rec.counts_info[0].note);
    EXPECT_DOUBLE_EQ(fn_flops(rec, "triad_slice"), 100000.0) << rank;
    total += fn_flops(rec, "triad_slice");
  }
  EXPECT_DOUBLE_EQ(total, 200000.0);
}

TEST(RunCounts, InterruptDuringCountingThenResume) {
  TempDir d;
  const std::string out = d.file("run.h5"), err = d.file("err.txt"), go = d.file("go"), runs = d.file("runs.txt");
  // The app waits under Valgrind until `go` exists: the counting pass is
  // surely running when the SIGINT comes.
  const std::vector<std::string> args = {"--sweep", "threads=1", "--ert", "none", "--counts", "sim", "-o", out,
                                         "--", WAIT_APP, go, runs};
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    putenv(const_cast<char*>(kGeometry.c_str()));
    std::vector<char*> a = {const_cast<char*>(kRtrace.c_str())};
    for (const auto& s : args) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(kRtrace.c_str(), a.data());
    _exit(127);
  }
  bool started = false;
  for (int i = 0; i < 1200 && !started; ++i) {
    std::ifstream in(err);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    started = all.find("counting pass under Valgrind") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(started);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  // The timed run is committed; its counts are marked to come.
  auto points = read_points(out);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].status, "ok");
  ASSERT_EQ(points[0].ranks.at(0).counts_info.size(), 1u);
  EXPECT_EQ(get_str(points[0].ranks.at(0).counts_info[0].status), "interrupted");
  EXPECT_EQ(get_str(points[0].ranks.at(0).info.tracer_mode), "cpu");
  // --resume runs the counting pass only: the timed run happened once.
  std::ofstream(go) << "go\n";
  Ran r = run({kRtrace, "--resume", "-o", out}, {kGeometry});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  points = read_points(out);
  EXPECT_EQ(points[0].status, "ok");
  ASSERT_EQ(points[0].ranks.at(0).counts_info.size(), 1u);
  EXPECT_EQ(get_str(points[0].ranks.at(0).counts_info[0].status), "ok")
      << get_str(points[0].ranks.at(0).counts_info[0].note);
  EXPECT_DOUBLE_EQ(fn_flops(points[0].ranks.at(0), "triad"), 2.0 * 10000);
  EXPECT_EQ(get_str(points[0].ranks.at(0).info.tracer_mode), "cpu");  // the timed run's records kept
  std::ifstream in(runs);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(lines_of(all).size(), 1u) << all;
  const auto report = rtrace::store::validate_file(out);
  EXPECT_EQ(report.verdict, rtrace::store::ValidationReport::Verdict::Valid)
      << (report.deviations.empty() ? report.fatal : report.deviations.front());
}

TEST(RunCounts, SimWithoutTheToolIsRefusedBeforeAnythingRuns) {
  TempDir d;
  const std::string out = d.file("run.h5");
  Ran r = run({kRtrace, "--sweep", "threads=1", "--counts", "sim", "-o", out, "--", TRIAD_APP, "1000"},
              {"RTRACE_VALGRIND_LIB=/nonexistent"});
  EXPECT_EQ(r.exit_code, 2);
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("--counts sim: the counting tool is not installed"), std::string::npos) << lines[0];
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(RunCounts, AutoWithoutPmuSaysSimIsThereAndPmuSetsTheTracersVariable) {
  TempDir d;
  Ran r = run({kRtrace, "--sweep", "threads=1", "--dry-run", "-o", d.file("run.h5"), "--", TRIAD_APP, "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string all = r.out + r.err;
  // auto: where the CPU gives no hardware events, the plan says --counts sim
  // is there; where it does, the tracer counts through the PMU.
  if (all.find("RTRACE_COUNTS=pmu") == std::string::npos) {
    EXPECT_NE(all.find("no CPU hardware counters here"), std::string::npos) << all;
    EXPECT_NE(all.find("`--counts sim` counts them"), std::string::npos) << all;
  }
  Ran pmu = run({kRtrace, "--sweep", "threads=1", "--counts", "pmu", "--dry-run", "-o", d.file("run.h5"), "--",
                 TRIAD_APP, "1000"});
  ASSERT_EQ(pmu.exit_code, 0) << pmu.err;
  // pmu: the timed run's environment tells the tracer.
  EXPECT_NE((pmu.out + pmu.err).find("RTRACE_COUNTS=pmu"), std::string::npos) << pmu.out << pmu.err;
  Ran sim = run({kRtrace, "--sweep", "threads=1", "--counts", "sim", "--dry-run", "-o", d.file("run.h5"), "--",
                 TRIAD_APP, "1000"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_EQ((sim.out + sim.err).find("RTRACE_COUNTS=pmu"), std::string::npos);  // the counting pass instead
  Ran bad = run({kRtrace, "--sweep", "threads=1", "--counts", "maybe", "-o", d.file("run.h5"), "--", TRIAD_APP});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--counts `maybe`: expected auto, sim, pmu or none"), std::string::npos) << bad.err;
}

// ---------------------------------------------------------------- the counted window and dispatch (issue 29)

namespace {
double flops_where(const rtrace::store::RankRecords& r, const std::string& fn, const std::string& window) {
  double s = 0;
  for (const auto& c : r.counts)
    if (r.names.at(static_cast<std::size_t>(c.function_id)) == fn && get_str(c.window) == window)
      s += c.flops_fp64_scalar + c.flops_fp64_v128 + c.flops_fp64_v256 + c.flops_fp64_v512;
  return s;
}
}  // namespace

#ifdef MPI_WINDOW_APP
TEST(RunCounts, MpiWindowSeparatesWorkBeforeInitAndAfterFinalize) {
  TempDir d;
  const std::string out = d.file("run.h5");
  Ran r = run({kRtrace, "--sweep", "ranks=2", "--ert", "none", "--counts", "sim", "-o", out, "--", MPI_WINDOW_APP,
               "100000", "1000000"},
              {kGeometry, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto points = read_points(out);
  ASSERT_EQ(points.size(), 1u);
  ASSERT_EQ(points[0].ranks.size(), 2u);
  for (const auto& [rank, rec] : points[0].ranks) {
    ASSERT_EQ(rec.counts_info.size(), 1u);
    EXPECT_EQ(get_str(rec.counts_info[0].window), "MPI_Init..MPI_Finalize") << rank;
    EXPECT_DOUBLE_EQ(flops_where(rec, "inside_work", "inside"), 200000.0) << rank;
    EXPECT_DOUBLE_EQ(flops_where(rec, "outside_work", "before"), 2000000.0) << rank;
    EXPECT_DOUBLE_EQ(flops_where(rec, "outside_work", "after"), 4000000.0) << rank;
    EXPECT_DOUBLE_EQ(flops_where(rec, "outside_work", "inside"), 0.0) << rank;
  }
  // The application roofline counts the window the POP summary times: the
  // 2 x 2e5 FLOPs inside, not the 2 x 6e6 outside.
  Ran a = run({kRtrace, "analyze", out, "--json", d.file("a.json")});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("counted window: MPI_Init..MPI_Finalize"), std::string::npos) << a.out;
  std::ifstream in(d.file("a.json"));
  const auto doc = nlohmann::json::parse(in);
  bool found = false;
  for (const auto& k : doc.at("kernels")) {
    if (k.at("kind") != "application") continue;
    found = true;
    const double flops = k.at("points").at(0).at("flops").at("value").get<double>();
    EXPECT_NEAR(flops, 2 * 200000.0, 0.02 * 2 * 200000.0);
  }
  EXPECT_TRUE(found) << a.out;
  EXPECT_EQ(doc.at("counts").at("configurations").at(0).at("window"), "MPI_Init..MPI_Finalize");
}
#endif

TEST(RunCounts, CountsWindowByCallsThroughTheLauncherWithItsCostForecast) {
  TempDir d;
  const std::string out = d.file("run.h5");
  Ran r = run({kRtrace, "--sweep", "threads=1", "--ert", "none", "--counts", "sim", "--counts-window", "timestep:2-3",
               "-o", out, "--", STEPS_APP, "50000", "200"},
              {kGeometry});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The cost, predicted before the counting run from a short calibration.
  EXPECT_NE(r.err.find("counting pass: expected about "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("calibrated just now"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; predicted "), std::string::npos) << r.err;
  const auto points = read_points(out);
  ASSERT_EQ(points.size(), 1u);
  const auto& rank = points[0].ranks.at(0);
  ASSERT_EQ(rank.counts_info.size(), 1u);
  EXPECT_EQ(get_str(rank.counts_info[0].window), "calls 2-3 of timestep");
  EXPECT_DOUBLE_EQ(flops_where(rank, "timestep", "inside"), 2 * 2.0 * 50000);
  EXPECT_DOUBLE_EQ(flops_where(rank, "timestep", "after"), 197 * 2.0 * 50000);
}

TEST(RunCounts, BadCountsWindowIsOneLineBeforeAnythingRuns) {
  TempDir d;
  Ran r = run({kRtrace, "--sweep", "threads=1", "--counts", "sim", "--counts-window", "timestep:3-1", "-o",
               d.file("run.h5"), "--", STEPS_APP});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--counts-window `timestep:3-1`: the last call (1) is before the first (3)"), std::string::npos)
      << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  r = run({kRtrace, "--sweep", "threads=1", "--counts-window", "timestep:1-2", "-o", d.file("run2.h5"), "--",
           STEPS_APP});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("use it with --counts sim"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(d.file("run.h5")));
}

#ifdef DGEMM_APP
// The timed run's own OpenBLAS core (this machine's native choice: no
// OPENBLAS_CORETYPE anywhere) is observed by the tracer and followed by the
// counting run, or said to be out of Valgrind's reach.
TEST(RunCounts, CountingPassFollowsTheTimedRunsOpenBlasCore) {
  TempDir d;
  const std::string out = d.file("run.h5");
  Ran r = run({"/usr/bin/env", "-u", "OPENBLAS_CORETYPE", kRtrace, "--sweep", "threads=1", "--ert", "none", "--counts",
               "sim", "-o", out, "--", DGEMM_APP, "100"},
              {kGeometry, "OPENBLAS_NUM_THREADS=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto points = read_points(out);
  const auto& rank = points.at(0).ranks.at(0);
  std::string core;
  for (const auto& row : rank.dispatch)
    if (get_str(row.library) == "openblas" && get_str(row.item) == "core") core = get_str(row.choice);
  ASSERT_FALSE(core.empty()) << "the tracer did not observe OpenBLAS's core";
  ASSERT_EQ(rank.counts_info.size(), 1u);
  const std::string steered = get_str(rank.counts_info[0].steered);
  const std::string not_steered = get_str(rank.counts_info[0].not_steered);
  std::string upper = core;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (steered.find("OpenBLAS core " + core + " (OPENBLAS_CORETYPE=" + core + ")") != std::string::npos) {
    EXPECT_GT(fn_flops(rank, "dgemm_kernel_" + upper), 0.9 * 2 * 100.0 * 100 * 100) << steered;
  } else {
    // Out of Valgrind's reach (AVX-512 kernels): said, with the core named.
    EXPECT_NE(not_steered.find("OpenBLAS: the timed run's " + core + " kernels use AVX-512"), std::string::npos)
        << "steered: " << steered << "; not steered: " << not_steered;
  }
}
#endif
