// Operators traced on named symbolic extents (hidet::symbol({"n", 3})): the traced graph's
// printed shapes, runs at several values of the symbols against the eager operators (GPU when
// present, else the emulator), specialize(), optimize() of a symbolic graph (compiled per shape),
// ShapeDispatch of a graph, and the errors of symbolic shapes that cannot work.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"

using namespace ops_test;

namespace {
bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }
} // namespace

TEST_CASE("the quick start with a named batch size") {
  Tensor b = make({3, 2}, dtypes::f32), c = make({2}, dtypes::f32);
  Tensor x = symbol({"n", 3}, dtypes::f32, "cuda", "x");
  Tensor y = o::matmul(x, b) + c;
  CHECK(y.sym_shape() == SymShape{"n", 2});
  FlowGraph g = trace_from(y);
  std::string text = g.str();
  INFO(text);
  CHECK(contains(text, "Graph(x: float32[n, 3][cuda]){"));
  CHECK(contains(text, "x_1: float32[n, 2][cuda] = Matmul(x, c)"));
  CHECK(contains(text, "x_2: float32[n, 2][cuda] = Add(x_1, c_1)"));
  for (std::int64_t n : {2, 5, 1}) {
    Tensor a = make({n, 3}, dtypes::f32);
    expect_same(g(a), o::matmul(a, b) + c);
  }
  // One shape: the same operators at constant extents, which optimize() fuses.
  FlowGraph g4 = g.specialize({{"n", 4}});
  CHECK(g4.inputs()[0].shape() == std::vector<std::int64_t>{4, 3});
  CHECK(g4.inputs()[0].name() == "x");
  CHECK(contains(g4.str(), "x_1: float32[4, 2][cuda] = Matmul(x, c)"));
  CHECK(dynamic_cast<const o::TaskOperator *>(g4.nodes()[1].get()) != nullptr); // Add is still task-defined
  FlowGraph opt4 = graph::optimize(g4);
  CHECK(contains(opt4.str(), "FusedMatmul"));
  Tensor a4 = make({4, 3}, dtypes::f32);
  expect_same(opt4(a4), o::matmul(a4, b) + c);
  expect_error([&] { g.specialize({{"m", 4}}); }, {"specialize: graph input 0 'x'", "n"});
}

TEST_CASE("optimize() of a symbolic graph compiles it per shape") {
  Tensor w = make({6, 5}, dtypes::f32, -0.5, 0.5), bias = make({5}, dtypes::f32);
  Tensor x = symbol({"n", 6}, dtypes::f32, "cuda", "x");
  FlowGraph g = trace_from(o::softmax(o::relu(o::matmul(x, w) + bias), -1));
  FlowGraph opt = graph::optimize(g);
  std::string text = opt.str();
  INFO(text);
  CHECK(contains(text, "x_1: float32[n, 5][cuda] = ShapeDispatch(x, graph=FlowGraph(Matmul, Add, Relu, Softmax)"));
  for (std::int64_t n : {3, 7, 3}) {
    Tensor a = make({n, 6}, dtypes::f32);
    expect_same(opt(a), o::softmax(o::relu(o::matmul(a, w) + bias), -1));
  }
  // The same through a ShapeDispatch of the graph: one compile per distinct n.
  graph::ShapeDispatch model(g);
  for (std::int64_t n : {2, 4, 2}) {
    Tensor a = make({n, 6}, dtypes::f32);
    expect_same(model(a), g(a));
  }
  CHECK(model.num_compilations() == 2);
  // A compiled graph runs one shape: the error says how to get one.
  expect_error([&] { graph::CompiledGraph cg(opt); }, {"graph input 0 'x'", "[n, 6]", "specialize", "ShapeDispatch"});
  // specialize() of the optimized graph traces the original graph at that shape.
  FlowGraph again = opt.specialize({{"n", 3}});
  CHECK(contains(again.str(), "float32[3, 5][cuda] = Matmul(x, c)"));
}

TEST_CASE("a transformer block traced once for every batch and sequence length") {
  const std::int64_t V = 11, D = 16, H = 2;
  Tensor emb = make({V, D}, dtypes::f32), ln_w = make({D}, dtypes::f32), ln_b = make({D}, dtypes::f32);
  Tensor wq = make({D, D}, dtypes::f32, -0.3, 0.3), wk = make({D, D}, dtypes::f32, -0.3, 0.3);
  Tensor wv = make({D, D}, dtypes::f32, -0.3, 0.3), wo = make({D, D}, dtypes::f32, -0.3, 0.3);
  Tensor w1 = make({D, 24}, dtypes::f32, -0.3, 0.3), w2 = make({24, D}, dtypes::f32, -0.3, 0.3);
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  auto block = [&](const Tensor &ids) {
    Tensor h = o::layer_norm(o::embedding(ids, emb), 1, ln_w, ln_b);             // [n, s, D]
    auto heads = [&](const Tensor &t) {                                           // [n, H, s, D/H]
      if (t.is_symbolic()) return o::permute(t.reshape({n, s, Dim(H), Dim(D / H)}), {0, 2, 1, 3});
      return o::permute(t.reshape({t.shape()[0], t.shape()[1], H, D / H}), {0, 2, 1, 3});
    };
    Tensor att = o::scaled_dot_product_attention(heads(o::matmul(h, wq)), heads(o::matmul(h, wk)),
                                                 heads(o::matmul(h, wv)), std::nullopt, true);
    Tensor merged = o::flatten(o::permute(att, {0, 2, 1, 3}), 2);                // [n, s, D]
    Tensor x1 = h + o::matmul(merged, wo);
    Tensor ff = o::matmul(o::gelu(o::matmul(x1, w1)), w2);
    Tensor x2 = o::layer_norm(x1 + ff, 1);
    Tensor flat = x2.reshape({-1, D});                                            // [n*s, D]
    Tensor pooled = o::mean(o::reshape(flat, {n, s, Dim(D)}), {1});               // [n, D]
    return std::vector<Tensor>{x2, pooled, o::argmax(x2, -1)};
  };
  Tensor ids = symbol({n, s}, dtypes::i64, "cuda", "ids");
  auto outs = block(ids);
  CHECK(outs[0].sym_shape() == SymShape{n, s, Dim(D)});
  CHECK(outs[1].sym_shape() == SymShape{n, Dim(D)});
  CHECK(outs[2].sym_shape() == SymShape{n, s});
  CHECK(outs[2].dtype() == dtypes::i64);
  FlowGraph g = trace_from(outs, {ids});
  std::string text = g.str();
  INFO(text);
  CHECK(contains(text, "Graph(ids: int64[n, s][cuda]){"));
  CHECK(contains(text, "Reshape(x_"));
  CHECK(contains(text, "shape=[n, s, 2, 8]"));
  CHECK(contains(text, "float32[n, 2, s, 8][cuda] = ScaledDotProductAttention("));
  CHECK(contains(text, "float32[n*s, 16][cuda] = Reshape("));
  for (auto [bn, bs] : {std::pair<std::int64_t, std::int64_t>{2, 5}, {1, 9}, {3, 4}}) {
    Tensor t = make({bn, bs}, dtypes::i64, 0, double(V));
    auto got = g.run({t});
    auto want = [&] { // the eager block, written with the concrete sizes
      Tensor h = o::layer_norm(o::embedding(t, emb), 1, ln_w, ln_b);
      auto hd = [&](const Tensor &u) { return o::permute(u.reshape({bn, bs, H, D / H}), {0, 2, 1, 3}); };
      Tensor att = o::scaled_dot_product_attention(hd(o::matmul(h, wq)), hd(o::matmul(h, wk)), hd(o::matmul(h, wv)),
                                                   std::nullopt, true);
      Tensor x1 = h + o::matmul(o::flatten(o::permute(att, {0, 2, 1, 3}), 2), wo);
      Tensor x2 = o::layer_norm(x1 + o::matmul(o::gelu(o::matmul(x1, w1)), w2), 1);
      return std::vector<Tensor>{x2, o::mean(x2, {1}), o::argmax(x2, -1)};
    }();
    expect_same(got[0], want[0], 4);
    expect_same(got[1], want[1], 4);
    CHECK(got[2].shape() == want[2].shape());
    // Optimized per shape: the compiled graph gives the same values.
    FlowGraph spec = graph::optimize(g.specialize({{"n", bn}, {"s", bs}}));
    auto fused = spec.run({t});
    expect_same(fused[0], want[0], 4);
  }
  // Inputs that disagree with the graph's symbols name the input.
  expect_error([&] { g.run({make({2, 3, 1}, dtypes::i64, 0, 5)}); }, {"'ids'", "rank"});
}

TEST_CASE("a convolutional network with a symbolic batch") {
  Tensor w1 = make({4, 3, 3, 3}, dtypes::f32, -0.4, 0.4), b1 = make({4}, dtypes::f32);
  Tensor w2 = make({4, 5}, dtypes::f32);
  auto net = [&](const Tensor &x) {
    Tensor h = o::relu(o::conv2d(x, w1, b1, {1}, {1}));
    h = o::max_pool2d(h, {2}, {2});
    h = o::adaptive_avg_pool2d(h, {1, 1});
    return o::matmul(o::flatten(h, 1), w2);
  };
  Tensor x = symbol({"n", 3, 10, 10}, dtypes::f32, "cuda", "img");
  Tensor y = net(x);
  CHECK(y.sym_shape() == SymShape{"n", 5});
  FlowGraph g = trace_from(y);
  std::string text = g.str();
  INFO(text);
  CHECK(contains(text, "float32[n, 4, 10, 10][cuda] = Conv2d(img, c, c_1, stride=[1, 1], padding=[1, 1]"));
  CHECK(contains(text, "float32[n, 4, 5, 5][cuda] = MaxPool2d("));
  for (std::int64_t n : {1, 3}) {
    Tensor a = make({n, 3, 10, 10}, dtypes::f32);
    expect_same(g(a), net(a), 4);
  }
  // A symbolic height: a "same" convolution keeps it; a strided one's output extent is the window
  // arithmetic on it (floor division), and so is a pooling's; ceil_mode's is not traced.
  Tensor same = o::conv2d(symbol({"n", 3, "h", 10}, dtypes::f32), w1, b1, {1}, {1});
  CHECK(same.sym_shape() == SymShape{"n", 4, "h", 10});
  Dim h = Dim::symbol("h");
  Tensor strided = o::conv2d(symbol({"n", 3, "h", 10}, dtypes::f32), w1, b1, {2}, {1});
  CHECK(strided.sym_shape() == SymShape{"n", 4, (h - 1) / 2 + 1, 5});
  Tensor pooled = o::max_pool2d(strided, {3}, {2}, {1});
  CHECK(pooled.sym_shape() == SymShape{"n", 4, ((h - 1) / 2 + 1 - 1) / 2 + 1, 3});
  FlowGraph fg({pooled}, {strided.trace().op->inputs()[0]});
  for (std::int64_t hv : {9, 10, 17}) {
    Tensor a = make({2, 3, hv, 10}, dtypes::f32);
    expect_same(fg.run({a})[0], o::max_pool2d(o::conv2d(a, w1, b1, {2}, {1}), {3}, {2}, {1}), 4);
  }
  expect_error([&] { o::max_pool2d(symbol({"n", 3, "h", 10}, dtypes::f32), {3}, {2}, {0}, {1}, true); },
               {"max_pool2d: output dim 2", "constant extents"});
}

TEST_CASE("element-wise, reductions and layout operators on symbolic extents") {
  Tensor row = make({5}, dtypes::f32);
  Tensor x = symbol({"n", "m", 5}, dtypes::f32, "cuda", "x");
  Tensor ids = symbol({"m"}, dtypes::i32, "cuda", "ids");
  std::vector<Tensor> outs{
      o::where(o::gt(x, 0.5), x * 2.0, o::exp(x)) - row,              // [n, m, 5]
      o::sum(x, {0}),                                                 // [m, 5]
      o::max(x, {2}, true),                                           // [n, m, 1]
      o::concat({x, o::sqrt(o::abs(x))}, 1),                          // [n, 2*m, 5]
      o::slice(x, {2}, {1}, {4}),                                     // [n, m, 3]
      o::transpose(o::unsqueeze(x, 0), 1, 3),                         // [1, 5, m, n]
      o::cast(o::squeeze(o::unsqueeze(x, 1), {1}), dtypes::f16),      // [n, m, 5]
      o::take(row, ids),                                              // [m]
      o::split(x, {2, 3}, 2)[1],                                      // [n, m, 3]
      o::pad(x, {1, 2}),                                              // [n, m, 8]
      o::tile(x, {1, 1, 2}),                                          // [n, m, 10]
      o::cumsum(x, 1),                                                // [n, m, 5]
      o::gather(x, 2, o::cast(o::gt(x, 0.0), dtypes::i32)),           // [n, m, 5]
      o::broadcast_to(o::sum(x, {1}, true), SymShape{"n", "m", 5}),   // [n, m, 5]
      o::broadcast_to(row, SymShape{"m", 5}),                         // [m, 5]: a constant
      o::flip(x, {0, 2})};                                            // [n, m, 5]
  CHECK(outs[14].sym_shape() == SymShape{"m", 5});
  CHECK(outs[3].sym_shape() == SymShape{"n", Dim(2) * Dim("m"), 5});
  CHECK(outs[5].sym_shape() == SymShape{1, 5, "m", "n"});
  FlowGraph g = trace_from(outs, {x, ids});
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {4, 1}}) {
    Tensor a = make({n, m, 5}, dtypes::f32), i = make({m}, dtypes::i32, -5, 5);
    auto got = g.run({a, i});
    std::vector<Tensor> want{o::where(o::gt(a, 0.5), a * 2.0, o::exp(a)) - row,
                             o::sum(a, {0}),
                             o::max(a, {2}, true),
                             o::concat({a, o::sqrt(o::abs(a))}, 1),
                             o::slice(a, {2}, {1}, {4}),
                             o::transpose(o::unsqueeze(a, 0), 1, 3),
                             o::cast(a, dtypes::f16),
                             o::take(row, i),
                             o::split(a, {2, 3}, 2)[1],
                             o::pad(a, {1, 2}),
                             o::tile(a, {1, 1, 2}),
                             o::cumsum(a, 1),
                             o::gather(a, 2, o::cast(o::gt(a, 0.0), dtypes::i32)),
                             o::broadcast_to(o::sum(a, {1}, true), {n, m, 5}),
                             o::broadcast_to(row, {m, 5}),
                             o::flip(a, {0, 2})};
    for (std::size_t k = 0; k < want.size(); ++k) {
      INFO("output " << k);
      expect_same(got[k], want[k]);
    }
  }
}

TEST_CASE("batch and group norms and full_like on symbolic batch and length") {
  Tensor y = symbol({"n", 4, "h"}, dtypes::f32, "cuda", "y");
  Tensor mean = make({4}, dtypes::f32), var = o::abs(make({4}, dtypes::f32)) + 0.5, w = make({4}, dtypes::f32),
         b = make({4}, dtypes::f32);
  std::vector<Tensor> outs{o::batch_norm(y, mean, var, w, b, 1e-5), o::batch_norm(y, mean, var, std::nullopt, b, 1e-5),
                           o::group_norm(y, 2, w, std::nullopt, 1e-5), o::zeros_like(y) + 1.5 * y};
  for (auto &t : outs) CHECK(t.sym_shape() == SymShape{"n", 4, "h"});
  FlowGraph g = trace_from(outs, {y});
  for (auto [n, h] : {std::pair<std::int64_t, std::int64_t>{1, 7}, {3, 2}}) {
    Tensor a = make({n, 4, h}, dtypes::f32);
    auto got = g.run({a});
    std::vector<Tensor> want{o::batch_norm(a, mean, var, w, b, 1e-5), o::batch_norm(a, mean, var, std::nullopt, b, 1e-5),
                             o::group_norm(a, 2, w, std::nullopt, 1e-5), o::zeros_like(a) + 1.5 * a};
    for (std::size_t k = 0; k < want.size(); ++k) {
      INFO("output " << k << " at n=" << n << ", h=" << h);
      expect_same(got[k], want[k]);
    }
  }
}

TEST_CASE("symbolic shapes that cannot work are clear errors") {
  Tensor x = symbol({"n", 3}, dtypes::f32, "cuda", "x");
  expect_error([&] { o::add(x, symbol({3, 3}, dtypes::f32)); },
               {"add: cannot broadcast shapes (n, 3) and (3, 3)", "a symbolic size only matches itself or 1"});
  expect_error([&] { o::matmul(x, symbol({"k", 2}, dtypes::f32)); },
               {"matmul: the last dimension of a (n, 3) and the second-to-last dimension of b (k, 2) are 3 and k",
                "every value of the symbols"});
  expect_error([&] { x.reshape({6}); }, {"reshape: cannot reshape a tensor of shape [n, 3]", "3*n", "[6]"});
  expect_error([&] { x.reshape({Dim("n"), Dim(2)}); }, {"reshape", "counts must be equal"});
  expect_error([&] { o::slice(x, {0}, {0}, {1}); }, {"slice: axis 0", "(n, 3) is symbolic"});
  expect_error([&] { o::split(x, 1, 0); }, {"split: axis 0", "symbolic"});
  expect_error([&] { o::add(x, o::broadcast_to(x, {2, 3})); }, {"broadcast_to: cannot broadcast shapes (n, 3) and (2, 3)"});
  expect_error([&] { o::broadcast_to(x, SymShape{"m", 3}); }, {"broadcast_to: cannot broadcast shapes (n, 3) and (m, 3)"});
  // Padding a symbolic axis gives the extent n + 2 (a shape-generic task); negative pads are errors.
  CHECK(o::pad(x, {0, 0, 1, 1}).sym_shape() == SymShape{Dim("n") + Dim(2), 3});
  expect_error([&] { o::pad(x, {0, 0, -1, 1}); }, {"pad: pads", "non-negative"});
  // A reshape to symbols outside a graph run has no values for them.
  Tensor r = x.reshape({Dim("n"), Dim(3), Dim(1)});
  expect_error([&] { r.trace().op->run({make({2, 3}, dtypes::f32)}); }, {"reshape", "no graph run binds them"});
  // A data tensor cannot be reshaped to symbols.
  expect_error([&] { make({2, 3}, dtypes::f32).reshape({Dim("n"), Dim(3)}); }, {"only symbolic tensors take symbolic extents"});
  // The graph still works after the errors.
  FlowGraph g = trace_from(o::relu(x));
  Tensor a = make({4, 3}, dtypes::f32);
  expect_same(g(a), o::relu(a));
}

TEST_CASE("element-wise, reduction, row and layout kernels compile once for every value of the symbols") {
  const std::int64_t D = 24;
  Tensor bias = make({D}, dtypes::f32), w = make({D}, dtypes::f32), lb = make({D}, dtypes::f32);
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  Tensor x = symbol({"n", "s", D}, dtypes::f32, "cuda", "x");
  auto model = [&](const Tensor &t, bool symbolic) {
    Tensor h = o::gelu(t + bias);                                                     // [n, s, D]
    Tensor rows = symbolic ? h.reshape({n * s, Dim(D)}) : h.reshape({t.shape()[0] * t.shape()[1], D});
    Tensor ln = o::layer_norm(rows, 1, w, lb);                                        // rows n*s alone: bound by the graph
    Tensor back = symbolic ? ln.reshape({n, s, Dim(D)}) : ln.reshape(t.shape());
    return std::vector<Tensor>{o::softmax(back * 0.5, -1),                            // row-resident, rows n*s
                               o::mean(h, {1}),                                       // reduces over the symbol s
                               o::sum(o::rms_norm(h, 1, w), {0, 2}),                  // [s]
                               o::cast(o::where(o::gt(h, 0.0), h, o::neg(h)), dtypes::f16),
                               o::cumsum(h, 1),                                       // a scan over s
                               o::pad(h, {1, 2, 0, 3}),                               // pads the symbol s
                               o::tile(h, {2, 1, 2})};                                // repeats the symbol n
  };
  FlowGraph g = trace_from(model(x, true), {x});
  std::string text = g.str();
  INFO(text);
  CHECK(contains(text, "float32[n*s, 24][cuda] = LayerNorm("));
  int task_nodes = 0;
  for (const auto &op : g.nodes())
    if (auto t = dynamic_cast<const o::TaskOperator *>(op.get())) {
      CHECK_FALSE(o::task_symbols(t->task()).empty()); // every task-defined node is shape-generic
      ++task_nodes;
    }
  CHECK(task_nodes >= 8);
  std::size_t compiled_after_first = 0;
  bool first = true;
  for (auto [bn, bs] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {1, 7}, {3, 1}, {4, 5}}) {
    INFO("n=" << bn << ", s=" << bs);
    Tensor a = make({bn, bs, D}, dtypes::f32);
    std::size_t before = o::compiled_task_count();
    auto got = g.run({a});
    std::size_t compiled = o::compiled_task_count() - before;
    if (first) {
      compiled_after_first = compiled; // the process-wide cache may hold some already
    } else {
      CHECK(compiled == 0); // a new shape compiles nothing
    }
    first = false;
    auto want = model(a, false);
    for (std::size_t k = 0; k < want.size(); ++k) {
      INFO("output " << k);
      expect_same(got[k], want[k]);
    }
  }
  CHECK(compiled_after_first > 0);
  // specialize() still gives constant-shape task nodes, which optimize() fuses per shape.
  FlowGraph g2 = g.specialize({{"n", 2}, {"s", 3}});
  for (const auto &op : g2.nodes())
    if (auto t = dynamic_cast<const o::TaskOperator *>(op.get())) CHECK(o::task_symbols(t->task()).empty());
  Tensor a = make({2, 3, D}, dtypes::f32);
  auto got = graph::optimize(g2).run({a});
  auto want = model(a, false);
  for (std::size_t k = 0; k < want.size(); ++k) expect_same(got[k], want[k]);
}

TEST_CASE("a shape-generic node names what does not fit") {
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  Tensor x = symbol({"n", "s", 4}, dtypes::f32, "cuda", "x");
  Tensor y = o::relu(x);
  const auto &node = *y.trace().op;
  expect_error([&] { node.run({make({2, 3, 5}, dtypes::f32)}); }, {"relu", "input 0 of shape (2, 3, 5)", "dim 2 must be 4"});
  expect_error([&] { node.run({make({2, 3}, dtypes::f32)}); }, {"relu", "wrong rank"});
  // n*s alone gives neither n nor s: outside a graph run nothing binds them.
  Tensor r = o::relu(x.reshape({n * s, Dim(4)}));
  expect_error([&] { r.trace().op->run({make({6, 4}, dtypes::f32)}); },
               {"relu", "symbol n is not an extent of any input by itself", "no graph"});
  // Inside a graph run the graph's inputs bind them; the node and the graph stay usable.
  FlowGraph g = trace_from(r);
  Tensor a = make({2, 3, 4}, dtypes::f32);
  expect_same(g(a), o::relu(a.reshape({6, 4})));
  expect_same(node.run({a})[0], o::relu(a));
}

TEST_CASE("node_symbols: the symbols a graph depends on") {
  // A size input [0, m] (how hidet.torch gives a graph a Python int of dynamo's symbolic sizes):
  // the graph depends on m when a node shapes a tensor by it, not when no node reads it.
  Tensor x = symbol({"n", 4}, dtypes::f32, "cuda", "x"),
         m = symbol({0, "m"}, dtypes::i8, "cuda", "m");
  FlowGraph unused({o::exp(x)}, {x, m});
  CHECK(unused.node_symbols() == std::vector<std::string>{"n"});
  Tensor filled = o::broadcast_to_dims(
      o::full(std::vector<std::int64_t>{1, 1}, 2.0, dtypes::f32, Device::cuda()), SymShape{"m", 4});
  FlowGraph used({o::exp(x), filled * 3.0}, {x, m});
  CHECK(used.node_symbols() == std::vector<std::string>{"m", "n"});
  Tensor c = make({5, 4}, dtypes::f32);
  auto outs = used.run({c, make({0, 3}, dtypes::i8)});
  CHECK(outs[1].shape() == std::vector<std::int64_t>{3, 4});
  CHECK(outs[1].to_double_vector() == std::vector<double>(12, 6.0));
}
