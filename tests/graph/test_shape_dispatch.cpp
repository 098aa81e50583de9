// ShapeDispatch (include/hidet/graph/shape_dispatch.hpp): a model with symbolic sizes compiled
// once per distinct shape (GPU when present, else the emulator): results against the eager model
// at each shape, the cache (a shape seen again compiles nothing; the least recently used shape is
// dropped past max_shapes), CUDA-graph replay per shape, and errors naming the input.
#include "../ops/ops_test_util.hpp"

#include <filesystem>
#include <unistd.h>

#include "hidet/graph.hpp"
#include "hidet/ops/conv.hpp"
#include "hidet/ops/matmul_templates.hpp"

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

TEST_CASE("shape_generic f16: the products' templates, their epilogues and attention build once for every n and s") {
  const std::int64_t D = 64, F = 40, H = 2;
  Tensor w1 = make({D, F}, dtypes::f16, -0.3, 0.3), b1 = make({F}, dtypes::f16);
  Tensor w2 = make({F, D}, dtypes::f16, -0.3, 0.3), wq = make({D, D}, dtypes::f16, -0.3, 0.3);
  auto net = [&](const Tensor &x) {
    const SymShape xs = x.sym_shape();
    Tensor f = o::matmul(o::gelu(o::matmul(x, w1) + b1), w2);                      // bias + gelu, then a residual
    Tensor y = x + f;
    Tensor q = o::permute(o::matmul(y, wq).reshape(SymShape{xs[0], xs[1], H, D / H}), {0, 2, 1, 3}); // heads first
    Tensor kv = o::permute(y.reshape(SymShape{xs[0], xs[1], H, D / H}), {0, 2, 1, 3});
    Tensor att = o::scaled_dot_product_attention(q, kv, kv, std::nullopt, true);  // [n, H, s, D / H]
    return std::vector<Tensor>{y, q, att};
  };
  graph::DispatchOptions opts;
  opts.shape_generic = true;
  graph::ShapeDispatch model([&](const std::vector<Tensor> &xs) { return net(xs[0]); },
                             {symbol({"n", "s", D}, dtypes::f16, "cuda", "x")}, opts);
  std::string text = model.generic_graph().str();
  INFO(text);
  CHECK(text.find("FusedMatmul") != std::string::npos);
  CHECK(text.find("ScaledDotProductAttention") != std::string::npos);
  bool first = true;
  // Rows n*s past 64 and sequences past 8: products with few rows (decoding) and attention over at
  // most 8 queries take kernels of their own (the few-rows product, the decode attention), one
  // build per such range; these sizes stay in the general one.
  for (auto [n, s] : {std::pair<std::int64_t, std::int64_t>{2, 33}, {1, 70}, {3, 23}, {1, 97}, {2, 33}}) {
    INFO("n=" << n << ", s=" << s);
    Tensor x = make({n, s, D}, dtypes::f16);
    std::size_t tasks = o::compiled_task_count(), products = o::matmul_rows_builds(),
                attention = o::attention_symbolic_builds();
    auto got = model.run({x});
    if (first) {
      CHECK(o::matmul_rows_builds() > products); // the products, each with its epilogue, over rows n*s
      CHECK(o::attention_symbolic_builds() == attention + 1);
    } else { // a new shape builds no kernel at all
      CHECK(o::compiled_task_count() == tasks);
      CHECK(o::matmul_rows_builds() == products);
      CHECK(o::attention_symbolic_builds() == attention);
    }
    first = false;
    auto want = net(x);
    for (std::size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i], 2);
  }
  CHECK(model.num_compilations() == 4);
}

TEST_CASE("shape_generic CNN: convolutions with their batch norms and epilogues build once for every batch") {
  // conv + batch norm (folded) + relu; a depthwise conv + bias + residual; a strided conv; pooling
  // and a linear head. f16 (tensor cores, channels-last: convert_layout_nhwc) and f32 (FMA, NCHW).
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    INFO("dtype " << dt);
    const std::int64_t C = 16, O = 24;
    Tensor w1 = make({O, C, 3, 3}, dt, -0.3, 0.3), mean = make({O}, dt), var = make({O}, dt, 0.5, 2),
           gamma = make({O}, dt), beta = make({O}, dt);
    Tensor wd = make({O, 1, 3, 3}, dt, -0.5, 0.5), bd = make({O}, dt);
    Tensor w2 = make({O, O, 3, 3}, dt, -0.2, 0.2), wl = make({O, 10}, dt, -0.3, 0.3);
    auto net = [&](const Tensor &x) {
      Tensor h = o::batch_norm(o::conv2d(x, w1, std::nullopt, {1}, {1}), mean, var, gamma, beta).relu();
      Tensor d = o::conv2d(h, wd, bd, {1}, {1}, {1}, O) + h;
      Tensor s2 = o::conv2d(d, w2, std::nullopt, {2}, {1}).relu();
      Tensor pooled = o::adaptive_avg_pool2d(s2, {1, 1}).reshape(SymShape{x.sym_shape()[0], O});
      return std::vector<Tensor>{s2, o::matmul(pooled, wl)};
    };
    graph::DispatchOptions opts;
    opts.shape_generic = true;
    graph::ShapeDispatch model([&](const std::vector<Tensor> &xs) { return net(xs[0]); },
                               {symbol({"n", C, 9, 11}, dt, "cuda", "x")}, opts);
    std::string text = model.generic_graph().str();
    INFO(text);
    CHECK(text.find("BatchNorm") == std::string::npos); // folded into the convolution
    CHECK(text.find("FusedConv2d") != std::string::npos); // relu and the residual stored by the kernels
    if (dt == dtypes::f16) CHECK(text.find("FusedConv2dNhwc") != std::string::npos); // channels-last between them
    bool first = true;
    for (std::int64_t n : {2, 1, 3, 5}) {
      INFO("n=" << n);
      Tensor x = make({n, C, 9, 11}, dt);
      std::size_t tasks = o::compiled_task_count(), convs = o::conv2d_symbolic_builds();
      auto got = model.run({x});
      if (first) {
        CHECK(o::conv2d_symbolic_builds() >= convs + 3);
      } else { // a new batch builds no kernel
        CHECK(o::compiled_task_count() == tasks);
        CHECK(o::conv2d_symbolic_builds() == convs);
      }
      first = false;
      auto want = net(x);
      for (std::size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i], 4);
    }
  }
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

TEST_CASE("shape_generic: optimized once on the symbols, new shapes build no element-wise kernel") {
  const std::int64_t V = 13, D = 16;
  Tensor emb = make({V, D}, dtypes::f32), w1 = make({D, 24}, dtypes::f32, -0.3, 0.3), b1 = make({24}, dtypes::f32);
  Tensor w2 = make({24, D}, dtypes::f32, -0.3, 0.3), lw = make({D}, dtypes::f32), lb = make({D}, dtypes::f32);
  auto net = [&](const Tensor &ids) {
    Tensor h = o::layer_norm(o::embedding(ids, emb), 1, lw, lb);                  // [n, s, D]
    Tensor f = o::matmul(o::gelu(o::matmul(h, w1) + b1), w2);                      // [n, s, D]
    Tensor y = o::layer_norm(h + f * 0.5, 1, lw, lb);
    return std::vector<Tensor>{o::softmax(y, -1), o::mean(y, {1})};
  };
  graph::DispatchOptions opts;
  opts.shape_generic = true;
  graph::ShapeDispatch model([&](const std::vector<Tensor> &xs) { return net(xs[0]); },
                             {symbol({"n", "s"}, dtypes::i32, "cuda", "ids")}, opts);
  const FlowGraph &g = model.generic_graph();
  std::string text = g.str();
  INFO(text);
  CHECK(text.find("Fused") != std::string::npos); // element-wise chains fused on the symbols
  CHECK(text.find("FusedMatmul") != std::string::npos); // bias and gelu stored by the product's kernel
  CHECK(text.find("[n, s, 16]") != std::string::npos);
  bool first = true;
  for (auto [n, s] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {1, 5}, {3, 2}, {2, 3}}) {
    INFO("n=" << n << ", s=" << s);
    Tensor ids = make({n, s}, dtypes::i32, 0, double(V));
    std::size_t before = o::compiled_task_count();
    auto got = model.run({ids});
    if (!first) CHECK(o::compiled_task_count() == before); // only the matmul templates build per shape
    first = false;
    auto want = net(ids);
    expect_same(got[0], want[0], 2);
    expect_same(got[1], want[1], 2);
  }
  CHECK(model.num_compilations() == 3);
  // The compiled graph of one shape is the generic graph at its values.
  const CompiledGraph &cg = model.compiled_for({make({1, 5}, dtypes::i32, 0, double(V))});
  CHECK(cg.symbol_values() == SymbolValues{{"n", 1}, {"s", 5}});
  CHECK(cg.graph().str() == text);
  expect_error([&] { cg.run({make({2, 5}, dtypes::i32, 0, double(V))}); }, {"compiled at n=1, s=5", "n=2, s=5"});
  // Saved at its symbol values (hidet.torch.export saves each shape of a model this way).
  std::string path = str_cat(std::filesystem::temp_directory_path().string(), "/hidet-generic-", ::getpid(), ".hidet");
  cg.save(path);
  Tensor ids1 = make({1, 5}, dtypes::i32, 0, double(V));
  auto loaded = graph::CompiledGraph::load(path).run({ids1});
  std::filesystem::remove(path);
  expect_same(loaded[0], net(ids1)[0], 2);
  expect_same(loaded[1], net(ids1)[1], 2);
  // Attention rewrites work on the symbols: the attention stores the merged heads itself.
  auto attend = [&](const Tensor &ids) {
    Tensor h = o::layer_norm(o::embedding(ids, emb), 1, lw, lb); // [n, s, D]
    const SymShape hs = h.sym_shape();
    auto heads = [&](const Tensor &t) { return o::permute(t.reshape(SymShape{hs[0], hs[1], 2, D / 2}), {0, 2, 1, 3}); };
    Tensor att = o::permute(o::scaled_dot_product_attention(heads(h), heads(h * 0.5), heads(h), std::nullopt, true),
                            {0, 2, 1, 3});
    return std::vector<Tensor>{h + att.reshape(hs)};
  };
  graph::ShapeDispatch attention_model([&](const std::vector<Tensor> &xs) { return attend(xs[0]); },
                                       {symbol({"n", "s"}, dtypes::i32, "cuda", "ids")}, opts);
  CHECK(attention_model.generic_graph().str().find("ScaledDotProductAttentionHeadsLast") != std::string::npos);
  for (auto [n, s] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {1, 4}}) {
    Tensor x = make({n, s}, dtypes::i32, 0, double(V));
    expect_same(attention_model.run({x})[0], attend(x)[0], 2);
  }
  // Its per-node profile at one shape.
  graph::Profile prof = graph::profile(g, {make({2, 3}, dtypes::i32, 0, double(V))});
  CHECK(prof.nodes.size() == g.nodes().size());
  CHECK(prof.total_ms() > 0);
  // Through optimize(): PassContext::shape_generic.
  Tensor ids = symbol({"n", "s"}, dtypes::i32, "cuda", "ids");
  graph::PassContext ctx;
  ctx.shape_generic = true;
  FlowGraph opt = graph::optimize(trace_from(net(ids), {ids}), ctx);
  CHECK(opt.nodes().size() == 1);
  Tensor a = make({3, 4}, dtypes::i32, 0, double(V));
  auto got = opt.run({a});
  expect_same(got[0], net(a)[0], 2);
  // A symbol without a value is an error naming the input.
  expect_error([&] { CompiledGraph(g, {{"n", 2}}); }, {"graph input 0 'ids'", "s"});
  // CUDA graphs per shape over the shape-generic graph.
  opts.cuda_graph = true;
  graph::ShapeDispatch replayed([&](const std::vector<Tensor> &xs) { return net(xs[0]); },
                                {symbol({"n", "s"}, dtypes::i32, "cuda", "ids")}, opts);
  for (auto [n, s] : {std::pair<std::int64_t, std::int64_t>{2, 2}, {1, 3}, {2, 2}}) {
    Tensor x = make({n, s}, dtypes::i32, 0, double(V));
    expect_same(replayed.run({x})[0], net(x)[0], 2);
  }
  CHECK(replayed.num_compilations() == 2);
  graph::CudaGraph cuda = replayed.compiled_for({make({1, 3}, dtypes::i32, 0, double(V))}).cuda_graph();
  expect_error([&] { cuda.run({make({2, 3}, dtypes::i32, 0, double(V))}); }, {"cuda_graph", "captured at"});
}

TEST_CASE(
    "a graph that updates a cache, per shape, shape-generic, through optimize and CUDA graphs") {
  // A cache of 12 rows written at s positions per call (s symbolic: a prefill, then decode steps).
  Tensor cache = symbol({12, 8}, dtypes::f32, Device::cuda(), "cache");
  Tensor pos = symbol({"s"}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({"s", 8}, dtypes::f32, Device::cuda(), "k");
  Tensor y = o::index_put(cache, {pos}, key);
  FlowGraph g({o::sum(o::exp(y * 0.1), {1})}, {cache, pos, key}, {{cache, y}});
  for (int mode = 0; mode < 4; ++mode) {
    INFO("mode " << mode);
    graph::DispatchOptions opts;
    opts.shape_generic = mode == 1;
    opts.cuda_graph = mode == 2;
    std::optional<graph::ShapeDispatch> dispatch;
    std::optional<FlowGraph> optimized;
    if (mode < 3)
      dispatch.emplace(g, opts);
    else
      optimized = graph::optimize(g); // a graph of one ShapeDispatch node, which updates the cache
    Tensor c0 = make({12, 8}, dtypes::f32), c = c0.clone(), want = c0.clone();
    std::int64_t at = 0;
    for (std::int64_t s : {5, 1, 1, 3}) {
      std::vector<std::int64_t> ps;
      for (std::int64_t i = 0; i < s; ++i)
        ps.push_back(at++);
      Tensor p = asarray(ps), k = make({s, 8}, dtypes::f32);
      Tensor got = dispatch ? dispatch->run({c, p, k})[0] : optimized->run({c, p, k})[0];
      want = o::index_put(want, {p}, k);
      expect_same(c, want);
      expect_same(got, o::sum(o::exp(want * 0.1), {1}));
    }
    if (dispatch) CHECK(dispatch->num_compilations() == 3);
  }
}

namespace {
/// `n` distinct rows of `rows`, in random order (int64).
Tensor distinct_rows(std::int64_t n, std::int64_t rows) {
  std::vector<std::int64_t> all(std::size_t(rows), 0);
  for (std::int64_t i = 0; i < rows; ++i)
    all[std::size_t(i)] = i;
  std::shuffle(all.begin(), all.end(), g_rng);
  all.resize(std::size_t(n));
  return asarray(all);
}
} // namespace

TEST_CASE("buckets: the shapes of a power-of-two bucket share one compiled graph; one run often "
          "gets its own") {
  // A cache of 40 rows written at s positions per call, and a product over the s new rows.
  Tensor w = make({8, 5}, dtypes::f32, -0.5, 0.5);
  Tensor cache = symbol({40, 8}, dtypes::f32, Device::cuda(), "cache");
  Tensor pos = symbol({"s"}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({"s", 8}, dtypes::f32, Device::cuda(), "k");
  Tensor y = o::index_put(cache, {pos}, key);
  FlowGraph g({o::softmax(o::matmul(key, w), -1), o::sum(y, {1})}, {cache, pos, key}, {{cache, y}});
  for (bool cuda_graph : {false, true}) {
    INFO("cuda_graph " << cuda_graph);
    graph::DispatchOptions opts;
    opts.shape_generic = true;
    opts.buckets = true;
    opts.own_plan_after = 2;
    opts.cuda_graph = cuda_graph;
    graph::ShapeDispatch model(g, opts);
    Tensor c = make({40, 8}, dtypes::f32), want = c.clone();
    struct Step {
      std::int64_t s;
      std::size_t compilations, shared;
    };
    // 5: the bucket s <= 8, compiled for 5; 7, 6 and 8 run on it; 7 again: run twice, its own
    // compiled graph; 3: the bucket s <= 4; 12: s <= 16; 1: a bucket of its own.
    for (auto [s, compilations, shared] : std::vector<Step>{{5, 1, 0},
                                                            {7, 1, 1},
                                                            {6, 1, 2},
                                                            {8, 1, 3},
                                                            {7, 2, 3},
                                                            {7, 2, 3},
                                                            {5, 2, 3},
                                                            {3, 3, 3},
                                                            {12, 4, 3},
                                                            {1, 5, 3}}) {
      INFO("s=" << s);
      Tensor p = distinct_rows(s, 40), k = make({s, 8}, dtypes::f32);
      auto got = model.run({c, p, k});
      want = o::index_put(want, {p}, k);
      expect_same(c, want);
      expect_same(got[0], o::softmax(o::matmul(k, w), -1), 2);
      expect_same(got[1], o::sum(want, {1}), 2);
      CHECK(model.num_compilations() == compilations);
      CHECK(model.num_shared_runs() == shared);
    }
    // The bucket's graph is the one compiled for s = 5, which ran 7, 6 and 8 at their sizes.
    auto inputs = [&](std::int64_t s) {
      return std::vector<Tensor>{c, distinct_rows(s, 40), make({s, 8}, dtypes::f32)};
    };
    const CompiledGraph &bucket = model.compiled_for(inputs(6));
    CHECK(bucket.symbol_values() == SymbolValues{{"s", 5}});
    CHECK(bucket.stats().unplanned_runs == 3);
    CHECK(model.compiled_for(inputs(7)).symbol_values() == SymbolValues{{"s", 7}});
    CHECK(model.num_shared_runs() == 3); // compiled_for() runs nothing
  }
}
