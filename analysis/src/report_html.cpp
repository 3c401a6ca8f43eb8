// One self-contained HTML report: inline CSS and SVG, no external resources.
#include "rtrace/analysis/report.hpp"
#include "text_format.hpp"

#include <rtrace/store/run_file.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace rtrace::analysis {
namespace {

using format::html_num;


const char* badge_class(const std::string& diagnosis) {
  if (diagnosis == "ideal" || diagnosis == "superlinear") return "good";
  if (diagnosis == "other" || diagnosis == "work-changed" || diagnosis == "code-differs") return "warn";  // no verdict
  return "bad";
}

const char* kStyle = R"(
body{font-family:"DejaVu Sans",Arial,Helvetica,sans-serif;margin:24px 32px;color:#1a1a1a;max-width:1300px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:19px;margin-top:34px;border-bottom:2px solid #ddd;padding-bottom:4px}
h3{font-size:16px;margin:22px 0 6px}.meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px;margin:8px 0 14px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f1f3f6}td.l,th.l{text-align:left}
.badge{display:inline-block;border-radius:4px;padding:1px 7px;font-size:12px;color:#fff}
.good{background:#2a8f3a}.bad{background:#c0392b}.warn{background:#d68910}
.summary{background:#f6f8fb;border-left:4px solid #3a6ea5;padding:10px 16px;font-size:15px;line-height:1.5}
.warning{color:#8a5a00;font-size:13px}.chart{margin:10px 0 20px;overflow-x:auto}.unreliable{color:#a00}
)";

// The distinct sources of a kernel's counts over the configurations ("" when none).
std::string sources_of(const AnalysisResult& res, const KernelSeries& s) {
  std::string out;
  std::vector<std::string> seen;
  for (std::size_t ci = 0; ci < res.run.configs.size(); ++ci) {
    if (s.at[ci] < 0) continue;
    const std::string& src = res.run.configs[ci].kernels[static_cast<std::size_t>(s.at[ci])].counts_source;
    if (src.empty() || std::find(seen.begin(), seen.end(), src) != seen.end()) continue;
    seen.push_back(src);
    out += (out.empty() ? "" : "; ") + src;
  }
  return out;
}

// A binding ceiling's name; one the ERT marked unreliable says so, with its reason as the tooltip.
std::string bound_html(const CeilingSet& set, const std::string& name) {
  if (!set.unreliable(name)) return xml_escape(name);
  std::string why;
  for (const auto& c : set.all())
    if (c.name == name) why = c.unreliable_reason;
  return xml_escape(name) + " <span class=\"unreliable\" title=\"" + xml_escape(why) + "\">(unreliable)</span>";
}

}  // namespace

std::string render_html(const AnalysisResult& res, const std::vector<SvgChart>& charts) {
  const auto& configs = res.run.configs;
  std::ostringstream h;
  auto chart = [&](const std::string& prefix) {
    for (const auto& c : charts)
      if (c.file.compare(0, prefix.size(), prefix) == 0)
        h << "<div class=\"chart\" title=\"" << xml_escape(c.title) << "\">" << c.svg << "</div>\n";
  };
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rtrace analysis: " << xml_escape(res.run.path)
    << "</title><style>" << kStyle << "</style></head><body>\n";
  h << "<h1>rtrace scaling analysis</h1>\n<div class=\"meta\">" << xml_escape(res.run.path) << " &middot; "
    << configs.size() << " configurations from " << res.run.points_used << " of " << res.run.points_planned
    << " planned points &middot; axis: " << (res.axis.empty() ? "none" : xml_escape(res.axis)) << " &middot; "
    << res.kernels.size() << " kernels/regions &middot; rtrace " << store::rtrace_version() << "</div>\n";
  for (const auto& w : res.warnings) h << "<p class=\"warning\">warning: " << xml_escape(w) << "</p>\n";

  h << "<h2>Diagnosis</h2>\n";
  if (res.summaries.empty()) h << "<div class=\"summary\">No concurrency axis varies: single-point roofline only.</div>\n";
  for (std::size_t i = 0; i < res.summaries.size(); ++i) {
    const auto& sum = res.summaries[i];
    h << "<div class=\"summary\">";
    if (!sum.fixed.empty()) h << "<b>" << xml_escape(sum.fixed) << "</b><br>";
    for (const auto& s : sum.sentences) h << xml_escape(s) << "<br>\n";
    h << "</div>\n";
    // The account of each losing step: the same numbers as its sentence (loss_account.hpp).
    for (const auto& acc : sum.accounts) {
      if (acc.causes.empty() || !(acc.lost_s > res.thresholds.ideal_tolerance * acc.t2)) continue;
      h << "<table class=\"account\"><tr><th class=\"l\">" << xml_escape(res.axis) << " " << html_num(acc.c1) << "&rarr;"
        << html_num(acc.c2) << ": cause of the lost time</th><th>seconds</th><th>share</th>"
        << "<th class=\"l\">where (functions)</th></tr>\n";
      for (const auto& c : acc.causes) {
        std::string where;
        for (std::size_t i = 0; i < c.functions.size() && i < 3; ++i) where += (i ? ", " : "") + c.functions[i];
        h << "<tr><td class=\"l\">" << (c.label() == acc.headline ? "<b>" + xml_escape(c.label()) + "</b>" : xml_escape(c.label()))
          << "</td><td>" << html_num(c.seconds) << "</td><td>" << html_num(100 * c.share) << "%</td><td class=\"l\">"
          << xml_escape(where) << "</td></tr>\n";
      }
      h << "</table>\n";
    }
    h << render_pop_html(res, sum);
    chart("scaling-" + std::to_string(i + 1) + ".svg");
    chart("efficiency-" + std::to_string(i + 1) + ".svg");
  }
  for (const auto& w : res.hints) h << "<p class=\"warning\">hint: " << xml_escape(w) << "</p>\n";

  // Sections with nothing to show are left out (an unannotated app has no kernels, rooflines or trajectories).
  if (!res.kernels.empty()) {
  h << "<h2>Kernels by time share</h2>\n<table><tr><th class=\"l\">kernel</th><th class=\"l\">kind</th>"
    << "<th>time share</th><th>points</th><th>GFLOP/s (last)</th><th>&eta; (last)</th><th class=\"l\">bound (last)</th>"
    << "<th class=\"l\">diagnosis per step</th><th class=\"l\">counts</th></tr>\n";
  for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
    const auto& s = res.kernels[ki];
    int last = -1, npts = 0;
    for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci)
      if (s.at[ci] >= 0) { last = ci; ++npts; }
    h << "<tr><td class=\"l\"><a href=\"#k" << ki << "\">" << xml_escape(s.name) << "</a></td><td class=\"l\">" << xml_escape(s.kind)
      << "</td><td>" << format::percent(s.time_share, "&ndash;") << "</td><td>" << npts << "</td><td>"
      << (last >= 0 ? html_num(s.eval[last].gflops) : "&ndash;") << "</td><td>"
      << (last >= 0 ? html_num(s.eval[last].efficiency, 2) : "&ndash;") << "</td><td class=\"l\">"
      << (last >= 0 ? bound_html(configs[last].ceilings, s.eval[last].binding_ceiling) : "") << "</td><td class=\"l\">";
    for (const auto& t : res.trajectories)
      if (t.kernel == ki)
        for (const auto& st : t.steps)
          h << "<span class=\"badge " << badge_class(st.d.diagnosis) << "\">" << xml_escape(describe_step(st.d))
            << "</span> ";
    h << "</td><td class=\"l\">" << xml_escape(sources_of(res, s)) << "</td></tr>\n";
  }
  h << "</table>\n";
  if (!res.counted_work_notes.empty()) {
    h << "<h3>Counted work</h3>\n";
    for (const auto& n : res.counted_work_notes) h << "<p class=\"warning\">" << xml_escape(n) << "</p>\n";
  }
  if (!res.counts_notes.empty()) {
    h << (res.declared_disagreements > 0 ? "<h3>Declared vs counted</h3>\n" : "<h3>How the counts were taken</h3>\n");
    for (const auto& n : res.counts_notes) h << "<p class=\"warning\">" << xml_escape(n) << "</p>\n";
  }

  h << "<h2>Per-kernel trajectories</h2>\n";
  for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
    const auto& s = res.kernels[ki];
    h << "<h3 id=\"k" << ki << "\">" << xml_escape(s.name) << " <span class=\"meta\">(" << xml_escape(s.kind) << ", "
      << format::percent(s.time_share, "&ndash;") << " of time" << (s.counts_available ? "" : ", no operation counts")
      << (sources_of(res, s).empty() ? "" : ", counts: " + xml_escape(sources_of(res, s))) << ")</span></h3>\n";
    if (!s.mix_sentence.empty()) h << "<p class=\"meta\">FLOPs: " << xml_escape(s.mix_sentence) << "</p>\n";
    if (!s.counts_note.empty()) h << "<p class=\"warning\">" << xml_escape(s.counts_note) << "</p>\n";
    h << "<table><tr><th>" << (res.axis.empty() ? "config" : xml_escape(res.axis)) << "</th><th>time (s)</th><th>spread</th>"
      << "<th>imbalance</th><th>GFLOP/s</th><th>AI L1</th><th>AI L2</th><th>AI L3</th><th>AI DRAM</th>"
      << "<th>roof (GFLOP/s)</th><th>&eta;</th><th class=\"l\">bound by</th></tr>\n";
    for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci) {
      if (s.at[ci] < 0) continue;
      const auto& k = configs[ci].kernels[s.at[ci]];
      const auto& e = s.eval[ci];
      h << "<tr><td>" << (res.axis.empty() ? std::to_string(ci) : html_num(configs[ci].concurrency(res.axis), 6))
        << "</td><td>" << html_num(k.time_s) << "</td><td>" << (k.repeats > 1 ? html_num(100 * k.time_spread, 2) + "%" : "&ndash;")
        << "</td><td>" << html_num(k.imbalance, 2) << "</td><td>" << html_num(e.gflops) << "</td>";
      for (int i = 0; i < kLevelCount; ++i) {
        const double a = e.ai[static_cast<std::size_t>(i)];
        // n/a: the source cannot see the level; 0 B: it saw no byte move there.
        h << "<td>"
          << (e.counts_available() && k.counts.bytes[static_cast<std::size_t>(i)] == 0 ? std::string("0 B")
              : available(a) || !e.counts_available()                                   ? html_num(a)
                                                                                         : std::string("n/a"))
          << "</td>";
      }
      h << "<td>" << html_num(e.bound_gflops) << "</td><td>" << html_num(e.efficiency, 2) << "</td><td class=\"l\">"
        << bound_html(configs[ci].ceilings, e.binding_ceiling) << "</td></tr>\n";
    }
    h << "</table>\n";
    if (const std::string note = replayed_counts_note(res, s); !note.empty())
      h << "<p class=\"warning\">" << xml_escape(note) << "</p>\n";
    int ti = 0;
    for (const auto& t : res.trajectories) {
      ++ti;
      if (t.kernel != ki) continue;
      h << "<table><tr><th>step</th><th>speedup</th><th>ceiling &times;</th><th>AI &times;</th>"
        << "<th>&eta; &times;</th><th class=\"l\">basis</th><th class=\"l\">diagnosis</th><th class=\"l\">evidence</th></tr>\n";
      for (const auto& st : t.steps) {
        const auto& f = st.d.factors;
        h << "<tr><td>" << html_num(st.c1, 6) << "&rarr;" << html_num(st.c2, 6) << "</td><td>" << html_num(st.d.speedup) << "</td><td>"
          << html_num(f.ceiling_ratio) << "</td><td>" << html_num(f.ai_ratio) << "</td><td>" << html_num(f.efficiency_ratio)
          << "</td><td class=\"l\">" << xml_escape(f.basis_ceiling) << "</td><td class=\"l\"><span class=\"badge "
          << badge_class(st.d.diagnosis) << "\">" << xml_escape(describe_step(st.d)) << "</span></td><td class=\"l\">"
          << xml_escape(st.d.explanation) << "</td></tr>\n";
      }
      h << "</table>\n";
      char idx[16];
      std::snprintf(idx, sizeof idx, "%03d", ti);
      chart("trajectory-" + std::string(idx) + "-");
    }
  }

  }  // kernels

  bool any_roofline = false;
  for (const auto& c : charts)
    any_roofline |= c.file.compare(0, 9, "roofline-") == 0 || c.file.compare(0, 12, "instruction-") == 0;
  h << render_ceilings_used_html(res);
  if (any_roofline) h << "<h2>Rooflines per configuration</h2>\n";
  for (int ci = 0; ci < static_cast<int>(configs.size()) && any_roofline; ++ci) {
    char name[32];
    std::snprintf(name, sizeof name, "roofline-c%03d.svg", ci);
    chart(name);
    std::snprintf(name, sizeof name, "instruction-c%03d.svg", ci);
    chart(name);
  }

  if (res.profile.available) {  // sampled call paths (profile.cpp)
    h << "<h2>Where the time goes (sampled call stacks)</h2>\n";
    for (const auto& g : res.profile.groups)
      if (!g.sentence.empty()) h << "<div class=\"summary\">" << xml_escape(g.sentence) << "</div>\n";
    chart("scaling-by-function");
    // The chart's legend shortens long names: here they are in full.
    const auto& p = res.profile;
    if (!p.functions.empty()) {
      h << "<table class=\"functions\"><tr><th class=\"l\">function (in full)</th><th class=\"l\">category</th>";
      for (const auto& c : configs) h << "<th>" << xml_escape(c.label) << " (s)</th>";
      h << "</tr>\n";
      for (int fi : p.shown) {  // the chart's functions, those the sentences name among them
        const auto& f = p.functions[static_cast<std::size_t>(fi)];
        h << "<tr><td class=\"l\">" << xml_escape(f.name) << "</td><td class=\"l\">" << xml_escape(f.category) << "</td>";
        for (std::size_t ci = 0; ci < configs.size(); ++ci)
          h << "<td>" << (ci < f.at.size() ? html_num(f.at[ci].time_s) : "&ndash;") << "</td>";
        h << "</tr>\n";
      }
      h << "</table>\n<p class=\"meta\">Critical-path time per configuration: the critical thread of the critical rank "
           "(sampled CPU time).</p>\n";
    }
    chart("flame-c");
  }

  const auto& th = res.thresholds;
  h << "<h2>Thresholds</h2>\n<table><tr><th class=\"l\">threshold</th><th>value</th></tr>\n"
    << "<tr><td class=\"l\">ideal tolerance (step efficiency &ge; 1 &minus; tol)</td><td>" << html_num(th.ideal_tolerance) << "</td></tr>\n"
    << "<tr><td class=\"l\">superlinear margin</td><td>" << html_num(th.superlinear_margin) << "</td></tr>\n"
    << "<tr><td class=\"l\">AI drop &tau; (cache capacity)</td><td>" << html_num(th.ai_drop) << "</td></tr>\n"
    << "<tr><td class=\"l\">on-ceiling efficiency</td><td>" << html_num(th.on_ceiling) << "</td></tr>\n"
    << "<tr><td class=\"l\">minimum explained slowdown for a cause</td><td>" << html_num(th.cause_min) << "</td></tr>\n"
    << "<tr><td class=\"l\">launch floor (s)</td><td>" << html_num(th.launch_floor_s) << "</td></tr>\n"
    << "<tr><td class=\"l\">tail efficiency</td><td>" << html_num(th.tail_efficiency) << "</td></tr>\n"
    << "<tr><td class=\"l\">MPI share rise</td><td>" << html_num(th.mpi_share_rise) << "</td></tr>\n"
    << "<tr><td class=\"l\">machine load (share of a point's cores taken by others)</td><td>"
    << html_num(th.load_share) << "</td></tr>\n"
    << "<tr><td class=\"l\">work change (counted FLOPs between points: no verdict)</td><td>" << html_num(th.work_change)
    << "</td></tr>\n"
    << "<tr><td class=\"l\">headline share (of a step's lost seconds, for its headline cause)</td><td>"
    << html_num(th.headline_share) << "</td></tr>\n</table>\n";
  h << "</body></html>\n";
  return h.str();
}

}  // namespace rtrace::analysis
