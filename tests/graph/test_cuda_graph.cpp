// CudaGraph (include/hidet/graph/cuda_graph.hpp): on a GPU the flow graph is captured once and
// replayed with one launch; on the emulator it is re-run. Either way each run on fresh random
// inputs matches the eager operators, the outputs are the same static tensors every run, and bad
// inputs or symbolic shapes give ValueErrors.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"

using namespace ops_test;


TEST_CASE("quick start: optimize, capture, replay") {
  Tensor a = make({2, 3}, dtypes::f32), b = make({3, 2}, dtypes::f32), c = make({2}, dtypes::f32);
  Tensor x = symbol_like(a);
  FlowGraph opt = graph::optimize(trace_from(o::matmul(x, b) + c));
  graph::CudaGraph cg = opt.cuda_graph();
  CHECK(cg.captured() == !runtime::cuda_emulated());
  REQUIRE(cg.inputs().size() == 1);
  Tensor y2 = cg.run({a})[0];
  expect_same(y2, o::matmul(a, b) + c);
  void *out_ptr = y2.data_ptr();
  for (int trial = 0; trial < 3; ++trial) {
    Tensor a2 = make({2, 3}, dtypes::f32);
    Tensor y = cg.run({a2})[0];
    CHECK(y.data_ptr() == out_ptr); // the static output, overwritten by each run
    expect_same(y, o::matmul(a2, b) + c);
  }
}

TEST_CASE("a fused network replays on fresh inputs (f16, odd shapes)") {
  Tensor s = make({3, 5, 37}, dtypes::f16), mask = make({5, 37}, dtypes::f16);
  Tensor w = make({37, 19}, dtypes::f16, -0.3, 0.3), gamma = make({19}, dtypes::f16), beta = make({19}, dtypes::f16);
  auto net = [&](const Tensor &x) {
    Tensor p = o::softmax(x * 0.125 + mask, -1);
    Tensor h = o::matmul(p, w);
    return o::layer_norm(o::relu(h) + 1.0, 1, gamma, beta);
  };
  Tensor x = symbol_like(s);
  FlowGraph opt = graph::optimize(trace_from(net(x)));
  graph::CudaGraph cg(opt);
  for (int trial = 0; trial < 3; ++trial) {
    Tensor in = make({3, 5, 37}, dtypes::f16);
    expect_same(cg.run({in})[0], net(in), 2);
  }
  // Writing the static input in place and replaying.
  Tensor in = make({3, 5, 37}, dtypes::f16);
  runtime::detail::copy_bytes(cg.inputs()[0].data_ptr(), in.device(), in.is_host_memory(), in.data_ptr(),
                              in.device(), in.is_host_memory(), in.nbytes());
  expect_same(cg.run()[0], net(in), 2);
}

TEST_CASE("CUDA graph errors") {
  Tensor a = make({4, 6}, dtypes::f32);
  Tensor n = symbol({"n", 6}, dtypes::f32, "cuda", "x");
  expect_error([&] { graph::CudaGraph cg(trace_from(n, {n})); }, {"symbolic shape [n, 6]", "'x'"});
  Tensor x = symbol_like(a);
  graph::CudaGraph cg = trace_from(o::exp(x)).cuda_graph();
  expect_error([&] { cg.run({make({4, 5}, dtypes::f32)}); }, {"dim 1 must be 6"});
  expect_error([&] { cg.run({a, a}); }, {"graph expects 1 input"});
  expect_same(cg.run({a})[0], o::exp(a)); // still usable
}

TEST_CASE("a CUDA graph updates a cache captured where it lives") {
  Tensor c0 = make({17, 6}, dtypes::f16);
  Tensor cache = symbol_like(c0, "cache"), pos = symbol({2}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({2, 6}, dtypes::f16, Device::cuda(), "k");
  Tensor y = o::index_put(cache, {pos}, key);
  graph::CompiledGraph compiled(FlowGraph({o::sum(y, {1})}, {cache, pos, key}, {{cache, y}}));
  Tensor c = c0.clone(), want = c0.clone();
  graph::CudaGraph cg(compiled, {c, Tensor(), Tensor()});
  CHECK(cg.inputs()[0].data_ptr() == c.data_ptr());
  expect_same(c, c0); // capturing updated nothing
  for (int step = 0; step < 3; ++step) {
    Tensor p = asarray<std::int64_t>({2 * step, 2 * step + 7}), k = make({2, 6}, dtypes::f16);
    Tensor s = cg.run({c, p, k})[0];
    want = o::index_put(want, {p}, k);
    expect_same(c, want);
    expect_same(s, o::sum(want, {1}));
  }
  // Another tensor: copied in, updated, copied back.
  Tensor other = c0.clone();
  Tensor p = asarray<std::int64_t>({3, 4}), k = make({2, 6}, dtypes::f16);
  cg.run({other, p, k});
  expect_same(other, o::index_put(c0, {p}, k));
  // A buffer of another shape is refused.
  expect_error(
      [&] {
        graph::CudaGraph bad(compiled, {make({3, 6}, dtypes::f16)});
      },
      {"cuda_graph: the buffer given for graph input 0 'cache'"});
}
