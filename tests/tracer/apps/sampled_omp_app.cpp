// Test app for the sampler: no annotations, a serial function and a parallel
// loop, plus names that must come out demangled.
//   sampled_omp_app [mode] [serial_units] [parallel_units]
//   mode: normal | claim-signal | exec | exit | fork | inline | threads | loader | status
//   (exit: returns at once; exec replaces the process with this app in that mode;
//   loader: 1.5 s of a thread inside dl_iterate_phdr beside the main thread;
//   status: as normal, then exit status 3)
// One unit is about 10 ms of CPU time on this machine; the parallel units are
// shared by the OpenMP threads, the serial ones run on the main thread only.
#include <link.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

// The loop body is a macro, not a helper function, so the samples land in
// the function the test names (a helper would be its own, or an inlined, frame).
#define BURN(units, acc)                                                        \
  for (long burn_i = 0; burn_i < (units) * 2000000L; ++burn_i) {               \
    acc = acc * 0.999999 + static_cast<double>(burn_i & 7) * 1e-9;              \
  }

namespace solver {
struct Grid {
  __attribute__((noinline)) double relax(long units);
};
double Grid::relax(long units) {
  volatile double acc = 1;
  BURN(units, acc);
  return acc;
}
}  // namespace solver

// A gfortran module procedure's symbol (module `mesh`, subroutine `refine`).
extern "C" __attribute__((noinline)) double __mesh_MOD_refine(long units) {
  volatile double acc = 1;
  BURN(units, acc);
  return acc;
}

__attribute__((noinline)) double setup_mesh(long units) {
  volatile double acc = 1;
  BURN(units, acc);
  return acc;
}

// Two levels of inlining into one function: the sampled stacks must show
// the whole inline chain, mesh_smooth -> smooth_pass -> smooth_cell.
static inline __attribute__((always_inline)) double smooth_cell(long units) {
  volatile double acc = 1;
  BURN(units, acc);
  return acc;
}
static inline __attribute__((always_inline)) double smooth_pass(long units) { return smooth_cell(units) + 1; }
__attribute__((noinline)) double mesh_smooth(long units) { return smooth_pass(units) * 0.5; }

__attribute__((noinline)) double parallel_sweep(long units) {
  double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (long u = 0; u < units; ++u) {
    volatile double acc = 1;
    BURN(1, acc);
    total += acc;
  }
  return total;
}

// 512 distinct functions: the sampler's unwinder keeps meeting code it has
// not looked up yet, and looks it up through dl_iterate_phdr.
template <int N>
__attribute__((noinline)) double lookup_step(double x) {
  for (int k = 0; k < 200; ++k) x = x * 0.999999 + N * 1e-12;
  return x;
}
template <std::size_t... I>
constexpr std::array<double (*)(double), sizeof...(I)> lookup_steps(std::index_sequence<I...>) {
  return {&lookup_step<static_cast<int>(I)>...};
}
constexpr auto kLookupSteps = lookup_steps(std::make_index_sequence<512>{});

std::atomic<bool> g_loader_stop{false};
int inside_the_loader(dl_phdr_info*, size_t, void*) {
  volatile double acc = 1;
  for (int k = 0; k < 20000; ++k) acc = acc * 0.9999999 + 1e-9;
  return 0;
}
void* loader_thread(void*) {
  while (!g_loader_stop.load()) dl_iterate_phdr(inside_the_loader, nullptr);
  return nullptr;
}

namespace {
volatile sig_atomic_t g_app_handler_ran = 0;
void app_handler(int) { g_app_handler_ran = 1; }
void* short_thread(void*) {
  volatile double acc = 1;
  BURN(1, acc);
  return nullptr;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "normal";
  if (mode == "exit") return 0;
  const long serial = argc > 2 ? std::atol(argv[2]) : 30;
  const long parallel = argc > 3 ? std::atol(argv[3]) : 60;
  double r = setup_mesh(serial);
  r += __mesh_MOD_refine(serial / 3 + 1);
  solver::Grid g;
  r += g.relax(serial / 3 + 1);
  r += parallel_sweep(parallel);
  if (mode == "claim-signal") {
    // The app takes a real-time signal the sampler may be using.
    for (int sig = SIGRTMAX - 1; sig >= SIGRTMIN + 2; --sig) {
      struct sigaction sa {};
      sa.sa_handler = app_handler;
      sigaction(sig, &sa, nullptr);
    }
    r += setup_mesh(serial);
    raise(SIGRTMAX - 1);
    if (!g_app_handler_ran) return 5;
  } else if (mode == "exec") {
    r += setup_mesh(serial);
    std::printf("r %.3f\n", r);
    std::fflush(stdout);
    // This app again, not /bin/true: the preloaded tracer comes along into the
    // new image, and a sanitized tracer can live only in a sanitized program
    // (an uninstrumented /bin/true under the ASan tracer hung once in CI).
    char* args[] = {const_cast<char*>("/proc/self/exe"), const_cast<char*>("exit"), nullptr};
    execv(args[0], args);
    return 6;
  } else if (mode == "fork") {
    pid_t pid = fork();
    if (pid == 0) {
      r += setup_mesh(serial);
      std::exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 7;
  } else if (mode == "inline") {
    r += mesh_smooth(serial);
  } else if (mode == "loader") {
    // The other thread holds the loader's lock most of the time, also when the
    // sampler's signal interrupts it there (the sampler hung such an app:
    // libunwind's cache mutex against the loader's lock).
    pthread_t t;
    if (pthread_create(&t, nullptr, loader_thread, nullptr) != 0) return 8;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    double x = 1;
    for (std::size_t i = 0; std::chrono::steady_clock::now() < end; ++i) x = kLookupSteps[i % kLookupSteps.size()](x);
    g_loader_stop.store(true);
    pthread_join(t, nullptr);
    r += x;
  } else if (mode == "threads") {
    for (int i = 0; i < 50; ++i) {
      pthread_t t;
      if (pthread_create(&t, nullptr, short_thread, nullptr) == 0) pthread_join(t, nullptr);
    }
  }
  std::printf("r %.3f threads %d\n", r, omp_get_max_threads());
  return mode == "status" ? 3 : 0;
}
