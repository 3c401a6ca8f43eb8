// The CPU kernels: same results as ERT's plain loop, FLOP/byte accounting,
// and the ISA they were compiled for.
#include "rtrace/ert/cpu_kernels.hpp"
#include "rtrace/ert/kernel_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace rtrace::ert;

namespace {

struct Aligned {
  explicit Aligned(std::size_t bytes) : p(std::aligned_alloc(64, (bytes + 63) / 64 * 64)) {}
  ~Aligned() { std::free(p); }
  void* p;
};

template <class T>
void expect_matches_reference(const KernelSpec& k, std::size_t n, std::int64_t trials) {
  Aligned fast(n * sizeof(T)), ref(n * sizeof(T));
  init_cpu_block(k.precision, fast.p, n);
  init_cpu_block(k.precision, ref.p, n);
  run_cpu_kernel(k, fast.p, n, trials);
  reference_cpu_kernel(k, ref.p, n, trials);
  const T* a = static_cast<const T*>(fast.p);
  const T* b = static_cast<const T*>(ref.p);
  // FMA rounds once per step, the reference twice: allow a few ulps per step.
  const double tol = (sizeof(T) == 8 ? 1e-12 : 1e-4) * (1 + k.flops_per_element);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(double(a[i]))) << "element " << i;
    ASSERT_NEAR(double(a[i]), double(b[i]), tol) << to_string(k.precision) << " " << to_string(k.variant) << " F="
                                                 << k.flops_per_element << " element " << i;
    ASSERT_LE(std::abs(double(a[i])), 0.6) << "values must stay bounded";
  }
}

}  // namespace

TEST(KernelAccounting, BytesAndFlopsPerElement) {
  EXPECT_EQ(bytes_per_element({Precision::FP64, Variant::Fma, 1}), 16.0);   // read + write a double
  EXPECT_EQ(bytes_per_element({Precision::FP32, Variant::NoFma, 8}), 8.0);  // read + write a float
  EXPECT_EQ(bytes_per_element({Precision::FP16, Variant::Half2, 2}), 4.0);
  EXPECT_EQ(flops_per_element({Precision::FP64, Variant::Fma, 1}), 1.0);    // beta = A + alpha
  EXPECT_EQ(flops_per_element({Precision::FP64, Variant::Fma, 2}), 2.0);    // one FMA = 2 FLOPs
  EXPECT_EQ(flops_per_element({Precision::FP64, Variant::NoFma, 1024}), 1024.0);  // 512 mul + 512 add
  const SampleCost c = sample_cost({Precision::FP64, Variant::Fma, 16}, 1000, 7);
  EXPECT_DOUBLE_EQ(c.bytes, 16.0 * 1000 * 7);
  EXPECT_DOUBLE_EQ(c.flops, 16.0 * 1000 * 7);
  const SampleCost f = sample_cost({Precision::FP32, Variant::NoFma, 1}, 1 << 20, 3);
  EXPECT_DOUBLE_EQ(f.bytes, 8.0 * (1 << 20) * 3);
  // arithmetic intensity of F flops on 2*sizeof(T) bytes
  EXPECT_DOUBLE_EQ(flops_per_element({Precision::FP64, Variant::Fma, 64}) / bytes_per_element({Precision::FP64, Variant::Fma, 64}), 4.0);
}

TEST(KernelAccounting, SupportedFlopsAndNames) {
  const auto& f = supported_flops_per_element();
  ASSERT_EQ(f.size(), 11u);
  EXPECT_EQ(f.front(), 1);
  EXPECT_EQ(f.back(), 1024);
  EXPECT_TRUE(is_supported_flops_per_element(256));
  EXPECT_FALSE(is_supported_flops_per_element(3));
  EXPECT_FALSE(is_supported_flops_per_element(2048));
  EXPECT_EQ(compute_ceiling_name(Precision::FP64, Variant::Fma), "FP64 FMA");
  EXPECT_EQ(compute_ceiling_name(Precision::FP32, Variant::NoFma), "FP32 no-FMA");
  EXPECT_EQ(compute_ceiling_name(Precision::FP16, Variant::Half2), "FP16 half2");
  EXPECT_EQ(compute_ceiling_name(Precision::FP16, Variant::Mma), "TC FP16->FP32");
  EXPECT_EQ(compute_ceiling_name(Precision::FP64, Variant::Mma), "TC FP64");
  EXPECT_EQ(compute_ceiling_name(Precision::FP16, Variant::MmaSync), "TC FP16->FP32 mma.sync");
  EXPECT_THROW(precision_from_string("fp8"), std::invalid_argument);
}

TEST(CpuKernels, EveryInstanceComputesWhatErtComputes) {
  // Sizes with and without a partial register block at the end.
  const std::size_t block = kernel_block_elements(Precision::FP64);
  for (std::size_t n : {block * 3, block * 2 + 5, std::size_t(7)}) {
    for (Variant v : {Variant::Fma, Variant::NoFma}) {
      for (int f : supported_flops_per_element()) {
        expect_matches_reference<double>({Precision::FP64, v, f}, n, 3);
        expect_matches_reference<float>({Precision::FP32, v, f}, n + kernel_block_elements(Precision::FP32), 3);
      }
    }
  }
}

TEST(CpuKernels, RejectsWhatTheyDoNotHave) {
  Aligned a(1024);
  EXPECT_THROW(run_cpu_kernel({Precision::FP64, Variant::Fma, 3}, a.p, 8, 1), std::invalid_argument);
  EXPECT_THROW(run_cpu_kernel({Precision::FP16, Variant::Half2, 2}, a.p, 8, 1), std::invalid_argument);
  EXPECT_THROW(run_cpu_kernel({Precision::FP64, Variant::Mma, 2}, a.p, 8, 1), std::invalid_argument);
}

TEST(CpuKernels, BuiltForTheWidestSimdOfThisHost) {
  // With RTRACE_NATIVE (the default) the kernels use the host's widest SIMD.
  // Register blocks hold 8 independent vector chains.
  EXPECT_EQ(kernel_block_elements(Precision::FP64) * 8, 8 * cpu_kernel_vector_bytes());
  EXPECT_EQ(kernel_block_elements(Precision::FP32), 2 * kernel_block_elements(Precision::FP64));
#if defined(RTRACE_TEST_NATIVE) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  const char* expected = __builtin_cpu_supports("avx512f") ? "avx512"
                         : __builtin_cpu_supports("avx2") ? "avx2"
                         : __builtin_cpu_supports("avx")  ? "avx"
                                                          : "sse2";
  EXPECT_STREQ(cpu_kernel_isa(), expected);
  if (__builtin_cpu_supports("fma")) {
    EXPECT_TRUE(cpu_kernel_has_fma());
  }
#else
  GTEST_SKIP() << "RTRACE_NATIVE is off or not x86: kernels built for the baseline ISA (" << cpu_kernel_isa() << ")";
#endif
}

// With every element 1.0 and one trial, beta = beta * 1 + alpha runs F/2 steps
// from 0.8 and ends at exactly 0.8 + (F/2) * alpha (each step adds alpha; no
// step can be folded away, x is read at run time). So the result counts the
// multiply-add steps a kernel really executed: a kernel that runs fewer FLOPs
// than its F says fails here, where the converging recurrence of the test
// above cannot tell F = 64 from F = 128 within rounding.
template <class T>
void expect_counted_steps(const KernelSpec& k, std::size_t n) {
  Aligned a(n * sizeof(T));
  T* x = static_cast<T*>(a.p);
  for (std::size_t i = 0; i < n; ++i) x[i] = T(1);
  run_cpu_kernel(k, a.p, n, 1);
  T want = T(0.8);
  const T alpha = static_cast<T>(kKernelAlpha);
  if (k.flops_per_element == 1) {
    want = T(1) + alpha;  // the bandwidth kernel: a[i] + alpha
  } else {
    for (int r = 0; r < k.flops_per_element / 2; ++r) want = want + alpha;
  }
  const double steps = k.flops_per_element == 1 ? 0.0 : (double(x[0]) - 0.8) / double(alpha);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_NEAR(double(x[i]), double(want), sizeof(T) == 8 ? 1e-9 : 1e-2)
        << to_string(k.precision) << " " << to_string(k.variant) << " F=" << k.flops_per_element << " element " << i
        << ": the kernel ran about " << steps << " multiply-add steps, its FLOP count says "
        << k.flops_per_element / 2;
}

TEST(CpuKernels, ExecuteTheFlopsTheyCount) {
  for (Variant v : {Variant::Fma, Variant::NoFma}) {
    for (int f : supported_flops_per_element()) {
      const std::size_t n64 = kernel_block_elements(Precision::FP64) * 2 + 3;  // blocked loop and tail
      const std::size_t n32 = kernel_block_elements(Precision::FP32) * 2 + 3;
      expect_counted_steps<double>({Precision::FP64, v, f}, n64);
      expect_counted_steps<float>({Precision::FP32, v, f}, n32);
    }
  }
}
