#include "config.hpp"

#include "sampler.hpp"

#include <cerrno>
#include <cstdlib>

namespace rtrace::tracer {

LogLevel parse_log_level(const std::string& text) noexcept {
  if (text == "error") return LogLevel::Error;
  if (text == "info") return LogLevel::Info;
  if (text == "debug") return LogLevel::Debug;
  return LogLevel::Warn;
}

const char* to_string(TracerMode m) noexcept {
  switch (m) {
    case TracerMode::Cpu: return "cpu";
    case TracerMode::CudaTrace: return "cuda-trace";
    case TracerMode::CudaMetrics: return "cuda-metrics";
  }
  return "cpu";
}

namespace {
bool parse_rank(const char* text, std::int64_t* out) {
  if (!text || !*text) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}
}  // namespace

std::int64_t detect_rank(const GetEnv& env, std::string* source) {
  static const char* const kVars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (const char* var : kVars) {
    std::int64_t r = 0;
    if (parse_rank(env(var), &r)) {
      if (source) *source = var;
      return r;
    }
  }
  if (source) *source = "default";
  return 0;
}

bool is_launcher_process(const std::string& name) noexcept {
  static const char* const kLaunchers[] = {"mpirun",  "mpiexec", "orterun",    "orted",         "prted",
                                           "prterun", "srun",    "slurmstepd", "hydra_pmi_proxy",
                                           "mpiexec.hydra", "prte"};
  for (const char* l : kLaunchers)
    if (name == l) return true;
  return false;
}

TracerConfig read_config(const GetEnv& env, const std::string& process_name, const std::string& exe_name) {
  TracerConfig c;
  const char* dir = env("RTRACE_TRACE_DIR");
  if (!dir || !*dir) {
    c.inactive_reason = "RTRACE_TRACE_DIR is not set";
    return c;
  }
  if (is_launcher_process(process_name) || is_launcher_process(exe_name)) {
    c.inactive_reason = "launcher process " + (is_launcher_process(process_name) ? process_name : exe_name);
    return c;
  }
  c.active = true;
  c.trace_dir = dir;
  if (const char* m = env("RTRACE_TRACER_MODE"); m && *m) {
    std::string mode = m;
    c.mode_set = true;
    if (mode == "cpu") c.mode = TracerMode::Cpu;
    else if (mode == "cuda-trace") c.mode = TracerMode::CudaTrace;
    else if (mode == "cuda-metrics") c.mode = TracerMode::CudaMetrics;
    else c.mode_warning = "RTRACE_TRACER_MODE `" + mode + "` is not one of cpu, cuda-trace, cuda-metrics; using cpu";
  }
  c.rank = detect_rank(env, &c.rank_source);
  if (const char* l = env("RTRACE_LOG")) c.log_level = parse_log_level(l);
  if (const char* p = env("RTRACE_POINT_ID")) c.point_id = p;
  if (const char* v = env("RTRACE_TRACER_COLLECTIVE"); v && *v) {
    std::string how = v;
    if (how == "0") c.collective = false;
    else if (how == "gather") c.gather_to_root = true;
    else if (how == "1" || how == "parallel") c.gather_to_root = false;
    else c.collective_warning = "RTRACE_TRACER_COLLECTIVE `" + how + "` is not one of 1, parallel, gather, 0; using gather";
  }
  if (const char* v = env("RTRACE_METRICS_PROVENANCE"); v && *v) {
    const std::string p = v;
    if (p == "whole device" || p == "in-partition" || p == "replayed outside the partition") c.metrics_provenance = p;
    else
      c.provenance_warning = "RTRACE_METRICS_PROVENANCE `" + p +
                             "` is not one of `whole device`, `in-partition`, `replayed outside the partition`; "
                             "using `whole device`";
  }
  if (const char* v = env("RTRACE_GREEN_CTX_SMS"); v && *v) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end && *end == '\0' && n > 0 && n < 100000) c.green_ctx_sms = static_cast<int>(n);
  }
  c.sample_hz = c.mode == TracerMode::Cpu ? kDefaultSampleHz : 0;
  if (const char* counts = env("RTRACE_COUNTS"); counts && *counts) {
    const std::string m = counts;
    if (m == "pmu" || m == "auto" || m == "sim" || m == "none") c.counts_mode = m;
    else c.counts_warning = "RTRACE_COUNTS `" + m + "` is not one of pmu, auto, sim, none; not counting";
  }
  if (const char* hz = env("RTRACE_SAMPLE_HZ"); hz && *hz) {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(hz, &end);
    if (errno != 0 || *end != '\0' || !(v >= 0) || v > 10000)
      c.sample_warning = std::string("RTRACE_SAMPLE_HZ `") + hz + "` is not a rate in 0..10000 Hz; using " +
                         std::to_string(static_cast<int>(c.sample_hz)) + " Hz";
    else
      c.sample_hz = v;
  }
  if (const char* t = env("RTRACE_EXIT_TIMEOUT"); t && *t) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(t, &end);
    if (errno != 0 || *end != '\0' || !(v > 0) || v > 86400)
      c.exit_timeout_warning = std::string("RTRACE_EXIT_TIMEOUT `") + t + "` is not a time in (0, 86400] s; using " +
                               std::to_string(static_cast<int>(c.exit_timeout_s)) + " s";
    else
      c.exit_timeout_s = v;
  }
  if (const char* stall = env("RTRACE_TEST_EXIT_STALL")) c.test_exit_stall = stall;
  return c;
}

}  // namespace rtrace::tracer
