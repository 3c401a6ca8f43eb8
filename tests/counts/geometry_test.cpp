#include "rtrace/counts/geometry.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace rtrace::counts;

TEST(CountsGeometry, ParsesLevelsSizesAndSharing) {
  auto l = parse_geometry("L1=48K,12,64;L2=2M,16,64;L3=105M,15,64");
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].name, "L1d");
  EXPECT_EQ(l[0].size_bytes, 48 * 1024);
  EXPECT_EQ(l[1].size_bytes, 2 * 1024 * 1024);
  EXPECT_EQ(l[2].associativity, 15);
  EXPECT_EQ(l[0].shared_by, 1);
  EXPECT_GT(l[2].shared_by, 1000);  // shared by every worker unless given
  auto two = parse_geometry("L1d=32K,8,64;L2=1M,8,64,2;L3=none");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].shared_by, 2);
}

TEST(CountsGeometry, BadSpecsSayWhat) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"L2=1M,8,64", "no L1"},
      {"L1=32K,8", "SIZE,ASSOC,LINE"},
      {"L1=32X,8,64", "not a size"},
      {"L1=32K,0,64", "positive associativity"},
      {"L1=32K,8,48", "power of two"},
      {"L1=256,8,64", "smaller than one set"},
      {"L1=32K,8,64;L1=32K,8,64", "given twice"},
      {"L1=32K,8,64;L4=1M,8,64", "not a level"},
      {"L1=32K,8,64;L3=1M,8,64", "an L3 without an L2"},
      {"L1=none", "cannot be left out"},
      {"L1", "expected L1=SIZE"},
  };
  for (const auto& [spec, says] : cases) {
    try {
      parse_geometry(spec);
      ADD_FAILURE() << spec << ": accepted";
    } catch (const GeometryError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << spec << ": " << e.what();
    }
  }
}

TEST(CountsGeometry, SharersFillTheUnitsInOrder) {
  CacheLevel l3{"L3", 32 << 20, 16, 64, /*instances=*/2, /*shared_by=*/8};  // two sockets of 8
  EXPECT_EQ(sharers_of(l3, 1), 1);
  EXPECT_EQ(sharers_of(l3, 4), 4);
  EXPECT_EQ(sharers_of(l3, 8), 8);
  EXPECT_EQ(sharers_of(l3, 16), 8);   // both sockets, 8 each
  EXPECT_EQ(sharers_of(l3, 32), 16);  // oversubscribed: 16 per socket
  CacheLevel l2{"L2", 1 << 20, 16, 64, 8, 1};  // private per core
  EXPECT_EQ(sharers_of(l2, 4), 1);
  EXPECT_EQ(sharers_of(l2, 16), 2);   // more workers than cores
  // An L1d per core of 4 cores with two hyperthreads each: shared_by is in
  // cores (1), since the timed run puts one thread per core (OMP_PLACES=
  // cores): 4 workers have an L1d each; only 8 share one per core. (Counted
  // in hyperthreads, 4 workers filled 2 cores and got half an L1d each.)
  CacheLevel smt{"L1d", 32 << 10, 8, 64, 4, 1};
  EXPECT_EQ(sharers_of(smt, 4), 1);
  EXPECT_EQ(sharers_of(smt, 8), 2);
  EXPECT_EQ(sharers_of(smt, 1), 1);
}

TEST(CountsGeometry, HostSharersAreCountedInCoresNotHyperthreads) {
  // A synthetic machine: 4 cores of 2 hyperthreads, private L1d and L2, one L3.
  ASSERT_EQ(setenv("HWLOC_SYNTHETIC", "pack:1 l3:1 l2:4 l1d:1 core:1 pu:2", 1), 0);
  const auto levels = host_cache_levels();
  unsetenv("HWLOC_SYNTHETIC");
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].name, "L1d");
  EXPECT_EQ(levels[0].shared_by, 1);  // was 2 (its PUs)
  EXPECT_EQ(levels[1].shared_by, 1);
  EXPECT_EQ(levels[2].shared_by, 4);  // was 8
  EXPECT_EQ(sharers_of(levels[0], 2), 1);  // threads=2: a core, an L1d each
  EXPECT_EQ(sharers_of(levels[2], 2), 2);
}

TEST(CountsGeometry, ToolOptionsNameEveryLevel) {
  auto levels = parse_geometry("L1=4K,4,64;L2=32K,8,64");
  auto opts = tool_options(levels, {1, 2});
  const std::vector<std::string> want = {"--L1=4096,4,64", "--L1-sharers=1", "--L2=32768,8,64", "--L2-sharers=2",
                                         "--L3=none"};
  EXPECT_EQ(opts, want);
  auto mixed = parse_geometry("L1=4K,4,64;L2=32K,8,128");
  EXPECT_THROW(tool_options(mixed, {1, 1}), GeometryError);
}
