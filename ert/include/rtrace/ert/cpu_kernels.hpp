// The CPU ERT kernels: one compiled instance per (precision, variant, F).
//
// Each kernel sweeps `trials` times over a block of `elements` values of its
// precision, updating it in place (see kernel_spec.hpp). Elements are
// processed in register blocks of `kernel_block_elements()` so that many
// independent beta chains hide the FMA latency (one ERT chain per element is
// latency-bound otherwise); the block loop is vectorised by the compiler with
// the ISA this library was built for (RTRACE_NATIVE: -march=native).
#pragma once

#include "rtrace/ert/kernel_spec.hpp"

#include <cstddef>
#include <cstdint>

namespace rtrace::ert {

// Runs one kernel. `data` points to `elements` values of spec.precision
// (double or float), 64-byte aligned. Throws std::invalid_argument for an
// unsupported F or a precision/variant the CPU kernels do not have.
void run_cpu_kernel(const KernelSpec& spec, void* data, std::size_t elements, std::int64_t trials);

// Fills a block with the values the kernels expect (stable under any F and
// trial count: |A| stays <= 0.5, no overflow, no denormals).
void init_cpu_block(Precision p, void* data, std::size_t elements) noexcept;

// The same computation, written as ERT writes it (one element at a time, no
// blocking); used by tests to check the fast kernels.
void reference_cpu_kernel(const KernelSpec& spec, void* data, std::size_t elements, std::int64_t trials);

// alpha used by the kernels (passed at run time so nothing is constant-folded).
inline constexpr double kKernelAlpha = 0.1;

// What the kernels were compiled for: "avx512", "avx2", "avx", "sse2", "neon", "scalar".
const char* cpu_kernel_isa() noexcept;
// Vector register width the kernels were compiled for, in bytes (64 for AVX-512).
std::size_t cpu_kernel_vector_bytes() noexcept;
// Elements processed together (independent chains) in one register block.
std::size_t kernel_block_elements(Precision p) noexcept;
// True when the "fma" kernels were compiled with hardware FMA instructions.
bool cpu_kernel_has_fma() noexcept;

}  // namespace rtrace::ert
