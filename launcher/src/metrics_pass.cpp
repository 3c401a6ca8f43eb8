// The metrics run(s) of an sms point. See metrics_pass.hpp.
#include "rtrace/launcher/metrics_pass.hpp"

#include "rtrace/launcher/mps.hpp"
#include "rtrace/launcher/process.hpp"
#include "rtrace/launcher/rank_collector.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;

namespace rtrace::launcher {

namespace {

// Worse statuses rank higher (RankInfoRow::gpu_status's words).
int severity(const std::string& s) {
  static const char* const kOrder[] = {"",         "traced",         "metrics",     "metrics-refused",
                                       "metrics-failed", "metrics-denied", "trace-failed", "no-cupti"};
  for (int i = 0; i < 8; ++i)
    if (s == kOrder[i]) return i;
  return 0;  // a word this rtrace does not know: not a failure it can name
}

std::string describe(const ProcessResult& r) {
  switch (r.kind) {
    case ExitKind::Exited: return "exit " + std::to_string(r.exit_code);
    case ExitKind::Signalled: return "signal " + std::to_string(r.signal);
    case ExitKind::TimedOut: return "timed out";
    case ExitKind::Interrupted: return "interrupted";
    case ExitKind::LaunchError: return r.launch_error;
  }
  return "?";
}

}  // namespace

GpuTraceStatus gpu_status_in_trace_dir(const std::string& trace_dir) {
  GpuTraceStatus out;
  std::vector<std::string> ignored;
  for (const auto& [rank, rec] : read_tracer_ranks(trace_dir, ignored)) {
    const std::string s = store::get_str(rec.info.gpu_status);
    if (severity(s) > severity(out.worst) || (out.worst.empty() && !s.empty())) {
      out.worst = s;
      out.detail = store::get_str(rec.info.gpu_status_detail);
    }
  }
  return out;
}

std::string metrics_provenance_in_trace_dir(const std::string& trace_dir) {
  std::string out;
  std::vector<std::string> ignored;
  for (const auto& [rank, rec] : read_tracer_ranks(trace_dir, ignored))
    for (const auto& k : rec.kernels) {
      if (!k.has_metrics) continue;
      const std::string p = store::get_str(k.metrics_provenance);
      if (out.empty()) out = p;
      else if (out != p) return "mixed";
    }
  return out;
}

std::string counters_denied_line(const std::string& detail) {
  return "GPU performance counters not permitted (" + detail +
         "): run as root or load the NVIDIA driver with NVreg_RestrictProfilingToAdminUsers=0";
}

std::optional<std::string> cuda_tracing_failure(const GpuTraceStatus& s, bool metrics_required) {
  if (s.worst == "no-cupti") return "GPU tracing impossible: CUPTI missing: " + s.detail;
  if (s.worst == "trace-failed") return "GPU tracing failed: " + s.detail;
  if (!metrics_required) return std::nullopt;  // times are traced; counts are a bonus (--tracer auto)
  if (s.worst == "metrics-denied") return counters_denied_line(s.detail);
  if (s.worst == "metrics-refused" || s.worst == "metrics-failed") return "GPU kernel metrics unavailable: " + s.detail;
  return std::nullopt;
}

Environment outside_partition_env(const Environment& point_env, const Environment& rtrace_env,
                                  const std::string& empty_pipe_dir) {
  Environment env = point_env;
  env.unset("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  env.set("CUDA_MPS_PIPE_DIRECTORY", empty_pipe_dir);
  env.set("CUDA_MPS_LOG_DIRECTORY", empty_pipe_dir);
  if (rtrace_env.has("CUDA_VISIBLE_DEVICES")) env.set("CUDA_VISIBLE_DEVICES", rtrace_env.get("CUDA_VISIBLE_DEVICES"));
  else env.unset("CUDA_VISIBLE_DEVICES");
  return env;
}

MetricsPassResult MetricsPassStage::run(const SweepPoint& p, const PointCommand& cmd, const std::string& trace_dir,
                                        Progress& progress, int ordinal) {
  MetricsPassResult out;
  const std::string dir = trace_dir + "-metrics";
  // Counters restricted to administrators (the driver's default): every later
  // point would be refused the same way; its times are kept.
  if (!denied_.empty()) {
    out.log.push_back("warning: no kernel counts: GPU performance counters are restricted to administrators (seen at " +
                      denied_at_ + ": " + denied_ + "); the point keeps its kernel times");
    return out;
  }
  auto fresh_dir = [&](const std::string& d) {
    std::error_code ec;
    fs::remove_all(d, ec);
    fs::create_directories(d, ec);
    chmod(d.c_str(), 0700);
    return !ec;
  };
  auto run_in = [&](const Environment& env, const char* where) -> ProcessResult {
    progress.begin_point(ordinal, p.label(), std::string("kernel counts ") + where);
    ProcessSpec spec;
    spec.path = cmd.path;
    spec.argv = cmd.argv;
    spec.env = env.to_envp();
    spec.timeout_s = opts_.timeout_s;
    spec.grace_s = opts_.grace_s;
    spec.echo = opts_.verbose;
    return run_process(spec);
  };
  auto pass_env = [&](Environment env, const char* provenance) {
    env.set("RTRACE_TRACE_DIR", dir);
    env.set("RTRACE_TRACER_MODE", "cuda-metrics");
    env.set("RTRACE_METRICS_PROVENANCE", provenance);
    return env;
  };
  // The run failed as a process: the point fails (its counts were asked for).
  auto process_failed = [&](const ProcessResult& r, const char* where) {
    if (r.kind == ExitKind::Interrupted) {
      out.interrupted = true;
      return true;
    }
    if (r.kind == ExitKind::Exited && r.exit_code == 0) return false;
    out.failure = std::string("the metrics run ") + where + " failed (" + describe(r) + ")";
    return true;
  };
  // CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (NVreg_RestrictProfilingToAdminUsers=1,
  // the driver's default): nowhere else helps. --tracer cuda-metrics fails the
  // point; --tracer auto keeps its times and says why there are no counts and
  // what would give them (issue 31).
  auto counters_denied = [&](const GpuTraceStatus& st) {
    if (launch_.metrics_required) {
      out.failure = counters_denied_line(st.detail);
      return;
    }
    denied_ = st.detail;
    denied_at_ = p.label();
    const std::string line = "no kernel counts: GPU performance counters are restricted to administrators (" +
                             st.detail + "): the points keep their kernel times; for counts run rtrace as root, or "
                             "have the NVIDIA driver loaded with NVreg_RestrictProfilingToAdminUsers=0";
    out.log.push_back("warning: " + line);
    progress.note("warning: " + line);
  };

  bool inside = refused_.empty();
  if (!inside)
    out.log.push_back("info: kernel counts replayed outside the partition: CUPTI refused to profile inside an SM "
                      "partition at " + refused_at_ + " (" + refused_ + ")");
  if (inside) {
    if (!fresh_dir(dir)) {
      out.failure = "cannot create the scratch directory " + dir;
      return out;
    }
    const ProcessResult r = run_in(pass_env(cmd.env, store::kMetricsInPartition), "inside the partition");
    if (process_failed(r, "inside the partition")) return out;
    const GpuTraceStatus st = gpu_status_in_trace_dir(dir);
    if (st.worst == "metrics-denied") {
      counters_denied(st);
      return out;
    }
    if (st.worst == "no-cupti" || st.worst == "trace-failed") {
      out.failure = cuda_tracing_failure(st, true);
      return out;
    }
    if (st.worst == "metrics-refused" || st.worst == "metrics-failed") {
      refused_ = st.detail;
      refused_at_ = p.label();
      out.log.push_back("info: CUPTI refused to profile inside the SM partition (" + st.detail +
                        "): kernel counts replayed outside the partition, on the whole device");
      inside = false;
    } else {
      out.trace_dir = dir;
      out.provenance = store::kMetricsInPartition;
      out.log.push_back(st.worst == "metrics" ? "info: kernel counts profiled inside the SM partition"
                                              : "info: the metrics run inside the partition initialised no CUDA "
                                                "context: no kernel counts");
      return out;
    }
  }
  // Outside MPS: the same command without an MPS client environment. A point
  // granted the whole device has no partition to leave; any other is tried in
  // a green context of its SMs (the tracer makes it current for the app's
  // driver calls; the launches that ran in it are "in-partition", those that
  // did not, on the whole device, "replayed outside the partition"), and when
  // that is refused (a launch from a second thread, a profiler that would not
  // take the green context), on the whole device.
  // rtrace's MPS server holds the device in EXCLUSIVE_PROCESS compute mode (the
  // mode MPS recommends): a process that is not its client gets no context
  // while it lives, so it is stopped first (the daemon starts a new one for the
  // next point's first client).
  if (launch_.mps && launch_.mps->running()) {
    const MpsServerStop stopped = launch_.mps->stop_servers();
    if (!stopped.ok && launch_.gpu.compute_mode == kComputeModeExclusiveProcess) {
      out.failure = "the run outside the partition needs the device, but rtrace's MPS server did not stop (" +
                    stopped.report + ") and the GPU is in EXCLUSIVE_PROCESS compute mode";
      return out;
    }
    out.log.push_back(std::string(stopped.ok ? "info: " : "warning: ") + stopped.report);
  }
  const bool whole_device = launch_.gpu.sm_count > 0 && cmd.partition.sms >= launch_.gpu.sm_count;
  auto outside_run = [&](bool green, GpuTraceStatus& st) -> bool {
    if (!fresh_dir(dir) || !fresh_dir(dir + "/no-mps")) {
      out.failure = "cannot create the scratch directory " + dir;
      return false;
    }
    Environment env = outside_partition_env(cmd.env, launch_.base, dir + "/no-mps");
    if (green) env.set("RTRACE_GREEN_CTX_SMS", std::to_string(cmd.partition.sms));
    const char* provenance = green || whole_device ? store::kMetricsInPartition : store::kMetricsOutsidePartition;
    const ProcessResult r = run_in(pass_env(env, provenance), whole_device ? "on the whole device"
                                                              : green    ? "in a green context"
                                                                         : "outside the partition");
    if (process_failed(r, "outside MPS")) return false;
    st = gpu_status_in_trace_dir(dir);
    if (st.worst == "metrics-denied") {
      counters_denied(st);
      return false;
    }
    if (auto f = cuda_tracing_failure(st, false)) {
      out.failure = f;
      return false;
    }
    return true;
  };
  GpuTraceStatus st;
  bool green = !whole_device;
  if (!outside_run(green, st)) return out;
  if (green && st.worst != "metrics") {
    out.log.push_back("info: the green context of " + std::to_string(cmd.partition.sms) + " SMs gave no kernel counts (" +
                      (st.detail.empty() ? std::string("no CUDA context") : st.detail) +
                      "): replayed on the whole device");
    green = false;
    if (!outside_run(false, st)) return out;
  }
  if (st.worst != "metrics") {
    // Refused on the whole device too (MIG, a VM, another profiler): the point
    // keeps its times; --tracer cuda-metrics makes that a failure.
    const std::string line = "no kernel counts: CUPTI refused to profile on the whole device too (" +
                             (st.detail.empty() ? std::string("no CUDA context") : st.detail) + ")";
    if (launch_.metrics_required) out.failure = line;
    else out.log.push_back("warning: " + line);
    return out;
  }
  out.trace_dir = dir;
  out.provenance = metrics_provenance_in_trace_dir(dir);
  if (whole_device)
    out.log.push_back("info: kernel counts profiled without MPS on the whole device, which is this point's partition");
  else if (!green)
    out.log.push_back("info: kernel counts " + out.provenance + " (on the whole device: the green context was refused)");
  else if (out.provenance == store::kMetricsInPartition)
    out.log.push_back("info: kernel counts profiled inside a green context of the partition's " +
                      std::to_string(cmd.partition.sms) + " SMs (every launch ran in it)");
  else
    out.log.push_back("info: kernel counts " + out.provenance +
                      (out.provenance == "mixed" ? " (some launches ran in the green context of the partition's SMs, "
                                                   "the rest on the whole device)"
                                                 : " (no green context of the partition's SMs took the app's "
                                                   "launches: the tracer's log says why)"));
  return out;
}

namespace {

std::string shape(const store::KernelRow& k) {
  return "grid " + std::to_string(k.grid_x) + "x" + std::to_string(k.grid_y) + "x" + std::to_string(k.grid_z) +
         " block " + std::to_string(k.block_x) + "x" + std::to_string(k.block_y) + "x" + std::to_string(k.block_z);
}

bool same_shape(const store::KernelRow& a, const store::KernelRow& b) {
  return a.grid_x == b.grid_x && a.grid_y == b.grid_y && a.grid_z == b.grid_z && a.block_x == b.block_x &&
         a.block_y == b.block_y && a.block_z == b.block_z;
}

}  // namespace

void merge_metric_rows(store::RankRecords& trace, const store::RankRecords& metrics) {
  std::map<std::string, std::int64_t> ids;
  for (std::size_t i = 0; i < trace.names.size(); ++i) ids.emplace(trace.names[i], static_cast<std::int64_t>(i));
  // The timed launches by (name, launch index): a count joins only the launch
  // of the same kernel, order AND grid and block sizes (with fewer SMs a
  // library may pick other kernels, tile sizes or split-K: issue 31).
  std::map<std::pair<std::int64_t, std::int64_t>, const store::KernelRow*> timed;
  for (const store::KernelRow& k : trace.kernels)
    if (!k.has_metrics || k.end_ns > k.start_ns) timed.emplace(std::make_pair(k.name_id, k.launch_index), &k);
  std::int64_t merged = 0, no_launch = 0, other_shape = 0;
  std::vector<std::string> examples;
  std::string provenance = "-";
  std::vector<store::KernelRow> joined;
  for (store::KernelRow k : metrics.kernels) {
    if (!k.has_metrics) continue;
    provenance = store::get_str(k.metrics_provenance);
    const std::string name = k.name_id >= 0 && static_cast<std::size_t>(k.name_id) < metrics.names.size()
                                 ? metrics.names[static_cast<std::size_t>(k.name_id)]
                                 : "name#" + std::to_string(k.name_id);
    auto id = ids.find(name);
    const auto t = id == ids.end() ? timed.end() : timed.find({id->second, k.launch_index});
    if (t == timed.end()) {
      ++no_launch;
      if (examples.size() < 3)
        examples.push_back("`" + name + "` launch " + std::to_string(k.launch_index) + ": not in the timed run");
      continue;
    }
    if (!same_shape(*t->second, k)) {
      ++other_shape;
      if (examples.size() < 3)
        examples.push_back("`" + name + "` launch " + std::to_string(k.launch_index) + ": " + shape(*t->second) +
                           " timed, " + shape(k) + " counted");
      continue;
    }
    k.name_id = id->second;
    k.start_ns = k.end_ns = 0;  // replayed: its timeline is not the partitioned run's
    joined.push_back(k);
    ++merged;
  }
  trace.kernels.insert(trace.kernels.end(), joined.begin(), joined.end());
  const std::int64_t timed_launches = static_cast<std::int64_t>(timed.size());
  trace.info.metrics_unmatched_launches =
      std::max<std::int64_t>(0, metrics.info.metrics_unmatched_launches) + (timed_launches - merged);
  trace.info.metrics_unmatched_ranges = metrics.info.metrics_unmatched_ranges;
  trace.log.push_back("info: " + std::to_string(merged) + " kernel launch(es) with counts from the metrics run (" +
                      provenance + ", gpu_status " + store::get_str(metrics.info.gpu_status) + ")");
  if (no_launch + other_shape > 0) {
    std::string line = "warning: metrics: " + std::to_string(no_launch + other_shape) +
                       " launch(es) of the metrics run left out: " + std::to_string(other_shape) +
                       " with other grid or block sizes than the timed run's same launch, " + std::to_string(no_launch) +
                       " with no such launch in the timed run (with another SM count a library may choose other "
                       "kernels, tiles or split-K); " + std::to_string(timed_launches - merged) +
                       " timed launch(es) have no counts; e.g. ";
    for (std::size_t i = 0; i < examples.size(); ++i) line += (i ? "; " : "") + examples[i];
    trace.log.push_back(line);
  }
  for (const auto& l : metrics.log)
    if (l.rfind("warning: metrics:", 0) == 0 || l.rfind("error:", 0) == 0) trace.log.push_back(l + " [metrics run]");
}

}  // namespace rtrace::launcher
