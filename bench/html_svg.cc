// bench/html_svg.cc: the inline SVG line charts of the HTML report (log2
// size on x; html_heatmap.cc draws the heat maps). Pure string building, no
// script.
#include "html_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rdmxbench {

namespace {

constexpr double kW = 700, kH = 360, kL = 70, kR = 200, kT = 34, kB = 52;
// Series colours: no red, which on this page means a link the verdict flagged.
const char *const kColors[] = {"#1f77b4", "#393b79", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string fmt(double v, const char *f = "%.1f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string size_tick(double bytes) {
  auto b = static_cast<unsigned long long>(std::llround(bytes));
  if (b >= (1ull << 20)) {
    return std::to_string(b >> 20) + "M";
  }
  if (b >= (1ull << 10)) {
    return std::to_string(b >> 10) + "K";
  }
  return std::to_string(b);
}

std::string value_tick(double v) {
  if (v >= 1e6 || (v > 0 && v < 0.01)) {
    return fmt(v, "%.0e");
  }
  return fmt(v, v >= 10 || v == 0 ? "%.0f" : "%.2g");
}

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double pos(double v, double a, double b) const {   // maps v to [a, b]
    double t = log ? (std::log10(v) - lo) / (hi - lo) : (v - lo) / (hi - lo);
    return a + t * (b - a);
  }
};

// Power-of-ten (log) or rounded linear range covering the values.
Axis y_axis(const std::vector<Series> &ss, bool log_y) {
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (const Series &s : ss) {
    for (const auto &p : s.pts) {
      if (!log_y || p.second > 0) {
        lo = std::min(lo, p.second);
        hi = std::max(hi, p.second);
      }
    }
  }
  Axis a;
  a.log = log_y;
  if (log_y) {
    a.lo = std::floor(std::log10(lo));
    a.hi = std::max(std::ceil(std::log10(hi)), a.lo + 1);
    return a;
  }
  double step = std::pow(10.0, std::floor(std::log10(std::max(hi, 1e-9))));
  a.lo = 0;
  a.hi = std::max(std::ceil(hi * 1.05 / step) * step, step);
  return a;
}

Axis x_axis(const std::vector<Series> &ss) {
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (const Series &s : ss) {
    for (const auto &p : s.pts) {
      if (p.first > 0) {
        lo = std::min(lo, std::log2(p.first));
        hi = std::max(hi, std::log2(p.first));
      }
    }
  }
  Axis a;
  a.lo = lo > hi ? 0 : lo;
  a.hi = lo > hi ? 1 : std::max(hi, lo + 1);
  return a;
}

double xpos(const Axis &x, double bytes) {
  return kL + (std::log2(bytes) - x.lo) / (x.hi - x.lo) * (kW - kL - kR);
}

void grid(std::ostringstream &o, const Axis &x, const Axis &y) {
  double bottom = kH - kB;
  int xstep = std::max(1, static_cast<int>(std::ceil((x.hi - x.lo) / 10)));
  for (double e = std::ceil(x.lo); e <= x.hi + 1e-9; e += xstep) {
    double px = xpos(x, std::exp2(e));
    o << "<line x1=\"" << fmt(px) << "\" y1=\"" << kT << "\" x2=\"" << fmt(px) << "\" y2=\"" << bottom
      << "\" stroke=\"#eee\"/><text x=\"" << fmt(px) << "\" y=\"" << bottom + 16
      << "\" font-size=\"11\" text-anchor=\"middle\">" << size_tick(std::exp2(e)) << "</text>";
  }
  int ticks = y.log ? static_cast<int>(y.hi - y.lo) : 5;
  for (int k = 0; k <= ticks; ++k) {
    double v = y.log ? std::pow(10.0, y.lo + k) : y.lo + (y.hi - y.lo) * k / ticks;
    double py = y.pos(v, bottom, kT);
    o << "<line x1=\"" << kL << "\" y1=\"" << fmt(py) << "\" x2=\"" << kW - kR << "\" y2=\"" << fmt(py)
      << "\" stroke=\"#eee\"/><text x=\"" << kL - 6 << "\" y=\"" << fmt(py + 4)
      << "\" font-size=\"11\" text-anchor=\"end\">" << value_tick(v) << "</text>";
  }
  o << "<rect x=\"" << kL << "\" y=\"" << kT << "\" width=\"" << kW - kL - kR << "\" height=\"" << bottom - kT
    << "\" fill=\"none\" stroke=\"#888\"/>";
}

void series_svg(std::ostringstream &o, const Series &s, std::size_t k, const Axis &x, const Axis &y) {
  const char *color = kColors[k % (sizeof kColors / sizeof kColors[0])];
  std::string points;
  std::string dots;
  for (const auto &p : s.pts) {
    if (p.first <= 0 || (y.log && p.second <= 0)) {
      continue;
    }
    std::string px = fmt(xpos(x, p.first));
    std::string py = fmt(y.pos(p.second, kH - kB, kT));
    points += px + "," + py + " ";
    dots += "<circle cx=\"" + px + "\" cy=\"" + py + "\" r=\"3\" fill=\"" + color + "\"><title>" +
            html_escape(s.name) + ": " + size_tick(p.first) + " B, " + fmt(p.second, "%.2f") + "</title></circle>";
  }
  o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"" << points << "\"/>" << dots;
  double ly = kT + 8 + 18.0 * static_cast<double>(k);
  o << "<rect x=\"" << kW - kR + 12 << "\" y=\"" << fmt(ly - 6) << "\" width=\"14\" height=\"4\" fill=\"" << color
    << "\"/><text x=\"" << kW - kR + 32 << "\" y=\"" << fmt(ly) << "\" font-size=\"12\">" << html_escape(s.name)
    << "</text>";
}

// Every series has its points at one message size: a chart would be an
// empty axis with dots, so the values are written out instead.
bool single_size(const std::vector<Series> &ss) {
  double size = -1;
  for (const Series &s : ss) {
    for (const auto &p : s.pts) {
      if (size >= 0 && p.first != size) {
        return false;
      }
      size = p.first;
    }
  }
  return true;
}

std::string lone_values(const std::string &title, const std::string &ylabel, const std::vector<Series> &ss) {
  std::ostringstream o;
  const double h = 40 + 20.0 * static_cast<double>(ss.size());
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << fmt(h)
    << "\" role=\"img\" aria-label=\"" << html_escape(title) << "\" class=\"values\">";
  o << "<text x=\"" << kL << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << html_escape(title) << "</text>";
  double y = 44;
  for (const Series &s : ss) {
    for (const auto &p : s.pts) {
      o << "<text x=\"" << kL << "\" y=\"" << fmt(y) << "\" font-size=\"13\">" << html_escape(s.name) << ": "
        << fmt(p.second, "%.2f") << " " << html_escape(ylabel) << " at " << size_tick(p.first) << " B</text>";
      y += 20;
    }
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace

std::string html_escape(const std::string &s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string svg_line_chart(const std::string &title, const std::string &ylabel, const std::vector<Series> &series,
                           bool log_y) {
  if (single_size(series)) {
    return lone_values(title, ylabel, series);
  }
  std::ostringstream o;
  Axis x = x_axis(series);
  Axis y = y_axis(series, log_y);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 "
    << kW << " " << kH << "\" role=\"img\" aria-label=\"" << html_escape(title) << "\">";
  o << "<text x=\"" << kL << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << html_escape(title) << "</text>";
  grid(o, x, y);
  o << "<text x=\"" << (kL + kW - kR) / 2 << "\" y=\"" << kH - 12
    << "\" font-size=\"12\" text-anchor=\"middle\">message size (bytes)</text>";
  o << "<text x=\"16\" y=\"" << (kT + kH - kB) / 2 << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
    << (kT + kH - kB) / 2 << ")\">" << html_escape(ylabel) << (log_y ? " (log)" : "") << "</text>";
  for (std::size_t k = 0; k < series.size(); ++k) {
    series_svg(o, series[k], k, x, y);
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace rdmxbench
