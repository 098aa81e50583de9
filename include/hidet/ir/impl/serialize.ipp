// Definitions for hidet/ir/serialize.hpp.
#pragma once

#include "hidet/ir/serialize.hpp"

#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "hidet/ir/layouts.hpp"
#include "hidet/util/bytes.hpp"

namespace hidet::ir {

namespace detail {

/// How a node reference starts: no node, a node written before (its number follows), or a new
/// node (its kind and fields follow).
enum class NodeTag : std::uint8_t { null, seen, fresh };

/// The number of intrinsics (Intrinsic::None is 0, the intrinsics 1 to this).
#define HIDET_X(e, n) +1
inline constexpr int intrinsic_count = 0 HIDET_INTRINSICS(HIDET_X);
#undef HIDET_X

/// The concrete layout classes (LayoutNode has one NodeKind).
enum class LayoutClass : std::uint8_t { strided, local, composed, concat, swizzle };

/// A file name kept for the life of the process (SourceLoc holds a const char *).
inline const char *interned_file_name(std::string_view s) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> names;
  std::lock_guard<std::mutex> lock(mu);
  auto it = names.find(s);
  if (it == names.end()) it = names.emplace(s).first;
  return it->c_str();
}

class IRWriter {
public:
  util::ByteWriter w;

  void module(const Module &m) {
    w.pod(std::uint64_t(m->functions.size()));
    for (const auto &f : m->functions)
      function(f);
  }

private:
  void function(const Function &f) {
    w.str(f->name);
    w.pod(std::uint64_t(f->params.size()));
    for (const auto &p : f->params)
      expr(p);
    stmt(f->body);
    type(f->ret_type);
    w.pod(f->func_kind);
    const FuncAttrs &a = f->attrs;
    for (const auto &e : a.grid_dim)
      expr(e);
    for (const auto &e : a.block_dim)
      expr(e);
    expr(a.dynamic_smem_bytes);
    w.pod(std::int32_t(a.min_blocks));
    for (int c : a.cluster_dim)
      w.pod(std::int32_t(c));
    w.pod(std::uint8_t(a.has_grid));
    w.pod(std::uint8_t(a.has_block));
    loc(f->loc);
  }

  /// Writes the reference; true when the node is new and its fields must follow.
  bool begin(const Object *o) {
    if (!o) {
      w.pod(NodeTag::null);
      return false;
    }
    if (auto it = ids_.find(o); it != ids_.end()) {
      w.pod(NodeTag::seen);
      w.pod(it->second);
      return false;
    }
    w.pod(NodeTag::fresh);
    w.pod(o->kind);
    return true;
  }
  /// Numbers the node just written (after its fields, as the reader does).
  void end(const Object *o) { ids_[o] = std::uint32_t(ids_.size()); }

  void loc(const SourceLoc &l) {
    if (!l.file) {
      w.pod(std::uint32_t(0));
    } else if (auto it = files_.find(l.file); it != files_.end()) {
      w.pod(it->second);
    } else {
      auto id = std::uint32_t(files_.size() + 1);
      files_[l.file] = id;
      w.pod(id);
      w.str(l.file);
    }
    w.pod(l.line);
  }

  void exprs(const std::vector<Expr> &v) {
    w.pod(std::uint64_t(v.size()));
    for (const auto &e : v)
      expr(e);
  }

  void type(const Type &t) {
    if (!begin(t.get())) return;
    if (auto x = t.as<ScalarTypeNode>()) {
      w.pod(x->dtype.code);
    } else if (auto x = t.as<PointerTypeNode>()) {
      type(x->base);
    } else if (auto x = t.as<TensorTypeNode>()) {
      w.pod(x->dtype.code);
      exprs(x->shape);
      layout(x->layout);
      w.pod(x->scope);
    }
    end(t.get());
  }

  void layout(const Layout &l) {
    if (!begin(l.get())) return;
    if (auto x = dynamic_cast<const StridedLayoutNode *>(l.get())) {
      w.pod(LayoutClass::strided);
      exprs(x->shape);
      exprs(x->strides);
      w.str(x->name);
    } else if (auto x = dynamic_cast<const LocalLayoutNode *>(l.get())) {
      w.pod(LayoutClass::local);
      exprs(x->shape);
    } else if (auto x = dynamic_cast<const ComposedLayoutNode *>(l.get())) {
      w.pod(LayoutClass::composed);
      exprs(x->shape);
      layout(x->outer);
      layout(x->inner);
    } else if (auto x = dynamic_cast<const ConcatLayoutNode *>(l.get())) {
      w.pod(LayoutClass::concat);
      exprs(x->shape);
      layout(x->lhs);
      layout(x->rhs);
    } else if (auto x = dynamic_cast<const SwizzleLayoutNode *>(l.get())) {
      w.pod(LayoutClass::swizzle);
      layout(x->base);
      w.pod(std::int32_t(x->dim));
      w.pod(std::int32_t(x->regards_dim));
      w.pod(std::int32_t(x->log_step));
    } else {
      HIDET_ASSERT(false,
                   "serialize_module: a layout class the serializer does not know: ", l->str());
    }
    end(l.get());
  }

  void expr(const Expr &e) {
    if (!begin(e.get())) return;
    loc(e->loc);
    type(e->type);
    switch (e->kind) {
    case NodeKind::Constant: {
      auto x = e.as<ConstantNode>();
      w.pod(x->dtype.code);
      w.pod(x->ivalue);
      w.pod(x->fvalue);
      break;
    }
    case NodeKind::Var:
      w.str(e.as<VarNode>()->hint);
      break;
    case NodeKind::Builtin:
      w.pod(e.as<BuiltinNode>()->which);
      break;
    case NodeKind::Unary:
      w.pod(e.as<UnaryNode>()->op);
      expr(e.as<UnaryNode>()->a);
      break;
    case NodeKind::Binary: {
      auto x = e.as<BinaryNode>();
      w.pod(x->op);
      expr(x->a);
      expr(x->b);
      break;
    }
    case NodeKind::Cast:
      expr(e.as<CastNode>()->a);
      break;
    case NodeKind::Select: {
      auto x = e.as<SelectNode>();
      expr(x->cond);
      expr(x->t);
      expr(x->f);
      break;
    }
    case NodeKind::Call: {
      auto x = e.as<CallNode>();
      w.pod(x->op);
      w.str(x->func_name);
      exprs(x->args);
      w.str(x->text);
      break;
    }
    case NodeKind::TensorElement: {
      auto x = e.as<TensorElementNode>();
      expr(x->base);
      exprs(x->indices);
      break;
    }
    case NodeKind::Address:
      expr(e.as<AddressNode>()->a);
      break;
    case NodeKind::Deref:
      expr(e.as<DerefNode>()->a);
      break;
    default:
      HIDET_ASSERT(false, "serialize_module: not an expression kind");
    }
    end(e.get());
  }

  void operands(const std::vector<AsmOperand> &v) {
    w.pod(std::uint64_t(v.size()));
    for (const auto &o : v) {
      w.str(o.constraint);
      expr(o.expr);
    }
  }

  void stmt(const Stmt &s) {
    if (!begin(s.get())) return;
    loc(s->loc);
    switch (s->kind) {
    case NodeKind::DeclareStmt:
      expr(s.as<DeclareStmtNode>()->var);
      expr(s.as<DeclareStmtNode>()->init);
      break;
    case NodeKind::AssignStmt:
      expr(s.as<AssignStmtNode>()->var);
      expr(s.as<AssignStmtNode>()->value);
      break;
    case NodeKind::BufferStoreStmt: {
      auto x = s.as<BufferStoreStmtNode>();
      expr(x->base);
      exprs(x->indices);
      expr(x->value);
      break;
    }
    case NodeKind::SeqStmt: {
      auto x = s.as<SeqStmtNode>();
      w.pod(std::uint64_t(x->seq.size()));
      for (const auto &c : x->seq)
        stmt(c);
      break;
    }
    case NodeKind::ForStmt: {
      auto x = s.as<ForStmtNode>();
      expr(x->var);
      expr(x->start);
      expr(x->stop);
      expr(x->step);
      w.pod(std::int32_t(x->unroll));
      stmt(x->body);
      break;
    }
    case NodeKind::WhileStmt:
      expr(s.as<WhileStmtNode>()->cond);
      stmt(s.as<WhileStmtNode>()->body);
      break;
    case NodeKind::IfStmt: {
      auto x = s.as<IfStmtNode>();
      expr(x->cond);
      stmt(x->then_body);
      stmt(x->else_body);
      break;
    }
    case NodeKind::BreakStmt:
    case NodeKind::ContinueStmt:
      break;
    case NodeKind::ReturnStmt:
      expr(s.as<ReturnStmtNode>()->value);
      break;
    case NodeKind::EvaluateStmt:
      expr(s.as<EvaluateStmtNode>()->expr);
      break;
    case NodeKind::AssertStmt:
      expr(s.as<AssertStmtNode>()->cond);
      w.str(s.as<AssertStmtNode>()->message);
      break;
    case NodeKind::AsmStmt: {
      auto x = s.as<AsmStmtNode>();
      w.str(x->templ);
      operands(x->outputs);
      operands(x->inputs);
      w.pod(std::uint8_t(x->is_volatile));
      w.pod(std::uint8_t(x->memory_clobber));
      break;
    }
    default:
      HIDET_ASSERT(false, "serialize_module: not a statement kind");
    }
    end(s.get());
  }

  std::unordered_map<const Object *, std::uint32_t> ids_;
  std::unordered_map<const char *, std::uint32_t> files_;
};

class IRReader {
public:
  IRReader(std::string_view bytes, const std::string &where) : r(bytes, where) {}
  util::ByteReader r;

  Module module() {
    auto n = r.count(8);
    std::vector<Function> fs;
    for (std::uint64_t i = 0; i < n; ++i)
      fs.push_back(function());
    if (!r.done()) r.corrupt("bytes after the module");
    return make_module(std::move(fs));
  }

private:
  Function function() {
    std::string name = r.str();
    auto np = r.count(1);
    std::vector<Var> params;
    for (std::uint64_t i = 0; i < np; ++i)
      params.push_back(var());
    Stmt body = stmt();
    Type ret = type();
    auto kind = r.enumerator(FuncKind::Host, "function kind");
    FuncAttrs a;
    for (auto &e : a.grid_dim)
      e = expr();
    for (auto &e : a.block_dim)
      e = expr();
    a.dynamic_smem_bytes = expr();
    a.min_blocks = r.pod<std::int32_t>();
    for (int &c : a.cluster_dim)
      c = r.pod<std::int32_t>();
    a.has_grid = r.pod<std::uint8_t>() != 0;
    a.has_block = r.pod<std::uint8_t>() != 0;
    SourceLoc l = loc();
    return make_function(std::move(name), std::move(params), std::move(body), std::move(ret), kind,
                         std::move(a), l);
  }

  SourceLoc loc() {
    auto id = r.pod<std::uint32_t>();
    const char *file = nullptr;
    if (id == files_.size() + 1) {
      files_.push_back(interned_file_name(r.view()));
      file = files_.back();
    } else if (id > files_.size()) {
      r.corrupt("a source file of no name");
    } else if (id > 0) {
      file = files_[id - 1];
    }
    auto line = r.pod<std::uint32_t>();
    return file ? SourceLoc(file, line) : SourceLoc();
  }

  /// The next node reference: null, a node read before (of a kind `accept` takes), or the kind of
  /// a new node (its fields follow).
  template <class Accept>
  std::pair<Ref<Object>, std::optional<NodeKind>> begin(Accept accept, const char *what) {
    auto tag = r.enumerator(NodeTag::fresh, "node tag");
    if (tag == NodeTag::null) return {Ref<Object>(), std::nullopt};
    if (tag == NodeTag::seen) {
      auto id = r.pod<std::uint32_t>();
      if (id >= objs_.size() || !accept(objs_[id]->kind))
        r.corrupt(str_cat("a reference to no ", what));
      return {objs_[id], std::nullopt};
    }
    auto kind = r.enumerator(NodeKind::Layout, "node kind");
    if (!accept(kind)) r.corrupt(str_cat("a node that is no ", what));
    return {Ref<Object>(), kind};
  }
  template <class T> Ref<T> end(const T *node) {
    Ref<T> ref(node);
    objs_.push_back(Ref<Object>(static_cast<const Object *>(node)));
    return ref;
  }
  template <class T> static Ref<T> cast(const Ref<Object> &o) {
    return Ref<T>(static_cast<const T *>(o.get()));
  }

  std::vector<Expr> exprs() {
    auto n = r.count(1);
    std::vector<Expr> v;
    for (std::uint64_t i = 0; i < n; ++i)
      v.push_back(expr());
    return v;
  }

  DataType dtype() { return DataType(r.enumerator(DTypeCode::F8E5M2, "dtype")); }

  Type type() {
    auto [seen, kind] = begin(TypeNode::is_kind, "type");
    if (!kind) return cast<TypeNode>(seen);
    switch (*kind) {
    case NodeKind::ScalarType: {
      Type t = scalar_type(dtype()); // interned: numbered like any node
      objs_.push_back(Ref<Object>(static_cast<const Object *>(t.get())));
      return t;
    }
    case NodeKind::PointerType:
      return end<TypeNode>(new PointerTypeNode(type()));
    case NodeKind::TensorType: {
      DataType d = dtype();
      std::vector<Expr> shape = exprs();
      Layout l = layout();
      auto scope = r.enumerator(Scope::Param, "memory scope");
      return end<TypeNode>(new TensorTypeNode(d, std::move(shape), std::move(l), scope));
    }
    default: {
      Type t = void_type();
      objs_.push_back(Ref<Object>(static_cast<const Object *>(t.get())));
      return t;
    }
    }
  }

  Layout layout() {
    auto [seen, kind] = begin([](NodeKind k) { return k == NodeKind::Layout; }, "layout");
    if (!kind) return cast<LayoutNode>(seen);
    switch (r.enumerator(LayoutClass::swizzle, "layout class")) {
    case LayoutClass::strided: {
      std::vector<Expr> shape = exprs();
      std::vector<Expr> strides = exprs();
      if (strides.size() != shape.size()) r.corrupt("a strided layout of mismatched ranks");
      return end<LayoutNode>(new StridedLayoutNode(std::move(shape), std::move(strides), r.str()));
    }
    case LayoutClass::local:
      return end<LayoutNode>(new LocalLayoutNode(exprs()));
    case LayoutClass::composed: {
      std::vector<Expr> shape = exprs();
      Layout outer = layout(), inner = layout();
      if (!outer || !inner) r.corrupt("a composed layout without its parts");
      return end<LayoutNode>(
          new ComposedLayoutNode(std::move(shape), std::move(outer), std::move(inner)));
    }
    case LayoutClass::concat: {
      std::vector<Expr> shape = exprs();
      Layout lhs = layout(), rhs = layout();
      if (!lhs || !rhs) r.corrupt("a concatenated layout without its parts");
      return end<LayoutNode>(
          new ConcatLayoutNode(std::move(shape), std::move(lhs), std::move(rhs)));
    }
    case LayoutClass::swizzle: {
      Layout base = layout();
      if (!base) r.corrupt("a swizzled layout without its base");
      int d = r.pod<std::int32_t>(), rd = r.pod<std::int32_t>(), s = r.pod<std::int32_t>();
      int rank = int(base->shape.size());
      if (d < 0 || d >= rank || rd < 0 || rd >= rank) r.corrupt("a swizzle of no dimension");
      return end<LayoutNode>(new SwizzleLayoutNode(std::move(base), d, rd, s));
    }
    }
    return {};
  }

  /// An expression that must be present.
  Expr some_expr(const char *what) {
    Expr e = expr();
    if (!e) r.corrupt(str_cat("a missing ", what));
    return e;
  }

  Var var() {
    Expr e = expr();
    if (!e.is<VarNode>()) r.corrupt("a variable that is not one");
    return Var(e.as<VarNode>());
  }

  Expr expr() {
    auto [seen, kind] = begin(ExprNode::is_kind, "expression");
    if (!kind) return cast<ExprNode>(seen);
    SourceLoc l = loc();
    Type t = type();
    if (!t) r.corrupt("an expression without a type");
    switch (*kind) {
    case NodeKind::Constant: {
      DataType d = dtype();
      auto i = r.pod<std::int64_t>();
      auto f = r.pod<double>();
      return end<ExprNode>(new ConstantNode(d, i, f, l));
    }
    case NodeKind::Var:
      return end<ExprNode>(new VarNode(std::move(t), r.str(), l));
    case NodeKind::Builtin:
      return end<ExprNode>(new BuiltinNode(r.enumerator(BuiltinKind::GridDimZ, "builtin"), l));
    case NodeKind::Unary: {
      auto op = r.enumerator(UnaryOp::BitNot, "unary operator");
      return end<ExprNode>(new UnaryNode(op, some_expr("operand"), std::move(t), l));
    }
    case NodeKind::Binary: {
      auto op = r.enumerator(BinaryOp::LogicalOr, "binary operator");
      Expr a = some_expr("operand");
      Expr b = some_expr("operand");
      return end<ExprNode>(new BinaryNode(op, std::move(a), std::move(b), std::move(t), l));
    }
    case NodeKind::Cast:
      return end<ExprNode>(new CastNode(some_expr("operand"), std::move(t), l));
    case NodeKind::Select: {
      Expr c = some_expr("condition");
      Expr x = some_expr("operand");
      Expr y = some_expr("operand");
      return end<ExprNode>(new SelectNode(std::move(c), std::move(x), std::move(y), l));
    }
    case NodeKind::Call: {
      auto op = r.pod<std::uint8_t>();
      if (op > intrinsic_count) r.corrupt("an unknown intrinsic");
      std::string fn = r.str();
      std::vector<Expr> args = exprs();
      std::string text = r.str();
      return end<ExprNode>(new CallNode(Intrinsic(op), std::move(fn), std::move(args),
                                        std::move(text), std::move(t), l));
    }
    case NodeKind::TensorElement: {
      Var base = var();
      std::vector<Expr> idx = exprs();
      return end<ExprNode>(new TensorElementNode(std::move(base), std::move(idx), std::move(t), l));
    }
    case NodeKind::Address:
      return end<ExprNode>(new AddressNode(some_expr("operand"), std::move(t), l));
    default:
      return end<ExprNode>(new DerefNode(some_expr("operand"), std::move(t), l));
    }
  }

  std::vector<AsmOperand> operands() {
    auto n = r.count(9);
    std::vector<AsmOperand> v;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string c = r.str();
      v.push_back({std::move(c), some_expr("asm operand")});
    }
    return v;
  }

  Stmt some_stmt(const char *what) {
    Stmt s = stmt();
    if (!s) r.corrupt(str_cat("a missing ", what));
    return s;
  }

  Stmt stmt() {
    auto [seen, kind] = begin(StmtNode::is_kind, "statement");
    if (!kind) return cast<StmtNode>(seen);
    SourceLoc l = loc();
    switch (*kind) {
    case NodeKind::DeclareStmt: {
      Var v = var();
      Expr init = expr();
      return end<StmtNode>(new DeclareStmtNode(std::move(v), std::move(init), l));
    }
    case NodeKind::AssignStmt: {
      Var v = var();
      return end<StmtNode>(new AssignStmtNode(std::move(v), some_expr("value"), l));
    }
    case NodeKind::BufferStoreStmt: {
      Var base = var();
      std::vector<Expr> idx = exprs();
      return end<StmtNode>(
          new BufferStoreStmtNode(std::move(base), std::move(idx), some_expr("value"), l));
    }
    case NodeKind::SeqStmt: {
      auto n = r.count(1);
      std::vector<Stmt> seq;
      for (std::uint64_t i = 0; i < n; ++i)
        seq.push_back(some_stmt("statement of a sequence"));
      return end<StmtNode>(new SeqStmtNode(std::move(seq), l));
    }
    case NodeKind::ForStmt: {
      Var v = var();
      Expr a = some_expr("loop start");
      Expr b = some_expr("loop stop");
      Expr s = some_expr("loop step");
      int unroll = r.pod<std::int32_t>();
      Stmt body = some_stmt("loop body");
      return end<StmtNode>(new ForStmtNode(std::move(v), std::move(a), std::move(b), std::move(s),
                                           unroll, std::move(body), l));
    }
    case NodeKind::WhileStmt: {
      Expr c = some_expr("loop condition");
      return end<StmtNode>(new WhileStmtNode(std::move(c), some_stmt("loop body"), l));
    }
    case NodeKind::IfStmt: {
      Expr c = some_expr("condition");
      Stmt t = some_stmt("then branch");
      Stmt e = stmt();
      return end<StmtNode>(new IfStmtNode(std::move(c), std::move(t), std::move(e), l));
    }
    case NodeKind::BreakStmt:
      return end<StmtNode>(new BreakStmtNode(l));
    case NodeKind::ContinueStmt:
      return end<StmtNode>(new ContinueStmtNode(l));
    case NodeKind::ReturnStmt:
      return end<StmtNode>(new ReturnStmtNode(expr(), l));
    case NodeKind::EvaluateStmt:
      return end<StmtNode>(new EvaluateStmtNode(some_expr("expression"), l));
    case NodeKind::AssertStmt: {
      Expr c = some_expr("condition");
      return end<StmtNode>(new AssertStmtNode(std::move(c), r.str(), l));
    }
    default: {
      std::string templ = r.str();
      std::vector<AsmOperand> outs = operands();
      std::vector<AsmOperand> ins = operands();
      bool vol = r.pod<std::uint8_t>() != 0;
      bool mem = r.pod<std::uint8_t>() != 0;
      return end<StmtNode>(
          new AsmStmtNode(std::move(templ), std::move(outs), std::move(ins), vol, mem, l));
    }
    }
  }

  std::vector<Ref<Object>> objs_;
  std::vector<const char *> files_;
};

} // namespace detail

HIDET_INLINE std::string serialize_module(const Module &m) {
  detail::IRWriter w;
  w.module(m);
  return std::move(w.w.out);
}

HIDET_INLINE Module deserialize_module(std::string_view bytes, const std::string &where) {
  detail::IRReader r(bytes, where);
  return r.module();
}

} // namespace hidet::ir
