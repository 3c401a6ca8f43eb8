// Command-line options of `rtrace [run]`, parsed with Boost.Program_options.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::launcher {

// Bad command line: exit status 2, message printed as one line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ErtMode { Auto, Quick, None, File };
enum class LauncherChoice { Auto, Mpirun, Srun, None };
enum class TracerChoice { Auto, Cpu, CudaTrace, CudaMetrics, None };
// Where a point's FLOPs and bytes come from (issue 21): a counting pass under
// the Valgrind tool (`rtrace counts`), the CPU's PMU in the timed run, or none.
enum class CountsChoice { Auto, Sim, Pmu, None };

const char* to_string(ErtMode m) noexcept;         // "auto" "quick" "none" "file"
const char* to_string(LauncherChoice l) noexcept;  // "auto" "mpirun" "srun" "none"
const char* to_string(TracerChoice t) noexcept;    // "auto" "cpu" "cuda-trace" "cuda-metrics" "none"
const char* to_string(CountsChoice c) noexcept;    // "auto" "sim" "pmu" "none"

struct RunOptions {
  std::vector<std::string> sweep;  // AXIS=SPEC texts, in order
  bool zip = false;
  int repeat = 1;
  double timeout_s = 0;            // 0 = no timeout
  double grace_s = 5;              // SIGTERM -> SIGKILL grace
  std::string output = "run.h5";
  bool resume = false;
  bool retry_failed = false;       // with --resume: also rerun committed points that did not succeed
  ErtMode ert = ErtMode::Auto;
  std::string ert_file;            // for ErtMode::File
  // One `rtrace ert` child at most this long (0 = no limit); a hung ERT
  // (a GPU that never returns) must not hang the sweep.
  double ert_timeout_s = 3600;
  LauncherChoice launcher = LauncherChoice::Auto;
  TracerChoice tracer = TracerChoice::Auto;
  CountsChoice counts = CountsChoice::Auto;
  // --counts-window SPEC (with --counts sim): the part of the run the counts
  // are inside of, as `rtrace counts --counts-window` takes it; "" = mpi.
  std::string counts_window;
  double sample_hz = -1;           // --sample HZ: call-stack samples/s per thread; 0 off; -1 = default
  std::vector<std::pair<std::string, std::string>> env;  // --env NAME=VALUE, in order
  std::vector<std::string> env_deny;                      // extra deny patterns (fnmatch)
  bool dry_run = false;
  bool quiet = false;
  bool verbose = false;
  bool fail_fast = false;
  std::vector<std::string> mpi_args;  // extra launcher arguments (split on spaces)
  std::string srun_mpi = "pmix";      // srun --mpi=TYPE ("none": leave it out)
  bool keep_scratch = false;
  std::string points;                 // --points LIST: run only these point ids ("" = all)
  std::vector<std::string> app_argv;  // everything after `--`, verbatim

  bool help = false;
  std::string help_text;

  // Which of the plan-defining options were given explicitly (for --resume
  // without an app: the rest comes from the run file).
  bool given_sweep = false, given_zip = false, given_repeat = false, given_env = false, given_points = false;
  std::vector<std::string> given;  // long names of every option given explicitly

  std::string to_json() const;  // every option, for /run options_json
  // Restores the options of a previous run (its options JSON) that are not given
  // now: the plan (sweep, zip, repeat, env, points, app_argv) and how it ran
  // (ert, tracer, launcher, timeout, grace, mpi_args, srun_mpi, fail_fast).
  void fill_from_json(const std::string& json);
};

// Parses a --points LIST ("3", "0,2,5..7") against a plan of `plan_size` points.
// Throws UsageError naming the bad part.
std::vector<std::int64_t> parse_point_selection(const std::string& list, std::size_t plan_size);

// Parses argv (argv[0] is "rtrace run"). Throws UsageError.
RunOptions parse_run_options(int argc, char** argv);

}  // namespace rtrace::launcher
