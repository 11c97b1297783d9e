// bench/report.h: what a run measured, and the writers that print it
// (OSU-style text, JSON, CSV, one self-contained HTML page).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

namespace rdmxbench {

inline const double kNaN = std::nan("");

// One OSU-style table: a header line, columns, rows of numbers.
struct Table {
  std::string test;                       // "latency", "bw", "coll.allreduce", "connect", ...
  std::string title;                      // "# OSU-style ..." header line (without "# ")
  std::vector<std::string> columns;       // "Size", "Latency(us)", ...
  std::vector<std::vector<double>> rows;  // NaN prints as "-"
  std::vector<std::string> notes;         // extra "# ..." lines
  // Value of column `col` in the row whose first column equals `key`.
  double lookup(double key, const std::string &col) const;
};

// An N x N all-pairs matrix; row = sender, column = receiver.
struct Matrix {
  std::string name;                 // "bw_alone", "lat_shift", ...
  std::string title;                // "Bandwidth (MB/s), each pair alone"
  std::string unit;                 // "MB/s" or "us"
  bool higher_is_better = false;
  int n = 0;
  std::vector<double> v;            // n*n; NaN when unmeasured
  std::vector<std::string> err;     // n*n; non-empty: the pair could not talk
  std::vector<char> flagged;        // n*n
  double median = kNaN;
  double limit = kNaN;              // flag threshold actually used
  void resize(int ranks);
  double &at(int a, int b) { return v[static_cast<std::size_t>(a * n + b)]; }
  double at(int a, int b) const { return v[static_cast<std::size_t>(a * n + b)]; }
  std::size_t idx(int a, int b) const { return static_cast<std::size_t>(a * n + b); }
};

struct Check {
  std::string name;
  bool pass = true;
  std::string detail;
};

struct Report {
  std::string prog, backend, backend_version, command;
  int ranks = 0;
  std::vector<std::string> hosts;
  std::deque<Table> tables;         // deque: references stay valid while rows stream in
  std::vector<Matrix> matrices;
  std::vector<std::string> summary; // plain-language lines (bring-up, allpairs)
  std::vector<Check> checks;
  bool verify = false;
  std::uint64_t bytes_checked = 0;
  std::uint64_t mismatches = 0;
  bool passed() const;
};

// Streaming text: headers and rows appear on stdout as they are measured.
class TextOut {
 public:
  explicit TextOut(std::FILE *f) : f_(f) {}
  void header(const Table &t) const;
  void row(const Table &t, const std::vector<double> &r) const;
  void line(const std::string &s) const;
  void matrix(const Matrix &m) const;
  bool enabled() const { return f_ != nullptr; }

 private:
  std::FILE *f_;
};

std::string format_cell(const std::string &column, double v);
std::string json_report(const Report &r);
std::string csv_report(const Report &r);
std::string html_report(const Report &r);
// Writes `text` to `path` ("-" = stdout). Returns false with errno text in err.
bool write_output(const std::string &path, const std::string &text, std::string &err);

}  // namespace rdmxbench
