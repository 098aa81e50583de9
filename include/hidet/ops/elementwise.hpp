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
// true) and return bool; true division of integers returns f32.
#pragma once

#include <cmath>

#include "hidet/ops/cache.hpp"

namespace hidet::ops {

namespace detail {

inline int category(DataType d) { return d.is_bool() ? 0 : d.is_float() ? 2 : 1; }

inline DataType signed_of_width(std::size_t bytes) {
  switch (bytes) {
  case 1: return dtypes::i8;
  case 2: return dtypes::i16;
  case 4: return dtypes::i32;
  default: return dtypes::i64;
  }
}
} // namespace detail

/// The result dtype of a binary operation on tensors of dtypes a and b (see the top of the file).
inline DataType promote_types(DataType a, DataType b) {
  if (a == b) return a;
  int ca = detail::category(a), cb = detail::category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if (a.is_half() && b.is_half()) return dtypes::f32;
    return a.nbytes() >= b.nbytes() ? a : b;
  }
  if (a.is_signed() == b.is_signed()) return a.nbytes() >= b.nbytes() ? a : b;
  DataType s = a.is_signed() ? a : b, u = a.is_signed() ? b : a;
  if (s.nbytes() > u.nbytes()) return s;
  return detail::signed_of_width(std::min<std::size_t>(8, u.nbytes() * 2));
}

/// The result dtype of a tensor of dtype `t` with a C++ scalar (floating if `scalar_is_float`).
inline DataType promote_with_scalar(DataType t, bool scalar_is_float) {
  if (scalar_is_float) return t.is_float() ? t : dtypes::f32;
  return t.is_bool() ? dtypes::i64 : t;
}

/// The dtype arithmetic on dtype `d` is carried out in (f32 for f16/bf16).
inline DataType compute_dtype(DataType d) { return d.is_half() ? dtypes::f32 : d; }

/// The numpy broadcast of two shapes; `op` names the operator in the error.
inline Shape broadcast_shapes(const std::string &op, const Shape &a, const Shape &b, DataType da, DataType db) {
  std::size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ValueError(str_cat(op, ": cannot broadcast shapes ", shape_str(a), " and ", shape_str(b), " (dtypes ", da,
                               " and ", db, "): aligned from the last dimension, sizes must be equal or 1"));
    r[i] = x == 1 ? y : x;
  }
  return r;
}

/// Index into a tensor of shape `s` broadcast to an output index `out`.
inline Idx broadcast_index(const Shape &s, const Idx &out) {
  Idx r;
  std::size_t off = out.size() - s.size();
  for (std::size_t i = 0; i < s.size(); ++i) r.push_back(s[i] == 1 ? Expr(0) : out[off + i]);
  return r;
}

namespace detail {
inline std::string fmt_double(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

/// Reads x at idx in compute_dtype(x).
inline Expr load(const TensorDef &x, const Idx &idx) { return lang::cast(x.at(idx), compute_dtype(x.dtype())); }

/// A unary element-wise operator: y = f(x in dtype cd) converted to `out`.
template <class F>
Tensor unary(const std::string &name, const Tensor &x, DataType cd, DataType out, F f, const std::string &attrs = "") {
  auto key = str_cat(name, "{", attrs, "}");
  return run_task(
      key,
      [&] {
        auto a = input("x", x.shape(), x.dtype());
        auto y = compute(name, x.shape(), [&](const Idx &i) { return f(lang::cast(a.at(i), cd)); }, out);
        return Task{name, {a}, {y}, attrs, {[](const Idx &i) { return i; }}};
      },
      {x})[0];
}

/// A binary element-wise operator with broadcasting: y = f(a, b) with both in dtype cd.
template <class F>
Tensor binary(const std::string &name, const Tensor &x, const Tensor &y, DataType cd, DataType out, F f) {
  Shape s = broadcast_shapes(name, x.shape(), y.shape(), x.dtype(), y.dtype());
  return run_task(
      str_cat(name, "{}"),
      [&] {
        auto a = input("a", x.shape(), x.dtype());
        auto b = input("b", y.shape(), y.dtype());
        auto c = compute(name, s, [&](const Idx &i) {
          return f(lang::cast(a.at(broadcast_index(a.shape(), i)), cd), lang::cast(b.at(broadcast_index(b.shape(), i)), cd));
        }, out);
        return Task{name, {a, b}, {c}, "", {}};
      },
      {x, y})[0];
}

/// A binary operator with a C++ scalar on the right (or left when `scalar_left`).
template <class F>
Tensor binary_scalar(const std::string &name, const Tensor &x, double v, bool is_float, bool scalar_left, DataType cd,
                     DataType out, F f) {
  std::string attrs = str_cat("scalar=", fmt_double(v), ", left=", scalar_left);
  return run_task(
      str_cat(name, "{", attrs, "}"),
      [&] {
        auto a = input("a", x.shape(), x.dtype());
        auto c = compute(name, x.shape(), [&](const Idx &i) {
          Expr xv = lang::cast(a.at(i), cd);
          Expr sv = cd.is_float() ? Expr(ir::ConstantNode::make_float(cd, v)) : Expr(ir::ConstantNode::make_int(cd, std::int64_t(v)));
          return scalar_left ? f(sv, xv) : f(xv, sv);
        }, out);
        return Task{name, {a}, {c}, attrs, {[](const Idx &i) { return i; }}};
      },
      {x})[0];
}

inline void require_float_or_int(const std::string &op, const Tensor &x, bool allow_bool) {
  if (!allow_bool && x.dtype().is_bool())
    throw ValueError(str_cat(op, ": dtype bool is not supported (tensor of shape ", shape_str(x.shape()),
                             "); cast it first, e.g. ops::cast(x, hidet::i32)"));
}
inline void require_float(const std::string &op, const Tensor &x) {
  if (!x.dtype().is_float())
    throw ValueError(str_cat(op, ": expected a floating-point tensor, got dtype ", x.dtype(), " of shape ",
                             shape_str(x.shape()), "; cast it first, e.g. ops::cast(x, hidet::f32)"));
}
/// Float math on integer inputs gives f32 (PyTorch).
inline DataType float_result(DataType d) { return d.is_float() ? d : dtypes::f32; }
} // namespace detail

/// Converts x to dtype `to` (C++ conversion; to bool: non-zero is true).
inline Tensor cast(const Tensor &x, DataType to) {
  if (x.dtype() == to) return x;
  return detail::unary(str_cat("cast_", to.short_name()), x, x.dtype(), to,
                       [&](Expr v) { return to.is_bool() ? Expr(v != 0) : v; });
}

// ---- unary ---------------------------------------------------------------------------------

#define HIDET_FLOAT_UNARY(fname, body)                                                             \
  /** fname(x), element-wise; integer inputs give f32. */                                          \
  inline Tensor fname(const Tensor &x) {                                                           \
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
#undef HIDET_FLOAT_UNARY

#define HIDET_SAME_UNARY(fname, body)                                                              \
  /** fname(x), element-wise, keeping the dtype. */                                                \
  inline Tensor fname(const Tensor &x) {                                                           \
    detail::require_float_or_int(#fname, x, false);                                                \
    return detail::unary(#fname, x, compute_dtype(x.dtype()), x.dtype(), [](Expr v) { return body; }); \
  }
HIDET_SAME_UNARY(neg, -v)
HIDET_SAME_UNARY(abs, lang::abs(v))
HIDET_SAME_UNARY(relu, lang::max(v, 0))
#undef HIDET_SAME_UNARY

#define HIDET_ROUNDING_UNARY(fname)                                                                \
  /** fname(x) for floats; integers are returned unchanged. */                                     \
  inline Tensor fname(const Tensor &x) {                                                           \
    detail::require_float_or_int(#fname, x, false);                                                \
    if (!x.dtype().is_float()) return x;                                                           \
    return detail::unary(#fname, x, compute_dtype(x.dtype()), x.dtype(), [](Expr v) { return lang::fname(v); }); \
  }
HIDET_ROUNDING_UNARY(floor)
HIDET_ROUNDING_UNARY(ceil)
#undef HIDET_ROUNDING_UNARY

/// Rounds floats to the nearest integer, ties to even (PyTorch's round; CUDA's roundf rounds ties
/// away from zero, so it is spelled out); integers are returned unchanged.
inline Tensor round(const Tensor &x) {
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

/// max(x, 0) + negative_slope * min(x, 0)
inline Tensor leaky_relu(const Tensor &x, double negative_slope = 0.01) {
  detail::require_float(std::string("leaky_relu"), x);
  return detail::unary("leaky_relu", x, compute_dtype(x.dtype()), x.dtype(),
                       [&](Expr v) { return lang::select(v > 0, v, v * negative_slope); },
                       "negative_slope=" + detail::fmt_double(negative_slope));
}
/// GELU: x * Phi(x) (erf form), or the tanh approximation when `approximate_tanh`.
inline Tensor gelu(const Tensor &x, bool approximate_tanh = false) {
  detail::require_float("gelu", x);
  return detail::unary("gelu", x, compute_dtype(x.dtype()), x.dtype(), [&](Expr v) {
    if (approximate_tanh) return Expr(0.5f * v * (1.0f + lang::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v))));
    return Expr(0.5f * v * (1.0f + lang::erf(v * 0.7071067811865476f)));
  }, str_cat("approximate_tanh=", approximate_tanh));
}
/// min(max(x, lo), hi)
inline Tensor clamp(const Tensor &x, double lo, double hi) {
  detail::require_float_or_int("clamp", x, false);
  if (lo > hi) throw ValueError(str_cat("clamp: min ", lo, " is greater than max ", hi));
  DataType cd = compute_dtype(x.dtype());
  return detail::unary("clamp", x, cd, x.dtype(), [&](Expr v) {
    Expr l = cd.is_float() ? Expr(ir::ConstantNode::make_float(cd, lo)) : Expr(ir::ConstantNode::make_int(cd, std::int64_t(lo)));
    Expr h = cd.is_float() ? Expr(ir::ConstantNode::make_float(cd, hi)) : Expr(ir::ConstantNode::make_int(cd, std::int64_t(hi)));
    return lang::min(lang::max(v, l), h);
  }, str_cat("min=", detail::fmt_double(lo), ", max=", detail::fmt_double(hi)));
}
/// !x (bool result; non-zero is true).
inline Tensor logical_not(const Tensor &x) {
  return detail::unary("logical_not", x, x.dtype(), dtypes::boolean, [](Expr v) { return !v; });
}
/// x != x (bool result); false for integers.
inline Tensor isnan(const Tensor &x) {
  return detail::unary("isnan", x, compute_dtype(x.dtype()), dtypes::boolean,
                       [&](Expr v) { return x.dtype().is_float() ? lang::isnan(v) : Expr(false); });
}

// ---- binary --------------------------------------------------------------------------------

#define HIDET_ARITH_BINARY(fname, body, int_div)                                                   \
  /** fname(a, b) element-wise with broadcasting and type promotion. */                            \
  inline Tensor fname(const Tensor &a, const Tensor &b) {                                          \
    DataType t = promote_types(a.dtype(), b.dtype());                                              \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    if (t.is_bool()) t = dtypes::i32;                                                              \
    return detail::binary(#fname, a, b, compute_dtype(t), t, [](Expr x, Expr y) { return body; }); \
  }                                                                                                \
  inline Tensor fname(const Tensor &a, double s) {                                                 \
    DataType t = promote_with_scalar(a.dtype(), true);                                             \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, true, false, compute_dtype(t), t,                   \
                                 [](Expr x, Expr y) { return body; });                             \
  }                                                                                                \
  inline Tensor fname(double s, const Tensor &a) {                                                 \
    DataType t = promote_with_scalar(a.dtype(), true);                                             \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, true, true, compute_dtype(t), t,                    \
                                 [](Expr x, Expr y) { return body; });                             \
  }                                                                                                \
  inline Tensor fname(const Tensor &a, int s) {                                                    \
    DataType t = promote_with_scalar(a.dtype(), false);                                            \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, false, false, compute_dtype(t), t,                  \
                                 [](Expr x, Expr y) { return body; });                             \
  }                                                                                                \
  inline Tensor fname(int s, const Tensor &a) {                                                    \
    DataType t = promote_with_scalar(a.dtype(), false);                                            \
    if (int_div && !t.is_float()) t = dtypes::f32;                                                 \
    return detail::binary_scalar(#fname, a, s, false, true, compute_dtype(t), t,                   \
                                 [](Expr x, Expr y) { return body; });                             \
  }
HIDET_ARITH_BINARY(add, x + y, false)
HIDET_ARITH_BINARY(sub, x - y, false)
HIDET_ARITH_BINARY(mul, x * y, false)
HIDET_ARITH_BINARY(div, x / y, true)
HIDET_ARITH_BINARY(maximum, lang::max(x, y), false)
HIDET_ARITH_BINARY(minimum, lang::min(x, y), false)
HIDET_ARITH_BINARY(pow, lang::pow(x, y), false)
// Python-style modulo: the result has the sign of the divisor.
HIDET_ARITH_BINARY(mod, (x.dtype().is_float() ? Expr(x - lang::floor(x / y) * y)
                                              : Expr(lang::select((x % y != 0) && ((x % y < 0) != (y < 0)), x % y + y, x % y))),
                   false)
#undef HIDET_ARITH_BINARY

#define HIDET_COMPARE_BINARY(fname, sym)                                                           \
  /** a sym b element-wise with broadcasting; bool result. */                                      \
  inline Tensor fname(const Tensor &a, const Tensor &b) {                                          \
    DataType t = promote_types(a.dtype(), b.dtype());                                              \
    return detail::binary(#fname, a, b, compute_dtype(t), dtypes::boolean,                         \
                          [](Expr x, Expr y) { return x sym y; });                                 \
  }                                                                                                \
  inline Tensor fname(const Tensor &a, double s) {                                                 \
    DataType t = promote_with_scalar(a.dtype(), double(std::int64_t(s)) != s);                     \
    return detail::binary_scalar(#fname, a, s, t.is_float(), false, compute_dtype(t), dtypes::boolean, \
                                 [](Expr x, Expr y) { return x sym y; });                          \
  }
HIDET_COMPARE_BINARY(eq, ==)
HIDET_COMPARE_BINARY(ne, !=)
HIDET_COMPARE_BINARY(lt, <)
HIDET_COMPARE_BINARY(le, <=)
HIDET_COMPARE_BINARY(gt, >)
HIDET_COMPARE_BINARY(ge, >=)
#undef HIDET_COMPARE_BINARY

/// a && b element-wise (non-zero is true); bool result.
inline Tensor logical_and(const Tensor &a, const Tensor &b) {
  return detail::binary("logical_and", a, b, dtypes::boolean, dtypes::boolean, [](Expr x, Expr y) { return x && y; });
}
/// a || b element-wise (non-zero is true); bool result.
inline Tensor logical_or(const Tensor &a, const Tensor &b) {
  return detail::binary("logical_or", a, b, dtypes::boolean, dtypes::boolean, [](Expr x, Expr y) { return x || y; });
}

/// cond ? a : b element-wise, broadcasting all three; the result dtype promotes a and b.
inline Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b) {
  Shape s = broadcast_shapes("where", cond.shape(), a.shape(), cond.dtype(), a.dtype());
  s = broadcast_shapes("where", s, b.shape(), cond.dtype(), b.dtype());
  DataType t = promote_types(a.dtype(), b.dtype());
  return run_task(
      "where{}",
      [&] {
        auto c = input("cond", cond.shape(), cond.dtype());
        auto x = input("a", a.shape(), a.dtype());
        auto y = input("b", b.shape(), b.dtype());
        auto o = compute("where", s, [&](const Idx &i) {
          return lang::select(c.at(broadcast_index(c.shape(), i)), lang::cast(x.at(broadcast_index(x.shape(), i)), t),
                              lang::cast(y.at(broadcast_index(y.shape(), i)), t));
        }, t);
        return Task{"where", {c, x, y}, {o}, "", {}};
      },
      {cond, a, b})[0];
}

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
