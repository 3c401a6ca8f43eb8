// `rtrace counts`: one counting run of a command under the Valgrind tool,
// written as per-rank count tables (docs/counts.md). The launcher runs it
// for `rtrace run --counts sim`; it also runs alone.
#include "cli/subcommands.hpp"

#include "rtrace/counts/counting_run.hpp"
#include "rtrace/counts/geometry.hpp"

#include "rtrace/store/hdf5.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <string>
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
    "  --threads N              threads per rank: each shared cache is divided among the\n"
    "                           threads x ranks of a node that share it [$OMP_NUM_THREADS or 1]\n"
    "  --ranks N                ranks COMMAND starts; a rank without counts is recorded as failed [1]\n"
    "  --ranks-per-node N       ranks on one node [--ranks]\n"
    "  --app-index K            COMMAND[K] is the app (after mpirun/srun and their options) [0]\n"
    "  --timeout SECONDS        stop the counting run after this long\n"
    "  --timed-run SECONDS      the uninstrumented run's wall time: progress shows the slowdown\n"
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
  int ranks = 1;
  int ranks_per_node = 0;
  std::size_t app_index = 0;
  double timeout_s = 0;
  double timed_run_s = 0;
  std::string keep_raw;
  bool quiet = false;
  bool check = false;
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
    } else if (a == "--quiet" || a == "-q") {
      o.quiet = true;
    } else if (a == "--check") {
      o.check = true;
    } else {
      throw UsageError("unknown option `" + std::string(argv[i]) + "` (try `rtrace counts --help`)");
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.check) return o;
  if (o.output.empty()) throw UsageError("-o FILE is required (where the counts go)");
  if (o.command.empty()) throw UsageError("no command: put it after `--`, as in `rtrace counts -o c.h5 -- ./app`");
  if (o.app_index >= o.command.size())
    throw UsageError("--app-index " + std::to_string(o.app_index) + " is past the end of the command (" +
                     std::to_string(o.command.size()) + " words)");
  if (o.threads == 0) {
    const char* omp = std::getenv("OMP_NUM_THREADS");
    char* end = nullptr;
    const long t = omp ? std::strtol(omp, &end, 10) : 0;
    o.threads = (omp && end && *end == '\0' && t > 0 && t < 1 << 20) ? static_cast<int>(t) : 1;
  }
  if (o.ranks_per_node == 0) o.ranks_per_node = o.ranks;
  return o;
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
    // Each is at most 2^20: their product does not fit an int.
    const long long workers_on_node = static_cast<long long>(o.threads) * o.ranks_per_node;
    const int workers = static_cast<int>(std::min<long long>(workers_on_node, 1 << 30));
    std::vector<int> sharers;
    for (const auto& l : levels) sharers.push_back(std::min(sharers_of(l, workers), 4096));

    const char* path_env = std::getenv("PATH");
    const ToolPaths tool = find_tool(path_env ? path_env : "/usr/bin:/bin");
    if (o.check) return kExitOk;

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
    spec.tool_options = tool_options(levels, sharers);
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
      std::string geo;
      for (std::size_t k = 0; k < levels.size(); ++k)
        geo += (k ? ", " : "") + levels[k].name + " " + human_bytes(levels[k].size_bytes / sharers[k]) +
               (sharers[k] > 1 ? " (1/" + std::to_string(sharers[k]) + ")" : std::string());
      spec.banner = "rtrace counts: counting under Valgrind (20-100x slower, threads one at a time); caches per worker: " + geo;
    }

    CountingResult r = run_counting(spec, tool);
    for (const auto& p : r.problems) std::fprintf(stderr, "rtrace counts: warning: %s\n", p.c_str());
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
    if (!o.quiet)
      std::fprintf(stderr, "rtrace counts: %zu rank(s), %d not ok, %.1f s -> %s\n", r.ranks.size(), failed,
                   r.outcome.wall_s, o.output.c_str());
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
