// bench/html_heatmap.cc: the all-pairs heat maps of the HTML report. Colours
// follow the verdict: red only for a link it flagged, black for a pair that
// cannot talk, every other cell one neutral hue shaded against the matrix's
// median on a fixed scale, so the noise between healthy links stays
// invisible. Beyond kMaxSide ranks a cell stands for a pair of hosts (or of
// rank blocks, on one host or past kMaxSide hosts) and shows its most severe
// link, so the map stays readable at hundreds of ranks; its tooltip names
// that link and counts the flagged and silent ones, and a click on it opens
// the pair rank by rank (html_drill.cc).
#include "html_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace rdmxbench {

namespace {

constexpr int kMaxSide = kMaxHeatmapSide;   // more ranks than this: one cell per group
constexpr double kMapSide = 480;          // pixels the map aims at
constexpr double kMinCell = 6, kMaxCell = 40;
constexpr double kMaxLabels = 24;         // labels per axis, at most
constexpr std::size_t kLabelChars = 20;   // a longer host name is cut
constexpr double kCharW = 6;              // width of a 10 px label character, about
constexpr double kPaleAt = 0.5;           // half as good as the median: the palest blue
constexpr double kDarkL = 40, kPaleL = 88;   // lightness (%) of the best and the palest cell
constexpr const char *kFlaggedFill = "#c00000";  // no series colour is this red
constexpr const char *kCannotTalkFill = "#222";
constexpr const char *kSelfFill = "#ddd";
constexpr const char *kUnmeasuredFill = "#bbb";

std::string fmt(double v, const char *f = "%.1f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string shade(double t) {   // t in [0, 1]: 0 palest, 1 darkest
  return "hsl(210,45%," + fmt(kPaleL - (kPaleL - kDarkL) * std::clamp(t, 0.0, 1.0), "%.0f") + "%)";
}

// How good v is next to the median, on a fixed scale: 1 at the median or
// better, 0 at half as good (half the bandwidth, twice the latency) or worse.
double quality(const Matrix &m, double v) {
  if (!(m.median > 0) || !(v > 0)) {
    return 1;
  }
  double q = m.higher_is_better ? v / m.median : m.median / v;
  return (q - kPaleAt) / (1 - kPaleAt);
}

// One cell as drawn: a rank pair, or the worst link of a pair of groups.
struct Cell {
  double v = kNaN;
  bool self = false, flagged = false, cannot_talk = false;
  std::string tip;
};

struct Grid {
  int side = 0;
  std::vector<Cell> cells;            // side * side, row = sender
  std::vector<std::string> labels;    // one per row/column
  std::string axis;                   // what a row/column is
};

std::string who(int r, const std::vector<std::string> &hosts) {
  std::string s = "rank " + std::to_string(r);
  return static_cast<std::size_t>(r) < hosts.size() ? s + " (" + hosts[static_cast<std::size_t>(r)] + ")" : s;
}

std::string pair_tip(const Matrix &m, int a, int b, const std::vector<std::string> &hosts) {
  std::size_t i = m.idx(a, b);
  std::string s = who(a, hosts) + " -> " + who(b, hosts) + ": ";
  if (m.skipped_at(a, b)) {
    return s + "not sampled alone (measured with all pairs at once)";
  }
  if (!m.err[i].empty()) {
    return s + m.err[i];
  }
  const double pct = m.percent_of_port(a, b);
  const std::string port = std::isfinite(pct) ? ", " + fmt(pct, "%.0f") + "% of the port's " +
                                                    fmt(m.port_at(a, b), "%.0f") + " " + m.unit
                                              : std::string();
  return s + fmt(m.v[i], "%.2f") + " " + m.unit + port + (m.flagged[i] ? " (flagged)" : "");
}

Grid rank_grid(const Matrix &m, const std::vector<std::string> &hosts) {
  Grid g;
  g.side = m.n;
  g.axis = "rank";
  for (int a = 0; a < m.n; ++a) {
    g.labels.push_back(std::to_string(a));
    for (int b = 0; b < m.n; ++b) {
      std::size_t i = m.idx(a, b);
      Cell c{m.v[i], a == b, m.flagged[i] != 0, !m.err[i].empty(), a == b ? "" : pair_tip(m, a, b, hosts)};
      g.cells.push_back(std::move(c));
    }
  }
  return g;
}

// The cell of sender group ga and receiver group gb. It shows, and its
// tooltip names, the most severe link: one that cannot talk, else one the
// verdict flagged, else the one with the worst value.
Cell group_cell(const Matrix &m, const std::vector<int> &ga, const std::vector<int> &gb,
                const std::vector<std::string> &hosts) {
  Cell c;
  int pairs = 0, flagged = 0, silent = 0, unsampled = 0, wa = -1, wb = -1, worst_sev = -1;
  for (int a : ga) {
    for (int b : gb) {
      if (a == b) {
        continue;
      }
      if (m.skipped_at(a, b)) {
        ++unsampled;
        continue;
      }
      std::size_t i = m.idx(a, b);
      int sev = !m.err[i].empty() ? 2 : m.flagged[i] != 0 ? 1 : 0;
      ++pairs;
      flagged += sev == 1;
      silent += sev == 2;
      double v = m.v[i];
      bool worse = std::isfinite(v) && (!std::isfinite(c.v) || (m.higher_is_better ? v < c.v : v > c.v));
      if (sev > worst_sev || (sev == worst_sev && worse)) {
        worst_sev = sev;
        c.v = v;
        wa = a;
        wb = b;
      }
    }
  }
  c.self = pairs == 0 && unsampled == 0;
  c.cannot_talk = silent > 0;
  c.flagged = flagged > 0;
  const std::string left_out = unsampled > 0 ? " (" + std::to_string(unsampled) + " more not sampled alone)" : "";
  if (wa >= 0) {
    c.tip = std::to_string(pairs) + " links" + left_out + ", " + std::to_string(flagged) + " flagged, " +
            std::to_string(silent) + " cannot talk; " + (worst_sev > 0 ? "e.g. " : "the worst: ") +
            pair_tip(m, wa, wb, hosts);
  } else if (unsampled > 0) {
    c.tip = std::to_string(unsampled) + " links, none sampled alone (measured with all pairs at once)";
  }
  return c;
}

Grid group_grid(const Matrix &m, const std::vector<std::string> &hosts) {
  Grid g;
  RankGroups groups = rank_groups(m.n, hosts);
  g.labels = std::move(groups.names);
  g.axis = std::move(groups.axis);
  g.side = static_cast<int>(groups.ranks.size());
  for (const auto &ga : groups.ranks) {
    for (const auto &gb : groups.ranks) {
      g.cells.push_back(group_cell(m, ga, gb, hosts));
    }
  }
  return g;
}

std::string fill_of(const Matrix &m, const Cell &c) {
  return c.self ? kSelfFill
         : c.cannot_talk ? kCannotTalkFill
         : c.flagged ? kFlaggedFill
         : std::isfinite(c.v) ? shade(quality(m, c.v))
                              : kUnmeasuredFill;
}

// What the colours mean, under the map. Red and black are explained only
// where they appear; a map with neither says so.
void legend(std::ostringstream &o, const Matrix &m, double x, double y, const Grid &g) {
  constexpr int kSteps = 5;
  constexpr double kSwatch = 14, kGap = 6, kText = 11;
  for (int k = 0; k < kSteps; ++k) {
    o << "<rect x=\"" << fmt(x + k * kSwatch) << "\" y=\"" << fmt(y) << "\" width=\"" << kSwatch << "\" height=\""
      << kSwatch << "\" fill=\"" << shade(static_cast<double>(k) / (kSteps - 1)) << "\"/>";
  }
  o << "<text x=\"" << fmt(x + kSteps * kSwatch + kGap) << "\" y=\"" << fmt(y + kText) << "\" font-size=\"11\">"
    << (m.higher_is_better ? "palest \u2264 median / 2, darkest \u2265 median (not a verdict)"
                           : "palest \u2265 2 x median, darkest \u2264 median (not a verdict)")
    << "</text>";
  bool any_flagged = std::any_of(g.cells.begin(), g.cells.end(), [](const Cell &c) { return c.flagged; });
  bool any_silent = std::any_of(g.cells.begin(), g.cells.end(), [](const Cell &c) { return c.cannot_talk; });
  double y2 = y + kSwatch + kGap, x2 = x;
  auto key = [&](const char *fill, const char *what) {
    o << "<rect x=\"" << fmt(x2) << "\" y=\"" << fmt(y2) << "\" width=\"" << kSwatch << "\" height=\"" << kSwatch
      << "\" fill=\"" << fill << "\" stroke=\"#000\" stroke-width=\"2\"/><text x=\"" << fmt(x2 + kSwatch + kGap)
      << "\" y=\"" << fmt(y2 + kText) << "\" font-size=\"11\">" << what << "</text>";
    x2 += 170;
  };
  if (any_flagged) {
    key(kFlaggedFill, "flagged by the verdict");
  }
  if (any_silent) {
    key(kCannotTalkFill, "cannot talk");
  }
  if (m.measured_pairs() < m.n * (m.n - 1)) {
    key(kUnmeasuredFill, "not sampled alone");
  }
  if (!any_flagged && !any_silent) {
    o << "<text x=\"" << fmt(x) << "\" y=\"" << fmt(y2 + kText) << "\" font-size=\"11\">"
      << "no link flagged in this matrix</text>";
  }
}

// Row labels left of the map, column labels under it: upright when they
// fit under their columns, else turned to read upwards (host names).
// Returns the height the column labels take.
double axis_labels(std::ostringstream &o, const Grid &g, double left, double top, double cell) {
  const int n = g.side;
  const int every = std::max(1, static_cast<int>(std::ceil(n / kMaxLabels)));
  std::size_t longest = 0;
  for (const std::string &l : g.labels) {
    longest = std::max(longest, std::min(l.size(), kLabelChars));
  }
  const double text_w = kCharW * static_cast<double>(longest);
  const bool turned = text_w > cell * every - 2;
  const double bottom = top + cell * n;
  for (int a = 0; a < n; a += every) {
    std::string l = html_escape(g.labels[static_cast<std::size_t>(a)].substr(0, kLabelChars));
    double c = a * cell + cell / 2;
    o << "<text x=\"" << fmt(left - 4) << "\" y=\"" << fmt(top + c + 4) << "\" font-size=\"10\" text-anchor=\"end\">"
      << l << "</text>";
    if (turned) {
      o << "<text x=\"" << fmt(left + c + 3) << "\" y=\"" << fmt(bottom + 4) << "\" font-size=\"10\" "
        << "text-anchor=\"end\" transform=\"rotate(-90 " << fmt(left + c + 3) << " " << fmt(bottom + 4) << ")\">" << l
        << "</text>";
    } else {
      o << "<text x=\"" << fmt(left + c) << "\" y=\"" << fmt(bottom + 14) << "\" font-size=\"10\" "
        << "text-anchor=\"middle\">" << l << "</text>";
    }
  }
  return turned ? text_w + 8 : 18;
}

}  // namespace

RankGroups rank_groups(int n, const std::vector<std::string> &hosts) {
  RankGroups g;
  std::map<std::string, std::size_t> by_host;
  if (hosts.size() == static_cast<std::size_t>(n)) {
    for (int r = 0; r < n; ++r) {
      auto [it, added] = by_host.emplace(hosts[static_cast<std::size_t>(r)], g.ranks.size());
      if (added) {
        g.ranks.emplace_back();
        g.names.push_back(it->first);
      }
      g.ranks[it->second].push_back(r);
    }
  }
  if (g.ranks.size() >= 2 && g.ranks.size() <= static_cast<std::size_t>(kMaxSide)) {
    g.axis = "host";
    return g;
  }
  g.ranks.clear();
  g.names.clear();
  const int per = (n + kMaxSide - 1) / kMaxSide;
  for (int r = 0; r < n; r += per) {
    g.ranks.emplace_back();
    for (int k = r; k < std::min(n, r + per); ++k) {
      g.ranks.back().push_back(k);
    }
    g.names.push_back(std::to_string(r));
  }
  g.axis = "ranks, " + std::to_string(per) + " per block";
  return g;
}

std::string svg_heatmap(const Matrix &m, const std::vector<std::string> &hosts, const std::string &drill_id) {
  const bool grouped = m.n > kMaxSide;
  const bool drill = grouped && !drill_id.empty();
  Grid g = grouped ? group_grid(m, hosts) : rank_grid(m, hosts);
  const int n = g.side;
  std::size_t longest = 0;
  for (const std::string &l : g.labels) {
    longest = std::max(longest, std::min(l.size(), kLabelChars));
  }
  const double cell = std::clamp(kMapSide / std::max(n, 1), kMinCell, kMaxCell);
  const double left = std::max(48.0, kCharW * static_cast<double>(longest) + 8), top = 52, side = cell * n;
  // Drawn once to learn the labels' height, then placed.
  // A flagged cell's black outline, thin enough to leave small cells red.
  const double outline = std::clamp(cell / 5, 1.0, 3.0);
  std::ostringstream cells, labels;
  const double label_h = axis_labels(labels, g, left, top, cell);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const Cell &cl = g.cells[static_cast<std::size_t>(a * n + b)];
      cells << "<rect x=\"" << fmt(left + b * cell) << "\" y=\"" << fmt(top + a * cell) << "\" width=\"" << fmt(cell)
            << "\" height=\"" << fmt(cell) << "\" fill=\"" << fill_of(m, cl) << "\" stroke=\""
            << (cl.flagged ? "#000" : "#fff") << "\" stroke-width=\"" << (cl.flagged ? fmt(outline) : "1") << "\"";
      if (drill) {   // the drill-down's target: sender group a, receiver group b
        cells << " data-cell=\"" << a << "," << b << "\"";
      }
      cells << ">";
      if (!cl.tip.empty()) {
        cells << "<title>" << html_escape(cl.tip) << "</title>";
      }
      cells << "</rect>";
    }
  }
  constexpr double kLegendH = 44, kMinWidth = 480;
  const double under = top + side + label_h;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fmt(std::max(left + side + 20, kMinWidth))
    << "\" height=\"" << fmt(under + 26 + kLegendH) << "\" role=\"img\" aria-label=\"" << html_escape(m.title)
    << "\" class=\"heatmap\"";
  if (drill) {
    o << " data-drill=\"" << html_escape(drill_id) << "\" data-matrix=\"" << html_escape(m.name) << "\"";
  }
  o << ">";
  o << "<text x=\"8\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" << html_escape(m.title) << "</text>";
  o << "<text x=\"8\" y=\"36\" font-size=\"11\">median " << fmt(m.median, "%.2f") << " " << html_escape(m.unit)
    << (grouped ? "; a cell shows the most severe link between two groups (hover for it)" : "") << "</text>";
  o << labels.str() << cells.str();
  o << "<text x=\"" << fmt(left + side / 2) << "\" y=\"" << fmt(under + 12)
    << "\" font-size=\"11\" text-anchor=\"middle\">receiver " << html_escape(g.axis) << " (rows: sender)</text>";
  legend(o, m, 8, under + 24, g);
  o << "</svg>\n";
  return o.str();
}

}  // namespace rdmxbench
