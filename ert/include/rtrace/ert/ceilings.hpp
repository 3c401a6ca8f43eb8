// From raw samples to ceilings (pure; see levels.hpp for the naming rules).
//
// Bandwidth: the bandwidth series gives one curve point per working set (its
// value is the median over repeats); plateaus are detected and named; for a
// named level, each repeat's ceiling is its best sample over the level's
// plateau points; a CeilingRow holds the median over repeats (`value`), the
// max and the min. Compute: for each precision/variant, the row's `value`
// is the upper median of every run over the high-intensity end (the largest
// F and the two F values below it) of all the repeats (spread over the run:
// make_cpu_plan), min and max the slowest and fastest repeat's own median.
// Repeats further apart than kFlopSpreadNoted get a note.
#pragma once

#include "rtrace/ert/levels.hpp"
#include "rtrace/ert/sweep.hpp"
#include "rtrace/store/records.hpp"

#include <string>
#include <vector>

namespace rtrace::ert {

struct CeilingAnalysis {
  std::vector<store::CeilingRow> ceilings;  // bandwidth levels (hierarchy order), then compute
  std::vector<CurvePoint> curve;            // the bandwidth curve (GB/s)
  std::vector<Plateau> plateaus;
  std::vector<std::string> notes;           // missing levels etc.
  // Per ceiling (same order as `ceilings`): how many repeats' best sample was
  // kept although disturbed (Sample::disturbed: the redo budget was spent).
  std::vector<int> disturbed_repeats;
};

inline constexpr double kFlopSpreadNoted = 0.12;  // the plateau tolerance (levels.hpp)

struct SpreadStats {
  double median = 0, max = 0, min = 0;
  int count = 0;
};
SpreadStats spread(const std::vector<double>& values);  // NaNs when empty

// One-worker reference samples (Sample::one_worker) are left out.
CeilingAnalysis derive_ceilings(const std::vector<Sample>& samples, const std::vector<MemoryLevel>& levels,
                                const PlateauOptions& options);

// The one-worker reference's ceilings, from the Sample::one_worker samples
// only: compute as derive_ceilings does; bandwidth per level of
// `one_worker_levels` (memory_levels(caches, 1)) from the working sets in
// the level's range (one per level: no plateau to detect). Empty when there
// are no reference samples.
std::vector<store::CeilingRow> one_worker_ceilings(const std::vector<Sample>& samples,
                                                   const std::vector<MemoryLevel>& one_worker_levels);

// The ceilings of a partition spread over `nodes` nodes from every node's own
// ceilings (rows with `host` set, each node measuring its slice): per
// ceiling name, the slowest node's row (lowest value; `host` names it) with
// value, min, max and level_bytes times `nodes`, since a bulk-synchronous
// partition runs at its slowest node's pace. A ceiling some node lacks is left
// out (a note says so in the caller); an unreliable slowest row stays unreliable.
std::vector<store::CeilingRow> slowest_node_ceilings(const std::vector<store::CeilingRow>& node_rows, int nodes);

// The F values whose samples count as "high intensity" for a compute ceiling.
std::vector<int> high_intensity_flops(const std::vector<int>& measured_flops);

}  // namespace rtrace::ert
