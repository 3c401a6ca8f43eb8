// The PMU path without a PMU: event selection and arithmetic against event
// tables recorded from libpfm4 4.13 for a few CPU models (pmu_tables/*.txt,
// LIBPFM_FORCE_PMU=<pmu>; the ctests tracer_pmu_table_* check that the
// installed libpfm4 still encodes them the same way).
#include "pmu_events.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace rtrace::tracer;

namespace {

TableEncoder table(const std::string& pmu) {
  std::ifstream in(std::string(RTRACE_SOURCE_DIR) + "/tests/tracer/pmu_tables/" + pmu + ".txt");
  EXPECT_TRUE(in) << pmu;
  std::stringstream text;
  text << in.rdbuf();
  return TableEncoder(text.str());
}

PmuPlan plan(const std::string& pmu) {
  TableEncoder t = table(pmu);
  return plan_events(pmu, t);
}

// The scaled value of every planned event: `by_name` (unqualified names), the rest 0.
std::vector<double> values(const PmuPlan& p, const std::map<std::string, double>& by_name) {
  std::vector<double> v(p.events.size(), 0.0);
  for (std::size_t i = 0; i < p.events.size(); ++i) {
    const std::string& n = p.events[i].name;
    const std::string unqualified = n.substr(n.find("::") + 2);
    if (auto it = by_name.find(unqualified); it != by_name.end()) v[i] = it->second;
  }
  return v;
}

const PmuEvent* event(const PmuPlan& p, const std::string& unqualified) {
  for (const auto& e : p.events)
    if (e.name.substr(e.name.find("::") + 2) == unqualified) return &e;
  return nullptr;
}

}  // namespace

TEST(PmuEvents, SkylakeCountsFlopsByPrecisionAndWidthAndThreeByteLevels) {
  PmuPlan p = plan("skl");
  EXPECT_EQ(p.vendor, "intel");
  EXPECT_EQ(p.status(), "ok") << p.note();
  // Named events, encoded by libpfm4 (the old tracer's hard-coded 0xC7 umasks agree).
  const PmuEvent* sd = event(p, "FP_ARITH_INST_RETIRED:SCALAR_DOUBLE");
  ASSERT_NE(sd, nullptr);
  EXPECT_EQ(sd->encoding.config & 0xffff, 0x01c7u);
  const PmuEvent* p512 = event(p, "FP_ARITH_INST_RETIRED:512B_PACKED_SINGLE");
  ASSERT_NE(p512, nullptr);
  EXPECT_EQ(p512->encoding.config & 0xffff, 0x80c7u);
  ASSERT_NE(event(p, "L1D:REPLACEMENT"), nullptr);
  ASSERT_NE(event(p, "LONGEST_LAT_CACHE:MISS"), nullptr);
  EXPECT_FALSE(p.counts(PmuQuantity::Fp16Scalar));  // no FP16 arithmetic events before Sapphire Rapids
  EXPECT_FALSE(p.counts(PmuQuantity::FlopsUnsplit));
  EXPECT_EQ(p.events.size(), 13u);  // instructions, 8 FP_ARITH widths, 4 cache events
  EXPECT_EQ(p.source(), "pmu:skl FP_ARITH_INST_RETIRED,L1D,L2_LINES_IN,L2_LINES_OUT,LONGEST_LAT_CACHE");
  EXPECT_NE(p.note().find("not seen by the core PMU: L1 bytes, L1 write-backs, DRAM writes"), std::string::npos);
}

TEST(PmuEvents, IntelArithmeticIsLanesTimesInstructionsAndLinesTimes64) {
  PmuPlan p = plan("skl");
  // 1000 scalar and 500 256-bit double instructions (FMA already counted twice by the PMU),
  // 10 512-bit single; 100 L1 refills, 40 L2 fills, 7 dirty L2 evictions, 25 L3 misses.
  auto v = values(p, {{"FP_ARITH_INST_RETIRED:SCALAR_DOUBLE", 1000},
                      {"FP_ARITH_INST_RETIRED:256B_PACKED_DOUBLE", 500},
                      {"FP_ARITH_INST_RETIRED:512B_PACKED_SINGLE", 10},
                      {"L1D:REPLACEMENT", 100},
                      {"L2_LINES_IN:ALL", 40},
                      {"L2_LINES_OUT:NON_SILENT", 7},
                      {"LONGEST_LAT_CACHE:MISS", 25},
                      {"INST_RETIRED:ANY_P", 123456}});
  rtrace::store::CountRow r = pmu_count_row(p, v, 1);
  EXPECT_EQ(r.thread, 1);
  EXPECT_EQ(r.function_id, -1);
  EXPECT_DOUBLE_EQ(r.instructions, 123456);
  EXPECT_DOUBLE_EQ(r.flops_fp64_scalar, 1000);
  EXPECT_DOUBLE_EQ(r.flops_fp64_v128, 0);
  EXPECT_DOUBLE_EQ(r.flops_fp64_v256, 2000);
  EXPECT_DOUBLE_EQ(r.flops_fp32_v512, 160);
  EXPECT_TRUE(std::isnan(r.flops_fp16_scalar));  // not a zero: unseen
  EXPECT_TRUE(std::isnan(r.flops_unsplit));
  EXPECT_TRUE(std::isnan(r.bytes_l1_read));
  EXPECT_TRUE(std::isnan(r.bytes_l1_write));
  EXPECT_DOUBLE_EQ(r.bytes_l2_read, 6400);
  EXPECT_TRUE(std::isnan(r.bytes_l2_write));
  EXPECT_DOUBLE_EQ(r.bytes_l3_read, 2560);
  EXPECT_DOUBLE_EQ(r.bytes_l3_write, 448);
  EXPECT_DOUBLE_EQ(r.bytes_dram_read, 1600);
  EXPECT_TRUE(std::isnan(r.bytes_dram_write));
}

TEST(PmuEvents, SapphireRapidsAddsHalfPrecision) {
  PmuPlan p = plan("spr");
  EXPECT_EQ(p.status(), "ok") << p.note();
  ASSERT_TRUE(p.counts(PmuQuantity::Fp16V512));
  auto v = values(p, {{"FP_ARITH_INST_RETIRED2:512B_PACKED_HALF", 3}, {"FP_ARITH_INST_RETIRED2:SCALAR_HALF", 5}});
  rtrace::store::CountRow r = pmu_count_row(p, v, 0);
  EXPECT_DOUBLE_EQ(r.flops_fp16_v512, 96);
  EXPECT_DOUBLE_EQ(r.flops_fp16_scalar, 5);
}

TEST(PmuEvents, HaswellHasNoFlopEventsSoTheCountsArePartialAndSaySo) {
  PmuPlan p = plan("hsw");
  EXPECT_FALSE(p.any_flops());
  EXPECT_TRUE(p.any_bytes());
  EXPECT_EQ(p.status(), "partial");
  EXPECT_NE(p.note().find("missing: FP64 scalar FLOPs"), std::string::npos) << p.note();
  rtrace::store::CountRow r = pmu_count_row(p, values(p, {{"L1D:REPLACEMENT", 1}}), 0);
  EXPECT_TRUE(std::isnan(r.flops_fp64_scalar));  // never a guessed zero
  EXPECT_DOUBLE_EQ(r.bytes_l2_read, 64);
}

TEST(PmuEvents, AmdZen4CountsFlopsWithoutPrecisionAndRefillsPerLevel) {
  PmuPlan p = plan("amd64_fam19h_zen4");
  EXPECT_EQ(p.vendor, "amd");
  EXPECT_EQ(p.status(), "ok") << p.note();
  EXPECT_TRUE(p.counts(PmuQuantity::FlopsUnsplit));
  EXPECT_FALSE(p.counts(PmuQuantity::Fp64Scalar));
  EXPECT_FALSE(p.counts(PmuQuantity::L3Write));
  EXPECT_NE(p.note().find("FLOP precision and width"), std::string::npos);
  // L3 bytes: L2 demand misses + L2 prefetches served by L3 + those missing L3;
  // DRAM: L1 fills from DRAM + L2 prefetches missing L3 (the shared event opened once).
  const std::string pf = ":L2_STREAM:L2_NEXT_LINE:L2_UP_DOWN:L2_BURST:L2_STRIDE:L1_STREAM:L1_STRIDE:L1_REGION";
  auto v = values(p, {{"RETIRED_SSE_AVX_FLOPS:ANY", 4000},
                      {"ANY_DATA_CACHE_FILLS_FROM_SYSTEM:LCL_L2:LOCAL_CCX:NEAR_CACHE_NEAR_FAR:DRAM_IO_NEAR:"
                       "FAR_CACHE_NEAR_FAR:DRAM_IO_FAR:ALT_MEM_NEAR_FAR",
                       100},
                      {"CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C", 30},
                      {"L2_PREFETCH_HIT_L3" + pf, 5},
                      {"L2_PREFETCH_MISS_L3" + pf, 8},
                      {"ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_NEAR:DRAM_IO_FAR", 12}});
  int opened = 0;
  for (const auto& e : p.events) opened += e.name.find("L2_PREFETCH_MISS_L3") != std::string::npos;
  EXPECT_EQ(opened, 1);
  rtrace::store::CountRow r = pmu_count_row(p, v, -1);
  EXPECT_DOUBLE_EQ(r.flops_unsplit, 4000);
  EXPECT_TRUE(std::isnan(r.flops_fp64_v256));
  EXPECT_DOUBLE_EQ(r.bytes_l2_read, 6400);
  EXPECT_DOUBLE_EQ(r.bytes_l3_read, (30 + 5 + 8) * 64.0);
  EXPECT_DOUBLE_EQ(r.bytes_dram_read, (12 + 8) * 64.0);
  EXPECT_TRUE(std::isnan(r.bytes_dram_write));
}

TEST(PmuEvents, OlderZenUnitMasksAreFoundPerFamily) {
  for (const char* pmu : {"amd64_fam19h_zen3", "amd64_fam17h_zen2"}) {
    PmuPlan p = plan(pmu);
    EXPECT_EQ(p.status(), "ok") << pmu << ": " << p.note();
    EXPECT_TRUE(p.counts(PmuQuantity::L2Read)) << pmu;
    EXPECT_TRUE(p.counts(PmuQuantity::L3Read)) << pmu;
    EXPECT_TRUE(p.counts(PmuQuantity::DramRead)) << pmu;
  }
  PmuPlan z2 = plan("amd64_fam17h_zen2");
  EXPECT_NE(event(z2, "DATA_CACHE_REFILLS_FROM_SYSTEM:LS_MABRESP_LCL_DRAM:LS_MABRESP_RMT_DRAM"), nullptr);
}

TEST(PmuEvents, AnEventThatFailsToOpenTakesItsQuantitiesWithIt) {
  PmuPlan p = plan("skl");
  std::size_t llc = p.events.size();
  for (std::size_t i = 0; i < p.events.size(); ++i)
    if (p.events[i].name == "skl::LONGEST_LAT_CACHE:MISS") llc = i;
  ASSERT_LT(llc, p.events.size());
  p.drop_event(llc);
  EXPECT_FALSE(p.counts(PmuQuantity::DramRead));
  EXPECT_EQ(p.status(), "partial");
  EXPECT_NE(p.note().find("missing: DRAM read bytes"), std::string::npos) << p.note();
  std::vector<double> v(p.events.size(), 1.0);
  EXPECT_TRUE(std::isnan(pmu_count_row(p, v, 0).bytes_dram_read));
}

TEST(PmuEvents, MultiplexedCountsAreScaledAndNeverRunIsUnavailable) {
  EXPECT_DOUBLE_EQ(scaled_count(1000, 2000, 2000), 1000);
  EXPECT_DOUBLE_EQ(scaled_count(1000, 2000, 500), 4000);  // ran a quarter of the time
  EXPECT_TRUE(std::isnan(scaled_count(0, 2000, 0)));      // enabled, never scheduled: not a zero
  EXPECT_DOUBLE_EQ(scaled_count(0, 0, 0), 0);             // never enabled: nothing happened
  PmuPlan p = plan("skl");
  std::vector<double> v(p.events.size(), 1.0);
  for (std::size_t i = 0; i < p.events.size(); ++i)
    if (p.events[i].name == "skl::L2_LINES_IN:ALL") v[i] = std::nan("");
  EXPECT_TRUE(std::isnan(pmu_count_row(p, v, 0).bytes_l3_read));
}

TEST(PmuEvents, UnknownPmuAndBadTablesGiveNothingOrOneClearError) {
  TableEncoder empty("");
  EXPECT_EQ(plan_events("perf", empty).status(), "unavailable");
  EXPECT_EQ(plan_events("skl", empty).status(), "unavailable");  // nothing encodes
  EXPECT_THROW(TableEncoder("skl::X 4\n"), std::invalid_argument);
  EXPECT_THROW(TableEncoder("skl::X 4 zz\n"), std::invalid_argument);
  TableEncoder ok("# comment\nskl::L1D:REPLACEMENT 4 151 0 0  # trailing\n");
  PerfEncoding e;
  ASSERT_TRUE(ok.encode("skl::L1D:REPLACEMENT", e));
  EXPECT_EQ(e.type, 4u);
  EXPECT_EQ(e.config, 0x151u);
  EXPECT_FALSE(ok.encode("skl::L1D", e));
}

TEST(PmuEvents, SourceAndNoteFitTheirColumns) {
  for (const char* pmu : {"skl", "icl", "spr", "hsw", "amd64_fam17h_zen2", "amd64_fam19h_zen3", "amd64_fam19h_zen4"}) {
    PmuPlan p = plan(pmu);
    EXPECT_LT(p.source().size(), sizeof(rtrace::store::CountInfoRow{}.source)) << pmu;
    EXPECT_LT(p.note().size(), sizeof(rtrace::store::CountInfoRow{}.note)) << pmu;
    EXPECT_EQ(p.source().rfind(std::string("pmu:") + pmu, 0), 0u) << p.source();
  }
}
