// Compiles the functions of a lowered IR module once into trees of emulator nodes
// (expr_nodes.hpp, call_nodes.hpp, stmt_nodes.hpp). Every variable, constant and expression gets
// a register of the function's frame; statements become nodes that run under an active mask.
#pragma once

#include <unordered_map>

#include "hidet/backend/emulator/primitive_nodes.hpp"
#include "hidet/backend/emulator/stmt_nodes.hpp"
#include "hidet/ir/layout.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend::emu {

/// Owns the compiled nodes of a program.
struct NodePool {
  std::vector<std::unique_ptr<ENode>> enodes;
  std::vector<std::unique_ptr<SNode>> snodes;
  template <class N> N *add(N *n) {
    if constexpr (std::is_base_of_v<ENode, N>) enodes.emplace_back(n);
    else snodes.emplace_back(n);
    return n;
  }
};

/// The dtype a value of type `t` has in a register (pointers and tensors: u64 addresses).
inline DataType reg_dtype(const ir::Type &t) {
  if (auto s = t.as<ir::ScalarTypeNode>()) return s->dtype;
  return dtypes::u64;
}

/// Compiles one function into `fc`.
class FunctionCompiler {
public:
  FunctionCompiler(NodePool &pool, FuncCode &fc,
                   const std::unordered_map<std::string, std::unique_ptr<FuncCode>> &funcs)
      : pool_(pool), fc_(fc), funcs_(funcs) {}

  void run() {
    const auto &f = fc_.fn;
    loc_ = f->loc;
    for (auto &p : f->params) fc_.param_regs.push_back(declare(p)->dst);
    fc_.body = f->body ? stmt(f->body) : pool_.add(new SeqS());
  }

private:
  [[noreturn]] void unsupported(const std::string &what, SourceLoc l) const {
    throw EmulatorError(str_cat("function '", fc_.name, "': ", what), l.valid() ? l : loc_);
  }
  SourceLoc where(SourceLoc l) const { return l.valid() ? l : loc_; }
  int new_reg() { return fc_.nregs++; }

  template <class N> N *node(N *n, DataType d, SourceLoc l) {
    pool_.add(n);
    n->dst = new_reg();
    n->dtype = d;
    n->loc = where(l);
    return n;
  }
  ENode *trivial(int reg, DataType d) {
    auto *n = pool_.add(new ENode());
    n->dst = reg, n->dtype = d, n->trivial = true;
    return n;
  }

  ENode *declare(const ir::Var &v) {
    auto it = vars_.find(v.get());
    if (it != vars_.end()) return it->second;
    ENode *n = trivial(new_reg(), reg_dtype(v->type));
    vars_[v.get()] = n;
    return n;
  }
  ENode *constant(DataType d, Slot s) {
    auto key = std::make_pair(int(d.code), s.i);
    auto it = consts_.find(key);
    if (it != consts_.end()) return it->second;
    ENode *n = trivial(new_reg(), d);
    fc_.consts.emplace_back(n->dst, s);
    consts_[key] = n;
    return n;
  }
  /// `e` converted to dtype `d` when it has another dtype.
  ENode *as_dtype(ENode *e, DataType d, SourceLoc l) {
    if (e->dtype == d) return e;
    auto *n = node(new CastE(), d, l);
    n->a = e, n->from = e->dtype, n->target = cast_target(e->dtype, d), n->may_fault = e->may_fault;
    return n;
  }

  // ---- expressions ----------------------------------------------------------------------------
  ENode *expr(const ir::Expr &e) {
    using namespace ir;
    if (!e) unsupported("a null expression in the IR", loc_);
    SourceLoc l = e->loc;
    switch (e->kind) {
    case NodeKind::Constant: {
      auto c = e.as<ConstantNode>();
      Slot s = c->dtype.is_float() ? cast_value(Slot{.f = c->fvalue}, dtypes::f64, c->dtype)
                                   : Slot{c->ivalue};
      return constant(c->dtype, s);
    }
    case NodeKind::Var: {
      auto it = vars_.find(e.as<VarNode>());
      if (it == vars_.end())
        unsupported(str_cat("variable '", e.as<VarNode>()->hint, "' is used but never declared"), l);
      return it->second;
    }
    case NodeKind::Builtin: {
      int b = int(e.as<BuiltinNode>()->which);
      fc_.builtins_used |= 1u << b;
      return trivial(b, dtypes::i32);
    }
    case NodeKind::Unary: {
      auto u = e.as<UnaryNode>();
      ENode *a = expr(u->a);
      ENode *n = with_domain(domain_of(a->dtype), [&]<DTypeCode K>() -> ENode * {
        auto *x = new UnaryE<K>();
        x->a = a, x->op = u->op, x->narrow = narrower_than_domain(a->dtype);
        return x;
      });
      node(n, a->dtype, l);
      n->may_fault = a->may_fault;
      return n;
    }
    case NodeKind::Binary: return binary(e.as<BinaryNode>());
    case NodeKind::Cast: {
      auto c = e.as<CastNode>();
      ENode *a = expr(c->a);
      if (is_scalar(c->type) && is_scalar(c->a->type)) return as_dtype(a, dtype_of(c->type), l);
      auto *n = node(new AliasE(), dtypes::u64, l);
      n->a = a, n->dst = a->dst, n->may_fault = a->may_fault;
      return n;
    }
    case NodeKind::Select: {
      auto s = e.as<SelectNode>();
      auto *n = node(new SelectE(), reg_dtype(s->type), l);
      n->cond = expr(s->cond), n->t = expr(s->t), n->f = as_dtype(expr(s->f), n->t->dtype, l);
      n->may_fault = n->cond->may_fault || n->t->may_fault || n->f->may_fault;
      return n;
    }
    case NodeKind::Call: return call(e.as<CallNode>());
    case NodeKind::TensorElement: {
      auto te = e.as<TensorElementNode>();
      auto *n = new LoadE();
      access(n->acc, te->base, te->indices, where(l));
      node(n, dtype_of(te->type), l)->may_fault = true;
      return n;
    }
    case NodeKind::Address: {
      auto ad = e.as<AddressNode>();
      if (auto te = ad->a.as<TensorElementNode>()) {
        auto *n = node(new ElementAddressE(), dtypes::u64, l);
        access(n->acc, te->base, te->indices, where(l));
        n->may_fault = true;
        return n;
      }
      if (auto d = ad->a.as<DerefNode>()) return expr(d->a);
      if (auto v = ad->a.as<VarNode>(); v && is_tensor(v->type)) return expr(ad->a);
      unsupported("taking the address of a scalar local variable is not supported by the "
                  "emulator; use a register tensor of one element instead",
                  l);
    }
    case NodeKind::Deref: {
      auto d = e.as<DerefNode>();
      DataType dt = reg_dtype(d->type);
      auto *n = new DerefE();
      n->ptr = expr(d->a), n->esize = dt.nbytes();
      node(n, dt, l)->may_fault = true;
      return n;
    }
    default: unsupported("not an expression", l);
    }
  }

  /// CUDA compiles with -fmad=true: a floating a*b+c (or a*b-c, c-a*b) in one expression becomes
  /// a fused multiply-add with a single rounding. The emulator contracts the same patterns so that
  /// its results match the GPU's bit for bit.
  ENode *contract_fma(const ir::BinaryNode *b) {
    using ir::BinaryOp;
    if ((b->op != BinaryOp::Add && b->op != BinaryOp::Sub) || !ir::is_scalar(b->type)) return nullptr;
    DataType d = ir::dtype_of(b->type);
    if (!d.is_float()) return nullptr;
    auto mul_of = [&](const ir::Expr &e) -> const ir::BinaryNode * {
      auto m = e.as<ir::BinaryNode>();
      return m && m->op == BinaryOp::Mul && ir::is_scalar(m->type) && ir::dtype_of(m->type) == d ? m : nullptr;
    };
    auto neg = [&](const ir::Expr &e) { return ir::UnaryNode::make(ir::UnaryOp::Neg, e, b->loc); };
    auto fma = [&](ir::Expr x, ir::Expr y, ir::Expr z) {
      return expr(ir::CallNode::make_intrinsic(ir::Intrinsic::Fma, {x, y, z}, b->type, b->loc));
    };
    if (auto m = mul_of(b->a)) return fma(m->a, m->b, b->op == BinaryOp::Add ? b->b : neg(b->b));
    if (auto m = mul_of(b->b)) return fma(b->op == BinaryOp::Add ? m->a : neg(m->a), m->b, b->a);
    return nullptr;
  }

  ENode *binary(const ir::BinaryNode *b) {
    using ir::BinaryOp;
    SourceLoc l = b->loc;
    if (ENode *f = contract_fma(b)) return f;
    ENode *x = expr(b->a), *y = expr(b->b);
    bool fault = x->may_fault || y->may_fault;
    if (ir::is_pointer(b->a->type) || ir::is_tensor(b->a->type)) {
      auto *n = node(new PtrAddE(), dtypes::u64, l);
      std::int64_t sz = 1;
      if (auto pt = b->a->type.as<ir::PointerTypeNode>()) {
        if (ir::is_scalar(pt->base)) sz = std::int64_t(ir::dtype_of(pt->base).nbytes());
        else if (ir::is_pointer(pt->base)) sz = 8;
      } else if (auto tt = b->a->type.as<ir::TensorTypeNode>()) {
        sz = std::int64_t(tt->dtype.nbytes());
      }
      n->a = x, n->b = y, n->scale = b->op == BinaryOp::Sub ? -sz : sz, n->may_fault = fault;
      return n;
    }
    if (ir::is_logical(b->op)) {
      auto *n = node(new LogicalE(), dtypes::boolean, l);
      n->a = x, n->b = y, n->is_and = b->op == BinaryOp::LogicalAnd, n->may_fault = fault;
      return n;
    }
    bool shift = b->op == BinaryOp::Shl || b->op == BinaryOp::Shr;
    if (!shift) y = as_dtype(y, x->dtype, l);
    BinaryOperands *n = make_binary_node(b->op, x->dtype);
    if (!n) unsupported(str_cat("the operator ", ir::binary_op_symbol(b->op), " on dtype ", x->dtype), l);
    n->a = x, n->b = y;
    node(n, ir::is_comparison(b->op) ? dtypes::boolean : x->dtype, l);
    n->may_fault = fault || (!x->dtype.is_float() && (b->op == BinaryOp::Div || b->op == BinaryOp::Mod));
    return n;
  }

  /// Fills the access description of base[indices...].
  void access(TensorAccess &acc, const ir::Var &base, const std::vector<ir::Expr> &indices,
              SourceLoc l) {
    auto tt = base->type.as<ir::TensorTypeNode>();
    if (indices.size() > std::size_t(TensorAccess::kMaxRank))
      unsupported(str_cat("tensor '", base->hint, "' has rank ", indices.size(),
                          "; the emulator supports up to ", TensorAccess::kMaxRank),
                  l);
    acc.base = expr(base);
    acc.dtype = tt->dtype, acc.esize = tt->dtype.nbytes(), acc.name = base->hint;
    acc.scope = ir::scope_name(tt->scope), acc.loc = l;
    for (auto &i : indices) acc.idx.push_back(as_dtype(expr(i), dtypes::i64, l));
    for (auto &d : tt->shape) acc.dims.push_back(as_dtype(expr(d), dtypes::i64, l));
    if (tt->layout) {
      // the layout's offset over placeholder variables bound to the evaluated indices
      std::vector<ir::Expr> ph;
      for (std::size_t k = 0; k < indices.size(); ++k) {
        ir::Var v = ir::make_var(indices[k]->type, "index");
        vars_[v.get()] = trivial(acc.idx[k]->dst, reg_dtype(indices[k]->type));
        ph.push_back(v);
        placeholders_.push_back(v);
      }
      acc.offset = as_dtype(expr(ir::tensor_offset(*tt, ph)), dtypes::i64, l);
    }
  }

  ENode *call(const ir::CallNode *c) {
    using I = ir::Intrinsic;
    SourceLoc l = c->loc;
    DataType rd = ir::is_void(c->type) ? dtypes::i32 : reg_dtype(c->type);
    std::vector<ENode *> args;
    for (auto &a : c->args) args.push_back(expr(a));
    auto need = [&](std::size_t n) {
      if (args.size() < n)
        unsupported(str_cat(ir::intrinsic_name(c->op), " needs ", n, " arguments, got ", args.size()), l);
    };
    if (c->op == I::None) {
      auto it = funcs_.find(c->func_name);
      if (it == funcs_.end())
        unsupported(str_cat("call of unknown device function '", c->func_name, "'"), l);
      FuncCode *callee = it->second.get();
      if (callee->fn->params.size() != args.size())
        unsupported(str_cat("device function '", c->func_name, "' takes ", callee->fn->params.size(),
                            " arguments, the call passes ", args.size()),
                    l);
      auto *n = node(new CallE(), rd, l);
      for (std::size_t i = 0; i < args.size(); ++i)
        n->args.push_back(as_dtype(args[i], reg_dtype(callee->fn->params[i]->type), l));
      n->callee = callee, n->returns_value = !ir::is_void(c->type), n->may_fault = true;
      fc_.callees.push_back(callee);
      return n;
    }
    if (ir::is_math_intrinsic(c->op)) {
      bool two = c->op == I::Pow || c->op == I::Min || c->op == I::Max || c->op == I::Atan2 ||
                 c->op == I::Fmod;
      need(two ? 2 : c->op == I::Fma ? 3 : 1);
      DataType ad = args[0]->dtype;
      ENode *n = with_domain(domain_of(ad), [&]<DTypeCode K>() -> ENode * {
        auto *m = new MathE<K>();
        m->op = c->op, m->nargs = int(std::min<std::size_t>(args.size(), 3));
        m->narrow = c->op != I::IsNan && narrower_than_domain(ad);
        for (int i = 0; i < m->nargs; ++i) m->a[i] = as_dtype(args[i], ad, l);
        return m;
      });
      node(n, c->op == I::IsNan ? dtypes::boolean : ad, l);
      for (auto *a : args) n->may_fault |= a->may_fault;
      return n;
    }
    ENode *n = nullptr;
    switch (c->op) {
    case I::SyncThreads: n = new BarrierE(); break;
    case I::SyncWarp: n = new NopE(); break;
    case I::ThreadFence:
    case I::ThreadFenceSystem: n = new NopE(); break; // the emulated memory is sequentially consistent
    case I::GridDependencyWait: n = new NopE(); break; // kernels run one after the other
    case I::AtomicAdd: case I::AtomicMin: case I::AtomicMax: case I::AtomicExch: case I::AtomicCas: {
      need(c->op == I::AtomicCas ? 3 : 2);
      auto pt = c->args[0]->type.as<ir::PointerTypeNode>();
      if (!pt || !ir::is_scalar(pt->base))
        unsupported(str_cat(ir::intrinsic_name(c->op), " needs a pointer to a scalar as its first argument"), l);
      DataType d = ir::dtype_of(pt->base);
      auto *a = new AtomicE();
      a->op = c->op, a->ptr = args[0], a->v1 = as_dtype(args[1], d, l);
      if (args.size() > 2) a->v2 = as_dtype(args[2], d, l);
      n = a;
      rd = d;
      break;
    }
    case I::ShflSync: case I::ShflUpSync: case I::ShflDownSync: case I::ShflXorSync: {
      need(3);
      auto *s = new ShuffleE();
      s->op = c->op, s->mask = args[0], s->value = args[1], s->lane = args[2];
      s->width = args.size() > 3 ? args[3] : nullptr;
      rd = args[1]->dtype;
      n = s;
      break;
    }
    case I::AnySync: case I::AllSync: case I::BallotSync: {
      need(2);
      auto *v = new VoteE();
      v->op = c->op, v->mask = args[0], v->pred = args[1];
      rd = c->op == I::BallotSync ? dtypes::u32 : dtypes::boolean;
      n = v;
      break;
    }
    case I::Printf: {
      auto *p = new PrintfE();
      p->fmt = c->text, p->args = args;
      n = p;
      break;
    }
    case I::DynamicSharedMemory: n = new DynamicSmemE(); rd = dtypes::u64; break;
    default:
      if (ir::is_primitive_intrinsic(c->op)) {
        n = make_primitive_node(*c, args, rd);
        break;
      }
      unsupported(str_cat("the emulator does not support intrinsic '", ir::intrinsic_name(c->op),
                          "'; run this kernel on a GPU"),
                  l);
    }
    node(n, rd, l)->may_fault = true;
    return n;
  }

  // ---- statements -----------------------------------------------------------------------------
  template <class N> N *snode(N *n, SourceLoc l) {
    pool_.add(n);
    n->loc = where(l);
    return n;
  }

  SNode *assign(ENode *var, ENode *value, SourceLoc l) {
    auto *s = snode(new AssignS(), l);
    s->var = var->dst;
    s->value = value ? as_dtype(value, var->dtype, l) : nullptr;
    return s;
  }

  SNode *stmt(const ir::Stmt &st) {
    using namespace ir;
    SourceLoc l = st->loc;
    SourceLoc saved = loc_;
    if (l.valid()) loc_ = l;
    SNode *r = stmt_inner(st, l);
    loc_ = saved;
    return r;
  }

  SNode *stmt_inner(const ir::Stmt &st, SourceLoc l) {
    using namespace ir;
    switch (st->kind) {
    case NodeKind::DeclareStmt: {
      auto d = st.as<DeclareStmtNode>();
      auto tt = d->var->type.as<TensorTypeNode>();
      ENode *init = d->init ? expr(d->init) : nullptr;
      ENode *v = declare(d->var);
      if (!tt || init) return assign(v, init, l);
      ENode *elems = as_dtype(expr(tensor_storage_size(*tt)), dtypes::i64, l);
      if (tt->scope == Scope::Shared) {
        auto *s = snode(new SharedDeclS(), l);
        s->var = v->dst, s->elems = elems, s->esize = tt->dtype.nbytes(), s->name = d->var->hint;
        return s;
      }
      if (tt->scope == Scope::Register) {
        auto *s = snode(new RegisterDeclS(), l);
        s->var = v->dst, s->elems = elems, s->esize = tt->dtype.nbytes(), s->name = d->var->hint;
        return s;
      }
      unsupported(str_cat("global tensor '", d->var->hint, "' declared without a pointer"), l);
    }
    case NodeKind::AssignStmt: {
      auto a = st.as<AssignStmtNode>();
      return assign(expr(a->var), expr(a->value), l);
    }
    case NodeKind::BufferStoreStmt: {
      auto b = st.as<BufferStoreStmtNode>();
      auto tt = b->base->type.as<TensorTypeNode>();
      auto *s = snode(new StoreS(), l);
      access(s->acc, b->base, b->indices, where(l));
      s->value = as_dtype(expr(b->value), tt->dtype, l);
      return s;
    }
    case NodeKind::SeqStmt: {
      auto *s = snode(new SeqS(), l);
      for (auto &x : st.as<SeqStmtNode>()->seq) s->body.push_back(stmt(x));
      return s;
    }
    case NodeKind::ForStmt: {
      auto f = st.as<ForStmtNode>();
      auto *s = snode(new LoopS(), l);
      ENode *v = declare(f->var);
      s->init = assign(v, expr(f->start), l);
      DataType vd = v->dtype;
      Expr stop = f->stop, step = f->step;
      if (reg_dtype(stop->type) != vd) stop = CastNode::make(stop, f->var->type);
      if (reg_dtype(step->type) != vd) step = CastNode::make(step, f->var->type);
      s->cond = expr(BinaryNode::make(BinaryOp::Lt, f->var, stop, l));
      s->step = assign(v, expr(BinaryNode::make(BinaryOp::Add, f->var, step, l)), l);
      s->brk = new_reg();
      loops_.push_back(s->brk);
      s->body = stmt(f->body);
      loops_.pop_back();
      return s;
    }
    case NodeKind::WhileStmt: {
      auto w = st.as<WhileStmtNode>();
      auto *s = snode(new LoopS(), l);
      s->cond = expr(w->cond);
      s->brk = new_reg();
      loops_.push_back(s->brk);
      s->body = stmt(w->body);
      loops_.pop_back();
      return s;
    }
    case NodeKind::IfStmt: {
      auto i = st.as<IfStmtNode>();
      auto *s = snode(new IfS(), l);
      s->cond = expr(i->cond);
      s->then_body = stmt(i->then_body);
      s->else_body = i->else_body ? stmt(i->else_body) : nullptr;
      return s;
    }
    case NodeKind::BreakStmt: {
      if (loops_.empty()) unsupported("break outside a loop", l);
      auto *s = snode(new BreakS(), l);
      s->brk = loops_.back();
      return s;
    }
    case NodeKind::ContinueStmt:
      if (loops_.empty()) unsupported("continue outside a loop", l);
      return snode(new ContinueS(), l);
    case NodeKind::ReturnStmt: {
      auto r = st.as<ReturnStmtNode>();
      auto *s = snode(new ReturnS(), l);
      if (r->value) s->value = as_dtype(expr(r->value), reg_dtype(fc_.fn->ret_type), l);
      return s;
    }
    case NodeKind::EvaluateStmt: {
      auto *s = snode(new EvaluateS(), l);
      s->expr = expr(st.as<EvaluateStmtNode>()->expr);
      return s;
    }
    case NodeKind::AssertStmt: {
      auto a = st.as<AssertStmtNode>();
      auto *s = snode(new AssertS(), l);
      s->cond = expr(a->cond), s->message = a->message;
      return s;
    }
    case NodeKind::AsmStmt: {
      auto a = st.as<AsmStmtNode>();
      auto *s = snode(new UnsupportedS(), l);
      std::string t = a->templ.substr(0, a->templ.find('\n'));
      s->what = str_cat("inline PTX (asm \"", t, "\") cannot be emulated; run this kernel on a GPU");
      return s;
    }
    default: unsupported("not a statement", l);
    }
  }

  NodePool &pool_;
  FuncCode &fc_;
  const std::unordered_map<std::string, std::unique_ptr<FuncCode>> &funcs_;
  std::unordered_map<const ir::VarNode *, ENode *> vars_;
  std::map<std::pair<int, std::int64_t>, ENode *> consts_;
  std::vector<int> loops_;
  std::vector<ir::Var> placeholders_; ///< keeps layout placeholder variables alive
  SourceLoc loc_;
};

} // namespace hidet::backend::emu

#include "hidet/util/cold_end.hpp"
