#include "rtrace/launcher/node_check.hpp"

#include "rtrace/launcher/hostlist.hpp"
#include "rtrace/launcher/process.hpp"

namespace rtrace::launcher {

namespace {

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

ProcessResult probe(const std::string& srun_path, const Environment& env, const std::vector<std::string>& hosts,
                    double timeout_s) {
  const std::string n = std::to_string(hosts.size());
  ProcessSpec spec;
  spec.path = srun_path;
  spec.argv = {"srun", "-N", n, "-n", n, "--ntasks-per-node=1", "-w", join_hosts(hosts, hosts.size()),
               "--overlap", "--kill-on-bad-exit=1", "--quiet", "true"};
  Environment probe_env = env;
  probe_env.unset("LD_PRELOAD");
  spec.env = probe_env.to_envp();
  spec.timeout_s = timeout_s;
  spec.grace_s = 2;
  spec.tail_bytes = 4096;
  return run_process(spec);
}

bool ok(const ProcessResult& r) { return r.kind == ExitKind::Exited && r.exit_code == 0; }

std::string why(const ProcessResult& r, double timeout_s) {
  if (r.kind == ExitKind::TimedOut) return "no answer within " + std::to_string(static_cast<int>(timeout_s)) + " s";
  if (r.kind == ExitKind::LaunchError) return r.launch_error;
  std::string line = last_line(r.stderr_tail);
  if (line.empty()) line = r.kind == ExitKind::Exited ? "exit " + std::to_string(r.exit_code) : "signal " + std::to_string(r.signal);
  return line;
}

}  // namespace

NodeCheck check_nodes(const std::string& srun_path, const Environment& env, const std::vector<std::string>& hosts,
                      double timeout_s) {
  NodeCheck out;
  if (hosts.empty() || srun_path.empty()) return out;
  const ProcessResult all = probe(srun_path, env, hosts, timeout_s);
  if (ok(all)) {
    out.log.push_back("info: all " + std::to_string(hosts.size()) + " nodes of the point answered afterwards (" +
                      join_hosts(hosts, hosts.size()) + "): the failure is the app's, not a node's");
    return out;
  }
  if (all.kind == ExitKind::Interrupted) return out;
  for (const auto& host : hosts) {
    const ProcessResult one = probe(srun_path, env, {host}, timeout_s);
    if (one.kind == ExitKind::Interrupted) return out;
    if (ok(one)) continue;
    out.failed.push_back(host);
    out.log.push_back("error: node " + host + " failed during the point: it cannot run a step afterwards (" +
                      why(one, timeout_s) + "); it is not used for the rest of the sweep");
  }
  if (out.failed.empty())
    out.log.push_back("info: every node of the point answered alone (" + join_hosts(hosts, hosts.size()) +
                      ") though not together: " + why(all, timeout_s));
  return out;
}

}  // namespace rtrace::launcher
