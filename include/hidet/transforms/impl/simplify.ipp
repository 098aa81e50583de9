// Definitions for hidet/transforms/simplify.hpp.
#pragma once

#include "hidet/transforms/simplify.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/functor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

namespace detail {

/// True when evaluating `e` has no side effects (no calls other than math intrinsics).
HIDET_INLINE bool is_pure(const Expr &e) {
  struct Finder : IRVisitor {
    bool pure = true;
    void visit_Call(const CallNode *c) override {
      if (!is_math_intrinsic(c->op)) pure = false;
      IRVisitor::visit_Call(c);
    }
  } f;
  f.visit(e);
  return f.pure;
}

HIDET_INLINE const ConstantNode *as_const(const Expr &e) { return e.as<ConstantNode>(); }

HIDET_INLINE bool is_int_const(const Expr &e, std::int64_t v) {
  auto c = as_const(e);
  return c && c->dtype.is_integer() && c->ivalue == v;
}
HIDET_INLINE bool is_float_const(const Expr &e, double v) {
  auto c = as_const(e);
  return c && c->dtype.is_float() && c->fvalue == v && std::signbit(c->fvalue) == std::signbit(v);
}
HIDET_INLINE bool is_bool_const(const Expr &e, bool v) {
  auto c = as_const(e);
  return c && c->dtype.is_bool() && (c->ivalue != 0) == v;
}

/// Folds `x op y` on integers (and bools) of dtype `d` (`y` is the shift amount for shifts).
HIDET_INLINE std::optional<Expr> fold_int_binary(BinaryOp op, DataType d, std::int64_t x,
                                                 std::int64_t y, SourceLoc l) {
  using U = std::uint64_t;
  U ux = U(x), uy = U(y);
  bool sg = d.is_signed();
  auto num = [&](U r) { return ConstantNode::make_int(d, std::int64_t(r), l); };
  auto truth = [&](bool r) { return boolean(r, l); };
  int bits = int(d.nbytes() * 8);
  switch (op) {
  case BinaryOp::Add: return num(ux + uy);
  case BinaryOp::Sub: return num(ux - uy);
  case BinaryOp::Mul: return num(ux * uy);
  case BinaryOp::Div:
  case BinaryOp::Mod:
    if (y == 0) return std::nullopt;
    if (sg) {
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1) return std::nullopt;
      return num(U(op == BinaryOp::Div ? x / y : x % y));
    }
    return num(op == BinaryOp::Div ? ux / uy : ux % uy);
  case BinaryOp::BitAnd: return num(ux & uy);
  case BinaryOp::BitOr: return num(ux | uy);
  case BinaryOp::BitXor: return num(ux ^ uy);
  case BinaryOp::Shl:
  case BinaryOp::Shr:
    if (y < 0 || y >= bits) return std::nullopt;
    if (op == BinaryOp::Shl) return num(ux << y);
    return sg ? num(U(x >> y)) : num(ux >> y);
  case BinaryOp::Lt: return truth(sg ? x < y : ux < uy);
  case BinaryOp::Le: return truth(sg ? x <= y : ux <= uy);
  case BinaryOp::Gt: return truth(sg ? x > y : ux > uy);
  case BinaryOp::Ge: return truth(sg ? x >= y : ux >= uy);
  case BinaryOp::Eq: return truth(x == y);
  case BinaryOp::Ne: return truth(x != y);
  case BinaryOp::LogicalAnd: return truth(x && y);
  case BinaryOp::LogicalOr: return truth(x || y);
  }
  return std::nullopt;
}

/// Folds `x op y` on f32 or f64 (division by zero is left alone).
HIDET_INLINE std::optional<Expr> fold_float_binary(BinaryOp op, DataType d, double x, double y,
                                                   SourceLoc l) {
  auto num = [&](double r) { return ConstantNode::make_float(d, r, l); };
  switch (op) {
  case BinaryOp::Add: return num(x + y);
  case BinaryOp::Sub: return num(x - y);
  case BinaryOp::Mul: return num(x * y);
  case BinaryOp::Div: return y == 0 ? std::nullopt : std::optional<Expr>(num(x / y));
  case BinaryOp::Mod: return y == 0 ? std::nullopt : std::optional<Expr>(num(std::fmod(x, y)));
  case BinaryOp::Lt: return boolean(x < y, l);
  case BinaryOp::Le: return boolean(x <= y, l);
  case BinaryOp::Gt: return boolean(x > y, l);
  case BinaryOp::Ge: return boolean(x >= y, l);
  case BinaryOp::Eq: return boolean(x == y, l);
  case BinaryOp::Ne: return boolean(x != y, l);
  default: return std::nullopt;
  }
}

/// Folds a cast of constant `c` to scalar dtype `to`, when C++ defines the result.
HIDET_INLINE std::optional<Expr> fold_cast(const ConstantNode *c, DataType to, SourceLoc l) {
  DataType from = c->dtype;
  if (to.is_narrow_float() || (from.is_narrow_float() && !to.is_float())) return std::nullopt;
  if (to.is_bool()) return boolean(from.is_float() ? c->fvalue != 0 : c->ivalue != 0, l);
  if (to.is_integer()) {
    if (!from.is_float()) return ConstantNode::make_int(to, c->ivalue, l);
    double t = std::trunc(c->fvalue);
    int bits = int(to.nbytes() * 8);
    double lo = to.is_signed() ? -std::ldexp(1.0, bits - 1) : 0.0;
    double hi = std::ldexp(1.0, to.is_signed() ? bits - 1 : bits);
    if (!(t >= lo && t < hi)) return std::nullopt; // NaN or out of range: undefined in C++
    if (to == dtypes::u64) return ConstantNode::make_int(to, std::int64_t(std::uint64_t(t)), l);
    return ConstantNode::make_int(to, std::int64_t(t), l);
  }
  // to f32 / f64
  if (from.is_float()) return ConstantNode::make_float(to, c->fvalue, l);
  bool u = from == dtypes::u64;
  double v = to == dtypes::f32 ? double(u ? float(std::uint64_t(c->ivalue)) : float(c->ivalue))
                               : (u ? double(std::uint64_t(c->ivalue)) : double(c->ivalue));
  return ConstantNode::make_float(to, v, l);
}

/// `e` as (x, c) when it is `x op c` or, for a commutative op, `c op x` with integer constant c.
HIDET_INLINE bool split_const(const Expr &e, BinaryOp op, Expr &x, Expr &c) {
  auto b = e.as<BinaryNode>();
  if (!b || b->op != op) return false;
  if (as_const(b->b)) return x = b->a, c = b->b, true;
  if (op != BinaryOp::Sub && as_const(b->a)) return x = b->b, c = b->a, true;
  return false;
}

class Simplifier : public IRMutator {
protected:
  Expr mutate_Unary(const Expr &e, const UnaryNode *n) override {
    Expr a = mutate(n->a);
    if (auto c = as_const(a)) {
      DataType d = c->dtype;
      switch (n->op) {
      case UnaryOp::Neg:
        if (d.is_integer()) return ConstantNode::make_int(d, std::int64_t(0 - std::uint64_t(c->ivalue)), n->loc);
        if (d.is_float() && !d.is_narrow_float()) return ConstantNode::make_float(d, -c->fvalue, n->loc);
        break;
      case UnaryOp::LogicalNot: return boolean(c->ivalue == 0, n->loc);
      case UnaryOp::BitNot: return ConstantNode::make_int(d, ~c->ivalue, n->loc);
      }
    }
    if (auto inner = a.as<UnaryNode>(); inner && n->op == UnaryOp::LogicalNot &&
                                        inner->op == UnaryOp::LogicalNot)
      return inner->a;
    return a.same_as(n->a) ? e : UnaryNode::make(n->op, a, n->loc);
  }

  Expr mutate_Binary(const Expr &e, const BinaryNode *n) override {
    Expr a = mutate(n->a), b = mutate(n->b);
    if (Expr r = rewrite_binary(n, a, b)) return r;
    return a.same_as(n->a) && b.same_as(n->b) ? e : BinaryNode::make(n->op, a, b, n->loc);
  }

  Expr mutate_Cast(const Expr &e, const CastNode *n) override {
    Expr a = mutate(n->a);
    if (structural_equal(a->type, n->type)) return a;
    if (auto c = as_const(a); c && is_scalar(n->type))
      if (auto r = fold_cast(c, dtype_of(n->type), n->loc)) return *r;
    return a.same_as(n->a) ? e : CastNode::make(a, n->type, n->loc);
  }

  Expr mutate_Select(const Expr &e, const SelectNode *n) override {
    Expr c = mutate(n->cond);
    if (auto k = as_const(c)) return mutate(k->ivalue ? n->t : n->f);
    Expr t = mutate(n->t), f = mutate(n->f);
    if (c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return e;
    return SelectNode::make(c, t, f, n->loc);
  }

  Stmt mutate_IfStmt(const Stmt &s, const IfStmtNode *n) override {
    Expr c = mutate(n->cond);
    if (auto k = as_const(c)) {
      if (k->ivalue) return mutate(n->then_body);
      return n->else_body ? mutate(n->else_body) : empty(n->loc);
    }
    Stmt t = mutate(n->then_body), f = mutate(n->else_body);
    if (c.same_as(n->cond) && t.same_as(n->then_body) && f.same_as(n->else_body)) return s;
    return IfStmtNode::make(c, t, f, n->loc);
  }

  Stmt mutate_WhileStmt(const Stmt &s, const WhileStmtNode *n) override {
    Expr c = mutate(n->cond);
    if (is_bool_const(c, false)) return empty(n->loc);
    Stmt b = mutate(n->body);
    return c.same_as(n->cond) && b.same_as(n->body) ? s : WhileStmtNode::make(c, b, n->loc);
  }

  Stmt mutate_ForStmt(const Stmt &s, const ForStmtNode *n) override {
    Expr start = mutate(n->start), stop = mutate(n->stop), step = mutate(n->step);
    auto a = as_const(start), b = as_const(stop);
    if (a && b && !a->dtype.is_float() && a->dtype == b->dtype) {
      bool zero_trips = a->dtype.is_signed() ? a->ivalue >= b->ivalue
                                             : std::uint64_t(a->ivalue) >= std::uint64_t(b->ivalue);
      if (zero_trips) return empty(n->loc);
    }
    Stmt body = mutate(n->body);
    if (start.same_as(n->start) && stop.same_as(n->stop) && step.same_as(n->step) &&
        body.same_as(n->body))
      return s;
    return ForStmtNode::make(n->var, start, stop, step, n->unroll, body, n->loc);
  }

private:
  static Stmt empty(SourceLoc l) { return SeqStmtNode::make({}, l); }

  /// The simplified form of `a op b`, or null when no rule applies.
  Expr rewrite_binary(const BinaryNode *n, const Expr &a, const Expr &b) {
    BinaryOp op = n->op;
    SourceLoc l = n->loc;
    auto ca = as_const(a), cb = as_const(b);
    if (ca && cb) {
      std::optional<Expr> r;
      if (!ca->dtype.is_float()) r = fold_int_binary(op, ca->dtype, ca->ivalue, cb->ivalue, l);
      else if (!ca->dtype.is_narrow_float() && ca->dtype == cb->dtype)
        r = fold_float_binary(op, ca->dtype, ca->fvalue, cb->fvalue, l);
      if (r) return *r;
    }
    if (!is_scalar(a->type)) return {};
    DataType d = dtype_of(a->type);
    auto zero = [&] { return ConstantNode::make_int(d, 0, l); };
    if (d.is_integer()) {
      Expr x, c1;
      switch (op) {
      case BinaryOp::Add:
        if (is_int_const(a, 0)) return b;
        if (is_int_const(b, 0)) return a;
        if (cb && split_const(a, BinaryOp::Add, x, c1)) return offset(x, ival(c1) + U(cb->ivalue), l);
        if (ca && split_const(b, BinaryOp::Add, x, c1)) return offset(x, ival(c1) + U(ca->ivalue), l);
        if (cb && split_const(a, BinaryOp::Sub, x, c1)) return offset(x, U(cb->ivalue) - ival(c1), l);
        break;
      case BinaryOp::Sub:
        if (is_int_const(b, 0)) return a;
        if (is_pure(a) && structural_equal(a, b)) return zero();
        if (cb && split_const(a, BinaryOp::Add, x, c1)) return offset(x, ival(c1) - U(cb->ivalue), l);
        if (cb && split_const(a, BinaryOp::Sub, x, c1)) return offset(x, U(0) - ival(c1) - U(cb->ivalue), l);
        break;
      case BinaryOp::Mul:
        if (is_int_const(a, 1)) return b;
        if (is_int_const(b, 1)) return a;
        if ((is_int_const(a, 0) && is_pure(b)) || (is_int_const(b, 0) && is_pure(a))) return zero();
        if (cb && split_const(a, BinaryOp::Mul, x, c1)) return mul_const(x, c1, b, l);
        if (ca && split_const(b, BinaryOp::Mul, x, c1)) return mul_const(x, c1, a, l);
        break;
      case BinaryOp::Div:
        if (is_int_const(b, 1)) return a;
        break;
      case BinaryOp::Mod:
        if (is_int_const(b, 1) && is_pure(a)) return zero();
        break;
      default: break;
      }
    } else if (d.is_float()) {
      if (op == BinaryOp::Mul && is_float_const(b, 1.0)) return a;
      if (op == BinaryOp::Mul && is_float_const(a, 1.0)) return b;
      if (op == BinaryOp::Div && is_float_const(b, 1.0)) return a;
      if (op == BinaryOp::Sub && is_float_const(b, 0.0)) return a;
    } else if (d.is_bool() && is_logical(op)) {
      bool is_and = op == BinaryOp::LogicalAnd;
      // the neutral constant (true for &&, false for ||) vanishes on either side
      if (is_bool_const(a, is_and)) return b;
      if (is_bool_const(b, is_and)) return a;
      // the absorbing constant decides; on the right only when the left has no side effects
      if (is_bool_const(a, !is_and)) return a;
      if (is_bool_const(b, !is_and) && is_pure(a)) return b;
    }
    return {};
  }

  using U = std::uint64_t;
  static U ival(const Expr &c) { return U(c.as<ConstantNode>()->ivalue); }

  /// x + r for an integer offset r wrapped to x's dtype: x when r is 0, x - |r| when r < 0.
  static Expr offset(const Expr &x, U r, SourceLoc l) {
    DataType d = dtype_of(x->type);
    std::int64_t v = wrap_int(d, std::int64_t(r));
    if (v == 0) return x;
    if (d.is_signed() && v < 0 && v != std::numeric_limits<std::int64_t>::min() &&
        wrap_int(d, -v) == -v)
      return BinaryNode::make(BinaryOp::Sub, x, ConstantNode::make_int(d, -v, l), l);
    return BinaryNode::make(BinaryOp::Add, x, ConstantNode::make_int(d, v, l), l);
  }

  /// x * (c1 * c2); drops a product of one.
  static Expr mul_const(const Expr &x, const Expr &c1, const Expr &c2, SourceLoc l) {
    DataType d = dtype_of(x->type);
    auto prod = fold_int_binary(BinaryOp::Mul, d, c1.as<ConstantNode>()->ivalue,
                                c2.as<ConstantNode>()->ivalue, l);
    if (!prod) return {};
    if (is_int_const(*prod, 1)) return x;
    if (is_int_const(*prod, 0) && is_pure(x)) return *prod;
    return BinaryNode::make(BinaryOp::Mul, x, *prod, l);
  }
};

} // namespace detail

HIDET_INLINE Expr simplify(const Expr &e) { return detail::Simplifier().mutate(e); }
HIDET_INLINE Stmt simplify(const Stmt &s) { return detail::Simplifier().mutate(s); }
HIDET_INLINE Function simplify(const Function &f) { return detail::Simplifier().mutate(f); }
HIDET_INLINE Module simplify(const Module &m) { return detail::Simplifier().mutate(m); }

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
