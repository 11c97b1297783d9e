// bench/report.cc: OSU-style text, JSON and CSV writers.
#include "report.h"

#include <cerrno>
#include <cstring>
#include <sstream>

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
  return o + "],\"flagged\":" + flags + "],\"errors\":" + errs + "]}";
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

void TextOut::matrix(const Matrix &m) const {
  if (f_ == nullptr) {
    return;
  }
  std::fprintf(f_, "\n# %s; row = sender, column = receiver\n", m.title.c_str());
  std::string limit = std::isfinite(m.limit) ? "flagged (*) beyond " + format_cell("", m.limit) + " " + m.unit
                                              : std::string("no speed limit set");
  std::fprintf(f_, "# median %s %s, %s; X = cannot talk\n", format_cell("", m.median).c_str(), m.unit.c_str(),
               limit.c_str());
  std::fprintf(f_, "# %6s", "to->");
  for (int b = 0; b < m.n; ++b) {
    std::fprintf(f_, "%10d", b);
  }
  for (int a = 0; a < m.n; ++a) {
    std::fprintf(f_, "\n%8d", a);
    for (int b = 0; b < m.n; ++b) {
      std::size_t i = m.idx(a, b);
      std::string cell = a == b ? "-" : !m.err[i].empty() ? "X" : format_cell("", m.v[i]);
      cell += m.flagged[i] && m.err[i].empty() ? "*" : " ";
      std::fprintf(f_, "%10s", cell.c_str());
    }
  }
  std::fprintf(f_, "\n");
  std::fflush(f_);
}

std::string json_report(const Report &r) {
  std::string o = "{\"tool\":" + json_escape(r.prog) + ",\"command\":" + json_escape(r.command);
  o += ",\"backend\":" + json_escape(r.backend) + ",\"backend_version\":" + json_escape(r.backend_version);
  o += ",\"ranks\":" + std::to_string(r.ranks) + ",\"hosts\":" + json_array(r.hosts, json_escape);
  o += ",\"tables\":" + json_array(std::vector<Table>(r.tables.begin(), r.tables.end()), json_table);
  o += ",\"matrices\":" + json_array(r.matrices, json_matrix);
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
    o << "test,matrix,from,to,value,unit,flagged,error\n";
    for (const Matrix &m : r.matrices) {
      for (int a = 0; a < m.n; ++a) {
        for (int b = 0; b < m.n; ++b) {
          if (a != b) {
            o << "allpairs," << m.name << ',' << a << ',' << b << ',' << csv_num(m.at(a, b)) << ','
              << csv_field(m.unit) << ',' << (m.flagged[m.idx(a, b)] ? 1 : 0) << ','
              << csv_field(m.err[m.idx(a, b)]) << '\n';
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
