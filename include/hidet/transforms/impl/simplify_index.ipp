// Definitions for hidet/transforms/simplify_index.hpp.
#pragma once

#include "hidet/transforms/simplify_index.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/transforms/simplify.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

namespace detail {

/// A range that may be unknown.
struct MaybeRange {
  bool known = false;
  std::int64_t lo = 0, hi = 0;
};

HIDET_INLINE bool is_int_scalar(const Expr &e) {
  return e && is_scalar(e->type) && dtype_of(e->type).is_integer();
}

HIDET_INLINE std::optional<std::int64_t> int_constant(const Expr &e) {
  auto c = e.as<ConstantNode>();
  if (c && c->dtype.is_integer()) return c->ivalue;
  return std::nullopt;
}

/// The values of integer dtype `d` as a range (u64 capped at int64's maximum).
HIDET_INLINE MaybeRange dtype_range(DataType d) {
  int bits = int(d.nbytes() * 8);
  if (d.is_signed())
    return {true, bits >= 64 ? std::numeric_limits<std::int64_t>::min() : -(std::int64_t(1) << (bits - 1)),
            bits >= 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << (bits - 1)) - 1};
  return {true, 0, bits >= 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << bits) - 1};
}

/// `r` if it lies within the values of `d`, else unknown (the arithmetic may have wrapped).
HIDET_INLINE MaybeRange within(DataType d, MaybeRange r) {
  MaybeRange t = dtype_range(d);
  if (!r.known || r.lo < t.lo || r.hi > t.hi) return {};
  return r;
}

HIDET_INLINE std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Ranges of CUDA's special registers, by BuiltinKind (unknown: the hardware's limits).
using BuiltinRanges = std::array<MaybeRange, 12>;

class IndexSimplifier : public IRMutator {
public:
  explicit IndexSimplifier(const IndexRanges &ranges, const BuiltinRanges *builtins = nullptr)
      : ranges_(ranges), builtins_(builtins) {}

  /// The range of `e` (unknown where the rules above do not give one).
  MaybeRange range_of(const Expr &e) { return range(e); }

  using IRMutator::mutate;
  Expr mutate(const Expr &e) override {
    if (!e) return e;
    if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second.second;
    Expr r = rewrite(IRMutator::mutate(e));
    memo_.emplace(e.get(), std::make_pair(e, r));
    return r;
  }

private:
  struct Term {
    Expr atom;
    std::int64_t coef;
  };
  /// sum(coef * atom) + constant, in dtype `dtype`; `ok` false after an overflow of the coefficients.
  struct Linear {
    std::vector<Term> terms;
    std::int64_t constant = 0;
    bool ok = true;
  };

  const IndexRanges &ranges_;
  const BuiltinRanges *builtins_;
  std::unordered_map<const ExprNode *, std::pair<Expr, Expr>> memo_;
  std::unordered_map<const ExprNode *, std::pair<Expr, MaybeRange>> range_memo_;

  static bool same(const Expr &a, const Expr &b) { return a.same_as(b) || structural_equal(a, b); }

  Expr constant(DataType d, std::int64_t v) { return ConstantNode::make_int(d, v); }

  // ---- ranges ----

  MaybeRange range(const Expr &e) {
    if (auto it = range_memo_.find(e.get()); it != range_memo_.end()) return it->second.second;
    MaybeRange r = compute_range(e);
    range_memo_.emplace(e.get(), std::make_pair(e, r));
    return r;
  }

  MaybeRange compute_range(const Expr &e) {
    if (!is_scalar(e->type)) return {};
    DataType d = dtype_of(e->type);
    if (d.is_bool()) return {true, 0, 1};
    if (!d.is_integer()) return {};
    if (auto c = int_constant(e)) return {true, *c, *c};
    if (auto v = e.as<VarNode>()) {
      auto it = ranges_.find(v);
      return it == ranges_.end() ? MaybeRange{} : within(d, {true, it->second.lo, it->second.hi});
    }
    if (auto b = e.as<BuiltinNode>()) {
      if (builtins_ && (*builtins_)[std::size_t(b->which)].known) return (*builtins_)[std::size_t(b->which)];
      switch (b->which) {
      case BuiltinKind::ThreadIdxX: case BuiltinKind::ThreadIdxY: case BuiltinKind::ThreadIdxZ: return {true, 0, 1023};
      case BuiltinKind::BlockDimX: case BuiltinKind::BlockDimY: case BuiltinKind::BlockDimZ: return {true, 1, 1024};
      case BuiltinKind::BlockIdxX: case BuiltinKind::BlockIdxY: case BuiltinKind::BlockIdxZ:
        return {true, 0, std::numeric_limits<std::int32_t>::max() - 1};
      default: return {true, 1, std::numeric_limits<std::int32_t>::max()};
      }
    }
    if (auto u = e.as<UnaryNode>(); u && u->op == UnaryOp::Neg) {
      MaybeRange a = range(u->a);
      if (!a.known || a.lo == std::numeric_limits<std::int64_t>::min()) return {};
      return within(d, {true, -a.hi, -a.lo});
    }
    if (auto c = e.as<CastNode>()) {
      MaybeRange a = range(c->a);
      return within(d, a);
    }
    if (auto s = e.as<SelectNode>()) {
      MaybeRange t = range(s->t), f = range(s->f);
      if (!t.known || !f.known) return {};
      return {true, std::min(t.lo, f.lo), std::max(t.hi, f.hi)};
    }
    if (auto c = e.as<CallNode>(); c && (c->op == Intrinsic::Min || c->op == Intrinsic::Max) && c->args.size() == 2) {
      MaybeRange a = range(c->args[0]), b = range(c->args[1]);
      if (!a.known || !b.known) return {};
      if (c->op == Intrinsic::Min) return {true, std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      return {true, std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    auto b = e.as<BinaryNode>();
    if (!b) return {};
    MaybeRange x = range(b->a), y = range(b->b);
    if (!x.known || !y.known) return {};
    std::int64_t lo = 0, hi = 0;
    switch (b->op) {
    case BinaryOp::Add:
      if (__builtin_add_overflow(x.lo, y.lo, &lo) || __builtin_add_overflow(x.hi, y.hi, &hi)) return {};
      return within(d, {true, lo, hi});
    case BinaryOp::Sub:
      if (__builtin_sub_overflow(x.lo, y.hi, &lo) || __builtin_sub_overflow(x.hi, y.lo, &hi)) return {};
      return within(d, {true, lo, hi});
    case BinaryOp::Mul: {
      std::int64_t p[4];
      if (__builtin_mul_overflow(x.lo, y.lo, &p[0]) || __builtin_mul_overflow(x.lo, y.hi, &p[1]) ||
          __builtin_mul_overflow(x.hi, y.lo, &p[2]) || __builtin_mul_overflow(x.hi, y.hi, &p[3]))
        return {};
      return within(d, {true, *std::min_element(p, p + 4), *std::max_element(p, p + 4)});
    }
    case BinaryOp::Div:
      if (y.lo != y.hi || y.lo <= 0) return {};
      return {true, x.lo / y.lo, x.hi / y.lo}; // truncation is monotone for a positive divisor
    case BinaryOp::Mod:
      if (y.lo != y.hi || y.lo <= 0) return {};
      if (x.lo >= 0) return x.hi < y.lo ? x : MaybeRange{true, 0, std::min(x.hi, y.lo - 1)};
      return {true, std::max(x.lo, -(y.lo - 1)), std::min(x.hi, y.lo - 1)};
    default: return {};
    }
  }

  bool nonnegative(const Expr &e) {
    MaybeRange r = range(e);
    return r.known && r.lo >= 0;
  }

  // ---- linear forms ----

  void add_term(Linear &l, const Expr &atom, std::int64_t coef) {
    for (auto &t : l.terms)
      if (same(t.atom, atom)) {
        if (__builtin_add_overflow(t.coef, coef, &t.coef)) l.ok = false;
        return;
      }
    l.terms.push_back({atom, coef});
  }

  void collect(const Expr &e, std::int64_t scale, Linear &l) {
    if (!l.ok) return;
    std::int64_t v = 0;
    if (auto c = int_constant(e)) {
      if (__builtin_mul_overflow(*c, scale, &v) || __builtin_add_overflow(l.constant, v, &l.constant)) l.ok = false;
      return;
    }
    if (auto b = e.as<BinaryNode>()) {
      if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
        collect(b->a, scale, l);
        if (b->op == BinaryOp::Sub && scale == std::numeric_limits<std::int64_t>::min()) l.ok = false;
        else collect(b->b, b->op == BinaryOp::Add ? scale : -scale, l);
        return;
      }
      if (b->op == BinaryOp::Mul) {
        auto cb = int_constant(b->b), ca = int_constant(b->a);
        if (cb || ca) {
          if (__builtin_mul_overflow(scale, cb ? *cb : *ca, &v)) l.ok = false;
          else collect(cb ? b->a : b->b, v, l);
          return;
        }
      }
    }
    if (auto u = e.as<UnaryNode>(); u && u->op == UnaryOp::Neg && scale != std::numeric_limits<std::int64_t>::min()) {
      collect(u->a, -scale, l);
      return;
    }
    add_term(l, e, scale);
  }

  /// Applies `(x / a) * a + x % a = x` (also with x / a written as x' / (a1 * a) for x = x' / a1)
  /// and `((x / a) % b) * a + x % a = x % (a * b)` (x >= 0) until neither applies; drops zero terms.
  void combine(Linear &l, DataType d) {
    for (bool changed = true; changed && l.ok;) {
      changed = false;
      for (std::size_t i = 0; i < l.terms.size() && !changed; ++i) {
        auto m = l.terms[i].atom.as<BinaryNode>();
        if (!m || m->op != BinaryOp::Mod || l.terms[i].coef == 0) continue;
        auto a = int_constant(m->b);
        std::int64_t want = 0;
        if (!a || *a <= 0 || __builtin_mul_overflow(l.terms[i].coef, *a, &want)) continue;
        for (std::size_t j = 0; j < l.terms.size() && !changed; ++j) {
          if (j == i || l.terms[j].coef != want) continue;
          auto o = l.terms[j].atom.as<BinaryNode>();
          if (!o) continue;
          std::int64_t k = l.terms[i].coef;
          // (x / (a1 * a)) * a + (x / a1) % a: the division by a1 * a is (x / a1) / a, in C's
          // truncating arithmetic too (an unravel chain of several extents written back).
          auto div_of_div = [&] {
            auto y = m->a.as<BinaryNode>();
            if (!y || y->op != BinaryOp::Div || !same(o->a, y->a)) return false;
            auto a1 = int_constant(y->b), d = int_constant(o->b);
            std::int64_t prod = 0;
            return a1 && *a1 > 0 && d && !__builtin_mul_overflow(*a1, *a, &prod) && prod == *d;
          };
          if (o->op == BinaryOp::Div && ((int_constant(o->b) == a && same(o->a, m->a)) || div_of_div())) {
            Expr x = m->a;
            erase_pair(l, i, j);
            collect(x, k, l);
            changed = true;
          } else if (o->op == BinaryOp::Mod) {
            auto b = int_constant(o->b);
            auto inner = o->a.as<BinaryNode>();
            std::int64_t ab = 0;
            if (b && *b > 0 && inner && inner->op == BinaryOp::Div && int_constant(inner->b) == a && same(inner->a, m->a) &&
                nonnegative(m->a) && !__builtin_mul_overflow(*a, *b, &ab) && within(d, {true, ab, ab}).known) {
              Expr x = m->a;
              erase_pair(l, i, j);
              collect(rewrite(BinaryNode::make(BinaryOp::Mod, x, constant(d, ab))), k, l);
              changed = true;
            }
          }
        }
      }
    }
    l.terms.erase(std::remove_if(l.terms.begin(), l.terms.end(), [](const Term &t) { return t.coef == 0; }), l.terms.end());
  }

  static void erase_pair(Linear &l, std::size_t i, std::size_t j) {
    l.terms.erase(l.terms.begin() + std::ptrdiff_t(std::max(i, j)));
    l.terms.erase(l.terms.begin() + std::ptrdiff_t(std::min(i, j)));
  }

  /// The expression of `l` in dtype `d`: the terms with positive coefficients first.
  std::optional<Expr> build(const Linear &l, DataType d) {
    if (!l.ok) return std::nullopt;
    MaybeRange t = dtype_range(d);
    auto fits = [&](std::int64_t v) { return v >= t.lo && v <= t.hi; };
    std::vector<Term> order;
    for (const auto &x : l.terms) if (x.coef > 0) order.push_back(x);
    for (const auto &x : l.terms) if (x.coef < 0) order.push_back(x);
    Expr acc;
    for (const auto &x : order) {
      if (x.coef == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
      std::int64_t mag = x.coef < 0 ? -x.coef : x.coef;
      if (!fits(mag) || dtype_of(x.atom->type) != d) return std::nullopt;
      Expr term = mag == 1 ? x.atom : BinaryNode::make(BinaryOp::Mul, x.atom, constant(d, mag));
      if (!acc) acc = x.coef < 0 ? UnaryNode::make(UnaryOp::Neg, term) : term;
      else acc = BinaryNode::make(x.coef < 0 ? BinaryOp::Sub : BinaryOp::Add, acc, term);
    }
    if (!acc) return fits(l.constant) ? std::optional<Expr>(constant(d, l.constant)) : std::nullopt;
    if (l.constant != 0) {
      if (l.constant == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
      std::int64_t mag = l.constant < 0 ? -l.constant : l.constant;
      if (!fits(mag)) return std::nullopt;
      acc = BinaryNode::make(l.constant < 0 ? BinaryOp::Sub : BinaryOp::Add, acc, constant(d, mag));
    }
    return acc;
  }

  // ---- rules ----

  Expr rewrite(const Expr &e) {
    if (auto b = e.as<BinaryNode>()) {
      if (is_int_scalar(e)) {
        switch (b->op) {
        case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: return rewrite_linear(e);
        case BinaryOp::Div: case BinaryOp::Mod: return rewrite_div_mod(e, b);
        default: return e;
        }
      }
      if (is_comparison(b->op) && is_int_scalar(b->a)) return rewrite_compare(e, b);
      return e;
    }
    if (auto u = e.as<UnaryNode>(); u && u->op == UnaryOp::Neg && is_int_scalar(e)) return rewrite_linear(e);
    if (auto c = e.as<CallNode>(); c && (c->op == Intrinsic::Min || c->op == Intrinsic::Max) && c->args.size() == 2 &&
                                   is_int_scalar(e)) {
      MaybeRange a = range(c->args[0]), b = range(c->args[1]);
      if (!a.known || !b.known) return e;
      bool first = c->op == Intrinsic::Min ? a.hi <= b.lo : a.lo >= b.hi;
      bool second = c->op == Intrinsic::Min ? b.hi <= a.lo : b.lo >= a.hi;
      return first ? c->args[0] : second ? c->args[1] : e;
    }
    return e;
  }

  Expr rewrite_linear(const Expr &e) {
    DataType d = dtype_of(e->type);
    Linear l;
    collect(e, 1, l);
    combine(l, d);
    auto r = build(l, d);
    return r && !structural_equal(*r, e) ? *r : e;
  }

  Expr rewrite_compare(const Expr &e, const BinaryNode *b) {
    MaybeRange x = range(b->a), y = range(b->b);
    if (!x.known || !y.known) return e;
    std::optional<bool> v;
    switch (b->op) {
    case BinaryOp::Lt: if (x.hi < y.lo) v = true; else if (x.lo >= y.hi) v = false; break;
    case BinaryOp::Le: if (x.hi <= y.lo) v = true; else if (x.lo > y.hi) v = false; break;
    case BinaryOp::Gt: if (x.lo > y.hi) v = true; else if (x.hi <= y.lo) v = false; break;
    case BinaryOp::Ge: if (x.lo >= y.hi) v = true; else if (x.hi < y.lo) v = false; break;
    case BinaryOp::Eq: if (x.lo == x.hi && y.lo == y.hi) v = x.lo == y.lo; else if (x.hi < y.lo || y.hi < x.lo) v = false; break;
    case BinaryOp::Ne: if (x.lo == x.hi && y.lo == y.hi) v = x.lo != y.lo; else if (x.hi < y.lo || y.hi < x.lo) v = true; break;
    default: break;
    }
    return v ? boolean(*v, e->loc) : e;
  }

  Expr rewrite_div_mod(const Expr &e, const BinaryNode *b) {
    bool div = b->op == BinaryOp::Div;
    DataType d = dtype_of(e->type);
    auto c = int_constant(b->b);
    if (!c || *c <= 0) return e;
    const Expr &x = b->a;
    MaybeRange r = range(x);
    if (!r.known || r.lo < 0) return e;
    if (r.hi < *c) return div ? constant(d, 0) : x;
    // (y / a) / c = y / (a * c); (y % (c * m)) % c = y % c (y >= 0)
    if (auto inner = x.as<BinaryNode>(); inner && nonnegative(inner->a)) {
      auto a = int_constant(inner->b);
      std::int64_t ac = 0;
      if (div && inner->op == BinaryOp::Div && a && *a > 0 && !__builtin_mul_overflow(*a, *c, &ac) &&
          within(d, {true, ac, ac}).known)
        return rewrite(BinaryNode::make(BinaryOp::Div, inner->a, constant(d, ac)));
      if (!div && inner->op == BinaryOp::Mod && a && *a > 0 && *a % *c == 0)
        return rewrite(BinaryNode::make(BinaryOp::Mod, inner->a, b->b));
    }
    // x = c * q + r with the terms of r not multiples of c.
    Linear l, q, rest;
    collect(x, 1, l);
    if (!l.ok) return e;
    for (const auto &t : l.terms) {
      if (t.coef % *c == 0) q.terms.push_back({t.atom, t.coef / *c});
      else rest.terms.push_back(t);
    }
    q.constant = floor_div(l.constant, *c);
    rest.constant = l.constant - q.constant * *c;
    if (q.terms.empty() && q.constant == 0) return e;
    auto rexp = build(rest, d);
    if (!rexp || !nonnegative(*rexp)) return e;
    Expr part = rewrite(BinaryNode::make(b->op, *rexp, b->b));
    if (!div) return part;
    collect(part, 1, q);
    combine(q, d);
    auto out = build(q, d);
    return out ? *out : e;
  }
};

/// The variables that a function may write after their declaration: assigned, bound to an asm
/// output, or whose address is taken.
HIDET_INLINE std::unordered_set<const VarNode *> written_vars(const Stmt &body) {
  struct Finder : IRVisitor {
    std::unordered_set<const VarNode *> vars;
    void visit(const Stmt &s) override {
      if (auto a = s.as<AssignStmtNode>()) vars.insert(a->var.get());
      if (auto a = s.as<AsmStmtNode>())
        for (const auto &o : a->outputs)
          if (auto v = o.expr.as<VarNode>()) vars.insert(v);
      IRVisitor::visit(s);
    }
    void visit(const Expr &e) override {
      if (auto a = e.as<AddressNode>())
        if (auto v = a->a.as<VarNode>()) vars.insert(v);
      IRVisitor::visit(e);
    }
  } f;
  f.visit(body);
  return std::move(f.vars);
}

/// simplify_index over a function: the ranges come from the launch dimensions, the loops'
/// bounds, the declarations of variables never written again, and the conditions of ifs.
class IndexRangePass : public IRMutator {
public:
  explicit IndexRangePass(const Function &f) : written_(written_vars(f->body)) {
    if (f->func_kind != FuncKind::Kernel) return;
    auto dims = [&](const std::array<Expr, 3> &d, bool has, int idx, int dim) {
      if (!has) return;
      for (int k = 0; k < 3; ++k) {
        std::optional<std::int64_t> c = d[std::size_t(k)] ? int_constant(d[std::size_t(k)]) : std::optional<std::int64_t>(1);
        if (!c || *c <= 0) continue;
        builtins_[std::size_t(idx + k)] = {true, 0, *c - 1};
        builtins_[std::size_t(dim + k)] = {true, *c, *c};
      }
    };
    dims(f->attrs.block_dim, f->attrs.has_block, int(BuiltinKind::ThreadIdxX), int(BuiltinKind::BlockDimX));
    dims(f->attrs.grid_dim, f->attrs.has_grid, int(BuiltinKind::BlockIdxX), int(BuiltinKind::GridDimX));
  }

  using IRMutator::mutate;
  Expr mutate(const Expr &e) override {
    if (!e) return e;
    return IndexSimplifier(ranges_, &builtins_).mutate(e);
  }

protected:
  Stmt mutate_DeclareStmt(const Stmt &s, const DeclareStmtNode *n) override {
    Stmt r = IRMutator::mutate_DeclareStmt(s, n);
    auto d = r.as<DeclareStmtNode>();
    if (d->init && is_int_scalar(d->var) && !written_.count(d->var.get())) {
      MaybeRange g = IndexSimplifier(ranges_, &builtins_).range_of(d->init);
      if (g.known) ranges_[d->var.get()] = {g.lo, g.hi};
    }
    return r;
  }

  Stmt mutate_ForStmt(const Stmt &s, const ForStmtNode *n) override {
    Expr a = mutate(n->start), b = mutate(n->stop), c = mutate(n->step);
    IndexRanges saved = ranges_;
    IndexSimplifier sim(ranges_, &builtins_);
    MaybeRange ra = sim.range_of(a), rb = sim.range_of(b);
    auto step = int_constant(c);
    if (is_int_scalar(n->var) && !written_.count(n->var.get()) && step && *step > 0 && ra.known && rb.known &&
        rb.hi - 1 >= ra.lo)
      ranges_[n->var.get()] = {ra.lo, rb.hi - 1};
    Stmt body = mutate(n->body);
    ranges_ = std::move(saved);
    if (a.same_as(n->start) && b.same_as(n->stop) && c.same_as(n->step) && body.same_as(n->body)) return s;
    return ForStmtNode::make(n->var, a, b, c, n->unroll, body, n->loc);
  }

  Stmt mutate_IfStmt(const Stmt &s, const IfStmtNode *n) override {
    Expr c = mutate(n->cond);
    IndexRanges saved = ranges_;
    narrow(c);
    Stmt t = mutate(n->then_body);
    ranges_ = saved;
    Stmt f = n->else_body ? mutate(n->else_body) : n->else_body;
    ranges_ = std::move(saved);
    if (c.same_as(n->cond) && t.same_as(n->then_body) && f.same_as(n->else_body)) return s;
    return IfStmtNode::make(c, t, f, n->loc);
  }

private:
  std::unordered_set<const VarNode *> written_;
  IndexRanges ranges_;
  BuiltinRanges builtins_{};

  /// Narrows the ranges of unwritten variables compared in `cond` (conjunctions of comparisons).
  void narrow(const Expr &cond) {
    auto b = cond.as<BinaryNode>();
    if (!b) return;
    if (b->op == BinaryOp::LogicalAnd) {
      narrow(b->a);
      narrow(b->b);
      return;
    }
    if (!is_comparison(b->op) || b->op == BinaryOp::Ne || !is_int_scalar(b->a)) return;
    bound(b->a, b->op, b->b);
    BinaryOp flipped = b->op == BinaryOp::Lt ? BinaryOp::Gt : b->op == BinaryOp::Gt ? BinaryOp::Lt
                     : b->op == BinaryOp::Le ? BinaryOp::Ge : b->op == BinaryOp::Ge ? BinaryOp::Le : b->op;
    bound(b->b, flipped, b->a);
  }

  /// Narrows variable `x` by `x op y`.
  void bound(const Expr &x, BinaryOp op, const Expr &y) {
    auto v = x.as<VarNode>();
    if (!v || written_.count(v)) return;
    IndexSimplifier sim(ranges_, &builtins_);
    MaybeRange ry = sim.range_of(y), rx = sim.range_of(x);
    if (!ry.known) return;
    if (!rx.known) rx = dtype_range(dtype_of(x->type));
    switch (op) {
    case BinaryOp::Lt: rx.hi = std::min(rx.hi, ry.hi - 1); break;
    case BinaryOp::Le: rx.hi = std::min(rx.hi, ry.hi); break;
    case BinaryOp::Gt: rx.lo = std::max(rx.lo, ry.lo + 1); break;
    case BinaryOp::Ge: rx.lo = std::max(rx.lo, ry.lo); break;
    case BinaryOp::Eq: rx.lo = std::max(rx.lo, ry.lo); rx.hi = std::min(rx.hi, ry.hi); break;
    default: return;
    }
    if (rx.lo <= rx.hi) ranges_[v] = {rx.lo, rx.hi};
  }
};

} // namespace detail

HIDET_INLINE Function simplify_index(const Function &f) { return detail::IndexRangePass(f).mutate(f); }

HIDET_INLINE Module simplify_index(const Module &m) {
  std::vector<Function> fs;
  bool changed = false;
  for (const auto &f : m->functions) {
    fs.push_back(simplify_index(f));
    changed = changed || !fs.back().same_as(f);
  }
  return changed ? make_module(std::move(fs)) : m;
}

HIDET_INLINE Expr simplify_index(const Expr &e, const IndexRanges &ranges) {
  detail::IndexSimplifier s(ranges);
  return simplify(s.mutate(e));
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
