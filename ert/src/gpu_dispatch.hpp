// Which CUDA kernel measures each planned GPU measurement: the dispatch of
// gpu_runner.cu, kept in host code so that a CPU test can check it
// (tests/ert/gpu_test.cpp). The bandwidth series must run the 16-byte-load
// stream kernel: the FP64 F=1 ERT kernel with 8-byte loads keeps too few
// requests in flight for H100/H200 HBM (issue 31, item 4).
#pragma once

#include "rtrace/ert/sweep.hpp"

namespace rtrace::ert {

enum class GpuKernelFamily {
  Stream,  // ert_stream_kernel: FP64 a[i] += alpha, 16-byte loads, kStreamLoads in flight
  Ert,     // ert_kernel<T, Fma, F>: FP64/FP32 FMA and no-FMA
  Half2,   // ert_half2_kernel<F>
  Wmma,    // mma.sync FP16 -> FP32 (WMMA)
  Wgmma,   // the sm_90a warpgroup kernel (gpu_wgmma.cu)
  Dmma,    // mma.sync FP64 (DMMA)
};
const char* to_string(GpuKernelFamily f) noexcept;

// `wgmma_planned`: the runner planned the wgmma kernel (compute capability
// 9.0, built with it, not opted out). Throws GpuError for a measurement no
// kernel implements (a bandwidth series other than FP64 F=1, FP16 other than
// half2 or a tensor variant, FP32 tensor cores).
GpuKernelFamily gpu_kernel_family(const Measurement& m, bool wgmma_planned);

}  // namespace rtrace::ert
