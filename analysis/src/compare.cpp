// `rtrace analyze A.h5 B.h5 ...`: runs side by side per configuration.
#include "rtrace/analysis/compare.hpp"
#include "text_format.hpp"

#include <rtrace/store/run_file.hpp>

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace rtrace::analysis {
namespace {

using format::plain_or_dash;
using format::pad;
using format::pct1;
using format::json_num;

using nlohmann::json;


// The summary point and the step that ends at configuration ci, if any.
void find_point(const AnalysisResult& r, int ci, ComparedPoint& out) {
  for (const auto& sum : r.summaries)
    for (std::size_t i = 0; i < sum.points.size(); ++i) {
      if (sum.points[i].config != ci) continue;
      const auto& p = sum.points[i];
      out.time_s = p.time_s;  // the MPI window for MPI apps, as in the summary
      out.efficiency = p.efficiency;
      out.parallel_efficiency = p.pop.parallel_efficiency;
      out.global_efficiency = p.pop.global_efficiency;
      out.load_balance = p.pop.load_balance;
      for (const auto& st : sum.steps)
        if (st.to == static_cast<int>(i)) out.step = st.diagnosis == "loss" ? st.cause : st.diagnosis;
      return;
    }
}

}  // namespace

CompareResult compare_runs(const std::vector<AnalysisResult>& runs) {
  CompareResult out;
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const auto& r : runs) {
    out.files.push_back(r.run.path);
    for (const auto& c : r.run.configs)
      if (seen.insert(c.label).second) order.push_back(c.label);
  }
  for (const auto& label : order) {
    ComparedConfig row;
    row.label = label;
    for (const auto& r : runs) {
      ComparedPoint p;
      for (int ci = 0; ci < static_cast<int>(r.run.configs.size()); ++ci) {
        const auto& c = r.run.configs[static_cast<std::size_t>(ci)];
        if (c.label != label) continue;
        p.present = true;
        p.time_s = c.app_time_s;
        p.spread = c.repeats() > 1 ? c.pop.wall_spread : 0;
        p.mpi_share = c.mpi_share;
        if (!available(p.parallel_efficiency)) p.parallel_efficiency = c.pop.pop.parallel_efficiency;
        find_point(r, ci, p);
        break;
      }
      row.runs.push_back(p);
    }
    const double base = row.runs.front().time_s;
    for (auto& p : row.runs) p.time_change = available(base) && base > 0 ? p.time_s / base - 1 : kNaN;
    out.configs.push_back(std::move(row));
  }
  // Configurations pair up by label ("threads=2"): runs over other axes share none.
  auto axis_words = [](const AnalysisResult& r) { return r.axis.empty() ? std::string("no axis") : "`" + r.axis + "`"; };
  for (std::size_t f = 1; f < runs.size(); ++f)
    if (runs[f].axis != runs[0].axis)
      out.notes.push_back("run " + std::to_string(f + 1) + " sweeps " + axis_words(runs[f]) + ", run 1 sweeps " +
                          axis_words(runs[0]) + ": their configurations cannot pair up");
  bool shared = false;
  for (const auto& row : out.configs) {
    int present = 0;
    for (const auto& p : row.runs) present += p.present;
    shared |= present >= 2;
  }
  if (!shared)
    out.notes.push_back("no configuration is in two runs: nothing to compare (compare runs of the same sweep, e.g. "
                        "before and after a change)");
  return out;
}

std::string render_compare_text(const CompareResult& cmp) {
  std::ostringstream os;
  os << "rtrace analyze: " << cmp.files.size() << " runs side by side (change: time against run 1)\n";
  for (std::size_t f = 0; f < cmp.files.size(); ++f) os << "  run " << f + 1 << ": " << cmp.files[f] << "\n";
  for (const auto& n : cmp.notes) os << "  note: " << n << "\n";
  for (const auto& row : cmp.configs) {
    os << "\n" << (row.label.empty() ? "(no label)" : row.label) << "\n";
    os << "  " << pad("run", 4) << " " << pad("time s", 9) << " " << pad("change", 8) << " " << pad("spread", 7) << " "
       << pad("eff", 6) << " " << pad("LB", 5) << " " << pad("PE", 5) << " " << pad("GE", 5) << " " << pad("MPI %", 6)
       << "  step\n";
    for (std::size_t f = 0; f < row.runs.size(); ++f) {
      const auto& p = row.runs[f];
      if (!p.present) {
        os << "  " << pad(std::to_string(f + 1), 4) << "  (not in this run)\n";
        continue;
      }
      std::string change = f == 0 ? "" : (available(p.time_change) ? (p.time_change >= 0 ? "+" : "") +
                                                                          plain_or_dash(100 * p.time_change, 3) + "%"
                                                                    : "-");
      os << "  " << pad(std::to_string(f + 1), 4) << " " << pad(plain_or_dash(p.time_s), 9) << " " << pad(change, 8) << " "
         << pad(p.spread > 0 ? plain_or_dash(100 * p.spread, 2) + "%" : "-", 7) << " "
         << pad(available(p.efficiency) ? plain_or_dash(100 * p.efficiency, 3) + "%" : "-", 6) << " "
         << pad(plain_or_dash(p.load_balance, 2), 5) << " " << pad(plain_or_dash(p.parallel_efficiency, 2), 5) << " "
         << pad(plain_or_dash(p.global_efficiency, 2), 5) << " "
         << pad(available(p.mpi_share) ? pct1(100 * p.mpi_share) : "-", 6) << "  " << p.step << "\n";
      // A change within either run's spread is not a difference.
      const auto& b = row.runs.front();
      if (f > 0 && available(p.time_change) && (p.spread > 0 || b.spread > 0) &&
          std::fabs(std::log1p(p.time_change)) <= std::log1p(std::max(p.spread, b.spread)))
        os << "       (within the repeats' spread: noise)\n";
    }
  }
  return os.str();
}

json to_json(const CompareResult& cmp) {
  json doc;
  doc["schema"] = "rtrace-analysis";
  doc["schema_version"] = kAnalysisSchemaVersion;
  doc["kind"] = "comparison";
  doc["rtrace_version"] = store::rtrace_version();
  json rows = json::array();
  for (const auto& row : cmp.configs) {
    json runs = json::array();
    for (const auto& p : row.runs)
      runs.push_back({{"present", p.present},
                      {"time", {{"value", json_num(p.time_s)}, {"unit", "s"}}},
                      {"time_change", json_num(p.time_change)},
                      {"spread", json_num(p.spread)},
                      {"efficiency", json_num(p.efficiency)},
                      {"load_balance", json_num(p.load_balance)},
                      {"parallel_efficiency", json_num(p.parallel_efficiency)},
                      {"global_efficiency", json_num(p.global_efficiency)},
                      {"mpi_share", json_num(p.mpi_share)},
                      {"step", p.step.empty() ? json(nullptr) : json(p.step)}});
    rows.push_back({{"label", row.label}, {"runs", runs}});
  }
  doc["comparison"] = {{"files", cmp.files}, {"notes", cmp.notes}, {"configurations", rows}};
  return doc;
}

}  // namespace rtrace::analysis
