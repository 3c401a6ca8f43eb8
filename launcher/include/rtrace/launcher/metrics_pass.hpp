// Kernel counts for the points of an `sms` sweep (docs/launcher.md, "Kernel
// counts of an SM partition").
//
// The partitioned run of a point traces kernel times (cuda-trace). Its counts
// come from a second run of the same point under cuda-metrics, because kernel
// replay serialises and stretches kernels: times never come from it. That
// run is tried inside the point's SM partition first (the same MPS client
// environment); when CUPTI refuses to profile there (the metric APIs are not
// supported under MPS: the tracer records gpu_status "metrics-refused" with
// CUPTI's result), it runs again without MPS: in a green context of the
// partition's SMs, which the tracer makes current for the app (cupti_green.cpp;
// only launches that ran in it count as in-partition), else on the whole
// device, and every count says which (KernelRow::metrics_provenance). A
// refusal is remembered for the rest of the sweep. Outside runs stop rtrace's
// MPS server first (in EXCLUSIVE_PROCESS compute mode it holds the device).
// Counters restricted to administrators (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
// the driver's default NVreg_RestrictProfilingToAdminUsers=1): nowhere else
// helps; under --tracer auto the point keeps its times and its log says why
// there are no counts and what would give them (no later point tries again);
// --tracer cuda-metrics fails the point.
#pragma once

#include "rtrace/launcher/point_command.hpp"
#include "rtrace/launcher/progress.hpp"
#include "rtrace/launcher/sweep.hpp"
#include "rtrace/store/run_file.hpp"

#include <optional>
#include <string>
#include <vector>

namespace rtrace::launcher {

// The worst gpu_status over the tracer's rank files of a point (ranks.h5,
// rank-*.h5), with its detail; "" when no rank initialised CUDA.
struct GpuTraceStatus {
  std::string worst;
  std::string detail;
};
GpuTraceStatus gpu_status_in_trace_dir(const std::string& trace_dir);
// The metrics_provenance of every kernel row with metrics there: the one word
// they share, "mixed", or "" when none has metrics.
std::string metrics_provenance_in_trace_dir(const std::string& trace_dir);

// The one line that fails a point whose CUDA tracing could not run: no CUPTI,
// the activity API refused; with `metrics_required` (--tracer cuda-metrics)
// also counters not permitted, metrics refused or failed. nullopt when fine.
std::optional<std::string> cuda_tracing_failure(const GpuTraceStatus& status, bool metrics_required);

struct MetricsPassResult {
  std::string trace_dir;                 // the metrics run's rank files ("" when there are none to merge)
  std::string provenance;                // store::kMetricsInPartition or kMetricsOutsidePartition
  std::vector<std::string> log;          // for the point's log
  std::optional<std::string> failure;    // the point fails with this line
  bool interrupted = false;
};

class MetricsPassStage {
 public:
  MetricsPassStage(const RunOptions& o, const LaunchSetup& launch) : opts_(o), launch_(launch) {}
  // The metrics run(s) of a point whose partitioned trace run went well.
  MetricsPassResult run(const SweepPoint& p, const PointCommand& cmd, const std::string& trace_dir, Progress& progress,
                        int ordinal);
  // Why CUPTI refused to profile inside a partition ("" until it did).
  const std::string& refused() const noexcept { return refused_; }

 private:
  const RunOptions& opts_;
  const LaunchSetup& launch_;
  std::string refused_;     // CUPTI's answer, once seen: later points go outside directly
  std::string refused_at_;  // the point where it was seen
  std::string denied_;      // counters restricted to administrators: no later point tries
  std::string denied_at_;
};

// The environment of a run outside the point's SM partition: no MPS
// percentage, and a private empty pipe directory, so the client reaches no
// MPS daemon (not ours, not a system-wide one) and runs on the whole device;
// the user's own CUDA_VISIBLE_DEVICES back in place of the daemon-relative one.
Environment outside_partition_env(const Environment& point_env, const Environment& rtrace_env,
                                  const std::string& empty_pipe_dir);

// Appends the metrics run's kernel rows that have metrics to the partitioned
// run's rank: names remapped, no timeline (start_ns = end_ns = 0, so times can
// only come from the trace rows), joined by (kernel name, launch_index) in the
// analysis. Only rows whose launch is in the timed run with the same grid and
// block sizes are kept (a library may launch other kernels or shapes on
// another SM count); the others are left out and said in one warning line.
// `trace.info.metrics_unmatched_launches`: the metrics run's own unmatched
// launches plus the timed launches left without counts.
void merge_metric_rows(store::RankRecords& trace, const store::RankRecords& metrics);

}  // namespace rtrace::launcher
