// Definitions for hidet/ops/reduce.hpp.
#pragma once

#include "hidet/ops/reduce.hpp"

#include <algorithm>
#include <sstream>

#include "hidet/ops/cache.hpp"
#include "hidet/ops/schedule_reduce.hpp"

namespace hidet::ops::detail {

HIDET_INLINE int normalize_axis(const std::string &op, int axis, std::size_t ndim, const SymShape &shape) {
  int n = int(ndim);
  if (axis < -n || axis >= n || (n == 0 && axis != 0 && axis != -1))
    throw ValueError(str_cat(op, ": axis ", axis, " is out of range for a tensor of shape ", shape_str(shape),
                             " (rank ", n, "); valid axes are ", -n, " to ", n - 1));
  return n == 0 ? 0 : (axis < 0 ? axis + n : axis);
}

HIDET_INLINE std::vector<int> normalize_axes(const std::string &op, const std::vector<int> &axes, const SymShape &shape) {
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

/// Runs one reduction task on a tensor.
HIDET_INLINE Tensor reduce_tensor(const std::string &op, const Tensor &x, std::vector<int> axes, bool keepdims, ReduceKind kind) {
  auto ax = normalize_axes(op, axes, x.sym_shape());
  if ((kind == ReduceKind::Max || kind == ReduceKind::Min || is_arg_reduce(kind)))
    for (int a : ax)
      if (x.sym_shape()[std::size_t(a)] == 0)
        throw ValueError(str_cat(op, ": cannot reduce over axis ", a, " of size 0 (shape ", shape_str(x.sym_shape()),
                                 "): the reduction has no identity"));
  std::string attrs = str_cat("axes=", [&] { std::ostringstream os; detail::print_attr(os, ax); return os.str(); }(), ", keepdims=", keepdims);
  std::optional<DataType> out; // integer sums and products widen
  if (kind == ReduceKind::Sum || kind == ReduceKind::Prod)
    out = x.dtype().is_float() ? x.dtype() : default_acc_dtype(kind, x.dtype());
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", x.sym_shape(), x.dtype());
        auto y = reduce_over(a, ax, keepdims, kind, [&](const Idx &i) { return a.at(i); }, op, out);
        return Task{op, {a}, {y}, attrs, {}};
      },
      {x})[0];
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor sum(const Tensor &x, std::vector<int> axes, bool keepdims) {
  return detail::reduce_tensor("sum", x, axes, keepdims, ReduceKind::Sum);
}

HIDET_INLINE Tensor mean(const Tensor &x, std::vector<int> axes, bool keepdims) {
  return detail::reduce_tensor("mean", x, axes, keepdims, ReduceKind::Mean);
}

HIDET_INLINE Tensor max(const Tensor &x, std::vector<int> axes, bool keepdims) {
  return detail::reduce_tensor("max", x, axes, keepdims, ReduceKind::Max);
}

HIDET_INLINE Tensor min(const Tensor &x, std::vector<int> axes, bool keepdims) {
  return detail::reduce_tensor("min", x, axes, keepdims, ReduceKind::Min);
}

HIDET_INLINE Tensor prod(const Tensor &x, std::vector<int> axes, bool keepdims) {
  return detail::reduce_tensor("prod", x, axes, keepdims, ReduceKind::Prod);
}

HIDET_INLINE Tensor all(const Tensor &x, std::vector<int> axes, bool keepdims) {
  return detail::reduce_tensor("all", x, axes, keepdims, ReduceKind::And);
}

HIDET_INLINE Tensor any(const Tensor &x, std::vector<int> axes, bool keepdims) {
  return detail::reduce_tensor("any", x, axes, keepdims, ReduceKind::Or);
}

HIDET_INLINE Tensor argmax(const Tensor &x, int axis, bool keepdims) {
  return detail::reduce_tensor("argmax", x, {axis}, keepdims, ReduceKind::ArgMax);
}

HIDET_INLINE Tensor argmin(const Tensor &x, int axis, bool keepdims) {
  return detail::reduce_tensor("argmin", x, {axis}, keepdims, ReduceKind::ArgMin);
}

HIDET_INLINE Tensor var(const Tensor &x, std::vector<int> axes, bool keepdims, int correction, bool take_sqrt) {
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

HIDET_INLINE Tensor std(const Tensor &x, std::vector<int> axes, bool keepdims, int correction) {
  return var(x, axes, keepdims, correction, true);
}

HIDET_INLINE Tensor cumsum(const Tensor &x, int axis) {
  if (detail::has_symbolic_extents({x}))
    return detail::trace_by_probing("cumsum", {x}, [axis](const std::vector<Tensor> &in) { return cumsum(in[0], axis); });
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
        plan.buffers.push_back({PlanBuffer::Role::Input, 0, "x", to_sym_shape(view), x.dtype()});
        plan.buffers.push_back({PlanBuffer::Role::Output, 0, "y", to_sym_shape(view), out});
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
