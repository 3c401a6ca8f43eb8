// Number and text formatting shared by the analysis renderings (terminal,
// HTML, SVG, CSV, JSON, comparison): one place decides how a value reads.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace rtrace::analysis::format {

// `precision` significant digits; scientific notation below 1e-3 and from
// `sci_from` on (values that would otherwise print as long integers);
// `unavailable` for a value that is not available (NaN/inf).
std::string num(double v, int precision = 3, const char* unavailable = "-", double sci_from = 1e5);
// The same in HTML: an en dash for unavailable, scientific from 1e6.
std::string html_num(double v, int precision = 3);
// Plain %g with `precision` digits (SVG coordinates and labels, where the
// caller has already checked availability).
std::string plain(double v, int precision = 3);
// "-" when unavailable, otherwise plain %g.
std::string plain_or_dash(double v, int precision = 3);
// Two decimals ("-" when unavailable) and one decimal (percentages).
std::string fixed2(double v);
std::string pct1(double v);
// A fraction as a percentage that reads: "37.5%", "1.1%", "0.35%", "<0.01%",
// "0%"; `unavailable` when not available. Never scientific notation (issue
// 25: an MPI share printed as "1.08e-04%").
std::string percent(double fraction, const char* unavailable = "n/a");

// A number right-aligned in a table column of `width`, never cut: as num()
// where that fits; else with a short exponent ("4.08e3", "1.2e-5"); else
// as an integer where that fits; else with fewer digits; else wider than the
// column. A cut number lies: `4.08e+0` for 4075.5 (issue 29).
std::string num_cell(double v, std::size_t width, int precision = 3, const char* unavailable = "-");

// Pads to `width` columns (right-aligned by default). Never cuts: a cell
// wider than its column pushes the rest of its row (issue 30: "(threads )");
// size columns of names from their content (column_width).
std::string pad(const std::string& s, std::size_t width, bool right = true);
// The width of a column: its widest cell, at least `min_width`.
std::size_t column_width(const std::vector<std::string>& cells, std::size_t min_width);
// Wraps words to `width` columns with `indent` on every line (continuation
// lines two columns deeper). Never cuts a word: one longer than the line
// stands alone on its line.
std::string wrap(const std::string& text, std::size_t width, const std::string& indent);
// The lines of `text` wrapped to `width` characters, no indent (SVG legends):
// at spaces; a word longer than the line breaks after a separator inside it
// ("::", "_", ",", "(", "/", "-"); never inside a run of letters or digits.
std::vector<std::string> wrap_lines(const std::string& text, std::size_t width);

// CSV: all digits that matter, empty when unavailable; fields quoted when
// they hold a comma, a quote or a newline.
std::string csv_num(double v);
std::string csv_field(const std::string& s);

// JSON: null when unavailable.
nlohmann::json json_num(double v);

}  // namespace rtrace::analysis::format
