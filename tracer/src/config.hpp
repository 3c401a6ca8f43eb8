// What the tracer should do in this process, read from the environment the
// launcher sets (docs/architecture.md, "Launcher <-> tracer").
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace rtrace::tracer {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };
LogLevel parse_log_level(const std::string& text) noexcept;  // unknown -> Warn

enum class TracerMode { Cpu, CudaTrace, CudaMetrics };
const char* to_string(TracerMode m) noexcept;  // "cpu", "cuda-trace", "cuda-metrics"

using GetEnv = std::function<const char*(const char*)>;

// The rank of this process from the launcher's variables (first set wins):
// OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID; else 0.
// `source` receives the variable's name, or "default".
std::int64_t detect_rank(const GetEnv& env, std::string* source = nullptr);

// True for the process names of MPI/Slurm launchers and daemons, which load
// the preloaded library too but must stay untouched.
bool is_launcher_process(const std::string& process_name) noexcept;

struct TracerConfig {
  bool active = false;
  std::string inactive_reason;   // why not active (for debug logging)
  std::string trace_dir;
  TracerMode mode = TracerMode::Cpu;
  bool mode_set = false;          // RTRACE_TRACER_MODE was given (CUDA injection defaults to cuda-trace)
  std::string mode_warning;      // set when RTRACE_TRACER_MODE was not understood
  std::int64_t rank = 0;
  std::string rank_source;
  LogLevel log_level = LogLevel::Warn;
  std::string point_id;
  // RTRACE_TRACER_COLLECTIVE=0: MPI ranks write their own files instead of
  // ranks.h5 (for MPI-IO trouble, and for bench/tracer_write.sh).
  bool collective = true;
  // RTRACE_TRACER_COLLECTIVE=gather: ranks.h5 is still one file, but the
  // records are gathered over MPI and rank 0 writes it serially (no MPI-IO).
  // Default: gather to rank 0 + one serial write. Measured 58x faster than the
  // parallel-HDF5 path at 64 oversubscribed ranks (bench/tracer_write.sh);
  // RTRACE_TRACER_COLLECTIVE=1 selects parallel HDF5 (MPI-IO).
  bool gather_to_root = true;
  // RTRACE_SAMPLE_HZ: call-stack samples per second of each thread's CPU
  // time; 0 = off. Unset: kDefaultSampleHz in cpu mode, off in CUDA modes.
  double sample_hz = 0;
  std::string sample_warning;    // set when RTRACE_SAMPLE_HZ was not understood
  std::string collective_warning;  // set when RTRACE_TRACER_COLLECTIVE was not understood
  // RTRACE_COUNTS (`rtrace run --counts`): "pmu" and "auto" make the tracer
  // count FLOPs and bytes with the PMU (pmu_counts.hpp); "sim" and "none"
  // leave counting to the counting pass or to nobody.
  std::string counts_mode = "none";
  std::string counts_warning;    // set when RTRACE_COUNTS was not understood
  // RTRACE_METRICS_PROVENANCE: how the launcher ran this metrics run, stamped
  // on every kernel row with metrics ("in-partition", "replayed outside the
  // partition"); unset: "whole device" (no SM partition).
  std::string metrics_provenance = "whole device";
  std::string provenance_warning;  // set when RTRACE_METRICS_PROVENANCE was not understood
  // RTRACE_GREEN_CTX_SMS: run the app's CUDA work in a green context of that
  // many SMs (cupti_green.cpp); 0: no.
  int green_ctx_sms = 0;
  // RTRACE_EXIT_TIMEOUT: the most seconds the exit path (GPU flush, records,
  // symbolisation, the write) may take before a watchdog writes what it has
  // and ends the process with the app's own status (exit_watchdog.hpp).
  double exit_timeout_s = 60;
  std::string exit_timeout_warning;  // set when RTRACE_EXIT_TIMEOUT was not understood
  // RTRACE_TEST_EXIT_STALL (tests only): the exit step ("gpu", "records",
  // "write") that blocks forever, as a deadlock there would.
  std::string test_exit_stall;
};

// `process_names` are the names this process goes by (argv[0] basename,
// /proc/self/exe basename); any launcher name among them makes it inert.
TracerConfig read_config(const GetEnv& env, const std::string& process_name, const std::string& exe_name);

}  // namespace rtrace::tracer
