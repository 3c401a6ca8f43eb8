#include "rank_state.hpp"

#include "dispatch_probe.hpp"
#include "exit_watchdog.hpp"
#include "pmu_counts.hpp"
#include "sampler.hpp"
#include "symbolize.hpp"

#include <dlfcn.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <new>

namespace rtrace::tracer {

double unix_now() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::int64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace {
constexpr std::size_t kMaxLogLines = 1000;

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warning";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "info";
}

// OpenMP threads of the app, if it uses OpenMP (looked up, never linked).
std::int32_t omp_threads() noexcept {
  using Fn = int (*)();
  if (auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"))) return fn();
  return -1;
}
}  // namespace

RankState::RankState(TracerConfig config, std::unique_ptr<CounterProvider> counters)
    : config_(std::move(config)),
      provider_(std::move(counters)),
      counters_why_("no counter source"),
      counters_available_(provider_ && ::rtrace::tracer::counters_available(*provider_, &counters_why_)),
      regions_(counters_available_ ? provider_.get() : nullptr) {
  rank_.store(config_.rank);
  start_unix_ = unix_now();
  start_mono_ns_ = monotonic_ns();
  if (!config_.mode_warning.empty()) log(LogLevel::Warn, config_.mode_warning);
  if (!config_.sample_warning.empty()) log(LogLevel::Warn, config_.sample_warning);
  if (!config_.collective_warning.empty()) log(LogLevel::Warn, config_.collective_warning);
  if (!config_.counts_warning.empty()) log(LogLevel::Warn, config_.counts_warning);
  if (!config_.provenance_warning.empty()) log(LogLevel::Warn, config_.provenance_warning);
  if (!config_.exit_timeout_warning.empty()) log(LogLevel::Warn, config_.exit_timeout_warning);
  log_counter_state();
}

void RankState::log_counter_state() noexcept {
  // Not an error: most VMs have no PMU. The line is kept in the rank's log.
  if (counters_available_) log(LogLevel::Info, std::string("counters available: ") + provider_->name());
  else log(LogLevel::Info, "counters unavailable: " + counters_why_);
}

void RankState::log(LogLevel level, const std::string& text) noexcept {
  try {
    if (level == LogLevel::Error) errors_.fetch_add(1);
    std::string line = std::string(level_name(level)) + ": " + text;
    if (level <= config_.log_level)
      std::fprintf(stderr, "rtrace tracer[rank %lld pid %d]: %s\n", static_cast<long long>(rank_.load()),
                   static_cast<int>(getpid()), line.c_str());
    if (level == LogLevel::Debug) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (log_.size() < kMaxLogLines) log_.push_back(std::move(line));
    else if (log_.size() == kMaxLogLines) log_.push_back("warning: log truncated");
  } catch (...) {
  }
}

void RankState::add_kernels(std::vector<GpuKernel> kernels) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& k : kernels) kernels_.push_back(std::move(k));
  } catch (...) {
    errors_.fetch_add(1);
  }
}

void RankState::add_memcpy(std::vector<store::MemcpyRow> rows) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    memcpy_.insert(memcpy_.end(), rows.begin(), rows.end());
  } catch (...) {
    errors_.fetch_add(1);
  }
}

void RankState::add_metric_ranges(std::vector<MetricRange> ranges) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& r : ranges) ranges_.push_back(std::move(r));
  } catch (...) {
    errors_.fetch_add(1);
  }
}

const char* to_string(GpuStatus s) noexcept {
  switch (s) {
    case GpuStatus::None: return "";
    case GpuStatus::Traced: return "traced";
    case GpuStatus::Metrics: return "metrics";
    case GpuStatus::MetricsRefused: return "metrics-refused";
    case GpuStatus::MetricsFailed: return "metrics-failed";
    case GpuStatus::MetricsDenied: return "metrics-denied";
    case GpuStatus::TraceFailed: return "trace-failed";
    case GpuStatus::NoCupti: return "no-cupti";
  }
  return "";
}

void RankState::set_gpu_status(GpuStatus status, const std::string& detail) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int>(status) <= static_cast<int>(gpu_status_) && gpu_status_ != GpuStatus::None) return;
    gpu_status_ = status;
    gpu_status_detail_ = detail;
  } catch (...) {
    errors_.fetch_add(1);
  }
}

GpuStatus RankState::gpu_status() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return gpu_status_;
}

store::RankRecords RankState::snapshot(bool complete, int exit_status, bool blocking) noexcept {
  store::RankRecords rec;
  const std::int64_t snapshot_start_ns = monotonic_ns();
  try {
    NameTable names;
    auto regions = regions_.collect(names, blocking);
    rec.regions = std::move(regions.rows);
    rec.mpi = mpi_.rows(names);

    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    bool have_lock = blocking ? (lock.lock(), true) : lock.try_lock();
    if (have_lock) {
      // Kernels in launch order (correlation id), numbered per name: the key
      // that joins a trace-mode run with a metrics-mode run (docs/tracer.md).
      std::vector<const GpuKernel*> order;
      for (const auto& k : kernels_) order.push_back(&k);
      std::stable_sort(order.begin(), order.end(), [](const GpuKernel* a, const GpuKernel* b) {
        return a->row.correlation_id < b->row.correlation_id;
      });
      // Profiled ranges go to launches by context, order and kernel name.
      RangeJoin join;
      if (!ranges_.empty()) {
        std::vector<LaunchKey> keys;
        keys.reserve(order.size());
        for (const GpuKernel* k : order) keys.push_back(LaunchKey{k->raw_name(), k->name(), k->context_id, k->from_graph});
        join = join_ranges(keys, ranges_);
      }
      std::map<std::string, std::int64_t> per_name;
      for (std::size_t i = 0; i < order.size(); ++i) {
        if (order[i]->incomplete) {
          ++per_name[order[i]->name()];
          continue;
        }
        store::KernelRow row = order[i]->row;
        if (!ranges_.empty() && join.range_of_launch[i] >= 0) {
          const store::KernelRow& m = ranges_[static_cast<std::size_t>(join.range_of_launch[i])].metrics;
          row.has_metrics = 1;
          row.metric_duration_ns = m.metric_duration_ns;
          row.sm_clock_hz = m.sm_clock_hz;
          row.flops_fp64 = m.flops_fp64;
          row.flops_fp32 = m.flops_fp32;
          row.flops_fp16 = m.flops_fp16;
          row.tensor_ops = m.tensor_ops;
          row.tensor_ops_fp16 = m.tensor_ops_fp16;
          row.tensor_ops_bf16 = m.tensor_ops_bf16;
          row.tensor_ops_tf32 = m.tensor_ops_tf32;
          row.tensor_ops_fp64 = m.tensor_ops_fp64;
          row.tensor_ops_fp8 = m.tensor_ops_fp8;
          row.bytes_l1 = m.bytes_l1;
          row.bytes_l2 = m.bytes_l2;
          row.bytes_dram_read = m.bytes_dram_read;
          row.bytes_dram_write = m.bytes_dram_write;
          row.warp_instructions = m.warp_instructions;
          row.thread_instructions = m.thread_instructions;
          row.global_ld_instructions = m.global_ld_instructions;
          row.global_st_instructions = m.global_st_instructions;
          row.shared_ld_instructions = m.shared_ld_instructions;
          row.shared_st_instructions = m.shared_st_instructions;
          row.global_transactions = m.global_transactions;
          row.shared_transactions = m.shared_transactions;
          const std::uint32_t partition = partition_context_.load();
          const bool outside = config_.green_ctx_sms > 0 && (partition == 0 || order[i]->context_id != partition);
          store::set_str(row.metrics_provenance, outside ? store::kMetricsOutsidePartition : config_.metrics_provenance.c_str());
        }
        row.name_id = names.id(order[i]->name());
        row.launch_index = per_name[order[i]->name()]++;
        rec.kernels.push_back(row);
      }
      if (!ranges_.empty()) {
        const std::int64_t unmatched = join.launches_without_range + join.launches_after_last_range;
        rec.info.metrics_unmatched_launches = unmatched;
        rec.info.metrics_unmatched_ranges = join.ranges_without_launch;
        if (join.launches_without_range > 0)
          log_.push_back("warning: metrics: " + std::to_string(join.launches_without_range) +
                         " kernel launch(es) had no profiled range of their kernel before the next matching range (" +
                         std::to_string(join.graph_launches_without_range) +
                         " of them CUDA graph nodes): no metrics for them, none shifted onto other kernels");
        if (join.launches_after_last_range > 0)
          log_.push_back("warning: metrics: " + std::to_string(join.launches_after_last_range) +
                         " kernel launch(es) after their context's last profiled range: no metrics for them");
        if (join.ranges_without_launch > 0) {
          log_.push_back("warning: metrics: " + std::to_string(join.ranges_without_launch) +
                         " profiled range(s) matched no traced launch of their kernel name in their context: dropped");
          for (const auto& e : join.examples) log_.push_back("warning: metrics: " + e);
        }
      }
      rec.memcpy = memcpy_;
      rec.log = log_;
      store::set_str(rec.info.gpu_status, to_string(gpu_status_));
      store::set_str(rec.info.gpu_status_detail, gpu_status_detail_);
      // Not held through the symbolisation below: the exit watchdog's own
      // snapshot needs the log if that step never ends.
      lock.unlock();
    } else {
      rec.log.push_back("warning: GPU records and log busy at a fatal signal: not recorded");
    }
    for (auto& w : regions.warnings) rec.log.push_back("warning: " + w);
    add_samples(rec, names, blocking);  // after rec.log is filled: it appends its own lines
    // What the libraries chose at run time (the counting pass steers its run
    // to it); not at a fatal signal, where calling into them is not safe.
    if (blocking) rec.dispatch = observe_dispatch(early_dispatch_);
    pmu::fill(rec, blocking);           // RTRACE_COUNTS=pmu|auto: counts_info and the counts rows
    add_own_cost(rec, blocking, snapshot_start_ns);

    store::RankInfoRow& info = rec.info;
    info.rank = rank_.load();
    info.pid = getpid();
    store::set_str(info.host, store::hostname());
    store::set_str(info.tracer_mode, to_string(config_.mode));
    info.start_time = start_unix_;
    info.wall_s = static_cast<double>(monotonic_ns() - start_mono_ns_) * 1e-9;
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
      info.user_s = static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) * 1e-6;
      info.system_s = static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) * 1e-6;
      info.max_rss_kib = ru.ru_maxrss;  // Linux reports KiB
      info.voluntary_ctxsw = ru.ru_nvcsw;
      info.involuntary_ctxsw = ru.ru_nivcsw;
    } else {
      info.user_s = info.system_s = store::kUnavailable;
      info.max_rss_kib = info.voluntary_ctxsw = info.involuntary_ctxsw = -1;
    }
    info.exit_status = exit_status;
    info.complete = complete ? 1 : 0;
    info.tracer_errors = errors_.load() + regions.errors;
    info.dropped_records = dropped_.load();
    info.counters_available = counters_available_ ? 1 : 0;
    info.gpu_available = gpu_available_.load() ? 1 : 0;
    info.omp_threads = omp_threads();
    const std::int64_t init_end = mpi_init_end_ns_.load(), fin_start = mpi_finalize_start_ns_.load();
    info.mpi_init_end = init_end < 0 ? store::kUnavailable : static_cast<double>(init_end - start_mono_ns_) * 1e-9;
    info.mpi_finalize_start =
        fin_start < 0 ? store::kUnavailable : static_cast<double>(fin_start - start_mono_ns_) * 1e-9;
    const std::int64_t cpu_init = cpu_at_init_end_us_.load(), cpu_fin = cpu_at_finalize_start_us_.load();
    info.cpu_at_mpi_init_end = init_end < 0 || cpu_init < 0 ? store::kUnavailable : static_cast<double>(cpu_init) * 1e-6;
    info.cpu_at_mpi_finalize_start =
        fin_start < 0 || cpu_fin < 0 ? store::kUnavailable : static_cast<double>(cpu_fin) * 1e-6;
    rec.names = names.take();
  } catch (const std::exception& e) {
    rec.info.tracer_errors += 1;
    rec.log.push_back(std::string("error: building the rank's records failed: ") + e.what());
  } catch (...) {
    rec.info.tracer_errors += 1;
  }
  return rec;
}

void RankState::add_samples(store::RankRecords& rec, NameTable& names, bool blocking) noexcept {
  if (!sampling_) return;
  try {
    Sampler::stop();  // every snapshot is a final one: the samples end here
    if (!blocking) {
      rec.sampling.push_back(Sampler::info());
      rec.log.push_back(
          "warning: sampled call stacks are not symbolised at a fatal signal or past the exit bound: callpaths left "
          "empty");
      return;
    }
    for (auto& n : Sampler::take_notes()) rec.log.push_back(n);
    const std::int64_t t0 = monotonic_ns();
    if (config_.test_exit_stall == "records") wait_to_be_ended();  // RTRACE_TEST_EXIT_STALL: a deadlock here
    Symbolizer sym;
    if (!sym.error().empty()) rec.log.push_back("warning: symbolisation: " + sym.error());
    auto threads = Sampler::collect();
    rec.sampling.push_back(Sampler::info());  // after the tables: its totals include every sample in them
    std::size_t stacks = 0;
    for (const auto& t : threads) stacks += t.stacks.size();
    rec.callpaths = build_call_paths(
        threads, [&](std::uintptr_t pc, bool ret) { return sym.frames(pc, ret); }, names);
    // Not through log(): its lines are in rec.log already.
    rec.log.push_back("info: " + std::to_string(stacks) + " distinct sampled stacks -> " +
                      std::to_string(rec.callpaths.size()) + " call-path nodes, symbolised in " +
                      std::to_string(static_cast<double>(monotonic_ns() - t0) * 1e-9) + " s; " +
                      std::to_string(rec.sampling.back().samples) + " samples took " +
                      std::to_string(Sampler::handler_seconds()) + " s in the signal handler");
  } catch (const std::exception& e) {
    errors_.fetch_add(1);
    rec.log.push_back(std::string("error: building the sampled call paths failed: ") + e.what());
  } catch (...) {
    errors_.fetch_add(1);
  }
}

void RankState::add_own_cost(store::RankRecords& rec, bool blocking, std::int64_t snapshot_start_ns) noexcept {
  store::RankInfoRow& info = rec.info;
  try {
    double outside_mpi = 0;
    bool outside_known = true;
    // The samples: the tracer's own code outside the MPI wrappers (whose own
    // work is measured below), and the share of the samples inside MPI (the
    // handler's time falls where it interrupts). System code counts for its
    // first caller that is not system code, as in the analysis.
    const double period = rec.sampling.empty() ? 0 : rec.sampling.front().period_s;
    if (sampling_ && period > 0) {
      const auto& rows = rec.callpaths;
      std::vector<char> under_mpi(rows.size(), 0);
      double own = 0, in_mpi = 0, all = 0;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::int64_t parent = rows[i].parent_id;
        const bool parent_ok = parent >= 0 && static_cast<std::size_t>(parent) < i;
        std::string cat = store::get_str(rows[i].category);
        under_mpi[i] = cat == "mpi" || (parent_ok && under_mpi[static_cast<std::size_t>(parent)]);
        if (rows[i].self_samples <= 0) continue;
        for (std::int64_t n = parent; cat == "system" && n >= 0 && static_cast<std::size_t>(n) < i;
             n = rows[static_cast<std::size_t>(n)].parent_id)
          cat = store::get_str(rows[static_cast<std::size_t>(n)].category);
        const auto w = static_cast<double>(rows[i].self_samples);
        all += w;
        if (under_mpi[i]) in_mpi += w;
        else if (cat == "rtrace") own += w;
      }
      const double handler = Sampler::handler_seconds();
      info.tracer_sampler_s = handler;
      if (blocking) {
        info.tracer_code_s = own * period;
        outside_mpi += info.tracer_code_s + handler * (all > 0 ? 1 - in_mpi / all : 1);
      } else {
        outside_known = false;  // no call paths at a fatal signal
      }
    } else {
      info.tracer_sampler_s = 0;  // not sampled: no handler ran (and tracer_code_s stays unknown)
    }
    auto* probe = wrapper_cost_probe_.load();
    if (!probe) {
      info.tracer_wrapper_s = 0;  // no MPI call was booked in a table
    } else if (blocking) {
      const WrapperCosts costs = probe();
      const MpiOwnCost own = mpi_.own_cost(costs);
      info.tracer_wrapper_s = own.total_s;
      outside_mpi += own.outside_mpi_s;
      char line[400];
      std::snprintf(line, sizeof line,
                    "info: MPI wrappers: %lld calls timed on their own, %lld only counted, %lld polling-run "
                    "intervals (%lld preempted, %lld held app work), %lld CPU-time reads; measured cost per "
                    "counted call %.1f ns, clock read %.1f ns, CPU-time read %.1f ns",
                    static_cast<long long>(own.timed_calls), static_cast<long long>(own.counted_calls),
                    static_cast<long long>(own.intervals), static_cast<long long>(own.preempted_intervals),
                    static_cast<long long>(own.work_intervals), static_cast<long long>(own.thread_reads),
                    costs.counted_ns, costs.clock_ns, costs.thread_read_ns);
      rec.log.push_back(line);
    } else {
      outside_known = false;
    }
    if (outside_known) info.tracer_outside_mpi_s = outside_mpi;
    info.tracer_exit_s = static_cast<double>(monotonic_ns() - snapshot_start_ns) * 1e-9;
    // Not through log(): rec.log holds its lines already.
    char line[320];
    std::snprintf(line, sizeof line,
                  "info: tracer's own work: MPI wrappers %.4f s, sampler handler %.4f s, tracer code %.4f s "
                  "(%.4f s of it outside MPI time), records at the end %.4f s",
                  info.tracer_wrapper_s, info.tracer_sampler_s, info.tracer_code_s, info.tracer_outside_mpi_s,
                  info.tracer_exit_s);
    rec.log.push_back(line);
  } catch (...) {
    errors_.fetch_add(1);
  }
}

std::int64_t RankState::process_cpu_us() noexcept {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  return (static_cast<std::int64_t>(ru.ru_utime.tv_sec) + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
         ru.ru_stime.tv_usec;
}

void RankState::reset_after_fork(const MpiThreadTable* keep_mpi_table) noexcept {
  new (&mutex_) std::mutex();  // may have been held by a thread that no longer exists
  regions_.reset_after_fork();
  pmu::after_fork();
  mpi_.reset(keep_mpi_table);
  errors_.store(0);
  dropped_.store(0);
  start_unix_ = unix_now();
  start_mono_ns_ = monotonic_ns();
  mpi_init_end_ns_.store(-1);  // the child's own clock starts now; it is no MPI rank of its own
  mpi_finalize_start_ns_.store(-1);
  cpu_at_init_end_us_.store(-1);
  cpu_at_finalize_start_us_.store(-1);
  try {
    log_.clear();
    kernels_.clear();
    memcpy_.clear();
    ranges_.clear();
    partition_context_.store(0);
    gpu_status_ = GpuStatus::None;
    gpu_status_detail_.clear();
    log_counter_state();
    log(LogLevel::Info, "forked child of pid " + std::to_string(getppid()));
  } catch (...) {
  }
}

}  // namespace rtrace::tracer
