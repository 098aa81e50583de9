// Tests of structural equality and hashing: alpha-equivalence, free variables, symbolic dims,
// layouts, ignored locations, and hash consistency.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/printer.hpp"

using namespace hidet;
using namespace hidet::ir;

namespace {

Type i32t() { return scalar_type(dtypes::i32); }
Expr add(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Add, a, b); }
Expr lt(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Lt, a, b); }

struct StrideLayout : LayoutNode {
  int stride;
  explicit StrideLayout(int s) : LayoutNode({int32(4)}), stride(s) {}
  Expr offset(const std::vector<Expr> &idx) const override {
    return BinaryNode::make(BinaryOp::Mul, idx[0], int32(stride));
  }
  Expr storage_size() const override { return int32(4 * stride); }
  std::string str() const override { return "stride(" + std::to_string(stride) + ")"; }
  bool equals(const LayoutNode &o) const override {
    auto p = dynamic_cast<const StrideLayout *>(&o);
    return p && p->stride == stride;
  }
  std::size_t hash() const override { return std::size_t(stride) * 977; }
};

/// Builds the same kernel from fresh variables each call; `k_bound` picks the loop's upper bound.
Function build_kernel(int k_bound = 4, bool swap = false, SourceLoc loc = {}) {
  Var m = make_var(i32t(), "m");
  Var a = make_var(TensorTypeNode::make(dtypes::f32, {m, int32(4)}), "a", loc);
  Var i = make_var(i32t(), "i"), k = make_var(i32t(), "k");
  Var acc = make_var(scalar_type(dtypes::f32), "acc");
  Expr elem = swap ? TensorElementNode::make(a, {k, i}, loc) : TensorElementNode::make(a, {i, k}, loc);
  Stmt body = seq({
      DeclareStmtNode::make(i, BuiltinNode::make(BuiltinKind::ThreadIdxX), loc),
      DeclareStmtNode::make(acc, ConstantNode::make_float(dtypes::f32, 0), loc),
      IfStmtNode::make(lt(i, m),
                       ForStmtNode::make(k, int32(0), int32(k_bound), int32(1), 0,
                                         AssignStmtNode::make(acc, add(acc, elem), loc), loc),
                       {}, loc),
  });
  FuncAttrs attrs;
  attrs.grid_dim = {m, Expr(), Expr()};
  attrs.block_dim = {int32(128), Expr(), Expr()};
  attrs.has_grid = attrs.has_block = true;
  return make_function("k", {a}, body, void_type(), FuncKind::Kernel, attrs, loc);
}

template <class T> void check_equal(const T &a, const T &b) {
  CHECK(structural_equal(a, b));
  CHECK(structural_equal(b, a));
  CHECK(structural_hash(a) == structural_hash(b));
}
template <class T> void check_differ(const T &a, const T &b) {
  CHECK_FALSE(structural_equal(a, b));
  CHECK_FALSE(structural_equal(b, a));
}

} // namespace

TEST_CASE("equal: separately built kernels are alpha-equivalent") {
  Function f1 = build_kernel(), f2 = build_kernel();
  check_equal(f1, f2);
  check_equal(make_module({f1}), make_module({f2}));
  // the bodies alone use different free variables (each kernel's own `a` and `m`)
  check_differ(f1->body, f2->body);
}

TEST_CASE("equal: free variables compare by identity") {
  Var x = make_var(i32t(), "x"), y = make_var(i32t(), "x");
  check_equal(add(x, int32(1)), add(x, int32(1)));
  check_differ(add(x, int32(1)), add(y, int32(1)));
  CHECK(structural_hash(Expr(x)) != structural_hash(Expr(y)));
}

TEST_CASE("equal: bodies with different free tensors differ, same ones agree") {
  Var t1 = make_var(TensorTypeNode::make(dtypes::f32, {int32(4)}), "t");
  Var t2 = make_var(TensorTypeNode::make(dtypes::f32, {int32(4)}), "t");
  auto store = [](Var t) { return BufferStoreStmtNode::make(t, {int32(0)}, ConstantNode::make_float(dtypes::f32, 1)); };
  check_equal(store(t1), store(t1));
  check_differ(store(t1), store(t2));
}

TEST_CASE("equal: bound variables match positionally") {
  check_differ(build_kernel(4, false), build_kernel(4, true)); // a[i, k] vs a[k, i]
  check_differ(build_kernel(4), build_kernel(5));
  // declare x; use x  vs  declare x; declare y; use x  (different structure)
  Var x1 = make_var(i32t(), "x"), x2 = make_var(i32t(), "x"), y2 = make_var(i32t(), "y");
  Stmt s1 = seq({DeclareStmtNode::make(x1, int32(0)), DeclareStmtNode::make(make_var(i32t(), "y"), int32(0)),
                 AssignStmtNode::make(x1, int32(2))});
  Stmt s2 = seq({DeclareStmtNode::make(x2, int32(0)), DeclareStmtNode::make(y2, int32(0)),
                 AssignStmtNode::make(x2, int32(2))});
  Stmt s3 = seq({DeclareStmtNode::make(x2, int32(0)), DeclareStmtNode::make(y2, int32(0)),
                 AssignStmtNode::make(y2, int32(2))});
  check_equal(s1, s2);
  check_differ(s1, s3);
  // a bound variable never equals a free one
  Var free = make_var(i32t(), "x");
  Stmt s4 = seq({DeclareStmtNode::make(x2, int32(0)), AssignStmtNode::make(free, int32(2))});
  Stmt s5 = seq({DeclareStmtNode::make(x1, int32(0)), AssignStmtNode::make(x1, int32(2))});
  check_differ(s4, s5);
  // declared types matter
  Stmt d64 = DeclareStmtNode::make(make_var(scalar_type(dtypes::i64), "x"));
  Stmt d32 = DeclareStmtNode::make(make_var(i32t(), "x"));
  check_differ(d64, d32);
}

TEST_CASE("equal: source locations and hints are ignored") {
  check_equal(build_kernel(4, false, SourceLoc("a.cpp", 10)), build_kernel(4, false, SourceLoc("b.cpp", 20)));
  check_equal(int32(3, SourceLoc("a.cpp", 1)), int32(3, SourceLoc("b.cpp", 2)));
}

TEST_CASE("equal: constants compare dtype and exact value") {
  check_equal(int32(3), int32(3));
  check_differ(int32(3), int32(4));
  check_differ(int32(3), ConstantNode::make_int(dtypes::i64, 3));
  check_differ(ConstantNode::make_float(dtypes::f32, 0.0), ConstantNode::make_float(dtypes::f32, -0.0));
  check_equal(ConstantNode::make_float(dtypes::f32, NAN), ConstantNode::make_float(dtypes::f32, NAN));
  check_differ(ConstantNode::make_float(dtypes::f32, 1.0), ConstantNode::make_float(dtypes::f64, 1.0));
}

TEST_CASE("equal: expression and statement kinds") {
  Var x = make_var(i32t(), "x"), y = make_var(i32t(), "y");
  check_differ(add(x, y), BinaryNode::make(BinaryOp::Sub, x, y));
  check_differ(add(x, y), add(y, x));
  check_equal(CastNode::make(x, scalar_type(dtypes::f32)), CastNode::make(x, scalar_type(dtypes::f32)));
  check_differ(CastNode::make(x, scalar_type(dtypes::f32)), CastNode::make(x, scalar_type(dtypes::f64)));
  check_differ(CallNode::make_func("f", {x}, i32t()), CallNode::make_func("g", {x}, i32t()));
  check_differ(CallNode::make_intrinsic(Intrinsic::Min, {x, y}, i32t()),
               CallNode::make_intrinsic(Intrinsic::Max, {x, y}, i32t()));
  check_differ(BuiltinNode::make(BuiltinKind::ThreadIdxX), BuiltinNode::make(BuiltinKind::ThreadIdxY));
  check_equal(Stmt(BreakStmtNode::make()), BreakStmtNode::make());
  check_differ(Stmt(BreakStmtNode::make()), ContinueStmtNode::make());
  check_differ(AssertStmtNode::make(lt(x, y), "a"), AssertStmtNode::make(lt(x, y), "b"));
  check_differ(IfStmtNode::make(lt(x, y), BreakStmtNode::make()),
               IfStmtNode::make(lt(x, y), BreakStmtNode::make(), BreakStmtNode::make()));
  check_differ(AsmStmtNode::make("a", {}, {{"r", x}}), AsmStmtNode::make("a", {}, {{"l", x}}));
}

TEST_CASE("equal: types and layouts") {
  Type t1 = TensorTypeNode::make(dtypes::f32, {int32(4)}, Scope::Shared, Layout(new StrideLayout(2)));
  Type t2 = TensorTypeNode::make(dtypes::f32, {int32(4)}, Scope::Shared, Layout(new StrideLayout(2)));
  Type t3 = TensorTypeNode::make(dtypes::f32, {int32(4)}, Scope::Shared, Layout(new StrideLayout(3)));
  Type t4 = TensorTypeNode::make(dtypes::f32, {int32(4)}, Scope::Shared);
  Type t5 = TensorTypeNode::make(dtypes::f32, {int32(4)}, Scope::Register, Layout(new StrideLayout(2)));
  check_equal(t1, t2);
  check_differ(t1, t3);
  check_differ(t1, t4);
  check_differ(t1, t5);
  check_equal(pointer_type(scalar_type(dtypes::f16)), pointer_type(scalar_type(dtypes::f16)));
  check_differ(pointer_type(scalar_type(dtypes::f16)), pointer_type(scalar_type(dtypes::bf16)));
  check_differ(scalar_type(dtypes::f16), void_type());
}

TEST_CASE("equal: symbolic dims of parameters are bound") {
  // two kernels f(a: f32[m], n: i32) over their own m agree; using m vs n in the body differs
  auto build = [](bool use_n) {
    Var m = make_var(i32t(), "m"), n = make_var(i32t(), "n");
    Var a = make_var(TensorTypeNode::make(dtypes::f32, {m}), "a");
    Stmt body = BufferStoreStmtNode::make(a, {use_n ? Expr(n) : Expr(m)}, ConstantNode::make_float(dtypes::f32, 1));
    return make_function("f", {a, n}, body, void_type(), FuncKind::Device);
  };
  check_equal(build(false), build(false));
  check_equal(build(true), build(true));
  check_differ(build(false), build(true));
}

TEST_CASE("equal: hash agrees with equality over a family of expressions") {
  Var x = make_var(i32t(), "x"), y = make_var(i32t(), "y");
  std::vector<Expr> family;
  for (int rep = 0; rep < 2; ++rep) {
    family.push_back(add(x, int32(1)));
    family.push_back(add(int32(1), x));
    family.push_back(add(x, y));
    family.push_back(SelectNode::make(lt(x, y), x, y));
    family.push_back(CastNode::make(add(x, y), scalar_type(dtypes::i64)));
  }
  int equal_pairs = 0;
  for (auto &a : family)
    for (auto &b : family)
      if (structural_equal(a, b)) {
        ++equal_pairs;
        CHECK(structural_hash(a) == structural_hash(b));
      }
  CHECK(equal_pairs == 5 * 4); // each expression equals itself and its twin, nothing else
}
