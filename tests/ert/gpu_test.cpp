// GPU pieces that run without a GPU: driver detection and SM snapping.
#include "rtrace/ert/gpu.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <string>

using namespace rtrace::ert;

TEST(SnapSmCount, MultiplesOfTheGranularityWithinTheDevice) {
  // Hopper: at least 8 SMs, multiples of 8, 132 in total.
  EXPECT_EQ(snap_sm_count(5, 132, 8, 8), 8);
  EXPECT_EQ(snap_sm_count(8, 132, 8, 8), 8);
  EXPECT_EQ(snap_sm_count(11, 132, 8, 8), 8);
  EXPECT_EQ(snap_sm_count(12, 132, 8, 8), 16);  // ties round up
  EXPECT_EQ(snap_sm_count(32, 132, 8, 8), 32);
  EXPECT_EQ(snap_sm_count(130, 132, 8, 8), 128);  // whole groups of 8 below the full device
  EXPECT_EQ(snap_sm_count(132, 132, 8, 8), 132);  // the full device
  EXPECT_EQ(snap_sm_count(500, 132, 8, 8), 132);
  // Ampere: minimum 2, multiples of 2.
  EXPECT_EQ(snap_sm_count(1, 108, 2, 2), 2);
  EXPECT_EQ(snap_sm_count(7, 108, 2, 2), 8);
  EXPECT_EQ(snap_sm_count(4, 0, 8, 8), 0);
}

TEST(RequireGpu, NoDriverMeansNoGpuFound) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib) {
    dlclose(lib);
    GTEST_SKIP() << "a CUDA driver is installed here";
  }
  try {
    require_gpu();
    FAIL() << "require_gpu() must throw without libcuda.so.1";
  } catch (const GpuUnavailable& e) {
    EXPECT_STREQ(e.what(), "no GPU found (libcuda.so.1 not loadable)");
  }
}

// `rtrace ert --list-gpus` prints this line per device; validate.sh and the
// sbatch script parse its keys, so they are fixed here.
TEST(GpuList, OneKeyValueLinePerDeviceWithStableKeys) {
  rtrace::ert::GpuDeviceInfo h100;
  h100.row.index = 0;
  rtrace::store::set_str(h100.row.name, "NVIDIA H100 80GB HBM3");
  h100.row.cc_major = 9;
  h100.row.cc_minor = 0;
  h100.row.sm_count = 132;
  h100.row.l2_bytes = 50 * 1048576LL;
  h100.row.memory_bytes = 85045166080LL;
  h100.row.sm_clock_khz = 1980000;
  h100.row.memory_clock_khz = 2619000;
  h100.row.memory_bus_bits = 5120;
  h100.row.spec_bandwidth_gbs = 2.0 * 2619000e3 * 5120 / 8 / 1e9;
  h100.driver_version = 13000;
  h100.sm_partition_min = 8;
  h100.sm_partition_align = 8;
  rtrace::ert::GpuDeviceInfo unknown = h100;
  unknown.row.index = 1;
  unknown.row.sm_clock_khz = std::nan("");
  unknown.row.spec_bandwidth_gbs = std::nan("");
  unknown.sm_partition_min = unknown.sm_partition_align = -1;
  EXPECT_EQ(rtrace::ert::format_gpu_list({h100, unknown}),
            "gpu=0 name=\"NVIDIA H100 80GB HBM3\" sms=132 cc=9.0 sm_clock_mhz=1980 memory_clock_mhz=2619 "
            "memory_bus_bits=5120 memory_gib=79.2 l2_mib=50.0 spec_bandwidth_gbs=3352.3 sm_partition_min=8 "
            "sm_partition_align=8 driver_cuda=13.0\n"
            "gpu=1 name=\"NVIDIA H100 80GB HBM3\" sms=132 cc=9.0 sm_clock_mhz=unknown memory_clock_mhz=2619 "
            "memory_bus_bits=5120 memory_gib=79.2 l2_mib=50.0 spec_bandwidth_gbs=unknown sm_partition_min=-1 "
            "sm_partition_align=-1 driver_cuda=13.0\n");
}

TEST(GpuList, WithoutADriverItSaysNoGpuFound) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "a CUDA driver is installed here";
  }
  try {
    rtrace::ert::list_gpus();
    FAIL() << "list_gpus() returned without a driver";
  } catch (const rtrace::ert::GpuUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU found"), std::string::npos) << e.what();
  }
}
