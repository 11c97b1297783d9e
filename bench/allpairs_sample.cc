// bench/allpairs_sample.cc: the pairs of the all-pairs "alone" phase.
#include "allpairs_sample.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>

namespace rdmxbench {

namespace {

// Mixed into the seed so that the sample does not line up with other
// rank-count-seeded sequences (any fixed odd constant does).
constexpr std::uint64_t kSampleSeedSalt = 0x9e3779b97f4a7c15ull;

}  // namespace

bool parse_alone_mode(const std::string &text, AloneMode &out) {
  for (AloneMode m : {AloneMode::all, AloneMode::sample, AloneMode::none}) {
    if (text == alone_mode_name(m)) {
      out = m;
      return true;
    }
  }
  return false;
}

const char *alone_mode_name(AloneMode m) {
  switch (m) {
    case AloneMode::all:
      return "all";
    case AloneMode::sample:
      return "sample";
    case AloneMode::none:
      return "none";
  }
  return "all";
}

std::vector<std::pair<int, int>> alone_sample(int n, long k) {
  std::set<std::pair<int, int>> chosen;
  if (n < 2) {
    return {};
  }
  for (int r = 0; r < n; ++r) {   // coverage: every rank sends and receives
    chosen.insert({r, (r + 1) % n});
    if ((r + n / 2) % n != r) {
      chosen.insert({r, (r + n / 2) % n});
    }
  }
  const long total = static_cast<long>(n) * (n - 1);
  const auto want = static_cast<std::size_t>(std::min(k, total));
  // mt19937_64 and the modulo below are fully specified, unlike the standard
  // distributions, so every rank (and every build) draws the same pairs.
  std::mt19937_64 gen(kSampleSeedSalt ^ static_cast<std::uint64_t>(n));
  const auto un = static_cast<std::uint64_t>(n);
  while (chosen.size() < want) {
    int a = static_cast<int>(gen() % un);
    int b = static_cast<int>(gen() % (un - 1));
    chosen.insert({a, b >= a ? b + 1 : b});   // b skips a: never a self pair
  }
  return {chosen.begin(), chosen.end()};
}

bool AlonePlan::covers(int from, int to) const {
  return std::binary_search(pairs.begin(), pairs.end(), std::pair<int, int>{from, to});
}

AlonePlan plan_alone(int n, std::optional<AloneMode> requested, long k) {
  AlonePlan p;
  p.total = static_cast<long>(n) * (n - 1);
  p.mode = requested ? *requested : n > kAloneAllMaxRanks ? AloneMode::sample : AloneMode::all;
  const std::string of = " of " + std::to_string(p.total) + " pairs";
  const std::string limit = std::to_string(kAloneAllMaxRanks) + " ranks";
  if (p.mode == AloneMode::all) {
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a != b) {
          p.pairs.push_back({a, b});
        }
      }
    }
    p.why = "Alone: all " + std::to_string(p.total) + " pairs tested alone" +
            (requested ? std::string(" (--alone all).") : " (the default up to " + limit + ").");
    return p;
  }
  if (p.mode == AloneMode::none) {
    p.why = "Alone: not run (--alone none); each of the " + std::to_string(p.total) +
            " pairs is measured only with all pairs at once.";
    return p;
  }
  long want = k > 0 ? k : kAloneSamplePerRank * n;
  p.pairs = alone_sample(n, want);
  std::string reason = requested ? std::string("--alone sample") : "above " + limit;
  p.why = "Alone: " + std::to_string(p.pairs.size()) + of + " sampled (" + reason +
          "; --alone all to test every pair alone); the rest are not measured alone, and every pair is "
          "measured with all pairs at once.";
  return p;
}

}  // namespace rdmxbench
