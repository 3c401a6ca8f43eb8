// Runs rtrace-smid-probe for a point. See smid_probe.hpp.
#include "rtrace/launcher/smid_probe.hpp"

#include "rtrace/launcher/process.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace rtrace::launcher {

std::string smid_probe_path(const LaunchSetup& s) {
  if (s.gpu.fake) return s.gpu.fake_probe;
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return (fs::path(std::string(buf, static_cast<std::size_t>(n))).parent_path() / "rtrace-smid-probe").string();
}

Environment probe_environment(const LaunchSetup& s, const PointCommand& cmd) {
  Environment env = cmd.env;
  for (const char* name : {"RTRACE_TRACE_DIR", "RTRACE_TRACER_MODE", "RTRACE_POINT_ID"}) env.unset(name);
  // The tracer's injection and preload are rtrace's, not the partition's: the
  // user's own values (from rtrace's environment) stay.
  for (const char* name : {"LD_PRELOAD", "CUDA_INJECTION64_PATH"}) {
    if (s.base.has(name)) env.set(name, s.base.get(name));
    else env.unset(name);
  }
  return env;
}

int parse_smid_probe_output(const std::string& out) {
  const auto at = out.find("sms_achieved=");
  if (at == std::string::npos) return -1;
  const char* p = out.c_str() + at + 13;
  char* end = nullptr;
  const long v = std::strtol(p, &end, 10);
  if (end == p || v < 0 || v > 1000000 || (*end != ' ' && *end != '\n' && *end != 0)) return -1;
  return static_cast<int>(v);
}

SmsMeasurement measure_point_sms(const LaunchSetup& s, const PointCommand& cmd, double timeout_s) {
  SmsMeasurement m;
  const std::string probe = smid_probe_path(s);
  if (probe.empty() || access(probe.c_str(), X_OK) != 0) {
    m.log = "info: sms_achieved unavailable: no rtrace-smid-probe at `" + probe +
            "` (rtrace built without CUDA); the grant is not a measurement";
    return m;
  }
  ProcessSpec spec;
  spec.path = probe;
  // One resident wave on the granted SMs (the probe's --sms): more blocks than
  // the grant holds at once would run in later waves, and MPS may schedule a
  // later wave on other SMs, so a multi-wave count could exceed the grant.
  spec.argv = {"rtrace-smid-probe", "--sms", std::to_string(cmd.partition.sms)};
  spec.env = probe_environment(s, cmd).to_envp();
  spec.timeout_s = timeout_s;
  spec.grace_s = 2;
  spec.tail_bytes = 4096;
  const ProcessResult r = run_process(spec);
  if (r.kind != ExitKind::Exited || r.exit_code != 0) {
    std::string why = r.kind == ExitKind::LaunchError ? r.launch_error
                      : r.kind == ExitKind::TimedOut  ? "timed out"
                      : r.kind == ExitKind::Exited    ? "exit " + std::to_string(r.exit_code)
                                                      : "ended by a signal";
    std::string tail = r.stderr_tail;
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    if (auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
    m.log = "warning: sms_achieved unavailable: rtrace-smid-probe failed (" + why + ")" + (tail.empty() ? "" : ": " + tail);
    return m;
  }
  m.sms = parse_smid_probe_output(r.stdout_tail);
  if (m.sms < 0) {
    m.log = "warning: sms_achieved unavailable: rtrace-smid-probe printed no sms_achieved=N";
    return m;
  }
  if (m.sms != cmd.partition.sms)
    m.log = "warning: the %smid probe saw " + std::to_string(m.sms) + " SMs under " + cmd.partition.sm_method +
            " (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + std::to_string(cmd.partition.sm_percentage) + "), " +
            std::to_string(cmd.partition.sms) + " granted";
  return m;
}

}  // namespace rtrace::launcher
