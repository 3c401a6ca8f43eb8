/* A molecular-dynamics-like OpenMP workload for bench/sampling_overhead.sh:
 * every time step computes pair forces over a fixed neighbour list
 * (indirect loads, a few dozen FLOPs per pair), integrates, and reduces the
 * energy: three parallel regions and their barriers per step, thousands of
 * steps, as in a real MD code (issue 25: 2-thread runs of a PME code cost
 * 6.4% under sampling). Deterministic; prints the energy so nothing is
 * optimised away.
 *   omp_md_steps [steps, default 3000] [particles, default 4000] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NEIGHBOURS 48

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 3000;
  const int n = argc > 2 ? atoi(argv[2]) : 4000;
  double* x = malloc(sizeof(double) * 3 * (size_t)n);
  double* v = calloc(3 * (size_t)n, sizeof(double));
  double* f = malloc(sizeof(double) * 3 * (size_t)n);
  int* nb = malloc(sizeof(int) * NEIGHBOURS * (size_t)n);
  if (!x || !v || !f || !nb) return 1;
  unsigned seed = 12345;
  for (int i = 0; i < 3 * n; ++i) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (double)(seed >> 8) / (double)(1u << 24) * 20.0;
  }
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < NEIGHBOURS; ++k) {
      seed = seed * 1103515245u + 12345u;
      int j = (int)((seed >> 8) % (unsigned)n);
      nb[i * NEIGHBOURS + k] = j == i ? (j + 1) % n : j;
    }
  double energy = 0;
  for (int s = 0; s < steps; ++s) {
    double e = 0;
#pragma omp parallel for schedule(static) reduction(+ : e)
    for (int i = 0; i < n; ++i) {
      double fx = 0, fy = 0, fz = 0;
      for (int k = 0; k < NEIGHBOURS; ++k) {
        const int j = nb[i * NEIGHBOURS + k];
        const double dx = x[3 * i] - x[3 * j], dy = x[3 * i + 1] - x[3 * j + 1], dz = x[3 * i + 2] - x[3 * j + 2];
        const double r2 = dx * dx + dy * dy + dz * dz + 0.5;
        const double inv2 = 1.0 / r2, inv6 = inv2 * inv2 * inv2;
        const double fr = 24.0 * inv2 * inv6 * (2.0 * inv6 - 1.0) * 1e-3;
        fx += fr * dx;
        fy += fr * dy;
        fz += fr * dz;
        e += 4.0 * inv6 * (inv6 - 1.0);
      }
      f[3 * i] = fx;
      f[3 * i + 1] = fy;
      f[3 * i + 2] = fz;
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 3 * n; ++i) {
      v[i] = 0.999 * v[i] + 1e-4 * f[i];
      x[i] += 1e-4 * v[i];
    }
    double kin = 0;
#pragma omp parallel for schedule(static) reduction(+ : kin)
    for (int i = 0; i < 3 * n; ++i) kin += 0.5 * v[i] * v[i];
    energy = e + kin;
  }
  printf("energy %.6e after %d steps of %d particles\n", energy, steps, n);
  free(x);
  free(v);
  free(f);
  free(nb);
  return 0;
}
