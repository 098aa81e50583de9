// The data-layout interface: a layout maps a multi-dimensional index of a tensor to the offset
// of its element in the tensor's storage. A tensor type without a layout is row-major over its
// shape. Concrete layouts (column-major, strided, local, swizzled, composed, ...) derive from
// LayoutNode in hidet/ir/layouts.hpp.
#pragma once

#include <string>
#include <vector>

#include "hidet/ir/expr.hpp"

namespace hidet::ir {

struct LayoutNode : Object {
  static constexpr NodeKind kKind = NodeKind::Layout;
  static bool is_kind(NodeKind k) { return k == kKind; }
  std::vector<Expr> shape; ///< the logical shape the layout indexes
  explicit LayoutNode(std::vector<Expr> s) : Object(kKind), shape(std::move(s)) {}
  /// The storage offset of the element at `indices` (one per dimension of `shape`).
  virtual Expr offset(const std::vector<Expr> &indices) const = 0;
  /// The number of storage elements the layout spans (the buffer size to allocate).
  virtual Expr storage_size() const = 0;
  /// A readable description, e.g. "row_major(4, 8)".
  virtual std::string str() const = 0;
  /// Structural equality and hash (used by caches and IR equality).
  virtual bool equals(const LayoutNode &other) const = 0;
  virtual std::size_t hash() const = 0;
};

/// Folding helpers that keep generated index arithmetic small: constants fold, x*1, x+0 vanish.
Expr fold_mul(const Expr &a, const Expr &b);
Expr fold_add(const Expr &a, const Expr &b);

/// Row-major offset: ((i0 * s1 + i1) * s2 + i2) ...
Expr row_major_offset(const std::vector<Expr> &shape, const std::vector<Expr> &indices);

/// Product of the dims.
Expr shape_numel(const std::vector<Expr> &shape);

/// The storage offset of tensor element `indices` of a tensor of type `t`.
Expr tensor_offset(const TensorTypeNode &t, const std::vector<Expr> &indices);

/// The number of elements to allocate for a tensor of type `t`.
Expr tensor_storage_size(const TensorTypeNode &t);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/layout.ipp"
#endif
