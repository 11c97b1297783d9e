// bench/html.cc: one self-contained HTML page (inline CSS and SVG drawn
// here; no external file, font or stylesheet, nothing fetched): latency and
// bandwidth curves, collective curves, the all-pairs heat maps and every
// table. Its only script is the drill-down of maps too big for one cell per
// rank pair (html_drill.cc); without it the page shows the same maps.
#include "html_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rdmxbench {

namespace {

const char *const kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}"
    ".meta{color:#555}.pass{color:#fff;background:#2a7d2a;padding:4px 12px;border-radius:4px;font-weight:bold}"
    ".fail{color:#fff;background:#b02020;padding:4px 12px;border-radius:4px;font-weight:bold}"
    "pre{background:#f6f6f6;padding:10px;overflow-x:auto}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
    "th{background:#eee}svg{margin:8px 8px 8px 0;background:#fff;border:1px solid #ddd}"
    "details{margin:6px 0}summary{cursor:pointer}"
    "svg.live rect[data-cell]{cursor:pointer}svg.live rect[data-cell]:focus{outline:none;stroke:#000;stroke-width:3}"
    ".drill-scroll{overflow:auto;max-width:100%}.drill-panel:focus{outline:none}";

std::size_t column_of(const Table &t, const std::string &name) {
  auto it = std::find(t.columns.begin(), t.columns.end(), name);
  return static_cast<std::size_t>(it - t.columns.begin());
}

// One series per table whose test matches `pred`, from column `col`.
template <typename Pred>
std::vector<Series> collect(const Report &r, Pred pred, const std::string &col) {
  std::vector<Series> out;
  for (const Table &t : r.tables) {
    std::size_t c = column_of(t, col);
    if (!pred(t) || c >= t.columns.size() || t.columns[0] != "Size") {
      continue;
    }
    Series s{t.test.rfind("coll.", 0) == 0 ? t.test.substr(5) : t.test, {}};
    for (const auto &row : t.rows) {
      if (c < row.size() && std::isfinite(row[c])) {
        s.pts.emplace_back(row[0], row[c]);
      }
    }
    if (!s.pts.empty()) {
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::string table_html(const Table &t) {
  std::ostringstream o;
  o << "<details><summary>" << html_escape(t.title) << " (" << t.rows.size() << " rows)</summary>";
  for (const std::string &n : t.notes) {
    o << "<div class=\"meta\">" << html_escape(n) << "</div>";
  }
  o << "<table><tr>";
  for (const std::string &c : t.columns) {
    o << "<th>" << html_escape(c) << "</th>";
  }
  o << "</tr>";
  for (const auto &row : t.rows) {
    o << "<tr>";
    for (std::size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
      o << "<td>" << format_cell(t.columns[i], row[i]) << "</td>";
    }
    o << "</tr>";
  }
  o << "</table></details>\n";
  return o.str();
}

std::string head_html(const Report &r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
    << "<title>" << html_escape(r.prog + " " + r.command) << " report</title><style>" << kStyle
    << "</style></head><body>\n<h1>" << html_escape(r.prog) << " " << html_escape(r.command) << " <span class=\""
    << (r.passed() ? "pass\">PASS" : "fail\">FAIL") << "</span></h1>\n<p class=\"meta\">Backend "
    << html_escape(r.backend_version) << ", " << r.ranks << " ranks";
  if (!r.hosts.empty()) {
    std::vector<std::string> h = r.hosts;
    std::sort(h.begin(), h.end());
    h.erase(std::unique(h.begin(), h.end()), h.end());
    o << " on " << h.size() << " host(s)";
  }
  o << ". MB = 10<sup>6</sup> bytes; latency is half the round trip.</p>\n";
  const Provenance &p = r.provenance;
  if (!p.argv.empty()) {
    std::string cmd, env;
    for (const std::string &a : p.argv) {
      cmd += (cmd.empty() ? "" : " ") + a;
    }
    for (const auto &[name, value] : p.rdmx_env) {
      env += (env.empty() ? "" : ", ") + name + "=" + value;
    }
    o << "<p class=\"meta\">Command: <code>" << html_escape(cmd) << "</code>, started " << html_escape(p.started_utc)
      << "; RDMX_* set: " << (env.empty() ? "none" : html_escape(env)) << ".</p>\n";
  }
  return o.str();
}

std::string summary_html(const Report &r) {
  std::ostringstream o;
  o << "<h2>Summary</h2>\n";
  if (!r.summary.empty()) {
    o << "<pre>";
    for (const std::string &l : r.summary) {
      o << html_escape(l) << "\n";
    }
    o << "</pre>\n";
  }
  o << "<table><tr><th>Check</th><th>Result</th><th>Detail</th></tr>";
  for (const Check &c : r.checks) {
    o << "<tr><td>" << html_escape(c.name) << "</td><td>" << (c.pass ? "pass" : "<b>FAIL</b>") << "</td><td>"
      << html_escape(c.detail) << "</td></tr>";
  }
  o << "</table>\n";
  return o.str();
}

std::string charts_html(const Report &r) {
  std::ostringstream o;
  auto is = [](const char *name) { return [name](const Table &t) { return t.test == name; }; };
  auto pt2pt_bw = [](const Table &t) { return t.test == "bw" || t.test == "bibw" || t.test == "mr"; };
  auto coll = [](const Table &t) { return t.test.rfind("coll.", 0) == 0 && t.test != "coll.barrier"; };
  std::vector<Series> lat = collect(r, is("latency"), "Latency(us)");
  std::vector<Series> bw = collect(r, pt2pt_bw, "Bandwidth(MB/s)");
  std::vector<Series> mr = collect(r, is("mr"), "MB/s");
  bw.insert(bw.end(), mr.begin(), mr.end());
  if (!lat.empty() || !bw.empty()) {
    o << "<h2>Point to point</h2>\n";
  }
  if (!lat.empty()) {
    o << svg_line_chart("Latency, ranks 0 and 1", "us", lat, true);
  }
  if (!bw.empty()) {
    o << svg_line_chart("Bandwidth", "MB/s", bw, false);
  }
  std::vector<Series> clat = collect(r, coll, "Avg(us)");
  std::vector<Series> cbus = collect(r, coll, "BusBW(MB/s)");
  if (!clat.empty()) {
    o << "<h2>Collectives</h2>\n" << svg_line_chart("Collective latency (average across ranks)", "us", clat, true);
    o << svg_line_chart("Collective bus bandwidth", "MB/s", cbus, false);
  }
  return o.str();
}

}  // namespace

std::string html_report(const Report &r) {
  std::ostringstream o;
  o << head_html(r) << summary_html(r) << charts_html(r);
  if (!r.matrices.empty()) {
    o << "<h2>All pairs</h2>\n<p class=\"meta\">Row = sender, column = receiver. Red (with a black outline) "
         "marks a link the verdict flagged, a black cell a pair that cannot talk; every other cell is blue, "
         "as dark as its value is good next to the matrix's median (the median or better is the darkest, half "
         "as good the palest), which is no verdict. Hover a cell for its value. Above "
      << kMaxHeatmapSide << " ranks a cell stands for a pair of hosts (or rank blocks) and shows the worst of their "
         "links; click it (or Tab to the map, move with the arrow keys and press Enter) to see its links rank by "
         "rank.</p>\n";
    if (!r.ports.empty()) {
      o << "<p class=\"meta\">Port rate: " << html_escape(ports_line(r.ports)) << ". "
        << html_escape(r.min_bw.why) << ".</p>\n";
    }
    bool drill = false;
    for (std::size_t k = 0; k < r.matrices.size(); ++k) {
      const Matrix &m = r.matrices[k];
      const std::string ps = port_summary(m);
      if (!ps.empty()) {
        o << "<p class=\"meta\">" << html_escape(m.title) << ": " << html_escape(ps) << ".</p>\n";
      }
      const int all_pairs = m.n * (m.n - 1);
      if (m.measured_pairs() < all_pairs) {
        o << "<p class=\"meta\">" << html_escape(m.title) << ": " << m.measured_pairs() << " of " << all_pairs
          << " pairs measured; the grey ones were not sampled alone (each is measured with all pairs at "
             "once).</p>\n";
      }
      const std::string id = "drill-" + std::to_string(k);
      const std::string data = drill_data(m, r.hosts, id);
      o << svg_heatmap(m, r.hosts, data.empty() ? "" : id) << data;
      drill = drill || !data.empty();
    }
    if (drill) {
      o << "<script>" << drill_script() << "</script>\n";
    }
  }
  o << "<h2>Tables</h2>\n";
  for (const Table &t : r.tables) {
    o << table_html(t);
  }
  o << "<p class=\"meta\">Verification: " << (r.verify ? "on" : "off") << ", " << r.bytes_checked
    << " bytes checked, " << r.mismatches << " mismatching messages.</p>\n</body></html>\n";
  return o.str();
}

}  // namespace rdmxbench
