// A non-cryptographic 128-bit hash for cache keys: two independent 64-bit lanes (different
// multipliers, rotations and seeds) over little-endian 8-byte words, each finished with the
// murmur3 fmix64 avalanche and cross-mixed. Stable across runs, processes and platforms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hidet::util {

/// A 128-bit digest.
struct Hash128 {
  std::uint64_t hi = 0, lo = 0;
  /// 32 lowercase hex digits, hi first.
  std::string hex() const {
    static const char digits[] = "0123456789abcdef";
    std::string s(32, '0');
    for (int i = 0; i < 16; ++i) {
      s[15 - i] = digits[(hi >> (4 * i)) & 15];
      s[31 - i] = digits[(lo >> (4 * i)) & 15];
    }
    return s;
  }
  bool operator==(const Hash128 &) const = default;
};

/// Incremental hasher. update() calls with the same bytes in the same order give the same digest
/// however the bytes are split; add() frames a field with its length so fields cannot run together.
class Hasher128 {
public:
  explicit Hasher128(std::uint64_t seed = 0)
      : a_(0x9e3779b97f4a7c15ull ^ seed), b_(0xc2b2ae3d27d4eb4full + (seed << 1)) {}

  /// Appends raw bytes.
  Hasher128 &update(const void *data, std::size_t n) {
    auto p = static_cast<const unsigned char *>(data);
    total_ += n;
    while (n > 0) {
      buf_[fill_++] = *p++;
      --n;
      if (fill_ == 8) {
        mix(load());
        fill_ = 0;
      }
    }
    return *this;
  }
  /// Appends a length-framed string.
  Hasher128 &add(std::string_view s) {
    add(std::uint64_t(s.size()));
    return update(s.data(), s.size());
  }
  /// Appends a 64-bit integer (little-endian bytes).
  Hasher128 &add(std::uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i)
      b[i] = static_cast<unsigned char>(v >> (8 * i));
    return update(b, 8);
  }

  /// The digest of everything appended so far (the hasher can keep going).
  Hash128 finish() const {
    std::uint64_t a = a_, b = b_;
    if (fill_ > 0) {
      std::uint64_t w = 0;
      for (int i = 0; i < fill_; ++i)
        w |= std::uint64_t(buf_[i]) << (8 * i);
      w ^= std::uint64_t(fill_) << 56;
      step(a, b, w);
    }
    a ^= total_;
    b ^= rotl(total_, 32) ^ 0xa0761d6478bd642full;
    a = fmix(a + b);
    b = fmix(b + rotl(a, 29));
    a += b;
    return {a, b};
  }

private:
  static std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static std::uint64_t fmix(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
  }
  static void step(std::uint64_t &a, std::uint64_t &b, std::uint64_t w) {
    a ^= rotl(w * 0x87c37b91114253d5ull, 31) * 0x4cf5ad432745937full;
    a = rotl(a, 27) * 5 + 0x52dce729;
    b ^= rotl(w * 0xe7037ed1a0b428dbull, 33) * 0x8ebc6af09c88c6e3ull;
    b = rotl(b, 31) * 9 + 0x38495ab5;
  }
  std::uint64_t load() const {
    std::uint64_t w = 0;
    for (int i = 0; i < 8; ++i)
      w |= std::uint64_t(buf_[i]) << (8 * i);
    return w;
  }
  void mix(std::uint64_t w) { step(a_, b_, w); }

  std::uint64_t a_, b_;
  std::uint64_t total_ = 0;
  unsigned char buf_[8] = {};
  int fill_ = 0;
};

/// The 128-bit hash of a byte string.
inline Hash128 hash128(std::string_view s, std::uint64_t seed = 0) {
  return Hasher128(seed).update(s.data(), s.size()).finish();
}

} // namespace hidet::util
