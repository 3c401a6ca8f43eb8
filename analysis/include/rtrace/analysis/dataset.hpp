// Reading a run file into per-configuration, per-kernel aggregates.
//
// A configuration is one sweep label (all repeats of it). Within a point the
// ranks are aggregated (counts summed, time of the slowest rank, imbalance
// max/mean - 1, MPI share); across repeats the median is taken and the spread
// of the time kept.
#pragma once

#include "rtrace/analysis/model.hpp"
#include "rtrace/analysis/pop.hpp"

#include <rtrace/store/run_file.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace rtrace::analysis {

// The concurrency axes a trajectory can follow.
inline constexpr const char* kConcurrencyAxes[] = {"threads", "ranks", "nodes", "sms"};
bool is_concurrency_axis(const std::string& axis) noexcept;

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
};

// Aggregates the ranks of one point. Pure: usable on records built in memory.
PointAggregate aggregate_ranks(const std::vector<store::RankRecords>& ranks);

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
  std::vector<std::pair<std::string, std::string>> tokens;  // the label's axis=value tokens

  int repeats() const noexcept { return static_cast<int>(point_ids.size()); }
  double sms() const noexcept;    // achieved if known, else requested; NaN if none
  // The value of a concurrency axis at this configuration (NaN when unset).
  double concurrency(const std::string& axis) const noexcept;
  const KernelAtPoint* find(const std::string& kind, const std::string& name) const noexcept;
};

// Combines the repeats of one label: medians, spread kept.
Configuration combine_repeats(const std::vector<store::SweepPointRow>& rows, const std::vector<PointAggregate>& points,
                              const CeilingSet& ceilings);

struct RunData {
  std::string path;
  std::vector<std::string> axes;          // swept axis names in order
  std::vector<Configuration> configs;     // in plan order
  std::vector<std::string> warnings;
  int points_planned = 0;
  int points_used = 0;
  int cores = 0;                          // the machine's cores (0 unknown)
  bool zip = false;                       // the sweep paired its axes (--zip)
  std::vector<std::string> point_problems;  // per unusable point: why (for "no complete points")
};

// Reads a run file. Throws InputError for unusable input (one line, with the path).
RunData load_run(const std::string& path);

CeilingSet to_ceiling_set(const std::vector<store::CeilingRow>& rows);

}  // namespace rtrace::analysis
