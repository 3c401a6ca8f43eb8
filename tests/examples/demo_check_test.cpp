// rtrace-demo-check (used by tests/gpu/validate.sh) on synthetic tracer files
// with known kernel metrics: pass, FLOP and DRAM mismatches, missing metrics.
#include "rtrace/store/run_file.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace rtrace::store;

int run_check(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  std::string prog = RTRACE_DEMO_CHECK;
  argv.push_back(prog.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execv(prog.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class DemoCheck : public ::testing::Test {
 protected:
  std::string dir_;
  void SetUp() override {
    char tmpl[] = "/tmp/rtrace-demo-check-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/expect.tsv") << "# symbol\tregion\tlaunches\tflops_executed\tflops_exact\tdram_bytes\n"
                                        << "rtd_triad_k\ttriad\t2\t2000\t1\t24000\n";
  }
  void TearDown() override {
    std::remove((dir_ + "/expect.tsv").c_str());
    std::remove((dir_ + "/trace.h5").c_str());
    rmdir(dir_.c_str());
  }
  // Two triad launches (mangled name) plus an init kernel that must not count.
  void write_trace(double flops_each, double dram_each, bool metrics) {
    File f = File::create(dir_ + "/trace.h5", true);
    write_root_attributes(f.root(), "trace", "demo_check_test");
    Group ranks = f.root().create_group("ranks");
    RankRecords rec;
    rec.info.rank = 0;
    std::snprintf(rec.info.tracer_mode, sizeof rec.info.tracer_mode, "%s", "cuda-metrics");
    rec.names = {"_Z11rtd_triad_kPdPKdS1_ld", "rtd_triad_init_k(double*, double*, double*, long)"};
    for (int i = 0; i < 3; ++i) {
      KernelRow k{};
      k.name_id = i == 0 ? 1 : 0;
      k.launch_index = i == 0 ? 0 : i - 1;
      k.start_ns = 1000 * i;
      k.end_ns = 1000 * i + 500;
      k.has_metrics = metrics ? 1 : 0;
      k.flops_fp64 = i == 0 ? 5e9 : flops_each;
      k.bytes_dram_read = (i == 0 ? 5e9 : dram_each) * 2.0 / 3.0;
      k.bytes_dram_write = (i == 0 ? 5e9 : dram_each) / 3.0;
      rec.kernels.push_back(k);
    }
    write_rank(ranks, rec);
    f.close();
  }
  int check() {
    return run_check({"kernels", dir_ + "/trace.h5", "--expect", dir_ + "/expect.tsv", "--dram-check", "rtd_triad_k"});
  }
};

TEST_F(DemoCheck, MatchingMetricsPass) {
  write_trace(1000.0 * 1.005, 12000.0 * 1.08, true);  // within 1% and 10%
  EXPECT_EQ(check(), 0);
}

TEST_F(DemoCheck, FlopMismatchFails) {
  write_trace(1000.0 * 1.05, 12000.0, true);
  EXPECT_EQ(check(), 1);
}

TEST_F(DemoCheck, DramMismatchFails) {
  write_trace(1000.0, 12000.0 * 1.2, true);
  EXPECT_EQ(check(), 1);
}

TEST_F(DemoCheck, NoMetricsIsReported) {
  write_trace(1000.0, 12000.0, false);
  EXPECT_EQ(check(), 3);
}

// Tensor rows compare 2 x tensor_ops (math ops = multiply-accumulates) with
// the analytic FLOPs; fp16 rows compare flops_fp16; fp64 is NaN there.
TEST_F(DemoCheck, TensorAndFp16RowsReadTheirOwnCounters) {
  File f = File::create(dir_ + "/trace.h5", true);
  write_root_attributes(f.root(), "trace", "demo_check_test");
  Group ranks = f.root().create_group("ranks");
  RankRecords rec;
  rec.info.rank = 0;
  rec.names = {"rtd_fma_wmma_fp16_k(__half const*, float*)", "rtd_fma_half2_k(__half2*, long, __half2, __half2)"};
  for (int i = 0; i < 2; ++i) {
    KernelRow k{};
    k.name_id = i;
    k.has_metrics = 1;
    k.flops_fp64 = k.flops_fp32 = std::nan("");
    k.tensor_ops = i == 0 ? 4096.0 : std::nan("");
    k.flops_fp16 = i == 0 ? std::nan("") : 1000.0;
    rec.kernels.push_back(k);
  }
  write_rank(ranks, rec);
  f.close();
  auto expect_rows = [&](double tensor_flops, double fp16_flops) {
    std::ofstream(dir_ + "/expect.tsv") << "rtd_fma_wmma_fp16_k\tfma-wmma-fp16\t1\t" << tensor_flops << "\t1\t0\ttensor\n"
                                        << "rtd_fma_half2_k\tfma-half2\t1\t" << fp16_flops << "\t1\t0\tfp16\n";
    return run_check({"kernels", dir_ + "/trace.h5", "--expect", dir_ + "/expect.tsv"});
  };
  EXPECT_EQ(expect_rows(8192.0, 1000.0), 0);
  EXPECT_EQ(expect_rows(4096.0, 1000.0), 1);  // tensor FLOPs are 2 x math ops, not 1 x
  EXPECT_EQ(expect_rows(8192.0, 2000.0), 1);  // an HFMA2 miscount shows as a factor 2
  std::ofstream(dir_ + "/expect.tsv") << "rtd_fma_half2_k\tfma-half2\t1\t1000\t1\t0\tfp8\n";
  EXPECT_EQ(run_check({"kernels", dir_ + "/trace.h5", "--expect", dir_ + "/expect.tsv"}), 2);
}

// Issue 31: tensor-fp16 / tensor-fp64 rows read only their source type's
// column, so a DMMA kernel whose ops were counted as FP16 fails.
TEST_F(DemoCheck, TensorRowsOfASourceTypeReadOnlyThatTypesColumn) {
  File f = File::create(dir_ + "/trace.h5", true);
  write_root_attributes(f.root(), "trace", "demo_check_test");
  Group ranks = f.root().create_group("ranks");
  RankRecords rec;
  rec.info.rank = 0;
  rec.names = {"rtd_fma_dmma_fp64_k(double const*, double*)"};
  KernelRow k{};
  k.has_metrics = 1;
  k.flops_fp64 = k.flops_fp32 = k.flops_fp16 = std::nan("");
  k.tensor_ops = k.tensor_ops_fp64 = 256.0;
  k.tensor_ops_fp16 = k.tensor_ops_bf16 = k.tensor_ops_tf32 = k.tensor_ops_fp8 = std::nan("");
  rec.kernels.push_back(k);
  write_rank(ranks, rec);
  f.close();
  auto expect_row = [&](const char* counter) {
    std::ofstream(dir_ + "/expect.tsv") << "rtd_fma_dmma_fp64_k	fma-dmma-fp64	1	512	1	0	" << counter << "\n";
    return run_check({"kernels", dir_ + "/trace.h5", "--expect", dir_ + "/expect.tsv"});
  };
  EXPECT_EQ(expect_row("tensor-fp64"), 0);
  EXPECT_EQ(expect_row("tensor"), 0);
  EXPECT_EQ(expect_row("tensor-fp16"), 1);  // its ops are FP64's, not FP16's
}

TEST_F(DemoCheck, BadUsageExits2) {
  EXPECT_EQ(run_check({"kernels", dir_ + "/missing.h5", "--expect", dir_ + "/expect.tsv"}), 2);
  EXPECT_EQ(run_check({"frobnicate"}), 2);
}

}  // namespace
