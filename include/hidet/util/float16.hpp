// Host-side IEEE binary16 (f16) and bfloat16 (bf16) storage types with round-to-nearest-even
// conversions, bit-identical to the GPU's __float2half_rn / __float2bfloat16_rn. Arithmetic on
// them happens in float and rounds back, which is what the hardware does for a single f16 op.
#pragma once

#include <cstdint>
#include <cstring>

namespace hidet {

namespace detail {
inline std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
} // namespace detail

/// f16 bits -> float (exact).
inline float half_bits_to_float(std::uint16_t h) {
  std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return detail::bits_f32(sign);
    // subnormal: value = man * 2^-24
    float v = float(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return detail::bits_f32(sign | 0x7f800000u | (man << 13));
  return detail::bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

/// float -> f16 bits, round to nearest even (overflow to inf, NaN kept quiet).
inline std::uint16_t float_to_half_bits(float f) {
  std::uint32_t x = detail::f32_bits(f);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return std::uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
  if (ax >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u); // rounds to >= 65520 -> inf
  if (ax < 0x38800000u) {
    // result is subnormal or zero: value / 2^-24, rounded to nearest even
    float v = detail::bits_f32(ax) * 16777216.0f; // exact scaling by 2^24
    std::uint32_t r = std::uint32_t(v);
    float frac = v - float(r);
    if (frac > 0.5f || (frac == 0.5f && (r & 1u))) ++r;
    return std::uint16_t(sign | r);
  }
  std::uint32_t mant_odd = (ax >> 13) & 1u;
  ax += 0xfffu + mant_odd;
  return std::uint16_t(sign | ((ax - 0x38000000u) >> 13));
}

/// bf16 bits -> float (exact).
inline float bf16_bits_to_float(std::uint16_t b) { return detail::bits_f32(std::uint32_t(b) << 16); }

/// float -> bf16 bits, round to nearest even.
inline std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t x = detail::f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return std::uint16_t(x >> 16);
}

/// Storage type for f16 on the host.
struct float16 {
  std::uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) : bits(float_to_half_bits(f)) {}
  static float16 from_bits(std::uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
  explicit operator float() const { return half_bits_to_float(bits); }
};

/// Storage type for bf16 on the host.
struct bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) : bits(float_to_bf16_bits(f)) {}
  static bfloat16 from_bits(std::uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  explicit operator float() const { return bf16_bits_to_float(bits); }
};

} // namespace hidet
