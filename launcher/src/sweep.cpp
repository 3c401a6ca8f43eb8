// Sweep-spec grammar and plan construction (see sweep.hpp for the grammar).
#include "rtrace/launcher/sweep.hpp"

#include <rtrace/store/axis_names.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <utility>
#include <vector>
#include <sstream>

namespace rtrace::launcher {

const char* to_string(AxisKind k) noexcept {
  switch (k) {
    case AxisKind::Threads: return "threads";
    case AxisKind::Ranks: return "ranks";
    case AxisKind::RanksPerNode: return "ranks-per-node";
    case AxisKind::Nodes: return "nodes";
    case AxisKind::Sms: return "sms";
    case AxisKind::Env: return "env";
  }
  return "?";
}

namespace {

// Every error names the whole axis text, then what is wrong with which part.
[[noreturn]] void fail(const std::string& axis_text, const std::string& what) {
  throw SweepSpecError("sweep axis `" + axis_text + "`: " + what);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool valid_env_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// The axis names as a hint: "`ranks`", "`threads` or `env:OMP_NUM_THREADS`".
std::string did_you_mean(const std::string& name) {
  std::string hint;
  for (const auto& n : store::likely_axis_names(name)) hint += (hint.empty() ? "`" : " or `") + n + "`";
  return hint;
}

class ItemParser {
 public:
  ItemParser(const std::string& axis_text, const SweepAxis& axis) : axis_text_(axis_text), axis_(axis) {}

  // Parses a decimal integer; `where` names its position for the message.
  std::int64_t number(const std::string& s, const char* where) const {
    const std::string place = *where ? std::string(" ") + where : std::string();
    if (s.empty()) fail(axis_text_, "expected a number" + place);
    // Point at the offending text, not just the item.
    if (!all_digits(s)) fail(axis_text_, *where ? "expected a number" + place : "expected a number, got `" + s + "`");
    std::int64_t v = 0;
    for (char c : s) {
      int d = c - '0';
      if (v > (std::numeric_limits<std::int32_t>::max() - d) / 10) fail(axis_text_, "number `" + s + "` is too large");
      v = v * 10 + d;
    }
    return v;
  }

  // Appends the values of one comma-separated item.
  void parse_item(const std::string& item, std::vector<std::string>& values, std::vector<std::int64_t>& numbers,
                  bool& all_numeric) const {
    const auto dots = item.find("..");
    if (dots == std::string::npos) {
      if (axis_.kind == AxisKind::Env && !all_digits(item)) {
        values.push_back(item);  // literal string value of an env axis
        all_numeric = false;
        return;
      }
      push(number(item, ""), values, numbers);
      return;
    }
    const std::string start_text = item.substr(0, dots);
    std::string rest = item.substr(dots + 2);
    std::string end_text = rest, step_text;
    bool has_step = false;
    if (auto colon = rest.find(':'); colon != std::string::npos) {
      end_text = rest.substr(0, colon);
      step_text = rest.substr(colon + 1);
      has_step = true;
    }
    const std::int64_t a = number(start_text, "before '..'");
    const std::int64_t b = number(end_text, "after '..'");
    if (a > b) fail(axis_text_, "range `" + item + "` is empty (its start is greater than its end)");
    bool geometric = false;
    std::int64_t step = 1;
    if (has_step) {
      if (step_text.empty()) fail(axis_text_, "expected a step after ':' in `" + item + "`");
      if (step_text[0] == 'x' || step_text[0] == '*') {
        geometric = true;
        step = number(step_text.substr(1), "after ':x'");
        if (step < 2) fail(axis_text_, "geometric factor in `" + item + "` must be at least 2");
        if (a < 1) fail(axis_text_, "geometric range `" + item + "` must start at 1 or more");
      } else {
        step = number(step_text, "after ':'");
        if (step < 1) fail(axis_text_, "step in `" + item + "` must be at least 1");
      }
    }
    for (std::int64_t v = a; v <= b; v = geometric ? v * step : v + step) {
      push(v, values, numbers);
      if (values.size() > kMaxSweepPoints) fail(axis_text_, "more than " + std::to_string(kMaxSweepPoints) + " values");
    }
  }

 private:
  void push(std::int64_t v, std::vector<std::string>& values, std::vector<std::int64_t>& numbers) const {
    if (axis_.kind != AxisKind::Env && v < 1)
      fail(axis_text_, axis_.name + " must be at least 1 (got " + std::to_string(v) + ")");
    values.push_back(std::to_string(v));
    numbers.push_back(v);
  }

  const std::string& axis_text_;
  const SweepAxis& axis_;
};

}  // namespace

SweepAxis parse_sweep_axis(const std::string& text, bool keep_repeats) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) fail(text, "expected AXIS=SPEC, e.g. threads=1..8");
  SweepAxis axis;
  axis.name = text.substr(0, eq);
  axis.spec = text.substr(eq + 1);
  if (axis.name == "threads") axis.kind = AxisKind::Threads;
  else if (axis.name == "ranks") axis.kind = AxisKind::Ranks;
  else if (axis.name == "ranks-per-node") axis.kind = AxisKind::RanksPerNode;
  else if (axis.name == "nodes") axis.kind = AxisKind::Nodes;
  else if (axis.name == "sms") axis.kind = AxisKind::Sms;
  else if (axis.name.rfind("env:", 0) == 0) {
    axis.kind = AxisKind::Env;
    axis.env_name = axis.name.substr(4);
    if (axis.env_name.empty()) fail(text, "missing variable name after 'env:'");
    if (!valid_env_name(axis.env_name))
      fail(text, "`" + axis.env_name + "` is not a valid environment variable name");
  } else if (axis.name.empty()) {
    fail(text, "missing axis name before '='");
  } else {
    const std::string hint = did_you_mean(axis.name);
    fail(text, "unknown axis `" + axis.name + "` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME)" +
                   (hint.empty() ? std::string() : "; did you mean " + hint + "?"));
  }
  if (axis.spec.empty()) fail(text, "no values after '='");

  ItemParser parser(text, axis);
  std::vector<std::string> values;
  std::vector<std::int64_t> numbers;
  bool all_numeric = true;
  std::size_t begin = 0;
  while (true) {
    const auto comma = axis.spec.find(',', begin);
    const std::string item = axis.spec.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (item.empty()) fail(text, "empty value in the list (two commas in a row, or a comma at either end)");
    parser.parse_item(item, values, numbers, all_numeric);
    if (values.size() > kMaxSweepPoints) fail(text, "more than " + std::to_string(kMaxSweepPoints) + " values");
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  // Drop repeats, keeping the first occurrence (--repeat measures a point twice).
  std::set<std::string> seen, repeated;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!seen.insert(values[i]).second) {
      if (repeated.insert(values[i]).second) axis.repeated.push_back(values[i]);
      if (!keep_repeats) continue;
    }
    axis.values.push_back(values[i]);
    if (all_numeric) axis.numbers.push_back(numbers[i]);
  }
  if (!all_numeric) axis.numbers.clear();
  return axis;
}

std::string SweepPoint::label() const {
  if (values.empty()) return "(single run)";
  std::string s;
  for (const auto& [name, value] : values) {
    if (!s.empty()) s += ' ';
    s += name + "=" + value;
  }
  return s;
}

bool SweepPlan::has(AxisKind k) const noexcept {
  return std::any_of(axes.begin(), axes.end(), [k](const SweepAxis& a) { return a.kind == k; });
}

std::string SweepPlan::describe() const {
  std::string s;
  for (const auto& a : axes) {
    if (!s.empty()) s += zip ? " zip " : " x ";
    s += a.text();
  }
  if (s.empty()) s = "(no axes)";
  s += " (repeat " + std::to_string(repeat) + ")";
  return s;
}

namespace {

void apply_value(SweepPoint& p, const SweepAxis& axis, std::size_t index) {
  const std::string& v = axis.values[index];
  p.values.emplace_back(axis.name, v);
  const auto n = axis.numeric() ? static_cast<std::int32_t>(axis.numbers[index]) : -1;
  switch (axis.kind) {
    case AxisKind::Threads: p.threads = n; break;
    case AxisKind::Ranks: p.ranks = n; break;
    case AxisKind::RanksPerNode: p.ranks_per_node = n; break;
    case AxisKind::Nodes: p.nodes = n; break;
    case AxisKind::Sms: p.sms = n; break;
    case AxisKind::Env: p.env.emplace_back(axis.env_name, v); break;
  }
}

}  // namespace

SweepPlan make_sweep_plan(const std::vector<std::string>& axis_texts, bool zip, int repeat) {
  if (repeat < 1) throw SweepSpecError("--repeat must be at least 1 (got " + std::to_string(repeat) + ")");
  SweepPlan plan;
  plan.zip = zip;
  plan.repeat = repeat;
  std::set<std::string> names;
  for (const auto& t : axis_texts) {
    SweepAxis a = parse_sweep_axis(t, /*keep_repeats=*/zip);
    if (!names.insert(a.name).second) fail(t, "axis `" + a.name + "` is given twice");
    if (!zip && !a.repeated.empty()) {
      std::string list;
      for (const auto& v : a.repeated) list += (list.empty() ? "" : ", ") + v;
      plan.warnings.push_back("sweep axis `" + a.text() + "`: " + list + (a.repeated.size() == 1 ? " is" : " are") +
                              " given more than once; measured once (--repeat N measures every point N times)");
    }
    plan.axes.push_back(std::move(a));
  }
  for (const auto& a : plan.axes) {
    if (a.kind != AxisKind::RanksPerNode) continue;
    if (!plan.has(AxisKind::Nodes))
      fail(a.text(), "needs a `nodes` axis (a point's ranks are nodes x ranks-per-node)");
    if (plan.has(AxisKind::Ranks))
      fail(a.text(), "cannot be combined with a `ranks` axis (a point's ranks are nodes x ranks-per-node); "
                     "sweep one of them");
  }

  // Index tuples of the plan: Cartesian (first axis outermost) or zipped.
  std::vector<std::vector<std::size_t>> tuples;
  if (plan.axes.empty()) {
    tuples.emplace_back();
  } else if (zip) {
    const std::size_t n = plan.axes.front().values.size();
    for (const auto& a : plan.axes) {
      if (a.values.size() != n) {
        throw SweepSpecError("--zip: every axis needs the same number of values, but `" + plan.axes.front().text() +
                             "` has " + std::to_string(n) + " and `" + a.text() + "` has " +
                             std::to_string(a.values.size()));
      }
    }
    // A value may repeat on one zipped axis (weak scaling: ranks=1,2,4 zip
    // env:N=64,64,128); a whole tuple given twice is measured once.
    std::set<std::vector<std::string>> seen;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<std::string> key;
      std::string label;
      for (const auto& a : plan.axes) {
        key.push_back(a.values[i]);
        label += (label.empty() ? "" : " ") + a.name + "=" + a.values[i];
      }
      if (!seen.insert(key).second) {
        plan.warnings.push_back("--zip: the point `" + label +
                                "` is given more than once; measured once (--repeat N measures every point N times)");
        continue;
      }
      tuples.emplace_back(plan.axes.size(), i);
    }
  } else {
    std::size_t total = 1;
    for (const auto& a : plan.axes) {
      total *= a.values.size();
      if (total * static_cast<std::size_t>(repeat) > kMaxSweepPoints)
        throw SweepSpecError("sweep: the plan has more than " + std::to_string(kMaxSweepPoints) + " points");
    }
    std::vector<std::size_t> idx(plan.axes.size(), 0);
    for (std::size_t k = 0; k < total; ++k) {
      tuples.push_back(idx);
      for (std::size_t d = plan.axes.size(); d-- > 0;) {  // last axis varies fastest
        if (++idx[d] < plan.axes[d].values.size()) break;
        idx[d] = 0;
      }
    }
  }
  if (tuples.size() * static_cast<std::size_t>(repeat) > kMaxSweepPoints)
    throw SweepSpecError("sweep: the plan has more than " + std::to_string(kMaxSweepPoints) + " points");

  std::int64_t id = 0;
  for (const auto& t : tuples) {
    for (int r = 0; r < repeat; ++r) {
      SweepPoint p;
      p.id = id++;
      p.repeat = r;
      for (std::size_t d = 0; d < plan.axes.size(); ++d) apply_value(p, plan.axes[d], t[d]);
      plan.points.push_back(std::move(p));
    }
  }
  return plan;
}

}  // namespace rtrace::launcher
