// Host-side IEEE binary16 (f16) and bfloat16 (bf16) storage types with round-to-nearest-even
// conversions, bit-identical to the GPU's __float2half_rn / __float2bfloat16_rn. Arithmetic on
// them happens in float and rounds back, which is what the hardware does for a single f16 op.
// The 8-bit floats (e4m3, e5m2) convert like the GPU's cvt.rn.satfinite (CUDA's __nv_fp8_e4m3 /
// __nv_fp8_e5m2 constructors): round to nearest even, magnitudes past the largest finite value
// (infinities included) saturate to it, NaN becomes 0x7f.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

namespace detail {
/// The value of an 8-bit float with E exponent bits and M mantissa bits (bias 2^(E-1) - 1).
/// e4m3 (`ieee_specials` false): S.1111.111 is NaN, no infinities; e5m2: an exponent of all
/// ones is infinity (mantissa 0) or NaN, as in IEEE.
template <int E, int M, bool ieee_specials> float fp8_bits_to_float(std::uint8_t b) {
  constexpr int bias = (1 << (E - 1)) - 1;
  const bool neg = b & 0x80u;
  const int e = (b >> M) & ((1 << E) - 1), m = b & ((1 << M) - 1);
  float v;
  if (ieee_specials && e == (1 << E) - 1) v = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else if (!ieee_specials && (b & 0x7fu) == 0x7fu) v = std::numeric_limits<float>::quiet_NaN();
  else if (e == 0) v = std::ldexp(float(m), 1 - bias - M);
  else v = std::ldexp(float((1 << M) + m), e - bias - M);
  return neg ? -v : v;
}
/// float -> 8-bit float bits: round to nearest even, saturated to `max_bits` (the largest finite
/// magnitude), NaN -> 0x7f.
template <int E, int M, bool ieee_specials> std::uint8_t float_to_fp8_bits(float f, std::uint8_t max_bits) {
  constexpr int bias = (1 << (E - 1)) - 1;
  if (std::isnan(f)) return 0x7fu;
  const std::uint8_t sign = std::signbit(f) ? 0x80u : 0;
  const float a = std::fabs(f), max_value = fp8_bits_to_float<E, M, ieee_specials>(max_bits);
  if (a > max_value) return sign | max_bits;
  const float min_normal = std::ldexp(1.0f, 1 - bias);
  // the spacing of representable values around a; a / quantum is exact (a power of two)
  const int exp = a < min_normal ? 1 - bias : std::ilogb(a);
  const float q = std::nearbyint(std::ldexp(a, M - exp)); // ties to even (the default mode)
  if (a < min_normal) return sign | std::uint8_t(q); // q == 2^M: the smallest normal, same bits
  const float r = std::ldexp(q, exp - M);
  const int re = std::ilogb(r); // rounding may carry into the next binade
  const int man = int(std::ldexp(r, M - re)) - (1 << M);
  return sign | std::uint8_t(((re + bias) << M) | man);
}
} // namespace detail

/// e4m3 bits -> float (exact).
inline float f8e4m3_bits_to_float(std::uint8_t b) { return detail::fp8_bits_to_float<4, 3, false>(b); }
/// float -> e4m3 bits (round to nearest even, saturated to +-448).
inline std::uint8_t float_to_f8e4m3_bits(float f) { return detail::float_to_fp8_bits<4, 3, false>(f, 0x7e); }
/// e5m2 bits -> float (exact).
inline float f8e5m2_bits_to_float(std::uint8_t b) { return detail::fp8_bits_to_float<5, 2, true>(b); }
/// float -> e5m2 bits (round to nearest even, saturated to +-57344).
inline std::uint8_t float_to_f8e5m2_bits(float f) { return detail::float_to_fp8_bits<5, 2, true>(f, 0x7b); }

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
