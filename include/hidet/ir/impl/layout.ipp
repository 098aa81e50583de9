// Definitions for hidet/ir/layout.hpp.
#pragma once
#include "hidet/ir/layout.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

// TensorTypeNode (ir/type.hpp) holds a Layout; its constructor is defined here, where LayoutNode
// is complete.
HIDET_INLINE TensorTypeNode::TensorTypeNode(DataType d, std::vector<Expr> s, Layout l, Scope sc)
    : TypeNode(kKind), dtype(d), shape(std::move(s)), layout(std::move(l)), scope(sc) {}

HIDET_INLINE Type TensorTypeNode::make(DataType d, std::vector<Expr> shape, Scope scope,
                                       Layout layout) {
  return Type(new TensorTypeNode(d, std::move(shape), std::move(layout), scope));
}

HIDET_INLINE Expr fold_mul(const Expr &a, const Expr &b) {
  std::int64_t x = 0, y = 0;
  bool ca = as_const_int(a, x), cb = as_const_int(b, y);
  if (ca && cb) return ConstantNode::make_int(dtype_of(a->type), x * y);
  if (ca && x == 1) return b;
  if (cb && y == 1) return a;
  if ((ca && x == 0) || (cb && y == 0)) return ConstantNode::make_int(dtype_of(a->type), 0);
  return BinaryNode::make(BinaryOp::Mul, a, b);
}
HIDET_INLINE Expr fold_add(const Expr &a, const Expr &b) {
  std::int64_t x = 0, y = 0;
  bool ca = as_const_int(a, x), cb = as_const_int(b, y);
  if (ca && cb) return ConstantNode::make_int(dtype_of(a->type), x + y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  return BinaryNode::make(BinaryOp::Add, a, b);
}

HIDET_INLINE Expr row_major_offset(const std::vector<Expr> &shape,
                                   const std::vector<Expr> &indices) {
  HIDET_ASSERT(shape.size() == indices.size(), "rank mismatch");
  if (indices.empty()) return int32(0);
  Expr off = indices[0];
  for (std::size_t i = 1; i < indices.size(); ++i) off = fold_add(fold_mul(off, shape[i]), indices[i]);
  return off;
}

HIDET_INLINE Expr shape_numel(const std::vector<Expr> &shape) {
  Expr n = int32(1);
  for (auto &d : shape) n = fold_mul(n, d);
  return n;
}

HIDET_INLINE Expr tensor_offset(const TensorTypeNode &t, const std::vector<Expr> &indices) {
  if (t.layout) return t.layout->offset(indices);
  return row_major_offset(t.shape, indices);
}

HIDET_INLINE Expr tensor_storage_size(const TensorTypeNode &t) {
  if (t.layout) return t.layout->storage_size();
  return shape_numel(t.shape);
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
