// Everything one traced process records, and how it becomes store::RankRecords.
#pragma once

#include "config.hpp"
#include "counters.hpp"
#include "kernel_names.hpp"
#include "metric_join.hpp"
#include "mpi_stats.hpp"
#include "names.hpp"
#include "regions.hpp"
#include "rtrace/store/run_file.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rtrace::tracer {

// GPU activity as CUPTI delivers it (names still strings, shared per kernel).
struct GpuKernel {
  std::shared_ptr<const KernelName> names;  // KernelNameCache: one per kernel, not per launch
  const std::string& name() const noexcept { return names->demangled; }
  // As the activity record names it (matched against range names).
  const std::string& raw_name() const noexcept { return names->raw; }
  std::uint32_t context_id = 0;
  bool from_graph = false;
  store::KernelRow row{};
  // A record a forced flush handed back before the kernel ended (start or end
  // 0): kept only to hold its place in launch order (the metrics join and the
  // per-name launch_index), never written; counted in dropped_records.
  bool incomplete = false;
};

// What CUPTI let the tracer do, from best to worst: a process keeps the worst
// it met (one refused context is worth knowing about). See store's
// RankInfoRow::gpu_status for the words written.
enum class GpuStatus { None, Traced, Metrics, MetricsRefused, MetricsFailed, MetricsDenied, TraceFailed, NoCupti };
const char* to_string(GpuStatus s) noexcept;

class RankState {
 public:
  // `counters` may be null (no counter source at all); the state owns it.
  RankState(TracerConfig config, std::unique_ptr<CounterProvider> counters);

  const TracerConfig& config() const noexcept { return config_; }
  // CUDA injection without an explicit mode traces (the cheap default).
  void set_mode(TracerMode m) noexcept { config_.mode = m; }
  RegionRecorder& regions() noexcept { return regions_; }
  MpiStats& mpi() noexcept { return mpi_; }
  bool counters_available() const noexcept { return counters_available_; }

  // Log lines go to the rank's `log` dataset (warnings and errors always) and
  // to stderr when at or above RTRACE_LOG. Errors also count as tracer_errors.
  void log(LogLevel level, const std::string& text) noexcept;
  void error(const std::string& text) noexcept { log(LogLevel::Error, text); }
  std::int64_t errors() const noexcept { return errors_.load(); }

  void set_rank(std::int64_t rank) noexcept { rank_.store(rank); }
  std::int64_t rank() const noexcept { return rank_.load(); }

  // GPU side (CUPTI callbacks, any thread).
  void add_kernels(std::vector<GpuKernel> kernels) noexcept;
  void add_memcpy(std::vector<store::MemcpyRow> rows) noexcept;
  void add_dropped(std::int64_t n) noexcept { dropped_.fetch_add(n); }
  void set_gpu_available(bool v) noexcept { gpu_available_.store(v); }
  // Metrics mode: profiled ranges of one context, in the order CUPTI recorded
  // them; joined with the launches by context, order and kernel name when the
  // records are built (metric_join.hpp).
  void add_metric_ranges(std::vector<MetricRange> ranges) noexcept;
  // Keeps the worse of the current and the new status (the first detail of
  // the worst status stays).
  void set_gpu_status(GpuStatus status, const std::string& detail) noexcept;
  GpuStatus gpu_status() const noexcept;
  // The green context the app was steered into (cupti_green.cpp): only metric
  // rows of launches in it carry config().metrics_provenance, the others
  // "replayed outside the partition" (they ran on the whole device).
  void set_partition_context(std::uint32_t context_id) noexcept { partition_context_.store(context_id); }

  // Builds the records as of now. `blocking=false` is the fatal-signal path:
  // nothing that could wait on another thread. exit_status -1 = unknown.
  store::RankRecords snapshot(bool complete, int exit_status, bool blocking) noexcept;

  // In a fork child: new pid, new start, nothing inherited; `keep_mpi_table`
  // is the forking thread's MPI table (it stays that thread's).
  void reset_after_fork(const MpiThreadTable* keep_mpi_table = nullptr) noexcept;

  // The MPI layer's measurement of its wrappers' path costs, run by a
  // blocking snapshot when MPI calls were booked (info.tracer_wrapper_s).
  void set_wrapper_cost_probe(WrapperCosts (*probe)()) noexcept { wrapper_cost_probe_.store(probe); }

  double start_time() const noexcept { return start_unix_; }

  // The MPI window (info.mpi_init_end / mpi_finalize_start): monotonic ns of
  // the return of MPI_Init(_thread) and the entry of MPI_Finalize.
  // Each also keeps the process's CPU time then (info.cpu_at_mpi_init_end /
  // cpu_at_mpi_finalize_start): the window's own CPU time, without MPI's
  // start-up and teardown.
  void mark_mpi_init_end(std::int64_t mono_ns) noexcept {
    mpi_init_end_ns_.store(mono_ns);
    cpu_at_init_end_us_.store(process_cpu_us());
  }
  void mark_mpi_finalize_start(std::int64_t mono_ns) noexcept {
    mpi_finalize_start_ns_.store(mono_ns);
    cpu_at_finalize_start_us_.store(process_cpu_us());
  }
  // The sampler was started for this process: snapshots stop it and add the
  // sampling row and the symbolised call paths.
  void set_sampling(bool on) noexcept { sampling_ = on; }
  // OpenBLAS's/MKL's run-time choice, observed at start-up (observe_blas):
  // the final snapshot adds the rest (dispatch_probe.hpp).
  void set_early_dispatch(std::vector<store::DispatchRow> rows) noexcept { early_dispatch_ = std::move(rows); }

 private:
  std::vector<store::DispatchRow> early_dispatch_;
  void log_counter_state() noexcept;
  void add_samples(store::RankRecords& rec, NameTable& names, bool blocking) noexcept;
  void add_own_cost(store::RankRecords& rec, bool blocking, std::int64_t snapshot_start_ns) noexcept;
  std::atomic<WrapperCosts (*)()> wrapper_cost_probe_{nullptr};
  bool sampling_ = false;
  TracerConfig config_;
  std::unique_ptr<CounterProvider> provider_;
  std::string counters_why_;
  bool counters_available_ = false;
  RegionRecorder regions_;
  MpiStats mpi_;
  std::atomic<std::int64_t> rank_{0};
  std::atomic<std::int64_t> errors_{0};
  std::atomic<std::int64_t> dropped_{0};
  std::atomic<bool> gpu_available_{false};
  std::atomic<std::uint32_t> partition_context_{0};
  double start_unix_ = 0;
  std::int64_t start_mono_ns_ = 0;
  std::atomic<std::int64_t> mpi_init_end_ns_{-1};  // -1: not reached
  std::atomic<std::int64_t> mpi_finalize_start_ns_{-1};
  std::atomic<std::int64_t> cpu_at_init_end_us_{-1};  // getrusage user + system, microseconds; -1: not reached
  std::atomic<std::int64_t> cpu_at_finalize_start_us_{-1};
  static std::int64_t process_cpu_us() noexcept;  // -1 when getrusage fails
  mutable std::mutex mutex_;  // guards log_, kernels_, memcpy_, ranges_, gpu_status_*
  std::vector<std::string> log_;
  std::vector<GpuKernel> kernels_;
  std::vector<store::MemcpyRow> memcpy_;
  std::vector<MetricRange> ranges_;
  GpuStatus gpu_status_ = GpuStatus::None;  // guarded by mutex_
  std::string gpu_status_detail_;
};

// Seconds since the Unix epoch / a monotonic clock in ns.
double unix_now() noexcept;
std::int64_t monotonic_ns() noexcept;

}  // namespace rtrace::tracer
