// Tests of instantiate_symbols and symbol_sources.
#include <doctest/doctest.h>

#include "hidet/ir/equal.hpp"
#include "hidet/transforms/instantiate_symbols.hpp"
#include "hidet/transforms/verify.hpp"

using namespace hidet;
using namespace hidet::ir;

namespace {

Type i32t() { return scalar_type(dtypes::i32); }
Type tensor(std::vector<Expr> shape) { return TensorTypeNode::make(dtypes::f32, std::move(shape)); }

FuncAttrs launch(Expr grid) {
  FuncAttrs a;
  a.grid_dim = {grid, {}, {}};
  a.block_dim = {int32(32), {}, {}};
  a.has_grid = a.has_block = true;
  return a;
}

} // namespace

TEST_CASE("instantiate_symbols: appends symbols in order of first appearance") {
  // kernel(a: f32[m, k], alpha: f32, b: f32[k, n], c: f32[m, n])  ->  ..., m, k, n
  Var m = make_var(i32t(), "m"), k = make_var(i32t(), "k"), n = make_var(i32t(), "n");
  Var a = make_var(tensor({m, k}), "a"), b = make_var(tensor({k, n}), "b"), c = make_var(tensor({m, n}), "c");
  Var alpha = make_var(scalar_type(dtypes::f32), "alpha");
  Stmt body = BufferStoreStmtNode::make(c, {int32(0), int32(0)}, TensorElementNode::make(a, {int32(0), int32(0)}));
  Function f = make_function("gemm", {a, alpha, b, c}, body, void_type(), FuncKind::Kernel, launch(m));

  CHECK(symbolic_dims(f).size() == 3);
  auto sources = symbol_sources(f);
  REQUIRE(sources.size() == 3);
  CHECK(sources[0].first.same_as(m));
  CHECK(sources[0].second.param_index == 0);
  CHECK(sources[0].second.dim_index == 0);
  CHECK(sources[1].first.same_as(k));
  CHECK(sources[1].second.param_index == 0);
  CHECK(sources[1].second.dim_index == 1);
  CHECK(sources[2].first.same_as(n));
  CHECK(sources[2].second.param_index == 2);
  CHECK(sources[2].second.dim_index == 1);

  Module mod = make_module({f});
  Module out = instantiate_symbols(mod);
  Function g = out->functions[0];
  REQUIRE(g->params.size() == 7);
  CHECK(g->params[4].same_as(m));
  CHECK(g->params[5].same_as(k));
  CHECK(g->params[6].same_as(n));
  CHECK(g->body.same_as(f->body));
  CHECK(symbolic_dims(g).empty()); // the kernel is closed now
  CHECK_NOTHROW(verify(out));
  // idempotent; untouched modules come back as the same node
  CHECK(instantiate_symbols(out).same_as(out));
}

TEST_CASE("instantiate_symbols: a symbol found alone in a later parameter") {
  // a: f32[2*n], b: f32[n]  ->  n comes from b's dim 0
  Var n = make_var(i32t(), "n");
  Var a = make_var(tensor({BinaryNode::make(BinaryOp::Mul, int32(2), n)}), "a");
  Var b = make_var(tensor({int32(3), n}), "b");
  Function f = make_function("k", {a, b}, SeqStmtNode::make({}), void_type(), FuncKind::Kernel, launch(int32(1)));
  auto sources = symbol_sources(f);
  REQUIRE(sources.size() == 1);
  CHECK(sources[0].second.param_index == 1);
  CHECK(sources[0].second.dim_index == 1);
  CHECK(instantiate_symbols(f)->params.size() == 3);
}

TEST_CASE("instantiate_symbols: a symbol only inside compound dims is a DSLError") {
  Var n = make_var(i32t(), "n");
  Var a = make_var(tensor({BinaryNode::make(BinaryOp::Mul, int32(2), n)}), "a", SourceLoc("user.cpp", 77));
  Function f = make_function("k", {a}, SeqStmtNode::make({}), void_type(), FuncKind::Kernel,
                             launch(int32(1)), SourceLoc("user.cpp", 70));
  try {
    instantiate_symbols(make_module({f}));
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    CHECK(e.message().find("symbolic dim n must appear alone as a dimension of some tensor parameter") !=
          std::string::npos);
    CHECK(e.loc().line == 77);
  }
  CHECK_THROWS_AS(symbol_sources(f), DSLError);
}

TEST_CASE("instantiate_symbols: device functions and closed kernels are left alone") {
  Var n = make_var(i32t(), "n");
  Var a = make_var(tensor({n}), "a");
  Function dev = make_function("d", {a}, SeqStmtNode::make({}), void_type(), FuncKind::Device);
  CHECK(instantiate_symbols(dev).same_as(dev));
  Function closed = make_function("k", {a, n}, SeqStmtNode::make({}), void_type(), FuncKind::Kernel, launch(n));
  CHECK(instantiate_symbols(closed).same_as(closed));
  CHECK(symbol_sources(closed).empty());
}
