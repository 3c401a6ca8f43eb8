// What one ERT kernel is and what it costs: the FLOP and byte accounting.
//
// The ERT kernel family (Berkeley Lab ERT 1.1.0, "kernel1"): for every element
// of a block A and every trial,
//
//     beta = 0.8                                 (a register, never stored)
//     F == 1:  beta = A[i] + alpha               1 add                 = 1 FLOP
//     F == 2m: m times  beta = beta*A[i] + alpha m multiplies + m adds = 2m FLOPs
//     A[i] = beta
//
// F is ERT's FLOPPERITER, stored as ErtSampleRow::flops_per_element. The
// "fma" variant lets each multiply+add be one fused multiply-add (still
// counted as 2 FLOPs, as ERT and the vendors count it); "nofma" forbids
// contraction, so the CPU issues a separate multiply and add.
//
// Bytes: each element is read once and written once per trial, so one trial
// over n elements moves 2 * sizeof(T) * n bytes (no write-allocate traffic:
// the line being written was just read). FP16 "half2" counts 2 bytes per
// half; tensor-core kernels ("mma") count FLOPs of the matrix product only
// (2*M*N*K per mma) and move no global memory in their inner loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rtrace::ert {

enum class Precision { FP64, FP32, FP16 };
// Mma: the device's fastest tensor-core kernel (wgmma on sm_90 when built,
// else mma.sync through WMMA); MmaSync: the mma.sync kernel measured beside
// wgmma on sm_90, its own named ceiling.
enum class Variant { Fma, NoFma, Half2, Mma, MmaSync };

const char* to_string(Precision p) noexcept;   // "fp64", "fp32", "fp16"
const char* to_string(Variant v) noexcept;     // "fma", "nofma", "half2", "mma", "mma.sync"
Precision precision_from_string(const std::string& s);  // throws std::invalid_argument
std::size_t element_bytes(Precision p) noexcept;        // 8, 4, 2

// The ceiling name of a compute kernel family: "FP64 FMA", "FP32 no-FMA",
// "FP16 half2", "TC FP16->FP32", "TC FP16->FP32 mma.sync", "TC FP64".
std::string compute_ceiling_name(Precision p, Variant v);

struct KernelSpec {
  Precision precision = Precision::FP64;
  Variant variant = Variant::Fma;
  int flops_per_element = 1;   // ERT's F: 1 or an even number up to kMaxFlopsPerElement
};

inline constexpr int kMaxFlopsPerElement = 1024;
// The F values the kernels are compiled for: 1, 2, 4, ..., 1024.
const std::vector<int>& supported_flops_per_element();
bool is_supported_flops_per_element(int f) noexcept;

// Per element and trial (see the header comment).
double bytes_per_element(const KernelSpec& k) noexcept;   // 2 * sizeof(T)
double flops_per_element(const KernelSpec& k) noexcept;   // F

struct SampleCost {
  double bytes = 0;
  double flops = 0;
};
// Total traffic and FLOPs of `trials` sweeps over `elements` elements.
SampleCost sample_cost(const KernelSpec& k, std::int64_t elements, std::int64_t trials) noexcept;

// The GPU's tensor-core kernels. Their "element" is one warp and their F the
// FLOPs one warp does per loop iteration (2*M*N*K per MMA, FMA = 2 FLOPs).
inline constexpr int kGpuMmaChains = 4;  // independent accumulators per warp
inline constexpr int kGpuWmmaFp16FlopsPerWarp = kGpuMmaChains * 2 * 16 * 16 * 16;  // m16n16k16 mma.sync
inline constexpr int kGpuDmmaFp64FlopsPerWarp = kGpuMmaChains * 2 * 8 * 8 * 4;      // m8n8k4 DMMA
inline constexpr int kGpuWgmmaPerIteration = 4;                                     // m64n256k16 per warpgroup
inline constexpr int kGpuWgmmaFp16FlopsPerWarp = kGpuWgmmaPerIteration * 2 * 64 * 256 * 16 / 4;

struct GpuTensorKernel {
  KernelSpec spec;
  int warps_per_sm = 32;  // resident warps planned per SM
  bool wgmma = false;     // the sm_90a warpgroup kernel
};
// What the GPU ERT measures with tensor cores on compute capability
// major.minor: wgmma (as "TC FP16->FP32") on 9.0 when the build has the sm_90a
// kernel and `use_wgmma`, mma.sync then as its own "TC FP16->FP32 mma.sync";
// elsewhere mma.sync is the FP16 tensor ceiling; DMMA FP64 from sm_80.
std::vector<GpuTensorKernel> gpu_tensor_kernels(int cc_major, int cc_minor, bool have_wgmma, bool use_wgmma);

}  // namespace rtrace::ert
