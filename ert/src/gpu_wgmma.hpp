// The sm_90a warpgroup-MMA kernel (gpu_wgmma.cu): the FP16 tensor ceiling on compute capability 9.0.
#pragma once

#include <cuda_runtime.h>

#include "rtrace/ert/kernel_spec.hpp"

namespace rtrace::ert {

// wgmma.m64n256k16 per warpgroup and loop iteration; the FLOP accounting
// (kGpuWgmmaFp16FlopsPerWarp) is in kernel_spec.hpp, where it is unit-tested.
constexpr int kWgmmaPerIteration = kGpuWgmmaPerIteration;

// Launches `blocks` warpgroups (128 threads each); out holds blocks*128 floats.
// cudaErrorNoKernelImageForDevice on anything but compute capability 9.0.
cudaError_t launch_wgmma_fp16(float* out, int blocks, long long iters, cudaStream_t stream);

}  // namespace rtrace::ert
