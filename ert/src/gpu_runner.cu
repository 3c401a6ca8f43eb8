// The GPU ERT: CUDA versions of the ERT kernels (FP64/FP32 FMA and no-FMA,
// FP16 half2) plus tensor-core peaks (WMMA FP16->FP32, DMMA FP64 on cc >= 8.0),
// run on exactly N SMs through a green context, with a %smid probe that
// verifies how many SMs the kernels really ran on.
//
// Like the CPU side, each SM-resident block owns its own chunk of the array
// and loops over the trials inside the kernel, so a chunk that fits in L1 or
// L2 is re-read from there. Timing: CUDA events on the partition's stream.
#include "rtrace/ert/gpu.hpp"

#include "cuda_driver.hpp"
#include "gpu_dispatch.hpp"
#ifdef RTRACE_ERT_HAVE_WGMMA
#include "gpu_wgmma.hpp"
#endif
#include "gpu_kernel_layout.hpp"
#include "rtrace/ert/kernel_spec.hpp"
#include "rtrace/ert/sweep.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdlib>
#include <set>
#include <type_traits>
#include <string>
#include <vector>

namespace rtrace::ert {

namespace {

void check_rt(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw GpuError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// ------------------------------------------------------------------ kernels

template <class T>
__device__ __forceinline__ T fused(T a, T b, T c) { return fma(a, b, c); }
// Separate, never-contracted multiply and add (the _rn intrinsics are not fused).
__device__ __forceinline__ double separate(double a, double b, double c) { return __dadd_rn(__dmul_rn(a, b), c); }
__device__ __forceinline__ float separate(float a, float b, float c) { return __fadd_rn(__fmul_rn(a, b), c); }

// Every kernel walks its block's chunk as gpu_kernel_layout.hpp says:
// kFmaChains independent elements per thread per round (independent FMA
// chains, that many loads in flight), the F/2 multiply-adds of an element
// fully unrolled (F is a template parameter), so the only loop overhead is one
// per round of kFmaChains x F FLOPs, not per 16 FMAs of one dependent chain.
template <class T, bool Fma, int F>
__global__ void ert_kernel(T* __restrict__ a, size_t chunk, long long trials, T alpha) {
  namespace L = layout;
  T* mine = a + size_t(blockIdx.x) * chunk;
  const size_t threads = blockDim.x;
  for (long long t = 0; t < trials; ++t) {
    const T alpha_t = (t & 1) ? -alpha : alpha;
    size_t base = threadIdx.x;
    for (; L::whole_round(base, threads, L::kFmaChains, chunk); base += L::round_step(threads, L::kFmaChains)) {
      T x[L::kFmaChains], beta[L::kFmaChains];
#pragma unroll
      for (int c = 0; c < L::kFmaChains; ++c) {
        x[c] = mine[L::chain_element(base, threads, c)];
        beta[c] = T(0.8);
      }
      if constexpr (F == 1) {
#pragma unroll
        for (int c = 0; c < L::kFmaChains; ++c) beta[c] = x[c] + alpha_t;
      } else {
#pragma unroll
        for (int r = 0; r < F / 2; ++r)
#pragma unroll
          for (int c = 0; c < L::kFmaChains; ++c)
            beta[c] = Fma ? fused(beta[c], x[c], alpha_t) : separate(beta[c], x[c], alpha_t);
      }
#pragma unroll
      for (int c = 0; c < L::kFmaChains; ++c) mine[L::chain_element(base, threads, c)] = beta[c];
    }
    for (size_t i = base; i < chunk; i += threads) {  // the rest: one element at a time
      const T x = mine[i];
      T beta = T(0.8);
      if constexpr (F == 1) {
        beta = x + alpha_t;
      } else {
#pragma unroll
        for (int r = 0; r < F / 2; ++r) beta = Fma ? fused(beta, x, alpha_t) : separate(beta, x, alpha_t);
      }
      mine[i] = beta;
    }
  }
}

// The bandwidth kernel (FP64, F = 1: a[i] += alpha): 16-byte loads,
// kStreamLoads of them in flight per thread, so HBM sees enough outstanding
// requests per SM (one 8-byte load per thread is short of H100/H200 HBM).
// The same accounting as ert_kernel<double, *, 1>: 1 FLOP and 16 bytes per
// element. The bandwidth series runs it (gpu_kernel_family, gpu_dispatch.hpp).
__global__ void ert_stream_kernel(double* __restrict__ a, size_t chunk, long long trials, double alpha) {
  namespace L = layout;
  double* mine = a + size_t(blockIdx.x) * chunk;
  const bool aligned = (reinterpret_cast<uintptr_t>(mine) & 15) == 0;
  const size_t pairs = aligned ? chunk / 2 : 0;
  double2* v = reinterpret_cast<double2*>(mine);
  const size_t threads = blockDim.x;
  for (long long t = 0; t < trials; ++t) {
    const double alpha_t = (t & 1) ? -alpha : alpha;
    size_t base = threadIdx.x;
    for (; L::whole_round(base, threads, L::kStreamLoads, pairs); base += L::round_step(threads, L::kStreamLoads)) {
      double2 x[L::kStreamLoads];
#pragma unroll
      for (int c = 0; c < L::kStreamLoads; ++c) x[c] = v[L::chain_element(base, threads, c)];
#pragma unroll
      for (int c = 0; c < L::kStreamLoads; ++c) {
        x[c].x += alpha_t;
        x[c].y += alpha_t;
        v[L::chain_element(base, threads, c)] = x[c];
      }
    }
    for (size_t i = base; i < pairs; i += threads) {
      double2 x = v[i];
      x.x += alpha_t;
      x.y += alpha_t;
      v[i] = x;
    }
    for (size_t i = 2 * pairs + threadIdx.x; i < chunk; i += threads) mine[i] += alpha_t;  // odd or unaligned rest
  }
}

// FP16: two halves per __half2; `chunk` counts half2 pairs. Chains as ert_kernel.
template <int F>
__global__ void ert_half2_kernel(__half2* __restrict__ a, size_t chunk, long long trials, float alpha) {
  namespace L = layout;
  __half2* mine = a + size_t(blockIdx.x) * chunk;
  const __half2 plus = __float2half2_rn(alpha);
  const __half2 minus = __float2half2_rn(-alpha);
  const size_t threads = blockDim.x;
  for (long long t = 0; t < trials; ++t) {
    const __half2 alpha_t = (t & 1) ? minus : plus;
    size_t base = threadIdx.x;
    for (; L::whole_round(base, threads, L::kFmaChains, chunk); base += L::round_step(threads, L::kFmaChains)) {
      __half2 x[L::kFmaChains], beta[L::kFmaChains];
#pragma unroll
      for (int c = 0; c < L::kFmaChains; ++c) {
        x[c] = mine[L::chain_element(base, threads, c)];
        beta[c] = __float2half2_rn(0.8f);
      }
      if constexpr (F == 1) {
#pragma unroll
        for (int c = 0; c < L::kFmaChains; ++c) beta[c] = __hadd2(x[c], alpha_t);
      } else {
#pragma unroll
        for (int r = 0; r < F / 2; ++r)
#pragma unroll
          for (int c = 0; c < L::kFmaChains; ++c) beta[c] = __hfma2(beta[c], x[c], alpha_t);
      }
#pragma unroll
      for (int c = 0; c < L::kFmaChains; ++c) mine[L::chain_element(base, threads, c)] = beta[c];
    }
    for (size_t i = base; i < chunk; i += threads) {
      const __half2 x = mine[i];
      __half2 beta = __float2half2_rn(0.8f);
      if constexpr (F == 1) {
        beta = __hadd2(x, alpha_t);
      } else {
#pragma unroll
        for (int r = 0; r < F / 2; ++r) beta = __hfma2(beta, x, alpha_t);
      }
      mine[i] = beta;
    }
  }
}

// Tensor cores, FP16 inputs, FP32 accumulate (mma.sync through WMMA): 4
// independent accumulators per warp; FLOPs = 2*16*16*16 per mma.
constexpr int kMmaChains = kGpuMmaChains;
__global__ void mma_fp16_kernel(const __half* __restrict__ in, float* __restrict__ out, long long iters) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kMmaChains];
  wmma::load_matrix_sync(fa, in, 16);
  wmma::load_matrix_sync(fb, in, 16);
  for (int k = 0; k < kMmaChains; ++k) wmma::fill_fragment(acc[k], 0.0f);
  for (long long it = 0; it < iters; ++it)
    for (int k = 0; k < kMmaChains; ++k) wmma::mma_sync(acc[k], fa, fb, acc[k]);
  for (int k = 1; k < kMmaChains; ++k)
    for (int e = 0; e < acc[0].num_elements; ++e) acc[0].x[e] += acc[k].x[e];
  const size_t warp = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(out + warp * 256, acc[0], 16, wmma::mem_row_major);
}

// Tensor cores, FP64 (DMMA, sm_80+): FLOPs = 2*8*8*4 per mma.
__global__ void mma_fp64_kernel(const double* __restrict__ in, double* __restrict__ out, long long iters) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc[kMmaChains];
  wmma::load_matrix_sync(fa, in, 4);
  wmma::load_matrix_sync(fb, in, 4);
  for (int k = 0; k < kMmaChains; ++k) wmma::fill_fragment(acc[k], 0.0);
  for (long long it = 0; it < iters; ++it)
    for (int k = 0; k < kMmaChains; ++k) wmma::mma_sync(acc[k], fa, fb, acc[k]);
  for (int k = 1; k < kMmaChains; ++k)
    for (int e = 0; e < acc[0].num_elements; ++e) acc[0].x[e] += acc[k].x[e];
  const size_t warp = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(out + warp * 64, acc[0], 8, wmma::mem_row_major);
#endif
}

// Records the SM each block ran on; blocks spin briefly so the scheduler has
// to spread them over every SM the context may use.
__global__ void smid_probe_kernel(unsigned* out, long long spin_cycles) {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  if (threadIdx.x == 0) out[blockIdx.x] = id;
  const long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
}

// --------------------------------------------------------- kernel dispatch

struct GpuKernel {
  const void* function = nullptr;  // for the occupancy query
  void (*launch)(void* data, size_t chunk, long long trials, double alpha, int blocks, int threads,
                 cudaStream_t stream) = nullptr;
};

template <class T, bool Fma, int F>
void launch_ert(void* d, size_t chunk, long long trials, double alpha, int blocks, int threads, cudaStream_t s) {
  ert_kernel<T, Fma, F><<<blocks, threads, 0, s>>>(static_cast<T*>(d), chunk, trials, T(alpha));
}
template <int F>
void launch_half2(void* d, size_t chunk, long long trials, double alpha, int blocks, int threads, cudaStream_t s) {
  ert_half2_kernel<F><<<blocks, threads, 0, s>>>(static_cast<__half2*>(d), chunk / 2, trials, float(alpha));
}

void launch_stream(void* d, size_t chunk, long long trials, double alpha, int blocks, int threads, cudaStream_t s) {
  ert_stream_kernel<<<blocks, threads, 0, s>>>(static_cast<double*>(d), chunk, trials, alpha);
}

template <class T, bool Fma, int F>
GpuKernel ert_entry() {
  return {reinterpret_cast<const void*>(&ert_kernel<T, Fma, F>), &launch_ert<T, Fma, F>};
}
template <int F>
GpuKernel half2_entry() {
  return {reinterpret_cast<const void*>(&ert_half2_kernel<F>), &launch_half2<F>};
}

template <class T, bool Fma>
GpuKernel ert_for(int f) {
  switch (f) {
    case 1: return ert_entry<T, Fma, 1>();
    case 2: return ert_entry<T, Fma, 2>();
    case 4: return ert_entry<T, Fma, 4>();
    case 8: return ert_entry<T, Fma, 8>();
    case 16: return ert_entry<T, Fma, 16>();
    case 32: return ert_entry<T, Fma, 32>();
    case 64: return ert_entry<T, Fma, 64>();
    case 128: return ert_entry<T, Fma, 128>();
    case 256: return ert_entry<T, Fma, 256>();
    case 512: return ert_entry<T, Fma, 512>();
    case 1024: return ert_entry<T, Fma, 1024>();
  }
  throw GpuError("no GPU kernel for F=" + std::to_string(f));
}

GpuKernel half2_for(int f) {
  switch (f) {
    case 1: return half2_entry<1>();
    case 2: return half2_entry<2>();
    case 4: return half2_entry<4>();
    case 8: return half2_entry<8>();
    case 16: return half2_entry<16>();
    case 32: return half2_entry<32>();
    case 64: return half2_entry<64>();
    case 128: return half2_entry<128>();
    case 256: return half2_entry<256>();
    case 512: return half2_entry<512>();
    case 1024: return half2_entry<1024>();
  }
  throw GpuError("no GPU half2 kernel for F=" + std::to_string(f));
}

// The ERT kernels of a non-tensor measurement (gpu_kernel_family says which).
GpuKernel kernel_for(GpuKernelFamily family, const KernelSpec& k) {
  if (family == GpuKernelFamily::Stream)
    return {reinterpret_cast<const void*>(&ert_stream_kernel), &launch_stream};
  switch (k.precision) {
    case Precision::FP64:
      return k.variant == Variant::NoFma ? ert_for<double, false>(k.flops_per_element)
                                         : ert_for<double, true>(k.flops_per_element);
    case Precision::FP32:
      return k.variant == Variant::NoFma ? ert_for<float, false>(k.flops_per_element)
                                         : ert_for<float, true>(k.flops_per_element);
    case Precision::FP16: return half2_for(k.flops_per_element);
  }
  throw GpuError("no GPU kernel for this precision");
}

constexpr int kThreadsPerBlock = 256;
static_assert(kGpuWmmaFp16FlopsPerWarp == kMmaChains * 2 * 16 * 16 * 16, "per warp and iteration");
static_assert(kGpuDmmaFp64FlopsPerWarp == kMmaChains * 2 * 8 * 8 * 4, "per warp and iteration");

// ------------------------------------------------------------- the partition

// A green context of N SMs (or the primary context for the whole device),
// current on this thread for the runner's lifetime.
class Partition {
 public:
  Partition(const cuda::Driver& drv, CUdevice dev, int requested, int total, bool by_mps) : drv_(drv), dev_(dev) {
    requested_ = requested;
    if (by_mps) {
      // MPS limits this whole process (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): the
      // primary context is the partition; the %smid probe says what it got.
      drv.check(drv.cuDevicePrimaryCtxRetain(&ctx_, dev), "cuDevicePrimaryCtxRetain");
      primary_ = true;
      drv.check(drv.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
      check_rt(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      granted_ = std::min(requested, total);
      const char* pct = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
      method_ = std::string("MPS client (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=") + (pct ? pct : "?") + ")";
      return;
    }
    if (requested >= total || !drv.has_green_contexts()) {
      if (requested < total)
        throw GpuError("--sms " + std::to_string(requested) +
                       ": this driver has no green contexts with their own streams (cuGreenCtxStreamCreate needs a driver for CUDA 12.5 or newer), so SMs cannot be partitioned");
      drv.check(drv.cuDevicePrimaryCtxRetain(&ctx_, dev), "cuDevicePrimaryCtxRetain");
      primary_ = true;
      drv.check(drv.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
      check_rt(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      granted_ = total;
      method_ = "primary context (whole device)";
      return;
    }
    CUdevResource sm{};
    drv.check(drv.cuDeviceGetDevResource(dev, &sm, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource(SM)");
    min_partition_ = int(sm.sm.minSmPartitionSize);
    alignment_ = int(sm.sm.smCoscheduledAlignment);
    const int snapped = snap_sm_count(requested, int(sm.sm.smCount), min_partition_, alignment_);
    CUdevResource group{}, remaining{};
    unsigned int groups = 1;
    drv.check(drv.cuDevSmResourceSplitByCount(&group, &groups, &sm, &remaining, 0, unsigned(snapped)),
              "cuDevSmResourceSplitByCount");
    if (groups < 1) throw GpuError("cuDevSmResourceSplitByCount: no group of " + std::to_string(snapped) + " SMs");
    granted_ = int(group.sm.smCount);
    CUdevResourceDesc desc{};
    drv.check(drv.cuDevResourceGenerateDesc(&desc, &group, 1), "cuDevResourceGenerateDesc");
    drv.check(drv.cuGreenCtxCreate(&green_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
    drv.check(drv.cuCtxFromGreenCtx(&ctx_, green_), "cuCtxFromGreenCtx");
    drv.check(drv.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    CUstream s = nullptr;
    drv.check(drv.cuGreenCtxStreamCreate(&s, green_, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate");
    stream_ = reinterpret_cast<cudaStream_t>(s);
    method_ = "green context";
  }
  ~Partition() {
    if (stream_) cudaStreamDestroy(stream_);
    if (green_) drv_.cuGreenCtxDestroy(green_);
    if (primary_) drv_.cuDevicePrimaryCtxRelease(dev_);
  }
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  cudaStream_t stream() const { return stream_; }
  int granted() const { return granted_; }
  const std::string& method() const { return method_; }
  int min_partition() const { return min_partition_; }
  int alignment() const { return alignment_; }

 private:
  const cuda::Driver& drv_;
  CUdevice dev_;
  CUgreenCtx green_ = nullptr;
  CUcontext ctx_ = nullptr;
  bool primary_ = false;
  cudaStream_t stream_ = nullptr;
  int requested_ = 0, granted_ = 0, min_partition_ = 1, alignment_ = 1;
  std::string method_;
};

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  explicit DeviceBuffer(size_t count) {
    check_rt(cudaMalloc(reinterpret_cast<void**>(&ptr), std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Counts the distinct SMs that blocks of a probe kernel ran on: one resident
// wave on the SMs granted (rtrace-smid-probe says why not more).
int probe_sms(cudaStream_t stream, int granted_sms) {
  int resident = 0;
  check_rt(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, smid_probe_kernel, 128, 0),
           "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const int blocks = std::max(1, granted_sms) * std::max(1, resident);
  DeviceBuffer<unsigned> ids{size_t(blocks)};
  smid_probe_kernel<<<blocks, 128, 0, stream>>>(ids.ptr, 2000000);
  check_rt(cudaGetLastError(), "smid probe launch");
  check_rt(cudaStreamSynchronize(stream), "smid probe");
  std::vector<unsigned> host(static_cast<size_t>(blocks));
  check_rt(cudaMemcpy(host.data(), ids.ptr, host.size() * sizeof(unsigned), cudaMemcpyDeviceToHost), "cudaMemcpy");
  return int(std::set<unsigned>(host.begin(), host.end()).size());
}

}  // namespace

GpuRunResult run_gpu_ert(const GpuRunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const cuda::Driver& drv = cuda::Driver::get();
  CUdevice dev = 0;
  drv.check(drv.cuDeviceGet(&dev, options.device), "cuDeviceGet");

  // cudart (static, built with this toolkit) needs a driver of at least the
  // toolkit's major version; say so before the first runtime call fails vaguely.
  if (drv.version < CUDA_VERSION / 1000 * 1000)
    throw GpuError("the driver supports CUDA " + std::to_string(drv.version / 1000) + "." +
                   std::to_string(drv.version % 1000 / 10) + " but the ERT kernels were built with CUDA " +
                   std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) +
                   " and need a driver for CUDA " + std::to_string(CUDA_VERSION / 1000) + ".0 or newer");

  GpuRunResult result;
  const GpuDeviceInfo device = cuda::describe_device(drv, options.device);
  result.gpu = device.row;
  const store::GpuRow& g = result.gpu;
  const std::string name = store::get_str(g.name);
  if (g.sm_count < 1) throw GpuError("device " + std::to_string(options.device) + " reports no SMs");

  Partition part(drv, dev, options.sms_requested, g.sm_count, options.partition_by_mps);
  result.sms_requested = options.sms_requested;
  result.sms_granted = part.granted();
  result.sms_achieved = probe_sms(part.stream(), part.granted());
  const int sms = result.sms_achieved > 0 ? result.sms_achieved : part.granted();

  // Levels from the device: L1/shared per SM, the (device-wide) L2, HBM or DRAM.
  const int smem_per_sm = device.shared_per_sm;
  const bool hbm = g.memory_bus_bits >= 2048;  // HBM stacks: 1024 bits each
  result.levels = {{"L1", double(sms) * std::max(smem_per_sm, 1), smem_per_sm},
                   {"L2", double(std::max<std::int64_t>(g.l2_bytes, 1)), g.l2_bytes},
                   {hbm ? "HBM" : "DRAM", INFINITY, -1}};

  // ---- the plan: bandwidth sweep, then FLOP kernels, then tensor cores
  std::vector<Measurement> plan;
  const double start_ws = double(sms) * 16 * 1024;
  // The largest working set: 8 x L2 (at least 1 GiB) so HBM dominates, but at
  // most half the memory that is free now (other processes, a small GPU).
  size_t free_bytes = 0, total_bytes = 0;
  if (!drv.cuMemGetInfo || drv.cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS)
    free_bytes = g.memory_bytes > 0 ? size_t(g.memory_bytes) / 2 : size_t(1) << 30;
  const double end_ws = std::min(std::max(8.0 * double(g.l2_bytes), 1024.0 * 1048576), 0.5 * double(free_bytes));
  if (end_ws < 4.0 * std::max<double>(double(g.l2_bytes), 1.0))
    result.warnings.push_back("only " + std::to_string(free_bytes >> 20) + " MiB of GPU memory free: the largest working set (" +
                              std::to_string(std::int64_t(end_ws) >> 20) + " MiB) is under 4 x L2, so the HBM ceiling may include L2 hits");
  const double step = std::pow(2.0, options.quick ? 0.5 : 0.25);
  for (double ws = start_ws; ws <= end_ws * 1.0001; ws *= step) {
    const std::int64_t per_sm = std::max<std::int64_t>(kThreadsPerBlock, std::int64_t(ws / sms / 8) / kThreadsPerBlock * kThreadsPerBlock);
    if (plan.empty() || plan.back().elements_per_worker != per_sm)
      plan.push_back({Series::Bandwidth, {Precision::FP64, Variant::Fma, 1}, per_sm});
  }
  std::vector<int> flops = supported_flops_per_element();
  if (options.quick) flops = {1, 8, 64, 256, 1024};
  for (Precision p : options.precisions) {
    const std::int64_t per_sm = 32 * 1024 / std::int64_t(element_bytes(p)) / kThreadsPerBlock * kThreadsPerBlock;
    if (p == Precision::FP16) {
      for (int f : flops) plan.push_back({Series::Flops, {p, Variant::Half2, f}, per_sm});
      continue;
    }
    for (Variant v : {Variant::Fma, Variant::NoFma})
      for (int f : flops) plan.push_back({Series::Flops, {p, v, f}, per_sm});
  }
  const std::int64_t warps_per_sm = 32;
  bool wgmma = false;
  if (options.tensor_cores) {
#ifdef RTRACE_ERT_HAVE_WGMMA
    constexpr bool have_wgmma = true;
#else
    constexpr bool have_wgmma = false;
#endif
    // wgmma on sm_90 by default (mma.sync reaches only part of an H100's FP16
    // tensor peak; cuBLAS/CUTLASS use wgmma); RTRACE_ERT_WGMMA=0 leaves it out.
    const char* opt_out = std::getenv("RTRACE_ERT_WGMMA");
    const bool use_wgmma = !(opt_out && std::string(opt_out) == "0");
    for (const GpuTensorKernel& t : gpu_tensor_kernels(g.cc_major, g.cc_minor, have_wgmma, use_wgmma)) {
      plan.push_back({Series::Flops, t.spec, t.warps_per_sm});
      wgmma = wgmma || t.wgmma;
    }
    if (wgmma) result.warnings.push_back("FP16 tensor ceiling from wgmma (sm_90a); mma.sync reported as its own ceiling");
  }

  std::int64_t max_bytes = 0;
  for (const Measurement& m : plan)
    if (m.kernel.variant != Variant::Mma && m.kernel.variant != Variant::MmaSync)
      max_bytes = std::max(max_bytes, m.elements_per_worker * std::int64_t(element_bytes(m.kernel.precision)));
  // Every block of a launch owns elements_per_worker / blocks_per_sm elements,
  // sms x blocks_per_sm blocks: sms x elements_per_worker elements in all.
  const size_t data_bytes = size_t(max_bytes) * size_t(sms);
  DeviceBuffer<unsigned char> data(data_bytes + 4096);
  check_rt(cudaMemsetAsync(data.ptr, 0, data_bytes, part.stream()), "cudaMemsetAsync");
  DeviceBuffer<float> mma_out(size_t(sms) * size_t(warps_per_sm) * 256);
  DeviceBuffer<double> mma_out64(size_t(sms) * size_t(warps_per_sm) * 64);
  DeviceBuffer<double> mma_in(256);
  // Non-zero operands (0x3C bytes: 1.06 as half, 1.6e-18 as double), so the
  // tensor cores do the same switching work as on real data.
  check_rt(cudaMemsetAsync(mma_in.ptr, 0x3C, 256 * sizeof(double), part.stream()), "cudaMemsetAsync");

  cudaEvent_t e0 = nullptr, e1 = nullptr;
  check_rt(cudaEventCreate(&e0), "cudaEventCreate");
  check_rt(cudaEventCreate(&e1), "cudaEventCreate");

  TrialPolicy policy = default_policy(options.quick);
  policy.min_seconds = options.quick ? 0.5e-3 : 2e-3;
  SweepController controller(plan, policy, sms, 1);
  PlannedRun run;
  try {
    while (controller.next(run)) {
      const Measurement& m = plan[run.measurement];
      int blocks_per_sm = 1;
      GpuKernel kernel;
      const GpuKernelFamily family = gpu_kernel_family(m, wgmma);
      const bool tensor =
          family == GpuKernelFamily::Wmma || family == GpuKernelFamily::Wgmma || family == GpuKernelFamily::Dmma;
      if (!tensor) {
        kernel = kernel_for(family, m.kernel);
        int occ = 0;
        check_rt(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel.function, kThreadsPerBlock, 0),
                 "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        blocks_per_sm = std::clamp(occ, 1, 8);
      }
      check_rt(cudaEventRecord(e0, part.stream()), "cudaEventRecord");
      if (family == GpuKernelFamily::Wgmma) {
#ifdef RTRACE_ERT_HAVE_WGMMA
        // One warpgroup (4 warps) per block.
        check_rt(launch_wgmma_fp16(mma_out.ptr, sms * int(m.elements_per_worker) / 4, run.trials, part.stream()),
                 "wgmma kernel launch");
#endif
      } else if (tensor) {
        const int blocks = sms * int(m.elements_per_worker) * 32 / kThreadsPerBlock;
        if (family == GpuKernelFamily::Wmma)
          mma_fp16_kernel<<<blocks, kThreadsPerBlock, 0, part.stream()>>>(reinterpret_cast<const __half*>(mma_in.ptr),
                                                                          mma_out.ptr, run.trials);
        else
          mma_fp64_kernel<<<blocks, kThreadsPerBlock, 0, part.stream()>>>(mma_in.ptr, mma_out64.ptr, run.trials);
      } else {
        const size_t chunk = size_t(m.elements_per_worker) / size_t(blocks_per_sm);
        kernel.launch(data.ptr, chunk, run.trials, 0.1, sms * blocks_per_sm, kThreadsPerBlock, part.stream());
      }
      check_rt(cudaGetLastError(), "ERT kernel launch");
      check_rt(cudaEventRecord(e1, part.stream()), "cudaEventRecord");
      check_rt(cudaEventSynchronize(e1), "ERT kernel");
      float ms = 0;
      check_rt(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
      controller.record(double(ms) * 1e-3);
    }
  } catch (...) {
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    throw;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);

  result.samples = controller.take_samples();
  result.text_attributes = {{"gpu_name", name},
                            {"partition_method", part.method()},
                            {"kernel", wgmma ? "ERT 1.1.0 beta = beta*A[i] + alpha, one chunk per block, 4 independent chains per thread; "
                                               "16-byte loads for bandwidth; wgmma FP16 and WMMA/DMMA tensor cores"
                                             : "ERT 1.1.0 beta = beta*A[i] + alpha, one chunk per block, 4 independent chains per thread; "
                                               "16-byte loads for bandwidth; WMMA/DMMA tensor cores"}};
  result.number_attributes = {{"sm_clock_khz", g.sm_clock_khz},
                              {"memory_clock_khz", g.memory_clock_khz},
                              {"spec_bandwidth_gbs", g.spec_bandwidth_gbs},
                              {"min_sm_partition", double(part.min_partition())},
                              {"sm_alignment", double(part.alignment())}};
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace rtrace::ert
