// GPU pieces that run without a GPU: driver detection and SM snapping.
#include "rtrace/ert/gpu.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

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
