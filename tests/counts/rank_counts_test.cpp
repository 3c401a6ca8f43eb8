#include "rtrace/counts/rank_counts.hpp"
#include "rtrace/counts/counting_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdlib.h>

using namespace rtrace::counts;
using rtrace::store::get_str;

namespace {

RawProcess process(std::int64_t pid, std::int64_t rank, int threads, bool with_l3 = true) {
  RawProcess p;
  p.tool = "rtrace-count 0.1.0 valgrind-3.19.0";
  p.pid = pid;
  p.rank = rank;
  p.threads = threads;
  p.exit_code = 0;
  p.wall_s = 2.0;
  p.exe = "/bin/app";
  p.levels = {{"L1d", 4096, 4096, 64, 4, 1}, {"L2", 32768, 32768, 64, 8, 1}};
  if (with_l3) p.levels.push_back({"L3", 131072, 262144, 64, 8, 4, 2, 1});
  p.modules = {"/bin/app"};
  p.functions = {{0, 0x1000, "kernel"}, {0, 0x2000, "kernel_clone"}, {-1, 0, ""}};
  for (int t = 0; t < threads; ++t) {
    RawRow r;
    r.thread = t;
    r.function = 0;
    r.values[kInstructions] = 100;
    r.values[kFlopsFirst + 2] = 40;  // FP64 256-bit
    r.values[kL1Read] = 800;
    r.values[kMemRead] = 640;
    p.rows.push_back(r);
  }
  RawRow clone;
  clone.function = 1;
  clone.values[kFlopsFirst] = 2;
  p.rows.push_back(clone);
  return p;
}

// Names by address: 0x2000 is a clone of the same function (the symboliser
// strips ".constprop"), so both rows of a thread merge.
FunctionName namer(const std::string& path, std::uint64_t vaddr) {
  return {vaddr == 0x1000 || vaddr == 0x2000 ? "kernel" : "other", "app"};
}

RunOutcome exited(int code = 0) {
  RunOutcome o;
  o.exit_code = code;
  return o;
}

}  // namespace

TEST(CountsRankCounts, OneRowPerThreadAndFunctionNamedBySymboliser) {
  auto ranks = build_rank_counts({process(10, 0, 2)}, 1, exited(), namer);
  ASSERT_EQ(ranks.size(), 1u);
  const CountedRank& r = ranks.at(0);
  EXPECT_EQ(get_str(r.info.status), "ok");
  EXPECT_EQ(get_str(r.info.source), "sim:rtrace-count 0.1.0 valgrind-3.19.0");
  EXPECT_EQ(r.info.threads, 2);
  EXPECT_EQ(r.info.serialised, 1);
  EXPECT_DOUBLE_EQ(r.info.wall_s, 2.0);
  ASSERT_EQ(r.counts.size(), 2u);  // thread 0 (kernel + clone merged), thread 1
  EXPECT_EQ(r.names.at(static_cast<std::size_t>(r.counts[0].function_id)), "kernel");
  EXPECT_EQ(r.names.at(static_cast<std::size_t>(r.counts[0].module_id)), "app");
  EXPECT_DOUBLE_EQ(r.counts[0].flops_fp64_v256, 40);
  EXPECT_DOUBLE_EQ(r.counts[0].flops_fp64_scalar, 2);
  EXPECT_DOUBLE_EQ(r.counts[0].bytes_l1_read, 800);
  EXPECT_DOUBLE_EQ(r.counts[0].bytes_dram_read, 640);
  ASSERT_EQ(r.levels.size(), 3u);
  EXPECT_EQ(r.levels[2].sharers, 4);
  EXPECT_EQ(r.levels[2].full_size_bytes, 262144);
  EXPECT_EQ(r.levels[2].threads_sharing, 2);
  EXPECT_EQ(r.levels[2].copies, 1);
  EXPECT_EQ(r.levels[1].threads_sharing, 0);
}

TEST(CountsRankCounts, LevelsNotSimulatedAreNaN) {
  auto ranks = build_rank_counts({process(10, 0, 1, /*with_l3=*/false)}, 1, exited(), namer);
  const auto& row = ranks.at(0).counts.at(0);
  EXPECT_TRUE(std::isnan(row.bytes_l3_read));
  EXPECT_TRUE(std::isnan(row.bytes_l3_write));
  EXPECT_FALSE(std::isnan(row.bytes_l2_read));
  EXPECT_DOUBLE_EQ(row.bytes_dram_read, 640);
  // The tool splits every FLOP by precision and width: none is unsplit, which
  // the schema writes NaN (the rows were cleared with memset and said 0).
  EXPECT_TRUE(std::isnan(row.flops_unsplit));
}

TEST(CountsRankCounts, ChildrenOfARankAddThreadsAfterTheParents) {
  RawProcess child = process(12, 0, 1);
  child.forked = true;
  RawProcess parent = process(11, 0, 2);
  auto ranks = build_rank_counts({child, parent}, 1, exited(), namer);
  const CountedRank& r = ranks.at(0);
  EXPECT_EQ(r.pid, 11);              // the rank's own process, not its fork child
  EXPECT_EQ(r.info.threads, 3);
  int max_thread = 0;
  for (const auto& c : r.counts) max_thread = std::max(max_thread, c.thread);
  EXPECT_EQ(max_thread, 2);          // the child's thread 0 is the rank's thread 2
  EXPECT_FALSE(r.log.empty());
}

TEST(CountsRankCounts, NoRankVariableIsRankZeroAndMissingRanksFail) {
  auto ranks = build_rank_counts({process(10, -1, 1)}, 3, exited(), namer);
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(get_str(ranks.at(0).info.status), "ok");
  EXPECT_EQ(get_str(ranks.at(2).info.status), "failed");
  EXPECT_NE(get_str(ranks.at(2).info.note).find("no counts from rank 2"), std::string::npos);
  EXPECT_TRUE(std::isnan(ranks.at(2).info.wall_s));
}

TEST(CountsRankCounts, UnsupportedInstructionFailsTheRankWithTheWayOut) {
  RawProcess p = process(10, 0, 1);
  p.exe = "/tmp/avx512";
  p.nodecode = NoDecode{0x107a, {0x62, 0xf1, 0xfd, 0x48}, "/tmp/avx512"};
  auto ranks = build_rank_counts({p}, 1, exited(132), namer);
  EXPECT_EQ(get_str(ranks.at(0).info.status), "failed");
  const std::string note = get_str(ranks.at(0).info.note);
  EXPECT_NE(note.find("AVX-512"), std::string::npos) << note;
  EXPECT_NE(note.find("x86-64-v3"), std::string::npos) << note;
  const std::string line = unsupported_instruction_line(p);
  EXPECT_NE(line.find("EVEX 62 f1 fd 48"), std::string::npos) << line;
  EXPECT_NE(line.find("--counts pmu"), std::string::npos) << line;
}

TEST(CountsRankCounts, KilledOrTimedOutRunsAreFailedAndNonZeroExitsPartial) {
  RunOutcome timeout;
  timeout.kind = RunOutcome::Kind::TimedOut;
  timeout.timeout_s = 30;
  auto t = build_rank_counts({process(10, 0, 1)}, 1, timeout, namer);
  EXPECT_EQ(get_str(t.at(0).info.status), "failed");
  EXPECT_NE(get_str(t.at(0).info.note).find("timed out after 30 s"), std::string::npos);
  RawProcess bad = process(10, 0, 1);
  bad.exit_code = 3;
  auto p = build_rank_counts({bad}, 1, exited(3), namer);
  EXPECT_EQ(get_str(p.at(0).info.status), "partial");
  EXPECT_NE(get_str(p.at(0).info.note).find("code 3"), std::string::npos);
}

// Valgrind's last word on a rank that is not ok goes into its note: its own
// process's log, or for a rank without counts, the log of a process that
// wrote none.
TEST(CountsRankCounts, ValgrindsLastLineIsFoldedIntoTheFailureNote) {
  char tmpl[] = "/tmp/counts-vglog-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/valgrind-10.log") << "==10== first\n==10== rtrace-count: cannot write x: lost\n\n";
  std::ofstream(dir + "/valgrind-11.log") << "";
  std::ofstream(dir + "/valgrind-12.log") << "==12== valgrind: m_mallocfree.c: out of memory\n";
  std::ofstream(dir + "/counts-0-10.txt") << "not a log\n";
  const auto lines = valgrind_last_lines(dir);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines.at(10), "rtrace-count: cannot write x: lost");

  RawProcess bad = process(10, 0, 1);
  bad.exit_code = 1;
  auto ranks = build_rank_counts({bad}, 2, exited(1), namer);
  fold_valgrind_logs(ranks, lines);
  EXPECT_NE(get_str(ranks.at(0).info.note).find("valgrind: rtrace-count: cannot write x"), std::string::npos)
      << get_str(ranks.at(0).info.note);
  EXPECT_NE(get_str(ranks.at(1).info.note).find("valgrind: valgrind: m_mallocfree.c: out of memory"), std::string::npos)
      << get_str(ranks.at(1).info.note);
}

// Several processes without a rank variable that are not each other's
// children: a launcher whose rank variable rtrace does not read. They are
// summed as rank 0, with a warning; a parent and its exec'd child are not.
TEST(CountsRankCounts, SeveralRanklessRootProcessesAreWarnedAbout) {
  auto warned = [](const CountedRank& cr) {
    for (const auto& l : cr.log)
      if (l.find("separate processes had no rank variable") != std::string::npos) return true;
    return false;
  };
  RawProcess a = process(10, -1, 1), b = process(20, -1, 1);
  a.ppid = 1;
  b.ppid = 2;
  auto separate = build_rank_counts({a, b}, 1, exited(0), namer);
  ASSERT_EQ(separate.size(), 1u);
  EXPECT_TRUE(warned(separate.at(0)));
  b.ppid = 10;  // a's child (a wrapper that started the app)
  auto family = build_rank_counts({a, b}, 1, exited(0), namer);
  EXPECT_FALSE(warned(family.at(0)));
}

// The variables the counting run sets for the app go into the `env` in front
// of valgrind, after mpirun: ranks on other nodes get them too (mpirun passes
// no environment there).
TEST(CountsCountingRun, AppVariablesRideInFrontOfValgrindAfterTheLauncher) {
  CountingSpec spec;
  spec.command = {"mpirun", "-n", "2", "/abs/app", "x"};
  spec.app_index = 3;
  spec.raw_dir = "/shared/raw";
  spec.app_env = {"OMP_WAIT_POLICY=passive", "GOMP_SPINCOUNT=0"};
  ToolPaths tool{"/usr/bin/valgrind", "/opt/vg", "/usr/bin/env"};
  const auto argv = instrumented_command(spec, tool);
  const std::vector<std::string> head = {"mpirun", "-n", "2", "/usr/bin/env", "VALGRIND_LIB=/opt/vg",
                                         "OMP_WAIT_POLICY=passive", "GOMP_SPINCOUNT=0", "/usr/bin/valgrind"};
  ASSERT_GE(argv.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + static_cast<std::ptrdiff_t>(head.size())), head);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--out-dir=/shared/raw"), argv.end());
  EXPECT_EQ(argv.back(), "x");
}

// The counted window (format 2): rows say where they lie; a part counted
// without the cache simulation has no bytes; an MPI window that never opened
// is the whole run.
namespace {
RawProcess windowed(const std::string& kind, const std::string& mpi, std::int64_t open_ms) {
  RawProcess p = process(10, 0, 1);
  p.window.kind = kind;
  p.window.mpi = mpi;
  p.window.function = kind == "user" ? "timestep" : "";
  p.window.first_call = 3;
  p.window.last_call = 5;
  p.window.open_ms = open_ms;
  p.window.close_ms = open_ms >= 0 ? open_ms + 10 : -1;
  p.window.calls = 10;
  if (kind == "user") p.window.phase_full = {false, true, false};
  p.functions = {{0, 0x1000, "kernel", WindowPhase::Before}, {0, 0x1000, "kernel", WindowPhase::Inside},
                 {0, 0x1000, "kernel", WindowPhase::After}};
  p.rows.clear();
  for (int f = 0; f < 3; ++f) {
    RawRow r;
    r.function = f;
    r.values[kInstructions] = 100 * (f + 1);
    r.values[kFlopsFirst] = 10 * (f + 1);
    r.values[kL1Read] = 800;
    r.values[kMemRead] = 64;
    p.rows.push_back(r);
  }
  return p;
}
std::map<std::string, rtrace::store::CountRow> by_window(const CountedRank& r) {
  std::map<std::string, rtrace::store::CountRow> out;
  for (const auto& c : r.counts) out[get_str(c.window)] = c;
  return out;
}
}  // namespace

TEST(CountsRankCounts, UserWindowRowsSayWhereAndCheapPartsHaveNoBytes) {
  const auto ranks = build_rank_counts({windowed("user", "", 1000)}, 1, exited(), namer);
  const CountedRank& r = ranks.at(0);
  EXPECT_EQ(get_str(r.info.status), "ok");
  EXPECT_EQ(get_str(r.info.window), "calls 3-5 of timestep");
  const auto rows = by_window(r);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows.at("before").flops_fp64_scalar, 10);
  EXPECT_TRUE(std::isnan(rows.at("before").bytes_l1_read));
  EXPECT_TRUE(std::isnan(rows.at("after").bytes_dram_read));
  EXPECT_DOUBLE_EQ(rows.at("inside").flops_fp64_scalar, 20);
  EXPECT_DOUBLE_EQ(rows.at("inside").bytes_l1_read, 800);
}

TEST(CountsRankCounts, UserWindowThatNeverOpenedFails) {
  const auto ranks = build_rank_counts({windowed("user", "", -1)}, 1, exited(), namer);
  EXPECT_EQ(get_str(ranks.at(0).info.status), "failed");
  EXPECT_NE(get_str(ranks.at(0).info.note).find("never opened: timestep was called 10 time(s)"), std::string::npos)
      << get_str(ranks.at(0).info.note);
}

TEST(CountsRankCounts, MpiWindowSplitsTheRunAndNoMpiInitIsTheWholeRun) {
  auto ranks = build_rank_counts({windowed("mpi", "seen", 500)}, 1, exited(), namer);
  EXPECT_EQ(get_str(ranks.at(0).info.window), "MPI_Init..MPI_Finalize");
  EXPECT_EQ(by_window(ranks.at(0)).size(), 3u);
  EXPECT_DOUBLE_EQ(by_window(ranks.at(0)).at("after").bytes_l1_read, 800);  // counted fully
  ranks = build_rank_counts({windowed("mpi", "none", -1)}, 1, exited(), namer);
  EXPECT_EQ(get_str(ranks.at(0).info.window), "the whole run (no MPI_Init)");
  const auto rows = by_window(ranks.at(0));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows.at("inside").instructions, 600);
}

// A rank started without mpirun (a 1-rank point) starts Open MPI's runtime
// daemon in MPI_Init: it runs natively, not under the tool (it is not the app,
// and under Valgrind its start-up delayed the app's MPI_Init).
TEST(CountsCountingRun, OpenMpisRuntimeDaemonIsNotUnderTheTool) {
  CountingSpec spec;
  spec.command = {"/abs/app"};
  spec.raw_dir = "/shared/raw";
  ToolPaths tool{"/usr/bin/valgrind", "/opt/vg", "/usr/bin/env"};
  const auto argv = instrumented_command(spec, tool);
  const auto skip = std::find_if(argv.begin(), argv.end(),
                                 [](const std::string& a) { return a.rfind("--trace-children-skip=", 0) == 0; });
  ASSERT_NE(skip, argv.end());
  EXPECT_NE(skip->find("*/orted"), std::string::npos) << *skip;
  EXPECT_NE(skip->find("*/prted"), std::string::npos) << *skip;  // Open MPI 5
  EXPECT_LT(skip - argv.begin(), std::find(argv.begin(), argv.end(), "/abs/app") - argv.begin());
}
