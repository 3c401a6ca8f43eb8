/* One function per kind of floating-point instruction, each run N times:
   the counting tool must find exactly the FLOPs the comments give (FMA = 2),
   under the precision and vector width named (tests/counts/tool_flops_test.sh).
   Built for x86-64-v3 (AVX2 + FMA): what Valgrind 3.19 can run. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE double sse_scalar(const double* a, int n) {   /* 2 fp64 scalar per iteration */
  double s = 0;
  for (int i = 0; i < n; ++i) s = s * 1.0000001 + a[i];
  return s;
}
NOINLINE float sse_scalar_f(const float* a, int n) {   /* 2 fp32 scalar */
  float s = 0;
  for (int i = 0; i < n; ++i) s = s * 1.0000001f + a[i];
  return s;
}
NOINLINE __m128d sse_packed(__m128d x, __m128d y, int n) {   /* 4 fp64 v128 */
  for (int i = 0; i < n; ++i) x = _mm_add_pd(_mm_mul_pd(x, y), y);
  return x;
}
NOINLINE __m128 sse_packed_f(__m128 x, __m128 y, int n) {   /* 8 fp32 v128 */
  for (int i = 0; i < n; ++i) x = _mm_add_ps(_mm_mul_ps(x, y), y);
  return x;
}
NOINLINE __m256d avx_packed(__m256d x, __m256d y, int n) {   /* 8 fp64 v256 */
  for (int i = 0; i < n; ++i) x = _mm256_add_pd(_mm256_mul_pd(x, y), y);
  return x;
}
NOINLINE __m256 avx_packed_f(__m256 x, __m256 y, int n) {   /* 16 fp32 v256 */
  for (int i = 0; i < n; ++i) x = _mm256_add_ps(_mm256_mul_ps(x, y), y);
  return x;
}
NOINLINE __m256d fma256(__m256d x, __m256d y, int n) {   /* 8 fp64 v256 (4 lanes x 2) */
  for (int i = 0; i < n; ++i) x = _mm256_fmadd_pd(x, y, y);
  return x;
}
NOINLINE __m256 fma256f(__m256 x, __m256 y, int n) {   /* 16 fp32 v256 */
  for (int i = 0; i < n; ++i) x = _mm256_fmadd_ps(x, y, y);
  return x;
}
NOINLINE __m128d fma128(__m128d x, __m128d y, int n) {   /* 4 fp64 v128 */
  for (int i = 0; i < n; ++i) x = _mm_fmadd_pd(x, y, y);
  return x;
}
NOINLINE __m128 fma128f(__m128 x, __m128 y, int n) {   /* 8 fp32 v128 */
  for (int i = 0; i < n; ++i) x = _mm_fmadd_ps(x, y, y);
  return x;
}
NOINLINE double fma_sd(double x, double y, int n) {   /* 2 fp64 scalar */
  for (int i = 0; i < n; ++i) x = __builtin_fma(x, y, y);
  return x;
}
NOINLINE float fma_ss(float x, float y, int n) {   /* 2 fp32 scalar */
  for (int i = 0; i < n; ++i) x = __builtin_fmaf(x, y, y);
  return x;
}
NOINLINE __m256d div_sqrt256(__m256d x, __m256d y, int n) {   /* 8 fp64 v256 */
  for (int i = 0; i < n; ++i) x = _mm256_sqrt_pd(_mm256_div_pd(x, y));
  return x;
}
NOINLINE __m256d min_max256(__m256d x, __m256d y, int n) {   /* 8 fp64 v256 */
  for (int i = 0; i < n; ++i) x = _mm256_max_pd(_mm256_min_pd(x, y), y);
  return x;
}
NOINLINE long double x87(long double x, long double y, int n) {   /* 2 fp64 scalar (x87) */
  for (int i = 0; i < n; ++i) x = x * y + y;
  return x;
}
NOINLINE __m256d hadd256(__m256d x, __m256d y, int n) {   /* 4 fp64 v256 (VEX: two 128-bit halves) */
  for (int i = 0; i < n; ++i) x = _mm256_hadd_pd(x, y);
  return x;
}
NOINLINE __m256d addsub256(__m256d x, __m256d y, int n) {   /* 4 fp64 v256 (one op per lane) */
  for (int i = 0; i < n; ++i) x = _mm256_addsub_pd(x, y);
  return x;
}
NOINLINE __m256 rcp_rsqrt256(__m256 x, int n) {   /* 16 fp32 v256 */
  for (int i = 0; i < n; ++i) x = _mm256_rsqrt_ps(_mm256_rcp_ps(x));
  return x;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 1000;
  double* a = malloc(sizeof(double) * (size_t)n);
  float* f = malloc(sizeof(float) * (size_t)n);
  for (int i = 0; i < n; ++i) {
    a[i] = i;
    f[i] = (float)i;
  }
  double sink = sse_scalar(a, n) + sse_scalar_f(f, n);
  __m128d x = _mm_set1_pd(1.0), y = _mm_set1_pd(0.5);
  __m128 xf = _mm_set1_ps(1.0f), yf = _mm_set1_ps(0.5f);
  __m256d X = _mm256_set1_pd(1), Y = _mm256_set1_pd(0.5);
  __m256 XF = _mm256_set1_ps(1), YF = _mm256_set1_ps(0.5);
  x = sse_packed(x, y, n);
  xf = sse_packed_f(xf, yf, n);
  X = avx_packed(X, Y, n);
  XF = avx_packed_f(XF, YF, n);
  X = fma256(X, Y, n);
  XF = fma256f(XF, YF, n);
  x = fma128(x, y, n);
  xf = fma128f(xf, yf, n);
  sink += fma_sd(1, 0.5, n) + fma_ss(1, 0.5f, n);
  X = div_sqrt256(X, Y, n);
  X = min_max256(X, Y, n);
  sink += (double)x87(1, 0.5, n);
  X = hadd256(X, Y, n);
  X = addsub256(X, Y, n);
  XF = rcp_rsqrt256(XF, n);
  double out[4];
  _mm256_storeu_pd(out, X);
  sink += out[0] + _mm_cvtsd_f64(x) + _mm_cvtss_f32(xf) + _mm256_cvtss_f32(XF);
  printf("%g\n", sink);
  free(a);
  free(f);
  return 0;
}
