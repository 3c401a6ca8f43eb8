#include "rtrace/analysis/report.hpp"
#include "text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace rtrace::analysis {
namespace {

using format::num;
using format::pad;
using format::wrap;




// "region triad", "kernel axpy", "application (whole program)", "function f".
std::string kernel_title(const KernelSeries& s) {
  if (s.kind == kApplicationKind) return "application (whole program, counted)";
  if (s.kind == kFunctionKind) return "function " + s.name + " (counted)";
  return (s.kind == "region" ? "region " : "kernel ") + s.name;
}

// No concurrency axis varies: what one configuration shows.
std::string single_point_text(const AnalysisResult& res) {
  std::ostringstream os;
  for (const auto& c : res.run.configs) {
    const auto& q = c.pop.pop;
    os << "\n" << (c.label.empty() ? std::string("configuration") : c.label) << ": time " << num(c.app_time_s) << " s";
    if (available(c.mpi_share)) os << ", MPI " << format::percent(c.mpi_share) << " of the window";
    if (available(q.load_balance)) os << ", load balance " << num(q.load_balance, 2);
    if (available(q.communication_efficiency)) os << ", comm. efficiency " << num(q.communication_efficiency, 2);
    if (available(q.cpu_per_wall)) os << ", CPU/wall " << num(q.cpu_per_wall, 3);
    os << "\n";
  }
  return os.str();
}

}  // namespace

std::string replayed_counts_note(const AnalysisResult& res, const KernelSeries& s) {
  const auto& configs = res.run.configs;
  std::string replayed;
  for (std::size_t ci = 0; ci < configs.size() && ci < s.at.size(); ++ci) {
    if (s.at[ci] < 0) continue;
    const std::string& pv = configs[ci].kernels[static_cast<std::size_t>(s.at[ci])].metrics_provenance;
    if (pv == "replayed outside the partition" || pv == "mixed")
      replayed += (replayed.empty() ? "" : ", ") +
                  (res.axis.empty() ? std::to_string(ci) : num(configs[ci].concurrency(res.axis), 6));
  }
  if (replayed.empty()) return "";
  return "counts at " + (res.axis.empty() ? std::string("point") : res.axis) + " " + replayed +
         " were replayed outside the SM partition (CUPTI could not profile inside it): FLOPs, instructions and L1 "
         "bytes are the kernel's own, but L2 and HBM bytes were measured with the whole GPU's SMs competing for L2 "
         "and may differ from the partitioned run's; times are the partitioned run's";
}

std::string describe_step(const StepDiagnosis& d) {
  std::string s = d.diagnosis;
  // The cache that overflowed, then the level whose intensity shows it.
  if (d.diagnosis == "cache-capacity" && !d.cache.empty() && !d.level.empty())
    s += " at " + d.cache + " (" + d.level +
         (d.intensity == "instructions" ? " bytes per instruction rise)" : " AI falls)");
  else if (d.diagnosis == "cache-capacity" && !d.cache.empty()) s += " at " + d.cache;
  else if (d.diagnosis == "cache-capacity" && !d.level.empty()) s += " at " + d.level;
  if (d.diagnosis == "bandwidth-contention" && !d.level.empty()) s += " on " + d.level;
  if (d.diagnosis == "other" && !d.cause.empty()) s += " (" + d.cause + ")";
  return s;
}

// Short label for the table column; the step lines carry the full words.
std::string short_step(const StepDiagnosis& d) {
  if (d.diagnosis == "cache-capacity") return "cache:" + (d.cache.empty() ? d.level : d.cache);
  if (d.diagnosis == "bandwidth-contention") return "bw:" + d.level;
  if (d.diagnosis == "compute-bound") return "compute";
  if (d.diagnosis == "other" && d.cause == "machine-load") return "busy machine";
  if (d.diagnosis == "other") return d.cause.empty() ? "other" : "other:" + d.cause.substr(0, d.cause.find('-'));
  return d.diagnosis;
}

std::string render_text(const AnalysisResult& res, int width) {
  std::ostringstream os;
  const auto& configs = res.run.configs;
  const std::string axis = res.axis.empty() ? "point" : res.axis;
  os << "rtrace analyze: " << res.run.path << "\n";
  os << "  " << configs.size() << " configurations from " << res.run.points_used << " of " << res.run.points_planned
     << " planned points; axis: " << (res.axis.empty() ? "none" : res.axis) << "; " << res.kernels.size()
     << " kernels/regions\n";
  for (const auto& w : res.warnings) os << wrap("warning: " + w, static_cast<std::size_t>(width), "  ");
  for (const auto& w : res.hints) os << wrap("hint: " + w, static_cast<std::size_t>(width), "  ");
  // An unannotated application: lead with the whole-application diagnosis.
  if (res.kernels.empty()) {
    for (const auto& sum : res.summaries) os << render_pop_text(res, sum, width);
    if (res.summaries.empty()) os << single_point_text(res);
    os << render_nodes_text(res, width);
    return os.str();
  }

  // Level names as this run's ceilings call them.
  std::string level_names[kLevelCount] = {"L1", "L2", "L3", "DRAM"};
  for (const auto& c : configs)
    for (MemLevel l : kAllLevels)
      if (const Ceiling* b = c.ceilings.bandwidth(l)) level_names[static_cast<int>(l)] = b->name;

  // Each row: axis(7) time(9) GFLOP/s(9) eta(5) bound(8) AI x4 (7 each) S(6) diagnosis(rest).
  const std::size_t used = 2 + 7 + 1 + 9 + 1 + 9 + 1 + 5 + 1 + 8 + 4 * 8 + 1 + 6 + 1;
  const std::size_t diag_w = static_cast<std::size_t>(width) > used + 8 ? static_cast<std::size_t>(width) - used : 8;

  int rank = 0;
  for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
    const auto& s = res.kernels[ki];
    os << "\n[" << ++rank << "] " << kernel_title(s) << "  " << num(100 * s.time_share, 3) << "% of time"
       << (s.counts_available ? "" : "  (no operation counts: time scaling only)") << "\n";
    // Where the counts come from, at every configuration that has them.
    {
      std::vector<std::string> sources;
      bool serialised = false;
      for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci) {
        if (s.at[ci] < 0) continue;
        const auto& k = configs[ci].kernels[s.at[ci]];
        serialised |= is_counted_kind(s.kind) && configs[ci].counts.serialised;
        if (!k.counts_source.empty() && std::find(sources.begin(), sources.end(), k.counts_source) == sources.end())
          sources.push_back(k.counts_source);
      }
      std::string line;
      for (const auto& src : sources) line += (line.empty() ? "counts: " : "; ") + src;
      if (serialised) line += " (threads run one at a time by the counting tool)";
      if (!s.counts_note.empty()) line += "; " + s.counts_note;  // other code counted, or no sampled time
      if (!line.empty()) os << wrap(line, static_cast<std::size_t>(width), "  ");
      if (!s.mix_sentence.empty()) os << wrap("FLOPs: " + s.mix_sentence, static_cast<std::size_t>(width), "  ");
    }
    // The bound column as wide as its longest ceiling name ("FP64 no-FMA"): never cut.
    // An unreliable one is marked "!" in its cell (issue 30), as the "! unreliable
    // ceiling" line below that names it and says why (the row stays within the width).
    auto bound_cell = [&](int ci) {
      const std::string& b = s.eval[ci].binding_ceiling;
      if (b.empty()) return std::string("-");
      return configs[ci].ceilings.unreliable(b) ? b + "!" : b;
    };
    std::vector<std::string> bounds;
    for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci)
      if (s.at[ci] >= 0) bounds.push_back(bound_cell(ci));
    const std::size_t bound_w = format::column_width(bounds, 8);
    os << "  " << pad(axis, 7) << " " << pad("time s", 9) << " " << pad("GFLOP/s", 9)
       << " " << pad("eta", 5) << " " << pad("bound", bound_w);
    for (const auto& ln : level_names) os << " " << pad("AI " + ln, 7);
    os << " " << pad("S", 6) << " " << pad("diagnosis", diag_w, false) << "\n";

    // Steps of this kernel's trajectories, by destination configuration.
    std::vector<const TrajectoryStep*> step_into(configs.size(), nullptr);
    std::vector<const Trajectory*> trajs;
    for (const auto& t : res.trajectories)
      if (t.kernel == ki) {
        trajs.push_back(&t);
        for (const auto& st : t.steps) step_into[st.to] = &st;
      }
    std::vector<int> order;
    for (const auto* t : trajs) order.insert(order.end(), t->configs.begin(), t->configs.end());
    for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci)
      if (s.at[ci] >= 0 && std::find(order.begin(), order.end(), ci) == order.end()) order.push_back(ci);
    for (int ci : order) {
      const auto& k = configs[ci].kernels[s.at[ci]];
      const auto& e = s.eval[ci];
      std::string where = res.axis.empty() ? std::to_string(ci) : num(configs[ci].concurrency(res.axis), 6);
      os << "  " << pad(where, 7) << " " << format::num_cell(k.time_s, 9) << " " << format::num_cell(e.gflops, 9) << " "
         << format::num_cell(e.efficiency, 5, 2) << " " << pad(bound_cell(ci), bound_w);
      // A level the counts do not see is n/a, never 0; one they saw move no byte is "0 B" (no AI).
      for (int i = 0; i < kLevelCount; ++i)
        os << " "
           << (e.counts_available() && k.counts.bytes[i] == 0 ? pad("0 B", 7)
                                                               : format::num_cell(e.ai[i], 7, 3, e.counts_available() ? "n/a" : "-"));
      const TrajectoryStep* st = step_into[ci];
      os << " " << pad(st ? num(st->d.speedup, 3) : "", 6) << " "
         << pad(st ? short_step(st->d) : "", diag_w, false) << "\n";
    }
    double spread = 0;
    for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci)
      if (s.at[ci] >= 0) spread = std::max(spread, configs[ci].kernels[s.at[ci]].time_spread);
    if (spread > 0) os << "  (repeats: median time; largest spread " << num(100 * spread, 2) << "%)\n";
    // Counts from outside the point's SM partition: say what that means.
    if (const std::string note = replayed_counts_note(res, s); !note.empty())
      os << wrap("  " + note, static_cast<std::size_t>(width), "    ");
    // Unreliable ceilings this kernel's roofline used at its points: never
    // silent, and not every point's whole list under every kernel (issue 39).
    for (int ci : order)
      for (const auto& c : configs[ci].ceilings.all()) {
        const RooflineEval& e = s.eval[static_cast<std::size_t>(ci)];
        MemLevel level{};
        const bool used = c.name == e.peak_name ||
                          (level_from_ceiling_name(c.name, level) && available(e.level_bound[static_cast<int>(level)]));
        if (c.unreliable && used)
          os << wrap("  ! unreliable ceiling at " + (res.axis.empty() ? std::to_string(ci)
                                                                      : num(configs[ci].concurrency(res.axis), 6)) +
                         ": " + c.name + (c.unreliable_reason.empty() ? "" : " (" + c.unreliable_reason + ")"),
                     static_cast<std::size_t>(width), "    ");
      }
    for (const auto* t : trajs) {
      for (const auto& st : t->steps) {
        const auto& f = st.d.factors;
        std::ostringstream line;
        line << axis << " " << num(st.c1, 6) << "->" << num(st.c2, 6) << ": " << describe_step(st.d)
             << "; S=" << num(st.d.speedup);
        if (!f.basis.empty())
          line << " = ceiling " << num(f.ceiling_ratio) << " x AI " << num(f.ai_ratio) << " x eff "
               << num(f.efficiency_ratio) << " [" << f.basis_ceiling << "]";
        if (st.d.diagnosis != "ideal") line << "; " << st.d.explanation;
        os << wrap(line.str(), static_cast<std::size_t>(width), "    ");
      }
    }
  }

  os << render_ceilings_used_text(res, width);
  if (!res.counted_work_notes.empty()) {
    os << "\nCounted work (what the counting pass saw besides the rooflines):\n";
    for (const auto& n : res.counted_work_notes) os << wrap(n, static_cast<std::size_t>(width), "  ");
  }
  if (!res.counts_notes.empty()) {
    // "Declared vs counted" only where something was declared (issue 39).
    if (res.declared_disagreements > 0)
      os << "\nDeclared vs counted (more than " << num(100 * kCountsDisagreement, 2) << "% apart):\n";
    else
      os << "\nHow the counts were taken:\n";
    for (const auto& n : res.counts_notes) os << wrap(n, static_cast<std::size_t>(width), "  ");
  }

  for (const auto& sum : res.summaries) os << render_pop_text(res, sum, width);
  os << render_nodes_text(res, width);
  return os.str();
}

std::string render_nodes_text(const AnalysisResult& res, int width) {
  constexpr std::size_t kListed = 8;  // hosts listed by name; with more, the slowest and the fastest
  std::ostringstream os;
  bool header = false;
  for (const auto& c : res.run.configs) {
    const auto& nodes = c.hosts.nodes;
    bool per_node_ceilings = false;
    for (const auto& x : c.ceilings.all()) per_node_ceilings |= !x.host.empty();
    if (nodes.size() < 2 && !per_node_ceilings) continue;
    if (!header) {
      os << "\nNodes (ranks by host; useful time per rank = MPI window minus MPI time, mean over the host's ranks):\n";
      header = true;
    }
    const std::string where = c.label.empty() ? std::string("configuration") : c.label;
    if (nodes.size() >= 2) {
      std::vector<const NodeUsage*> shown;
      for (const auto& n : nodes) shown.push_back(&n);
      if (shown.size() > kListed) {
        std::stable_sort(shown.begin(), shown.end(), [](const NodeUsage* a, const NodeUsage* b) {
          return a->useful_mean_s > b->useful_mean_s;
        });
        shown.erase(shown.begin() + kListed / 2, shown.end() - kListed / 2);
      }
      std::string line = where + ": " + std::to_string(nodes.size()) + " hosts:";
      for (std::size_t i = 0; i < shown.size(); ++i) {
        const NodeUsage& n = *shown[i];
        if (nodes.size() > kListed && i == kListed / 2) line += " ...;";
        line += " " + n.host + " [" + n.rank_list + "] " + num(n.useful_mean_s) + " s;";
      }
      line.pop_back();
      if (available(c.hosts.balance)) {
        line += "; node balance " + num(c.hosts.balance, 3);
        if (!c.hosts.slowest.empty() && available(c.hosts.slowest_over_others))
          line += ", slowest " + c.hosts.slowest + " (" + num(c.hosts.slowest_over_others, 3) + "x the others' mean)";
      }
      os << wrap(line, static_cast<std::size_t>(width), "    ");
    }
    if (per_node_ceilings) {
      std::string line = where + ": ceilings per node, each the slowest node's times the nodes:";
      for (const auto& x : c.ceilings.all())
        if (!x.host.empty()) line += " " + x.name + " " + x.host + ",";
      line.pop_back();
      os << wrap(line, static_cast<std::size_t>(width), "    ");
    }
  }
  return os.str();
}

std::string render_portability_text(const PortabilityResult& pp) {
  std::ostringstream os;
  os << "Performance portability (Phi = harmonic mean of architectural efficiencies)\n";
  for (std::size_t f = 0; f < pp.files.size(); ++f)
    os << "  platform " << f + 1 << ": " << pp.files[f] << " [" << pp.platforms[f] << "]\n";
  std::vector<std::string> names;
  for (const auto& k : pp.kernels) names.push_back(k.name);
  const std::size_t name_w = format::column_width(names, 32);
  os << "  " << pad("kernel", name_w, false) << " " << pad("Phi", 6);
  for (std::size_t f = 0; f < pp.files.size() && f < 6; ++f) os << " " << pad("eta" + std::to_string(f + 1), 6);
  os << "\n";
  for (const auto& k : pp.kernels) {
    os << "  " << pad(k.name, name_w, false) << " " << pad(num(k.phi, 3), 6);
    for (std::size_t f = 0; f < k.efficiency.size() && f < 6; ++f) os << " " << pad(num(k.efficiency[f], 3), 6);
    os << "\n";
    if (!k.note.empty()) os << wrap(k.note, 100, "    ");
  }
  if (!pp.missing.empty()) {
    std::string m = "not present in every file (no Phi): ";
    for (std::size_t i = 0; i < pp.missing.size(); ++i) m += (i ? ", " : "") + pp.missing[i];
    os << wrap(m, 100, "  ");
  }
  return os.str();
}

}  // namespace rtrace::analysis
