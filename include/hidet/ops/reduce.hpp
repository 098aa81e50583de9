// Reductions over any set of axes, with keepdims: sum, mean, max, min, prod, all, any, var, std,
// argmax, argmin; and the scans cumsum, cumprod, cummax, cummin. Negative axes count from the end; an empty axis list reduces over
// every axis. Accumulation: f32 for f16/bf16; i64 for integer and bool sum/prod; mean of
// integers is f32.
#pragma once

#include <algorithm>
#include <optional>
#include <utility>

#include "hidet/ops/elementwise.hpp"

namespace hidet::ops {

namespace detail {

/// Normalizes `axis` for a tensor of rank `ndim`; an error naming the operator when out of range.
int normalize_axis(const std::string &op, int axis, std::size_t ndim, const SymShape &shape);
inline int normalize_axis(const std::string &op, int axis, std::size_t ndim, const Shape &shape) {
  return normalize_axis(op, axis, ndim, to_sym_shape(shape));
}

/// normalize_axis where a 0-d tensor counts as one element along axis 0 (given as 0 or -1, as
/// PyTorch's sort, scans and scatter take a scalar's dim).
int normalize_axis_or_scalar(const std::string &op, int axis, const SymShape &shape);

/// Normalized, sorted, unique axes (all axes when empty).
std::vector<int> normalize_axes(const std::string &op, const std::vector<int> &axes, const SymShape &shape);
inline std::vector<int> normalize_axes(const std::string &op, const std::vector<int> &axes, const Shape &shape) {
  return normalize_axes(op, axes, to_sym_shape(shape));
}

/// The output shape of a reduction over `axes` (S: Shape or SymShape).
template <class S> S reduced_shape(const S &s, const std::vector<int> &axes, bool keepdims) {
  S r;
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
  SymShape ext;
  for (int a : axes) ext.push_back(x.sym_shape()[std::size_t(a)]);
  SymShape out = reduced_shape(x.sym_shape(), axes, keepdims);
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

} // namespace detail

/// Sum over `axes` (all when empty).
Tensor sum(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false);
/// Mean over `axes` (all when empty); integer inputs give f32.
Tensor mean(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false);
/// Maximum over `axes` (NaN propagates); an error for an empty reduction.
Tensor max(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false);
/// Minimum over `axes` (NaN propagates); an error for an empty reduction.
Tensor min(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false);
/// Product over `axes`.
Tensor prod(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false);
/// True where every element over `axes` is non-zero (bool result).
Tensor all(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false);
/// True where some element over `axes` is non-zero (bool result).
Tensor any(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false);
/// Index (i64) of the maximum along `axis` (the first one among equal values).
Tensor argmax(const Tensor &x, int axis, bool keepdims = false);
/// Index (i64) of the minimum along `axis` (the first one among equal values).
Tensor argmin(const Tensor &x, int axis, bool keepdims = false);

/// Variance over `axes` with Bessel's `correction` (1: unbiased, PyTorch's default).
Tensor var(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false, int correction = 1, bool take_sqrt = false);
/// Standard deviation over `axes` with Bessel's `correction`.
Tensor std(const Tensor &x, std::vector<int> axes = {}, bool keepdims = false, int correction = 1);

// Inclusive scans along `axis` (cumsum, cumprod, cummax, cummin) share one kernel: the tensor is
// viewed as [outer, len, inner]; one thread scans one (outer, inner) line, consecutive threads on
// consecutive inner positions (linear work per row; over symbolic extents one kernel for every
// value of the symbols).

/// Inclusive cumulative sum along `axis`. Integers and bool accumulate in i64 (u64 for unsigned);
/// f16/bf16 in f32 and round each prefix once.
Tensor cumsum(const Tensor &x, int axis);
/// Inclusive cumulative product along `axis`; dtypes as cumsum.
Tensor cumprod(const Tensor &x, int axis);
/// The running maximum along `axis` and the i64 index where it was taken (PyTorch's: the last of
/// equal maxima; a NaN propagates and each later NaN takes its own index). Keeps x's dtype.
std::pair<Tensor, Tensor> cummax(const Tensor &x, int axis);
/// The running minimum along `axis` and its i64 index (as cummax).
std::pair<Tensor, Tensor> cummin(const Tensor &x, int axis);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/reduce.ipp"
#endif
