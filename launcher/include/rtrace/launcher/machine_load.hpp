// What the machine did during a point besides the app, measured from outside
// the app: /proc/stat before the fork and after the last process of the tree
// was reaped, minus the CPU time of the tree (wait4 rusage of every process
// the launcher reaped) and of the launcher itself. The analysis names
// `machine-load` only on this evidence (docs/analysis.md).
#pragma once

#include <rtrace/store/records.hpp>

#include <limits>
#include <optional>
#include <set>
#include <string>

namespace rtrace::launcher {

// CPU times of /proc/stat, in seconds (core-seconds).
struct CpuTimes {
  double busy_s = 0;   // user + nice + system + irq + softirq (guest time is inside user/nice)
  double idle_s = 0;   // idle + iowait
  double steal_s = 0;  // given by the hypervisor to other guests
  int cpus = 0;        // "cpuN" lines counted
};
// Parses /proc/stat text: the aggregate "cpu" line, or with `allowed` the sum
// of those "cpuN" lines; nullopt when malformed or no CPU line counts.
// ticks_per_s is USER_HZ (sysconf(_SC_CLK_TCK)).
std::optional<CpuTimes> parse_proc_stat(const std::string& text, double ticks_per_s,
                                        const std::set<int>* allowed = nullptr);
// The 1-minute load average of /proc/loadavg text; NaN when unreadable.
double parse_load_average(const std::string& text);

// One point's measurement: start() before the fork, finish() after the tree was reaped.
struct MachineLoad {
  bool measured = false;
  std::string note;               // why not measured
  double interval_s = 0;
  CpuTimes start, end;
  double tree_cpu_s = 0;          // the app's tree plus the launcher
  double load_avg_start = std::numeric_limits<double>::quiet_NaN();
  double load_avg_end = std::numeric_limits<double>::quiet_NaN();
};
class MachineLoadProbe {
 public:
  void start();
  // tree_cpu_s: user+system of every process of the tree (wait4 rusage).
  MachineLoad finish(double tree_cpu_s) const;

 private:
  std::optional<CpuTimes> start_;
  std::set<int> cpus_;  // the launcher's affinity: the CPUs the app may use
  double self_cpu_start_ = 0, mono_start_ = 0, load_start_ = 0;
};

// The run-file row (schema 1.7 `machine_load`); an unmeasured load gives
// status "unavailable" with its note.
store::MachineLoadRow machine_load_row(const MachineLoad& m);

}  // namespace rtrace::launcher
