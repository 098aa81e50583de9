// Expressions in Hidet Script: Operand (what an operator accepts: an expression or a C++
// literal, with the caller's source location), Expr (a value expression), operator overloads and
// the type-promotion rule.
//
// Type promotion (CUDA C++ semantics, one rule set for every binary operator):
//  1. C++ literals are "weak": an integer literal takes the type of the other operand (it becomes
//     2.0f next to an f32 expression); a floating literal takes the type of a floating operand
//     and becomes f32 next to an integer or bool operand (so `i * 0.5` is f32, not f64).
//  2. Two typed operands follow C++'s usual arithmetic conversions: the wider floating type wins
//     (f64 > f32 > f16, f64 > f32 > bf16; a floating type beats any integer); f16 with bf16 has
//     no rule and is an error (cast one explicitly). Integers first promote bool/i8/i16/u8/u16 to
//     i32; then the wider rank wins; at equal rank the unsigned type wins.
//  3. Comparisons promote the same way and yield bool; && || ! take bool (an integer operand is
//     compared with 0); bitwise ops need integers (or two bools); a shift keeps the promoted type
//     of its left operand.
//  4. pointer +/- integer is pointer arithmetic.
#pragma once

#include <cstdint>
#include <source_location>
#include <type_traits>

#include "hidet/ir/expr.hpp"
#include "hidet/lang/builder.hpp"

namespace hidet::lang {

#define HIDET_LOC_PARAM std::source_location loc_ = std::source_location::current()

class Expr;

/// Types (tensor elements, special registers, calls with side effects) that can turn into an
/// expression: they provide `ir::Expr to_ir(SourceLoc) const`.
template <class T>
concept ExprLike = requires(const T &t, SourceLoc l) {
  { t.to_ir(l) } -> std::same_as<ir::Expr>;
};

/// An operand of a DSL operator: an expression, or a C++ literal (weakly typed), plus the source
/// location of the expression that uses it.
struct Operand {
  ir::Expr node;
  bool weak = false; ///< a C++ literal (see the promotion rule)
  bool weak_float_is_double = false;
  SourceLoc loc;

  Operand(const Expr &e, HIDET_LOC_PARAM);
  explicit Operand(const ir::Expr &e, HIDET_LOC_PARAM) : node(e), loc(loc_) {}
  /// A strong operand from an IR expression at a known location.
  static Operand of(const ir::Expr &e, SourceLoc l) {
    Operand o(e);
    o.loc = l;
    return o;
  }
  template <ExprLike T> Operand(const T &t, HIDET_LOC_PARAM) : node(t.to_ir(loc_)), loc(loc_) {}
  Operand(bool v, HIDET_LOC_PARAM) : node(ir::boolean(v, loc_)), loc(loc_) {}
  Operand(int v, HIDET_LOC_PARAM) : node(ir::int32(v, loc_)), weak(true), loc(loc_) {}
  Operand(long v, HIDET_LOC_PARAM) : Operand(static_cast<long long>(v), loc_) {}
  Operand(long long v, HIDET_LOC_PARAM)
      : node(ir::ConstantNode::make_int(v == int32_t(v) ? dtypes::i32 : dtypes::i64, v, loc_)),
        weak(true), loc(loc_) {}
  Operand(unsigned v, HIDET_LOC_PARAM)
      : node(ir::ConstantNode::make_int(dtypes::u32, v, loc_)), weak(true), loc(loc_) {}
  Operand(unsigned long v, HIDET_LOC_PARAM)
      : node(ir::ConstantNode::make_int(dtypes::u64, std::int64_t(v), loc_)), weak(true), loc(loc_) {}
  Operand(unsigned long long v, HIDET_LOC_PARAM)
      : node(ir::ConstantNode::make_int(dtypes::u64, std::int64_t(v), loc_)), weak(true), loc(loc_) {}
  Operand(float v, HIDET_LOC_PARAM)
      : node(ir::ConstantNode::make_float(dtypes::f32, v, loc_)), weak(true), loc(loc_) {}
  Operand(double v, HIDET_LOC_PARAM)
      : node(ir::ConstantNode::make_float(dtypes::f64, v, loc_)), weak(true),
        weak_float_is_double(true), loc(loc_) {}

  bool defined() const { return node.defined(); }
};

/// A value expression of the DSL. Copying an Expr copies the expression (it is re-evaluated
/// where it is used); declare a Var to evaluate once.
class Expr {
public:
  Expr() = default;
  Expr(ir::Expr n) : node_(std::move(n)) {}
  Expr(const Operand &o) : node_(o.node) {}
  Expr(bool v, HIDET_LOC_PARAM) : node_(ir::boolean(v, loc_)) {}
  Expr(int v, HIDET_LOC_PARAM) : node_(ir::int32(v, loc_)) {}
  Expr(long long v, HIDET_LOC_PARAM) : node_(Operand(v, loc_).node) {}
  Expr(long v, HIDET_LOC_PARAM) : node_(Operand(v, loc_).node) {}
  Expr(unsigned v, HIDET_LOC_PARAM) : node_(Operand(v, loc_).node) {}
  Expr(float v, HIDET_LOC_PARAM) : node_(ir::ConstantNode::make_float(dtypes::f32, v, loc_)) {}
  Expr(double v, HIDET_LOC_PARAM) : node_(ir::ConstantNode::make_float(dtypes::f64, v, loc_)) {}
  template <ExprLike T> Expr(const T &t, HIDET_LOC_PARAM) : node_(t.to_ir(loc_)) {}

  /// The IR node.
  const ir::Expr &ir() const { return node_; }
  ir::Expr to_ir(SourceLoc) const { return node_; }
  bool defined() const { return node_.defined(); }
  /// The scalar dtype (throws for tensors and pointers).
  DataType dtype() const { return ir::dtype_of(node_->type); }

protected:
  ir::Expr node_;
};

inline Operand::Operand(const Expr &e, std::source_location loc_) : node(e.ir()), loc(loc_) {
  if (!node) throw DSLError("use of an undefined (default-constructed) expression", loc);
}

namespace detail {

inline std::string describe(const ir::Expr &e) {
  if (auto v = e.as<ir::VarNode>()) return str_cat("'", v->hint, "'");
  return "expression";
}

/// Rejects operands that are not scalars, with a hint.
inline void require_scalar(const Operand &o, const char *op) {
  const auto &t = o.node->type;
  if (ir::is_scalar(t)) return;
  if (auto tt = t.as<ir::TensorTypeNode>())
    throw DSLError(str_cat("operator ", op, ": tensor ", describe(o.node), " (", tt->dtype, ", rank ",
                           tt->rank(), ") is used as a scalar; index it, e.g. t[i][j]"),
                   o.loc);
  if (ir::is_pointer(t)) throw DSLError(str_cat("operator ", op, ": a pointer is used as a scalar; dereference it"), o.loc);
  throw DSLError(str_cat("operator ", op, ": a void expression has no value"), o.loc);
}

inline int int_rank(DataType d) {
  switch (d.code) {
  case DTypeCode::I64:
  case DTypeCode::U64: return 4;
  default: return 3; // everything narrower promotes to 32 bits
  }
}

/// Integer promotion: bool, 8- and 16-bit integers become i32.
inline DataType int_promote(DataType d) {
  if (d.is_bool() || (d.is_integer() && d.nbytes() < 4)) return dtypes::i32;
  return d;
}

/// The common type of two strong (typed) operands; throws when no rule applies.
inline DataType common_type(DataType a, DataType b, const char *op, SourceLoc loc) {
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

/// Converts an operand to dtype `d` (a constant is rebuilt, otherwise a cast is inserted).
inline ir::Expr convert(const ir::Expr &e, DataType d, SourceLoc loc) {
  if (ir::dtype_of(e->type) == d) return e;
  if (auto c = e.as<ir::ConstantNode>()) {
    if (c->dtype.is_float()) return ir::ConstantNode::make_float(d, c->fvalue, loc);
    return d.is_float() ? ir::ConstantNode::make_float(d, double(c->ivalue), loc)
                        : ir::ConstantNode::make_int(d, c->ivalue, loc);
  }
  return ir::CastNode::make(e, ir::scalar_type(d), loc);
}

/// The dtype both operands are converted to (see the promotion rule at the top of this file).
inline DataType binary_type(const Operand &a, const Operand &b, const char *op) {
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

inline ir::Expr to_bool(const Operand &o, const char *op) {
  require_scalar(o, op);
  DataType d = ir::dtype_of(o.node->type);
  if (d.is_bool()) return o.node;
  return ir::BinaryNode::make(ir::BinaryOp::Ne, o.node, convert(ir::int32(0), d, o.loc), o.loc);
}

inline Expr make_binary(ir::BinaryOp op, const Operand &a, const Operand &b) {
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

// ---- operators ------------------------------------------------------------------------------

// Each operator takes Operands, so any mix of expressions, tensor elements and literals works;
// the overload is only found (by ADL) when an argument is a DSL type.
#define HIDET_BINARY_OPERATOR(sym, op)                                                             \
  inline Expr operator sym(const Operand &a, const Operand &b) {                                   \
    return detail::make_binary(ir::BinaryOp::op, a, b);                                            \
  }
HIDET_BINARY_OPERATOR(+, Add)
HIDET_BINARY_OPERATOR(-, Sub)
HIDET_BINARY_OPERATOR(*, Mul)
HIDET_BINARY_OPERATOR(/, Div)
HIDET_BINARY_OPERATOR(%, Mod)
HIDET_BINARY_OPERATOR(&, BitAnd)
HIDET_BINARY_OPERATOR(|, BitOr)
HIDET_BINARY_OPERATOR(^, BitXor)
HIDET_BINARY_OPERATOR(<<, Shl)
HIDET_BINARY_OPERATOR(>>, Shr)
HIDET_BINARY_OPERATOR(<, Lt)
HIDET_BINARY_OPERATOR(<=, Le)
HIDET_BINARY_OPERATOR(>, Gt)
HIDET_BINARY_OPERATOR(>=, Ge)
HIDET_BINARY_OPERATOR(==, Eq)
HIDET_BINARY_OPERATOR(!=, Ne)
HIDET_BINARY_OPERATOR(&&, LogicalAnd)
HIDET_BINARY_OPERATOR(||, LogicalOr)
#undef HIDET_BINARY_OPERATOR

inline Expr operator-(const Operand &a) {
  detail::require_scalar(a, "-");
  DataType d = detail::int_promote(ir::dtype_of(a.node->type));
  return ir::UnaryNode::make(ir::UnaryOp::Neg, detail::convert(a.node, d, a.loc), a.loc);
}
inline Expr operator!(const Operand &a) {
  return ir::UnaryNode::make(ir::UnaryOp::LogicalNot, detail::to_bool(a, "!"), a.loc);
}
inline Expr operator~(const Operand &a) {
  detail::require_scalar(a, "~");
  DataType d = detail::int_promote(ir::dtype_of(a.node->type));
  if (!d.is_integer()) throw DSLError(str_cat("operator ~: needs an integer, got ", d), a.loc);
  return ir::UnaryNode::make(ir::UnaryOp::BitNot, detail::convert(a.node, d, a.loc), a.loc);
}

/// Converts `x` to dtype `to` (C++ conversion semantics; f16/bf16 round to nearest even).
inline Expr cast(const Operand &x, DataType to) {
  detail::require_scalar(x, "cast");
  return detail::convert(x.node, to, x.loc);
}

/// cond ? a : b, with both branches promoted to their common type.
inline Expr select(const Operand &cond, const Operand &a, const Operand &b) {
  detail::require_scalar(a, "select");
  detail::require_scalar(b, "select");
  DataType t = detail::binary_type(a, b, "select");
  return ir::SelectNode::make(detail::to_bool(cond, "select"), detail::convert(a.node, t, a.loc),
                              detail::convert(b.node, t, b.loc), cond.loc);
}

/// ceil(a / b) for integers; folds when both are constants.
inline Expr ceil_div(const Operand &a, const Operand &b) { return (a + b - 1) / b; }
inline constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

} // namespace hidet::lang
