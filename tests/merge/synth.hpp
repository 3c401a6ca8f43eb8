// Synthetic rtrace files for the merge tests and bench/merge_scale.sh:
// run files of a threads sweep with chosen points committed, and trace files
// holding rank groups, all written through rtrace::store like the real tools.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rtrace::synth {

struct RunSpec {
  int points = 4;                       // plan: threads=1..points
  std::vector<int> complete;            // point ids committed in this file
  std::vector<int> failed;              // of those, committed with status "failed"
  std::vector<std::string> app_argv = {"./app", "--size", "64"};
  std::string sweep_spec;               // default "threads=1..<points>"
  int ranks_per_point = 2;              // rank groups written per committed point
  // A ranks sweep instead (bench/ingest_scale.sh): point i has ranks[i] ranks
  // (its plan row and label); the rank groups come from `rtrace merge --point`.
  std::vector<int> ranks_axis;
};
// Writes a run file (the launcher's layout) at `path`, replacing any file there.
void write_run(const std::string& path, const RunSpec& spec);

struct RankSpec {
  int regions = 8;
  int mpi_functions = 6;
  int kernels = 0;
  int memcpys = 0;
  bool complete = true;
};
// Writes a trace file with one /ranks/rNNNNNN group per rank in `ranks`.
void write_trace(const std::string& path, const std::vector<std::int64_t>& ranks, const RankSpec& spec);

}  // namespace rtrace::synth
