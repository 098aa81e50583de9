// Expressions of the Hidet IR.
//
// Semantics, in brief:
//  * Every expression has a type, computed by its make(). The IR is strictly typed: the operands
//    of a binary arithmetic/bitwise op have the same scalar type (the front end inserts casts
//    following its promotion rule), comparisons yield bool, logical ops take and yield bool.
//    Pointer +/- integer yields the pointer type.
//  * Arithmetic follows CUDA C++ on the operand type: integer division truncates toward zero,
//    % has the sign of the dividend, shifts of signed values are arithmetic, f16/bf16 ops round
//    to the type after each op.
//  * A Var is identified by its object identity, never by its name (the name is only a hint for
//    printing and codegen). Tensor-typed vars name buffers: global parameters, shared or
//    register tensors.
//  * TensorElement(t, i...) reads t at the given indices through t's layout (row-major when none);
//    indices are integer expressions, one per dimension.
//  * Builtin are the CUDA special registers (threadIdx, blockIdx, blockDim, gridDim) as i32.
#pragma once

#include <string>
#include <vector>

#include "hidet/ir/intrinsic.hpp"
#include "hidet/ir/type.hpp"

namespace hidet::ir {

/// Base of expression nodes: every expression has a type and a source position.
struct ExprNode : Object {
  Type type;
  SourceLoc loc;
  ExprNode(NodeKind k, Type t, SourceLoc l) : Object(k), type(std::move(t)), loc(l) {}
  static bool is_kind(NodeKind k) { return k >= NodeKind::Constant && k <= NodeKind::Deref; }
};

#define HIDET_NODE_KIND(Name)                                                                      \
  static constexpr NodeKind kKind = NodeKind::Name;                                                \
  static bool is_kind(NodeKind k) { return k == kKind; }

struct ConstantNode : ExprNode {
  HIDET_NODE_KIND(Constant)
  DataType dtype;
  std::int64_t ivalue = 0; ///< bool, signed and unsigned integers (bit pattern for u64)
  double fvalue = 0;       ///< floating types
  ConstantNode(DataType d, std::int64_t i, double f, SourceLoc l)
      : ExprNode(kKind, scalar_type(d), l), dtype(d), ivalue(i), fvalue(f) {}
  /// Integer, bool or float constant; the value is converted to `d` (wrapping like C++).
  static Expr make_int(DataType d, std::int64_t v, SourceLoc l = {});
  static Expr make_float(DataType d, double v, SourceLoc l = {});
  /// The value as double / int64 regardless of dtype.
  double as_double() const { return dtype.is_float() ? fvalue : double(ivalue); }
  std::int64_t as_int() const { return dtype.is_float() ? std::int64_t(fvalue) : ivalue; }
};

struct VarNode : ExprNode {
  HIDET_NODE_KIND(Var)
  std::string hint; ///< name hint for printing; identity is the object
  VarNode(Type t, std::string h, SourceLoc l) : ExprNode(kKind, std::move(t), l), hint(std::move(h)) {}
};
using Var = Ref<VarNode>;
/// A fresh variable of the given type.
inline Var make_var(Type t, std::string hint, SourceLoc l = {}) {
  return Var(new VarNode(std::move(t), std::move(hint), l));
}

/// CUDA special registers.
enum class BuiltinKind : std::uint8_t {
  ThreadIdxX, ThreadIdxY, ThreadIdxZ, BlockIdxX, BlockIdxY, BlockIdxZ,
  BlockDimX, BlockDimY, BlockDimZ, GridDimX, GridDimY, GridDimZ,
};
/// "threadIdx.x", "blockDim.y", ...
const char *builtin_name(BuiltinKind b);

struct BuiltinNode : ExprNode {
  HIDET_NODE_KIND(Builtin)
  BuiltinKind which;
  BuiltinNode(BuiltinKind w, SourceLoc l) : ExprNode(kKind, scalar_type(dtypes::i32), l), which(w) {}
  static Expr make(BuiltinKind w, SourceLoc l = {}) { return Expr(new BuiltinNode(w, l)); }
};

enum class UnaryOp : std::uint8_t { Neg, LogicalNot, BitNot };
/// "-", "!", "~".
const char *unary_op_symbol(UnaryOp op);

struct UnaryNode : ExprNode {
  HIDET_NODE_KIND(Unary)
  UnaryOp op;
  Expr a;
  UnaryNode(UnaryOp o, Expr x, Type t, SourceLoc l) : ExprNode(kKind, std::move(t), l), op(o), a(std::move(x)) {}
  static Expr make(UnaryOp op, Expr a, SourceLoc l = {});
};

enum class BinaryOp : std::uint8_t {
  Add, Sub, Mul, Div, Mod,
  BitAnd, BitOr, BitXor, Shl, Shr,
  Lt, Le, Gt, Ge, Eq, Ne,
  LogicalAnd, LogicalOr,
};
/// The C operator: "+", "<<", "&&", ...
const char *binary_op_symbol(BinaryOp op);
inline bool is_comparison(BinaryOp op) { return op >= BinaryOp::Lt && op <= BinaryOp::Ne; }
inline bool is_logical(BinaryOp op) { return op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr; }
inline bool is_bitwise(BinaryOp op) { return op >= BinaryOp::BitAnd && op <= BinaryOp::Shr; }

struct BinaryNode : ExprNode {
  HIDET_NODE_KIND(Binary)
  BinaryOp op;
  Expr a, b;
  BinaryNode(BinaryOp o, Expr x, Expr y, Type t, SourceLoc l)
      : ExprNode(kKind, std::move(t), l), op(o), a(std::move(x)), b(std::move(y)) {}
  /// Checks operand types (see the semantics block above); throws InternalError on a mismatch.
  static Expr make(BinaryOp op, Expr a, Expr b, SourceLoc l = {});
};

struct CastNode : ExprNode {
  HIDET_NODE_KIND(Cast)
  Expr a;
  CastNode(Expr x, Type t, SourceLoc l) : ExprNode(kKind, std::move(t), l), a(std::move(x)) {}
  static Expr make(Expr a, Type to, SourceLoc l = {});
};

/// cond ? t : f
struct SelectNode : ExprNode {
  HIDET_NODE_KIND(Select)
  Expr cond, t, f;
  SelectNode(Expr c, Expr x, Expr y, SourceLoc l)
      : ExprNode(kKind, x->type, l), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
  static Expr make(Expr cond, Expr t, Expr f, SourceLoc l = {});
};

/// A call of an intrinsic, or of a device function of the module by name.
struct CallNode : ExprNode {
  HIDET_NODE_KIND(Call)
  Intrinsic op;           ///< Intrinsic::None for a device function
  std::string func_name;  ///< device function name when op == None
  std::vector<Expr> args;
  std::string text;       ///< printf format string
  CallNode(Intrinsic o, std::string fn, std::vector<Expr> a, std::string tx, Type t, SourceLoc l)
      : ExprNode(kKind, std::move(t), l), op(o), func_name(std::move(fn)), args(std::move(a)),
        text(std::move(tx)) {}
  static Expr make_intrinsic(Intrinsic op, std::vector<Expr> args, Type ret, SourceLoc l = {},
                             std::string text = {}) {
    return Expr(new CallNode(op, {}, std::move(args), std::move(text), std::move(ret), l));
  }
  static Expr make_func(std::string name, std::vector<Expr> args, Type ret, SourceLoc l = {}) {
    return Expr(new CallNode(Intrinsic::None, std::move(name), std::move(args), {}, std::move(ret), l));
  }
};

/// tensor[indices...]; `base` is a tensor-typed Var.
struct TensorElementNode : ExprNode {
  HIDET_NODE_KIND(TensorElement)
  Var base;
  std::vector<Expr> indices;
  TensorElementNode(Var b, std::vector<Expr> i, Type t, SourceLoc l)
      : ExprNode(kKind, std::move(t), l), base(std::move(b)), indices(std::move(i)) {}
  static Expr make(Var base, std::vector<Expr> indices, SourceLoc l = {});
};

/// &lvalue (a Var, a TensorElement or a Deref).
struct AddressNode : ExprNode {
  HIDET_NODE_KIND(Address)
  Expr a;
  AddressNode(Expr x, Type t, SourceLoc l) : ExprNode(kKind, std::move(t), l), a(std::move(x)) {}
  static Expr make(Expr lvalue, SourceLoc l = {});
};

/// *pointer
struct DerefNode : ExprNode {
  HIDET_NODE_KIND(Deref)
  Expr a;
  DerefNode(Expr x, Type t, SourceLoc l) : ExprNode(kKind, std::move(t), l), a(std::move(x)) {}
  static Expr make(Expr ptr, SourceLoc l = {});
};

/// True for expressions that denote a storage location.
inline bool is_lvalue(const Expr &e) {
  return e.is<VarNode>() || e.is<TensorElementNode>() || e.is<DerefNode>();
}

// ---- helpers --------------------------------------------------------------------------------

inline Expr int32(std::int64_t v, SourceLoc l = {}) { return ConstantNode::make_int(dtypes::i32, v, l); }
inline Expr boolean(bool v, SourceLoc l = {}) { return ConstantNode::make_int(dtypes::boolean, v, l); }

/// Returns the constant's integer value when `e` is an integer constant.
bool as_const_int(const Expr &e, std::int64_t &out);

/// Wraps an integer into the range of an integer dtype, as a C++ conversion would.
std::int64_t wrap_int(DataType d, std::int64_t v);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/expr.ipp"
#endif
