#include "text_format.hpp"

#include "rtrace/analysis/model.hpp"

#include <algorithm>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace rtrace::analysis::format {

std::string num(double v, int precision, const char* unavailable, double sci_from) {
  if (!available(v)) return unavailable;
  char buf[64];
  const double a = std::fabs(v);
  if (a != 0 && (a >= sci_from || a < 1e-3)) std::snprintf(buf, sizeof buf, "%.*e", precision - 1, v);
  else std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

namespace {
// "4.08e+03" -> "4.08e3", "1.20e-05" -> "1.20e-5".
std::string short_exponent(std::string s) {
  const auto e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mantissa = s.substr(0, e), exp = s.substr(e + 1);
  std::string sign;
  if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) {
    if (exp[0] == '-') sign = "-";
    exp.erase(0, 1);
  }
  exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
  return mantissa + "e" + sign + exp;
}
}  // namespace

std::string num_cell(double v, std::size_t width, int precision, const char* unavailable) {
  std::string s = num(v, precision, unavailable);
  if (available(v) && s.size() > width) {
    s = short_exponent(s);
    char buf[64];
    if (s.size() > width && std::fabs(v) >= 1 && std::fabs(v) < 1e15) {
      std::snprintf(buf, sizeof buf, "%.0f", v);
      if (std::strlen(buf) <= width) s = buf;
    }
    for (int p = precision - 1; s.size() > width && p >= 1; --p) s = short_exponent(num(v, p));
  }
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string html_num(double v, int precision) { return num(v, precision, "&ndash;", 1e6); }

std::string plain(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string plain_or_dash(double v, int precision) { return available(v) ? plain(v, precision) : "-"; }

std::string fixed2(double v) {
  if (!available(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string pct1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string percent(double fraction, const char* unavailable) {
  if (!std::isfinite(fraction)) return unavailable;
  const double p = 100 * fraction;
  if (p == 0) return "0%";
  if (std::fabs(p) < 0.01) return p > 0 ? "<0.01%" : "-<0.01%";
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(p) < 1 ? "%.2f" : "%.1f", p);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);  // "50.0" -> "50"
  return s + "%";
}

std::string pad(const std::string& s, std::size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::size_t column_width(const std::vector<std::string>& cells, std::size_t min_width) {
  std::size_t w = min_width;
  for (const auto& c : cells) w = std::max(w, c.size());
  return w;
}

std::string wrap(const std::string& text, std::size_t width, const std::string& indent) {
  std::istringstream in(text);
  std::string word, line = indent, out;
  while (in >> word) {
    if (line.size() > indent.size() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = indent + "  ";
    }
    if (line.size() > indent.size() && line.back() != ' ') line += ' ';
    line += word;
  }
  if (line.size() > indent.size()) out += line + "\n";
  return out;
}

std::vector<std::string> wrap_lines(const std::string& text, std::size_t width) {
  // Pieces that may end a line: words (split at spaces), and inside a word
  // too long for a line, the parts after each separator.
  auto breaks_after = [](char c) { return c == ':' || c == '_' || c == ',' || c == '(' || c == '/' || c == '-'; };
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  std::string word;
  auto put = [&](const std::string& piece, bool space_before) {
    const std::size_t need = line.size() + (space_before && !line.empty() ? 1 : 0) + piece.size();
    if (!line.empty() && need > width) {
      lines.push_back(line);
      line.clear();
    }
    if (space_before && !line.empty()) line += ' ';
    line += piece;
  };
  while (in >> word) {
    if (word.size() <= width) {
      put(word, true);
      continue;
    }
    std::size_t start = 0;
    bool first = true;
    for (std::size_t i = 0; i < word.size(); ++i) {
      const bool last = i + 1 == word.size();
      // After a separator that is not followed by another ("::" breaks after the second ':').
      if (last || (breaks_after(word[i]) && !breaks_after(word[i + 1]))) {
        put(word.substr(start, i + 1 - start), first);
        first = false;
        start = i + 1;
      }
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string csv_num(double v) {
  if (!available(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json json_num(double v) { return available(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace rtrace::analysis::format
