// Runs side by side per configuration (before/after an optimisation, two machines).
#pragma once

#include "rtrace/analysis/analyze.hpp"
#include "rtrace/analysis/report.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace rtrace::analysis {

struct ComparedPoint {
  bool present = false;
  double time_s = kNaN, time_change = kNaN;   // change: time / time in run 1 - 1
  double spread = 0;
  double efficiency = kNaN, load_balance = kNaN, parallel_efficiency = kNaN, global_efficiency = kNaN;
  double mpi_share = kNaN;
  std::string step;                            // the cause (or ideal/noise/superlinear) of the step into it
};
struct ComparedConfig {
  std::string label;
  std::vector<ComparedPoint> runs;             // one per file
};
struct CompareResult {
  std::vector<std::string> files;
  std::vector<ComparedConfig> configs;         // union of labels, in first-seen order
  std::vector<std::string> notes;              // why runs do not pair up, when they do not
};

CompareResult compare_runs(const std::vector<AnalysisResult>& runs);
std::string render_compare_text(const CompareResult& cmp);
nlohmann::json to_json(const CompareResult& cmp);

}  // namespace rtrace::analysis
