// Where every ceiling a roofline used comes from, and whether it was marked
// (issue 32): this point's measurement, the machine's reference (the point's
// own value marked and kept), or a file the user gave. Text and HTML here; the
// JSON carries the same per ceiling (report_json.cpp).
#include "rtrace/analysis/report.hpp"
#include "text_format.hpp"

#include <sstream>

namespace rtrace::analysis {

namespace {

using format::num;
using format::wrap;

std::string value_of(const Ceiling& c) { return c.name + " " + num(c.value, 4) + " " + c.unit; }

// A ceiling that needs its own line: not simply this point's measurement.
bool notable(const Ceiling& c) { return c.source != "measured" || c.marked; }

}  // namespace

std::string ceiling_origin(const Ceiling& c) {
  std::string s;
  if (c.source == "reference")
    s = "the machine's reference of " + (c.reference_date.empty() ? std::string("an earlier run") : c.reference_date) +
        ", not this point's " + num(c.measured, 4) + " (marked" +
        (c.unreliable_reason.empty() ? std::string() : ": " + c.unreliable_reason) + ")";
  else if (c.source == "file")
    s = "from the file given with --ert" + (c.source_file.empty() ? std::string() : " (" + c.source_file + ")");
  else
    s = "measured by this point's ERT" + (c.source_file.empty() ? std::string() : " (" + c.source_file + ")");
  if (c.marked && c.source != "reference")
    s += ", marked unreliable" + (c.unreliable_reason.empty() ? std::string() : ": " + c.unreliable_reason);
  return s;
}

std::string render_ceilings_used_text(const AnalysisResult& res, int width) {
  if (res.ceilings_used.empty()) return "";
  const auto w = static_cast<std::size_t>(width);
  std::ostringstream os;
  os << "\nCeilings used (where each comes from):\n";
  const auto& configs = res.run.configs;
  for (std::size_t i = 0; i < res.ceilings_used.size();) {
    const int ci = res.ceilings_used[i].config;
    std::size_t end = i;
    while (end < res.ceilings_used.size() && res.ceilings_used[end].config == ci) ++end;
    const std::string where = configs[static_cast<std::size_t>(ci)].label.empty()
                                  ? "configuration " + std::to_string(ci)
                                  : configs[static_cast<std::size_t>(ci)].label;
    // The plain ones on one line, each other one on its own.
    std::string plain;
    const Ceiling* first_plain = nullptr;
    for (std::size_t k = i; k < end; ++k) {
      const Ceiling& c = res.ceilings_used[k].ceiling;
      if (notable(c)) continue;
      plain += (plain.empty() ? "" : ", ") + value_of(c);
      if (!first_plain) first_plain = &c;
    }
    if (first_plain) os << wrap("  " + where + ": " + plain + " " + ceiling_origin(*first_plain), w, "  ");
    for (std::size_t k = i; k < end; ++k) {
      const Ceiling& c = res.ceilings_used[k].ceiling;
      if (notable(c)) os << wrap("  " + where + ": " + value_of(c) + " " + ceiling_origin(c), w, "  ");
    }
    i = end;
  }
  return os.str();
}

std::string render_ceilings_used_html(const AnalysisResult& res) {
  if (res.ceilings_used.empty()) return "";
  std::ostringstream h;
  h << "<h2>Ceilings used</h2>\n<table><tr><th class=\"l\">configuration</th><th class=\"l\">ceiling</th><th>value</th>"
       "<th class=\"l\">unit</th><th class=\"l\">source</th><th>measured here</th><th class=\"l\">marked</th></tr>\n";
  for (const auto& u : res.ceilings_used) {
    const Ceiling& c = u.ceiling;
    const std::string source = c.source == "reference" ? "machine reference of " + c.reference_date
                               : c.source == "file"    ? "file " + c.source_file
                                                       : "this point's ERT";
    h << "<tr><td class=\"l\">" << xml_escape(res.run.configs[static_cast<std::size_t>(u.config)].label)
      << "</td><td class=\"l\">" << xml_escape(c.name) << "</td><td>" << format::html_num(c.value, 4)
      << "</td><td class=\"l\">" << xml_escape(c.unit) << "</td><td class=\"l\">" << xml_escape(source) << "</td><td>"
      << format::html_num(c.measured, 4) << "</td><td class=\"l\">"
      << (c.marked ? "<span class=\"warning\">" + xml_escape(c.unreliable_reason.empty() ? std::string("unreliable")
                                                                                         : c.unreliable_reason) +
                         "</span>"
                   : std::string("no"))
      << "</td></tr>\n";
  }
  h << "</table>\n";
  return h.str();
}

}  // namespace rtrace::analysis
