// rtrace-demo-cuda: the demo kernels on an NVIDIA GPU (see examples/README.md).
//
// Starts on any machine: cudaGetDeviceCount (cudart dlopens libcuda.so.1) fails
// without a driver or GPU, and the program says "no GPU found" and exits 2.
// Results are checked on the host against the same references as the CPU demo.
//
// --expect FILE writes, per CUDA kernel symbol, the launches and the FLOPs the
// hardware counters should report (executed FLOPs: FP64 add + mul + 2*fma) and
// the compulsory DRAM bytes; tests/gpu/validate.sh compares them with the
// tracer's metrics. Kernels whose executed FLOPs are not exactly predictable
// (gpp: divides and square roots expand into FMA sequences; its reductions)
// are marked inexact.
#include "demo_common.hpp"
#include "demo_options.hpp"
#include "problems.hpp"
#include "reference.hpp"

#include <rtrace/rtrace.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::demo {
// The sm_90a warpgroup-MMA chain (demo_wgmma.cu): `blocks` warpgroups, each
// 128 x 128 accumulators of acc_io, `chain` MMAs adding 16 x a x b each.
cudaError_t launch_wgmma_chain(float* acc_io, int blocks, float a_value, float b_value, int chain);
namespace {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}
#define RTD_CUDA(call) check_cuda((call), #call)
#define RTD_LAUNCHED(name) check_cuda(cudaGetLastError(), (std::string("launch of ") + (name)).c_str())

// Owns a device allocation.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : size_(count) {
    RTD_CUDA(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<std::size_t>(count, 1) * sizeof(T)));
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  std::size_t size() const { return size_; }
  void upload(const T* host) { RTD_CUDA(cudaMemcpy(ptr_, host, size_ * sizeof(T), cudaMemcpyHostToDevice)); }
  void upload(const std::vector<T>& host) { upload(host.data()); }
  std::vector<T> download() const {
    std::vector<T> h(size_);
    RTD_CUDA(cudaMemcpy(h.data(), ptr_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  void swap(DeviceArray& o) noexcept { std::swap(ptr_, o.ptr_); std::swap(size_, o.size_); }

 private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// Kernel-time measurement with events, inside an rtrace region.
class GpuTimer {
 public:
  GpuTimer() {
    RTD_CUDA(cudaEventCreate(&start_));
    RTD_CUDA(cudaEventCreate(&stop_));
    RTD_CUDA(cudaEventRecord(start_));
  }
  ~GpuTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  double stop() {
    RTD_CUDA(cudaEventRecord(stop_));
    RTD_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    RTD_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

// What the hardware counters should show for one kernel symbol.
struct Expectation {
  std::string symbol;   // substring of the kernel's name (unique among the demo kernels)
  std::string region;   // the demo region that launched it
  long long launches = 0;
  double flops = 0;     // executed FP64 FLOPs (add + mul + 2*fma)
  bool flops_exact = true;
  double dram_bytes = 0;  // compulsory DRAM traffic
  // Which counter the FLOPs are compared with: fp64, fp32, fp16 (FLOPs, an
  // HFMA2 = 4) or tensor (FLOPs = 2 x the tracer's tensor_ops math ops).
  std::string precision = "fp64";
};
std::vector<Expectation> g_expectations;

void expect(const std::string& symbol, const std::string& region, long long launches, double flops, bool exact,
            double dram_bytes, const std::string& precision = "fp64") {
  g_expectations.push_back({symbol, region, launches, flops, exact, dram_bytes, precision});
}

unsigned blocks_for(std::int64_t work, int threads, std::int64_t cap = 1LL << 20) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((work + threads - 1) / threads, 1, cap));
}

// ---------------------------------------------------------------- triad
__global__ void rtd_triad_init_k(double* a, double* b, double* c, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    a[i] = 0.0;
    b[i] = triad_b(i);
    c[i] = triad_c(i);
  }
}

__global__ void rtd_triad_k(double* __restrict__ a, const double* __restrict__ b, const double* __restrict__ c,
                            std::int64_t n, double s) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    a[i] = b[i] + s * c[i];
}

KernelResult gpu_triad(const KernelConfig& cfg) {
  KernelResult r = start_result(cfg);
  const std::int64_t n = cfg.size;
  DeviceArray<double> a(n), b(n), c(n);
  rtd_triad_init_k<<<blocks_for(n, 256, 65536), 256>>>(a.get(), b.get(), c.get(), n);
  RTD_LAUNCHED("rtd_triad_init_k");
  RTD_CUDA(cudaDeviceSynchronize());
  const unsigned grid = blocks_for(n, 256, 65536);
  AnnotatedRegion region(r.region);
  GpuTimer timer;
  for (int it = 0; it < cfg.iters; ++it) rtd_triad_k<<<grid, 256>>>(a.get(), b.get(), c.get(), n, kTriadScalar);
  RTD_LAUNCHED("rtd_triad_k");
  r.seconds = timer.stop();
  r.flops = kTriadFlopsPerElement * double(n) * cfg.iters;
  r.bytes_dram = kTriadBytesPerElement * double(n) * cfg.iters;
  region.finish(r.flops, r.bytes_dram);
  expect("rtd_triad_k", r.region, cfg.iters, r.flops, true, r.bytes_dram);

  std::vector<double> h = a.download();
  if (cfg.inject_error && n > 0) h[n / 2] += 1.0;
  r.ok = true;
  for (std::int64_t i = 0; i < n; ++i) {
    const double want = triad_b(i) + kTriadScalar * triad_c(i);
    if (!(std::fabs(h[i] - want) <= 1e-14 * std::fabs(want))) {
      r.ok = false;
      r.check = "a[" + std::to_string(i) + "] = " + std::to_string(h[i]) + ", expected " + std::to_string(want);
      break;
    }
  }
  if (r.ok) r.check = "ok";
  return r;
}

// ---------------------------------------------------------------- grids
__global__ void rtd_grid_init_k(double* x, double* y, double* rhs, std::int64_t n) {
  const std::int64_t nx = n + 2, total = nx * nx * nx;
  for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; c < total; c += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = c % nx, j = (c / nx) % nx, k = c / (nx * nx);
    x[c] = grid_init(i, j, k);
    if (y) y[c] = x[c];
    if (rhs) rhs[c] = grid_rhs(i, j, k);
  }
}

// One thread per interior point; (32, 4, 2) blocks over (i, j, k).
struct Grid3 {
  dim3 grid, block;
};
Grid3 interior_launch(std::int64_t n) {
  const dim3 block(32, 4, 2);
  const dim3 grid(static_cast<unsigned>((n + block.x - 1) / block.x), static_cast<unsigned>((n + block.y - 1) / block.y),
                  static_cast<unsigned>((n + block.z - 1) / block.z));
  return {grid, block};
}

__global__ void rtd_stencil7_k(const double* __restrict__ in, double* __restrict__ out, std::int64_t n) {
  const std::int64_t i = 1 + blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t j = 1 + blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y;
  const std::int64_t k = 1 + blockIdx.z * std::int64_t(blockDim.z) + threadIdx.z;
  if (i > n || j > n || k > n) return;
  const std::int64_t nx = n + 2, plane = nx * nx, c = (k * nx + j) * nx + i;
  out[c] = stencil7_point(in[c], in[c - 1], in[c + 1], in[c - nx], in[c + nx], in[c - plane], in[c + plane]);
}

bool check_grid_samples(const std::vector<double>& h, std::int64_t n, int iters, bool gsrb, bool inject,
                        std::string& problem) {
  const std::int64_t nx = n + 2;
  const auto samples =
      grid_sample_points(n, 1, n, gsrb ? gsrb_reference_cost(n, iters) : stencil7_reference_cost(n, iters));
  for (std::size_t s = 0; s < samples.size(); ++s) {
    const auto& p = samples[s];
    double got = h[(p[2] * nx + p[1]) * nx + p[0]];
    if (inject && s == 0) got += 1.0;
    const double want = gsrb ? gsrb_reference_point(n, iters, p) : stencil7_reference_point(n, iters, p);
    if (!(std::fabs(got - want) <= 1e-12 * (1.0 + std::fabs(want)))) {
      std::ostringstream os;
      os.precision(17);
      os << "x(" << p[0] << "," << p[1] << "," << p[2] << ") = " << got << ", reference " << want;
      problem = os.str();
      return false;
    }
  }
  return true;
}

KernelResult gpu_stencil7(const KernelConfig& cfg) {
  KernelResult r = start_result(cfg);
  const std::int64_t n = cfg.size, nx = n + 2, total = nx * nx * nx;
  DeviceArray<double> u(total), v(total);
  rtd_grid_init_k<<<blocks_for(total, 256, 65536), 256>>>(u.get(), v.get(), nullptr, n);
  RTD_LAUNCHED("rtd_grid_init_k");
  RTD_CUDA(cudaDeviceSynchronize());
  const Grid3 launch = interior_launch(n);
  AnnotatedRegion region(r.region);
  GpuTimer timer;
  for (int it = 0; it < cfg.iters; ++it) {
    rtd_stencil7_k<<<launch.grid, launch.block>>>(u.get(), v.get(), n);
    u.swap(v);
  }
  RTD_LAUNCHED("rtd_stencil7_k");
  r.seconds = timer.stop();
  const double points = double(n) * n * n;
  r.flops = kStencilFlopsPerPoint * points * cfg.iters;
  r.bytes_dram = 8.0 * (double(total) + points) * cfg.iters;
  region.finish(r.flops, r.bytes_dram);
  expect("rtd_stencil7_k", r.region, cfg.iters, r.flops, true, r.bytes_dram);
  r.ok = check_grid_samples(u.download(), n, cfg.iters, false, cfg.inject_error, r.check);
  if (r.ok) r.check = "ok";
  return r;
}

// ---------------------------------------------------------------- gsrb
__global__ void rtd_gsrb_branch_k(double* __restrict__ x, const double* __restrict__ rhs, std::int64_t n, int colour) {
  const std::int64_t i = 1 + blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t j = 1 + blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y;
  const std::int64_t k = 1 + blockIdx.z * std::int64_t(blockDim.z) + threadIdx.z;
  if (i > n || j > n || k > n) return;
  if (((i + j + k) & 1) != colour) return;  // the branch that halves the work (and the warp's efficiency)
  const std::int64_t nx = n + 2, plane = nx * nx, c = (k * nx + j) * nx + i;
  const double nsum = x[c - 1] + x[c + 1] + x[c - nx] + x[c + nx] + x[c - plane] + x[c + plane];
  x[c] = gsrb_update(x[c], rhs[c], nsum);
}

__global__ void rtd_gsrb_mask_k(const double* __restrict__ x, const double* __restrict__ rhs,
                                const double* __restrict__ mask, double* __restrict__ xo, std::int64_t n, int colour) {
  const std::int64_t i = 1 + blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t j = 1 + blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y;
  const std::int64_t k = 1 + blockIdx.z * std::int64_t(blockDim.z) + threadIdx.z;
  if (i > n || j > n || k > n) return;
  const std::int64_t nx = n + 2, plane = nx * nx, c = (k * nx + j) * nx + i;
  const double m = mask[(colour * 2 + (k & 1)) * plane + j * nx + i];
  const double nsum = x[c - 1] + x[c + 1] + x[c - nx] + x[c + nx] + x[c - plane] + x[c + plane];
  xo[c] = gsrb_update_masked(x[c], rhs[c], nsum, m);
}

KernelResult gpu_gsrb(const KernelConfig& cfg) {
  KernelResult r = start_result(cfg);
  const bool masked = cfg.variant == "mask";
  const std::int64_t n = cfg.size, nx = n + 2, plane = nx * nx, total = plane * nx;
  DeviceArray<double> x(total), rhs(total), xo(masked ? total : 0), mask(masked ? 4 * plane : 0);
  rtd_grid_init_k<<<blocks_for(total, 256, 65536), 256>>>(x.get(), masked ? xo.get() : nullptr, rhs.get(), n);
  RTD_LAUNCHED("rtd_grid_init_k");
  if (masked) {
    std::vector<double> m(static_cast<std::size_t>(4 * plane));
    for (int colour = 0; colour < 2; ++colour)
      for (int kpar = 0; kpar < 2; ++kpar)
        for (std::int64_t j = 0; j < nx; ++j)
          for (std::int64_t i = 0; i < nx; ++i)
            m[(colour * 2 + kpar) * plane + j * nx + i] = ((i + j + kpar) & 1) == colour ? 1.0 : 0.0;
    mask.upload(m);
  }
  RTD_CUDA(cudaDeviceSynchronize());
  const Grid3 launch = interior_launch(n);
  AnnotatedRegion region(r.region);
  GpuTimer timer;
  for (int it = 0; it < cfg.iters; ++it)
    for (int colour = 0; colour < 2; ++colour) {
      if (masked) {
        rtd_gsrb_mask_k<<<launch.grid, launch.block>>>(x.get(), rhs.get(), mask.get(), xo.get(), n, colour);
        x.swap(xo);
      } else {
        rtd_gsrb_branch_k<<<launch.grid, launch.block>>>(x.get(), rhs.get(), n, colour);
      }
    }
  RTD_LAUNCHED(masked ? "rtd_gsrb_mask_k" : "rtd_gsrb_branch_k");
  r.seconds = timer.stop();
  const double points = double(n) * n * n;
  r.flops = (masked ? 2.0 * kGsrbFlopsMask : kGsrbFlopsBranch) * points * cfg.iters;
  const double per_sweep = 8.0 * (double(total) + 2.0 * points) + (masked ? 16.0 * plane : 0.0);
  r.bytes_dram = 2.0 * per_sweep * cfg.iters;
  region.finish(r.flops, r.bytes_dram);
  expect(masked ? "rtd_gsrb_mask_k" : "rtd_gsrb_branch_k", r.region, 2LL * cfg.iters, r.flops, true, r.bytes_dram);
  r.ok = check_grid_samples(x.download(), n, cfg.iters, true, cfg.inject_error, r.check);
  if (r.ok) r.check = "ok";
  return r;
}

// ---------------------------------------------------------------- spmv
__global__ void rtd_spmv_rowthread_k(std::int64_t rows, const std::int64_t* __restrict__ rp,
                                     const std::int32_t* __restrict__ col, const double* __restrict__ val,
                                     const double* __restrict__ x, double* __restrict__ y) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= rows) return;
  double s = 0.0;
  for (std::int64_t e = rp[i]; e < rp[i + 1]; ++e) s += val[e] * x[col[e]];
  y[i] = s;
}

// One warp per row: lanes stride over the row (coalesced), then a shuffle reduction.
__global__ void rtd_spmv_warprow_k(std::int64_t rows, const std::int64_t* __restrict__ rp,
                                   const std::int32_t* __restrict__ col, const double* __restrict__ val,
                                   const double* __restrict__ x, double* __restrict__ y) {
  const std::int64_t row = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps leave together (blockDim is a multiple of 32)
  double s = 0.0;
  for (std::int64_t e = rp[row] + lane; e < rp[row + 1]; e += 32) s += val[e] * x[col[e]];
  for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
  if (lane == 0) y[row] = s;
}

KernelResult gpu_spmv(const KernelConfig& cfg) {
  KernelResult r = start_result(cfg);
  const bool warp = cfg.variant == "warp";
  const CsrMatrix a = make_csr_matrix(cfg.size);
  const std::int64_t rows = a.rows;
  std::vector<double> hx(static_cast<std::size_t>(rows));
  for (std::int64_t j = 0; j < rows; ++j) hx[j] = spmv_x(j);
  DeviceArray<std::int64_t> rp(a.row_ptr.size());
  DeviceArray<std::int32_t> col(a.col.size());
  DeviceArray<double> val(a.val.size()), x(hx.size()), y(hx.size());
  rp.upload(a.row_ptr);
  col.upload(a.col);
  val.upload(a.val);
  x.upload(hx);
  RTD_CUDA(cudaMemset(y.get(), 0, y.size() * sizeof(double)));
  RTD_CUDA(cudaDeviceSynchronize());
  AnnotatedRegion region(r.region);
  GpuTimer timer;
  for (int it = 0; it < cfg.iters; ++it) {
    if (warp)
      rtd_spmv_warprow_k<<<blocks_for(rows * 32, 128, 1LL << 31), 128>>>(rows, rp.get(), col.get(), val.get(), x.get(), y.get());
    else
      rtd_spmv_rowthread_k<<<blocks_for(rows, 128, 1LL << 31), 128>>>(rows, rp.get(), col.get(), val.get(), x.get(), y.get());
  }
  RTD_LAUNCHED(warp ? "rtd_spmv_warprow_k" : "rtd_spmv_rowthread_k");
  r.seconds = timer.stop();
  r.flops = spmv_flops(a) * cfg.iters;  // requisite: 2 per non-zero
  r.bytes_dram = spmv_bytes(a) * cfg.iters;
  region.finish(r.flops, r.bytes_dram);
  // Executed: the warp reduction adds 5 shuffle-adds on all 32 lanes per row.
  const double executed = r.flops + (warp ? 5.0 * 32.0 * double(rows) * cfg.iters : 0.0);
  expect(warp ? "rtd_spmv_warprow_k" : "rtd_spmv_rowthread_k", r.region, cfg.iters, executed, true, r.bytes_dram);

  std::vector<double> got = y.download(), want, scale;
  spmv_reference(a, 0, rows, want, scale);
  if (cfg.inject_error && rows > 0) got[rows / 2] += 1.0;
  r.ok = true;
  for (std::int64_t i = 0; i < rows; ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-13 * (scale[i] + 1e-300))) {
      std::ostringstream os;
      os.precision(17);
      os << "y[" << i << "] = " << got[i] << ", reference " << want[i];
      r.check = os.str();
      r.ok = false;
      break;
    }
  if (r.ok) r.check = "ok";
  return r;
}

// ---------------------------------------------------------------- gpp
struct GppDevice {
  const Cplx *aqsm, *aqsn, *wtilde, *eps;
  const double *vcoul, *wx, *wx_t;
  int nbands, ngpown, ncouls;
};

// Adds a thread's partial sum into sums[slot]: warp shuffle reduction, one atomic per warp.
__device__ void warp_add(double v, double* sums, int slot) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(&sums[slot], v);
}

// v1: (n1, igp, ig) collapsed onto threads, iw innermost. sums: [iw][sch re, im, ssx re, im].
__global__ void rtd_gpp_naive_k(GppDevice p, double* sums) {
  const std::int64_t total = std::int64_t(p.nbands) * p.ngpown * p.ncouls;
  Cplx sch[kGppNw], ssx[kGppNw];
  for (int iw = 0; iw < kGppNw; ++iw) sch[iw] = ssx[iw] = Cplx{0, 0};
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total; t += std::int64_t(gridDim.x) * blockDim.x) {
    const int ig = static_cast<int>(t % p.ncouls);
    const int igp = static_cast<int>((t / p.ncouls) % p.ngpown);
    const int n1 = static_cast<int>(t / (std::int64_t(p.ncouls) * p.ngpown));
    const std::int64_t g = std::int64_t(igp) * p.ncouls + ig;
    const Cplx mat = gpp_mat(p.aqsm[std::int64_t(n1) * p.ncouls + ig], p.aqsn[std::int64_t(n1) * p.ngpown + igp], p.vcoul[ig]);
    for (int iw = 0; iw < kGppNw; ++iw)
      gpp_term_naive(mat, p.wx[n1 * kGppNw + iw], p.wtilde[g], p.eps[g], sch[iw], ssx[iw]);
  }
  for (int iw = 0; iw < kGppNw; ++iw) {
    warp_add(sch[iw].re, sums, iw * 4 + 0);
    warp_add(sch[iw].im, sums, iw * 4 + 1);
    warp_add(ssx[iw].re, sums, iw * 4 + 2);
    warp_add(ssx[iw].im, sums, iw * 4 + 3);
  }
}

// v4/v5 (and v7/v8 with Fast): one launch per iw, (igp, ig) on threads, n1 inside.
template <bool Fast>
__global__ void rtd_gpp_iwout_k(GppDevice p, int iw, double* sums) {
  const std::int64_t total = std::int64_t(p.ngpown) * p.ncouls;
  Cplx sch{0, 0}, ssx{0, 0};
  const double* wx = p.wx_t + std::int64_t(iw) * p.nbands;
  for (std::int64_t g = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; g < total; g += std::int64_t(gridDim.x) * blockDim.x) {
    const int ig = static_cast<int>(g % p.ncouls), igp = static_cast<int>(g / p.ncouls);
    const Cplx wt = p.wtilde[g], eps = p.eps[g];
    for (int n1 = 0; n1 < p.nbands; ++n1) {
      const Cplx mat = gpp_mat(p.aqsm[std::int64_t(n1) * p.ncouls + ig], p.aqsn[std::int64_t(n1) * p.ngpown + igp], p.vcoul[ig]);
      if (Fast)
        gpp_term_fast(mat, wx[n1], wt, eps, sch, ssx);
      else
        gpp_term_naive(mat, wx[n1], wt, eps, sch, ssx);
    }
  }
  warp_add(sch.re, sums, iw * 4 + 0);
  warp_add(sch.im, sums, iw * 4 + 1);
  warp_add(ssx.re, sums, iw * 4 + 2);
  warp_add(ssx.im, sums, iw * 4 + 3);
}

// v9: cache blocking. Thread (igp, lane) walks ig = lane, lane + B, ... so that at any
// time the grid works on a band of B consecutive ig whose aqsm columns stay in L2.
constexpr int kGpuIgBlock = 1024;
__global__ void rtd_gpp_blocked_k(GppDevice p, int iw, double* sums) {
  const int lanes = min(kGpuIgBlock, p.ncouls);
  const std::int64_t total = std::int64_t(p.ngpown) * lanes;
  Cplx sch{0, 0}, ssx{0, 0};
  const double* wx = p.wx_t + std::int64_t(iw) * p.nbands;
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total; t += std::int64_t(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(t % lanes), igp = static_cast<int>(t / lanes);
    for (int ig = lane; ig < p.ncouls; ig += lanes) {
      const std::int64_t g = std::int64_t(igp) * p.ncouls + ig;
      const Cplx wt = p.wtilde[g], eps = p.eps[g];
      for (int n1 = 0; n1 < p.nbands; ++n1) {
        const Cplx mat = gpp_mat(p.aqsm[std::int64_t(n1) * p.ncouls + ig], p.aqsn[std::int64_t(n1) * p.ngpown + igp], p.vcoul[ig]);
        gpp_term_fast(mat, wx[n1], wt, eps, sch, ssx);
      }
    }
  }
  warp_add(sch.re, sums, iw * 4 + 0);
  warp_add(sch.im, sums, iw * 4 + 1);
  warp_add(ssx.re, sums, iw * 4 + 2);
  warp_add(ssx.im, sums, iw * 4 + 3);
}

KernelResult gpu_gpp(const KernelConfig& cfg) {
  KernelResult r = start_result(cfg);
  const GppProblem hp = make_gpp_problem(cfg.size);
  DeviceArray<Cplx> aqsm(hp.aqsm.size()), aqsn(hp.aqsn.size()), wtilde(hp.wtilde.size()), eps(hp.eps.size());
  DeviceArray<double> vcoul(hp.vcoul.size()), wx(hp.wx.size()), wx_t(hp.wx_t.size()), sums(4 * kGppNw);
  aqsm.upload(hp.aqsm);
  aqsn.upload(hp.aqsn);
  wtilde.upload(hp.wtilde);
  eps.upload(hp.eps);
  vcoul.upload(hp.vcoul);
  wx.upload(hp.wx);
  wx_t.upload(hp.wx_t);
  const GppDevice p{aqsm.get(), aqsn.get(), wtilde.get(), eps.get(), vcoul.get(), wx.get(), wx_t.get(),
                    hp.nbands, hp.ngpown, hp.ncouls};
  const std::string& v = cfg.variant;
  const char* symbol = v == "naive" ? "rtd_gpp_naive_k"
                       : v == "iw-outside" ? "rtd_gpp_iwout_k<false>"
                       : v == "divides-replaced" ? "rtd_gpp_iwout_k<true>"
                                                 : "rtd_gpp_blocked_k";
  const int threads = 256;
  RTD_CUDA(cudaDeviceSynchronize());
  AnnotatedRegion region(r.region);
  GpuTimer timer;
  long long launches = 0;
  for (int it = 0; it < cfg.iters; ++it) {
    RTD_CUDA(cudaMemsetAsync(sums.get(), 0, sums.size() * sizeof(double)));
    if (v == "naive") {
      rtd_gpp_naive_k<<<blocks_for(std::int64_t(hp.terms()), threads, 1LL << 20), threads>>>(p, sums.get());
      ++launches;
    } else {
      for (int iw = 0; iw < kGppNw; ++iw) {
        if (v == "iw-outside")
          rtd_gpp_iwout_k<false><<<blocks_for(std::int64_t(hp.ngpown) * hp.ncouls, threads), threads>>>(p, iw, sums.get());
        else if (v == "divides-replaced")
          rtd_gpp_iwout_k<true><<<blocks_for(std::int64_t(hp.ngpown) * hp.ncouls, threads), threads>>>(p, iw, sums.get());
        else
          rtd_gpp_blocked_k<<<blocks_for(std::int64_t(hp.ngpown) * std::min(kGpuIgBlock, hp.ncouls), threads), threads>>>(
              p, iw, sums.get());
        ++launches;
      }
    }
  }
  RTD_LAUNCHED(symbol);
  r.seconds = timer.stop();
  r.flops = gpp_flops(hp, 0, hp.nbands, v.c_str()) * cfg.iters;
  r.bytes_dram = gpp_bytes(hp, 0, hp.nbands) * cfg.iters;
  region.finish(r.flops, r.bytes_dram);
  // Inexact: divides and sqrt become reciprocal + FMA sequences on the GPU, and the
  // warp reductions add their own adds; validate.sh reports the measured ratio.
  expect(symbol, r.region, launches, r.flops, false, r.bytes_dram);

  const std::vector<double> h = sums.download();
  GppSums got{};
  for (int iw = 0; iw < kGppNw; ++iw) {
    got.sch[iw] = Cplx{h[iw * 4 + 0], h[iw * 4 + 1]};
    got.ssx[iw] = Cplx{h[iw * 4 + 2], h[iw * 4 + 3]};
  }
  double scale = 0;
  const GppSums want = gpp_reference(hp, 0, hp.nbands, scale);
  if (cfg.inject_error) got.sch[0].re += 1e-3 * scale + 1.0;
  const double err = gpp_compare(got, want, scale);
  r.ok = err <= 1e-10;
  if (r.ok) {
    r.check = "ok";
  } else {
    std::ostringstream os;
    os.precision(17);
    os << "sch(iw=0) = " << got.sch[0].re << "+" << got.sch[0].im << "i, reference " << want.sch[0].re << "+"
       << want.sch[0].im << "i (largest relative error " << err << ")";
    r.check = os.str();
  }
  return r;
}

// ---------------------------------------------------------------- dgemm
constexpr int kTile = 32, kRowsPerThread = 4;  // block (32, 8): each thread owns 4 rows of a 32x32 C tile

__global__ void rtd_dgemm_init_k(double* a, double* b, double* c, std::int64_t n) {
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n * n; t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / n, j = t % n;
    a[t] = dgemm_a(i, j);
    b[t] = dgemm_b(i, j);
    c[t] = dgemm_c0(i, j);
  }
}

__global__ void rtd_dgemm_tiled_k(const double* __restrict__ a, const double* __restrict__ b, double* __restrict__ c, int n) {
  __shared__ double as[kTile][kTile + 1];
  __shared__ double bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col = blockIdx.x * kTile + tx;
  const int row0 = blockIdx.y * kTile + ty;
  double acc[kRowsPerThread];
  bool valid[kRowsPerThread];
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int row = row0 + r * 8;
    valid[r] = row < n && col < n;
    acc[r] = valid[r] ? c[std::int64_t(row) * n + col] : 0.0;
  }
  for (int k0 = 0; k0 < n; k0 += kTile) {
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int lr = ty + r * 8;
      const int arow = blockIdx.y * kTile + lr, acol = k0 + tx;
      as[lr][tx] = (arow < n && acol < n) ? a[std::int64_t(arow) * n + acol] : 0.0;
      const int brow = k0 + lr;
      bs[lr][tx] = (brow < n && col < n) ? b[std::int64_t(brow) * n + col] : 0.0;
    }
    __syncthreads();
    const int kmax = min(kTile, n - k0);  // no FMAs on padding: executed FLOPs stay 2 n^3
    for (int r = 0; r < kRowsPerThread; ++r)
      if (valid[r])
        for (int kk = 0; kk < kmax; ++kk) acc[r] += as[ty + r * 8][kk] * bs[kk][tx];
    __syncthreads();
  }
  for (int r = 0; r < kRowsPerThread; ++r)
    if (valid[r]) c[std::int64_t(row0 + r * 8) * n + col] = acc[r];
}

KernelResult gpu_dgemm(const KernelConfig& cfg) {
  KernelResult r = start_result(cfg);
  const std::int64_t n = cfg.size;
  if (n > 46340) throw std::invalid_argument("dgemm: --size must be at most 46340 on the GPU");
  DeviceArray<double> a(n * n), b(n * n), c(n * n);
  rtd_dgemm_init_k<<<blocks_for(n * n, 256, 65536), 256>>>(a.get(), b.get(), c.get(), n);
  RTD_LAUNCHED("rtd_dgemm_init_k");
  RTD_CUDA(cudaDeviceSynchronize());
  const dim3 block(kTile, kTile / kRowsPerThread);
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((n + kTile - 1) / kTile));
  AnnotatedRegion region(r.region);
  GpuTimer timer;
  for (int it = 0; it < cfg.iters; ++it) rtd_dgemm_tiled_k<<<grid, block>>>(a.get(), b.get(), c.get(), static_cast<int>(n));
  RTD_LAUNCHED("rtd_dgemm_tiled_k");
  r.seconds = timer.stop();
  r.flops = 2.0 * double(n) * n * n * cfg.iters;
  r.bytes_dram = 32.0 * double(n) * n * cfg.iters;
  region.finish(r.flops, r.bytes_dram);
  expect("rtd_dgemm_tiled_k", r.region, cfg.iters, r.flops, true, r.bytes_dram);
  std::vector<double> h = c.download();
  if (cfg.inject_error) h[(n / 2) * n + n / 2] += 1.0;
  std::int64_t bad_row = -1;
  const double err = dgemm_check_rows(n, cfg.iters, 0, n, h.data(), bad_row);
  r.ok = err <= 1e-10;
  r.check = r.ok ? "ok" : "row " + std::to_string(bad_row) + " of C fails Freivalds' check (relative error " +
                              std::to_string(err) + ")";
  return r;
}

// ---------------------------------------------------------------- fma
// FMA chains whose executed FLOPs are exact by construction, one per precision
// the tracer counts (FP32, packed FP16, FP16 and FP64 tensor cores), for
// validate.sh's FLOP checks. Every launch adds kFmaChain x c to each element
// (a = fma(a, b, c) with b = 1 given at run time, so it is not folded away),
// c alternating in sign so values stay small and every step is exact: the
// check is bit-exact, and a launch that skipped work fails it.
constexpr int kFmaChain = 256;       // dependent FMAs per thread (or MMAs per warp) and launch
constexpr double kFmaStep = 1.0 / 256;  // c: exact in half, float and double

__global__ void rtd_fma_fp32_k(float* __restrict__ x, std::int64_t n, float b, float c) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    float a = x[i];
#pragma unroll 16
    for (int r = 0; r < kFmaChain; ++r) a = fmaf(a, b, c);
    x[i] = a;
  }
}

// Scalar half: one lane of the FP16 FMA instruction per thread; 2 FLOPs per
// HFMA (the packed kernel above does 4 per HFMA2): together they tell on a GPU
// whether CUPTI's HFMA counter counts instructions or lanes (docs/tracer.md).
__global__ void rtd_fma_half_k(__half* __restrict__ x, std::int64_t n, __half b, __half c) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    __half a = x[i];
#pragma unroll 16
    for (int r = 0; r < kFmaChain; ++r) a = __hfma(a, b, c);
    x[i] = a;
  }
}

__global__ void rtd_fma_half2_k(__half2* __restrict__ x, std::int64_t n, __half2 b, __half2 c) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    __half2 a = x[i];
#pragma unroll 16
    for (int r = 0; r < kFmaChain; ++r) a = __hfma2(a, b, c);
    x[i] = a;
  }
}

// One 16x16x16 MMA chain per warp: A = c/16 everywhere, B = +-1, so each MMA
// adds +-c to every accumulator element (c = 2^-8: exact in FP16 and FP32).
__global__ void rtd_fma_wmma_fp16_k(const __half* __restrict__ ab, float* __restrict__ acc_io) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  const std::int64_t warp = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32;
  wmma::load_matrix_sync(fa, ab, 16);
  wmma::load_matrix_sync(fb, ab + 256, 16);
  wmma::load_matrix_sync(acc, acc_io + warp * 256, 16, wmma::mem_row_major);
  for (int r = 0; r < kFmaChain; ++r) wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(acc_io + warp * 256, acc, 16, wmma::mem_row_major);
}

// FP64 tensor cores (DMMA, sm_80+): 8x8x4, A = c/4, B = +-1: +-c per MMA.
__global__ void rtd_fma_dmma_fp64_k(const double* __restrict__ ab, double* __restrict__ acc_io) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;
  const std::int64_t warp = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32;
  wmma::load_matrix_sync(fa, ab, 4);
  wmma::load_matrix_sync(fb, ab + 32, 4);
  wmma::load_matrix_sync(acc, acc_io + warp * 64, 8, wmma::mem_row_major);
  for (int r = 0; r < kFmaChain; ++r) wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(acc_io + warp * 64, acc, 8, wmma::mem_row_major);
#endif
}

// x0 of element i: 0.5 + (i mod 64)/256, exact in every precision.
double fma_start(std::int64_t i) { return 0.5 + double(i % 64) * kFmaStep; }
// After `launches` launches: +kFmaChain*c per even launch, -kFmaChain*c per odd one.
double fma_final(std::int64_t i, int launches) { return fma_start(i) + (launches % 2) * kFmaChain * kFmaStep; }

KernelResult gpu_fma(const KernelConfig& cfg) {
  KernelResult r = start_result(cfg);
  const std::string& v = cfg.variant;
  const std::int64_t n = cfg.size;
  const int threads = 128;
  std::vector<double> got;  // final values, as double
  std::int64_t expected_count = 0;
  double seconds = 0;
  std::string symbol;
  int prec = RTRACE_FP32;
  std::string counter = "fp32";
  if (v == "wgmma-fp16") {
    // Hopper warpgroup MMA (sm_90a only; demo_wgmma.cu). Elsewhere: skipped, no expectation.
    cudaDeviceProp prop{};
    RTD_CUDA(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9 || prop.minor != 0) {
      r.ok = true;
      r.check = "skipped (wgmma needs compute capability 9.0, this is " + std::to_string(prop.major) + "." +
                std::to_string(prop.minor) + ")";
      return r;
    }
    symbol = "rtd_fma_wgmma_fp16_k";
    constexpr std::int64_t kPerBlock = 128 * 128;  // 64 x 256 accumulators per warpgroup
    const int blocks = static_cast<int>(std::max<std::int64_t>(1, (n + kPerBlock - 1) / kPerBlock));
    std::vector<float> acc0(static_cast<std::size_t>(blocks * kPerBlock));
    for (std::size_t i = 0; i < acc0.size(); ++i) acc0[i] = float(fma_start(std::int64_t(i)));
    DeviceArray<float> acc(static_cast<std::int64_t>(acc0.size()));
    acc.upload(acc0);
    RTD_CUDA(cudaDeviceSynchronize());
    AnnotatedRegion region(r.region);
    GpuTimer timer;
    for (int it = 0; it < cfg.iters; ++it)
      RTD_CUDA(launch_wgmma_chain(acc.get(), blocks, float(kFmaStep / 16), it % 2 ? -1.0f : 1.0f, kFmaChain));
    RTD_LAUNCHED(symbol.c_str());
    seconds = timer.stop();
    const std::vector<float> out = acc.download();
    got.assign(out.begin(), out.end());
    r.flops = 2.0 * 64 * 256 * 16 * kFmaChain * double(blocks) * cfg.iters;
    r.bytes_dram = 8.0 * double(acc0.size()) * cfg.iters;
    region.finish(r.flops, RTRACE_FP16, r.bytes_dram);
    counter = "tensor-fp16";  // the FP16-source tensor column: the type is checked too
    expected_count = std::int64_t(got.size());
  } else if (v == "half") {
    symbol = "rtd_fma_half_k";
    const unsigned grid = blocks_for(n, threads, 65536);
    std::vector<__half> h(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) h[i] = __double2half(fma_start(i));
    DeviceArray<__half> x(n);
    x.upload(h);
    RTD_CUDA(cudaDeviceSynchronize());
    AnnotatedRegion region(r.region);
    GpuTimer timer;
    for (int it = 0; it < cfg.iters; ++it)
      rtd_fma_half_k<<<grid, threads>>>(x.get(), n, __double2half(1.0), __double2half(it % 2 ? -kFmaStep : kFmaStep));
    RTD_LAUNCHED(symbol.c_str());
    seconds = timer.stop();
    // math FLOPs: one lane x (multiply + add) per HFMA
    r.flops = 2.0 * kFmaChain * double(n) * cfg.iters;
    r.bytes_dram = 4.0 * double(n) * cfg.iters;
    region.finish(r.flops, RTRACE_FP16, r.bytes_dram);
    const std::vector<__half> out = x.download();
    for (const __half& o : out) got.push_back(double(__half2float(o)));
    prec = RTRACE_FP16;
    counter = "fp16";
    expected_count = std::int64_t(got.size());
  } else if (v == "fp32" || v == "half2") {
    // n scalars (fp32) or n half2 pairs (half2).
    const bool half = v == "half2";
    symbol = half ? "rtd_fma_half2_k" : "rtd_fma_fp32_k";
    const unsigned grid = blocks_for(n, threads, 65536);
    if (half) {
      std::vector<__half2> h(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) h[i] = __half2(__double2half(fma_start(i)), __double2half(fma_start(i)));
      DeviceArray<__half2> x(n);
      x.upload(h);
      RTD_CUDA(cudaDeviceSynchronize());
      const __half2 one = __half2(__double2half(1.0), __double2half(1.0));
      const __half2 up = __half2(__double2half(kFmaStep), __double2half(kFmaStep));
      const __half2 down = __half2(__double2half(-kFmaStep), __double2half(-kFmaStep));
      AnnotatedRegion region(r.region);
      GpuTimer timer;
      for (int it = 0; it < cfg.iters; ++it) rtd_fma_half2_k<<<grid, threads>>>(x.get(), n, one, it % 2 ? down : up);
      RTD_LAUNCHED(symbol.c_str());
      seconds = timer.stop();
      // math FLOPs: 2 lanes x (multiply + add) per HFMA2
      r.flops = 4.0 * kFmaChain * double(n) * cfg.iters;
      region.finish(r.flops, RTRACE_FP16, 8.0 * double(n) * cfg.iters);
      const std::vector<__half2> out = x.download();
      got.resize(2 * out.size());
      for (std::size_t i = 0; i < out.size(); ++i) {
        got[2 * i] = double(__half2float(__low2half(out[i])));
        got[2 * i + 1] = double(__half2float(__high2half(out[i])));
      }
      prec = RTRACE_FP16;
      counter = "fp16";
    } else {
      std::vector<float> h(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) h[i] = float(fma_start(i));
      DeviceArray<float> x(n);
      x.upload(h);
      RTD_CUDA(cudaDeviceSynchronize());
      AnnotatedRegion region(r.region);
      GpuTimer timer;
      for (int it = 0; it < cfg.iters; ++it)
        rtd_fma_fp32_k<<<grid, threads>>>(x.get(), n, 1.0f, float(it % 2 ? -kFmaStep : kFmaStep));
      RTD_LAUNCHED(symbol.c_str());
      seconds = timer.stop();
      r.flops = 2.0 * kFmaChain * double(n) * cfg.iters;
      region.finish(r.flops, RTRACE_FP32, 8.0 * double(n) * cfg.iters);
      const std::vector<float> out = x.download();
      got.assign(out.begin(), out.end());
    }
    r.bytes_dram = 8.0 * double(n) * cfg.iters;
    expected_count = std::int64_t(got.size());
  } else {
    // Tensor cores: one MMA chain per warp, n accumulator elements in all
    // (256 per warp for 16x16 FP16 tiles, 64 for 8x8 FP64), 4 warps per block.
    const bool fp64 = v == "dmma-fp64";
    symbol = fp64 ? "rtd_fma_dmma_fp64_k" : "rtd_fma_wmma_fp16_k";
    const std::int64_t tile = fp64 ? 64 : 256;  // accumulator elements per warp
    const double macs_per_mma = fp64 ? 8.0 * 8 * 4 : 16.0 * 16 * 16;
    const int warps_per_block = 4;
    const std::int64_t per_block = tile * warps_per_block;
    const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, (n + per_block - 1) / per_block));
    const std::int64_t warps = std::int64_t(grid) * warps_per_block;
    std::vector<double> acc0(static_cast<std::size_t>(warps * tile));
    for (std::int64_t i = 0; i < warps * tile; ++i) acc0[i] = fma_start(i);
    AnnotatedRegion region(r.region);
    double secs = 0;
    if (fp64) {
      DeviceArray<double> up(64), down(64), acc(acc0.size());
      std::vector<double> a_up(64), a_down(64);
      for (int i = 0; i < 32; ++i) a_up[i] = a_down[i] = kFmaStep / 4;       // A: 8x4
      for (int i = 32; i < 64; ++i) { a_up[i] = 1.0; a_down[i] = -1.0; }     // B: 4x8
      up.upload(a_up);
      down.upload(a_down);
      acc.upload(acc0);
      RTD_CUDA(cudaDeviceSynchronize());
      GpuTimer timer;
      for (int it = 0; it < cfg.iters; ++it)
        rtd_fma_dmma_fp64_k<<<grid, warps_per_block * 32>>>(it % 2 ? down.get() : up.get(), acc.get());
      RTD_LAUNCHED(symbol.c_str());
      secs = timer.stop();
      got = acc.download();
      prec = RTRACE_FP64;
    } else {
      DeviceArray<__half> up(512), down(512);
      DeviceArray<float> acc(acc0.size());
      std::vector<__half> a_up(512), a_down(512);
      for (int i = 0; i < 256; ++i) a_up[i] = a_down[i] = __double2half(kFmaStep / 16);  // A: 16x16, 2^-12
      for (int i = 256; i < 512; ++i) { a_up[i] = __double2half(1.0); a_down[i] = __double2half(-1.0); }
      up.upload(a_up);
      down.upload(a_down);
      std::vector<float> accf(acc0.begin(), acc0.end());
      acc.upload(accf);
      RTD_CUDA(cudaDeviceSynchronize());
      GpuTimer timer;
      for (int it = 0; it < cfg.iters; ++it)
        rtd_fma_wmma_fp16_k<<<grid, warps_per_block * 32>>>(it % 2 ? down.get() : up.get(), acc.get());
      RTD_LAUNCHED(symbol.c_str());
      secs = timer.stop();
      const std::vector<float> out = acc.download();
      got.assign(out.begin(), out.end());
      prec = RTRACE_FP16;
    }
    seconds = secs;
    // FLOPs = 2 x multiply-accumulates; the tracer's tensor_ops are math ops (1 per MAC).
    r.flops = 2.0 * macs_per_mma * kFmaChain * double(warps) * cfg.iters;
    r.bytes_dram = (fp64 ? 16.0 : 8.0) * double(warps * tile) * cfg.iters;
    region.finish(r.flops, prec, r.bytes_dram);
    counter = fp64 ? "tensor-fp64" : "tensor-fp16";  // the source type's tensor column (schema 1.8)
    expected_count = warps * tile;
  }
  r.seconds = seconds;
  expect(symbol, r.region, cfg.iters, r.flops, true, r.bytes_dram, counter);

  if (cfg.inject_error && !got.empty()) got[got.size() / 2] += 1.0;
  r.ok = true;
  for (std::int64_t i = 0; i < expected_count; ++i) {
    // half2 holds each start value in both lanes
    const std::int64_t elem = v == "half2" ? i / 2 : i;
    const double want = fma_final(elem, cfg.iters);
    if (got[static_cast<std::size_t>(i)] != want) {
      std::ostringstream os;
      os.precision(17);
      os << symbol << ": element " << i << " = " << got[static_cast<std::size_t>(i)] << ", expected " << want
         << " (exactly)";
      r.check = os.str();
      r.ok = false;
      break;
    }
  }
  if (r.ok) r.check = "ok";
  return r;
}

// ---------------------------------------------------------------- driver
std::int64_t default_gpu_size(const std::string& k) {
  if (k == "triad") return 1LL << 27;    // 134 M elements, 3.2 GB: far beyond any L2
  if (k == "stencil7") return 512;       // 2 x 1.1 GB
  if (k == "gsrb") return 384;
  if (k == "spmv") return 1LL << 23;     // 8.4 M rows, ~165 M non-zeros
  if (k == "gpp") return 2048;           // nbands 128, ngpown 256, ncouls 2048
  if (k == "dgemm") return 4096;
  if (k == "fma") return 1LL << 22;       // elements (half2: pairs; tensor variants: accumulator elements)
  return 0;
}
int default_gpu_iters(const std::string& k) {
  if (k == "triad" || k == "stencil7" || k == "spmv") return 20;
  if (k == "gsrb") return 10;
  if (k == "gpp") return 2;
  if (k == "dgemm") return 5;
  return 1;
}

KernelResult run_gpu_kernel(const KernelConfig& cfg) {
  if (cfg.kernel == "triad") return gpu_triad(cfg);
  if (cfg.kernel == "stencil7") return gpu_stencil7(cfg);
  if (cfg.kernel == "gsrb") return gpu_gsrb(cfg);
  if (cfg.kernel == "spmv") return gpu_spmv(cfg);
  if (cfg.kernel == "gpp") return gpu_gpp(cfg);
  if (cfg.kernel == "fma") return gpu_fma(cfg);
  return gpu_dgemm(cfg);
}

void write_expectations(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("--expect " + path + ": cannot write");
  out << "# symbol\tregion\tlaunches\tflops_executed\tflops_exact\tdram_bytes\tprecision\n";
  out.precision(17);
  for (const auto& e : g_expectations)
    out << e.symbol << '\t' << e.region << '\t' << e.launches << '\t' << e.flops << '\t' << (e.flops_exact ? 1 : 0)
        << '\t' << e.dram_bytes << '\t' << e.precision << '\n';
  if (!out) throw std::runtime_error("--expect " + path + ": write failed");
}

}  // namespace
}  // namespace rtrace::demo

int main(int argc, char** argv) {
  using namespace rtrace::demo;
  ProgramInfo program;
  program.name = "rtrace-demo-cuda";
  program.kernels = {"triad", "stencil7", "gsrb", "spmv", "gpp", "dgemm", "fma", "all"};
  program.has_threads = false;
  program.has_expect = true;
  program.cuda = true;
  DemoOptions opt;
  try {
    if (!parse_options(argc, argv, program, opt)) return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\n", program.name.c_str(), e.what());
    return 2;
  }

  // cudart loads the driver (libcuda.so.1) here; without one this fails cleanly.
  // Ask the loader first: cudart's message for a missing driver ("CUDA driver
  // version is insufficient") sends people looking for the wrong problem.
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
  } else {
    std::fprintf(stderr, "%s: no GPU found (libcuda.so.1, the NVIDIA driver, is not loadable)\n", program.name.c_str());
    return 2;
  }
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "%s: no GPU found (%s)\n", program.name.c_str(),
                 probe != cudaSuccess ? cudaGetErrorString(probe) : "no CUDA devices");
    return 2;
  }

  bool all_ok = true;
  try {
    RTD_CUDA(cudaSetDevice(0));
    cudaDeviceProp prop{};
    RTD_CUDA(cudaGetDeviceProperties(&prop, 0));
    if (!opt.quiet)
      std::printf("%s: device 0: %s, %d SMs, compute capability %d.%d\n", program.name.c_str(), prop.name,
                  prop.multiProcessorCount, prop.major, prop.minor);
    std::vector<std::string> kernels;
    if (opt.kernel == "all")
      kernels = {"triad", "stencil7", "gsrb", "spmv", "gpp", "dgemm"};
    else
      kernels = {opt.kernel};
    for (const auto& kernel : kernels)
      for (const auto& variant : select_variants(kernel, opt.variant, true)) {
        KernelConfig cfg;
        cfg.kernel = kernel;
        cfg.variant = variant;
        cfg.size = opt.size > 0 ? opt.size : default_gpu_size(kernel);
        cfg.iters = opt.iters > 0 ? opt.iters : default_gpu_iters(kernel);
        cfg.inject_error = opt.inject_error;
        const KernelResult r = run_gpu_kernel(cfg);
        if (!opt.quiet) std::cout << summary_line(program.name, r, 0, 1) << std::endl;
        if (!r.ok) {
          std::fprintf(stderr, "%s: %s: check FAILED: %s\n", program.name.c_str(), r.region.c_str(), r.check.c_str());
          all_ok = false;
        }
      }
    if (!opt.expect_file.empty()) write_expectations(opt.expect_file);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of host memory (try a smaller --size)\n", program.name.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.name.c_str(), e.what());
    return 1;
  }
  return all_ok ? 0 : 1;
}
