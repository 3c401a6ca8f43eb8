// The sm_90a warpgroup-MMA kernel (gpu_wgmma.cu): experimental, opt-in.
#pragma once

#include <cuda_runtime.h>

namespace rtrace::ert {

// wgmma.m64n256k16 per warpgroup and loop iteration.
constexpr int kWgmmaPerIteration = 4;
// FLOPs per warp and iteration: 4 MMAs x 2*64*256*16 per warpgroup of 4 warps.
constexpr int kWgmmaFp16FlopsPerWarp = kWgmmaPerIteration * 2 * 64 * 256 * 16 / 4;

// Warps per SM the runner plans: two warpgroups, so one's wait overlaps the other's MMAs.
constexpr int kWgmmaWarpsPerSm = 8;

// Launches `blocks` warpgroups (128 threads each); out holds blocks*128 floats.
// cudaErrorNoKernelImageForDevice on anything but compute capability 9.0.
cudaError_t launch_wgmma_fp16(float* out, int blocks, long long iters, cudaStream_t stream);

}  // namespace rtrace::ert
