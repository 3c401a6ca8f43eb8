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
enum class Variant { Fma, NoFma, Half2, Mma };

const char* to_string(Precision p) noexcept;   // "fp64", "fp32", "fp16"
const char* to_string(Variant v) noexcept;     // "fma", "nofma", "half2", "mma"
Precision precision_from_string(const std::string& s);  // throws std::invalid_argument
std::size_t element_bytes(Precision p) noexcept;        // 8, 4, 2

// The ceiling name of a compute kernel family: "FP64 FMA", "FP32 no-FMA",
// "FP16 half2", "TC FP16->FP32", "TC FP64".
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

}  // namespace rtrace::ert
