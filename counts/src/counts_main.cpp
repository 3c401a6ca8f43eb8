// `rtrace counts`: one counting run of a command under the Valgrind tool,
// written as per-rank count tables (docs/counts.md). The launcher runs it
// for `rtrace run --counts sim`; it also runs alone.
#include "cli/subcommands.hpp"

#include "rtrace/counts/calibration.hpp"
#include "rtrace/counts/counting_run.hpp"
#include "rtrace/counts/dispatch.hpp"
#include "rtrace/counts/geometry.hpp"
#include "rtrace/counts/window_spec.hpp"

#include "rtrace/store/hdf5.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace rtrace::counts {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitCountingFailed = 1;
constexpr int kExitUsage = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* const kUsage =
    "usage: rtrace counts [options] -o FILE -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND once with rtrace's Valgrind tool in front of the app and writes, per rank,\n"
    "per thread and per function: FLOPs by precision (FP64/FP32/FP16) and vector width\n"
    "(scalar/128/256/512 bit, FMA = 2), instructions, and bytes moved at each level of a\n"
    "simulated cache hierarchy (L1d, L2, L3, DRAM; write-allocate and write-back counted).\n"
    "Valgrind runs the app 20-100x slower and one thread at a time (docs/counts.md).\n"
    "\n"
    "  -o, --output FILE        the counts: an rtrace trace file (/ranks/rNNNNNN/counts*)\n"
    "  --geometry auto|SPEC     caches to simulate: `auto` = this host's (hwloc), or e.g.\n"
    "                           \"L1=32K,8,64;L2=1M,16,64;L3=32M,16,64\" (SIZE,WAYS,LINE[,SHARED_BY],\n"
    "                           SHARED_BY in cores; L3=none: two levels) [auto; $RTRACE_COUNTS_GEOMETRY\n"
    "                           replaces `auto`]\n"
    "  --threads N              threads per rank: a cache that cores share is one simulated cache\n"
    "                           for a rank's threads, holding the rank's part of it (all of it at\n"
    "                           1 rank per node) [$OMP_NUM_THREADS, else --assume-threads]\n"
    "  --assume-threads N       the threads per rank to plan for when the app's are not given\n"
    "                           (recorded as assumed) [the node's cores / --ranks-per-node]\n"
    "  --ranks N                ranks COMMAND starts; a rank without counts is recorded as failed [1]\n"
    "  --ranks-per-node N       ranks on one node [--ranks]\n"
    "  --app-index K            COMMAND[K] is the app (after mpirun/srun and their options) [0]\n"
    "  --timeout SECONDS        stop the counting run after this long\n"
    "  --timed-run SECONDS      the uninstrumented run's wall time: progress shows the slowdown\n"
    "  --counts-window SPEC     the part of the run the counts are \"inside\" of [mpi]:\n"
    "                             mpi       MPI_Init's return .. MPI_Finalize (the POP summary's window;\n"
    "                                       the whole run of an app without MPI); the rest counted too\n"
    "                             whole     the whole run\n"
    "                             FUNC:N-M  from the entry of call N of FUNC to the return of call M\n"
    "                                       (N-: to the end; C++ ns::f:N-M, Fortran mod::proc:N-M)\n"
    "                             time:A-B  seconds A to B of the counting run's own clock (A-: to the end)\n"
    "                           FUNC:N-M,time:A-B: where both hold. Outside a FUNC or time window only\n"
    "                           instructions and FLOPs are counted (no cache simulation): it bounds the\n"
    "                           cost of a long run; caches start cold at the window\n"
    "  --dispatch-from PATH     the timed run's run-time dispatch (its tracer's trace directory, a trace\n"
    "                           file, or a run file): OpenBLAS's core, MKL's path and glibc's CPU features\n"
    "                           are steered to the timed run's where Valgrind can run them (docs/counts.md)\n"
    "  --dispatch-point ID      with a run file: its point ID [the first with dispatch rows]\n"
    "  --timed-cpu SECONDS      the timed run's CPU time (all its processes): with --timed-run, the\n"
    "                           expected cost is printed before the run (threads run one at a time)\n"
    "  --calibrate              only time reference kernels natively and under the tool (a few\n"
    "                           seconds) and print their slowdowns (and, with --timed-run, the\n"
    "                           expected cost); no COMMAND needed\n"
    "  --calibration FILE       reuse the calibration in FILE, or measure it and write FILE\n"
    "  --no-calibrate           no calibration, no prediction\n"
    "  --app-slowdown X         this app's own slowdown per timed process-second (measured on an earlier\n"
    "                           counting run): the prediction uses it instead of the reference kernels\n"
    "  --keep-raw DIR           keep the tool's raw files (one per process) in DIR (default: a\n"
    "                           directory next to -o, which every node must reach; removed after)\n"
    "  --quiet                  no progress lines\n"
    "  --check                  only check that the counting pass can run here (Valgrind, the\n"
    "                           tool, the cache geometry): exit 0, or 2 with the reason\n"
    "  -h, --help\n"
    "\n"
    "Exit status: 0 every rank counted; 1 the counting run failed (FILE says why, per rank);\n"
    "2 usage or setup error (no FILE).\n";

struct Options {
  std::string output;
  std::string geometry = "auto";
  int threads = 0;
  int assume_threads = 0;
  bool threads_assumed = false;   // not given (--threads, OMP_NUM_THREADS): planned for an assumption
  int ranks = 1;
  int ranks_per_node = 0;
  std::size_t app_index = 0;
  double timeout_s = 0;
  double timed_run_s = 0;
  std::string keep_raw;
  WindowSpec window;
  std::string window_text = "mpi";
  std::string dispatch_from;
  std::int64_t dispatch_point = -1;
  bool quiet = false;
  bool check = false;
  bool calibrate_only = false;
  bool no_calibrate = false;
  std::string calibration_file;
  double timed_cpu_s = 0;
  double app_slowdown = 0;
  std::vector<std::string> command;
};

int positive_int(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || !end || *end || n <= 0 || n > 1 << 20)
    throw UsageError(opt + " `" + v + "`: expected a positive integer");
  return static_cast<int>(n);
}

double seconds(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const double s = std::strtod(v.c_str(), &end);
  if (v.empty() || !end || *end || !(s > 0) || s > 1e9) throw UsageError(opt + " `" + v + "`: expected seconds > 0");
  return s;
}

Options parse(int argc, char** argv, bool& help) {
  Options o;
  int i = 1;
  auto value = [&](const std::string& opt) -> std::string {
    if (i + 1 >= argc) throw UsageError(opt + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    std::string inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      inline_value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_inline = true;
    }
    auto val = [&](const std::string& opt) { return has_inline ? inline_value : value(opt); };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      help = true;
      return o;
    } else if (a == "-o" || a == "--output") {
      o.output = val(a);
    } else if (a == "--geometry") {
      o.geometry = val(a);
    } else if (a == "--threads") {
      o.threads = positive_int(a, val(a));
    } else if (a == "--assume-threads") {
      o.assume_threads = positive_int(a, val(a));
    } else if (a == "--ranks") {
      o.ranks = positive_int(a, val(a));
    } else if (a == "--ranks-per-node") {
      o.ranks_per_node = positive_int(a, val(a));
    } else if (a == "--app-index") {
      const std::string v = val(a);
      char* end = nullptr;
      const long k = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || !end || *end || k < 0) throw UsageError("--app-index `" + v + "`: expected an index >= 0");
      o.app_index = static_cast<std::size_t>(k);
    } else if (a == "--timeout") {
      o.timeout_s = seconds(a, val(a));
    } else if (a == "--timed-run") {
      o.timed_run_s = seconds(a, val(a));
    } else if (a == "--keep-raw") {
      o.keep_raw = val(a);
    } else if (a == "--counts-window") {
      o.window_text = val(a);
      try {
        o.window = parse_window_spec(o.window_text);
      } catch (const WindowSpecError& e) {
        throw UsageError(e.what());
      }
    } else if (a == "--dispatch-from") {
      o.dispatch_from = val(a);
      if (o.dispatch_from.empty()) throw UsageError("--dispatch-from needs a path");
    } else if (a == "--dispatch-point") {
      const std::string v = val(a);
      char* end = nullptr;
      const long long id = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || !end || *end || id < 0) throw UsageError("--dispatch-point `" + v + "`: expected a point id >= 0");
      o.dispatch_point = id;
    } else if (a == "--quiet" || a == "-q") {
      o.quiet = true;
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--calibrate") {
      o.calibrate_only = true;
    } else if (a == "--calibration") {
      o.calibration_file = val(a);
    } else if (a == "--no-calibrate") {
      o.no_calibrate = true;
    } else if (a == "--timed-cpu") {
      o.timed_cpu_s = seconds(a, val(a));
    } else if (a == "--app-slowdown") {
      o.app_slowdown = seconds(a, val(a));
    } else {
      throw UsageError("unknown option `" + std::string(argv[i]) + "` (try `rtrace counts --help`)");
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.calibrate_only && o.threads == 0) o.threads = 1;
  if (o.calibrate_only && o.ranks_per_node == 0) o.ranks_per_node = o.ranks;
  if (o.check || o.calibrate_only) return o;
  if (o.output.empty()) throw UsageError("-o FILE is required (where the counts go)");
  if (o.command.empty()) throw UsageError("no command: put it after `--`, as in `rtrace counts -o c.h5 -- ./app`");
  if (o.app_index >= o.command.size())
    throw UsageError("--app-index " + std::to_string(o.app_index) + " is past the end of the command (" +
                     std::to_string(o.command.size()) + " words)");
  if (o.ranks_per_node == 0) o.ranks_per_node = o.ranks;
  if (o.threads == 0) {
    const char* omp = std::getenv("OMP_NUM_THREADS");
    char* end = nullptr;
    const long t = omp ? std::strtol(omp, &end, 10) : 0;
    if (omp && end && *end == '\0' && t > 0 && t < 1 << 20) {
      o.threads = static_cast<int>(t);
    } else {
      // What an OpenMP app gets by default, and a pure-MPI node's ranks
      // spread evenly over its caches: the node's cores shared by its ranks.
      const long cores = sysconf(_SC_NPROCESSORS_ONLN);
      o.threads = o.assume_threads > 0 ? o.assume_threads
                                       : static_cast<int>(std::max(1L, (cores > 0 ? cores : 1) / o.ranks_per_node));
      o.threads_assumed = true;
    }
  }
  return o;
}

// "L1=48K,12,64;L2=2M,16,64;L3=32M,16,64": what --geometry takes.
std::string geometry_spec(const std::vector<CacheLevel>& levels) {
  auto size = [](std::int64_t b) {
    if (b % (1 << 20) == 0) return std::to_string(b >> 20) + "M";
    if (b % (1 << 10) == 0) return std::to_string(b >> 10) + "K";
    return std::to_string(b);
  };
  std::string out;
  for (std::size_t i = 0; i < levels.size() && i < 3; ++i) {
    const CacheLevel& l = levels[i];
    out += (i ? ";L" : "L") + std::to_string(i + 1) + "=" + size(l.size_bytes) + "," + std::to_string(l.associativity) +
           "," + std::to_string(l.line_bytes) + (i == 1 && l.shared_by > 1 ? "," + std::to_string(l.shared_by) : "");
  }
  return out;
}

std::string virtual_machine_sentence(const std::vector<CacheLevel>& levels) {
  const CacheLevel& last = levels.back();
  return "this is a virtual machine (hypervisor flag in /proc/cpuinfo): the " + last.name + " it reports (" +
         human_bytes(last.size_bytes) + ") may be the host's, not this VM's share of it; give the real caches with " +
         "--geometry \"" + geometry_spec(levels) + "\" (sizes edited; under `rtrace run --counts sim`: " +
         "$RTRACE_COUNTS_GEOMETRY)";
}

// The threads per rank were assumed: say so, and what the assumption decides.
std::string threads_assumed_sentence(const std::vector<CacheLevel>& levels, int threads, int ranks_per_node) {
  std::string s = "threads per rank not given (--threads N, OMP_NUM_THREADS): planned for " + std::to_string(threads) +
                  " (the node's cores / " + std::to_string(ranks_per_node) + " rank" +
                  (ranks_per_node == 1 ? "" : "s") + " per node); ";
  const auto plans = plan_levels(levels, threads, ranks_per_node);
  const auto one = plan_levels(levels, 1, ranks_per_node);
  bool same = true;
  for (std::size_t i = 0; i < plans.size(); ++i)
    same = same && plans[i].simulated_bytes == one[i].simulated_bytes && plans[i].copies == one[i].copies;
  // The shared caches hold the rank's part of an instance and the private ones
  // are per thread: the count only decides how many ranks' workers share an
  // instance and over how many instances a rank's threads spread.
  if (same)
    return s + "the caches do not depend on it here (" + describe_plan(levels, plans) + ")";
  return s + "it decides the rank's part of the shared caches: " + describe_plan(levels, plans) +
         "; with 1 thread per rank: " + describe_plan(levels, one);
}

std::string join(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace
}  // namespace rtrace::counts

namespace rtrace::cli {

int counts_main(int argc, char** argv) {
  using namespace rtrace::counts;
  bool help = false;
  Options o;
  try {
    o = parse(argc, argv, help);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rtrace counts: %s\n", e.what());
    return kExitUsage;
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  namespace fs = std::filesystem;
  std::string temp_raw;
  try {
    std::vector<std::string> notes;
    // $RTRACE_COUNTS_GEOMETRY stands in for the host's caches under `auto`
    // (another machine's hierarchy; a small one for tests).
    const char* env_geometry = std::getenv("RTRACE_COUNTS_GEOMETRY");
    const std::string geometry = o.geometry == "auto" && env_geometry && *env_geometry ? env_geometry : o.geometry;
    std::vector<CacheLevel> levels = geometry == "auto" ? host_cache_levels(&notes) : parse_geometry(geometry);
    if (levels.empty()) throw GeometryError("hwloc found no data cache to simulate; give --geometry");
    const std::vector<LevelPlan> plans = plan_levels(levels, o.threads, o.ranks_per_node);
    const std::string origin = geometry != "auto" ? "given" : host_is_virtual_machine() ? "hwloc-vm" : "hwloc";
    // Said on stderr (unless --quiet) and in every rank's log.
    std::vector<std::string> said;
    if (origin == "hwloc-vm") said.push_back(virtual_machine_sentence(levels));
    if (o.threads_assumed) said.push_back(threads_assumed_sentence(levels, o.threads, o.ranks_per_node));

    const char* path_env = std::getenv("PATH");
    const ToolPaths tool = find_tool(path_env ? path_env : "/usr/bin:/bin");
    if (o.check) return kExitOk;

    // The expected cost: reference kernels under the tool with this run's caches.
    Calibration calibration;
    if (o.calibrate_only || (o.timed_run_s > 0 && !o.no_calibrate)) {
      if (!o.calibration_file.empty()) calibration = read_calibration(o.calibration_file);
      if (!calibration.ok()) {
        const std::string scratch = o.output.empty() ? std::string(fs::temp_directory_path())
                                                     : fs::absolute(o.output).parent_path().string();
        calibration = calibrate(tool, tool_options(levels, plans), scratch);
        if (calibration.ok() && !o.calibration_file.empty()) write_calibration(o.calibration_file, calibration);
      }
    }
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const CostPrediction prediction =
        predict_cost(calibration, o.timed_run_s, o.timed_cpu_s, o.ranks, o.ranks_per_node, cores, o.app_slowdown);
    if (o.calibrate_only) {
      if (!calibration.ok() && prediction.seconds <= 0) {
        std::fprintf(stderr, "rtrace counts: calibration failed: %s\n", calibration.error.c_str());
        return kExitCountingFailed;
      }
      std::printf("calibration");
      for (const auto& [k, s] : calibration.slowdown) std::printf(" %s=%.2f", k.c_str(), s);
      std::printf("\n");
      if (prediction.seconds > 0)
        std::printf("prediction factor=%.2f seconds=%.1f per_process=%.3f startup=%.2f\n%s\n", prediction.factor,
                    prediction.seconds, prediction.per_process_s, calibration.startup_s, prediction.line.c_str());
      else std::printf("reference kernels under the tool: %s slower in CPU time (median %.0fx)\n",
                       calibration.summary().c_str(), calibration.typical());
      return kExitOk;
    }

    CountingSpec spec;
    spec.command = o.command;
    spec.app_index = o.app_index;
    // Set unless the user set them: hwloc's CPUID backend does not work
    // under Valgrind and says so on the app's stderr (Open MPI loads hwloc);
    // OpenMP workers waiting at a barrier spin, and under Valgrind, which
    // runs one thread at a time, a spinning thread's instructions and loads
    // are counted as the app's (+17% instructions, +7% L1 bytes measured on
    // a 4-thread table): they sleep instead. An Open MPI rank waiting for
    // another polls its progress engine for as long as the other, slowed
    // down as much as it, computes (LAMMPS at 2 ranks: 26% of the counted
    // instructions, 31% of the L1 bytes; GROMACS 59%, 54%); yielding, it
    // polls 50-90x less, with the app's own counts unchanged. The timed run
    // keeps its own.
    std::vector<std::string> defaults = {"HWLOC_COMPONENTS=-x86", "OMP_WAIT_POLICY=passive", "GOMP_SPINCOUNT=0",
                                         "KMP_BLOCKTIME=0", "OMPI_MCA_mpi_yield_when_idle=1"};
    for (char** e = environ; e && *e; ++e) {
      const std::string var(*e);
      spec.env.push_back(var);
      for (auto& d : defaults)
        if (!d.empty() && var.compare(0, d.find('=') + 1, d, 0, d.find('=') + 1) == 0) d.clear();
    }
    // In front of valgrind (`env NAME=VALUE ... valgrind`): every rank gets
    // them, on other nodes too, where mpirun passes no environment.
    for (const auto& d : defaults)
      if (!d.empty()) spec.app_env.push_back(d);
    spec.tool_options = tool_options(levels, plans);
    // Threads in turn (a ticket lock, where there is one) rather than one
    // thread re-taking Valgrind's lock for several time slices: the shared
    // caches interleave the threads' streams round by round.
    spec.tool_options.push_back("--fair-sched=try");
    for (const auto& w : window_tool_options(o.window)) spec.tool_options.push_back(w);
    // The timed run's dispatch choices, where Valgrind can run them.
    Steering steering;
    if (!o.dispatch_from.empty()) {
      try {
        steering = plan_steering(read_timed_dispatch(o.dispatch_from, o.dispatch_point), spec.env);
      } catch (const DispatchSourceError& e) {
        throw SetupError(std::string("--dispatch-from ") + e.what());
      }
      for (const auto& e : steering.env) spec.app_env.push_back(e);
    }
    spec.expected_ranks = o.ranks;
    spec.timeout_s = o.timeout_s;
    spec.timed_run_s = o.timed_run_s;
    spec.progress = !o.quiet;
    if (!o.keep_raw.empty()) {
      spec.raw_dir = o.keep_raw;
    } else {
      // Next to the output, not in a local /tmp: ranks on other nodes write
      // here too, and the output's filesystem is the one they share.
      const fs::path out_path = fs::absolute(o.output);
      std::string tmpl = (out_path.parent_path() / ("." + out_path.filename().string() + ".raw-XXXXXX")).string();
      if (!mkdtemp(tmpl.data()))
        throw SetupError("cannot create a directory for the raw files next to `" + o.output + "`: " +
                         std::strerror(errno));
      temp_raw = spec.raw_dir = tmpl;
    }
    if (!o.quiet) {
      for (const auto& n : notes) std::fprintf(stderr, "rtrace counts: note: %s\n", n.c_str());
      // With the banner, once the command is known to start (a bad command is one line).
      for (const auto& n : said) spec.banner += "rtrace counts: note: " + n + "\n";
      spec.banner += "rtrace counts: counting under Valgrind (20-100x slower, threads one at a time); caches: " +
                     describe_plan(levels, plans) +
                     "; counted window: " + describe_window(o.window);
      if (!steering.steered.empty()) spec.banner += "\nrtrace counts: steered to the timed run's dispatch: " + steering.steered;
      if (!steering.not_steered.empty()) spec.banner += "\nrtrace counts: not steered: " + steering.not_steered;
    }

    if (!o.quiet && prediction.seconds > 0) std::fprintf(stderr, "rtrace counts: %s\n", prediction.line.c_str());
    else if (!o.quiet && o.timed_run_s > 0 && !o.no_calibrate && !calibration.ok())
      std::fprintf(stderr, "rtrace counts: no cost prediction (%s)\n", calibration.error.c_str());
    CountingResult r = run_counting(spec, tool);
    for (auto& [rank, cr] : r.ranks) {
      store::set_str(cr.info.cache_geometry, origin);
      cr.info.cache_threads = o.threads;
      cr.info.cache_threads_assumed = o.threads_assumed ? 1 : 0;
      cr.log.insert(cr.log.end(), said.begin(), said.end());
      if (origin == "hwloc-vm" && store::get_str(cr.info.status) == "ok") {
        // The note is what a report shows of the counting run: the VM's caches belong there.
        const std::string note = store::get_str(cr.info.note) + "; VM topology: the " + levels.back().name +
                                 " may be the host's (give --geometry)";
        store::set_str(cr.info.note, note.size() < sizeof cr.info.note ? note : note.substr(0, sizeof cr.info.note - 4) + "...");
      }
    }
    for (const auto& p : r.problems) std::fprintf(stderr, "rtrace counts: warning: %s\n", p.c_str());
    check_counted_dispatch(r.ranks, steering);
    record_steering(r.ranks, steering);
    write_counts_file(o.output, r.ranks, join(argc, argv));
    if (!temp_raw.empty()) fs::remove_all(temp_raw);

    int failed = 0;
    for (const auto& [rank, cr] : r.ranks)
      if (store::get_str(cr.info.status) != "ok") ++failed;
    if (!r.unsupported.empty()) {
      std::fprintf(stderr, "rtrace counts: %s\n", r.unsupported.c_str());
    } else if (failed > 0) {
      for (const auto& [rank, cr] : r.ranks)
        if (store::get_str(cr.info.status) != "ok")
          std::fprintf(stderr, "rtrace counts: rank %lld: %s: %s\n", static_cast<long long>(rank),
                       store::get_str(cr.info.status).c_str(), store::get_str(cr.info.note).c_str());
    }
    if (!o.quiet) {
      if (!r.ranks.empty()) {
        const auto& info = r.ranks.begin()->second.info;
        const std::string window = store::get_str(info.window);
        if (!window.empty())
          std::fprintf(stderr, "rtrace counts: counted window: %s%s\n", window.c_str(),
                       o.window.user() ? " (outside it: instructions and FLOPs only)" : "");
        if (!store::get_str(info.not_steered).empty())
          std::fprintf(stderr, "rtrace counts: dispatch not steered: %s\n", store::get_str(info.not_steered).c_str());
      }
      std::fprintf(stderr, "rtrace counts: %zu rank(s), %d not ok, %.1f s -> %s\n", r.ranks.size(), failed,
                   r.outcome.wall_s, o.output.c_str());
      if (prediction.seconds > 0)
        std::fprintf(stderr, "rtrace counts: took %.0fx the timed run (predicted %.0fx)\n",
                     r.outcome.wall_s / o.timed_run_s, prediction.factor);
    }
    return failed == 0 ? kExitOk : kExitCountingFailed;
  } catch (const GeometryError& e) {
    std::fprintf(stderr, "rtrace counts: %s\n", e.what());
  } catch (const SetupError& e) {
    std::fprintf(stderr, "rtrace counts: %s\n", e.what());
  } catch (const store::Error& e) {
    std::fprintf(stderr, "rtrace counts: cannot write `%s`: %s\n", o.output.c_str(), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtrace counts: %s\n", e.what());
  }
  if (!temp_raw.empty()) {
    std::error_code ec;
    fs::remove_all(temp_raw, ec);
  }
  return kExitUsage;
}

}  // namespace rtrace::cli
