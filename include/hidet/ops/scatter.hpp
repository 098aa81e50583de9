// Out-of-place updates at indexed positions (PyTorch's scatter, scatter_add, scatter_reduce,
// index_put, index_add): each returns a copy of x with the indexed elements set or combined.
//
// The kernels (one plan per shape and dtype; over symbolic extents, a node that runs them at each
// run's shape): a copy of x into the output, then one thread per source element that computes its
// target and stores there, or combines with an atomic (add, max, min: positions that several
// sources hit are combined in no fixed order, so float sums may differ in the last bits from run
// to run; a plain store keeps one of the values). Atomics need 2, 4 or 8-byte elements: the
// reductions reject int8, uint8 and bool.
//
// Indices: integers; negative ones count from the end of their axis. On every run whose index
// tensors are in host memory (the cpu device, the CPU emulator), eager or as a node of a graph or
// compiled graph (Plan::check: a cache position a model computes inside the graph is checked
// too), an index outside [-n, n) is a ValueError naming the operator, the argument, the value and
// its position; on a GPU the check would need a synchronization, so there the kernels skip such
// entries (nothing outside the output is written, no other element is overwritten) and record the
// first in the device's error record (runtime/device_errors.hpp), which the next launch, graph run
// or synchronize() throws as a ValueError.
#pragma once

#include <cstdint>
#include <optional>

#include "hidet/ops/reduce.hpp"

namespace hidet::ops {

/// How scatter combines a source value with the element it lands on.
enum class ScatterReduce : std::uint8_t {
  None, ///< replace (torch.scatter)
  Add,  ///< add (scatter_add, scatter_reduce "sum")
  Max,  ///< maximum, NaN propagates (scatter_reduce "amax")
  Min   ///< minimum, NaN propagates (scatter_reduce "amin")
};

/// "none", "add", "amax", "amin".
const char *scatter_reduce_name(ScatterReduce r);

/// torch.scatter / scatter_add / scatter_reduce(include_self=True): a copy of x in which, for every
/// position p of `index`, the element at p with p[axis] replaced by index[p] is set to src[p]
/// (None) or combined with it. `index` has x's rank and extents no larger than x's off `axis` and
/// no larger than src's; `src` has x's rank (read at the index's positions) or is 0-d (one value);
/// it is converted to x's dtype.
Tensor scatter(const Tensor &x, int axis, const Tensor &index, const Tensor &src,
               ScatterReduce reduce = ScatterReduce::None);
/// scatter() of one value (torch.scatter's `value` form).
Tensor scatter(const Tensor &x, int axis, const Tensor &index, double value,
               ScatterReduce reduce = ScatterReduce::None);
/// scatter(x, axis, index, src, ScatterReduce::Add).
Tensor scatter_add(const Tensor &x, int axis, const Tensor &index, const Tensor &src);

/// torch.index_put (`x[indices] = values`, with `accumulate` `x[indices] += values`): `indices`
/// holds one entry per leading axis of x (fewer: the rest are whole axes; nullopt: a whole axis).
/// Integer index tensors broadcast together to a shape B; the indexed shape is x's with the indexed
/// axes replaced by B (in their place when they are adjacent, else B first), and `values`
/// (converted to x's dtype) broadcasts to it. A bool index (alone, over axes d..d+m of x, of those
/// extents) selects elements by mask; its values must not vary along the selected elements (a
/// scalar, or values broadcast over the other axes).
Tensor index_put(const Tensor &x, const std::vector<std::optional<Tensor>> &indices,
                 const Tensor &values, bool accumulate = false);

/// torch.index_add: a copy of x with alpha * src[..., i, ...] added at x[..., index[i], ...]
/// along `axis` for every i. `index` is a 1-D (or 0-d) integer tensor of length L; src has x's
/// shape with extent L on `axis`. Integer x needs an integer alpha.
Tensor index_add(const Tensor &x, int axis, const Tensor &index, const Tensor &src,
                 double alpha = 1);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/scatter.ipp"
#endif
