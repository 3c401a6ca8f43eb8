// The injected library's process-level glue: start-up, the public C API, and
// the exit, fatal-signal and fork paths that get the rank's data to disk.
#include "tracer.hpp"

#include "config.hpp"
#include "dispatch_probe.hpp"
#include "exit_watchdog.hpp"
#include "rank_writer.hpp"
#include "pmu_counts.hpp"
#include "sampler.hpp"

#include <hdf5.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rtrace/rtrace.h"

#ifdef RTRACE_TRACER_HAVE_MPI
#include "mpi_common.hpp"
#endif

namespace rtrace::tracer {

namespace {

RankState* g_state = nullptr;            // leaked on purpose: used until the very end
std::atomic<bool> g_written{false};
std::atomic<bool> g_writing{false};      // one final write per process, whoever gets there first
std::atomic<bool> g_fork_child{false};
std::atomic<void (*)()> g_gpu_flush{nullptr};

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGXCPU};
struct sigaction g_previous[NSIG];
bool g_have_previous[NSIG] = {};

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string own_exe_name() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return basename_of(buf);
}

// The final write of a dying process. Runs in a signal handler, so it uses the
// non-blocking snapshot; an alarm ends the process if the write itself hangs
// (say, on a malloc lock the crashing thread held). Temp + rename means a
// half-written file is never visible.
void on_fatal_signal(int sig, siginfo_t*, void*) {
  int saved_errno = errno;
  if (g_state && !g_written.load() && !g_writing.exchange(true)) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGALRM, &dfl, nullptr);
    alarm(5);
    ++t_hot.internal;
    try {
      store::RankRecords rec = g_state->snapshot(/*complete=*/false, /*exit_status=*/-1, /*blocking=*/false);
      const char* name = sigabbrev_np(sig);
      rec.log.push_back(std::string("error: process received fatal signal ") + std::to_string(sig) + " (SIG" +
                        (name ? name : "?") + "); data up to this point, rank incomplete");
      write_rank_file(g_state->config().trace_dir, rec);
      g_written.store(true);
    } catch (...) {
    }
    --t_hot.internal;
    alarm(0);
  }
  // Hand the signal to whoever had it before us (default: die with it).
  if (g_have_previous[sig]) sigaction(sig, &g_previous[sig], nullptr);
  else signal(sig, SIG_DFL);
  raise(sig);  // blocked while we run: delivered on return, with the old action
  errno = saved_errno;
}

// What the watchdog does when the exit path overstays its bound: the
// records without what the stuck step was building (no call paths, no
// calls into libraries), written unless the write itself is the stuck step,
// then the app's own exit status.
struct ExitContext {
  int status = 0;
};

void on_exit_bound(ExitStep stuck, void* arg) {
  const int status = static_cast<ExitContext*>(arg)->status;
  ++t_hot.internal;
  const double bound = g_state->config().exit_timeout_s;
  char line[400];
  std::snprintf(line, sizeof line,
                "error: the exit path did not finish within RTRACE_EXIT_TIMEOUT=%g s (stuck %s); %s", bound,
                to_string(stuck),
                stuck == ExitStep::Write ? "no rank file written"
                                         : "records written without what that step was building (no sampled call "
                                           "paths); the app's exit status kept");
  if (stuck != ExitStep::Write) {
    try {
      store::RankRecords rec = g_state->snapshot(/*complete=*/true, status, /*blocking=*/false);
      rec.log.push_back(line);
      rec.info.tracer_errors += 1;
      write_rank_file(g_state->config().trace_dir, rec);
      g_written.store(true);
    } catch (...) {
    }
  }
  std::fprintf(stderr, "rtrace tracer[pid %d]: %s\n", static_cast<int>(getpid()), line);
  std::fflush(nullptr);  // the app's buffered output: exit() flushes it only after the handlers
  _exit(status);
}

// RTRACE_TEST_EXIT_STALL: a deadlock at `step`, for the watchdog's tests.
void stall_if_testing(const char* step) {
  if (g_state->config().test_exit_stall == step) wait_to_be_ended();
}

void on_process_exit(int status, void*) {
  if (!g_state || g_written.load() || g_writing.exchange(true)) return;
  ++t_hot.internal;
  // The samples end here (the snapshot would stop them a moment later): the
  // exit path's own time is not the app's.
  Sampler::stop();
  ExitContext context{status};
  ExitWatchdog watchdog(g_state->config().exit_timeout_s, on_exit_bound, &context);
  if (!watchdog.started()) g_state->log(LogLevel::Warn, "exit path unbounded: no thread for its watchdog");
  watchdog.enter(ExitStep::Gpu);
  stall_if_testing("gpu");
  flush_gpu();
#ifdef RTRACE_TRACER_HAVE_MPI
  mpi::close_thread_run();
  if (!g_fork_child.load()) mpi::check_unseen_init();
#endif
  try {
    std::int64_t t0 = monotonic_ns();
    if (!watchdog.enter(ExitStep::Records)) wait_to_be_ended();
    store::RankRecords rec = g_state->snapshot(/*complete=*/true, status, /*blocking=*/true);
    if (!watchdog.enter(ExitStep::Write)) wait_to_be_ended();  // the watchdog writes and ends the process
    stall_if_testing("write");
    std::string path = write_rank_file(g_state->config().trace_dir, rec);
    g_written.store(true);
    // After the write, so only stderr hears it (bench/tracer_write.sh reads it).
    g_state->log(LogLevel::Info, path.substr(path.rfind('/') + 1) + " written in " +
                                     std::to_string(static_cast<double>(monotonic_ns() - t0) * 1e-9) + " s");
  } catch (const std::exception& e) {
    // Nothing left to record into: say it on stderr, never disturb the exit.
    std::fprintf(stderr, "rtrace tracer[pid %d]: error: writing the rank file failed: %s\n",
                 static_cast<int>(getpid()), e.what());
  } catch (...) {
  }
  --t_hot.internal;
}

void on_fork_child() {
  if (!g_state) return;
  g_fork_child.store(true);
  g_written.store(false);
  g_writing.store(false);
  g_state->reset_after_fork(t_hot.mpi);
}

// Every thread gets the same handler; the main thread also an alternate stack
// so a stack overflow can still be reported.
void install_alt_stack() {
  static char* stack = nullptr;
  if (stack) return;
  const std::size_t size = 256 * 1024;
  stack = static_cast<char*>(std::malloc(size));
  if (!stack) return;
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = size;
  sigaltstack(&ss, nullptr);
}

void start_sampling() {
  const double hz = g_state->config().sample_hz;
  if (!(hz > 0)) return;
  std::string why;
  if (Sampler::start(hz, &why)) {
    g_state->set_sampling(true);
    g_state->log(LogLevel::Debug, "sampling at " + std::to_string(hz) + " Hz of thread CPU time");
  } else {
    g_state->log(LogLevel::Warn, "sampling unavailable: " + why);
  }
}

__attribute__((constructor)) void rtrace_tracer_start() {
  try {
    TracerConfig config = read_config([](const char* n) { return std::getenv(n); },
                                      program_invocation_short_name ? program_invocation_short_name : "",
                                      own_exe_name());
    if (!config.active) {
      if (const char* l = std::getenv("RTRACE_LOG"); l && std::strcmp(l, "debug") == 0)
        std::fprintf(stderr, "rtrace tracer[pid %d]: debug: inactive: %s\n", static_cast<int>(getpid()),
                     config.inactive_reason.c_str());
      return;
    }
    g_state = new RankState(std::move(config), std::make_unique<PerfEventProvider>());
    g_state->log(LogLevel::Debug, "active, rank " + std::to_string(g_state->rank()) + " from " +
                                      g_state->config().rank_source + ", trace dir " + g_state->config().trace_dir);
    // HDF5 starts now, before the app's MPI_Init: it then neither ties its
    // shutdown to MPI_Finalize nor registers its atexit after ours, so it is
    // still up when the exit path writes the rank file (exit handlers run in
    // reverse order of registration).
    H5open();
    on_exit(on_process_exit, nullptr);
    pthread_atfork(nullptr, nullptr, on_fork_child);
    install_alt_stack();
    install_signal_handlers(/*chain_existing=*/false);
    // The app's libraries are initialised by now, and shut down before the
    // final write: their run-time choices are asked now.
    g_state->set_early_dispatch(observe_blas());
    start_sampling();
    // After the sampler: both wrap the threads the app creates from here on.
    const std::string counts = pmu::start(g_state->config().counts_mode);
    if (!counts.empty()) g_state->log(LogLevel::Info, counts);
  } catch (...) {
    // The tracer must never stop the app from starting.
  }
}

}  // namespace

RankState* state() noexcept { return g_state; }
void mark_written() noexcept { g_written.store(true); }
bool written() noexcept { return g_written.load(); }
bool is_fork_child() noexcept { return g_fork_child.load(); }
void set_gpu_flush(void (*flush)()) noexcept { g_gpu_flush.store(flush); }
void flush_gpu() noexcept {
  if (auto f = g_gpu_flush.load()) {
    try {
      f();
    } catch (...) {
    }
  }
}

void install_signal_handlers(bool chain_existing) noexcept {
  for (int sig : kFatalSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fatal_signal) continue;
    bool is_default = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    if (!is_default && (!chain_existing || current.sa_handler == SIG_IGN)) continue;  // the app's choice
    g_previous[sig] = current;
    g_have_previous[sig] = !is_default;
    struct sigaction ours {};
    ours.sa_sigaction = on_fatal_signal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    sigaction(sig, &ours, nullptr);
  }
}

bool write_own_file(bool complete, int exit_status) noexcept {
  if (!g_state) return false;
  InternalScope internal;
  try {
    write_rank_file(g_state->config().trace_dir, g_state->snapshot(complete, exit_status, true));
    g_written.store(true);
    return true;
  } catch (const std::exception& e) {
    g_state->error(std::string("writing the rank file failed: ") + e.what());
  } catch (...) {
    g_state->error("writing the rank file failed");
  }
  return false;
}

}  // namespace rtrace::tracer
// ---------------------------------------------------------------- public C API
// Strong definitions that interpose librtrace_api.so's stubs under LD_PRELOAD.
extern "C" {

RTRACE_EXPORT void rtrace_region_begin(const char* name) {
  if (auto* s = rtrace::tracer::state()) s->regions().begin(name);
}
RTRACE_EXPORT void rtrace_region_end(const char* name) {
  if (auto* s = rtrace::tracer::state()) s->regions().end(name);
}
RTRACE_EXPORT void rtrace_region_add_flops(const char* name, int precision, double flops) {
  if (auto* s = rtrace::tracer::state()) s->regions().add_flops(name, precision, flops);
}
RTRACE_EXPORT void rtrace_region_add_bytes(const char* name, int level, double bytes) {
  if (auto* s = rtrace::tracer::state()) s->regions().add_bytes(name, level, bytes);
}
RTRACE_EXPORT void rtrace_region_counts(const char* name, double flops_fp64, double flops_fp32, double bytes_l1,
                                        double bytes_l2, double bytes_l3, double bytes_dram) {
  auto* s = rtrace::tracer::state();
  if (!s) return;
  auto& r = s->regions();
  if (flops_fp64 > 0) r.add_flops(name, RTRACE_FP64, flops_fp64);
  if (flops_fp32 > 0) r.add_flops(name, RTRACE_FP32, flops_fp32);
  if (bytes_l1 > 0) r.add_bytes(name, RTRACE_L1, bytes_l1);
  if (bytes_l2 > 0) r.add_bytes(name, RTRACE_L2, bytes_l2);
  if (bytes_l3 > 0) r.add_bytes(name, RTRACE_L3, bytes_l3);
  if (bytes_dram > 0) r.add_bytes(name, RTRACE_DRAM, bytes_dram);
}
RTRACE_EXPORT int rtrace_active(void) { return rtrace::tracer::state() ? 1 : 0; }
RTRACE_EXPORT const char* rtrace_tracer_version(void) { return RTRACE_VERSION_STRING; }

}  // extern "C"
