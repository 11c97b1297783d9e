// tests/unit/bench_html_synth.cc: writes the HTML report of an all-pairs run
// too big to run here (RANKS ranks on HOSTS hosts, made up), with one link
// flagged in both matrices and one pair that cannot talk in the bandwidth
// matrix, for bench_html_render.sh to check that the heat maps stay readable
// (one cell per host pair) and still point at the bad link, and that a host
// pair's drill-down shows its links as the run's JSON (OUT.json) has them.
// Usage: bench_html_synth OUT.html RANKS HOSTS FLAGGED_SENDER FLAGGED_RECEIVER SILENT_SENDER SILENT_RECEIVER
//        [OUT.json]
#include "report.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using rdmxbench::Matrix;
using rdmxbench::Report;

namespace {

constexpr double kLatUs = 2.0, kBwMBs = 10000.0;   // a healthy link
constexpr double kJitter = 0.03;                   // +-3 %: the noise between healthy links
constexpr double kSlowFactor = 8.0;                // how much worse the flagged link is

Matrix make(const char *name, const char *title, const char *unit, bool higher, int n, double base) {
  Matrix m;
  m.name = name;
  m.title = title;
  m.unit = unit;
  m.higher_is_better = higher;
  m.resize(n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      double wobble = 1 + kJitter * (((a * 31 + b * 17) % 21) - 10) / 10.0;   // deterministic
      m.at(a, b) = a == b ? rdmxbench::kNaN : base * wobble;
    }
  }
  m.median = base;
  return m;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 8 && argc != 9) {
    std::fprintf(stderr, "usage: %s OUT.html RANKS HOSTS FLAGGED_SENDER FLAGGED_RECEIVER SILENT_SENDER "
                         "SILENT_RECEIVER [OUT.json]\n", argv[0]);
    return 2;
  }
  int n = std::atoi(argv[2]), hosts = std::atoi(argv[3]);
  int fa = std::atoi(argv[4]), fb = std::atoi(argv[5]), sa = std::atoi(argv[6]), sb = std::atoi(argv[7]);
  Report r;
  r.prog = "rdmx-bench";
  r.command = "allpairs";
  r.backend_version = "synthetic";
  r.ranks = n;
  for (int k = 0; k < n; ++k) {
    char host[32];
    std::snprintf(host, sizeof host, "node%03d", k / ((n + hosts - 1) / hosts));
    r.hosts.emplace_back(host);
  }
  Matrix lat = make("lat_alone", "All-pairs latency (us), each pair alone", "us", false, n, kLatUs);
  Matrix bw = make("bw_alone", "All-pairs bandwidth (MB/s), each pair alone", "MB/s", true, n, kBwMBs);
  lat.at(fa, fb) = kLatUs * kSlowFactor;
  lat.flagged[lat.idx(fa, fb)] = 1;
  bw.at(fa, fb) = kBwMBs / kSlowFactor;
  bw.flagged[bw.idx(fa, fb)] = 1;
  bw.err[bw.idx(sa, sb)] = "cannot talk (alone): no progress";
  r.matrices = {lat, bw};
  r.checks.push_back({"all-pair links", false, "1 suspect, 1 cannot talk"});
  std::string err;
  if (!rdmxbench::write_output(argv[1], rdmxbench::html_report(r), err) ||
      (argc == 9 && !rdmxbench::write_output(argv[8], rdmxbench::json_report(r), err))) {
    std::fprintf(stderr, "bench_html_synth: %s\n", err.c_str());
    return 1;
  }
  return 0;
}
