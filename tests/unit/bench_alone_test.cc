// The all-pairs "alone" phase at scale (bench/allpairs_sample.h): the sample
// of pairs tested alone above kAloneAllMaxRanks ranks, and how the flagging,
// the diagnosis and the reports treat the pairs it leaves out.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "allpairs.h"
#include "allpairs_sample.h"
#include "html_svg.h"
#include "report.h"
#include "bench_text_of.h"

namespace {

using namespace rdmxbench;

long all_pairs(int n) { return static_cast<long>(n) * (n - 1); }

// Sizes and requests around the edges: tiny jobs, the default limit, odd and
// even counts (r + n/2 differs), a sample as large as every pair and beyond.
const int kRankCounts[] = {2, 3, 4, 5, 7, 32, 33, 64, 101, 256};

std::vector<long> requests(int n) { return {1, n, 2L * n, 5L * n, all_pairs(n) - 1, all_pairs(n), 10 * all_pairs(n)}; }

TEST(BenchAlone, SampleCoversEveryRankWithoutSelfOrDuplicatePairs) {
  for (int n : kRankCounts) {
    for (long k : requests(n)) {
      const auto s = alone_sample(n, k);
      std::set<std::pair<int, int>> seen;
      std::vector<int> sends(static_cast<std::size_t>(n)), recvs(static_cast<std::size_t>(n));
      for (auto [a, b] : s) {
        ASSERT_TRUE(a >= 0 && a < n && b >= 0 && b < n) << n << " " << a << "->" << b;
        EXPECT_NE(a, b) << "self pair at n=" << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << "duplicate " << a << "->" << b << " at n=" << n;
        ++sends[static_cast<std::size_t>(a)];
        ++recvs[static_cast<std::size_t>(b)];
      }
      for (int r = 0; r < n; ++r) {
        EXPECT_GE(sends[static_cast<std::size_t>(r)], 1) << "rank " << r << " never sends, n=" << n << " k=" << k;
        EXPECT_GE(recvs[static_cast<std::size_t>(r)], 1) << "rank " << r << " never receives, n=" << n << " k=" << k;
      }
      EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    }
  }
}

// At least the K asked for (up to every pair), at most K or the 2N covering
// pairs, whichever is more; never more than N(N-1).
TEST(BenchAlone, SampleSizeBounds) {
  for (int n : kRankCounts) {
    for (long k : requests(n)) {
      const long size = static_cast<long>(alone_sample(n, k).size());
      const long want = std::min(k, all_pairs(n));
      EXPECT_GE(size, want) << "n=" << n << " k=" << k;
      EXPECT_LE(size, std::max(want, 2L * n)) << "n=" << n << " k=" << k;
      EXPECT_LE(size, all_pairs(n)) << "n=" << n << " k=" << k;
    }
  }
  EXPECT_EQ(static_cast<long>(alone_sample(64, 2 * 64).size()), 2 * 64);
  EXPECT_EQ(static_cast<long>(alone_sample(64, 4 * 64).size()), 4 * 64);
  EXPECT_TRUE(alone_sample(1, 10).empty());
}

// Every rank computes the sample on its own: it must depend on nothing but
// the rank count and the size asked for.
TEST(BenchAlone, SampleIsDeterministic) {
  for (int n : kRankCounts) {
    EXPECT_EQ(alone_sample(n, 3L * n), alone_sample(n, 3L * n)) << n;
  }
  EXPECT_NE(alone_sample(64, 300), alone_sample(65, 300));   // seeded from the rank count
}

TEST(BenchAlone, PlanDefaultsByRankCount) {
  const AlonePlan small = plan_alone(kAloneAllMaxRanks, std::nullopt, 0);
  EXPECT_EQ(small.mode, AloneMode::all);
  EXPECT_EQ(static_cast<long>(small.pairs.size()), all_pairs(kAloneAllMaxRanks));
  EXPECT_TRUE(small.covers(0, 31) && small.covers(31, 0));

  const int n = kAloneAllMaxRanks + 1;
  const AlonePlan big = plan_alone(n, std::nullopt, 0);
  EXPECT_EQ(big.mode, AloneMode::sample);
  EXPECT_EQ(static_cast<long>(big.pairs.size()), kAloneSamplePerRank * n);
  EXPECT_EQ(big.total, all_pairs(n));
  EXPECT_NE(big.why.find("66 of 1056 pairs sampled (above 32 ranks; --alone all to test every pair alone)"),
            std::string::npos)
      << big.why;
  EXPECT_TRUE(big.covers(big.pairs[0].first, big.pairs[0].second));

  const AlonePlan forced = plan_alone(n, AloneMode::all, 0);
  EXPECT_EQ(static_cast<long>(forced.pairs.size()), all_pairs(n));
  EXPECT_NE(forced.why.find("(--alone all)"), std::string::npos) << forced.why;

  const AlonePlan k = plan_alone(4, AloneMode::sample, 9);
  EXPECT_EQ(k.pairs.size(), 9u);
  EXPECT_NE(k.why.find("9 of 12 pairs sampled (--alone sample;"), std::string::npos) << k.why;

  const AlonePlan none = plan_alone(8, AloneMode::none, 0);
  EXPECT_TRUE(none.pairs.empty());
  EXPECT_FALSE(none.covers(0, 1));

  AloneMode m = AloneMode::all;
  EXPECT_TRUE(parse_alone_mode("none", m) && m == AloneMode::none);
  EXPECT_TRUE(parse_alone_mode("sample", m) && m == AloneMode::sample);
  EXPECT_FALSE(parse_alone_mode("some", m));
}

// A bandwidth matrix "each pair alone" where only the pairs of `plan` were
// measured: the others are NaN, as collect_allpairs leaves them.
Matrix sampled_matrix(const AlonePlan &plan, int n, double value) {
  Matrix m = rdmxbench_test::bw_matrix(n, value);
  m.skipped.assign(m.v.size(), 0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b && !plan.covers(a, b)) {
        m.at(a, b) = kNaN;
        m.skipped[m.idx(a, b)] = 1;
      }
    }
  }
  return m;
}

// A pair left out is "not measured": never flagged, never "cannot talk";
// a slow pair in the sample is still flagged and named.
TEST(BenchAlone, UnsampledPairsAreNeverFlagged) {
  const int n = 8;
  const AlonePlan plan = plan_alone(n, AloneMode::sample, 0);
  Matrix m = sampled_matrix(plan, n, 1000.0);
  const auto [sa, sb] = plan.pairs[3];
  m.at(sa, sb) = 100.0;
  flag_matrix(m, FlagRule{0.8, 0.0, 0.0});
  int flagged = 0;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      flagged += m.flagged[m.idx(a, b)] ? 1 : 0;
      if (m.skipped_at(a, b)) {
        EXPECT_TRUE(m.err[m.idx(a, b)].empty()) << a << "->" << b;
      }
    }
  }
  EXPECT_EQ(flagged, 1);
  EXPECT_TRUE(m.flagged[m.idx(sa, sb)]);
  EXPECT_EQ(m.measured_pairs(), static_cast<int>(plan.pairs.size()));

  const Diagnosis d = diagnose({m}, [](int r) { return "rank " + std::to_string(r); },
                               [](int) { return std::string("node00"); });
  EXPECT_EQ(d.suspect, 1);
  EXPECT_EQ(d.silent, 0);
  EXPECT_NE(d.lines[0].find("and 16 of them alone"), std::string::npos) << d.lines[0];
  EXPECT_NE(d.lines.back().find("suspect link rank " + std::to_string(sa)), std::string::npos) << d.lines.back();

  Matrix healthy = sampled_matrix(plan, n, 1000.0);
  flag_matrix(healthy, FlagRule{0.8, 0.0, 0.0});
  const Diagnosis ok = diagnose({healthy}, [](int r) { return std::to_string(r); },
                                [](int) { return std::string("node00"); });
  EXPECT_EQ(ok.suspect, 0);
  EXPECT_NE(ok.lines.back().find("each sampled pair alone"), std::string::npos) << ok.lines.back();
}

using rdmxbench_test::text_of;

TEST(BenchAlone, ReportsSayHowManyWereMeasured) {
  const int n = 6;
  const AlonePlan plan = plan_alone(n, AloneMode::sample, 0);
  Matrix m = sampled_matrix(plan, n, 1000.0);
  flag_matrix(m, FlagRule{0.8, 0.0, 0.0});
  const std::vector<std::string> hosts(static_cast<std::size_t>(n), "node00");
  const std::string t = text_of(m, hosts);
  EXPECT_NE(t.find(". = not sampled (12 of 30 pairs measured)"), std::string::npos) << t;
  EXPECT_NE(t.find("        . "), std::string::npos) << t;

  Report r;
  r.ranks = n;
  r.hosts = hosts;
  r.matrices.push_back(m);
  const nlohmann::json j = nlohmann::json::parse(json_report(r));
  const nlohmann::json &jm = j.at("matrices").at(0);
  EXPECT_EQ(jm.at("measured_pairs").get<int>(), 12);
  int unsampled = 0;
  for (const auto &row : jm.at("not_sampled")) {
    for (const auto &cell : row) {
      unsampled += cell.get<bool>() ? 1 : 0;
    }
  }
  EXPECT_EQ(unsampled, 30 - 12);
  EXPECT_TRUE(jm.at("errors").empty());

  const std::string svg = svg_heatmap(m, hosts);
  EXPECT_NE(svg.find("not sampled alone"), std::string::npos);
  EXPECT_NE(html_report(r).find("12 of 30 pairs measured"), std::string::npos);
}

}  // namespace
