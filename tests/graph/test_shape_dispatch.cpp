// ShapeDispatch (include/hidet/graph/shape_dispatch.hpp): a model with symbolic sizes compiled
// once per distinct shape (GPU when present, else the emulator): results against the eager model
// at each shape, the cache (a shape seen again compiles nothing; the least recently used shape is
// dropped past max_shapes), CUDA-graph replay per shape, and errors naming the input.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"

using namespace ops_test;


TEST_CASE("a model compiled once per batch size") {
  Tensor w = make({19, 7}, dtypes::f32, -0.5, 0.5), bias = make({7}, dtypes::f32);
  auto net = [&](const Tensor &x, const Tensor &mask) { return o::softmax(o::matmul(x, w) + bias + mask, -1); };
  graph::ShapeDispatch model([&](const std::vector<Tensor> &xs) { return std::vector<Tensor>{net(xs[0], xs[1])}; },
                             {symbol({"n", 19}, dtypes::f32, "cuda", "x"), symbol({"n", 7}, dtypes::f32, "cuda", "mask")});
  for (std::int64_t n : {3, 5, 3, 5, 1}) {
    Tensor x = make({n, 19}, dtypes::f32), mask = make({n, 7}, dtypes::f32);
    expect_same(model(x, mask), net(x, mask), 2);
  }
  CHECK(model.num_compilations() == 3);
  CHECK(model.num_compiled() == 3);
  CHECK(model.compiled_for({make({5, 19}, dtypes::f32), make({5, 7}, dtypes::f32)}).graph().inputs()[0].shape() ==
        std::vector<std::int64_t>{5, 19});
  CHECK(model.num_compilations() == 3);
  // Errors name the input; the model stays usable.
  expect_error([&] { model(make({4, 19}, dtypes::f32), make({5, 7}, dtypes::f32)); },
               {"'mask'", "the symbol n is 5 here", "4 from input 0 'x'"});
  expect_error([&] { model(make({4, 18}, dtypes::f32), make({4, 7}, dtypes::f32)); }, {"'x'", "dim 1 must be 19"});
  expect_error([&] { model(make({4, 19}, dtypes::f16), make({4, 7}, dtypes::f32)); }, {"'x'", "float16"});
  expect_error([&] { model.run({make({4, 19}, dtypes::f32)}); }, {"expects 2 inputs"});
  Tensor x = make({2, 19}, dtypes::f32), mask = make({2, 7}, dtypes::f32);
  expect_same(model(x, mask), net(x, mask), 2);
}

TEST_CASE("at most max_shapes kept; CUDA graphs per shape") {
  graph::DispatchOptions opts;
  opts.max_shapes = 1;
  opts.cuda_graph = true;
  auto net = [](const Tensor &x) { return o::layer_norm(o::gelu(x) * 2.0, 1); };
  graph::ShapeDispatch model([&](const std::vector<Tensor> &xs) { return std::vector<Tensor>{net(xs[0])}; },
                             {symbol({"b", 33}, dtypes::f16, "cuda", "h")}, opts);
  for (std::int64_t b : {4, 6, 4}) {
    Tensor x = make({b, 33}, dtypes::f16);
    expect_same(model(x), net(x), 2);
    CHECK(model.num_compiled() == 1);
  }
  CHECK(model.num_compilations() == 3);
  expect_error([] { graph::ShapeDispatch m([](const std::vector<Tensor> &xs) { return xs; }, {}); },
               {"at least one input"});
  expect_error(
      [] { graph::ShapeDispatch m([](const std::vector<Tensor> &xs) { return xs; }, {make({2}, dtypes::f32)}); },
      {"input 0 must be a symbolic graph input"});
}
