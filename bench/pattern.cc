// bench/pattern.cc: deterministic payload patterns (splitmix64 words).
#include "pattern.h"

#include <cstring>

namespace rdmxbench {

namespace {

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t word(std::uint64_t seed, std::size_t k) { return mix(seed ^ (k * 0xd1b54a32d192ed03ull)); }

void word_bytes(std::uint64_t w, std::uint8_t out[8]) {
  for (int b = 0; b < 8; ++b) {
    out[b] = static_cast<std::uint8_t>(w >> (8 * b));
  }
}

}  // namespace

std::uint64_t pattern_seed(int sender, int receiver, std::uint64_t iter, std::size_t size) {
  std::uint64_t s = mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(sender)));
  s = mix(s ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(receiver)));
  s = mix(s ^ iter);
  return mix(s ^ static_cast<std::uint64_t>(size));
}

std::uint8_t pattern_byte(std::uint64_t seed, std::size_t index) {
  return static_cast<std::uint8_t>(word(seed, index / 8) >> (8 * (index % 8)));
}

void pattern_fill(void *buf, std::size_t len, std::uint64_t seed) {
  auto *p = static_cast<std::uint8_t *>(buf);
  std::uint8_t w[8];
  for (std::size_t k = 0; k * 8 < len; ++k) {
    word_bytes(word(seed, k), w);
    std::size_t n = len - k * 8 < 8 ? len - k * 8 : 8;
    std::memcpy(p + k * 8, w, n);
  }
}

bool pattern_check(const void *buf, std::size_t len, std::uint64_t seed, Mismatch *m) {
  const auto *p = static_cast<const std::uint8_t *>(buf);
  std::uint8_t w[8];
  bool ok = true;
  for (std::size_t k = 0; k * 8 < len; ++k) {
    word_bytes(word(seed, k), w);
    std::size_t n = len - k * 8 < 8 ? len - k * 8 : 8;
    if (std::memcmp(p + k * 8, w, n) == 0) {
      continue;
    }
    for (std::size_t b = 0; b < n; ++b) {
      if (p[k * 8 + b] == w[b]) {
        continue;
      }
      if (ok && m != nullptr) {
        *m = Mismatch{k * 8 + b, 0, p[k * 8 + b], w[b]};
      }
      ok = false;
      if (m != nullptr) {
        ++m->count;
      }
    }
  }
  return ok;
}

float reduce_value(std::uint64_t seed, std::size_t e, int rank) {
  auto base = static_cast<float>(pattern_byte(seed, e) & 0x7f);
  auto weight = static_cast<float>(1 + e % 3);
  return base + static_cast<float>(rank) * weight;
}

float reduce_expected(std::uint64_t seed, std::size_t e, int nranks) {
  auto base = static_cast<float>(pattern_byte(seed, e) & 0x7f);
  auto weight = static_cast<float>(1 + e % 3);
  double n = nranks;
  return static_cast<float>(n * base + weight * n * (n - 1) / 2);
}

}  // namespace rdmxbench
