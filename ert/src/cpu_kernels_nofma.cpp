// No-FMA variant: compiled with -ffp-contract=off so beta*x+alpha stays a
// separate multiply and add (ERT's "No-FMA" ceiling).
#include "cpu_kernels_impl.hpp"

namespace rtrace::ert::detail {

KernelFn nofma_kernel(bool fp64, int log2_f) {
  return fp64 ? kernel_table<double>[log2_f] : kernel_table<float>[log2_f];
}

}  // namespace rtrace::ert::detail
