// Hand-written SVG charts: hierarchical roofline per configuration, scaling
// trajectory per kernel, speedup/efficiency vs concurrency, instruction roofline.
//
// Log-log charts use the same pixels per decade on both axes, so every
// bandwidth ceiling is a 45-degree line and its label can follow it. Labels
// are placed by trying candidate positions and keeping the first one whose
// box overlaps no label already placed.
#include "rtrace/analysis/report.hpp"
#include "chart_axes.hpp"
#include "text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace rtrace::analysis {
namespace {

using format::plain;

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr int kPaletteSize = 8;
const char* kFont = "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\"";


std::string decade_label(int k) {
  if (k >= -3 && k <= 4) return plain(std::pow(10.0, k), 6);
  return "1e" + std::to_string(k);
}

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// Sequential colours for concurrency (light to dark blue-purple).
std::string seq_color(int i, int n) {
  double t = n > 1 ? static_cast<double>(i) / (n - 1) : 1.0;
  int r = static_cast<int>(70 + t * (90 - 70)), g = static_cast<int>(170 - t * 150), b = static_cast<int>(220 - t * 80);
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

class Canvas {
 public:
  Canvas(int w, int h) : w_(w), h_(h) {}
  void text(double x, double y, const std::string& s, int size = 13, const char* anchor = "start",
            const std::string& color = "#222", double rotate = 0, bool bold = false) {
    if (rotate == 0) extend(x, y, s, size, anchor);
    os_ << "<text x=\"" << plain(x, 6) << "\" y=\"" << plain(y, 6) << "\" font-size=\"" << size << "\" " << kFont
        << " text-anchor=\"" << anchor << "\" fill=\"" << color << "\"";
    if (bold) os_ << " font-weight=\"bold\"";
    if (rotate != 0) os_ << " transform=\"rotate(" << plain(rotate, 4) << " " << plain(x, 6) << " " << plain(y, 6) << ")\"";
    os_ << ">" << xml_escape(s) << "</text>\n";
  }
  // Text a test (or a stylesheet) can find by role: "tick", "legend",
  // "axis-title", "value"; `full` becomes a tooltip when the text shows less.
  void classed(const char* cls, double x, double y, const std::string& shown, int size = 13,
               const char* anchor = "start", const std::string& full = "", double rotate = 0,
               const std::string& color = "#222") {
    if (rotate == 0) extend(x, y, shown, size, anchor);
    os_ << "<text class=\"" << cls << "\" x=\"" << plain(x, 6) << "\" y=\"" << plain(y, 6) << "\" font-size=\"" << size
        << "\" " << kFont << " text-anchor=\"" << anchor << "\" fill=\"" << color << "\"";
    if (rotate != 0) os_ << " transform=\"rotate(" << plain(rotate, 4) << " " << plain(x, 6) << " " << plain(y, 6) << ")\"";
    os_ << ">" << xml_escape(shown);
    if (!full.empty() && full != shown) os_ << "<title>" << xml_escape(full) << "</title>";
    os_ << "</text>\n";
  }
  // A legend entry of several lines (chart::wrapped words, never shortened):
  // one <text class="legend"> with a <tspan> per line. Returns its height.
  double legend(double x, double y, const std::vector<std::string>& lines, int size = 13,
                const std::string& color = "#222") {
    const double step = size * 1.25;
    os_ << "<text class=\"legend\" x=\"" << plain(x, 6) << "\" y=\"" << plain(y, 6) << "\" font-size=\"" << size
        << "\" " << kFont << " fill=\"" << color << "\">";
    for (std::size_t i = 0; i < lines.size(); ++i) {
      extend(x, y + step * static_cast<double>(i), lines[i], size, "start");
      os_ << "<tspan x=\"" << plain(x, 6) << "\"" << (i ? " dy=\"" + plain(step, 4) + "\"" : std::string()) << ">"
          << xml_escape(lines[i]) << "</tspan>";
    }
    os_ << "</text>\n";
    return step * static_cast<double>(std::max<std::size_t>(1, lines.size()));
  }
  void line(double x0, double y0, double x1, double y1, const std::string& color, double width = 1,
            const char* dash = nullptr, const char* marker_end = nullptr) {
    os_ << "<line x1=\"" << plain(x0, 6) << "\" y1=\"" << plain(y0, 6) << "\" x2=\"" << plain(x1, 6) << "\" y2=\""
        << plain(y1, 6) << "\" stroke=\"" << color << "\" stroke-width=\"" << plain(width, 3) << "\"";
    if (dash) os_ << " stroke-dasharray=\"" << dash << "\"";
    if (marker_end) os_ << " marker-end=\"url(#" << marker_end << ")\"";
    os_ << "/>\n";
  }
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke = "none") {
    os_ << "<rect x=\"" << plain(x, 6) << "\" y=\"" << plain(y, 6) << "\" width=\"" << plain(w, 6) << "\" height=\""
        << plain(h, 6) << "\" fill=\"" << fill << "\" stroke=\"" << stroke << "\"/>\n";
  }
  // Marker shapes per memory level: circle, square, triangle, diamond.
  void marker(int shape, double x, double y, const std::string& color, double r = 5.5, bool hollow = false) {
    std::string style = hollow ? "fill=\"white\" stroke=\"" + color + "\" stroke-width=\"2\""
                               : "fill=\"" + color + "\" stroke=\"#222\" stroke-width=\"0.8\"";
    switch (shape % 4) {
      case 0: os_ << "<circle cx=\"" << plain(x, 6) << "\" cy=\"" << plain(y, 6) << "\" r=\"" << plain(r, 3) << "\" " << style << "/>\n"; break;
      case 1: os_ << "<rect x=\"" << plain(x - r, 6) << "\" y=\"" << plain(y - r, 6) << "\" width=\"" << plain(2 * r, 3)
                  << "\" height=\"" << plain(2 * r, 3) << "\" " << style << "/>\n"; break;
      case 2: os_ << "<polygon points=\"" << plain(x, 6) << "," << plain(y - r * 1.2, 6) << " " << plain(x - r * 1.1, 6) << ","
                  << plain(y + r * 0.8, 6) << " " << plain(x + r * 1.1, 6) << "," << plain(y + r * 0.8, 6) << "\" " << style << "/>\n"; break;
      default: os_ << "<polygon points=\"" << plain(x, 6) << "," << plain(y - r * 1.3, 6) << " " << plain(x + r * 1.3, 6) << ","
                   << plain(y, 6) << " " << plain(x, 6) << "," << plain(y + r * 1.3, 6) << " " << plain(x - r * 1.3, 6) << ","
                   << plain(y, 6) << "\" " << style << "/>\n";
    }
  }
  void raw(const std::string& s) { os_ << s; }
  // Places a label at the first candidate (x, y, anchor) whose box is free; returns false if none was.
  bool place(const std::vector<std::pair<double, double>>& candidates, const std::string& s, int size,
             const char* anchor, const std::string& color, double rotate = 0) {
    double w = 0.6 * size * static_cast<double>(s.size()), h = size * 1.15;
    // Rotated (-45 degree) text covers a diagonal band: model it as small boxes along the diagonal.
    auto boxes_at = [&](double x, double y) {
      std::vector<Box> out;
      if (rotate != 0) {
        double d = w / std::sqrt(2.0);
        const int n = 5;
        for (int i = 0; i < n; ++i) {
          double cx = x + d * (i + 0.5) / n, cy = y - d * (i + 0.5) / n;
          double half = d / n / 2 + h / 2;
          out.push_back(Box{cx - half, cy - half, cx + half, cy + half});
        }
        return out;
      }
      double x0 = std::string(anchor) == "end" ? x - w : (std::string(anchor) == "middle" ? x - w / 2 : x);
      out.push_back(Box{x0, y - h + 2, x0 + w, y + 3});
      return out;
    };
    for (const auto& [x, y] : candidates) {
      std::vector<Box> bs = boxes_at(x, y);
      bool free = std::none_of(bs.begin(), bs.end(), [&](const Box& b) {
        return std::any_of(placed_.begin(), placed_.end(), [&](const Box& o) { return o.overlaps(b); });
      });
      if (free) {
        placed_.insert(placed_.end(), bs.begin(), bs.end());
        text(x, y, s, size, anchor, color, rotate);
        return true;
      }
    }
    return false;
  }
  void reserve(const Box& b) { placed_.push_back(b); }
  std::string str() const {
    // Wide enough for every text drawn (a long name widens the chart, never gets cut).
    const int w = std::max(w_, static_cast<int>(std::ceil(max_x_ + 12)));
    const int h = std::max(h_, static_cast<int>(std::ceil(max_y_ + 12)));
    std::ostringstream out;
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 "
        << w << " " << h << "\">\n"
        << "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
           "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444\"/></marker></defs>\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        << os_.str() << "</svg>\n";
    return out.str();
  }

 private:
  // The right and bottom edges of unrotated text, as place() estimates text width.
  void extend(double x, double y, const std::string& s, int size, const char* anchor) {
    const double w = 0.6 * size * static_cast<double>(s.size());
    const std::string a = anchor;
    max_x_ = std::max(max_x_, a == "end" ? x : a == "middle" ? x + w / 2 : x + w);
    max_y_ = std::max(max_y_, y + 0.3 * size);
  }
  int w_, h_;
  double max_x_ = 0, max_y_ = 0;
  std::ostringstream os_;
  std::vector<Box> placed_;
};

// Log-log frame with equal pixels per decade.
struct LogFrame {
  double left = 90, top = 56;
  int xlo = -2, xhi = 2, ylo = -1, yhi = 3;
  double ppd = 100;  // pixels per decade
  double width() const { return (xhi - xlo) * ppd; }
  double height() const { return (yhi - ylo) * ppd; }
  double X(double v) const { return left + (std::log10(v) - xlo) * ppd; }
  double Y(double v) const { return top + (yhi - std::log10(v)) * ppd; }
  double xmin() const { return std::pow(10.0, xlo); }
  double xmax() const { return std::pow(10.0, xhi); }
  double ymin() const { return std::pow(10.0, ylo); }
  double ymax() const { return std::pow(10.0, yhi); }
  bool inside(double x, double y) const { return x >= xmin() && x <= xmax() && y >= ymin() && y <= ymax(); }

  static LogFrame fit(double xmin_v, double xmax_v, double ymin_v, double ymax_v, double max_w, double max_h) {
    LogFrame f;
    f.xlo = static_cast<int>(std::floor(std::log10(xmin_v)));
    f.xhi = static_cast<int>(std::ceil(std::log10(xmax_v)));
    f.ylo = static_cast<int>(std::floor(std::log10(ymin_v)));
    f.yhi = static_cast<int>(std::ceil(std::log10(ymax_v)));
    if (f.xhi <= f.xlo) f.xhi = f.xlo + 1;
    if (f.yhi <= f.ylo) f.yhi = f.ylo + 1;
    if (f.xhi - f.xlo > 8) f.xlo = f.xhi - 8;
    if (f.yhi - f.ylo > 7) f.ylo = f.yhi - 7;
    f.ppd = std::min(max_w / (f.xhi - f.xlo), max_h / (f.yhi - f.ylo));
    f.ppd = std::min(f.ppd, 150.0);
    return f;
  }

  void draw(Canvas& c, const std::string& xtitle, const std::string& ytitle) const {
    c.rect(left, top, width(), height(), "#fbfbfb", "#999");
    for (int k = xlo; k <= xhi; ++k) {
      double x = left + (k - xlo) * ppd;
      if (k > xlo && k < xhi) c.line(x, top, x, top + height(), "#ddd");
      for (int m = 2; m <= 9 && k < xhi; ++m) {
        double xm = x + std::log10(m) * ppd;
        c.line(xm, top + height(), xm, top + height() - 4, "#999");
      }
      c.line(x, top + height(), x, top + height() + 6, "#444");
      c.classed("tick", x, top + height() + 21, decade_label(k), 13, "middle");
    }
    for (int k = ylo; k <= yhi; ++k) {
      double y = top + (yhi - k) * ppd;
      if (k > ylo && k < yhi) c.line(left, y, left + width(), y, "#ddd");
      for (int m = 2; m <= 9 && k < yhi; ++m) {
        double ym = y - std::log10(m) * ppd;
        c.line(left, ym, left + 4, ym, "#999");
      }
      c.line(left - 6, y, left, y, "#444");
      c.classed("tick", left - 9, y + 4.5, decade_label(k), 13, "end");
    }
    c.classed("axis-title", left + width() / 2, top + height() + 44, xtitle, 14, "middle");
    c.classed("axis-title", left - 62, top + height() / 2, ytitle, 14, "middle", "", -90);
    // Axis labels are fixed furniture: keep ceiling labels off them.
    c.reserve(Box{left - 70, top, left - 1, top + height()});
    c.reserve(Box{left, top + height() + 1, left + width(), top + height() + 50});
  }
};

// The dash of a ceiling the ERT marked unreliable (the no-FMA peaks are "6,4").
const char* const kUnreliableDash = "2,4";

// The legend's notes on the unreliable ceilings of `configs` (one per ceiling
// and configuration: "DRAM at threads=2: measured on a busy machine ..."); none when all are reliable.
std::vector<std::string> unreliable_notes(const AnalysisResult& res, const std::vector<int>& configs) {
  std::vector<std::string> out;
  for (int ci : configs) {
    const auto& conf = res.run.configs[static_cast<std::size_t>(ci)];
    for (const auto& x : conf.ceilings.all())
      if (x.unreliable)
        out.push_back(x.name + " at " + (conf.label.empty() ? "configuration " + std::to_string(ci) : conf.label) +
                      (x.unreliable_reason.empty() ? "" : ": " + x.unreliable_reason));
  }
  return out;
}

// Draws the unreliable-ceiling notes under a legend; returns the new y.
double draw_unreliable_notes(Canvas& c, double lx, double ly, const std::vector<std::string>& notes, std::size_t chars) {
  if (notes.empty()) return ly;
  ly += 10;
  c.line(lx, ly - 4, lx + 28, ly - 4, "#555", 2, kUnreliableDash);
  c.text(lx + 36, ly, "unreliable ceiling (the ERT's own check)", 12, "start", "#a00", 0, true);
  ly += 18;
  for (const auto& n : notes) ly += c.legend(lx, ly, format::wrap_lines(n, chars), 11, "#444") + 4;
  return ly;
}

// Draws the ceilings of one configuration (bandwidth diagonals up to the top
// peak, compute horizontals from the top bandwidth's ridge), labelled.
void draw_ceilings(Canvas& c, const LogFrame& f, const CeilingSet& cs, const std::string& color, bool labels,
                   const std::vector<MemLevel>& only_levels = {}, const std::string& only_peak = "") {
  double top_peak = 0, top_bw = 0;
  for (const auto& x : cs.all()) {
    if (!available(x.value) || x.value <= 0) continue;
    if (x.kind == "compute" && (only_peak.empty() || x.name == only_peak)) top_peak = std::max(top_peak, x.value);
    if (x.kind == "bandwidth") top_bw = std::max(top_bw, x.value);
  }
  if (top_peak == 0) top_peak = f.ymax();
  for (MemLevel l : kAllLevels) {
    if (!only_levels.empty() && std::find(only_levels.begin(), only_levels.end(), l) == only_levels.end()) continue;
    const Ceiling* b = cs.bandwidth(l);
    if (!b) continue;
    double x0 = std::max(f.xmin(), f.ymin() / b->value), x1 = std::min(f.xmax(), top_peak / b->value);
    if (x1 <= x0) continue;
    // A ceiling the ERT itself marked unreliable: dotted, and labelled so.
    c.line(f.X(x0), f.Y(b->value * x0), f.X(x1), f.Y(b->value * x1), color, 2, b->unreliable ? kUnreliableDash : nullptr);
    if (labels) {
      std::string s = b->name + " " + plain(b->value, 4) + " GB/s" + (b->unreliable ? " (unreliable)" : "");
      std::vector<std::pair<double, double>> cand;
      for (double t : {0.12, 0.3, 0.5, 0.7, 0.05}) {
        double lx = std::pow(10.0, std::log10(x0) + t * (std::log10(x1) - std::log10(x0)));
        cand.push_back({f.X(lx) + 4, f.Y(b->value * lx) - 6});
      }
      c.place(cand, s, 12, "start", color, -45);
    }
  }
  for (const auto& x : cs.all()) {
    if (x.kind != "compute" || !available(x.value) || x.value <= 0 || x.value > f.ymax() || x.value < f.ymin()) continue;
    if (!only_peak.empty() && x.name != only_peak) continue;
    double xr = top_bw > 0 ? std::max(f.xmin(), x.value / top_bw) : f.xmin();
    const bool main_peak = x.variant == "fma" || x.variant == "mma";
    c.line(f.X(xr), f.Y(x.value), f.X(f.xmax()), f.Y(x.value), color, main_peak ? 2 : 1.2,
           x.unreliable ? kUnreliableDash : main_peak ? nullptr : "6,4");
    if (labels) {
      std::string s = x.name + " " + plain(x.value, 4) + " GFLOP/s" + (x.unreliable ? " (unreliable)" : "");
      double xe = f.X(f.xmax()) - 6;
      c.place({{xe, f.Y(x.value) - 5}, {xe, f.Y(x.value) + 15}, {xe - 230, f.Y(x.value) - 5}, {xe - 230, f.Y(x.value) + 15}},
              s, 12, "end", color);
    }
  }
}

void collect_ceiling_range(const CeilingSet& cs, double& xmin, double& xmax, double& ymin, double& ymax) {
  double top_peak = 0;
  for (const auto& x : cs.all())
    if (x.kind == "compute" && available(x.value)) top_peak = std::max(top_peak, x.value);
  for (const auto& x : cs.all()) {
    if (!available(x.value) || x.value <= 0) continue;
    if (x.kind == "compute") { ymax = std::max(ymax, x.value * 2); ymin = std::min(ymin, x.value / 100); }
    if (x.kind == "bandwidth" && top_peak > 0) {
      double ridge = top_peak / x.value;
      xmin = std::min(xmin, ridge / 30);
      xmax = std::max(xmax, ridge * 8);
    }
  }
}

std::string roofline_chart(const AnalysisResult& res, int ci) {
  const auto& conf = res.run.configs[ci];
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  collect_ceiling_range(conf.ceilings, xmin, xmax, ymin, ymax);
  std::vector<int> shown;
  for (int ki = 0; ki < static_cast<int>(res.kernels.size()) && shown.size() < kPaletteSize; ++ki) {
    const auto& e = res.kernels[ki].eval[ci];
    if (res.kernels[ki].at[ci] < 0 || !available(e.gflops)) continue;
    shown.push_back(ki);
    for (double a : e.ai)
      if (available(a)) { xmin = std::min(xmin, a / 2); xmax = std::max(xmax, a * 2); }
    ymin = std::min(ymin, e.gflops / 3);
    ymax = std::max(ymax, e.gflops * 2);
  }
  if (xmax == 0) { xmin = 0.01; xmax = 100; }
  if (ymax == 0) { ymin = 0.1; ymax = 1000; }
  LogFrame f = LogFrame::fit(xmin, xmax, ymin, ymax, 620, 520);
  const int legend_w = 300;
  int W = static_cast<int>(f.left + f.width() + 30 + legend_w), H = static_cast<int>(f.top + f.height() + 64);
  H = std::max(H, 150 + 22 * static_cast<int>(shown.size() + kLevelCount));  // legend, levels, counts source
  Canvas c(W, H);
  c.text(f.left, 30, "Roofline: " + (conf.label.empty() ? "configuration " + std::to_string(ci) : conf.label), 17,
         "start", "#111", 0, true);
  f.draw(c, "Arithmetic intensity (FLOP/byte)", "Performance (GFLOP/s)");
  draw_ceilings(c, f, conf.ceilings, "#555", true);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto& e = res.kernels[shown[i]].eval[ci];
    for (int l = 0; l < kLevelCount; ++l)
      if (available(e.ai[l]) && f.inside(e.ai[l], e.gflops))
        c.marker(l, f.X(e.ai[l]), f.Y(e.gflops), kPalette[i % kPaletteSize]);
  }
  double lx = f.left + f.width() + 30, ly = f.top + 10;
  c.text(lx, ly, "Kernels (colour)", 13, "start", "#111", 0, true);
  ly += 22;
  // Full names, wrapped (issue 30: never cut inside a word).
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const int ki = shown[i];
    const std::string name = (res.kernels[ki].kind == kFunctionKind ? "function " : "") + res.kernels[ki].name;
    c.rect(lx, ly - 11, 14, 14, kPalette[i % kPaletteSize]);
    ly += c.legend(lx + 22, ly + 1, format::wrap_lines(name, 34)) + 6;
  }
  if (shown.empty()) { c.text(lx, ly, "no kernel has operation counts", 12, "start", "#a00"); ly += 22; }
  ly += 10;
  c.text(lx, ly, "Memory level (shape)", 13, "start", "#111", 0, true);
  ly += 22;
  for (MemLevel l : kAllLevels) {
    const Ceiling* b = conf.ceilings.bandwidth(l);
    c.marker(static_cast<int>(l), lx + 7, ly - 4, "#888");
    c.text(lx + 22, ly + 1, b ? b->name : level_key(l), 13);
    ly += 22;
  }
  // Where the counted points come from (the application and its functions).
  for (int ki : shown) {
    const auto& s = res.kernels[ki];
    if (!is_counted_kind(s.kind)) continue;
    ly += 10;
    const std::string source = "Counts: " + conf.kernels[s.at[ci]].counts_source;
    ly += c.legend(lx, ly, format::wrap_lines(source, 48), 11, "#444");
    break;
  }
  draw_unreliable_notes(c, lx, ly, unreliable_notes(res, {ci}), 48);
  return c.str();
}

std::string trajectory_chart(const AnalysisResult& res, const Trajectory& t) {
  const auto& configs = res.run.configs;
  const auto& s = res.kernels[t.kernel];
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  // The level whose ceiling the roof is drawn for: the binding level at the last point.
  const RooflineEval& last = s.eval[t.configs.back()];
  MemLevel roof_level = MemLevel::DRAM;
  level_from_ceiling_name(last.binding, roof_level);
  for (int ci : t.configs) {
    const auto& e = s.eval[ci];
    for (double a : e.ai)
      if (available(a)) { xmin = std::min(xmin, a / 3); xmax = std::max(xmax, a * 3); }
    if (available(e.gflops)) { ymin = std::min(ymin, e.gflops / 3); ymax = std::max(ymax, e.gflops * 3); }
    if (available(e.peak_gflops)) ymax = std::max(ymax, e.peak_gflops * 1.5);
  }
  if (xmax == 0 || ymax == 0) return "";
  LogFrame f = LogFrame::fit(xmin, xmax, ymin, ymax, 620, 480);
  const int legend_w = 330;
  int W = static_cast<int>(f.left + f.width() + 30 + legend_w);
  int H = std::max(static_cast<int>(f.top + f.height() + 64), 140 + 22 * static_cast<int>(2 * t.configs.size() + 5));
  Canvas c(W, H);
  c.text(f.left, 30, "Scaling trajectory: " + s.name + (t.fixed.empty() ? "" : " (" + t.fixed + ")"), 17, "start",
         "#111", 0, true);
  f.draw(c, "Arithmetic intensity (FLOP/byte)", "Performance (GFLOP/s)");
  const int n = static_cast<int>(t.configs.size());
  for (int i = 0; i < n; ++i) {
    int ci = t.configs[i];
    draw_ceilings(c, f, configs[ci].ceilings, seq_color(i, n), i == n - 1, {roof_level}, s.eval[ci].peak_name);
  }
  for (int l = 0; l < kLevelCount; ++l) {  // arrows per level, point to point
    for (int i = 0; i + 1 < n; ++i) {
      const auto& a = s.eval[t.configs[i]];
      const auto& b = s.eval[t.configs[i + 1]];
      if (!available(a.ai[l]) || !available(b.ai[l]) || !available(a.gflops) || !available(b.gflops)) continue;
      double x0 = f.X(a.ai[l]), y0 = f.Y(a.gflops), x1 = f.X(b.ai[l]), y1 = f.Y(b.gflops);
      double len = std::hypot(x1 - x0, y1 - y0);
      if (len < 14) continue;  // too short for an arrow: the markers overlap anyway
      double ux = (x1 - x0) / len, uy = (y1 - y0) / len;
      // The roof level's path is the story; the other levels stay in the background.
      const bool main_path = l == static_cast<int>(roof_level);
      c.line(x0 + 7 * ux, y0 + 7 * uy, x1 - 8 * ux, y1 - 8 * uy, main_path ? "#222" : "#bbb", main_path ? 2 : 1, nullptr,
             "arrow");
    }
  }
  for (int i = 0; i < n; ++i) {
    const auto& e = s.eval[t.configs[i]];
    for (int l = 0; l < kLevelCount; ++l)
      if (available(e.ai[l]) && available(e.gflops) && f.inside(e.ai[l], e.gflops))
        c.marker(l, f.X(e.ai[l]), f.Y(e.gflops), seq_color(i, n));
  }
  double lx = f.left + f.width() + 30, ly = f.top + 10;
  c.text(lx, ly, res.axis + " (colour; roof = " + std::string(level_key(roof_level)) + " + peak)", 13, "start", "#111", 0, true);
  ly += 22;
  for (int i = 0; i < n; ++i) {
    c.rect(lx, ly - 11, 14, 14, seq_color(i, n));
    c.text(lx + 22, ly + 1, res.axis + "=" + plain(configs[t.configs[i]].concurrency(res.axis), 6), 13);
    ly += 22;
  }
  ly += 8;
  c.text(lx, ly, "Memory level (shape)", 13, "start", "#111", 0, true);
  ly += 22;
  for (MemLevel l : kAllLevels) {
    c.marker(static_cast<int>(l), lx + 7, ly - 4, "#888");
    c.text(lx + 22, ly + 1, level_key(l), 13);
    ly += 22;
  }
  ly += 8;
  c.text(lx, ly, "Steps", 13, "start", "#111", 0, true);
  ly += 22;
  for (const auto& st : t.steps) {
    // Wrapped, never shortened (issue 30: "cache-capacity at r…ers").
    const std::string step = plain(st.c1, 6) + " -> " + plain(st.c2, 6) + ": " + describe_step(st.d);
    ly += c.legend(lx, ly, format::wrap_lines(step, 44), 12) + 6;
  }
  draw_unreliable_notes(c, lx, ly, unreliable_notes(res, t.configs), 48);
  return c.str();
}

std::string scaling_chart(const AnalysisResult& res, const AppSummary& sum) {
  if (sum.points.size() < 2) return "";
  const auto& configs = res.run.configs;
  struct Series { std::string name; std::string color; std::vector<std::pair<double, double>> speedup, eff; };
  std::vector<Series> series;
  Series app{"application", "#111", {}, {}};
  for (const auto& p : sum.points)
    if (available(p.speedup)) {
      app.speedup.push_back({p.concurrency, p.speedup});
      app.eff.push_back({p.concurrency, p.efficiency});
    }
  series.push_back(app);
  const double c0 = sum.points.front().concurrency;
  for (int ki = 0; ki < static_cast<int>(res.kernels.size()) && series.size() < 7; ++ki) {
    const auto& s = res.kernels[ki];
    // The counted application is timed as the application: the same series, drawn once
    // (issue 30: the legend listed "application" twice).
    if (s.kind == kApplicationKind) continue;
    int base = sum.points.front().config;
    if (s.at[base] < 0) continue;
    double t0 = configs[base].kernels[s.at[base]].time_s;
    Series ser{s.name, kPalette[(series.size() - 1) % kPaletteSize], {}, {}};
    for (const auto& p : sum.points) {
      if (s.at[p.config] < 0) continue;
      double sp = t0 / configs[p.config].kernels[s.at[p.config]].time_s;
      if (!available(sp)) continue;
      if (sum.weak) sp *= p.concurrency / c0;  // scaled speedup: the work grows with the concurrency
      ser.speedup.push_back({p.concurrency, sp});
      ser.eff.push_back({p.concurrency, sp / (p.concurrency / c0)});
    }
    if (ser.speedup.size() > 1) series.push_back(ser);
  }
  double cmax = sum.points.back().concurrency;
  double smax = cmax / c0, smin = 1, emax = 1.2;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.speedup) { smax = std::max(smax, y); smin = std::min(smin, y); }
    for (const auto& [x, y] : s.eff) emax = std::max(emax, std::min(y, 4.0));
  }
  // Left panel: speedup vs concurrency, log2 both ways. Right panel: efficiency, linear.
  const double pw = 420, ph = 360, top = 60, left1 = 80, left2 = left1 + pw + 110;
  const int W = static_cast<int>(left2 + pw + 40), H = static_cast<int>(top + ph + 70 + 22 * ((series.size() + 2) / 3));
  Canvas c(W, H);
  std::string grows;
  for (const auto& g : sum.grows_with) grows += (grows.empty() ? "" : ", ") + g;
  c.text(left1, 30,
         (sum.weak ? "Weak scaling along " : "Scaling along ") + res.axis + (grows.empty() ? "" : " (" + grows + " grows)") +
             (sum.fixed.empty() ? "" : " (" + sum.fixed + ")"),
         17, "start", "#111", 0, true);
  double lx0 = std::log2(c0), lx1 = std::log2(cmax);
  if (lx1 <= lx0) lx1 = lx0 + 1;
  double ly0 = std::floor(std::log2(smin)), ly1 = std::ceil(std::log2(smax));
  if (ly1 <= ly0) ly1 = ly0 + 1;
  // The efficiency axis ends at a nice tick at or above the highest point.
  const chart::LinearAxis eaxis = chart::nice_linear_axis(0, emax, 6);
  emax = eaxis.hi;
  auto X1 = [&](double v) { return left1 + (std::log2(v) - lx0) / (lx1 - lx0) * pw; };
  auto Y1 = [&](double v) { return top + (ly1 - std::log2(v)) / (ly1 - ly0) * ph; };
  auto X2 = [&](double v) { return left2 + (std::log2(v) - lx0) / (lx1 - lx0) * pw; };
  auto Y2 = [&](double v) { return top + (emax - v) / emax * ph; };
  c.rect(left1, top, pw, ph, "#fbfbfb", "#999");
  c.rect(left2, top, pw, ph, "#fbfbfb", "#999");
  for (const auto& p : sum.points) {  // x ticks at every measured concurrency
    for (double xp : {X1(p.concurrency), X2(p.concurrency)}) {
      c.line(xp, top, xp, top + ph, "#e4e4e4");
      c.classed("tick", xp, top + ph + 20, chart::tick_label(p.concurrency), 13, "middle");
    }
  }
  // Speedup ticks: 1, 1.2, 1.5, 2 on a short range (a 2-point sweep showed only 1 and 2), powers of 2 on a long one.
  for (double v : chart::log2_ticks(std::pow(2.0, ly0), std::pow(2.0, ly1))) {
    const double y = Y1(v);
    c.line(left1, y, left1 + pw, y, "#e4e4e4");
    c.classed("tick", left1 - 8, y + 4.5, chart::tick_label(v), 13, "end");
  }
  for (double e : eaxis.ticks) {
    const double y = Y2(e);
    c.line(left2, y, left2 + pw, y, "#e4e4e4");
    c.classed("tick", left2 - 8, y + 4.5, chart::tick_label(e), 13, "end");
  }
  c.classed("axis-title", left1 + pw / 2, top + ph + 44, res.axis, 14, "middle");
  c.classed("axis-title", left2 + pw / 2, top + ph + 44, res.axis, 14, "middle");
  c.classed("axis-title", left1 - 52, top + ph / 2, sum.weak ? "Scaled speedup" : "Speedup", 14, "middle", "", -90);
  // What the right panel plots is speedup / concurrency ratio: for the
  // application that is POP's global efficiency (parallel efficiency x
  // computation scalability), not its parallel efficiency (issue 25: the
  // axis said "Parallel efficiency"); the POP chart has both.
  c.classed("axis-title", left2 - 52, top + ph / 2,
            sum.weak ? "Weak-scaling efficiency (t0 / t)" : "Global efficiency (speedup / concurrency ratio)", 13,
            "middle", "", -90);
  // Ideal lines.
  c.line(X1(c0), Y1(1), X1(cmax), Y1(cmax / c0), "#888", 1.5, "6,4");
  c.text(X1(cmax) - 6, Y1(cmax / c0) + 16, "ideal", 12, "end", "#666");
  c.line(X2(c0), Y2(1), X2(cmax), Y2(1), "#888", 1.5, "6,4");
  c.text(X2(cmax) - 6, Y2(1) - 6, "ideal", 12, "end", "#666");
  for (std::size_t si = 0; si < series.size(); ++si) {
    const auto& s = series[si];
    double width = si == 0 ? 3 : 1.8;
    for (std::size_t i = 0; i + 1 < s.speedup.size(); ++i) {
      c.line(X1(s.speedup[i].first), Y1(s.speedup[i].second), X1(s.speedup[i + 1].first), Y1(s.speedup[i + 1].second), s.color, width);
      c.line(X2(s.eff[i].first), Y2(std::min(s.eff[i].second, emax)), X2(s.eff[i + 1].first),
             Y2(std::min(s.eff[i + 1].second, emax)), s.color, width);
    }
    for (std::size_t i = 0; i < s.speedup.size(); ++i) {
      c.marker(0, X1(s.speedup[i].first), Y1(s.speedup[i].second), s.color, 4);
      c.marker(0, X2(s.eff[i].first), Y2(std::min(s.eff[i].second, emax)), s.color, 4);
    }
  }
  // The application's own values next to its points (past the first).
  for (std::size_t i = 1; i < app.speedup.size(); ++i) {
    c.classed("value", X1(app.speedup[i].first) - 8, Y1(app.speedup[i].second) - 9,
              plain(app.speedup[i].second, 3) + "x", 12, "end");
    c.classed("value", X2(app.eff[i].first) - 8, Y2(std::min(app.eff[i].second, emax)) - 9,
              format::percent(app.eff[i].second), 12, "end");
  }
  // Three entries per row, full names wrapped; a row as tall as its tallest entry.
  double ly = top + ph + 70, row_h = 0;
  for (std::size_t si = 0; si < series.size(); ++si) {
    double lx = left1 + static_cast<double>(si % 3) * 320;
    if (si && si % 3 == 0) {
      ly += row_h + 6;
      row_h = 0;
    }
    c.rect(lx, ly - 11, 14, 14, series[si].color);
    row_h = std::max(row_h, c.legend(lx + 22, ly + 1, format::wrap_lines(series[si].name, 36)));
  }
  return c.str();
}

// POP efficiencies against the concurrency: one line per factor, 0..1 (clipped at 1.2).
std::string efficiency_chart(const AnalysisResult& res, const AppSummary& sum) {
  if (sum.points.size() < 2) return "";
  struct Series { const char* name; std::string color; std::vector<std::pair<double, double>> pts; };
  std::vector<Series> series = {{"load balance", kPalette[0], {}},
                                {"communication efficiency", kPalette[1], {}},
                                {"parallel efficiency", kPalette[2], {}},
                                {"computation scalability", kPalette[3], {}},
                                {"global efficiency", "#111", {}}};
  for (const auto& p : sum.points) {
    const PopPoint& q = p.pop;
    double v[] = {q.load_balance, q.communication_efficiency, q.parallel_efficiency, q.computation_scalability,
                  q.global_efficiency};
    for (int i = 0; i < 5; ++i)
      if (available(v[i])) series[static_cast<std::size_t>(i)].pts.push_back({p.concurrency, std::min(v[i], 1.2)});
  }
  series.erase(std::remove_if(series.begin(), series.end(), [](const Series& s) { return s.pts.size() < 2; }),
               series.end());
  if (series.empty()) return "";
  const double c0 = sum.points.front().concurrency, cmax = sum.points.back().concurrency;
  const double pw = 520, ph = 320, top = 60, left = 80;
  const int W = static_cast<int>(left + pw + 260), H = static_cast<int>(top + ph + 70);
  Canvas c(W, H);
  c.text(left, 30, "POP efficiencies along " + res.axis + (sum.fixed.empty() ? "" : " (" + sum.fixed + ")"), 17,
         "start", "#111", 0, true);
  double lx0 = std::log2(c0), lx1 = std::log2(cmax);
  if (lx1 <= lx0) lx1 = lx0 + 1;
  auto X = [&](double v) { return left + (std::log2(v) - lx0) / (lx1 - lx0) * pw; };
  auto Y = [&](double v) { return top + (1.2 - v) / 1.2 * ph; };
  c.rect(left, top, pw, ph, "#fbfbfb", "#999");
  for (const auto& p : sum.points) {
    c.line(X(p.concurrency), top, X(p.concurrency), top + ph, "#e4e4e4");
    c.classed("tick", X(p.concurrency), top + ph + 20, chart::tick_label(p.concurrency), 13, "middle");
  }
  for (double e : chart::nice_linear_axis(0, 1.2, 6).ticks) {
    c.line(left, Y(e), left + pw, Y(e), "#e4e4e4");
    c.classed("tick", left - 8, Y(e) + 4.5, chart::tick_label(e), 13, "end");
  }
  c.line(left, Y(1), left + pw, Y(1), "#888", 1.5, "6,4");
  c.classed("axis-title", left + pw / 2, top + ph + 44, res.axis, 14, "middle");
  c.classed("axis-title", left - 52, top + ph / 2, "Efficiency (POP factors, 1 = ideal)", 14, "middle", "", -90);
  for (std::size_t si = 0; si < series.size(); ++si) {
    const auto& s = series[si];
    for (std::size_t i = 0; i + 1 < s.pts.size(); ++i)
      c.line(X(s.pts[i].first), Y(s.pts[i].second), X(s.pts[i + 1].first), Y(s.pts[i + 1].second), s.color,
             si + 1 == series.size() ? 3 : 1.8);
    for (const auto& [x, y] : s.pts) c.marker(static_cast<int>(si), X(x), Y(y), s.color, 4);
    c.rect(left + pw + 24, top + 10 + 24 * static_cast<double>(si), 14, 14, s.color);
    c.classed("legend", left + pw + 46, top + 22 + 24 * static_cast<double>(si), s.name, 13);
  }
  return c.str();
}

std::string instruction_chart(const AnalysisResult& res, int ci) {
  std::vector<const InstructionPoint*> pts;
  for (const auto& ip : res.instruction)
    if (ip.config == ci && available(ip.warp_gips)) pts.push_back(&ip);
  if (pts.empty()) return "";
  double ymax = 1, ymin = 1e300;
  for (const auto* p : pts) {
    ymax = std::max({ymax, p->warp_gips * 3, available(p->peak_gips) ? p->peak_gips * 1.5 : 0.0});
    ymin = std::min(ymin, p->warp_gips / 3);
  }
  LogFrame f = LogFrame::fit(0.01, 100, ymin, ymax, 600, 460);
  int W = static_cast<int>(f.left + f.width() + 360), H = static_cast<int>(f.top + f.height() + 64);
  Canvas c(W, std::max(H, 320));
  const auto& conf = res.run.configs[ci];
  c.text(f.left, 30, "Instruction roofline: " + conf.label, 17, "start", "#111", 0, true);
  f.draw(c, "Instructions per 32-byte transaction", "Performance (warp GIPS)");
  const auto* p0 = pts.front();
  std::vector<std::pair<std::string, double>> bws = {{"L1", p0->gtxn_l1}, {"L2", p0->gtxn_l2}, {"HBM", p0->gtxn_dram}};
  double peak = available(p0->peak_gips) ? p0->peak_gips : f.ymax();
  if (available(p0->peak_gips)) {
    c.line(f.left, f.Y(p0->peak_gips), f.left + f.width(), f.Y(p0->peak_gips), "#555", 2);
    c.place({{f.left + f.width() - 6, f.Y(p0->peak_gips) - 5}}, "peak " + plain(p0->peak_gips, 4) + " warp GIPS", 12,
            "end", "#555");
  }
  for (const auto& [name, g] : bws) {
    if (!available(g)) continue;
    double x0 = std::max(f.xmin(), f.ymin() / g), x1 = std::min(f.xmax(), peak / g);
    if (x1 <= x0) continue;
    c.line(f.X(x0), f.Y(g * x0), f.X(x1), f.Y(g * x1), "#555", 2);
    std::vector<std::pair<double, double>> cand;
    for (double t : {0.3, 0.5, 0.15, 0.7, 0.05}) {
      double lx = std::pow(10.0, std::log10(x0) + t * (std::log10(x1) - std::log10(x0)));
      cand.push_back({f.X(lx) + 4, f.Y(g * lx) - 6});
    }
    c.place(cand, name + " " + plain(g, 4) + " GTXN/s", 12, "start", "#555", -45);
  }
  // Global-memory walls: 32 transactions per LDST (stride >= 128 B), 8 (unit-stride FP64), 1 (same address).
  for (const auto& [x, name] : std::vector<std::pair<double, std::string>>{{1.0 / 32, "stride wall 1/32"},
                                                                          {1.0 / 8, "unit stride 1/8"},
                                                                          {1.0, "1 txn/LDST"}}) {
    c.line(f.X(x), f.top, f.X(x), f.top + f.height(), "#b07", 1.2, "4,3");
    std::vector<std::pair<double, double>> cand;
    for (int k = 0; k < 8; ++k) cand.push_back({f.X(x) + 4, f.top + f.height() - 10 - 18 * k});
    c.place(cand, name, 11, "start", "#b07");
  }
  double lx = f.left + f.width() + 30, ly = f.top + 10;
  c.text(lx, ly, "Kernels (colour)", 13, "start", "#111", 0, true);
  ly += 18;
  c.text(lx, ly, "circle: warp instr. / L1 txn", 12);
  ly += 16;
  c.text(lx, ly, "square: global LDST / global txn", 12);
  ly += 24;
  for (std::size_t i = 0; i < pts.size() && i < kPaletteSize; ++i) {
    const auto* p = pts[i];
    if (available(p->ii_l1) && f.inside(p->ii_l1, p->warp_gips)) c.marker(0, f.X(p->ii_l1), f.Y(p->warp_gips), kPalette[i]);
    if (available(p->ii_global) && f.inside(p->ii_global, p->warp_gips))
      c.marker(1, f.X(p->ii_global), f.Y(p->warp_gips), kPalette[i]);
    c.rect(lx, ly - 11, 14, 14, kPalette[i]);
    ly += c.legend(lx + 22, ly + 1, format::wrap_lines(res.kernels[p->kernel].name, 34)) + 6;
  }
  return c.str();
}

std::string safe_file_part(const std::string& s) {
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_') ? ch : '_';
  if (out.size() > 60) out.resize(60);
  return out;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<SvgChart> render_svgs(const AnalysisResult& res) {
  std::vector<SvgChart> out;
  for (int ci = 0; ci < static_cast<int>(res.run.configs.size()); ++ci) {
    char name[32];
    std::snprintf(name, sizeof name, "roofline-c%03d.svg", ci);
    // A roofline without a point (no kernel with counts here) shows nothing: left out.
    bool any_point = false;
    for (const auto& s : res.kernels) any_point |= s.at[ci] >= 0 && s.eval[ci].counts_available();
    if (any_point) out.push_back({name, "Roofline at " + res.run.configs[ci].label, roofline_chart(res, ci)});
    std::string ir = instruction_chart(res, ci);
    if (!ir.empty()) {
      std::snprintf(name, sizeof name, "instruction-c%03d.svg", ci);
      out.push_back({name, "Instruction roofline at " + res.run.configs[ci].label, ir});
    }
  }
  int ti = 0;
  for (const auto& t : res.trajectories) {
    std::string svg = trajectory_chart(res, t);
    ++ti;
    if (svg.empty()) continue;
    char idx[16];
    std::snprintf(idx, sizeof idx, "%03d", ti);
    out.push_back({"trajectory-" + std::string(idx) + "-" + safe_file_part(res.kernels[t.kernel].name) + ".svg",
                   "Trajectory of " + res.kernels[t.kernel].name + (t.fixed.empty() ? "" : " (" + t.fixed + ")"), svg});
  }
  int si = 0;
  for (const auto& sum : res.summaries) {
    std::string svg = scaling_chart(res, sum);
    ++si;
    if (svg.empty()) continue;
    out.push_back({"scaling-" + std::to_string(si) + ".svg", "Speedup and efficiency" + (sum.fixed.empty() ? "" : " (" + sum.fixed + ")"), svg});
    std::string eff = efficiency_chart(res, sum);
    if (!eff.empty())
      out.push_back({"efficiency-" + std::to_string(si) + ".svg", "POP efficiencies" + (sum.fixed.empty() ? "" : " (" + sum.fixed + ")"), eff});
  }
  for (auto& c : render_profile_svgs(res)) out.push_back(std::move(c));  // profile_svg.cpp
  return out;
}

}  // namespace rtrace::analysis
