// Layout transforms as injective compute definitions (each output element reads one input
// element): reshape, flatten, squeeze, unsqueeze, transpose/permute, broadcast_to, concat,
// slice with steps, flip, take (gather along an axis), pad, tile, split. Each returns new tensors
// (copies).
#pragma once

#include "hidet/ops/reduce.hpp"

namespace hidet::ops {

/// The same elements in a new shape (one dimension may be -1: inferred).
Tensor reshape(const Tensor &x, Shape shape);
/// reshape() to extents that may be symbols, ops::reshape(x, {n, s, 12, 64}) (x symbolic): a
/// Reshape node that evaluates them when the graph runs.
template <class D = Dim> Tensor reshape(const Tensor &x, const std::vector<D> &shape) { return x.reshape(shape); }
/// Merges axes start..end (inclusive) into one.
Tensor flatten(const Tensor &x, int start = 0, int end = -1);
/// Removes the given axes of size 1 (all size-1 axes when empty).
Tensor squeeze(const Tensor &x, std::vector<int> axes = {});
/// Inserts an axis of size 1 at `axis` (in the result's numbering).
Tensor unsqueeze(const Tensor &x, int axis);
/// Reorders the axes: result axis d is input axis perm[d].
Tensor permute(const Tensor &x, std::vector<int> perm);
/// Swaps two axes (the last two by default).
Tensor transpose(const Tensor &x, int a = -2, int b = -1);
/// Broadcasts x to `shape` (numpy rules).
Tensor broadcast_to(const Tensor &x, const Shape &shape);
/// broadcast_to() a shape whose extents may be symbols, ops::broadcast_to(x, {n, 3}) (a symbol
/// broadcasts only from 1 or itself).
Tensor broadcast_to_dims(const Tensor &x, const SymShape &shape);
template <class D = Dim> Tensor broadcast_to(const Tensor &x, const std::vector<D> &shape) {
  return broadcast_to_dims(x, SymShape(shape.begin(), shape.end()));
}
/// x[start:stop:step] along each of `axes` (negative start/stop count from the end and are
/// clamped like Python slices; step > 0).
Tensor slice(const Tensor &x, std::vector<int> axes, Shape starts, Shape stops, Shape steps = {});
/// Reverses the order of elements along `axes`.
Tensor flip(const Tensor &x, std::vector<int> axes);
/// Joins tensors of the same dtype along `axis` (other dimensions must match).
Tensor concat(const std::vector<Tensor> &xs, int axis);
/// concat of tensors with data by one shape-generic kernel per count of inputs, rank, axis and
/// dtype (the extents are the kernel's parameters): for graph passes joining many constants of
/// many shapes while they optimize (sibling products' weights side by side), where a kernel per
/// shape would cost an NVRTC compile each and joining on the host a copy through doubles.
Tensor concat_generic(const std::vector<Tensor> &xs, int axis);
/// Gathers along `axis`: out has x's shape with axis replaced by indices' shape (indices are
/// integers; negative indices count from the end; out-of-range indices are clamped).
Tensor take(const Tensor &x, const Tensor &indices, int axis = 0);
/// index_select(x, axis, indices) == take(x, indices, axis) with 1-D indices.
Tensor index_select(const Tensor &x, int axis, const Tensor &indices);
/// Embedding lookup: rows of `weight` [num, dim] picked by integer `indices` -> indices.shape + [dim].
Tensor embedding(const Tensor &indices, const Tensor &weight);

/// PyTorch's gather: out[i] = x[i with i[axis] replaced by index[i]]; `index` (integers; negative
/// ones count from the end, others out of range are clamped, as take's) has x's rank and extents
/// no larger than x's off `axis`; out has its shape.
Tensor gather(const Tensor &x, int axis, const Tensor &index);

/// Constant padding, PyTorch's F.pad convention: `pads` holds (before, after) pairs starting from
/// the last axis: {last_before, last_after, second_last_before, ...}; pads are non-negative.
Tensor pad(const Tensor &x, const Shape &pads, double value = 0);

/// Repeats x `reps[d]` times along each axis (numpy.tile: a shorter side is padded with 1s in
/// front).
Tensor tile(const Tensor &x, Shape reps);

/// Splits x along `axis` into pieces of the given sizes (they must add up to the axis length).
std::vector<Tensor> split(const Tensor &x, const Shape &sizes, int axis = 0);
/// Splits x along `axis` into pieces of `chunk` elements (the last one may be shorter), like
/// torch.split with an integer.
std::vector<Tensor> split(const Tensor &x, std::int64_t chunk, int axis = 0);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/transform.ipp"
#endif
