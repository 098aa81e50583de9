// The host random number generator behind randn/rand: xoshiro256** (Blackman and Vigna) seeded
// through splitmix64, with uniform doubles in [0, 1) from the top 53 bits and normal samples from
// the Box-Muller transform. One process-wide generator, deterministic for a seed.
#pragma once

#include <cstdint>
#include <mutex>

#include "hidet/config.hpp"

namespace hidet {

/// xoshiro256**: 256 bits of state, period 2^256 - 1.
class Generator {
public:
  /// The seed used when manual_seed() was never called.
  static constexpr std::uint64_t default_seed = 0x9e3779b97f4a7c15ull;

  explicit Generator(std::uint64_t seed = default_seed) { seed_with(seed); }

  /// Resets the state from a 64-bit seed (splitmix64 expansion, as the authors recommend).
  void seed_with(std::uint64_t seed);

  /// The next 64 random bits.
  std::uint64_t next_u64();

  /// Uniform in [0, 1), 53 random bits.
  double uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }

  /// Standard normal (mean 0, standard deviation 1).
  double normal();

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
/// The process-wide generator behind randn() and rand().
GlobalGenerator &global_generator();
} // namespace runtime::detail

/// Seeds the generator used by randn() and rand(): the same seed gives the same tensors.
void manual_seed(std::uint64_t seed);

/// Runs f(Generator&) with the global generator locked.
template <class F> decltype(auto) with_global_generator(F &&f) {
  auto &g = runtime::detail::global_generator();
  std::lock_guard<std::mutex> lock(g.mu);
  return f(g.gen);
}

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/random.ipp"
#endif
