#include "rtrace/ert/clock.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>

namespace rtrace::ert {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The thread's own CPU time: a window's rate must not count the time the
// thread was preempted (a busy machine), only what the core did.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// 100 dependent adds: one cycle each on x86 (the chain hides nothing). A
// register operand, not an immediate: Golden Cove and later Intel cores fold
// chains of add-immediate in the renamer (17.4 G adds/s on a 2.96 GHz
// Emerald Rapids core, against 2.96 G/s for register adds and 3x the rate of
// a dependent imul chain).
inline void hundred_dependent_adds(std::uint64_t& x, std::uint64_t step) {
#if defined(__x86_64__)
#define RTRACE_ADD10 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t" \
                     "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
  asm volatile(RTRACE_ADD10 RTRACE_ADD10 RTRACE_ADD10 RTRACE_ADD10 RTRACE_ADD10 RTRACE_ADD10 RTRACE_ADD10
                   RTRACE_ADD10 RTRACE_ADD10 RTRACE_ADD10
               : "+r"(x)
               : "r"(step));
#undef RTRACE_ADD10
#else
  for (int i = 0; i < 100; ++i) {
    x += step;
    asm volatile("" : "+r"(x));
  }
#endif
}

}  // namespace

bool ClockRamp::steady() const {
  const std::size_t k = std::size_t(std::max(policy_.steady_windows, 1));
  if (rates_.size() < std::max<std::size_t>(k, std::size_t(std::max(policy_.min_windows, 0)))) return false;
  const auto first = rates_.end() - std::ptrdiff_t(k);
  const auto [lo, hi] = std::minmax_element(first, rates_.end());
  return *lo > 0 && *hi <= *lo * (1 + policy_.steady_tolerance);
}

double ClockRamp::rate() const {
  if (rates_.empty()) return 0;
  const std::size_t k = std::min(rates_.size(), std::size_t(std::max(policy_.steady_windows, 1)));
  double sum = 0;
  for (std::size_t i = rates_.size() - k; i < rates_.size(); ++i) sum += rates_[i];
  return sum / double(k);
}

ClockCalibration calibrate_clock(const ClockPolicy& policy) {
  ClockRamp ramp(policy);
  std::uint64_t x = 0;
  // Not a constant the compiler can see, so it stays a register operand.
  volatile std::uint64_t step_source = 1;
  const std::uint64_t step = step_source;
  const double start = now_seconds();
  double t = start;
  while (!ramp.steady() && t - start < policy.max_seconds) {
    const double w0 = t, cpu0 = thread_cpu_seconds();
    std::uint64_t adds = 0;
    do {
      for (int i = 0; i < 100; ++i) hundred_dependent_adds(x, step);
      adds += 10000;
      t = now_seconds();
    } while (t - w0 < policy.window_seconds);
    const double cpu = thread_cpu_seconds() - cpu0;
    if (cpu > 0) ramp.add(double(adds) / cpu);
  }
  ClockCalibration c;
  c.seconds = t - start;
  c.steady = ramp.steady();
#if defined(__x86_64__)
  c.ghz = ramp.rate() / 1e9;
#endif
  return c;
}

}  // namespace rtrace::ert
