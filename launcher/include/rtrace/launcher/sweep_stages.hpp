// The stages of a sweep (docs/launcher.md, "Stages"): run_sweep() is these in order.
//
//   plan_sweep          options (+ the file on --resume) -> the points to run
//   check_setup         everything a point needs, checked before anything runs
//   open_run_file       create (never clobber) or reopen the run file
//   PartitionStage      what a partition needs around its points (MPS daemon, scratch)
//   run_point           the app, in its own process group, under the tracer
//   CeilingsStage       the roofline ceilings of the point's partition, after the
//                       point: --ert auto/quick measure only for points with counts
//   commit_point        ceilings, output, ranks, log: all or nothing
//   summarize           the summary line and the exit status
//
// Each stage is a plain function or class so it can be read and tested alone.
#pragma once

#include "rtrace/launcher/ceilings.hpp"
#include "rtrace/launcher/counting.hpp"
#include "rtrace/launcher/environment.hpp"
#include "rtrace/launcher/gpu.hpp"
#include "rtrace/launcher/options.hpp"
#include "rtrace/launcher/point_command.hpp"
#include "rtrace/launcher/process.hpp"
#include "rtrace/launcher/progress.hpp"
#include "rtrace/launcher/roofline_counts.hpp"
#include "rtrace/launcher/sweep.hpp"
#include "rtrace/store/run_file.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <map>
#include <string>
#include <vector>

namespace rtrace::launcher {

// A stage could not do what the sweep needs (scratch directory, process start):
// run_sweep prints "rtrace run: <what>" and exits with kExitCannotStart.
class StageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- plan
struct SweepContext {
  RunOptions opts;                               // after --resume filled them from the file
  SweepPlan plan;
  std::optional<store::RunMetadata> previous;    // the file's metadata on --resume
  std::set<std::int64_t> selected;               // --points; empty: all
  // An sms axis needs the device to plan (requests granting the same SMs are
  // one point): found once here and reused by check_setup.
  std::optional<GpuInfo> gpu;
  std::vector<std::string> notes;                // from planning, printed with check_setup's
  bool is_selected(std::int64_t id) const { return selected.empty() || selected.count(id) > 0; }
  int total() const {
    return selected.empty() ? static_cast<int>(plan.points.size()) : static_cast<int>(selected.size());
  }
};
// Reads the file on --resume, makes the plan and checks options against it.
// Throws UsageError / SweepSpecError.
SweepContext plan_sweep(RunOptions o);

// ---- checks before anything runs
struct SweepSetup {
  LaunchSetup launch;
  std::vector<std::string> notes;       // printed once, before the first point
  std::vector<PointCommand> commands;   // one per plan point
  std::string scratch_root;             // .<output>.scratch next to the output
  std::string sweep_launcher;           // "none", "mpirun", "srun"
  std::string trace_dir(std::int64_t point_id) const;
  std::string counts_file(std::int64_t point_id) const;  // the counting pass's output (--counts sim)
  std::string calibration_file() const;                  // the counting pass's cost calibration, once per sweep
  // The app's own counting cost per timed process-second, from the sweep's
  // last counting run: the next forecast's (0: none yet).
  double counted_app_slowdown = 0;
};
// A point's command for the counting pass: as the timed run launches it, untraced.
PointCommand counting_point_command(const SweepPoint& p, const SweepContext& ctx, const SweepSetup& setup);
// Resolves the app, launchers, GPU, tracer and --ert file; builds every point's
// command. Throws UsageError.
SweepSetup check_setup(const SweepContext& ctx, const Environment& env);
// Rebuilds the point commands (after the launch setup changed, e.g. MPS started).
void build_commands(const SweepContext& ctx, SweepSetup& setup);

// --dry-run: the plan and each point's command on stdout.
void print_dry_run(const SweepContext& ctx, const SweepSetup& setup);

// ---- the run file
// Creates the file with the plan (refusing to clobber) or, on --resume, reopens it
// and checks its points are this plan's. Throws UsageError and store::Error.
store::RunFile open_run_file(const SweepContext& ctx, const SweepSetup& setup, const Environment& env,
                             const std::vector<std::string>& rtrace_argv);
// The plan row of a point before it runs.
store::SweepPointRow plan_row(const SweepPoint& p, const Partition& part, const RunOptions& o, const Environment& env);

// ---- prepare partition
// Owns what partitions need around their points: the private MPS daemon of an
// sms axis (started once per sweep) and each point's scratch directory.
class PartitionStage {
 public:
  PartitionStage(const SweepContext& ctx, SweepSetup& setup);
  PartitionStage(const PartitionStage&) = delete;
  PartitionStage& operator=(const PartitionStage&) = delete;
  ~PartitionStage();
  // Sweep-wide start (the MPS daemon when the sms axis is swept); throws StageError.
  void start(const Environment& env);
  // Before a point runs: a fresh scratch directory when the tracer writes one.
  // Returns the point's trace directory. Throws StageError.
  std::string prepare(const SweepPoint& p);
  // After a point was committed: its scratch is removed unless --keep-scratch.
  void release(const SweepPoint& p);
  // After the last point: stops the daemon, removes the (empty) scratch root.
  void stop();

 private:
  const SweepContext& ctx_;
  SweepSetup& setup_;
  std::unique_ptr<MpsDaemon> mps_;
};

// ---- ceilings
struct PointCeilings {
  const PartitionCeilings* ceilings = nullptr;  // never null after ceilings_for_point
  bool interrupted = false;                     // ^C while measuring: stop the sweep
  std::string unreliable;                       // names of unreliable ceilings ("L1d, L2"), "" when none
};
// The ceilings of a point's partition (measured once per partition and cached by
// the provider); a failure is a warning in `log` and on the progress output.
PointCeilings ceilings_for_point(CeilingProvider& provider, const Partition& part, Progress& progress, int ordinal,
                                 const std::string& label, std::vector<std::string>& log);

// Ceilings are worth measuring only for a point whose data a roofline can place:
// with --ert auto/quick a point without such counts gets none (and no ERT runs
// for it); the first such point says so once. --ert FILE imports for every point.
class CeilingsStage {
 public:
  CeilingsStage(const RunOptions& o, const Environment& env, const LaunchSetup* launch);
  bool wanted(const RooflineCounts& counts) const;
  PointCeilings for_point(const Partition& part, const RooflineCounts& counts, Progress& progress, int ordinal,
                          const std::string& label, std::vector<std::string>& log);
  CeilingProvider& provider() { return provider_; }

 private:
  const RunOptions& opts_;
  CeilingProvider provider_;
  bool told_unused_ = false;
};

// `--resume` with --ert auto/quick/FILE: the complete points that have counts to
// place but no ceilings (run with --ert none, or interrupted while measuring)
// get them now, one store transaction per point. Returns false when interrupted.
bool add_missing_ceilings(store::RunFile& rf, const SweepContext& ctx, const SweepSetup& setup,
                          CeilingsStage& ceilings, Progress& progress);

// `--resume` with --counts sim: the complete points whose counting pass was
// interrupted (counts_info "interrupted") get it now, the timed run kept as
// committed; one store transaction per point. Returns false when interrupted.
bool add_missing_counts(store::RunFile& rf, const SweepContext& ctx, const SweepSetup& setup, Progress& progress);

// ---- run point
struct PointResult {
  ProcessResult process;
  store::PointStatus status = store::PointStatus::Ok;
  std::string status_text;   // "ok", "failed (exit 3)", ...
  store::SweepPointRow row;  // the row to commit
  bool interrupted = false;  // the sweep was interrupted during the point: do not commit
};
// Runs the app of one point. Throws StageError when it cannot be started at all.
PointResult run_point(const SweepPoint& p, const PointCommand& cmd, const RunOptions& o, const Environment& env,
                      Progress& progress, int ordinal, std::vector<std::string>& log);
// The committed row and status of a point from its process result (no I/O).
PointResult point_result(const SweepPoint& p, const PointCommand& cmd, const RunOptions& o, const Environment& env,
                         const ProcessResult& r, std::vector<std::string>& log);
// Nodes that failed during the point make it `failed`, whatever srun's exit
// said (a step killed by Slurm, a timeout): "failed (node node3 failed)".
void mark_failed_nodes(PointResult& result, const std::vector<std::string>& failed_hosts);
// After nodes failed: the allocation without them, and the commands of the
// points still to run rebuilt on it. A point that no longer fits (more nodes
// than are left) gets its reason in `unfit` and stays pending (--resume in a
// new allocation runs it).
void drop_failed_nodes(const SweepContext& ctx, SweepSetup& setup, const std::vector<std::string>& failed_hosts,
                       const std::vector<std::size_t>& remaining, std::map<std::size_t, std::string>& unfit);

// ---- commit
struct PointCommit {
  const PointCommand& cmd;
  const PartitionCeilings& ceilings;
  const PointResult& result;
  std::string trace_dir;    // the tracer's per-rank files ("" or tracer none: none)
  std::string tracer_mode;  // "none": ranks from wait4() rusage
  std::string metrics_dir = {};         // an sms point's metrics run: rows merged into the ranks
  std::string metrics_provenance = {};  // ...and how it ran (point attribute metrics_provenance)
  const CountingOutcome* counting = nullptr;  // --counts sim, the configuration's first point
  std::vector<std::string> placed_hosts = {};  // the nodes srun placed the point on (empty: no placement)
  std::vector<std::string> failed_hosts = {};  // placed nodes that did not answer after the point
};
// Writes the point group and marks the row complete, atomically. Throws on a
// write failure (the point stays pending). `log` gains the rank collector's lines.
void commit_point(store::RunFile& rf, const PointCommit& c, std::vector<std::string>& log);

// ---- summary
struct SweepOutcome {
  int interrupted = 0;       // the signal that stopped the sweep, 0 when none
  bool write_failed = false;
};
// Prints the summary line; returns the exit status (see run_sweep).
int summarize(const SweepContext& ctx, const store::RunFile& rf, const SweepOutcome& outcome);

}  // namespace rtrace::launcher
