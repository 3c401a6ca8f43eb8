#include "rtrace/launcher/counting.hpp"

#include "rtrace/launcher/process.hpp"
#include "rtrace/store/run_file.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace rtrace::launcher {

namespace {

std::string self_exe() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", s);
  return buf;
}

}  // namespace

bool pmu_gives_hardware_events() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return true;
}

std::string resolve_counts_mode(const RunOptions& o, const Environment& env, std::vector<std::string>& notes) {
  switch (o.counts) {
    case CountsChoice::None: return "none";
    case CountsChoice::Pmu: return "pmu";
    case CountsChoice::Auto:
      if (pmu_gives_hardware_events()) return "pmu";
      notes.push_back("note: no CPU hardware counters here (perf_event_open gives no hardware events), so no FLOPs "
                      "or bytes for unannotated code; `--counts sim` counts them in one extra run per configuration "
                      "under Valgrind (20-100x slower, measured: bench/counts_overhead.sh)");
      return "none";
    case CountsChoice::Sim: {
      // The counting tool and Valgrind, checked before anything runs.
      ProcessSpec spec;
      spec.path = self_exe();
      spec.argv = {"rtrace", "counts", "--check"};
      // The window is checked with it: one line naming what is wrong with it.
      if (!o.counts_window.empty()) spec.argv.insert(spec.argv.end(), {"--counts-window", o.counts_window});
      spec.env = env.to_envp();
      spec.timeout_s = 60;
      const ProcessResult r = run_process(spec);
      if (r.kind != ExitKind::Exited || r.exit_code != 0) {
        std::string why = last_stderr_line(r.stderr_tail);
        const std::string prefix = "rtrace counts: ";
        if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
        throw UsageError("--counts sim: " + (why.empty() ? std::string("`rtrace counts --check` failed") : why));
      }
      return "sim";
    }
  }
  return "none";
}

CountingInvocation counting_invocation(const PointCommand& untraced, const std::string& app_path,
                                       const std::string& out_file, const TimedRun& timed, const RunOptions& o,
                                       const std::string& calibration_file) {
  const double timed_wall_s = timed.wall_s;
  CountingInvocation inv;
  inv.path = self_exe();
  inv.env = untraced.env;
  // The command as the timed run launches it: the app directly, or mpirun/srun
  // and their options with the app after them (each rank under the tool).
  std::vector<std::string> command;
  std::size_t app_index = 0;
  if (untraced.launch == LaunchKind::Direct) {
    command.push_back(untraced.path);
    command.insert(command.end(), untraced.argv.begin() + (untraced.argv.empty() ? 0 : 1), untraced.argv.end());
  } else {
    command = untraced.argv;
    command[0] = untraced.path;
    for (std::size_t i = 1; i < command.size(); ++i)
      if (command[i] == app_path) {
        app_index = i;
        break;
      }
  }
  const Partition& part = untraced.partition;
  const int nodes = part.nodes > 0 ? part.nodes : 1;
  const int ranks_per_node = std::max(1, (part.ranks + nodes - 1) / nodes);
  // The app's threads per rank are known where the point sets OMP_NUM_THREADS
  // (a threads axis, the user's environment); else the partition's count is
  // an assumption (cores / ranks: a pure-MPI app runs 1), recorded as such.
  // A cache that cores share is one cache for a rank's threads, so at 1 rank
  // it is whole whatever the count.
  const bool threads_known = untraced.env.has("OMP_NUM_THREADS");
  const std::vector<std::string> caches = {"--geometry", "auto",
                                           threads_known ? "--threads" : "--assume-threads", std::to_string(part.threads),
                                           "--ranks", std::to_string(part.ranks), "--ranks-per-node",
                                           std::to_string(ranks_per_node)};
  inv.argv = {"rtrace", "counts", "-o", out_file};
  inv.argv.insert(inv.argv.end(), caches.begin(), caches.end());
  inv.argv.insert(inv.argv.end(), {"--app-index", std::to_string(app_index)});
  if (!o.counts_window.empty()) inv.argv.insert(inv.argv.end(), {"--counts-window", o.counts_window});
  // The timed run's run-time dispatch (its tracer's observations), followed
  // where Valgrind can run it.
  std::error_code dir_ec;
  if (!timed.dispatch_from.empty() && fs::exists(timed.dispatch_from, dir_ec)) {
    inv.argv.insert(inv.argv.end(), {"--dispatch-from", timed.dispatch_from});
    if (timed.dispatch_point >= 0) inv.argv.insert(inv.argv.end(), {"--dispatch-point", std::to_string(timed.dispatch_point)});
  }
  if (timed_wall_s > 0) {
    inv.calibrate_argv = {"rtrace", "counts", "--calibrate"};
    inv.calibrate_argv.insert(inv.calibrate_argv.end(), caches.begin(), caches.end());
    inv.calibrate_argv.insert(inv.calibrate_argv.end(), {"--timed-run", seconds_text(timed_wall_s)});
    if (timed.cpu_s > 0) inv.calibrate_argv.insert(inv.calibrate_argv.end(), {"--timed-cpu", seconds_text(timed.cpu_s)});
    if (!calibration_file.empty()) inv.calibrate_argv.insert(inv.calibrate_argv.end(), {"--calibration", calibration_file});
    if (timed.app_slowdown > 0)
      inv.calibrate_argv.insert(inv.calibrate_argv.end(), {"--app-slowdown", seconds_text(timed.app_slowdown)});
  }
  fs::path raw = out_file;
  raw.replace_extension(".raw");
  inv.raw_dir = raw.string();
  inv.argv.insert(inv.argv.end(), {"--keep-raw", inv.raw_dir});
  if (timed_wall_s > 0) inv.argv.insert(inv.argv.end(), {"--timed-run", seconds_text(timed_wall_s), "--no-calibrate"});
  // A point's --timeout bounds the timed run; the counting run is allowed the
  // slowdown Valgrind can cost on top.
  if (o.timeout_s > 0) inv.argv.insert(inv.argv.end(), {"--timeout", seconds_text(o.timeout_s * 100)});
  inv.argv.push_back("--quiet");
  inv.argv.push_back("--");
  inv.argv.insert(inv.argv.end(), command.begin(), command.end());
  return inv;
}

CostForecast forecast_counting_cost(const CountingInvocation& inv, const RunOptions& o) {
  CostForecast f;
  if (inv.calibrate_argv.empty()) return f;
  ProcessSpec spec;
  spec.path = inv.path;
  spec.argv = inv.calibrate_argv;
  spec.env = inv.env.to_envp();
  spec.timeout_s = 300;
  spec.grace_s = o.grace_s;
  const ProcessResult r = run_process(spec);
  if (r.kind != ExitKind::Exited || r.exit_code != 0) return f;
  // "prediction factor=F seconds=S", then the sentence.
  std::istringstream lines(r.stdout_tail);
  std::string line;
  bool next_is_sentence = false;
  while (std::getline(lines, line)) {
    if (next_is_sentence) {
      f.line = line;
      break;
    }
    if (line.rfind("prediction factor=", 0) == 0) {
      f.factor = std::strtod(line.c_str() + 18, nullptr);
      if (const auto at = line.find(" per_process="); at != std::string::npos)
        f.per_process_s = std::strtod(line.c_str() + at + 13, nullptr);
      if (const auto at = line.find(" startup="); at != std::string::npos)
        f.startup_s = std::strtod(line.c_str() + at + 9, nullptr);
      next_is_sentence = true;
    }
  }
  return f;
}

CountingOutcome run_counting_pass(const CountingInvocation& inv, const std::string& label, int ordinal,
                                  double timed_wall_s, const RunOptions& o, Progress& progress) {
  CountingOutcome out;
  out.file = inv.argv.at(3);
  std::error_code ec;
  fs::remove(out.file, ec);
  // Raw files of an earlier, interrupted pass: rtrace counts wants it empty.
  if (!inv.raw_dir.empty()) fs::remove_all(inv.raw_dir, ec);
  ProcessSpec spec;
  spec.path = inv.path;
  spec.argv = inv.argv;
  spec.env = inv.env.to_envp();
  spec.grace_s = o.grace_s;
  spec.echo = o.verbose;
  // The expected cost, from a short calibration (once per sweep).
  const CostForecast forecast = forecast_counting_cost(inv, o);
  const std::string expect =
      !forecast.line.empty() ? "; " + forecast.line
      : timed_wall_s > 0     ? " (typically 20-100x the timed run's " + seconds_text(timed_wall_s) + " s)"
                             : std::string();
  progress.note("point " + label + ": counting pass under Valgrind, threads one at a time" + expect);
  if (o.verbose) progress.note("counting: " + join_quoted(inv.argv));

  // The run is long: elapsed time and the slowdown so far, while it runs.
  const auto start = std::chrono::steady_clock::now();
  auto future = std::async(std::launch::async, [&spec] { return run_process(spec); });
  const bool terminal = Progress::detect(o.quiet) == Progress::Mode::Terminal;
  double next_line = 60;
  while (future.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string what = "counting pass (Valgrind) " + format_duration(t);
    if (timed_wall_s > 0) {
      char buf[48];
      std::snprintf(buf, sizeof buf, ", %.0fx the timed run so far", t / timed_wall_s);
      what += buf;
    }
    if (terminal) {
      progress.begin_point(ordinal, label, what);
    } else if (!o.quiet && t >= next_line) {
      progress.note("point " + label + ": " + what);
      next_line += 60;
    }
  }
  const ProcessResult r = future.get();
  out.wall_s = r.wall_s;
  if (forecast.per_process_s > 0 && r.kind == ExitKind::Exited && r.exit_code == 0)
    out.app_slowdown = std::max(0.0, r.wall_s - forecast.startup_s) / forecast.per_process_s;
  char ratio[80] = "";
  if (timed_wall_s > 0 && forecast.factor > 0)
    std::snprintf(ratio, sizeof ratio, " (%.0fx the timed run; predicted %.0fx)", r.wall_s / timed_wall_s, forecast.factor);
  else if (timed_wall_s > 0)
    std::snprintf(ratio, sizeof ratio, " (%.0fx the timed run)", r.wall_s / timed_wall_s);
  if (r.kind == ExitKind::Interrupted) {
    out.interrupted = true;
    out.summary = "interrupted";
    return out;
  }
  const bool wrote = r.kind == ExitKind::Exited && (r.exit_code == 0 || r.exit_code == 1) && fs::exists(out.file, ec);
  std::string why = last_stderr_line(r.stderr_tail);
  const std::string prefix = "rtrace counts: ";
  if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
  if (!wrote) {
    out.file.clear();
    switch (r.kind) {
      case ExitKind::TimedOut: out.failure = "the counting run timed out"; break;
      case ExitKind::Signalled: out.failure = std::string("rtrace counts died (") + strsignal(r.signal) + ")"; break;
      case ExitKind::LaunchError: out.failure = "rtrace counts could not start: " + r.launch_error; break;
      default: out.failure = why.empty() ? "rtrace counts exited with code " + std::to_string(r.exit_code) : why;
    }
    out.summary = "failed: " + out.failure;
  } else if (r.exit_code == 1) {
    out.summary = "not ok" + std::string(ratio) + (why.empty() ? "" : ": " + why);
  } else {
    out.summary = "ok, " + format_duration(r.wall_s) + ratio;
  }
  progress.note("point " + label + ": counting pass " + out.summary);
  return out;
}

namespace {

store::CountInfoRow failed_info(const std::string& why, const char* status = "failed") {
  store::CountInfoRow info;
  std::memset(&info, 0, sizeof info);
  store::set_str(info.source, "sim:rtrace-count");
  store::set_str(info.status, status);
  info.threads = 0;
  info.serialised = 1;
  info.wall_s = store::kUnavailable;
  info.exit_code = -1;
  const std::string note = "counting pass: " + why;
  store::set_text(info.note, note);
  return info;
}

// A rank the timed run has no group for: one of its own, marked as holding
// counts only (no timed data: not complete, times unknown).
void add_counts_only_rank(store::Group& ranks, std::int64_t rank, const store::RankRecords& counted) {
  store::RankRecords r;
  r.info = store::RankInfoRow{};
  r.info.rank = rank;
  r.info.pid = -1;
  store::set_str(r.info.host, store::get_str(counted.info.host));
  store::set_str(r.info.tracer_mode, "none");
  r.info.start_time = r.info.wall_s = r.info.user_s = r.info.system_s = store::kUnavailable;
  r.info.max_rss_kib = r.info.voluntary_ctxsw = r.info.involuntary_ctxsw = -1;
  r.info.exit_status = -1;
  r.info.complete = 0;
  r.info.omp_threads = -1;
  r.log = {"counts only: the timed run recorded nothing for this rank"};
  r.writer = "launcher";
  store::write_rank(ranks, r);
}

}  // namespace

void attach_counting_pass(store::Group& ranks, const CountingOutcome& c, int expected_ranks,
                          std::vector<std::string>& log) {
  std::map<std::int64_t, store::RankRecords> counted;
  std::string failure = c.failure;
  if (failure.empty() && !c.file.empty()) {
    try {
      auto f = store::File::open(c.file);
      const auto group = f.root().open_group("ranks");
      for (const auto& name : group.children()) {
        store::RankRecords r = store::read_rank(group.open_group(name));
        counted[r.info.rank] = std::move(r);
      }
    } catch (const std::exception& e) {
      failure = std::string("its output could not be read: ") + e.what();
      counted.clear();
    }
  }
  if (c.interrupted) {
    // The timed run is kept; the counts are to come (`rtrace run --resume`).
    counted.clear();
    for (int rank = 0; rank < std::max(expected_ranks, 1); ++rank) {
      store::RankRecords r;
      r.counts_info = {failed_info("interrupted; `rtrace run --resume` runs it again", "interrupted")};
      counted[rank] = r;
    }
    log.push_back("warning: counting pass interrupted; `rtrace run --resume` runs it again");
  } else if (counted.empty()) {
    if (failure.empty()) failure = "no counts were written";
    for (int rank = 0; rank < std::max(expected_ranks, 1); ++rank) {
      store::RankRecords r;
      r.counts_info = {failed_info(failure)};
      counted[rank] = r;
    }
    log.push_back("warning: counting pass failed: " + failure);
  }
  for (auto& [rank, r] : counted) {
    const std::string name = store::rank_group_name(rank);
    if (!ranks.exists(name)) {
      add_counts_only_rank(ranks, rank, r);
      log.push_back("info: rank " + std::to_string(rank) + ": counts only (the timed run recorded nothing for it)");
    }
    store::Group g = ranks.open_group(name);
    store::attach_counts(g, r);
    for (const auto& line : r.log) log.push_back("counts: rank " + std::to_string(rank) + ": " + line);
    if (!r.counts_info.empty() && store::get_str(r.counts_info.front().status) != "ok" && !c.interrupted)
      log.push_back("warning: counts of rank " + std::to_string(rank) + ": " +
                    store::get_str(r.counts_info.front().status) + ": " + store::get_str(r.counts_info.front().note));
  }
}

}  // namespace rtrace::launcher
