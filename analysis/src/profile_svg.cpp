// Pictures of the sampled profile: an icicle flame graph per configuration
// (root on top, width = share of the samples; ranks and threads merged) and a
// "scaling by function" chart (critical-path time of the top functions along
// the axis). Hand-written SVG like svg.cpp.
#include "rtrace/analysis/profile.hpp"
#include "chart_axes.hpp"
#include "text_format.hpp"
#include "rtrace/analysis/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

namespace rtrace::analysis {

namespace {

using format::plain;


struct FlameNode {
  std::string name;
  double value = 0;
  std::map<std::string, std::unique_ptr<FlameNode>> children;
};

bool runtime_frame(const std::string& n) {
  for (const char* p : {"MPI_", "PMPI_", "ompi_", "opal_", "orte_", "pmix_", "mca_", "GOMP_", "gomp_", "libgomp",
                        "libmpi", "libopen-", "libpmix", "libucp", "libucs", "libuct", "OpenMP runtime"})
    if (n.rfind(p, 0) == 0) return true;
  return false;
}

// Warm colours for the application, blue for MPI and OpenMP runtimes, grey
// for the tracer's one "rtrace" frame; stable per name.
std::string flame_color(const std::string& name) {
  if (name == "rtrace") return "#b8b8b8";
  std::size_t h = std::hash<std::string>{}(name);
  if (runtime_frame(name)) return "hsl(" + std::to_string(200 + static_cast<int>(h % 30)) + ",55%," +
                                  std::to_string(62 + static_cast<int>((h >> 8) % 12)) + "%)";
  return "hsl(" + std::to_string(static_cast<int>(h % 50)) + ",80%," + std::to_string(58 + static_cast<int>((h >> 8) % 12)) +
         "%)";
}

std::string fit_label(const std::string& s, double width_px) {
  const auto chars = static_cast<std::size_t>(std::max(0.0, (width_px - 6) / 6.5));
  if (s.size() <= chars) return s;
  // A cut name needs 6 characters of its own to be recognisable ("li.." and
  // "p.." were noise, issue 39): narrower frames keep their name in the tooltip.
  if (chars < 8) return "";
  return s.substr(0, chars - 2) + "..";
}

}  // namespace

std::string render_flame_svg(const std::map<std::string, double>& folded, const std::string& title) {
  FlameNode root;
  root.name = "all";
  for (const auto& [stack, n] : folded) {
    if (n <= 0) continue;
    root.value += n;
    FlameNode* node = &root;
    std::size_t start = 0;
    int field = 0;
    while (start <= stack.size()) {
      std::size_t end = stack.find(';', start);
      if (end == std::string::npos) end = stack.size();
      std::string f = stack.substr(start, end - start);
      start = end + 1;
      if (field++ < 2 && (f.rfind("rank ", 0) == 0 || f.rfind("thread ", 0) == 0)) continue;  // merged
      auto& child = node->children[f];
      if (!child) {
        child = std::make_unique<FlameNode>();
        child->name = f;
      }
      child->value += n;
      node = child.get();
    }
  }
  const double W = 1000, row = 17, top = 34;
  int max_depth = 0;
  std::function<void(const FlameNode&, int)> depth_of = [&](const FlameNode& n, int d) {
    max_depth = std::max(max_depth, d);
    for (const auto& [k, c] : n.children)
      if (c->value / std::max(root.value, 1.0) * W >= 0.5) depth_of(*c, d + 1);
  };
  depth_of(root, 0);
  max_depth = std::min(max_depth, 60);
  const double H = top + (max_depth + 1) * row + 10;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W + 20 << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s << "<text x=\"10\" y=\"18\" font-size=\"14\">" << xml_escape(title) << "</text>\n";
  std::function<void(const FlameNode&, double, int)> draw = [&](const FlameNode& n, double x, int d) {
    const double w = root.value > 0 ? n.value / root.value * W : 0;
    if (w < 0.5 || d > max_depth) return;
    const double y = top + d * row;
    s << "<g><title>" << xml_escape(n.name) << ": " << plain(n.value, 6) << " samples ("
      << plain(100 * n.value / std::max(root.value, 1.0), 3) << "%)</title><rect x=\"" << plain(10 + x, 7) << "\" y=\"" << y
      << "\" width=\"" << plain(w, 6) << "\" height=\"" << row - 1 << "\" fill=\""
      << (d == 0 ? std::string("#d0d0d0") : flame_color(n.name)) << "\" rx=\"2\"/>";
    const std::string label = fit_label(n.name, w);
    if (!label.empty())
      s << "<text x=\"" << plain(13 + x, 7) << "\" y=\"" << y + row - 5 << "\">" << xml_escape(label) << "</text>";
    s << "</g>\n";
    double cx = x;
    // Largest first, so the heavy paths sit on the left.
    std::vector<const FlameNode*> kids;
    for (const auto& [k, c] : n.children) kids.push_back(c.get());
    std::stable_sort(kids.begin(), kids.end(), [](const FlameNode* a, const FlameNode* b) { return a->value > b->value; });
    for (const FlameNode* c : kids) {
      draw(*c, cx, d + 1);
      cx += root.value > 0 ? c->value / root.value * W : 0;
    }
  };
  draw(root, 0, 0);
  s << "</svg>\n";
  return s.str();
}

std::string render_function_scaling_svg(const AnalysisResult& res) {
  const auto& p = res.profile;
  const auto& configs = res.run.configs;
  const int nconf = static_cast<int>(configs.size());
  std::vector<int> order;
  for (int ci = 0; ci < nconf; ++ci) order.push_back(ci);
  if (!res.axis.empty())
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return configs[static_cast<std::size_t>(a)].concurrency(res.axis) <
             configs[static_cast<std::size_t>(b)].concurrency(res.axis);
    });
  const std::vector<int>& shown = p.shown;  // the same functions as the table and the sentences
  double ymax = 0, ymin_pos = 0;
  for (int fi : shown)
    for (const auto& a : p.functions[static_cast<std::size_t>(fi)].at)
      if (available(a.time_s) && a.time_s > 0) {
        ymax = std::max(ymax, a.time_s);
        ymin_pos = ymin_pos > 0 ? std::min(ymin_pos, a.time_s) : a.time_s;
      }
  if (ymax <= 0) ymax = 1;
  // One function that dwarfs the rest (issue 25: on a linear axis every other
  // line sat on zero) gets a log axis; comparable ones keep a linear axis.
  const bool log_axis = ymin_pos > 0 && ymax / ymin_pos > 20;
  const double W = 900, H = 420, left = 70, right = 300, top = 40, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  chart::LinearAxis lin;
  double llo = 0, lhi = 1;  // log10 range of the log axis
  std::vector<double> ticks;
  if (log_axis) {
    llo = std::floor(std::log10(ymin_pos));
    lhi = std::ceil(std::log10(ymax));
    if (lhi <= llo) lhi = llo + 1;
    ticks = chart::log10_ticks(std::pow(10.0, llo), std::pow(10.0, lhi), 8);
  } else {
    lin = chart::nice_linear_axis(0, ymax, 5);
    ticks = lin.ticks;
  }
  auto xpos = [&](int i) { return left + (order.size() > 1 ? pw * i / static_cast<double>(order.size() - 1) : pw / 2); };
  auto ypos = [&](double v) {
    if (log_axis) return top + ph * (1 - (std::log10(std::max(v, std::pow(10.0, llo))) - llo) / (lhi - llo));
    return top + ph * (1 - v / lin.hi);
  };
  static const char* const kColors[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  std::ostringstream s;  // the body; the <svg> element, as tall as the legend needs, is written last
  s << "<text x=\"" << left << "\" y=\"22\" font-size=\"14\">Scaling by function: critical-path time (sampled)</text>\n";
  s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (double v : ticks) {
    s << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << plain(ypos(v), 6) << "\" y2=\"" << plain(ypos(v), 6)
      << "\" stroke=\"#eee\"/><text class=\"tick\" x=\"" << left - 6 << "\" y=\"" << plain(ypos(v) + 4, 6)
      << "\" text-anchor=\"end\">" << chart::tick_label(v) << "</text>\n";
  }
  s << "<text class=\"axis-title\" x=\"16\" y=\"" << top + ph / 2 << "\" transform=\"rotate(-90 16 " << top + ph / 2
    << ")\" text-anchor=\"middle\">" << (log_axis ? "seconds (log scale)" : "seconds") << "</text>\n";
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& c = configs[static_cast<std::size_t>(order[i])];
    const std::string label = res.axis.empty() ? c.label : res.axis + "=" + plain(c.concurrency(res.axis), 6);
    s << "<text class=\"tick\" x=\"" << xpos(static_cast<int>(i)) << "\" y=\"" << top + ph + 18
      << "\" text-anchor=\"middle\">" << xml_escape(label) << "</text>\n";
  }
  // Legend names wrapped over lines, never cut inside a word (issue 30); the
  // full name is the tooltip and the HTML report's function table.
  double legend_y = top + 10, legend_bottom = 0;
  const std::size_t legend_chars = static_cast<std::size_t>((right - 40) / 6.5);
  std::ostringstream legend;
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const auto& f = p.functions[static_cast<std::size_t>(shown[k])];
    const char* color = kColors[k % 8];
    std::ostringstream path;
    bool first = true;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const double v = f.at[static_cast<std::size_t>(order[i])].time_s;
      if (!available(v) || (log_axis && v <= 0)) continue;
      path << (first ? "M" : " L") << plain(xpos(static_cast<int>(i)), 6) << " " << plain(ypos(v), 6);
      first = false;
      s << "<circle cx=\"" << plain(xpos(static_cast<int>(i)), 6) << "\" cy=\"" << plain(ypos(v), 6) << "\" r=\"3.5\" fill=\""
        << color << "\"><title>" << xml_escape(f.name) << ": " << plain(v) << " s</title></circle>\n";
    }
    if (!first) s << "<path d=\"" << path.str() << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n";
    const double ly = legend_y, lx = left + pw + 32;
    const auto lines = format::wrap_lines(f.short_name + " [" + f.category + "]", legend_chars);
    legend << "<rect x=\"" << left + pw + 14 << "\" y=\"" << ly - 9 << "\" width=\"12\" height=\"12\" fill=\""
           << color << "\"/><text class=\"legend\" x=\"" << lx << "\" y=\"" << ly + 1 << "\">";
    for (std::size_t i = 0; i < lines.size(); ++i)
      legend << "<tspan x=\"" << lx << "\"" << (i ? " dy=\"15\"" : "") << ">" << xml_escape(lines[i]) << "</tspan>";
    legend << "<title>" << xml_escape(f.name + " [" + f.category + "]") << "</title></text>\n";
    legend_y += 15 * static_cast<double>(lines.size()) + 5;
    legend_bottom = ly + 15 * static_cast<double>(lines.size());
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\""
      << plain(std::max(H, std::ceil(legend_bottom + 10)), 6) << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << s.str() << legend.str() << "</svg>\n";
  return svg.str();
}

std::vector<SvgChart> render_profile_svgs(const AnalysisResult& res) {
  std::vector<SvgChart> out;
  const auto& p = res.profile;
  if (!p.available) return out;
  if (!p.functions.empty())
    out.push_back({"scaling-by-function.svg", "Scaling by function (sampled)", render_function_scaling_svg(res)});
  for (std::size_t ci = 0; ci < p.folded.size() && ci < res.run.configs.size(); ++ci) {
    if (p.folded[ci].empty()) continue;
    char name[32];
    std::snprintf(name, sizeof name, "flame-c%03d.svg", static_cast<int>(ci));
    const std::string title = "Flame graph (icicle), " + res.run.configs[ci].label + ": sampled CPU time, all ranks and threads";
    out.push_back({name, title, render_flame_svg(p.folded[ci], title)});
  }
  return out;
}

}  // namespace rtrace::analysis
