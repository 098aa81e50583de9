// Kernels for the emulator tests and benchmark, built with the ir:: make() API through a tiny
// operator layer (X wraps an Expr). Each statement records the line of this file as its SourceLoc
// so error messages can be checked for "test_emulator_kernels.hpp:<line>".
#pragma once

#include <source_location>

#include "hidet/ir/func.hpp"

namespace emu_test {

using namespace hidet;
using namespace hidet::ir;

/// The caller's line as a SourceLoc.
inline SourceLoc here(std::source_location l = std::source_location::current()) { return l; }

/// An expression with C++ operators.
struct X {
  Expr e;
  X(Expr x) : e(std::move(x)) {}
  X(Var v) : e(Expr(v)) {}
  X(int v) : e(int32(v)) {}
  operator Expr() const { return e; }
};
inline X bin(BinaryOp op, X a, X b) { return BinaryNode::make(op, a.e, b.e); }
inline X operator+(X a, X b) { return bin(BinaryOp::Add, a, b); }
inline X operator-(X a, X b) { return bin(BinaryOp::Sub, a, b); }
inline X operator*(X a, X b) { return bin(BinaryOp::Mul, a, b); }
inline X operator/(X a, X b) { return bin(BinaryOp::Div, a, b); }
inline X operator%(X a, X b) { return bin(BinaryOp::Mod, a, b); }
inline X operator<(X a, X b) { return bin(BinaryOp::Lt, a, b); }
inline X operator>=(X a, X b) { return bin(BinaryOp::Ge, a, b); }
inline X operator==(X a, X b) { return bin(BinaryOp::Eq, a, b); }
inline X operator&&(X a, X b) { return bin(BinaryOp::LogicalAnd, a, b); }
inline X operator&(X a, X b) { return bin(BinaryOp::BitAnd, a, b); }

inline X tid_x() { return BuiltinNode::make(BuiltinKind::ThreadIdxX); }
inline X tid_y() { return BuiltinNode::make(BuiltinKind::ThreadIdxY); }
inline X bid_x() { return BuiltinNode::make(BuiltinKind::BlockIdxX); }
inline X bid_y() { return BuiltinNode::make(BuiltinKind::BlockIdxY); }
inline X f32(double v) { return ConstantNode::make_float(dtypes::f32, v); }
inline X cast(X a, DataType d) { return CastNode::make(a.e, scalar_type(d)); }
inline X at(const Var &t, std::vector<Expr> idx, SourceLoc l = here()) {
  return TensorElementNode::make(t, std::move(idx), l);
}
inline X call(Intrinsic op, std::vector<Expr> args, DataType ret) {
  return CallNode::make_intrinsic(op, std::move(args), scalar_type(ret));
}

inline Var scalar(DataType d, const char *name) { return make_var(scalar_type(d), name); }
inline Var tensor(DataType d, std::vector<Expr> shape, const char *name, Scope s = Scope::Global) {
  return make_var(TensorTypeNode::make(d, std::move(shape), s), name);
}

inline Stmt store(const Var &t, std::vector<Expr> idx, X v, SourceLoc l = here()) {
  return BufferStoreStmtNode::make(t, std::move(idx), v.e, l);
}
inline Stmt let(const Var &v, X init, SourceLoc l = here()) { return DeclareStmtNode::make(v, init.e, l); }
inline Stmt decl(const Var &v, SourceLoc l = here()) { return DeclareStmtNode::make(v, {}, l); }
inline Stmt set(const Var &v, X x, SourceLoc l = here()) { return AssignStmtNode::make(v, x.e, l); }
inline Stmt loop(const Var &v, X start, X stop, Stmt body, SourceLoc l = here()) {
  return ForStmtNode::make(v, start.e, stop.e, int32(1), 0, std::move(body), l);
}
inline Stmt when(X c, Stmt t, Stmt f = {}, SourceLoc l = here()) {
  return IfStmtNode::make(c.e, std::move(t), std::move(f), l);
}
inline Stmt barrier(SourceLoc l = here()) {
  return EvaluateStmtNode::make(call(Intrinsic::SyncThreads, {}, dtypes::i32), l);
}
inline Stmt eval(X e, SourceLoc l = here()) { return EvaluateStmtNode::make(e.e, l); }

inline Function kernel(const std::string &name, std::vector<Var> params, std::vector<Stmt> body) {
  return make_function(name, std::move(params), seq(std::move(body)), void_type(), FuncKind::Kernel);
}

/// C[m, n] = sum_k A[m, k] * B[k, n] (f32), one thread per output, any block shape.
inline Function naive_matmul() {
  Var M = scalar(dtypes::i32, "M"), N = scalar(dtypes::i32, "N"), K = scalar(dtypes::i32, "K");
  Var A = tensor(dtypes::f32, {M, K}, "A"), B = tensor(dtypes::f32, {K, N}, "B"),
      C = tensor(dtypes::f32, {M, N}, "C");
  Var i = scalar(dtypes::i32, "i"), j = scalar(dtypes::i32, "j"), k = scalar(dtypes::i32, "k");
  Var acc = scalar(dtypes::f32, "acc");
  X bdy = BuiltinNode::make(BuiltinKind::BlockDimY), bdx = BuiltinNode::make(BuiltinKind::BlockDimX);
  return kernel("matmul", {A, B, C, M, N, K},
                {let(i, bid_y() * bdy + tid_y()), let(j, bid_x() * bdx + tid_x()),
                 when(X(i) < M && X(j) < N,
                      seq({let(acc, f32(0)),
                           loop(k, 0, K, set(acc, X(acc) + at(A, {i, k}) * at(B, {k, j}))),
                           store(C, {i, j}, acc)}))});
}

/// out[t] = x iterated `iters` times through x = x * 3 + t (i32 arithmetic), per thread.
inline Function arith_loop() {
  Var n = scalar(dtypes::i32, "iters");
  Var out = tensor(dtypes::i32, {int32(1 << 20)}, "out");
  Var x = scalar(dtypes::i32, "x"), i = scalar(dtypes::i32, "i"), t = scalar(dtypes::i32, "t");
  X bdx = BuiltinNode::make(BuiltinKind::BlockDimX);
  return kernel("arith", {out, n},
                {let(t, bid_x() * bdx + tid_x()), let(x, 0),
                 loop(i, 0, n, set(x, X(x) * 3 + t)), store(out, {t}, x)});
}

/// The same loop on a narrower dtype, computed in f32 and rounded to it after every operation:
/// out[t] = x iterated `iters` times through x = x * 0.5 + t (dtype d, e.g. f16), per thread.
inline Function arith_loop_of(DataType d) {
  Var n = scalar(dtypes::i32, "iters");
  Var out = tensor(d, {int32(1 << 20)}, "out");
  Var x = scalar(d, "x"), i = scalar(dtypes::i32, "i"), t = scalar(dtypes::i32, "t");
  X bdx = BuiltinNode::make(BuiltinKind::BlockDimX);
  X half = ConstantNode::make_float(d, 0.5);
  return kernel("arith_" + std::string(d.short_name()), {out, n},
                {let(t, bid_x() * bdx + tid_x()), let(x, cast(0, d)),
                 loop(i, 0, n, set(x, X(x) * half + cast(t, d))), store(out, {t}, x)});
}

} // namespace emu_test
