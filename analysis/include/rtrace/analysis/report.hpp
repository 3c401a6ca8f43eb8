// Renderings of an AnalysisResult: terminal table, JSON (schemas/analysis-v1.json),
// CSV, hand-written SVG charts, a self-contained HTML report, and the
// /analysis group written back into the run file.
#pragma once

#include "rtrace/analysis/analyze.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace rtrace::analysis {

// 1.1: cause `slowdown`; 1.2: POP, app steps, MPI calls; 1.3: profile; 1.4: cause `machine-load`;
// 1.5: counted kernels (kinds `application`, `function`), `counts_source`, step `cache`, `counts`;
//      `failed_points` and profile `cpu_s`, `unnamed_modules` (issue 25); kernel `metrics_provenance`
//      steps' `causes` list, `offsetting`, `lock-wait`, the thread basis, the launcher's machine load;
//      hosts, node_balance, slowest_node, node_ceilings, ceiling host
// 1.6.0: step diagnoses `work-changed`, `code-differs`; counts' `runtime`, `mix_sentence`, `code_mismatches`,
//        `work_notes`; kernel `counts_note`, `mix_sentence`, point `flop_mix`, `code_note`;
//        `machine_vector_bits`; threshold `work_change`;
//        ceilings' `unreliable`, `unreliable_reason`; steps' `machine_load` (issue 30);
//        counts' `window`, `user_window`, `steered`, `not_steered`;
//        each ceiling's `source`, `source_file`, `reference_date`, `measured`, `marked`, `marked_reason`, `used` (issue 32);
//        rtrace's own work per point (`tracer` in pop and configurations), MPI calls' `time_method` (issue 30)
inline constexpr const char* kAnalysisSchemaVersion = "1.7.0";
extern const char* const kAnalysisSchemaJson;  // schemas/analysis-v1.json, compiled in

// Terminal report: per kernel (sorted by time share) one block of rows, each <= width columns.
// Escapes &, <, > and " for SVG and HTML text and attributes.
std::string xml_escape(const std::string& s);

std::string render_text(const AnalysisResult& res, int width = 100);
std::string render_portability_text(const PortabilityResult& pp);

nlohmann::json to_json(const AnalysisResult& res);
nlohmann::json to_json(const PortabilityResult& pp);

// CSV files (points.csv, steps.csv, summary.csv) into dir (created if missing).
std::vector<std::string> write_csv(const AnalysisResult& res, const std::string& dir);

struct SvgChart {
  std::string file;    // "roofline-p000.svg"
  std::string title;
  std::string svg;
};
std::vector<SvgChart> render_svgs(const AnalysisResult& res);
// The sampled profile's charts (profile_svg.cpp): scaling-by-function.svg, flame-cNNN.svg.
std::vector<SvgChart> render_profile_svgs(const AnalysisResult& res);
std::vector<std::string> write_svgs(const std::vector<SvgChart>& charts, const std::string& dir);

std::string render_html(const AnalysisResult& res, const std::vector<SvgChart>& charts);

// Stores the result under /analysis of the run file (one store::transaction).
void write_back(const AnalysisResult& res, const nlohmann::json& doc);

// Minimal JSON Schema (draft 2020-12 subset) validator: type, properties,
// required, additionalProperties, items, enum, minimum, maximum, minItems,
// $ref to "#/$defs/...". Returns one message per violation ("" path = root).
std::vector<std::string> validate_json(const nlohmann::json& doc, const nlohmann::json& schema);

// The whole-application diagnosis (report_pop.cpp): POP table, step causes, per-call MPI breakdown.
std::string render_pop_text(const AnalysisResult& res, const AppSummary& sum, int width);
// Configurations whose ranks ran on several hosts: the ranks by host, each
// host's mean useful time per rank, the node balance and the slowest node;
// and, for ceilings measured per node, which node each ceiling comes from.
// "" when every configuration ran on one host.
std::string render_nodes_text(const AnalysisResult& res, int width);
// Where every ceiling the rooflines used comes from (report_ceilings.cpp):
// per configuration one line of the ceilings its own ERT measured, one per
// ceiling taken from the machine's reference or a user's file or marked
// unreliable. "" when no ceiling was used.
std::string render_ceilings_used_text(const AnalysisResult& res, int width);
std::string render_ceilings_used_html(const AnalysisResult& res);
// "measured by this point's ERT (file)", "the machine's reference of
// 2026-11-28, not this point's 87.5 (marked: ...)", "from the file given with
// --ert (file)"; a marked one adds the reason.
std::string ceiling_origin(const Ceiling& c);
nlohmann::json pop_json(const PopPoint& p);
// rtrace's own work at a point: its share of the ranks' time and its parts.
nlohmann::json tracer_json(const PopPoint& p);
nlohmann::json app_step_json(const AppStep& st);
nlohmann::json mpi_calls_json(const std::vector<MpiCallStats>& calls);
void write_pop_csv(const AnalysisResult& res, const std::string& dir, std::vector<std::string>& written);
std::string render_pop_html(const AnalysisResult& res, const AppSummary& sum);

// Human sentence for one step ("cache-capacity at L2: ...").
std::string describe_step(const StepDiagnosis& d);

// The sentence for a GPU kernel whose metrics were replayed outside its SM
// partition at some configurations ("" where none were): what such counts mean.
// One model for the text and the HTML report.
std::string replayed_counts_note(const AnalysisResult& res, const KernelSeries& s);

}  // namespace rtrace::analysis
