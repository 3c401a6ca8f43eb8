// An ERT result and its three renderings: the HDF5 ERT file (rtrace::store,
// architecture.md "Launcher <-> ERT"), ERT-1.1.0-style roofline.json, and the
// human table.
#pragma once

#include "rtrace/ert/ceilings.hpp"
#include "rtrace/ert/sweep.hpp"
#include "rtrace/store/run_file.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rtrace::ert {

// An output path cannot be written; what() is one line naming the path.
class OutputError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ErtReport {
  std::string device = "cpu";     // "cpu" | "gpu"
  int threads = 0;                // threads per rank (CPU); 0 on a GPU
  int ranks = 1;
  int sms_requested = -1;
  int sms_achieved = -1;
  bool quick = false;
  std::string command_line;
  store::MachineInfo machine;
  std::vector<Sample> samples;
  CeilingAnalysis analysis;
  // The one-worker reference's ceilings (consistency.hpp), written as
  // /ert/one_worker_ceilings (schema 1.7); empty for a one-worker partition.
  std::vector<store::CeilingRow> one_worker;
  // --per-node: every node's own ceilings, `host` set (/ert/node_ceilings);
  // analysis.ceilings is then the slowest node's times the nodes.
  std::vector<store::CeilingRow> node_ceilings;
  double wall_seconds = 0;
  // Extra /ert attributes (strings and numbers): isa, pinning, clocks, ...
  std::vector<std::pair<std::string, std::string>> text_attributes;
  std::vector<std::pair<std::string, double>> number_attributes;
};

store::ErtSampleRow to_row(const Sample& s);

// Fails early (before a long run) when `path` cannot be created: its
// directory is missing or not writable, or it is a directory.
void check_output_writable(const std::string& path, const char* what);

// Writes the ERT file at `path` via a temporary sibling + fsync + rename, so
// an interrupted run never leaves a partial file under the final name.
void write_ert_file(const std::string& path, const ErtReport& report);

// ERT 1.1.0 roofline.json layout: empirical.gflops.data = [["FP64 FMA", v], ...],
// empirical.gbytes.data = [["L1d", v], ..., ["DRAM", v]] plus metadata; the
// full ceilings (median/min/max) under "rtrace".
nlohmann::json roofline_json(const ErtReport& report);
void write_text_file(const std::string& path, const std::string& text);  // temp + rename

std::string format_summary(const ErtReport& report);

}  // namespace rtrace::ert
