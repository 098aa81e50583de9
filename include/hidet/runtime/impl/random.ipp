// Definitions for hidet/runtime/random.hpp.
#pragma once

#include "hidet/runtime/random.hpp"

#include <cmath>

namespace hidet {

HIDET_INLINE void Generator::seed_with(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto &w : s_) {
    x += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    w = z ^ (z >> 31);
  }
  has_spare_ = false;
}

HIDET_INLINE std::uint64_t Generator::next_u64() {
  std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

HIDET_INLINE double Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = 1.0 - uniform(); // (0, 1]: log() stays finite
  double u2 = uniform();
  double r = std::sqrt(-2.0 * std::log(u1));
  double theta = 6.283185307179586476925 * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

namespace runtime::detail {
HIDET_INLINE GlobalGenerator &global_generator() {
  static auto *g = new GlobalGenerator();
  return *g;
}
} // namespace runtime::detail

HIDET_INLINE void manual_seed(std::uint64_t seed) {
  auto &g = runtime::detail::global_generator();
  std::lock_guard<std::mutex> lock(g.mu);
  g.gen.seed_with(seed);
}

} // namespace hidet
