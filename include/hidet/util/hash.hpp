// A non-cryptographic 128-bit hash for cache keys: two independent 64-bit lanes (different
// multipliers, rotations and seeds) over little-endian 8-byte words, each finished with the
// murmur3 fmix64 avalanche and cross-mixed. Stable across runs, processes and platforms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hidet/config.hpp"

namespace hidet::util {

/// A 128-bit digest.
struct Hash128 {
  std::uint64_t hi = 0, lo = 0;
  /// 32 lowercase hex digits, hi first.
  std::string hex() const;
  bool operator==(const Hash128 &) const = default;
};

/// Incremental hasher. update() calls with the same bytes in the same order give the same digest
/// however the bytes are split; add() frames a field with its length so fields cannot run together.
class Hasher128 {
public:
  explicit Hasher128(std::uint64_t seed = 0)
      : a_(0x9e3779b97f4a7c15ull ^ seed), b_(0xc2b2ae3d27d4eb4full + (seed << 1)) {}

  /// Appends raw bytes.
  Hasher128 &update(const void *data, std::size_t n);
  /// Appends a length-framed string.
  Hasher128 &add(std::string_view s);
  /// Appends a 64-bit integer (little-endian bytes).
  Hasher128 &add(std::uint64_t v);

  /// The digest of everything appended so far (the hasher can keep going).
  Hash128 finish() const;

private:
  static std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static std::uint64_t fmix(std::uint64_t k);
  static void step(std::uint64_t &a, std::uint64_t &b, std::uint64_t w);
  std::uint64_t load() const;
  void mix(std::uint64_t w) { step(a_, b_, w); }

  std::uint64_t a_, b_;
  std::uint64_t total_ = 0;
  unsigned char buf_[8] = {};
  int fill_ = 0;
};

/// The 128-bit hash of a byte string.
Hash128 hash128(std::string_view s, std::uint64_t seed = 0);

} // namespace hidet::util

#if HIDET_HEADER_ONLY
#include "hidet/util/impl/hash.ipp"
#endif
