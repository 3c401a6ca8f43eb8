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
  h100.compute_mode = 3;
  rtrace::ert::GpuDeviceInfo unknown = h100;
  unknown.compute_mode = -1;
  unknown.row.index = 1;
  unknown.row.sm_clock_khz = std::nan("");
  unknown.row.spec_bandwidth_gbs = std::nan("");
  unknown.sm_partition_min = unknown.sm_partition_align = -1;
  EXPECT_EQ(rtrace::ert::format_gpu_list({h100, unknown}),
            "gpu=0 name=\"NVIDIA H100 80GB HBM3\" sms=132 cc=9.0 sm_clock_mhz=1980 memory_clock_mhz=2619 "
            "memory_bus_bits=5120 memory_gib=79.2 l2_mib=50.0 spec_bandwidth_gbs=3352.3 sm_partition_min=8 "
            "sm_partition_align=8 driver_cuda=13.0 compute_mode=EXCLUSIVE_PROCESS\n"
            "gpu=1 name=\"NVIDIA H100 80GB HBM3\" sms=132 cc=9.0 sm_clock_mhz=unknown memory_clock_mhz=2619 "
            "memory_bus_bits=5120 memory_gib=79.2 l2_mib=50.0 spec_bandwidth_gbs=unknown sm_partition_min=-1 "
            "sm_partition_align=-1 driver_cuda=13.0 compute_mode=unknown\n");
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

// ---- the GPU kernels' accounting, on the CPU (issue 22: Hopper ceilings)

#include "gpu_kernel_layout.hpp"
#include "rtrace/ert/kernel_spec.hpp"

#include <vector>

namespace {

// The walk of one block's chunk exactly as the FMA, half2 and bandwidth
// kernels do it (gpu_runner.cu): whole rounds of `chains` elements per
// thread, then the rest one at a time. Returns how often each element is visited.
std::vector<int> visits(std::size_t chunk, std::size_t threads, int chains) {
  namespace L = rtrace::ert::layout;
  std::vector<int> seen(chunk, 0);
  for (std::size_t t = 0; t < threads; ++t) {
    std::size_t base = t;
    for (; L::whole_round(base, threads, chains, chunk); base += L::round_step(threads, chains))
      for (int c = 0; c < chains; ++c) ++seen.at(L::chain_element(base, threads, c));
    for (std::size_t i = base; i < chunk; i += threads) ++seen.at(i);
  }
  return seen;
}

}  // namespace

TEST(GpuKernelLayout, IndependentChainsVisitEveryElementOnceSoFlopsPerElementHold) {
  namespace L = rtrace::ert::layout;
  // Chunks as the runner makes them (multiples of 256 split over 1..8 blocks
  // per SM), odd ones, and ones smaller than a round.
  for (std::size_t chunk : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(255), std::size_t(256),
                            std::size_t(768 / 5), std::size_t(1023), std::size_t(4096), std::size_t(65536 / 3)})
    for (int chains : {L::kFmaChains, L::kStreamLoads, 1})
      for (std::size_t threads : {std::size_t(32), std::size_t(256)}) {
        const auto seen = visits(chunk, threads, chains);
        for (std::size_t i = 0; i < chunk; ++i)
          ASSERT_EQ(seen[i], 1) << "element " << i << " of " << chunk << ", " << chains << " chains, " << threads
                                << " threads";
      }
}

TEST(GpuKernelLayout, TheBandwidthKernelsPairsAndRestCoverTheChunk) {
  namespace L = rtrace::ert::layout;
  // ert_stream_kernel: chunk/2 double2 pairs walked with kStreamLoads in
  // flight, then the odd element; every double read and written once.
  for (std::size_t chunk : {std::size_t(1), std::size_t(2), std::size_t(153), std::size_t(4096), std::size_t(12345)}) {
    const std::size_t pairs = chunk / 2;
    std::vector<int> doubles(chunk, 0);
    const auto p = visits(pairs, 256, L::kStreamLoads);
    for (std::size_t i = 0; i < pairs; ++i) {
      doubles[2 * i] += p[i];
      doubles[2 * i + 1] += p[i];
    }
    for (std::size_t t = 0; t < 256; ++t)
      for (std::size_t i = 2 * pairs + t; i < chunk; i += 256) ++doubles[i];
    for (std::size_t i = 0; i < chunk; ++i) ASSERT_EQ(doubles[i], 1) << i << " of " << chunk;
  }
}

TEST(GpuTensorKernels, WgmmaIsTheFp16TensorCeilingOnHopperAndMmaSyncItsOwn) {
  using namespace rtrace::ert;
  auto names = [](const std::vector<GpuTensorKernel>& ks) {
    std::vector<std::string> out;
    for (const auto& k : ks) out.push_back(compute_ceiling_name(k.spec.precision, k.spec.variant));
    return out;
  };
  const auto h100 = gpu_tensor_kernels(9, 0, /*have_wgmma=*/true, /*use_wgmma=*/true);
  EXPECT_EQ(names(h100), (std::vector<std::string>{"TC FP16->FP32", "TC FP16->FP32 mma.sync", "TC FP64"}));
  EXPECT_TRUE(h100[0].wgmma);
  EXPECT_EQ(h100[0].spec.flops_per_element, kGpuWgmmaFp16FlopsPerWarp);
  EXPECT_EQ(to_string(h100[1].spec.variant), std::string("mma.sync"));
  // Opted out, or built without the sm_90a kernel: mma.sync is the ceiling.
  for (const auto& ks : {gpu_tensor_kernels(9, 0, true, false), gpu_tensor_kernels(9, 0, false, true)}) {
    EXPECT_EQ(names(ks), (std::vector<std::string>{"TC FP16->FP32", "TC FP64"}));
    EXPECT_FALSE(ks[0].wgmma);
  }
  EXPECT_EQ(names(gpu_tensor_kernels(8, 0, true, true)), (std::vector<std::string>{"TC FP16->FP32", "TC FP64"}));
  EXPECT_EQ(names(gpu_tensor_kernels(9, 0, true, true)).size(), 3u);
  EXPECT_EQ(names(gpu_tensor_kernels(10, 0, true, true)), (std::vector<std::string>{"TC FP16->FP32", "TC FP64"}));
  EXPECT_EQ(names(gpu_tensor_kernels(7, 0, true, true)), (std::vector<std::string>{"TC FP16->FP32"}));
  EXPECT_TRUE(gpu_tensor_kernels(6, 1, true, true).empty());
}

TEST(GpuTensorKernels, FlopsPerWarpAreTwiceTheMultiplyAccumulatesOfEveryMma) {
  using namespace rtrace::ert;
  // m64n256k16 per warpgroup of 4 warps, 4 per iteration: 2*64*256*16 FLOPs each.
  EXPECT_EQ(kGpuWgmmaFp16FlopsPerWarp, 4 * 2 * 64 * 256 * 16 / 4);
  EXPECT_EQ(kGpuWmmaFp16FlopsPerWarp, 4 * 2 * 16 * 16 * 16);
  EXPECT_EQ(kGpuDmmaFp64FlopsPerWarp, 4 * 2 * 8 * 8 * 4);
  // A sample of W warps and T iterations: F x W x T FLOPs, no bytes.
  const auto c = sample_cost({Precision::FP16, Variant::Mma, kGpuWgmmaFp16FlopsPerWarp}, 132 * 8, 1000);
  EXPECT_DOUBLE_EQ(c.flops, double(kGpuWgmmaFp16FlopsPerWarp) * 132 * 8 * 1000);
  EXPECT_DOUBLE_EQ(c.bytes, 0);
  EXPECT_DOUBLE_EQ(sample_cost({Precision::FP16, Variant::MmaSync, kGpuWmmaFp16FlopsPerWarp}, 10, 10).bytes, 0);
  // The FMA kernels' chains change nothing in their accounting: F and 2 x sizeof(T) per element.
  EXPECT_DOUBLE_EQ(sample_cost({Precision::FP32, Variant::Fma, 64}, 1000, 3).flops, 64.0 * 1000 * 3);
  EXPECT_DOUBLE_EQ(sample_cost({Precision::FP64, Variant::Fma, 1}, 1000, 3).bytes, 16.0 * 1000 * 3);
}

// Issue 31, item 4: the bandwidth series ran ert_kernel<double, true, 1> (one
// 8-byte load per thread in flight); the 16-byte-load stream kernel was never
// launched. The runner dispatches through gpu_kernel_family.
#include "gpu_dispatch.hpp"

TEST(GpuKernelDispatch, TheBandwidthSeriesRunsTheSixteenByteStreamKernel) {
  const Measurement bw{Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, 4096};
  EXPECT_EQ(gpu_kernel_family(bw, false), GpuKernelFamily::Stream);
  EXPECT_EQ(gpu_kernel_family(bw, true), GpuKernelFamily::Stream);
  // The same kernel spec as a FLOP measurement is the ERT kernel.
  EXPECT_EQ(gpu_kernel_family({Series::Flops, {Precision::FP64, Variant::Fma, 1}, 4096}, false), GpuKernelFamily::Ert);
  // A bandwidth series the stream kernel cannot run is an error, not another kernel.
  EXPECT_THROW(gpu_kernel_family({Series::Bandwidth, {Precision::FP32, Variant::Fma, 1}, 4096}, false), GpuError);
  EXPECT_THROW(gpu_kernel_family({Series::Bandwidth, {Precision::FP64, Variant::Fma, 8}, 4096}, false), GpuError);
}

TEST(GpuKernelDispatch, EveryPlannedComputeKernelHasItsFamily) {
  EXPECT_EQ(gpu_kernel_family({Series::Flops, {Precision::FP32, Variant::NoFma, 64}, 1}, false), GpuKernelFamily::Ert);
  EXPECT_EQ(gpu_kernel_family({Series::Flops, {Precision::FP16, Variant::Half2, 64}, 1}, false), GpuKernelFamily::Half2);
  for (bool wgmma : {false, true})
    for (const GpuTensorKernel& t : gpu_tensor_kernels(9, 0, wgmma, true)) {
      const GpuKernelFamily f = gpu_kernel_family({Series::Flops, t.spec, t.warps_per_sm}, wgmma);
      if (t.spec.precision == Precision::FP64) EXPECT_EQ(f, GpuKernelFamily::Dmma);
      else EXPECT_EQ(f, t.wgmma ? GpuKernelFamily::Wgmma : GpuKernelFamily::Wmma) << to_string(t.spec.variant);
    }
  EXPECT_THROW(gpu_kernel_family({Series::Flops, {Precision::FP32, Variant::Mma, 8192}, 1}, false), GpuError);
  EXPECT_THROW(gpu_kernel_family({Series::Flops, {Precision::FP16, Variant::Fma, 8}, 1}, false), GpuError);
}
