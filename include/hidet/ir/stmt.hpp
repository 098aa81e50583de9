// Statements of the Hidet IR. Each carries the user's source position, which codegen turns into
// #line directives and the emulator into error locations.
#pragma once

#include <string>
#include <vector>

#include "hidet/ir/expr.hpp"

namespace hidet::ir {

struct StmtNode : Object {
  SourceLoc loc;
  StmtNode(NodeKind k, SourceLoc l) : Object(k), loc(l) {}
  static bool is_kind(NodeKind k) { return k >= NodeKind::DeclareStmt && k <= NodeKind::AsmStmt; }
};
using Stmt = Ref<StmtNode>;

/// Declares `var`. A scalar var may have an initial value. A tensor var is a buffer of its
/// type's scope (shared/register), or, when `init` is a pointer, a view of memory at `init`.
struct DeclareStmtNode : StmtNode {
  HIDET_NODE_KIND(DeclareStmt)
  Var var;
  Expr init;
  DeclareStmtNode(Var v, Expr i, SourceLoc l) : StmtNode(kKind, l), var(std::move(v)), init(std::move(i)) {}
  static Stmt make(Var v, Expr init = {}, SourceLoc l = {}) {
    return Stmt(new DeclareStmtNode(std::move(v), std::move(init), l));
  }
};

/// var = value (scalar vars)
struct AssignStmtNode : StmtNode {
  HIDET_NODE_KIND(AssignStmt)
  Var var;
  Expr value;
  AssignStmtNode(Var v, Expr x, SourceLoc l) : StmtNode(kKind, l), var(std::move(v)), value(std::move(x)) {}
  static Stmt make(Var v, Expr value, SourceLoc l = {}) {
    return Stmt(new AssignStmtNode(std::move(v), std::move(value), l));
  }
};

/// tensor[indices...] = value
struct BufferStoreStmtNode : StmtNode {
  HIDET_NODE_KIND(BufferStoreStmt)
  Var base;
  std::vector<Expr> indices;
  Expr value;
  BufferStoreStmtNode(Var b, std::vector<Expr> i, Expr v, SourceLoc l)
      : StmtNode(kKind, l), base(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
  static Stmt make(Var base, std::vector<Expr> indices, Expr value, SourceLoc l = {}) {
    return Stmt(new BufferStoreStmtNode(std::move(base), std::move(indices), std::move(value), l));
  }
};

struct SeqStmtNode : StmtNode {
  HIDET_NODE_KIND(SeqStmt)
  std::vector<Stmt> seq;
  SeqStmtNode(std::vector<Stmt> s, SourceLoc l) : StmtNode(kKind, l), seq(std::move(s)) {}
  static Stmt make(std::vector<Stmt> s, SourceLoc l = {}) { return Stmt(new SeqStmtNode(std::move(s), l)); }
};

/// for (var = start; var < stop; var += step) body. `unroll`: 0 none, -1 full, N>0 by N.
struct ForStmtNode : StmtNode {
  HIDET_NODE_KIND(ForStmt)
  Var var;
  Expr start, stop, step;
  int unroll = 0;
  Stmt body;
  ForStmtNode(Var v, Expr a, Expr b, Expr s, int u, Stmt bd, SourceLoc l)
      : StmtNode(kKind, l), var(std::move(v)), start(std::move(a)), stop(std::move(b)),
        step(std::move(s)), unroll(u), body(std::move(bd)) {}
  static Stmt make(Var v, Expr start, Expr stop, Expr step, int unroll, Stmt body, SourceLoc l = {}) {
    return Stmt(new ForStmtNode(std::move(v), std::move(start), std::move(stop), std::move(step), unroll,
                                std::move(body), l));
  }
};

struct WhileStmtNode : StmtNode {
  HIDET_NODE_KIND(WhileStmt)
  Expr cond;
  Stmt body;
  WhileStmtNode(Expr c, Stmt b, SourceLoc l) : StmtNode(kKind, l), cond(std::move(c)), body(std::move(b)) {}
  static Stmt make(Expr cond, Stmt body, SourceLoc l = {}) {
    return Stmt(new WhileStmtNode(std::move(cond), std::move(body), l));
  }
};

struct IfStmtNode : StmtNode {
  HIDET_NODE_KIND(IfStmt)
  Expr cond;
  Stmt then_body;
  Stmt else_body; ///< may be null
  IfStmtNode(Expr c, Stmt t, Stmt e, SourceLoc l)
      : StmtNode(kKind, l), cond(std::move(c)), then_body(std::move(t)), else_body(std::move(e)) {}
  static Stmt make(Expr cond, Stmt then_body, Stmt else_body = {}, SourceLoc l = {}) {
    return Stmt(new IfStmtNode(std::move(cond), std::move(then_body), std::move(else_body), l));
  }
};

struct BreakStmtNode : StmtNode {
  HIDET_NODE_KIND(BreakStmt)
  explicit BreakStmtNode(SourceLoc l) : StmtNode(kKind, l) {}
  static Stmt make(SourceLoc l = {}) { return Stmt(new BreakStmtNode(l)); }
};

struct ContinueStmtNode : StmtNode {
  HIDET_NODE_KIND(ContinueStmt)
  explicit ContinueStmtNode(SourceLoc l) : StmtNode(kKind, l) {}
  static Stmt make(SourceLoc l = {}) { return Stmt(new ContinueStmtNode(l)); }
};

struct ReturnStmtNode : StmtNode {
  HIDET_NODE_KIND(ReturnStmt)
  Expr value; ///< may be null
  ReturnStmtNode(Expr v, SourceLoc l) : StmtNode(kKind, l), value(std::move(v)) {}
  static Stmt make(Expr v = {}, SourceLoc l = {}) { return Stmt(new ReturnStmtNode(std::move(v), l)); }
};

/// Evaluates an expression for its side effects (a call).
struct EvaluateStmtNode : StmtNode {
  HIDET_NODE_KIND(EvaluateStmt)
  Expr expr;
  EvaluateStmtNode(Expr e, SourceLoc l) : StmtNode(kKind, l), expr(std::move(e)) {}
  static Stmt make(Expr e, SourceLoc l = {}) { return Stmt(new EvaluateStmtNode(std::move(e), l)); }
};

/// Device-side assertion: traps with `message` when `cond` is false.
struct AssertStmtNode : StmtNode {
  HIDET_NODE_KIND(AssertStmt)
  Expr cond;
  std::string message;
  AssertStmtNode(Expr c, std::string m, SourceLoc l) : StmtNode(kKind, l), cond(std::move(c)), message(std::move(m)) {}
  static Stmt make(Expr cond, std::string message, SourceLoc l = {}) {
    return Stmt(new AssertStmtNode(std::move(cond), std::move(message), l));
  }
};

/// One operand of an inline-PTX statement: a constraint ("r", "=f", "+l", ...) and an expression
/// (an lvalue for outputs).
struct AsmOperand {
  std::string constraint;
  Expr expr;
};

/// asm volatile(template : outputs : inputs : "memory")
struct AsmStmtNode : StmtNode {
  HIDET_NODE_KIND(AsmStmt)
  std::string templ;
  std::vector<AsmOperand> outputs, inputs;
  bool is_volatile = true;
  bool memory_clobber = true;
  AsmStmtNode(std::string t, std::vector<AsmOperand> o, std::vector<AsmOperand> i, bool v, bool m, SourceLoc l)
      : StmtNode(kKind, l), templ(std::move(t)), outputs(std::move(o)), inputs(std::move(i)),
        is_volatile(v), memory_clobber(m) {}
  static Stmt make(std::string templ, std::vector<AsmOperand> outputs, std::vector<AsmOperand> inputs,
                   bool is_volatile = true, bool memory_clobber = true, SourceLoc l = {}) {
    return Stmt(new AsmStmtNode(std::move(templ), std::move(outputs), std::move(inputs), is_volatile,
                                memory_clobber, l));
  }
};

/// A sequence from a list, flattening nested sequences; a single statement is returned as is.
Stmt seq(std::vector<Stmt> stmts, SourceLoc l = {});

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/stmt.ipp"
#endif
