// CPU hardware counters behind a small interface, so the region recorder can
// be tested with a test double and this PMU-less VM records "unavailable".
#pragma once

#include <cmath>
#include <memory>
#include <string>

namespace rtrace::tracer {

// Counter values of the calling thread since its source was opened. Events
// the CPU lacks are NaN.
struct HwCounts {
  double instructions = NAN;
  double cycles = NAN;
  double fp64_ops = NAN;   // FLOPs (width-weighted, FMA counted twice where the PMU does)
  double fp32_ops = NAN;
};

// One thread's counters.
class CounterSource {
 public:
  virtual ~CounterSource() = default;
  // Reads the current values; false when the read failed (values unchanged).
  virtual bool read(HwCounts& out) noexcept = 0;
};

// Opens a CounterSource for the calling thread.
class CounterProvider {
 public:
  virtual ~CounterProvider() = default;
  // nullptr when counters cannot be opened; `why` says why.
  virtual std::unique_ptr<CounterSource> open_for_this_thread(std::string* why) noexcept = 0;
  virtual const char* name() const noexcept = 0;
};

// perf_event_open: instructions, cycles and (on Intel) FP_ARITH_INST_RETIRED by
// width, named through libpfm4 (pmu_events.hpp), as one group read with a single read(2).
class PerfEventProvider final : public CounterProvider {
 public:
  std::unique_ptr<CounterSource> open_for_this_thread(std::string* why) noexcept override;
  const char* name() const noexcept override { return "perf_event"; }
};

// Probes the provider on the calling thread. Returns true when counters work;
// otherwise `why` holds the reason ("perf_event_open(instructions): No such file or directory").
bool counters_available(CounterProvider& provider, std::string* why) noexcept;

}  // namespace rtrace::tracer
