#include "rtrace/analysis/report.hpp"
#include "rtrace/analysis/output_guard.hpp"
#include "text_format.hpp"

#include <rtrace/store/run_file.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace rtrace::analysis {
namespace {

using format::json_num;
using format::csv_field;
using format::csv_num;

using nlohmann::json;

json q(double v, const char* unit) { return json{{"value", json_num(v)}, {"unit", unit}}; }
json s_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json level_map(const std::array<double, kLevelCount>& v, const char* unit) {
  json out = json::object();
  for (MemLevel l : kAllLevels) out[level_key(l)] = q(v[static_cast<int>(l)], unit);
  return out;
}

void make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    throw InputError(dir + ": cannot create directory: " + std::strerror(errno));
}


// FLOPs by precision and vector width (null without counted FLOPs).
json flop_mix_json(const FlopMix& mix) {
  if (!mix.any()) return nullptr;
  json out = json::object();
  static const char* const kWidths[kWidthCount] = {"scalar", "v128", "v256", "v512"};
  for (int p = 0; p < kMixPrecisionCount; ++p) {
    json one = json::object();
    for (int w = 0; w < kWidthCount; ++w) one[kWidths[w]] = json_num(mix.flops[p][w]);
    out[kMixPrecisions[p]] = one;
  }
  return out;
}

// The runtimes' counts of one configuration and what the counted work says (1.6.0).
void add_counted_work_json(const AnalysisResult& res, std::size_t ci, json& conf) {
  const auto& rt = res.run.configs[ci].counts.runtime;
  json cats = json::object();
  for (const auto& [cat, n] : rt.category_instructions) cats[cat] = n;
  json runtime = {{"instructions", json_num(rt.instructions)},
                  {"flops", json_num(rt.counts.total_flops())},
                  {"bytes", level_map(rt.counts.bytes, "B")},
                  {"categories", cats},
                  {"instruction_share", nullptr},
                  {"l1_share", nullptr},
                  {"flop_share", nullptr},
                  {"sentence", nullptr}};
  conf["mix_sentence"] = nullptr;
  for (const auto& w : res.counted_work) {
    if (w.config != static_cast<int>(ci)) continue;
    runtime["instruction_share"] = json_num(w.runtime_instruction_share);
    runtime["l1_share"] = json_num(w.runtime_l1_share);
    runtime["flop_share"] = json_num(w.runtime_flop_share);
    runtime["sentence"] = s_or_null(w.runtime_sentence);
    conf["mix_sentence"] = s_or_null(w.mix_sentence);
  }
  conf["runtime"] = runtime;
  json mismatches = json::array();
  for (const auto& m : res.run.configs[ci].code_mismatches)
    mismatches.push_back({{"timed", s_or_null(m.timed)},
                          {"timed_module", s_or_null(m.timed_module)},
                          {"timed_share", json_num(m.timed_share)},
                          {"counted", s_or_null(m.counted)},
                          {"counted_module", s_or_null(m.counted_module)},
                          {"counted_share", json_num(m.counted_share)},
                          {"sentence", m.sentence}});
  conf["code_mismatches"] = mismatches;
}

// Where the counts of every configuration come from, and where declared and
// counted values disagree (analysis schema 1.5.0).
json counts_json(const AnalysisResult& res) {
  json confs = json::array(), checks = json::array();
  bool any = false;
  for (std::size_t ci = 0; ci < res.run.configs.size(); ++ci) {
    const auto& c = res.run.configs[ci];
    const PointCounts& pc = c.counts;
    if (!pc.present) continue;
    any |= pc.usable;
    json levels = json::array();
    for (const auto& l : pc.levels)
      levels.push_back({{"name", store::get_str(l.name)},
                        {"size_bytes", l.size_bytes},
                        {"full_size_bytes", l.full_size_bytes},
                        {"line_bytes", l.line_bytes},
                        {"associativity", l.associativity},
                        {"sharers", l.sharers}});
    confs.push_back({{"configuration", ci},
                     {"label", c.label},
                     {"source", pc.source},
                     {"status", pc.status},
                     {"note", pc.note},
                     {"serialised", pc.serialised},
                     {"ranks_counted", pc.ranks_counted},
                     {"window", pc.window},
                     {"user_window", pc.user_window},
                     {"steered", pc.steered},
                     {"not_steered", pc.not_steered},
                     {"levels", levels}});
    add_counted_work_json(res, ci, confs.back());
    for (const auto& chk : c.counts_checks)
      checks.push_back({{"configuration", ci},
                        {"kernel", chk.kernel},
                        {"function", s_or_null(chk.function)},
                        {"quantity", chk.quantity},
                        {"declared", json_num(chk.declared)},
                        {"counted", json_num(chk.counted)},
                        {"difference", json_num(chk.difference)},
                        {"source", chk.source}});
  }
  return {{"available", any},
          {"configurations", confs},
          {"disagreements", checks},
          {"notes", res.counts_notes},
          {"work_notes", res.counted_work_notes}};
}

}  // namespace

json to_json(const AnalysisResult& res) {
  const auto& configs = res.run.configs;
  json doc;
  doc["schema"] = "rtrace-analysis";
  doc["schema_version"] = kAnalysisSchemaVersion;
  doc["kind"] = "analysis";
  doc["rtrace_version"] = store::rtrace_version();
  doc["input"] = res.run.path;
  doc["axis"] = s_or_null(res.axis);
  doc["counts_available"] = res.counts_available;
  doc["machine_vector_bits"] = res.vector_bits > 0 ? json(res.vector_bits) : json(nullptr);
  const auto& th = res.thresholds;
  doc["thresholds"] = {{"ideal_tolerance", th.ideal_tolerance},   {"superlinear_margin", th.superlinear_margin},
                       {"ai_drop", th.ai_drop},                   {"ai_rise", th.ai_rise},
                       {"on_ceiling", th.on_ceiling},             {"cause_min", th.cause_min},
                       {"launch_floor_s", th.launch_floor_s},     {"tail_efficiency", th.tail_efficiency},
                       {"mpi_share_rise", th.mpi_share_rise},     {"load_share", th.load_share},
                       {"work_change", th.work_change},       {"headline_share", th.headline_share}};

  json jc = json::array();
  for (std::size_t ci = 0; ci < configs.size(); ++ci) {
    const auto& c = configs[ci];
    auto ceilings_json = [&](const std::vector<Ceiling>& all, bool partition) {
      json out = json::array();
      for (const auto& x : all) {
        const char* unit = x.kind == "bandwidth" ? "GB/s" : "GFLOP/s";
        json one = {{"name", x.name},
                    {"kind", x.kind},
                    {"precision", x.precision},
                    {"value", q(x.value, unit)},
                    // Where value comes from, and whether it was marked (1.6.0).
                    {"source", x.source},
                    {"source_file", s_or_null(x.source_file)},
                    {"reference_date", s_or_null(x.reference_date)},
                    {"measured", q(x.measured, unit)},
                    {"marked", x.marked},
                    {"marked_reason", x.marked ? json(x.unreliable_reason) : json(nullptr)},
                    {"used", partition && std::any_of(res.ceilings_used.begin(), res.ceilings_used.end(),
                                                      [&](const CeilingUsed& u) {
                                                        return u.config == static_cast<int>(ci) && u.ceiling.name == x.name;
                                                      })}};
        if (!x.host.empty()) one["host"] = x.host;
        // 1.6.0: the ERT's own verdict, so a reader draws the ceiling as unreliable.
        one["unreliable"] = x.unreliable;
        if (x.unreliable) one["unreliable_reason"] = x.unreliable_reason;
        out.push_back(std::move(one));
      }
      return out;
    };
    json ceil = ceilings_json(c.ceilings.all(), true);
    json hosts = json::array();
    for (const auto& n : c.hosts.nodes)
      hosts.push_back({{"host", n.host},
                       {"ranks", n.ranks},
                       {"rank_list", n.rank_list},
                       {"useful_mean", q(n.useful_mean_s, "s")},
                       {"useful_max", q(n.useful_max_s, "s")},
                       {"wall_max", q(n.wall_max_s, "s")}});
    jc.push_back({{"index", ci},
                  {"label", c.label},
                  {"point_ids", c.point_ids},
                  {"repeats", c.repeats()},
                  {"threads", c.threads},
                  {"ranks", c.ranks},
                  {"nodes", c.nodes},
                  {"sms_requested", c.sms_requested},
                  {"sms_achieved", c.sms_achieved},
                  {"concurrency", json_num(res.axis.empty() ? kNaN : c.concurrency(res.axis))},
                  {"device", c.gpu ? "gpu" : "cpu"},
                  {"ranks_found", c.ranks_found},
                  {"app_time", q(c.app_time_s, "s")},
                  {"app_time_spread", json_num(c.app_time_spread)},
                  {"mpi_share", json_num(c.mpi_share)},
                  {"mpi_calls", mpi_calls_json(c.pop.calls)},
                  {"tracer", tracer_json(c.pop.pop)},
                  {"ceilings", ceil},
                  {"hosts", hosts},
                  {"node_balance", json_num(c.hosts.balance)},
                  {"slowest_node", s_or_null(c.hosts.slowest)},
                  {"slowest_node_over_others", json_num(c.hosts.slowest_over_others)},
                  {"node_ceilings", ceilings_json(c.node_ceilings, false)}});
  }
  doc["configurations"] = jc;

  json jk = json::array();
  for (const auto& s : res.kernels) {
    json pts = json::array();
    for (std::size_t ci = 0; ci < configs.size(); ++ci) {
      if (s.at[ci] < 0) continue;
      const auto& k = configs[ci].kernels[s.at[ci]];
      const auto& e = s.eval[ci];
      pts.push_back({{"configuration", ci},
                     {"label", configs[ci].label},
                     {"concurrency", json_num(res.axis.empty() ? kNaN : configs[ci].concurrency(res.axis))},
                     {"time", q(k.time_s, "s")},
                     {"time_spread", json_num(k.time_spread)},
                     {"repeats", k.repeats},
                     {"ranks_present", k.ranks_present},
                     {"calls", k.calls},
                     {"imbalance", json_num(k.imbalance)},
                     {"flops", q(e.flops, "FLOP")},
                     {"bytes", level_map(k.counts.bytes, "B")},
                     {"ai", level_map(e.ai, "FLOP/B")},
                     {"performance", q(e.gflops, "GFLOP/s")},
                     {"roofline_bound", q(e.bound_gflops, "GFLOP/s")},
                     {"peak", q(e.peak_gflops, "GFLOP/s")},
                     {"peak_ceiling", s_or_null(e.peak_name)},
                     {"precision", s_or_null(e.precision)},
                     {"efficiency", json_num(e.efficiency)},
                     {"binding", s_or_null(e.binding)},
                     {"binding_ceiling", s_or_null(e.binding_ceiling)},
                     {"mean_launch", q(k.mean_launch_s, "s")},
                     {"mean_blocks", json_num(k.mean_blocks)},
                     {"metric_coverage", json_num(k.metric_coverage)},
                     {"counts_source", s_or_null(k.counts_source)},
                     {"metrics_provenance", s_or_null(k.metrics_provenance)},
                     {"flop_mix", flop_mix_json(k.mix)},
                     {"code_note", s_or_null(k.code_note)},
                     {"instructions", q(k.counted_instructions, "instructions")},
                     {"flop_less", e.flop_less},
                     {"bytes_per_instruction", level_map(bytes_per_instruction(k), "B/instruction")}});
    }
    jk.push_back({{"name", s.name},
                  {"kind", s.kind},
                  {"time_share", s.time_share},
                  {"total_time", q(s.total_time_s, "s")},
                  {"counts_available", s.counts_available},
                  {"counts_note", s_or_null(s.counts_note)},
                  {"mix_sentence", s_or_null(s.mix_sentence)},
                  {"points", pts}});
  }
  doc["kernels"] = jk;

  json jt = json::array();
  for (const auto& t : res.trajectories) {
    json steps = json::array();
    for (const auto& st : t.steps) {
      const auto& f = st.d.factors;
      auto lg = [](double v) { return available(v) && v > 0 ? json(std::log(v)) : json(nullptr); };
      steps.push_back({{"from", st.from},
                       {"to", st.to},
                       {"c1", json_num(st.c1)},
                       {"c2", json_num(st.c2)},
                       {"concurrency_ratio", json_num(st.d.concurrency_ratio)},
                       {"speedup", json_num(st.d.speedup)},
                       {"step_efficiency", json_num(st.d.step_efficiency)},
                       {"karp_flatt", json_num(st.d.karp_flatt)},
                       {"factors",
                        {{"basis", s_or_null(f.basis)},
                         {"ceiling", s_or_null(f.basis_ceiling)},
                         {"ceiling_ratio", json_num(f.ceiling_ratio)},
                         {"ai_ratio", json_num(f.ai_ratio)},
                         {"efficiency_ratio", json_num(f.efficiency_ratio)},
                         {"log_ceiling", lg(f.ceiling_ratio)},
                         {"log_ai", lg(f.ai_ratio)},
                         {"log_efficiency", lg(f.efficiency_ratio)}}},
                       {"diagnosis", st.d.diagnosis},
                       {"level", s_or_null(st.d.level)},
                       {"cache", s_or_null(st.d.cache)},
                       {"cause", s_or_null(st.d.cause)},
                       {"machine_load", json_num(st.d.machine_load)},  // 1.6.0
                       {"explanation", st.d.explanation}});
    }
    const auto& s = res.kernels[t.kernel];
    jt.push_back({{"kernel", s.name},
                  {"kind", s.kind},
                  {"axis", res.axis},
                  {"fixed", t.fixed},
                  {"configurations", t.configs},
                  {"steps", steps}});
  }
  doc["trajectories"] = jt;

  json js = json::array();
  for (const auto& sum : res.summaries) {
    json pts = json::array();
    for (const auto& p : sum.points)
      pts.push_back({{"configuration", p.config},
                     {"concurrency", json_num(p.concurrency)},
                     {"time", q(p.time_s, "s")},
                     {"speedup", json_num(p.speedup)},
                     {"efficiency", json_num(p.efficiency)},
                     {"karp_flatt", json_num(p.karp_flatt)},
                     {"mpi_share", json_num(p.mpi_share)},
                     {"repeats", p.repeats},
                     {"spread", json_num(p.spread)},
                     {"pop", pop_json(p.pop)}});
    json lost = json::array();
    for (const auto& l : sum.lost)
      lost.push_back({{"kernel", res.kernels[l.kernel].name},
                      {"kind", res.kernels[l.kernel].kind},
                      {"lost", q(l.lost_s, "s")},
                      {"share", l.share}});
    json steps = json::array();
    for (const auto& st : sum.steps) steps.push_back(app_step_json(st));
    json accounts = json::array();
    for (const auto& a : sum.accounts) {
      auto cause_json = [&](const CauseSeconds& c) {
        return json{{"cause", c.cause}, {"where", c.where}, {"seconds", json_num(c.seconds)},
                    {"share", json_num(c.share)}, {"functions", c.functions}};
      };
      json causes = json::array(), functions = json::array();
      for (const auto& c : a.causes) causes.push_back(cause_json(c));
      for (const auto& f : a.functions) {
        json fc = json::array();
        for (const auto& c : f.causes) fc.push_back(cause_json(c));
        functions.push_back({{"name", f.name}, {"t1", json_num(f.t1)}, {"t2", json_num(f.t2)},
                             {"lost", json_num(f.lost_s)}, {"uncertainty", json_num(f.uncertainty_s)},
                             {"basis", f.basis}, {"causes", fc}});
      }
      accounts.push_back({{"c1", json_num(a.c1)}, {"c2", json_num(a.c2)}, {"t1", json_num(a.t1)},
                          {"t2", json_num(a.t2)}, {"lost", json_num(a.lost_s)}, {"gross_lost", json_num(a.gross_lost_s)}, {"gained", json_num(a.gained_s)},
                          {"uncertainty", json_num(a.uncertainty_s)}, {"spread", json_num(a.spread_s)},
                          {"tentative", a.tentative}, {"headline", a.headline},
                          {"why_no_headline", a.why_no_headline}, {"causes", causes},
                          {"functions", functions}, {"sentence", a.sentence}});
    }
    js.push_back({{"fixed", sum.fixed},
                  {"accounts", accounts},
                  {"weak_found", sum.weak_found},
                  {"scaling", sum.weak ? "weak" : "strong"},
                  {"grows_with", sum.grows_with},
                  {"steps", steps},
                  {"points", pts},
                  {"final_efficiency", json_num(sum.final_efficiency)},
                  {"breaks_after", sum.breaks_after >= 0 ? json(sum.points[sum.breaks_after].concurrency) : json(nullptr)},
                  {"lost_time", lost},
                  {"sentences", sum.sentences}});
  }
  doc["summary"] = js;

  json ji = json::array();
  for (const auto& ip : res.instruction)
    ji.push_back({{"kernel", res.kernels[ip.kernel].name},
                  {"configuration", ip.config},
                  {"warp_gips", q(ip.warp_gips, "GIPS")},
                  {"peak_gips", q(ip.peak_gips, "GIPS")},
                  {"ii_global", q(ip.ii_global, "instructions/transaction")},
                  {"ii_shared", q(ip.ii_shared, "instructions/transaction")},
                  {"ii_l1", q(ip.ii_l1, "instructions/transaction")},
                  {"ceilings", {{"L1", q(ip.gtxn_l1, "GTXN/s")}, {"L2", q(ip.gtxn_l2, "GTXN/s")},
                                {"DRAM", q(ip.gtxn_dram, "GTXN/s")}}}});
  doc["instruction_roofline"] = ji;
  doc["counts"] = counts_json(res);  // 1.5.0
  doc["warnings"] = res.warnings;
  doc["hints"] = res.hints;
  doc["scaling"] = res.scaling;
  json failed = json::array();  // 1.5.0
  for (const auto& f : res.run.failed_points)
    failed.push_back({{"point", f.point_id}, {"label", f.label}, {"status", f.status}, {"exit_code", f.exit_code},
                      {"signal", f.signal}, {"reason", f.reason}});
  doc["failed_points"] = failed;
  if (res.profile.available) doc["profile"] = profile_to_json(res.profile);  // 1.3.0
  return doc;
}

json to_json(const PortabilityResult& pp) {
  json doc;
  doc["schema"] = "rtrace-analysis";
  doc["schema_version"] = kAnalysisSchemaVersion;
  doc["kind"] = "portability";
  doc["rtrace_version"] = store::rtrace_version();
  json ks = json::array();
  for (const auto& k : pp.kernels) {
    json eff = json::array();
    for (double e : k.efficiency) eff.push_back(json_num(e));
    ks.push_back({{"name", k.name}, {"kind", k.kind}, {"phi", k.phi}, {"efficiency", eff}, {"note", k.note}});
  }
  doc["portability"] = {{"files", pp.files}, {"platforms", pp.platforms}, {"kernels", ks}, {"missing", pp.missing}};
  return doc;
}

std::vector<std::string> write_csv(const AnalysisResult& res, const std::string& dir) {
  make_dir(dir);
  const auto& configs = res.run.configs;
  std::vector<std::string> written;
  auto open = [&](const std::string& name, std::ofstream& out) {
    std::string path = dir + "/" + name;
    open_output_file(path, out);
    written.push_back(path);
  };
  {
    std::ofstream out;
    open("points.csv", out);
    out << "kernel,kind,configuration,label,concurrency,time_s,time_spread,repeats,imbalance,flops,gflops,"
           "ai_l1,ai_l2,ai_l3,ai_dram,bytes_l1,bytes_l2,bytes_l3,bytes_dram,bound_gflops,efficiency,binding,counts_source\n";
    for (const auto& s : res.kernels)
      for (std::size_t ci = 0; ci < configs.size(); ++ci) {
        if (s.at[ci] < 0) continue;
        const auto& k = configs[ci].kernels[s.at[ci]];
        const auto& e = s.eval[ci];
        out << csv_field(s.name) << "," << s.kind << "," << ci << "," << csv_field(configs[ci].label) << ","
            << csv_num(res.axis.empty() ? kNaN : configs[ci].concurrency(res.axis)) << "," << csv_num(k.time_s) << ","
            << csv_num(k.time_spread) << "," << k.repeats << "," << csv_num(k.imbalance) << "," << csv_num(e.flops)
            << "," << csv_num(e.gflops);
        for (double a : e.ai) out << "," << csv_num(a);
        for (double b : k.counts.bytes) out << "," << csv_num(b);
        out << "," << csv_num(e.bound_gflops) << "," << csv_num(e.efficiency) << "," << csv_field(e.binding_ceiling)
            << "," << csv_field(k.counts_source) << "\n";
      }
  }
  {
    std::ofstream out;
    open("steps.csv", out);
    out << "kernel,kind,fixed,c1,c2,concurrency_ratio,speedup,step_efficiency,karp_flatt,basis,ceiling_ratio,ai_ratio,"
           "efficiency_ratio,diagnosis,level,cause,explanation\n";
    for (const auto& t : res.trajectories)
      for (const auto& st : t.steps) {
        const auto& f = st.d.factors;
        out << csv_field(res.kernels[t.kernel].name) << "," << res.kernels[t.kernel].kind << "," << csv_field(t.fixed)
            << "," << csv_num(st.c1) << "," << csv_num(st.c2) << "," << csv_num(st.d.concurrency_ratio) << ","
            << csv_num(st.d.speedup) << "," << csv_num(st.d.step_efficiency) << "," << csv_num(st.d.karp_flatt) << ","
            << f.basis_ceiling << "," << csv_num(f.ceiling_ratio) << "," << csv_num(f.ai_ratio) << ","
            << csv_num(f.efficiency_ratio) << "," << st.d.diagnosis << "," << csv_field(st.d.level) << ","
            << st.d.cause << "," << csv_field(st.d.explanation) << "\n";
      }
  }
  {
    std::ofstream out;
    open("summary.csv", out);
    out << "fixed,configuration,concurrency,time_s,speedup,efficiency,karp_flatt,mpi_share,repeats,spread\n";
    for (const auto& sum : res.summaries)
      for (const auto& p : sum.points)
        out << csv_field(sum.fixed) << "," << p.config << "," << csv_num(p.concurrency) << "," << csv_num(p.time_s)
            << "," << csv_num(p.speedup) << "," << csv_num(p.efficiency) << "," << csv_num(p.karp_flatt) << ","
            << csv_num(p.mpi_share) << "," << p.repeats << "," << csv_num(p.spread) << "\n";
  }
  {
    // The loss accounts (issue 39): one row per step and cause, the same numbers as the sentences.
    std::ofstream out;
    open("accounts.csv", out);
    out << "fixed,c1,c2,lost_s,gross_lost_s,gained_s,uncertainty_s,tentative,headline,cause,where,seconds,share,"
           "functions\n";
    for (const auto& sum : res.summaries)
      for (const auto& a : sum.accounts)
        for (const auto& c : a.causes) {
          std::string functions;
          for (const auto& f : c.functions) functions += (functions.empty() ? "" : ";") + f;
          out << csv_field(sum.fixed) << "," << csv_num(a.c1) << "," << csv_num(a.c2) << "," << csv_num(a.lost_s) << ","
              << csv_num(a.gross_lost_s) << "," << csv_num(a.gained_s) << "," << csv_num(a.uncertainty_s) << ","
              << (a.tentative ? 1 : 0) << "," << csv_field(a.headline) << "," << csv_field(c.cause) << ","
              << csv_field(c.where) << "," << csv_num(c.seconds) << "," << csv_num(c.share) << ","
              << csv_field(functions) << "\n";
        }
  }
  write_pop_csv(res, dir, written);
  return written;
}

std::vector<std::string> write_svgs(const std::vector<SvgChart>& charts, const std::string& dir) {
  make_dir(dir);
  std::vector<std::string> written;
  for (const auto& c : charts) {
    std::string path = dir + "/" + c.file;
    std::ofstream out;
    open_output_file(path, out);
    out << c.svg;
    written.push_back(path);
  }
  return written;
}

}  // namespace rtrace::analysis
