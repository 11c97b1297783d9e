// bench/allpairs_sample.h: which pairs the all-pairs "alone" phase measures.
//
// Each pair alone is one serial test while every other rank waits, so the
// phase costs N(N-1) tests: fine for a rack, hours for a large cluster. Up to
// kAloneAllMaxRanks ranks every pair is tested alone; above, a deterministic
// sample of O(N) pairs that has every rank send and receive at least once.
// The shift phase (all pairs at once, N-1 steps) always covers every pair.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rdmxbench {

enum class AloneMode { all, sample, none };

// Above this many ranks the default --alone is "sample".
inline constexpr int kAloneAllMaxRanks = 32;
// Default sample size per rank (--alone-pairs): K = kAloneSamplePerRank * N.
inline constexpr long kAloneSamplePerRank = 2;

// Parses "all", "sample", "none"; false on anything else.
bool parse_alone_mode(const std::string &text, AloneMode &out);
const char *alone_mode_name(AloneMode m);

// The sample for n ranks and k requested pairs: r -> (r+1)%n and
// r -> (r+n/2)%n for every r, then pseudo-random distinct pairs (seeded from
// n, so every rank and every run computes the same list) up to k. The size is
// max(min(k, n(n-1)), the covering pairs): never a self pair, never twice the
// same ordered pair, every rank at least once as sender and as receiver.
// Pairs are (sender, receiver), sorted.
std::vector<std::pair<int, int>> alone_sample(int n, long k);

// What the alone phase does in one run and why, for the report.
struct AlonePlan {
  AloneMode mode = AloneMode::all;
  std::vector<std::pair<int, int>> pairs;   // (sender, receiver) measured alone, in order
  long total = 0;                           // n(n-1): every ordered pair
  std::string why;                          // one sentence for the summary
  bool covers(int from, int to) const;      // whether the pair is measured alone
};

// `requested`: the --alone option, or none for the default by rank count;
// `k`: --alone-pairs, or <= 0 for the default kAloneSamplePerRank * n.
AlonePlan plan_alone(int n, std::optional<AloneMode> requested, long k);

}  // namespace rdmxbench
