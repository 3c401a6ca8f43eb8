#include "rtrace/counts/calibration.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace fs = std::filesystem;

namespace rtrace::counts {

namespace {

const std::map<std::string, std::string> kKernelWords = {
    {"int", "integer"}, {"stream", "streaming"}, {"fp", "cache-resident FP"}, {"vec", "vectorised FMA"}};

std::vector<double> values(const Calibration& c) {
  std::vector<double> v;
  for (const auto& [k, s] : c.slowdown) v.push_back(s);
  std::sort(v.begin(), v.end());
  return v;
}

// Runs argv (no shell) with stdout to a file; its lines "NAME SECONDS".
std::map<std::string, double> run_kernels(const std::vector<std::string>& argv, const std::vector<std::string>& env_add,
                                          const std::string& out_file, std::string& error) {
  std::map<std::string, double> out;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.push_back(*e);
  env.insert(env.end(), env_add.begin(), env_add.end());
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    error = "cannot start `" + argv[0] + "`: " + std::strerror(rc);
    return out;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = "`" + fs::path(argv[0]).filename().string() + "` failed";
    return out;
  }
  std::ifstream in(out_file);
  std::string name;
  double s = 0;
  while (in >> name >> s)
    if (s > 0) out[name] = s;
  if (out.empty()) error = "the calibration kernels printed no times";
  return out;
}

std::string duration_text(double s) {
  char buf[48];
  if (s < 10) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 90) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 5400) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

}  // namespace

double Calibration::typical() const {
  const auto v = values(*this);
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : std::sqrt(v[n / 2 - 1] * v[n / 2]);
}
double Calibration::low() const { return values(*this).empty() ? 0 : values(*this).front(); }
double Calibration::high() const { return values(*this).empty() ? 0 : values(*this).back(); }

std::string Calibration::summary() const {
  std::string out;
  for (const char* k : {"int", "stream", "fp", "vec"}) {
    auto it = slowdown.find(k);
    if (it == slowdown.end()) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %.0fx", kKernelWords.at(k).c_str(), it->second);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

Calibration calibrate(const ToolPaths& tool, const std::vector<std::string>& tool_options, const std::string& scratch_dir) {
  Calibration c;
  const std::string program = tool.lib_dir + "/rtrace-count-calibrate";
  if (access(program.c_str(), X_OK) != 0) {
    c.error = "no calibration program (" + program + ")";
    return c;
  }
  std::error_code ec;
  const fs::path dir = fs::path(scratch_dir) / ("calibration-" + std::to_string(getpid()));
  fs::create_directories(dir / "raw", ec);
  if (ec) {
    c.error = "cannot create " + dir.string() + ": " + ec.message();
    return c;
  }
  const std::string out_file = (dir / "times.txt").string();
  // Natively: the best of three (the least disturbed).
  std::map<std::string, double> native;
  for (int rep = 0; rep < 3 && c.error.empty(); ++rep)
    for (const auto& [k, s] : run_kernels({program}, {}, out_file, c.error))
      native[k] = native.count(k) ? std::min(native[k], s) : s;
  std::map<std::string, double> counted;
  if (c.error.empty()) {
    std::vector<std::string> argv = {tool.valgrind, "--tool=rtrace-count", "-q", "--vgdb=no",
                                     "--out-dir=" + (dir / "raw").string()};
    argv.insert(argv.end(), tool_options.begin(), tool_options.end());
    argv.push_back(program);
    const auto start = std::chrono::steady_clock::now();
    counted = run_kernels(argv, {"VALGRIND_LIB=" + tool.lib_dir}, out_file, c.error);
    double kernels = 0;
    for (const auto& [k, s] : counted) kernels += s;
    c.startup_s = std::max(0.0, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - kernels);
  }
  for (const auto& [k, s] : counted)
    if (native.count(k) && native[k] > 0) c.slowdown[k] = s / native[k];
  if (c.error.empty() && c.slowdown.empty()) c.error = "the calibration kernels gave no times";
  fs::remove_all(dir, ec);
  return c;
}

Calibration read_calibration(const std::string& path) {
  Calibration c;
  std::ifstream in(path);
  if (!in) {
    c.error = "no calibration file";
    return c;
  }
  std::string name;
  double s = 0;
  while (in >> name >> s) {
    if (s > 0 && kKernelWords.count(name)) c.slowdown[name] = s;
    if (s >= 0 && name == "startup_s") c.startup_s = s;
  }
  if (c.slowdown.empty()) c.error = "an empty calibration file";
  return c;
}

void write_calibration(const std::string& path, const Calibration& c) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    for (const auto& [k, s] : c.slowdown) out << k << " " << s << "\n";
    out << "startup_s " << c.startup_s << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

CostPrediction predict_cost(const Calibration& c, double timed_wall_s, double timed_cpu_s, int ranks, int ranks_per_node,
                            int cores, double app_slowdown) {
  CostPrediction p;
  if ((!c.ok() && !(app_slowdown > 0)) || !(timed_wall_s > 0)) return p;
  // Each process's CPU seconds (its threads run one at a time under the
  // tool), the processes of a node sharing its cores.
  const int r = std::max(ranks, 1);
  // A process's threads run one at a time: its CPU seconds. Wall seconds it
  // spent off a CPU (a loaded machine, waiting) are taken to stretch alike
  // (rusage cannot tell a busy machine from a sleeping app).
  const double per_process = std::max(timed_cpu_s > 0 ? timed_cpu_s / r : 0.0, timed_wall_s);
  const double crowding = cores > 0 && ranks_per_node > cores ? static_cast<double>(ranks_per_node) / cores : 1.0;
  auto at = [&](double slowdown) { return c.startup_s + slowdown * per_process * crowding; };
  p.per_process_s = per_process * crowding;
  if (app_slowdown > 0) {
    // The app's own cost, measured on another configuration of this sweep.
    p.seconds = at(app_slowdown);
    p.factor = p.seconds / timed_wall_s;
    char line[256];
    std::snprintf(line, sizeof line,
                  "counting pass: expected about %.0fx the timed run's %.1f s = %s (this app's own cost: %.0fx per "
                  "process-second on the sweep's previous counting run)",
                  p.factor, timed_wall_s, duration_text(p.seconds).c_str(), app_slowdown);
    p.line = line;
    return p;
  }
  p.seconds = at(c.typical());
  p.factor = p.seconds / timed_wall_s;
  char head[160];
  std::snprintf(head, sizeof head, "counting pass: expected about %.0fx the timed run's %.1f s = %s (%s-%s", p.factor,
                timed_wall_s, duration_text(p.seconds).c_str(), duration_text(at(c.low())).c_str(),
                duration_text(at(c.high())).c_str());
  p.line = std::string(head) + "; calibrated just now: reference kernels ran " + c.summary() +
           " slower under the tool, in CPU time; the app's own mix decides where in that range it falls" +
           (timed_cpu_s > 0 ? std::string(", and its threads run one at a time") : std::string()) + ")";
  return p;
}

}  // namespace rtrace::counts
