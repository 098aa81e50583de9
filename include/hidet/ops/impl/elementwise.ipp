// Definitions for hidet/ops/elementwise.hpp.
#pragma once

#include "hidet/ops/elementwise.hpp"

#include <cmath>
#include <sstream>

#include "hidet/ops/cache.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

HIDET_INLINE int category(DataType d) { return d.is_bool() ? 0 : d.is_float() ? 2 : 1; }

HIDET_INLINE DataType signed_of_width(std::size_t bytes) {
  switch (bytes) {
  case 1: return dtypes::i8;
  case 2: return dtypes::i16;
  case 4: return dtypes::i32;
  default: return dtypes::i64;
  }
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE DataType promote_types(DataType a, DataType b) {
  if (a == b) return a;
  int ca = detail::category(a), cb = detail::category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if (a.is_narrow_float() && b.is_narrow_float()) // two narrow floats of one width meet in f32
      return a.nbytes() == b.nbytes() ? dtypes::f32 : (a.nbytes() > b.nbytes() ? a : b);
    return a.nbytes() >= b.nbytes() ? a : b;
  }
  if (a.is_signed() == b.is_signed()) return a.nbytes() >= b.nbytes() ? a : b;
  DataType s = a.is_signed() ? a : b, u = a.is_signed() ? b : a;
  if (s.nbytes() > u.nbytes()) return s;
  return detail::signed_of_width(std::min<std::size_t>(8, u.nbytes() * 2));
}

HIDET_INLINE DataType promote_with_scalar(DataType t, bool scalar_is_float) {
  if (scalar_is_float) return t.is_float() ? t : dtypes::f32;
  return t.is_bool() ? dtypes::i64 : t;
}

HIDET_INLINE SymShape broadcast_shapes(const std::string &op, const SymShape &a, const SymShape &b, DataType da,
                                       DataType db) {
  std::size_t n = std::max(a.size(), b.size());
  SymShape r(n);
  for (std::size_t i = 0; i < n; ++i) {
    Dim x = i < n - a.size() ? Dim(1) : a[i - (n - a.size())];
    Dim y = i < n - b.size() ? Dim(1) : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ValueError(str_cat(op, ": cannot broadcast shapes ", shape_str(a), " and ", shape_str(b), " (dtypes ",
                               da, " and ", db, "): aligned from the last dimension, sizes must be equal or 1",
                               x.is_constant() && y.is_constant() ? "" : " (a symbolic size only matches itself or 1)"));
    r[i] = x == 1 ? y : x;
  }
  return r;
}

HIDET_INLINE Shape broadcast_shapes(const std::string &op, const Shape &a, const Shape &b, DataType da, DataType db) {
  return constant_shape(broadcast_shapes(op, to_sym_shape(a), to_sym_shape(b), da, db));
}

HIDET_INLINE Idx broadcast_index(const SymShape &s, const Idx &out) {
  Idx r;
  std::size_t off = out.size() - s.size();
  for (std::size_t i = 0; i < s.size(); ++i) r.push_back(s[i] == 1 ? Expr(0) : out[off + i]);
  return r;
}

HIDET_INLINE Idx broadcast_index(const Shape &s, const Idx &out) {
  Idx r;
  std::size_t off = out.size() - s.size();
  for (std::size_t i = 0; i < s.size(); ++i) r.push_back(s[i] == 1 ? Expr(0) : out[off + i]);
  return r;
}

} // namespace hidet::ops

namespace hidet::ops::detail {

HIDET_INLINE std::string fmt_double(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

/// Reads x at idx in compute_dtype(x).
HIDET_INLINE Expr load(const TensorDef &x, const Idx &idx) { return lang::cast(x.at(idx), compute_dtype(x.dtype())); }

/// A unary element-wise operator: y = f(x in dtype cd) converted to `out`.
template <class F>
Tensor unary(const std::string &name, const Tensor &x, DataType cd, DataType out, F f, const std::string &attrs = "") {
  auto key = str_cat(name, "{", attrs, "}");
  return run_task(
      key,
      [&] {
        auto a = input("x", x.sym_shape(), x.dtype());
        auto y = compute(name, x.sym_shape(), [&](const Idx &i) { return f(lang::cast(a.at(i), cd)); }, out);
        return Task{name, {a}, {y}, attrs, {[](const Idx &i) { return i; }}};
      },
      {x})[0];
}

/// A binary element-wise operator with broadcasting: y = f(a, b) with both in dtype cd.
template <class F>
Tensor binary(const std::string &name, const Tensor &x, const Tensor &y, DataType cd, DataType out, F f) {
  SymShape s = broadcast_shapes(name, x.sym_shape(), y.sym_shape(), x.dtype(), y.dtype());
  return run_task(
      str_cat(name, "{}"),
      [&] {
        auto a = input("a", x.sym_shape(), x.dtype());
        auto b = input("b", y.sym_shape(), y.dtype());
        auto c = compute(name, s, [&](const Idx &i) {
          return f(lang::cast(a.at(broadcast_index(a.sym_shape(), i)), cd),
                   lang::cast(b.at(broadcast_index(b.sym_shape(), i)), cd));
        }, out);
        return Task{name, {a, b}, {c}, "", {}};
      },
      {x, y})[0];
}

/// A binary operator with a C++ scalar on the right (or left when `scalar_left`).
template <class F>
Tensor binary_scalar(const std::string &name, const Tensor &x, double v, bool scalar_left, DataType cd,
                     DataType out, F f) {
  std::string attrs = str_cat("scalar=", fmt_double(v), ", left=", scalar_left);
  return run_task(
      str_cat(name, "{", attrs, "}"),
      [&] {
        auto a = input("a", x.sym_shape(), x.dtype());
        auto c = compute(name, x.sym_shape(), [&](const Idx &i) {
          Expr xv = lang::cast(a.at(i), cd);
          Expr sv = cd.is_float() ? Expr(ir::ConstantNode::make_float(cd, v)) : Expr(ir::ConstantNode::make_int(cd, std::int64_t(v)));
          return scalar_left ? f(sv, xv) : f(xv, sv);
        }, out);
        return Task{name, {a}, {c}, attrs, {[](const Idx &i) { return i; }}};
      },
      {x})[0];
}

HIDET_INLINE void require_float_or_int(const std::string &op, const Tensor &x, bool allow_bool) {
  if (!allow_bool && x.dtype().is_bool())
    throw ValueError(str_cat(op, ": dtype bool is not supported (tensor of shape ", shape_str(x.sym_shape()),
                             "); cast it first, e.g. ops::cast(x, hidet::i32)"));
}

HIDET_INLINE void require_float(const std::string &op, const Tensor &x) {
  if (!x.dtype().is_float())
    throw ValueError(str_cat(op, ": expected a floating-point tensor, got dtype ", x.dtype(), " of shape ",
                             shape_str(x.sym_shape()), "; cast it first, e.g. ops::cast(x, hidet::f32)"));
}

HIDET_INLINE void require_integer(const std::string &op, const Tensor &x, bool allow_bool) {
  if (x.dtype().is_integer() || (allow_bool && x.dtype().is_bool())) return;
  throw ValueError(str_cat(op, ": expected an integer", allow_bool ? " or bool" : "",
                           " tensor, got dtype ", x.dtype(), " of shape ", shape_str(x.sym_shape()),
                           "; cast it first, e.g. ops::cast(x, hidet::i32)"));
}

/// Float math on integer inputs gives f32 (PyTorch).
HIDET_INLINE DataType float_result(DataType d) { return d.is_float() ? d : dtypes::f32; }

/// Whether r, a remainder with the sign of x (C's fmod, C++'s %), is non-zero and of the other sign
/// than y: then Python's remainder is r + y and its floor division one less than the truncated
/// one. r is read once (the IR has no let: each reference computes it again).
HIDET_INLINE Expr rounds_toward_divisor(const Expr &r, const Expr &y) {
  if (!r.dtype().is_float() && !r.dtype().is_signed()) return Expr(false);
  return lang::select(y < 0, r, -r) > 0;
}

/// Python's x % y (the sign of y) in x's dtype: from C's fmod for floats (exact, like PyTorch).
HIDET_INLINE Expr remainder_of(const Expr &x, const Expr &y) {
  Expr r = x.dtype().is_float() ? lang::fmod(x, y) : x % y;
  return lang::select(rounds_toward_divisor(r, y), r + y, r);
}

/// Python's x // y in x's dtype. For floats PyTorch's (and CPython's) algorithm: the quotient of
/// x - fmod(x, y) (a multiple of y), one less when the remainder has the other sign than y, then
/// snapped to the nearest integer (ties down); x / y when y is 0 (+-inf or NaN); 0 with the sign
/// of x / y when that lies in (0, 1) or x is 0. fmod is written out twice and the snapped quotient
/// three times: six fmods (NVRTC compiles the f32 kernel in about 0.5 s, an add in 0.1 s).
HIDET_INLINE Expr floor_divide_of(const Expr &x, const Expr &y) {
  if (!x.dtype().is_float()) return x / y - lang::cast(rounds_toward_divisor(x % y, y), x.dtype());
  Expr r = lang::fmod(x, y), q = x / y;
  Expr d = (x - r) / y - lang::cast(rounds_toward_divisor(r, y), x.dtype());
  Expr f = lang::floor(d);
  Expr nearest = f + lang::cast(d - f > 0.5f, x.dtype());
  return lang::select(y == 0, q, lang::select((q > 0 && q < 1) || x == 0, q * 0.0f, nearest));
}

/// C's fmod for floats, C++'s % for integers (both take the sign of x).
HIDET_INLINE Expr fmod_of(const Expr &x, const Expr &y) {
  return x.dtype().is_float() ? lang::fmod(x, y) : x % y;
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor cast(const Tensor &x, DataType to) {
  if (x.dtype() == to) return x;
  return detail::unary("cast", x, x.dtype(), to, [to](Expr v) { return to.is_bool() ? Expr(v != 0) : v; },
                       str_cat("dtype=", to.name()));
}

#define HIDET_FLOAT_UNARY(fname, body)                                                             \
  HIDET_INLINE Tensor fname(const Tensor &x) {                                                     \
    detail::require_float_or_int(#fname, x, false);                                                \
    DataType out = detail::float_result(x.dtype());                                                \
    return detail::unary(#fname, x, compute_dtype(out), out, [](Expr v) { return body; });         \
  }
HIDET_FLOAT_UNARY(exp, lang::exp(v))
HIDET_FLOAT_UNARY(log, lang::log(v))
HIDET_FLOAT_UNARY(sqrt, lang::sqrt(v))
HIDET_FLOAT_UNARY(rsqrt, lang::rsqrt(v))
HIDET_FLOAT_UNARY(reciprocal, 1 / v)
HIDET_FLOAT_UNARY(sin, lang::sin(v))
HIDET_FLOAT_UNARY(cos, lang::cos(v))
HIDET_FLOAT_UNARY(tanh, lang::tanh(v))
HIDET_FLOAT_UNARY(erf, lang::erf(v))
HIDET_FLOAT_UNARY(sigmoid, 1 / (1 + lang::exp(-v)))
HIDET_FLOAT_UNARY(silu, v / (1 + lang::exp(-v)))
HIDET_FLOAT_UNARY(tan, lang::tan(v))
HIDET_FLOAT_UNARY(asin, lang::asin(v))
HIDET_FLOAT_UNARY(acos, lang::acos(v))
HIDET_FLOAT_UNARY(atan, lang::atan(v))
HIDET_FLOAT_UNARY(sinh, lang::sinh(v))
HIDET_FLOAT_UNARY(cosh, lang::cosh(v))
HIDET_FLOAT_UNARY(asinh, lang::asinh(v))
HIDET_FLOAT_UNARY(acosh, lang::acosh(v))
HIDET_FLOAT_UNARY(atanh, lang::atanh(v))
HIDET_FLOAT_UNARY(log1p, lang::log1p(v))
HIDET_FLOAT_UNARY(expm1, lang::expm1(v))
HIDET_FLOAT_UNARY(log2, lang::log2(v))
HIDET_FLOAT_UNARY(log10, lang::log10(v))
HIDET_FLOAT_UNARY(exp2, lang::exp2(v))
HIDET_FLOAT_UNARY(erfinv, lang::erfinv(v))
HIDET_FLOAT_UNARY(erfc, lang::erfc(v))
#undef HIDET_FLOAT_UNARY

#define HIDET_SAME_UNARY(fname, body)                                                              \
  HIDET_INLINE Tensor fname(const Tensor &x) {                                                     \
    detail::require_float_or_int(#fname, x, false);                                                \
    return detail::unary(#fname, x, compute_dtype(x.dtype()), x.dtype(), [](Expr v) { return body; }); \
  }
HIDET_SAME_UNARY(neg, -v)
HIDET_SAME_UNARY(abs, lang::abs(v))
HIDET_SAME_UNARY(relu, lang::max(v, 0))
#undef HIDET_SAME_UNARY

#define HIDET_ROUNDING_UNARY(fname)                                                                \
  HIDET_INLINE Tensor fname(const Tensor &x) {                                                     \
    detail::require_float_or_int(#fname, x, false);                                                \
    if (!x.dtype().is_float()) return x;                                                           \
    return detail::unary(#fname, x, compute_dtype(x.dtype()), x.dtype(), [](Expr v) { return lang::fname(v); }); \
  }
HIDET_ROUNDING_UNARY(floor)
HIDET_ROUNDING_UNARY(ceil)
HIDET_ROUNDING_UNARY(trunc)
#undef HIDET_ROUNDING_UNARY

HIDET_INLINE Tensor sign(const Tensor &x) {
  if (x.dtype().is_bool()) return x;
  DataType cd = compute_dtype(x.dtype());
  return detail::unary("sign", x, cd, x.dtype(),
                       [cd](Expr v) { return lang::cast(v > 0, cd) - lang::cast(v < 0, cd); });
}

HIDET_INLINE Tensor bitwise_not(const Tensor &x) {
  detail::require_integer("bitwise_not", x, true);
  if (x.dtype().is_bool())
    return detail::unary("bitwise_not", x, x.dtype(), x.dtype(), [](Expr v) { return !v; });
  return detail::unary("bitwise_not", x, x.dtype(), x.dtype(), [](Expr v) { return ~v; });
}

HIDET_INLINE Tensor round(const Tensor &x) {
  detail::require_float_or_int("round", x, false);
  if (!x.dtype().is_float()) return x;
  return detail::unary("round", x, compute_dtype(x.dtype()), x.dtype(), [](Expr v) {
    Expr r = lang::floor(v + 0.5f);
    Expr odd = r - 2.0f * lang::floor(r * 0.5f) != 0.0f;
    Expr even_tie = lang::select((r - v == 0.5f) && odd, r - 1.0f, r);
    // |v| >= 2^23 is already an integer (and v + 0.5 would round).
    return lang::select(lang::abs(v) >= 8388608.0f, v, even_tie);
  });
}

HIDET_INLINE Tensor leaky_relu(const Tensor &x, double negative_slope) {
  detail::require_float(std::string("leaky_relu"), x);
  return detail::unary("leaky_relu", x, compute_dtype(x.dtype()), x.dtype(),
                       [negative_slope](Expr v) { return lang::select(v > 0, v, v * negative_slope); },
                       "negative_slope=" + detail::fmt_double(negative_slope));
}

HIDET_INLINE Tensor gelu(const Tensor &x, bool approximate_tanh) {
  detail::require_float("gelu", x);
  return detail::unary("gelu", x, compute_dtype(x.dtype()), x.dtype(), [approximate_tanh](Expr v) {
    if (approximate_tanh) return Expr(0.5f * v * (1.0f + lang::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v))));
    // 0.5 x (1 + erf(x / sqrt(2))) as 0.5 x erfc(-x / sqrt(2)): one branch-free helper on the GPU
    // (see erfc in backend/impl/codegen_intrinsics.ipp), and no cancellation in 1 + erf for x < 0.
    return Expr(0.5f * v * lang::erfc(v * -0.7071067811865476f));
  }, str_cat("approximate_tanh=", approximate_tanh));
}

HIDET_INLINE Tensor clamp(const Tensor &x, double lo, double hi) {
  detail::require_float_or_int("clamp", x, false);
  if (lo > hi) throw ValueError(str_cat("clamp: min ", lo, " is greater than max ", hi));
  DataType cd = compute_dtype(x.dtype());
  return detail::unary("clamp", x, cd, x.dtype(), [cd, lo, hi](Expr v) {
    Expr l = cd.is_float() ? Expr(ir::ConstantNode::make_float(cd, lo)) : Expr(ir::ConstantNode::make_int(cd, std::int64_t(lo)));
    Expr h = cd.is_float() ? Expr(ir::ConstantNode::make_float(cd, hi)) : Expr(ir::ConstantNode::make_int(cd, std::int64_t(hi)));
    return lang::min(lang::max(v, l), h);
  }, str_cat("min=", detail::fmt_double(lo), ", max=", detail::fmt_double(hi)));
}

HIDET_INLINE Tensor logical_not(const Tensor &x) {
  return detail::unary("logical_not", x, x.dtype(), dtypes::boolean, [](Expr v) { return !v; });
}

HIDET_INLINE Tensor isnan(const Tensor &x) {
  return detail::unary("isnan", x, compute_dtype(x.dtype()), dtypes::boolean,
                       [is_float = x.dtype().is_float()](Expr v) { return is_float ? lang::isnan(v) : Expr(false); });
}

#define HIDET_ARITH_BINARY(fname, body, int_div)                                                   \
  HIDET_INLINE Tensor fname(const Tensor &a, const Tensor &b) {                                    \
    DataType t = promote_types(a.dtype(), b.dtype());                                              \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    if (t.is_bool()) t = dtypes::i32;                                                              \
    return detail::binary(#fname, a, b, compute_dtype(t), t, [](Expr x, Expr y) { return body; }); \
  }                                                                                                \
  HIDET_INLINE Tensor fname(const Tensor &a, double s) {                                           \
    DataType t = promote_with_scalar(a.dtype(), true);                                             \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, false, compute_dtype(t), t,                   \
                                 [](Expr x, Expr y) { return body; });                             \
  }                                                                                                \
  HIDET_INLINE Tensor fname(double s, const Tensor &a) {                                           \
    DataType t = promote_with_scalar(a.dtype(), true);                                             \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, true, compute_dtype(t), t,                    \
                                 [](Expr x, Expr y) { return body; });                             \
  }                                                                                                \
  HIDET_INLINE Tensor fname(const Tensor &a, int s) {                                              \
    DataType t = promote_with_scalar(a.dtype(), false);                                            \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, false, compute_dtype(t), t,                  \
                                 [](Expr x, Expr y) { return body; });                             \
  }                                                                                                \
  HIDET_INLINE Tensor fname(int s, const Tensor &a) {                                              \
    DataType t = promote_with_scalar(a.dtype(), false);                                            \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, true, compute_dtype(t), t,                   \
                                 [](Expr x, Expr y) { return body; });                             \
  }
HIDET_ARITH_BINARY(add, x + y, false)
HIDET_ARITH_BINARY(sub, x - y, false)
HIDET_ARITH_BINARY(mul, x * y, false)
HIDET_ARITH_BINARY(div, x / y, true)
HIDET_ARITH_BINARY(maximum, lang::max(x, y), false)
HIDET_ARITH_BINARY(minimum, lang::min(x, y), false)
HIDET_ARITH_BINARY(pow, lang::pow(x, y), false)
HIDET_ARITH_BINARY(atan2, lang::atan2(x, y), true)
HIDET_ARITH_BINARY(fmod, detail::fmod_of(x, y), false)
HIDET_ARITH_BINARY(remainder, detail::remainder_of(x, y), false)
HIDET_ARITH_BINARY(floor_divide, detail::floor_divide_of(x, y), false)
#undef HIDET_ARITH_BINARY

} // namespace hidet::ops

namespace hidet::ops::detail {

/// A bitwise operator: both operands integers (or bool, when `allow_bool`), promoted like add.
template <class F>
Tensor bitwise(const std::string &name, const Tensor &a, const Tensor &b, bool allow_bool, F f) {
  require_integer(name, a, allow_bool), require_integer(name, b, allow_bool);
  DataType t = promote_types(a.dtype(), b.dtype());
  return binary(name, a, b, t, t, f);
}

/// A bitwise operator with a C++ integer on the right (or left when `scalar_left`).
template <class F>
Tensor bitwise_scalar(const std::string &name, const Tensor &a, int s, bool scalar_left,
                      bool allow_bool, F f) {
  require_integer(name, a, allow_bool);
  DataType t = promote_with_scalar(a.dtype(), false);
  return binary_scalar(name, a, s, scalar_left, t, t, f);
}

/// x << y (left) or x >> y in x's dtype t, defined for every y: a shift by a negative amount or by
/// the bit width of t or more gives 0 (left), and -1 for a negative x or 0 (right), as PyTorch.
HIDET_INLINE Expr shift_of(const Expr &x, const Expr &y, bool left) {
  DataType t = x.dtype();
  Expr out_of_range = (y < 0) || (y >= int(8 * t.nbytes()));
  Expr zero(ir::ConstantNode::make_int(t, 0));
  Expr fill = left ? zero : lang::select(x < 0, Expr(ir::ConstantNode::make_int(t, -1)), zero);
  return lang::select(out_of_range, fill, left ? Expr(x << y) : Expr(x >> y));
}

} // namespace hidet::ops::detail

namespace hidet::ops {

#define HIDET_BITWISE_BINARY(fname, allow_bool, body)                                              \
  HIDET_INLINE Tensor fname(const Tensor &a, const Tensor &b) {                                    \
    return detail::bitwise(#fname, a, b, allow_bool, [](Expr x, Expr y) { return body; });         \
  }                                                                                                \
  HIDET_INLINE Tensor fname(const Tensor &a, int s) {                                              \
    return detail::bitwise_scalar(#fname, a, s, false, allow_bool,                                 \
                                  [](Expr x, Expr y) { return body; });                            \
  }                                                                                                \
  HIDET_INLINE Tensor fname(int s, const Tensor &a) {                                              \
    return detail::bitwise_scalar(#fname, a, s, true, allow_bool,                                  \
                                  [](Expr x, Expr y) { return body; });                            \
  }
HIDET_BITWISE_BINARY(bitwise_and, true, (x & y))
HIDET_BITWISE_BINARY(bitwise_or, true, (x | y))
HIDET_BITWISE_BINARY(bitwise_xor, true, (x ^ y))
HIDET_BITWISE_BINARY(bitwise_left_shift, false, detail::shift_of(x, y, true))
HIDET_BITWISE_BINARY(bitwise_right_shift, false, detail::shift_of(x, y, false))
#undef HIDET_BITWISE_BINARY

#define HIDET_COMPARE_BINARY(fname, sym)                                                           \
  HIDET_INLINE Tensor fname(const Tensor &a, const Tensor &b) {                                    \
    DataType t = promote_types(a.dtype(), b.dtype());                                              \
    return detail::binary(#fname, a, b, compute_dtype(t), dtypes::boolean,                         \
                          [](Expr x, Expr y) { return x sym y; });                                 \
  }                                                                                                \
  HIDET_INLINE Tensor fname(const Tensor &a, double s) {                                           \
    DataType t = promote_with_scalar(a.dtype(), double(std::int64_t(s)) != s);                     \
    return detail::binary_scalar(#fname, a, s, false, compute_dtype(t), dtypes::boolean, \
                                 [](Expr x, Expr y) { return x sym y; });                          \
  }
HIDET_COMPARE_BINARY(eq, ==)
HIDET_COMPARE_BINARY(ne, !=)
HIDET_COMPARE_BINARY(lt, <)
HIDET_COMPARE_BINARY(le, <=)
HIDET_COMPARE_BINARY(gt, >)
HIDET_COMPARE_BINARY(ge, >=)
#undef HIDET_COMPARE_BINARY

HIDET_INLINE Tensor logical_and(const Tensor &a, const Tensor &b) {
  return detail::binary("logical_and", a, b, dtypes::boolean, dtypes::boolean, [](Expr x, Expr y) { return x && y; });
}

HIDET_INLINE Tensor logical_or(const Tensor &a, const Tensor &b) {
  return detail::binary("logical_or", a, b, dtypes::boolean, dtypes::boolean, [](Expr x, Expr y) { return x || y; });
}

HIDET_INLINE Tensor logical_xor(const Tensor &a, const Tensor &b) {
  return detail::binary("logical_xor", a, b, dtypes::boolean, dtypes::boolean,
                        [](Expr x, Expr y) { return x != y; });
}

HIDET_INLINE Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b) {
  SymShape s = broadcast_shapes("where", cond.sym_shape(), a.sym_shape(), cond.dtype(), a.dtype());
  s = broadcast_shapes("where", s, b.sym_shape(), cond.dtype(), b.dtype());
  DataType t = promote_types(a.dtype(), b.dtype());
  return run_task(
      "where{}",
      [&] {
        auto c = input("cond", cond.sym_shape(), cond.dtype());
        auto x = input("a", a.sym_shape(), a.dtype());
        auto y = input("b", b.sym_shape(), b.dtype());
        auto o = compute("where", s, [&](const Idx &i) {
          return lang::select(c.at(broadcast_index(c.sym_shape(), i)), lang::cast(x.at(broadcast_index(x.sym_shape(), i)), t),
                              lang::cast(y.at(broadcast_index(y.sym_shape(), i)), t));
        }, t);
        return Task{"where", {c, x, y}, {o}, "", {}};
      },
      {cond, a, b})[0];
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
