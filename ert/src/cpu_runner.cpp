#include "rtrace/ert/cpu_runner.hpp"

#include "rtrace/ert/clock.hpp"
#include "rtrace/ert/cpu_kernels.hpp"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until done(). A sleeping thread (futex) can take a scheduler tick to
// wake on a VM (4 ms: the vCPU halts and the host must reschedule it), so the
// workers never sleep between runs. Every few thousand spins it yields, for
// when threads share a CPU (more threads than CPUs).
template <class Done>
void spin_until(Done done) {
  for (unsigned spins = 1; !done(); ++spins) {
    cpu_relax();
    if ((spins & 0xFFFu) == 0) sched_yield();
  }
}

// A barrier whose waiters spin (see spin_until).
class SpinBarrier {
 public:
  explicit SpinBarrier(int threads) : threads_(threads) {}
  void wait() {
    const unsigned generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == threads_ - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    spin_until([&] { return generation_.load(std::memory_order_acquire) != generation; });
  }

 private:
  const int threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<unsigned> generation_{0};
};

// The start of a timed run: every worker spins at the gate; once all have
// arrived, the master runs `before_release` (the ranks' barrier) and opens
// it. A worker that was slow to get here delays the opening, never the run:
// the timed region starts when all are spinning.
class StartGate {
 public:
  explicit StartGate(int threads) : threads_(threads) {}
  template <class Action>
  void pass(bool master, Action before_release) {
    if (master) {
      spin_until([&] { return arrived_.load(std::memory_order_acquire) == threads_ - 1; });
      arrived_.store(0, std::memory_order_relaxed);
      before_release();
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    const unsigned generation = generation_.load(std::memory_order_acquire);
    arrived_.fetch_add(1, std::memory_order_acq_rel);
    spin_until([&] { return generation_.load(std::memory_order_acquire) != generation; });
  }

 private:
  const int threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<unsigned> generation_{0};
};

// Test seam (tests/ert/wakeup_test.sh): RTRACE_ERT_TEST_WAKE_DELAY_US=N makes
// the last worker of the last rank sleep N us before each run of the FLOP
// kernels the ceilings come from (the three highest F), the way a vCPU that
// takes a scheduler tick to wake did in issue 23. Only those runs: delaying
// every run would make most runs disturbed, and the whole-run "busy machine"
// verdict would hide whether the FLOP ceilings themselves are right.
bool test_wake_delay_applies(const Measurement& m) {
  return m.series == Series::Flops && !m.one_worker && m.kernel.flops_per_element >= kMaxFlopsPerElement / 4;
}
long test_wake_delay_us() {
  const char* v = std::getenv("RTRACE_ERT_TEST_WAKE_DELAY_US");
  return v ? std::max(0L, std::atol(v)) : 0;
}

// Test seam (tests/ert/reference_test.sh): RTRACE_ERT_TEST_SLOWDOWN=N makes
// every worker run each timed run's kernel N times while counting it once:
// every ceiling comes out at 1/N of the machine's, for the whole run, with no
// worker preempted (what a host SMT sibling running someone else's FMAs does
// to a vCPU, issue 32). Only the machine's own history can tell.
long test_slowdown() {
  const char* v = std::getenv("RTRACE_ERT_TEST_SLOWDOWN");
  return v ? std::max(1L, std::atol(v)) : 1;
}

// A shared-memory node's identity for comparing clocks across ranks: every
// rank of a node reads the same CLOCK_MONOTONIC.
double node_clock_id() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  double h = 0;
  for (const char* c = host; *c; ++c) h = std::fmod(h * 131.0 + static_cast<unsigned char>(*c), 9007199254740881.0);
  return h;
}

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

bool running_in_virtual_machine() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) return (c >> 31) & 1u;
#endif
  return false;
}

namespace {

// The calling thread becomes worker 0 and is pinned to one CPU; this gives
// it back the CPUs it had, so that the next plan (a re-measurement) sees
// every allowed CPU again. (It did not: a re-measurement ran all its threads
// on CPU 0, one after the other.)
class RestoreAffinity {
 public:
  RestoreAffinity() { ok_ = pthread_getaffinity_np(pthread_self(), sizeof(set_), &set_) == 0; }
  ~RestoreAffinity() {
    if (ok_) pthread_setaffinity_np(pthread_self(), sizeof(set_), &set_);
  }
  RestoreAffinity(const RestoreAffinity&) = delete;
  RestoreAffinity& operator=(const RestoreAffinity&) = delete;

 private:
  cpu_set_t set_{};
  bool ok_ = false;
};

}  // namespace

CpuRunResult run_cpu_plan(const std::vector<Measurement>& plan, const TrialPolicy& policy, int threads,
                          RankGroup& ranks, const DramSearch& dram_search) {
  if (threads < 1) throw CpuRunError("ERT: the number of threads must be at least 1");
  const RestoreAffinity restore_affinity;
  // Every thread's block holds the plan's largest working set per worker;
  // thread 0's also the one-worker reference's.
  std::size_t max_bytes = 4096, block0_bytes = 4096;
  for (const Measurement& m : plan) {
    const std::size_t bytes = std::size_t(m.elements_per_worker) * element_bytes(m.kernel.precision);
    block0_bytes = std::max(block0_bytes, bytes);
    if (!m.one_worker) max_bytes = std::max(max_bytes, bytes);
  }
  // Round up to whole 2 MiB pages for large blocks (transparent huge pages
  // cut TLB misses at DRAM sizes).
  const std::size_t align = block0_bytes >= (std::size_t(4) << 20) ? (std::size_t(2) << 20) : 4096;
  max_bytes = (max_bytes + align - 1) / align * align;
  block0_bytes = (block0_bytes + align - 1) / align * align;

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
  SweepController controller(plan, policy, threads, ranks.size(), dram_search);
  std::vector<double> touch_seconds(std::size_t(threads), 0.0);

  std::atomic<int> failures{0};
  std::string failure;  // written once under the atomic's protection
  bool done = false;
  PlannedRun run;
  // Per thread: when its kernel started and ended, and the fraction of that
  // time it was on its CPU.
  std::vector<double> on_cpu(std::size_t(threads), 1.0);
  std::vector<double> began(std::size_t(threads), 0.0), ended(std::size_t(threads), 0.0);
  SpinBarrier barrier(threads);
  StartGate gate(threads);
  const long wake_delay_us = ranks.rank() == ranks.size() - 1 ? test_wake_delay_us() : 0;
  const long slowdown = test_slowdown();
  std::vector<ClockCalibration> clocks(static_cast<std::size_t>(threads));
  const double node_id = node_clock_id();

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
    // on its NUMA node and no two threads share a cache line. Thread 0's also
    // holds the one-worker reference's working sets. Touched as the runs
    // reach it (touch_up_to): the DRAM-sized part may never be needed.
    Block block;
    std::size_t touched = 0;
    auto touch_up_to = [&](std::size_t bytes) {
      bytes = std::min((bytes + align - 1) / align * align, block.bytes);
      if (bytes <= touched) return;
      const double t0 = now_seconds();
      init_cpu_block(Precision::FP64, static_cast<char*>(block.data) + touched, (bytes - touched) / sizeof(double));
      touched = bytes;
      touch_seconds[std::size_t(tid)] += now_seconds() - t0;
    };
    const std::size_t bytes = tid == 0 && ranks.rank() == 0 ? block0_bytes : max_bytes;
    if (posix_memalign(&block.data, align, bytes) != 0) {
      block.data = nullptr;
      if (failures.fetch_add(1) == 0)
        failure = "thread " + std::to_string(tid) + ": cannot allocate " + std::to_string(bytes >> 20) +
                  " MiB for its working set";
    } else {
      block.bytes = bytes;
#ifdef MADV_HUGEPAGE
      if (align > 4096) madvise(block.data, bytes, MADV_HUGEPAGE);
#endif
      if (!plan.empty())
        touch_up_to(std::size_t(plan.front().elements_per_worker) * element_bytes(plan.front().kernel.precision));
    }
#pragma omp barrier
#pragma omp master
    {
      // Agree across ranks so nobody waits in a barrier forever.
      if (ranks.any(failures.load() > 0)) done = true;
      result.setup_seconds = now_seconds() - start;
    }
#pragma omp barrier
    // Every worker brings its core to a steady clock before the first timed
    // run (after idle a core can ramp up for a while: the first measurements
    // would time the ramp).
    if (!done) clocks[std::size_t(tid)] = calibrate_clock();
#pragma omp barrier
    // From here on the threads only spin (SpinBarrier, StartGate): the OpenMP
    // barrier may put a thread to sleep, and waking it costs a scheduler tick.
    // `done` is only read right after a barrier (never at the loop head,
    // where the master may already be writing it for the next round).
    for (bool stop = done; !stop;) {
      if (tid == 0) done = !controller.next(run);
      barrier.wait();
      if (done) break;
      // The controller's plan: a DramSearch may have cut a one-worker point.
      const Measurement& m = controller.plan()[run.measurement];
      const bool active = !m.one_worker || (tid == 0 && ranks.rank() == 0);
      if (active && run.first_of_measurement)
        touch_up_to(std::size_t(m.elements_per_worker) * element_bytes(m.kernel.precision));
      // The FLOP series re-initialise their (L1-sized) block so every kernel
      // starts from the same bounded values.
      if (active && run.first_of_measurement && m.series == Series::Flops)
        init_cpu_block(m.kernel.precision, block.data, std::size_t(m.elements_per_worker));
      if (wake_delay_us > 0 && tid == threads - 1 && test_wake_delay_applies(m))
        std::this_thread::sleep_for(std::chrono::microseconds(wake_delay_us));
      // All threads spin at the gate; then the ranks meet (one barrier per
      // run) and the gate opens: the timed region starts with every worker
      // of every rank spinning, never with one still waking up.
      gate.pass(tid == 0, [&] { ranks.barrier(); });
      if (active) {
        const double wall0 = now_seconds();
        const double cpu0 = thread_cpu_seconds();
        run_cpu_kernel(m.kernel, block.data, std::size_t(m.elements_per_worker), run.trials * slowdown);
        const double cpu = thread_cpu_seconds() - cpu0;
        const double wall1 = now_seconds();
        const double wall = wall1 - wall0;
        // Wall time longer than CPU time: the thread was preempted mid-run.
        on_cpu[std::size_t(tid)] = wall > 50e-6 ? std::min(1.0, cpu / wall) : 1.0;
        began[std::size_t(tid)] = wall0;
        ended[std::size_t(tid)] = wall1;
      }
      barrier.wait();
      if (tid == 0) {
        // This rank's run lasts from its first worker's start to its last
        // worker's end; each worker's own time (its start to its end) is
        // what calibrates the trials. Ranks that did not run report nothing.
        const bool rank_active = !m.one_worker || ranks.rank() == 0;
        const int n = m.one_worker ? 1 : threads;
        double first = INFINITY, last_start = -INFINITY, last_end = -INFINITY, shortest = INFINITY, fraction = 1.0;
        for (int i = 0; i < n && rank_active; ++i) {
          first = std::min(first, began[std::size_t(i)]);
          last_start = std::max(last_start, began[std::size_t(i)]);
          last_end = std::max(last_end, ended[std::size_t(i)]);
          shortest = std::min(shortest, ended[std::size_t(i)] - began[std::size_t(i)]);
          fraction = std::min(fraction, on_cpu[std::size_t(i)]);
        }
        const std::vector<double> mine = {rank_active ? 1.0 : 0.0, rank_active ? last_end - first : 0.0, fraction,
                                          shortest, first, last_start, node_id};
        constexpr std::size_t kFields = 7;
        const std::vector<double> all = ranks.allgather_values(mine);
        RunTiming timing;
        timing.worker_seconds = INFINITY;
        struct NodeStarts {
          double node, first, last;
        };
        std::vector<NodeStarts> nodes;
        for (std::size_t r = 0; r + kFields <= all.size(); r += kFields) {
          if (!m.one_worker) timing.rank_seconds.push_back(all[r + 1]);
          if (all[r] == 0) continue;
          timing.seconds = std::max(timing.seconds, all[r + 1]);
          timing.on_cpu_fraction = std::min(timing.on_cpu_fraction, all[r + 2]);
          timing.worker_seconds = std::min(timing.worker_seconds, all[r + 3]);
          auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeStarts& x) { return x.node == all[r + 6]; });
          if (it == nodes.end()) nodes.push_back({all[r + 6], all[r + 4], all[r + 5]});
          else it->first = std::min(it->first, all[r + 4]), it->last = std::max(it->last, all[r + 5]);
        }
        // Start skew within a node (ranks of different nodes have different clocks).
        for (const NodeStarts& x : nodes) timing.start_skew = std::max(timing.start_skew, x.last - x.first);
        if (debug)
          std::fprintf(stderr,
                       "ert run: t %.3f measurement %zu %s%s F %d elements %lld trials %lld warmup %d span %.6f "
                       "worker %.6f skew %.6f on_cpu %.3f\n",
                       now_seconds() - start, run.measurement, m.one_worker ? "one-worker " : "", to_string(m.series),
                       m.kernel.flops_per_element, static_cast<long long>(m.elements_per_worker),
                       static_cast<long long>(run.trials), int(run.warmup), timing.seconds, timing.worker_seconds,
                       timing.start_skew, timing.on_cpu_fraction);
        controller.record(timing);
      }
    }
  }
  for (double c : ranks.allgather(double(result.thread_cpus.empty() ? -1 : result.thread_cpus[0])))
    result.rank_cpus.push_back(int(c));
  if (failures.load() > 0) throw CpuRunError("ERT: " + (failure.empty() ? std::string("another rank failed") : failure));
  result.seconds = now_seconds() - start;
  for (const ClockCalibration& c : clocks) {
    result.clock.seconds = std::max(result.clock.seconds, c.seconds);
    result.clock.ghz = result.clock.ghz > 0 ? std::min(result.clock.ghz, c.ghz) : c.ghz;
  }
  result.clock.steady = std::all_of(clocks.begin(), clocks.end(), [](const ClockCalibration& c) { return c.steady; });
  result.runs = controller.runs_done();
  result.runs_redone = controller.runs_redone();
  result.runs_skewed = controller.runs_skewed();
  result.kept_disturbed = controller.kept_disturbed();
  for (double t : touch_seconds) result.first_touch_seconds = std::max(result.first_touch_seconds, t);
  result.dram_start_found_bytes = controller.dram_start_found_bytes();
  result.llc_gbytes_per_s = controller.llc_gbytes_per_s();
  for (std::size_t i = 0; i < controller.plan().size(); ++i)
    if (std::find(controller.skipped().begin(), controller.skipped().end(), i) == controller.skipped().end())
      result.measured.push_back(controller.plan()[i]);
  result.samples = controller.take_samples();
  return result;
}

}  // namespace rtrace::ert
