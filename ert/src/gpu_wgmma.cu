// The Hopper FP16 tensor peak: warpgroup MMA (wgmma.mma_async, sm_90a only).
//
// The FP16 tensor ceiling on compute capability 9.0, by default (issue 22;
// RTRACE_ERT_WGMMA=0 leaves it out). Written and compiled without a GPU and
// not yet run on one: tests/gpu/validate.sh compares it with the spec.
// mma.sync (the WMMA kernel of gpu_runner.cu) reaches only part of an H100's
// dense FP16 peak; cuBLAS uses wgmma, so its kernels would plot above a
// WMMA-only roof (issue 13, finding 8); mma.sync stays its own ceiling. This object is compiled
// for sm_90a alone (ert/CMakeLists.txt): other devices have no image of it
// and the runner never plans it there.
//
// One warpgroup (4 warps, 128 threads) per block, three blocks per SM, runs a chain of
// m64n256k16 FP16 x FP16 -> FP32 MMAs on A (64x16) and B (16x256) tiles in
// shared memory, no swizzle, K-major, core matrices (8 rows x 16 bytes)
// packed: leading-dimension offset 128 B (K), stride offset 256 B (M/N).
// Whatever the hardware's reading of those offsets, every address stays in
// the 2 KiB / 8 KiB tiles. The values are not checked: this is a rate.
#include "gpu_wgmma.hpp"

#include <cuda_fp16.h>

#include <cstdint>

namespace rtrace::ert {

namespace {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ std::uint64_t smem_descriptor(const void* tile) {
  const auto addr = static_cast<std::uint64_t>(__cvta_generic_to_shared(tile));
  std::uint64_t d = 0;
  d |= (addr & 0x3FFFF) >> 4;            // bits 0-13: start address / 16
  d |= std::uint64_t(128 >> 4) << 16;    // bits 16-29: leading-dimension byte offset / 16
  d |= std::uint64_t(256 >> 4) << 32;    // bits 32-45: stride-dimension byte offset / 16
  return d;                              // base offset 0, swizzle mode 0 (none)
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}
#endif

__global__ void __launch_bounds__(128, 3) wgmma_fp16_kernel(float* out, long long iters) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(1024) __half a[64 * 16];
  __shared__ __align__(1024) __half b[256 * 16];
  for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x) a[i] = __float2half(0.001f * float(i % 7));
  for (int i = threadIdx.x; i < 256 * 16; i += blockDim.x) b[i] = __float2half(0.001f * float(i % 5));
  // Generic-proxy stores must be visible to the async proxy that wgmma reads through.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const std::uint64_t desc_a = smem_descriptor(a), desc_b = smem_descriptor(b);
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  // One committed group of kWgmmaPerIteration MMAs stays in flight while the
  // next is issued (wait_group 1, as CUTLASS's sm90 main loops do: fence,
  // MMAs, commit, wait for all but the last group): waiting for 0 after every
  // group drained the tensor pipe between groups, which two warpgroups per SM
  // could not hide (issue 31; the runner now plans three). MMAs of one shape
  // on the same accumulator are ordered by the hardware.
  for (long long it = 0; it < iters; ++it) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int k = 0; k < kWgmmaPerIteration; ++k) wgmma_m64n256k16(d, desc_a, desc_b);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");  // before d is read
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += d[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the chain alive
#else
  (void)out;
  (void)iters;
#endif
}

}  // namespace

cudaError_t launch_wgmma_fp16(float* out, int blocks, long long iters, cudaStream_t stream) {
  wgmma_fp16_kernel<<<blocks, 128, 0, stream>>>(out, iters);
  return cudaGetLastError();
}

}  // namespace rtrace::ert
