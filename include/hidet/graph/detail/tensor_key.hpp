// How graph code identifies a tensor: by key (the operator output it is, or the graph input) and
// by identity (its symbolic state, or a constant's storage and offset). Internal: included by the
// graph layer's .ipp files and tests, not by public headers.
#pragma once

#include <cstddef>
#include <utility>

#include "hidet/runtime/operator.hpp"

namespace hidet::graph::detail {

/// The key of a symbolic tensor: (operator, output index), or (its state, -1) for an input.
using TensorKey = std::pair<const void *, int>;
inline TensorKey key_of(const Tensor &t) {
  if (auto tr = t.trace()) return {tr.op.get(), tr.index};
  return {t.symbolic_info(), -1};
}

/// A tensor's identity: symbolic tensors by their state, constants by storage and offset.
inline std::pair<const void *, std::size_t> identity_of(const Tensor &t) {
  if (t.is_symbolic()) return {t.symbolic_info(), 0};
  return {t.storage().get(), t.offset()};
}

} // namespace hidet::graph::detail
