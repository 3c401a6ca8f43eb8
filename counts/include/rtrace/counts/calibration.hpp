// The counting pass's cost, predicted before it starts (docs/counts.md,
// "Cost"): reference kernels (rtrace-count-calibrate: integer, streaming,
// cache-resident FP, vectorised FMA) timed in CPU seconds natively and under
// the tool with the run's own options; their slowdowns bracket an app's,
// whose own depends on its mix of memory accesses, FLOPs and other work.
#pragma once

#include "rtrace/counts/counting_run.hpp"

#include <map>
#include <string>
#include <vector>

namespace rtrace::counts {

struct Calibration {
  std::map<std::string, double> slowdown;   // kernel -> CPU time under the tool / natively
  double startup_s = 0;                     // the tool's own start and exit (wall, besides the kernels)
  std::string error;                        // why there is none ("" when measured or read)
  bool ok() const { return !slowdown.empty() && error.empty(); }
  double typical() const;                   // the median of the kernels' slowdowns
  double low() const;
  double high() const;
  std::string summary() const;              // "integer 3x, streaming 28x, cache-resident FP 16x, vectorised FMA 46x"
};

// Times the reference kernels natively (best of 3) and once under the tool
// (`tool_options`: the counting run's geometry, sharers and window), in
// `scratch_dir` (the tool's raw files go there and are removed). A missing
// calibration program or a failed run: `error` says so.
Calibration calibrate(const ToolPaths& tool, const std::vector<std::string>& tool_options, const std::string& scratch_dir);

// A calibration file: "KERNEL SLOWDOWN" lines. read: error set when absent or unreadable.
Calibration read_calibration(const std::string& path);
void write_calibration(const std::string& path, const Calibration& c);

struct CostPrediction {
  double factor = 0;        // expected counting run / timed run (wall)
  double seconds = 0;       // expected counting run's wall time
  double per_process_s = 0; // the timed seconds it slows down (a process's CPU or wall seconds, crowding included)
  std::string line;         // "counting pass: expected about 22x the timed run's 8.1 s = 3.0 min (...)"
};
// From the timed run's wall time and, when known (> 0), its CPU time (all
// processes): the tool runs each process's threads one at a time, so a
// process's CPU seconds are what it slows down (its wall seconds where they
// are more: time off a CPU, a loaded machine's or the app's waits, is taken
// to stretch alike); the tool's start and exit come on top;
// `ranks_per_node` processes share `cores` cores.
// `app_slowdown` > 0: this app's own slowdown per timed second, measured on
// an earlier configuration's counting run of the same sweep (then the
// prediction uses it instead of the reference kernels' median).
CostPrediction predict_cost(const Calibration& c, double timed_wall_s, double timed_cpu_s, int ranks,
                            int ranks_per_node, int cores, double app_slowdown = 0);

}  // namespace rtrace::counts
