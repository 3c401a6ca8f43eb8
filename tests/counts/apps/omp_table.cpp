// Each OpenMP thread keeps its own table of TABLE_BYTES and sweeps it; the
// sweeps (a fixed total) are split among the threads. With a table that
// fits a thread's share of the L3 at 1 thread and not at 2, the L3->DRAM
// bytes jump at 2 threads while the FLOPs stay the same (tests/counts).
// SETUP_MS (default 0): each thread first spends that long setting up (a
// sleep, as waiting for its own input would), which does not shrink with
// more threads: the timed step then loses speedup on any machine, whatever
// its real caches do with a table sized for a shrunken simulated hierarchy.
//   omp_table TABLE_BYTES SWEEPS [SETUP_MS]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__attribute__((noinline)) double sweep_table(const std::vector<double>& table, int sweeps) {
  double sum = 0;
  for (int s = 0; s < sweeps; ++s)
    for (double v : table) sum += v * 0.5;   // 2 FLOPs per element
  return sum;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: omp_table TABLE_BYTES SWEEPS [SETUP_MS]\n");
    return 2;
  }
  const long bytes = std::atol(argv[1]);
  const int sweeps = std::atoi(argv[2]);
  const int setup_ms = argc > 3 ? std::atoi(argv[3]) : 0;
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    if (setup_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(setup_ms));
    std::vector<double> table(static_cast<std::size_t>(bytes) / sizeof(double), 1.0 + t);
    const int mine = sweeps / n + (t < sweeps % n ? 1 : 0);
    total += sweep_table(table, mine);
  }
  std::printf("%g\n", total);
  return 0;
}
