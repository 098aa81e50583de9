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

/// The arithmetic domain of a dtype: the dtype whose C type (Num<K>::C) its values are computed
/// in. Nodes that compute are instantiated per domain (six), not per dtype (fifteen), which keeps
/// the code that a header-only build compiles small: i8 and i16 compute in i32; bool, u8 and u16
/// in u32; f16, bf16 and fp8 in f32. A result of a dtype narrower than its domain is brought back
/// to the dtype afterwards (canonical, normalize), which gives what computing in the dtype gives.
constexpr DataType domain_of(DataType d) {
  switch (d.code) {
  case DTypeCode::I8: case DTypeCode::I16: case DTypeCode::I32: return dtypes::i32;
  case DTypeCode::I64: return dtypes::i64;
  case DTypeCode::Bool: case DTypeCode::U8: case DTypeCode::U16: case DTypeCode::U32:
    return dtypes::u32;
  case DTypeCode::U64: return dtypes::u64;
  case DTypeCode::F64: return dtypes::f64;
  default: return dtypes::f32;
  }
}
/// Whether results of dtype `d` computed in its domain need normalizing to `d`.
constexpr bool narrower_than_domain(DataType d) { return domain_of(d) != d; }

/// Calls `f.template operator()<K>()` with K the code of `domain` (a dtype domain_of returns).
template <class F> decltype(auto) with_domain(DataType domain, F &&f) {
  switch (domain.code) {
  case DTypeCode::I64: return f.template operator()<DTypeCode::I64>();
  case DTypeCode::U32: return f.template operator()<DTypeCode::U32>();
  case DTypeCode::U64: return f.template operator()<DTypeCode::U64>();
  case DTypeCode::F32: return f.template operator()<DTypeCode::F32>();
  case DTypeCode::F64: return f.template operator()<DTypeCode::F64>();
  default: break;
  }
  return f.template operator()<DTypeCode::I32>();
}

/// Calls `f.template operator()<K>()` with the domain in which values of dtype `d` compare
/// exactly: registers hold every integer and bool sign- or zero-extended to 64 bits and every
/// float exactly in a double, so i64 serves every integer dtype but u64, and f64 every float.
template <class F> decltype(auto) with_compare_domain(DataType d, F &&f) {
  if (d.is_float()) return f.template operator()<DTypeCode::F64>();
  if (d == dtypes::u64) return f.template operator()<DTypeCode::U64>();
  return f.template operator()<DTypeCode::I64>();
}

/// `v` (a value of dtype d's domain) rounded or wrapped to dtype `d`: what an operation on `d`
/// itself gives.
inline Slot canonical(DataType d, Slot v) {
  return with_dtype(d, [&]<DTypeCode K>() { return Num<K>::put(Num<K>::get(v)); });
}

/// How a Slot holds a value of a conversion's source dtype: a float in `f`; a signed or narrower
/// unsigned integer or a bool in `i`; a u64 as its bit pattern in `i`.
enum class SlotKind { Float, Int, U64 };
inline SlotKind slot_kind(DataType d) {
  return d.is_float() ? SlotKind::Float : d == dtypes::u64 ? SlotKind::U64 : SlotKind::Int;
}

/// What a conversion produces: bool, a signed or an unsigned integer, a float computed in f32
/// (f32, f16, bf16, fp8) or f64.
enum class CastClass { Bool, Signed, Unsigned, F32, F64 };

/// A conversion to dtype `to`, prepared once (see the conversion rules at the top): its class,
/// the target's range for float -> integer saturation, and whether the result is brought to `to`
/// by canonical() afterwards (integer wrap, rounding to a narrow float).
struct CastTarget {
  DataType to;
  CastClass cls = CastClass::Signed;
  bool post = false;
  double lo_d = 0, hi_d = 0; ///< the range as doubles (the saturation thresholds)
  std::int64_t lo = 0, hi = 0; ///< the range's ends as Slot::i values
};
inline CastTarget cast_target(DataType from, DataType to) {
  CastTarget g;
  g.to = to;
  const bool from_float = from.is_float();
  if (to.is_bool()) g.cls = CastClass::Bool;
  else if (to.is_float()) {
    g.cls = to == dtypes::f64 ? CastClass::F64 : CastClass::F32;
    g.post = to.is_narrow_float();
  } else {
    g.cls = to.is_signed() ? CastClass::Signed : CastClass::Unsigned;
    g.post = !from_float && to.nbytes() < 8;
    with_dtype(to, [&]<DTypeCode K>() {
      using C = typename Num<K>::C;
      if constexpr (std::is_integral_v<C>) {
        using L = std::numeric_limits<C>;
        g.lo_d = double(L::lowest()), g.hi_d = double(L::max());
        g.lo = std::int64_t(L::lowest()), g.hi = std::int64_t(L::max());
      }
    });
  }
  return g;
}

/// Converts a value held as `F` to class `T` of `g` (before canonical() when g.post).
template <SlotKind F, CastClass T> Slot convert_as(Slot v, const CastTarget &g) {
  constexpr bool from_float = F == SlotKind::Float;
  if constexpr (T == CastClass::Bool) return Slot{from_float ? (v.f != 0) : (v.i != 0)};
  else if constexpr (T == CastClass::F32 || T == CastClass::F64) {
    using C = std::conditional_t<T == CastClass::F32, float, double>;
    Slot s;
    if constexpr (from_float) s.f = C(v.f);
    else if constexpr (F == SlotKind::U64) s.f = C(std::uint64_t(v.i));
    else s.f = C(v.i);
    return s;
  } else if constexpr (from_float) {
    // truncation toward zero, saturating at the range of the target, NaN -> 0
    double x = v.f;
    if (std::isnan(x)) return Slot{0};
    x = std::trunc(x);
    if (x <= g.lo_d) return Slot{g.lo};
    if (x >= g.hi_d) return Slot{g.hi};
    if constexpr (T == CastClass::Signed) return Slot{std::int64_t(x)};
    else return Slot{std::int64_t(std::uint64_t(x))};
  } else {
    return v; // wrapped to the target by canonical()
  }
}

/// Calls `f.template operator()<F, T>()` with the SlotKind of `from` and the class of `g`.
template <class Fn> decltype(auto) with_conversion(DataType from, const CastTarget &g, Fn &&f) {
  auto to = [&]<SlotKind F>() -> decltype(auto) {
    switch (g.cls) {
    case CastClass::Bool: return f.template operator()<F, CastClass::Bool>();
    case CastClass::Unsigned: return f.template operator()<F, CastClass::Unsigned>();
    case CastClass::F32: return f.template operator()<F, CastClass::F32>();
    case CastClass::F64: return f.template operator()<F, CastClass::F64>();
    case CastClass::Signed: break;
    }
    return f.template operator()<F, CastClass::Signed>();
  };
  switch (slot_kind(from)) {
  case SlotKind::Float: return to.template operator()<SlotKind::Float>();
  case SlotKind::U64: return to.template operator()<SlotKind::U64>();
  case SlotKind::Int: break;
  }
  return to.template operator()<SlotKind::Int>();
}

/// Converts a value of dtype `from` to dtype `to` (see the conversion rules at the top).
inline Slot cast_value(Slot v, DataType from, DataType to) {
  if (from == to) return v;
  CastTarget g = cast_target(from, to);
  Slot r = with_conversion(from, g,
                           [&]<SlotKind F, CastClass T>() { return convert_as<F, T>(v, g); });
  return g.post ? canonical(to, r) : r;
}

} // namespace hidet::backend::emu
