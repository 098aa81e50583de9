// Definitions for hidet/ops/create.hpp.
#pragma once

#include "hidet/ops/create.hpp"

#include <algorithm>
#include <cmath>

#include "hidet/ops/cache.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

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

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor full(const Shape &shape, double value, DataType dtype, Device device) {
  // No kernel where a memset (or the host) writes the element: tracing and optimizing a model make
  // small constants of many shapes, and a kernel per shape was an NVRTC compile each on the first
  // call's critical path. (A negative extent is named by the kernel's path.)
  if (std::all_of(shape.begin(), shape.end(), [](std::int64_t d) { return d >= 0; })) {
    Tensor t = ::hidet::empty(shape, dtype, device);
    unsigned char elem[8] = {};
    runtime::detail::store_as(elem, dtype, value);
    if (runtime::detail::fill_without_kernel(t, elem)) return t;
  }
  return detail::generate("full", "value=" + detail::fmt_double(value), shape, dtype, device,
                          [&](const Idx &) { return Expr(ir::ConstantNode::make_float(dtypes::f64, value)); });
}

HIDET_INLINE Tensor arange(double start, double stop, double step, DataType dtype, Device device) {
  if (step == 0) throw ValueError("arange: step must not be 0");
  std::int64_t n = std::max<std::int64_t>(0, std::int64_t(std::ceil((stop - start) / step)));
  return detail::generate("arange", str_cat("start=", detail::fmt_double(start), ", step=", detail::fmt_double(step)), {n}, dtype,
                          device, [&](const Idx &i) { return Expr(lang::cast(i[0], dtypes::f64) * step + start); });
}

HIDET_INLINE Tensor arange_dims(const Dim &start, const Dim &stop, std::int64_t step, DataType dtype,
                               const std::vector<Tensor> &shape_of) {
  Device device = shape_of.empty() ? Device::cuda() : detail::common_device("arange", shape_of);
  if (start.is_constant() && stop.is_constant())
    return arange(double(start.value()), double(stop.value()), double(step), dtype, device);
  if (step <= 0)
    throw ValueError(str_cat("arange: symbolic bounds [", start, ", ", stop, ") take a positive step, got ", step));
  for (const Dim &bound : {start, stop})
    for (const auto &name : bound.symbols()) {
      bool found = false;
      for (const auto &x : shape_of)
        for (const Dim &d : x.sym_shape())
          for (const auto &n : d.symbols()) found = found || n == name;
      if (!found)
        throw ValueError(str_cat("arange: the symbol ", name, " of the bounds [", start, ", ", stop,
                                 ") is no extent of the tensors given in shape_of"));
    }
  Dim length = (stop - start + Dim(step - 1)) / Dim(step); // stop >= start: as dynamo guards sizes
  std::string attrs = str_cat("start=", start, ", stop=", stop, ", step=", step, ", dtype=", dtype);
  return run_task(
      str_cat("arange{", attrs, "}"),
      [&] {
        std::vector<TensorDef> refs;
        for (std::size_t i = 0; i < shape_of.size(); ++i)
          refs.push_back(input(str_cat("shape_of", i), shape_of[i].sym_shape(), shape_of[i].dtype()));
        auto y = compute("arange", Extents{length}, [&](const Idx &i) {
          return Expr(lang::cast(i[0], dtypes::f64) * double(step) + lang::cast(dim_expr(start), dtypes::f64));
        }, dtype);
        return Task{"arange", refs, {y}, attrs, {}};
      },
      shape_of)[0];
}

HIDET_INLINE Tensor linspace(double start, double stop, std::int64_t num, DataType dtype, Device device) {
  if (num < 0) throw ValueError(str_cat("linspace: num must be non-negative, got ", num));
  double step = num > 1 ? (stop - start) / double(num - 1) : 0;
  return detail::generate("linspace", str_cat("start=", detail::fmt_double(start), ", step=", detail::fmt_double(step)), {num}, dtype,
                          device, [&](const Idx &i) { return Expr(lang::cast(i[0], dtypes::f64) * step + start); });
}

HIDET_INLINE Tensor full_like(const Tensor &x, double value) {
  if (detail::has_symbolic_extents({x})) // x gives the shape only
    return detail::trace_symbolic(str_cat("full_like{value=", value, "}"), {x}, x.sym_shape(), x.dtype(),
                                  [value](const std::vector<Tensor> &in) { return full_like(in[0], value); });
  return ops::full(x.shape(), value, x.dtype(), x.device());
}

HIDET_INLINE Tensor zeros_like(const Tensor &x) { return full_like(x, 0); }

HIDET_INLINE Tensor ones_like(const Tensor &x) { return full_like(x, 1); }

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
