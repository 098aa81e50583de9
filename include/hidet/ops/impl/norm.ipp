// Definitions for hidet/ops/norm.hpp.
#pragma once

#include "hidet/ops/norm.hpp"

#include "hidet/ops/cache.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/reduce.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

HIDET_INLINE Idx at_axis0(Idx i, const std::vector<int> &axes) {
  for (int a : axes) i[a] = Expr(0);
  return i;
}

HIDET_INLINE Tensor softmax_impl(const char *op, const Tensor &x, int axis, bool log) {
  require_float(op, x);
  int ax = normalize_axis(op, axis, x.ndim(), x.sym_shape());
  std::string attrs = str_cat("axis=", ax);
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", x.sym_shape(), x.dtype());
        std::vector<int> axes{ax};
        auto ld = [&](const Idx &i) { return lang::cast(a.at(i), dtypes::f32); };
        auto m = reduce_over(a, axes, true, ReduceKind::Max, ld, "row_max", dtypes::f32);
        auto e = compute("e", x.sym_shape(), [&](const Idx &i) { return lang::exp(ld(i) - m.at(at_axis0(i, axes))); });
        auto s = reduce_over(e, axes, true, ReduceKind::Sum, [&](const Idx &i) { return e.at(i); }, "row_sum", dtypes::f32);
        auto y = compute(op, x.sym_shape(), [&](const Idx &i) {
          Idx k = at_axis0(i, axes);
          return log ? Expr(ld(i) - m.at(k) - lang::log(s.at(k))) : Expr(e.at(i) / s.at(k));
        }, x.dtype());
        return Task{op, {a}, {y}, attrs, {}};
      },
      {x})[0];
}

/// Checks an optional affine parameter of shape `want`.
HIDET_INLINE void check_param(const char *op, const char *what, const std::optional<Tensor> &p, const SymShape &want, DataType d) {
  if (!p) return;
  if (p->sym_shape() != want)
    throw ValueError(str_cat(op, ": ", what, " has shape ", shape_str(p->sym_shape()), " but the normalized shape is ",
                             shape_str(want)));
  if (p->dtype() != d)
    throw ValueError(str_cat(op, ": ", what, " has dtype ", p->dtype(), " but the input has dtype ", d));
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor softmax(const Tensor &x, int axis) { return detail::softmax_impl("softmax", x, axis, false); }

HIDET_INLINE Tensor log_softmax(const Tensor &x, int axis) { return detail::softmax_impl("log_softmax", x, axis, true); }

HIDET_INLINE Tensor layer_norm(const Tensor &x, int normalized_ndim, const std::optional<Tensor> &weight,
                               const std::optional<Tensor> &bias, double eps, bool rms) {
  const char *op = rms ? "rms_norm" : "layer_norm";
  detail::require_float(op, x);
  if (normalized_ndim < 1 || normalized_ndim > x.ndim())
    throw ValueError(str_cat(op, ": normalized_ndim ", normalized_ndim, " must be in [1, ", x.ndim(), "] for a tensor of shape ",
                             shape_str(x.sym_shape())));
  const SymShape xs = x.sym_shape();
  detail::check_param(op, "weight", weight, SymShape(xs.end() - normalized_ndim, xs.end()), x.dtype());
  detail::check_param(op, "bias", bias, SymShape(xs.end() - normalized_ndim, xs.end()), x.dtype());
  std::vector<int> axes;
  for (int i = x.ndim() - normalized_ndim; i < x.ndim(); ++i) axes.push_back(i);
  std::string attrs = str_cat("normalized_ndim=", normalized_ndim, ", eps=", detail::fmt_double(eps), ", weight=", bool(weight),
                              ", bias=", bool(bias));
  std::vector<Tensor> ins = detail::with_optional({x}, {weight, bias});
  SymShape ns(xs.end() - normalized_ndim, xs.end());
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", xs, x.dtype());
        std::vector<TensorDef> inputs{a};
        TensorDef w, b;
        if (weight) inputs.push_back(w = input("weight", ns, x.dtype()));
        if (bias) inputs.push_back(b = input("bias", ns, x.dtype()));
        auto ld = [&](const Idx &i) { return lang::cast(a.at(i), dtypes::f32); };
        TensorDef mu;
        if (!rms) mu = detail::reduce_over(a, axes, true, ReduceKind::Mean, ld, "mean", dtypes::f32);
        auto centered = [&](const Idx &i) { return rms ? ld(i) : Expr(ld(i) - mu.at(detail::at_axis0(i, axes))); };
        auto v = detail::reduce_over(a, axes, true, ReduceKind::Mean, [&](const Idx &i) { Expr c = centered(i); return c * c; },
                                     "var", dtypes::f32);
        auto y = compute(op, xs, [&](const Idx &i) {
          Expr r = centered(i) * lang::rsqrt(v.at(detail::at_axis0(i, axes)) + float(eps));
          Idx pi(i.end() - normalized_ndim, i.end());
          if (weight) r = r * lang::cast(w.at(pi), dtypes::f32);
          if (bias) r = r + lang::cast(b.at(pi), dtypes::f32);
          return r;
        }, x.dtype());
        return Task{op, inputs, {y}, attrs, {}};
      },
      ins)[0];
}

HIDET_INLINE Tensor rms_norm(const Tensor &x, int normalized_ndim, const std::optional<Tensor> &weight,
                             double eps) {
  return layer_norm(x, normalized_ndim, weight, std::nullopt, eps, true);
}

HIDET_INLINE Tensor group_norm(const Tensor &x, std::int64_t num_groups, const std::optional<Tensor> &weight,
                               const std::optional<Tensor> &bias, double eps) {
  const char *op = "group_norm";
  if (detail::has_symbolic_extents({x})) // the batch or the spatial extents may be symbols
    return detail::trace_by_probing(op, detail::with_optional({x}, {weight, bias}), [=](const std::vector<Tensor> &in) {
      auto [w, b] = detail::optional_pair(in, 1, weight.has_value(), bias.has_value());
      return group_norm(in[0], num_groups, w, b, eps);
    });
  detail::require_float(op, x);
  if (x.ndim() < 2)
    throw ValueError(str_cat(op, ": expected x of shape [N, C, *] (at least 2-D), got ", shape_str(x.shape())));
  std::int64_t N = x.shape()[0], C = x.shape()[1];
  if (num_groups <= 0 || C % num_groups != 0)
    throw ValueError(str_cat(op, ": num_groups ", num_groups, " must be positive and divide the ", C,
                             " channels of x of shape ", shape_str(x.shape())));
  detail::check_param(op, "weight", weight, {C}, x.dtype());
  detail::check_param(op, "bias", bias, {C}, x.dtype());
  std::int64_t spatial = 1;
  for (int d = 2; d < x.ndim(); ++d) spatial *= x.shape()[d];
  std::int64_t cg = C / num_groups, M = cg * spatial;
  Shape view{N, num_groups, M};
  std::string attrs = str_cat("num_groups=", num_groups, ", eps=", detail::fmt_double(eps), ", weight=", bool(weight),
                              ", bias=", bool(bias));
  std::vector<Tensor> ins{x.reshape(view)};
  if (weight) ins.push_back(*weight);
  if (bias) ins.push_back(*bias);
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", view, x.dtype());
        std::vector<TensorDef> inputs{a};
        TensorDef w, b;
        if (weight) inputs.push_back(w = input("weight", {C}, x.dtype()));
        if (bias) inputs.push_back(b = input("bias", {C}, x.dtype()));
        std::vector<int> axes{2};
        auto ld = [&](const Idx &i) { return lang::cast(a.at(i), dtypes::f32); };
        auto mu = detail::reduce_over(a, axes, true, ReduceKind::Mean, ld, "mean", dtypes::f32);
        auto v = detail::reduce_over(a, axes, true, ReduceKind::Mean, [&](const Idx &i) {
          Expr c = ld(i) - mu.at(detail::at_axis0(i, axes));
          return c * c;
        }, "var", dtypes::f32);
        auto y = compute(op, view, [&](const Idx &i) {
          Idx k = detail::at_axis0(i, axes);
          Expr r = (ld(i) - mu.at(k)) * lang::rsqrt(v.at(k) + float(eps));
          Expr ch = i[1] * int(cg) + i[2] / int(std::max<std::int64_t>(spatial, 1));
          if (weight) r = r * lang::cast(w.at({ch}), dtypes::f32);
          if (bias) r = r + lang::cast(b.at({ch}), dtypes::f32);
          return r;
        }, x.dtype());
        return Task{op, inputs, {y}, attrs, {}};
      },
      ins)[0]
      .reshape(x.shape());
}

HIDET_INLINE Tensor group_norm_nhwc(const Tensor &x, std::int64_t num_groups, const std::optional<Tensor> &weight,
                                    const std::optional<Tensor> &bias, double eps) {
  const char *op = "group_norm_nhwc";
  detail::require_float(op, x);
  if (x.ndim() < 3)
    throw ValueError(str_cat(op, ": expected x of shape [N, *, C] (at least 3-D), got ", shape_str(x.shape())));
  if (num_groups != 1)
    throw ValueError(str_cat(op, ": num_groups ", num_groups, " is not supported channels-last (one group only: ",
                             "a group's channels are not contiguous there); use group_norm on [N, C, *]"));
  const std::int64_t N = x.shape()[0], C = x.shape().back(), M = x.numel() / std::max<std::int64_t>(N, 1);
  detail::check_param(op, "weight", weight, {C}, x.dtype());
  detail::check_param(op, "bias", bias, {C}, x.dtype());
  // Pieces of at least 1024 elements, enough of them for about 128 blocks over the batch.
  std::int64_t pieces = 1;
  for (std::int64_t k = 2; k <= 256 && M / k >= 1024; ++k)
    if (M % k == 0) {
      pieces = k;
      if (N * k >= 128) break;
    }
  const bool f32 = x.dtype() == dtypes::f32;
  auto as_f32 = [&](const Tensor &t) { return f32 ? t : cast(t, dtypes::f32); };
  // One pass over x: each piece's mean of x and of x * x (one reduction over both, side by side),
  // then per sample the means of the pieces' (equal sizes: exact); var = E[x^2] - E[x]^2 in f32,
  // clamped at 0. The statistics' arithmetic is element-wise: fusion puts it in the normalizing
  // kernel, which reads the [N, 2] means; three kernels in all.
  Tensor parts = as_f32(x.reshape({N, pieces, M / pieces}));
  Tensor means = mean(mean(concat({parts, parts * parts}, 1), {2}).reshape({N, 2, pieces}), {2}); // [N, 2]
  std::vector<std::int64_t> stat_shape(std::size_t(x.ndim()), 1);
  stat_shape[0] = N;
  Tensor mu = slice(means, {1}, {0}, {1}).reshape(stat_shape);
  Tensor ex2 = slice(means, {1}, {1}, {2}).reshape(stat_shape);
  Tensor y = (as_f32(x) - mu) * rsqrt(relu(ex2 - mu * mu) + eps);
  if (weight) y = y * as_f32(*weight);
  if (bias) y = y + as_f32(*bias);
  return f32 ? y : cast(y, x.dtype());
}

HIDET_INLINE Tensor batch_norm(const Tensor &x, const Tensor &running_mean, const Tensor &running_var,
                               const std::optional<Tensor> &weight, const std::optional<Tensor> &bias,
                               double eps) {
  const char *op = "batch_norm";
  if (detail::has_symbolic_extents({x})) // the batch or the spatial extents may be symbols
    return detail::trace_by_probing(op, detail::with_optional({x, running_mean, running_var}, {weight, bias}),
                                    [=](const std::vector<Tensor> &in) {
                                      auto [w, b] = detail::optional_pair(in, 3, weight.has_value(), bias.has_value());
                                      return batch_norm(in[0], in[1], in[2], w, b, eps);
                                    });
  detail::require_float(op, x);
  if (x.ndim() < 2)
    throw ValueError(str_cat(op, ": expected x of shape [N, C, *] (at least 2-D), got ", shape_str(x.shape())));
  std::int64_t C = x.shape()[1];
  detail::check_param(op, "running_mean", running_mean, {C}, x.dtype());
  detail::check_param(op, "running_var", running_var, {C}, x.dtype());
  detail::check_param(op, "weight", weight, {C}, x.dtype());
  detail::check_param(op, "bias", bias, {C}, x.dtype());
  std::string attrs = str_cat("eps=", detail::fmt_double(eps), ", weight=", bool(weight), ", bias=", bool(bias));
  std::vector<Tensor> ins{x, running_mean, running_var};
  if (weight) ins.push_back(*weight);
  if (bias) ins.push_back(*bias);
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", x.shape(), x.dtype());
        auto m = input("running_mean", {C}, x.dtype());
        auto v = input("running_var", {C}, x.dtype());
        std::vector<TensorDef> inputs{a, m, v};
        TensorDef w, b;
        if (weight) inputs.push_back(w = input("weight", {C}, x.dtype()));
        if (bias) inputs.push_back(b = input("bias", {C}, x.dtype()));
        auto f = [](const TensorDef &t, const Expr &c) { return lang::cast(t.at({c}), dtypes::f32); };
        auto y = compute(op, x.shape(), [&](const Idx &i) {
          Expr r = (lang::cast(a.at(i), dtypes::f32) - f(m, i[1])) * lang::rsqrt(f(v, i[1]) + float(eps));
          if (weight) r = r * f(w, i[1]);
          if (bias) r = r + f(b, i[1]);
          return r;
        }, x.dtype());
        return Task{op, inputs, {y}, attrs, {}};
      },
      ins)[0];
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
