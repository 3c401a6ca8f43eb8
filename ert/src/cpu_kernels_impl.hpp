// The ERT kernel bodies, compiled twice: cpu_kernels_fma.cpp (multiply+add
// contracted into FMA, -ffp-contract=fast) and cpu_kernels_nofma.cpp
// (-ffp-contract=off). Private to rtrace_ert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rtrace::ert::detail {

// Defined once per variant translation unit.
using KernelFn = void (*)(void* data, std::size_t n, std::int64_t trials, double alpha);
KernelFn fma_kernel(bool fp64, int log2_f);
KernelFn nofma_kernel(bool fp64, int log2_f);
bool fma_unit_has_hardware_fma();
inline constexpr int kKernelTableSize = 11;

// Everything below has internal linkage: the two translation units compile the
// same templates with different floating-point contraction, and the linker
// must never merge one variant's instance into the other.
namespace {

// Widest vector register the compiler may use for this translation unit.
#if defined(__AVX512F__)
constexpr std::size_t kVectorBytes = 64;
#elif defined(__AVX__)
constexpr std::size_t kVectorBytes = 32;
#elif defined(__SSE2__) || defined(__ARM_NEON) || defined(__ALTIVEC__)
constexpr std::size_t kVectorBytes = 16;
#else
constexpr std::size_t kVectorBytes = 8;
#endif

// Independent vector chains per register block. An FMA has a latency of about
// 4 cycles and CPUs issue up to 2 per cycle, so >= 8 chains keep the pipes full;
// 8 blocks of beta plus 8 of A still fit the 16 (AVX2) or 32 (AVX-512) registers.
constexpr std::size_t kChains = 8;

// SIMD vector types of the kernels' width (GCC/Clang vector extensions).
template <class T>
struct SimdVector;
template <>
struct SimdVector<double> {
  typedef double type __attribute__((vector_size(kVectorBytes)));
};
template <>
struct SimdVector<float> {
  typedef float type __attribute__((vector_size(kVectorBytes)));
};

template <class T>
constexpr std::size_t block_elements() {
  return kChains * kVectorBytes / sizeof(T) > 0 ? kChains * kVectorBytes / sizeof(T) : 1;
}

// One element the way ERT writes it (also the tail of the blocked loop).
template <class T, int F>
inline T ert_element(T x, T alpha) {
  T beta = T(0.8);
  if constexpr (F == 1) {
    beta = x + alpha;
  } else {
    for (int r = 0; r < F / 2; ++r) beta = beta * x + alpha;
  }
  return beta;
}

// `trials` sweeps over a[0..n). alpha flips sign every trial: the values stay
// bounded (|a| <= 0.5 for any F and trial count) and no trial can be hoisted.
//
// F == 1 is ERT's bandwidth kernel: a plain loop the compiler vectorises,
// unrolled 8 vectors deep: one vector per loop step ran 680-1000 GB/s in L1
// on the Zen 5 VM of issue 32 depending on the size, unrolled 1020-1090 at
// every size (tests/ert/check_simd.sh checks the object code).
// For F >= 2 each register block holds kChains SIMD vectors of independent
// elements (GCC/Clang vector types, so the chains provably live in registers);
// the F/2 multiply-add steps have a compile-time trip count.
template <class T, int F>
void ert_kernel(T* __restrict a, std::size_t n, std::int64_t trials, T alpha) {
  if constexpr (F == 1) {
    for (std::int64_t t = 0; t < trials; ++t) {
      const T alpha_t = (t & 1) ? -alpha : alpha;
#pragma GCC unroll 8
      for (std::size_t i = 0; i < n; ++i) a[i] = a[i] + alpha_t;
    }
  } else {
    using V = typename SimdVector<T>::type;
    static_assert(sizeof(V) == kVectorBytes, "SIMD vector type has the wrong width");
    constexpr std::size_t L = kVectorBytes / sizeof(T);   // lanes per vector
    constexpr std::size_t B = block_elements<T>();         // kChains * L
    const std::size_t blocked = n - n % B;
    for (std::int64_t t = 0; t < trials; ++t) {
      const T alpha_t = (t & 1) ? -alpha : alpha;
      const V alpha_v = V{} + alpha_t;
      for (std::size_t i = 0; i < blocked; i += B) {
        V x[kChains];
        V beta[kChains];
#pragma GCC unroll 16
        for (std::size_t c = 0; c < kChains; ++c) {
          std::memcpy(&x[c], a + i + c * L, sizeof(V));
          beta[c] = V{} + T(0.8);
        }
#pragma GCC unroll 4
        for (int r = 0; r < F / 2; ++r) {
#pragma GCC unroll 16
          for (std::size_t c = 0; c < kChains; ++c) beta[c] = beta[c] * x[c] + alpha_v;
        }
#pragma GCC unroll 16
        for (std::size_t c = 0; c < kChains; ++c) std::memcpy(a + i + c * L, &beta[c], sizeof(V));
      }
      for (std::size_t i = blocked; i < n; ++i) a[i] = ert_element<T, F>(a[i], alpha_t);
    }
  }
}

template <class T, int F>
void ert_kernel_erased(void* data, std::size_t n, std::int64_t trials, double alpha) {
  ert_kernel<T, F>(static_cast<T*>(data), n, trials, static_cast<T>(alpha));
}

// Table of instances for F = 1, 2, 4, ..., 1024 (index = log2 F).
template <class T>
constexpr KernelFn kernel_table[] = {
    ert_kernel_erased<T, 1>,   ert_kernel_erased<T, 2>,   ert_kernel_erased<T, 4>,
    ert_kernel_erased<T, 8>,   ert_kernel_erased<T, 16>,  ert_kernel_erased<T, 32>,
    ert_kernel_erased<T, 64>,  ert_kernel_erased<T, 128>, ert_kernel_erased<T, 256>,
    ert_kernel_erased<T, 512>, ert_kernel_erased<T, 1024>,
};
}  // namespace
}  // namespace rtrace::ert::detail
