// Compute definitions, tasks, attributes (print/hash/compare), and the auto-scheduler's plans.
#include <doctest/doctest.h>

#include "hidet/ir/printer.hpp"
#include "hidet/ops/schedule.hpp"
#include "hidet/ops/schedule_common.hpp"
#include "hidet/transforms/lower.hpp"

using namespace hidet;
using namespace hidet::ops;

namespace {
struct DemoAttrs {
  BOOST_HANA_DEFINE_STRUCT(DemoAttrs, (std::vector<int>, axes), (bool, keepdims), (double, eps), (DataType, dtype));
};
} // namespace

TEST_CASE("attributes print, compare and hash by their fields") {
  DemoAttrs a{{1, 2}, true, 1e-5, dtypes::f16};
  DemoAttrs b = a;
  CHECK(attrs_str(a) == "axes=[1, 2], keepdims=true, eps=1.0000000000000001e-05, dtype=f16");
  CHECK(attrs_equal(a, b));
  CHECK(attrs_hash(a) == attrs_hash(b));
  b.keepdims = false;
  CHECK_FALSE(attrs_equal(a, b));
  CHECK(attrs_hash(a) != attrs_hash(b));
}

TEST_CASE("compute definitions record their inputs and dtypes") {
  auto a = input("a", {3, 4}, dtypes::f32);
  auto b = input("b", {4}, dtypes::f16);
  auto c = compute("c", {3, 4}, [&](Expr i, Expr j) { return a[i][j] + lang::cast(b.at({j}), dtypes::f32); });
  CHECK(c.dtype() == dtypes::f32);
  CHECK(c.node().deps.size() == 2);
  auto s = reduce({3}, {4}, [&](const Idx &i, const Idx &r) { return c.at({i[0], r[0]}); }, ReduceKind::Sum);
  CHECK(s.dtype() == dtypes::f32);
  auto am = reduce({3}, {4}, [&](const Idx &i, const Idx &r) { return c.at({i[0], r[0]}); }, ReduceKind::ArgMax);
  CHECK(am.dtype() == dtypes::i64);
  auto h = reduce({4}, {3}, [&](const Idx &i, const Idx &r) { return b.at({i[0]}) * 2; }, ReduceKind::Sum);
  CHECK(h.dtype() == dtypes::f16);
  CHECK(h.node().acc_dtype == dtypes::f32);
  Task t{"demo", {a, b}, {s}, "", {}};
  CHECK(t.str() == "demo(a: f32(3, 4), b: f16(4,)) -> f32(3,)");
  CHECK_FALSE(t.injective());
  auto order = topo_order({s});
  REQUIRE(order.size() == 4);
  CHECK(order.back() == &s.node());
  CHECK_THROWS_WITH_AS(compute("bad", {3}, [&](Expr i, Expr j) { return i + j; }),
                       doctest::Contains("takes 2 indices but the shape has 1"), ValueError);
}

TEST_CASE("the scheduler inlines element-wise producers and materializes reductions") {
  auto x = input("x", {5, 300}, dtypes::f32);
  auto m = reduce({5}, {300}, [&](const Idx &i, const Idx &r) { return x.at({i[0], r[0]}); }, ReduceKind::Max, {}, {}, "m");
  auto e = compute("e", {5, 300}, [&](Expr i, Expr j) { return lang::exp(x[i][j] - m[i]); });
  auto s = reduce({5}, {300}, [&](const Idx &i, const Idx &r) { return e.at({i[0], r[0]}); }, ReduceKind::Sum, {}, {}, "s");
  auto y = compute("y", {5, 300}, [&](Expr i, Expr j) { return e[i][j] / s[i]; });
  Task t{"softmax", {x}, {y}, "", {}};
  Plan p = schedule_materialized(t);
  REQUIRE(p.steps.size() == 3); // m, s, y: e is inlined
  CHECK(p.buffers.size() == 4); // x, y, m, s
  auto lowered = ir::lower(p.module.ir());
  std::string text = ir::to_string(lowered);
  CHECK(text.find("shfl_xor_sync") != std::string::npos);
  CHECK(text.find("exp") != std::string::npos);

  // The same task under schedule(): one row-resident kernel, x loaded once with vector copies,
  // exp(x - m) computed once into registers (read by the sum and by the output).
  Plan rows = schedule(t);
  REQUIRE(rows.steps.size() == 1);
  CHECK(rows.buffers.size() == 2);
  CHECK(rows.steps[0].kernel == "softmax_rows");
  std::string rtext = ir::to_string(ir::lower(rows.module.ir()));
  CHECK(rtext.find("copy_vector") != std::string::npos);
  CHECK(rtext.find("e_row") != std::string::npos);
  auto count = [](const std::string &s, const std::string &what) {
    std::size_t n = 0;
    for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count(rtext, "exp(") == 1);

  // A row too long for registers keeps the materialized schedule.
  auto lx = input("x", {2, 40000}, dtypes::f32);
  auto lm = reduce({2}, {40000}, [&](const Idx &i, const Idx &r) { return lx.at({i[0], r[0]}); }, ReduceKind::Max);
  auto ly = compute("y", {2, 40000}, [&](Expr i, Expr j) { return lx[i][j] - lm[i]; });
  CHECK(schedule(Task{"long", {lx}, {ly}, "", {}}).steps.size() > 1);
  // A reduction read at another row does not have the form.
  auto sx = input("x", {4, 64}, dtypes::f32);
  auto sm = reduce({4}, {64}, [&](const Idx &i, const Idx &r) { return sx.at({i[0], r[0]}); }, ReduceKind::Sum);
  auto sy = compute("y", {4, 64}, [&](Expr i, Expr j) { return sx[i][j] - sm[(i + 1) % 4]; });
  CHECK(schedule(Task{"shifted", {sx}, {sy}, "", {}}).steps.size() == 2);

  // Sum over the leading axis: column schedule (no shuffles), split into slices for few outputs.
  auto z = input("z", {4096, 8}, dtypes::f32);
  auto cs = reduce({8}, {4096}, [&](const Idx &i, const Idx &r) { return z.at({r[0], i[0]}); }, ReduceKind::Sum);
  Plan p2 = schedule(Task{"colsum", {z}, {cs}, "", {}});
  CHECK(p2.steps.size() == 2);
  CHECK(ir::to_string(p2.module.ir()).find("shfl") == std::string::npos);
}

TEST_CASE("definitions over symbolic extents: printing, symbols, specialization") {
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  auto x = input("x", {n, s, 8}, dtypes::f32);
  auto b = input("b", {8}, dtypes::f32);
  auto y = compute("y", {n * s, 8}, [&](Expr r, Expr j) { return x.at({r / dim_expr(s), r % dim_expr(s), j}) + b[j]; });
  auto m = reduce({n * s}, {8}, [&](const Idx &i, const Idx &r) { return y.at({i[0], r[0]}); }, ReduceKind::Mean);
  Task t{"demo", {x, b}, {m}, "", {}};
  CHECK(t.str() == "demo(x: f32(n, s, 8), b: f32(8,)) -> f32(n*s,)");
  CHECK(task_symbols(t) == std::vector<std::string>{"n", "s"});
  CHECK(y.symbolic());
  CHECK(y.sym_shape() == SymShape{n * s, 8});
  CHECK_THROWS_WITH_AS(y.shape(), doctest::Contains("symbolic extents (n*s, 8)"), ValueError);
  // One variable per symbol name, shared by every definition.
  CHECK(symbol_var("n").same_as(symbol_var("n")));
  CHECK(*symbol_name(symbol_var("s").get()) == "s");
  CHECK(ir::to_string(dim_expr(2 * n + 1).ir()).find("n") != std::string::npos);

  Task c = specialize(t, {{"n", 2}, {"s", 3}});
  CHECK(c.str() == "demo(x: f32(2, 3, 8), b: f32(8,)) -> f32(6,)");
  CHECK(task_symbols(c).empty());
  // The specialized definition reads the specialized buffers and no symbol remains.
  auto order = topo_order(c.outputs);
  std::string text;
  for (auto *node : order)
    if (node->value) text += ir::to_string(node->value) + "\n";
  INFO(text);
  CHECK(text.find("/ 3") != std::string::npos);
  for (auto *node : order)
    if (node->value) CHECK_FALSE((ops::detail::mentions(node->value, symbol_var("n").get()) ||
                                  ops::detail::mentions(node->value, symbol_var("s").get())));
  CHECK_THROWS_WITH_AS(specialize(t, {{"n", 2}}), doctest::Contains("'x' (n, s, 8)"), ValueError);
  // A task of constant shapes comes back as it is.
  Task k{"k", {b}, {compute("k", {8}, [&](Expr j) { return b[j] * 2; })}, "", {}};
  CHECK(specialize(k, {}).outputs[0].ptr() == k.outputs[0].ptr());

  // substitute: some symbols bound (s), the others kept (n); then specialize binds the rest.
  Task p = substitute(t, {{"s", 3}});
  CHECK(p.str() == "demo(x: f32(n, 3, 8), b: f32(8,)) -> f32(3*n,)");
  CHECK(task_symbols(p) == std::vector<std::string>{"n"});
  std::string ptext;
  for (auto *node : topo_order(p.outputs))
    if (node->value) {
      ptext += ir::to_string(node->value) + "\n";
      CHECK_FALSE(ops::detail::mentions(node->value, symbol_var("s").get()));
    }
  INFO(ptext);
  CHECK(ptext.find("/ 3") != std::string::npos);
  CHECK(specialize(p, {{"n", 2}}).str() == c.str());
  CHECK(substitute(t, {}).str() == t.str());
}

TEST_CASE("the scheduler's kernels of a symbolic task take its symbols as parameters") {
  Dim n = Dim::symbol("n");
  auto x = input("x", {n, 300}, dtypes::f32);
  auto mx = reduce({n}, {300}, [&](const Idx &i, const Idx &r) { return x.at({i[0], r[0]}); }, ReduceKind::Max, {}, {}, "m");
  auto e = compute("e", {n, 300}, [&](Expr i, Expr j) { return lang::exp(x[i][j] - mx[i]); });
  auto sm = reduce({n}, {300}, [&](const Idx &i, const Idx &r) { return e.at({i[0], r[0]}); }, ReduceKind::Sum, {}, {}, "s");
  auto y = compute("y", {n, 300}, [&](Expr i, Expr j) { return e[i][j] / sm[i]; });
  Task t{"softmax", {x}, {y}, "", {}};
  for (const Plan &p : {schedule(t), schedule_materialized(t)}) {
    CHECK(p.symbols == std::vector<std::string>{"n"});
    CHECK(sym_shape_str(p.buffers[0].shape) == "[n, 300]");
    ir::Module mod = p.module.ir();
    for (const auto &f : mod->functions) {
      INFO(f->name);
      REQUIRE(!f->params.empty());
      CHECK(f->params.back().same_as(symbol_var("n"))); // the symbol itself, passed by value
      CHECK(ir::to_string(f->attrs.grid_dim[0]).find("n") != std::string::npos);
    }
    CHECK_NOTHROW(ir::lower(mod)); // verified; the symbol is a parameter, not a free variable
  }
  CHECK(schedule(t).steps.size() == 1); // the row-resident kernel serves symbolic row counts
  // A symbolic row length leaves the row-resident schedule for the general one.
  auto z = input("z", {4, n}, dtypes::f32);
  auto zs = reduce({4}, {n}, [&](const Idx &i, const Idx &r) { return z.at({i[0], r[0]}); }, ReduceKind::Sum);
  auto zy = compute("y", {4, n}, [&](Expr i, Expr j) { return z[i][j] - zs[i]; });
  Plan pz = schedule(Task{"center", {z}, {zy}, "", {}});
  CHECK(pz.steps.size() == 2);
  CHECK(pz.steps[0].work == 4);
  CHECK(pz.steps[1].work == 4 * n);
}
