// Tensor creation computed on the device: full, arange, linspace and the *_like forms.
#pragma once

#include "hidet/ops/elementwise.hpp"

namespace hidet::ops {

namespace detail {
template <class F>
Tensor generate(const std::string &op, const std::string &attrs, const Shape &shape, DataType d, Device dev, F f) {
  return run_task(
      str_cat(op, "{", attrs, ", shape=", ints_str(shape), ", dtype=", d, "}"),
      [&] {
        auto y = compute(op, shape, [&](const Idx &i) { return f(i); }, d);
        return Task{op, {}, {y}, attrs, {}};
      },
      {}, dev)[0];
}
} // namespace detail

/// A tensor of `shape` filled with `value` (converted to dtype).
inline Tensor full(const Shape &shape, double value, DataType dtype = dtypes::f32, Device device = Device::cuda()) {
  return detail::generate("full", "value=" + detail::fmt_double(value), shape, dtype, device,
                          [&](const Idx &) { return Expr(ir::ConstantNode::make_float(dtypes::f64, value)); });
}
/// start, start + step, ... below stop (like numpy.arange).
inline Tensor arange(double start, double stop, double step = 1, DataType dtype = dtypes::i64, Device device = Device::cuda()) {
  if (step == 0) throw ValueError("arange: step must not be 0");
  std::int64_t n = std::max<std::int64_t>(0, std::int64_t(std::ceil((stop - start) / step)));
  return detail::generate("arange", str_cat("start=", detail::fmt_double(start), ", step=", detail::fmt_double(step)), {n}, dtype,
                          device, [&](const Idx &i) { return Expr(lang::cast(i[0], dtypes::f64) * step + start); });
}
/// `num` evenly spaced values from start to stop inclusive.
inline Tensor linspace(double start, double stop, std::int64_t num, DataType dtype = dtypes::f32, Device device = Device::cuda()) {
  if (num < 0) throw ValueError(str_cat("linspace: num must be non-negative, got ", num));
  double step = num > 1 ? (stop - start) / double(num - 1) : 0;
  return detail::generate("linspace", str_cat("start=", detail::fmt_double(start), ", step=", detail::fmt_double(step)), {num}, dtype,
                          device, [&](const Idx &i) { return Expr(lang::cast(i[0], dtypes::f64) * step + start); });
}
/// full(x.shape(), value, x.dtype(), x.device())
inline Tensor full_like(const Tensor &x, double value) { return ops::full(x.shape(), value, x.dtype(), x.device()); }
inline Tensor zeros_like(const Tensor &x) { return full_like(x, 0); }
inline Tensor ones_like(const Tensor &x) { return full_like(x, 1); }

} // namespace hidet::ops
