// Test app for the tracer: annotated OpenMP work, then one of several endings.
//   omp_app normal|exit-in-thread|fork|abort|segv|unbalanced [iterations]
#include <omp.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rtrace/rtrace.h"

namespace {

double triad(std::vector<double>& a, const std::vector<double>& b, const std::vector<double>& c) {
  const long n = static_cast<long>(a.size());
  rtrace_region_begin("triad");
#pragma omp parallel for
  for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
  rtrace_region_end("triad");
  rtrace_region_counts("triad", 2.0 * n, 0, 0, 0, 0, 24.0 * n);
  return a[n / 2];
}

void* exit_from_thread(void*) {
  rtrace_region_begin("in_thread");
  rtrace_region_end("in_thread");
  std::exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "normal";
  int iterations = argc > 2 ? std::atoi(argv[2]) : 10;
  std::vector<double> a(1 << 16, 0.0), b(1 << 16, 1.0), c(1 << 16, 2.0);
  double sum = 0;
  rtrace_region_begin("main");
  for (int it = 0; it < iterations; ++it) sum += triad(a, b, c);
  rtrace_region_add_flops("main", RTRACE_FP32, 100.0);
  rtrace_region_end("main");
  std::printf("sum %.1f active %d threads %d\n", sum, rtrace_active(), omp_get_max_threads());
  std::fflush(stdout);

  if (mode == "exit-in-thread") {
    pthread_t t;
    pthread_create(&t, nullptr, exit_from_thread, nullptr);
    pthread_join(t, nullptr);
    return 1;  // not reached
  }
  if (mode == "fork") {
    pid_t child = fork();
    if (child == 0) {
      rtrace_region_begin("child_work");
      rtrace_region_end("child_work");
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    rtrace_region_begin("after_fork");
    rtrace_region_end("after_fork");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  if (mode == "abort") {
    rtrace_region_begin("dying");
    std::abort();
  }
  if (mode == "segv") {
    volatile int* p = nullptr;
    *p = 1;
  }
  if (mode == "unbalanced") {
    rtrace_region_end("never_begun");
    rtrace_region_begin("outer");
    rtrace_region_begin("inner");
    rtrace_region_end("outer");
  }
  return 0;
}
