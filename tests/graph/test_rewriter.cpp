// The graph rewriter that passes share (include/hidet/graph/detail/rewriter.hpp), on traced
// graphs (no kernel runs): a pass that changes one node gives the expected graph, printed; the
// nodes before it stay the same operators; a pass that changes nothing gives the same graph; a
// removed node's outputs have no value; Readers answers who reads a tensor.
#include <doctest/doctest.h>

#include "hidet/graph.hpp"
#include "hidet/graph/detail/rewriter.hpp"

using namespace hidet;
using namespace hidet::graph::detail;
using hidet::graph::FlowGraph;
namespace o = hidet::ops;

namespace {
/// A pass built with the rewriter: every Relu becomes a Sigmoid.
FlowGraph relu_to_sigmoid(const FlowGraph &graph) {
  return rewrite_nodes(graph, [](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (o::kind_of(*op) != o::OpKind::Relu) return std::nullopt;
    return o::sigmoid(rw.map(op->inputs()[0]));
  });
}

/// A pass built with the rewriter: Neg(Neg(x)) is x.
FlowGraph cancel_negations(const FlowGraph &graph) {
  return rewrite_nodes(graph, [](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (o::kind_of(*op) != o::OpKind::Neg) return std::nullopt;
    Tensor x = rw.map(op->inputs()[0]);
    if (!x.trace() || o::kind_of(*x.trace().op) != o::OpKind::Neg) return std::nullopt;
    return x.trace().op->inputs()[0];
  });
}

bool same_nodes(const FlowGraph &a, const FlowGraph &b) {
  if (a.nodes().size() != b.nodes().size()) return false;
  for (std::size_t i = 0; i < a.nodes().size(); ++i)
    if (a.nodes()[i] != b.nodes()[i]) return false;
  return true;
}
} // namespace

TEST_CASE("a pass that changes one node: the expected graph; the nodes before it stay") {
  Tensor x = symbol({4, 6}, dtypes::f32, Device::cuda(), "x");
  auto net = [](const Tensor &t, bool sigmoid) {
    Tensor n = o::neg(t);
    Tensor a = sigmoid ? o::sigmoid(n) : o::relu(n);
    return o::exp(a) + n;
  };
  FlowGraph before = trace_from(net(x, false), {x});
  FlowGraph expected = trace_from(net(x, true), {x});
  FlowGraph after = relu_to_sigmoid(before);
  CHECK(after.str() == expected.str());
  CHECK(after.str() == "Graph(x: float32[4, 6][cuda]){\n"
                       "  x_1: float32[4, 6][cuda] = Neg(x)\n"
                       "  x_2: float32[4, 6][cuda] = Sigmoid(x_1)\n"
                       "  x_3: float32[4, 6][cuda] = Exp(x_2)\n"
                       "  x_4: float32[4, 6][cuda] = Add(x_3, x_1)\n"
                       "  return x_4\n"
                       "}");
  // Neg did not change: the same operator. Exp and Add read a new tensor: copies, whose origin is
  // the node they stand for.
  REQUIRE(after.nodes().size() == 4);
  CHECK(after.nodes()[0] == before.nodes()[0]);
  CHECK(after.nodes()[2] != before.nodes()[2]);
  CHECK(after.nodes()[2]->origin() == before.nodes()[2]);
  CHECK(before.nodes()[1]->name() == "Relu"); // the input graph is unchanged
}

TEST_CASE("a pass that changes nothing gives the same graph") {
  Tensor x = symbol({4, 6}, dtypes::f32, Device::cuda(), "x");
  FlowGraph g = trace_from(o::exp(o::neg(x)) * x, {x});
  FlowGraph same = relu_to_sigmoid(g);
  CHECK(same_nodes(same, g));
  REQUIRE(same.outputs().size() == 1);
  CHECK(same.outputs()[0].symbolic_info() == g.outputs()[0].symbolic_info());
  CHECK(same_nodes(cancel_negations(g), g)); // one Neg: nothing to cancel
}

TEST_CASE("a node's output replaced by an earlier tensor: the nodes left unread leave the graph") {
  Tensor x = symbol({4, 6}, dtypes::f32, Device::cuda(), "x");
  FlowGraph g = trace_from(o::relu(o::neg(o::neg(o::exp(x)))), {x});
  FlowGraph c = cancel_negations(g);
  FlowGraph expected = trace_from(o::relu(o::exp(x)), {x});
  CHECK(c.str() == expected.str());
  CHECK(c.nodes()[0] == g.nodes()[0]); // Exp
}

TEST_CASE("a removed node's value given on first use; none given is an internal error") {
  Tensor x = symbol({4, 6}, dtypes::f32, Device::cuda(), "x");
  Tensor n = o::neg(x);
  FlowGraph g = trace_from(o::exp(n) + n, {x});
  const OpPtr neg = g.nodes()[0];
  // The Neg removed when visited; its readers find no value and give one (as convert_layout_nhwc
  // makes a value's NCHW form where it is needed).
  GraphRewriter rw(g);
  rw.visit([&](const OpPtr &op, GraphRewriter &r) -> NodeRewrite {
    if (op == neg) return NodeRewrite::removed();
    for (const auto &t : op->inputs())
      if (t.trace() && !r.find(t)) r.set(t, o::tanh(x));
    return std::nullopt;
  });
  Tensor t = o::tanh(x);
  CHECK(rw.result().str() == trace_from(o::exp(t) + t, {x}).str());
  auto remove_neg = [&](const OpPtr &op, GraphRewriter &) -> NodeRewrite {
    return op == neg ? NodeRewrite::removed() : NodeRewrite();
  };
  CHECK_THROWS_AS(rewrite_nodes(g, remove_neg), InternalError);
}

TEST_CASE("Readers: the nodes reading a tensor, graph outputs, a single reader") {
  Tensor x = symbol({4, 6}, dtypes::f32, Device::cuda(), "x");
  Tensor n = o::neg(x), e = o::exp(n);
  FlowGraph g = trace_from({o::relu(e) + n, e}, {x}); // n read twice, e read once and returned
  const Readers readers(g);
  const TensorKey nk = key_of(n), ek = key_of(e), xk = key_of(x);
  CHECK(readers.of(nk).size() == 2);
  CHECK(!readers.single(nk));
  CHECK(readers.of(ek).size() == 1);
  CHECK(readers.is_output(ek));
  CHECK(!readers.single(ek)); // a graph output stays
  REQUIRE(readers.single(xk));
  CHECK(readers.single(xk) == g.nodes()[0]);
  CHECK(readers.of({nullptr, 0}).empty());
}
