// Reading a run file into per-configuration, per-kernel aggregates.
//
// A configuration is one sweep label (all repeats of it). Within a point the
// ranks are aggregated (counts summed, time of the slowest rank, imbalance
// max/mean - 1, MPI share); across repeats the median is taken and the spread
// of the time kept.
#pragma once

#include "rtrace/analysis/counted_work.hpp"
#include "rtrace/analysis/model.hpp"
#include "rtrace/analysis/pop.hpp"
#include "rtrace/analysis/profile.hpp"

#include <rtrace/store/run_file.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace rtrace::analysis {

// The concurrency axes a trajectory can follow.
inline constexpr const char* kConcurrencyAxes[] = {"threads", "ranks", "nodes", "sms"};
bool is_concurrency_axis(const std::string& axis) noexcept;

// What the counting pass (or the PMU) recorded at one point: the ranks'
// counts_info rows (run-file schema 1.7) reduced to one description.
struct PointCounts {
  bool present = false;          // some rank has a counts_info row
  bool usable = false;           // some rank's status is ok or partial: its counts are used
  std::string source;            // "sim:rtrace-count 0.1.0 valgrind-3.19.0", "pmu:skl <events>"
  std::string status;            // the worst over ranks: ok < partial < unavailable < failed
  std::string note;              // the first rank's note that is not empty (what is missing, or why)
  bool serialised = false;       // the counting tool ran the threads one at a time
  int ranks_counted = 0;         // ranks whose counts are used
  std::vector<store::CountLevelRow> levels;  // the simulated cache shares (first rank with levels)
  std::string cache_geometry;    // where the simulated caches came from: "hwloc", "hwloc-vm", "given" ("": unknown)
  // Counts inside the runtimes (MPI library and transports, OpenMP runtime,
  // the tracer): in neither the application's nor any function's counts.
  RuntimeCounts runtime;
  // The application's counted functions (runtime code excluded, raw names):
  // module and instructions, for the comparison with the timed run's samples.
  std::map<std::string, CountedCode> code;
  // The counted window (counts_info.window, schema 1.8): "MPI_Init..MPI_Finalize",
  // "calls 10-20 of timestep", ...; "" = the whole run (older files, PMU counts).
  // The application's counts are those inside it, as the POP summary's time.
  std::string window;
  // A window the user chose (a function's calls, a time range): the timed run
  // did not time it, so its counts get intensities but no rates.
  bool user_window = false;
  std::string steered, not_steered;   // the counting run's dispatch (counts_info)
};

// The counted kinds (not timed by the tracer: their time comes from the timed run).
inline constexpr const char* kApplicationKind = "application";
inline constexpr const char* kFunctionKind = "function";
inline bool is_counted_kind(const std::string& kind) noexcept {
  return kind == kApplicationKind || kind == kFunctionKind;
}

// A declared count that differs from the counted one by more than 10%: the
// sum of the regions against the whole application, or a region against the
// counted function of the same name.
struct CountsCheck {
  std::string kernel;            // the region's name, or "application" (all declared regions)
  std::string function;          // the counted function compared with (region checks)
  std::string quantity;          // "FLOPs", "L1 bytes", "L2 bytes", "L3 bytes", "DRAM bytes"
  double declared = kNaN, counted = kNaN;
  double difference = kNaN;      // declared / counted - 1
  std::string source;            // the counts' source
};
inline constexpr double kCountsDisagreement = 0.10;

// One point (one repeat) aggregated over its ranks.
struct PointAggregate {
  std::int64_t point_id = -1;
  int ranks_found = 0;
  double app_time_s = kNaN;      // slowest rank's wall time
  double mpi_share = kNaN;       // MPI time in the window (Init/Finalize excluded) / window, summed over ranks (NaN: no MPI)
  bool counters_available = false;
  bool gpu = false;
  std::vector<KernelAtPoint> kernels;  // sorted by (kind, name)
  std::vector<std::string> rank_warnings;
  PointUsage usage;              // per-rank rusage, MPI window and per-call MPI statistics
  // Counted operations (the counting pass's repeat): kernels of kind
  // "application" (all rows of all ranks) and "function" (per counted
  // function, raw demangled names) in `kernels`, untimed here.
  PointCounts counts;
  // Sampled time per function holding the code (the innermost frame not
  // inlined): per rank its share of the samples of the rank's critical
  // thread times the rank's wall time (a wall-clock time, whatever the CPU
  // the thread got), the slowest rank's; empty without samples.
  std::map<std::string, double> sampled_time_s;
  // The code the samples hold, all ranks and threads (profile.hpp), and the
  // samples of work (app and system code) among them.
  std::map<std::string, SampledCode> sampled_code;
  double sampled_work = 0;
  NodeBalance hosts;             // ranks by host (one entry for one host)
};

// Aggregates the ranks of one point. Pure: usable on records built in memory.
PointAggregate aggregate_ranks(const std::vector<store::RankRecords>& ranks);

// aggregate_ranks one rank at a time: load_run reads a rank, folds it in and
// lets it go, so a point of 10^5 ranks costs per-kernel sums and one small
// usage row per rank, never every rank's records at once.
class RankFolder {
 public:
  RankFolder();
  ~RankFolder();
  RankFolder(const RankFolder&) = delete;
  RankFolder& operator=(const RankFolder&) = delete;
  void add(const store::RankRecords& rank);
  PointAggregate finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

struct Configuration {
  std::string label;
  std::vector<std::int64_t> point_ids;   // one per repeat
  int threads = -1, ranks = -1, nodes = -1, sms_requested = -1, sms_achieved = -1;
  int sms_granted = -1;  // what MPS grants (schema 1.6); -1 in older files
  CeilingSet ceilings;
  bool gpu = false;
  bool counters_available = false;
  int ranks_found = 0;
  double app_time_s = kNaN;       // median over repeats
  double app_time_spread = 0;     // (max - min) / median
  double mpi_share = kNaN;        // median over repeats
  std::vector<KernelAtPoint> kernels;  // sorted by (kind, name)
  PopConfig pop;                  // POP metrics of the representative repeat, per-call MPI table
  NodeBalance hosts;              // the representative repeat's ranks by host
  std::vector<Ceiling> node_ceilings;  // a multi-node partition: every node's own (host set)
  std::vector<std::pair<std::string, std::string>> tokens;  // the label's axis=value tokens
  PointCounts counts;             // of the repeat whose counts are used (the counting pass's)
  std::vector<CountsCheck> counts_checks;  // declared vs counted, where they differ by > 10%
  // Hot functions the timed run's samples hold and the counting run did not
  // count, or the other way round (counted_work.hpp compare_code).
  std::vector<CodeMismatch> code_mismatches;
  double sampled_work = 0;        // samples of work over the repeats (0: the timed runs were not sampled)

  int repeats() const noexcept { return static_cast<int>(point_ids.size()); }
  double sms() const noexcept;    // achieved if known, else requested; NaN if none
  // The value of a concurrency axis at this configuration (NaN when unset).
  double concurrency(const std::string& axis) const noexcept;
  const KernelAtPoint* find(const std::string& kind, const std::string& name) const noexcept;
  // The application's time as the summary takes it: the MPI window (median
  // repeat's) for MPI apps with the window measured, else the median wall time.
  double timed_app_time_s() const noexcept;
};

// Combines the repeats of one label: medians, spread kept.
Configuration combine_repeats(const std::vector<store::SweepPointRow>& rows, const std::vector<PointAggregate>& points,
                              const CeilingSet& ceilings);

// A committed point whose status is not ok (failed, timeout, signalled, ...).
struct FailedPoint {
  std::int64_t point_id = -1;
  std::string label, status;
  std::int64_t exit_code = -1, signal = 0;
  std::string reason;  // the app's error line (store::failure_reason), "" when none
};

struct RunData {
  std::string path;
  std::vector<std::string> axes;          // swept axis names in order
  std::vector<Configuration> configs;     // in plan order
  std::vector<std::string> warnings;
  int points_planned = 0;
  int points_used = 0;
  int cores = 0;                          // the machine's cores (0 unknown)
  int vector_bits = 0;                    // the machine's widest SIMD registers (0 unknown; run-file schema 1.8)
  bool zip = false;                       // the sweep paired its axes (--zip)
  std::vector<std::string> point_problems;  // per unusable point: why (for "no complete points")
  std::vector<FailedPoint> failed_points;   // committed points that did not succeed, with their reasons
};

// Reads a run file. Throws InputError for unusable input (one line, with the path).
RunData load_run(const std::string& path);

// Keeps the counted functions worth a trajectory in every configuration and
// gives them display names (short names; the full name where two collide):
// those with FLOPs that execute at least `min_share` of the application's
// counted instructions (of its FLOPs when instructions were not counted) or
// take that share of its time (sampled) at some configuration, at most
// `max_functions`, the largest share first. The others leave `kernels`.
void select_counted_functions(std::vector<Configuration>& configs, int max_functions = 8, double min_share = 0.05);

// `source_file`: the file the rows came from (the point's ceilings_source).
CeilingSet to_ceiling_set(const std::vector<store::CeilingRow>& rows, const std::string& source_file = "");

}  // namespace rtrace::analysis
