#include "regions.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "fake_counters.hpp"

using namespace rtrace::tracer;

namespace {
const rtrace::store::RegionRow* find(const RegionRecorder::Collected& c, const NameTable& names, const std::string& n) {
  for (const auto& r : c.rows)
    if (names.names().at(static_cast<std::size_t>(r.name_id)) == n) return &r;
  return nullptr;
}
}  // namespace

TEST(TracerRegions, CountsCallsAndInclusiveTime) {
  RegionRecorder rec;
  for (int i = 0; i < 3; ++i) {
    rec.begin("outer");
    rec.begin("inner");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    rec.end("inner");
    rec.end("outer");
  }
  NameTable names;
  auto c = rec.collect(names);
  ASSERT_EQ(c.rows.size(), 2u);
  auto* outer = find(c, names, "outer");
  auto* inner = find(c, names, "inner");
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(outer->calls, 3);
  EXPECT_EQ(inner->calls, 3);
  EXPECT_GE(inner->time_s, 0.006);
  EXPECT_GE(outer->time_s, inner->time_s);  // inclusive
  EXPECT_EQ(c.errors, 0);
  // Nothing declared, no counters: NaN, not zero.
  EXPECT_TRUE(std::isnan(outer->flops_fp64));
  EXPECT_TRUE(std::isnan(outer->bytes_dram));
  EXPECT_TRUE(std::isnan(outer->hw_instructions));
}

TEST(TracerRegions, DeclaredCountsAccumulate) {
  RegionRecorder rec;
  rec.add_flops("k", 0, 100);
  rec.add_flops("k", 0, 50);
  rec.add_flops("k", 2, 8);
  rec.add_bytes("k", 3, 1024);
  rec.add_bytes("k", 0, -5);   // ignored
  rec.add_flops("k", 7, 1);    // bad precision: error
  NameTable names;
  auto c = rec.collect(names);
  auto* k = find(c, names, "k");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->calls, 0);
  EXPECT_DOUBLE_EQ(k->flops_fp64, 150);
  EXPECT_DOUBLE_EQ(k->flops_fp16, 8);
  EXPECT_TRUE(std::isnan(k->flops_fp32));
  EXPECT_DOUBLE_EQ(k->bytes_dram, 1024);
  EXPECT_TRUE(std::isnan(k->bytes_l1));
  EXPECT_EQ(c.errors, 1);
}

TEST(TracerRegions, ThreadsAreMergedByName) {
  RegionRecorder rec;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&rec] {
      for (int i = 0; i < 1000; ++i) {
        rec.begin("work");
        rec.add_flops("work", 1, 2.0);
        rec.end("work");
      }
    });
  for (auto& t : threads) t.join();
  NameTable names;
  auto c = rec.collect(names);
  auto* w = find(c, names, "work");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->calls, 4000);
  EXPECT_DOUBLE_EQ(w->flops_fp32, 8000.0);
}

TEST(TracerRegions, MisuseIsCountedNotFatal) {
  RegionRecorder rec;
  rec.end("never");
  rec.begin(nullptr);
  rec.begin("a");
  rec.begin("b");
  rec.end("a");  // closes b implicitly
  rec.begin("open");
  NameTable names;
  auto c = rec.collect(names);
  EXPECT_EQ(c.errors, 3);
  EXPECT_EQ(c.open_frames, 1);
  EXPECT_EQ(find(c, names, "b")->calls, 1);
  EXPECT_EQ(find(c, names, "open")->calls, 0);
  EXPECT_FALSE(c.warnings.empty());
}

TEST(TracerRegions, SameNameFromDifferentBuffersIsOneRegion) {
  RegionRecorder rec;
  std::string a = "solve", b = "solve";
  rec.begin(a.c_str());
  rec.end(b.c_str());
  char buf[16] = "solve";
  rec.begin(buf);
  rec.end(buf);
  std::snprintf(buf, sizeof buf, "other");  // same pointer, new name
  rec.begin(buf);
  rec.end(buf);
  NameTable names;
  auto c = rec.collect(names);
  EXPECT_EQ(find(c, names, "solve")->calls, 2);
  EXPECT_EQ(find(c, names, "other")->calls, 1);
}

TEST(TracerRegions, HardwareCountersFromATestDouble) {
  test_doubles::StepCounterProvider counters;
  RegionRecorder rec(&counters);
  rec.begin("r");   // read #1
  rec.end("r");     // read #2 -> delta of one step
  rec.begin("r");
  rec.end("r");
  NameTable names;
  auto c = rec.collect(names);
  auto* r = find(c, names, "r");
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->hw_instructions, 2000.0);
  EXPECT_DOUBLE_EQ(r->hw_cycles, 1000.0);
  EXPECT_DOUBLE_EQ(r->hw_fp64_ops, 16.0);
  EXPECT_DOUBLE_EQ(r->hw_fp32_ops, 32.0);
  EXPECT_EQ(counters.opened.load(), 1);
}

TEST(TracerRegions, ForkResetForgetsEverything) {
  RegionRecorder rec;
  rec.begin("x");
  rec.end("x");
  rec.reset_after_fork();
  rec.begin("y");
  rec.end("y");
  NameTable names;
  auto c = rec.collect(names);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(names.names().at(0), "y");
}
