// Visitor and mutator bases for the IR, derived from the node lists in node.hpp.
//  * IRVisitor walks every expression and statement (including tensor-type shapes of declared
//    variables) in evaluation order; override visit_X to act on a node kind.
//  * IRMutator rebuilds the tree bottom-up and returns the original node when no child changed.
#pragma once

#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

#define HIDET_FWD(Name) struct Name##Node;
HIDET_EXPR_NODES(HIDET_FWD)
#undef HIDET_FWD

class IRVisitor {
public:
  virtual ~IRVisitor() = default;

  virtual void visit(const Expr &e);
  virtual void visit(const Stmt &s);
  virtual void visit(const Function &f);
  virtual void visit(const Module &m);
  /// Visits the shape expressions of tensor types.
  virtual void visit_type(const Type &t);

protected:
  virtual void visit_Constant(const ConstantNode *);
  virtual void visit_Var(const VarNode *);
  virtual void visit_Builtin(const BuiltinNode *);
  virtual void visit_Unary(const UnaryNode *e);
  virtual void visit_Binary(const BinaryNode *e);
  virtual void visit_Cast(const CastNode *e);
  virtual void visit_Select(const SelectNode *e);
  virtual void visit_Call(const CallNode *e);
  virtual void visit_TensorElement(const TensorElementNode *e);
  virtual void visit_Address(const AddressNode *e);
  virtual void visit_Deref(const DerefNode *e);

  virtual void visit_DeclareStmt(const DeclareStmtNode *s);
  virtual void visit_AssignStmt(const AssignStmtNode *s);
  virtual void visit_BufferStoreStmt(const BufferStoreStmtNode *s);
  virtual void visit_SeqStmt(const SeqStmtNode *s);
  virtual void visit_ForStmt(const ForStmtNode *s);
  virtual void visit_WhileStmt(const WhileStmtNode *s);
  virtual void visit_IfStmt(const IfStmtNode *s);
  virtual void visit_BreakStmt(const BreakStmtNode *);
  virtual void visit_ContinueStmt(const ContinueStmtNode *);
  virtual void visit_ReturnStmt(const ReturnStmtNode *s);
  virtual void visit_EvaluateStmt(const EvaluateStmtNode *s);
  virtual void visit_AssertStmt(const AssertStmtNode *s);
  virtual void visit_AsmStmt(const AsmStmtNode *s);
};

class IRMutator {
public:
  virtual ~IRMutator() = default;

  virtual Expr mutate(const Expr &e);
  virtual Stmt mutate(const Stmt &s);
  /// Mutates a function's body and attribute expressions; returns `f` itself if nothing changed.
  virtual Function mutate(const Function &f);
  virtual Module mutate(const Module &m);

protected:
  /// Mutates a list; returns true if any element changed.
  bool mutate_list(const std::vector<Expr> &in, std::vector<Expr> &out);
  /// Variables are not rewritten by default; a pass that substitutes overrides mutate_Var.
  Var mutate_var_ref(const Var &v);

  virtual Expr mutate_Constant(const Expr &e, const ConstantNode *);
  virtual Expr mutate_Var(const Expr &e, const VarNode *);
  virtual Expr mutate_Builtin(const Expr &e, const BuiltinNode *);
  virtual Expr mutate_Unary(const Expr &e, const UnaryNode *n);
  virtual Expr mutate_Binary(const Expr &e, const BinaryNode *n);
  virtual Expr mutate_Cast(const Expr &e, const CastNode *n);
  virtual Expr mutate_Select(const Expr &e, const SelectNode *n);
  virtual Expr mutate_Call(const Expr &e, const CallNode *n);
  virtual Expr mutate_TensorElement(const Expr &e, const TensorElementNode *n);
  virtual Expr mutate_Address(const Expr &e, const AddressNode *n);
  virtual Expr mutate_Deref(const Expr &e, const DerefNode *n);

  virtual Stmt mutate_DeclareStmt(const Stmt &s, const DeclareStmtNode *n);
  virtual Stmt mutate_AssignStmt(const Stmt &s, const AssignStmtNode *n);
  virtual Stmt mutate_BufferStoreStmt(const Stmt &s, const BufferStoreStmtNode *n);
  virtual Stmt mutate_SeqStmt(const Stmt &s, const SeqStmtNode *n);
  virtual Stmt mutate_ForStmt(const Stmt &s, const ForStmtNode *n);
  virtual Stmt mutate_WhileStmt(const Stmt &s, const WhileStmtNode *n);
  virtual Stmt mutate_IfStmt(const Stmt &s, const IfStmtNode *n);
  virtual Stmt mutate_BreakStmt(const Stmt &s, const BreakStmtNode *);
  virtual Stmt mutate_ContinueStmt(const Stmt &s, const ContinueStmtNode *);
  virtual Stmt mutate_ReturnStmt(const Stmt &s, const ReturnStmtNode *n);
  virtual Stmt mutate_EvaluateStmt(const Stmt &s, const EvaluateStmtNode *n);
  virtual Stmt mutate_AssertStmt(const Stmt &s, const AssertStmtNode *n);
  virtual Stmt mutate_AsmStmt(const Stmt &s, const AsmStmtNode *n);
};

} // namespace hidet::ir
#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/functor.ipp"
#endif
