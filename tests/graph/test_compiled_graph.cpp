// CompiledGraph (include/hidet/graph/compiled_graph.hpp): graphs run inside one planned
// workspace (GPU when present, else the emulator). Runs on fresh random inputs match the eager
// operators, run after run and on another stream; every allocation but the outputs is served
// from the workspace; no two blocks alive at the same node overlap; outputs that alias
// intermediates stay outside the workspace; bad inputs give ValueErrors and leave the graph usable.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"
#include "memory_plan_check.hpp"

using namespace ops_test;


TEST_CASE("a chain of operators runs in a workspace of a few tensors") {
  // Unfused, so that every operator writes an intermediate (odd sizes: partial tiles).
  Tensor a = make({37, 53}, dtypes::f32), w = make({53, 29}, dtypes::f32, -0.5, 0.5), bias = make({29}, dtypes::f32);
  auto net = [&](const Tensor &x) {
    Tensor h = x;
    for (int i = 0; i < 6; ++i) h = o::tanh(h * 0.9 + 0.1);
    Tensor y = o::matmul(h, w) + bias;
    return o::softmax(o::relu(y) - 0.5, -1);
  };
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from(net(x));
  graph::CompiledGraph cg(g);
  INFO(cg.memory_plan().str());
  auto st = cg.stats();
  CHECK(st.nodes == g.nodes().size());
  CHECK(st.planned >= g.nodes().size() - 1); // every intermediate (the last node's output is returned)
  CHECK(st.unplanned == 0);
  check_plan(cg.memory_plan());
  // A chain needs about two tensors at a time, not all of them.
  CHECK(cg.workspace_bytes() * 3 < cg.memory_plan().total_bytes);
  for (int trial = 0; trial < 3; ++trial) {
    Tensor in = make({37, 53}, dtypes::f32);
    expect_same(cg(in), net(in));
    CHECK(cg.stats().unplanned == 0);
  }
  // A run asks the allocator for its output alone, served from the cache.
  auto before = memory_stats(a.device());
  Tensor out = cg(a);
  auto after = memory_stats(a.device());
  CHECK(after.allocations - before.allocations == 1);
  CHECK(after.raw_allocations == before.raw_allocations);
}

TEST_CASE("outputs that alias intermediates, several outputs, another stream") {
  Tensor a = make({6, 10}, dtypes::f16), c = make({10}, dtypes::f16);
  auto net = [&](const Tensor &x) {
    Tensor h = o::exp(x * 0.25) + c;        // read by two operators and returned reshaped
    Tensor view = h.reshape({3, 20});       // a view of h: h must stay out of the workspace
    Tensor s = o::sum(o::sigmoid(h), {1});  // an intermediate before the reduction
    return std::vector<Tensor>{view, s, o::neg(h)};
  };
  Tensor x = symbol_like(a);
  graph::CompiledGraph cg(trace_from(net(x)));
  check_plan(cg.memory_plan());
  Stream stream = Stream::create(a.device());
  for (int trial = 0; trial < 2; ++trial) {
    Tensor in = make({6, 10}, dtypes::f16);
    auto want = net(in);
    auto got = trial == 0 ? cg.run({in}) : cg.run({in}, stream);
    stream.synchronize();
    REQUIRE(got.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) expect_same(got[i], want[i], 2);
  }
  // The returned view keeps its values after later runs (it is not in the workspace).
  Tensor in = make({6, 10}, dtypes::f16);
  auto first = cg.run({in});
  auto want0 = first[0].to_double_vector();
  (void)cg.run({make({6, 10}, dtypes::f16)});
  CHECK(first[0].to_double_vector() == want0);
}

TEST_CASE("a CUDA graph of a compiled graph shares its workspace") {
  Tensor a = make({33, 65}, dtypes::f32);
  auto net = [&](const Tensor &x) { return o::layer_norm(o::gelu(x * 2.0) + x, 1); };
  Tensor x = symbol_like(a);
  graph::CompiledGraph cg = graph::compile(graph::optimize(trace_from(net(x))));
  graph::CudaGraph replay = cg.cuda_graph();
  for (int trial = 0; trial < 2; ++trial) {
    Tensor in = make({33, 65}, dtypes::f32);
    expect_same(replay.run({in})[0], net(in), 2);
    expect_same(cg(in), net(in), 2);
  }
}

TEST_CASE("compiled graph errors") {
  Tensor n = symbol({"n", 6}, dtypes::f32, "cuda", "x");
  expect_error([&] { graph::CompiledGraph cg(trace_from(n, {n})); },
               {"graph input 0 'x' has the symbolic shape [n, 6]", "ShapeDispatch"});
  Tensor a = make({4, 6}, dtypes::f32);
  Tensor x = symbol_like(a);
  graph::CompiledGraph cg(trace_from(o::exp(x) + 1.0));
  expect_error([&] { cg.run({make({4, 5}, dtypes::f32)}); }, {"dim 1 must be 6"});
  expect_error([&] { cg.run({a, a}); }, {"graph expects 1 input"});
  expect_error([&] { cg.run({make({4, 6}, dtypes::f16)}); }, {"float16"});
  expect_same(cg(a), o::exp(a) + 1.0); // still usable
}
