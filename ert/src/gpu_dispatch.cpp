#include "gpu_dispatch.hpp"

#include "rtrace/ert/gpu.hpp"

#include <string>

namespace rtrace::ert {

const char* to_string(GpuKernelFamily f) noexcept {
  switch (f) {
    case GpuKernelFamily::Stream: return "stream (16-byte loads)";
    case GpuKernelFamily::Ert: return "ert";
    case GpuKernelFamily::Half2: return "half2";
    case GpuKernelFamily::Wmma: return "wmma";
    case GpuKernelFamily::Wgmma: return "wgmma";
    case GpuKernelFamily::Dmma: return "dmma";
  }
  return "?";
}

GpuKernelFamily gpu_kernel_family(const Measurement& m, bool wgmma_planned) {
  const KernelSpec& k = m.kernel;
  const std::string what = std::string(to_string(m.series)) + " " + to_string(k.precision) + " " +
                           to_string(k.variant) + " F=" + std::to_string(k.flops_per_element);
  if (m.series == Series::Bandwidth) {
    // Same accounting as ert_kernel<double, *, 1>: 1 FLOP and 16 bytes per element.
    if (k.precision == Precision::FP64 && k.flops_per_element == 1 &&
        (k.variant == Variant::Fma || k.variant == Variant::NoFma))
      return GpuKernelFamily::Stream;
    throw GpuError("no GPU bandwidth kernel for " + what + " (the stream kernel is FP64, F=1)");
  }
  switch (k.variant) {
    case Variant::Fma:
    case Variant::NoFma:
      if (k.precision == Precision::FP64 || k.precision == Precision::FP32) return GpuKernelFamily::Ert;
      break;
    case Variant::Half2:
      if (k.precision == Precision::FP16) return GpuKernelFamily::Half2;
      break;
    case Variant::Mma:
    case Variant::MmaSync:
      if (k.precision == Precision::FP64) return GpuKernelFamily::Dmma;
      if (k.precision == Precision::FP16)
        return wgmma_planned && k.variant == Variant::Mma && k.flops_per_element == kGpuWgmmaFp16FlopsPerWarp
                   ? GpuKernelFamily::Wgmma
                   : GpuKernelFamily::Wmma;
      break;
  }
  throw GpuError("no GPU kernel for " + what);
}

}  // namespace rtrace::ert
