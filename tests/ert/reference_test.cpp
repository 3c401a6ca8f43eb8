// The machine's own history as a reference (issue 32): judging, substitution,
// updating, the file and its key.
#include "rtrace/ert/reference.hpp"

#include <gtest/gtest.h>

#include "synthetic_samples.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace rtrace::ert;
using rtrace::store::get_str;
using test::ceiling_row;

namespace {

MachineReference reference_of(double fp64_fma, double dram, const char* date = "2026-11-28") {
  MachineReference r;
  r.ceilings.push_back({"FP64 FMA", "compute", "GFLOP/s", fp64_fma, fp64_fma * 0.99, fp64_fma, 3, date, 4});
  r.ceilings.push_back({"DRAM", "bandwidth", "GB/s", dram, dram * 0.98, dram * 1.01, 3, date, 4});
  return r;
}

const rtrace::store::CeilingRow& row(const std::vector<rtrace::store::CeilingRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (get_str(r.name) == name) return r;
  throw std::runtime_error("no row " + name);
}

}  // namespace

// The case of issue 32: a whole quick run at half the machine's FP64 peak (a
// host SMT sibling running someone else's FMAs), its repeats in agreement, so
// every check of the run itself passed. Against the machine's 172 of
// 2026-11-28 it is 0.51x: marked, and the reference is what the roofline uses.
TEST(ErtReference, AWholeRunAtHalfSpeedIsMarkedAndTakesTheReference) {
  std::vector<rtrace::store::CeilingRow> rows = {ceiling_row("DRAM", "bandwidth", 44.0, 43.5, 44.6),
                                                 ceiling_row("FP64 FMA", "compute", 87.5, 86.9, 87.5, "fp64", "fma")};
  const auto notes = judge_against_reference(rows, reference_of(172.0, 45.0));
  const auto& fma = row(rows, "FP64 FMA");
  EXPECT_EQ(fma.unreliable, 1);
  EXPECT_EQ(get_str(fma.unreliable_reason),
            "FP64 FMA 87.5 GFLOP/s, 0.51x the 172.0 measured on this machine on 2026-11-28: the machine was slower or "
            "busier now");
  EXPECT_DOUBLE_EQ(fma.value, 172.0);  // the roofline uses the reference
  EXPECT_DOUBLE_EQ(fma.measured, 87.5);  // the point keeps its own value
  EXPECT_EQ(get_str(fma.source), "reference");
  EXPECT_EQ(get_str(fma.reference_date), "2026-11-28");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("FP64 FMA: the machine's reference 172.0 GFLOP/s of 2026-11-28 is used"), std::string::npos);
  // DRAM 44.0 against 45.0: within the noise (4 % + both spreads): believed.
  const auto& dram = row(rows, "DRAM");
  EXPECT_EQ(dram.unreliable, 0);
  EXPECT_DOUBLE_EQ(dram.value, 44.0);
  EXPECT_EQ(get_str(dram.source), "measured");
  EXPECT_DOUBLE_EQ(dram.measured, 44.0);
}

// The tolerance comes from the spread the two measurements showed: a
// measurement whose own repeats disagree by 20 % is not marked for being 15 %
// below, one whose repeats agree to 1 % is.
TEST(ErtReference, TheToleranceComesFromTheObservedSpread) {
  std::vector<rtrace::store::CeilingRow> tight = {ceiling_row("FP64 FMA", "compute", 146.2, 145.0, 146.2)};
  std::vector<rtrace::store::CeilingRow> wide = {ceiling_row("FP64 FMA", "compute", 146.2, 117.0, 146.2)};
  judge_against_reference(tight, reference_of(172.0, 45.0));
  judge_against_reference(wide, reference_of(172.0, 45.0));
  EXPECT_EQ(tight[0].unreliable, 1);
  EXPECT_EQ(wide[0].unreliable, 0);
}

// A ceiling marked for another reason (a busy machine, bandwidth rising
// towards DRAM) takes the reference too; one without a reference keeps its
// own value; a value above the reference is the machine being faster.
TEST(ErtReference, AnyMarkedCeilingTakesTheReferenceAndAHigherOneIsBelieved) {
  std::vector<rtrace::store::CeilingRow> rows = {ceiling_row("DRAM", "bandwidth", 60.0, 59.0, 60.5),
                                                 ceiling_row("L2", "bandwidth", 300.0, 290.0, 305.0),
                                                 ceiling_row("FP64 FMA", "compute", 180.0, 179.0, 180.0)};
  rows[0].unreliable = 1;
  rtrace::store::set_str(rows[0].unreliable_reason, "measured on a busy machine: 308 of 650 runs were disturbed");
  rows[1].unreliable = 1;
  judge_against_reference(rows, reference_of(172.0, 45.0));
  EXPECT_DOUBLE_EQ(rows[0].value, 45.0);
  EXPECT_DOUBLE_EQ(rows[0].measured, 60.0);
  EXPECT_EQ(get_str(rows[0].source), "reference");
  EXPECT_EQ(get_str(rows[0].unreliable_reason), "measured on a busy machine: 308 of 650 runs were disturbed");
  EXPECT_DOUBLE_EQ(rows[1].value, 300.0);  // no L2 in the reference
  EXPECT_EQ(get_str(rows[1].source), "measured");
  EXPECT_EQ(rows[2].unreliable, 0);
  EXPECT_DOUBLE_EQ(rows[2].value, 180.0);
}

// Only reliable measured values update the reference; a higher one replaces
// it with its date, every one counts.
TEST(ErtReference, TheBestReliableMeasurementIsKeptWithItsDate) {
  std::vector<rtrace::store::CeilingRow> rows = {ceiling_row("DRAM", "bandwidth", 40.0, 39.0, 41.0),
                                                 ceiling_row("L1d", "bandwidth", 250.0, 245.0, 251.0),
                                                 ceiling_row("FP64 FMA", "compute", 180.0, 179.0, 180.0),
                                                 ceiling_row("FP32 FMA", "compute", 200.0, 199.0, 200.0)};
  rtrace::store::set_str(rows[0].source, "measured");
  rows[3].unreliable = 1;  // a marked value never enters
  auto updated = updated_reference(reference_of(172.0, 45.0), rows, "2026-12-01");
  ASSERT_TRUE(updated.find("FP64 FMA"));
  EXPECT_DOUBLE_EQ(updated.find("FP64 FMA")->value, 180.0);
  EXPECT_EQ(updated.find("FP64 FMA")->date, "2026-12-01");
  EXPECT_EQ(updated.find("FP64 FMA")->measurements, 5);
  EXPECT_DOUBLE_EQ(updated.find("DRAM")->value, 45.0);  // lower: the reference stays
  EXPECT_EQ(updated.find("DRAM")->date, "2026-11-28");
  EXPECT_EQ(updated.find("DRAM")->measurements, 5);
  ASSERT_TRUE(updated.find("L1d"));  // new
  EXPECT_DOUBLE_EQ(updated.find("L1d")->value, 250.0);
  EXPECT_EQ(updated.find("FP32 FMA"), nullptr);
  // A row that took the reference is not a measurement of it.
  rtrace::store::CeilingRow from_reference = ceiling_row("DRAM", "bandwidth", 99.0, 99.0, 99.0);
  rtrace::store::set_str(from_reference.source, "reference");
  EXPECT_DOUBLE_EQ(updated_reference(updated, {from_reference}, "2026-12-02").find("DRAM")->value, 45.0);
}

TEST(ErtReference, FileRoundTripAndAnUnreadableFileIsNoReference) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("rtrace-reference-" + std::to_string(getpid()))).string();
  const std::string path = dir + "/ert/reference/x.json";
  std::string problem;
  EXPECT_TRUE(read_reference(path, problem).ceilings.empty());  // no history yet
  EXPECT_TRUE(problem.empty());
  MachineReference ref = reference_of(172.0, 45.0);
  ref.machine = "host h; cpu c";
  ASSERT_EQ(write_reference(path, ref), "");
  auto back = read_reference(path, problem);
  EXPECT_TRUE(problem.empty()) << problem;
  EXPECT_EQ(back.machine, "host h; cpu c");
  ASSERT_EQ(back.ceilings.size(), 2u);
  EXPECT_DOUBLE_EQ(back.find("FP64 FMA")->value, 172.0);
  EXPECT_DOUBLE_EQ(back.find("FP64 FMA")->min, 172.0 * 0.99);
  EXPECT_EQ(back.find("DRAM")->date, "2026-11-28");
  EXPECT_EQ(back.find("DRAM")->measurements, 4);
  std::ofstream(path) << "{ not json";
  EXPECT_TRUE(read_reference(path, problem).ceilings.empty());
  EXPECT_NE(problem.find("unreadable"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Kept per machine and partition, as the ERT cache keys its files: the same
// host with another topology or CPU, or another partition, is another file.
TEST(ErtReference, KeyedByMachinePartitionAndKernels) {
  rtrace::store::MachineInfo m;
  m.hostname = "node/1";
  m.cpu_model = "AMD EPYC";
  m.cores = 2;
  m.pus = 2;
  const auto a = reference_key(m, 2, 1, "avx512 x8");
  EXPECT_EQ(a.partition, "t2");
  EXPECT_EQ(reference_key(m, 1, 2, "avx512 x8").partition, "r2t1");
  EXPECT_EQ(a.file_name().rfind("node_1-t2-", 0), 0u) << a.file_name();
  // Another ERT method (kernels, ceiling rules) is another file: a reference
  // measured the old way is not compared with.
  EXPECT_EQ(a.version, std::string(rtrace::store::rtrace_version()) + "-ert" + rtrace::store::ert_method());
  EXPECT_NE(a.file_name().find("-ert" + std::string(rtrace::store::ert_method()) + "-"), std::string::npos);
  EXPECT_NE(a.file_name(), reference_key(m, 1, 1, "avx512 x8").file_name());
  EXPECT_NE(a.file_name(), reference_key(m, 2, 1, "avx2 x8").file_name());
  auto bigger = m;
  bigger.cores = 4;
  EXPECT_NE(a.file_name(), reference_key(bigger, 2, 1, "avx512 x8").file_name());
  EXPECT_EQ(reference_path("/c", a), "/c/ert/reference/" + a.file_name());
}

TEST(ErtReference, CacheDirFollowsTheLaunchersRule) {
  EXPECT_EQ(rtrace::store::cache_dir("/r", "/x", "/h"), "/r");
  EXPECT_EQ(rtrace::store::cache_dir("", "/x", "/h"), "/x/rtrace");
  EXPECT_EQ(rtrace::store::cache_dir(nullptr, nullptr, "/h"), "/h/.cache/rtrace");
}
