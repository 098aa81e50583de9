// Static memory plans (include/hidet/graph/memory_plan.hpp) of traced graphs (tracing runs no
// kernel): on random DAGs of element-wise operators, reductions and concatenations of odd sizes,
// no two tensors alive at the same step overlap, offsets are aligned, the workspace lies between
// the lower bound and the sum of all intermediates, graph outputs are not planned; a chain reuses
// memory; symbolic shapes are refused.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"
#include "memory_plan_check.hpp"

using namespace ops_test;


TEST_CASE("a chain reuses memory; outputs are not planned") {
  Tensor x = symbol({64, 33}, dtypes::f32, "cuda");
  Tensor t = x;
  for (int i = 0; i < 6; ++i) t = o::exp(t) + 1.0;
  FlowGraph g = trace_from(t);
  auto plan = graph::plan_memory(g);
  INFO(plan.str());
  REQUIRE(plan.tensors.size() == 11); // 12 nodes, the last is the output
  check_plan(plan);
  std::size_t one = (64 * 33 * 4 + 255) / 256 * 256;
  CHECK(plan.total_bytes == 11 * one);
  CHECK(plan.workspace_bytes == 2 * one); // a producer and its consumer at a time
  CHECK(plan.str().find("for 11 tensors") != std::string::npos);
}

TEST_CASE("random DAGs: no live overlap, bounds hold") {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial) {
    CAPTURE(trial);
    std::uniform_int_distribution<int> dim(1, 40), pick(0, 4);
    std::int64_t rows = dim(rng), cols = dim(rng);
    Tensor x = symbol({rows, cols}, dtypes::f32, "cuda");
    std::vector<Tensor> pool{x};
    for (int step = 0; step < 12; ++step) {
      std::uniform_int_distribution<std::size_t> any(0, pool.size() - 1);
      Tensor a = pool[any(rng)], b = pool[any(rng)];
      Tensor y;
      switch (pick(rng)) {
      case 0: y = o::relu(a); break;
      case 1: y = a.ndim() == b.ndim() && a.shape() == b.shape() && a.dtype() == b.dtype() ? a + b : o::exp(a); break;
      case 2: y = a.ndim() == 2 ? o::sum(a, {1}, true) + 0.5 : o::tanh(a); break;
      case 3:
        y = a.ndim() == 2 && b.ndim() == 2 && a.shape()[0] == b.shape()[0] && a.dtype() == b.dtype() ? o::concat({a, b}, 1)
                                                                                                   : o::abs(a);
        break;
      default: y = o::cast(a, dtypes::f16); break;
      }
      pool.push_back(y);
    }
    FlowGraph g = trace_from({pool.back(), pool[pool.size() / 2]}, {x});
    auto plan = graph::plan_memory(g);
    check_plan(plan);
  }
}

TEST_CASE("symbolic shapes cannot be planned") {
  Tensor x = symbol({3, 4}, dtypes::f32, "cuda");
  auto same = [](const std::vector<Tensor> &in) { return in; };
  Tensor t = trace_operator("Grow", {x}, "", {{SymShape{"n", 4}, dtypes::f32, Device::cuda()}}, same)[0];
  Tensor y = trace_operator("Use", {t}, "", {{SymShape{3, 4}, dtypes::f32, Device::cuda()}}, same)[0];
  expect_error([&] { graph::plan_memory(trace_from(y)); }, {"graph node 0 (Grow)", "symbolic shape [n, 4]"});
}
