// Definitions for hidet/ops/reduce.hpp.
#pragma once

#include "hidet/ops/reduce.hpp"

#include <set>

#include <algorithm>
#include <sstream>

#include "hidet/ops/cache.hpp"
#include "hidet/ops/schedule_reduce.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

HIDET_INLINE int normalize_axis(const std::string &op, int axis, std::size_t ndim, const SymShape &shape) {
  int n = int(ndim);
  if (axis < -n || axis >= n || (n == 0 && axis != 0 && axis != -1))
    throw ValueError(str_cat(op, ": axis ", axis, " is out of range for a tensor of shape ", shape_str(shape),
                             " (rank ", n, "); valid axes are ", -n, " to ", n - 1));
  return n == 0 ? 0 : (axis < 0 ? axis + n : axis);
}

HIDET_INLINE int normalize_axis_or_scalar(const std::string &op, int axis, const SymShape &shape) {
  if (!shape.empty()) return normalize_axis(op, axis, shape.size(), shape);
  if (axis != 0 && axis != -1)
    throw ValueError(str_cat(op, ": axis ", axis, " is out of range for a 0-d tensor; valid axes are -1 and 0"));
  return 0;
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
/// The plan of an inclusive scan of `kind` (Sum: cumsum, Prod: cumprod, Max: cummax, Min: cummin)
/// over x viewed as [outer, len, inner] (extents may be symbols: the kernel then takes them as
/// parameters and serves every value): one thread per line scans its len elements in `acc`. Max and
/// Min also write the i64 index of the running extreme (a second output).
HIDET_INLINE Plan scan_plan(const std::string &op, ReduceKind kind, const Dim &outer, const Dim &len, const Dim &inner,
                            DataType in_dtype, DataType out, DataType acc) {
  using namespace hidet::lang;
  const bool extreme = kind == ReduceKind::Max || kind == ReduceKind::Min;
  Plan plan;
  plan.module = script_module(op);
  const SymShape view{outer, len, inner};
  std::set<std::string> names;
  for (const Dim &d : view)
    for (const auto &n : d.symbols()) names.insert(n);
  plan.symbols.assign(names.begin(), names.end());
  plan.buffers.push_back({PlanBuffer::Role::Input, 0, "x", view, in_dtype});
  plan.buffers.push_back({PlanBuffer::Role::Output, 0, "y", view, out});
  std::vector<ParamSpec> specs{param_spec("x", in_dtype, view), param_spec("y", out, view)};
  if (extreme) {
    plan.buffers.push_back({PlanBuffer::Role::Output, 1, "indices", view, dtypes::i64});
    specs.push_back(param_spec("indices", dtypes::i64, view));
  }
  const Dim lines = outer * inner;
  const std::string kernel = op + "_scan";
  define_kernel(
      plan.module, kernel, specs,
      [&](const std::vector<ir::Var> &p) {
        lang::attrs.cuda.grid_dim = blocks_for(lines, 256);
        lang::attrs.cuda.block_dim = 256;
        Var t = blockIdx.x * 256 + threadIdx.x;
        if_(t < dim_expr(lines), [&] {
          Var o = t / dim_expr(inner), in = t % dim_expr(inner);
          auto x_at = [&](const Expr &j) {
            return cast(Expr(lang::Element(p[0], {o.ir(), j.ir(), in.ir()}, {}).to_ir({})), acc);
          };
          if (!extreme) {
            Var s = let(acc, reduce_init(kind, acc), "s");
            for_(range(dim_expr(len)), [&](Var j) {
              s = Operand(kind == ReduceKind::Prod ? s * x_at(j) : s + x_at(j));
              store(p[1], {o.ir(), j.ir(), in.ir()}, s.ir());
            });
            return;
          }
          // PyTorch's rule: take v when it is NaN, or when the running value is not NaN and v >= it
          // (<= for the minimum), so equal values move the index to the last of them.
          Var s = x_at(0);
          Var at = let(dtypes::i64, ir::ConstantNode::make_int(dtypes::i64, 0), "at");
          for_(range(dim_expr(len)), [&](Var j) {
            Var v = x_at(j);
            Expr take = kind == ReduceKind::Max ? (v >= s) : (v <= s);
            if (acc.is_float()) take = lang::isnan(v) || (!lang::isnan(s) && take);
            if_(take, [&] {
              s = v;
              at = cast(j, dtypes::i64);
            });
            store(p[1], {o.ir(), j.ir(), in.ir()}, s.ir());
            store(p[2], {o.ir(), j.ir(), in.ir()}, at.ir());
          });
        });
      },
      plan.symbols);
  plan.steps.push_back({kernel, extreme ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1}, lines * len});
  return plan;
}

/// Runs the scan of `kind` named `op` along `axis` (see scan_plan): its outputs.
HIDET_INLINE std::vector<Tensor> scan(const std::string &op, ReduceKind kind, const Tensor &x, int axis) {
  const SymShape xs = x.sym_shape();
  int ax = normalize_axis_or_scalar(op, axis, xs);
  const bool extreme = kind == ReduceKind::Max || kind == ReduceKind::Min;
  if (extreme && x.dtype().is_fp8())
    throw ValueError(str_cat(op, ": x of dtype ", x.dtype(), " is not supported; cast it to f16 or f32 first"));
  Dim outer = 1, len = xs.empty() ? Dim(1) : xs[std::size_t(ax)], inner = 1;
  for (int d = 0; d < ax; ++d) outer = outer * xs[std::size_t(d)];
  for (int d = ax + 1; d < x.ndim(); ++d) inner = inner * xs[std::size_t(d)];
  DataType acc = x.dtype().is_float() ? compute_dtype(x.dtype()) : extreme ? x.dtype() : default_acc_dtype(kind, x.dtype());
  DataType out = x.dtype().is_float() || extreme ? x.dtype() : acc;
  std::vector<std::pair<SymShape, DataType>> outs{{xs, out}};
  if (extreme) outs.push_back({xs, dtypes::i64});
  const std::string key = str_cat(op, "{axis=", ax, "}");
  auto reshaped = [](std::vector<Tensor> ys, const Shape &s) {
    for (auto &y : ys) y = y.reshape(s);
    return ys;
  };
  if (has_symbolic_extents({x})) {
    // One kernel for every value of the symbols; traced again at constant shapes (specialize())
    // it is the constant scan.
    const std::string plan_key = str_cat(key, "|", x.dtype(), sym_shape_str({outer, len, inner}));
    return trace_symbolic_outputs(key, {x}, outs, [=](const std::vector<Tensor> &in) {
      if (in[0].is_symbolic()) return scan(op, kind, in[0], axis);
      std::shared_ptr<CompiledTask> ct = find_compiled(plan_key);
      if (!ct) ct = add_compiled(plan_key, scan_plan(op, kind, outer, len, inner, in[0].dtype(), out, acc));
      const Shape s = in[0].shape();
      std::int64_t o = 1, l = s.empty() ? 1 : s[std::size_t(ax)], i = 1;
      for (int d = 0; d < ax; ++d) o *= s[std::size_t(d)];
      for (int d = ax + 1; d < int(s.size()); ++d) i *= s[std::size_t(d)];
      Device dev = common_device(op, in);
      return reshaped(launch_compiled(*ct, {in[0].reshape({o, l, i})}, dev), s);
    });
  }
  return reshaped(run_plan(key, [&] { return scan_plan(op, kind, outer, len, inner, x.dtype(), out, acc); },
                           {x.reshape({outer.value(), len.value(), inner.value()})}),
                  x.shape());
}
} // namespace detail

HIDET_INLINE Tensor cumsum(const Tensor &x, int axis) { return detail::scan("cumsum", ReduceKind::Sum, x, axis)[0]; }

HIDET_INLINE Tensor cumprod(const Tensor &x, int axis) { return detail::scan("cumprod", ReduceKind::Prod, x, axis)[0]; }

HIDET_INLINE std::pair<Tensor, Tensor> cummax(const Tensor &x, int axis) {
  auto r = detail::scan("cummax", ReduceKind::Max, x, axis);
  return {r[0], r[1]};
}

HIDET_INLINE std::pair<Tensor, Tensor> cummin(const Tensor &x, int axis) {
  auto r = detail::scan("cummin", ReduceKind::Min, x, axis);
  return {r[0], r[1]};
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
