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
inline Expr fold_mul(const Expr &a, const Expr &b) {
  std::int64_t x = 0, y = 0;
  bool ca = as_const_int(a, x), cb = as_const_int(b, y);
  if (ca && cb) return ConstantNode::make_int(dtype_of(a->type), x * y);
  if (ca && x == 1) return b;
  if (cb && y == 1) return a;
  if ((ca && x == 0) || (cb && y == 0)) return ConstantNode::make_int(dtype_of(a->type), 0);
  return BinaryNode::make(BinaryOp::Mul, a, b);
}
inline Expr fold_add(const Expr &a, const Expr &b) {
  std::int64_t x = 0, y = 0;
  bool ca = as_const_int(a, x), cb = as_const_int(b, y);
  if (ca && cb) return ConstantNode::make_int(dtype_of(a->type), x + y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  return BinaryNode::make(BinaryOp::Add, a, b);
}

/// Row-major offset: ((i0 * s1 + i1) * s2 + i2) ...
inline Expr row_major_offset(const std::vector<Expr> &shape, const std::vector<Expr> &indices) {
  HIDET_ASSERT(shape.size() == indices.size(), "rank mismatch");
  if (indices.empty()) return int32(0);
  Expr off = indices[0];
  for (std::size_t i = 1; i < indices.size(); ++i) off = fold_add(fold_mul(off, shape[i]), indices[i]);
  return off;
}

/// Product of the dims.
inline Expr shape_numel(const std::vector<Expr> &shape) {
  Expr n = int32(1);
  for (auto &d : shape) n = fold_mul(n, d);
  return n;
}

/// The storage offset of tensor element `indices` of a tensor of type `t`.
inline Expr tensor_offset(const TensorTypeNode &t, const std::vector<Expr> &indices) {
  if (t.layout) return t.layout->offset(indices);
  return row_major_offset(t.shape, indices);
}

/// The number of elements to allocate for a tensor of type `t`.
inline Expr tensor_storage_size(const TensorTypeNode &t) {
  if (t.layout) return t.layout->storage_size();
  return shape_numel(t.shape);
}

} // namespace hidet::ir
