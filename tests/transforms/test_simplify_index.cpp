// Tests of the range-aware index simplifier: the index maps that fused element-wise kernels
// compose (unravel, reshape, slice, concatenation, interleave) collapse, and every rewrite keeps
// the value for every point of the ranges (checked exhaustively, also on random expressions with
// negative values, where the rules must stay off).
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/eval.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/transforms/simplify.hpp"
#include "hidet/transforms/simplify_index.hpp"

using namespace hidet;
using namespace hidet::ir;

namespace {

Expr bin(BinaryOp op, Expr a, Expr b) { return BinaryNode::make(op, a, b); }
Expr add(Expr a, Expr b) { return bin(BinaryOp::Add, a, b); }
Expr sub(Expr a, Expr b) { return bin(BinaryOp::Sub, a, b); }
Expr mul(Expr a, std::int64_t b) { return bin(BinaryOp::Mul, a, int32(b)); }
Expr div(Expr a, std::int64_t b) { return bin(BinaryOp::Div, a, int32(b)); }
Expr mod(Expr a, std::int64_t b) { return bin(BinaryOp::Mod, a, int32(b)); }
Expr min_(Expr a, Expr b) { return CallNode::make_intrinsic(Intrinsic::Min, {a, b}, a->type); }
Expr max_(Expr a, Expr b) { return CallNode::make_intrinsic(Intrinsic::Max, {a, b}, a->type); }
Expr i(std::int64_t v) { return int32(v); }

/// Nodes of `e` counted as a tree (shared subtrees once per use: what the printed source holds).
std::size_t tree_size(const Expr &e) {
  struct Counter : IRVisitor {
    std::size_t n = 0;
    void visit(const Expr &x) override {
      ++n;
      IRVisitor::visit(x);
    }
  } c;
  c.visit(e);
  return c.n;
}

/// The multi-index of flat `v` over `shape` (row-major), as the schedules write it.
std::vector<Expr> unravel(const Expr &v, const std::vector<std::int64_t> &shape) {
  std::vector<Expr> idx(shape.size());
  std::int64_t stride = 1;
  for (std::size_t a = shape.size(); a-- > 0;) {
    idx[a] = a == 0 ? div(v, stride) : mod(div(v, stride), shape[a]);
    stride *= shape[a];
  }
  return idx;
}
Expr ravel(const std::vector<Expr> &idx, const std::vector<std::int64_t> &shape) {
  Expr acc = idx[0];
  for (std::size_t a = 1; a < shape.size(); ++a) acc = add(mul(acc, shape[a]), idx[a]);
  return acc;
}

/// simplify_index(e) equals e at every v in [lo, hi]; returns the simplified expression.
Expr check_equal_everywhere(const Expr &e, const Var &v, std::int64_t lo, std::int64_t hi) {
  Expr s = simplify_index(e, {{v.get(), {lo, hi}}});
  INFO("before: ", to_string(e));
  INFO("after:  ", to_string(s));
  for (std::int64_t x = lo; x <= hi; ++x) {
    auto want = try_evaluate(e, {{v.get(), double(x)}});
    auto got = try_evaluate(s, {{v.get(), double(x)}});
    REQUIRE(want.has_value());
    REQUIRE(got.has_value());
    if (*want != *got) {
      INFO("at v = ", x, ": ", *want, " before, ", *got, " after");
      REQUIRE(*want == *got);
    }
  }
  return s;
}

const Var v = make_var(scalar_type(dtypes::i32), "v");

} // namespace

TEST_CASE("simplify_index: ravel of unravel is the flat index") {
  std::vector<std::int64_t> shape{3, 17, 64};
  Expr e = ravel(unravel(v, shape), shape);
  Expr s = check_equal_everywhere(e, v, 0, 3 * 17 * 64 - 1);
  CHECK(structural_equal(s, v));
  // A reshape to another shape and back: still the flat index.
  Expr r = ravel(unravel(e, {51, 64}), {51, 64});
  CHECK(structural_equal(check_equal_everywhere(r, v, 0, 3 * 17 * 64 - 1), v));
  // Four axes (an NHWC element-wise kernel's index: a DenseNet concatenation's output), and the
  // pixel index alone (the row of each concatenated input): v and v / 128.
  std::vector<std::int64_t> nhwc{2, 6, 6, 128};
  auto idx = unravel(v, nhwc);
  CHECK(structural_equal(check_equal_everywhere(ravel(idx, nhwc), v, 0, 2 * 6 * 6 * 128 - 1), v));
  Expr pixel = ravel({idx[0], idx[1], idx[2]}, {2, 6, 6});
  CHECK(structural_equal(check_equal_everywhere(pixel, v, 0, 2 * 6 * 6 * 128 - 1), div(v, 128)));
  // Without a range (a possibly negative v) the division rule still holds in C's arithmetic.
  Expr three = add(mul(div(v, 4608), 6), mod(div(v, 768), 6));
  CHECK(structural_equal(simplify_index(three, {}), div(v, 768)));
  CHECK(structural_equal(check_equal_everywhere(three, v, -10000, 10000), div(v, 768)));
}

TEST_CASE("simplify_index: quotient and remainder of a sum with a small remainder") {
  const Var t = make_var(scalar_type(dtypes::i32), "t");
  // (t * 64 + v % 64) / 64 = t and % 64 = v % 64, for t >= 0
  IndexRanges r{{v.get(), {0, 4095}}, {t.get(), {0, 15}}};
  CHECK(structural_equal(simplify_index(div(add(mul(t, 64), mod(v, 64)), 64), r), t));
  CHECK(structural_equal(simplify_index(mod(add(mul(t, 64), mod(v, 64)), 64), r), mod(v, 64)));
  // below the divisor
  CHECK(structural_equal(simplify_index(div(mod(v, 64), 64), r), i(0)));
  CHECK(structural_equal(simplify_index(mod(mod(v, 64), 128), r), mod(v, 64)));
  // (v / 4) / 16 = v / 64; (v % 128) % 32 = v % 32
  CHECK(structural_equal(simplify_index(div(div(v, 4), 16), r), div(v, 64)));
  CHECK(structural_equal(simplify_index(mod(mod(v, 128), 32), r), mod(v, 32)));
  // a constant part splits too: (v % 64 + 128) / 64 = 2
  CHECK(structural_equal(simplify_index(div(add(mod(v, 64), i(128)), 64), r), i(2)));
  // unknown ranges leave the expression alone
  const Var u = make_var(scalar_type(dtypes::i32), "u");
  Expr e = div(add(mul(u, 64), mod(v, 64)), 64);
  CHECK(structural_equal(simplify_index(e, r), e));
}

TEST_CASE("simplify_index: clamps and comparisons that the ranges decide") {
  IndexRanges r{{v.get(), {0, 3 * 1088 - 1}}};
  Expr row = mod(div(v, 64), 17);                          // [0, 16]
  Expr clamped = min_(max_(sub(row, i(1)), i(0)), i(15));   // max(row - 1, 0) is already <= 15
  CHECK(structural_equal(simplify_index(clamped, r), max_(sub(row, i(1)), i(0))));
  CHECK(structural_equal(simplify_index(bin(BinaryOp::Lt, row, i(17)), r), boolean(true)));
  CHECK(structural_equal(simplify_index(bin(BinaryOp::Ge, row, i(17)), r), boolean(false)));
  Expr open = bin(BinaryOp::Ge, row, i(1));
  CHECK(structural_equal(simplify_index(open, r), open));
}

TEST_CASE("simplify_index: a rotary embedding's concatenated, interleaved index map shrinks") {
  // The index EVA-02's fused rotary embedding reads its input with: the tokens after the class
  // token (clamped row - 1), each pair of channels swapped (interleave), flattened through a
  // [3, 16, 64] view and read back through [3, 17, 64].
  std::vector<std::int64_t> out{3, 17, 64};
  auto o = unravel(v, out);
  Expr row = max_(sub(o[1], i(1)), i(0));
  Expr flat16 = ravel({o[0], row, o[2]}, {3, 16, 64});
  auto p = unravel(flat16, {3, 16, 32, 2});
  Expr swapped = ravel({p[0], p[1], p[2], sub(i(1), p[3])}, {3, 16, 32, 2});
  auto q = unravel(swapped, {3, 16, 64});
  Expr read = ravel({q[0], add(q[1], i(1)), q[2]}, {3, 17, 64});
  std::size_t before = tree_size(read);
  Expr s = check_equal_everywhere(read, v, 0, 3 * 17 * 64 - 1);
  INFO(to_string(s));
  CHECK(tree_size(s) * 3 < before);
}

TEST_CASE("simplify_index: random expressions keep their values, negative ranges included") {
  std::mt19937 rng(20261128);
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  std::function<Expr(int)> gen = [&](int depth) -> Expr {
    if (depth == 0 || pick(4) == 0) return pick(3) ? Expr(v) : i(pick(41) - 20);
    switch (pick(9)) {
    case 0: return add(gen(depth - 1), gen(depth - 1));
    case 1: return sub(gen(depth - 1), gen(depth - 1));
    case 2: return mul(gen(depth - 1), pick(9) - 3);
    case 3: return div(gen(depth - 1), 1 + pick(12));
    case 4: return mod(gen(depth - 1), 1 + pick(12));
    case 5: return min_(gen(depth - 1), gen(depth - 1));
    case 6: return max_(gen(depth - 1), gen(depth - 1));
    case 7: {
      Expr a = gen(depth - 1);
      std::int64_t x = 2 + pick(6), y = 2 + pick(6);
      return add(mul(mod(div(a, x), y), x), mod(a, x)); // the recombination pattern
    }
    default: {
      Expr a = gen(depth - 1);
      std::int64_t x = 2 + pick(8);
      return add(mul(div(a, x), x), mod(a, x));
    }
    }
  };
  for (int round = 0; round < 300; ++round) {
    Expr e = gen(5);
    std::int64_t lo = round % 3 == 0 ? -40 : 0, hi = lo + 200 + pick(400);
    check_equal_everywhere(e, v, lo, hi);
  }
}

TEST_CASE("simplify_index pass: launch dimensions, declarations, loops and guards give the ranges") {
  // kernel k(out: f16[3, 17, 64], x: f16[3264]):
  //   declare v = blockIdx.x * 256 + threadIdx.x
  //   for (i in range(0, 2)): declare w = v + i * 1664; if (w < 3264) out[unravel(w)] = x[ravel(unravel(w))]
  Var out = make_var(TensorTypeNode::make(dtypes::f16, {int32(3), int32(17), int32(64)}), "out");
  Var x = make_var(TensorTypeNode::make(dtypes::f16, {int32(3264)}), "x");
  Var vv = make_var(scalar_type(dtypes::i32), "v");
  Var ii = make_var(scalar_type(dtypes::i32), "i");
  Var w = make_var(scalar_type(dtypes::i32), "w");
  std::vector<std::int64_t> shape{3, 17, 64};
  auto idx = unravel(w, shape);
  // x[(w / 1088 % 3) * 1088 + w % 1088]: w itself while w < 3264
  Stmt store = BufferStoreStmtNode::make(
      out, idx, TensorElementNode::make(x, {add(mul(mod(div(w, 1088), 3), 1088), mod(w, 1088))}));
  Stmt loop = ForStmtNode::make(
      ii, i(0), i(2), i(1), 0,
      SeqStmtNode::make({DeclareStmtNode::make(w, add(vv, mul(ii, 1664))),
                         IfStmtNode::make(bin(BinaryOp::Lt, w, i(3264)), store)}));
  Stmt body = SeqStmtNode::make(
      {DeclareStmtNode::make(vv, add(mul(BuiltinNode::make(BuiltinKind::BlockIdxX), 256), BuiltinNode::make(BuiltinKind::ThreadIdxX))),
       loop});
  FuncAttrs attrs;
  attrs.grid_dim = {int32(7), {}, {}};
  attrs.block_dim = {int32(256), {}, {}};
  attrs.has_grid = attrs.has_block = true;
  Function f = make_function("k", {out, x}, body, void_type(), FuncKind::Kernel, attrs);
  std::string text = to_string(simplify(simplify_index(f)));
  INFO(text);
  CHECK(text.find("x[w]") != std::string::npos);             // under w < 3264
  CHECK(text.find("out[w / 1088, w / 64 % 17, w % 64]") != std::string::npos);
  // Without the guard w may pass 3263 (blockIdx.x up to 6, i up to 1): the % 3 stays.
  Function open = make_function("k", {out, x},
                                SeqStmtNode::make({body.as<SeqStmtNode>()->seq[0],
                                                   ForStmtNode::make(ii, i(0), i(2), i(1), 0,
                                                                     SeqStmtNode::make({DeclareStmtNode::make(w, add(vv, mul(ii, 1664))), store}))}),
                                void_type(), FuncKind::Kernel, attrs);
  std::string open_text = to_string(simplify(simplify_index(open)));
  INFO(open_text);
  CHECK(open_text.find("x[w]") == std::string::npos);
  // An assigned variable gets no range from its declaration.
  Stmt reassigned = SeqStmtNode::make({DeclareStmtNode::make(w, i(5)), AssignStmtNode::make(w, i(100000)),
                                       BufferStoreStmtNode::make(x, {mod(w, 3264)}, TensorElementNode::make(x, {i(0)}))});
  Function g = make_function("g", {out, x}, reassigned, void_type(), FuncKind::Kernel, attrs);
  CHECK(to_string(simplify_index(g)).find("w % 3264") != std::string::npos);
}
