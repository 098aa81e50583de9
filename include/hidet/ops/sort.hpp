// Sorting and selection along an axis: sort, argsort, topk (PyTorch's semantics: indices are i64,
// NaN sorts as the largest value, equal values keep their order), and binary search in sorted rows
// (searchsorted, bucketize).
//
// The kernels (one plan per shape and dtype; over symbolic extents, a node that runs them at each
// run's shape): the tensor is viewed as rows along the axis. A block sorts a chunk of a row in
// shared memory with a bitonic network over (value, index) pairs, a total order, so the result is
// stable and the same in every direction (chunks of up to 4096 elements, 2048 for 8-byte dtypes;
// padding sorts last). Longer rows are then merged pairwise, one launch per pass: each element
// finds its place in the merged run by a binary search in the partner run (rank merge). topk keeps
// only the first k of every chunk and of every merged run, so a 128256-element row with k = 50
// sorts 32 chunks and then merges runs of 50.
#pragma once

#include <utility>

#include "hidet/ops/reduce.hpp"

namespace hidet::ops {

/// Sorts x along `axis` (ascending, or descending): returns (values, indices), indices i64 into
/// the axis. Always stable (`stable` is accepted for PyTorch's signature); NaN is the largest
/// value. Every dtype (bool: false < true).
std::pair<Tensor, Tensor> sort(const Tensor &x, int axis = -1, bool descending = false,
                               bool stable = true);
/// The indices (i64) of sort(x, axis, descending).
Tensor argsort(const Tensor &x, int axis = -1, bool descending = false, bool stable = true);
/// The k largest (or smallest) elements along `axis` and their i64 indices, in sorted order
/// (`sorted` = false gives the same order); ties keep their order along the axis. 0 <= k <= the
/// axis extent.
std::pair<Tensor, Tensor> topk(const Tensor &x, std::int64_t k, int axis = -1, bool largest = true,
                               bool sorted = true);

/// For each of `values`, the index (i64) where it would be inserted into its row of
/// `sorted_sequence` (sorted ascending along the last axis) to keep the row sorted: the first
/// such place, or the last one when `right`. A 1-D sequence serves every value; otherwise the
/// leading extents of both must be equal. Comparisons as PyTorch's (left: move right while
/// !(e >= v); right: while !(e > v)); values of another dtype than the sequence compare in f64
/// (i64 when both are integers).
Tensor searchsorted(const Tensor &sorted_sequence, const Tensor &values, bool right = false);
/// torch.bucketize: searchsorted(boundaries, x, right) with 1-D boundaries.
Tensor bucketize(const Tensor &x, const Tensor &boundaries, bool right = false);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/sort.ipp"
#endif
