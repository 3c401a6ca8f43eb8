#include "rtrace/counts/counting_run.hpp"

#include "symbolize.hpp"  // tracer/src: names match the sampled call paths

#include "rtrace/store/file.hpp"
#include "rtrace/store/run_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <memory>

namespace fs = std::filesystem;

namespace rtrace::counts {

namespace {

std::string search_path(const std::string& name, const std::string& path_env) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  std::size_t start = 0;
  for (;;) {
    const auto colon = path_env.find(':', start);
    std::string dir = path_env.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) return "";
    start = colon + 1;
  }
}

std::string self_dir() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// SIGINT/SIGTERM while the command runs: passed on to its process group.
volatile sig_atomic_t g_child_group = 0;
volatile sig_atomic_t g_interrupted = 0;
void forward_signal(int sig) {
  g_interrupted = sig;
  if (g_child_group > 0) kill(-g_child_group, sig);
}

std::string format_seconds(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", static_cast<long>(s) / 60, static_cast<long>(s) % 60);
  return buf;
}

}  // namespace

ToolPaths find_tool(const std::string& path_env) {
  ToolPaths t;
  const char* vg = std::getenv("RTRACE_VALGRIND");
  t.valgrind = search_path(vg && *vg ? vg : "valgrind", path_env);
  if (t.valgrind.empty())
    throw SetupError(std::string("`") + (vg && *vg ? vg : "valgrind") +
                     "` not found: the counting pass runs the app under Valgrind (Debian package valgrind)");
  t.env = access("/usr/bin/env", X_OK) == 0 ? "/usr/bin/env" : search_path("env", path_env);
  if (t.env.empty()) throw SetupError("`env` not found (it sets VALGRIND_LIB for the counted processes)");
  std::vector<std::string> candidates;
  if (const char* lib = std::getenv("RTRACE_VALGRIND_LIB"); lib && *lib) {
    candidates.push_back(lib);
  } else {
    const std::string bin = self_dir();
    candidates.push_back(bin + "/../lib/rtrace-valgrind");
#ifdef RTRACE_COUNTS_INSTALL_LIBDIR
    candidates.push_back(bin + "/../" RTRACE_COUNTS_INSTALL_LIBDIR "/rtrace-valgrind");
#endif
  }
  for (const auto& dir : candidates) {
    if (access((dir + "/rtrace-count-amd64-linux").c_str(), X_OK) == 0 &&
        access((dir + "/vgpreload_core-amd64-linux.so").c_str(), R_OK) == 0) {
      t.lib_dir = fs::path(dir).lexically_normal().string();
      return t;
    }
  }
  throw SetupError("the counting tool is not installed (no rtrace-count-amd64-linux with Valgrind's files in " +
                   candidates.front() +
                   "; rtrace builds it where Valgrind's tool headers exist, or set RTRACE_VALGRIND_LIB)");
}

std::vector<std::string> instrumented_command(const CountingSpec& spec, const ToolPaths& tool) {
  if (spec.app_index >= spec.command.size()) throw SetupError("--app-index is past the end of the command");
  std::vector<std::string> out(spec.command.begin(), spec.command.begin() + static_cast<std::ptrdiff_t>(spec.app_index));
  // Valgrind's own messages go to a file per process, not into the app's
  // stderr (rtrace counts reports what matters in one line).
  out.insert(out.end(), {tool.env, "VALGRIND_LIB=" + tool.lib_dir});
  out.insert(out.end(), spec.app_env.begin(), spec.app_env.end());
  // A rank started without mpirun (a singleton, as `rtrace run` starts a
  // 1-rank point) starts Open MPI's runtime daemon itself in MPI_Init: not the
  // app, and under the tool its start-up delayed the app's MPI_Init (5-7 s a
  // run on the loaded 2-core VM).
  out.insert(out.end(), {tool.valgrind, "--tool=rtrace-count", "--trace-children=yes",
                         "--trace-children-skip=*/orted,*/prted", "-q", "--vgdb=no",
                         "--log-file=" + spec.raw_dir + "/valgrind-%p.log", "--out-dir=" + spec.raw_dir});
  out.insert(out.end(), spec.tool_options.begin(), spec.tool_options.end());
  out.insert(out.end(), spec.command.begin() + static_cast<std::ptrdiff_t>(spec.app_index), spec.command.end());
  return out;
}

CountingResult run_counting(const CountingSpec& spec, const ToolPaths& tool) {
  CountingResult result;
  std::error_code ec;
  fs::create_directories(spec.raw_dir, ec);
  if (ec) throw SetupError("cannot create `" + spec.raw_dir + "`: " + ec.message());
  if (!fs::is_empty(spec.raw_dir, ec)) throw SetupError("`" + spec.raw_dir + "` is not empty (raw files of another run?)");

  const std::vector<std::string> argv = instrumented_command(spec, tool);
  std::string path_env;
  for (const auto& e : spec.env)
    if (e.rfind("PATH=", 0) == 0) path_env = e.substr(5);
  if (path_env.empty()) path_env = "/usr/bin:/bin";
  const std::string exe = search_path(argv[0], path_env);
  if (exe.empty()) throw SetupError("`" + argv[0] + "` not found");
  // The app itself: found here when this machine runs it (directly, or as a
  // path that mpirun/srun start on this node too).
  const std::string& app = spec.command[spec.app_index];
  if ((spec.app_index == 0 || app.find('/') != std::string::npos) && search_path(app, path_env).empty())
    throw SetupError("`" + app + "`: not found or not executable");
  if (spec.progress && !spec.banner.empty()) std::fprintf(stderr, "%s\n", spec.banner.c_str());

  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : spec.env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  g_interrupted = 0;

  // posix_spawn (vfork underneath): rtrace maps many libraries, which a fork
  // would copy the page tables of. The child gets its own process group,
  // default SIGINT/SIGTERM, and no core files (a crash under Valgrind would
  // leave a vgcore.<pid> in the app's directory; the limit is inherited).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  struct rlimit old_core {}, no_core {0, 0};
  getrlimit(RLIMIT_CORE, &old_core);
  setrlimit(RLIMIT_CORE, &no_core);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int exec_errno = posix_spawn(&pid, exe.c_str(), nullptr, &attr, cargv.data(), cenv.data());
  setrlimit(RLIMIT_CORE, &old_core);
  posix_spawnattr_destroy(&attr);
  if (exec_errno == 0) g_child_group = pid;

  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  double next_progress = spec.progress_every_s;
  bool timed_out = false;
  double kill_at = 0;
  int status = 0;
  for (; exec_errno == 0;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    const double t = elapsed();
    if (spec.timeout_s > 0 && t > spec.timeout_s && !timed_out) {
      timed_out = true;
      kill(-pid, SIGTERM);
      kill_at = t + 5;
    }
    if (timed_out && kill_at > 0 && t > kill_at) {
      kill(-pid, SIGKILL);
      kill_at = 0;
    }
    if (spec.progress && t >= next_progress) {
      std::string line = "rtrace counts: counting pass under Valgrind, " + format_seconds(t) + " elapsed";
      if (spec.timed_run_s > 0) {
        char buf[96];
        std::snprintf(buf, sizeof buf, ", %.0fx the timed run's %.2f s so far", t / spec.timed_run_s, spec.timed_run_s);
        line += buf;
      }
      std::fprintf(stderr, "%s\n", line.c_str());
      next_progress += spec.progress_every_s;
    }
    poll(nullptr, 0, 50);
  }
  // Stragglers of the group (daemons the app left behind) are not waited for.
  g_child_group = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  RunOutcome& o = result.outcome;
  o.wall_s = elapsed();
  o.timeout_s = spec.timeout_s;
  if (exec_errno != 0) {
    o.kind = RunOutcome::Kind::LaunchError;
    o.launch_error = "execve `" + exe + "`: " + std::strerror(exec_errno);
  } else if (timed_out) {
    o.kind = RunOutcome::Kind::TimedOut;
  } else if (g_interrupted) {
    o.kind = RunOutcome::Kind::Interrupted;
    o.signal = g_interrupted;
  } else if (WIFSIGNALED(status)) {
    o.kind = RunOutcome::Kind::Signalled;
    o.signal = WTERMSIG(status);
  } else {
    o.kind = RunOutcome::Kind::Exited;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::vector<std::string> unfinished;
  std::vector<RawProcess> processes;
  for (const auto& file : raw_files_in(spec.raw_dir, &unfinished)) {
    try {
      processes.push_back(read_raw_file(file));
    } catch (const RawFormatError& e) {
      result.problems.push_back(e.what());
    }
  }
  for (const auto& p : processes)
    if (p.nodecode && result.unsupported.empty()) result.unsupported = unsupported_instruction_line(p);
  result.ranks = build_rank_counts(processes, spec.expected_ranks, o, symbolizer_namer(), unfinished);
  fold_valgrind_logs(result.ranks, valgrind_last_lines(spec.raw_dir));
  for (const auto& [rank, cr] : result.ranks)
    for (const auto& line : cr.log)
      if (line.rfind("warning: ", 0) == 0) result.problems.push_back(line.substr(9));
  return result;
}

std::map<int, std::string> valgrind_last_lines(const std::string& raw_dir) {
  std::map<int, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(raw_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("valgrind-", 0) != 0 || name.size() < 14 || name.compare(name.size() - 4, 4, ".log") != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + 9, &end, 10);
    if (!end || std::string(end) != ".log") continue;
    std::ifstream in(e.path());
    std::string line, last;
    while (std::getline(in, line)) {
      // "==PID== message": the prefix says nothing the pid does not.
      if (line.rfind("==", 0) == 0) {
        const auto close = line.find("== ", 2);
        if (close != std::string::npos) line = line.substr(close + 3);
      }
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
      if (!line.empty() && line.find_first_not_of(' ') != std::string::npos) last = line.substr(line.find_first_not_of(' '));
    }
    if (!last.empty()) out[static_cast<int>(pid)] = last;
  }
  return out;
}

void fold_valgrind_logs(std::map<std::int64_t, CountedRank>& ranks, const std::map<int, std::string>& last_lines) {
  std::set<int> counted_pids;
  for (const auto& [rank, cr] : ranks)
    if (cr.pid > 0) counted_pids.insert(static_cast<int>(cr.pid));
  std::vector<std::string> orphans;   // logs of processes that left no counts
  for (const auto& [pid, line] : last_lines)
    if (!counted_pids.count(pid)) orphans.push_back(line);
  std::size_t next_orphan = 0;
  for (auto& [rank, cr] : ranks) {
    if (store::get_str(cr.info.status) == "ok") continue;
    std::string line;
    const auto own = cr.pid > 0 ? last_lines.find(static_cast<int>(cr.pid)) : last_lines.end();
    if (own != last_lines.end()) line = own->second;
    else if (cr.pid <= 0 && !orphans.empty()) line = orphans[std::min(next_orphan++, orphans.size() - 1)];
    if (line.empty()) continue;
    cr.log.push_back("valgrind: " + line);
    const std::string note = store::get_str(cr.info.note) + "; valgrind: " + line;
    store::set_text(cr.info.note, note);
  }
}

FunctionNamer symbolizer_namer() {
  auto symbolizer = std::make_shared<tracer::FileSymbolizer>();
  return [symbolizer](const std::string& path, std::uint64_t vaddr) {
    const tracer::SourceFrame f = symbolizer->function_at(path, vaddr);
    return FunctionName{f.function, f.module};
  };
}

void write_counts_file(const std::string& path, const std::map<std::int64_t, CountedRank>& ranks,
                       const std::string& command_line) {
  const std::string tmp = path + ".tmp";
  char host[64] = {0};
  gethostname(host, sizeof host - 1);
  {
    store::File f = store::File::create(tmp, /*overwrite=*/true);
    store::write_root_attributes(f.root(), "trace", command_line);
    store::Group group = f.root().create_group("ranks");
    for (const auto& [rank, cr] : ranks) {
      store::RankRecords r;
      r.info = store::RankInfoRow{};
      r.info.rank = rank;
      r.info.pid = cr.pid;
      store::set_str(r.info.host, host);
      store::set_str(r.info.tracer_mode, "none");
      r.info.start_time = store::kUnavailable;
      r.info.wall_s = cr.info.wall_s;
      r.info.user_s = r.info.system_s = store::kUnavailable;
      r.info.max_rss_kib = r.info.voluntary_ctxsw = r.info.involuntary_ctxsw = -1;
      r.info.exit_status = cr.info.exit_code;
      r.info.complete = store::get_str(cr.info.status) == "ok" ? 1 : 0;
      r.info.omp_threads = cr.info.threads;
      r.info.mpi_init_end = r.info.mpi_finalize_start = store::kUnavailable;
      r.names = cr.names;
      r.log = cr.log;
      r.counts_info = {cr.info};
      r.count_levels = cr.levels;
      r.counts = cr.counts;
      r.writer = "counts";
      store::write_rank(group, r);
    }
    f.close();
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw store::Error("rename", tmp, path, std::strerror(err));
  }
}

}  // namespace rtrace::counts
