// Steering the counting run to the timed run's run-time dispatch
// (counts/src/dispatch.cpp), on observations as the tracer writes them.
#include "rtrace/counts/dispatch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

using namespace rtrace::counts;
using rtrace::store::DispatchRow;
using rtrace::store::get_str;

namespace {

DispatchRow row(const char* library, const char* item, const char* choice, const char* detail = "") {
  DispatchRow r;
  std::memset(&r, 0, sizeof r);
  rtrace::store::set_str(r.library, library);
  rtrace::store::set_str(r.item, item);
  rtrace::store::set_str(r.choice, choice);
  rtrace::store::set_str(r.detail, detail);
  return r;
}

const char* const kDynamic = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64";
const char* const kAllButAvx512 = "SSSE3,SSE4_1,SSE4_2,POPCNT,MOVBE,LZCNT,BMI1,BMI2,AVX,AVX2,FMA,ERMS";

bool has(const std::vector<std::string>& env, const std::string& e) {
  return std::find(env.begin(), env.end(), e) != env.end();
}

}  // namespace

TEST(CountsDispatch, OpenBlasCoreIsSteeredWhereValgrindRunsIt) {
  Steering s = plan_steering({{0, {row("openblas", "core", "Prescott", kDynamic)}}}, {});
  EXPECT_TRUE(has(s.env, "OPENBLAS_CORETYPE=Prescott"));
  EXPECT_EQ(s.steered, "OpenBLAS core Prescott (OPENBLAS_CORETYPE=Prescott)");
  EXPECT_EQ(s.not_steered, "");

  // AVX-512 kernels: Valgrind 3.19 cannot run them; said, not steered.
  s = plan_steering({{0, {row("openblas", "core", "Cooperlake", kDynamic)}}}, {});
  EXPECT_TRUE(s.env.empty());
  EXPECT_NE(s.not_steered.find("Cooperlake kernels use AVX-512"), std::string::npos) << s.not_steered;

  // The user's own OPENBLAS_CORETYPE reaches both runs: kept.
  s = plan_steering({{0, {row("openblas", "core", "Haswell", kDynamic)}}}, {"OPENBLAS_CORETYPE=Haswell"});
  EXPECT_TRUE(s.env.empty());
  EXPECT_NE(s.steered.find("set for both runs"), std::string::npos);
}

TEST(CountsDispatch, GlibcFeaturesTheTimedRunLackedAreTurnedOff) {
  Steering s = plan_steering({{0, {row("glibc", "hwcaps", "SSSE3,SSE4_1,SSE4_2,POPCNT,AVX,ERMS")}}}, {});
  EXPECT_TRUE(has(s.env, "GLIBC_TUNABLES=glibc.cpu.hwcaps=-MOVBE,-LZCNT,-BMI1,-BMI2,-AVX2,-FMA")) << s.env.at(0);
  // Appended to the user's own tunables.
  s = plan_steering({{0, {row("glibc", "hwcaps", "SSSE3,SSE4_1,SSE4_2,POPCNT,MOVBE,LZCNT,BMI1,BMI2,AVX,FMA,ERMS")}}},
                    {"GLIBC_TUNABLES=glibc.malloc.check=3:glibc.cpu.hwcaps=-ERMS"});
  EXPECT_TRUE(has(s.env, "GLIBC_TUNABLES=glibc.malloc.check=3:glibc.cpu.hwcaps=-ERMS,-AVX2")) << s.env.at(0);
  // AVX-512 string functions: nothing to turn off, and said.
  s = plan_steering({{0, {row("glibc", "hwcaps", (std::string(kAllButAvx512) + ",AVX512F,AVX512VL,AVX512BW").c_str()),
                          row("glibc", "memcpy", "__memmove_avx512_unaligned_erms")}}},
                    {});
  EXPECT_TRUE(s.env.empty());
  EXPECT_NE(s.not_steered.find("memcpy __memmove_avx512_unaligned_erms"), std::string::npos) << s.not_steered;
}

TEST(CountsDispatch, MklFftwAndRanksThatDiffer) {
  Steering s = plan_steering({{0, {row("mkl", "cbwr_branch", "SSE4_2")}}}, {});
  EXPECT_TRUE(has(s.env, "MKL_ENABLE_INSTRUCTIONS=SSE4_2"));
  EXPECT_NE(s.steered.find("untested on MKL"), std::string::npos);
  s = plan_steering({{0, {row("mkl", "cbwr_branch", "AVX512")}}}, {});
  EXPECT_TRUE(s.env.empty());
  EXPECT_NE(s.not_steered.find("AVX-512"), std::string::npos);

  s = plan_steering({{0, {row("fftw", "loaded", "libfftw3.so.3")}}}, {});
  EXPECT_NE(s.not_steered.find("FFTW_ESTIMATE"), std::string::npos);

  s = plan_steering({{0, {row("openblas", "core", "Haswell", kDynamic)}}, {1, {row("openblas", "core", "Zen", kDynamic)}}},
                    {});
  EXPECT_TRUE(has(s.env, "OPENBLAS_CORETYPE=Haswell"));
  EXPECT_NE(s.not_steered.find("1 rank(s) chose otherwise than rank 0"), std::string::npos);
}

TEST(CountsDispatch, CountedKernelsOfAnotherCoreAreSaid) {
  CountedRank r;
  r.names = {"dgemm_kernel_HASWELL", "libopenblas.so.0", "fftw_execute", "libfftw3.so.3"};
  rtrace::store::CountRow kernel{}, fft{};
  kernel.function_id = 0;
  kernel.module_id = 1;
  kernel.flops_fp64_v256 = 100;
  fft.function_id = 2;
  fft.module_id = 3;
  r.counts = {kernel, fft};
  std::map<std::int64_t, CountedRank> ranks{{0, r}};
  Steering s = plan_steering({{0, {row("openblas", "core", "Prescott", kDynamic)}}}, {});
  check_counted_dispatch(ranks, s);
  EXPECT_NE(s.not_steered.find("OpenBLAS: timed core Prescott, counted kernels of HASWELL"), std::string::npos)
      << s.not_steered;
  EXPECT_NE(s.not_steered.find("FFTW"), std::string::npos);
  Steering none;
  check_counted_dispatch(ranks, none);
  EXPECT_NE(none.not_steered.find("counted HASWELL kernels; the timed run's core was not observed"), std::string::npos);
  record_steering(ranks, s);
  EXPECT_EQ(get_str(ranks.at(0).info.not_steered).substr(0, 8), "OpenBLAS");
}
