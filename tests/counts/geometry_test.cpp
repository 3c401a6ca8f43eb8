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
  auto levels = parse_geometry("L1=4K,4,64;L2=32K,8,64,2");
  auto opts = tool_options(levels, plan_levels(levels, 2, 1));
  const std::vector<std::string> want = {"--L1=4096,4,64", "--L1-sharers=1", "--L2=32768,8,64", "--L2-sharers=2",
                                         "--L2-shared=2,1", "--L3=none"};
  EXPECT_EQ(opts, want);
  auto mixed = parse_geometry("L1=4K,4,64;L2=32K,8,128");
  EXPECT_THROW(tool_options(mixed, plan_levels(mixed, 1, 1)), GeometryError);
  auto three = parse_geometry("L1=4K,4,64;L2=32K,8,64;L3=1M,8,64");
  const std::vector<std::string> want3 = {"--L1=4096,4,64", "--L1-sharers=1", "--L2=32768,8,64", "--L2-sharers=1",
                                          "--L2-shared=0,1", "--L3=1048576,8,64", "--L3-sharers=4",
                                          "--L3-shared=2,1"};
  EXPECT_EQ(tool_options(three, plan_levels(three, 2, 2)), want3);
}

// A level that cores share is one cache for a rank's threads holding the
// rank's part of an instance: all of it at 1 rank whatever the threads (the
// issue: a ranks sweep without a threads axis planned 2 threads at 1 rank and
// gave the only rank half the L3); the ranks' workers on an instance divide it.
TEST(CountsGeometry, SharedLevelsAreTheRanksPartOfAnInstance) {
  CacheLevel l1{"L1d", 32 << 10, 8, 64, 16, 1}, l2{"L2", 1 << 20, 16, 64, 16, 1};
  CacheLevel l3{"L3", 32 << 20, 16, 64, /*instances=*/2, /*shared_by=*/8};  // two sockets of 8 cores
  const std::vector<CacheLevel> levels = {l1, l2, l3};
  for (int threads : {1, 2, 8}) {
    const auto p = plan_levels(levels, threads, 1);
    EXPECT_FALSE(p[0].shared());
    EXPECT_FALSE(p[1].shared());
    EXPECT_EQ(p[0].simulated_bytes, 32 << 10);
    EXPECT_EQ(p[2].threads_sharing, threads);
    EXPECT_EQ(p[2].copies, 1);
    EXPECT_EQ(p[2].simulated_bytes, 32 << 20) << threads;  // the whole L3
  }
  // 16 threads: both sockets, 8 threads on each L3.
  auto p16 = plan_levels(levels, 16, 1);
  EXPECT_EQ(p16[2].threads_sharing, 8);
  EXPECT_EQ(p16[2].copies, 2);
  EXPECT_EQ(p16[2].simulated_bytes, 32 << 20);
  // Pure MPI, 4 ranks of 1 thread on one socket: a quarter each.
  auto r4 = plan_levels(levels, 1, 4);
  EXPECT_EQ(r4[2].sharers, 4);
  EXPECT_EQ(r4[2].threads_sharing, 1);
  EXPECT_EQ(r4[2].simulated_bytes, 8 << 20);
  // 2 ranks x 8 threads: each rank its own socket's L3.
  auto r2 = plan_levels(levels, 8, 2);
  EXPECT_EQ(r2[2].sharers, 8);
  EXPECT_EQ(r2[2].simulated_bytes, 32 << 20);
  // A given geometry's L3 is shared by every worker of the node: 1/ranks.
  auto given = parse_geometry("L1=4K,4,64;L2=32K,8,64;L3=1M,8,64");
  EXPECT_EQ(plan_levels(given, 2, 1)[2].simulated_bytes, 1 << 20);
  EXPECT_EQ(plan_levels(given, 1, 2)[2].simulated_bytes, 512 << 10);
  EXPECT_EQ(plan_levels(given, 3, 2)[2].simulated_bytes, 512 << 10);
  // A shared L2 makes the L3 below it shared too.
  auto l2shared = parse_geometry("L1=4K,4,64;L2=32K,8,64,2;L3=1M,8,64");
  auto ps = plan_levels(l2shared, 4, 1);
  EXPECT_EQ(ps[1].threads_sharing, 2);
  EXPECT_EQ(ps[1].copies, 2);
  EXPECT_TRUE(ps[2].shared());
  EXPECT_EQ(describe_plan(given, plan_levels(given, 2, 1)),
            "L1d 4 KiB, L2 32 KiB per thread, L3 1 MiB shared by the rank's threads");
  EXPECT_EQ(describe_plan(given, plan_levels(given, 1, 2)),
            "L1d 4 KiB, L2 32 KiB per thread, L3 512 KiB (1/2 of 1 MiB) shared by the rank's threads");
}
