// The host random number generator behind randn/rand: xoshiro256** (Blackman and Vigna) seeded
// through splitmix64, with uniform doubles in [0, 1) from the top 53 bits and normal samples from
// the Box-Muller transform. One process-wide generator, deterministic for a seed.
#pragma once

#include <cmath>
#include <cstdint>
#include <mutex>

namespace hidet {

/// xoshiro256**: 256 bits of state, period 2^256 - 1.
class Generator {
public:
  /// The seed used when manual_seed() was never called.
  static constexpr std::uint64_t default_seed = 0x9e3779b97f4a7c15ull;

  explicit Generator(std::uint64_t seed = default_seed) { seed_with(seed); }

  /// Resets the state from a 64-bit seed (splitmix64 expansion, as the authors recommend).
  void seed_with(std::uint64_t seed) {
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

  /// The next 64 random bits.
  std::uint64_t next_u64() {
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

  /// Uniform in [0, 1), 53 random bits.
  double uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }

  /// Standard normal (mean 0, standard deviation 1).
  double normal() {
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

private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

namespace runtime::detail {
struct GlobalGenerator {
  std::mutex mu;
  Generator gen;
};
inline GlobalGenerator &global_generator() {
  static auto *g = new GlobalGenerator();
  return *g;
}
} // namespace runtime::detail

/// Seeds the generator used by randn() and rand(): the same seed gives the same tensors.
inline void manual_seed(std::uint64_t seed) {
  auto &g = runtime::detail::global_generator();
  std::lock_guard<std::mutex> lock(g.mu);
  g.gen.seed_with(seed);
}

/// Runs f(Generator&) with the global generator locked.
template <class F> decltype(auto) with_global_generator(F &&f) {
  auto &g = runtime::detail::global_generator();
  std::lock_guard<std::mutex> lock(g.mu);
  return f(g.gen);
}

} // namespace hidet
