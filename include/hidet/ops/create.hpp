// Tensor creation computed on the device: full, arange, linspace and the *_like forms.
#pragma once

#include "hidet/ops/elementwise.hpp"

namespace hidet::ops {

/// A tensor of `shape` filled with `value` (converted to dtype).
Tensor full(const Shape &shape, double value, DataType dtype = dtypes::f32, Device device = Device::cuda());
/// start, start + step, ... below stop (like numpy.arange).
Tensor arange(double start, double stop, double step = 1, DataType dtype = dtypes::i64, Device device = Device::cuda());
/// arange() whose bounds may be symbolic extents, arange_dims(0, s, 1, i64, {x}) for the sequence
/// length s of x [n, s, 768]: `shape_of` are tensors whose extents give the bounds' symbols (their
/// elements are not read). On constant bounds, arange() itself; otherwise a shape-generic task of
/// extent ceil((stop - start) / step), compiled once for every value of the symbols. step > 0.
Tensor arange_dims(const Dim &start, const Dim &stop, std::int64_t step, DataType dtype,
                   const std::vector<Tensor> &shape_of);
/// `num` evenly spaced values from start to stop inclusive.
Tensor linspace(double start, double stop, std::int64_t num, DataType dtype = dtypes::f32, Device device = Device::cuda());
/// full(x.shape(), value, x.dtype(), x.device())
Tensor full_like(const Tensor &x, double value);
Tensor zeros_like(const Tensor &x);
Tensor ones_like(const Tensor &x);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/create.ipp"
#endif
