// f16 / bf16 conversions and packed pairs in Hidet Script. A packed pair ("half2") is a u32
// holding two f16 or bf16 values, the low half first; arithmetic on it is one instruction for
// both lanes (add/sub/mul/fma with round-to-nearest-even).
//
//   Var p = half2_pack(x, y);                 // f16x2 from two floats
//   Var q = half2_fma(p, p, p);               // (x*x + x, y*y + y) in f16
//   Var lo = half2_unpack(q, 0);              // back to f32
#pragma once

#include "hidet/lang/primitives/memory.hpp"

namespace hidet::lang {

namespace detail {
/// Throws a DSLError unless `d` (the packed dtype) is f16 or bf16.
void require_half(DataType d, const char *fn, SourceLoc loc);
/// A packed pair operand as u32 (a u32 expression or an integer literal).
ir::Expr packed(const Operand &x, const char *fn);
/// A lane-wise operation on packed pairs of dtype `d`.
Expr half2_op(ir::Intrinsic op, std::vector<const Operand *> xs, DataType d);
} // namespace detail

/// x converted to f16 / bf16 / f32 (round to nearest even).
Expr to_f16(const Operand &x);
Expr to_bf16(const Operand &x);
Expr to_f32(const Operand &x);

/// Packs two values, rounded to `d` (f16 or bf16), into a u32: `lo` in bits 0-15, `hi` in 16-31.
Expr half2_pack(const Operand &lo, const Operand &hi, DataType d = dtypes::f16);
/// Half `index` (0: low, 1: high) of a packed pair of dtype `d`, as f32.
Expr half2_unpack(const Operand &p, int index, DataType d = dtypes::f16);
/// Lane-wise a + b, a - b, a * b and a * b + c on packed pairs of dtype `d`.
inline Expr half2_add(const Operand &a, const Operand &b, DataType d = dtypes::f16) { return detail::half2_op(ir::Intrinsic::Half2Add, {&a, &b}, d); }
inline Expr half2_sub(const Operand &a, const Operand &b, DataType d = dtypes::f16) { return detail::half2_op(ir::Intrinsic::Half2Sub, {&a, &b}, d); }
inline Expr half2_mul(const Operand &a, const Operand &b, DataType d = dtypes::f16) { return detail::half2_op(ir::Intrinsic::Half2Mul, {&a, &b}, d); }
inline Expr half2_fma(const Operand &a, const Operand &b, const Operand &c, DataType d = dtypes::f16) {
  return detail::half2_op(ir::Intrinsic::Half2Fma, {&a, &b, &c}, d);
}

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/primitives/impl/half.ipp"
#endif
