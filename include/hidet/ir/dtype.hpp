// Scalar data types: bool, i8..i64, u8..u64, f16, bf16, f32, f64 and the 8-bit floats e4m3 and
// e5m2 (FP8: storage types for Hopper's tensor cores; arithmetic on them happens in f32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "hidet/config.hpp"

namespace hidet {

/// The scalar data types. Listed once; everything else is derived from this table:
/// X(enumerator, short name, long name, CUDA C type, bytes, is_float, is_signed)
#define HIDET_DTYPES(X)                                                                            \
  X(Bool, "bool", "bool", "bool", 1, false, false)                                                 \
  X(I8, "i8", "int8", "int8_t", 1, false, true)                                                    \
  X(I16, "i16", "int16", "int16_t", 2, false, true)                                                \
  X(I32, "i32", "int32", "int32_t", 4, false, true)                                                \
  X(I64, "i64", "int64", "int64_t", 8, false, true)                                                \
  X(U8, "u8", "uint8", "uint8_t", 1, false, false)                                                 \
  X(U16, "u16", "uint16", "uint16_t", 2, false, false)                                             \
  X(U32, "u32", "uint32", "uint32_t", 4, false, false)                                             \
  X(U64, "u64", "uint64", "uint64_t", 8, false, false)                                             \
  X(F16, "f16", "float16", "half", 2, true, true)                                                  \
  X(BF16, "bf16", "bfloat16", "bfloat16", 2, true, true)                                           \
  X(F32, "f32", "float32", "float", 4, true, true)                                                 \
  X(F64, "f64", "float64", "double", 8, true, true)                                                \
  X(F8E4M3, "f8e4m3", "float8_e4m3", "__nv_fp8_e4m3", 1, true, true)                               \
  X(F8E5M2, "f8e5m2", "float8_e5m2", "__nv_fp8_e5m2", 1, true, true)

/// Identifies a scalar type.
enum class DTypeCode : std::uint8_t {
#define HIDET_X(e, s, l, c, n, f, sg) e,
  HIDET_DTYPES(HIDET_X)
#undef HIDET_X
};

/// A scalar data type: a small value type with its properties.
struct DataType {
  DTypeCode code = DTypeCode::I32;

  constexpr DataType() = default;
  constexpr DataType(DTypeCode c) : code(c) {}

  /// Size of one element in bytes.
  constexpr std::size_t nbytes() const {
    switch (code) {
#define HIDET_X(e, s, l, c, n, f, sg)                                                              \
  case DTypeCode::e: return n;
      HIDET_DTYPES(HIDET_X)
#undef HIDET_X
    }
    return 0;
  }
  /// "f32", "i64", ...
  constexpr std::string_view short_name() const {
    switch (code) {
#define HIDET_X(e, s, l, c, n, f, sg)                                                              \
  case DTypeCode::e: return s;
      HIDET_DTYPES(HIDET_X)
#undef HIDET_X
    }
    return "?";
  }
  /// "float32", "int64", ... (Hidet's and numpy's names)
  constexpr std::string_view name() const {
    switch (code) {
#define HIDET_X(e, s, l, c, n, f, sg)                                                              \
  case DTypeCode::e: return l;
      HIDET_DTYPES(HIDET_X)
#undef HIDET_X
    }
    return "?";
  }
  /// The type's name in generated CUDA C++.
  constexpr std::string_view c_name() const {
    switch (code) {
#define HIDET_X(e, s, l, c, n, f, sg)                                                              \
  case DTypeCode::e: return c;
      HIDET_DTYPES(HIDET_X)
#undef HIDET_X
    }
    return "?";
  }
  constexpr bool is_float() const {
    switch (code) {
#define HIDET_X(e, s, l, c, n, f, sg)                                                              \
  case DTypeCode::e: return f;
      HIDET_DTYPES(HIDET_X)
#undef HIDET_X
    }
    return false;
  }
  constexpr bool is_signed() const {
    switch (code) {
#define HIDET_X(e, s, l, c, n, f, sg)                                                              \
  case DTypeCode::e: return sg;
      HIDET_DTYPES(HIDET_X)
#undef HIDET_X
    }
    return false;
  }
  constexpr bool is_bool() const { return code == DTypeCode::Bool; }
  /// Integer types (bool excluded).
  constexpr bool is_integer() const { return !is_float() && !is_bool(); }
  /// f16 or bf16.
  constexpr bool is_half() const { return code == DTypeCode::F16 || code == DTypeCode::BF16; }
  /// The 8-bit floats: e4m3 (4 exponent bits, 3 mantissa bits, no infinities, largest finite
  /// 448; PyTorch's float8_e4m3fn) and e5m2 (IEEE-like, largest finite 57344).
  constexpr bool is_fp8() const { return code == DTypeCode::F8E4M3 || code == DTypeCode::F8E5M2; }
  /// Floats narrower than f32 (f16, bf16, fp8): stored narrow, computed in f32.
  constexpr bool is_narrow_float() const { return is_half() || is_fp8(); }

  constexpr bool operator==(const DataType &) const = default;
};

inline std::ostream &operator<<(std::ostream &os, DataType t) { return os << t.short_name(); }

namespace dtypes {
inline constexpr DataType boolean{DTypeCode::Bool};
inline constexpr DataType i8{DTypeCode::I8}, i16{DTypeCode::I16}, i32{DTypeCode::I32},
    i64{DTypeCode::I64};
inline constexpr DataType u8{DTypeCode::U8}, u16{DTypeCode::U16}, u32{DTypeCode::U32},
    u64{DTypeCode::U64};
inline constexpr DataType f16{DTypeCode::F16}, bf16{DTypeCode::BF16}, f32{DTypeCode::F32},
    f64{DTypeCode::F64};
inline constexpr DataType f8e4m3{DTypeCode::F8E4M3}, f8e5m2{DTypeCode::F8E5M2};
} // namespace dtypes

/// Parses "f32", "float32", "half", ...; returns false when unknown.
bool parse_dtype(std::string_view s, DataType &out);

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/dtype.ipp"
#endif
