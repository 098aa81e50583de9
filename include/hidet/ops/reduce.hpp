// Reductions over any set of axes, with keepdims: sum, mean, max, min, prod, all, any, var, std,
// argmax, argmin; and cumsum. Negative axes count from the end; an empty axis list reduces over
// every axis. Accumulation: f32 for f16/bf16; i64 for integer and bool sum/prod; mean of
// integers is f32.
#pragma once

#include <algorithm>

#include "hidet/ops/elementwise.hpp"

namespace hidet::ops {

namespace detail {

/// Normalizes `axis` for a tensor of rank `ndim`; an error naming the operator when out of range.
inline int normalize_axis(const std::string &op, int axis, std::size_t ndim, const Shape &shape) {
  int n = int(ndim);
  if (axis < -n || axis >= n || (n == 0 && axis != 0 && axis != -1))
    throw ValueError(str_cat(op, ": axis ", axis, " is out of range for a tensor of shape ", shape_str(shape),
                             " (rank ", n, "); valid axes are ", -n, " to ", n - 1));
  return n == 0 ? 0 : (axis < 0 ? axis + n : axis);
}

/// Normalized, sorted, unique axes (all axes when empty).
inline std::vector<int> normalize_axes(const std::string &op, const std::vector<int> &axes, const Shape &shape) {
  std::vector<int> r;
  if (axes.empty())
    for (std::size_t i = 0; i < shape.size(); ++i) r.push_back(int(i));
  for (int a : axes) {
    int n = normalize_axis(op, a, shape.size(), shape);
    if (std::find(r.begin(), r.end(), n) != r.end())
      throw ValueError(str_cat(op, ": axis ", a, " is given twice for a tensor of shape ", shape_str(shape)));
    r.push_back(n);
  }
  std::sort(r.begin(), r.end());
  return r;
}

/// The output shape of a reduction over `axes`.
inline Shape reduced_shape(const Shape &s, const std::vector<int> &axes, bool keepdims) {
  Shape r;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool red = std::find(axes.begin(), axes.end(), int(i)) != axes.end();
    if (!red) r.push_back(s[i]);
    else if (keepdims) r.push_back(1);
  }
  return r;
}

/// A reduce definition of `x` over `axes`: f maps the input element (at the full index) to the
/// reduced term.
template <class F>
TensorDef reduce_over(const TensorDef &x, const std::vector<int> &axes, bool keepdims, ReduceKind kind, F f,
                      const std::string &name, std::optional<DataType> out_dtype = std::nullopt) {
  Shape ext;
  for (int a : axes) ext.push_back(x.shape()[a]);
  Shape out = reduced_shape(x.shape(), axes, keepdims);
  return reduce(out, ext, [&](const Idx &o, const Idx &r) {
    Idx full;
    std::size_t oi = 0, ri = 0;
    for (std::size_t d = 0; d < x.ndim(); ++d) {
      bool red = std::find(axes.begin(), axes.end(), int(d)) != axes.end();
      if (red) {
        full.push_back(r[ri++]);
        if (keepdims) oi++;
      } else {
        full.push_back(o[oi++]);
      }
    }
    return f(full);
  }, kind, std::nullopt, out_dtype, name);
}

/// Runs one reduction task on a tensor.
inline Tensor reduce_tensor(const std::string &op, const Tensor &x, std::vector<int> axes, bool keepdims, ReduceKind kind) {
  auto ax = normalize_axes(op, axes, x.shape());
  if ((kind == ReduceKind::Max || kind == ReduceKind::Min || is_arg_reduce(kind)))
    for (int a : ax)
      if (x.shape()[a] == 0)
        throw ValueError(str_cat(op, ": cannot reduce over axis ", a, " of size 0 (shape ", shape_str(x.shape()),
                                 "): the reduction has no identity"));
  std::string attrs = str_cat("axes=", [&] { std::ostringstream os; detail::print_attr(os, ax); return os.str(); }(), ", keepdims=", keepdims);
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", x.shape(), x.dtype());
        std::optional<DataType> out;
        if (kind == ReduceKind::Sum || kind == ReduceKind::Prod)
          out = x.dtype().is_float() ? x.dtype() : default_acc_dtype(kind, x.dtype());
        auto y = reduce_over(a, ax, keepdims, kind, [&](const Idx &i) { return a.at(i); }, op, out);
        return Task{op, {a}, {y}, attrs, {}};
      },
      {x})[0];
}
} // namespace detail

/// Sum over `axes` (all when empty).
inline Tensor sum(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false) {
  return detail::reduce_tensor("sum", x, axes, keepdims, ReduceKind::Sum);
}
/// Mean over `axes` (all when empty); integer inputs give f32.
inline Tensor mean(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false) {
  return detail::reduce_tensor("mean", x, axes, keepdims, ReduceKind::Mean);
}
/// Maximum over `axes` (NaN propagates); an error for an empty reduction.
inline Tensor max(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false) {
  return detail::reduce_tensor("max", x, axes, keepdims, ReduceKind::Max);
}
/// Minimum over `axes` (NaN propagates); an error for an empty reduction.
inline Tensor min(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false) {
  return detail::reduce_tensor("min", x, axes, keepdims, ReduceKind::Min);
}
/// Product over `axes`.
inline Tensor prod(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false) {
  return detail::reduce_tensor("prod", x, axes, keepdims, ReduceKind::Prod);
}
/// True where every element over `axes` is non-zero (bool result).
inline Tensor all(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false) {
  return detail::reduce_tensor("all", x, axes, keepdims, ReduceKind::And);
}
/// True where some element over `axes` is non-zero (bool result).
inline Tensor any(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false) {
  return detail::reduce_tensor("any", x, axes, keepdims, ReduceKind::Or);
}
/// Index (i64) of the maximum along `axis` (the first one among equal values).
inline Tensor argmax(const Tensor &x, int axis, bool keepdims = false) {
  return detail::reduce_tensor("argmax", x, {axis}, keepdims, ReduceKind::ArgMax);
}
/// Index (i64) of the minimum along `axis` (the first one among equal values).
inline Tensor argmin(const Tensor &x, int axis, bool keepdims = false) {
  return detail::reduce_tensor("argmin", x, {axis}, keepdims, ReduceKind::ArgMin);
}

/// Variance over `axes` with Bessel's `correction` (1: unbiased, PyTorch's default).
inline Tensor var(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false, int correction = 1, bool take_sqrt = false) {
  const char *op = take_sqrt ? "std" : "var";
  detail::require_float(op, x);
  auto ax = detail::normalize_axes(op, axes, x.shape());
  std::int64_t n = 1;
  for (int a : ax) n *= x.shape()[a];
  std::string attrs = str_cat("axes=", [&] { std::ostringstream os; detail::print_attr(os, ax); return os.str(); }(),
                              ", keepdims=", keepdims, ", correction=", correction);
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", x.shape(), x.dtype());
        DataType cd = compute_dtype(x.dtype());
        auto m = detail::reduce_over(a, ax, true, ReduceKind::Mean, [&](const Idx &i) { return lang::cast(a.at(i), cd); }, "mean");
        auto ss = detail::reduce_over(a, ax, keepdims, ReduceKind::Sum, [&](const Idx &i) {
          Idx mi = i;
          for (int d : ax) mi[d] = Expr(0);
          Expr dv = lang::cast(a.at(i), cd) - m.at(mi);
          return dv * dv;
        }, "sumsq", cd);
        auto y = compute(op, ss.shape(), [&](const Idx &i) {
          Expr v = ss.at(i) / lang::cast(Expr(double(std::max<std::int64_t>(n - correction, 0))), cd);
          return take_sqrt ? lang::sqrt(v) : v;
        }, x.dtype());
        return Task{op, {a}, {y}, attrs, {}};
      },
      {x})[0];
}
/// Standard deviation over `axes` with Bessel's `correction`.
inline Tensor std(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false, int correction = 1) {
  return var(x, axes, keepdims, correction, true);
}

/// Inclusive cumulative sum along `axis`: a linear scan per row. The tensor is viewed as
/// [outer, len, inner]; one thread scans one (outer, inner) line, consecutive threads on
/// consecutive inner positions. Integers and bool accumulate in i64 (u64 for unsigned); f16/bf16
/// in f32 and round each prefix once.
inline Tensor cumsum(const Tensor &x, int axis) {
  int ax = detail::normalize_axis("cumsum", axis, x.ndim(), x.shape());
  std::string attrs = str_cat("axis=", ax);
  std::int64_t outer = 1, len = x.shape().empty() ? 1 : x.shape()[ax], inner = 1;
  for (int d = 0; d < ax; ++d) outer *= x.shape()[d];
  for (int d = ax + 1; d < x.ndim(); ++d) inner *= x.shape()[d];
  DataType acc = x.dtype().is_float() ? compute_dtype(x.dtype()) : default_acc_dtype(ReduceKind::Sum, x.dtype());
  DataType out = x.dtype().is_float() ? x.dtype() : acc;
  return run_plan(
      str_cat("cumsum{", attrs, "}"),
      [&] {
        using namespace hidet::lang;
        Plan plan;
        plan.module = script_module("cumsum");
        Shape view{outer, len, inner};
        plan.buffers.push_back({PlanBuffer::Role::Input, 0, "x", view, x.dtype()});
        plan.buffers.push_back({PlanBuffer::Role::Output, 0, "y", view, out});
        std::int64_t lines = outer * inner;
        detail::define_kernel(plan.module, "cumsum_scan", {detail::param_spec("x", x.dtype(), view), detail::param_spec("y", out, view)},
                              [&](const std::vector<ir::Var> &p) {
                                lang::attrs.cuda.grid_dim = int(std::max<std::int64_t>(1, (lines + 255) / 256));
                                lang::attrs.cuda.block_dim = 256;
                                Var t = blockIdx.x * 256 + threadIdx.x;
                                if_(t < int(lines), [&] {
                                  Var o = t / int(inner), in = t % int(inner);
                                  Var s = detail::let(acc, detail::reduce_init(ReduceKind::Sum, acc), "s");
                                  for_(range(int(len)), [&](Var j) {
                                    s = Operand(s + cast(Expr(lang::Element(p[0], {o.ir(), j.ir(), in.ir()}, {}).to_ir({})), acc));
                                    detail::store(p[1], {o.ir(), j.ir(), in.ir()}, s.ir());
                                  });
                                });
                              });
        plan.steps.push_back({"cumsum_scan", {0, 1}, lines * len});
        return plan;
      },
      {x.reshape({outer, len, inner})})[0]
      .reshape(x.shape());
}

} // namespace hidet::ops
