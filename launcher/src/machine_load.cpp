// The machine's load during a point, from outside the app. See machine_load.hpp.
#include "rtrace/launcher/machine_load.hpp"

#include <sys/resource.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace rtrace::launcher {
namespace {

std::string read_small_file(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double self_cpu_s() {
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The CPUs this process may run on (the app inherits them): /proc/stat is read
// for those only, so a run pinned to some cores is judged on its cores.
std::set<int> allowed_cpus() {
  std::set<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.insert(i);
  return out;
}

double ticks_per_second() {
  const long t = sysconf(_SC_CLK_TCK);
  return t > 0 ? static_cast<double>(t) : 100.0;
}

}  // namespace

std::optional<CpuTimes> parse_proc_stat(const std::string& text, double ticks_per_s, const std::set<int>* allowed) {
  if (!(ticks_per_s > 0)) return std::nullopt;
  std::istringstream in(text);
  std::string line;
  std::optional<CpuTimes> total;  // the aggregate "cpu" line
  CpuTimes mine;                  // the allowed "cpuN" lines
  int cpus = 0;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice
  auto fields = [&](const std::string& rest) -> std::optional<CpuTimes> {
    std::istringstream f(rest);
    double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int n = 0;
    while (n < 8 && f >> v[n]) ++n;
    if (n < 4) return std::nullopt;  // user nice system idle at least (every Linux since 2.6)
    CpuTimes c;
    c.busy_s = (v[0] + v[1] + v[2] + v[5] + v[6]) / ticks_per_s;
    c.idle_s = (v[3] + v[4]) / ticks_per_s;
    c.steal_s = v[7] / ticks_per_s;
    return c;
  };
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4) continue;
    if (line[3] == ' ') {
      total = fields(line.substr(3));
      if (!total) return std::nullopt;
      continue;
    }
    if (line[3] < '0' || line[3] > '9') continue;
    char* end = nullptr;
    const long id = std::strtol(line.c_str() + 3, &end, 10);
    if (allowed && !allowed->count(static_cast<int>(id))) continue;
    const auto c = fields(end);
    if (!c) return std::nullopt;
    mine.busy_s += c->busy_s;
    mine.idle_s += c->idle_s;
    mine.steal_s += c->steal_s;
    ++cpus;
  }
  if (cpus <= 0) return std::nullopt;
  CpuTimes out = allowed ? mine : (total ? *total : mine);
  out.cpus = cpus;
  return out;
}

double parse_load_average(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  return end != begin && std::isfinite(v) && v >= 0 ? v : std::numeric_limits<double>::quiet_NaN();
}

void MachineLoadProbe::start() {
  load_start_ = parse_load_average(read_small_file("/proc/loadavg"));
  self_cpu_start_ = self_cpu_s();
  mono_start_ = mono_s();
  cpus_ = allowed_cpus();
  start_ = parse_proc_stat(read_small_file("/proc/stat"), ticks_per_second(), cpus_.empty() ? nullptr : &cpus_);
}

MachineLoad MachineLoadProbe::finish(double tree_cpu_s) const {
  MachineLoad m;
  const auto end = parse_proc_stat(read_small_file("/proc/stat"), ticks_per_second(), cpus_.empty() ? nullptr : &cpus_);
  m.interval_s = mono_s() - mono_start_;
  m.load_avg_start = load_start_;
  m.load_avg_end = parse_load_average(read_small_file("/proc/loadavg"));
  if (!start_ || !end) {
    m.note = "/proc/stat unreadable";
    return m;
  }
  if (end->cpus != start_->cpus) {
    m.note = "CPUs went on- or offline during the point";
    return m;
  }
  m.start = *start_;
  m.end = *end;
  // rtrace's own CPU time (the launcher's wait loop) is not another process's.
  m.tree_cpu_s = tree_cpu_s + std::max(0.0, self_cpu_s() - self_cpu_start_);
  m.measured = true;
  return m;
}

store::MachineLoadRow machine_load_row(const MachineLoad& m) {
  store::MachineLoadRow r{};
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  r.interval_s = m.interval_s > 0 ? m.interval_s : nan;
  r.load_avg_start = m.load_avg_start;
  r.load_avg_end = m.load_avg_end;
  if (!m.measured) {
    store::set_str(r.status, "unavailable");
    store::set_text(r.note, m.note.empty() ? "not measured" : m.note);
    r.cpus = -1;
    r.busy_cpu_s = r.tree_cpu_s = r.other_cpu_s = r.steal_s = r.idle_s = nan;
    return r;
  }
  store::set_str(r.source, "proc-stat");
  store::set_str(r.status, "ok");
  store::set_str(r.note, "the CPUs rtrace and the app could run on, on the launcher's node; /proc/stat counts whole clock ticks");
  r.cpus = m.end.cpus;
  r.busy_cpu_s = std::max(0.0, m.end.busy_s - m.start.busy_s);
  r.idle_s = std::max(0.0, m.end.idle_s - m.start.idle_s);
  r.steal_s = std::max(0.0, m.end.steal_s - m.start.steal_s);
  r.tree_cpu_s = m.tree_cpu_s;
  r.other_cpu_s = std::max(0.0, r.busy_cpu_s - r.tree_cpu_s);
  return r;
}

}  // namespace rtrace::launcher
