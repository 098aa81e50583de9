// Tests of the verifier: well-formed IR passes; each rule's violation throws the right error type
// at the offending line.
#include <doctest/doctest.h>

#include "hidet/transforms/verify.hpp"

using namespace hidet;
using namespace hidet::ir;

namespace {

Type i32t() { return scalar_type(dtypes::i32); }
Expr add(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Add, a, b); }
Expr lt(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Lt, a, b); }
SourceLoc at(std::uint32_t line) { return SourceLoc("user.cpp", line); }

FuncAttrs launch() {
  FuncAttrs a;
  a.grid_dim = {int32(1), {}, {}};
  a.block_dim = {int32(32), {}, {}};
  a.has_grid = a.has_block = true;
  return a;
}
Function kernel(std::vector<Var> params, Stmt body, FuncAttrs attrs = launch()) {
  return make_function("kern", std::move(params), std::move(body), void_type(), FuncKind::Kernel,
                       attrs, at(1));
}

/// Runs verify and checks it throws DSLError at `line` with `text` in the message.
void check_dsl_error(const Module &m, std::uint32_t line, const std::string &text) {
  try {
    verify(m);
    FAIL("verify accepted the module; expected: ", text);
  } catch (const DSLError &e) {
    INFO(e.what());
    CHECK(e.message().find(text) != std::string::npos);
    CHECK(e.loc().line == line);
  }
}

} // namespace

TEST_CASE("verify: a well-formed kernel with symbolic dims, loops and a device call passes") {
  Var m = make_var(i32t(), "m");
  Var a = make_var(TensorTypeNode::make(dtypes::f32, {m, int32(4)}), "a");
  Var n = make_var(i32t(), "n");
  Var i = make_var(i32t(), "i"), k = make_var(i32t(), "k");
  Var s = make_var(TensorTypeNode::make(dtypes::f32, {int32(32)}, Scope::Shared), "s");
  Var q = make_var(i32t(), "q");
  Function helper = make_function("helper", {q}, ReturnStmtNode::make(add(q, int32(1))), i32t(),
                                  FuncKind::Device);
  Stmt body = seq({
      DeclareStmtNode::make(s),
      DeclareStmtNode::make(i, BuiltinNode::make(BuiltinKind::ThreadIdxX)),
      ForStmtNode::make(k, int32(0), n, int32(1), 0,
                        seq({IfStmtNode::make(lt(k, m), ContinueStmtNode::make(), BreakStmtNode::make()),
                             BufferStoreStmtNode::make(a, {i, k}, TensorElementNode::make(s, {k})),
                             AssignStmtNode::make(i, CallNode::make_func("helper", {i}, i32t()))})),
      WhileStmtNode::make(lt(i, n), seq({AssignStmtNode::make(i, add(i, int32(1))), BreakStmtNode::make()})),
  });
  FuncAttrs attrs = launch();
  attrs.grid_dim = {m, {}, {}};
  CHECK_NOTHROW(verify(make_module({kernel({a, n}, body, attrs), helper})));
}

TEST_CASE("verify: a variable used outside the scope that defined it") {
  Var x = make_var(i32t(), "x");
  Var t = make_var(TensorTypeNode::make(dtypes::i32, {int32(4)}), "t");
  Stmt body = seq({
      IfStmtNode::make(boolean(true), DeclareStmtNode::make(x, int32(1), at(10)), {}, at(9)),
      BufferStoreStmtNode::make(t, {int32(0)}, x, at(12)),
  });
  check_dsl_error(make_module({kernel({t}, body)}), 12,
                  "variable 'x' is used outside the scope that defined it (defined at user.cpp:10)");
  // a loop variable after its loop
  Var k = make_var(i32t(), "k");
  Stmt body2 = seq({ForStmtNode::make(k, int32(0), int32(4), int32(1), 0,
                                      BufferStoreStmtNode::make(t, {k}, k), at(20)),
                    BufferStoreStmtNode::make(t, {k}, int32(0), at(22))});
  check_dsl_error(make_module({kernel({t}, body2)}), 22, "variable 'k' is used outside the scope");
  // used before its declaration in the same block
  Var y = make_var(i32t(), "y");
  Stmt body3 = seq({BufferStoreStmtNode::make(t, {int32(0)}, y, at(30)), DeclareStmtNode::make(y, int32(0), at(31))});
  check_dsl_error(make_module({kernel({t}, body3)}), 30, "variable 'y' is used outside the scope");
}

TEST_CASE("verify: a variable never defined in the function") {
  Var t = make_var(TensorTypeNode::make(dtypes::i32, {int32(4)}), "t");
  Var stray = make_var(i32t(), "stray");
  // the expression's own location wins over the statement's
  Stmt body = BufferStoreStmtNode::make(t, {int32(0)}, BinaryNode::make(BinaryOp::Add, stray, int32(1), at(41)), at(40));
  check_dsl_error(make_module({kernel({t}, body)}), 41, "variable 'stray' is used in function 'kern' but never defined");
  // in a launch dimension
  FuncAttrs attrs = launch();
  attrs.block_dim[0] = stray;
  check_dsl_error(make_module({kernel({t}, SeqStmtNode::make({}), attrs)}), 1, "never defined");
}

TEST_CASE("verify: break and continue outside loops") {
  check_dsl_error(make_module({kernel({}, seq({BreakStmtNode::make(at(50))}))}), 50, "'break' outside a loop");
  Stmt s = IfStmtNode::make(boolean(true), ContinueStmtNode::make(at(52)), {}, at(51));
  check_dsl_error(make_module({kernel({}, s)}), 52, "'continue' outside a loop");
}

TEST_CASE("verify: indexing and stores") {
  Var t = make_var(TensorTypeNode::make(dtypes::i32, {int32(4), int32(4)}), "t");
  check_dsl_error(make_module({kernel({t}, BufferStoreStmtNode::make(t, {int32(0)}, int32(1), at(60)))}), 60,
                  "tensor 't' of type i32[4, 4] global has rank 2 but is indexed with 1 indices");
  Var x = make_var(i32t(), "x");
  check_dsl_error(make_module({kernel({t, x}, BufferStoreStmtNode::make(x, {int32(0)}, int32(1), at(61)))}), 61,
                  "'x' of type i32 is not a tensor");
  check_dsl_error(make_module({kernel({t}, AssignStmtNode::make(t, int32(1), at(62)))}), 62,
                  "cannot assign to tensor 't'");
  // declared twice while in scope
  Var y = make_var(i32t(), "y");
  check_dsl_error(make_module({kernel({}, seq({DeclareStmtNode::make(y, {}, at(63)), DeclareStmtNode::make(y, {}, at(64))}))}),
                  64, "variable 'y' is declared again while still in scope");
}

TEST_CASE("verify: kernel launch dims and calls") {
  FuncAttrs no_grid = launch();
  no_grid.has_grid = false;
  check_dsl_error(make_module({kernel({}, SeqStmtNode::make({}), no_grid)}), 1, "kernel 'kern' has no grid dimensions");
  FuncAttrs no_block = launch();
  no_block.has_block = false;
  check_dsl_error(make_module({kernel({}, SeqStmtNode::make({}), no_block)}), 1, "kernel 'kern' has no block dimensions");
  Stmt call = EvaluateStmtNode::make(CallNode::make_func("missing", {}, void_type(), at(70)), at(70));
  check_dsl_error(make_module({kernel({}, call)}), 70, "function 'missing' is called in 'kern' but is not defined");
  Var q = make_var(i32t(), "q");
  Function helper = make_function("helper", {q}, ReturnStmtNode::make(q), i32t(), FuncKind::Device);
  Stmt bad_args = EvaluateStmtNode::make(CallNode::make_func("helper", {}, i32t()), at(71));
  check_dsl_error(make_module({kernel({}, bad_args), helper}), 71, "takes 1 arguments but is called with 0");
  Stmt calls_kernel = EvaluateStmtNode::make(CallNode::make_func("kern", {}, void_type()), at(72));
  check_dsl_error(make_module({kernel({}, calls_kernel)}), 72, "only device functions can be called");
}

TEST_CASE("verify: internal inconsistencies are InternalError") {
  Stmt bad_if = IfStmtNode::make(Expr(), SeqStmtNode::make({}));
  CHECK_THROWS_AS(verify(make_module({kernel({}, bad_if)})), InternalError);
  CHECK_THROWS_AS(verify(make_module({kernel({}, Stmt())})), InternalError);
}
