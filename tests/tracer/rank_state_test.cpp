// RankState -> RankRecords -> per-rank file -> store::read_rank, for both
// counter paths: unavailable (this VM) and available (a test double).
#include "rank_state.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "fake_counters.hpp"
#include "metric_list.hpp"
#include "rank_writer.hpp"
#include "serialize.hpp"

using namespace rtrace::tracer;
namespace store = rtrace::store;
namespace fs = std::filesystem;

namespace {
class TracerRankState : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rtrace-tracer-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    config_.active = true;
    config_.trace_dir = dir_.string();
    config_.rank = 3;
    config_.log_level = LogLevel::Error;  // keep test output quiet
  }
  void TearDown() override { fs::remove_all(dir_); }

  store::RankRecords read_back(const std::string& path) {
    store::File f = store::File::open(path);
    EXPECT_EQ(f.root().attr_string("file_kind"), "trace");
    store::Group ranks = f.root().open_group("ranks");
    EXPECT_EQ(ranks.children(), std::vector<std::string>{"r000003"});
    return store::read_rank(ranks.open_group("r000003"));
  }

  fs::path dir_;
  TracerConfig config_;
};
}  // namespace

TEST_F(TracerRankState, CountersUnavailableIsRecordedAndSaid) {
  RankState s(config_, std::make_unique<test_doubles::MissingCounterProvider>());
  EXPECT_FALSE(s.counters_available());
  s.regions().begin("solve");
  s.regions().end("solve");
  s.mpi().add(MpiFn::Allreduce, 2'000'000, 800, 800);
  std::string path = write_rank_file(dir_.string(), s.snapshot(true, 0, true));
  EXPECT_EQ(path, rank_file_path(dir_.string(), 3, getpid()));
  auto rec = read_back(path);
  EXPECT_EQ(rec.info.rank, 3);
  EXPECT_EQ(rec.info.pid, getpid());
  EXPECT_EQ(rec.info.counters_available, 0);
  EXPECT_EQ(rec.info.complete, 1);
  EXPECT_EQ(rec.info.exit_status, 0);
  EXPECT_GT(rec.info.max_rss_kib, 0);
  EXPECT_GE(rec.info.voluntary_ctxsw, 0);
  EXPECT_GT(rec.info.wall_s, 0);
  ASSERT_EQ(rec.regions.size(), 1u);
  EXPECT_TRUE(std::isnan(rec.regions[0].hw_instructions));
  ASSERT_EQ(rec.mpi.size(), 1u);
  EXPECT_EQ(rec.names.at(static_cast<std::size_t>(rec.mpi[0].name_id)), "MPI_Allreduce");
  EXPECT_EQ(rec.mpi[0].bytes_sent, 800);
  EXPECT_NEAR(rec.mpi[0].time_s, 0.002, 1e-12);
  bool said = false;
  for (const auto& l : rec.log) said |= l.find("counters unavailable: perf_event_open") != std::string::npos;
  EXPECT_TRUE(said);
  // No temp file left behind.
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().filename().string()[0], 'r');
}

TEST_F(TracerRankState, CountersAvailableFromATestDouble) {
  RankState s(config_, std::make_unique<test_doubles::StepCounterProvider>());
  ASSERT_TRUE(s.counters_available());
  s.regions().begin("kernel");
  s.regions().end("kernel");
  auto rec = read_back(write_rank_file(dir_.string(), s.snapshot(true, 0, true)));
  EXPECT_EQ(rec.info.counters_available, 1);
  ASSERT_EQ(rec.regions.size(), 1u);
  EXPECT_DOUBLE_EQ(rec.regions[0].hw_instructions, 1000.0);
  EXPECT_DOUBLE_EQ(rec.regions[0].hw_fp64_ops, 8.0);
  bool said = false;
  for (const auto& l : rec.log) said |= l.find("counters available: step-double") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(TracerRankState, KernelsAreNumberedPerNameInLaunchOrder) {
  RankState s(config_, nullptr);
  std::vector<GpuKernel> ks(4);
  const char* names[] = {"b", "a", "b", "a"};
  std::int64_t corr[] = {40, 10, 20, 30};  // delivered out of order
  for (int i = 0; i < 4; ++i) {
    ks[i].names = std::make_shared<const KernelName>(KernelName{names[i], names[i]});
    ks[i].row.correlation_id = corr[i];
  }
  s.add_kernels(ks);
  // One range per launch, in launch order (a b a b), named after the kernel.
  std::vector<MetricRange> ranges(4);
  const char* in_order[] = {"a", "b", "a", "b"};
  for (int i = 0; i < 4; ++i) {
    ranges[i].name = in_order[i];
    clear_metrics(ranges[i].metrics);
    ranges[i].metrics.flops_fp64 = 10 + i;
  }
  s.add_metric_ranges(ranges);
  auto rec = s.snapshot(true, 0, true);
  ASSERT_EQ(rec.kernels.size(), 4u);
  std::vector<std::pair<std::string, std::int64_t>> got;
  for (const auto& k : rec.kernels) got.emplace_back(rec.names.at(static_cast<std::size_t>(k.name_id)), k.launch_index);
  std::vector<std::pair<std::string, std::int64_t>> want = {{"a", 0}, {"b", 0}, {"a", 1}, {"b", 1}};
  EXPECT_EQ(got, want);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(rec.kernels[i].has_metrics, 1);
    EXPECT_DOUBLE_EQ(rec.kernels[i].flops_fp64, 10 + i);
    EXPECT_STREQ(rec.kernels[i].metrics_provenance, "whole device");
  }
  EXPECT_EQ(rec.info.metrics_unmatched_launches, 0);
  EXPECT_EQ(rec.info.metrics_unmatched_ranges, 0);
}

TEST_F(TracerRankState, AnIncompleteKernelRecordIsSkippedButKeepsItsPlaceInLaunchOrder) {
  RankState s(config_, nullptr);
  std::vector<GpuKernel> ks(3);
  for (int i = 0; i < 3; ++i) {
    ks[i].names = std::make_shared<const KernelName>(KernelName{"k", "k"});
    ks[i].row.correlation_id = 10 * (i + 1);
    ks[i].row.start_ns = 100 * (i + 1);
    ks[i].row.end_ns = 100 * (i + 1) + 50;
  }
  ks[1].row.end_ns = 0;  // what a forced flush hands back for an unfinished kernel
  ks[1].incomplete = true;
  s.add_kernels(ks);
  std::vector<MetricRange> ranges(3);
  for (int i = 0; i < 3; ++i) {
    ranges[i].name = "k";
    clear_metrics(ranges[i].metrics);
  }
  ranges[2].metrics.flops_fp64 = 7;  // range 2 = the third launch, after the skipped one
  s.add_metric_ranges(ranges);
  auto rec = s.snapshot(true, 0, true);
  ASSERT_EQ(rec.kernels.size(), 2u);
  EXPECT_EQ(rec.kernels[0].correlation_id, 10);
  EXPECT_EQ(rec.kernels[0].launch_index, 0);
  EXPECT_EQ(rec.kernels[1].correlation_id, 30);
  EXPECT_EQ(rec.kernels[1].launch_index, 2);  // the skipped launch still counts
  EXPECT_EQ(rec.kernels[1].has_metrics, 1);
  EXPECT_DOUBLE_EQ(rec.kernels[1].flops_fp64, 7);
}

TEST_F(TracerRankState, AnExistingFileIsReplacedWhole) {
  RankState s(config_, nullptr);
  auto first = write_rank_file(dir_.string(), s.snapshot(true, 0, true));
  s.regions().begin("later");
  s.regions().end("later");
  auto second = write_rank_file(dir_.string(), s.snapshot(false, -1, false));
  EXPECT_EQ(first, second);
  auto rec = read_back(second);
  EXPECT_EQ(rec.info.complete, 0);
  EXPECT_EQ(rec.regions.size(), 1u);
}

TEST(TracerStringPacking, RoundTripsAndRejectsTruncation) {
  std::string buf;
  pack_strings({"a", "", "long string"}, buf);
  pack_strings({}, buf);
  std::size_t pos = 0;
  EXPECT_EQ(unpack_strings(buf, pos), (std::vector<std::string>{"a", "", "long string"}));
  EXPECT_TRUE(unpack_strings(buf, pos).empty());
  EXPECT_EQ(pos, buf.size());
  std::string cut = buf.substr(0, 12);
  pos = 0;
  EXPECT_THROW(unpack_strings(cut, pos), std::runtime_error);
}

TEST_F(TracerRankState, RecordsPackAndUnpackWhole) {
  RankState s(config_, nullptr);
  s.regions().begin("r");
  s.regions().end("r");
  s.mpi().add(MpiFn::Send, 10, 80, 0);
  auto rec = s.snapshot(true, 0, true);
  auto back = unpack_records(pack_records(rec));
  EXPECT_EQ(back.names, rec.names);
  EXPECT_EQ(back.log, rec.log);
  ASSERT_EQ(back.regions.size(), 1u);
  EXPECT_EQ(back.regions[0].calls, 1);
  ASSERT_EQ(back.mpi.size(), 1u);
  EXPECT_EQ(back.mpi[0].bytes_sent, 80);
  EXPECT_EQ(back.info.pid, rec.info.pid);
  // What the libraries chose at run time (here: glibc's CPU features and
  // string-function variants) travels with the records too.
  ASSERT_EQ(back.dispatch.size(), rec.dispatch.size());
#if defined(__x86_64__) && __GLIBC__ == 2 && __GLIBC_MINOR__ >= 33
  bool hwcaps = false;
  for (const auto& d : back.dispatch)
    hwcaps |= rtrace::store::get_str(d.library) == "glibc" && rtrace::store::get_str(d.item) == "hwcaps";
  EXPECT_TRUE(hwcaps);
#endif
  std::string cut = pack_records(rec);
  cut.resize(cut.size() / 2);
  EXPECT_THROW(unpack_records(cut), std::runtime_error);
}

// Issue 31: a kernel's activity-record name is shared by all its records
// (cupti_activity.h), so it is demangled and copied once per kernel, not per
// record; a reused address with another text is a new kernel.
TEST(TracerKernelNames, OneDemanglingPerKernelNameThePointerOnlyAHint) {
  KernelNameCache cache;
  char triad[] = "_Z10fake_triadPdPKdS1_dl";
  const auto a = cache.lookup(triad);
  const auto b = cache.lookup(triad);
  EXPECT_EQ(a.get(), b.get());  // the same object: no copy per record
  EXPECT_EQ(a->demangled, "fake_triad(double*, double const*, double const*, double, long)");
  EXPECT_EQ(a->raw, triad);
  EXPECT_EQ(cache.demanglings(), 1u);
  std::strcpy(triad, "_Z4stenPd");  // the same address, another kernel
  const auto c = cache.lookup(triad);
  EXPECT_EQ(c->demangled, "sten(double*)");
  EXPECT_EQ(a->demangled, "fake_triad(double*, double const*, double const*, double, long)");  // earlier records keep theirs
  EXPECT_EQ(cache.demanglings(), 2u);
  EXPECT_EQ(cache.lookup(nullptr)->demangled, "<unknown>");
}
