// The ERT file (read back through the store), roofline.json and the table.
#include "rtrace/ert/report.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace rtrace::ert;
namespace fs = std::filesystem;

namespace {

ErtReport sample_report() {
  ErtReport r;
  r.device = "cpu";
  r.threads = 2;
  r.ranks = 2;
  r.quick = true;
  r.command_line = "rtrace ert --threads 2 --quick";
  r.machine = rtrace::store::describe_this_machine();
  Sample s;
  s.series = Series::Bandwidth;
  s.kernel = {Precision::FP64, Variant::Fma, 1};
  s.elements_per_worker = 1024;
  s.working_set_bytes = 1024 * 8 * 4;
  s.trials = 10;
  s.workers = 2;
  s.ranks = 2;
  s.seconds = 1e-3;
  s.rank_seconds = {0.9e-3, 1e-3};
  s.bytes = 16.0 * 1024 * 4 * 10;
  s.flops = 1024.0 * 4 * 10;
  r.samples = {s};
  rtrace::store::CeilingRow bw{}, fp{};
  rtrace::store::set_str(bw.name, "L1d");
  rtrace::store::set_str(bw.kind, "bandwidth");
  rtrace::store::set_str(bw.unit, "GB/s");
  bw.value = 300;
  bw.max = 310;
  bw.min = 290;
  bw.repeats = 3;
  bw.level_bytes = 32768;
  rtrace::store::set_str(fp.name, "FP64 FMA");
  rtrace::store::set_str(fp.kind, "compute");
  rtrace::store::set_str(fp.precision, "fp64");
  rtrace::store::set_str(fp.variant, "fma");
  rtrace::store::set_str(fp.unit, "GFLOP/s");
  fp.value = 100;
  fp.max = 101;
  fp.min = 99;
  fp.repeats = 3;
  fp.level_bytes = -1;
  r.analysis.ceilings = {bw, fp};
  r.analysis.notes = {"L3: not observed"};
  r.text_attributes = {{"isa", "avx512"}};
  r.number_attributes = {{"cpu_mhz_start", 2600.0}};
  return r;
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("rtrace-ert-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(ErtFile, WrittenAtomicallyAndReadableThroughTheStore) {
  const fs::path dir = temp_dir();
  const std::string path = (dir / "e.h5").string();
  write_ert_file(path, sample_report());
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename(), "e.h5") << "temporary file left behind";

  auto f = rtrace::store::File::open(path);
  EXPECT_EQ(f.root().attr_string("file_kind"), "ert");
  auto ert = f.root().open_group("ert");
  EXPECT_EQ(ert.attr_int("threads"), 2);
  EXPECT_EQ(ert.attr_int("ranks"), 2);
  EXPECT_EQ(ert.attr_int("sms_requested"), -1);
  EXPECT_EQ(ert.attr_int("quick"), 1);
  EXPECT_EQ(ert.attr_string("device"), "cpu");
  EXPECT_EQ(ert.attr_string("isa"), "avx512");
  EXPECT_EQ(ert.attr_strings("rank_seconds").size(), 1u);
  auto ceilings = rtrace::store::read_ceilings(ert);
  ASSERT_EQ(ceilings.size(), 2u);
  EXPECT_EQ(rtrace::store::get_str(ceilings[1].name), "FP64 FMA");
  auto samples = ert.read_table<rtrace::store::ErtSampleRow>("samples");
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_NEAR(samples[0].gbytes_per_s, 16.0 * 1024 * 4 * 10 / 1e-3 / 1e9, 1e-9);
  EXPECT_TRUE(f.root().exists("machine"));
  fs::remove_all(dir);
}

TEST(ErtFile, UnwritablePlacesFailEarlyWithOneLine) {
  EXPECT_THROW(check_output_writable("/nonexistent-dir/e.h5", "output file"), OutputError);
  const fs::path dir = temp_dir();
  try {
    check_output_writable(dir.string(), "output file");
    FAIL() << "a directory is not a writable output file";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos);
  }
  EXPECT_NO_THROW(check_output_writable((dir / "ok.h5").string(), "output file"));
  EXPECT_FALSE(fs::exists(dir / "ok.h5"));
  fs::remove_all(dir);
}

TEST(RooflineJson, Ert110Layout) {
  auto j = roofline_json(sample_report());
  ASSERT_TRUE(j["empirical"]["gflops"]["data"].is_array());
  EXPECT_EQ(j["empirical"]["gflops"]["data"][0][0], "FP64 FMA");
  EXPECT_DOUBLE_EQ(j["empirical"]["gflops"]["data"][0][1].get<double>(), 100.0);
  EXPECT_EQ(j["empirical"]["gbytes"]["data"][0][0], "L1d");
  EXPECT_EQ(j["empirical"]["metadata"]["THREADS"], 2);
  EXPECT_EQ(j["rtrace"]["ceilings"][0]["max"], 310.0);
  EXPECT_TRUE(j["spec"]["gbytes"]["data"].is_array());
}

TEST(RooflineJson, UnreliableCeilingsCarryTheirReason) {
  ErtReport r = sample_report();
  ASSERT_GE(r.analysis.ceilings.size(), 2u);
  r.analysis.ceilings[0].unreliable = 1;
  rtrace::store::set_str(r.analysis.ceilings[0].unreliable_reason, "L1d below L2 after 2 re-measurements");
  r.analysis.ceilings[1].unreliable = -1;  // a file from before the check
  auto j = roofline_json(r);
  EXPECT_EQ(j["rtrace"]["ceilings"][0]["unreliable"], true);
  EXPECT_EQ(j["rtrace"]["ceilings"][0]["unreliable_reason"], "L1d below L2 after 2 re-measurements");
  EXPECT_TRUE(j["rtrace"]["ceilings"][1]["unreliable"].is_null());
  for (std::size_t i = 2; i < r.analysis.ceilings.size(); ++i) {
    EXPECT_EQ(j["rtrace"]["ceilings"][i]["unreliable"], false);
    EXPECT_TRUE(j["rtrace"]["ceilings"][i]["unreliable_reason"].is_null());
  }
}

// Issue 32: a ceiling that took the machine's reference says so, with the
// run's own value, in the JSON and the table.
TEST(RooflineJson, ACeilingFromTheMachinesReferenceSaysSo) {
  ErtReport r = sample_report();
  ASSERT_GE(r.analysis.ceilings.size(), 2u);
  auto& c = r.analysis.ceilings[0];
  c.unreliable = 1;
  rtrace::store::set_str(c.unreliable_reason, "L1d 150.0 GB/s, 0.50x the 300.0 measured on this machine on 2026-11-28");
  rtrace::store::set_str(c.source, "reference");
  rtrace::store::set_str(c.reference_date, "2026-11-28");
  c.measured = 150.0;
  r.analysis.ceilings[1].measured = r.analysis.ceilings[1].value;
  rtrace::store::set_str(r.analysis.ceilings[1].source, "measured");
  auto j = roofline_json(r);
  EXPECT_EQ(j["rtrace"]["ceilings"][0]["source"], "reference");
  EXPECT_EQ(j["rtrace"]["ceilings"][0]["reference_date"], "2026-11-28");
  EXPECT_EQ(j["rtrace"]["ceilings"][0]["measured"], 150.0);
  EXPECT_EQ(j["rtrace"]["ceilings"][1]["source"], "measured");
  EXPECT_TRUE(j["rtrace"]["ceilings"][1]["reference_date"].is_null());
  const std::string table = format_summary(r);
  EXPECT_NE(table.find("unreliable  (reference of 2026-11-28; measured 150.0)"), std::string::npos) << table;
}

TEST(Summary, TableHasEveryCeilingAndNote) {
  const std::string t = format_summary(sample_report());
  EXPECT_NE(t.find("L1d"), std::string::npos);
  EXPECT_NE(t.find("FP64 FMA"), std::string::npos);
  EXPECT_NE(t.find("GFLOP/s"), std::string::npos);
  EXPECT_NE(t.find("note: L3: not observed"), std::string::npos);
}
