// Known answers of the counting pass, end to end: `rtrace counts` runs small
// apps under the Valgrind tool on a shrunken cache hierarchy, and the counts
// it wrote are read back through the store (docs/counts.md).
#include "counts_test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace counts_test;
using rtrace::store::CountRow;
using rtrace::store::get_str;

namespace {

const std::string kRtrace = RTRACE_BIN;
// Small enough to keep every run at a few seconds, with the L3 far below the data.
const std::string kGeometry = "L1=4K,4,64;L2=32K,8,64;L3=256K,8,64";

double l1(const CountRow& r) { return r.bytes_l1_read + r.bytes_l1_write; }
double dram(const CountRow& r) { return r.bytes_dram_read + r.bytes_dram_write; }
double dram_read(const CountRow& r) { return r.bytes_dram_read; }

Ran counts(const std::string& out, const std::vector<std::string>& options, const std::vector<std::string>& command,
           const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {kRtrace, "counts", "-o", out, "--quiet"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return run(argv, env);
}

}  // namespace

TEST(CountsKnownAnswers, TriadFlopsL1AndDram) {
  TempDir d;
  const long n = 200000;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry}, {TRIAD_APP, std::to_string(n), "1", "4194304"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ranks = read_counts(d.file("c.h5"));
  ASSERT_EQ(ranks.size(), 1u);
  const RankTotals& t = ranks.at(0);
  EXPECT_EQ(get_str(t.info.status), "ok");
  EXPECT_EQ(t.info.serialised, 1);
  EXPECT_EQ(get_str(t.info.source).rfind("sim:rtrace-count ", 0), 0u) << get_str(t.info.source);
  EXPECT_DOUBLE_EQ(t.fn_flops("triad"), 2.0 * n);  // exact
  EXPECT_NEAR(t.sum("triad", l1), 24.0 * n, 0.01 * 24.0 * n);
  // DRAM: b and c read and a write-allocated (24n); a written back, all but
  // what the L3 (256 KiB) still holds at the end.
  EXPECT_NEAR(t.sum("triad", dram_read), 24.0 * n, 0.01 * 24.0 * n);
  const double written = t.sum("triad", [](const CountRow& r) { return r.bytes_dram_write; });
  EXPECT_GE(written, 8.0 * n - 256 * 1024);
  EXPECT_LE(written, 8.0 * n);
  ASSERT_EQ(t.levels.size(), 3u);
  EXPECT_EQ(get_str(t.levels[2].name), "L3");
  // One rank: the whole L3, shared by its threads (however many were assumed).
  EXPECT_EQ(t.levels[2].size_bytes, 256 * 1024);
  EXPECT_EQ(t.levels[2].threads_sharing, t.levels[2].sharers);
}

TEST(CountsKnownAnswers, SharedL3HoldsTheRanksPartForItsThreads) {
  TempDir d;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry, "--threads", "2", "--ranks-per-node", "2"},
                 {TRIAD_APP, "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  ASSERT_EQ(t.levels.size(), 3u);
  EXPECT_EQ(t.levels[0].sharers, 1);  // private L1, L2: a cache per thread
  EXPECT_EQ(t.levels[0].threads_sharing, 0);
  EXPECT_EQ(t.levels[1].sharers, 1);
  EXPECT_EQ(t.levels[1].threads_sharing, 0);
  EXPECT_EQ(t.levels[2].sharers, 4);  // 2 threads x 2 ranks on the node
  EXPECT_EQ(t.levels[2].threads_sharing, 2);  // one cache for the rank's 2 threads: 2/4 of the L3
  EXPECT_EQ(t.levels[2].copies, 1);
  EXPECT_EQ(t.levels[2].size_bytes, 128 * 1024);
  EXPECT_EQ(t.levels[2].full_size_bytes, 256 * 1024);
  EXPECT_EQ(t.info.cache_threads, 2);
  EXPECT_EQ(t.info.cache_threads_assumed, 0);
  EXPECT_EQ(get_str(t.info.cache_geometry), "given");
}

TEST(CountsKnownAnswers, TwoLevelsLeaveTheL3Unavailable) {
  TempDir d;
  Ran r = counts(d.file("c.h5"), {"--geometry", "L1=4K,4,64;L2=32K,8,64;L3=none"}, {TRIAD_APP, "100000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(t.levels.size(), 2u);
  for (const auto& row : t.rows) {
    EXPECT_TRUE(std::isnan(row.bytes_l3_read));
    EXPECT_TRUE(std::isnan(row.bytes_l3_write));
    EXPECT_FALSE(std::isnan(row.bytes_dram_read));
  }
  EXPECT_GE(t.sum("triad", dram), 24.0 * 100000);
}

#ifdef TRIAD_FORTRAN_APP
TEST(CountsKnownAnswers, FortranTriadIsNamedAsTheSamplerNamesIt) {
  TempDir d;
  const long n = 100000;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry}, {TRIAD_FORTRAN_APP, std::to_string(n)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  EXPECT_DOUBLE_EQ(t.fn_flops("kernels::triad"), 2.0 * n);
  EXPECT_NEAR(t.sum("kernels::triad", l1), 24.0 * n, 0.01 * 24.0 * n);
}
#endif

TEST(CountsKnownAnswers, OpenBlasDgemmIsTwoNCubed) {
  TempDir d;
  const double n = 160;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry}, {DGEMM_APP, "160"}, {"OPENBLAS_NUM_THREADS=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  // Every FLOP of OpenBLAS's module (the kernels it picked at run time).
  const double blas = t.sum("libopenblas", [&](const CountRow& row) { return t.flops(row); }, /*module=*/true);
  EXPECT_NEAR(blas, 2 * n * n * n, 0.01 * 2 * n * n * n);
  // Vectorised: most of it in 256-bit FP64 FMAs (Valgrind hides AVX-512, so the Haswell kernel).
  const double v256 = t.sum("libopenblas", [](const CountRow& row) { return row.flops_fp64_v256; }, true);
  EXPECT_GT(v256, 0.9 * blas);
}

TEST(CountsKnownAnswers, OpenMpTableStopsFittingTheL3ShareAtTwoThreads) {
  // 96 KiB per thread: inside a 128 KiB L3 at 1 thread; at 2, the two tables
  // (192 KiB) compete for the one L3 the threads share.
  const std::string geometry = "L1=4K,4,64;L2=16K,4,64;L3=128K,8,64";
  std::map<int, RankTotals> at;
  for (int threads : {1, 2}) {
    TempDir d;
    Ran r = counts(d.file("c.h5"), {"--geometry", geometry, "--threads", std::to_string(threads)},
                   {OMP_TABLE_APP, "98304", "20"}, {"OMP_NUM_THREADS=" + std::to_string(threads)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    at[threads] = read_counts(d.file("c.h5")).at(0);
  }
  const RankTotals& one = at[1];
  const RankTotals& two = at[2];
  EXPECT_EQ(one.info.threads, 1);
  EXPECT_GE(two.info.threads, 2);
  EXPECT_EQ(two.levels[2].sharers, 2);
  EXPECT_EQ(two.levels[2].threads_sharing, 2);    // one L3 for both threads, whole
  EXPECT_EQ(two.levels[2].size_bytes, 128 * 1024);
  // Same work: 20 sweeps x 12288 elements x 2 FLOPs, split or not.
  // C++: the demangled name carries the parameters.
  const std::string fn = "sweep_table(std::vector<double, std::allocator<double> > const&, int)";
  EXPECT_DOUBLE_EQ(one.fn_flops(fn), 20.0 * 12288 * 2);
  EXPECT_DOUBLE_EQ(two.fn_flops(fn), 20.0 * 12288 * 2);
  const double d1 = one.sum(fn, dram_read), d2 = two.sum(fn, dram_read);
  // 1 thread: the table is read from DRAM once (cold), then from the L3.
  EXPECT_LT(d1, 2.0 * 98304);
  // 2 threads: every sweep of each thread's table misses the L3 (LRU under
  // the two tables' interleaved streams).
  EXPECT_GT(d2, 5.0 * d1);
  EXPECT_GT(d2, 0.8 * 20 * 98304);
}

// OpenMP workers would spin at barriers under Valgrind (one thread at a
// time) and their spinning would be counted: the counting run makes them
// sleep, unless the user chose otherwise.
TEST(CountsKnownAnswers, OpenMpWorkersWaitPassivelyUnlessTheUserSaysOtherwise) {
  TempDir d;
  const std::string env_file = d.file("env.txt");
  Ran r = counts(d.file("c.h5"), {}, {"/bin/sh", "-c", "env > " + env_file}, {"KMP_BLOCKTIME=200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(env_file);
  std::map<std::string, std::string> env;
  for (std::string line; std::getline(in, line);)
    if (line.find('=') != std::string::npos) env[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
  EXPECT_EQ(env["OMP_WAIT_POLICY"], "passive");
  EXPECT_EQ(env["GOMP_SPINCOUNT"], "0");
  EXPECT_EQ(env["KMP_BLOCKTIME"], "200");  // the user's
}

// Open MPI ranks waiting for another would poll its progress engine for as
// long as the other computes, all of it counted: the counting run makes them
// yield, unless the user chose otherwise.
TEST(CountsKnownAnswers, MpiRanksYieldWhileWaitingUnlessTheUserSaysOtherwise) {
  for (const std::string user : {"", "0"}) {
    TempDir d;
    const std::string env_file = d.file("env.txt");
    std::vector<std::string> env;
    if (!user.empty()) env.push_back("OMPI_MCA_mpi_yield_when_idle=" + user);
    Ran r = counts(d.file("c.h5"), {}, {"/bin/sh", "-c", "env > " + env_file}, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(env_file);
    std::string yield;
    for (std::string line; std::getline(in, line);)
      if (line.rfind("OMPI_MCA_mpi_yield_when_idle=", 0) == 0) yield = line.substr(line.find('=') + 1);
    EXPECT_EQ(yield, user.empty() ? "1" : user);
  }
}

TEST(CountsKnownAnswers, ForkedAndExecdChildrenCountAsTheirRank) {
  TempDir d;
  const long n = 50000;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry}, {FORKER_APP, TRIAD_APP, std::to_string(n)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ranks = read_counts(d.file("c.h5"));
  ASSERT_EQ(ranks.size(), 1u);
  const RankTotals& t = ranks.at(0);
  EXPECT_EQ(get_str(t.info.status), "ok") << get_str(t.info.note);
  EXPECT_EQ(t.info.threads, 3);  // the parent, its forked child, the exec'd one
  // Both children ran a triad of n doubles: one in forker's own `triad`, one in the exec'd app's.
  EXPECT_DOUBLE_EQ(t.fn_flops("triad"), 4.0 * n);
  EXPECT_DOUBLE_EQ(t.sum("counts_triad", [&](const CountRow& row) { return t.flops(row); }, true), 2.0 * n);
}

TEST(CountsKnownAnswers, StaticBinaryIsCounted) {
  TempDir d;
  const long n = 100000;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry}, {TRIAD_STATIC_APP, std::to_string(n)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(get_str(t.info.status), "ok");
  EXPECT_DOUBLE_EQ(t.fn_flops("triad"), 2.0 * n);
}

TEST(CountsFailures, Avx512BinaryGetsOneLineAndAFailedStatus) {
  TempDir d;
  Ran r = counts(d.file("c.h5"), {}, {AVX512_APP});
  EXPECT_EQ(r.exit_code, 1);
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("AVX-512"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("x86-64-v3"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("--counts pmu"), std::string::npos) << lines[0];
  auto t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(get_str(t.info.status), "failed");
  EXPECT_NE(get_str(t.info.note).find("AVX-512"), std::string::npos);
}

// Valgrind 3.19 hands the tool's fini exit code 0 whatever the app exited
// with: the tool takes the status from the exit syscall itself.
TEST(CountsFailures, AppExitingNonZeroIsNotOk) {
  TempDir d;
  Ran r = counts(d.file("c.h5"), {}, {TRIAD_APP});  // no arguments: usage, exit 2
  EXPECT_NE(r.exit_code, 0) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(t.info.exit_code, 2);
  EXPECT_NE(get_str(t.info.status), "ok");
  EXPECT_NE(get_str(t.info.note).find("exited with code 2"), std::string::npos) << get_str(t.info.note);
}

// The raw files go next to the output (the filesystem every node of an MPI
// run reaches), not into this machine's temporary directory.
TEST(CountsKnownAnswers, RawFilesGoNextToTheOutputNotIntoTmp) {
  TempDir d;
  // The app lists the output's directory while the tool runs it.
  Ran r = counts(d.file("c.h5"), {}, {"/bin/sh", "-c", "ls -a " + d.path() + " > " + d.file("listing.txt")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(get_str(read_counts(d.file("c.h5")).at(0).info.status), "ok");
  std::ifstream in(d.file("listing.txt"));
  bool raw_dir_seen = false;
  for (std::string line; std::getline(in, line);) raw_dir_seen = raw_dir_seen || line.rfind(".c.h5.raw-", 0) == 0;
  EXPECT_TRUE(raw_dir_seen);
  for (const auto& e : std::filesystem::directory_iterator(d.path()))  // removed after
    EXPECT_EQ(e.path().filename().string().rfind(".c.h5.raw-", 0), std::string::npos) << e.path();
}

TEST(CountsFailures, TimeoutStopsTheRunAndSaysSo) {
  TempDir d;
  Ran r = counts(d.file("c.h5"), {"--timeout", "1"}, {TRIAD_APP, "4000000", "200"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(get_str(t.info.status), "failed");
  EXPECT_NE(get_str(t.info.note).find("timed out"), std::string::npos) << get_str(t.info.note);
}

TEST(CountsFailures, MissingRanksAreRecordedAsFailed) {
  TempDir d;
  // A plain app started as if it were 2 ranks: rank 1 never reports.
  Ran r = counts(d.file("c.h5"), {"--ranks", "2"}, {TRIAD_APP, "1000"});
  EXPECT_EQ(r.exit_code, 1);
  auto ranks = read_counts(d.file("c.h5"));
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(get_str(ranks.at(0).info.status), "ok");
  EXPECT_EQ(get_str(ranks.at(1).info.status), "failed");
  EXPECT_TRUE(ranks.at(1).rows.empty());
}

// --threads and --ranks-per-node are each at most 2^20; their product
// overflowed an int (to 0 here: an L3 of one worker instead of the cap).
TEST(CountsKnownAnswers, HugeWorkerCountsDoNotOverflow) {
  TempDir d;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry, "--threads", "1048576", "--ranks-per-node", "1048576"},
                 {TRIAD_APP, "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = read_counts(d.file("c.h5")).at(0);
  ASSERT_EQ(t.levels.size(), 3u);
  EXPECT_EQ(t.levels[2].sharers, 4096);  // the most the tool divides a cache by
}

TEST(CountsFailures, BadUsageIsOneLineAndNoFile) {
  TempDir d;
  const std::string out = d.file("c.h5");
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{kRtrace, "counts", "--", TRIAD_APP}, {}, "-o FILE is required"},
      {{kRtrace, "counts", "-o", out}, {}, "no command"},
      {{kRtrace, "counts", "-o", out, "--bogus", "--", TRIAD_APP}, {}, "unknown option `--bogus`"},
      {{kRtrace, "counts", "-o", out, "--geometry", "L1=4K,4", "--", TRIAD_APP}, {}, "SIZE,ASSOC,LINE"},
      {{kRtrace, "counts", "-o", out, "--geometry", "L1=4K,4,48", "--", TRIAD_APP}, {}, "power of two"},
      {{kRtrace, "counts", "-o", out, "--geometry", "L2=1M,8,64", "--", TRIAD_APP}, {}, "no L1"},
      {{kRtrace, "counts", "-o", out, "--threads", "0", "--", TRIAD_APP}, {}, "positive integer"},
      {{kRtrace, "counts", "-o", out, "--app-index", "3", "--", TRIAD_APP}, {}, "past the end"},
      {{kRtrace, "counts", "-o", out, "--timeout", "-1", "--", TRIAD_APP}, {}, "seconds"},
      {{kRtrace, "counts", "-o", out, "--", TRIAD_APP}, {"RTRACE_VALGRIND_LIB=/nonexistent"}, "counting tool is not installed"},
      {{kRtrace, "counts", "-o", out, "--", TRIAD_APP}, {"RTRACE_VALGRIND=/nonexistent/valgrind"}, "not found"},
      {{kRtrace, "counts", "-o", out, "--", "/nonexistent/app"}, {}, "/nonexistent/app"},
  };
  for (const auto& c : cases) {
    Ran r = run(c.args, c.env);
    const auto lines = lines_of(r.err);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    ASSERT_EQ(lines.size(), 1u) << c.says << ": " << r.err;
    EXPECT_EQ(lines[0].rfind("rtrace counts: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(c.says), std::string::npos) << lines[0];
    EXPECT_FALSE(std::filesystem::exists(out)) << c.says;
  }
}

#ifdef MPI_SLICES_APP
TEST(CountsKnownAnswers, MpiRanksAddUpToTheOneRankCounts) {
  const long n = 200000;
  std::map<int, std::map<std::int64_t, RankTotals>> at;
  for (int ranks : {1, 2}) {
    TempDir d;
    const std::vector<std::string> command = {MPIEXEC, "-np", std::to_string(ranks), "--oversubscribe", "--bind-to",
                                              "none", MPI_SLICES_APP, std::to_string(n), "2"};
    Ran r = counts(d.file("c.h5"),
                   {"--geometry", kGeometry, "--ranks", std::to_string(ranks), "--app-index", "6"}, command,
                   {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    at[ranks] = read_counts(d.file("c.h5"));
    ASSERT_EQ(at[ranks].size(), static_cast<std::size_t>(ranks));
  }
  const double one = at[1].at(0).fn_flops("triad_slice");
  EXPECT_DOUBLE_EQ(one, 2.0 * 2 * n);
  const double two = at[2].at(0).fn_flops("triad_slice") + at[2].at(1).fn_flops("triad_slice");
  EXPECT_DOUBLE_EQ(two, one);
  EXPECT_DOUBLE_EQ(at[2].at(0).fn_flops("triad_slice"), at[2].at(1).fn_flops("triad_slice"));
  const double l1_one = at[1].at(0).sum("triad_slice", l1);
  const double l1_two = at[2].at(0).sum("triad_slice", l1) + at[2].at(1).sum("triad_slice", l1);
  EXPECT_NEAR(l1_two, l1_one, 0.01 * l1_one);
  for (const auto& [rank, t] : at[2]) EXPECT_EQ(get_str(t.info.status), "ok") << rank << get_str(t.info.note);
}
#endif

// ---------------------------------------------------------------- shared caches
// A level that cores share is one simulated cache for a process's threads,
// fed their streams in concurrent order (docs/counts.md, "The cache
// simulation"). The L3 here (1 MiB) is far below the host's: the answers do
// not depend on the machine.
namespace {

const std::string kSharedGeometry = "L1=4K,4,64;L2=32K,8,64;L3=1M,8,64";

RankTotals shared_data(const TempDir& d, const std::string& mode, long bytes, int reps, int threads) {
  const std::string out = d.file(mode + "-" + std::to_string(threads) + ".h5");
  Ran r = counts(out, {"--geometry", kSharedGeometry, "--threads", std::to_string(threads)},
                 {SHARED_DATA_APP, mode, std::to_string(bytes), std::to_string(reps)},
                 {"OMP_NUM_THREADS=" + std::to_string(threads)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return read_counts(out).at(0);
}

}  // namespace

// One array (8 MiB, eight times the L3) read whole by every thread: at 2
// threads the L3 holds one copy for both, so DRAM reads stay those of 1
// thread (they were 2x with an L3 slice per thread: each thread fetched it all).
TEST(CountsSharedCaches, OneArrayReadByAllOfTwoThreadsIsReadFromDramOnce) {
  TempDir d;
  const long bytes = 8 << 20;
  const RankTotals one = shared_data(d, "read", bytes, 2, 1);
  const RankTotals two = shared_data(d, "read", bytes, 2, 2);
  EXPECT_DOUBLE_EQ(two.fn_flops("read_all"), 2 * one.fn_flops("read_all"));  // each thread reads all of it
  const double d1 = one.sum("read_all", dram_read), d2 = two.sum("read_all", dram_read);
  EXPECT_NEAR(d1, 2.0 * bytes, 0.02 * bytes);   // 2 passes, none fits
  EXPECT_NEAR(d2, d1, 0.1 * d1);
  // Both threads' L2s missed it all: the L3 served the second reader.
  EXPECT_NEAR(two.sum("read_all", [](const CountRow& r) { return r.bytes_l3_read; }), 2 * d1, 0.02 * d1);
  ASSERT_EQ(two.levels.size(), 3u);
  EXPECT_EQ(two.levels[2].size_bytes, 1 << 20);
  EXPECT_EQ(two.levels[2].threads_sharing, 2);
  EXPECT_NE(get_str(two.info.note).find("interleaved"), std::string::npos) << get_str(two.info.note);
}

// Serial initialisation, then `omp for` over data that fits the L3 (600 KiB
// of 1 MiB): every thread's part is already in the L3 the threads share, so
// the parallel sweeps read nothing from DRAM (a thread's own L3 slice was
// cold: it re-read its part).
TEST(CountsSharedCaches, SerialInitialisationThenOmpForReadsNoDram) {
  TempDir d;
  const long bytes = 600 * 1024;
  const RankTotals two = shared_data(d, "for", bytes, 4, 2);
  EXPECT_DOUBLE_EQ(two.fn_flops("sweep_for"), 2.0 * 4 * bytes / 8);
  EXPECT_NEAR(two.sum("init_array", dram_read), bytes, 0.01 * bytes);
  EXPECT_LT(two.sum("sweep_for", dram_read), 0.01 * bytes);
  // The sweeps did miss the private L1/L2: the L3 served them.
  EXPECT_GT(two.sum("sweep_for", [](const CountRow& r) { return r.bytes_l3_read; }), 3.0 * bytes);
}

// A new pthread per phase, one after the other, each summing the array
// (600 KiB): the L3 holds it across the threads.
TEST(CountsSharedCaches, ANewThreadPerPhaseFindsTheDataInTheL3) {
  TempDir d;
  const long bytes = 600 * 1024;
  const RankTotals t = shared_data(d, "phases", bytes, 4, 1);
  EXPECT_EQ(t.info.threads, 5);
  EXPECT_DOUBLE_EQ(t.fn_flops("phase_sum"), 2.0 * 4 * bytes / 8);
  EXPECT_LT(t.sum("phase_sum", dram_read), 0.01 * bytes);
}

// Without --threads or OMP_NUM_THREADS the threads per rank are assumed
// (the node's cores / its ranks): said on stderr and recorded.
TEST(CountsSharedCaches, AssumedThreadsAreSaidAndRecorded) {
  TempDir d;
  std::vector<std::string> argv = {kRtrace, "counts", "-o", d.file("c.h5"), "--geometry", kSharedGeometry, "--",
                                   TRIAD_APP, "1000"};
  Ran r = run(argv, {"OMP_NUM_THREADS="});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("threads per rank not given (--threads N, OMP_NUM_THREADS): planned for"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the caches do not depend on it here"), std::string::npos) << r.err;  // 1 rank: whole L3
  const RankTotals t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(t.info.cache_threads_assumed, 1);
  EXPECT_GE(t.info.cache_threads, 1);
  EXPECT_EQ(t.levels.at(2).size_bytes, 1 << 20);
  // Given: not assumed.
  Ran given = run({kRtrace, "counts", "-o", d.file("g.h5"), "--geometry", kSharedGeometry, "--threads", "1", "--",
                   TRIAD_APP, "1000"});
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_EQ(given.err.find("not given"), std::string::npos) << given.err;
  EXPECT_EQ(read_counts(d.file("g.h5")).at(0).info.cache_threads_assumed, 0);
}

// On a virtual machine (the hypervisor flag) the host's topology may show
// the host's L3: rtrace counts says so and how to give the real caches.
TEST(CountsSharedCaches, OnAVirtualMachineItSaysTheL3MayBeTheHosts) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool vm = false;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      vm = (line + " ").find(" hypervisor ") != std::string::npos;
      break;
    }
  TempDir d;
  Ran r = run({kRtrace, "counts", "-o", d.file("c.h5"), "--geometry", "auto", "--threads", "1", "--", TRIAD_APP,
               "1000"},
              {"RTRACE_COUNTS_GEOMETRY="});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RankTotals t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(get_str(t.info.cache_geometry), vm ? "hwloc-vm" : "hwloc");
  EXPECT_EQ(r.err.find("this is a virtual machine") != std::string::npos, vm) << r.err;
  EXPECT_EQ(get_str(t.info.note).find("may be the host's") != std::string::npos, vm) << get_str(t.info.note);
  if (vm) {
    EXPECT_NE(r.err.find("--geometry \"L1="), std::string::npos) << r.err;
  }
}

// ---------------------------------------------------------------- the counted window (issue 29)

namespace {
// FLOPs of `fn`'s rows in one part of the counted window.
double flops_in(const RankTotals& t, const std::string& fn, const std::string& window) {
  return t.sum(fn, [&](const CountRow& r) { return get_str(r.window) == window ? t.flops(r) : 0.0; });
}
double l1_in(const RankTotals& t, const std::string& fn, const std::string& window) {
  return t.sum(fn, [&](const CountRow& r) { return get_str(r.window) == window ? l1(r) : 0.0; });
}
}  // namespace

TEST(CountsKnownAnswers, UserWindowByCallsCountsExactlyTheCallsInIt) {
  TempDir d;
  const long n = 20000;  // timestep: 2n FLOPs a call; setup and wrapup n each
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry, "--counts-window", "timestep:3-5"},
                 {STEPS_APP, std::to_string(n), "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RankTotals t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(get_str(t.info.status), "ok") << get_str(t.info.note);
  EXPECT_EQ(get_str(t.info.window), "calls 3-5 of timestep");
  // Calls 3, 4 and 5 exactly: entry of call 3 to the return of call 5.
  EXPECT_DOUBLE_EQ(flops_in(t, "timestep", "inside"), 3 * 2.0 * n);
  EXPECT_DOUBLE_EQ(flops_in(t, "timestep", "before"), 2 * 2.0 * n);
  EXPECT_DOUBLE_EQ(flops_in(t, "timestep", "after"), 5 * 2.0 * n);
  EXPECT_DOUBLE_EQ(flops_in(t, "setup", "inside") + flops_in(t, "wrapup", "inside"), 0);
  EXPECT_DOUBLE_EQ(flops_in(t, "wrapup", "after"), 1.0 * n);
  // Inside: the caches were simulated (24 bytes an element a call); outside:
  // instructions and FLOPs only.
  EXPECT_NEAR(l1_in(t, "timestep", "inside"), 3 * 24.0 * n, 0.01 * 3 * 24.0 * n);
  for (const auto& row : t.rows) {
    if (get_str(row.window) != "inside") {
      EXPECT_TRUE(std::isnan(row.bytes_l1_read)) << get_str(row.window);
    }
  }
}

TEST(CountsKnownAnswers, UserWindowThatNeverOpensFailsAndBadSpecsAreOneLine) {
  TempDir d;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry, "--counts-window", "timestep:30-40"},
                 {STEPS_APP, "1000", "10"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const RankTotals t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(get_str(t.info.status), "failed");
  EXPECT_NE(get_str(t.info.note).find("never opened: timestep was called 10 time(s)"), std::string::npos)
      << get_str(t.info.note);
  r = counts(d.file("bad.h5"), {"--counts-window", "timestep:5-3"}, {STEPS_APP});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "rtrace counts: --counts-window `timestep:5-3`: the last call (3) is before the first (5)\n");
}

TEST(CountsKnownAnswers, AnAppWithoutMpiHasTheWholeRunAsItsWindow) {
  TempDir d;
  const long n = 5000;
  Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry}, {STEPS_APP, std::to_string(n), "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RankTotals t = read_counts(d.file("c.h5")).at(0);
  EXPECT_EQ(get_str(t.info.window), "the whole run (no MPI_Init)");
  for (const auto& row : t.rows) EXPECT_EQ(get_str(row.window), "inside");
  EXPECT_DOUBLE_EQ(flops_in(t, "timestep", "inside"), 4 * 2.0 * n);
}

#ifdef DGEMM_APP
// Issue 29: OpenBLAS picks its kernels from CPUID, and Valgrind shows the app
// another CPU. The timed run's core (here forced, as a machine with another
// CPU would pick it natively) is observed by the tracer and the counting run
// is steered to it: the counted kernels are the timed ones.
TEST(CountsKnownAnswers, CountedOpenBlasKernelsAreTheTimedRunsCore) {
  TempDir d;
  Ran timed = run({kRtrace, "run", "--sweep", "threads=1", "--ert", "none", "--counts", "none", "--quiet", "-o",
                   d.file("timed.h5"), "--", DGEMM_APP, "120"},
                  {"OPENBLAS_CORETYPE=Prescott", "OPENBLAS_NUM_THREADS=1"});
  ASSERT_EQ(timed.exit_code, 0) << timed.err;
  // The counting run's own environment has no OPENBLAS_CORETYPE (this
  // machine's may): under Valgrind, OpenBLAS would pick its Haswell kernels.
  auto counted = [&](const std::string& out, const std::vector<std::string>& options) {
    std::vector<std::string> argv = {"/usr/bin/env", "-u", "OPENBLAS_CORETYPE", kRtrace, "counts", "-o", out,
                                     "--quiet", "--geometry", kGeometry};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--", DGEMM_APP, "120"});
    return run(argv, {"OPENBLAS_NUM_THREADS=1"});
  };
  Ran r = counted(d.file("steered.h5"), {"--dispatch-from", d.file("timed.h5")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RankTotals t = read_counts(d.file("steered.h5")).at(0);
  const double n = 120;
  EXPECT_NEAR(t.fn_flops("dgemm_kernel_PRESCOTT"), 2 * n * n * n, 0.02 * 2 * n * n * n);
  EXPECT_EQ(t.fn_flops("dgemm_kernel_HASWELL"), 0);
  EXPECT_EQ(get_str(t.info.steered).rfind("OpenBLAS core Prescott (OPENBLAS_CORETYPE=Prescott)", 0), 0u)
      << get_str(t.info.steered);
  EXPECT_EQ(get_str(t.info.not_steered).find("OpenBLAS"), std::string::npos) << get_str(t.info.not_steered);
  // Without the timed run's observation the tool's CPU decides, and that is said.
  r = counted(d.file("unsteered.h5"), {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RankTotals u = read_counts(d.file("unsteered.h5")).at(0);
  EXPECT_EQ(u.fn_flops("dgemm_kernel_PRESCOTT"), 0);
  EXPECT_GT(u.fn_flops("dgemm_kernel_HASWELL"), 0);
  EXPECT_NE(get_str(u.info.not_steered).find("counted HASWELL kernels; the timed run's core was not observed"),
            std::string::npos) << get_str(u.info.not_steered);
}
#endif

#ifdef MPI_WAITING_RANK_APP
namespace {
// Instructions of a rank in the MPI library and its components (Open MPI).
double mpi_library_instructions(const RankTotals& t) {
  const auto ins = [](const CountRow& r) { return r.instructions; };
  return t.sum("libmpi", ins, true) + t.sum("libopen-pal", ins, true) + t.sum("mca_", ins, true);
}
}  // namespace

// Rank 1 waits in MPI_Recv while rank 0 computes. By default the counting run
// lets it yield: its instructions in the MPI library are about its MPI_Init's
// and MPI_Finalize's, as rank 0's; told not to (the user's
// OMPI_MCA_mpi_yield_when_idle=0), it polls all the while (before the
// counting run set it: 32x rank 0's, 1.1e8 instructions). Rank 0's counts are
// the same either way.
TEST(CountsKnownAnswers, WaitingMpiRankYieldsInsteadOfPolling) {
  const long n = 200000;
  const int reps = 40;
  std::map<std::string, std::map<std::int64_t, RankTotals>> at;
  for (const std::string user : {"", "0"}) {
    TempDir d;
    std::vector<std::string> env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
    if (!user.empty()) env.push_back("OMPI_MCA_mpi_yield_when_idle=" + user);
    const std::vector<std::string> command = {MPIEXEC, "-np", "2", "--oversubscribe", "--bind-to", "none",
                                              MPI_WAITING_RANK_APP, std::to_string(n), std::to_string(reps)};
    Ran r = counts(d.file("c.h5"), {"--geometry", kGeometry, "--ranks", "2", "--app-index", "6"}, command, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    at[user] = read_counts(d.file("c.h5"));
    ASSERT_EQ(at[user].size(), 2u);
  }
  const auto& yielding = at[""];
  const auto& polling = at["0"];
  for (const auto* run : {&yielding, &polling}) {
    EXPECT_DOUBLE_EQ(run->at(0).fn_flops("triad"), 2.0 * n * reps);
    EXPECT_DOUBLE_EQ(run->at(1).fn_flops("triad"), 0.0);
  }
  const auto ins = [](const CountRow& r) { return r.instructions; };
  EXPECT_DOUBLE_EQ(yielding.at(0).sum("triad", ins), polling.at(0).sum("triad", ins));
  const double computing = mpi_library_instructions(yielding.at(0));
  const double waiting = mpi_library_instructions(yielding.at(1));
  const double waiting_polling = mpi_library_instructions(polling.at(1));
  ASSERT_GT(computing, 0);
  // How much less a yielding rank polls depends on the machine's load (a
  // yield on an idle core returns at once): at load 10 it polled 50-90x
  // less; at load 2 its library instructions were still 4x rank 0's.
  EXPECT_GT(waiting_polling, 3.0 * waiting)
      << "rank 1 polled as much yielding as not: " << waiting << " instructions in the MPI library yielding, "
      << waiting_polling << " polling (the user's OMPI_MCA_mpi_yield_when_idle=0), rank 0 " << computing;
}
#endif
