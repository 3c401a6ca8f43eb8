#include "rtrace/ert/cpu_runner.hpp"

#include "rtrace/ert/cpu_kernels.hpp"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace rtrace::ert {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Denormals would make some kernels microcode-slow; the ERT values never get
// there, but a benchmark must not depend on that.
void flush_denormals() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ | DAZ
#endif
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Block {
  void* data = nullptr;
  std::size_t bytes = 0;
  ~Block() { std::free(data); }
};

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

CpuRunResult run_cpu_plan(const std::vector<Measurement>& plan, const TrialPolicy& policy, int threads,
                          RankGroup& ranks) {
  if (threads < 1) throw CpuRunError("ERT: the number of threads must be at least 1");
  std::size_t max_bytes = 4096;
  for (const Measurement& m : plan)
    max_bytes = std::max(max_bytes, std::size_t(m.elements_per_worker) * element_bytes(m.kernel.precision));
  // Round up to whole 2 MiB pages for large blocks (transparent huge pages
  // cut TLB misses at DRAM sizes).
  const std::size_t align = max_bytes >= (std::size_t(4) << 20) ? (std::size_t(2) << 20) : 4096;
  max_bytes = (max_bytes + align - 1) / align * align;

  const std::vector<int> cpus = allowed_cpus();
  // Ranks of one node that were not bound by their launcher (mpirun --bind-to
  // none) all see the same CPUs: give each rank its own slice (rank-major), or
  // every rank's thread 0 would share CPU 0 and each run would be preempted.
  double cpu_set_id = double(cpus.size());
  for (int c : cpus) cpu_set_id = std::fmod(cpu_set_id * 131.0 + c + 1, 9007199254740881.0);
  const bool node_shares_cpus = ranks.local_size() > 1 && ranks.node_agrees(cpu_set_id);
  const int first_slot = node_shares_cpus ? ranks.local_rank() * threads : 0;
  // OMP_PROC_BIND/OMP_PLACES set by the user: OpenMP already places the
  // threads (and has bound the master), so keep its placement.
  const char* bind_env = std::getenv("OMP_PROC_BIND");
  const bool openmp_binds = bind_env && std::string(bind_env) != "false" && std::string(bind_env) != "FALSE";
  CpuRunResult result;
  result.thread_cpus.resize(std::size_t(threads));
  SweepController controller(plan, policy, threads, ranks.size());

  std::atomic<int> failures{0};
  std::string failure;  // written once under the atomic's protection
  bool done = false;
  bool synchronised = false;  // the ranks left their last collective together (master writes, after a barrier)
  PlannedRun run;
  // Per thread: when its kernel started and ended, and the fraction of that
  // time it was on its CPU.
  std::vector<double> on_cpu(std::size_t(threads), 1.0);
  std::vector<double> began(std::size_t(threads), 0.0), ended(std::size_t(threads), 0.0);

  const bool debug = std::getenv("RTRACE_ERT_DEBUG") != nullptr;  // one line per timed run on stderr
  const double start = now_seconds();
  omp_set_dynamic(0);
#pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num();
    if (!openmp_binds) {
      const int cpu = cpus[std::size_t(first_slot + tid) % cpus.size()];
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0 && failures.fetch_add(1) == 0)
        failure = "cannot pin thread " + std::to_string(tid) + " to CPU " + std::to_string(cpu);
    }
    result.thread_cpus[std::size_t(tid)] = sched_getcpu();
    flush_denormals();

    // Each thread allocates and first-touches its own block, so its pages sit
    // on its NUMA node and no two threads share a cache line.
    Block block;
    if (posix_memalign(&block.data, align, max_bytes) != 0) {
      block.data = nullptr;
      if (failures.fetch_add(1) == 0)
        failure = "thread " + std::to_string(tid) + ": cannot allocate " + std::to_string(max_bytes >> 20) +
                  " MiB for its working set";
    } else {
      block.bytes = max_bytes;
#ifdef MADV_HUGEPAGE
      if (align > 4096) madvise(block.data, max_bytes, MADV_HUGEPAGE);
#endif
      init_cpu_block(Precision::FP64, block.data, max_bytes / sizeof(double));
    }
#pragma omp barrier
#pragma omp master
    {
      // Agree across ranks so nobody waits in a barrier forever.
      if (ranks.any(failures.load() > 0)) done = true;
    }
#pragma omp barrier
    // `done` is only read right after a barrier (never at the loop head,
    // where the master may already be writing it for the next round).
    for (bool stop = done; !stop;) {
#pragma omp master
      { done = !controller.next(run); }
#pragma omp barrier
      if (done) break;
      stop = false;
      const Measurement& m = plan[run.measurement];
      // The FLOP series re-initialise their (L1-sized) block so every kernel
      // starts from the same bounded values.
      if (run.first_of_measurement && m.series == Series::Flops)
        init_cpu_block(m.kernel.precision, block.data, std::size_t(m.elements_per_worker));
#pragma omp barrier
      // All ranks start together: a barrier once per measurement (working
      // set), every other run right after the allgather that ended the
      // previous one (one collective per run).
      if (!synchronised || run.first_of_measurement) {
#pragma omp master
        { ranks.barrier(); }
#pragma omp barrier
      }
      const double wall0 = now_seconds();
      const double cpu0 = thread_cpu_seconds();
      run_cpu_kernel(m.kernel, block.data, std::size_t(m.elements_per_worker), run.trials);
      const double cpu = thread_cpu_seconds() - cpu0;
      const double wall1 = now_seconds();
      const double wall = wall1 - wall0;
      // Wall time longer than CPU time: the thread was preempted mid-run.
      on_cpu[std::size_t(tid)] = wall > 50e-6 ? std::min(1.0, cpu / wall) : 1.0;
      began[std::size_t(tid)] = wall0;
      ended[std::size_t(tid)] = wall1;
#pragma omp barrier
#pragma omp master
      {
        // The run lasts from the first thread's start to the last thread's
        // end (not barrier to barrier: waking a sleeping thread can take a
        // scheduler tick on a busy machine). Threads that did not run
        // together (start skew over 5 % of the run) make a disturbed run.
        const double first = *std::min_element(began.begin(), began.end());
        const double last_start = *std::max_element(began.begin(), began.end());
        const double span = *std::max_element(ended.begin(), ended.end()) - first;
        double fraction = *std::min_element(on_cpu.begin(), on_cpu.end());
        if (span > 50e-6 && last_start - first > 0.05 * span) fraction = std::min(fraction, 0.0);
        if (debug)
          std::fprintf(stderr, "ert run: measurement %zu trials %lld warmup %d span %.6f skew %.6f on_cpu %.3f\n",
                       run.measurement, static_cast<long long>(run.trials), int(run.warmup), span, last_start - first,
                       *std::min_element(on_cpu.begin(), on_cpu.end()));
        const std::vector<double> pairs = ranks.allgather2(span, fraction);
        std::vector<double> all, fractions;
        for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
          all.push_back(pairs[i]);
          fractions.push_back(pairs[i + 1]);
        }
        controller.record(*std::max_element(all.begin(), all.end()), all,
                          *std::min_element(fractions.begin(), fractions.end()));
        synchronised = true;
      }
    }
  }
  for (double c : ranks.allgather(double(result.thread_cpus.empty() ? -1 : result.thread_cpus[0])))
    result.rank_cpus.push_back(int(c));
  if (failures.load() > 0) throw CpuRunError("ERT: " + (failure.empty() ? std::string("another rank failed") : failure));
  result.seconds = now_seconds() - start;
  result.runs = controller.runs_done();
  result.runs_redone = controller.runs_redone();
  result.samples = controller.take_samples();
  return result;
}

}  // namespace rtrace::ert
