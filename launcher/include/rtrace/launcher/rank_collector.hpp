// Copies the tracer's per-rank groups from a point's scratch directory
// (ranks.h5 first, then rank-<rank>-<pid>.h5 files) into the point's ranks group.
#pragma once

#include "rtrace/store/file.hpp"
#include "rtrace/store/run_file.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace rtrace::launcher {

struct CollectedRanks {
  std::set<std::int64_t> ranks;   // ranks copied
  std::vector<std::string> log;   // duplicates dropped, unreadable files, missing ranks
};

// `expected_ranks`: ranks 0..n-1 that should be present (missing ones are logged).
// When several processes report one rank, the one with the largest wall_s is kept.
CollectedRanks collect_tracer_ranks(const std::string& trace_dir, store::Group& ranks_group, int expected_ranks);

// The same choice of groups (ranks.h5 first, then per process the longest
// lived), read into records: for the metrics run of an sms point, whose rows
// are merged into the partitioned run's ranks. Unreadable files are logged.
std::map<std::int64_t, store::RankRecords> read_tracer_ranks(const std::string& trace_dir,
                                                             std::vector<std::string>& log);

}  // namespace rtrace::launcher
