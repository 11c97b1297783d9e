// bench/allpairs_diag.cc: flagging all-pairs cells and saying, in plain
// words, which link or node looks bad.
//
// Heuristic: a single flagged cell -> "suspect link A -> B"; the two
// directions of one pair -> "suspect link between A and B"; every flagged
// cell in the row or column of one rank R -> "suspect node R"; the same with
// host names when several ranks share a host; every flagged cell between the
// ranks of two hosts -> "suspect link between hosts"; otherwise "suspect the
// fabric".
#include "allpairs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace rdmxbench {

namespace {

constexpr std::size_t kMaxListed = 20;   // suspect links listed one by one

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
  return buf;
}

bool is_corruption(const std::string &e) { return e.find("corrupted") != std::string::npos; }

std::string cell_reason(const Matrix &m, int a, int b) {
  bool shift = m.name.find("shift") != std::string::npos;
  std::string phase = shift ? "all at once" : "alone";
  const std::string &e = m.err[m.idx(a, b)];
  if (!e.empty()) {
    return is_corruption(e) ? "corrupts data (" + phase + ")" : "cannot talk (" + phase + "): " + e;
  }
  std::string kind = m.higher_is_better ? "bandwidth " : "latency ";
  return kind + phase + " " + num(m.at(a, b)) + " " + m.unit + " (median " + num(m.median) + ")";
}

struct Bad {
  int from;
  int to;
  std::vector<std::string> why;
  bool silent = false;
};

std::vector<Bad> collect_bad(const std::vector<Matrix> &ms) {
  std::map<std::pair<int, int>, Bad> cells;
  for (const Matrix &m : ms) {
    for (int a = 0; a < m.n; ++a) {
      for (int b = 0; b < m.n; ++b) {
        if (a == b || !m.flagged[m.idx(a, b)]) {
          continue;
        }
        Bad &bad = cells.try_emplace({a, b}, Bad{a, b, {}}).first->second;
        std::string why = cell_reason(m, a, b);
        if (std::find(bad.why.begin(), bad.why.end(), why) == bad.why.end()) {
          bad.why.push_back(why);
        }
        bad.silent = bad.silent || !m.err[m.idx(a, b)].empty();
      }
    }
  }
  std::vector<Bad> out;
  for (auto &kv : cells) {
    out.push_back(std::move(kv.second));
  }
  return out;
}

// Ranks (or hosts) that every bad cell starts or ends at.
template <typename Key>
std::set<Key> common_ends(const std::vector<Bad> &bad, const std::function<Key(int)> &key) {
  std::set<Key> common{key(bad[0].from), key(bad[0].to)};
  for (const Bad &b : bad) {
    std::set<Key> ends{key(b.from), key(b.to)};
    std::set<Key> keep;
    std::set_intersection(common.begin(), common.end(), ends.begin(), ends.end(), std::inserter(keep, keep.end()));
    common = keep;
  }
  return common;
}

// What the alone matrices covered: every pair, some, or none (or absent).
enum class AloneCover { all, some, none };

AloneCover alone_cover(const std::vector<Matrix> &ms, int &measured) {
  measured = 0;
  for (const Matrix &m : ms) {
    if (m.name.find("alone") != std::string::npos) {
      measured = m.measured_pairs();
      return measured == m.n * (m.n - 1) ? AloneCover::all : measured > 0 ? AloneCover::some : AloneCover::none;
    }
  }
  return AloneCover::none;
}

std::string verdict(const std::vector<Bad> &bad, int n, AloneCover cover, const std::function<std::string(int)> &name,
                    const std::function<std::string(int)> &host) {
  if (bad.empty()) {
    const char *alone = cover == AloneCover::all    ? ", and each pair alone."
                        : cover == AloneCover::some ? ", and each sampled pair alone."
                                                    : ".";
    return std::string("Verdict: no suspect link; every link is within the limits with all pairs busy") + alone;
  }
  const Bad &b0 = bad[0];
  if (bad.size() == 1) {
    return "Verdict: suspect link " + name(b0.from) + " -> " + name(b0.to) +
           ": only this direction is bad; check the cable, switch ports and NICs on that path.";
  }
  std::set<int> ranks = common_ends<int>(bad, [](int r) { return r; });
  if (ranks.size() == 2) {
    std::string s = "Verdict: suspect link between " + name(b0.from) + " and " + name(b0.to) + " (both directions)";
    return s + (n == 2 ? "; with only 2 ranks a bad node and a bad link look the same." : ".");
  }
  if (ranks.size() == 1) {
    int r = *ranks.begin();
    return "Verdict: suspect node " + name(r) + ": all " + std::to_string(bad.size()) +
           " suspect links start or end there; check that host's NIC, cable, switch port, firmware and load.";
  }
  std::set<std::string> all_hosts;
  for (int r = 0; r < n; ++r) {
    all_hosts.insert(host(r));
  }
  std::set<std::string> hs = common_ends<std::string>(bad, host);
  if (hs.size() == 1 && all_hosts.size() > 1) {
    return "Verdict: suspect host " + *hs.begin() + ": every suspect link starts or ends at one of its ranks.";
  }
  // Every bad link runs between the same two hosts (and none stays on one):
  // the path between them, or one of the two when there are only two.
  const bool all_cross = std::all_of(bad.begin(), bad.end(), [&](const Bad &b) { return host(b.from) != host(b.to); });
  if (hs.size() == 2 && all_cross) {
    std::string s = "Verdict: suspect link between hosts " + *hs.begin() + " and " + *hs.rbegin() +
                    ": every suspect link runs between their ranks";
    return s + (all_hosts.size() == 2 ? "; with only 2 hosts a bad host and a bad link between them look the same."
                                      : "; check the cables and switch ports on the path between them.");
  }
  return "Verdict: " + std::to_string(bad.size()) +
         " suspect links share no node: suspect the fabric (a switch, its uplinks) or traffic from other jobs; "
         "rerun allpairs to confirm, then check the switch counters.";
}

}  // namespace

void flag_matrix(Matrix &m, const FlagRule &rule) {
  std::vector<double> vals;
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) {
      if (a != b && !m.skipped_at(a, b) && m.err[m.idx(a, b)].empty() && std::isfinite(m.at(a, b))) {
        vals.push_back(m.at(a, b));
      }
    }
  }
  m.median = median_of(vals);
  double lim = 0.0;
  if (m.higher_is_better) {
    lim = std::max(rule.fraction > 0 && std::isfinite(m.median) ? rule.fraction * m.median : 0.0, rule.min_bw);
    m.limit = lim > 0 ? lim : kNaN;
  } else {
    lim = std::numeric_limits<double>::infinity();
    if (rule.fraction > 0 && std::isfinite(m.median)) {
      lim = m.median / rule.fraction;
    }
    if (rule.max_lat > 0) {
      lim = std::min(lim, rule.max_lat);
    }
    m.limit = std::isfinite(lim) ? lim : kNaN;
  }
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) {
      if (m.skipped_at(a, b)) {   // not measured by design: no verdict either way
        m.err[m.idx(a, b)].clear();
        m.flagged[m.idx(a, b)] = 0;
        continue;
      }
      double v = m.at(a, b);
      bool slow = std::isfinite(m.limit) && std::isfinite(v) && (m.higher_is_better ? v < m.limit : v > m.limit);
      slow = slow || (std::isfinite(v) && std::isfinite(m.floor_at(a, b)) && v < m.floor_at(a, b));   // port rule
      bool missing = !std::isfinite(v) && m.err[m.idx(a, b)].empty();
      if (missing && a != b) {
        m.err[m.idx(a, b)] = "no measurement";
      }
      m.flagged[m.idx(a, b)] = a != b && (slow || !m.err[m.idx(a, b)].empty());
    }
  }
}

Diagnosis diagnose(const std::vector<Matrix> &ms, const std::function<std::string(int)> &name,
                   const std::function<std::string(int)> &host) {
  Diagnosis d;
  int n = ms.empty() ? 0 : ms[0].n;
  d.links = n * (n - 1);
  std::vector<Bad> bad = collect_bad(ms);
  d.suspect = static_cast<int>(bad.size());
  for (const Bad &b : bad) {
    d.silent += b.silent ? 1 : 0;
  }
  int alone = 0;
  const AloneCover cover = alone_cover(ms, alone);
  const std::string checked = "Checked " + std::to_string(d.links) + " links (every ordered pair of " +
                              std::to_string(n) + " ranks)";
  d.lines.push_back(cover == AloneCover::all ? checked + ", each pair alone and then all pairs at once."
                    : cover == AloneCover::some
                        ? checked + " with all pairs at once, and " + std::to_string(alone) + " of them alone."
                        : checked + " with all pairs at once (none alone).");
  if (!bad.empty()) {
    d.lines.push_back(std::to_string(d.suspect) + " suspect link(s), " + std::to_string(d.silent) +
                      " of which cannot talk or corrupt data:");
  }
  for (std::size_t i = 0; i < bad.size() && i < kMaxListed; ++i) {
    std::string why;
    for (const std::string &w : bad[i].why) {
      why += (why.empty() ? "" : "; ") + w;
    }
    d.lines.push_back("  " + name(bad[i].from) + " -> " + name(bad[i].to) + ": " + why);
  }
  if (bad.size() > kMaxListed) {
    d.lines.push_back("  ... and " + std::to_string(bad.size() - kMaxListed) + " more (see the matrices)");
  }
  d.lines.push_back(verdict(bad, n, cover, name, host));
  return d;
}

}  // namespace rdmxbench
