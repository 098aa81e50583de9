// Definitions for hidet/ir/functor.hpp.
#pragma once
#include "hidet/ir/functor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE void IRVisitor::visit(const Expr &e) {
  if (!e) return;
  switch (e->kind) {
#define HIDET_X(Name)                                                                              \
  case NodeKind::Name: return visit_##Name(static_cast<const Name##Node *>(e.get()));
    HIDET_EXPR_NODES(HIDET_X)
#undef HIDET_X
  default: HIDET_ASSERT(false, "not an expression");
  }
}

HIDET_INLINE void IRVisitor::visit(const Stmt &s) {
  if (!s) return;
  switch (s->kind) {
#define HIDET_X(Name)                                                                              \
  case NodeKind::Name: return visit_##Name(static_cast<const Name##Node *>(s.get()));
    HIDET_STMT_NODES(HIDET_X)
#undef HIDET_X
  default: HIDET_ASSERT(false, "not a statement");
  }
}

HIDET_INLINE void IRVisitor::visit(const Function &f) {
  for (auto &p : f->params) visit_type(p->type);
  for (auto &d : f->attrs.grid_dim) visit(d);
  for (auto &d : f->attrs.block_dim) visit(d);
  visit(f->attrs.dynamic_smem_bytes);
  visit(f->body);
}

HIDET_INLINE void IRVisitor::visit(const Module &m) {
  for (auto &f : m->functions) visit(f);
}

HIDET_INLINE void IRVisitor::visit_type(const Type &t) {
  if (auto tt = t.as<TensorTypeNode>())
    for (auto &d : tt->shape) visit(d);
}

HIDET_INLINE void IRVisitor::visit_Constant(const ConstantNode *) {}

HIDET_INLINE void IRVisitor::visit_Var(const VarNode *) {}

HIDET_INLINE void IRVisitor::visit_Builtin(const BuiltinNode *) {}

HIDET_INLINE void IRVisitor::visit_Unary(const UnaryNode *e) { visit(e->a); }

HIDET_INLINE void IRVisitor::visit_Binary(const BinaryNode *e) { visit(e->a), visit(e->b); }

HIDET_INLINE void IRVisitor::visit_Cast(const CastNode *e) { visit(e->a); }

HIDET_INLINE void IRVisitor::visit_Select(const SelectNode *e) {
  visit(e->cond), visit(e->t), visit(e->f);
}

HIDET_INLINE void IRVisitor::visit_Call(const CallNode *e) {
  for (auto &a : e->args) visit(a);
}

HIDET_INLINE void IRVisitor::visit_TensorElement(const TensorElementNode *e) {
  visit(Expr(e->base));
  for (auto &i : e->indices) visit(i);
}

HIDET_INLINE void IRVisitor::visit_Address(const AddressNode *e) { visit(e->a); }

HIDET_INLINE void IRVisitor::visit_Deref(const DerefNode *e) { visit(e->a); }

HIDET_INLINE void IRVisitor::visit_DeclareStmt(const DeclareStmtNode *s) {
  visit_type(s->var->type);
  visit(s->init);
}

HIDET_INLINE void IRVisitor::visit_AssignStmt(const AssignStmtNode *s) {
  visit(Expr(s->var));
  visit(s->value);
}

HIDET_INLINE void IRVisitor::visit_BufferStoreStmt(const BufferStoreStmtNode *s) {
  visit(Expr(s->base));
  for (auto &i : s->indices) visit(i);
  visit(s->value);
}

HIDET_INLINE void IRVisitor::visit_SeqStmt(const SeqStmtNode *s) {
  for (auto &x : s->seq) visit(x);
}

HIDET_INLINE void IRVisitor::visit_ForStmt(const ForStmtNode *s) {
  visit(s->start), visit(s->stop), visit(s->step);
  visit(s->body);
}

HIDET_INLINE void IRVisitor::visit_WhileStmt(const WhileStmtNode *s) {
  visit(s->cond), visit(s->body);
}

HIDET_INLINE void IRVisitor::visit_IfStmt(const IfStmtNode *s) {
  visit(s->cond), visit(s->then_body), visit(s->else_body);
}

HIDET_INLINE void IRVisitor::visit_BreakStmt(const BreakStmtNode *) {}

HIDET_INLINE void IRVisitor::visit_ContinueStmt(const ContinueStmtNode *) {}

HIDET_INLINE void IRVisitor::visit_ReturnStmt(const ReturnStmtNode *s) { visit(s->value); }

HIDET_INLINE void IRVisitor::visit_EvaluateStmt(const EvaluateStmtNode *s) { visit(s->expr); }

HIDET_INLINE void IRVisitor::visit_AssertStmt(const AssertStmtNode *s) { visit(s->cond); }

HIDET_INLINE void IRVisitor::visit_AsmStmt(const AsmStmtNode *s) {
  for (auto &o : s->outputs) visit(o.expr);
  for (auto &i : s->inputs) visit(i.expr);
}

HIDET_INLINE Expr IRMutator::mutate(const Expr &e) {
  if (!e) return e;
  switch (e->kind) {
#define HIDET_X(Name)                                                                              \
  case NodeKind::Name: return mutate_##Name(e, static_cast<const Name##Node *>(e.get()));
    HIDET_EXPR_NODES(HIDET_X)
#undef HIDET_X
  default: HIDET_ASSERT(false, "not an expression");
  }
  return e;
}

HIDET_INLINE Stmt IRMutator::mutate(const Stmt &s) {
  if (!s) return s;
  switch (s->kind) {
#define HIDET_X(Name)                                                                              \
  case NodeKind::Name: return mutate_##Name(s, static_cast<const Name##Node *>(s.get()));
    HIDET_STMT_NODES(HIDET_X)
#undef HIDET_X
  default: HIDET_ASSERT(false, "not a statement");
  }
  return s;
}

HIDET_INLINE Function IRMutator::mutate(const Function &f) {
  FuncAttrs attrs = f->attrs;
  bool changed = false;
  auto upd = [&](Expr &e) {
    Expr n = mutate(e);
    changed |= !n.same_as(e);
    e = n;
  };
  for (auto &d : attrs.grid_dim) upd(d);
  for (auto &d : attrs.block_dim) upd(d);
  upd(attrs.dynamic_smem_bytes);
  Stmt body = mutate(f->body);
  changed |= !body.same_as(f->body);
  if (!changed) return f;
  return make_function(f->name, f->params, body, f->ret_type, f->func_kind, attrs, f->loc);
}

HIDET_INLINE Module IRMutator::mutate(const Module &m) {
  std::vector<Function> fs;
  bool changed = false;
  for (auto &f : m->functions) {
    fs.push_back(mutate(f));
    changed |= !fs.back().same_as(f);
  }
  return changed ? make_module(std::move(fs)) : m;
}

HIDET_INLINE bool IRMutator::mutate_list(const std::vector<Expr> &in, std::vector<Expr> &out) {
  bool changed = false;
  out.clear();
  out.reserve(in.size());
  for (auto &x : in) {
    out.push_back(mutate(x));
    changed |= !out.back().same_as(x);
  }
  return changed;
}

HIDET_INLINE Var IRMutator::mutate_var_ref(const Var &v) {
  Expr e = mutate(Expr(v));
  auto nv = e.as<VarNode>();
  HIDET_ASSERT(nv, "a variable in a definition position was replaced by a non-variable");
  return Var(nv);
}

HIDET_INLINE Expr IRMutator::mutate_Constant(const Expr &e, const ConstantNode *) { return e; }

HIDET_INLINE Expr IRMutator::mutate_Var(const Expr &e, const VarNode *) { return e; }

HIDET_INLINE Expr IRMutator::mutate_Builtin(const Expr &e, const BuiltinNode *) { return e; }

HIDET_INLINE Expr IRMutator::mutate_Unary(const Expr &e, const UnaryNode *n) {
  Expr a = mutate(n->a);
  return a.same_as(n->a) ? e : UnaryNode::make(n->op, a, n->loc);
}

HIDET_INLINE Expr IRMutator::mutate_Binary(const Expr &e, const BinaryNode *n) {
  Expr a = mutate(n->a), b = mutate(n->b);
  return a.same_as(n->a) && b.same_as(n->b) ? e : BinaryNode::make(n->op, a, b, n->loc);
}

HIDET_INLINE Expr IRMutator::mutate_Cast(const Expr &e, const CastNode *n) {
  Expr a = mutate(n->a);
  return a.same_as(n->a) ? e : CastNode::make(a, n->type, n->loc);
}

HIDET_INLINE Expr IRMutator::mutate_Select(const Expr &e, const SelectNode *n) {
  Expr c = mutate(n->cond), t = mutate(n->t), f = mutate(n->f);
  return c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f) ? e : SelectNode::make(c, t, f, n->loc);
}

HIDET_INLINE Expr IRMutator::mutate_Call(const Expr &e, const CallNode *n) {
  std::vector<Expr> args;
  if (!mutate_list(n->args, args)) return e;
  return Expr(new CallNode(n->op, n->func_name, std::move(args), n->text, n->type, n->loc));
}

HIDET_INLINE Expr IRMutator::mutate_TensorElement(const Expr &e, const TensorElementNode *n) {
  Var base = mutate_var_ref(n->base);
  std::vector<Expr> idx;
  bool changed = mutate_list(n->indices, idx);
  if (!changed && base.same_as(n->base)) return e;
  return TensorElementNode::make(base, std::move(idx), n->loc);
}

HIDET_INLINE Expr IRMutator::mutate_Address(const Expr &e, const AddressNode *n) {
  Expr a = mutate(n->a);
  return a.same_as(n->a) ? e : AddressNode::make(a, n->loc);
}

HIDET_INLINE Expr IRMutator::mutate_Deref(const Expr &e, const DerefNode *n) {
  Expr a = mutate(n->a);
  return a.same_as(n->a) ? e : DerefNode::make(a, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_DeclareStmt(const Stmt &s, const DeclareStmtNode *n) {
  Var v = mutate_var_ref(n->var);
  Expr init = mutate(n->init);
  return v.same_as(n->var) && init.same_as(n->init) ? s : DeclareStmtNode::make(v, init, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_AssignStmt(const Stmt &s, const AssignStmtNode *n) {
  Var v = mutate_var_ref(n->var);
  Expr x = mutate(n->value);
  return v.same_as(n->var) && x.same_as(n->value) ? s : AssignStmtNode::make(v, x, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_BufferStoreStmt(const Stmt &s, const BufferStoreStmtNode *n) {
  Var base = mutate_var_ref(n->base);
  std::vector<Expr> idx;
  bool changed = mutate_list(n->indices, idx);
  Expr v = mutate(n->value);
  if (!changed && base.same_as(n->base) && v.same_as(n->value)) return s;
  return BufferStoreStmtNode::make(base, std::move(idx), v, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_SeqStmt(const Stmt &s, const SeqStmtNode *n) {
  std::vector<Stmt> out;
  bool changed = false;
  for (auto &x : n->seq) {
    out.push_back(mutate(x));
    changed |= !out.back().same_as(x);
  }
  return changed ? seq(std::move(out), n->loc) : s;
}

HIDET_INLINE Stmt IRMutator::mutate_ForStmt(const Stmt &s, const ForStmtNode *n) {
  Var v = mutate_var_ref(n->var);
  Expr a = mutate(n->start), b = mutate(n->stop), c = mutate(n->step);
  Stmt body = mutate(n->body);
  if (v.same_as(n->var) && a.same_as(n->start) && b.same_as(n->stop) && c.same_as(n->step) &&
      body.same_as(n->body))
    return s;
  return ForStmtNode::make(v, a, b, c, n->unroll, body, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_WhileStmt(const Stmt &s, const WhileStmtNode *n) {
  Expr c = mutate(n->cond);
  Stmt b = mutate(n->body);
  return c.same_as(n->cond) && b.same_as(n->body) ? s : WhileStmtNode::make(c, b, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_IfStmt(const Stmt &s, const IfStmtNode *n) {
  Expr c = mutate(n->cond);
  Stmt t = mutate(n->then_body), f = mutate(n->else_body);
  if (c.same_as(n->cond) && t.same_as(n->then_body) && f.same_as(n->else_body)) return s;
  return IfStmtNode::make(c, t, f, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_BreakStmt(const Stmt &s, const BreakStmtNode *) { return s; }

HIDET_INLINE Stmt IRMutator::mutate_ContinueStmt(const Stmt &s, const ContinueStmtNode *) {
  return s;
}

HIDET_INLINE Stmt IRMutator::mutate_ReturnStmt(const Stmt &s, const ReturnStmtNode *n) {
  Expr v = mutate(n->value);
  return v.same_as(n->value) ? s : ReturnStmtNode::make(v, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_EvaluateStmt(const Stmt &s, const EvaluateStmtNode *n) {
  Expr v = mutate(n->expr);
  return v.same_as(n->expr) ? s : EvaluateStmtNode::make(v, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_AssertStmt(const Stmt &s, const AssertStmtNode *n) {
  Expr c = mutate(n->cond);
  return c.same_as(n->cond) ? s : AssertStmtNode::make(c, n->message, n->loc);
}

HIDET_INLINE Stmt IRMutator::mutate_AsmStmt(const Stmt &s, const AsmStmtNode *n) {
  bool changed = false;
  auto ops = [&](const std::vector<AsmOperand> &in) {
    std::vector<AsmOperand> out;
    for (auto &o : in) {
      out.push_back({o.constraint, mutate(o.expr)});
      changed |= !out.back().expr.same_as(o.expr);
    }
    return out;
  };
  auto outs = ops(n->outputs), ins = ops(n->inputs);
  if (!changed) return s;
  return AsmStmtNode::make(n->templ, outs, ins, n->is_volatile, n->memory_clobber, n->loc);
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
