// Before/expected tests of the simplifier, one rule at a time.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/transforms/simplify.hpp"

using namespace hidet;
using namespace hidet::ir;

namespace {

Type ty(DataType d) { return scalar_type(d); }
Expr bin(BinaryOp op, Expr a, Expr b) { return BinaryNode::make(op, a, b); }
Expr add(Expr a, Expr b) { return bin(BinaryOp::Add, a, b); }
Expr sub(Expr a, Expr b) { return bin(BinaryOp::Sub, a, b); }
Expr mul(Expr a, Expr b) { return bin(BinaryOp::Mul, a, b); }
Expr c(DataType d, std::int64_t v) { return ConstantNode::make_int(d, v); }
Expr cf(DataType d, double v) { return ConstantNode::make_float(d, v); }
Expr i(std::int64_t v) { return int32(v); }

/// Checks simplify(before) is structurally `expected`, printing both on failure.
void check_simplifies(const Expr &before, const Expr &expected) {
  Expr after = simplify(before);
  INFO("before:   ", to_string(before));
  INFO("after:    ", to_string(after));
  INFO("expected: ", to_string(expected));
  CHECK(structural_equal(after, expected));
}
void check_simplifies(const Stmt &before, const Stmt &expected) {
  Stmt after = simplify(before);
  INFO("before:\n", to_string(before));
  INFO("after:\n", to_string(after));
  INFO("expected:\n", to_string(expected));
  CHECK(structural_equal(after, expected));
}
void check_unchanged(const Expr &e) {
  INFO(to_string(e));
  CHECK(simplify(e).same_as(e));
}

const Var x = make_var(ty(dtypes::i32), "x");
const Var y = make_var(ty(dtypes::i32), "y");
const Var f = make_var(ty(dtypes::f32), "f");
const Var p = make_var(ty(dtypes::boolean), "p");
const Expr side_effect = CallNode::make_func("g", {}, ty(dtypes::i32));

} // namespace

TEST_CASE("simplify: integer constant folding follows C++ per dtype") {
  check_simplifies(add(i(2), mul(i(3), i(4))), i(14));
  check_simplifies(bin(BinaryOp::Div, i(-7), i(2)), i(-3));   // truncates toward zero
  check_simplifies(bin(BinaryOp::Mod, i(-7), i(2)), i(-1));   // sign of the dividend
  check_simplifies(add(i(std::numeric_limits<std::int32_t>::max()), i(1)),
                   i(std::numeric_limits<std::int32_t>::min())); // wraps at 32 bits
  check_simplifies(add(c(dtypes::u8, 250), c(dtypes::u8, 10)), c(dtypes::u8, 4));
  check_simplifies(sub(c(dtypes::u32, 0), c(dtypes::u32, 1)), c(dtypes::u32, 0xffffffffLL));
  check_simplifies(bin(BinaryOp::Lt, c(dtypes::u32, 0xffffffffLL), c(dtypes::u32, 1)), boolean(false));
  check_simplifies(bin(BinaryOp::Lt, c(dtypes::u64, -1), c(dtypes::u64, 1)), boolean(false));
  check_simplifies(bin(BinaryOp::Div, c(dtypes::u64, -1), c(dtypes::u64, 2)),
                   c(dtypes::u64, std::int64_t(0x7fffffffffffffffULL)));
  check_simplifies(bin(BinaryOp::Shr, i(-8), i(1)), i(-4));  // arithmetic shift
  check_simplifies(bin(BinaryOp::Shr, c(dtypes::u32, 0x80000000LL), c(dtypes::u32, 31)), c(dtypes::u32, 1));
  check_simplifies(bin(BinaryOp::Shl, i(1), i(31)), i(std::numeric_limits<std::int32_t>::min()));
  check_simplifies(bin(BinaryOp::BitXor, i(6), i(3)), i(5));
  check_simplifies(UnaryNode::make(UnaryOp::Neg, i(5)), i(-5));
  check_simplifies(UnaryNode::make(UnaryOp::BitNot, c(dtypes::u8, 0)), c(dtypes::u8, 255));
  // left alone where C++ is undefined
  check_unchanged(bin(BinaryOp::Div, i(1), i(0)));
  check_unchanged(bin(BinaryOp::Mod, i(1), i(0)));
  check_unchanged(bin(BinaryOp::Shl, i(1), i(32)));
  check_unchanged(bin(BinaryOp::Div, c(dtypes::i64, std::numeric_limits<std::int64_t>::min()), c(dtypes::i64, -1)));
}

TEST_CASE("simplify: float constant folding") {
  check_simplifies(add(cf(dtypes::f32, 0.1), cf(dtypes::f32, 0.2)), cf(dtypes::f32, double(0.1f + 0.2f)));
  check_simplifies(mul(cf(dtypes::f64, 1.5), cf(dtypes::f64, 2)), cf(dtypes::f64, 3));
  check_simplifies(bin(BinaryOp::Lt, cf(dtypes::f32, 1), cf(dtypes::f32, 2)), boolean(true));
  check_unchanged(bin(BinaryOp::Div, cf(dtypes::f32, 1), cf(dtypes::f32, 0)));
  check_unchanged(add(cf(dtypes::f16, 1), cf(dtypes::f16, 2))); // f16 arithmetic is not folded
}

TEST_CASE("simplify: integer identities") {
  check_simplifies(add(x, i(0)), x);
  check_simplifies(add(i(0), x), x);
  check_simplifies(sub(x, i(0)), x);
  check_simplifies(mul(x, i(1)), x);
  check_simplifies(mul(i(1), x), x);
  check_simplifies(mul(x, i(0)), i(0));
  check_simplifies(mul(i(0), x), i(0));
  check_simplifies(bin(BinaryOp::Div, x, i(1)), x);
  check_simplifies(bin(BinaryOp::Mod, x, i(1)), i(0));
  check_simplifies(sub(add(x, y), add(x, y)), i(0));
  check_simplifies(add(mul(add(x, i(0)), i(1)), mul(y, i(0))), x); // nested
  // operands with side effects are kept
  check_unchanged(mul(side_effect, i(0)));
  check_unchanged(sub(side_effect, side_effect));
  check_unchanged(sub(x, y));
}

TEST_CASE("simplify: re-association of constants") {
  check_simplifies(add(add(x, i(3)), i(4)), add(x, i(7)));
  check_simplifies(add(add(i(3), x), i(4)), add(x, i(7)));
  check_simplifies(add(i(4), add(x, i(3))), add(x, i(7)));
  check_simplifies(add(add(x, i(3)), i(-3)), x);
  check_simplifies(sub(add(x, i(3)), i(5)), sub(x, i(2)));
  check_simplifies(add(sub(x, i(3)), i(5)), add(x, i(2)));
  check_simplifies(sub(sub(x, i(3)), i(5)), sub(x, i(8)));
  check_simplifies(mul(mul(x, i(3)), i(4)), mul(x, i(12)));
  check_simplifies(mul(i(4), mul(i(3), x)), mul(x, i(12)));
  check_simplifies(add(add(add(x, i(1)), i(1)), i(1)), add(x, i(3)));
}

TEST_CASE("simplify: float identities only where exact") {
  check_simplifies(mul(f, cf(dtypes::f32, 1)), f);
  check_simplifies(mul(cf(dtypes::f32, 1), f), f);
  check_simplifies(bin(BinaryOp::Div, f, cf(dtypes::f32, 1)), f);
  check_simplifies(sub(f, cf(dtypes::f32, 0)), f);
  check_unchanged(mul(f, cf(dtypes::f32, 0)));  // NaN * 0 is NaN, -1 * 0 is -0
  check_unchanged(add(f, cf(dtypes::f32, 0)));  // -0 + 0 is +0
  check_unchanged(sub(f, cf(dtypes::f32, -0.0)));
}

TEST_CASE("simplify: logic with constant operands") {
  auto band = [](Expr a, Expr b) { return bin(BinaryOp::LogicalAnd, a, b); };
  auto bor = [](Expr a, Expr b) { return bin(BinaryOp::LogicalOr, a, b); };
  check_simplifies(band(boolean(true), p), p);
  check_simplifies(band(p, boolean(true)), p);
  check_simplifies(band(boolean(false), p), boolean(false));
  check_simplifies(band(p, boolean(false)), boolean(false));
  check_simplifies(bor(boolean(false), p), p);
  check_simplifies(bor(p, boolean(false)), p);
  check_simplifies(bor(boolean(true), p), boolean(true));
  check_simplifies(bor(p, boolean(true)), boolean(true));
  check_simplifies(UnaryNode::make(UnaryOp::LogicalNot, boolean(true)), boolean(false));
  check_simplifies(UnaryNode::make(UnaryOp::LogicalNot, UnaryNode::make(UnaryOp::LogicalNot, p)), p);
  check_simplifies(band(bin(BinaryOp::Lt, i(1), i(2)), bin(BinaryOp::Lt, x, y)), bin(BinaryOp::Lt, x, y));
  Expr call = bin(BinaryOp::Lt, side_effect, i(0));
  check_unchanged(band(call, boolean(false)));
}

TEST_CASE("simplify: casts and select") {
  check_simplifies(CastNode::make(i(3), ty(dtypes::f32)), cf(dtypes::f32, 3));
  check_simplifies(CastNode::make(cf(dtypes::f32, -2.75), ty(dtypes::i32)), i(-2));
  check_simplifies(CastNode::make(i(300), ty(dtypes::u8)), c(dtypes::u8, 44));
  check_simplifies(CastNode::make(i(-1), ty(dtypes::u64)), c(dtypes::u64, -1));
  check_simplifies(CastNode::make(c(dtypes::u64, -1), ty(dtypes::f64)), cf(dtypes::f64, 18446744073709551616.0));
  check_simplifies(CastNode::make(i(2), ty(dtypes::boolean)), boolean(true));
  check_simplifies(CastNode::make(cf(dtypes::f64, 0.1), ty(dtypes::f32)), cf(dtypes::f32, 0.1));
  check_unchanged(CastNode::make(cf(dtypes::f32, 3e9), ty(dtypes::i32))); // out of range: undefined
  check_unchanged(CastNode::make(cf(dtypes::f32, NAN), ty(dtypes::i32)));
  check_simplifies(CastNode::make(x, ty(dtypes::i32)), x);                // same type
  check_unchanged(CastNode::make(x, ty(dtypes::i64)));
  check_simplifies(SelectNode::make(boolean(true), x, y), x);
  check_simplifies(SelectNode::make(bin(BinaryOp::Gt, i(1), i(2)), x, add(y, i(0))), y);
  check_unchanged(SelectNode::make(p, x, y));
}

TEST_CASE("simplify: statements with constant conditions and empty loops") {
  Var t = make_var(TensorTypeNode::make(dtypes::i32, {i(8)}, Scope::Shared), "t");
  Stmt s1 = BufferStoreStmtNode::make(t, {i(0)}, x);
  Stmt s2 = BufferStoreStmtNode::make(t, {i(1)}, y);
  Stmt empty = SeqStmtNode::make({});
  // if (true) / if (false) with and without else
  check_simplifies(IfStmtNode::make(boolean(true), s1, s2), s1);
  check_simplifies(IfStmtNode::make(bin(BinaryOp::Lt, i(3), i(2)), s1, s2), s2);
  check_simplifies(IfStmtNode::make(boolean(false), s1), empty);
  check_simplifies(seq({s1, IfStmtNode::make(boolean(false), s2), s2}), seq({s1, s2}));
  // the then-body of if (true) is spliced into the enclosing sequence
  check_simplifies(seq({s1, IfStmtNode::make(boolean(true), seq({s2, s1}))}), seq({s1, s2, s1}));
  // zero-trip loops vanish; others stay with simplified parts
  Var k = make_var(ty(dtypes::i32), "k");
  check_simplifies(ForStmtNode::make(k, i(4), i(4), i(1), 0, s1), empty);
  check_simplifies(ForStmtNode::make(k, i(5), add(i(2), i(1)), i(1), 0, s1), empty);
  check_simplifies(ForStmtNode::make(k, i(0), add(i(2), i(1)), i(1), 0, s1),
                   ForStmtNode::make(k, i(0), i(3), i(1), 0, s1));
  Stmt loop = ForStmtNode::make(k, i(0), x, i(1), 0, s1);
  CHECK(simplify(loop).same_as(loop));
  check_simplifies(WhileStmtNode::make(boolean(false), s1), empty);
  // statements whose expressions simplify
  check_simplifies(BufferStoreStmtNode::make(t, {add(k, i(0))}, mul(x, i(1))),
                   BufferStoreStmtNode::make(t, {k}, x));
}

TEST_CASE("simplify: unchanged input returns the same node") {
  Var t = make_var(TensorTypeNode::make(dtypes::i32, {i(8)}, Scope::Shared), "t");
  Var k = make_var(ty(dtypes::i32), "k");
  Stmt body = seq({DeclareStmtNode::make(t),
                   ForStmtNode::make(k, i(0), x, i(1), 0,
                                     IfStmtNode::make(bin(BinaryOp::Lt, k, y),
                                                      BufferStoreStmtNode::make(t, {k}, add(k, x))))});
  CHECK(simplify(body).same_as(body));
  FuncAttrs attrs;
  attrs.grid_dim = {x, {}, {}};
  attrs.block_dim = {i(32), {}, {}};
  attrs.has_grid = attrs.has_block = true;
  Function fn = make_function("k", {x, y}, body, void_type(), FuncKind::Kernel, attrs);
  Module m = make_module({fn});
  CHECK(simplify(m).same_as(m));
  // and a changed launch attribute is simplified
  attrs.grid_dim = {add(x, i(0)), {}, {}};
  Function fn2 = make_function("k", {x, y}, body, void_type(), FuncKind::Kernel, attrs);
  Function out = simplify(fn2);
  CHECK(out->attrs.grid_dim[0].same_as(Expr(x)));
  CHECK(out->body.same_as(body));
}

TEST_CASE("simplify: work stays linear in nested conditions") {
  // select(select(...(p ? true : false)...) ? true : false): 2^40 steps if conditions were
  // simplified twice per level
  Expr e = p;
  for (int d = 0; d < 40; ++d) e = SelectNode::make(e, boolean(true), boolean(false));
  CHECK(simplify(e).same_as(e));
  check_simplifies(UnaryNode::make(UnaryOp::Neg, cf(dtypes::f32, 1.5)), cf(dtypes::f32, -1.5));
}
