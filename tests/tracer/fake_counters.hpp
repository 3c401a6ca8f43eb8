// A test double of the counter source: every read advances by fixed steps,
// so a region's counts are exactly (reads inside it) x step.
#pragma once

#include "counters.hpp"

#include <atomic>

namespace rtrace::tracer::test_doubles {

class StepCounterSource final : public CounterSource {
 public:
  bool read(HwCounts& out) noexcept override {
    ++n_;
    out.instructions = 1000.0 * n_;
    out.cycles = 500.0 * n_;
    out.fp64_ops = 8.0 * n_;
    out.fp32_ops = 16.0 * n_;
    return true;
  }

 private:
  long n_ = 0;
};

class StepCounterProvider final : public CounterProvider {
 public:
  std::unique_ptr<CounterSource> open_for_this_thread(std::string*) noexcept override {
    opened.fetch_add(1);
    return std::make_unique<StepCounterSource>();
  }
  const char* name() const noexcept override { return "step-double"; }
  std::atomic<int> opened{0};
};

class MissingCounterProvider final : public CounterProvider {
 public:
  std::unique_ptr<CounterSource> open_for_this_thread(std::string* why) noexcept override {
    if (why) *why = "perf_event_open(instructions): No such file or directory";
    return nullptr;
  }
  const char* name() const noexcept override { return "missing"; }
};

}  // namespace rtrace::tracer::test_doubles
