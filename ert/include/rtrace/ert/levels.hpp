// Bandwidth plateaus of a working-set sweep and their names.
//
// Pure functions (no measurement, no I/O) so they can be tested on synthetic
// curves. Two steps:
//  1. detect_plateaus() finds runs of points whose bandwidth is flat within a
//     tolerance, using only the curve (robust to single-point noise spikes,
//     missing levels and non-monotone curves);
//  2. name_levels() names plateaus from the machine's real topology: a
//     plateau is a level's when its points lie in that level's working-set
//     range (between the capacity of the level below and its own capacity, as
//     seen by the threads of this partition), never by its position.
#pragma once

#include "rtrace/store/records.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace rtrace::ert {

struct CurvePoint {
  double working_set_bytes = 0;  // total over all threads/ranks
  double value = 0;              // bandwidth (any unit), e.g. median over repeats
};

struct Plateau {
  std::size_t first = 0;  // index of the first point (curve sorted by working set)
  std::size_t last = 0;   // index of the last point, inclusive
  double value = 0;       // median of the points' values
  std::size_t size() const noexcept { return last - first + 1; }
};

struct PlateauOptions {
  double tolerance = 0.12;     // relative spread allowed inside a plateau
  std::size_t min_points = 3;  // fewer points make a transition, not a plateau
};

// Points must be sorted by working set. Returns plateaus in working-set order.
std::vector<Plateau> detect_plateaus(const std::vector<CurvePoint>& curve, const PlateauOptions& opt = {});

// A level of the memory hierarchy as seen by a partition.
struct MemoryLevel {
  std::string name;            // "L1d", "L2", "L3", "DRAM"
  double capacity_bytes = 0;   // total capacity usable by the partition; +inf for DRAM
  std::int64_t level_bytes = -1;  // one instance's size (CeilingRow::level_bytes); -1 for DRAM
  // The level's working-set range starts above this multiple of the level
  // below's capacity (level_range): 2 for a cache (points just past a
  // capacity are partly cached), at least 4 for DRAM, whose range must also
  // be past any cache the host may have beyond what a VM guest sees
  // (memory_levels).
  double range_starts_at = 2.0;
};

// Data-cache levels from the machine's caches (L1d, L2, L3, ... in depth
// order; instruction caches ignored), followed by DRAM. `pus_used` processing
// units run the partition, placed compactly (the way rtrace pins threads): a
// cache shared by `shared_by` PUs contributes min(ceil(pus/shared_by),
// instances) instances. DRAM's range starts at 4x the last cache's capacity;
// in a `virtual_machine` (cpu_runner.hpp running_in_virtual_machine()) whose
// guest sees one instance of its last cache for all the PUs used, at 4x one
// instance per PU used: the host may place each vCPU on its own cache, and a
// larger one than the guest sees. On the 2-vCPU EPYC VM of issue 32, told "L3
// 32 MiB, 1 instance", each vCPU alone streamed 96 MiB at 64 GB/s (128 MiB:
// 33, DRAM) and two at once 2 x 96 MiB at 64 GB/s each: 2 threads at 4x the
// guest's L3 measured "DRAM" 120-130 GB/s where DRAM gives 25-35.
std::vector<MemoryLevel> memory_levels(const std::vector<store::CacheRow>& caches, int pus_used,
                                       bool virtual_machine = false);

// The median of `values` (of an even number, the mean of the middle two);
// NaN when empty.
double median_of(std::vector<double> values);

// In a virtual machine DRAM's range may start before memory_levels() puts
// it: the sweep looks for it (DramSearch, sweep.hpp) from sqrt(2) x the
// last cache's capacity as the guest sees it. 0 outside a VM (the caches are the
// host's: ERT's 4x holds) or without a cache level.
double dram_search_earliest_bytes(const std::vector<MemoryLevel>& levels, bool virtual_machine);

// Moves DRAM's range to start just below `found_bytes` (DramSearch), never
// later than it already starts (a one-worker hierarchy's may start earlier).
void start_dram_range_at(std::vector<MemoryLevel>& levels, double found_bytes);

struct NamedLevel {
  std::string name;
  std::int64_t level_bytes = -1;
  std::size_t plateau = 0;             // index into the plateaus
  std::vector<std::size_t> points;     // curve indices (plateau ∩ the level's range)
};

struct LevelNaming {
  std::vector<NamedLevel> levels;      // in hierarchy order; only levels that were observed
  std::vector<std::string> notes;      // why a level is missing, ...
};

// The working-set range that belongs to level i of `levels`: above
// MemoryLevel::range_starts_at (2; DRAM 4) times the capacity of the level
// below, up to its own capacity.
struct LevelRange {
  double low = 0;
  double high = std::numeric_limits<double>::infinity();
};
LevelRange level_range(const std::vector<MemoryLevel>& levels, std::size_t i);

// Names plateaus: each level takes the plateau with the most points in its
// range (ties: the higher bandwidth); at least `min_points_in_level` points
// are needed. DRAM is never dropped: without a plateau it takes every point
// in its range (plateau index = plateaus.size()). One plateau may serve two levels when the curve is flat across
// both (their ceilings are then equal, which is what was measured).
LevelNaming name_levels(const std::vector<CurvePoint>& curve, const std::vector<Plateau>& plateaus,
                        const std::vector<MemoryLevel>& levels, std::size_t min_points_in_level = 2);

}  // namespace rtrace::ert
