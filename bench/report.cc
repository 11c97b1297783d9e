// bench/report.cc: OSU-style text, JSON (through nlohmann::json) and CSV
// writers.
#include "report.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

extern char **environ;

namespace rdmxbench {

namespace {

bool integer_column(const std::string &c) { return c == "Size" || c == "Run" || c == "Round" || c == "Iterations"; }

std::size_t width(const std::string &column) { return column.size() + 4 > 14 ? column.size() + 4 : 14; }

using Json = nlohmann::ordered_json;   // keys in the order written

// A figure to six significant digits, as the text output has them; null
// when not a number.
Json json_num(double v) {
  if (!std::isfinite(v)) {
    return nullptr;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  const double rounded = std::strtod(buf, nullptr);
  // A whole number is written as one ("40", not "40.0"), as %.6g has it.
  constexpr double kExactInt = 9007199254740992.0;   // 2^53
  if (rounded == std::trunc(rounded) && std::fabs(rounded) < kExactInt) {
    return static_cast<std::int64_t>(rounded);
  }
  return rounded;
}

std::string csv_num_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Json json_table(const Table &t) {
  Json rows = Json::array();
  for (const auto &row : t.rows) {
    Json r = Json::array();
    for (double v : row) {
      r.push_back(json_num(v));
    }
    rows.push_back(std::move(r));
  }
  return {{"test", t.test}, {"title", t.title}, {"columns", t.columns}, {"rows", std::move(rows)}, {"notes", t.notes}};
}

// An n x n array of a per-link figure; null for the whole field when absent.
template <typename F>
Json json_cells(int n, bool present, F &&cell) {
  if (!present) {
    return nullptr;
  }
  Json o = Json::array();
  for (int a = 0; a < n; ++a) {
    Json row = Json::array();
    for (int b = 0; b < n; ++b) {
      row.push_back(cell(a, b));
    }
    o.push_back(std::move(row));
  }
  return o;
}

Json json_matrix(const Matrix &m) {
  Json errs = Json::array();
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) {
      const std::string &e = m.err[m.idx(a, b)];
      if (!e.empty()) {
        errs.push_back({{"from", a}, {"to", b}, {"reason", e}});
      }
    }
  }
  Json o = {{"name", m.name}, {"title", m.title}, {"unit", m.unit}, {"n", m.n},
            {"median", json_num(m.median)}, {"limit", json_num(m.limit)}};
  o["values"] = json_cells(m.n, true, [&](int a, int b) { return json_num(m.at(a, b)); });
  o["flagged"] = json_cells(m.n, true, [&](int a, int b) { return m.flagged[m.idx(a, b)] != 0; });
  o["errors"] = std::move(errs);
  o["measured_pairs"] = m.measured_pairs();
  o["not_sampled"] = json_cells(m.n, !m.skipped.empty(), [&](int a, int b) { return m.skipped_at(a, b); });
  o["port_mbs"] = json_cells(m.n, !m.port.empty(), [&](int a, int b) { return json_num(m.port_at(a, b)); });
  o["percent_of_port"] =
      json_cells(m.n, !m.port.empty(), [&](int a, int b) { return json_num(m.percent_of_port(a, b)); });
  o["floor_mbs"] = json_cells(m.n, !m.floor.empty(), [&](int a, int b) { return json_num(m.floor_at(a, b)); });
  return o;
}

Json json_port(const PortFacts &p) {
  return {{"device", p.device},
          {"port", p.port},
          {"kind", p.kind},
          {"source", p.source},
          {"speed", p.speed},
          {"signal_gbps", json_num(p.known() ? p.signal_gbps : kNaN)},
          {"data_gbps", json_num(p.known() ? p.data_gbps : kNaN)},
          {"netdev_mbps", p.netdev_mbps > 0 ? Json(p.netdev_mbps) : Json(nullptr)},
          {"sm_peers", p.sm_peers},
          {"detail", p.detail},
          {"fw_ver", p.fw_ver},
          {"state", p.state},
          {"active_mtu", p.active_mtu > 0 ? Json(p.active_mtu) : Json(nullptr)},
          {"link_layer", p.link_layer}};
}

Json json_min_bw(const MinBwSetting &m) {
  return {{"alone_mbs", json_num(m.alone > 0 ? m.alone : kNaN)},
          {"shift_mbs", json_num(m.shift > 0 ? m.shift : kNaN)},
          {"source", m.source},
          {"why", m.why}};
}

Json json_check(const Check &c) { return {{"name", c.name}, {"pass", c.pass}, {"detail", c.detail}}; }

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

std::string csv_num(double v) { return std::isfinite(v) ? csv_num_text(v) : std::string(); }

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
  skipped.clear();
}

int Matrix::measured_pairs() const {
  int count = 0;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      count += a != b && !skipped_at(a, b) ? 1 : 0;
    }
  }
  return count;
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
      std::string cell = a == b ? "-" : m.skipped_at(a, b) ? "." : !m.err[i].empty() ? "X" : format_cell("", m.v[i]);
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
      if (a == b || m.skipped_at(a, b)) {
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
  const int measured = m.measured_pairs();
  const std::string sampled = measured < m.n * (m.n - 1) ? "; . = not sampled (" + std::to_string(measured) + " of " +
                                                               std::to_string(m.n * (m.n - 1)) + " pairs measured)"
                                                         : std::string();
  std::fprintf(f_, "# median %s %s, %s; X = cannot talk%s\n", format_cell("", m.median).c_str(), m.unit.c_str(),
               limit.c_str(), sampled.c_str());
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

Json json_provenance(const Provenance &p) {
  Json env = Json::object();
  for (const auto &[name, value] : p.rdmx_env) {
    env[name] = value;
  }
  Json settings = Json::array();
  for (const Setting &s : p.settings) {
    settings.push_back({{"name", s.name}, {"value", s.value}, {"source", s.source}});
  }
  return {{"argv", p.argv}, {"started", p.started_utc}, {"environment", std::move(env)},
          {"settings", std::move(settings)}};
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

// Through nlohmann::json: every string escaped, invalid UTF-8 replaced
// (U+FFFD) rather than written out.
std::string json_report(const Report &r) {
  Json o = {{"tool", r.prog}, {"command", r.command}, {"provenance", json_provenance(r.provenance)},
            {"backend", r.backend}, {"backend_version", r.backend_version}, {"ranks", r.ranks}, {"hosts", r.hosts}};
  Json tables = Json::array(), matrices = Json::array(), ports = Json::array(), checks = Json::array();
  for (const Table &t : r.tables) {
    tables.push_back(json_table(t));
  }
  for (const Matrix &m : r.matrices) {
    matrices.push_back(json_matrix(m));
  }
  for (const PortFacts &p : r.ports) {
    ports.push_back(json_port(p));
  }
  for (const Check &c : r.checks) {
    checks.push_back(json_check(c));
  }
  o["tables"] = std::move(tables);
  o["matrices"] = std::move(matrices);
  o["ports"] = std::move(ports);
  if (!r.min_bw.source.empty()) {
    o["min_bw"] = json_min_bw(r.min_bw);
  }
  o["summary"] = r.summary;
  o["checks"] = std::move(checks);
  o["verification"] = {{"enabled", r.verify}, {"bytes_checked", r.bytes_checked}, {"mismatches", r.mismatches}};
  o["result"] = r.passed() ? "PASS" : "FAIL";
  return o.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
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
