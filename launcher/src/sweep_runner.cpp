// The sweep runner: checks everything that can be checked before anything
// runs, then runs and commits one point after another (see docs/launcher.md).
// Each step is a stage of sweep_stages.hpp; this file only puts them in order.
#include "rtrace/launcher/sweep_runner.hpp"

#include "rtrace/launcher/metrics_pass.hpp"
#include "rtrace/launcher/node_check.hpp"
#include "rtrace/launcher/smid_probe.hpp"
#include "rtrace/launcher/sweep_stages.hpp"

#include <csignal>
#include <cstdio>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>

namespace rtrace::launcher {

namespace {

// rtrace's own cost, reported with --verbose (bench/launcher_overhead.sh reads it).
class OwnCost {
 public:
  using Clock = std::chrono::steady_clock;
  static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
  void add_point(double process_s, double app_s, double commit_s) {
    process_s_ += process_s;
    app_s_ += app_s;
    commit_s_ += commit_s;
    ++ran_;
  }
  void print() const {
    if (ran_ == 0) return;
    const double loop_s = since(start_);
    std::fprintf(stderr,
                 "rtrace: own cost per point: %.2f ms (process start/reap %.2f ms, commit %.2f ms, other %.2f ms) "
                 "over %d points, app %.2f ms per point\n",
                 (loop_s - app_s_) / ran_ * 1e3, (process_s_ - app_s_) / ran_ * 1e3, commit_s_ / ran_ * 1e3,
                 (loop_s - process_s_ - commit_s_) / ran_ * 1e3, ran_, app_s_ / ran_ * 1e3);
  }

 private:
  Clock::time_point start_ = Clock::now();
  double app_s_ = 0, process_s_ = 0, commit_s_ = 0;
  int ran_ = 0;
};

// The plan indexes of the selected points the file does not hold complete yet.
bool committed_not_ok(const store::SweepPointRow& row) {
  return row.complete && std::string(store::get_str(row.status)) != "ok";
}

// The points still to run: those not complete, and with --retry-failed those
// committed with a status other than ok (their new commit replaces the old).
std::vector<std::size_t> points_to_run(const SweepContext& ctx, const store::RunFile& rf) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < rf.points().size(); ++i) {
    const auto& row = rf.points()[i];
    if (!ctx.is_selected(row.point_id)) continue;
    if (!row.complete || (ctx.opts.retry_failed && committed_not_ok(row))) todo.push_back(i);
  }
  return todo;
}

// The committed points that did not succeed, for the --resume note:
// "; 1 point not ok, kept as committed: ranks=2 (rerun with --resume --retry-failed)",
// or with --retry-failed " (1 not-ok point to retry: ranks=2)".
std::string failed_points_note(const SweepContext& ctx, const store::RunFile& rf) {
  std::vector<std::string> labels;
  for (const auto& row : rf.points())
    if (ctx.is_selected(row.point_id) && committed_not_ok(row)) labels.push_back(store::get_str(row.label));
  if (labels.empty()) return "";
  std::string which;
  for (std::size_t i = 0; i < labels.size() && i < 4; ++i) which += (i ? ", " : "") + labels[i];
  if (labels.size() > 4) which += ", ...";
  const std::string n = std::to_string(labels.size());
  if (ctx.opts.retry_failed) return " (" + n + " not-ok point" + (labels.size() == 1 ? "" : "s") + " to retry: " + which + ")";
  return "; " + n + " point" + (labels.size() == 1 ? "" : "s") + " not ok, kept as committed: " + which +
         " (rerun with --resume --retry-failed)";
}

// A point that ran but did not deliver what was asked of it.
void fail_point(PointResult& result, const std::string& line, std::vector<std::string>& log) {
  result.status = store::PointStatus::Failed;
  result.status_text = "failed (" + line + ")";
  store::set_str(result.row.status, store::to_string(result.status));
  log.push_back("error: " + line);
}

int interrupt_or(int fallback) {
  const int s = SignalWatch::interrupt_signal();
  return s ? s : fallback;
}

}  // namespace

int run_sweep(RunOptions opts, const std::vector<std::string>& rtrace_argv) {
  SignalWatch::install();
  const Environment env = Environment::current();

  const SweepContext ctx = plan_sweep(std::move(opts));
  const RunOptions& o = ctx.opts;
  SweepSetup setup = check_setup(ctx, env);
  if (o.dry_run) {
    print_dry_run(ctx, setup);
    return kExitAllOk;
  }

  // The partitions first (the MPS daemon): a sweep that cannot partition
  // leaves no run file behind.
  PartitionStage partitions(ctx, setup);
  try {
    partitions.start(env);
  } catch (const StageError& e) {
    std::fprintf(stderr, "rtrace run: %s\n", e.what());
    return kExitCannotStart;
  }

  std::optional<store::RunFile> rf;
  try {
    rf = open_run_file(ctx, setup, env, rtrace_argv);
  } catch (const store::Error& e) {
    std::fprintf(stderr, "rtrace run: cannot %s `%s`: %s\n", o.resume ? "open" : "create", o.output.c_str(), e.what());
    return kExitCannotStart;
  }

  const std::vector<std::size_t> todo = points_to_run(ctx, *rf);
  const int total = ctx.total();
  Progress progress(Progress::detect(o.quiet), total, total - static_cast<int>(todo.size()));
  for (const auto& n : setup.notes) progress.note(n);
  if (o.resume && !o.quiet)
    progress.note("resuming " + o.output + ": " + std::to_string(todo.size()) + " of " + std::to_string(total) +
                  " points left" + failed_points_note(ctx, *rf));
  CeilingsStage ceilings(o, env, &setup.launch);
  MetricsPassStage metrics_pass(o, setup.launch);
  SweepOutcome outcome;
  // --resume: points committed without ceilings they could use get them first.
  if (o.resume && (!add_missing_counts(*rf, ctx, setup, progress) ||
                   !add_missing_ceilings(*rf, ctx, setup, ceilings, progress))) {
    progress.finish();
    outcome.interrupted = interrupt_or(SIGINT);
    partitions.stop();
    return summarize(ctx, *rf, outcome);
  }
  OwnCost cost;
  int ordinal = total - static_cast<int>(todo.size());
  std::map<std::size_t, std::string> unfit;  // points that no longer fit the allocation (a node failed)
  for (std::size_t n = 0; n < todo.size(); ++n) {
    const std::size_t idx = todo[n];
    const SweepPoint& p = ctx.plan.points[idx];
    const PointCommand& cmd = setup.commands[idx];
    ++ordinal;
    const std::string label = p.label();
    if (auto it = unfit.find(idx); it != unfit.end()) {
      progress.note("point " + std::to_string(p.id) + " (" + label + ") not run: " + it->second +
                    "; `rtrace --resume` in an allocation with enough nodes runs it");
      continue;
    }
    std::vector<std::string> log;
    if (setup.launch.gpu.fake && p.sms > 0) log.push_back("warning: " + setup.launch.gpu.note);

    // 1. The partition's scratch, then the app under the tracer.
    std::string trace_dir;
    PointResult result;
    auto process_start = OwnCost::Clock::now();
    SmsMeasurement measured;
    try {
      trace_dir = partitions.prepare(p);
      // The SMs this point really gets: the %smid probe under its partition
      // environment (sms_achieved), not the grant the percentage predicts.
      if (p.sms > 0) {
        measured = measure_point_sms(setup.launch, cmd);
        if (!measured.log.empty()) log.push_back(measured.log);
      }
      process_start = OwnCost::Clock::now();
      result = run_point(p, cmd, o, env, progress, ordinal, log);
      if (p.sms > 0) result.row.sms_achieved = measured.sms;
    } catch (const StageError& e) {
      std::fprintf(stderr, "rtrace run: %s\n", e.what());
      return kExitCannotStart;
    }
    const double process_s = OwnCost::since(process_start);
    if (result.interrupted) {
      outcome.interrupted = SignalWatch::interrupt_signal();
      break;
    }
    // A point on several nodes that did not end ok: did a node fail?
    const std::vector<std::string> placed = partition_hosts(cmd.partition, setup.launch);
    NodeCheck nodes;
    if (result.status != store::PointStatus::Ok && cmd.launch == LaunchKind::Srun && !placed.empty()) {
      progress.begin_point(ordinal, label, "checking its " + std::to_string(placed.size()) + " nodes");
      nodes = check_nodes(setup.launch.srun_path, env, placed);
      log.insert(log.end(), nodes.log.begin(), nodes.log.end());
      mark_failed_nodes(result, nodes.failed);
    }

    // CUDA tracing that could not run (no CUPTI, no counter permission) fails
    // the point with the reason, never "ok" with nothing traced.
    if (setup.launch.tracer_mode.rfind("cuda", 0) == 0 && result.status == store::PointStatus::Ok)
      if (auto failure = cuda_tracing_failure(gpu_status_in_trace_dir(trace_dir),
                                              setup.launch.tracer_mode == "cuda-metrics"))
        fail_point(result, *failure, log);

    // 1b. The kernel counts of an sms point: a second run under cuda-metrics,
    //     inside the partition when CUPTI can profile there, else outside.
    MetricsPassResult counted;
    if (setup.launch.metrics_pass && p.sms > 0 && result.status == store::PointStatus::Ok) {
      counted = metrics_pass.run(p, cmd, trace_dir, progress, ordinal);
      log.insert(log.end(), counted.log.begin(), counted.log.end());
      if (counted.interrupted) {
        outcome.interrupted = SignalWatch::interrupt_signal();
        break;
      }
      if (counted.failure) fail_point(result, *counted.failure, log);
    }

    // 2. The counting pass (--counts sim), once per configuration: its first
    //    repeat. Only after a timed run that succeeded. Interrupted: the timed
    //    run is committed with counts "interrupted", and --resume runs only
    //    the counting pass again (add_missing_counts).
    std::optional<CountingOutcome> counting;
    if (setup.launch.counts_mode == "sim" && counted_point(p)) {
      if (result.status != store::PointStatus::Ok) {
        log.push_back("info: no counting pass: the timed run did not succeed");
      } else {
        std::error_code ec;
        std::filesystem::create_directories(setup.scratch_root, ec);
        const PointCommand untraced = counting_point_command(p, ctx, setup);
        TimedRun timed;
        timed.wall_s = result.process.wall_s;
        timed.cpu_s = result.process.user_s + result.process.system_s;
        timed.dispatch_from = trace_dir;   // the tracer's rank files, not yet collected
        timed.app_slowdown = setup.counted_app_slowdown;
        const CountingInvocation inv = counting_invocation(untraced, setup.launch.app_path, setup.counts_file(p.id),
                                                           timed, o, setup.calibration_file());
        counting = run_counting_pass(inv, label, ordinal, result.process.wall_s, o, progress);
        if (counting->app_slowdown > 0) setup.counted_app_slowdown = counting->app_slowdown;
        if (counting->interrupted || SignalWatch::interrupt_signal()) {
          counting->interrupted = true;
          outcome.interrupted = interrupt_or(SIGINT);
        }
      }
    }

    // 3. Ceilings of the partition, when the point has counts to place on them
    //    (measured once per partition, cached). Interrupted while measuring: the
    //    point is still committed, and --resume adds its ceilings.
    //    Not when a node of the point failed: its partition cannot be measured now.
    RooflineCounts counts = setup.launch.tracer_mode == "none" || !nodes.failed.empty()
                                ? RooflineCounts{}
                                : roofline_counts_in_trace_dir(trace_dir);
    if (!counts.any && !counted.trace_dir.empty()) counts = roofline_counts_in_trace_dir(counted.trace_dir);
    if (!counts.any && counting && !counting->file.empty())
      counts = RooflineCounts{true, "counted FLOPs and bytes (--counts sim)"};
    static const PartitionCeilings kNotMeasured;
    PointCeilings ceil;
    if (counting && counting->interrupted) {  // stop now; --resume adds them with the counts
      ceil.ceilings = &kNotMeasured;
    } else {
      ceil = ceilings.for_point(cmd.partition, counts, progress, ordinal, label, log);
    }
    if (ceil.interrupted) {
      outcome.interrupted = interrupt_or(SIGINT);
      log.push_back("warning: ceilings of partition " + cmd.partition.name() +
                    " not measured (interrupted); `rtrace run --resume` adds them");
    }

    // 4. Commit: ceilings, output, ranks, counts, log: all or nothing.
    const auto commit_start = OwnCost::Clock::now();
    try {
      commit_point(*rf,
                   PointCommit{cmd, *ceil.ceilings, result, trace_dir, setup.launch.tracer_mode, counted.trace_dir,
                               counted.provenance, counting ? &*counting : nullptr, placed, nodes.failed},
                   log);
    } catch (const std::exception& e) {
      progress.finish();
      std::fprintf(stderr, "rtrace run: cannot record point %lld (%s) in `%s`: %s\n", static_cast<long long>(p.id),
                   label.c_str(), o.output.c_str(), e.what());
      outcome.write_failed = true;
      break;
    }
    const double commit_s = OwnCost::since(commit_start);
    cost.add_point(process_s, result.process.wall_s, commit_s);
    if (o.verbose) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.1f ms", commit_s * 1e3);
      progress.note("point " + std::to_string(p.id) + ": committed in " + ms);
    }
    partitions.release(p);
    if (counting && !o.keep_scratch) {
      std::error_code ec;
      std::filesystem::remove(setup.counts_file(p.id), ec);
      std::filesystem::remove_all(std::filesystem::path(setup.counts_file(p.id)).replace_extension(".raw"), ec);
    }
    progress.end_point(label,
                       ceil.unreliable.empty() ? result.status_text
                                               : result.status_text + ", unreliable ceilings: " + ceil.unreliable,
                       result.process.wall_s,
                       result.status == store::PointStatus::Ok
                           ? ""
                           : failure_line(result.process.stderr_tail, result.process.stdout_tail));
    if (o.verbose)
      for (const auto& l : log) progress.note("point " + std::to_string(p.id) + ": " + l);
    if (!nodes.failed.empty())
      drop_failed_nodes(ctx, setup, nodes.failed, std::vector<std::size_t>(todo.begin() + n + 1, todo.end()), unfit);
    if (result.status != store::PointStatus::Ok && o.fail_fast) {
      progress.note("--fail-fast: stopping after point " + std::to_string(p.id) + " (" + result.status_text + ")");
      break;
    }
    if (outcome.interrupted || SignalWatch::interrupt_signal()) {
      outcome.interrupted = interrupt_or(outcome.interrupted);
      break;
    }
  }
  progress.finish();
  if (o.verbose) cost.print();
  partitions.stop();
  return summarize(ctx, *rf, outcome);
}

}  // namespace rtrace::launcher
