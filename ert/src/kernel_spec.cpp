#include "rtrace/ert/kernel_spec.hpp"

#include <stdexcept>

namespace rtrace::ert {

const char* to_string(Precision p) noexcept {
  switch (p) {
    case Precision::FP64: return "fp64";
    case Precision::FP32: return "fp32";
    case Precision::FP16: return "fp16";
  }
  return "?";
}

const char* to_string(Variant v) noexcept {
  switch (v) {
    case Variant::Fma: return "fma";
    case Variant::NoFma: return "nofma";
    case Variant::Half2: return "half2";
    case Variant::Mma: return "mma";
    case Variant::MmaSync: return "mma.sync";
  }
  return "?";
}

Precision precision_from_string(const std::string& s) {
  if (s == "fp64") return Precision::FP64;
  if (s == "fp32") return Precision::FP32;
  if (s == "fp16") return Precision::FP16;
  throw std::invalid_argument("unknown precision `" + s + "` (expected fp64, fp32 or fp16)");
}

std::size_t element_bytes(Precision p) noexcept {
  switch (p) {
    case Precision::FP64: return 8;
    case Precision::FP32: return 4;
    case Precision::FP16: return 2;
  }
  return 0;
}

std::string compute_ceiling_name(Precision p, Variant v) {
  if (v == Variant::Mma) return p == Precision::FP64 ? "TC FP64" : "TC FP16->FP32";
  if (v == Variant::MmaSync) return p == Precision::FP64 ? "TC FP64 mma.sync" : "TC FP16->FP32 mma.sync";
  if (v == Variant::Half2) return "FP16 half2";
  std::string name = p == Precision::FP64 ? "FP64" : p == Precision::FP32 ? "FP32" : "FP16";
  return name + (v == Variant::Fma ? " FMA" : " no-FMA");
}

const std::vector<int>& supported_flops_per_element() {
  static const std::vector<int> values = [] {
    std::vector<int> v;
    for (int f = 1; f <= kMaxFlopsPerElement; f *= 2) v.push_back(f);
    return v;
  }();
  return values;
}

bool is_supported_flops_per_element(int f) noexcept {
  return f >= 1 && f <= kMaxFlopsPerElement && (f & (f - 1)) == 0;
}

double bytes_per_element(const KernelSpec& k) noexcept {
  // Tensor-core kernels keep their operands in registers: no memory traffic.
  if (k.variant == Variant::Mma || k.variant == Variant::MmaSync) return 0.0;
  return 2.0 * static_cast<double>(element_bytes(k.precision));
}

double flops_per_element(const KernelSpec& k) noexcept { return static_cast<double>(k.flops_per_element); }

std::vector<GpuTensorKernel> gpu_tensor_kernels(int cc_major, int cc_minor, bool have_wgmma, bool use_wgmma) {
  std::vector<GpuTensorKernel> out;
  if (cc_major < 7) return out;
  const bool wgmma = have_wgmma && use_wgmma && cc_major == 9 && cc_minor == 0;
  if (wgmma) {
    // Three warpgroups per SM: 154 registers per thread (ptxas, CUDA 13.0) x 128
    // threads x 3 fit the 64K registers; the third hides more of each one's waits.
    out.push_back({{Precision::FP16, Variant::Mma, kGpuWgmmaFp16FlopsPerWarp}, 12, true});
    out.push_back({{Precision::FP16, Variant::MmaSync, kGpuWmmaFp16FlopsPerWarp}, 32, false});
  } else {
    out.push_back({{Precision::FP16, Variant::Mma, kGpuWmmaFp16FlopsPerWarp}, 32, false});
  }
  if (cc_major >= 8) out.push_back({{Precision::FP64, Variant::Mma, kGpuDmmaFp64FlopsPerWarp}, 32, false});
  return out;
}

SampleCost sample_cost(const KernelSpec& k, std::int64_t elements, std::int64_t trials) noexcept {
  const double n = static_cast<double>(elements) * static_cast<double>(trials);
  return SampleCost{bytes_per_element(k) * n, flops_per_element(k) * n};
}

}  // namespace rtrace::ert
