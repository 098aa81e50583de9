// Definitions for hidet/lang/expr.hpp.
#pragma once
#include "hidet/lang/expr.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE Operand::Operand(const Expr &e, std::source_location loc_) : node(e.ir()), loc(loc_) {
  if (!node) throw DSLError("use of an undefined (default-constructed) expression", loc);
}

namespace detail {

HIDET_INLINE std::string describe(const ir::Expr &e) {
  if (auto v = e.as<ir::VarNode>()) return str_cat("'", v->hint, "'");
  return "expression";
}

HIDET_INLINE void require_scalar(const Operand &o, const char *op) {
  const auto &t = o.node->type;
  if (ir::is_scalar(t)) return;
  if (auto tt = t.as<ir::TensorTypeNode>())
    throw DSLError(str_cat("operator ", op, ": tensor ", describe(o.node), " (", tt->dtype, ", rank ",
                           tt->rank(), ") is used as a scalar; index it, e.g. t[i][j]"),
                   o.loc);
  if (ir::is_pointer(t)) throw DSLError(str_cat("operator ", op, ": a pointer is used as a scalar; dereference it"), o.loc);
  throw DSLError(str_cat("operator ", op, ": a void expression has no value"), o.loc);
}

HIDET_INLINE int int_rank(DataType d) {
  switch (d.code) {
  case DTypeCode::I64:
  case DTypeCode::U64: return 4;
  default: return 3; // everything narrower promotes to 32 bits
  }
}

HIDET_INLINE DataType int_promote(DataType d) {
  if (d.is_bool() || (d.is_integer() && d.nbytes() < 4)) return dtypes::i32;
  return d;
}

HIDET_INLINE DataType common_type(DataType a, DataType b, const char *op, SourceLoc loc) {
  if (a == b && !(a.is_integer() && a.nbytes() < 4) && !a.is_bool()) return a;
  if (a.is_float() || b.is_float()) {
    if (a.is_float() && b.is_float()) {
      if (a.is_half() && b.is_half() && a != b)
        throw DSLError(str_cat("operator ", op, ": no promotion rule between ", a, " and ", b,
                               "; cast one operand explicitly, e.g. cast(x, f32)"),
                       loc);
      return a.nbytes() >= b.nbytes() ? a : b;
    }
    return a.is_float() ? a : b;
  }
  a = int_promote(a), b = int_promote(b);
  if (a == b) return a;
  int ra = int_rank(a), rb = int_rank(b);
  if (ra != rb) return ra > rb ? a : b;
  return a.is_signed() ? b : a; // same rank: unsigned wins
}

HIDET_INLINE ir::Expr convert(const ir::Expr &e, DataType d, SourceLoc loc) {
  if (ir::dtype_of(e->type) == d) return e;
  if (auto c = e.as<ir::ConstantNode>()) {
    if (c->dtype.is_float()) return ir::ConstantNode::make_float(d, c->fvalue, loc);
    return d.is_float() ? ir::ConstantNode::make_float(d, double(c->ivalue), loc)
                        : ir::ConstantNode::make_int(d, c->ivalue, loc);
  }
  return ir::CastNode::make(e, ir::scalar_type(d), loc);
}

HIDET_INLINE DataType binary_type(const Operand &a, const Operand &b, const char *op) {
  DataType da = ir::dtype_of(a.node->type), db = ir::dtype_of(b.node->type);
  SourceLoc loc = a.loc.valid() ? a.loc : b.loc;
  if (a.weak && !b.weak) {
    if (db.is_float()) return db;
    if (da.is_float()) return dtypes::f32;
    return int_promote(db);
  }
  if (b.weak && !a.weak) {
    if (da.is_float()) return da;
    if (db.is_float()) return dtypes::f32;
    return int_promote(da);
  }
  return common_type(da, db, op, loc);
}

HIDET_INLINE ir::Expr to_bool(const Operand &o, const char *op) {
  require_scalar(o, op);
  DataType d = ir::dtype_of(o.node->type);
  if (d.is_bool()) return o.node;
  if (d.is_fp8()) return ir::BinaryNode::make(ir::BinaryOp::Ne, convert(o.node, dtypes::f32, o.loc), ir::ConstantNode::make_float(dtypes::f32, 0.0, o.loc), o.loc);
  return ir::BinaryNode::make(ir::BinaryOp::Ne, o.node, convert(ir::int32(0), d, o.loc), o.loc);
}

HIDET_INLINE Expr make_binary(ir::BinaryOp op, const Operand &a, const Operand &b) {
  const char *sym = ir::binary_op_symbol(op);
  SourceLoc loc = a.loc.valid() ? a.loc : b.loc;
  if (ir::is_logical(op))
    return ir::BinaryNode::make(op, to_bool(a, sym), to_bool(b, sym), loc);
  if ((op == ir::BinaryOp::Add || op == ir::BinaryOp::Sub) && ir::is_pointer(a.node->type)) {
    require_scalar(b, sym);
    if (!ir::dtype_of(b.node->type).is_integer())
      throw DSLError(str_cat("operator ", sym, ": a pointer offset must be an integer, got ",
                             ir::dtype_of(b.node->type)),
                     loc);
    return ir::BinaryNode::make(op, a.node, b.node, loc);
  }
  require_scalar(a, sym);
  require_scalar(b, sym);
  if (op == ir::BinaryOp::Shl || op == ir::BinaryOp::Shr) {
    DataType da = int_promote(ir::dtype_of(a.node->type)), db = ir::dtype_of(b.node->type);
    if (!da.is_integer() || !(db.is_integer() || db.is_bool()))
      throw DSLError(str_cat("operator ", sym, ": shifts need integer operands, got ",
                             ir::dtype_of(a.node->type), " and ", db),
                     loc);
    return ir::BinaryNode::make(op, convert(a.node, da, loc), convert(b.node, da, loc), loc);
  }
  DataType t = binary_type(a, b, sym);
  if (t.is_fp8()) t = dtypes::f32; // fp8 is a storage type: its arithmetic and comparisons are f32's
  if (ir::is_bitwise(op) || op == ir::BinaryOp::Mod) {
    DataType da = ir::dtype_of(a.node->type), db = ir::dtype_of(b.node->type);
    bool both_bool = da.is_bool() && db.is_bool() && ir::is_bitwise(op);
    if (both_bool) return ir::BinaryNode::make(op, a.node, b.node, loc);
    if (ir::is_bitwise(op) && !t.is_integer())
      throw DSLError(str_cat("operator ", sym, ": bitwise operators need integer operands, got ", da,
                             " and ", db),
                     loc);
  }
  return ir::BinaryNode::make(op, convert(a.node, t, loc), convert(b.node, t, loc), loc);
}

} // namespace detail

HIDET_INLINE Expr operator-(const Operand &a) {
  detail::require_scalar(a, "-");
  DataType d = detail::int_promote(ir::dtype_of(a.node->type));
  if (d.is_fp8()) d = dtypes::f32;
  return ir::UnaryNode::make(ir::UnaryOp::Neg, detail::convert(a.node, d, a.loc), a.loc);
}
HIDET_INLINE Expr operator!(const Operand &a) {
  return ir::UnaryNode::make(ir::UnaryOp::LogicalNot, detail::to_bool(a, "!"), a.loc);
}
HIDET_INLINE Expr operator~(const Operand &a) {
  detail::require_scalar(a, "~");
  DataType d = detail::int_promote(ir::dtype_of(a.node->type));
  if (!d.is_integer()) throw DSLError(str_cat("operator ~: needs an integer, got ", d), a.loc);
  return ir::UnaryNode::make(ir::UnaryOp::BitNot, detail::convert(a.node, d, a.loc), a.loc);
}

HIDET_INLINE Expr cast(const Operand &x, DataType to) {
  detail::require_scalar(x, "cast");
  return detail::convert(x.node, to, x.loc);
}

HIDET_INLINE Expr select(const Operand &cond, const Operand &a, const Operand &b) {
  detail::require_scalar(a, "select");
  detail::require_scalar(b, "select");
  DataType t = detail::binary_type(a, b, "select");
  return ir::SelectNode::make(detail::to_bool(cond, "select"), detail::convert(a.node, t, a.loc),
                              detail::convert(b.node, t, b.loc), cond.loc);
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
