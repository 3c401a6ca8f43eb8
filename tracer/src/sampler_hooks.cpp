// Interposed libc entry points that keep the sampler safe for the app
// (LD_PRELOAD puts these in front of libc's):
//   pthread_create   a new thread gets its CPU-time timer (and, with
//                    RTRACE_COUNTS=pmu, its PMU counters) before its start
//                    routine runs, and loses it when it ends;
//   execve/execv/execvp/execvpe
//                    the caller's timer is disarmed first: a sample signal
//                    pending across exec would meet the default disposition
//                    (terminate) in the new program;
//   sigaction/signal the app claiming the sampler's signal stops sampling
//                    (back off), then gets exactly what it asked for.
// Every wrapper forwards to the next definition (dlsym RTLD_NEXT) unchanged.
#include "pmu_counts.hpp"
#include "sampler.hpp"
#include "tracer.hpp"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <new>
#include <string>

namespace {

template <class Fn>
Fn next_symbol(const char* name) noexcept {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
};

void* sampled_thread_start(void* p) {
  ThreadStart start = *static_cast<ThreadStart*>(p);
  delete static_cast<ThreadStart*>(p);
  rtrace::tracer::Sampler::thread_begin();
  rtrace::tracer::pmu::thread_begin();  // its counters close with the thread (a key destructor)
  void* result = start.routine(start.arg);
  rtrace::tracer::Sampler::thread_end();  // pthread_exit: the thread key's destructor disarms instead
  return result;
}

void claim_check(int sig, bool installs_handler) noexcept {
  if (installs_handler && rtrace::tracer::Sampler::is_sample_signal(sig)) {
    rtrace::tracer::Sampler::back_off("the application installs its own handler for signal " + std::to_string(sig) +
                                      ", which the sampler used");
  }
}

}  // namespace

extern "C" {

RTRACE_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
  using Fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static Fn real = next_symbol<Fn>("pthread_create");
  if (!real) return EAGAIN;
  if (!rtrace::tracer::Sampler::running() && !rtrace::tracer::pmu::active()) return real(thread, attr, routine, arg);
  // The tracer's own threads (the exit watchdog) are not the app's: neither sampled nor counted.
  if (rtrace::tracer::in_tracer()) return real(thread, attr, routine, arg);
  auto* start = new (std::nothrow) ThreadStart{routine, arg};
  if (!start) return real(thread, attr, routine, arg);
  int rc = real(thread, attr, sampled_thread_start, start);
  if (rc != 0) delete start;
  return rc;
}

RTRACE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  using Fn = int (*)(const char*, char* const[], char* const[]);
  static Fn real = next_symbol<Fn>("execve");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  rtrace::tracer::Sampler::before_exec();
  int rc = real(path, argv, envp);
  int saved = errno;
  rtrace::tracer::Sampler::after_failed_exec();
  errno = saved;
  return rc;
}

RTRACE_EXPORT int execv(const char* path, char* const argv[]) {
  using Fn = int (*)(const char*, char* const[]);
  static Fn real = next_symbol<Fn>("execv");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  rtrace::tracer::Sampler::before_exec();
  int rc = real(path, argv);
  int saved = errno;
  rtrace::tracer::Sampler::after_failed_exec();
  errno = saved;
  return rc;
}

RTRACE_EXPORT int execvp(const char* file, char* const argv[]) {
  using Fn = int (*)(const char*, char* const[]);
  static Fn real = next_symbol<Fn>("execvp");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  rtrace::tracer::Sampler::before_exec();
  int rc = real(file, argv);
  int saved = errno;
  rtrace::tracer::Sampler::after_failed_exec();
  errno = saved;
  return rc;
}

RTRACE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  using Fn = int (*)(const char*, char* const[], char* const[]);
  static Fn real = next_symbol<Fn>("execvpe");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  rtrace::tracer::Sampler::before_exec();
  int rc = real(file, argv, envp);
  int saved = errno;
  rtrace::tracer::Sampler::after_failed_exec();
  errno = saved;
  return rc;
}

RTRACE_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  claim_check(sig, act != nullptr);
  return rtrace::tracer::Sampler::real_sigaction(sig, act, old);
}

RTRACE_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  using Fn = sighandler_t (*)(int, sighandler_t);
  static Fn real = next_symbol<Fn>("signal");
  if (!real) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  claim_check(sig, true);
  return real(sig, handler);
}

}  // extern "C"
