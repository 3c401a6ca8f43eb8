// `--write`: the analysis stored under /analysis of the run file, atomically.
#include "rtrace/analysis/report.hpp"

#include <rtrace/store/file.hpp>
#include <rtrace/store/run_file.hpp>
#include <rtrace/store/table.hpp>

namespace rtrace::analysis {
namespace {

// /analysis/points: one row per kernel per configuration.
struct AnalysisPointRow {
  char kernel[128];
  char kind[16];
  std::int32_t configuration;
  char label[256];
  double concurrency;
  double time_s;
  double gflops;
  double ai_l1, ai_l2, ai_l3, ai_dram;
  double bound_gflops;
  double efficiency;
  char binding[32];
  static const store::RowLayout& layout() {
    static const store::RowLayout l = [] {
      store::RowLayout r("analysis_point", sizeof(AnalysisPointRow));
      r.add("kernel", &AnalysisPointRow::kernel)
          .add("kind", &AnalysisPointRow::kind)
          .add("configuration", &AnalysisPointRow::configuration)
          .add("label", &AnalysisPointRow::label)
          .add("concurrency", &AnalysisPointRow::concurrency, "1")
          .add("time_s", &AnalysisPointRow::time_s, "s")
          .add("gflops", &AnalysisPointRow::gflops, "GFLOP/s")
          .add("ai_l1", &AnalysisPointRow::ai_l1, "FLOP/B")
          .add("ai_l2", &AnalysisPointRow::ai_l2, "FLOP/B")
          .add("ai_l3", &AnalysisPointRow::ai_l3, "FLOP/B")
          .add("ai_dram", &AnalysisPointRow::ai_dram, "FLOP/B")
          .add("bound_gflops", &AnalysisPointRow::bound_gflops, "GFLOP/s")
          .add("efficiency", &AnalysisPointRow::efficiency, "1")
          .add("binding", &AnalysisPointRow::binding);
      return r;
    }();
    return l;
  }
};

// /analysis/steps: one row per trajectory step.
struct AnalysisStepRow {
  char kernel[128];
  char kind[16];
  char fixed[256];
  double c1, c2;
  double speedup;
  double ceiling_ratio, ai_ratio, efficiency_ratio;
  double karp_flatt;
  char diagnosis[32];
  char level[32];
  char cause[32];
  static const store::RowLayout& layout() {
    static const store::RowLayout l = [] {
      store::RowLayout r("analysis_step", sizeof(AnalysisStepRow));
      r.add("kernel", &AnalysisStepRow::kernel)
          .add("kind", &AnalysisStepRow::kind)
          .add("fixed", &AnalysisStepRow::fixed)
          .add("c1", &AnalysisStepRow::c1, "1")
          .add("c2", &AnalysisStepRow::c2, "1")
          .add("speedup", &AnalysisStepRow::speedup, "1")
          .add("ceiling_ratio", &AnalysisStepRow::ceiling_ratio, "1")
          .add("ai_ratio", &AnalysisStepRow::ai_ratio, "1")
          .add("efficiency_ratio", &AnalysisStepRow::efficiency_ratio, "1")
          .add("karp_flatt", &AnalysisStepRow::karp_flatt, "1")
          .add("diagnosis", &AnalysisStepRow::diagnosis)
          .add("level", &AnalysisStepRow::level)
          .add("cause", &AnalysisStepRow::cause);
      return r;
    }();
    return l;
  }
};

}  // namespace

void write_back(const AnalysisResult& res, const nlohmann::json& doc) {
  std::vector<AnalysisPointRow> points;
  const auto& configs = res.run.configs;
  for (const auto& s : res.kernels)
    for (std::size_t ci = 0; ci < configs.size(); ++ci) {
      if (s.at[ci] < 0) continue;
      AnalysisPointRow r{};
      store::set_str(r.kernel, s.name);
      store::set_str(r.kind, s.kind);
      r.configuration = static_cast<std::int32_t>(ci);
      store::set_str(r.label, configs[ci].label);
      r.concurrency = res.axis.empty() ? kNaN : configs[ci].concurrency(res.axis);
      r.time_s = configs[ci].kernels[s.at[ci]].time_s;
      const auto& e = s.eval[ci];
      r.gflops = e.gflops;
      r.ai_l1 = e.ai[0]; r.ai_l2 = e.ai[1]; r.ai_l3 = e.ai[2]; r.ai_dram = e.ai[3];
      r.bound_gflops = e.bound_gflops;
      r.efficiency = e.efficiency;
      store::set_str(r.binding, e.binding_ceiling);
      points.push_back(r);
    }
  std::vector<AnalysisStepRow> steps;
  for (const auto& t : res.trajectories)
    for (const auto& st : t.steps) {
      AnalysisStepRow r{};
      store::set_str(r.kernel, res.kernels[t.kernel].name);
      store::set_str(r.kind, res.kernels[t.kernel].kind);
      store::set_str(r.fixed, t.fixed);
      r.c1 = st.c1; r.c2 = st.c2; r.speedup = st.d.speedup;
      r.ceiling_ratio = st.d.factors.ceiling_ratio;
      r.ai_ratio = st.d.factors.ai_ratio;
      r.efficiency_ratio = st.d.factors.efficiency_ratio;
      r.karp_flatt = st.d.karp_flatt;
      store::set_str(r.diagnosis, st.d.diagnosis);
      store::set_str(r.level, st.d.level);
      store::set_str(r.cause, st.d.cause);
      steps.push_back(r);
    }
  const std::string text = doc.dump(1);
  try {
    store::transaction(res.run.path, [&](store::File& f) {
      store::Group& root = f.root();
      if (root.exists("analysis")) root.remove("analysis");
      store::Group g = root.create_group("analysis");
      g.set_attr("schema", "rtrace-analysis");
      g.set_attr("schema_version", kAnalysisSchemaVersion);
      g.set_attr("rtrace_version", store::rtrace_version());
      g.set_attr("created", store::iso8601_utc_now());
      g.set_attr("axis", res.axis);
      g.write_text("result_json", text, "the full analysis as JSON (schemas/analysis-v1.json)");
      g.write_table("points", points, "roofline model per kernel per configuration");
      g.write_table("steps", steps, "trajectory steps: speedup factors and diagnosis");
    });
  } catch (const store::Error& e) {
    throw InputError(res.run.path + ": cannot write /analysis: " + e.what());
  }
}

}  // namespace rtrace::analysis
