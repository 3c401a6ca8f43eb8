// The stages of a sweep, in the order run_sweep() calls them (see sweep_stages.hpp).
#include "rtrace/launcher/sweep_stages.hpp"

#include "rtrace/launcher/hostlist.hpp"
#include "rtrace/launcher/metrics_pass.hpp"
#include "rtrace/launcher/mps.hpp"
#include "rtrace/launcher/counting.hpp"
#include "rtrace/launcher/rank_collector.hpp"
#include "rtrace/launcher/sweep_runner.hpp"
#include "rtrace/store/validate.hpp"

#include <nlohmann/json.hpp>

#include <sched.h>
#include <csignal>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;

namespace rtrace::launcher {

namespace {

constexpr const char* kRedacted = "<redacted>";

int online_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// <bin>/../lib/librtrace_tracer.so, or $RTRACE_TRACER_LIB.
std::string tracer_library(const Environment& env) {
  if (auto p = env.get("RTRACE_TRACER_LIB"); !p.empty()) return p;
  const std::string exe = self_exe();
  if (exe.empty()) return {};
  return (fs::path(exe).parent_path().parent_path() / "lib" / "librtrace_tracer.so").lexically_normal().string();
}


// rtrace's argv for display and /run, with denied --env values removed.
std::string display_command_line(const std::vector<std::string>& argv, const std::vector<std::string>& deny) {
  std::vector<std::string> shown = argv;
  auto redact = [&](std::string& kv) {
    auto eq = kv.find('=');
    if (eq != std::string::npos && is_denied(kv.substr(0, eq), deny)) kv = kv.substr(0, eq + 1) + kRedacted;
  };
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (shown[i] == "--") break;
    if (shown[i] == "--env" && i + 1 < shown.size()) redact(shown[++i]);
    else if (shown[i].rfind("--env=", 0) == 0) {
      std::string kv = shown[i].substr(6);
      redact(kv);
      shown[i] = "--env=" + kv;
    }
  }
  return join_quoted(shown);
}

std::string options_json(const RunOptions& o) {
  auto j = nlohmann::json::parse(o.to_json());
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, v] : o.env) env.push_back(k + "=" + (is_denied(k, o.env_deny) ? kRedacted : v));
  j["env"] = env;
  return j.dump();
}

std::string slurm_task_layout(const Environment& env) {
  if (!env.has("SLURM_JOB_ID")) return {};
  std::string s;
  for (const char* k : {"SLURM_JOB_NUM_NODES", "SLURM_NTASKS", "SLURM_TASKS_PER_NODE", "SLURM_CPUS_PER_TASK",
                        "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_ARRAY_TASK_ID"}) {
    if (!env.has(k)) continue;
    if (!s.empty()) s += ' ';
    s += std::string(k) + "=" + env.get(k);
  }
  return s;
}

std::string status_of(const ProcessResult& r, store::PointStatus& st) {
  switch (r.kind) {
    case ExitKind::Exited: st = r.exit_code == 0 ? store::PointStatus::Ok : store::PointStatus::Failed; break;
    case ExitKind::Signalled: st = store::PointStatus::Signalled; break;
    case ExitKind::TimedOut: st = store::PointStatus::Timeout; break;
    case ExitKind::LaunchError: st = store::PointStatus::LaunchError; break;
    case ExitKind::Interrupted: st = store::PointStatus::Pending; break;
  }
  std::string s = store::to_string(st);
  if (r.kind == ExitKind::Exited && r.exit_code != 0) s += " (exit " + std::to_string(r.exit_code) + ")";
  if (r.kind == ExitKind::Signalled) s += " (" + std::string(strsignal(r.signal)) + ")";
  if (r.kind == ExitKind::LaunchError) s += " (" + r.launch_error + ")";
  return s;
}

// One rank row from wait4() rusage of the whole tree: used when no tracer data exists.
store::RankRecords rusage_rank(const ProcessResult& r, int omp_threads) {
  store::RankRecords rec;
  auto& i = rec.info;
  i.rank = 0;
  i.pid = r.pid;
  store::set_str(i.host, store::hostname());
  store::set_str(i.tracer_mode, "none");
  rec.writer = "launcher";
  i.start_time = r.start_time;
  i.wall_s = r.wall_s;
  i.user_s = r.user_s;
  i.system_s = r.system_s;
  i.max_rss_kib = r.max_rss_kib;
  i.voluntary_ctxsw = r.voluntary_ctxsw;
  i.involuntary_ctxsw = r.involuntary_ctxsw;
  i.exit_status = r.kind == ExitKind::Exited ? r.exit_code : -1;
  i.complete = r.kind == ExitKind::Exited ? 1 : 0;
  i.tracer_errors = 0;
  i.dropped_records = 0;
  i.counters_available = 0;
  i.gpu_available = 0;
  i.omp_threads = omp_threads;
  rec.log.push_back("info: no tracer data; resources from wait4() rusage of the whole process tree");
  return rec;
}

void remove_tree(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace

// ---------------------------------------------------------------- plan

SweepContext plan_sweep(RunOptions o) {
  // ---- resume: the file defines the plan when no app is given
  std::optional<store::RunMetadata> previous;
  if (o.resume) {
    if (!fs::exists(o.output))
      throw UsageError("--resume: `" + o.output + "` does not exist (nothing to resume)");
    // Read whole in a child first: a file that crashes libhdf5 must not take
    // rtrace down (and the user's data is only read, never rewritten, then).
    if (auto failure = store::hdf5_failure(o.output))
      throw UsageError("--resume: `" + o.output + "`: " + *failure + "; the file was left as it is");
    try {
      auto f = store::File::open(o.output);
      store::check_schema(f);
      previous = store::read_run_metadata(f.root());
    } catch (const store::Error& e) {
      throw UsageError(std::string("--resume: cannot read `") + o.output + "`: " + e.what());
    }
    const bool app_given = !o.app_argv.empty();
    o.fill_from_json(previous->options_json);
    for (const auto& [k, v] : o.env)
      if (v == kRedacted)
        throw UsageError("--resume: `" + o.output + "` does not record the value of --env " + k +
                         " (it matches a deny pattern); repeat the command with its --env options");
    if (app_given && o.app_argv != previous->app_argv)
      throw UsageError("--resume: `" + o.output + "` was made for another app (`" +
                       join_quoted(previous->app_argv) + "`, not `" + join_quoted(o.app_argv) + "`)");
    if (o.app_argv.empty()) throw UsageError("--resume: `" + o.output + "` records no app command");
  }

  SweepPlan plan = make_sweep_plan(o.sweep, o.zip, o.repeat);
  std::vector<std::string> notes;
  for (const auto& w : plan.warnings) notes.push_back("warning: " + w);
  // sms requests that MPS grants the same SMs: one point each, before the plan
  // is compared with or written to a file (the merged spec is what is recorded).
  std::optional<GpuInfo> gpu;
  if (plan.has(AxisKind::Sms)) {
    gpu = detect_gpu();
    if (gpu->found) {
      for (auto& text : o.sweep) {
        const SweepAxis axis = parse_sweep_axis(text);
        if (axis.kind != AxisKind::Sms) continue;
        const SmsMerge merged = merge_equal_sm_grants(axis.numbers, gpu->sm_count);
        if (merged.warnings.empty()) break;
        notes.insert(notes.end(), merged.warnings.begin(), merged.warnings.end());
        if (o.zip) {
          notes.push_back("warning: --zip: the sms values are kept as given (dropping some would break the pairing)");
          break;
        }
        std::string kept;
        for (auto n : merged.kept) kept += (kept.empty() ? "" : ",") + std::to_string(n);
        text = "sms=" + kept;
        break;
      }
      plan = make_sweep_plan(o.sweep, o.zip, o.repeat);
    }
  }
  if (previous && previous->sweep_spec != plan.describe())
    throw UsageError("--resume: `" + o.output + "` holds another sweep (`" + previous->sweep_spec +
                     "`, this command asks for `" + plan.describe() + "`)");
  for (const auto& [k, v] : o.env) {
    for (const auto& a : plan.axes)
      if (a.kind == AxisKind::Env && a.env_name == k)
        throw UsageError("--env " + k + "=" + v + " conflicts with the swept axis `" + a.text() + "`");
  }

  // --points: a subset of the plan (a Slurm array task runs one point).
  std::set<std::int64_t> selected;
  if (!o.points.empty())
    for (auto id : parse_point_selection(o.points, plan.points.size())) selected.insert(id);
  return SweepContext{std::move(o), std::move(plan), std::move(previous), std::move(selected), std::move(gpu),
                      std::move(notes)};
}

// ---------------------------------------------------------------- checks

std::string SweepSetup::counts_file(std::int64_t point_id) const {
  return scratch_root + "/counts-" + store::point_group_name(point_id) + ".h5";
}

std::string SweepSetup::calibration_file() const { return scratch_root + "/counts-calibration.txt"; }

PointCommand counting_point_command(const SweepPoint& p, const SweepContext& ctx, const SweepSetup& setup) {
  // The point's command as the timed run has it, without the tracer (and its
  // counters): the counting tool sees the app alone.
  LaunchSetup untraced = setup.launch;
  untraced.tracer_mode = "none";
  untraced.counts_mode = "none";
  return build_point_command(p, ctx.plan, ctx.opts, untraced, "");
}

std::string SweepSetup::trace_dir(std::int64_t point_id) const {
  return scratch_root + "/" + store::point_group_name(point_id);
}

void build_commands(const SweepContext& ctx, SweepSetup& setup) {
  setup.commands.clear();
  setup.commands.reserve(ctx.plan.points.size());
  for (const auto& p : ctx.plan.points)
    setup.commands.push_back(build_point_command(p, ctx.plan, ctx.opts, setup.launch, setup.trace_dir(p.id)));
}

namespace {

// Before an sms sweep starts its MPS daemon: the compute mode and MPS
// processes not of this rtrace (issue 31). PROHIBITED gives no context at all;
// in EXCLUSIVE_PROCESS (the mode MPS recommends) another MPS server holds the
// device, so rtrace's own server could not get it; in DEFAULT mode another
// server's clients share the SMs with the partitions (a warning).
void check_gpu_for_mps(const SweepAxis& axis, const GpuInfo& gpu, const Environment& env, bool dry_run,
                       std::vector<std::string>& notes) {
  const std::string where = "sweep axis `" + axis.text() + "`: ";
  if (gpu.compute_mode == kComputeModeProhibited) {
    const std::string line = where + gpu.name + " is in compute mode PROHIBITED: no process may create a CUDA context "
                                                "(an administrator sets it back with `nvidia-smi -c DEFAULT`)";
    if (!dry_run) throw UsageError(line);
    notes.push_back("note: " + line);
  }
  const bool exclusive = gpu.compute_mode == kComputeModeExclusiveProcess;
  // Test seam, with a fake GPU only: the process table the checks read.
  const std::string proc_root =
      gpu.fake && env.has("RTRACE_TEST_PROC_ROOT") ? env.get("RTRACE_TEST_PROC_ROOT") : std::string("/proc");
  for (const MpsProcess& p : find_mps_processes(proc_root)) {
    const std::string what = p.name + " (pid " + std::to_string(p.pid) + ") not started by this rtrace";
    if (p.server() && exclusive) {
      const std::string line = where + "an MPS server is running: " + what + "; " + gpu.name +
                               " is in EXCLUSIVE_PROCESS compute mode, so rtrace's own MPS server could not get the "
                               "device: stop that daemon (`echo quit | nvidia-cuda-mps-control` with its "
                               "CUDA_MPS_PIPE_DIRECTORY) or run on another GPU";
      if (!dry_run) throw UsageError(line);
      notes.push_back("note: " + line);
    } else if (p.server()) {
      notes.push_back("warning: an MPS server is running: " + what +
                      ": its clients share the GPU's SMs with every partition of this sweep (times and ceilings "
                      "may be disturbed)");
    } else {
      notes.push_back("warning: an MPS control daemon is running: " + what +
                      ": its clients (apps that reach it by its CUDA_MPS_PIPE_DIRECTORY) would share the GPU with "
                      "this sweep" + (exclusive ? ", and in EXCLUSIVE_PROCESS compute mode its server would keep "
                                                  "rtrace's from the device"
                                                : ""));
    }
  }
  if (exclusive)
    notes.push_back("note: " + gpu.name + " is in EXCLUSIVE_PROCESS compute mode: rtrace stops its MPS server around "
                    "each run outside an SM partition (a process that is no MPS client gets no context beside it)");
}

}  // namespace

SweepSetup check_setup(const SweepContext& ctx, const Environment& env) {
  const RunOptions& o = ctx.opts;
  const SweepPlan& plan = ctx.plan;
  SweepSetup setup;
  LaunchSetup& ls = setup.launch;
  ls.cores = online_cores();
  ls.in_slurm = env.has("SLURM_JOB_ID");
  if (ls.in_slurm) {
    try {
      ls.nodelist = expand_hostlist(env.get("SLURM_JOB_NODELIST", env.get("SLURM_NODELIST")));
    } catch (const HostlistError& e) {
      throw UsageError(std::string("SLURM_JOB_NODELIST: ") + e.what());
    }
    ls.tasks_per_node = allocation_tasks_per_node(env.get("SLURM_NTASKS_PER_NODE"), env.get("SLURM_TASKS_PER_NODE"));
    ls.cpus_per_task = allocation_tasks_per_node(env.get("SLURM_CPUS_PER_TASK"), "");
  }
  ls.root = geteuid() == 0;
  ls.base = env;
  {
    std::string why;
    auto app = resolve_executable(o.app_argv[0], env.get("PATH"), why);
    if (!app) throw UsageError("cannot run the app: " + why);
    ls.app_path = *app;
    if (auto m = resolve_executable("mpirun", env.get("PATH"), why)) ls.mpirun_path = *m;
    if (auto s = resolve_executable("srun", env.get("PATH"), why)) ls.srun_path = *s;
  }
  const bool want_gpu = plan.has(AxisKind::Sms) || o.tracer == TracerChoice::Auto ||
                        o.tracer == TracerChoice::CudaTrace || o.tracer == TracerChoice::CudaMetrics;
  if (want_gpu) ls.gpu = ctx.gpu ? *ctx.gpu : detect_gpu();
  std::vector<std::string>& notes = setup.notes;
  notes.insert(notes.end(), ctx.notes.begin(), ctx.notes.end());
  if (!ls.gpu.note.empty()) notes.push_back("warning: " + ls.gpu.note);
  if (plan.has(AxisKind::Sms)) {
    const SweepAxis* sms_axis = nullptr;
    for (const auto& a : plan.axes)
      if (a.kind == AxisKind::Sms) sms_axis = &a;
    if (!ls.gpu.found) {
      if (!o.dry_run) throw UsageError("sweep axis `" + sms_axis->text() + "`: needs a GPU, but " + ls.gpu.why_not);
      notes.push_back("note: " + ls.gpu.why_not + "; the sms axis would fail here");
    } else {
      for (auto n : sms_axis->numbers) {
        if (n > ls.gpu.sm_count)
          throw UsageError("sweep axis `" + sms_axis->text() + "`: " + std::to_string(n) + " SMs requested, but " +
                           ls.gpu.name + " has " + std::to_string(ls.gpu.sm_count));
        const auto snap = snap_sms_for_mps(static_cast<int>(n), ls.gpu.sm_count);
        if (snap.granted != n)
          notes.push_back("note: sms=" + std::to_string(n) + " -> " + std::to_string(snap.granted) +
                          " SMs granted (MPS: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" +
                          std::to_string(snap.thread_percentage) + ", whole TPCs of 2 SMs)");
      }
      check_gpu_for_mps(*sms_axis, ls.gpu, env, o.dry_run, notes);
    }
  }
  // Tracer: the library next to the binary (or $RTRACE_TRACER_LIB).
  ls.tracer_lib = tracer_library(env);
  const bool lib_exists = !ls.tracer_lib.empty() && fs::exists(ls.tracer_lib);
  // CUDA apps on an sms axis: kernel times from the partitioned run, kernel
  // counts from a second run (metrics_pass.hpp): --tracer auto on a GPU and
  // --tracer cuda-metrics both give the roofline; --tracer cuda only times.
  const bool sms_sweep = plan.has(AxisKind::Sms);
  const bool gpu_apps = ls.gpu.found && (!ls.gpu.fake || ls.gpu.fake_cuda);
  switch (o.tracer) {
    case TracerChoice::None: ls.tracer_mode = "none"; break;
    case TracerChoice::Auto:
      ls.tracer_mode = !lib_exists ? "none" : (gpu_apps ? "cuda-trace" : "cpu");
      ls.metrics_pass = lib_exists && gpu_apps && sms_sweep;
      if (!lib_exists) notes.push_back("note: tracer library not found at " + ls.tracer_lib + "; running untraced");
      break;
    case TracerChoice::Cpu:
    case TracerChoice::CudaTrace:
    case TracerChoice::CudaMetrics:
      if (!lib_exists)
        throw UsageError("--tracer " + std::string(to_string(o.tracer)) + ": tracer library not found at " +
                         ls.tracer_lib + " (set RTRACE_TRACER_LIB)");
      ls.tracer_mode = to_string(o.tracer);
      if (o.tracer == TracerChoice::CudaMetrics && sms_sweep) {
        ls.tracer_mode = "cuda-trace";  // the partitioned run times; the counts come from the metrics run
        ls.metrics_pass = ls.metrics_required = true;
      }
      break;
  }
  if (ls.metrics_pass)
    notes.push_back("note: sms points run twice: kernel times in the partition (cuda-trace), kernel counts in a second "
                    "run (cuda-metrics) inside the partition if CUPTI can profile there, else outside it on the "
                    "whole device (each count says which)");
  if (o.ert == ErtMode::File) {
    // A bad ceilings file is a usage error, found before anything runs.
    if (!fs::exists(o.ert_file)) throw UsageError("--ert " + o.ert_file + ": no such file");
    if (auto failure = store::hdf5_failure(o.ert_file)) throw UsageError("--ert " + o.ert_file + ": " + *failure);
    try {
      std::string detail;
      (void)read_ceilings_from(o.ert_file, Partition{}, detail);
    } catch (const std::exception& e) {
      throw UsageError("--ert " + o.ert_file + ": no ceilings to import (" + e.what() + ")");
    }
  }

  // Counts: the counting pass (checked now), the PMU through the tracer, or none.
  ls.counts_mode = resolve_counts_mode(o, env, notes);
  if (ls.counts_mode == "pmu" && ls.tracer_mode == "none")
    notes.push_back("note: --counts pmu needs the tracer (it reads the counters); with --tracer none there are none");
  if (ls.counts_mode == "sim" && o.repeat > 1)
    notes.push_back("note: the counting pass runs once per configuration (its first repeat), not per repeat");

  // Scratch: next to the output (a shared filesystem when the output is), one directory per point.
  const fs::path out_path = fs::absolute(o.output);
  setup.scratch_root = (out_path.parent_path() / ("." + out_path.filename().string() + ".scratch")).string();

  build_commands(ctx, setup);
  if (plan.has(AxisKind::Nodes) && !plan.has(AxisKind::Ranks) && !plan.has(AxisKind::RanksPerNode) &&
      !setup.commands.empty())
    notes.push_back("note: the nodes axis without ranks or ranks-per-node runs " +
                    std::to_string(setup.commands.front().partition.ranks_per_node) +
                    " rank(s) per node (the allocation's tasks per node); sweep ranks-per-node to choose");
  setup.sweep_launcher = "none";
  for (const auto& c : setup.commands)
    if (c.launch != LaunchKind::Direct) setup.sweep_launcher = to_string(c.launch);
  return setup;
}

void print_dry_run(const SweepContext& ctx, const SweepSetup& setup) {
  const SweepPlan& plan = ctx.plan;
  std::printf("rtrace: plan %s: %zu point%s, output %s\n", plan.describe().c_str(), plan.points.size(),
              plan.points.size() == 1 ? "" : "s", ctx.opts.output.c_str());
  for (const auto& n : setup.notes) std::printf("rtrace: %s\n", n.c_str());
  for (std::size_t i = 0; i < plan.points.size(); ++i) {
    const auto& p = plan.points[i];
    const auto& c = setup.commands[i];
    if (!ctx.is_selected(p.id)) continue;
    std::printf("[%zu/%zu] %s  (point %lld, repeat %d, partition %s, launcher %s)\n", i + 1, plan.points.size(),
                p.label().c_str(), static_cast<long long>(p.id), p.repeat, c.partition.name().c_str(),
                to_string(c.launch));
    if (p.sms > 0)
      std::printf("    sms  %d requested -> %d granted by %s (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d); the ERT measures the same\n",
                  p.sms, c.partition.sms, c.partition.sm_method.c_str(), c.partition.sm_percentage);
    for (const auto& e : c.app_env) std::printf("    env  %s\n", e.c_str());
    std::printf("    run  %s\n", join_quoted(c.argv).c_str());
    if (setup.launch.counts_mode == "sim" && counted_point(p)) {
      const PointCommand untraced = counting_point_command(p, ctx, setup);
      const CountingInvocation inv =
          counting_invocation(untraced, setup.launch.app_path, setup.counts_file(p.id), TimedRun{}, ctx.opts);
      std::printf("    count %s\n", join_quoted(inv.argv).c_str());
    }
  }
}

// ---------------------------------------------------------------- run file

// The plan row of a point before it runs.
store::SweepPointRow plan_row(const SweepPoint& p, const Partition& part, const RunOptions& o, const Environment& env) {
  store::SweepPointRow row{};
  row.point_id = p.id;
  row.repeat = p.repeat;
  store::set_str(row.label, p.label());
  // threads: the swept value, else an explicit OMP_NUM_THREADS, else unknown (-1).
  bool explicit_threads = env.has("OMP_NUM_THREADS");
  for (const auto& kv : o.env) explicit_threads = explicit_threads || kv.first == "OMP_NUM_THREADS";
  row.threads = p.threads > 0 ? p.threads : (explicit_threads ? part.threads : -1);
  row.ranks = part.ranks;
  row.nodes = p.nodes > 0 ? p.nodes : -1;
  row.sms_requested = p.sms > 0 ? p.sms : -1;
  row.sms_achieved = -1;  // the %smid probe's, set when the point ran
  row.sms_granted = part.sms > 0 ? part.sms : -1;
  store::set_str(row.partition_method, part.sms > 0 ? part.sm_method : "");
  store::set_str(row.status, "pending");
  row.exit_code = -1;
  row.signal = 0;
  row.start_time = row.end_time = row.wall_s = store::kUnavailable;
  row.complete = 0;
  return row;
}

store::RunFile open_run_file(const SweepContext& ctx, const SweepSetup& setup, const Environment& env,
                             const std::vector<std::string>& rtrace_argv) {
  const RunOptions& o = ctx.opts;
  const SweepPlan& plan = ctx.plan;
  if (o.resume) {
    auto rf = store::RunFile::open(o.output);
    const auto& stored = rf.points();
    bool same = stored.size() == plan.points.size();
    for (std::size_t i = 0; same && i < stored.size(); ++i)
      same = stored[i].point_id == plan.points[i].id && store::get_str(stored[i].label) == plan.points[i].label();
    if (!same) throw UsageError("--resume: the points in `" + o.output + "` differ from this command's plan");
    return rf;
  }
  if (fs::exists(o.output))
    throw UsageError("output `" + o.output + "` exists; pass --resume to continue it, or choose another file with -o");
  store::RunMetadata meta;
  meta.command_line = display_command_line(rtrace_argv, o.env_deny);
  meta.app_argv = o.app_argv;
  meta.sweep_spec = plan.describe();
  meta.options_json = options_json(o);
  meta.environment = recorded_environment(env, o.env_deny);
  meta.launcher = setup.sweep_launcher;
  meta.slurm_job_id = env.get("SLURM_JOB_ID");
  meta.slurm_nodelist = env.get("SLURM_JOB_NODELIST", env.get("SLURM_NODELIST"));
  meta.slurm_task_layout = slurm_task_layout(env);
  std::vector<store::SweepAxisRow> axes;
  for (std::size_t i = 0; i < plan.axes.size(); ++i) {
    store::SweepAxisRow a{};
    a.index = static_cast<std::int32_t>(i);
    store::set_str(a.name, plan.axes[i].name);
    store::set_str(a.spec, plan.axes[i].spec);
    axes.push_back(a);
  }
  std::vector<store::SweepPointRow> rows;
  for (std::size_t i = 0; i < plan.points.size(); ++i)
    rows.push_back(plan_row(plan.points[i], setup.commands[i].partition, o, env));
  return store::RunFile::create(o.output, meta, store::describe_this_machine(), axes, rows);
}

// ---------------------------------------------------------------- prepare partition

PartitionStage::PartitionStage(const SweepContext& ctx, SweepSetup& setup) : ctx_(ctx), setup_(setup) {}

PartitionStage::~PartitionStage() = default;  // the MpsDaemon stops itself

void PartitionStage::start(const Environment& env) {
  // SM partitioning under a private MPS daemon
  if (!ctx_.plan.has(AxisKind::Sms)) return;
  mps_ = std::make_unique<MpsDaemon>();
  try {
    mps_->start(env);
  } catch (const std::exception& e) {
    throw StageError(std::string("sweep axis sms: ") + e.what());
  }
  setup_.launch.mps = mps_.get();
  build_commands(ctx_, setup_);
}

std::string PartitionStage::prepare(const SweepPoint& p) {
  const std::string trace_dir = setup_.trace_dir(p.id);
  if (setup_.launch.tracer_mode != "none") {
    remove_tree(trace_dir);  // leftovers of an interrupted attempt
    remove_tree(trace_dir + "-metrics");
    std::error_code ec;
    fs::create_directories(trace_dir, ec);
    chmod(setup_.scratch_root.c_str(), 0700);
    if (ec) throw StageError("cannot create the scratch directory " + trace_dir + ": " + ec.message());
  }
  return trace_dir;
}

void PartitionStage::release(const SweepPoint& p) {
  if (!ctx_.opts.keep_scratch && setup_.launch.tracer_mode != "none") {
    remove_tree(setup_.trace_dir(p.id));
    remove_tree(setup_.trace_dir(p.id) + "-metrics");  // the metrics run of an sms point
  }
}

void PartitionStage::stop() {
  if (mps_ && mps_->running()) {
    mps_->stop();
    if (mps_->stop_report() != "quit")
      std::fprintf(stderr, "rtrace: warning: MPS control daemon: %s\n", mps_->stop_report().c_str());
  }
  if (!ctx_.opts.keep_scratch) {
    std::error_code ec;
    fs::remove(setup_.scratch_root, ec);  // only when empty
  }
}

// ---------------------------------------------------------------- ceilings

namespace {

PointCeilings ceilings_of_partition(CeilingProvider& provider, const Partition& part, Progress& progress, int ordinal,
                                    const std::string& label, const std::string& why, std::vector<std::string>& log) {
  PointCeilings out;
  if (provider.needs_measurement(part))
    progress.begin_point(ordinal, label, "measuring ceilings of " + part.name() + (why.empty() ? "" : " (" + why + ")"));
  const PartitionCeilings& ceil = provider.get(part);
  out.ceilings = &ceil;
  if (ceil.interrupted || SignalWatch::interrupt_signal()) {
    out.interrupted = true;
    return out;
  }
  if (!ceil.error.empty()) {
    log.push_back("warning: no ceilings for partition " + part.name() + ": " + ceil.error);
    progress.note("warning: no ceilings for partition " + part.name() + ": " + ceil.error);
  }
  // Unreliable ceilings are used (they are what this node gave) but never
  // silently; one the machine's reference stood in for says so (ERT: issue 32).
  for (const auto& r : ceil.rows)
    if (r.unreliable > 0)
      out.unreliable += (out.unreliable.empty() ? "" : ", ") + store::get_str(r.name) +
                        (store::get_str(r.source) == "reference" ? " (the machine's reference used)" : "");
  if (!out.unreliable.empty())
    log.push_back("warning: unreliable ceilings of partition " + part.name() + ": " + unreliable_summary(ceil.rows));
  return out;
}

const char* ert_option(ErtMode m) { return m == ErtMode::Quick ? "quick" : "auto"; }

}  // namespace

PointCeilings ceilings_for_point(CeilingProvider& provider, const Partition& part, Progress& progress, int ordinal,
                                 const std::string& label, std::vector<std::string>& log) {
  return ceilings_of_partition(provider, part, progress, ordinal, label, "", log);
}

CeilingsStage::CeilingsStage(const RunOptions& o, const Environment& env, const LaunchSetup* launch)
    : opts_(o), provider_(o, env, o.verbose, launch) {}

bool CeilingsStage::wanted(const RooflineCounts& counts) const {
  switch (opts_.ert) {
    case ErtMode::None: return false;
    case ErtMode::File: return true;  // importing costs nothing
    case ErtMode::Auto:
    case ErtMode::Quick: return counts.any;
  }
  return false;
}

PointCeilings CeilingsStage::for_point(const Partition& part, const RooflineCounts& counts, Progress& progress,
                                       int ordinal, const std::string& label, std::vector<std::string>& log) {
  static const PartitionCeilings kNone;
  if (!wanted(counts)) {
    PointCeilings out;
    out.ceilings = &kNone;
    if (opts_.ert == ErtMode::Auto || opts_.ert == ErtMode::Quick) {
      log.push_back("info: no ceilings measured: nothing to place on a roofline (no annotated regions with FLOPs or "
                    "bytes, no hardware counters, no GPU kernel metrics)");
      if (!told_unused_)
        progress.note(std::string("note: ") + label + " has nothing to place on a roofline (no annotated regions " +
                      "with FLOPs or bytes, no hardware counters, no GPU kernel metrics): --ert " +
                      ert_option(opts_.ert) + " measures a partition's ceilings only for points that have them");
      told_unused_ = true;
    }
    return out;
  }
  return ceilings_of_partition(provider_, part, progress, ordinal, label, counts.what, log);
}

// Calls `visit(index, group name, point group)` for every complete, selected
// point whose group has ranks. The file is closed when it returns, before the
// callers' transactions rewrite it.
template <class Visit>
void for_each_committed_point(store::RunFile& rf, const SweepContext& ctx, Visit visit) {
  auto f = store::File::open(rf.path());
  if (!f.root().exists("points")) return;
  const auto points = f.root().open_group("points");
  for (std::size_t i = 0; i < rf.points().size(); ++i) {
    const auto& row = rf.points()[i];
    const auto name = store::point_group_name(row.point_id);
    if (!row.complete || !ctx.is_selected(row.point_id) || !points.exists(name)) continue;
    const auto g = points.open_group(name);
    if (g.exists("ranks")) visit(i, name, g);
  }
}

bool add_missing_ceilings(store::RunFile& rf, const SweepContext& ctx, const SweepSetup& setup,
                          CeilingsStage& ceilings, Progress& progress) {
  if (ctx.opts.ert == ErtMode::None) return true;
  struct Missing {
    std::size_t index;
    std::string group;
    RooflineCounts counts;
  };
  std::vector<Missing> missing;
  for_each_committed_point(rf, ctx, [&](std::size_t i, const std::string& name, const store::Group& g) {
    if (g.exists("ceilings")) return;
    const RooflineCounts counts = roofline_counts_in_ranks(g.open_group("ranks"));
    if (counts.any) missing.push_back(Missing{i, name, counts});
  });
  for (const Missing& m : missing) {
    const SweepPoint& p = ctx.plan.points[m.index];
    const Partition& part = setup.commands[m.index].partition;
    std::vector<std::string> log;
    const PointCeilings c = ceilings.for_point(part, m.counts, progress, 0, p.label(), log);
    if (c.interrupted) return false;
    if (c.ceilings->rows.empty()) continue;  // the reason was printed as a warning
    store::transaction(rf.path(), [&](store::File& f) {
      auto g = f.root().open_group("points").open_group(m.group);
      g.write_table<store::CeilingRow>("ceilings", c.ceilings->rows, "roofline ceilings of partition " + part.name());
      if (!c.ceilings->node_rows.empty())
        g.write_table<store::CeilingRow>("node_ceilings", c.ceilings->node_rows,
                                         "every node's own ceilings of its slice of partition " + part.name());
      g.set_attr("ceilings_source", c.ceilings->source);
      std::vector<std::string> point_log = g.has_attr("log") ? g.attr_strings("log") : std::vector<std::string>{};
      point_log.insert(point_log.end(), log.begin(), log.end());
      point_log.push_back("info: ceilings of " + part.name() + " added by --resume");
      g.set_attr("log", point_log);
    });
    progress.note("point " + std::to_string(p.id) + " (" + p.label() + "): ceilings of " + part.name() + " added");
  }
  return true;
}

bool add_missing_counts(store::RunFile& rf, const SweepContext& ctx, const SweepSetup& setup, Progress& progress) {
  if (setup.launch.counts_mode != "sim") return true;
  struct Missing {
    std::size_t index;
    std::string group;
    double timed_wall_s;
  };
  std::vector<Missing> missing;
  for_each_committed_point(rf, ctx, [&](std::size_t i, const std::string& name, const store::Group& g) {
    const auto ranks = g.open_group("ranks");
    bool interrupted = false;
    for (const auto& r : ranks.children()) {
      const auto rec = store::read_rank_parts(ranks.open_group(r), store::kRankCounts);  // its status only
      for (const auto& info : rec.counts_info) interrupted = interrupted || store::get_str(info.status) == "interrupted";
    }
    const double wall_s = rf.points()[i].wall_s;
    if (interrupted) missing.push_back(Missing{i, name, std::isfinite(wall_s) ? wall_s : 0.0});
  });
  for (const Missing& m : missing) {
    const SweepPoint& p = ctx.plan.points[m.index];
    const std::string label = p.label();
    std::error_code ec;
    std::filesystem::create_directories(setup.scratch_root, ec);
    const PointCommand untraced = counting_point_command(p, ctx, setup);
    TimedRun timed;
    timed.wall_s = m.timed_wall_s;
    timed.dispatch_from = rf.path();   // the timed run's dispatch rows, committed with it
    timed.dispatch_point = p.id;
    const CountingInvocation inv = counting_invocation(untraced, setup.launch.app_path, setup.counts_file(p.id),
                                                       timed, ctx.opts, setup.calibration_file());
    CountingOutcome counting = run_counting_pass(inv, label, 0, m.timed_wall_s, ctx.opts, progress);
    if (counting.interrupted || SignalWatch::interrupt_signal()) return false;
    std::vector<std::string> log;
    store::transaction(rf.path(), [&](store::File& f) {
      auto g = f.root().open_group("points").open_group(m.group);
      auto ranks = g.open_group("ranks");
      attach_counting_pass(ranks, counting, untraced.partition.ranks, log);
      std::vector<std::string> point_log = g.has_attr("log") ? g.attr_strings("log") : std::vector<std::string>{};
      point_log.insert(point_log.end(), log.begin(), log.end());
      point_log.push_back("info: counting pass run by --resume (it had been interrupted)");
      g.set_attr("log", point_log);
    });
    if (!ctx.opts.keep_scratch) {
      std::filesystem::remove(setup.counts_file(p.id), ec);
      std::filesystem::remove_all(std::filesystem::path(setup.counts_file(p.id)).replace_extension(".raw"), ec);
    }
    progress.note("point " + std::to_string(p.id) + " (" + label + "): counting pass " + counting.summary);
  }
  return true;
}

// ---------------------------------------------------------------- run point

PointResult point_result(const SweepPoint& p, const PointCommand& cmd, const RunOptions& o, const Environment& env,
                         const ProcessResult& r, std::vector<std::string>& log) {
  PointResult out;
  out.process = r;
  if (r.kind == ExitKind::Interrupted) {
    out.interrupted = true;
    out.status = store::PointStatus::Pending;
    return out;
  }
  if (r.leftover > 0)
    log.push_back("warning: " + std::to_string(r.leftover) + " process(es) of the tree survived SIGKILL");
  if (r.orphans_reaped > 0)
    log.push_back("info: stopped " + std::to_string(r.orphans_reaped) + " process(es) left behind by the app");

  out.status_text = status_of(r, out.status);
  store::SweepPointRow& row = out.row;
  row = plan_row(p, cmd.partition, o, env);
  store::set_str(row.status, store::to_string(out.status));
  row.exit_code = r.kind == ExitKind::Exited || (r.kind == ExitKind::TimedOut && r.signal == 0) ? r.exit_code : -1;
  row.signal = r.signal;
  row.start_time = r.start_time;
  row.end_time = r.end_time;
  row.wall_s = r.wall_s;
  // sms_achieved stays -1 here: only the %smid probe's measurement goes there
  // (run_sweep sets it), never the grant predicted from the percentage.
  if (r.kind == ExitKind::LaunchError) log.push_back("error: " + r.launch_error);
  if (r.kind == ExitKind::TimedOut) log.push_back("error: timed out after " + std::to_string(o.timeout_s) + " s");
  return out;
}

void mark_failed_nodes(PointResult& result, const std::vector<std::string>& failed_hosts) {
  if (failed_hosts.empty()) return;
  std::string names;
  for (const auto& h : failed_hosts) names += (names.empty() ? "" : ", ") + h;
  result.status = store::PointStatus::Failed;
  store::set_str(result.row.status, store::to_string(result.status));
  result.status_text = std::string("failed (node") + (failed_hosts.size() == 1 ? " " : "s ") + names + " failed)";
}

void drop_failed_nodes(const SweepContext& ctx, SweepSetup& setup, const std::vector<std::string>& failed_hosts,
                       const std::vector<std::size_t>& remaining, std::map<std::size_t, std::string>& unfit) {
  auto& nodes = setup.launch.nodelist;
  for (const auto& h : failed_hosts) nodes.erase(std::remove(nodes.begin(), nodes.end(), h), nodes.end());
  for (std::size_t idx : remaining) {
    try {
      setup.commands[idx] = build_point_command(ctx.plan.points[idx], ctx.plan, ctx.opts, setup.launch,
                                                setup.trace_dir(ctx.plan.points[idx].id));
      unfit.erase(idx);
    } catch (const UsageError& e) {
      unfit[idx] = e.what();
    }
  }
}

PointResult run_point(const SweepPoint& p, const PointCommand& cmd, const RunOptions& o, const Environment& env,
                      Progress& progress, int ordinal, std::vector<std::string>& log) {
  const std::string label = p.label();
  progress.begin_point(ordinal, label);
  if (o.verbose) progress.note("point " + std::to_string(p.id) + ": " + join_quoted(cmd.argv));
  ProcessSpec spec;
  spec.path = cmd.path;
  spec.argv = cmd.argv;
  spec.env = cmd.env.to_envp();
  spec.timeout_s = o.timeout_s;
  spec.grace_s = o.grace_s;
  spec.echo = o.verbose;
  if (cmd.launch == LaunchKind::Srun) {
    spec.measure_machine_load = false;
    spec.machine_load_off_reason = "ranks ran under srun (slurmstepd), outside rtrace's process tree";
  }
  ProcessResult r;
  try {
    r = run_process(spec);
  } catch (const std::exception& e) {
    throw StageError("point " + label + ": " + e.what());
  }
  // scancel (and a terminal's ^C) signal the whole process group at once: the
  // app can die of SIGTERM/SIGINT before rtrace's own handler has run. Such a
  // point was interrupted, not failed: leave it for --resume.
  if (r.kind == ExitKind::Signalled && (r.signal == SIGTERM || r.signal == SIGINT || r.signal == SIGHUP)) {
    for (int i = 0; i < 50 && SignalWatch::interrupt_signal() == 0; ++i) usleep(10000);
    if (SignalWatch::interrupt_signal() != 0) r.kind = ExitKind::Interrupted;
  }
  return point_result(p, cmd, o, env, r, log);
}

// ---------------------------------------------------------------- commit

void commit_point(store::RunFile& rf, const PointCommit& c, std::vector<std::string>& log) {
  const ProcessResult& r = c.result.process;
  rf.commit_point(c.result.row, [&](store::Group& g) {
    g.set_attr("partition", c.cmd.partition.name());
    g.set_attr("launcher", to_string(c.cmd.launch));
    g.set_attr("command", join_quoted(c.cmd.argv));
    if (!c.ceilings.rows.empty()) {
      g.write_table<store::CeilingRow>("ceilings", c.ceilings.rows,
                                       "roofline ceilings of partition " + c.cmd.partition.name());
      g.set_attr("ceilings_source", c.ceilings.source);
    }
    if (!c.ceilings.node_rows.empty())
      g.write_table<store::CeilingRow>("node_ceilings", c.ceilings.node_rows,
                                       "every node's own ceilings of its slice of partition " + c.cmd.partition.name());
    store::CapturedOutput out;
    out.stdout_tail = r.stdout_tail;
    out.stderr_tail = r.stderr_tail;
    out.stdout_bytes = r.stdout_bytes;
    out.stderr_bytes = r.stderr_bytes;
    store::write_output(g, out);
    g.write_table<store::MachineLoadRow>("machine_load", {machine_load_row(r.machine_load)},
                                         "the node's load during the point besides the app (from outside it)");
    store::Group ranks = g.require_group("ranks");
    std::size_t copied = 0;
    if (c.tracer_mode != "none") {
      auto collected = collect_tracer_ranks(c.trace_dir, ranks, c.cmd.partition.ranks);
      log.insert(log.end(), collected.log.begin(), collected.log.end());
      copied = collected.ranks.size();
    }
    if (copied == 0) store::write_rank(ranks, rusage_rank(r, c.cmd.partition.threads));
    if (!c.metrics_dir.empty()) {
      // The metrics run's counts join the partitioned run's times, rank by rank.
      for (auto& [rank, metrics] : read_tracer_ranks(c.metrics_dir, log)) {
        const std::string name = store::rank_group_name(rank);
        if (!ranks.exists(name)) {
          log.push_back("warning: rank " + std::to_string(rank) + " only in the metrics run: its counts are dropped");
          continue;
        }
        store::RankRecords rec = store::read_rank(ranks.open_group(name));
        merge_metric_rows(rec, metrics);
        ranks.remove(name);
        store::write_rank(ranks, rec);
      }
      g.set_attr("metrics_provenance", c.metrics_provenance);
    }
    if (c.counting) attach_counting_pass(ranks, *c.counting, c.cmd.partition.ranks, log);
    // Ranks by host: which node ran what, and which node failed (schema 1.7).
    g.write_table<store::HostRow>("hosts", store::hosts_of_ranks(ranks, c.placed_hosts, c.failed_hosts),
                                  "the point's ranks grouped by host");
    if (!log.empty()) g.set_attr("log", log);
  });
}

// ---------------------------------------------------------------- summary

int summarize(const SweepContext& ctx, const store::RunFile& rf, const SweepOutcome& outcome) {
  const RunOptions& o = ctx.opts;
  const int total = ctx.total();
  int ok = 0, bad = 0, pending = 0;
  for (const auto& row : rf.points()) {
    if (!ctx.is_selected(row.point_id)) continue;
    if (!row.complete) ++pending;
    else if (store::get_str(row.status) == "ok") ++ok;
    else ++bad;
  }
  if (outcome.interrupted) {
    std::fprintf(stderr,
                 "rtrace: interrupted (%s): %d of %d points complete in %s; continue with `rtrace --resume -o %s`\n",
                 strsignal(outcome.interrupted), ok + bad, total, o.output.c_str(), shell_quote(o.output).c_str());
    return 128 + outcome.interrupted;
  }
  if (!o.quiet)
    std::fprintf(stderr, "rtrace: %d point%s: %d ok, %d not ok%s -> %s\n", total, total == 1 ? "" : "s", ok, bad,
                 pending ? (", " + std::to_string(pending) + " not run").c_str() : "", o.output.c_str());
  if (outcome.write_failed) return kExitCannotStart;
  return (bad == 0 && pending == 0) ? kExitAllOk : kExitSomeFailed;
}

}  // namespace rtrace::launcher
