#include "rtrace/launcher/point_command.hpp"

#include "rtrace/launcher/app_arguments.hpp"
#include "rtrace/launcher/hostlist.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

namespace rtrace::launcher {

std::string Partition::name() const {
  if (sms > 0)
    return (ranks > 1 ? "r" + std::to_string(ranks) : std::string()) + "sm" + std::to_string(sms) + sm_method;
  std::string s;
  if (nodes > 0) s += "n" + std::to_string(nodes);
  if (ranks > 1 || nodes > 0) s += "r" + std::to_string(ranks);
  return s + "t" + std::to_string(threads);
}

bool Partition::operator<(const Partition& o) const {
  return std::tie(threads, ranks, nodes, ranks_per_node, sms, sm_method, sm_percentage) <
         std::tie(o.threads, o.ranks, o.nodes, o.ranks_per_node, o.sms, o.sm_method, o.sm_percentage);
}

const char* to_string(LaunchKind k) noexcept {
  switch (k) {
    case LaunchKind::Direct: return "none";
    case LaunchKind::Mpirun: return "mpirun";
    case LaunchKind::Srun: return "srun";
  }
  return "?";
}

namespace {

// RTRACE_SAMPLE_HZ for the tracer: --sample as given, else 250 Hz with the
// cpu tracer and off with the CUDA ones (their callbacks are costly enough).
std::string sample_rate_text(double requested, const std::string& tracer_mode) {
  const double hz = requested >= 0 ? requested : (tracer_mode == "cpu" ? 250.0 : 0.0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", hz);
  return buf;
}

bool user_sets(const std::string& name, const RunOptions& o, const LaunchSetup& s) {
  if (s.base.has(name)) return true;
  return std::any_of(o.env.begin(), o.env.end(), [&](const auto& kv) { return kv.first == name; });
}

std::string user_value(const std::string& name, const RunOptions& o, const LaunchSetup& s) {
  for (auto it = o.env.rbegin(); it != o.env.rend(); ++it)
    if (it->first == name) return it->second;
  return s.base.get(name);
}

// The app's argv for this point: placeholders replaced (app_arguments.hpp).
std::vector<std::string> point_app_argv(const SweepPoint& p, const RunOptions& o, const LaunchSetup& s,
                                        const Partition& part, const Environment& app_env) {
  if (!has_placeholders(o.app_argv)) return o.app_argv;
  PlaceholderValues v;
  v.threads = part.threads;
  v.ranks = part.ranks;
  v.nodes = part.nodes > 0 ? part.nodes : 1;
  if (p.sms > 0) v.sms = p.sms;
  else if (s.gpu.found && s.gpu.sm_count > 0) v.sms = s.gpu.sm_count;
  v.point = p.id;
  v.env = [&](const std::string& name) -> std::optional<std::string> {
    // The expanded command is recorded in the run file: no secrets in it.
    if (is_denied(name, o.env_deny))
      throw UsageError("app argument placeholder `{env:" + name + "}`: " + name +
                       " matches a deny pattern, and the command line is recorded in the run file; "
                       "let the app read it from its environment instead");
    if (!app_env.has(name)) return std::nullopt;
    return app_env.get(name);
  };
  return expand_app_arguments(o.app_argv, v);
}

}  // namespace

std::vector<std::string> partition_hosts(const Partition& part, const LaunchSetup& s) {
  if (part.nodes <= 0 || s.nodelist.empty()) return {};
  return std::vector<std::string>(s.nodelist.begin(),
                                  s.nodelist.begin() + std::min<std::ptrdiff_t>(part.nodes, s.nodelist.size()));
}

std::vector<std::string> srun_placement(const Partition& part, const LaunchSetup& s) {
  std::vector<std::string> argv{"-n", std::to_string(part.ranks)};
  if (part.nodes <= 0) return argv;
  argv.insert(argv.end(), {"-N", std::to_string(part.nodes)});
  if (part.ranks_per_node > 0) argv.push_back("--ntasks-per-node=" + std::to_string(part.ranks_per_node));
  if (!s.nodelist.empty()) {
    if (static_cast<std::size_t>(part.nodes) > s.nodelist.size())
      throw UsageError("partition " + part.name() + " needs " + std::to_string(part.nodes) + " nodes, but the allocation has " +
                       std::to_string(s.nodelist.size()) + " (" + join_hosts(s.nodelist, s.nodelist.size()) + ")");
    argv.insert(argv.end(), {"-w", join_hosts(s.nodelist, static_cast<std::size_t>(part.nodes))});
  }
  return argv;
}

LaunchKind choose_launch(const SweepPoint& p, const SweepPlan& plan, const RunOptions& o, const LaunchSetup& s) {
  const bool many_ranks = p.ranks > 1;
  const bool nodes = p.nodes > 0;
  auto need = [&](const std::string& path, const char* tool) {
    if (path.empty())
      throw UsageError("point `" + p.label() + "` needs " + tool + ", but `" + tool + "` is not in PATH");
  };
  switch (o.launcher) {
    case LauncherChoice::None:
      if (many_ranks || nodes)
        throw UsageError("point `" + p.label() + "` needs an MPI launcher, but --launcher none was given");
      return LaunchKind::Direct;
    case LauncherChoice::Mpirun:
      if (nodes) throw UsageError("the `nodes` axis needs srun (inside a Slurm allocation), not mpirun");
      need(s.mpirun_path, "mpirun");
      return LaunchKind::Mpirun;
    case LauncherChoice::Srun:
      need(s.srun_path, "srun");
      return LaunchKind::Srun;
    case LauncherChoice::Auto:
      if (s.in_slurm && (plan.has(AxisKind::Ranks) || plan.has(AxisKind::Nodes))) {
        need(s.srun_path, "srun");
        return LaunchKind::Srun;
      }
      if (nodes)
        throw UsageError("the `nodes` axis needs a Slurm allocation (SLURM_JOB_ID is not set); "
                         "run inside salloc/sbatch or pass --launcher srun");
      if (many_ranks) {
        need(s.mpirun_path, "mpirun");
        return LaunchKind::Mpirun;
      }
      return LaunchKind::Direct;
  }
  return LaunchKind::Direct;
}

Partition partition_of(const SweepPoint& p, const RunOptions& o, const LaunchSetup& s) {
  Partition part;
  part.ranks = p.ranks > 0 ? p.ranks : 1;
  part.nodes = p.nodes > 0 ? p.nodes : 0;
  if (p.nodes > 0 && p.ranks <= 0) {
    // Nodes without a rank count: ranks-per-node (swept, else the allocation's
    // tasks per node, else 1) on every node.
    part.ranks_per_node = p.ranks_per_node > 0 ? p.ranks_per_node : std::max(1, s.tasks_per_node);
    part.ranks = p.nodes * part.ranks_per_node;
  }
  if (p.sms > 0) {
    // The partition is what MPS grants, so the ERT measures the app's SMs.
    const auto snap = snap_sms_for_mps(p.sms, s.gpu.sm_count > 0 ? s.gpu.sm_count : p.sms);
    part.sms = snap.granted;
    part.sm_method = "mps";
    part.sm_percentage = snap.thread_percentage;
  }
  if (p.threads > 0) {
    part.threads = p.threads;
  } else {
    // What the app will actually get: an explicit OMP_NUM_THREADS, else OpenMP's
    // default of every core, shared by the ranks of this node.
    const std::string omp = user_value("OMP_NUM_THREADS", o, s);
    int t = 0;
    if (!omp.empty() && omp.find_first_not_of("0123456789") == std::string::npos && omp.size() < 7) t = std::stoi(omp);
    const int ranks_here = part.nodes > 0 ? std::max(1, (part.ranks + part.nodes - 1) / part.nodes) : part.ranks;
    // Ranks started by srun get the allocation's CPUs per task (1 unless
    // --cpus-per-task was given): what Slurm allots them, and all that a
    // step of the partition's ERT may ask for.
    const bool srun_ranks = s.in_slurm && (part.ranks > 1 || part.nodes > 0);
    part.threads = t > 0 ? t : srun_ranks ? std::max(1, s.cpus_per_task) : std::max(1, s.cores / ranks_here);
  }
  return part;
}

PointCommand build_point_command(const SweepPoint& p, const SweepPlan& plan, const RunOptions& o,
                                 const LaunchSetup& s, const std::string& trace_dir) {
  PointCommand cmd;
  cmd.partition = partition_of(p, o, s);
  cmd.launch = choose_launch(p, plan, o, s);
  if (cmd.partition.nodes > 0 && cmd.partition.ranks < cmd.partition.nodes)
    throw UsageError("point `" + p.label() + "`: " + std::to_string(cmd.partition.ranks) + " rank" +
                     (cmd.partition.ranks == 1 ? "" : "s") + " cannot spread over " +
                     std::to_string(cmd.partition.nodes) +
                     " nodes (srun would run them on fewer); sweep ranks-per-node instead of ranks, or give ranks >= nodes");

  Environment app = s.base;
  std::vector<std::string> set_names;  // what rtrace set for the app, in order
  auto set = [&](const std::string& name, const std::string& value) {
    app.set(name, value);
    if (std::find(set_names.begin(), set_names.end(), name) == set_names.end()) set_names.push_back(name);
  };
  for (const auto& [k, v] : o.env) set(k, v);
  for (const auto& [k, v] : p.env) set(k, v);  // the swept value wins over --env
  if (p.threads > 0) set("OMP_NUM_THREADS", std::to_string(p.threads));
  // Pin threads only for a single process that fits the cores: with several ranks on a
  // node (mpirun --bind-to none) `close` binding would stack every rank on cores 0..T-1.
  const bool single_process = cmd.partition.ranks <= 1 && cmd.launch == LaunchKind::Direct;
  if (p.threads > 0 && single_process && cmd.partition.threads <= s.cores && !user_sets("OMP_PROC_BIND", o, s) &&
      !user_sets("OMP_PLACES", o, s)) {
    set("OMP_PROC_BIND", "close");
    set("OMP_PLACES", "cores");
  }
  std::string preload;
  if (s.tracer_mode != "none") {
    set("RTRACE_TRACE_DIR", trace_dir);
    set("RTRACE_TRACER_MODE", s.tracer_mode);
    set("RTRACE_POINT_ID", std::to_string(p.id));
    set("RTRACE_SAMPLE_HZ", sample_rate_text(o.sample_hz, s.tracer_mode));
    preload = s.tracer_lib;
    if (s.tracer_mode.rfind("cuda", 0) == 0) set("CUDA_INJECTION64_PATH", s.tracer_lib);
  }
  // The tracer reads the CPU's counters for the count tables (docs/counts.md).
  if (s.counts_mode == "pmu" && s.tracer_mode != "none") set("RTRACE_COUNTS", "pmu");
  if (p.sms > 0) {
    cmd.sms = snap_sms_for_mps(p.sms, s.gpu.sm_count > 0 ? s.gpu.sm_count : p.sms);
    if (s.mps) {
      Environment before = app;
      s.mps->apply(app, cmd.sms);
      for (const auto& [k, v] : app.entries())
        if (before.get(k, "\x01") != v) set_names.push_back(k);
    }
  }
  for (const auto& n : set_names) cmd.app_env.push_back(n + "=" + app.get(n));

  const std::vector<std::string> app_argv = point_app_argv(p, o, s, cmd.partition, app);

  const std::string old_preload = app.get("LD_PRELOAD");
  const std::string app_preload = preload.empty() ? old_preload : (old_preload.empty() ? preload : preload + ":" + old_preload);
  if (!preload.empty()) cmd.app_env.push_back("LD_PRELOAD=" + app_preload);

  switch (cmd.launch) {
    case LaunchKind::Direct:
      cmd.path = s.app_path;
      cmd.argv = app_argv;
      cmd.env = app;
      if (!preload.empty()) cmd.env.set("LD_PRELOAD", app_preload);
      break;
    case LaunchKind::Mpirun: {
      // mpirun itself is not traced: LD_PRELOAD goes to the ranks only, through -x.
      cmd.path = s.mpirun_path;
      cmd.env = app;
      if (s.root) {
        cmd.env.set("OMPI_ALLOW_RUN_AS_ROOT", "1");
        cmd.env.set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
      }
      cmd.argv = {"mpirun", "-np", std::to_string(cmd.partition.ranks)};
      if (cmd.partition.ranks > s.cores) cmd.argv.push_back("--oversubscribe");
      cmd.argv.insert(cmd.argv.end(), {"--bind-to", "none"});
      for (const auto& n : set_names) cmd.argv.insert(cmd.argv.end(), {"-x", n});
      if (!preload.empty()) cmd.argv.insert(cmd.argv.end(), {"-x", "LD_PRELOAD=" + app_preload});
      cmd.argv.insert(cmd.argv.end(), o.mpi_args.begin(), o.mpi_args.end());
      cmd.argv.push_back(s.app_path);
      cmd.argv.insert(cmd.argv.end(), app_argv.begin() + 1, app_argv.end());
      break;
    }
    case LaunchKind::Srun: {
      cmd.path = s.srun_path;
      cmd.env = app;  // srun exports its whole environment to the tasks
      cmd.argv = {"srun"};
      const auto placement = srun_placement(cmd.partition, s);
      cmd.argv.insert(cmd.argv.end(), placement.begin(), placement.end());
      if (o.srun_mpi != "none") cmd.argv.push_back("--mpi=" + o.srun_mpi);
      // Slurm binds CPUs to match the threads axis.
      if (p.threads > 0) cmd.argv.push_back("--cpus-per-task=" + std::to_string(p.threads));
      cmd.argv.push_back("--kill-on-bad-exit=1");
      if (!preload.empty()) {
        if (app_preload.find(',') != std::string::npos)
          throw UsageError("LD_PRELOAD `" + app_preload + "` contains a ',' which srun --export cannot carry");
        cmd.argv.push_back("--export=ALL,LD_PRELOAD=" + app_preload);
      }
      cmd.argv.insert(cmd.argv.end(), o.mpi_args.begin(), o.mpi_args.end());
      cmd.argv.push_back(s.app_path);
      cmd.argv.insert(cmd.argv.end(), app_argv.begin() + 1, app_argv.end());
      break;
    }
  }
  return cmd;
}

}  // namespace rtrace::launcher
