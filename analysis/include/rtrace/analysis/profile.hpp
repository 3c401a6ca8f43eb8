// Where the time goes without annotations: the tracer's sampled call paths
// (ranks/rNNNNNN/callpaths) turned into per-function time trajectories along
// the sweep axis, the functions that account for the lost time, and flame
// graphs. See docs/analysis.md, "Sampled profiles".
#pragma once

#include "rtrace/analysis/model.hpp"
#include "rtrace/analysis/pop.hpp"

#include <rtrace/store/run_file.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace rtrace::analysis {

struct AnalysisResult;

// One rank's samples attributed to functions. A sample counts for:
//  * an `app` frame: that function; an inlined one as "<function> [inlined in
//    <caller>]", the caller being the nearest frame that was not inlined (a
//    bare "operator()" or "std::copy<...>" says nothing without its site);
//  * `system` code (libc, libm, C++ runtime): as its first non-system caller;
//    C++ standard-library templates compiled into the app (std::, __gnu_cxx::)
//    as their first caller outside the standard library;
//  * MPI code: the `MPI_*` call that entered it ("MPI_Allreduce"), else
//    "MPI library (progress)";
//  * OpenMP runtime code: "OpenMP runtime (wait, barrier, spin)";
//  * the tracer itself: "rtrace tracer".
struct RankProfile {
  double period_s = kNaN;
  std::map<int, std::map<std::string, double>> thread_samples;  // thread -> function -> samples
  std::map<std::string, std::string> category;                 // function -> app|mpi|openmp|system|rtrace
  // Folded stacks "frame;frame;...;leaf" (outermost first) -> samples, all threads.
  std::map<std::string, double> folded;
  // Code without a symbol (a stripped module, named "module+0xOFFSET"): per
  // module, the samples whose innermost frame is such code, and its distinct
  // unnamed functions (caller frames included).
  double samples = 0;  // all samples of the rank
  std::map<std::string, double> unnamed_samples;
  std::map<std::string, std::set<std::string>> unnamed_functions;
};
RankProfile profile_of_rank(const store::RankRecords& rank);

// Sampled time per *host* function of one point: the function whose code ran
// (the innermost frame that was not inlined; its inlined callees count for
// it, libc and runtime code for itself), on the critical path: the thread
// with the most samples of work (app or system code) over all ranks. This is
// the attribution of counted functions (counts per function symbol), so their
// FLOPs and this time describe the same code. Seconds; empty without samples.
std::map<std::string, double> sampled_host_function_times(const std::vector<store::RankRecords>& ranks);
// The same for one rank, with the samples of work of its critical thread: the
// ranks' result is the one with the most work (RankFolder keeps the best so
// far instead of every rank's call paths).
struct HostFunctionTimes {
  double work = 0;                          // samples of work on the rank's critical thread
  double samples = 0;                       // all samples of that thread (its CPU time / period)
  std::map<std::string, double> seconds;    // host function -> seconds of CPU time on that thread
};

// The code a rank's samples hold, every thread: per host function (as
// above) its samples, module and category, and the samples of work (app and
// system code) over all threads. What the counted code is compared with
// (counted_work.hpp compare_code).
struct SampledCode {
  std::string module, category;
  double samples = 0;
};
struct RankSampledCode {
  double work = 0;
  std::map<std::string, SampledCode> functions;
};
RankSampledCode sampled_code_of(const store::RankRecords& rank);
HostFunctionTimes sampled_host_function_times_of(const store::RankRecords& rank);

// A function at one configuration.
struct FunctionAtPoint {
  double time_s = kNaN;       // on the critical path: the critical thread of the critical rank
  double cpu_s = 0;           // all ranks and threads
  double imbalance = kNaN;    // across ranks: max/mean - 1 of per-rank CPU time (NaN with one rank)
  // Threads that ran it on the critical rank: its samples there over those of
  // its busiest thread (1 = one thread; 2 = two threads evenly). A function
  // whose time stays constant is serial only where one thread ran it.
  double threads = kNaN;
};

struct FunctionSeries {
  std::string name;           // as demangled ("setup_mesh(long)")
  std::string short_name;     // without parameters ("setup_mesh")
  std::string category;
  std::vector<FunctionAtPoint> at;  // per configuration (NaN time when absent)
  double total_time_s = 0;
};

struct FunctionLoss {
  int function = -1;          // index into ProfileResult::functions
  double lost_s = 0;          // time beyond ideal scaling from the group's first point, at its last
  double share = 0;           // of all functions' lost time
  std::string shape;          // "constant: serial", "growing: replicated work or communication", ...
  double imbalance = kNaN;    // at the last point
  std::string roofline;       // the roofline step diagnosis when the function is also a region/kernel
};

struct ProfileGroup {
  std::string fixed;          // same key as AppSummary::fixed
  std::vector<int> configs;   // ordered by concurrency
  std::vector<FunctionLoss> lost;  // largest first
  double wall_lost_s = kNaN;  // the application's lost wall time at the last point
  std::string sentence;       // the diagnosis in words
};

// A module whose sampled code had no symbol, over all configurations.
struct UnnamedModule {
  std::string module;       // ELF file name, "libfftw3.so.3"
  double share = 0;         // of all samples, those whose innermost frame is its unnamed code
  int functions = 0;        // distinct unnamed functions seen (caller frames included)
};

struct ProfileResult {
  bool available = false;             // some point has sampled call paths
  double period_s = kNaN;
  std::vector<FunctionSeries> functions;   // sorted by total critical-path time
  std::vector<ProfileGroup> groups;
  std::vector<std::map<std::string, double>> folded;  // per configuration: folded stacks over ranks (first repeat)
  std::vector<std::string> warnings;
  std::vector<UnnamedModule> unnamed;      // largest share first
  // The functions every view shows (chart, table), indices into functions: the
  // ones the groups' sentences name first, then the rest by time, 8 at least
  // (issue 39: the sentence named functions the chart and table left out).
  std::vector<int> shown;
};
inline constexpr std::size_t kShownFunctions = 8;

// Text of a function without its parameter list and clone suffix (both
// parts of "<function> [inlined in <caller>]").
std::string short_function_name(const std::string& name);

// Functions whose short names collide only because they are different OpenMP
// regions of one function get GCC's region number: "f (OpenMP region 1)".
void disambiguate_openmp_regions(std::vector<FunctionSeries>& functions);

// A function of the C++ standard library (std::, __gnu_cxx::, __cxxabiv1::),
// judged by its qualified name, a template's return type skipped.
bool is_standard_library_function(const std::string& name);

// The marker between an inlined function and its caller in a function's name.
inline constexpr const char* kInlinedIn = " [inlined in ";

// Classifies the time trajectory of one function: t1 at concurrency c1, t2 at
// c2. Strong scaling: the ideal time falls with the concurrency, so constant
// time is "constant: serial". Weak (the work grows with the concurrency):
// constant time is ideal, and a serial part grows with the total work.
// threads2: the threads that ran the function at c2 (FunctionAtPoint::threads;
// NaN unknown). Constant time on several threads is not serial: each thread
// did less work in the same time (contention for a shared resource such as
// memory bandwidth, or work replicated per thread).
std::string scaling_shape(double t1, double t2, double c1, double c2, const std::string& category, bool weak = false,
                          double threads2 = kNaN);

// The shape of an app function whose time stayed constant on several threads.
inline constexpr const char* kConstantParallelShape = "constant on several threads: contention or replicated work";

// The hint for modules whose sampled code had no symbol (share >= min_share
// of the samples): which, and how to get their symbols. "" when none.
std::string symbol_hint(const std::vector<UnnamedModule>& unnamed, double min_share = 0.01);

// Reads the sampled call paths of every used point of `res.run` (its file)
// into res.profile: per-function time per configuration (read_profile, before
// the steps are classified: their causes use it); then the groups' losses and
// sentences once res.summaries exist (join_profile). attach_profile = both.
// Never throw: problems become res.warnings.
void read_profile(AnalysisResult& res) noexcept;
void join_profile(AnalysisResult& res) noexcept;
void attach_profile(AnalysisResult& res) noexcept;

// The two halves on rank records in memory (first repeat per configuration);
// build_profile = both, for tests.
ProfileResult profile_functions(const AnalysisResult& res, const std::vector<std::vector<store::RankRecords>>& per_config);
void profile_groups(ProfileResult& profile, const AnalysisResult& res);
ProfileResult build_profile(const AnalysisResult& res, const std::vector<std::vector<store::RankRecords>>& per_config);

// What the samples say about one step between two configurations (indices):
// the share of its lost function time in app functions of shape "constant: serial".
SampledStep sampled_step(const ProfileResult& profile, int config1, int config2, double c1, double c2, bool weak);

// Folded-stack text ("a;b;c 12\n") and speedscope JSON of one configuration.
std::string folded_text(const std::map<std::string, double>& folded);
std::string speedscope_json(const std::map<std::string, double>& folded, const std::string& name, double period_s);

// An icicle flame graph (root on top) of folded stacks; ranks and threads merged.
std::string render_flame_svg(const std::map<std::string, double>& folded, const std::string& title);

// Writes cNNN.folded (Brendan Gregg's folded format) and cNNN.speedscope.json
// for every configuration with samples into dir; returns the files written.
std::vector<std::string> write_folded(const AnalysisResult& res, const std::string& dir);

// The `profile` object of `rtrace analyze --json` (schemas/analysis-v1.json, 1.3.0).
nlohmann::json profile_to_json(const ProfileResult& profile, int max_functions = 30);

}  // namespace rtrace::analysis
