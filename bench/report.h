// bench/report.h: what a run measured, and the writers that print it
// (OSU-style text, JSON, CSV, one self-contained HTML page).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "port_facts.h"

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
  // n*n, or empty (every pair measured): 1 marks a pair left out by design
  // (an alone pair outside the --alone sample): NaN, no error, never flagged.
  std::vector<char> skipped;
  double median = kNaN;
  double limit = kNaN;              // flag threshold actually used
  // Bandwidth matrices: the data rate (MB/s) the ports at both ends allow
  // each link (n*n; empty, or NaN for a link that does not go through a
  // port or whose rate is unknown), and the per-link floor derived from it
  // when --min-bw is left to its default (n*n; empty or NaN: none).
  std::vector<double> port;
  std::vector<double> floor;
  void resize(int ranks);
  double port_at(int a, int b) const { return port.empty() ? kNaN : port[idx(a, b)]; }
  double floor_at(int a, int b) const { return floor.empty() ? kNaN : floor[idx(a, b)]; }
  double percent_of_port(int a, int b) const;   // NaN without a port rate
  bool skipped_at(int a, int b) const { return !skipped.empty() && skipped[idx(a, b)] != 0; }
  int measured_pairs() const;   // ordered pairs (a != b) not skipped
  double &at(int a, int b) { return v[static_cast<std::size_t>(a * n + b)]; }
  double at(int a, int b) const { return v[static_cast<std::size_t>(a * n + b)]; }
  std::size_t idx(int a, int b) const { return static_cast<std::size_t>(a * n + b); }
};

// What --min-bw is in this run and why.
struct MinBwSetting {
  double alone = 0.0;     // MB/s floor on each pair alone (0: off)
  double shift = 0.0;     // MB/s floor with all pairs at once
  std::string source;     // "option", "port rate", "off"
  std::string why;        // one sentence for the summary
};

struct Check {
  std::string name;
  bool pass = true;
  std::string detail;
};

// Where a report came from, as rank 0 saw it: the command line, when the run
// started, and the RDMX_* variables in its environment (as set; a variable
// left unset takes its default, docs/configuration.md).
struct Provenance {
  std::vector<std::string> argv;
  std::string started_utc;   // ISO 8601, "2026-11-27T04:05:52Z"
  std::vector<std::pair<std::string, std::string>> rdmx_env;   // sorted by name
  std::vector<Setting> settings;   // every effective setting (rdmx backend; empty for MPI)
};
Provenance provenance_of(int argc, char **argv);

struct Report {
  std::string prog, backend, backend_version, command;
  Provenance provenance;
  int ranks = 0;
  std::vector<std::string> hosts;
  std::deque<Table> tables;         // deque: references stay valid while rows stream in
  std::vector<Matrix> matrices;
  std::vector<PortFacts> ports;     // per rank; empty: not asked (subcommands without links)
  MinBwSetting min_bw;
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
  // Up to kMaxRankMatrix ranks one row per rank; beyond, one row per host
  // (median, min and flagged count of the rank pairs of each host pair).
  void matrix(const Matrix &m, const std::vector<std::string> &hosts) const;
  bool enabled() const { return f_ != nullptr; }

 private:
  std::FILE *f_;
};

inline constexpr int kMaxRankMatrix = 16;   // text matrices beyond this many ranks are per host

// A host x host summary of a rank matrix: for each pair of hosts (sender's,
// receiver's) the median and worst of its rank pairs' values and how many
// of them are flagged or cannot talk. Hosts in order of first appearance.
struct HostCell {
  double median = kNaN;
  double worst = kNaN;   // the lowest bandwidth, the highest latency
  int pairs = 0;     // rank pairs in the cell (a != b) that were measured (not skipped)
  int flagged = 0;   // of which flagged or cannot talk
};
struct HostMatrix {
  std::vector<std::string> hosts;
  std::vector<HostCell> cells;   // hosts.size()^2, row = sender's host
};
HostMatrix host_matrix(const Matrix &m, const std::vector<std::string> &hosts);

double median_of(std::vector<double> v);   // NaN when empty
// The ports of a run in one line: each distinct port once, with how many
// ranks use it ("mlx5_0:1 4x EDR, 100 Gb/s data (ibv_query_port) on 8 ranks").
std::string ports_line(const std::vector<PortFacts> &ports);
// A bandwidth matrix against its port rates: "port data rate 12500 MB/s per
// link; links reached 91% of it (median), lowest 40%" ("" without rates).
std::string port_summary(const Matrix &m);
std::string format_cell(const std::string &column, double v);
std::string json_report(const Report &r);
std::string csv_report(const Report &r);
std::string html_report(const Report &r);
// Writes `text` to `path` ("-" = stdout). Returns false with errno text in err.
bool write_output(const std::string &path, const std::string &text, std::string &err);

}  // namespace rdmxbench
