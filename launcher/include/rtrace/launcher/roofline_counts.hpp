// Does a point's data hold anything a roofline can place? (annotated regions
// with FLOPs or bytes, hardware FP counters, GPU kernel metrics). `--ert auto`
// and `quick` measure a partition's ceilings only for such points.
#pragma once

#include "rtrace/store/file.hpp"
#include "rtrace/store/run_file.hpp"

#include <string>

namespace rtrace::launcher {

struct RooflineCounts {
  bool any = false;
  std::string what;  // "annotated regions with FLOPs or bytes", "hardware counters", "GPU kernel metrics"
};

// One rank's records.
RooflineCounts roofline_counts(const store::RankRecords& rank);
// Every rNNNNNN of a ranks group (a committed point's /points/pNNNNNN/ranks).
RooflineCounts roofline_counts_in_ranks(const store::Group& ranks);
// The tracer's files in a point's scratch directory (ranks.h5, rank-*.h5),
// before they are committed. Unreadable files count as no counts.
RooflineCounts roofline_counts_in_trace_dir(const std::string& trace_dir);

}  // namespace rtrace::launcher
