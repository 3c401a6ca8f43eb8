// FMA variant: compiled with -ffp-contract=fast so every beta*x+alpha is one
// fused multiply-add where the ISA has one (see ert/CMakeLists.txt).
#include "cpu_kernels_impl.hpp"

namespace rtrace::ert::detail {

KernelFn fma_kernel(bool fp64, int log2_f) {
  return fp64 ? kernel_table<double>[log2_f] : kernel_table<float>[log2_f];
}

bool fma_unit_has_hardware_fma() {
#if defined(__FMA__) || defined(__AVX512F__) || defined(__aarch64__) || defined(__FP_FAST_FMA)
  return true;
#else
  return false;
#endif
}

}  // namespace rtrace::ert::detail
