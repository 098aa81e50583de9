// Element-wise operators on hidet::Tensor: unary math and activations, binary arithmetic and
// comparisons with numpy broadcasting, where, cast; and the C++ operators + - * / == < ... on
// tensors (free functions in namespace hidet, found by argument-dependent lookup).
//
// Type promotion (PyTorch's rule):
//  * categories bool < integer < floating; the higher category wins;
//  * within floating: f64 > f32 > {f16, bf16}; f16 with bf16 gives f32;
//  * within integers: the wider type wins; signed with unsigned of the same or larger width gives
//    the next wider signed type (u8 + i8 -> i16, u32 + i32 -> i64; u64 with signed -> i64);
//  * a C++ scalar operand never raises the dtype within its category (f16 tensor + 2.5 -> f16,
//    i32 tensor + 2 -> i32), but a floating scalar with an integer or bool tensor gives f32 and an
//    integer scalar with a bool tensor gives i64;
//  * f16/bf16 values are computed in f32 and rounded once to the result dtype.
// Comparisons promote the same way and return bool; logical ops take any dtype (non-zero is
// true) and return bool; true division of integers returns f32, and so do atan2 and the float
// math functions (exp, tan, erfinv, ...) on integers. Bitwise ops and shifts take integers (and
// bool, except shifts) only.
//
// Integer division by zero (fmod, remainder, floor_divide, mod): the emulator stops the kernel
// with "integer division by zero" (a hidet::EmulatorError); on a GPU the result is
// undefined, as in CUDA C++. PyTorch raises ZeroDivisionError on the CPU.
#pragma once

#include "hidet/ops/compute.hpp"
#include "hidet/runtime/tensor.hpp"

namespace hidet::ops {

/// The result dtype of a binary operation on tensors of dtypes a and b (see the top of the file).
DataType promote_types(DataType a, DataType b);

/// The result dtype of a tensor of dtype `t` with a C++ scalar (floating if `scalar_is_float`).
DataType promote_with_scalar(DataType t, bool scalar_is_float);

/// The dtype arithmetic on dtype `d` is carried out in (f32 for f16/bf16/fp8).
inline DataType compute_dtype(DataType d) { return d.is_narrow_float() ? dtypes::f32 : d; }

/// The numpy broadcast of two shapes; `op` names the operator in the error.
Shape broadcast_shapes(const std::string &op, const Shape &a, const Shape &b, DataType da, DataType db);
/// broadcast_shapes of extents that may be symbols: a symbol broadcasts only with 1 or itself.
SymShape broadcast_shapes(const std::string &op, const SymShape &a, const SymShape &b, DataType da, DataType db);

/// Index into a tensor of shape `s` broadcast to an output index `out`.
Idx broadcast_index(const Shape &s, const Idx &out);
/// broadcast_index for extents that may be symbols (a symbol is never 1).
Idx broadcast_index(const SymShape &s, const Idx &out);

namespace detail {
/// `v` printed with 17 significant digits (exact for every double), as attributes print numbers.
std::string fmt_double(double v);

/// An error naming `op` when x has dtype bool (unless `allow_bool`).
void require_float_or_int(const std::string &op, const Tensor &x, bool allow_bool);
/// An error naming `op` when x is not a floating-point tensor.
void require_float(const std::string &op, const Tensor &x);
/// An error naming `op` when x is not an integer tensor (or bool, when `allow_bool`).
void require_integer(const std::string &op, const Tensor &x, bool allow_bool);
} // namespace detail

/// Converts x to dtype `to` (C++ conversion; to bool: non-zero is true).
Tensor cast(const Tensor &x, DataType to);

// ---- unary ---------------------------------------------------------------------------------

#define HIDET_FLOAT_UNARY(fname)                                                                   \
  /** fname(x), element-wise; integer inputs give f32. */                                          \
  Tensor fname(const Tensor &x);
HIDET_FLOAT_UNARY(exp)
HIDET_FLOAT_UNARY(log)
HIDET_FLOAT_UNARY(sqrt)
HIDET_FLOAT_UNARY(rsqrt)
HIDET_FLOAT_UNARY(reciprocal)
HIDET_FLOAT_UNARY(sin)
HIDET_FLOAT_UNARY(cos)
HIDET_FLOAT_UNARY(tanh)
HIDET_FLOAT_UNARY(erf)
HIDET_FLOAT_UNARY(sigmoid)
HIDET_FLOAT_UNARY(silu)
HIDET_FLOAT_UNARY(tan)
HIDET_FLOAT_UNARY(asin)
HIDET_FLOAT_UNARY(acos)
HIDET_FLOAT_UNARY(atan)
HIDET_FLOAT_UNARY(sinh)
HIDET_FLOAT_UNARY(cosh)
HIDET_FLOAT_UNARY(asinh)
HIDET_FLOAT_UNARY(acosh)
HIDET_FLOAT_UNARY(atanh)
HIDET_FLOAT_UNARY(log1p)
HIDET_FLOAT_UNARY(expm1)
HIDET_FLOAT_UNARY(log2)
HIDET_FLOAT_UNARY(log10)
HIDET_FLOAT_UNARY(exp2)
HIDET_FLOAT_UNARY(erfinv)
HIDET_FLOAT_UNARY(erfc)
#undef HIDET_FLOAT_UNARY

#define HIDET_SAME_UNARY(fname)                                                                    \
  /** fname(x), element-wise, keeping the dtype. */                                                \
  Tensor fname(const Tensor &x);
HIDET_SAME_UNARY(neg)
HIDET_SAME_UNARY(abs)
HIDET_SAME_UNARY(relu)
#undef HIDET_SAME_UNARY

#define HIDET_ROUNDING_UNARY(fname)                                                                \
  /** fname(x) for floats; integers are returned unchanged. */                                     \
  Tensor fname(const Tensor &x);
HIDET_ROUNDING_UNARY(floor)
HIDET_ROUNDING_UNARY(ceil)
HIDET_ROUNDING_UNARY(trunc)
#undef HIDET_ROUNDING_UNARY

/// -1, 0 or 1 by the sign of x, keeping the dtype (PyTorch: sign(NaN) = 0, sign(-0.0) = 0; bool
/// is returned unchanged).
Tensor sign(const Tensor &x);
/// ~x for integers, !x for bool; a ValueError for floats.
Tensor bitwise_not(const Tensor &x);

/// Rounds floats to the nearest integer, ties to even (PyTorch's round; CUDA's roundf rounds ties
/// away from zero, so it is spelled out); integers are returned unchanged.
Tensor round(const Tensor &x);

/// max(x, 0) + negative_slope * min(x, 0)
Tensor leaky_relu(const Tensor &x, double negative_slope = 0.01);
/// GELU: x * Phi(x) (erf form), or the tanh approximation when `approximate_tanh`.
Tensor gelu(const Tensor &x, bool approximate_tanh = false);
/// min(max(x, lo), hi)
Tensor clamp(const Tensor &x, double lo, double hi);
/// !x (bool result; non-zero is true).
Tensor logical_not(const Tensor &x);
/// x != x (bool result); false for integers.
Tensor isnan(const Tensor &x);

// ---- binary --------------------------------------------------------------------------------

#define HIDET_INT_BINARY(fname)                                                                    \
  /** fname(a, b) element-wise with broadcasting and type promotion. */                            \
  Tensor fname(const Tensor &a, const Tensor &b);                                                  \
  Tensor fname(const Tensor &a, int s);                                                            \
  Tensor fname(int s, const Tensor &a);
#define HIDET_ARITH_BINARY(fname)                                                                  \
  HIDET_INT_BINARY(fname)                                                                          \
  Tensor fname(const Tensor &a, double s);                                                         \
  Tensor fname(double s, const Tensor &a);
HIDET_ARITH_BINARY(add)
HIDET_ARITH_BINARY(sub)
HIDET_ARITH_BINARY(mul)
HIDET_ARITH_BINARY(div)
HIDET_ARITH_BINARY(maximum)
HIDET_ARITH_BINARY(minimum)
HIDET_ARITH_BINARY(pow)
// atan2(a, b): the angle of the point (b, a), as C's atan2; integers give f32.
HIDET_ARITH_BINARY(atan2)
// C's fmod: a - trunc(a / b) * b, the sign of the dividend (integers: a % b of C++).
HIDET_ARITH_BINARY(fmod)
// PyTorch's and Python's remainder: a - floor(a / b) * b, the sign of the divisor.
HIDET_ARITH_BINARY(remainder)
// PyTorch's floor_divide: floor(a / b), exactly as Python's // (for floats the quotient behind
// fmod, so 1 // 0.1 is 9; integers stay integers).
HIDET_ARITH_BINARY(floor_divide)
#undef HIDET_ARITH_BINARY

/// remainder under Python's name for %.
template <class A, class B> Tensor mod(const A &a, const B &b) { return remainder(a, b); }

// Bitwise operators: integers (and/or/xor also bool); a ValueError for floats.
HIDET_INT_BINARY(bitwise_and)
HIDET_INT_BINARY(bitwise_or)
HIDET_INT_BINARY(bitwise_xor)
// a << b; 0 when b is negative or not below the bit width of the result dtype (PyTorch).
HIDET_INT_BINARY(bitwise_left_shift)
// a >> b, arithmetic for signed dtypes; when b is negative or not below the bit width, -1 for a
// negative a and 0 otherwise (PyTorch).
HIDET_INT_BINARY(bitwise_right_shift)
#undef HIDET_INT_BINARY

#define HIDET_COMPARE_BINARY(fname)                                                                \
  /** a sym b element-wise with broadcasting; bool result. */                                      \
  Tensor fname(const Tensor &a, const Tensor &b);                                                  \
  Tensor fname(const Tensor &a, double s);
HIDET_COMPARE_BINARY(eq)
HIDET_COMPARE_BINARY(ne)
HIDET_COMPARE_BINARY(lt)
HIDET_COMPARE_BINARY(le)
HIDET_COMPARE_BINARY(gt)
HIDET_COMPARE_BINARY(ge)
#undef HIDET_COMPARE_BINARY

/// a && b element-wise (non-zero is true); bool result.
Tensor logical_and(const Tensor &a, const Tensor &b);
/// a || b element-wise (non-zero is true); bool result.
Tensor logical_or(const Tensor &a, const Tensor &b);
/// a != b as truth values element-wise (non-zero is true); bool result.
Tensor logical_xor(const Tensor &a, const Tensor &b);

/// cond ? a : b element-wise, broadcasting all three; the result dtype promotes a and b.
Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b);

} // namespace hidet::ops

namespace hidet {
// C++ operators on tensors (element-wise, broadcasting, PyTorch promotion).
inline Tensor operator+(const Tensor &a, const Tensor &b) { return ops::add(a, b); }
inline Tensor operator-(const Tensor &a, const Tensor &b) { return ops::sub(a, b); }
inline Tensor operator*(const Tensor &a, const Tensor &b) { return ops::mul(a, b); }
inline Tensor operator/(const Tensor &a, const Tensor &b) { return ops::div(a, b); }
inline Tensor operator+(const Tensor &a, double s) { return ops::add(a, s); }
inline Tensor operator-(const Tensor &a, double s) { return ops::sub(a, s); }
inline Tensor operator*(const Tensor &a, double s) { return ops::mul(a, s); }
inline Tensor operator/(const Tensor &a, double s) { return ops::div(a, s); }
inline Tensor operator+(double s, const Tensor &a) { return ops::add(s, a); }
inline Tensor operator-(double s, const Tensor &a) { return ops::sub(s, a); }
inline Tensor operator*(double s, const Tensor &a) { return ops::mul(s, a); }
inline Tensor operator/(double s, const Tensor &a) { return ops::div(s, a); }
inline Tensor operator+(const Tensor &a, int s) { return ops::add(a, s); }
inline Tensor operator-(const Tensor &a, int s) { return ops::sub(a, s); }
inline Tensor operator*(const Tensor &a, int s) { return ops::mul(a, s); }
inline Tensor operator/(const Tensor &a, int s) { return ops::div(a, s); }
inline Tensor operator+(int s, const Tensor &a) { return ops::add(s, a); }
inline Tensor operator-(int s, const Tensor &a) { return ops::sub(s, a); }
inline Tensor operator*(int s, const Tensor &a) { return ops::mul(s, a); }
inline Tensor operator/(int s, const Tensor &a) { return ops::div(s, a); }
inline Tensor operator-(const Tensor &a) { return ops::neg(a); }
inline Tensor operator==(const Tensor &a, const Tensor &b) { return ops::eq(a, b); }
inline Tensor operator!=(const Tensor &a, const Tensor &b) { return ops::ne(a, b); }
inline Tensor operator<(const Tensor &a, const Tensor &b) { return ops::lt(a, b); }
inline Tensor operator<=(const Tensor &a, const Tensor &b) { return ops::le(a, b); }
inline Tensor operator>(const Tensor &a, const Tensor &b) { return ops::gt(a, b); }
inline Tensor operator>=(const Tensor &a, const Tensor &b) { return ops::ge(a, b); }
inline Tensor operator<(const Tensor &a, double s) { return ops::lt(a, s); }
inline Tensor operator>(const Tensor &a, double s) { return ops::gt(a, s); }
} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/elementwise.ipp"
#endif
