// bench/pattern.h: payload patterns for --verify.
//
// Every byte of a payload is a function of (sender, receiver, iteration,
// message size, byte index), so a byte that is lost, duplicated, shifted,
// delivered to the wrong peer or from a stale iteration is caught.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmxbench {

inline constexpr int kAllRanks = 0xFFFF;   // "every receiver" (bcast, allgather)

std::uint64_t pattern_seed(int sender, int receiver, std::uint64_t iter, std::size_t size);
std::uint8_t pattern_byte(std::uint64_t seed, std::size_t index);
void pattern_fill(void *buf, std::size_t len, std::uint64_t seed);

struct Mismatch {
  std::size_t index = 0;   // first differing byte
  std::size_t count = 0;   // differing bytes in all
  std::uint8_t got = 0;
  std::uint8_t want = 0;
};
// True when buf holds exactly the pattern; otherwise *m describes the damage.
bool pattern_check(const void *buf, std::size_t len, std::uint64_t seed, Mismatch *m);

// Reduction operands: small integers as floats, so sums are exact.
// Rank r contributes base(e) + r * weight(e) at element e.
float reduce_value(std::uint64_t seed, std::size_t e, int rank);
float reduce_expected(std::uint64_t seed, std::size_t e, int nranks);

}  // namespace rdmxbench
