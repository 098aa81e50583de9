// Definitions for hidet/transforms/verify.hpp.
#pragma once

#include "hidet/transforms/verify.hpp"

#include <functional>
#include <unordered_map>
#include <vector>

#include "hidet/ir/functor.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/transforms/instantiate_symbols.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

namespace detail {

inline void check_grid_wait(const FunctionNode *f, int n, SourceLoc first_loc);

class Verifier : public IRVisitor {
public:
  explicit Verifier(const ModuleNode *m) : module_(m) {}

  void visit(const Function &f) override {
    func_ = f.get();
    in_scope_.clear(), scopes_.clear(), defined_.clear();
    loop_depth_ = 0;
    loc_ = f->loc;
    collect_definitions(f->body);
    push();
    for (auto &p : f->params) define(p.get(), f->loc);
    for (auto &s : symbolic_dims(f)) define(s.get(), f->loc);
    if (f->func_kind == FuncKind::Kernel) {
      if (!f->attrs.has_grid)
        throw DSLError(str_cat("kernel '", f->name, "' has no grid dimensions: set grid_dim"), f->loc);
      if (!f->attrs.has_block)
        throw DSLError(str_cat("kernel '", f->name, "' has no block dimensions: set block_dim"),
                       f->loc);
    }
    grid_waits_ = 0;
    IRVisitor::visit(f);
    pop();
    if (grid_waits_ > 0) check_grid_wait(f.get(), grid_waits_, first_grid_wait_);
  }
  using IRVisitor::visit;

  void visit(const Expr &e) override {
    if (!e) return;
    SourceLoc saved = loc_;
    if (!e.is<VarNode>() && e->loc.valid()) loc_ = e->loc;
    IRVisitor::visit(e);
    loc_ = saved;
  }

  void visit(const Stmt &s) override {
    HIDET_ASSERT(s, "null statement in function '", func_->name, "'");
    SourceLoc saved = loc_;
    if (s->loc.valid()) loc_ = s->loc;
    IRVisitor::visit(s);
    loc_ = saved;
  }

protected:
  void visit_Var(const VarNode *v) override { use(v); }

  void visit_TensorElement(const TensorElementNode *e) override {
    use(e->base.get());
    auto tt = e->base->type.as<TensorTypeNode>();
    HIDET_ASSERT(tt, "TensorElement on non-tensor '", e->base->hint, "'");
    check_rank(e->base.get(), *tt, e->indices.size());
    for (auto &i : e->indices) visit(i);
  }

  void visit_Call(const CallNode *e) override {
    if (e->op == Intrinsic::GridDependencyWait && grid_waits_++ == 0) first_grid_wait_ = loc_;
    if (e->op == Intrinsic::None) {
      Function callee = module_ ? module_->lookup(e->func_name) : Function();
      if (!callee)
        throw DSLError(str_cat("function '", e->func_name, "' is called in '", func_->name,
                               "' but is not defined in the module: add it to the module"),
                       loc_);
      if (callee->func_kind != FuncKind::Device)
        throw DSLError(str_cat("'", func_->name, "' calls ", func_kind_name(callee->func_kind), " '",
                               e->func_name, "'; only device functions can be called"),
                       loc_);
      if (callee->params.size() != e->args.size())
        throw DSLError(str_cat("function '", e->func_name, "' takes ", callee->params.size(),
                               " arguments but is called with ", e->args.size()),
                       loc_);
    }
    IRVisitor::visit_Call(e);
  }

  void visit_DeclareStmt(const DeclareStmtNode *s) override {
    visit_type(s->var->type);
    visit(s->init);
    auto it = in_scope_.find(s->var.get());
    if (it != in_scope_.end() && it->second > 0)
      throw DSLError(str_cat("variable '", s->var->hint, "' is declared again while still in scope",
                             " (first defined at ", defined_[s->var.get()].str(), ")"),
                     loc_);
    define(s->var.get(), loc_);
  }

  void visit_AssignStmt(const AssignStmtNode *s) override {
    use(s->var.get());
    if (is_tensor(s->var->type))
      throw DSLError(str_cat("cannot assign to tensor '", s->var->hint, "' of type ",
                             to_string(s->var->type),
                             ": only scalar variables can be assigned; store to its elements ",
                             "with t[i, ...] = value"),
                     loc_);
    HIDET_ASSERT(s->value, "assignment without a value");
    visit(s->value);
  }

  void visit_BufferStoreStmt(const BufferStoreStmtNode *s) override {
    use(s->base.get());
    auto tt = s->base->type.as<TensorTypeNode>();
    if (!tt)
      throw DSLError(str_cat("'", s->base->hint, "' of type ", to_string(s->base->type),
                             " is not a tensor and cannot be stored to by index"),
                     loc_);
    check_rank(s->base.get(), *tt, s->indices.size());
    HIDET_ASSERT(s->value, "buffer store without a value");
    for (auto &i : s->indices) visit(i);
    visit(s->value);
  }

  void visit_ForStmt(const ForStmtNode *s) override {
    HIDET_ASSERT(s->start && s->stop && s->step, "for loop with a null bound");
    visit(s->start), visit(s->stop), visit(s->step);
    push();
    define(s->var.get(), loc_);
    ++loop_depth_;
    visit(s->body);
    --loop_depth_;
    pop();
  }

  void visit_WhileStmt(const WhileStmtNode *s) override {
    HIDET_ASSERT(s->cond, "while loop without a condition");
    visit(s->cond);
    push();
    ++loop_depth_;
    visit(s->body);
    --loop_depth_;
    pop();
  }

  void visit_IfStmt(const IfStmtNode *s) override {
    HIDET_ASSERT(s->cond, "if without a condition");
    visit(s->cond);
    push();
    visit(s->then_body);
    pop();
    if (s->else_body) {
      push();
      visit(s->else_body);
      pop();
    }
  }

  void visit_BreakStmt(const BreakStmtNode *) override {
    if (loop_depth_ == 0) throw DSLError("'break' outside a loop: use it only inside for/while", loc_);
  }
  void visit_ContinueStmt(const ContinueStmtNode *) override {
    if (loop_depth_ == 0)
      throw DSLError("'continue' outside a loop: use it only inside for/while", loc_);
  }

private:
  void check_rank(const VarNode *base, const TensorTypeNode &tt, std::size_t n) {
    if (n != tt.rank())
      throw DSLError(str_cat("tensor '", base->hint, "' of type ", to_string(Type(&tt)),
                             " has rank ", tt.rank(), " but is indexed with ", n, " indices"),
                     loc_);
  }

  void use(const VarNode *v) {
    auto it = in_scope_.find(v);
    if (it != in_scope_.end() && it->second > 0) return;
    auto d = defined_.find(v);
    if (d != defined_.end())
      throw DSLError(str_cat("variable '", v->hint, "' is used outside the scope that defined it ",
                             "(defined at ", d->second.str(), ")"),
                     loc_);
    throw DSLError(str_cat("variable '", v->hint, "' is used in function '", func_->name,
                           "' but never defined there: declare it, or pass it as a parameter"),
                   loc_);
  }

  void define(const VarNode *v, SourceLoc at) {
    ++in_scope_[v];
    scopes_.back().push_back(v);
    if (!defined_.count(v)) defined_[v] = at;
  }
  void push() { scopes_.emplace_back(); }
  void pop() {
    for (auto v : scopes_.back()) --in_scope_[v];
    scopes_.pop_back();
  }

  /// Records where each variable of the body is declared, for messages about scope.
  void collect_definitions(const Stmt &body) {
    struct Collector : IRVisitor {
      std::unordered_map<const VarNode *, SourceLoc> *out;
      void visit_DeclareStmt(const DeclareStmtNode *s) override {
        out->emplace(s->var.get(), s->loc);
        IRVisitor::visit_DeclareStmt(s);
      }
      void visit_ForStmt(const ForStmtNode *s) override {
        out->emplace(s->var.get(), s->loc);
        IRVisitor::visit_ForStmt(s);
      }
    } c;
    c.out = &defined_;
    c.visit(body);
  }

  const ModuleNode *module_;
  const FunctionNode *func_ = nullptr;
  std::unordered_map<const VarNode *, int> in_scope_;
  std::unordered_map<const VarNode *, SourceLoc> defined_;
  std::vector<std::vector<const VarNode *>> scopes_;
  int loop_depth_ = 0;
  int grid_waits_ = 0;        ///< grid_dependency_wait() calls in the function
  SourceLoc first_grid_wait_; ///< where the first one is
  SourceLoc loc_;
};

/// True when `s` is a call of grid_dependency_wait() as a statement.
inline bool is_grid_wait(const Stmt &s) {
  auto e = s.as<EvaluateStmtNode>();
  auto c = e ? e->expr.as<CallNode>() : nullptr;
  return c && c->op == Intrinsic::GridDependencyWait;
}

/// The statements of `body` at its top level (nested sequences flattened, nothing else entered).
inline std::vector<Stmt> top_level_statements(const Stmt &body) {
  std::vector<Stmt> top;
  std::function<void(const Stmt &)> flatten = [&](const Stmt &s) {
    if (auto q = s.as<SeqStmtNode>())
      for (auto &x : q->seq) flatten(x);
    else if (s)
      top.push_back(s);
  };
  flatten(body);
  return top;
}

/// The statements before a kernel's grid_dependency_wait(): no access to global or shared memory
/// (loads, stores, pointers read, atomics, barriers, device functions, asm), only index
/// arithmetic, register tensors and prefetch_l2 (whose address is not an access).
class BeforeGridWait : public IRVisitor {
public:
  BeforeGridWait(const FunctionNode *f, SourceLoc wait) : func_(f), wait_(wait) {}
  using IRVisitor::visit;
  void visit(const Stmt &s) override {
    if (!s) return; // an if without else
    SourceLoc saved = loc_;
    if (s->loc.valid()) loc_ = s->loc;
    IRVisitor::visit(s);
    loc_ = saved;
  }

protected:
  void visit_TensorElement(const TensorElementNode *e) override {
    memory(e->base.get(), "reads");
    IRVisitor::visit_TensorElement(e);
  }
  void visit_BufferStoreStmt(const BufferStoreStmtNode *s) override {
    memory(s->base.get(), "writes");
    IRVisitor::visit_BufferStoreStmt(s);
  }
  void visit_Deref(const DerefNode *) override { refuse("reads memory through a pointer"); }
  void visit_AsmStmt(const AsmStmtNode *) override { refuse("has inline assembly"); }
  void visit_Call(const CallNode *c) override {
    if (c->op == Intrinsic::PrefetchL2) { // the address: its indices only
      auto a = c->args.at(0).as<AddressNode>();
      auto te = a ? a->a.as<TensorElementNode>() : nullptr;
      if (!te) return visit(c->args.at(0));
      for (auto &i : te->indices) visit(i);
      return;
    }
    if (c->op != Intrinsic::DynamicSharedMemory && !is_math_intrinsic(c->op))
      refuse(str_cat("calls ", c->op == Intrinsic::None ? c->func_name : std::string(intrinsic_name(c->op))));
    IRVisitor::visit_Call(c);
  }

private:
  void memory(const VarNode *base, const char *what) {
    auto tt = base->type.as<TensorTypeNode>();
    if (tt && (tt->scope == Scope::Global || tt->scope == Scope::Shared))
      refuse(str_cat(what, " ", scope_name(tt->scope), " tensor '", base->hint, "'"));
  }
  [[noreturn]] void refuse(const std::string &what) {
    throw DSLError(str_cat("kernel '", func_->name, "' ", what, " before its grid_dependency_wait() (at ",
                           wait_.str(), "): the kernel before it may still be writing that memory; ",
                           "move it after the wait (only index arithmetic, register tensors and ",
                           "prefetch_l2 may come first)"),
                   loc_);
  }
  const FunctionNode *func_;
  SourceLoc wait_, loc_;
};

/// grid_dependency_wait() (lang/cuda.hpp), called `n` times in `f` (the first at `first_loc`): at
/// most once, in a kernel, as a statement of its body's top level, after nothing that touches global
/// or shared memory (BeforeGridWait).
inline void check_grid_wait(const FunctionNode *f, int n, SourceLoc first_loc) {
  if (f->func_kind != FuncKind::Kernel)
    throw DSLError(str_cat("grid_dependency_wait() in device function '", f->name,
                           "': only a kernel waits for the kernel before it; call it in the kernel"),
                   first_loc);
  if (n > 1)
    throw DSLError(str_cat("kernel '", f->name, "' calls grid_dependency_wait() ", n,
                           " times; it waits once, before its first access to memory"),
                   first_loc);
  const std::vector<Stmt> top = top_level_statements(f->body);
  std::size_t at = 0;
  while (at < top.size() && !is_grid_wait(top[at])) ++at;
  if (at == top.size())
    throw DSLError(str_cat("kernel '", f->name, "' calls grid_dependency_wait() inside a loop or a ",
                           "branch; call it once, as a statement of the kernel's body"),
                   first_loc);
  BeforeGridWait check(f, top[at]->loc);
  for (std::size_t i = 0; i < at; ++i) check.visit(top[i]);
}

} // namespace detail

HIDET_INLINE void verify(const Module &m) {
  detail::Verifier v(m.get());
  for (auto &f : m->functions) v.visit(f);
}

HIDET_INLINE void verify(const Function &f) { verify(make_module({f})); }

HIDET_INLINE bool calls_grid_dependency_wait(const Function &f) {
  if (f->func_kind != FuncKind::Kernel) return false;
  for (const Stmt &s : detail::top_level_statements(f->body))
    if (detail::is_grid_wait(s)) return true;
  return false;
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
