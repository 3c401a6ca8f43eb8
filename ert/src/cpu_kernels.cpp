// Dispatch from a run-time KernelSpec to the compile-time kernel instances.
// Compiled with the kernels' ISA flags (rtrace_ert_kernels).
#include "rtrace/ert/cpu_kernels.hpp"

#include "cpu_kernels_impl.hpp"

#include <stdexcept>
#include <string>

namespace rtrace::ert {

namespace {

int log2_of(int f) {
  int l = 0;
  while ((1 << l) < f) ++l;
  return l;
}

detail::KernelFn find_kernel(const KernelSpec& spec) {
  if (!is_supported_flops_per_element(spec.flops_per_element))
    throw std::invalid_argument("ERT kernel: flops per element " + std::to_string(spec.flops_per_element) +
                                " is not one of 1, 2, 4, ..., " + std::to_string(kMaxFlopsPerElement));
  if (spec.precision != Precision::FP64 && spec.precision != Precision::FP32)
    throw std::invalid_argument(std::string("ERT kernel: the CPU kernels have no ") + to_string(spec.precision) +
                                " precision");
  const bool fp64 = spec.precision == Precision::FP64;
  const int l = log2_of(spec.flops_per_element);
  switch (spec.variant) {
    case Variant::Fma: return detail::fma_kernel(fp64, l);
    case Variant::NoFma: return detail::nofma_kernel(fp64, l);
    default:
      throw std::invalid_argument(std::string("ERT kernel: the CPU kernels have no `") + to_string(spec.variant) +
                                  "` variant");
  }
}

template <class T>
void reference(T* a, std::size_t n, std::int64_t trials, int f, T alpha) {
  for (std::int64_t t = 0; t < trials; ++t) {
    const T alpha_t = (t & 1) ? -alpha : alpha;
    for (std::size_t i = 0; i < n; ++i) {
      T beta = T(0.8);
      if (f == 1) {
        beta = a[i] + alpha_t;
      } else {
        for (int r = 0; r < f / 2; ++r) beta = beta * a[i] + alpha_t;
      }
      a[i] = beta;
    }
  }
}

}  // namespace

void run_cpu_kernel(const KernelSpec& spec, void* data, std::size_t elements, std::int64_t trials) {
  find_kernel(spec)(data, elements, trials, kKernelAlpha);
}

void reference_cpu_kernel(const KernelSpec& spec, void* data, std::size_t elements, std::int64_t trials) {
  find_kernel(spec);  // same validation
  if (spec.precision == Precision::FP64)
    reference(static_cast<double*>(data), elements, trials, spec.flops_per_element, kKernelAlpha);
  else
    reference(static_cast<float*>(data), elements, trials, spec.flops_per_element, static_cast<float>(kKernelAlpha));
}

void init_cpu_block(Precision p, void* data, std::size_t elements) noexcept {
  // Values in [0.25, 0.45]: with beta starting at 0.8 and |alpha| = 0.1 every
  // intermediate stays within [-0.5, 0.5].
  if (p == Precision::FP64) {
    auto* a = static_cast<double*>(data);
    for (std::size_t i = 0; i < elements; ++i) a[i] = 0.25 + 0.05 * static_cast<double>(i % 5);
  } else if (p == Precision::FP32) {
    auto* a = static_cast<float*>(data);
    for (std::size_t i = 0; i < elements; ++i) a[i] = 0.25f + 0.05f * static_cast<float>(i % 5);
  }
}

const char* cpu_kernel_isa() noexcept {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#elif defined(__SSE2__)
  return "sse2";
#elif defined(__ARM_NEON)
  return "neon";
#else
  return "scalar";
#endif
}

std::size_t cpu_kernel_vector_bytes() noexcept { return detail::kVectorBytes; }

std::size_t kernel_block_elements(Precision p) noexcept {
  return p == Precision::FP32 ? detail::block_elements<float>() : detail::block_elements<double>();
}

bool cpu_kernel_has_fma() noexcept { return detail::fma_unit_has_hardware_fma(); }

}  // namespace rtrace::ert
