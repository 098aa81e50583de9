// Definitions for hidet/ops/pool.hpp.
#pragma once

#include "hidet/ops/pool.hpp"

#include "hidet/ops/cache.hpp"
#include "hidet/ops/schedule_reduce.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

/// Window parameters of a 2-D pooling, per (height, width).
struct Pool2dAttrs {
  BOOST_HANA_DEFINE_STRUCT(Pool2dAttrs, (std::vector<std::int64_t>, kernel), (std::vector<std::int64_t>, stride),
                           (std::vector<std::int64_t>, padding), (std::vector<std::int64_t>, dilation), (bool, ceil_mode),
                           (bool, count_include_pad));
};

} // namespace hidet::ops

namespace hidet::ops::detail {

/// The output extent of one pooled axis (see the top of the file).
HIDET_INLINE std::int64_t pool_out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d, bool ceil_mode) {
  // PyTorch's rule, its division rounding down: with ceil_mode a window longer than the padded
  // input still gives one output (transformers' EfficientNet pools 1x1 maps with a kernel of 2560)
  const std::int64_t span = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  std::int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return std::max<std::int64_t>(out, 0);
}

/// Validates the arguments of a 2-D pooling and returns the output shape (NCHW, or NHWC when
/// channels_last).
HIDET_INLINE Shape pool2d_shape(const char *op, const Tensor &x, const Pool2dAttrs &a, bool channels_last) {
  if (x.ndim() != 4)
    throw ValueError(str_cat(op, ": expected an ", channels_last ? "NHWC" : "NCHW", " tensor (4-D), got shape ",
                             shape_str(x.shape()), " (", x.dtype(), ")"));
  if (x.dtype().is_bool())
    throw ValueError(str_cat(op, ": dtype bool is not supported (shape ", shape_str(x.shape()), "); cast it first"));
  for (int i = 0; i < 2; ++i) {
    if (a.kernel[i] <= 0 || a.stride[i] <= 0 || a.dilation[i] <= 0 || a.padding[i] < 0)
      throw ValueError(str_cat(op, ": kernel ", ints_str(a.kernel), ", stride ", ints_str(a.stride), " and dilation ",
                               ints_str(a.dilation), " must be positive and padding ", ints_str(a.padding), " non-negative"));
    if (2 * a.padding[i] > a.kernel[i])
      throw ValueError(str_cat(op, ": padding ", ints_str(a.padding), " must be at most half the kernel ", ints_str(a.kernel)));
  }
  const int h_axis = channels_last ? 1 : 2;
  Shape out{x.shape()[0]};
  if (!channels_last) out.push_back(x.shape()[1]);
  for (int i = 0; i < 2; ++i)
    out.push_back(pool_out_size(x.shape()[h_axis + i], a.kernel[i], a.stride[i], a.padding[i], a.dilation[i], a.ceil_mode));
  if (channels_last) out.push_back(x.shape()[3]);
  if ((out[h_axis] == 0 || out[h_axis + 1] == 0) && x.numel() > 0)
    throw ValueError(str_cat(op, ": the window ", ints_str(a.kernel), " (dilation ", ints_str(a.dilation), ", padding ",
                             ints_str(a.padding), ") is larger than the padded input of shape ", shape_str(x.shape())));
  return out;
}

HIDET_INLINE std::vector<std::int64_t> pair_of(const char *op, const char *what, std::vector<std::int64_t> v) {
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) throw ValueError(str_cat(op, ": ", what, " must have 1 or 2 values, got ", ints_str(v)));
  return v;
}

/// x's shape with its batch (axis 0) the symbolic `batch`: the shape of a pooling's task that
/// serves every batch (batch_generic_pool).
HIDET_INLINE SymShape with_batch(const Shape &shape, const Dim &batch) {
  SymShape s = to_sym_shape(shape);
  s.at(0) = batch;
  return s;
}

/// Runs a pooling's task built over a symbolic batch (`make_task(batch)`) on concrete x when a
/// graph that binds the batch's symbols runs (a shape-generic graph's node: one kernel for every
/// batch at these channels and image sizes); nullopt otherwise (the caller runs per shape).
template <class MakeTask>
std::optional<Tensor> batch_generic_pool(const std::string &key, const Tensor &x, const Dim &batch, MakeTask &&make_task) {
  if (batch.is_constant() || x.is_symbolic() || !SymbolBinding::current()) return std::nullopt;
  Task task = make_task(batch);
  return run_symbolic_task(str_cat(key, "|batch=", batch.str()), task, {x}, std::nullopt)[0];
}

/// The task of a 2-D pooling of x (shape xs: only the batch may be symbolic) to `out`.
HIDET_INLINE Task pool2d_task(const char *op, const SymShape &xs, DataType dt, const Pool2dAttrs &a, bool is_max,
                              bool channels_last, const SymShape &out) {
  const int h_axis = channels_last ? 1 : 2; // of the height; the width follows it
  const std::string attrs = attrs_str(a);
  auto in = input("x", xs, dt);
  std::int64_t H = xs[std::size_t(h_axis)].value(), W = xs[std::size_t(h_axis) + 1].value();
  DataType cd = is_max ? dt : (dt.is_float() ? compute_dtype(dt) : dtypes::f32);
  // Taps past the padded input for every output (a window longer than it, under ceil_mode) are
  // not visited: the first output's window reaches row H - 1 + pad at most.
  std::int64_t taps[2];
  for (int d = 0; d < 2; ++d)
    taps[d] = std::min(a.kernel[d], (xs[std::size_t(h_axis + d)].value() - 1 + a.padding[d]) / a.dilation[d] + 1);
  auto r = reduce(out, {taps[0], taps[1]}, [&](const Idx &o, const Idx &k) {
    Expr h = o[h_axis] * int(a.stride[0]) - int(a.padding[0]) + k[0] * int(a.dilation[0]);
    Expr w = o[h_axis + 1] * int(a.stride[1]) - int(a.padding[1]) + k[1] * int(a.dilation[1]);
    Expr ok = h >= 0 && h < int(H) && w >= 0 && w < int(W);
    Expr hc = lang::min(lang::max(h, 0), int(H - 1)), wc = lang::min(lang::max(w, 0), int(W - 1));
    Expr v = lang::cast(channels_last ? in.at({o[0], hc, wc, o[3]}) : in.at({o[0], o[1], hc, wc}), cd);
    Expr pad = Expr(reduce_init(is_max ? ReduceKind::Max : ReduceKind::Sum, cd));
    return lang::select(ok, v, pad);
  }, is_max ? ReduceKind::Max : ReduceKind::Sum, std::nullopt, is_max ? dt : cd, is_max ? std::string(op) : "window_sum");
  if (is_max) return Task{op, {in}, {r}, attrs, {}};
  auto y = compute(op, out, [&](const Idx &i) {
    Expr cnt[2];
    for (int d = 0; d < 2; ++d) {
      std::int64_t n = xs[std::size_t(h_axis + d)].value(), p = a.padding[d];
      Expr start = i[h_axis + d] * int(a.stride[d]) - int(p);
      Expr end = lang::min(start + int(a.kernel[d]), int(n + p));
      if (!a.count_include_pad) start = lang::max(start, 0), end = lang::min(end, int(n));
      cnt[d] = end - start;
    }
    return lang::cast(r.at(i), dtypes::f32) / lang::cast(cnt[0] * cnt[1], dtypes::f32);
  }, dt.is_float() ? dt : dtypes::f32);
  return Task{op, {in}, {y}, attrs, {}};
}

/// A 2-D pooling over NCHW x, or NHWC x when channels_last (the same window arithmetic; only the
/// positions of the axes differ). Traced on symbolic extents, its node runs one kernel for every
/// batch at each channel count and image size (batch_generic_pool) inside a shape-generic graph.
HIDET_INLINE Tensor pool2d(const char *op, const Tensor &x, Pool2dAttrs a, bool is_max, bool channels_last,
                           const Dim &batch = Dim(0)) {
  if (has_symbolic_extents({x})) {
    std::optional<SymShape> expected; // the window arithmetic on symbolic image sizes (not ceil_mode's)
    SymShape xs = x.sym_shape();
    auto pair = [](std::vector<std::int64_t> v, const std::vector<std::int64_t> &dflt) {
      if (v.empty()) v = dflt;
      if (v.size() == 1) v.push_back(v[0]);
      return v;
    };
    auto k = pair(a.kernel, {}), st = pair(a.stride, k), p = pair(a.padding, {0}), d = pair(a.dilation, {1});
    if (xs.size() == 4 && !a.ceil_mode && k.size() == 2 && st.size() == 2 && p.size() == 2 && d.size() == 2) {
      const std::size_t h = channels_last ? 1 : 2;
      SymShape out = xs;
      for (std::size_t i = 0; i < 2; ++i) out[h + i] = window_out_extent(xs[h + i], k[i], st[i], p[i], d[i]);
      expected = out;
    }
    const Dim b = xs.empty() ? Dim(0) : xs[0];
    return trace_by_probing(op, {x}, [=](const std::vector<Tensor> &in) { return pool2d(op, in[0], a, is_max, channels_last, b); },
                            expected);
  }
  a.kernel = pair_of(op, "kernel", a.kernel);
  a.stride = pair_of(op, "stride", a.stride.empty() ? a.kernel : a.stride);
  a.padding = pair_of(op, "padding", a.padding);
  a.dilation = pair_of(op, "dilation", a.dilation);
  Shape out = pool2d_shape(op, x, a, channels_last);
  const std::string key = str_cat(op, "{", attrs_str(a), "}");
  if (auto y = batch_generic_pool(key, x, batch, [&](const Dim &b) {
        return pool2d_task(op, with_batch(x.shape(), b), x.dtype(), a, is_max, channels_last, with_batch(out, b));
      }))
    return *y;
  return run_task(key, [&] { return pool2d_task(op, to_sym_shape(x.shape()), x.dtype(), a, is_max, channels_last, to_sym_shape(out)); },
                  {x})[0];
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor max_pool2d(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride,
                               std::vector<std::int64_t> padding, std::vector<std::int64_t> dilation, bool ceil_mode) {
  return detail::pool2d("max_pool2d", x, Pool2dAttrs{kernel, stride, padding, dilation, ceil_mode, true}, true, false);
}

HIDET_INLINE Tensor max_pool2d_nhwc(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride,
                                    std::vector<std::int64_t> padding, std::vector<std::int64_t> dilation, bool ceil_mode) {
  return detail::pool2d("max_pool2d_nhwc", x, Pool2dAttrs{kernel, stride, padding, dilation, ceil_mode, true}, true, true);
}

HIDET_INLINE Tensor avg_pool2d(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride,
                               std::vector<std::int64_t> padding, bool ceil_mode, bool count_include_pad,
                               std::vector<std::int64_t> dilation) {
  return detail::pool2d("avg_pool2d", x, Pool2dAttrs{kernel, stride, padding, dilation, ceil_mode, count_include_pad}, false,
                        false);
}

HIDET_INLINE Tensor avg_pool2d_nhwc(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride,
                                    std::vector<std::int64_t> padding, bool ceil_mode, bool count_include_pad,
                                    std::vector<std::int64_t> dilation) {
  return detail::pool2d("avg_pool2d_nhwc", x, Pool2dAttrs{kernel, stride, padding, dilation, ceil_mode, count_include_pad},
                        false, true);
}

namespace detail {
/// The task of adaptive_avg_pool2d (adaptive_max_pool2d when is_max) of x (shape xs: only the
/// batch may be symbolic) to `out`.
HIDET_INLINE Task adaptive_pool2d_task(const char *op, const SymShape &xs, DataType dt,
                                       const std::vector<std::int64_t> &output_size, bool channels_last,
                                       const SymShape &out, bool is_max) {
  const int h_axis = channels_last ? 1 : 2; // of the height; the width follows it
  const std::int64_t H = xs[std::size_t(h_axis)].value(), W = xs[std::size_t(h_axis) + 1].value();
  std::int64_t kmax[2];
  for (int d = 0; d < 2; ++d) {
    std::int64_t n = d ? W : H, o = output_size[std::size_t(d)];
    kmax[d] = 0;
    for (std::int64_t i = 0; i < o; ++i) kmax[d] = std::max(kmax[d], ((i + 1) * n + o - 1) / o - i * n / o);
  }
  auto in = input("x", xs, dt);
  auto bounds = [&](const Expr &i, int d) {
    std::int64_t n = d ? W : H, o = output_size[std::size_t(d)];
    Expr start = i * int(n) / int(o);
    Expr end = ((i + 1) * int(n) + int(o - 1)) / int(o);
    return std::pair{start, end};
  };
  auto r = reduce(out, {kmax[0], kmax[1]}, [&](const Idx &o, const Idx &k) {
    auto [h0, h1] = bounds(o[h_axis], 0);
    auto [w0, w1] = bounds(o[h_axis + 1], 1);
    Expr h = h0 + k[0], w = w0 + k[1];
    Expr hc = lang::min(h, int(H - 1)), wc = lang::min(w, int(W - 1));
    Expr v = lang::cast(channels_last ? in.at({o[0], hc, wc, o[3]}) : in.at({o[0], o[1], hc, wc}), dtypes::f32);
    // (every window holds at least one element: the max never sees only the -inf of the padding)
    return lang::select(h < h1 && w < w1, v, Expr(is_max ? -INFINITY : 0.0f));
  }, is_max ? ReduceKind::Max : ReduceKind::Sum, dtypes::f32, dtypes::f32, is_max ? "window_max" : "window_sum");
  auto y = compute(op, out, [&](const Idx &i) {
    if (is_max) return r.at(i);
    auto [h0, h1] = bounds(i[h_axis], 0);
    auto [w0, w1] = bounds(i[h_axis + 1], 1);
    return r.at(i) / lang::cast((h1 - h0) * (w1 - w0), dtypes::f32);
  }, dt);
  return Task{op, {in}, {y}, "output_size=" + detail::ints_str(output_size), {}};
}

/// adaptive_avg_pool2d (adaptive_max_pool2d when is_max) over NCHW x, or NHWC x when
/// channels_last (a shape-generic graph's node: one kernel for every batch, as pool2d's).
HIDET_INLINE Tensor adaptive_pool2d(const char *op, const Tensor &x, std::vector<std::int64_t> output_size,
                                    bool channels_last, bool is_max, const Dim &batch = Dim(0)) {
  if (has_symbolic_extents({x})) {
    const Dim b = x.sym_shape().empty() ? Dim(0) : x.sym_shape()[0];
    return trace_by_probing(op, {x}, [=](const std::vector<Tensor> &in) {
      return adaptive_pool2d(op, in[0], output_size, channels_last, is_max, b);
    });
  }
  output_size = detail::pair_of(op, "output_size", output_size);
  const char *layout = channels_last ? "NHWC" : "NCHW";
  if (x.ndim() != 4)
    throw ValueError(str_cat(op, ": expected an ", layout, " tensor (4-D), got shape ", shape_str(x.shape()), " (", x.dtype(), ")"));
  if (!x.dtype().is_float())
    throw ValueError(str_cat(op, ": expected a floating-point tensor, got dtype ", x.dtype(), " of shape ", shape_str(x.shape())));
  const int h_axis = channels_last ? 1 : 2; // of the height; the width follows it
  for (int d = 0; d < 2; ++d)
    if (output_size[d] <= 0 || x.shape()[h_axis + d] == 0)
      throw ValueError(str_cat(op, ": output size ", detail::ints_str(output_size),
                               " must be positive and the input's spatial dims non-empty, got input shape ", shape_str(x.shape())));
  Shape out = channels_last ? Shape{x.shape()[0], output_size[0], output_size[1], x.shape()[3]}
                            : Shape{x.shape()[0], x.shape()[1], output_size[0], output_size[1]};
  const std::string key = str_cat(op, "{output_size=", detail::ints_str(output_size), "}");
  if (auto y = batch_generic_pool(key, x, batch, [&](const Dim &b) {
        return adaptive_pool2d_task(op, with_batch(x.shape(), b), x.dtype(), output_size, channels_last,
                                    with_batch(out, b), is_max);
      }))
    return *y;
  return run_task(key, [&] {
    return adaptive_pool2d_task(op, to_sym_shape(x.shape()), x.dtype(), output_size, channels_last, to_sym_shape(out),
                                is_max);
  }, {x})[0];
}
} // namespace detail

HIDET_INLINE Tensor adaptive_avg_pool2d(const Tensor &x, std::vector<std::int64_t> output_size) {
  return detail::adaptive_pool2d("adaptive_avg_pool2d", x, std::move(output_size), false, false);
}

HIDET_INLINE Tensor adaptive_avg_pool2d_nhwc(const Tensor &x, std::vector<std::int64_t> output_size) {
  return detail::adaptive_pool2d("adaptive_avg_pool2d_nhwc", x, std::move(output_size), true, false);
}

HIDET_INLINE Tensor adaptive_max_pool2d(const Tensor &x, std::vector<std::int64_t> output_size) {
  return detail::adaptive_pool2d("adaptive_max_pool2d", x, std::move(output_size), false, true);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
