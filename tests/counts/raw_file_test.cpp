#include "rtrace/counts/raw_file.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace rtrace::counts;

namespace {

const char* const kGood =
    "rtrace-count-raw 1\n"
    "tool rtrace-count 0.1.0 valgrind-3.19.0\n"
    "pid 42\nppid 1\nforked 0\nrank 3\nexit_code 0\nwall_ms 1500\nthreads 2\n"
    "exe /path/with space/app\n"
    "level L1d 4096 4096 64 4 1\n"         // a tool of before the shared levels: no THREADS COPIES
    "level L2 32768 32768 64 8 1 0 0\n"
    "level L3 131072 262144 64 8 4 2 1\n"
    "module 0 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "module 1 /path/with space/app\n"
    "fn 0 1 0x1130 triad\n"
    "fn 1 0 0x9e960 -\n"
    "fn 2 -1 0x0 -\n"
    "c 0 0 1200005 400000 0 0 0 0 0 0 0 0 0 0 0 3200008 1600000 4800256 1598144 4800256 1587840 4800256 1497728\n"
    "c 1 1 10 0 0 0 0 0 0 0 0 0 0 0 0 8 0 64 0 64 0 64 0\n"
    "end\n";

RawProcess parse(const std::string& text) {
  std::istringstream in(text);
  return parse_raw(in, "counts-3-42.txt");
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const RawFormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CountsRawFile, ParsesEveryRecord) {
  const RawProcess p = parse(kGood);
  EXPECT_EQ(p.tool, "rtrace-count 0.1.0 valgrind-3.19.0");
  EXPECT_EQ(p.pid, 42);
  EXPECT_EQ(p.rank, 3);
  EXPECT_FALSE(p.forked);
  EXPECT_DOUBLE_EQ(p.wall_s, 1.5);
  EXPECT_EQ(p.threads, 2);
  EXPECT_EQ(p.exe, "/path/with space/app");
  ASSERT_EQ(p.levels.size(), 3u);
  EXPECT_EQ(p.levels[2].name, "L3");
  EXPECT_EQ(p.levels[2].size_bytes, 131072);
  EXPECT_EQ(p.levels[2].full_size_bytes, 262144);
  EXPECT_EQ(p.levels[2].sharers, 4);
  EXPECT_EQ(p.levels[2].threads_sharing, 2);   // one cache for 2 threads of the process
  EXPECT_EQ(p.levels[2].copies, 1);
  EXPECT_EQ(p.levels[1].threads_sharing, 0);   // private
  EXPECT_EQ(p.levels[0].threads_sharing, 0);
  EXPECT_EQ(p.levels[0].copies, 0);
  ASSERT_EQ(p.modules.size(), 2u);
  EXPECT_EQ(p.modules[1], "/path/with space/app");
  ASSERT_EQ(p.functions.size(), 3u);
  EXPECT_EQ(p.functions[0].symbol, "triad");
  EXPECT_EQ(p.functions[0].vaddr, 0x1130u);
  EXPECT_EQ(p.functions[1].symbol, "");
  EXPECT_EQ(p.functions[2].module, -1);
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_EQ(p.rows[0].values[kInstructions], 1200005);
  EXPECT_EQ(p.rows[0].values[kFlopsFirst], 400000);
  EXPECT_EQ(p.rows[0].values[kMemWrite], 1497728);
  EXPECT_EQ(p.rows[1].thread, 1);
  EXPECT_FALSE(p.nodecode.has_value());
}

TEST(CountsRawFile, NoRankVariableIsMinusOne) {
  EXPECT_EQ(parse(replace(kGood, "rank 3", "rank -1")).rank, -1);
  EXPECT_EQ(parse(replace(kGood, "rank 3", "rank x")).rank, -1);
}

TEST(CountsRawFile, NodecodeNamesTheInstruction) {
  const RawProcess p = parse(replace(kGood, "module 0", "nodecode 0x107a 62 f1 fd 48 | /tmp/avx512\nmodule 0"));
  ASSERT_TRUE(p.nodecode.has_value());
  EXPECT_EQ(p.nodecode->vaddr, 0x107au);
  EXPECT_TRUE(p.nodecode->avx512());
  EXPECT_EQ(p.nodecode->module, "/tmp/avx512");
  EXPECT_FALSE(parse(replace(kGood, "module 0", "nodecode 0x10 0f 0b | /tmp/x\nmodule 0")).nodecode->avx512());
}

TEST(CountsRawFile, EveryDeviationIsAnErrorWithItsLine) {
  struct Case {
    std::string text;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"", "empty file"},
      {"hello\n", ":1: not an rtrace-count raw file"},
      {replace(kGood, "rtrace-count-raw 1", "rtrace-count-raw 3"), "version `3` is not 1 or 2"},
      {replace(kGood, "end\n", ""), "truncated (no `end` line)"},
      {std::string(kGood) + "c 0 0 1\n", "data after the `end` line"},
      {replace(kGood, "pid 42", "pid forty"), ":3: `forty` is not an integer"},
      {replace(kGood, "c 1 1 10 0", "c 1 1 10"), "`c` row has 21 counts"},
      {replace(kGood, "c 1 1 10", "c 1 7 10"), "names function 7"},
      {replace(kGood, "c 1 1 10", "c 5 1 10"), "thread 5 is not below"},
      {replace(kGood, "c 1 1 10", "c 1 1 -10"), "is not a count"},
      {replace(kGood, "fn 1 0", "fn 1 9"), "names module 9"},
      {replace(kGood, "fn 1 0", "fn 5 0"), "count up from 0"},
      {replace(kGood, "level L2 32768", "level L2 0"), "non-positive"},
      {replace(kGood, "64 8 4 2 1", "64 8 4 2 0"), "threads sharing 2 and copies 0 do not go together"},
      {replace(kGood, "threads 2", "threads 2\nbogus 1"), "unknown record `bogus`"},
  };
  for (const auto& c : cases) {
    const std::string err = error_of(c.text);
    EXPECT_NE(err.find(c.says), std::string::npos) << "want `" << c.says << "`, got `" << err << "`";
    if (!err.empty()) {
      EXPECT_EQ(err.rfind("counts-3-42.txt", 0), 0u) << err;
    }
  }
}

// Format 2: the counted window, each function's phase, light phases.
const char* const kWindowed =
    "rtrace-count-raw 2\n"
    "tool rtrace-count 0.1.0 valgrind-3.19.0\n"
    "pid 42\nppid 1\nforked 0\nrank 0\nexit_code 0\nwall_ms 1500\nthreads 1\nexe /app\n"
    "level L1d 4096 4096 64 4 1\n"
    "window user calls 3 5 timestep ms 1000 -1\n"
    "window_calls 10\nwindow_open_ms 1455\nwindow_close_ms 1457\nwindow_discards 3\n"
    "phase 0 before light\nphase 1 inside full\nphase 2 after light\n"
    "module 0 /app\n"
    "fn 0 0 0x1260 0 timestep\n"
    "fn 1 0 0x1260 1 timestep\n"
    "c 0 0 12012 4000 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    "c 0 1 18018 6000 0 0 0 0 0 0 0 0 0 0 0 48048 24000 16192 0 16192 0 16192 0\n"
    "end\n";

TEST(CountsRawFile, FormatTwoHasTheWindowAndEachFunctionsPhase) {
  const RawProcess p = parse(kWindowed);
  EXPECT_EQ(p.window.kind, "user");
  EXPECT_EQ(p.window.function, "timestep");
  EXPECT_EQ(p.window.first_call, 3);
  EXPECT_EQ(p.window.last_call, 5);
  EXPECT_EQ(p.window.from_ms, 1000);
  EXPECT_EQ(p.window.to_ms, -1);
  EXPECT_EQ(p.window.calls, 10);
  EXPECT_EQ(p.window.open_ms, 1455);
  EXPECT_EQ(p.window.close_ms, 1457);
  EXPECT_FALSE(p.window.phase_full[0]);
  EXPECT_TRUE(p.window.phase_full[1]);
  ASSERT_EQ(p.functions.size(), 2u);
  EXPECT_EQ(p.functions[0].phase, WindowPhase::Before);
  EXPECT_EQ(p.functions[1].phase, WindowPhase::Inside);
  EXPECT_EQ(p.functions[1].symbol, "timestep");
  // Format 1 has no window: every function is the whole run's.
  const RawProcess old = parse(kGood);
  EXPECT_EQ(old.window.kind, "");
  EXPECT_EQ(old.functions[0].phase, WindowPhase::Inside);
  EXPECT_EQ(parse(replace(kWindowed, "window user calls 3 5 timestep ms 1000 -1", "window mpi seen")).window.mpi, "seen");
}

TEST(CountsRawFile, FormatTwoDeviationsAreErrors) {
  EXPECT_NE(error_of(replace(kWindowed, "fn 1 0 0x1260 1", "fn 1 0 0x1260 7")).find("phase 7 is not 0, 1 or 2"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kWindowed, "window user", "window other")).find("unknown window kind"), std::string::npos);
  EXPECT_NE(error_of(replace(kWindowed, "phase 0 before light", "phase 0 before dim")).find("not full or light"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kWindowed, "window user calls 3 5 timestep ms 1000 -1", "window mpi maybe"))
                .find("unknown MPI window state"),
            std::string::npos);
}
