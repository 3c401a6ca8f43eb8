// The counting pass of `rtrace run --counts sim` (issue 21, docs/counts.md):
// for each configuration, one extra run of its command under `rtrace counts`
// (rtrace's Valgrind tool in front of the app, each MPI rank under the tool,
// launched as the timed run is, without the tracer). Its per-rank count
// tables go into the rank groups of the configuration's first point; the
// timed runs stay uninstrumented.
#pragma once

#include "rtrace/launcher/options.hpp"
#include "rtrace/launcher/point_command.hpp"
#include "rtrace/launcher/progress.hpp"
#include "rtrace/launcher/sweep.hpp"
#include "rtrace/store/file.hpp"

#include <string>
#include <vector>

namespace rtrace::launcher {

// --counts auto/sim/pmu/none -> "sim", "pmu" or "none". auto: "pmu" when
// perf_event_open gives hardware events here, else "none" with a one-line hint
// in `notes` that --counts sim gives counts by simulation. sim: `rtrace counts
// --check` must pass (Valgrind and the tool found), else UsageError.
std::string resolve_counts_mode(const RunOptions& o, const Environment& env, std::vector<std::string>& notes);
bool pmu_gives_hardware_events();

// Counted once per configuration: its first repeat.
inline bool counted_point(const SweepPoint& p) { return p.repeat == 0; }

struct CountingInvocation {
  std::string path;                 // rtrace itself
  // `rtrace counts --calibrate ...` for the same caches and timed run (no
  // command): the cost forecast; empty when there is no timed time.
  std::vector<std::string> calibrate_argv;
  std::vector<std::string> argv;    // rtrace counts ... -- <the point's command without the tracer>
  Environment env;
  // Where every process under the tool writes its raw counts (--keep-raw):
  // next to `out_file`, in the point's scratch on the output's filesystem,
  // which ranks on other nodes reach (a local temporary directory they do not).
  std::string raw_dir;
};
// What the counting pass knows of the configuration's timed run.
struct TimedRun {
  double wall_s = 0;              // its wall time (progress, the cost prediction)
  double cpu_s = 0;               // user + system of its processes (0 unknown)
  std::string dispatch_from;      // where its tracer's dispatch rows are: the trace directory, or
                                  // the run file (with dispatch_point); "" none
  std::int64_t dispatch_point = -1;
  // This app's own slowdown per timed process-second, measured on the
  // sweep's previous counting run (CountingOutcome::app_slowdown); 0 none.
  double app_slowdown = 0;
};

// `untraced`: the point's command built without the tracer (LaunchSetup with
// tracer_mode "none"). `calibration_file`: where the cost calibration is kept
// for the sweep ("" none).
CountingInvocation counting_invocation(const PointCommand& untraced, const std::string& app_path,
                                       const std::string& out_file, const TimedRun& timed, const RunOptions& o,
                                       const std::string& calibration_file = "");

struct CountingOutcome {
  bool interrupted = false;   // ^C during the counting run: counts "interrupted", --resume reruns the pass
  std::string file;           // rtrace counts' output when it wrote one
  std::string failure;        // why there are no counts at all ("" when `file` holds them)
  std::string summary;        // "ok, 41 s (33x the timed run)" / "failed: ..."
  double wall_s = 0;
  // The app's slowdown per timed process-second, from this run and its
  // forecast's inputs (0 unknown): the next configuration's forecast uses it.
  double app_slowdown = 0;
};
CountingOutcome run_counting_pass(const CountingInvocation& inv, const std::string& label, int ordinal,
                                  double timed_wall_s, const RunOptions& o, Progress& progress);

// The counting pass's expected cost, before it runs: `rtrace counts
// --calibrate` with the invocation's caches and the timed run's times (the
// calibration is measured once and kept in the invocation's calibration
// file). Empty when it cannot say (no timed time, no calibration program).
struct CostForecast {
  double factor = 0;              // expected counting run / timed run
  double per_process_s = 0;       // the timed seconds the prediction slows down
  double startup_s = 0;           // the tool's own start and exit
  std::string line;               // "counting pass: expected about 22x the timed run's 8.1 s = 3.0 min (...)"
};
CostForecast forecast_counting_cost(const CountingInvocation& inv, const RunOptions& o);

// Puts the counts of `c` into the point's rank groups, matched by rank
// (ranks the timed run has no group for get one of their own); with no counts
// at all, every rank 0..expected_ranks-1 gets a counts_info row "failed"
// with the reason. Lines for the point's log go to `log`.
void attach_counting_pass(store::Group& ranks, const CountingOutcome& c, int expected_ranks,
                          std::vector<std::string>& log);

}  // namespace rtrace::launcher
