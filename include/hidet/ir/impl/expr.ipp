// Definitions for hidet/ir/expr.hpp.
#pragma once
#include "hidet/ir/expr.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE const char *builtin_name(BuiltinKind b) {
  static const char *names[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x",
                                "blockIdx.y",  "blockIdx.z",  "blockDim.x",  "blockDim.y",
                                "blockDim.z",  "gridDim.x",   "gridDim.y",   "gridDim.z"};
  return names[static_cast<int>(b)];
}

HIDET_INLINE const char *unary_op_symbol(UnaryOp op) {
  static const char *s[] = {"-", "!", "~"};
  return s[static_cast<int>(op)];
}

HIDET_INLINE const char *binary_op_symbol(BinaryOp op) {
  static const char *s[] = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>",
                            "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
  return s[static_cast<int>(op)];
}

HIDET_INLINE bool as_const_int(const Expr &e, std::int64_t &out) {
  if (auto c = e.as<ConstantNode>(); c && !c->dtype.is_float()) {
    out = c->ivalue;
    return true;
  }
  return false;
}

HIDET_INLINE std::int64_t wrap_int(DataType d, std::int64_t v) {
  switch (d.code) {
  case DTypeCode::Bool: return v != 0;
  case DTypeCode::I8: return std::int8_t(v);
  case DTypeCode::I16: return std::int16_t(v);
  case DTypeCode::I32: return std::int32_t(v);
  case DTypeCode::U8: return std::uint8_t(v);
  case DTypeCode::U16: return std::uint16_t(v);
  case DTypeCode::U32: return std::uint32_t(v);
  default: return v;
  }
}

HIDET_INLINE Expr ConstantNode::make_int(DataType d, std::int64_t v, SourceLoc l) {
  if (d.is_float()) return make_float(d, double(v), l);
  return Expr(new ConstantNode(d, wrap_int(d, v), 0.0, l));
}

HIDET_INLINE Expr ConstantNode::make_float(DataType d, double v, SourceLoc l) {
  if (!d.is_float()) return make_int(d, std::int64_t(v), l);
  if (d == dtypes::f32) v = double(float(v));
  return Expr(new ConstantNode(d, 0, v, l));
}

HIDET_INLINE Expr UnaryNode::make(UnaryOp op, Expr a, SourceLoc l) {
  HIDET_ASSERT(is_scalar(a->type), "unary operand must be a scalar");
  DataType d = dtype_of(a->type);
  if (op == UnaryOp::LogicalNot) HIDET_ASSERT(d.is_bool(), "! needs bool, got ", d);
  if (op == UnaryOp::BitNot) HIDET_ASSERT(d.is_integer(), "~ needs an integer, got ", d);
  return Expr(new UnaryNode(op, a, a->type, l));
}

HIDET_INLINE Expr BinaryNode::make(BinaryOp op, Expr a, Expr b, SourceLoc l) {
  HIDET_ASSERT(a && b, "null operand");
  if ((op == BinaryOp::Add || op == BinaryOp::Sub) && is_pointer(a->type) && is_scalar(b->type)) {
    HIDET_ASSERT(dtype_of(b->type).is_integer(), "pointer offset must be an integer");
    return Expr(new BinaryNode(op, a, b, a->type, l));
  }
  HIDET_ASSERT(is_scalar(a->type) && is_scalar(b->type), "binary operands must be scalars (op ",
               binary_op_symbol(op), ")");
  DataType da = dtype_of(a->type), db = dtype_of(b->type);
  if (op == BinaryOp::Shl || op == BinaryOp::Shr) {
    HIDET_ASSERT(da.is_integer() && db.is_integer(), "shift needs integers");
    return Expr(new BinaryNode(op, a, b, a->type, l));
  }
  HIDET_ASSERT(da == db, "binary operand dtypes differ: ", da, " ", binary_op_symbol(op), " ", db);
  if (is_logical(op)) {
    HIDET_ASSERT(da.is_bool(), "logical op needs bool operands, got ", da);
    return Expr(new BinaryNode(op, a, b, a->type, l));
  }
  if (is_comparison(op)) return Expr(new BinaryNode(op, a, b, scalar_type(dtypes::boolean), l));
  if (is_bitwise(op) || op == BinaryOp::Mod)
    HIDET_ASSERT(da.is_integer() || da.is_bool() || op == BinaryOp::Mod, "bitwise op needs integers");
  return Expr(new BinaryNode(op, a, b, a->type, l));
}

HIDET_INLINE Expr CastNode::make(Expr a, Type to, SourceLoc l) {
  return Expr(new CastNode(std::move(a), std::move(to), l));
}

HIDET_INLINE Expr SelectNode::make(Expr cond, Expr t, Expr f, SourceLoc l) {
  HIDET_ASSERT(is_scalar(cond->type) && dtype_of(cond->type).is_bool(), "select needs a bool condition");
  return Expr(new SelectNode(std::move(cond), std::move(t), std::move(f), l));
}

HIDET_INLINE Expr TensorElementNode::make(Var base, std::vector<Expr> indices, SourceLoc l) {
  auto tt = base->type.as<TensorTypeNode>();
  HIDET_ASSERT(tt, "indexing a non-tensor variable ", base->hint);
  HIDET_ASSERT(indices.size() == tt->shape.size(), "index count mismatch for ", base->hint);
  return Expr(new TensorElementNode(std::move(base), std::move(indices), scalar_type(tt->dtype), l));
}

HIDET_INLINE Expr AddressNode::make(Expr lvalue, SourceLoc l) {
  HIDET_ASSERT(is_lvalue(lvalue), "address of a non-lvalue");
  Type t = lvalue->type;
  if (auto tt = t.as<TensorTypeNode>()) t = scalar_type(tt->dtype); // &tensor == &tensor[0...]
  return Expr(new AddressNode(std::move(lvalue), pointer_type(t), l));
}

HIDET_INLINE Expr DerefNode::make(Expr ptr, SourceLoc l) {
  auto pt = ptr->type.as<PointerTypeNode>();
  HIDET_ASSERT(pt, "dereference of a non-pointer");
  return Expr(new DerefNode(ptr, pt->base, l));
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
