// Definitions for hidet/ir/equal.hpp.
#pragma once
#include "hidet/ir/equal.hpp"

#include <bit>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

namespace detail {

/// Compares two trees, keeping the bijection between their bound variables.
class EqualChecker {
public:
  bool type(const Type &a, const Type &b) {
    if (a.same_as(b)) return true;
    if (!a || !b || a->kind != b->kind) return false;
    if (auto x = a.as<ScalarTypeNode>()) return x->dtype == b.as<ScalarTypeNode>()->dtype;
    if (auto x = a.as<PointerTypeNode>()) return type(x->base, b.as<PointerTypeNode>()->base);
    if (auto x = a.as<TensorTypeNode>()) {
      auto y = b.as<TensorTypeNode>();
      if (x->dtype != y->dtype || x->scope != y->scope || !exprs(x->shape, y->shape)) return false;
      if (x->layout.defined() != y->layout.defined()) return false;
      return !x->layout || x->layout.same_as(y->layout) || x->layout->equals(*y->layout);
    }
    return true; // void
  }

  /// Records that `a` and `b` are bound at the same position.
  bool bind(const Var &a, const Var &b) {
    if (!type(a->type, b->type)) return false;
    if (auto it = l2r_.find(a.get()); it != l2r_.end()) r2l_.erase(it->second);
    if (auto it = r2l_.find(b.get()); it != r2l_.end()) l2r_.erase(it->second);
    l2r_[a.get()] = b.get();
    r2l_[b.get()] = a.get();
    return true;
  }

  bool var(const VarNode *a, const VarNode *b) {
    auto it = l2r_.find(a);
    auto jt = r2l_.find(b);
    if (it != l2r_.end() || jt != r2l_.end()) return it != l2r_.end() && it->second == b;
    if (bind_free_) return bind(Var(a), Var(b));
    return a == b;
  }

  bool exprs(const std::vector<Expr> &a, const std::vector<Expr> &b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!expr(a[i], b[i])) return false;
    return true;
  }

  bool expr(const Expr &a, const Expr &b) {
    if (!a || !b) return !a && !b;
    if (a->kind != b->kind) return false;
    if (auto x = a.as<VarNode>()) return var(x, b.as<VarNode>());
    if (!type(a->type, b->type)) return false;
    switch (a->kind) {
    case NodeKind::Constant: {
      auto x = a.as<ConstantNode>(), y = b.as<ConstantNode>();
      return x->dtype == y->dtype && x->ivalue == y->ivalue &&
             std::bit_cast<std::uint64_t>(x->fvalue) == std::bit_cast<std::uint64_t>(y->fvalue);
    }
    case NodeKind::Builtin: return a.as<BuiltinNode>()->which == b.as<BuiltinNode>()->which;
    case NodeKind::Unary: {
      auto x = a.as<UnaryNode>(), y = b.as<UnaryNode>();
      return x->op == y->op && expr(x->a, y->a);
    }
    case NodeKind::Binary: {
      auto x = a.as<BinaryNode>(), y = b.as<BinaryNode>();
      return x->op == y->op && expr(x->a, y->a) && expr(x->b, y->b);
    }
    case NodeKind::Cast: return expr(a.as<CastNode>()->a, b.as<CastNode>()->a);
    case NodeKind::Select: {
      auto x = a.as<SelectNode>(), y = b.as<SelectNode>();
      return expr(x->cond, y->cond) && expr(x->t, y->t) && expr(x->f, y->f);
    }
    case NodeKind::Call: {
      auto x = a.as<CallNode>(), y = b.as<CallNode>();
      return x->op == y->op && x->func_name == y->func_name && x->text == y->text &&
             exprs(x->args, y->args);
    }
    case NodeKind::TensorElement: {
      auto x = a.as<TensorElementNode>(), y = b.as<TensorElementNode>();
      return var(x->base.get(), y->base.get()) && exprs(x->indices, y->indices);
    }
    case NodeKind::Address: return expr(a.as<AddressNode>()->a, b.as<AddressNode>()->a);
    case NodeKind::Deref: return expr(a.as<DerefNode>()->a, b.as<DerefNode>()->a);
    default: return false;
    }
  }

  bool operands(const std::vector<AsmOperand> &a, const std::vector<AsmOperand> &b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].constraint != b[i].constraint || !expr(a[i].expr, b[i].expr)) return false;
    return true;
  }

  bool stmt(const Stmt &a, const Stmt &b) {
    if (!a || !b) return !a && !b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case NodeKind::DeclareStmt: {
      auto x = a.as<DeclareStmtNode>(), y = b.as<DeclareStmtNode>();
      return expr(x->init, y->init) && bind(x->var, y->var);
    }
    case NodeKind::AssignStmt: {
      auto x = a.as<AssignStmtNode>(), y = b.as<AssignStmtNode>();
      return var(x->var.get(), y->var.get()) && expr(x->value, y->value);
    }
    case NodeKind::BufferStoreStmt: {
      auto x = a.as<BufferStoreStmtNode>(), y = b.as<BufferStoreStmtNode>();
      return var(x->base.get(), y->base.get()) && exprs(x->indices, y->indices) &&
             expr(x->value, y->value);
    }
    case NodeKind::SeqStmt: {
      auto &x = a.as<SeqStmtNode>()->seq, &y = b.as<SeqStmtNode>()->seq;
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!stmt(x[i], y[i])) return false;
      return true;
    }
    case NodeKind::ForStmt: {
      auto x = a.as<ForStmtNode>(), y = b.as<ForStmtNode>();
      return x->unroll == y->unroll && expr(x->start, y->start) && expr(x->stop, y->stop) &&
             expr(x->step, y->step) && bind(x->var, y->var) && stmt(x->body, y->body);
    }
    case NodeKind::WhileStmt: {
      auto x = a.as<WhileStmtNode>(), y = b.as<WhileStmtNode>();
      return expr(x->cond, y->cond) && stmt(x->body, y->body);
    }
    case NodeKind::IfStmt: {
      auto x = a.as<IfStmtNode>(), y = b.as<IfStmtNode>();
      return expr(x->cond, y->cond) && stmt(x->then_body, y->then_body) &&
             stmt(x->else_body, y->else_body);
    }
    case NodeKind::BreakStmt:
    case NodeKind::ContinueStmt: return true;
    case NodeKind::ReturnStmt: return expr(a.as<ReturnStmtNode>()->value, b.as<ReturnStmtNode>()->value);
    case NodeKind::EvaluateStmt:
      return expr(a.as<EvaluateStmtNode>()->expr, b.as<EvaluateStmtNode>()->expr);
    case NodeKind::AssertStmt: {
      auto x = a.as<AssertStmtNode>(), y = b.as<AssertStmtNode>();
      return x->message == y->message && expr(x->cond, y->cond);
    }
    case NodeKind::AsmStmt: {
      auto x = a.as<AsmStmtNode>(), y = b.as<AsmStmtNode>();
      return x->templ == y->templ && x->is_volatile == y->is_volatile &&
             x->memory_clobber == y->memory_clobber && operands(x->outputs, y->outputs) &&
             operands(x->inputs, y->inputs);
    }
    default: return false;
    }
  }

  bool function(const Function &a, const Function &b) {
    if (a.same_as(b)) return true;
    if (!a || !b) return false;
    if (a->name != b->name || a->func_kind != b->func_kind || a->params.size() != b->params.size())
      return false;
    if (!type(a->ret_type, b->ret_type)) return false;
    for (std::size_t i = 0; i < a->params.size(); ++i) {
      bind_free_ = true; // symbolic dims are bound where they first appear
      bool ok = type(a->params[i]->type, b->params[i]->type);
      bind_free_ = false;
      if (!ok || !bind(a->params[i], b->params[i])) return false;
    }
    auto &x = a->attrs, &y = b->attrs;
    for (int i = 0; i < 3; ++i)
      if (!expr(x.grid_dim[i], y.grid_dim[i]) || !expr(x.block_dim[i], y.block_dim[i])) return false;
    if (x.has_grid != y.has_grid || x.has_block != y.has_block || x.min_blocks != y.min_blocks ||
        x.cluster_dim != y.cluster_dim ||
        !expr(x.dynamic_smem_bytes, y.dynamic_smem_bytes))
      return false;
    return stmt(a->body, b->body);
  }

  bool module(const Module &a, const Module &b) {
    if (a.same_as(b)) return true;
    if (!a || !b || a->functions.size() != b->functions.size()) return false;
    for (std::size_t i = 0; i < a->functions.size(); ++i)
      if (!function(a->functions[i], b->functions[i])) return false;
    return true;
  }

private:
  std::unordered_map<const VarNode *, const VarNode *> l2r_, r2l_;
  bool bind_free_ = false;
};

/// Hashes a tree in the same traversal order as EqualChecker compares it.
class Hasher {
public:
  std::size_t value() const { return h_; }
  void mix(std::size_t x) { h_ ^= x + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2); }

  void type(const Type &t) {
    if (!t) return mix(0x51);
    mix(std::size_t(t->kind) + 1);
    if (auto x = t.as<ScalarTypeNode>()) return mix(std::size_t(x->dtype.code));
    if (auto x = t.as<PointerTypeNode>()) return type(x->base);
    if (auto x = t.as<TensorTypeNode>()) {
      mix(std::size_t(x->dtype.code)), mix(std::size_t(x->scope));
      exprs(x->shape);
      mix(x->layout ? x->layout->hash() : 0x17);
    }
  }

  void bind(const Var &v) {
    type(v->type);
    bound_[v.get()] = next_++;
  }

  void var(const VarNode *v) {
    auto it = bound_.find(v);
    if (it != bound_.end()) return mix(it->second * 31 + 7);
    if (bind_free_) {
      bind(Var(v));
      return mix(bound_[v] * 31 + 7);
    }
    mix(std::hash<const void *>()(v));
  }

  void exprs(const std::vector<Expr> &xs) {
    mix(xs.size());
    for (auto &x : xs) expr(x);
  }

  void expr(const Expr &e) {
    if (!e) return mix(0x3c);
    mix(std::size_t(e->kind) + 100);
    if (auto v = e.as<VarNode>()) return var(v);
    type(e->type);
    switch (e->kind) {
    case NodeKind::Constant: {
      auto c = e.as<ConstantNode>();
      mix(std::size_t(c->ivalue)), mix(std::bit_cast<std::uint64_t>(c->fvalue));
      break;
    }
    case NodeKind::Builtin: mix(std::size_t(e.as<BuiltinNode>()->which)); break;
    case NodeKind::Unary: mix(std::size_t(e.as<UnaryNode>()->op)), expr(e.as<UnaryNode>()->a); break;
    case NodeKind::Binary: {
      auto b = e.as<BinaryNode>();
      mix(std::size_t(b->op)), expr(b->a), expr(b->b);
      break;
    }
    case NodeKind::Cast: expr(e.as<CastNode>()->a); break;
    case NodeKind::Select: {
      auto s = e.as<SelectNode>();
      expr(s->cond), expr(s->t), expr(s->f);
      break;
    }
    case NodeKind::Call: {
      auto c = e.as<CallNode>();
      mix(std::size_t(c->op)), mix(std::hash<std::string>()(c->func_name));
      mix(std::hash<std::string>()(c->text)), exprs(c->args);
      break;
    }
    case NodeKind::TensorElement: {
      auto t = e.as<TensorElementNode>();
      var(t->base.get()), exprs(t->indices);
      break;
    }
    case NodeKind::Address: expr(e.as<AddressNode>()->a); break;
    case NodeKind::Deref: expr(e.as<DerefNode>()->a); break;
    default: break;
    }
  }

  void operands(const std::vector<AsmOperand> &ops) {
    mix(ops.size());
    for (auto &o : ops) mix(std::hash<std::string>()(o.constraint)), expr(o.expr);
  }

  void stmt(const Stmt &s) {
    if (!s) return mix(0x5d);
    mix(std::size_t(s->kind) + 200);
    switch (s->kind) {
    case NodeKind::DeclareStmt: {
      auto d = s.as<DeclareStmtNode>();
      expr(d->init), bind(d->var);
      break;
    }
    case NodeKind::AssignStmt: {
      auto a = s.as<AssignStmtNode>();
      var(a->var.get()), expr(a->value);
      break;
    }
    case NodeKind::BufferStoreStmt: {
      auto b = s.as<BufferStoreStmtNode>();
      var(b->base.get()), exprs(b->indices), expr(b->value);
      break;
    }
    case NodeKind::SeqStmt: {
      auto &q = s.as<SeqStmtNode>()->seq;
      mix(q.size());
      for (auto &x : q) stmt(x);
      break;
    }
    case NodeKind::ForStmt: {
      auto f = s.as<ForStmtNode>();
      mix(std::size_t(f->unroll)), expr(f->start), expr(f->stop), expr(f->step);
      bind(f->var), stmt(f->body);
      break;
    }
    case NodeKind::WhileStmt: expr(s.as<WhileStmtNode>()->cond), stmt(s.as<WhileStmtNode>()->body); break;
    case NodeKind::IfStmt: {
      auto i = s.as<IfStmtNode>();
      expr(i->cond), stmt(i->then_body), stmt(i->else_body);
      break;
    }
    case NodeKind::ReturnStmt: expr(s.as<ReturnStmtNode>()->value); break;
    case NodeKind::EvaluateStmt: expr(s.as<EvaluateStmtNode>()->expr); break;
    case NodeKind::AssertStmt: {
      auto a = s.as<AssertStmtNode>();
      mix(std::hash<std::string>()(a->message)), expr(a->cond);
      break;
    }
    case NodeKind::AsmStmt: {
      auto a = s.as<AsmStmtNode>();
      mix(std::hash<std::string>()(a->templ)), mix(a->is_volatile * 2 + a->memory_clobber);
      operands(a->outputs), operands(a->inputs);
      break;
    }
    default: break;
    }
  }

  void function(const Function &f) {
    mix(std::hash<std::string>()(f->name)), mix(std::size_t(f->func_kind));
    mix(f->params.size()), type(f->ret_type);
    for (auto &p : f->params) {
      bind_free_ = true;
      type(p->type);
      bind_free_ = false;
      bind(p);
    }
    for (int i = 0; i < 3; ++i) expr(f->attrs.grid_dim[i]), expr(f->attrs.block_dim[i]);
    mix(f->attrs.has_grid * 2 + f->attrs.has_block), mix(std::size_t(f->attrs.min_blocks));
    for (int c : f->attrs.cluster_dim) mix(std::size_t(c));
    expr(f->attrs.dynamic_smem_bytes);
    stmt(f->body);
  }

  void module(const Module &m) {
    mix(m->functions.size());
    for (auto &f : m->functions) function(f);
  }

private:
  std::size_t h_ = 0;
  std::size_t next_ = 0;
  std::unordered_map<const VarNode *, std::size_t> bound_;
  bool bind_free_ = false;
};

} // namespace detail

HIDET_INLINE bool structural_equal(const Expr &a, const Expr &b) {
  return detail::EqualChecker().expr(a, b);
}
HIDET_INLINE bool structural_equal(const Type &a, const Type &b) {
  return detail::EqualChecker().type(a, b);
}
HIDET_INLINE bool structural_equal(const Stmt &a, const Stmt &b) {
  return detail::EqualChecker().stmt(a, b);
}
HIDET_INLINE bool structural_equal(const Function &a, const Function &b) {
  return detail::EqualChecker().function(a, b);
}
HIDET_INLINE bool structural_equal(const Module &a, const Module &b) {
  return detail::EqualChecker().module(a, b);
}

HIDET_INLINE std::size_t structural_hash(const Expr &x) {
  detail::Hasher h;
  h.expr(x);
  return h.value();
}
HIDET_INLINE std::size_t structural_hash(const Type &x) {
  detail::Hasher h;
  h.type(x);
  return h.value();
}
HIDET_INLINE std::size_t structural_hash(const Stmt &x) {
  detail::Hasher h;
  h.stmt(x);
  return h.value();
}
HIDET_INLINE std::size_t structural_hash(const Function &x) {
  detail::Hasher h;
  h.function(x);
  return h.value();
}
HIDET_INLINE std::size_t structural_hash(const Module &x) {
  detail::Hasher h;
  h.module(x);
  return h.value();
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
