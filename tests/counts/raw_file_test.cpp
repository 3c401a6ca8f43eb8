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
      {replace(kGood, "rtrace-count-raw 1", "rtrace-count-raw 2"), "version `2` is not 1"},
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
