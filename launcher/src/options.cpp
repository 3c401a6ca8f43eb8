// `rtrace run` command line: Boost.Program_options plus the `-- APP ARGS` split.
#include "rtrace/launcher/options.hpp"

#include "rtrace/launcher/app_arguments.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

namespace po = boost::program_options;

namespace rtrace::launcher {

const char* to_string(ErtMode m) noexcept {
  switch (m) {
    case ErtMode::Auto: return "auto";
    case ErtMode::Quick: return "quick";
    case ErtMode::None: return "none";
    case ErtMode::File: return "file";
  }
  return "?";
}
const char* to_string(LauncherChoice l) noexcept {
  switch (l) {
    case LauncherChoice::Auto: return "auto";
    case LauncherChoice::Mpirun: return "mpirun";
    case LauncherChoice::Srun: return "srun";
    case LauncherChoice::None: return "none";
  }
  return "?";
}
const char* to_string(TracerChoice t) noexcept {
  switch (t) {
    case TracerChoice::Auto: return "auto";
    case TracerChoice::Cpu: return "cpu";
    case TracerChoice::CudaTrace: return "cuda-trace";
    case TracerChoice::CudaMetrics: return "cuda-metrics";
    case TracerChoice::None: return "none";
  }
  return "?";
}

const char* to_string(CountsChoice c) noexcept {
  switch (c) {
    case CountsChoice::Auto: return "auto";
    case CountsChoice::Sim: return "sim";
    case CountsChoice::Pmu: return "pmu";
    case CountsChoice::None: return "none";
  }
  return "?";
}

namespace {

CountsChoice counts_from(const std::string& v) {
  if (v == "auto") return CountsChoice::Auto;
  if (v == "sim") return CountsChoice::Sim;
  if (v == "pmu") return CountsChoice::Pmu;
  if (v == "none") return CountsChoice::None;
  throw UsageError("--counts `" + v + "`: expected auto, sim, pmu or none");
}

void set_ert(RunOptions& o, const std::string& v) {
  if (v == "auto") o.ert = ErtMode::Auto;
  else if (v == "quick") o.ert = ErtMode::Quick;
  else if (v == "none") o.ert = ErtMode::None;
  else if (v.empty()) throw UsageError("--ert needs auto, quick, none or a FILE");
  else {
    o.ert = ErtMode::File;
    o.ert_file = v;
  }
}

LauncherChoice launcher_from(const std::string& v) {
  if (v == "auto") return LauncherChoice::Auto;
  if (v == "mpirun") return LauncherChoice::Mpirun;
  if (v == "srun") return LauncherChoice::Srun;
  if (v == "none") return LauncherChoice::None;
  throw UsageError("--launcher `" + v + "`: expected auto, mpirun, srun or none");
}

TracerChoice tracer_from(const std::string& v) {
  if (v == "auto") return TracerChoice::Auto;
  if (v == "cpu") return TracerChoice::Cpu;
  if (v == "cuda" || v == "cuda-trace") return TracerChoice::CudaTrace;
  if (v == "cuda-metrics") return TracerChoice::CudaMetrics;
  if (v == "none") return TracerChoice::None;
  throw UsageError("--tracer `" + v + "`: expected auto, cpu, cuda, cuda-metrics or none");
}

std::pair<std::string, std::string> split_env(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("--env `" + text + "`: expected NAME=VALUE");
  std::string name = text.substr(0, eq);
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      throw UsageError("--env `" + text + "`: `" + name + "` is not a valid variable name");
  }
  return {name, text.substr(eq + 1)};
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The first word before `--` that is neither an option nor an option's
// value: most likely the app, typed without `--` in front of it.
std::optional<std::size_t> stray_word(const std::vector<std::string>& args) {
  static const std::set<std::string> switches = {"--zip", "--fail-fast", "--resume", "--retry-failed", "--keep-scratch", "--dry-run",
                                                 "--quiet", "-q", "--verbose", "-v", "--help", "-h"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.empty() || a[0] != '-') return i;
    const bool inline_value = a.find('=') != std::string::npos || (a.size() > 2 && a[1] != '-');  // --x=v, -ofile
    if (!switches.count(a) && !inline_value) ++i;  // skips the option's value
  }
  return std::nullopt;
}

UsageError stray_error(const std::vector<std::string>& args, std::size_t stray) {
  std::string rest;
  for (std::size_t i = stray + 1; i < args.size(); ++i) rest += " " + args[i];
  return UsageError("`" + args[stray] + "` is not an option of rtrace run: the app and its arguments go after `--`, as "
                    "in `rtrace [options] -- " + args[stray] + rest + "`");
}

// A Boost error, with a hint when the app was written without `--`.
UsageError usage_error(const po::error& e, const std::vector<std::string>& args) {
  const auto stray = stray_word(args);
  if (stray) {
    const std::string& app = args[*stray];
    std::string rest;
    for (std::size_t i = *stray + 1; i < args.size(); ++i) rest += " " + args[i];
    if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&e))
      return UsageError(std::string(unknown->what()) + " after `" + app +
                        "`: the app and its arguments go after `--`, as in `rtrace [options] -- " + app + rest + "`");
    if (dynamic_cast<const po::too_many_positional_options_error*>(&e)) return stray_error(args, *stray);
  }
  return UsageError(std::string() + e.what() + " (see `rtrace run --help`)");
}

}  // namespace

RunOptions parse_run_options(int argc, char** argv) {
  RunOptions o;
  std::vector<std::string> args;
  bool after_dashes = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (after_dashes) o.app_argv.push_back(a);
    else if (a == "--") after_dashes = true;
    else args.push_back(a);
  }

  std::string ert = "auto", launcher = "auto", tracer = "auto", counts = "auto", mpi_args;
  std::vector<std::string> env;
  po::options_description sweep_opts("Sweep");
  sweep_opts.add_options()
      ("sweep", po::value<std::vector<std::string>>(&o.sweep)->composing()->value_name("AXIS=SPEC"),
       "an axis to sweep (repeatable). AXIS: threads, ranks, ranks-per-node, nodes, sms or env:NAME. "
       "SPEC: a..b, a..b:step, a..b:xfactor, lists 1,2,4 and mixtures 1,2,4..16:4")
      ("zip", po::bool_switch(&o.zip), "pair the axes value by value instead of the Cartesian product")
      ("repeat", po::value<int>(&o.repeat)->value_name("N"), "run every point N times (default 1)")
      ("env", po::value<std::vector<std::string>>(&env)->composing()->value_name("NAME=VALUE"),
       "set a variable in the app's environment (repeatable)");
  po::options_description run_opts("Running");
  run_opts.add_options()
      ("timeout", po::value<double>(&o.timeout_s)->value_name("SECONDS"),
       "kill a point's whole process tree after SECONDS (0: never)")
      ("grace", po::value<double>(&o.grace_s)->value_name("SECONDS"),
       "time between SIGTERM and SIGKILL when stopping a point (default 5)")
      ("ert", po::value<std::string>(&ert)->value_name("MODE"),
       "ceilings per partition: auto (run `rtrace ert`, cached), quick (`rtrace ert --quick`, cached), "
       "none, or FILE (import from an ert or run file)")
      ("ert-timeout", po::value<double>(&o.ert_timeout_s)->value_name("SECONDS"),
       "stop one `rtrace ert` measurement after SECONDS (default 3600; 0: never): the point then has no ceilings "
       "and its log says why")
      ("launcher", po::value<std::string>(&launcher)->value_name("L"),
       "auto (srun inside a Slurm allocation, else mpirun for ranks>1), mpirun, srun or none")
      ("tracer", po::value<std::string>(&tracer)->value_name("T"),
       "auto, cpu (LD_PRELOAD), cuda (CUDA_INJECTION64_PATH), cuda-metrics or none; with an sms axis, auto (on a "
       "GPU) and cuda-metrics add a kernel-count run per point (docs/launcher.md)")
      ("counts", po::value<std::string>(&counts)->value_name("C"),
       "FLOPs and bytes per cache level for unannotated code: sim (one extra run per configuration under "
       "rtrace's Valgrind tool, 20-100x slower; `rtrace counts`), pmu (the CPU's counters in the timed run), "
       "auto (pmu where perf_event_open gives hardware events, else none) or none")
      ("counts-window", po::value<std::string>(&o.counts_window)->value_name("SPEC"),
       "with --counts sim, the counted window: mpi (default: MPI_Init's return .. MPI_Finalize, the POP "
       "summary's window; the whole run without MPI), whole, FUNC:N-M (from the entry of call N of FUNC to the "
       "return of call M; N-: to the end) and/or time:A-B (seconds of the counting run), e.g. timestep:10-20 or "
       "timestep:10-,time:0-600. Outside a FUNC/time window only instructions and FLOPs are counted (cheaper)")
      ("sample", po::value<double>(&o.sample_hz)->value_name("HZ"),
       "sample every thread's call stack HZ times per second of its CPU time (default 250 with the cpu "
       "tracer, off with the CUDA tracers; 0: off)")
      ("mpi-args", po::value<std::string>(&mpi_args)->value_name("ARGS"),
       "extra arguments for mpirun/srun, split on spaces (no shell quoting)")
      ("srun-mpi", po::value<std::string>(&o.srun_mpi)->value_name("TYPE"),
       "srun --mpi=TYPE (default pmix; `none` leaves the flag out)")
      ("fail-fast", po::bool_switch(&o.fail_fast), "stop at the first point that does not succeed")
      ("points", po::value<std::string>(&o.points)->value_name("IDS"),
       "run only these point ids of the plan, e.g. 3 or 0,2,5..7 (a Slurm array task runs one); "
       "the file still holds the whole plan, for `rtrace merge`");
  po::options_description out_opts("Output");
  out_opts.add_options()
      ("output,o", po::value<std::string>(&o.output)->value_name("FILE"), "run file to write (default run.h5)")
      ("resume", po::bool_switch(&o.resume),
       "continue an existing run file: run only its points that are not complete "
       "(with no `-- APP`, the app and sweep are taken from the file)")
      ("retry-failed", po::bool_switch(&o.retry_failed),
       "with --resume: also rerun the points that failed, timed out, were signalled or could not launch "
       "(their new result replaces the old; ok points are kept)")
      ("env-deny", po::value<std::vector<std::string>>(&o.env_deny)->composing()->value_name("PATTERN"),
       "never record variables matching PATTERN (fnmatch; *TOKEN*, *SECRET*, *PASSWORD*, *KEY* always)")
      ("keep-scratch", po::bool_switch(&o.keep_scratch), "keep each point's tracer scratch directory")
      ("dry-run", po::bool_switch(&o.dry_run), "print every point's command, environment and partition; run nothing")
      ("quiet,q", po::bool_switch(&o.quiet), "print nothing but errors")
      ("verbose,v", po::bool_switch(&o.verbose), "echo the app's output and log every step")
      ("help,h", po::bool_switch(&o.help), "show this help");
  po::options_description all;
  all.add(sweep_opts).add(run_opts).add(out_opts);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).style(po::command_line_style::default_style &
                                                                 ~po::command_line_style::allow_guessing).run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw usage_error(e, args);
  }
  // Boost drops words that are not options: most likely the app without `--`.
  if (const auto stray = stray_word(args)) throw stray_error(args, *stray);

  std::ostringstream help;
  help << "usage: rtrace [run] --sweep AXIS=SPEC [--sweep ...] [options] -- APP [ARGS...]\n"
          "       rtrace run --resume [--retry-failed] -o run.h5\n\n"
          "Runs APP once per point of the sweep, under the rtrace tracer, with that\n"
          "partition's roofline ceilings, and records everything in one HDF5 run file.\n"
       << all
       << "\nExamples:\n"
          "  rtrace --sweep threads=1..8:x2 -- ./app input.dat\n"
          "  rtrace --sweep ranks=1,2,4 --sweep threads=1,2 --timeout 600 -o scaling.h5 -- ./mpi_app\n"
          "  rtrace --sweep threads=1,2,4 --sweep env:N=1000,2000 --zip --ert quick -- ./app\n"
          "  rtrace --sweep sms=16..128:16 -- ./cuda_app\n"
          "  rtrace --sweep ranks=1,2,4 --sweep env:N=1000,2000,4000 --zip -- ./app --size {env:N}\n"
          "\nThe app's arguments may hold {threads}, {ranks}, {nodes}, {sms}, {point} and {env:NAME},\n"
          "replaced per point (no shell); {{ and }} are literal braces.\n"
          "\nExit status: 0 every point ok, 1 some point failed, 2 the sweep could not start,\n"
          "128+signal when interrupted (the file stays valid: continue with --resume).\n";
  o.help_text = help.str();
  if (o.help) return o;

  for (const auto& kv : vm)
    if (!kv.second.defaulted()) o.given.push_back(kv.first);
  o.given_sweep = vm.count("sweep") > 0;
  o.given_zip = o.zip;
  o.given_repeat = vm.count("repeat") > 0;
  o.given_env = vm.count("env") > 0;
  o.given_points = vm.count("points") > 0;
  set_ert(o, ert);
  o.launcher = launcher_from(launcher);
  o.tracer = tracer_from(tracer);
  o.counts = counts_from(counts);
  for (const auto& e : env) o.env.push_back(split_env(e));
  o.mpi_args = split_words(mpi_args);
  if (o.quiet && o.verbose) throw UsageError("--quiet and --verbose exclude each other");
  if (vm.count("counts-window") && o.counts_window.empty()) throw UsageError("--counts-window needs a SPEC (e.g. timestep:10-20)");
  if (!o.counts_window.empty() && o.counts != CountsChoice::Sim)
    throw UsageError("--counts-window `" + o.counts_window + "` chooses what the counting pass counts: use it with --counts sim");
  if (o.repeat < 1) throw UsageError("--repeat must be at least 1 (got " + std::to_string(o.repeat) + ")");
  if (!(o.timeout_s >= 0)) throw UsageError("--timeout must be 0 (none) or a positive number of seconds");
  if (!(o.grace_s >= 0)) throw UsageError("--grace must be a non-negative number of seconds");
  if (!(o.ert_timeout_s >= 0)) throw UsageError("--ert-timeout must be 0 (none) or a positive number of seconds");
  if (vm.count("sample") && !(o.sample_hz >= 0 && o.sample_hz <= 10000))
    throw UsageError("--sample must be a rate in 0..10000 Hz (0: off)");
  if (o.output.empty()) throw UsageError("-o needs a file name");
  if (o.retry_failed && !o.resume)
    throw UsageError("--retry-failed reruns the failed points of an existing run: use it with --resume");
  if (o.srun_mpi.empty()) throw UsageError("--srun-mpi needs a type (pmix, pmi2, none, ...)");
  if (o.app_argv.empty() && !o.resume)
    throw UsageError("missing `-- APP [ARGS...]`: the app to run goes after `--`");
  if (!o.app_argv.empty() && o.app_argv[0].empty()) throw UsageError("the app name after `--` is empty");
  check_app_placeholders(o.app_argv);
  return o;
}

std::string RunOptions::to_json() const {
  nlohmann::json j;
  j["sweep"] = sweep;
  j["zip"] = zip;
  j["repeat"] = repeat;
  j["timeout_s"] = timeout_s;
  j["grace_s"] = grace_s;
  j["ert_timeout_s"] = ert_timeout_s;
  j["output"] = output;
  j["resume"] = resume;
  j["retry_failed"] = retry_failed;
  j["ert"] = ert == ErtMode::File ? ert_file : std::string(to_string(ert));
  j["launcher"] = to_string(launcher);
  j["tracer"] = to_string(tracer);
  j["counts"] = to_string(counts);
  j["counts_window"] = counts_window;
  j["sample_hz"] = sample_hz;
  nlohmann::json e = nlohmann::json::array();
  for (const auto& [k, v] : env) e.push_back(k + "=" + v);
  j["env"] = e;
  j["env_deny"] = env_deny;
  j["fail_fast"] = fail_fast;
  j["mpi_args"] = mpi_args;
  j["srun_mpi"] = srun_mpi;
  j["app_argv"] = app_argv;
  j["points"] = points;
  return j.dump();
}

void RunOptions::fill_from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--resume: the run file's options are not readable JSON: ") + e.what());
  }
  try {
    if (!given_sweep) sweep = j.value("sweep", std::vector<std::string>{});
    if (!given_zip) zip = j.value("zip", false);
    if (!given_repeat) repeat = j.value("repeat", 1);
    if (!given_env && j.contains("env")) {
      env.clear();
      for (const auto& s : j["env"]) env.push_back(split_env(s.get<std::string>()));
    }
    if (app_argv.empty()) app_argv = j.value("app_argv", std::vector<std::string>{});
    if (!given_points) points = j.value("points", std::string());
    auto absent = [&](const char* name) { return std::find(given.begin(), given.end(), name) == given.end(); };
    if (absent("ert") && j.contains("ert")) set_ert(*this, j["ert"].get<std::string>());
    if (absent("tracer") && j.contains("tracer")) tracer = tracer_from(j["tracer"].get<std::string>());
    if (absent("counts") && j.contains("counts")) counts = counts_from(j["counts"].get<std::string>());
    if (absent("counts-window")) counts_window = j.value("counts_window", counts_window);
    if (absent("sample")) sample_hz = j.value("sample_hz", sample_hz);
    if (absent("launcher") && j.contains("launcher")) launcher = launcher_from(j["launcher"].get<std::string>());
    if (absent("timeout")) timeout_s = j.value("timeout_s", timeout_s);
    if (absent("grace")) grace_s = j.value("grace_s", grace_s);
    if (absent("ert-timeout")) ert_timeout_s = j.value("ert_timeout_s", ert_timeout_s);
    if (absent("mpi-args")) mpi_args = j.value("mpi_args", mpi_args);
    if (absent("srun-mpi")) srun_mpi = j.value("srun_mpi", srun_mpi);
    if (absent("fail-fast")) fail_fast = j.value("fail_fast", fail_fast);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("--resume: the run file's options are malformed: ") + e.what());
  } catch (const UsageError&) {
    // The values come from a file: never echo them (they may hold control characters).
    throw UsageError("--resume: the run file's options hold an invalid value (env, ert, tracer, counts or launcher)");
  }
}

std::vector<std::int64_t> parse_point_selection(const std::string& list, std::size_t plan_size) {
  auto bad = [&](const std::string& why) -> UsageError { return UsageError("--points `" + list + "`: " + why); };
  auto number = [&](const std::string& s) -> std::int64_t {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad("expected point ids like 3 or 0,2,5..7, got `" + s + "`");
    return std::stoll(s);
  };
  std::vector<std::int64_t> ids;
  std::size_t begin = 0;
  while (true) {
    const auto comma = list.find(',', begin);
    const std::string item = list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const auto dots = item.find("..");
    const std::int64_t a = number(dots == std::string::npos ? item : item.substr(0, dots));
    const std::int64_t b = dots == std::string::npos ? a : number(item.substr(dots + 2));
    if (a > b) throw bad("range `" + item + "` is empty");
    for (std::int64_t id = a; id <= b; ++id) {
      if (id >= static_cast<std::int64_t>(plan_size))
        throw bad("point " + std::to_string(id) + " is not in the plan (ids 0.." + std::to_string(plan_size - 1) + ")");
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return ids;
}

}  // namespace rtrace::launcher
