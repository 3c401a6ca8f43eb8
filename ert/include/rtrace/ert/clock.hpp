// The CPU's clock before the timed runs (issue 32).
//
// After idle a core (a VM's vCPU: its host core) may run at a low clock for
// a while; the first measurements of a plan then time a clock that is still
// ramping. Each worker first spins a dependent chain of integer adds in short
// windows until the rate (adds per second of the thread's own CPU time, so a
// preempted window is not slow) is steady (ClockRamp) and reports it: one add
// per cycle on x86, so the rate is the clock the worker ran at (GHz).
#pragma once

#include <cstddef>
#include <vector>

namespace rtrace::ert {

struct ClockPolicy {
  double window_seconds = 0.001;  // one rate per window
  int steady_windows = 3;         // this many consecutive windows...
  double steady_tolerance = 0.02; // ...within this of each other: steady
  int min_windows = 5;
  double max_seconds = 0.1;       // give up: the rate never settled (a busy machine)
};

// The steadiness test of the calibration, on the windows' rates (pure, for
// tests): steady once the last `steady_windows` rates lie within
// `steady_tolerance` of each other, after at least `min_windows`.
class ClockRamp {
 public:
  explicit ClockRamp(ClockPolicy policy = {}) : policy_(policy) {}
  void add(double rate) { rates_.push_back(rate); }
  bool steady() const;
  // The steady rate: the mean of the last steady_windows rates (0 before any).
  double rate() const;
  std::size_t windows() const noexcept { return rates_.size(); }

 private:
  ClockPolicy policy_;
  std::vector<double> rates_;
};

struct ClockCalibration {
  double seconds = 0;     // how long it took (the ramp, or max_seconds when it never settled)
  double ghz = 0;         // dependent adds per ns at the end: the clock on x86 (0: not x86)
  bool steady = false;
};

// Spins the calling thread until its clock is steady (or max_seconds).
ClockCalibration calibrate_clock(const ClockPolicy& policy = {});

}  // namespace rtrace::ert
