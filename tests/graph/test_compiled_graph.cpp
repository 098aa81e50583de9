// CompiledGraph (include/hidet/graph/compiled_graph.hpp): graphs run inside one planned
// workspace (GPU when present, else the emulator). Runs on fresh random inputs match the eager
// operators, run after run and on another stream; every allocation but the outputs is served
// from the workspace; no two blocks alive at the same node overlap; outputs that alias
// intermediates stay outside the workspace; bad inputs give ValueErrors and leave the graph usable.
#include "../ops/ops_test_util.hpp"

#include "hidet/graph.hpp"
#include "hidet/runtime/command_hook.hpp"
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

namespace {
/// The device work of the runs while it lives: kernels by name, copies by size.
struct SeenCommands : runtime::detail::CommandHook {
  std::vector<std::string> kernels;
  std::vector<std::size_t> copies;
  runtime::detail::CommandHook *saved;
  SeenCommands() : saved(runtime::detail::command_hook()) {
    runtime::detail::command_hook() = this;
  }
  ~SeenCommands() override { runtime::detail::command_hook() = saved; }
  void kernel(const KernelHandle &k, backend::Dim3, backend::Dim3, std::size_t,
              const std::vector<backend::KernelArg> &,
              const std::vector<const TensorMap *> &) override {
    kernels.push_back(k.name());
  }
  void copy(void *, Device, const void *, Device, std::size_t n) override { copies.push_back(n); }
  void fill(void *, Device, std::uint8_t, std::size_t) override {}
};

/// Positions `n` distinct rows of `rows` (int64, on the device).
Tensor positions(int n, int rows) {
  std::vector<std::int64_t> all(std::size_t(rows), 0);
  for (int i = 0; i < rows; ++i)
    all[std::size_t(i)] = i;
  std::shuffle(all.begin(), all.end(), g_rng);
  all.resize(std::size_t(n));
  return asarray(all);
}
} // namespace

TEST_CASE("an update in place writes a cache where it lives") {
  // Keys of a decoder's cache written at positions and read through the new value; returned too.
  Tensor c0 = make({33, 20}, dtypes::f32);
  Tensor cache = symbol_like(c0, "cache"), pos = symbol({3}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({3, 20}, dtypes::f32, Device::cuda(), "k");
  Tensor y = o::index_put(cache, {pos}, key);
  FlowGraph g({o::sum(o::tanh(y), {1}), y}, {cache, pos, key}, {{cache, y}});
  graph::CompiledGraph cg(g);
  CHECK(cg.stats().updates_in_place == 1);
  CHECK(cg.stats().updates_copied == 0);
  CHECK(cg.memory_plan().tensors.size() ==
        1); // tanh's output alone: the new cache is not in the workspace
  Tensor c = c0.clone(), want = c0.clone();
  for (int step = 0; step < 3; ++step) {
    Tensor p = positions(3, 33), k = make({3, 20}, dtypes::f32);
    std::vector<Tensor> outs;
    {
      SeenCommands seen;
      outs = cg.run({c, p, k});
      // Only the 3 rows are stored: no copy of the cache, by a kernel or a device copy.
      for (const auto &name : seen.kernels)
        CHECK(name.find("_copy") == std::string::npos);
      CHECK(std::count(seen.kernels.begin(), seen.kernels.end(), "index_put_update") == 1);
      for (std::size_t n : seen.copies)
        CHECK(n < c0.nbytes());
    }
    want = o::index_put(want, {p}, k);
    expect_same(c, want);
    expect_same(outs[0], o::sum(o::tanh(want), {1}));
    CHECK(outs[1].data_ptr() == c.data_ptr()); // the new value is the cache itself
    CHECK(cg.stats().unplanned == 0);
  }
}

TEST_CASE("an update is copied when the old value is read after it, or the inputs overlap") {
  Tensor c0 = make({9, 5}, dtypes::f32), p = asarray<std::int64_t>({4, 1}),
         k = make({2, 5}, dtypes::f32);
  Tensor cache = symbol_like(c0, "cache"), pos = symbol_like(p, "pos"), key = symbol_like(k, "k");
  Tensor y = o::index_put(cache, {pos}, key);
  // The old cache, scaled by a value of the new one: read after the update is made.
  Tensor old_read = cache * o::mean(y, {0, 1});
  graph::CompiledGraph cg(FlowGraph({old_read}, {cache, pos, key}, {{cache, y}}));
  CHECK(cg.stats().updates_copied == 1);
  Tensor c = c0.clone();
  Tensor want_y = o::index_put(c0, {p}, k);
  expect_same(cg.run({c, p, k})[0], c0 * o::mean(want_y, {0, 1}));
  expect_same(c, want_y);

  // In place, unless the caller gives the cache for another input too (read after the update).
  Tensor other = symbol_like(c0, "other");
  graph::CompiledGraph cg2(
      FlowGraph({other * o::mean(y, {0, 1})}, {cache, other, pos, key}, {{cache, y}}));
  CHECK(cg2.stats().updates_in_place == 1);
  Tensor c2 = c0.clone();
  expect_same(cg2.run({c2, c2, p, k})[0], c0 * o::mean(want_y, {0, 1}));
  expect_same(c2, want_y);
  Tensor c3 = c0.clone(), o3 = c0.clone();
  expect_same(cg2.run({c3, o3, p, k})[0], c0 * o::mean(want_y, {0, 1}));
  expect_same(c3, want_y);
  expect_same(o3, c0);
  // A cache at an odd offset (a view into a larger buffer): written by a copy, nothing else touched.
  Tensor big = make({9 * 5 + 1}, dtypes::f32), big0 = big.clone();
  Tensor odd(big.storage(), {9, 5}, dtypes::f32, big.offset() + 4);
  Tensor odd0 = odd.clone();
  cg2.run({odd, o3, p, k});
  expect_same(odd, o::index_put(odd0, {p}, k));
  CHECK(big.to_double_vector()[0] == big0.to_double_vector()[0]);

  // A value made by a node that reads the cache and has no in-place kernel: copied. One made from
  // what earlier nodes read of it: made in place.
  graph::CompiledGraph cg3(FlowGraph({o::sum(cache, {1})}, {cache}, {{cache, o::relu(cache)}}));
  Tensor c4 = c0.clone();
  expect_same(cg3.run({c4})[0], o::sum(c0, {1}));
  expect_same(c4, o::relu(c0));
  CHECK(cg3.stats().updates_copied == 1);
  graph::CompiledGraph cg4(FlowGraph({o::sum(cache, {1})}, {cache}, {{cache, cache * 2 + 1}}));
  Tensor c5 = c0.clone();
  expect_same(cg4.run({c5})[0], o::sum(c0, {1}));
  expect_same(c5, c0 * 2 + 1);
  CHECK(cg4.stats().updates_in_place == 1);
}

TEST_CASE("run_unplanned: a graph compiled at one value of its symbols runs at others") {
  Tensor w = make({6, 3}, dtypes::f32, -0.5, 0.5);
  Tensor x = symbol({"n", 6}, dtypes::f32, "cuda", "x");
  FlowGraph g({o::softmax(o::matmul(x, w), -1), o::sum(o::exp(x), {0})}, {x});
  graph::CompiledGraph cg(g, {{"n", 4}});
  for (std::int64_t n : {3, 9, 4, 1}) {
    INFO("n=" << n);
    Tensor a = make({n, 6}, dtypes::f32);
    auto got = cg.run_unplanned({a}, current_stream());
    expect_same(got[0], o::softmax(o::matmul(a, w), -1), 2);
    expect_same(got[1], o::sum(o::exp(a), {0}), 2);
  }
  CHECK(cg.stats().unplanned_runs == 4);
  CHECK(cg.stats().runs == 4);
  Tensor a4 = make({4, 6}, dtypes::f32);
  expect_same(cg.run({a4})[0], o::softmax(o::matmul(a4, w), -1), 2); // at its values: planned
  expect_error([&] { cg.run({make({3, 6}, dtypes::f32)}); }, {"compiled at n=4", "n=3"});
  expect_error(
      [&] {
        cg.run_unplanned({make({3, 5}, dtypes::f32)}, current_stream());
      },
      {"dim 1 must be 6"});
  expect_error([&] { cg.run_unplanned({a4, a4}, current_stream()); }, {"graph expects 1 input"});

  // An update in place at other sizes: written by a copy, as the plan is for the compiled ones.
  Tensor cache = symbol({10, 4}, dtypes::f32, Device::cuda(), "cache");
  Tensor pos = symbol({"s"}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({"s", 4}, dtypes::f32, Device::cuda(), "k");
  Tensor y = o::index_put(cache, {pos}, key);
  graph::CompiledGraph cc(FlowGraph({o::sum(y, {1})}, {cache, pos, key}, {{cache, y}}), {{"s", 2}});
  Tensor c0 = make({10, 4}, dtypes::f32), c = c0.clone(), k = make({3, 4}, dtypes::f32);
  Tensor p = asarray<std::int64_t>({7, 0, 3});
  Tensor want = o::index_put(c0, {p}, k);
  expect_same(cc.run_unplanned({c, p, k}, current_stream())[0], o::sum(want, {1}));
  expect_same(c, want);
}

TEST_CASE("updates of a cache and its length, each in its own input") {
  // Keys, values and their length (a 0-d counter), all updated: transformers' StaticCache
  // (index_copy_ twice, cumulative_length.add_). Keys + 1 and values * 2 have no in-place kernel:
  // copied after the nodes ran, so both stay alive to the end (the plan once let the second
  // reuse the first's block: each input then received the other's bytes). The counter's value is
  // made in its memory (one element, one thread).
  Tensor k0 = make({3, 2, 5, 4}, dtypes::f32), v0 = make({3, 2, 5, 4}, dtypes::f32),
         n0 = asarray<std::int64_t>({7}).reshape({}), x0 = make({3, 4}, dtypes::f32);
  Tensor keys = symbol_like(k0, "keys"), values = symbol_like(v0, "values"), cum = symbol_like(n0, "cum"),
         x = symbol_like(x0, "x");
  for (int order = 0; order < 3; ++order) {
    CAPTURE(order);
    std::vector<InputUpdate> ups{{keys, keys + 1.0},
                                 {values, values * 2.0},
                                 {cum, cum + asarray<std::int64_t>({8}).reshape({})}};
    std::rotate(ups.begin(), ups.begin() + order, ups.end());
    graph::CompiledGraph cg(FlowGraph({o::sum(x, {1})}, {keys, values, cum, x}, ups));
    CHECK(cg.stats().updates_in_place == 1);
    CHECK(cg.stats().updates_copied == 2);
    Tensor k = k0.clone(), v = v0.clone(), n = n0.clone();
    expect_same(cg.run({k, v, n, x0})[0], o::sum(x0, {1}));
    expect_same(k, k0 + 1.0);
    expect_same(v, v0 * 2.0);
    CHECK(n.to_double_vector()[0] == 15);
  }
}
