/* rtrace-count-calibrate: three short reference kernels that `rtrace counts
   --calibrate` times natively and under the counting tool, to predict the
   counting pass's cost before it starts (docs/counts.md, "Cost"). Each
   kernel times itself in CPU seconds (CLOCK_PROCESS_CPUTIME_ID: a
   loaded machine slows both runs, the ratio stays) and prints "NAME SECONDS".
     stream   a triad over 3 x 2 MiB arrays: memory accesses, one per 2 FLOPs
     fp       a cache-resident multiply-add loop on a 32x32 block: FLOPs
     int      integer hashing with data-dependent branches: no memory, no FP
     vec      a register-blocked AVX2 FMA kernel (as in an optimised BLAS): many
              FLOPs per access; only where the CPU has AVX2 and FMA
   Built for the baseline x86-64 (SSE2), `vec` for AVX2+FMA by a target
   attribute: it runs natively and under Valgrind anywhere the counting pass
   does. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define N_STREAM (256 * 1024)
static double a[N_STREAM], b[N_STREAM], c[N_STREAM];

static __attribute__((noinline)) double stream(int reps) {
  for (long i = 0; i < N_STREAM; ++i) {
    b[i] = (double)i;
    c[i] = 1.0;
  }
  for (int r = 0; r < reps; ++r)
    for (long i = 0; i < N_STREAM; ++i) a[i] = b[i] + 3.0 * c[i];
  return a[N_STREAM / 2];
}

#define N_FP 32
static double x[N_FP][N_FP], y[N_FP][N_FP], z[N_FP][N_FP];

static __attribute__((noinline)) double fp(int reps) {
  for (int i = 0; i < N_FP; ++i)
    for (int j = 0; j < N_FP; ++j) {
      x[i][j] = 1.0 / (1 + i + j);
      y[i][j] = 0.5 * (i - j);
      z[i][j] = 0;
    }
  for (int r = 0; r < reps; ++r)
    for (int i = 0; i < N_FP; ++i)
      for (int k = 0; k < N_FP; ++k) {
        const double xik = x[i][k];
        for (int j = 0; j < N_FP; ++j) z[i][j] = z[i][j] * 0.999 + xik * y[k][j];
      }
  return z[N_FP / 2][N_FP / 2];
}

static __attribute__((noinline)) unsigned integer(long reps) {
  unsigned h = 2166136261u, n = 0;
  for (long i = 0; i < reps; ++i) {
    h = (h ^ (unsigned)i) * 16777619u;
    if (h & 1) n += h >> 7;
    else if (h & 2) n ^= h;
    else n -= h >> 3;
  }
  return n + h;
}

#define N_VEC 64
static double va[N_VEC * 4], vb[N_VEC * 8], vc[4 * 8];

/* C(4x8) += A(4xK) B(Kx8), accumulators in registers: 8 FMAs of 4 lanes per
   3 loads, like the inner kernel of a GEMM. */
static __attribute__((noinline, target("avx2,fma"))) double vec(int reps) {
  typedef double v4 __attribute__((vector_size(32)));
  for (int i = 0; i < N_VEC * 4; ++i) va[i] = 1.0 / (1 + i);
  for (int i = 0; i < N_VEC * 8; ++i) vb[i] = 0.25 * (i % 13);
  v4 acc[4][2] = {{{0}}};
  for (int r = 0; r < reps; ++r)
    for (int k = 0; k < N_VEC; ++k) {
      v4 b0, b1;
      __builtin_memcpy(&b0, &vb[k * 8], sizeof b0);
      __builtin_memcpy(&b1, &vb[k * 8 + 4], sizeof b1);
      for (int i = 0; i < 4; ++i) {
        const double ai = va[k * 4 + i];
        const v4 a = {ai, ai, ai, ai};
        acc[i][0] = __builtin_ia32_vfmaddpd256(a, b0, acc[i][0]);
        acc[i][1] = __builtin_ia32_vfmaddpd256(a, b1, acc[i][1]);
      }
    }
  for (int i = 0; i < 4; ++i) __builtin_memcpy(&vc[i * 8], &acc[i][0], sizeof(acc[i]));
  return vc[5];
}

int main(int argc, char** argv) {
  /* Work sizes: about 10-30 ms of CPU each natively on a current core,
     0.05-1 s under the tool. */
  const double scale = argc > 1 ? atof(argv[1]) : 1.0;
  double t0 = now();
  double s = stream((int)(80 * scale));
  double t1 = now();
  s += fp((int)(4000 * scale));
  double t2 = now();
  unsigned u = integer((long)(1.6e7 * scale));
  double t3 = now();
  printf("stream %.6f\nfp %.6f\nint %.6f\n", t1 - t0, t2 - t1, t3 - t2);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const double t4 = now();
    s += vec((int)(60000 * scale));
    printf("vec %.6f\n", now() - t4);
  }
  fprintf(stderr, "%g %u\n", s, u); /* keeps the results alive */
  return 0;
}
