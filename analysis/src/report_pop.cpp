// Renderings of the whole-application diagnosis: the POP table, the steps'
// causes, startup/teardown, the repeat spread and the per-call MPI breakdown.
#include "rtrace/analysis/report.hpp"
#include "rtrace/analysis/output_guard.hpp"
#include "mpi_names.hpp"
#include "text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace rtrace::analysis {
namespace {

using format::num;
using format::fixed2;
using format::pct1;
using format::pad;
using format::wrap;
using format::json_num;
using format::csv_num;
using format::csv_field;

using nlohmann::json;

std::string h(double v, int p = 3) {
  std::string s = num(v, p);
  return s == "-" ? "&ndash;" : s;
}

// The step that ends at point i of the summary, nullptr for the first point.
const AppStep* step_into(const AppSummary& sum, std::size_t i) {
  for (const auto& st : sum.steps)
    if (st.to == static_cast<int>(i)) return &st;
  return nullptr;
}
// The step column: the first cause, "+N" for the others (the sentences list them all).
std::string step_label(const AppStep* st) {
  if (!st) return "";
  if (st->diagnosis != "loss" && st->diagnosis != "offsetting") return st->diagnosis;
  std::string label = st->diagnosis == "offsetting" ? "offsetting: " + st->cause : st->cause;
  // "+1" read as a number in the cell (issue 39): a mark, explained under the table.
  if (st->causes.size() > 1) label += "*";
  return label;
}

// What the useful time of a summary's points is, in words (text and HTML).
std::string basis_words(const AppSummary& sum) {
  std::string basis, thread;
  for (const auto& p : sum.points) {
    if (basis.empty()) basis = p.pop.basis;
    if (thread.empty()) thread = p.pop.thread_basis;
  }
  const std::string thread_time =
      thread == "sampled"    ? "CPU time less the sampled waits in the OpenMP/MPI runtimes (thread basis sampled)"
      : thread == "cpu-time" ? "CPU time less MPI time (thread basis cpu-time: no samples; a thread spinning in "
                               "a runtime counts as useful)"
                             : "";
  if (basis == "mpi" && thread.empty())
    return "useful time per rank = MPI window - MPI time; PE = LB x CommE; CS from the ranks' useful time";
  if (basis == "mpi")
    return "useful time per rank = MPI window - MPI time; thread level TE = useful thread time / (threads x useful "
           "rank time), useful thread time = " + thread_time + "; PE = LB x CommE x TE; CS from the useful thread time";
  if (basis == "cpu-time")
    return "no MPI: PE = useful thread time / (wall x threads), useful thread time = " +
           (thread_time.empty() ? std::string("CPU time") : thread_time) +
           "; CS from the useful thread time; LB and CommE need MPI ranks";
  return "";
}

// The node's load besides the app per point (launcher, from outside), "" when never measured.
std::string load_line(const AppSummary& sum, const std::string& axis) {
  if (std::none_of(sum.points.begin(), sum.points.end(), [](const AppPoint& p) { return p.pop.load_measured; }))
    return "";
  std::string line = "machine load besides the app (other processes' share of the point's cores, from /proc/stat "
                     "less the app's process tree):";
  for (const auto& p : sum.points) {
    line += " " + num(p.concurrency, 6) + ": ";
    if (!p.pop.load_measured) {
      line += "not measured;";
      continue;
    }
    line += num(100 * p.pop.other_share, 2) + "%";
    if (available(p.pop.steal_share) && p.pop.steal_share >= 0.005) line += " + steal " + num(100 * p.pop.steal_share, 2) + "%";
    if (available(p.pop.load_average)) line += " (load avg " + fixed2(p.pop.load_average) + ")";
    line += ";";
  }
  line.pop_back();
  (void)axis;
  return line;
}

// rtrace's own share of each point's time, "" when no point recorded it.
std::string tracer_line(const AppSummary& sum) {
  if (std::none_of(sum.points.begin(), sum.points.end(), [](const AppPoint& p) { return available(p.pop.tracer_share); }))
    return "";
  std::string line = "rtrace's own work (its MPI wrappers, sampler, code and end-of-run records; taken out of the "
                     "window and the useful time), share of the ranks' time:";
  for (const auto& p : sum.points)
    line += " " + num(p.concurrency, 6) + ": " +
            (available(p.pop.tracer_share) ? num(100 * p.pop.tracer_share, 2) + "%;" : std::string("not recorded;"));
  line.pop_back();
  return line;
}

bool any_thread_level(const AppSummary& sum) {
  return std::any_of(sum.points.begin(), sum.points.end(), [](const AppPoint& p) {
    return p.pop.basis == "mpi" && !p.pop.thread_basis.empty();
  });
}

// Heat colour of an efficiency: red (<= 0.5) through amber to green (>= 0.95).
std::string heat(double e) {
  if (!available(e)) return "#ffffff";
  double t = std::clamp((e - 0.5) / 0.45, 0.0, 1.0);
  int r = static_cast<int>(230 - t * (230 - 120)), g = static_cast<int>(120 + t * (200 - 120)), b = 110;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

}  // namespace

json pop_json(const PopPoint& p) {
  json load = json{{"measured", p.load_measured},
                   {"other_share", json_num(p.other_share)},
                   {"steal_share", json_num(p.steal_share)},
                   {"taken_share", json_num(p.taken_share)},
                   {"other_cpu", {{"value", json_num(p.other_cpu_s)}, {"unit", "s"}}},
                   {"load_average", json_num(p.load_average)},
                   {"cpus", p.load_cpus}};
  return json{{"basis", p.basis.empty() ? json(nullptr) : json(p.basis)},
              {"thread_basis", p.thread_basis.empty() ? json(nullptr) : json(p.thread_basis)},
              {"thread_efficiency", json_num(p.thread_efficiency)},
              {"sampled_wait_share", json_num(p.sampled_wait_share)},
              {"working_threads", p.working_threads >= 0 ? json(p.working_threads) : json(nullptr)},
              {"sampled_threads", p.sampled_threads >= 0 ? json(p.sampled_threads) : json(nullptr)},
              {"voluntary_ctxsw_per_s", json_num(p.vcsw_rate)},
              {"voluntary_ctxsw_per_cpu_s", json_num(p.vcsw_per_cpu_s)},
              {"machine_load", load},
              {"workers", p.workers},
              {"load_balance", json_num(p.load_balance)},
              {"communication_efficiency", json_num(p.communication_efficiency)},
              {"parallel_efficiency", json_num(p.parallel_efficiency)},
              {"computation_scalability", json_num(p.computation_scalability)},
              {"global_efficiency", json_num(p.global_efficiency)},
              {"window", {{"value", json_num(p.window_s)}, {"unit", "s"}}},
              {"startup", {{"value", json_num(p.startup_s)}, {"unit", "s"}}},
              {"teardown", {{"value", json_num(p.teardown_s)}, {"unit", "s"}}},
              {"useful_max", {{"value", json_num(p.useful_max_s)}, {"unit", "s"}}},
              {"useful_mean", {{"value", json_num(p.useful_mean_s)}, {"unit", "s"}}},
              {"cpu_per_wall", json_num(p.cpu_per_wall)},
              {"system_share", json_num(p.system_share)},
              {"involuntary_ctxsw_per_s", json_num(p.ivcsw_rate)},
              {"instruction_scalability", json_num(p.instruction_scalability)},
              {"ipc_scalability", json_num(p.ipc_scalability)},
              {"frequency_scalability", json_num(p.frequency_scalability)},
              {"tracer", tracer_json(p)}};
}

json tracer_json(const PopPoint& p) {
  auto sec = [](double v) { return json{{"value", json_num(v)}, {"unit", "s"}}; };
  return json{{"share", json_num(p.tracer_share)},
              {"own", sec(p.tracer_s)},
              {"mpi_wrappers", sec(p.tracer_wrapper_s)},
              {"sampler", sec(p.tracer_sampler_s)},
              {"code", sec(p.tracer_code_s)},
              {"records_at_end", sec(p.tracer_exit_s)}};
}

json app_step_json(const AppStep& st) {
  json causes = json::array();
  for (const auto& c : st.causes)
    causes.push_back({{"cause", c.cause}, {"factor", json_num(c.factor)}, {"evidence", c.evidence}});
  return json{{"c1", json_num(st.c1)},
              {"c2", json_num(st.c2)},
              {"speedup", json_num(st.speedup)},
              {"efficiency", json_num(st.efficiency)},
              {"wall_efficiency", json_num(st.wall_efficiency)},
              {"factors",
               {{"load_balance", json_num(st.lb_factor)},
                {"communication_efficiency", json_num(st.comm_factor)},
                {"computation_scalability", json_num(st.cs_factor)},
                {"startup", json_num(st.startup_factor)},
                {"parallel_efficiency", json_num(st.pe_factor)},
                {"thread_efficiency", json_num(st.te_factor)}}},
              {"spread", json_num(st.spread)},
              {"diagnosis", st.diagnosis},
              {"cause", st.cause.empty() ? json(nullptr) : json(st.cause)},
              {"causes", causes},
              {"explanation", st.explanation}};
}

json mpi_calls_json(const std::vector<MpiCallStats>& calls) {
  json out = json::array();
  for (const auto& c : calls)
    out.push_back({{"name", c.name},
                   {"calls", c.calls},
                   {"time", {{"value", json_num(c.time_s)}, {"unit", "s"}}},
                   {"bytes", {{"value", json_num(c.bytes)}, {"unit", "B"}}},
                   {"rank_time_min", {{"value", json_num(c.rank_min_s)}, {"unit", "s"}}},
                   {"rank_time_mean", {{"value", json_num(c.rank_mean_s)}, {"unit", "s"}}},
                   {"rank_time_max", {{"value", json_num(c.rank_max_s)}, {"unit", "s"}}},
                   {"in_window", !starts_or_ends_mpi(c.name)},
                   {"time_method", c.time_method.empty() ? json(nullptr) : json(c.time_method)},
                   {"estimated_calls", c.estimated_calls}});
  return out;
}

std::string render_pop_text(const AnalysisResult& res, const AppSummary& sum, int width) {
  std::ostringstream os;
  const std::string axis = res.axis.empty() ? "point" : res.axis;
  const auto& configs = res.run.configs;
  os << "\nSummary" << (sum.fixed.empty() ? "" : " (" + sum.fixed + ")") << ": "
     << (sum.weak ? "weak scaling" : "strong scaling");
  if (sum.weak && !sum.grows_with.empty()) {
    os << " (";
    for (std::size_t i = 0; i < sum.grows_with.size(); ++i) os << (i ? ", " : "") << sum.grows_with[i];
    os << " grows with " << axis << ")";
  }
  os << "\n";
  const bool mpi_basis = std::any_of(sum.points.begin(), sum.points.end(), [](const AppPoint& p) { return p.pop.basis == "mpi"; });
  const bool te_column = any_thread_level(sum);
  // axis(7) time(8) speedup(7) eff(6) MPI%(5) CPU/w(5) LB CommE [TE] PE CS GE (5 each) step(rest)
  os << "  " << pad(axis, 7) << " " << pad("time s", 8) << " " << pad(sum.weak ? "scaled" : "speedup", 7) << " "
     << pad("eff", 6) << " " << pad("MPI %", 5) << " " << pad("CPU/w", 5) << " " << pad("LB", 5) << " "
     << pad("CommE", 5) << " " << (te_column ? pad("TE", 5) + " " : "") << pad("PE", 5) << " " << pad("CS", 5) << " "
     << pad("GE", 5) << "  step\n";
  bool any_spread = false;
  for (std::size_t i = 0; i < sum.points.size(); ++i) {
    const AppPoint& p = sum.points[i];
    const PopPoint& q = p.pop;
    std::string mpi = available(p.mpi_share) ? pct1(100 * p.mpi_share) : (q.mpi_initialised ? "?" : "-");
    std::string time = num(p.time_s);
    if (p.repeats > 1) any_spread = true;
    os << "  " << pad(num(p.concurrency, 6), 7) << " " << pad(time, 8) << " " << format::num_cell(p.speedup, 7) << " "
       << pad(available(p.efficiency) ? num(100 * p.efficiency, 3) + "%" : "-", 6) << " " << pad(mpi, 5) << " "
       << pad(fixed2(q.cpu_per_wall), 5) << " " << pad(fixed2(q.load_balance), 5) << " "
       << pad(fixed2(q.communication_efficiency), 5) << " " << (te_column ? pad(fixed2(q.thread_efficiency), 5) + " " : "")
       << pad(fixed2(q.parallel_efficiency), 5) << " "
       << pad(fixed2(q.computation_scalability), 5) << " " << pad(fixed2(q.global_efficiency), 5) << "  "
       << step_label(step_into(sum, i)) << "\n";
  }
  for (const auto& st : sum.steps)
    if ((st.diagnosis == "loss" || st.diagnosis == "offsetting") && st.causes.size() > 1) {
      os << "  * the step has more causes than the first: the sentences below name each with its share\n";
      break;
    }
  if (const std::string b = basis_words(sum); !b.empty()) os << wrap(b, static_cast<std::size_t>(width), "  ");
  if (const std::string l = load_line(sum, axis); !l.empty()) os << wrap(l, static_cast<std::size_t>(width), "  ");
  if (const std::string l = tracer_line(sum); !l.empty()) os << wrap(l, static_cast<std::size_t>(width), "  ");
  if (mpi_basis) {
    std::string line = "time s is the MPI window; startup (exec to MPI_Init end) / teardown (MPI_Finalize to "
                       "exit) and wall, s:";
    for (const auto& p : sum.points)
      line += " " + num(p.concurrency, 6) + ": " +
              (p.pop.window_measured ? fixed2(p.pop.startup_s) + "/" + fixed2(p.pop.teardown_s) + " of " + num(p.pop.wall_s)
                                     : "not recorded (MPI_Init " + num(p.pop.init_s, 2) + ")") + ";";
    line.pop_back();
    os << wrap(line, static_cast<std::size_t>(width), "  ");
  }
  if (std::any_of(sum.points.begin(), sum.points.end(), [](const AppPoint& p) { return available(p.pop.ipc_scalability); })) {
    std::string line = "hardware counters of the annotated regions: instruction x IPC x frequency scalability:";
    for (const auto& p : sum.points)
      line += " " + num(p.concurrency, 6) + ": " + fixed2(p.pop.instruction_scalability) + " x " +
              fixed2(p.pop.ipc_scalability) + " x " + fixed2(p.pop.frequency_scalability) + ";";
    line.pop_back();
    os << wrap(line, static_cast<std::size_t>(width), "  ");
  }
  if (any_spread) {
    std::string line = "repeats (wall-time spread, (max-min)/median):";
    for (const auto& p : sum.points)
      line += " " + num(p.concurrency, 6) + ": " + std::to_string(p.repeats) + "x " + num(100 * p.spread, 2) + "%;";
    line.pop_back();
    os << wrap(line, static_cast<std::size_t>(width), "  ");
  }
  for (const auto& sentence : sum.sentences) os << wrap(sentence, static_cast<std::size_t>(width), "  ");

  // Per-call MPI breakdown at the group's largest point: top 5 by time.
  if (!sum.points.empty()) {
    const auto& last = sum.points.back();
    const auto& calls = configs[static_cast<std::size_t>(last.config)].pop.calls;
    if (!calls.empty()) {
      os << "  MPI calls at " << axis << "=" << num(last.concurrency, 6) << " (top 5 by time; per-rank time s):\n";
      std::vector<std::string> names;  // the call column as wide as its longest name: never cut
      for (std::size_t i = 0; i < calls.size() && i < 5; ++i)
        names.push_back(calls[i].name + (starts_or_ends_mpi(calls[i].name) ? "*" : ""));
      const std::size_t name_w = format::column_width(names, 18);
      os << "    " << pad("call", name_w, false) << " " << pad("calls", 9) << " " << pad("time s", 9) << " "
         << pad("bytes", 9) << " " << pad("min", 8) << " " << pad("mean", 8) << " " << pad("max", 8) << "\n";
      int shown = 0;
      for (const auto& c : calls) {
        if (shown++ == 5) break;
        os << "    " << pad(c.name + (starts_or_ends_mpi(c.name) ? "*" : ""), name_w, false) << " "
           << pad(std::to_string(c.calls), 9) << " " << pad(num(c.time_s), 9) << " " << pad(num(c.bytes), 9) << " "
           << pad(num(c.rank_min_s), 8) << " " << pad(num(c.rank_mean_s), 8) << " " << pad(num(c.rank_max_s), 8) << "\n";
      }
      if (std::any_of(calls.begin(), calls.begin() + std::min<std::size_t>(5, calls.size()),
                      [](const MpiCallStats& c) { return starts_or_ends_mpi(c.name); }))
        os << "    (* outside the MPI window: startup/teardown, not in the MPI share)\n";
    }
  }
  return os.str();
}

void write_pop_csv(const AnalysisResult& res, const std::string& dir, std::vector<std::string>& written) {
  const auto& configs = res.run.configs;
  {
    std::string path = dir + "/pop.csv";
    std::ofstream out;
    open_output_file(path, out);
    written.push_back(path);
    out << "fixed,scaling,configuration,concurrency,time_s,efficiency,repeats,spread,basis,workers,window_s,startup_s,"
           "teardown_s,mpi_share,load_balance,communication_efficiency,parallel_efficiency,computation_scalability,"
           "global_efficiency,cpu_per_wall,system_share,involuntary_ctxsw_per_s,step_diagnosis,step_cause,"
           "step_explanation,thread_basis,thread_efficiency,other_share,steal_share,step_causes\n";
    for (const auto& sum : res.summaries)
      for (std::size_t i = 0; i < sum.points.size(); ++i) {
        const auto& p = sum.points[i];
        const auto& q = p.pop;
        const AppStep* st = step_into(sum, i);
        out << csv_field(sum.fixed) << "," << (sum.weak ? "weak" : "strong") << "," << p.config << ","
            << csv_num(p.concurrency) << "," << csv_num(p.time_s) << "," << csv_num(p.efficiency) << "," << p.repeats
            << "," << csv_num(p.spread) << "," << q.basis << "," << q.workers << "," << csv_num(q.window_s) << ","
            << csv_num(q.startup_s) << "," << csv_num(q.teardown_s) << "," << csv_num(p.mpi_share) << ","
            << csv_num(q.load_balance) << "," << csv_num(q.communication_efficiency) << ","
            << csv_num(q.parallel_efficiency) << "," << csv_num(q.computation_scalability) << ","
            << csv_num(q.global_efficiency) << "," << csv_num(q.cpu_per_wall) << "," << csv_num(q.system_share) << ","
            << csv_num(q.ivcsw_rate) << "," << (st ? st->diagnosis : "") << "," << (st ? st->cause : "") << ","
            << csv_field(st ? st->explanation : "") << "," << q.thread_basis << "," << csv_num(q.thread_efficiency) << ","
            << csv_num(q.other_share) << "," << csv_num(q.steal_share) << ","
            << csv_field(st ? cause_names(*st) : "") << "\n";
      }
  }
  bool any_calls = std::any_of(configs.begin(), configs.end(), [](const Configuration& c) { return !c.pop.calls.empty(); });
  if (any_calls) {
    std::string path = dir + "/mpi_calls.csv";
    std::ofstream out;
    open_output_file(path, out);
    written.push_back(path);
    out << "configuration,label,call,calls,time_s,bytes,rank_time_min_s,rank_time_mean_s,rank_time_max_s,in_window\n";
    for (std::size_t ci = 0; ci < configs.size(); ++ci)
      for (const auto& c : configs[ci].pop.calls)
        out << ci << "," << csv_field(configs[ci].label) << "," << c.name << "," << c.calls << "," << csv_num(c.time_s)
            << "," << csv_num(c.bytes) << "," << csv_num(c.rank_min_s) << "," << csv_num(c.rank_mean_s) << ","
            << csv_num(c.rank_max_s) << "," << (starts_or_ends_mpi(c.name) ? 0 : 1) << "\n";
  }
}

std::string render_pop_html(const AnalysisResult& res, const AppSummary& sum) {
  std::ostringstream o;
  const auto& configs = res.run.configs;
  const std::string axis = res.axis.empty() ? "point" : xml_escape(res.axis);
  o << "<table><tr><th>" << axis << "</th><th>time (s)</th><th>" << (sum.weak ? "scaled speedup" : "speedup")
    << "</th><th>efficiency</th><th>MPI share</th><th>CPU/wall</th><th>load balance</th><th>comm. eff.</th>"
    << (any_thread_level(sum) ? "<th>thread eff.</th>" : "") << "<th>parallel eff.</th><th>comp. scalability</th><th>global eff.</th><th>startup/teardown (s)</th>"
    << "<th class=\"l\">step</th></tr>\n";
  for (std::size_t i = 0; i < sum.points.size(); ++i) {
    const auto& p = sum.points[i];
    const auto& q = p.pop;
    auto cell = [&](double v) { return "<td style=\"background:" + heat(v) + "\">" + h(v, 3) + "</td>"; };
    const AppStep* st = step_into(sum, i);
    o << "<tr><td>" << h(p.concurrency, 6) << "</td><td>" << h(p.time_s)
      << (p.repeats > 1 ? " &plusmn;" + h(50 * p.spread, 2) + "%" : "") << "</td><td>" << h(p.speedup) << "</td>"
      << cell(p.efficiency) << "<td>" << (available(p.mpi_share) ? format::percent(p.mpi_share) : "&ndash;")
      << "</td><td>" << h(q.cpu_per_wall) << "</td>" << cell(q.load_balance) << cell(q.communication_efficiency)
      << (any_thread_level(sum) ? cell(q.thread_efficiency) : "") << cell(q.parallel_efficiency) << cell(q.computation_scalability) << cell(q.global_efficiency) << "<td>"
      << (q.basis == "mpi" ? h(q.startup_s, 2) + " / " + h(q.teardown_s, 2) : "&ndash;") << "</td><td class=\"l\">"
      << (st ? "<span title=\"" + xml_escape(st->explanation) + "\">" + xml_escape(step_label(st)) + "</span>" : "")
      << "</td></tr>\n";
  }
  o << "</table>\n";
  if (const std::string b = basis_words(sum); !b.empty()) o << "<p>" << xml_escape(b) << "</p>\n";
  if (const std::string l = load_line(sum, axis); !l.empty()) o << "<p>" << xml_escape(l) << "</p>\n";
  if (const std::string l = tracer_line(sum); !l.empty()) o << "<p>" << xml_escape(l) << "</p>\n";
  if (!sum.steps.empty()) {
    o << "<table><tr><th>step</th><th>efficiency</th><th>LB &times;</th><th>CommE &times;</th>"
      << (any_thread_level(sum) ? "<th>TE &times;</th>" : "") << "<th>CS &times;</th>"
      << "<th>startup &times;</th><th class=\"l\">diagnosis</th><th class=\"l\">evidence</th></tr>\n";
    for (const auto& st : sum.steps) {
      const char* cls = st.diagnosis == "loss" ? "bad" : st.diagnosis == "noise" || st.diagnosis == "offsetting" ? "warn" : "good";
      o << "<tr><td>" << h(st.c1, 6) << "&rarr;" << h(st.c2, 6) << "</td><td>" << h(100 * st.efficiency) << "%</td><td>"
        << h(st.lb_factor) << "</td><td>" << h(st.comm_factor) << "</td><td>"
        << (any_thread_level(sum) ? h(st.te_factor) + "</td><td>" : "") << h(st.cs_factor) << "</td><td>"
        << h(st.startup_factor) << "</td><td class=\"l\"><span class=\"badge " << cls << "\">"
        << xml_escape(st.diagnosis == "loss" || st.diagnosis == "offsetting" ? st.diagnosis + ": " + cause_names(st)
                                                                             : step_label(&st))
        << "</span></td><td class=\"l\">" << xml_escape(st.explanation) << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  if (!sum.points.empty()) {
    const auto& last = sum.points.back();
    const auto& calls = configs[static_cast<std::size_t>(last.config)].pop.calls;
    if (!calls.empty()) {
      o << "<h3>MPI calls at " << axis << "=" << h(last.concurrency, 6) << "</h3>\n"
        << "<table><tr><th class=\"l\">call</th><th>calls</th><th>time (s)</th><th>bytes</th>"
        << "<th>per-rank min (s)</th><th>mean</th><th>max</th><th class=\"l\">where</th></tr>\n";
      for (const auto& c : calls)
        o << "<tr><td class=\"l\">" << xml_escape(c.name) << "</td><td>" << c.calls << "</td><td>" << h(c.time_s)
          << "</td><td>" << h(c.bytes) << "</td><td>" << h(c.rank_min_s) << "</td><td>" << h(c.rank_mean_s)
          << "</td><td>" << h(c.rank_max_s) << "</td><td class=\"l\">"
          << (starts_or_ends_mpi(c.name) ? "startup/teardown" : "MPI window") << "</td></tr>\n";
      o << "</table>\n";
    }
  }
  return o.str();
}

}  // namespace rtrace::analysis
