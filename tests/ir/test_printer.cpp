// Tests of the IR printer: the exact text of a kernel, unique names, constants, precedence.
#include <doctest/doctest.h>

#include <cmath>

#include "hidet/ir/printer.hpp"

using namespace hidet;
using namespace hidet::ir;

namespace {

Type i32t() { return scalar_type(dtypes::i32); }
Expr add(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Add, a, b); }
Expr sub(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Sub, a, b); }
Expr mul(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Mul, a, b); }
Expr lt(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Lt, a, b); }
Expr bi(BuiltinKind k) { return BuiltinNode::make(k); }

/// A layout for printing tests.
struct TestLayout : LayoutNode {
  TestLayout() : LayoutNode({int32(4)}) {}
  Expr offset(const std::vector<Expr> &idx) const override { return idx[0]; }
  Expr storage_size() const override { return int32(4); }
  std::string str() const override { return "test_layout(4)"; }
  bool equals(const LayoutNode &o) const override { return o.str() == str(); }
  std::size_t hash() const override { return 4; }
};

} // namespace

TEST_CASE("printer: matmul kernel") {
  auto f32 = dtypes::f32;
  Var a = make_var(TensorTypeNode::make(f32, {int32(3), int32(4)}), "a");
  Var b = make_var(TensorTypeNode::make(f32, {int32(4), int32(5)}), "b");
  Var c = make_var(TensorTypeNode::make(f32, {int32(3), int32(5)}), "c");
  Var i = make_var(i32t(), "i"), j = make_var(i32t(), "j"), k = make_var(i32t(), "k");
  Expr acc = add(TensorElementNode::make(c, {i, j}),
                 mul(TensorElementNode::make(a, {i, k}), TensorElementNode::make(b, {k, j})));
  Stmt loop = ForStmtNode::make(k, int32(0), int32(4), int32(1), 0,
                                BufferStoreStmtNode::make(c, {i, j}, acc));
  Stmt body = seq({
      DeclareStmtNode::make(i, add(bi(BuiltinKind::ThreadIdxX),
                                   mul(bi(BuiltinKind::BlockIdxX), bi(BuiltinKind::BlockDimX)))),
      DeclareStmtNode::make(j, add(bi(BuiltinKind::ThreadIdxY),
                                   mul(bi(BuiltinKind::BlockIdxY), bi(BuiltinKind::BlockDimY)))),
      IfStmtNode::make(BinaryNode::make(BinaryOp::LogicalAnd, lt(i, int32(3)), lt(j, int32(5))),
                       seq({BufferStoreStmtNode::make(c, {i, j}, ConstantNode::make_float(f32, 0)),
                            loop})),
  });
  FuncAttrs attrs;
  attrs.grid_dim = {int32(1), int32(1), int32(1)};
  attrs.block_dim = {int32(32), int32(32), Expr()};
  attrs.has_grid = attrs.has_block = true;
  Function f = make_function("matmul", {a, b, c}, body, void_type(), FuncKind::Kernel, attrs);
  CHECK(to_string(f) ==
        "kernel matmul(a: f32[3, 4] global, b: f32[4, 5] global, c: f32[3, 5] global)\n"
        "    grid_dim=(1, 1, 1) block_dim=(32, 32, 1) {\n"
        "  declare i: i32 = threadIdx.x + blockIdx.x * blockDim.x\n"
        "  declare j: i32 = threadIdx.y + blockIdx.y * blockDim.y\n"
        "  if (i < 3 && j < 5) {\n"
        "    c[i, j] = 0.0f\n"
        "    for (k in range(0, 4, 1)) {\n"
        "      c[i, j] = c[i, j] + a[i, k] * b[k, j]\n"
        "    }\n"
        "  }\n"
        "}\n");
  // the module prints its functions; operator<< gives the same text
  std::ostringstream os;
  os << make_module({f});
  CHECK(os.str() == to_string(f));
}

TEST_CASE("printer: variables get unique names by identity") {
  Var x1 = make_var(i32t(), "x"), x2 = make_var(i32t(), "x"), x3 = make_var(i32t(), "x_1");
  Var anon = make_var(i32t(), "");
  CHECK(to_string(add(add(x1, x2), add(x3, x1))) == "x + x_1 + (x_1_1 + x)");
  CHECK(to_string(add(x2, x1)) == "x + x_1"); // a fresh printer numbers by first appearance
  CHECK(to_string(anon) == "v");
  std::ostringstream os;
  IRPrinter p(os);
  p.print(Expr(x2));
  p.print(Expr(x1));
  CHECK(os.str() == "xx_1"); // one printer keeps its names
}

TEST_CASE("printer: constants carry their dtype") {
  CHECK(to_string(ConstantNode::make_float(dtypes::f32, 1.5)) == "1.5f");
  CHECK(to_string(ConstantNode::make_float(dtypes::f32, 0.1)) == "0.1f");
  CHECK(to_string(ConstantNode::make_float(dtypes::f64, 2.0)) == "2.0");
  CHECK(to_string(ConstantNode::make_float(dtypes::f64, 1e300)) == "1e+300");
  CHECK(to_string(ConstantNode::make_float(dtypes::f16, 1.5)) == "f16(1.5)");
  CHECK(to_string(ConstantNode::make_float(dtypes::bf16, -2)) == "bf16(-2.0)");
  CHECK(to_string(ConstantNode::make_float(dtypes::f32, INFINITY)) == "f32(inf)");
  CHECK(to_string(int32(3)) == "3");
  CHECK(to_string(int32(-3)) == "-3");
  CHECK(to_string(ConstantNode::make_int(dtypes::i64, 3)) == "3i64");
  CHECK(to_string(ConstantNode::make_int(dtypes::u32, 3)) == "3u32");
  CHECK(to_string(ConstantNode::make_int(dtypes::u8, 300)) == "44u8");
  CHECK(to_string(ConstantNode::make_int(dtypes::u64, -1)) == "18446744073709551615u64");
  CHECK(to_string(boolean(true)) == "true");
  CHECK(to_string(boolean(false)) == "false");
}

TEST_CASE("printer: precedence and expression forms") {
  Var x = make_var(i32t(), "x"), y = make_var(i32t(), "y"), z = make_var(i32t(), "z");
  CHECK(to_string(mul(add(x, y), z)) == "(x + y) * z");
  CHECK(to_string(sub(x, sub(y, z))) == "x - (y - z)");
  CHECK(to_string(sub(sub(x, y), z)) == "x - y - z");
  CHECK(to_string(mul(x, int32(-2))) == "x * -2");
  CHECK(to_string(UnaryNode::make(UnaryOp::Neg, int32(-2))) == "-(-2)");
  CHECK(to_string(UnaryNode::make(UnaryOp::Neg, add(x, y))) == "-(x + y)");
  Expr cond = lt(x, y);
  CHECK(to_string(UnaryNode::make(UnaryOp::LogicalNot, cond)) == "!(x < y)");
  CHECK(to_string(SelectNode::make(cond, x, y)) == "x < y ? x : y");
  CHECK(to_string(add(SelectNode::make(cond, x, y), z)) == "(x < y ? x : y) + z");
  CHECK(to_string(CastNode::make(x, scalar_type(dtypes::f32))) == "cast<f32>(x)");
  CHECK(to_string(CallNode::make_intrinsic(Intrinsic::Max, {x, y}, i32t())) == "max(x, y)");
  CHECK(to_string(CallNode::make_func("helper", {x}, i32t())) == "helper(x)");
  CHECK(to_string(CallNode::make_intrinsic(Intrinsic::Printf, {x}, void_type(), {}, "x=%d\n")) ==
        "printf(\"x=%d\\n\", x)");
  Expr px = AddressNode::make(x);
  CHECK(to_string(px) == "&x");
  CHECK(to_string(DerefNode::make(px)) == "*&x");
  CHECK(to_string(BinaryNode::make(BinaryOp::Shl, BinaryNode::make(BinaryOp::BitAnd, x, y), z)) ==
        "(x & y) << z");
}

TEST_CASE("printer: types") {
  CHECK(to_string(scalar_type(dtypes::bf16)) == "bf16");
  CHECK(to_string(pointer_type(scalar_type(dtypes::f32))) == "f32*");
  CHECK(to_string(void_type()) == "void");
  Var n = make_var(i32t(), "n");
  CHECK(to_string(TensorTypeNode::make(dtypes::f16, {n, int32(8)}, Scope::Shared)) ==
        "f16[n, 8] shared");
  CHECK(to_string(TensorTypeNode::make(dtypes::f32, {int32(4)}, Scope::Register,
                                       Layout(new TestLayout()))) ==
        "f32[4] register layout=test_layout(4)");
}

TEST_CASE("printer: statements and device functions") {
  Var x = make_var(i32t(), "x"), p = make_var(i32t(), "p");
  Var s = make_var(TensorTypeNode::make(dtypes::f32, {int32(32)}, Scope::Shared), "smem");
  Var r = make_var(scalar_type(dtypes::u32), "r");
  Stmt body = seq({
      DeclareStmtNode::make(s),
      DeclareStmtNode::make(x, p),
      DeclareStmtNode::make(r),
      WhileStmtNode::make(lt(x, int32(10)),
                          seq({IfStmtNode::make(lt(x, int32(3)), ContinueStmtNode::make(),
                                                BreakStmtNode::make()),
                               AssignStmtNode::make(x, add(x, int32(1)))})),
      ForStmtNode::make(make_var(i32t(), "i"), int32(0), int32(8), int32(2), 4,
                        EvaluateStmtNode::make(CallNode::make_intrinsic(
                            Intrinsic::SyncThreads, {}, void_type()))),
      AssertStmtNode::make(lt(x, int32(100)), "x too large"),
      AsmStmtNode::make("mov.u32 %0, %1;", {{"=r", r}}, {{"r", x}}),
      ReturnStmtNode::make(x),
  });
  Function f = make_function("helper", {p}, body, i32t(), FuncKind::Device);
  CHECK(to_string(f) == "device helper(p: i32) -> i32 {\n"
                        "  declare smem: f32[32] shared\n"
                        "  declare x: i32 = p\n"
                        "  declare r: u32\n"
                        "  while (x < 10) {\n"
                        "    if (x < 3) {\n"
                        "      continue\n"
                        "    } else {\n"
                        "      break\n"
                        "    }\n"
                        "    x = x + 1\n"
                        "  }\n"
                        "  for (i in range(0, 8, 2)) unroll(4) {\n"
                        "    syncthreads()\n"
                        "  }\n"
                        "  assert(x < 100, \"x too large\")\n"
                        "  asm volatile(\"mov.u32 %0, %1;\" : \"=r\"(r) : \"r\"(x) : \"memory\")\n"
                        "  return x\n"
                        "}\n");
}
