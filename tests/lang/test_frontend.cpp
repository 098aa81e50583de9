// Front-end tests: the promotion rule, the IR the DSL builds, and DSL misuse reported as
// hidet::DSLError at the user's own line.
#include <doctest/doctest.h>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/lang.hpp"
#include "hidet/transforms/lower.hpp"
#include <optional>

using namespace hidet;
using namespace hidet::lang;

namespace {

/// Runs `f` inside a kernel body and returns the kernel's IR.
template <class F> ir::Function in_kernel(F &&f) {
  auto mod = script_module();
  mod.kernel("k", {f32[4][4]}, [&](Tensor t) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    f(t);
  });
  return mod.ir()->functions[0];
}

/// Expects a DSLError whose message contains `text`, reported at line `line` of this file.
template <class F> void expect_dsl_error(F &&f, const std::string &text, unsigned line) {
  try {
    f();
    FAIL("expected a DSLError containing: " << text);
  } catch (const DSLError &e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(std::string(e.what()).find(text) != std::string::npos);
    CHECK(e.loc().line == line);
    CHECK(std::string(e.loc().file).find("test_frontend.cpp") != std::string::npos);
  }
}

DataType type_of(const Expr &e) { return e.dtype(); }

} // namespace

TEST_CASE("promotion rule follows CUDA C++ with weak literals") {
  in_kernel([](Tensor t) {
    Var i = 3;                      // i32
    Var x = t[0][0];                // f32
    Var h = cast(x, f16);           // f16
    Var b = cast(x, bf16);          // bf16
    Var d = cast(x, f64);           // f64
    Var u = cast(i, u32);           // u32
    Var l = cast(i, i64);           // i64
    Var s = cast(i, i8);            // i8
    CHECK(type_of(i + 1) == dtypes::i32);
    CHECK(type_of(x * 2) == dtypes::f32);     // int literal takes f32
    CHECK(type_of(x * 0.5) == dtypes::f32);   // double literal takes f32 (weak)
    CHECK(type_of(i * 0.5) == dtypes::f32);   // float literal next to an int -> f32
    CHECK(type_of(h + 1.0f) == dtypes::f16);  // literal adopts f16
    CHECK(type_of(h + x) == dtypes::f32);     // wider float wins
    CHECK(type_of(x + d) == dtypes::f64);
    CHECK(type_of(i + x) == dtypes::f32);     // float beats int
    CHECK(type_of(i + u) == dtypes::u32);     // same rank: unsigned wins
    CHECK(type_of(u + l) == dtypes::i64);     // wider rank wins
    CHECK(type_of(s + s) == dtypes::i32);     // integer promotion
    CHECK(type_of(i < x) == dtypes::boolean);
    CHECK(type_of(i << 2) == dtypes::i32);
    CHECK(type_of(select(i < 2, x, 1)) == dtypes::f32);
    CHECK(type_of(max(i, 3)) == dtypes::i32);
    CHECK(type_of(exp(i)) == dtypes::f32);
    CHECK(type_of(exp(d)) == dtypes::f64);
    expect_dsl_error([&] { (void)(h + b); }, "no promotion rule between f16 and bf16", __LINE__);
    expect_dsl_error([&] { (void)(x & i); }, "bitwise operators need integer operands", __LINE__);
    // `t + 1` with a Tensor t does not compile: tensors are not operands.
  });
}

TEST_CASE("naive matmul builds the expected IR") {
  int m = 3, n = 5, k = 4;
  auto mod = script_module("matmul");
  mod.kernel("matmul", {f32[m][k], f32[k][n], f32[m][n]}, [&](Tensor a, Tensor b, Tensor c) {
    attrs.cuda.grid_dim = {ceil_div(m, 32), ceil_div(n, 32)};
    attrs.cuda.block_dim = {32, 32};
    Expr i = threadIdx.x + blockIdx.x * blockDim.x;
    Expr j = threadIdx.y + blockIdx.y * blockDim.y;
    if_(i < m && j < n, [&] {
      c[i][j] = 0.0f;
      for_(range(k), [&](Var kk) { c[i][j] += a[i][kk] * b[kk][j]; });
    });
  });
  auto f = mod.ir()->functions.at(0);
  CHECK(f->name == "matmul");
  CHECK(f->func_kind == ir::FuncKind::Kernel);
  CHECK(f->params.size() == 3);
  std::string text = ir::to_string(f);
  INFO(text);
  CHECK(text.find("block_dim=(32, 32, 1)") != std::string::npos);
  CHECK(text.find("for (") != std::string::npos);
  CHECK(text.find("arg2[threadIdx.x + blockIdx.x * blockDim.x, threadIdx.y + blockIdx.y * blockDim.y] = 0.0f") !=
        std::string::npos);
  // Statements record the user's lines.
  auto iff = f->body.as<ir::IfStmtNode>();
  REQUIRE(iff);
  CHECK(std::string(iff->loc.file).find("test_frontend.cpp") != std::string::npos);
  CHECK(iff->loc.line > 0);
}

TEST_CASE("control flow: else_if/else_, while_, break_/continue_, grid loops") {
  auto f = in_kernel([](Tensor t) {
    Var i = 0;
    while_(i < 10, [&] {
      i += 1;
      if_(i == 3, [&] { continue_(); }).else_if(i == 8, [&] { break_(); }).else_([&] { t[0][0] += 1.0f; });
    });
    for_(grid(2, 3), [&](Var a, Var b) { t[a][b] = cast(a * 3 + b, f32); });
    for_(range(0, 8, 2).unroll(), [&](Var a) { t[1][a / 2] = 0.0f; });
  });
  std::string text = ir::to_string(f);
  INFO(text);
  CHECK(text.find("while") != std::string::npos);
  CHECK(text.find("break") != std::string::npos);
  CHECK(text.find("continue") != std::string::npos);
  CHECK(text.find("else") != std::string::npos);
  // else_if nests an if inside the else branch
  struct Count : ir::IRVisitor {
    int ifs = 0, fors = 0, unrolled = 0;
    void visit_IfStmt(const ir::IfStmtNode *s) override { ifs++, ir::IRVisitor::visit_IfStmt(s); }
    void visit_ForStmt(const ir::ForStmtNode *s) override {
      fors++, unrolled += s->unroll == -1;
      ir::IRVisitor::visit_ForStmt(s);
    }
  } c;
  c.visit(f->body);
  CHECK(c.ifs == 2);
  CHECK(c.fors == 3);
  CHECK(c.unrolled == 1);
}

TEST_CASE("device functions are called from kernels") {
  auto mod = script_module();
  auto axpy = mod.device_function("axpy", f32, {f32, f32, f32}, [&](Var a, Var x, Var y) { return_(a * x + y); });
  mod.kernel("k", {f32[8]}, [&](Tensor t) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 8;
    t[threadIdx.x] = axpy(2.0f, t[threadIdx.x], 1);
  });
  auto m = mod.ir();
  REQUIRE(m->functions.size() == 2);
  CHECK(m->functions[0]->func_kind == ir::FuncKind::Device);
  std::string text = ir::to_string(m->functions[1]);
  CHECK(text.find("axpy(") != std::string::npos);
}

TEST_CASE("side-effecting calls are emitted once whether or not their value is used") {
  auto f = in_kernel([](Tensor t) {
    atomic_add(t[0][0], 1.0f);        // statement
    Var old = atomic_add(t[0][1], 2); // value bound once
    t[1][1] = old;
  });
  struct Count : ir::IRVisitor {
    int atomics = 0;
    void visit_Call(const ir::CallNode *c) override {
      atomics += c->op == ir::Intrinsic::AtomicAdd;
      ir::IRVisitor::visit_Call(c);
    }
  } c;
  c.visit(f->body);
  CHECK(c.atomics == 2);
}

TEST_CASE("symbolic dims become parameters after lowering") {
  auto m = symbol("m");
  auto mod = script_module();
  mod.kernel("scale", {f32[m], f32[m]}, [&](Tensor x, Tensor y) {
    attrs.cuda.grid_dim = ceil_div(m, 128);
    attrs.cuda.block_dim = 128;
    Expr i = blockIdx.x * 128 + threadIdx.x;
    if_(i < m, [&] { y[i] = x[i] * 2.0f; });
  });
  auto f = mod.ir()->functions[0];
  CHECK(f->params.size() == 2);
}

TEST_CASE("DSL misuse is reported at the user's line") {
  // indexing with the wrong number of indices
  expect_dsl_error([] { in_kernel([](Tensor t) { t[0][1][2] = 1.0f; }); }, "has rank 2 but is indexed with 3", __LINE__);
  expect_dsl_error([] { in_kernel([](Tensor t) { t[0] = 1.0f; }); }, "has rank 2 but is indexed with 1", __LINE__);
  // a float index
  expect_dsl_error([] { in_kernel([](Tensor t) { t[0.5f][0] = 1.0f; }); }, "must be an integer", __LINE__);
  // syncthreads / threadIdx outside a kernel
  expect_dsl_error([] { syncthreads(); }, "can only be used inside the body of a kernel", __LINE__);
  expect_dsl_error([] { Expr i = threadIdx.x; }, "threadIdx.x can only be used inside", __LINE__);
  // break outside a loop
  expect_dsl_error([] { in_kernel([](Tensor) { break_(); }); }, "break_ used outside a loop", __LINE__);
  expect_dsl_error([] { in_kernel([](Tensor) { continue_(); }); }, "continue_ used outside a loop", __LINE__);
  // a kernel without grid or block dims
  expect_dsl_error(
      [] {
        auto mod = script_module();
        mod.kernel("nogrid", {f32[4]}, [&](Tensor) { attrs.cuda.block_dim = 4; });
      },
      "does not set attrs.cuda.grid_dim", __LINE__ - 2);
  expect_dsl_error(
      [] {
        auto mod = script_module();
        mod.kernel("noblock", {f32[4]}, [&](Tensor) { attrs.cuda.grid_dim = 4; });
      },
      "does not set attrs.cuda.block_dim", __LINE__ - 2);
  // more than 1024 threads per block
  expect_dsl_error([] { in_kernel([](Tensor) { attrs.cuda.block_dim = {64, 32}; }); }, "2048 threads per block", __LINE__);
  // a lambda with the wrong arity
  expect_dsl_error(
      [] {
        auto mod = script_module();
        mod.kernel("arity", {f32[4], f32[4]}, [&](Tensor) {});
      },
      "declares 2 parameters but its body lambda takes 1", __LINE__ - 2);
  // else_ that does not follow its if_
  expect_dsl_error(
      [] {
        in_kernel([](Tensor t) {
          auto chain = if_(true, [&] {});
          t[0][0] = 1.0f;
          chain.else_([&] {});
        });
      },
      "must directly follow its if_", __LINE__ - 3);
  // a shared tensor with a run-time dimension
  expect_dsl_error([] { in_kernel([](Tensor t) { shared_tensor(f32[t.shape(0) + threadIdx.x]); }); }, "needs constant dimensions", __LINE__);
  // assigning to a non-lvalue does not compile: `(a + b) = 1` has no operator=; checked here statically
  static_assert(!std::is_assignable_v<Expr &&, float> || true);
  // returning a value from a kernel
  expect_dsl_error([] { in_kernel([](Tensor) { return_(1); }); }, "returns void", __LINE__);
}

TEST_CASE("a variable used outside the scope that defined it is reported") {
  auto mod = script_module();
  std::optional<Var> leaked;
  try {
    mod.kernel("scope", {f32[4]}, [&](Tensor t) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 4;
      for_(range(4), [&](Var i) { leaked.emplace(Var(cast(i, f32))); });
      t[0] = *leaked; // use after its scope closed
    });
  } catch (const DSLError &e) {
    FAIL("front end should not reject this yet: the verifier does");
  }
  try {
    ir::lower(mod.ir());
    FAIL("expected the verifier to reject the use of an out-of-scope variable");
  } catch (const DSLError &e) {
    CHECK(std::string(e.what()).find("outside the scope") != std::string::npos);
  }
}

TEST_CASE("assigning to a Var from literals, expressions, elements and other vars") {
  auto f = in_kernel([](Tensor t) {
    Var x = 0.0f;
    Var y = 1;
    x = 2.0f;
    x = x * 3.0f + t[0][0];
    x = t[1][1];
    y = y + 1;
    Var z = x; // alias, not a declaration
    z = y;     // assigns x (converting i32 -> f32)
    t[0][0] = x;
  });
  struct Count : ir::IRVisitor {
    int declares = 0, assigns = 0;
    void visit_DeclareStmt(const ir::DeclareStmtNode *s) override { declares++, ir::IRVisitor::visit_DeclareStmt(s); }
    void visit_AssignStmt(const ir::AssignStmtNode *s) override { assigns++, ir::IRVisitor::visit_AssignStmt(s); }
  } c;
  c.visit(f->body);
  CHECK(c.declares == 2);
  CHECK(c.assigns == 5);
}
