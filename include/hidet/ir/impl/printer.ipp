// Definitions for hidet/ir/printer.hpp.
#pragma once
#include "hidet/ir/printer.hpp"

#include <charconv>
#include <cmath>

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE void IRPrinter::print(const Module &m) {
  for (std::size_t i = 0; i < m->functions.size(); ++i) {
    if (i) os_ << "\n";
    print_function(m->functions[i]);
  }
}

HIDET_INLINE const std::string &IRPrinter::name_of(const VarNode *v) {
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  std::string base = v->hint.empty() ? std::string("v") : v->hint;
  std::string name = base;
  for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_.insert(name);
  return names_.emplace(v, name).first->second;
}

HIDET_INLINE int IRPrinter::precedence(BinaryOp op) {
  switch (op) {
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Mod: return 80;
  case BinaryOp::Add:
  case BinaryOp::Sub: return 70;
  case BinaryOp::Shl:
  case BinaryOp::Shr: return 65;
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: return 60;
  case BinaryOp::Eq:
  case BinaryOp::Ne: return 55;
  case BinaryOp::BitAnd: return 50;
  case BinaryOp::BitXor: return 45;
  case BinaryOp::BitOr: return 40;
  case BinaryOp::LogicalAnd: return 35;
  case BinaryOp::LogicalOr: return 30;
  }
  return 0;
}

HIDET_INLINE int IRPrinter::precedence(const Expr &e) {
  if (auto b = e.as<BinaryNode>()) return precedence(b->op);
  if (e.is<SelectNode>()) return kSelect;
  if (e.is<UnaryNode>() || e.is<AddressNode>() || e.is<DerefNode>()) return kUnary;
  if (auto c = e.as<ConstantNode>()) {
    bool neg = c->dtype.is_float() ? std::signbit(c->fvalue) : (c->dtype.is_signed() && c->ivalue < 0);
    return neg ? kUnary - 1 : kPrimary; // -3 prints as -(-3) under a unary minus
  }
  return kPrimary;
}

HIDET_INLINE std::string IRPrinter::float_text(double v, bool as_f32) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = as_f32 ? std::to_chars(buf, buf + sizeof buf, float(v))
                  : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

HIDET_INLINE void IRPrinter::print_constant(const ConstantNode *c) {
  DataType d = c->dtype;
  if (d.is_bool()) {
    os_ << (c->ivalue ? "true" : "false");
  } else if (d == dtypes::f32) {
    std::string s = float_text(c->fvalue, true);
    if (std::isfinite(c->fvalue)) os_ << s << "f";
    else os_ << "f32(" << s << ")";
  } else if (d == dtypes::f64) {
    std::string s = float_text(c->fvalue, false);
    if (std::isfinite(c->fvalue)) os_ << s;
    else os_ << "f64(" << s << ")";
  } else if (d.is_float()) {
    os_ << d.short_name() << "(" << float_text(c->fvalue, true) << ")";
  } else if (d == dtypes::u64) {
    os_ << static_cast<std::uint64_t>(c->ivalue) << "u64";
  } else {
    os_ << c->ivalue;
    if (d != dtypes::i32) os_ << d.short_name();
  }
}

HIDET_INLINE void IRPrinter::print_list(const std::vector<Expr> &xs) {
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i) os_ << ", ";
    print_expr(xs[i], 0);
  }
}

HIDET_INLINE void IRPrinter::print_expr(const Expr &e, int min_prec) {
  if (!e) {
    os_ << "<null>";
    return;
  }
  bool paren = precedence(e) < min_prec;
  if (paren) os_ << "(";
  switch (e->kind) {
  case NodeKind::Constant: print_constant(e.as<ConstantNode>()); break;
  case NodeKind::Var: os_ << name_of(e.as<VarNode>()); break;
  case NodeKind::Builtin: os_ << builtin_name(e.as<BuiltinNode>()->which); break;
  case NodeKind::Unary: {
    auto u = e.as<UnaryNode>();
    os_ << unary_op_symbol(u->op);
    print_expr(u->a, kUnary);
    break;
  }
  case NodeKind::Binary: {
    auto b = e.as<BinaryNode>();
    int p = precedence(b->op);
    print_expr(b->a, p);
    os_ << " " << binary_op_symbol(b->op) << " ";
    print_expr(b->b, p + 1); // left-associative
    break;
  }
  case NodeKind::Cast: {
    auto c = e.as<CastNode>();
    os_ << "cast<";
    print_type(c->type);
    os_ << ">(";
    print_expr(c->a, 0);
    os_ << ")";
    break;
  }
  case NodeKind::Select: {
    auto s = e.as<SelectNode>();
    print_expr(s->cond, kSelect + 1);
    os_ << " ? ";
    print_expr(s->t, kSelect + 1);
    os_ << " : ";
    print_expr(s->f, kSelect);
    break;
  }
  case NodeKind::Call: {
    auto c = e.as<CallNode>();
    if (c->op == Intrinsic::None) os_ << c->func_name;
    else os_ << intrinsic_name(c->op);
    os_ << "(";
    if (c->op == Intrinsic::Printf) {
      print_string(c->text);
      if (!c->args.empty()) os_ << ", ";
    }
    print_list(c->args);
    os_ << ")";
    break;
  }
  case NodeKind::TensorElement: {
    auto t = e.as<TensorElementNode>();
    os_ << name_of(t->base.get()) << "[";
    print_list(t->indices);
    os_ << "]";
    break;
  }
  case NodeKind::Address:
    os_ << "&";
    print_expr(e.as<AddressNode>()->a, kUnary);
    break;
  case NodeKind::Deref:
    os_ << "*";
    print_expr(e.as<DerefNode>()->a, kUnary);
    break;
  default: os_ << "<not an expression>";
  }
  if (paren) os_ << ")";
}

HIDET_INLINE void IRPrinter::print_string(const std::string &s) {
  os_ << '"';
  for (char ch : s) {
    switch (ch) {
    case '"': os_ << "\\\""; break;
    case '\\': os_ << "\\\\"; break;
    case '\n': os_ << "\\n"; break;
    case '\t': os_ << "\\t"; break;
    default: os_ << ch;
    }
  }
  os_ << '"';
}

HIDET_INLINE void IRPrinter::print_type(const Type &t) {
  if (!t) {
    os_ << "<null type>";
    return;
  }
  if (auto s = t.as<ScalarTypeNode>()) {
    os_ << s->dtype.short_name();
  } else if (auto p = t.as<PointerTypeNode>()) {
    print_type(p->base);
    os_ << "*";
  } else if (auto tt = t.as<TensorTypeNode>()) {
    os_ << tt->dtype.short_name() << "[";
    print_list(tt->shape);
    os_ << "] " << scope_name(tt->scope);
    if (tt->layout) os_ << " layout=" << tt->layout->str();
  } else {
    os_ << "void";
  }
}

HIDET_INLINE void IRPrinter::indent(int level) {
  for (int i = 0; i < level; ++i) os_ << "  ";
}

HIDET_INLINE void IRPrinter::print_block(const Stmt &body, int level) {
  os_ << "{\n";
  print_stmt(body, level + 1);
  indent(level);
  os_ << "}";
}

HIDET_INLINE void IRPrinter::print_operands(const std::vector<AsmOperand> &ops) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    os_ << (i ? ", " : " ");
    print_string(ops[i].constraint);
    os_ << "(";
    print_expr(ops[i].expr, 0);
    os_ << ")";
  }
}

HIDET_INLINE void IRPrinter::print_stmt(const Stmt &s, int level) {
  if (!s) return;
  if (auto q = s.as<SeqStmtNode>()) {
    for (auto &x : q->seq) print_stmt(x, level);
    return;
  }
  indent(level);
  switch (s->kind) {
  case NodeKind::DeclareStmt: {
    auto d = s.as<DeclareStmtNode>();
    os_ << "declare " << name_of(d->var.get()) << ": ";
    print_type(d->var->type);
    if (d->init) {
      os_ << " = ";
      print_expr(d->init, 0);
    }
    break;
  }
  case NodeKind::AssignStmt: {
    auto a = s.as<AssignStmtNode>();
    os_ << name_of(a->var.get()) << " = ";
    print_expr(a->value, 0);
    break;
  }
  case NodeKind::BufferStoreStmt: {
    auto b = s.as<BufferStoreStmtNode>();
    os_ << name_of(b->base.get()) << "[";
    print_list(b->indices);
    os_ << "] = ";
    print_expr(b->value, 0);
    break;
  }
  case NodeKind::ForStmt: {
    auto f = s.as<ForStmtNode>();
    os_ << "for (" << name_of(f->var.get()) << " in range(";
    print_list({f->start, f->stop, f->step});
    os_ << ")) ";
    if (f->unroll < 0) os_ << "unroll ";
    else if (f->unroll > 0) os_ << "unroll(" << f->unroll << ") ";
    print_block(f->body, level);
    break;
  }
  case NodeKind::WhileStmt: {
    auto w = s.as<WhileStmtNode>();
    os_ << "while (";
    print_expr(w->cond, 0);
    os_ << ") ";
    print_block(w->body, level);
    break;
  }
  case NodeKind::IfStmt: {
    auto i = s.as<IfStmtNode>();
    os_ << "if (";
    print_expr(i->cond, 0);
    os_ << ") ";
    print_block(i->then_body, level);
    if (i->else_body) {
      os_ << " else ";
      print_block(i->else_body, level);
    }
    break;
  }
  case NodeKind::BreakStmt: os_ << "break"; break;
  case NodeKind::ContinueStmt: os_ << "continue"; break;
  case NodeKind::ReturnStmt: {
    auto r = s.as<ReturnStmtNode>();
    os_ << "return";
    if (r->value) {
      os_ << " ";
      print_expr(r->value, 0);
    }
    break;
  }
  case NodeKind::EvaluateStmt: print_expr(s.as<EvaluateStmtNode>()->expr, 0); break;
  case NodeKind::AssertStmt: {
    auto a = s.as<AssertStmtNode>();
    os_ << "assert(";
    print_expr(a->cond, 0);
    os_ << ", ";
    print_string(a->message);
    os_ << ")";
    break;
  }
  case NodeKind::AsmStmt: {
    auto a = s.as<AsmStmtNode>();
    os_ << (a->is_volatile ? "asm volatile(" : "asm(");
    print_string(a->templ);
    os_ << " :";
    print_operands(a->outputs);
    os_ << " :";
    print_operands(a->inputs);
    if (a->memory_clobber) os_ << " : \"memory\"";
    os_ << ")";
    break;
  }
  default: os_ << "<not a statement>";
  }
  os_ << "\n";
}

HIDET_INLINE void IRPrinter::print_dims(const char *label, const std::array<Expr, 3> &dims) {
  os_ << label << "=(";
  for (int i = 0; i < 3; ++i) {
    if (i) os_ << ", ";
    if (dims[i]) print_expr(dims[i], 0);
    else os_ << "1";
  }
  os_ << ")";
}

HIDET_INLINE void IRPrinter::print_function(const Function &f) {
  os_ << func_kind_name(f->func_kind) << " " << f->name << "(";
  for (std::size_t i = 0; i < f->params.size(); ++i) {
    if (i) os_ << ", ";
    os_ << name_of(f->params[i].get()) << ": ";
    print_type(f->params[i]->type);
  }
  os_ << ")";
  if (f->ret_type && !is_void(f->ret_type)) {
    os_ << " -> ";
    print_type(f->ret_type);
  }
  if (f->func_kind == FuncKind::Kernel) {
    os_ << "\n    ";
    print_dims("grid_dim", f->attrs.grid_dim);
    os_ << " ";
    print_dims("block_dim", f->attrs.block_dim);
    if (f->attrs.dynamic_smem_bytes) {
      os_ << " dynamic_smem=";
      print_expr(f->attrs.dynamic_smem_bytes, 0);
    }
    if (f->attrs.min_blocks) os_ << " min_blocks=" << f->attrs.min_blocks;
    if (f->attrs.cluster_size() > 1)
      os_ << " cluster_dim=(" << f->attrs.cluster_dim[0] << ", " << f->attrs.cluster_dim[1] << ", "
          << f->attrs.cluster_dim[2] << ")";
  }
  os_ << " ";
  print_block(f->body, 0);
  os_ << "\n";
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
