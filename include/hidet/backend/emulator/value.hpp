// Values of the SIMT emulator: one 8-byte Slot per thread and variable, the per-dtype traits that
// read/write a Slot, load/store it from memory, and the CUDA conversion rules between dtypes.
//
// Representation: integers and bool live in Slot::i, wrapped to their dtype (u64 as its bit
// pattern); floats live in Slot::f as a double holding a value exactly representable in the dtype
// (f16/bf16/fp8/f32 values are rounded to the type after every operation, as the hardware does;
// fp8 conversions saturate like cvt.rn.satfinite);
// pointers live in Slot::i as host addresses.
//
// Conversions (CUDA semantics): float -> integer truncates toward zero and saturates to the
// target's range, NaN gives 0 (like cvt.rzi.sat / __float2int_rz); integer -> integer wraps like
// C++; anything -> bool is `!= 0`; f64 -> f16/bf16 and very large integers -> bf16 round through
// f32 (a double rounding the hardware's direct conversion avoids; differences are 1 ulp at most
// in rare ties).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hidet/ir/dtype.hpp"
#include "hidet/util/float16.hpp"

namespace hidet::backend::emu {

/// One per-thread value.
union Slot {
  std::int64_t i;
  double f;
};

/// Rounds a float to the nearest f16 / bf16 value (as a float).
inline float round_f16(float x) { return half_bits_to_float(float_to_half_bits(x)); }
inline float round_bf16(float x) { return bf16_bits_to_float(float_to_bf16_bits(x)); }

/// Traits of one dtype: C is the type arithmetic happens in; get/put move a value between a Slot
/// and C (put rounds floats to the dtype); load/store move it between a Slot and memory.
template <DTypeCode K> struct Num;

#define HIDET_EMU_INT_NUM(K, CT)                                                                   \
  template <> struct Num<DTypeCode::K> {                                                           \
    using C = CT;                                                                                  \
    static constexpr bool is_float = false;                                                        \
    static C get(Slot s) { return C(s.i); }                                                        \
    static Slot put(C v) { return Slot{std::int64_t(v)}; }                                         \
    static Slot load(const void *p) {                                                              \
      C v;                                                                                         \
      std::memcpy(&v, p, sizeof(C));                                                               \
      return put(v);                                                                               \
    }                                                                                              \
    static void store(void *p, Slot s) {                                                           \
      C v = get(s);                                                                                \
      std::memcpy(p, &v, sizeof(C));                                                               \
    }                                                                                              \
  };
HIDET_EMU_INT_NUM(I8, std::int8_t)
HIDET_EMU_INT_NUM(I16, std::int16_t)
HIDET_EMU_INT_NUM(I32, std::int32_t)
HIDET_EMU_INT_NUM(I64, std::int64_t)
HIDET_EMU_INT_NUM(U8, std::uint8_t)
HIDET_EMU_INT_NUM(U16, std::uint16_t)
HIDET_EMU_INT_NUM(U32, std::uint32_t)
HIDET_EMU_INT_NUM(U64, std::uint64_t)
#undef HIDET_EMU_INT_NUM

template <> struct Num<DTypeCode::Bool> {
  using C = bool;
  static constexpr bool is_float = false;
  static C get(Slot s) { return s.i != 0; }
  static Slot put(C v) { return Slot{v ? 1 : 0}; }
  static Slot load(const void *p) { return put(*static_cast<const std::uint8_t *>(p) != 0); }
  static void store(void *p, Slot s) { *static_cast<std::uint8_t *>(p) = s.i != 0; }
};

/// A float stored narrower than f32 (as Bits): computed in float, rounded back by put and store.
template <class Bits, float (*to_float)(Bits), Bits (*from_float)(float)> struct NarrowFloatNum {
  using C = float;
  static constexpr bool is_float = true;
  static C get(Slot s) { return float(s.f); }
  static Slot put(C v) {
    Slot s;
    s.f = to_float(from_float(v));
    return s;
  }
  static Slot load(const void *p) {
    Bits b;
    std::memcpy(&b, p, sizeof(Bits));
    Slot s;
    s.f = to_float(b);
    return s;
  }
  static void store(void *p, Slot s) {
    Bits b = from_float(float(s.f));
    std::memcpy(p, &b, sizeof(Bits));
  }
};
template <> struct Num<DTypeCode::F16> : NarrowFloatNum<std::uint16_t, half_bits_to_float, float_to_half_bits> {};
template <> struct Num<DTypeCode::BF16> : NarrowFloatNum<std::uint16_t, bf16_bits_to_float, float_to_bf16_bits> {};
template <>
struct Num<DTypeCode::F8E4M3> : NarrowFloatNum<std::uint8_t, f8e4m3_bits_to_float, float_to_f8e4m3_bits> {};
template <>
struct Num<DTypeCode::F8E5M2> : NarrowFloatNum<std::uint8_t, f8e5m2_bits_to_float, float_to_f8e5m2_bits> {};

template <> struct Num<DTypeCode::F32> {
  using C = float;
  static constexpr bool is_float = true;
  static C get(Slot s) { return float(s.f); }
  static Slot put(C v) {
    Slot s;
    s.f = v;
    return s;
  }
  static Slot load(const void *p) {
    float v;
    std::memcpy(&v, p, 4);
    return put(v);
  }
  static void store(void *p, Slot s) {
    float v = float(s.f);
    std::memcpy(p, &v, 4);
  }
};

template <> struct Num<DTypeCode::F64> {
  using C = double;
  static constexpr bool is_float = true;
  static C get(Slot s) { return s.f; }
  static Slot put(C v) {
    Slot s;
    s.f = v;
    return s;
  }
  static Slot load(const void *p) {
    double v;
    std::memcpy(&v, p, 8);
    return put(v);
  }
  static void store(void *p, Slot s) { std::memcpy(p, &s.f, 8); }
};

/// Calls `f.template operator()<K>()` with the DTypeCode of `d` (a compile-time dispatch).
template <class F> decltype(auto) with_dtype(DataType d, F &&f) {
  switch (d.code) {
#define HIDET_X(e, s, l, c, n, fl, sg)                                                             \
  case DTypeCode::e: return f.template operator()<DTypeCode::e>();
    HIDET_DTYPES(HIDET_X)
#undef HIDET_X
  }
  return f.template operator()<DTypeCode::I32>();
}

/// Reads a value of dtype `d` from memory.
inline Slot load_value(DataType d, const void *p) {
  return with_dtype(d, [&]<DTypeCode K>() { return Num<K>::load(p); });
}
/// Writes a value of dtype `d` to memory.
inline void store_value(DataType d, void *p, Slot v) {
  with_dtype(d, [&]<DTypeCode K>() { Num<K>::store(p, v); });
}

/// Float -> integer: truncation toward zero, saturating at the range of C, NaN -> 0.
template <class C> C saturating_trunc(double x) {
  if (std::isnan(x)) return C(0);
  x = std::trunc(x);
  if (x <= double(std::numeric_limits<C>::lowest())) return std::numeric_limits<C>::lowest();
  if (x >= double(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
  return C(x);
}

/// How a Slot holds a value of a conversion's source dtype: a float in `f`; a signed or narrower
/// unsigned integer or a bool in `i`; a u64 as its bit pattern in `i`.
enum class SlotKind { Float, Int, U64 };
inline SlotKind slot_kind(DataType d) {
  return d.is_float() ? SlotKind::Float : d == dtypes::u64 ? SlotKind::U64 : SlotKind::Int;
}

/// Converts a value held as `F` to dtype K (see the conversion rules at the top); a conversion
/// to the value's own dtype returns it unchanged.
template <SlotKind F, DTypeCode K> Slot convert_slot(Slot v) {
  using N = Num<K>;
  using C = typename N::C;
  if constexpr (K == DTypeCode::Bool) return Slot{F == SlotKind::Float ? (v.f != 0) : (v.i != 0)};
  else if constexpr (F == SlotKind::Float) {
    if constexpr (N::is_float) return N::put(C(v.f));
    else return N::put(saturating_trunc<C>(v.f));
  } else if constexpr (N::is_float) {
    if constexpr (F == SlotKind::U64) return N::put(C(std::uint64_t(v.i)));
    else return N::put(C(v.i));
  } else {
    return N::put(C(v.i));
  }
}

/// Calls `f.template operator()<F>()` with the SlotKind of `d` (a compile-time dispatch).
template <class Fn> decltype(auto) with_slot_kind(DataType d, Fn &&f) {
  switch (slot_kind(d)) {
  case SlotKind::Float: return f.template operator()<SlotKind::Float>();
  case SlotKind::U64: return f.template operator()<SlotKind::U64>();
  case SlotKind::Int: break;
  }
  return f.template operator()<SlotKind::Int>();
}

/// Converts a value of dtype `from` to dtype `to` (see the conversion rules at the top).
inline Slot cast_value(Slot v, DataType from, DataType to) {
  if (from == to) return v;
  return with_dtype(to, [&]<DTypeCode K>() {
    return with_slot_kind(from, [&]<SlotKind F>() { return convert_slot<F, K>(v); });
  });
}

} // namespace hidet::backend::emu
