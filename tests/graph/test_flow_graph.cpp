// Symbolic tensors and FlowGraph (include/hidet/graph/flow_graph.hpp), on the GPU when present,
// else on the emulator: tracing records operators instead of running them, the printed form is
// Hidet's, a traced graph run on fresh random inputs of odd shapes gives the eager operators'
// results (templates and auto-scheduled operators alike), shared subgraphs are traced once,
// symbols bind from inputs, and bad graphs or inputs give errors naming what was wrong.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"

using namespace ops_test;

namespace {
/// Checks that `expr` throws a ValueError whose message contains `text`.
#define CHECK_ERROR_HAS(expr, text) expect_error([&] { (void)(expr); }, {text})

} // namespace

TEST_CASE("quick start: trace matmul + add, print in Hidet's form, run") {
  Tensor a = make({2, 3}, dtypes::f32), b = make({3, 2}, dtypes::f32), c = make({2}, dtypes::f32);
  Tensor x = symbol_like(a);
  Tensor y = o::matmul(x, b) + c;
  CHECK(x.is_symbolic());
  CHECK(!x.trace());
  REQUIRE(y.trace());
  CHECK(y.trace().op->name() == "Add");
  CHECK(y.trace().index == 0);
  std::string sig = "Tensor(shape=(2, 2), dtype='float32', device='" + a.device_str() + "')";
  CHECK(y.signature() == sig); // "cuda:0", or "cuda:0 (emulator)" as for a
  CHECK(y.str() == sig + "\nfrom (Add, 0)");
  auto before = o::compiled_task_count();

  FlowGraph g = trace_from(y);
  CHECK(g.str() == "Graph(x: float32[2, 3][cuda]){\n"
                   "  c = Constant(float32[3, 2][cuda])\n"
                   "  c_1 = Constant(float32[2][cuda])\n"
                   "  x_1: float32[2, 2][cuda] = Matmul(x, c)\n"
                   "  x_2: float32[2, 2][cuda] = Add(x_1, c_1)\n"
                   "  return x_2\n"
                   "}");
  CHECK(o::compiled_task_count() == before); // tracing compiles nothing
  REQUIRE(g.nodes().size() == 2);
  CHECK(g.inputs().size() == 1);
  CHECK(g.constants().size() == 2);

  Tensor y1 = g(a);
  Tensor want = o::matmul(a, b) + c;
  expect_same(y1, want);
  // Against a host reference too.
  auto av = a.to_double_vector(), bv = b.to_double_vector(), cv = c.to_double_vector();
  std::vector<double> ref(4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = cv[std::size_t(j)];
      for (int k = 0; k < 3; ++k) s += av[std::size_t(i * 3 + k)] * bv[std::size_t(k * 2 + j)];
      ref[std::size_t(i * 2 + j)] = s;
    }
  expect_close(y1, {2, 2}, ref);
  // Fresh inputs: the graph is a function.
  Tensor a2 = make({2, 3}, dtypes::f32);
  expect_same(g.run({a2})[0], o::matmul(a2, b) + c);
}

TEST_CASE("a traced network runs like its eager operators (odd shapes, several dtypes)") {
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    const std::int64_t n = 3, cin = 5, h = 9, w = 7, cout = 6, feat = 11;
    Tensor img = make({n, cin, h, w}, dt), wc = make({cout, cin, 3, 3}, dt, -0.5, 0.5), bc = make({cout}, dt);
    Tensor w1 = make({cout * 4 * 3, feat}, dt, -0.2, 0.2), b1 = make({feat}, dt);
    auto net = [&](const Tensor &x) {
      Tensor y = o::conv2d(x, wc, bc, {2}, {1});                  // [3, 6, 5, 4]
      y = o::relu(y);
      y = o::max_pool2d(y, {2}, {1});                             // [3, 6, 4, 3]
      y = y.reshape({n, cout * 4 * 3});                           // [3, 72]
      y = o::matmul(y, w1) + b1;                                  // [3, 11]
      y = o::softmax(o::cast(y, dtypes::f32), -1);
      return o::sum(y * y, {1}, true);                            // [3, 1]
    };
    Tensor x = symbol_like(img, "img");
    FlowGraph g = trace_from(net(x), {x});
    CHECK(g.nodes().size() >= 9);
    CHECK(g.str().find("Conv2d(img, c, c_1, stride=[2, 2], padding=[1, 1], dilation=[1, 1], groups=1)") !=
          std::string::npos);
    CHECK(g.str().find("Reshape(") != std::string::npos);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({n, cin, h, w}, dt);
      expect_same(g(in), net(in));
    }
  }
}

TEST_CASE("multi-output graphs share their common nodes; identity outputs; DOT") {
  Tensor a = make({4, 5}, dtypes::f32), bias = make({5}, dtypes::f32);
  Tensor x = symbol_like(a);
  Tensor t = o::exp(x) + bias; // shared by both outputs
  Tensor y1 = t * 2.0, y2 = t - x;
  FlowGraph g = trace_from({y1, y2, x}, {x});
  CHECK(g.nodes().size() == 4); // Exp, Add, Multiply, Subtract: t traced once
  auto outs = g.run({a});
  REQUIRE(outs.size() == 3);
  Tensor te = o::exp(a) + bias;
  expect_same(outs[0], te * 2.0);
  expect_same(outs[1], te - a);
  expect_same(outs[2], a);
  CHECK_ERROR_HAS(g(a), "3 outputs; call run()");
  std::string dot = g.dot();
  CHECK(dot.rfind("digraph FlowGraph {", 0) == 0);
  CHECK(dot.find("in0 -> n0") != std::string::npos);
  CHECK(dot.find("out2") != std::string::npos);
}

TEST_CASE("attention and a template matmul trace as one node each") {
  Tensor q = make({1, 2, 5, 8}, dtypes::f32), k = make({1, 2, 7, 8}, dtypes::f32), v = make({1, 2, 7, 8}, dtypes::f32);
  Tensor qs = symbol_like(q, "q");
  Tensor out = o::scaled_dot_product_attention(qs, k, v, std::nullopt, true);
  REQUIRE(out.trace());
  CHECK(out.trace().op->name() == "ScaledDotProductAttention");
  FlowGraph g = trace_from(out);
  CHECK(g.nodes().size() == 1);
  CHECK(g.str().find("ScaledDotProductAttention(q, c, c_1, is_causal=true)") != std::string::npos);
  expect_same(g(q), o::scaled_dot_product_attention(q, k, v, std::nullopt, true));
}

TEST_CASE("symbolic dimensions: printing and binding from inputs") {
  Tensor x = symbol({"n", 3}, dtypes::f32, "cuda", "x");
  Tensor z = symbol({"n", 2 * Dim("m")}, dtypes::f32, "cuda", "z");
  CHECK(x.signature().rfind("Tensor(shape=(n, 3), dtype='float32', device='cuda:0", 0) == 0);
  CHECK(hidet::sym_shape_str(z.sym_shape()) == "[n, 2*m]");
  CHECK_ERROR_HAS(x.shape(), "has symbolic extents");
  // Operators trace symbolic extents (tests/graph/test_symbolic.cpp) and check them.
  CHECK(o::relu(x).sym_shape() == x.sym_shape());
  CHECK_ERROR_HAS(o::broadcast_to(x, {2, 3}), "a symbolic size only matches itself or 1");
  FlowGraph g = trace_from({x, z}, {x, z});
  CHECK(g.str() == "Graph(x: float32[n, 3][cuda], z: float32[n, 2*m][cuda]){\n  return x, z\n}");
  auto values = g.bind_symbols({make({4, 3}, dtypes::f32), make({4, 6}, dtypes::f32)});
  CHECK(values.at("n") == 4);
  CHECK(values.at("m") == 3); // solved from 2*m = 6
  auto outs = g.run({make({5, 3}, dtypes::f32), make({5, 2}, dtypes::f32)});
  CHECK(outs[1].shape() == std::vector<std::int64_t>{5, 2});
  CHECK_ERROR_HAS(g.run({make({4, 3}, dtypes::f32), make({5, 2}, dtypes::f32)}), "the symbol n is 5 here");
  CHECK_ERROR_HAS(g.run({make({4, 3}, dtypes::f32), make({4, 3}, dtypes::f32)}), "2*m cannot equal");
  Tensor u = symbol({"n", "n"}, dtypes::f32, "cuda", "u");
  CHECK_ERROR_HAS(trace_from(u, {u}).run({make({2, 3}, dtypes::f32)}), "the symbol n is 3 here (dim 1) but 2 from input 0 'u' dim 0");
}

TEST_CASE("bad graphs and bad inputs name what was wrong") {
  Tensor a = make({2, 3}, dtypes::f32);
  Tensor x = symbol_like(a, "x"), other = symbol_like(a, "other");
  Tensor y = o::relu(x) + other;
  CHECK_ERROR_HAS(trace_from(a), "holds data");
  CHECK_ERROR_HAS(trace_from(y, {x}), "symbolic tensor 'other'");
  CHECK_ERROR_HAS(trace_from(y, {x, x}), "given twice");
  CHECK_ERROR_HAS(trace_from(y, {o::relu(x)}), "is output 0 of Relu");
  CHECK_ERROR_HAS(trace_from(y, {a}), "is not symbolic");
  FlowGraph g = trace_from(y, {x, other});
  CHECK_ERROR_HAS(g.run({a}), "graph expects 2 inputs");
  CHECK_ERROR_HAS(g.run({a, make({2, 4}, dtypes::f32)}), "graph input 1 'other'");
  CHECK_ERROR_HAS(g.run({a, make({2, 4}, dtypes::f32)}), "dim 1 must be 3");
  CHECK_ERROR_HAS(g.run({a, make({2, 3}, dtypes::f16)}), "got dtype float16");
  CHECK_ERROR_HAS(g.run({a, a.cpu()}), "got a tensor on cpu");
  CHECK_ERROR_HAS(g.run({a, symbol({"n", 3}, dtypes::f32)}), "expected a tensor with data (or a symbolic tensor of constant shape)");
  CHECK(g.run({a, x})[0].is_symbolic()); // a symbolic input of constant shape traces the graph again
  // A symbolic tensor holds no data.
  CHECK_ERROR_HAS(y.to_vector<float>(), "the tensor is symbolic");
  CHECK_ERROR_HAS(y.to_double_vector(), "output 0 of Add");
  // Shape errors surface while tracing, as in eager mode.
  CHECK_ERROR_HAS(o::matmul(x, x), "cannot multiply shapes");
  // The graph still runs after all these errors.
  expect_same(g.run({a, a})[0], o::relu(a) + a);
}

TEST_CASE("constant folding at trace time: work on constants runs at once") {
  Tensor a = make({4, 6}, dtypes::f32), w = make({5, 6}, dtypes::f32), b = make({5}, dtypes::f32);
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from(o::linear(x, w, b) * o::exp(b)); // w's transpose and exp(b) are constants
  INFO(g.str());
  REQUIRE(g.nodes().size() == 3); // Matmul, Add, Mul
  CHECK(g.nodes()[0]->name() == "Matmul");
  CHECK(g.constants().size() == 3);
  CHECK(g.constants()[0].shape() == std::vector<std::int64_t>{6, 5}); // the transposed weight
  expect_same(g(a), o::linear(a, w, b) * o::exp(b));
}

TEST_CASE("a graph that updates an input in place: printed, run, specialized, DOT") {
  // A cache written at positions (a model's keys), read through its new value.
  Tensor c0 = make({8, 4}, dtypes::f32), k = make({3, 4}, dtypes::f32);
  Tensor p = asarray<std::int64_t>({5, 0, 2});
  Tensor cache = symbol_like(c0, "cache"), pos = symbol_like(p, "pos"), key = symbol_like(k, "k");
  Tensor y = o::index_put(cache, {pos}, key);
  Tensor s = o::sum(y, {1});
  FlowGraph g({s}, {cache, pos, key}, {{cache, y}});
  CHECK(g.updated_inputs() == std::vector<std::size_t>{0});
  CHECK(g.str() ==
        "Graph(cache: float32[8, 4][cuda], pos: int64[3][cuda], k: float32[3, 4][cuda]){\n"
        "  c = Constant(int64[8][cuda])\n" // the device's error record (runtime/device_errors.hpp)
        "  x: float32[8, 4][cuda] = IndexPut(cache, pos, k, c, axes=[0], accumulate=false)\n"
        "  x_1: float32[8][cuda] = Sum(x, axes=[1], keepdims=0)\n"
        "  cache <- x\n"
        "  return x_1\n"
        "}");
  CHECK(g.dot().find("-> in0 [style=dashed") != std::string::npos);
  Tensor c = c0.clone();
  Tensor want = o::index_put(c0, {p}, k);
  std::vector<Tensor> outs = g.run({c, p, k});
  expect_same(c, want); // written into the caller's tensor
  expect_same(outs[0], o::sum(want, {1}));
  // A second run starts from the first's cache.
  Tensor k2 = make({3, 4}, dtypes::f32), p2 = asarray<std::int64_t>({7, 5, 1});
  g.run({c, p2, k2});
  expect_same(c, o::index_put(want, {p2}, k2));

  // A graph of updates only; an update by a constant; the cache read before and after its update.
  Tensor count = symbol({}, dtypes::i64, Device::cuda(), "count");
  Tensor zero = hidet::full({8, 4}, 0.0, dtypes::f32);
  FlowGraph g2({}, {count, cache}, {{count, count + 1}, {cache, zero}});
  Tensor n = hidet::full({}, 41, dtypes::i64), c2 = c0.clone();
  CHECK(g2.run({n, c2}).empty());
  CHECK(n.to_double_vector() == std::vector<double>{42});
  CHECK(c2.to_double_vector() == std::vector<double>(32, 0.0));
  CHECK(g2.str().find("  cache <- c\n  return\n}") != std::string::npos);

  // An output that views the old value keeps it: it is copied before the cache is written.
  FlowGraph g3({cache.reshape({32})}, {cache, pos, key}, {{cache, y}});
  Tensor c3 = c0.clone();
  expect_same(g3.run({c3, p, k})[0], c0.reshape({32}));
  expect_same(c3, want);

  // specialize() keeps the updates; run_functional() returns the values and writes nothing.
  FlowGraph gs = g.specialize({});
  CHECK(gs.updates().size() == 1);
  CHECK(gs.str().find("cache <- x\n") != std::string::npos);
  Tensor c4 = c0.clone();
  std::vector<Tensor> values = g.run_functional({c4, p, k});
  REQUIRE(values.size() == 2);
  expect_same(values[1], want);
  expect_same(c4, c0);
}

TEST_CASE("bad updates of inputs name what was wrong") {
  Tensor cache = symbol({8, 4}, dtypes::f32, Device::cuda(), "cache");
  Tensor y = o::relu(cache);
  CHECK_ERROR_HAS(FlowGraph({y}, {cache}, {{y, y}}),
                  "only a graph input (hidet::symbol(...)) is updated in place");
  CHECK_ERROR_HAS(FlowGraph({y}, {cache}, {{cache, o::sum(y, {1})}}),
                  "must have the input's shape and dtype");
  CHECK_ERROR_HAS(FlowGraph({y}, {cache}, {{cache, y}, {cache, y * 2}}),
                  "input 0 ('cache') is updated twice");
  CHECK_ERROR_HAS(FlowGraph({}, {cache}, {}), "no outputs given");
  Tensor other = symbol({8, 4}, dtypes::f32, Device::cuda(), "other");
  CHECK_ERROR_HAS(FlowGraph({y}, {cache}, {{other, y}}), "'other'");
}
