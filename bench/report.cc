// bench/report.cc: OSU-style text, JSON and CSV writers.
#include "report.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>

extern char **environ;

namespace rdmxbench {

namespace {

bool integer_column(const std::string &c) { return c == "Size" || c == "Run" || c == "Iterations"; }

std::size_t width(const std::string &column) { return column.size() + 4 > 14 ? column.size() + 4 : 14; }

std::string json_escape(const std::string &s) {
  std::string o;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += ch;
    }
  }
  return "\"" + o + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) {
    return "null";
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

template <typename T, typename F>
std::string json_array(const std::vector<T> &xs, F &&one) {
  std::string o = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    o += (i ? "," : "") + one(xs[i]);
  }
  return o + "]";
}

std::string json_table(const Table &t) {
  std::string o = "{\"test\":" + json_escape(t.test) + ",\"title\":" + json_escape(t.title);
  o += ",\"columns\":" + json_array(t.columns, json_escape);
  o += ",\"rows\":" + json_array(t.rows, [](const std::vector<double> &r) { return json_array(r, json_num); });
  o += ",\"notes\":" + json_array(t.notes, json_escape) + "}";
  return o;
}

// An n x n array of a per-link figure; "null" for the whole field when absent.
template <typename F>
std::string json_cells(int n, bool present, F &&cell) {
  if (!present) {
    return "null";
  }
  std::string o = "[";
  for (int a = 0; a < n; ++a) {
    o += a ? ",[" : "[";
    for (int b = 0; b < n; ++b) {
      o += (b ? "," : "") + json_num(cell(a, b));
    }
    o += "]";
  }
  return o + "]";
}

std::string json_matrix(const Matrix &m) {
  std::string o = "{\"name\":" + json_escape(m.name) + ",\"title\":" + json_escape(m.title);
  o += ",\"unit\":" + json_escape(m.unit) + ",\"n\":" + std::to_string(m.n);
  o += ",\"median\":" + json_num(m.median) + ",\"limit\":" + json_num(m.limit) + ",\"values\":[";
  std::string flags = "[";
  std::string errs = "[";
  for (int a = 0; a < m.n; ++a) {
    o += a ? ",[" : "[";
    flags += a ? ",[" : "[";
    for (int b = 0; b < m.n; ++b) {
      o += (b ? "," : "") + json_num(m.at(a, b));
      flags += std::string(b ? "," : "") + (m.flagged[m.idx(a, b)] ? "true" : "false");
      const std::string &e = m.err[m.idx(a, b)];
      if (!e.empty()) {
        errs += std::string(errs.size() > 1 ? "," : "") + "{\"from\":" + std::to_string(a) +
                ",\"to\":" + std::to_string(b) + ",\"reason\":" + json_escape(e) + "}";
      }
    }
    o += "]";
    flags += "]";
  }
  o += "],\"flagged\":" + flags + "],\"errors\":" + errs + "]";
  o += ",\"port_mbs\":" + json_cells(m.n, !m.port.empty(), [&](int a, int b) { return m.port_at(a, b); });
  o += ",\"percent_of_port\":" +
       json_cells(m.n, !m.port.empty(), [&](int a, int b) { return m.percent_of_port(a, b); });
  o += ",\"floor_mbs\":" + json_cells(m.n, !m.floor.empty(), [&](int a, int b) { return m.floor_at(a, b); });
  return o + "}";
}

std::string json_port(const PortFacts &p) {
  return "{\"device\":" + json_escape(p.device) + ",\"port\":" + std::to_string(p.port) +
         ",\"kind\":" + json_escape(p.kind) + ",\"source\":" + json_escape(p.source) +
         ",\"speed\":" + json_escape(p.speed) + ",\"signal_gbps\":" + json_num(p.known() ? p.signal_gbps : kNaN) +
         ",\"data_gbps\":" + json_num(p.known() ? p.data_gbps : kNaN) +
         ",\"netdev_mbps\":" + (p.netdev_mbps > 0 ? std::to_string(p.netdev_mbps) : std::string("null")) +
         ",\"sm_peers\":" + std::to_string(p.sm_peers) + ",\"detail\":" + json_escape(p.detail) + "}";
}

std::string json_min_bw(const MinBwSetting &m) {
  return "{\"alone_mbs\":" + json_num(m.alone > 0 ? m.alone : kNaN) +
         ",\"shift_mbs\":" + json_num(m.shift > 0 ? m.shift : kNaN) + ",\"source\":" + json_escape(m.source) +
         ",\"why\":" + json_escape(m.why) + "}";
}

std::string json_check(const Check &c) {
  return "{\"name\":" + json_escape(c.name) + ",\"pass\":" + (c.pass ? "true" : "false") +
         ",\"detail\":" + json_escape(c.detail) + "}";
}

std::string csv_field(const std::string &s) {
  if (s.find_first_of(",\"\n") == std::string::npos) {
    return s;
  }
  std::string o = "\"";
  for (char c : s) {
    o += c == '"' ? std::string("\"\"") : std::string(1, c);
  }
  return o + "\"";
}

std::string csv_num(double v) { return std::isfinite(v) ? json_num(v) : std::string(); }

}  // namespace

double Table::lookup(double key, const std::string &col) const {
  std::size_t c = 0;
  while (c < columns.size() && columns[c] != col) {
    ++c;
  }
  for (const auto &r : rows) {
    if (c < r.size() && !r.empty() && r[0] == key) {
      return r[c];
    }
  }
  return kNaN;
}

void Matrix::resize(int ranks) {
  n = ranks;
  std::size_t cells = static_cast<std::size_t>(ranks) * static_cast<std::size_t>(ranks);
  v.assign(cells, kNaN);
  err.assign(cells, std::string());
  flagged.assign(cells, 0);
}

bool Report::passed() const {
  for (const Check &c : checks) {
    if (!c.pass) {
      return false;
    }
  }
  return true;
}

std::string format_cell(const std::string &column, double v) {
  char buf[48];
  if (!std::isfinite(v)) {
    return "-";
  }
  if (integer_column(column)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

void TextOut::header(const Table &t) const {
  if (f_ == nullptr) {
    return;
  }
  std::fprintf(f_, "\n# %s\n", t.title.c_str());
  for (const std::string &n : t.notes) {
    std::fprintf(f_, "# %s\n", n.c_str());
  }
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (i == 0) {
      std::fprintf(f_, "# %-10s", t.columns[0].c_str());
    } else {
      std::fprintf(f_, "%*s", static_cast<int>(width(t.columns[i])), t.columns[i].c_str());
    }
  }
  std::fprintf(f_, "\n");
  std::fflush(f_);
}

void TextOut::row(const Table &t, const std::vector<double> &r) const {
  if (f_ == nullptr) {
    return;
  }
  for (std::size_t i = 0; i < r.size() && i < t.columns.size(); ++i) {
    std::string cell = format_cell(t.columns[i], r[i]);
    if (i == 0) {
      std::fprintf(f_, "%-12s", cell.c_str());
    } else {
      std::fprintf(f_, "%*s", static_cast<int>(width(t.columns[i])), cell.c_str());
    }
  }
  std::fprintf(f_, "\n");
  std::fflush(f_);
}

void TextOut::line(const std::string &s) const {
  if (f_ != nullptr) {
    std::fprintf(f_, "%s\n", s.c_str());
    std::fflush(f_);
  }
}

namespace {

constexpr int kHostLabel = 12;   // a longer host name is cut in text matrices

void rank_rows(std::FILE *f, const Matrix &m) {
  std::fprintf(f, "# %6s", "to->");
  for (int b = 0; b < m.n; ++b) {
    std::fprintf(f, "%10d", b);
  }
  for (int a = 0; a < m.n; ++a) {
    std::fprintf(f, "\n%8d", a);
    for (int b = 0; b < m.n; ++b) {
      std::size_t i = m.idx(a, b);
      std::string cell = a == b ? "-" : !m.err[i].empty() ? "X" : format_cell("", m.v[i]);
      cell += m.flagged[i] && m.err[i].empty() ? "*" : " ";
      std::fprintf(f, "%10s", cell.c_str());
    }
  }
  std::fprintf(f, "\n");
}

// One row per sending host: "median/worst nflagged!" per receiving host.
void host_rows(std::FILE *f, const Matrix &m, const HostMatrix &h) {
  const std::size_t nh = h.hosts.size();
  std::fprintf(f, "# per host (%d ranks on %zu hosts; the per-rank matrix is in --json and --csv): each cell is the "
                  "median/%s of its rank pairs, then how many of them are flagged or cannot talk (!)\n",
               m.n, nh, m.higher_is_better ? "lowest" : "highest");
  std::fprintf(f, "# %-*s", kHostLabel, "to->");
  for (const std::string &hn : h.hosts) {
    std::fprintf(f, "%24s", hn.substr(0, kHostLabel).c_str());
  }
  for (std::size_t a = 0; a < nh; ++a) {
    std::fprintf(f, "\n  %-*s", kHostLabel, h.hosts[a].substr(0, kHostLabel).c_str());
    for (std::size_t b = 0; b < nh; ++b) {
      const HostCell &c = h.cells[a * nh + b];
      std::string cell = c.pairs == 0 ? "-" : format_cell("", c.median) + "/" + format_cell("", c.worst);
      cell += c.pairs == 0 ? "   " : " " + (c.flagged ? std::to_string(c.flagged) + "!" : std::string("0 "));
      std::fprintf(f, "%24s", cell.c_str());
    }
  }
  std::fprintf(f, "\n");
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) {
    return kNaN;
  }
  std::sort(v.begin(), v.end());
  std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// "port data rate 12500 MB/s; links reached 91% (median), lowest 40%"
std::string port_summary(const Matrix &m) {
  std::vector<double> rates;
  std::vector<double> pct;
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) {
      if (a != b && std::isfinite(m.port_at(a, b))) {
        rates.push_back(m.port_at(a, b));
        double p = m.percent_of_port(a, b);
        if (std::isfinite(p)) {
          pct.push_back(p);
        }
      }
    }
  }
  if (rates.empty()) {
    return "";
  }
  auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
  std::string s = "port data rate " + format_cell("", *lo) + (*hi > *lo ? " to " + format_cell("", *hi) : "") +
                  " MB/s per link";
  if (!pct.empty()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "; links reached %.0f%% of it (median), lowest %.0f%%", median_of(pct),
                  *std::min_element(pct.begin(), pct.end()));
    s += buf;
  }
  double lowest_floor = kNaN;
  for (double f : m.floor) {
    lowest_floor = std::isfinite(f) && !(f >= lowest_floor) ? f : lowest_floor;
  }
  if (std::isfinite(lowest_floor)) {
    s += "; also flagged below the --min-bw default, a fraction of each link's port rate (lowest " +
         format_cell("", lowest_floor) + " MB/s)";
  }
  return s;
}

double Matrix::percent_of_port(int a, int b) const {
  const double p = port_at(a, b);
  const double x = at(a, b);
  constexpr double kPercent = 100.0;
  return std::isfinite(p) && p > 0 && std::isfinite(x) && err[idx(a, b)].empty() ? kPercent * x / p : kNaN;
}

std::string PortFacts::label() const {
  if (device.empty()) {
    return "none (" + detail + ")";
  }
  std::string s = device + ":" + std::to_string(port);
  if (!known()) {
    return s + " rate unknown (" + detail + ")";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g Gb/s data", data_gbps);
  return s + " " + speed + ", " + buf + " (" + source + (kind == "hardware" ? "" : ", " + kind) + ")";
}

std::string ports_line(const std::vector<PortFacts> &ports) {
  if (ports.empty()) {
    return "unknown: this backend cannot tell which port each rank uses";
  }
  std::vector<std::pair<std::string, int>> seen;   // in rank order
  for (const PortFacts &p : ports) {
    const std::string l = p.label();
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto &e) { return e.first == l; });
    if (it == seen.end()) {
      seen.emplace_back(l, 1);
    } else {
      ++it->second;
    }
  }
  constexpr std::size_t kShown = 3;
  std::string s;
  for (std::size_t i = 0; i < seen.size() && i < kShown; ++i) {
    s += (i ? "; " : "") + seen[i].first + " on " + std::to_string(seen[i].second) +
         (seen[i].second == 1 ? " rank" : " ranks");
  }
  return seen.size() > kShown ? s + "; and " + std::to_string(seen.size() - kShown) + " more (see --json)" : s;
}

HostMatrix host_matrix(const Matrix &m, const std::vector<std::string> &hosts) {
  HostMatrix h;
  std::map<std::string, std::size_t> index;
  std::vector<std::size_t> of(static_cast<std::size_t>(m.n), 0);
  for (int r = 0; r < m.n; ++r) {
    const std::string name = static_cast<std::size_t>(r) < hosts.size() ? hosts[static_cast<std::size_t>(r)] : "?";
    auto [it, added] = index.emplace(name, h.hosts.size());
    if (added) {
      h.hosts.push_back(name);
    }
    of[static_cast<std::size_t>(r)] = it->second;
  }
  const std::size_t nh = h.hosts.size();
  h.cells.assign(nh * nh, HostCell{});
  std::vector<std::vector<double>> vals(nh * nh);
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) {
      if (a == b) {
        continue;
      }
      const std::size_t c = of[static_cast<std::size_t>(a)] * nh + of[static_cast<std::size_t>(b)];
      HostCell &cell = h.cells[c];
      ++cell.pairs;
      cell.flagged += m.flagged[m.idx(a, b)] ? 1 : 0;
      const double v = m.at(a, b);
      if (m.err[m.idx(a, b)].empty() && std::isfinite(v)) {
        vals[c].push_back(v);
        cell.worst = !std::isfinite(cell.worst) ? v : m.higher_is_better ? std::min(cell.worst, v)
                                                                          : std::max(cell.worst, v);
      }
    }
  }
  for (std::size_t c = 0; c < vals.size(); ++c) {
    h.cells[c].median = median_of(vals[c]);
  }
  return h;
}

void TextOut::matrix(const Matrix &m, const std::vector<std::string> &hosts) const {
  if (f_ == nullptr) {
    return;
  }
  std::fprintf(f_, "\n# %s; row = sender, column = receiver\n", m.title.c_str());
  std::string limit = std::isfinite(m.limit) ? "flagged (*) beyond " + format_cell("", m.limit) + " " + m.unit
                                              : std::string("no speed limit set");
  std::fprintf(f_, "# median %s %s, %s; X = cannot talk\n", format_cell("", m.median).c_str(), m.unit.c_str(),
               limit.c_str());
  const std::string pl = port_summary(m);
  if (!pl.empty()) {
    std::fprintf(f_, "# %s\n", pl.c_str());
  }
  if (m.n > kMaxRankMatrix) {
    host_rows(f_, m, host_matrix(m, hosts));
  } else {
    rank_rows(f_, m);
  }
  std::fflush(f_);
}

namespace {

std::string json_provenance(const Provenance &p) {
  std::string env = "{";
  for (const auto &[name, value] : p.rdmx_env) {
    env += (env.size() > 1 ? "," : "") + json_escape(name) + ":" + json_escape(value);
  }
  return "{\"argv\":" + json_array(p.argv, json_escape) + ",\"started\":" + json_escape(p.started_utc) +
         ",\"environment\":" + env + "}}";
}

}  // namespace

Provenance provenance_of(int argc, char **argv) {
  Provenance p;
  for (int i = 0; i < argc; ++i) {
    p.argv.emplace_back(argv[i]);
  }
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  char when[32] = "";
  if (gmtime_r(&now, &utc) != nullptr) {
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  }
  p.started_utc = when;
  for (char **e = environ; *e != nullptr; ++e) {
    const char *eq = std::strchr(*e, '=');
    if (std::strncmp(*e, "RDMX_", 5) == 0 && eq != nullptr) {
      p.rdmx_env.emplace_back(std::string(*e, static_cast<std::size_t>(eq - *e)), std::string(eq + 1));
    }
  }
  std::sort(p.rdmx_env.begin(), p.rdmx_env.end());
  return p;
}

std::string json_report(const Report &r) {
  std::string o = "{\"tool\":" + json_escape(r.prog) + ",\"command\":" + json_escape(r.command);
  o += ",\"provenance\":" + json_provenance(r.provenance);
  o += ",\"backend\":" + json_escape(r.backend) + ",\"backend_version\":" + json_escape(r.backend_version);
  o += ",\"ranks\":" + std::to_string(r.ranks) + ",\"hosts\":" + json_array(r.hosts, json_escape);
  o += ",\"tables\":" + json_array(std::vector<Table>(r.tables.begin(), r.tables.end()), json_table);
  o += ",\"matrices\":" + json_array(r.matrices, json_matrix);
  o += ",\"ports\":" + json_array(r.ports, json_port);
  if (!r.min_bw.source.empty()) {
    o += ",\"min_bw\":" + json_min_bw(r.min_bw);
  }
  o += ",\"summary\":" + json_array(r.summary, json_escape);
  o += ",\"checks\":" + json_array(r.checks, json_check);
  o += ",\"verification\":{\"enabled\":" + std::string(r.verify ? "true" : "false") +
       ",\"bytes_checked\":" + std::to_string(r.bytes_checked) +
       ",\"mismatches\":" + std::to_string(r.mismatches) + "}";
  o += ",\"result\":" + json_escape(r.passed() ? "PASS" : "FAIL") + "}\n";
  return o;
}

// One section per table (its own header line), then the matrices in long form.
std::string csv_report(const Report &r) {
  std::ostringstream o;
  for (const Table &t : r.tables) {
    o << "test";
    for (const std::string &c : t.columns) {
      o << ',' << csv_field(c);
    }
    o << '\n';
    for (const auto &row : t.rows) {
      o << csv_field(t.test);
      for (double v : row) {
        o << ',' << csv_num(v);
      }
      o << '\n';
    }
    o << '\n';
  }
  if (!r.matrices.empty()) {
    o << "test,matrix,from,to,value,unit,flagged,error,port_mbs,percent_of_port\n";
    for (const Matrix &m : r.matrices) {
      for (int a = 0; a < m.n; ++a) {
        for (int b = 0; b < m.n; ++b) {
          if (a != b) {
            o << "allpairs," << m.name << ',' << a << ',' << b << ',' << csv_num(m.at(a, b)) << ','
              << csv_field(m.unit) << ',' << (m.flagged[m.idx(a, b)] ? 1 : 0) << ','
              << csv_field(m.err[m.idx(a, b)]) << ',' << csv_num(m.port_at(a, b)) << ','
              << csv_num(m.percent_of_port(a, b)) << '\n';
          }
        }
      }
    }
    o << '\n';
  }
  o << "test,check,pass,detail\n";
  for (const Check &c : r.checks) {
    o << "result," << csv_field(c.name) << ',' << (c.pass ? 1 : 0) << ',' << csv_field(c.detail) << '\n';
  }
  return o.str();
}

bool write_output(const std::string &path, const std::string &text, std::string &err) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    err = path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    err = path + ": write failed";
  }
  return ok;
}

}  // namespace rdmxbench
