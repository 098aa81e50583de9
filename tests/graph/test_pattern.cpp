// The pattern language of graph rewrites (include/hidet/graph/pattern.hpp): rules declared as
// (pattern, replacement) pairs, applied until none fires, printed graphs compared and both
// graphs run on fresh inputs (GPU when present, else the emulator); interior operators used
// elsewhere are never swallowed; repeated captures must meet one tensor; declined and ill-typed
// replacements leave the graph as it was; errors name the capture.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"

using namespace ops_test;
using P = graph::Pattern;

namespace {
int count_named(const FlowGraph &g, const std::string &name) {
  int n = 0;
  for (const auto &op : g.nodes()) n += op->name() == name;
  return n;
}
/// relu(relu(x)) -> relu(x).
graph::RewriteRule relu_idempotent() {
  return {"relu_idempotent", P::op("Relu", {P::op("Relu", {P::any("x")})}),
          [](const graph::Match &m) -> std::optional<Tensor> { return o::relu(m["x"]); }};
}
} // namespace

TEST_CASE("a rule applies until it no longer matches") {
  Tensor a = make({5, 7}, dtypes::f32);
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from(o::relu(o::relu(o::relu(o::relu(x)))) * 2.0);
  std::map<std::string, int> fired;
  FlowGraph r = graph::rewrite(g, {relu_idempotent()}, &fired);
  INFO(r.str());
  CHECK(r.str() == "Graph(x: float32[5, 7][cuda]){\n"
                   "  x_1: float32[5, 7][cuda] = Relu(x)\n"
                   "  x_2: float32[5, 7][cuda] = Mul(x_1, scalar=2, left=0)\n"
                   "  return x_2\n"
                   "}");
  CHECK(fired["relu_idempotent"] >= 2);
  for (int trial = 0; trial < 2; ++trial) {
    Tensor in = make({5, 7}, dtypes::f32);
    expect_same(r(in), g(in));
  }
  // The rewritten Relu stands for the last traced one (the correctness report finds it).
  auto report = graph::correctness_report(g, r, {a});
  INFO(report.str());
  CHECK(!report.any_flagged());
}

TEST_CASE("an interior operator read elsewhere is not swallowed") {
  Tensor a = make({4, 6}, dtypes::f32);
  Tensor x = symbol_like(a);
  Tensor y = o::relu(x);
  FlowGraph g = trace_from({o::relu(y), y * 3.0}, {x});
  FlowGraph r = graph::rewrite(g, {relu_idempotent()});
  CHECK(r.str() == g.str());
  // Nor is a graph output.
  FlowGraph g2 = trace_from({o::relu(y), y}, {x});
  CHECK(graph::rewrite(g2, {relu_idempotent()}).str() == g2.str());
}

TEST_CASE("captures, alternatives, several names; declined and ill-typed replacements") {
  Tensor a = make({3, 9}, dtypes::f32), c = make({9}, dtypes::f32);
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from((x + x) + (x + c), {x});
  // x + x (one tensor captured twice) -> x * 2; x + c does not match.
  graph::RewriteRule twice{"twice", P::op("Add", {P::any("a"), P::any("a")}),
                           [](const graph::Match &m) -> std::optional<Tensor> { return m["a"] * 2.0; }};
  FlowGraph r = graph::rewrite(g, {twice});
  INFO(r.str());
  CHECK(count_named(r, "Add") == 2);
  CHECK(count_named(r, "Mul") == 1);
  Tensor in = make({3, 9}, dtypes::f32);
  expect_same(r(in), g(in));
  // A constant capture, an alternative and a name list.
  P scaled = P::op("Mul|Div", {P::any("t")}, "s");
  P pat = P::op("Exp", {P::one_of({scaled, P::op("Add", {P::any("t"), P::constant("bias")})})});
  CHECK(pat.str() == "Exp(one_of(Mul|Div(any t) | Add(any t, constant bias)))");
  int seen = 0;
  graph::RewriteRule probe{"probe", pat, [&](const graph::Match &m) -> std::optional<Tensor> {
                             ++seen;
                             CHECK((m.has("s") || m.has("bias")));
                             if (m.has("s")) CHECK((m.op_name("s") == "Mul" || m.op_name("s") == "Div"));
                             return std::nullopt; // declined: nothing changes
                           }};
  FlowGraph g3 = trace_from({o::exp(x / 4.0), o::exp(x + c), o::exp(x - 1.0)}, {x});
  CHECK(graph::rewrite(g3, {probe}).str() == g3.str());
  CHECK(seen == 2);
  // A replacement of another shape or dtype, or one whose operator refuses its arguments, is
  // declined.
  graph::RewriteRule wrong_dtype{"wrong", P::op("Exp", {P::any("t")}),
                                 [](const graph::Match &m) -> std::optional<Tensor> { return o::cast(m["t"], dtypes::f16); }};
  graph::RewriteRule refused{"refused", P::op("Exp", {P::any("t")}),
                             [](const graph::Match &m) -> std::optional<Tensor> { return o::matmul(m["t"], m["t"]); }};
  CHECK(graph::rewrite(g3, {wrong_dtype, refused}).str() == g3.str());
}

TEST_CASE("pattern errors") {
  expect_error([] { P::op("", {}); }, {"at least one operator name"});
  expect_error([] { P::one_of({}); }, {"at least one alternative"});
  graph::Match m;
  expect_error([&] { (void)m["q"]; }, {"no tensor named 'q'"});
  expect_error([&] { (void)m.attr("softmax", "axis"); }, {"no operator named 'softmax'"});
}
