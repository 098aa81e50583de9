// Definitions for hidet/ops/reduce.hpp.
#pragma once

#include "hidet/ops/reduce.hpp"

#include <set>

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

namespace detail {
/// The plan of cumsum over x viewed as [outer, len, inner] (extents may be symbols: the kernel then
/// takes them as parameters and serves every value): one thread per line scans its len elements.
HIDET_INLINE Plan cumsum_plan(const Dim &outer, const Dim &len, const Dim &inner, DataType in_dtype, DataType out,
                              DataType acc) {
  using namespace hidet::lang;
  Plan plan;
  plan.module = script_module("cumsum");
  const SymShape view{outer, len, inner};
  std::set<std::string> names;
  for (const Dim &d : view)
    for (const auto &n : d.symbols()) names.insert(n);
  plan.symbols.assign(names.begin(), names.end());
  plan.buffers.push_back({PlanBuffer::Role::Input, 0, "x", view, in_dtype});
  plan.buffers.push_back({PlanBuffer::Role::Output, 0, "y", view, out});
  const Dim lines = outer * inner;
  define_kernel(
      plan.module, "cumsum_scan", {param_spec("x", in_dtype, view), param_spec("y", out, view)},
      [&](const std::vector<ir::Var> &p) {
        lang::attrs.cuda.grid_dim = blocks_for(lines, 256);
        lang::attrs.cuda.block_dim = 256;
        Var t = blockIdx.x * 256 + threadIdx.x;
        if_(t < dim_expr(lines), [&] {
          Var o = t / dim_expr(inner), in = t % dim_expr(inner);
          Var s = let(acc, reduce_init(ReduceKind::Sum, acc), "s");
          for_(range(dim_expr(len)), [&](Var j) {
            s = Operand(s + cast(Expr(lang::Element(p[0], {o.ir(), j.ir(), in.ir()}, {}).to_ir({})), acc));
            store(p[1], {o.ir(), j.ir(), in.ir()}, s.ir());
          });
        });
      },
      plan.symbols);
  plan.steps.push_back({"cumsum_scan", {0, 1}, lines * len});
  return plan;
}
} // namespace detail

HIDET_INLINE Tensor cumsum(const Tensor &x, int axis) {
  const SymShape xs = x.sym_shape();
  int ax = detail::normalize_axis("cumsum", axis, x.ndim(), xs);
  Dim outer = 1, len = xs.empty() ? Dim(1) : xs[std::size_t(ax)], inner = 1;
  for (int d = 0; d < ax; ++d) outer = outer * xs[std::size_t(d)];
  for (int d = ax + 1; d < x.ndim(); ++d) inner = inner * xs[std::size_t(d)];
  DataType acc = x.dtype().is_float() ? compute_dtype(x.dtype()) : default_acc_dtype(ReduceKind::Sum, x.dtype());
  DataType out = x.dtype().is_float() ? x.dtype() : acc;
  const std::string key = str_cat("cumsum{axis=", ax, "}");
  if (detail::has_symbolic_extents({x})) {
    // One kernel for every value of the symbols; traced again at constant shapes (specialize())
    // it is the constant cumsum.
    const std::string plan_key = str_cat(key, "|", x.dtype(), sym_shape_str({outer, len, inner}));
    return detail::trace_symbolic(key, {x}, xs, out, [=](const std::vector<Tensor> &in) {
      if (in[0].is_symbolic()) return cumsum(in[0], axis);
      std::shared_ptr<CompiledTask> ct = detail::find_compiled(plan_key);
      if (!ct) ct = detail::add_compiled(plan_key, detail::cumsum_plan(outer, len, inner, in[0].dtype(), out, acc));
      const Shape s = in[0].shape();
      std::int64_t o = 1, l = s.empty() ? 1 : s[std::size_t(ax)], i = 1;
      for (int d = 0; d < ax; ++d) o *= s[std::size_t(d)];
      for (int d = ax + 1; d < int(s.size()); ++d) i *= s[std::size_t(d)];
      Device dev = detail::common_device("cumsum", in);
      return detail::launch_compiled(*ct, {in[0].reshape({o, l, i})}, dev)[0].reshape(s);
    });
  }
  return run_plan(key, [&] { return detail::cumsum_plan(outer, len, inner, x.dtype(), out, acc); },
                  {x.reshape({outer.value(), len.value(), inner.value()})})[0]
      .reshape(x.shape());
}

} // namespace hidet::ops
