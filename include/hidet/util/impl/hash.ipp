// Definitions for hidet/util/hash.hpp.
#pragma once
#include "hidet/util/hash.hpp"

namespace hidet::util {

HIDET_INLINE std::string Hash128::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = digits[(hi >> (4 * i)) & 15];
    s[31 - i] = digits[(lo >> (4 * i)) & 15];
  }
  return s;
}

HIDET_INLINE Hasher128 &Hasher128::update(const void *data, std::size_t n) {
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

HIDET_INLINE Hasher128 &Hasher128::add(std::string_view s) {
  add(std::uint64_t(s.size()));
  return update(s.data(), s.size());
}

HIDET_INLINE Hasher128 &Hasher128::add(std::uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = static_cast<unsigned char>(v >> (8 * i));
  return update(b, 8);
}

HIDET_INLINE Hash128 Hasher128::finish() const {
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

HIDET_INLINE std::uint64_t Hasher128::fmix(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

HIDET_INLINE void Hasher128::step(std::uint64_t &a, std::uint64_t &b, std::uint64_t w) {
  a ^= rotl(w * 0x87c37b91114253d5ull, 31) * 0x4cf5ad432745937full;
  a = rotl(a, 27) * 5 + 0x52dce729;
  b ^= rotl(w * 0xe7037ed1a0b428dbull, 33) * 0x8ebc6af09c88c6e3ull;
  b = rotl(b, 31) * 9 + 0x38495ab5;
}

HIDET_INLINE std::uint64_t Hasher128::load() const {
  std::uint64_t w = 0;
  for (int i = 0; i < 8; ++i)
    w |= std::uint64_t(buf_[i]) << (8 * i);
  return w;
}

HIDET_INLINE Hash128 hash128(std::string_view s, std::uint64_t seed) {
  return Hasher128(seed).update(s.data(), s.size()).finish();
}

} // namespace hidet::util
