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

namespace detail {

/// "'name'" for a variable, "expression" otherwise (for messages).
std::string describe(const ir::Expr &e);

/// Rejects operands that are not scalars, with a hint.
void require_scalar(const Operand &o, const char *op);

/// The integer conversion rank: 4 for 64-bit integers, 3 for the narrower ones (they promote).
int int_rank(DataType d);

/// Integer promotion: bool, 8- and 16-bit integers become i32.
DataType int_promote(DataType d);

/// The common type of two strong (typed) operands; throws when no rule applies.
DataType common_type(DataType a, DataType b, const char *op, SourceLoc loc);

/// Converts an operand to dtype `d` (a constant is rebuilt, otherwise a cast is inserted).
ir::Expr convert(const ir::Expr &e, DataType d, SourceLoc loc);

/// The dtype both operands are converted to (see the promotion rule at the top of this file).
DataType binary_type(const Operand &a, const Operand &b, const char *op);

/// The operand as bool: a bool as it is, another scalar compared with 0.
ir::Expr to_bool(const Operand &o, const char *op);

/// A binary operator of the DSL: checks and promotes the operands, then builds the IR.
Expr make_binary(ir::BinaryOp op, const Operand &a, const Operand &b);

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

Expr operator-(const Operand &a);
Expr operator!(const Operand &a);
Expr operator~(const Operand &a);

/// Converts `x` to dtype `to` (C++ conversion semantics; f16/bf16 round to nearest even).
Expr cast(const Operand &x, DataType to);

/// cond ? a : b, with both branches promoted to their common type.
Expr select(const Operand &cond, const Operand &a, const Operand &b);

/// ceil(a / b) for integers; folds when both are constants.
inline Expr ceil_div(const Operand &a, const Operand &b) { return (a + b - 1) / b; }
inline constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/expr.ipp"
#endif
