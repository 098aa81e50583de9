// Graph passes (include/hidet/graph/passes.hpp), on the GPU when present, else on the emulator:
// prologue fusion of element-wise chains into reductions, row normalizations and other
// element-wise operators, with the fused graph printed in Hidet's form and run against the
// unfused graph and the eager operators on fresh random inputs of odd shapes; what must not fuse
// (a tensor used twice, a graph output, a template operator's input) stays unfused.
#include "../ops/ops_test_util.hpp"

#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>

#include "hidet/graph.hpp"
#include "hidet/ops/matmul_templates.hpp"
#include "hidet/ops/schedule_row.hpp"
#include "hidet/runtime/command_hook.hpp"
#include "hidet/runtime/shared_constants.hpp"

using namespace ops_test;

namespace {
int count_named(const FlowGraph &g, const std::string &prefix) {
  int n = 0;
  for (const auto &op : g.nodes()) n += op->name().rfind(prefix, 0) == 0;
  return n;
}

/// Each of `got` against the same output of `want` (expect_same with `scale`).
void expect_all_same(const std::vector<Tensor> &got, const std::vector<Tensor> &want, double scale = 1) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) expect_same(got[i], want[i], scale);
}
} // namespace

TEST_CASE("an element-wise chain fuses into the reduction after it: one kernel") {
  const std::int64_t rows = 7, cols = 13;
  Tensor a = make({rows, cols}, dtypes::f32), bias = make({cols}, dtypes::f32);
  auto f = [&](const Tensor &x) { return o::sum(o::relu(x + bias), {1}); };
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from(f(x));
  REQUIRE(g.nodes().size() == 3);
  FlowGraph opt = graph::optimize(g);
  REQUIRE(opt.nodes().size() == 1);
  INFO(opt.str());
  CHECK(opt.str() == "Graph(x: float32[7, 13][cuda]){\n"
                     "  c = Constant(float32[13][cuda])\n"
                     "  x_1: float32[7][cuda] = FusedSum(x, c, fused_graph=FlowGraph(Add, Relu, Sum), anchor=2)\n"
                     "  return x_1\n"
                     "}");
  auto before = o::compiled_task_count();
  for (int trial = 0; trial < 2; ++trial) {
    Tensor in = make({rows, cols}, dtypes::f32);
    expect_same(opt(in), f(in));
    expect_same(opt(in), g(in));
  }
  // The fused kernel once, and the three unfused ones that f(in) and g(in) share.
  CHECK(o::compiled_task_count() == before + 4);
  CHECK(g.nodes().size() == 3); // the input graph is unchanged
}

/// graph::optimize(g) is one kernel with no node named `gone`, and computes g's values on `a`.
static void expect_one_kernel_without(const FlowGraph &g, const Tensor &a, const char *gone) {
  FlowGraph opt = graph::optimize(g);
  INFO(opt.str());
  CHECK(opt.nodes().size() == 1);
  CHECK(count_named(opt, gone) == 0);
  expect_same(opt(a), g(a), 2);
}

TEST_CASE("a cast read twice (RMSNorm written out, as transformers does) is recomputed in its readers: one kernel") {
  const std::int64_t rows = 3, cols = 40;
  Tensor a = make({rows, cols}, dtypes::bf16), w = make({cols}, dtypes::bf16);
  auto f = [&](const Tensor &x) {
    Tensor h = o::cast(x, dtypes::f32); // read by the square and by the scaling
    Tensor r = o::rsqrt(o::mean(h * h, {1}, true) + 1e-5);
    return w * o::cast(h * r, dtypes::bf16);
  };
  expect_one_kernel_without(trace_from(f(symbol_like(a))), a, "Cast");
  // A cast that is also a graph output stays, computed once.
  Tensor y = symbol_like(a, "y");
  Tensor hy = o::cast(y, dtypes::f32);
  FlowGraph kept = graph::optimize(trace_from({o::sum(hy * hy, {1}), hy}));
  INFO(kept.str());
  CHECK(count_named(kept, "Cast") == 1);
}

TEST_CASE("a slice read twice (EVA-02's rotary embedding of the tokens after the class token) is recomputed in its readers") {
  // the rotary embedding's rotate_half: the tokens after the first, read by x * cos and by the
  // halves' concatenation; no Slice kernel of its own
  Tensor a = make({2, 9, 16}, dtypes::f16), cosv = make({8, 16}, dtypes::f16), sinv = make({8, 16}, dtypes::f16);
  auto f = [&](const Tensor &x) {
    Tensor t = o::slice(x, {1}, {1}, {9});
    Tensor rot = o::concat({o::neg(o::slice(t, {2}, {8}, {16})), o::slice(t, {2}, {0}, {8})}, 2);
    return o::concat({o::slice(x, {1}, {0}, {1}), t * cosv + rot * sinv}, 1);
  };
  expect_one_kernel_without(trace_from(f(symbol_like(a))), a, "Slice");
}

TEST_CASE("a slice viewed per head and read twice (EVA-02's key out of the fused Q/K/V product) is recomputed too") {
  // [3, 1, 2, 9, 16]: q, k and v of 2 heads; k starts 576 bytes in (not a view: slices_as_views
  // keeps 256-byte alignment) and is viewed as [1, 2, 9, 16]; the tokens after the class token
  // are read by x * cos and by timm's interleaved rotate (a stack of the odd and even lanes): one
  // kernel, no Slice left for the key alone
  Tensor a = make({3, 1, 2, 9, 16}, dtypes::f16), cosv = make({8, 16}, dtypes::f16), sinv = make({8, 16}, dtypes::f16);
  auto f = [&](const Tensor &qkv) {
    Tensor x = o::slice(qkv, {0}, {1}, {2}).reshape({1, 2, 9, 16});
    Tensor t = o::slice(x, {2}, {1}, {9});
    Tensor odd = o::unsqueeze(o::neg(o::slice(t, {3}, {1}, {16}, {2})), 4),
           even = o::unsqueeze(o::slice(t, {3}, {0}, {16}, {2}), 4);
    Tensor rot = o::concat({odd, even}, 4).reshape({1, 2, 8, 16});
    return o::concat({o::slice(x, {2}, {0}, {1}), t * cosv + rot * sinv}, 2);
  };
  FlowGraph g = trace_from(f(symbol_like(a)));
  expect_one_kernel_without(g, a, "Slice");
}

TEST_CASE("prologues fuse into softmax and layer_norm rows; half precision") {
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    Tensor s = make({3, 5, 37}, dt), mask = make({5, 37}, dt), gamma = make({37}, dt), beta = make({37}, dt);
    auto f = [&](const Tensor &x) {
      Tensor p = o::softmax(x * 0.125 + mask, -1);
      return o::layer_norm(o::exp(p) - 1.0, 1, gamma, beta);
    };
    Tensor x = symbol_like(s, "scores");
    FlowGraph g = trace_from(f(x));
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(opt.nodes().size() < g.nodes().size());
    // Two kernels: the softmax's row takes the scale and mask before it, and exp - 1 after it
    // (its epilogue: fuse_operators prefers it while the row-resident schedule holds); the
    // layer_norm's row reads the result.
    CHECK(opt.nodes().size() == 2);
    CHECK(count_named(opt, "FusedSoftmax") == 1);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({3, 5, 37}, dt);
      expect_same(opt(in), g(in), 2);
    }
  }
}

TEST_CASE("an RMSNorm written as transformers writes it (f32 statistics of an f16 row) is one row-resident kernel") {
  // 4096 and 8192 (Llama-3.1-8B and -70B): the estimate of what fusing the mean into its
  // broadcasting consumer recomputes (4096 x 4096 multiply-adds, past kMaxRecomputedReduction)
  // split these into two kernels before the row-resident result was asked first
  for (std::int64_t n : {4096, 8192, 2048, 37}) {
    CAPTURE(n);
    Tensor a = make({1, 1, n}, dtypes::f16), w = make({n}, dtypes::f16);
    auto f = [&](const Tensor &x) {
      Tensor h = o::cast(x, dtypes::f32);
      Tensor r = o::rsqrt(o::mean(h * h, {2}, true) + 1e-6);
      return w * o::cast(h * r, dtypes::f16);
    };
    Tensor x = symbol_like(a, "hidden");
    FlowGraph g = trace_from(f(x));
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    REQUIRE(opt.nodes().size() == 1);
    auto op = std::dynamic_pointer_cast<const ops::TaskOperator>(opt.nodes()[0]);
    REQUIRE(op);
    CHECK(ops::detail::analyze_row_resident(op->task()).has_value());
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({1, 1, n}, dtypes::f16);
      expect_same(opt(in), g(in), 2);
    }
  }
}

TEST_CASE("element-wise consumers of a reduction fuse as its epilogue (gemv + bias + sigmoid, sum + scale + relu)") {
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    Tensor a = make({3, 45}, dt), w = make({29, 45}, dt), bias = make({29}, dt), b2 = make({3}, dt);
    auto f = [&](const Tensor &x) {
      return std::vector<Tensor>{o::sigmoid(o::gemv(x, w) + bias), o::relu(o::sum(x, {1}) * 0.5 + b2)};
    };
    Tensor x = symbol_like(a);
    FlowGraph g = trace_from(f(x), {x});
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(opt.nodes().size() == 2);
    CHECK(count_named(opt, "FusedGemv") == 1);
    CHECK(opt.str().find("fused_graph=FlowGraph(Gemv, Add, Sigmoid), anchor=0") != std::string::npos);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({3, 45}, dt);
      auto got = opt.run({in});
      auto want = f(in);
      expect_same(got[0], want[0], 2);
      expect_same(got[1], want[1], 2);
      // gemv is x @ w^T
      expect_same(o::gemv(in, w), o::matmul(in, o::transpose(w, 0, 1)), 2);
    }
    CHECK_THROWS_AS(o::gemv(a, make({29, 44}, dt)), ValueError); // k differs
  }
}

TEST_CASE("what must not fuse stays unfused") {
  Tensor a = make({6, 9}, dtypes::f32), w = make({9, 4}, dtypes::f32);
  Tensor x = symbol_like(a);
  SUBCASE("a tensor used twice") {
    Tensor t = o::exp(x);
    FlowGraph g = trace_from(o::sum(t, {1}) + o::max(t, {1}));
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(count_named(opt, "Exp") == 1); // exp(x) is read by two reductions: computed once
    expect_same(opt(a), g(a));
  }
  SUBCASE("a graph output in the middle") {
    Tensor t = o::relu(x);
    FlowGraph g = trace_from({t, o::sum(t, {0})}, {x});
    FlowGraph opt = graph::optimize(g);
    CHECK(opt.nodes().size() == 2);
    auto outs = opt.run({a});
    auto want = g.run({a});
    expect_same(outs[0], want[0]);
    expect_same(outs[1], want[1]);
  }
  SUBCASE("the input of a template operator, and a view") {
    Tensor t = o::relu(x).reshape({3, 18}).reshape({6, 9});
    FlowGraph g = trace_from(o::matmul(t, w) * 2.0);
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(count_named(opt, "Relu") == 1); // a template's loads take no prologue
    CHECK(count_named(opt, "FusedMatmul") == 1); // * 2 is the product's epilogue
    expect_same(opt(a), g(a));
  }
}

TEST_CASE("fuse_epilogues: bias, activation, residual and the split of heads join the matmul") {
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    const std::int64_t b = 2, s = 11, h = 3, d = 8, k = 20;
    Tensor in = make({b * s, k}, dt, -1, 1), w = make({k, h * d}, dt, -1, 1), bias = make({h * d}, dt);
    Tensor w2 = make({h * d, h * d}, dt, -1, 1), res = make({b * s, h * d}, dt);
    auto f = [&](const Tensor &x) {
      Tensor y = o::gelu(o::matmul(x, w) + bias);                                        // bias + activation
      Tensor heads = o::transpose((o::matmul(y, w2) + res).reshape({b, s, h, d}), 1, 2); // residual + split
      return o::sum(heads, {3});
    };
    Tensor x = symbol_like(in);
    FlowGraph g = trace_from(f(x));
    FlowGraph fused = graph::fuse_epilogues(g);
    INFO(fused.str());
    CHECK(count_named(fused, "FusedMatmul") == 2);
    CHECK(count_named(fused, "Matmul") == 0);
    CHECK(fused.nodes().size() == 3); // two fused products and the sum
    CHECK(fused.str().find("fused_graph=FlowGraph(Matmul, Add, Gelu), anchor=0") != std::string::npos);
    CHECK(fused.str().find("fused_graph=FlowGraph(Matmul, Add, Reshape, Permute), anchor=0") != std::string::npos);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor a = make({b * s, k}, dt, -1, 1);
      expect_same(fused(a), g(a), 2);
      expect_same(graph::optimize(g)(a), f(a), 2);
    }
    auto report = graph::correctness_report(g, graph::optimize(g), {in});
    INFO(report.str());
    CHECK(!report.any_flagged());
  }
}

TEST_CASE("fuse_epilogues: ops::reshape (a copy when eager) joins the chain like a view") {
  const std::int64_t b = 2, s = 7, h = 3, d = 8, k = 16;
  Tensor in = make({b, s, k}, dtypes::f16, -1, 1), w = make({k, h * d}, dtypes::f16, -1, 1);
  Tensor bias = make({h * d}, dtypes::f16);
  auto f = [&](const Tensor &x) { return o::permute(o::reshape(o::matmul(x, w) + bias, {b, s, h, d}), {0, 2, 1, 3}); };
  FlowGraph g = trace_from(f(symbol_like(in)));
  FlowGraph fused = graph::fuse_epilogues(g);
  INFO(fused.str());
  REQUIRE(fused.nodes().size() == 1);
  CHECK(fused.str().find("fused_graph=FlowGraph(Matmul, Add, Reshape, Permute), anchor=0") != std::string::npos);
  Tensor a = make({b, s, k}, dtypes::f16, -1, 1);
  expect_same(fused(a), f(a), 2);
}

TEST_CASE("fuse_epilogues: a residual block's convolutions take their relu and residual add") {
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    Tensor in = make({2, 8, 9, 9}, dt, -1, 1), w1 = make({8, 8, 3, 3}, dt, -0.3, 0.3), w2 = make({8, 8, 1, 1}, dt, -0.3, 0.3);
    Tensor b1 = make({8}, dt), b2 = make({8}, dt);
    auto f = [&](const Tensor &x) {
      Tensor y = o::relu(o::conv2d(x, w1, b1, {1}, {1}));
      return o::relu(o::conv2d(y, w2, b2) + x);
    };
    Tensor x = symbol_like(in);
    FlowGraph g = trace_from(f(x));
    graph::PassContext nchw;
    nchw.layout_nhwc = false;
    FlowGraph opt = graph::optimize(g, nchw);
    INFO(opt.str());
    CHECK(opt.nodes().size() == 2);
    CHECK(count_named(opt, "FusedConv2d") == 2);
    CHECK(opt.str().find("fused_graph=FlowGraph(Conv2d, Add, Relu), anchor=0") != std::string::npos);
    // Channels-last (the default for f16/bf16): the input turned once, the output stored NCHW by
    // the second convolution's epilogue.
    FlowGraph opt2 = graph::optimize(g);
    INFO(opt2.str());
    if (dt.is_half()) {
      CHECK(opt2.nodes().size() == 3);
      CHECK(count_named(opt2, "FusedConv2dNhwc") == 2);
      CHECK(opt2.str().find("fused_graph=FlowGraph(Conv2dNhwc, Add, Relu, Permute), anchor=0") != std::string::npos);
    } else {
      CHECK(opt2.str() == opt.str());
    }
    for (int trial = 0; trial < 2; ++trial) {
      Tensor a = make({2, 8, 9, 9}, dt, -1, 1);
      expect_same(opt(a), f(a), 2);
      expect_same(opt2(a), f(a), 2);
    }
  }
}

TEST_CASE("convert_layout_nhwc: values stay channels-last between convolutions") {
  // A stem that stays NCHW (3 channels), pooling between, two residual blocks, a graph output
  // read from the middle: permutes only at the borders.
  const DataType dt = dtypes::f16;
  Tensor img = make({2, 3, 12, 10}, dt, -1, 1), w0 = make({16, 3, 3, 3}, dt, -0.3, 0.3);
  Tensor w1 = make({16, 16, 3, 3}, dt, -0.2, 0.2), w2 = make({16, 16, 1, 1}, dt, -0.3, 0.3);
  Tensor w3 = make({16, 16, 3, 3}, dt, -0.2, 0.2), bias = make({16}, dt);
  auto f = [&](const Tensor &x) {
    Tensor s = o::max_pool2d(o::relu(o::conv2d(x, w0, bias, {1}, {1})), {2}, {2}, {0});
    Tensor b1 = o::relu(o::conv2d(o::relu(o::conv2d(s, w1, bias, {1}, {1})), w2) + s);
    Tensor b2 = o::sigmoid(o::conv2d(b1, w3, std::nullopt, {1}, {1})) * b1;
    return std::vector<Tensor>{o::sum(b2, {2, 3}), b1};
  };
  Tensor x = symbol_like(img);
  FlowGraph g = trace_from(f(x), {x});
  FlowGraph c = graph::convert_layout_nhwc(g);
  INFO(c.str());
  CHECK(count_named(c, "Conv2dNhwc") == 3);
  CHECK(count_named(c, "Conv2d") - count_named(c, "Conv2dNhwc") == 1); // the stem (3 channels) stays NCHW
  CHECK(c.str().find("= Conv2d(x,") != std::string::npos);
  CHECK(count_named(c, "Permute") == 3); // into the first block; b1 and b2 back to NCHW
  for (int trial = 0; trial < 2; ++trial) {
    Tensor a = make({2, 3, 12, 10}, dt, -1, 1);
    auto want = g.run({a}), got = c.run({a}), opt = graph::optimize(g).run({a});
    for (std::size_t i = 0; i < 2; ++i) {
      expect_same(got[i], want[i], 2);
      expect_same(opt[i], want[i], 2);
    }
  }
  auto report = graph::correctness_report(g, graph::optimize(g), {img});
  INFO(report.str());
  CHECK(!report.any_flagged());
}

TEST_CASE("convert_layout_nhwc: a patch embedding is a product of a permuted copy of the image") {
  // ViT's 16 x 16 / 16 (here 4 x 4 / 4 and 2 x 4 / (2, 4)) over 3 channels: the product's rows
  // are the pixels channels-last. A ViT reads it as tokens (flatten, transpose), a ConvNeXt stem
  // convolves it again channels-last. Padding, a window other than the stride, or a size the
  // window does not divide, and rows of other than a multiple of 8 elements (C * KH * KW) keep
  // the convolution.
  const DataType dt = dtypes::f16;
  Tensor img = make({2, 3, 12, 24}, dt, -1, 1), w0 = make({24, 3, 4, 4}, dt, -0.3, 0.3);
  Tensor w1 = make({16, 3, 2, 4}, dt, -0.3, 0.3), w2 = make({8, 16, 3, 3}, dt, -0.2, 0.2);
  Tensor w3 = make({8, 3, 5, 5}, dt, -0.3, 0.3), w4 = make({8, 3, 1, 2}, dt, -0.3, 0.3);
  Tensor b0 = make({24}, dt), pos = make({1, 18, 24}, dt);
  auto f = [&](const Tensor &x) {
    Tensor tokens = o::permute(o::conv2d(x, w0, b0, {4}).reshape({2, 24, 18}), {0, 2, 1}) + pos;
    Tensor stem = o::conv2d(x, w1, std::nullopt, {2, 4});
    Tensor y = o::relu(o::conv2d(stem, w2, std::nullopt, {1}, {1}));
    Tensor padded = o::conv2d(x, w0, b0, {4}, {1}), strided = o::conv2d(x, w0, b0, {2});
    return std::vector<Tensor>{tokens, y, padded, strided, o::conv2d(x, w3, std::nullopt, {5}),
                               o::conv2d(x, w4, std::nullopt, {1, 2})};
  };
  Tensor x = symbol_like(img);
  FlowGraph g = trace_from(f(x), {x});
  FlowGraph c = graph::convert_layout_nhwc(g);
  INFO(c.str());
  CHECK(count_named(c, "Matmul") == 2);
  CHECK(count_named(c, "Conv2dNhwc") == 1);
  CHECK(count_named(c, "Conv2d") - count_named(c, "Conv2dNhwc") == 4); // padded, strided, 5 x 5, rows of 6
  FlowGraph opt = graph::optimize(g);
  INFO(opt.str());
  CHECK(count_named(opt, "FusedMatmul") + count_named(opt, "Matmul") == 2);
  for (int trial = 0; trial < 2; ++trial) {
    Tensor a = make({2, 3, 12, 24}, dt, -1, 1);
    auto want = g.run({a}), got = c.run({a}), got2 = opt.run({a});
    for (std::size_t i = 0; i < want.size(); ++i) {
      expect_same(got[i], want[i], 3);
      expect_same(got2[i], want[i], 3);
    }
  }
  // A symbolic batch (one shape-generic graph for every batch size): the product's rows are n * 18.
  auto patches = [&](const Tensor &v) { return o::permute(o::conv2d(v, w0, b0, {4}).flatten(2), {0, 2, 1}); };
  graph::DispatchOptions generic;
  generic.shape_generic = true;
  graph::ShapeDispatch model([&](const std::vector<Tensor> &xs) { return std::vector<Tensor>{patches(xs[0])}; },
                             {symbol({"n", 3, 12, 24}, dt, "cuda", "img")}, generic);
  const std::string text = model.generic_graph().str();
  INFO(text);
  CHECK(text.find("Matmul") != std::string::npos);
  CHECK(text.find("Conv2d") == std::string::npos);
  for (std::int64_t n : {1, 3}) {
    Tensor a = make({n, 3, 12, 24}, dt, -1, 1);
    expect_same(model.run({a})[0], patches(a), 3);
  }
  // f32 convolutions keep their layout (convert_layout_nhwc serves halves).
  Tensor x32 = symbol({2, 3, 12, 24}, dtypes::f32);
  FlowGraph g32 = trace_from(std::vector<Tensor>{o::conv2d(x32, o::cast(w0, dtypes::f32), std::nullopt, {4})}, {x32});
  CHECK(count_named(graph::convert_layout_nhwc(g32), "Matmul") == 0);
}

TEST_CASE("convert_layout_nhwc: concatenations of channels and batch norms stay channels-last (a dense block)") {
  // DenseNet's block: each layer normalizes the concatenation of every feature before it (batch
  // norm, relu), then convolves; Inception's branches are concatenated the same way. No permute
  // between the convolutions; a concatenation along the height stays NCHW.
  const DataType dt = dtypes::f16;
  Tensor img = make({2, 16, 7, 5}, dt, -1, 1);
  Tensor w0 = make({16, 16, 3, 3}, dt, -0.2, 0.2), w1 = make({8, 16, 1, 1}, dt, -0.3, 0.3);
  Tensor w2 = make({8, 24, 3, 3}, dt, -0.2, 0.2), w3 = make({16, 32, 1, 1}, dt, -0.3, 0.3);
  auto stats = [&](std::int64_t c) {
    return std::vector<Tensor>{make({c}, dt, -0.5, 0.5), make({c}, dt, 0.5, 2), make({c}, dt, 0.5, 1.5),
                               make({c}, dt, -0.5, 0.5)};
  };
  auto s1 = stats(24), s2 = stats(32);
  auto f = [&](const Tensor &x) {
    Tensor a = o::relu(o::conv2d(x, w0, std::nullopt, {1}, {1}));
    Tensor b = o::conv2d(a, w1);
    Tensor ab = o::concat({a, b}, 1);
    Tensor c = o::conv2d(o::relu(o::batch_norm(ab, s1[0], s1[1], s1[2], s1[3], 1e-5)), w2, std::nullopt, {1}, {1});
    Tensor abc = o::concat({a, b, c}, 1);
    Tensor d = o::conv2d(o::relu(o::batch_norm(abc, s2[0], s2[1], std::nullopt, s2[3], 1e-3)), w3);
    return std::vector<Tensor>{d, o::concat({d, a}, 2)};
  };
  Tensor x = symbol_like(img);
  FlowGraph g = trace_from(f(x), {x});
  FlowGraph c = graph::convert_layout_nhwc(g);
  INFO(c.str());
  CHECK(count_named(c, "Conv2dNhwc") == 4);
  CHECK(count_named(c, "BatchNorm") == 0);
  // the image in; d and a back to NCHW for the outputs (d once, for both)
  CHECK(count_named(c, "Permute") == 3);
  for (int trial = 0; trial < 2; ++trial) {
    Tensor v = make({2, 16, 7, 5}, dt, -1, 1);
    auto want = g.run({v}), got = c.run({v}), opt = graph::optimize(g).run({v});
    for (std::size_t i = 0; i < 2; ++i) {
      expect_same(got[i], want[i], 3);
      expect_same(opt[i], want[i], 3);
    }
  }
}

TEST_CASE("convert_layout_nhwc: a group norm of one group stays channels-last (a PoolFormer block)") {
  // x + scale * (pool(gn(x)) - gn(x)), then x + fc2(gelu(fc1(gn(x)))): no permute between the
  // convolutions. Large enough samples that the norm's moments are split into pieces; a group
  // norm of two groups stays NCHW.
  const DataType dt = dtypes::f16;
  const std::int64_t n = 2, ch = 16, h = 9, w = 15;
  Tensor img = make({n, ch, h, w}, dt, -1, 1);
  Tensor w0 = make({ch, ch, 3, 3}, dt, -0.2, 0.2), w1 = make({32, ch, 1, 1}, dt, -0.3, 0.3);
  Tensor w2 = make({ch, 32, 1, 1}, dt, -0.2, 0.2), g1 = make({ch}, dt, 0.5, 1.5), b1 = make({ch}, dt, -0.5, 0.5);
  Tensor g2 = make({ch}, dt, 0.5, 1.5), scale = make({ch, 1, 1}, dt, 0.5, 1);
  auto f = [&](const Tensor &x) {
    Tensor a = o::conv2d(x, w0, std::nullopt, {1}, {1});
    Tensor na = o::group_norm(a, 1, g1, b1, 1e-5);
    Tensor m = a + scale * (o::avg_pool2d(na, {3}, {1}, {1}, false, false) - na);
    Tensor y = m + o::conv2d(o::gelu(o::conv2d(o::group_norm(m, 1, g2, std::nullopt, 1e-6), w1)), w2);
    return std::vector<Tensor>{y, o::group_norm(y, 2, g1, b1)};
  };
  Tensor x = symbol_like(img);
  FlowGraph g = trace_from(f(x), {x});
  FlowGraph c = graph::convert_layout_nhwc(g);
  INFO(c.str());
  CHECK(count_named(c, "Conv2dNhwc") == 3);
  CHECK(count_named(c, "GroupNorm") == 1); // the two-group one, of the output
  // The image in, y back to NCHW (for both outputs); and the scale's product and the gelu computed
  // on NCHW views turned back, which fusion folds into their kernels (no permute is stored).
  CHECK(count_named(c, "Permute") == 6);
  FlowGraph opt = graph::optimize(g);
  INFO(opt.str());
  CHECK(count_named(opt, "Permute") == 1); // the image's
  for (int trial = 0; trial < 2; ++trial) {
    Tensor v = make({n, ch, h, w}, dt, -1, 1);
    auto want = g.run({v}), got = c.run({v}), opt = graph::optimize(g).run({v});
    for (std::size_t i = 0; i < 2; ++i) {
      expect_same(got[i], want[i], 3);
      expect_same(opt[i], want[i], 3);
    }
  }
  // Eager: group_norm_nhwc of a channels-last tensor is group_norm of its NCHW form, turned.
  for (DataType edt : {dtypes::f32, dtypes::bf16}) {
    Tensor v = make({3, ch, 33, 65}, edt, -2, 3);
    Tensor want = o::permute(o::group_norm(v, 1, o::cast(g1, edt), o::cast(b1, edt), 1e-5), {0, 2, 3, 1});
    expect_same(o::group_norm_nhwc(o::permute(v, {0, 2, 3, 1}), 1, o::cast(g1, edt), o::cast(b1, edt), 1e-5), want, 4);
  }
  CHECK_THROWS_AS(o::group_norm_nhwc(o::permute(img, {0, 2, 3, 1}), 2), ValueError);
}

TEST_CASE("a channels-last group norm read by the pooling and by the subtraction (PoolFormer's token mixer) is recomputed in both") {
  // x + scale * (pool(gn(x)) - gn(x)) after a convolution, at odd sizes (20 channels of 7 x 7, and
  // of 11 x 11: the norm's moments in two pieces): the norm's normalization (x by the per-sample
  // mean and rstd, the per-channel weight and bias) is made again in the pooling's window and in
  // the subtraction, which share one kernel with the scaling and the residual: no kernel stores
  // the normalized value. Before, a FusedCast stored it and the pooling's kernel read it twice.
  const std::int64_t n = 2, ci = 16, ch = 20;
  for (DataType dt : {dtypes::f16, dtypes::bf16})
    for (std::int64_t hw : {7, 11}) {
      CAPTURE(dt.name());
      CAPTURE(hw);
      Tensor w0 = make({ch, ci, 3, 3}, dt, -0.2, 0.2), scale = make({ch, 1, 1}, dt, 0.5, 1);
      Tensor g1 = make({ch}, dt, 0.5, 1.5), b1 = make({ch}, dt, -0.5, 0.5);
      auto f = [&](const Tensor &x) {
        Tensor a = o::conv2d(x, w0, std::nullopt, {1}, {1});
        Tensor na = o::group_norm(a, 1, g1, b1, 1e-5);
        return a + scale * (o::avg_pool2d(na, {3}, {1}, {1}, false, false) - na);
      };
      Tensor x = symbol_like(make({n, ci, hw, hw}, dt));
      FlowGraph g = trace_from(f(x), {x});
      FlowGraph opt = graph::optimize(g);
      INFO(opt.str());
      // The image's permute, the convolution, the moments and their mean, the pooling's kernel.
      CHECK(int(opt.nodes().size()) - count_named(opt, "Reshape") == 5);
      CHECK(count_named(opt, "FusedAvgPool2dNhwc") == 1);
      CHECK(opt.str().find("Rsqrt") != std::string::npos);
      for (const auto &op : opt.nodes()) { // the normalization only inside the pooling's kernel
        CAPTURE(op->name());
        CHECK((op->name() == "FusedAvgPool2dNhwc" || op->attrs().find("Rsqrt") == std::string::npos));
      }
      for (int trial = 0; trial < 2; ++trial) {
        Tensor v = make({n, ci, hw, hw}, dt, -1, 1);
        expect_same(opt.run({v})[0], g.run({v})[0], 3);
      }
    }
}

TEST_CASE("convert_layout_nhwc: casts and average pooling keep channels-last (mixed precision)") {
  // What convert_precision leaves between f16 convolutions of an f32 model: a cast up, f32 math,
  // a cast down. The value stays channels-last through them.
  Tensor img = make({2, 8, 9, 7}, dtypes::f32, -1, 1), w1 = make({8, 8, 3, 3}, dtypes::f32, -0.3, 0.3);
  Tensor w2 = make({16, 8, 1, 1}, dtypes::f32, -0.3, 0.3);
  auto f = [&](const Tensor &x) {
    Tensor y = o::relu(o::conv2d(x, w1, std::nullopt, {1}, {1})) + x;
    return o::avg_pool2d(o::conv2d(y, w2), {2}, {2}, {1}, false, false);
  };
  Tensor x = symbol_like(img);
  FlowGraph g = trace_from(f(x));
  FlowGraph c = graph::convert_layout_nhwc(graph::convert_precision(g, dtypes::f16));
  INFO(c.str());
  CHECK(count_named(c, "Conv2dNhwc") == 2);
  CHECK(count_named(c, "AvgPool2dNhwc") == 1);
  CHECK(count_named(c, "Permute") == 3); // the input in (for the convolution and the residual), the output out
  for (int trial = 0; trial < 2; ++trial) {
    Tensor a = make({2, 8, 9, 7}, dtypes::f32, -1, 1);
    expect_same(c(a), g(a), 50); // f16 products against f32
  }
}

TEST_CASE("convert_layout_nhwc: other element-wise operators (relu6, hardswish) stay channels-last") {
  const DataType dt = dtypes::f16;
  Tensor img = make({2, 8, 7, 9}, dt, -1, 1), w1 = make({16, 8, 3, 3}, dt, -0.3, 0.3);
  Tensor w2 = make({16, 16, 1, 1}, dt, -0.3, 0.3), w3 = make({8, 16, 1, 1}, dt, -0.3, 0.3);
  auto f = [&](const Tensor &x) {
    Tensor y = o::clamp(o::conv2d(x, w1, std::nullopt, {1}, {1}), 0.0, 6.0);
    Tensor z = o::conv2d(y, w2);
    z = z * (o::clamp(z + 3.0, 0.0, 6.0) / 6.0);
    return o::conv2d(z, w3);
  };
  Tensor x = symbol_like(img);
  FlowGraph g = trace_from(f(x));
  FlowGraph opt = graph::optimize(g);
  INFO(opt.str());
  CHECK(count_named(opt, "FusedConv2dNhwc") + count_named(opt, "Conv2dNhwc") == 3);
  // Kernels: the image turned (1), three convolutions, at most one more for the hardswish when
  // it does not join an epilogue: no permute of its own between the convolutions.
  CHECK(opt.nodes().size() <= 5);
  for (int trial = 0; trial < 2; ++trial) {
    Tensor a = make({2, 8, 7, 9}, dt, -1, 1);
    expect_same(opt(a), f(a), 3);
  }
}

TEST_CASE("convert_layout_nhwc: a depthwise block with squeeze-and-excite stays channels-last") {
  // EfficientNet's MBConv: expand, depthwise 3x3 + silu, global average pool, two 1x1
  // convolutions of the pooled pixel (products, 4 squeezed channels), sigmoid, scale, project,
  // residual.
  const DataType dt = dtypes::f16;
  const std::int64_t c = 16, e = 32, sq = 4;
  Tensor img = make({2, c, 11, 9}, dt, -1, 1), we = make({e, c, 1, 1}, dt, -0.3, 0.3);
  Tensor wd = make({e, 1, 3, 3}, dt, -0.4, 0.4), bd = make({e}, dt), w1 = make({sq, e, 1, 1}, dt, -0.3, 0.3);
  Tensor b1 = make({sq}, dt), w2 = make({e, sq, 1, 1}, dt, -0.5, 0.5), b2 = make({e}, dt);
  Tensor wp = make({c, e, 1, 1}, dt, -0.2, 0.2);
  auto f = [&](const Tensor &x) {
    Tensor h = o::silu(o::conv2d(x, we));
    h = o::silu(o::conv2d(h, wd, bd, {1}, {1}, {1}, e));
    Tensor s = o::adaptive_avg_pool2d(h, {1, 1});
    s = o::sigmoid(o::conv2d(o::silu(o::conv2d(s, w1, b1)), w2, b2));
    return o::conv2d(h * s, wp) + x;
  };
  Tensor x = symbol_like(img);
  FlowGraph g = trace_from(f(x));
  FlowGraph c1 = graph::convert_layout_nhwc(g);
  INFO(c1.str());
  CHECK(count_named(c1, "Conv2dNhwc") == 3); // expand, depthwise, project
  CHECK(count_named(c1, "Gemv") == 2);       // the 1x1 convolutions of the pooled [2, 32, 1, 1]
  CHECK(count_named(c1, "AdaptiveAvgPool2dNhwc") == 1);
  CHECK(c1.str().find("groups=32") != std::string::npos);
  CHECK(count_named(c1, "Permute") == 2); // the input in, the output out: none inside the block
  FlowGraph opt = graph::optimize(g);
  INFO(opt.str());
  CHECK(count_named(opt, "Permute") == 1); // the output's is the last convolution's epilogue
  for (int trial = 0; trial < 2; ++trial) {
    Tensor a = make({2, c, 11, 9}, dt, -1, 1);
    expect_same(c1(a), f(a), 3);
    expect_same(opt(a), f(a), 3);
  }
  auto report = graph::correctness_report(g, opt, {img});
  INFO(report.str());
  CHECK(!report.any_flagged());
}

TEST_CASE("fuse_epilogues: an activation written out (GPT-2's gelu reads x three times) follows its product") {
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    Tensor a = make({2, 7, 24}, dt), w = make({24, 40}, dt, -0.3, 0.3), b = make({40}, dt);
    auto f = [&](const Tensor &x) {
      Tensor h = o::matmul(x, w) + b;
      Tensor inner = (h + o::pow(h, 3.0) * 0.044715) * 0.7978845608;
      return h * 0.5 * (o::tanh(inner) + 1.0);
    };
    Tensor x = symbol_like(a);
    FlowGraph g = trace_from(f(x));
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(opt.nodes().size() == 1);
    CHECK(count_named(opt, "FusedMatmul") == 1);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({2, 7, 24}, dt);
      expect_same(opt(in), f(in), 3);
    }
  }
}

TEST_CASE("fuse_epilogues leaves alone what it must") {
  Tensor a = make({6, 9}, dtypes::f32), w = make({9, 4}, dtypes::f32);
  Tensor x = symbol_like(a);
  SUBCASE("a product read twice") {
    Tensor y = o::matmul(x, w);
    // By one element-wise expression: that expression, grouped, is the product's epilogue.
    FlowGraph g = trace_from(o::relu(y) + o::exp(y));
    FlowGraph f = graph::fuse_epilogues(g);
    INFO(f.str());
    CHECK(f.nodes().size() == 1);
    CHECK(f.str().find("fused_graph=FlowGraph(Matmul, Exp, Relu, Add), anchor=0") != std::string::npos);
    expect_same(f(a), g(a));
    // By two operators (an element-wise one and a reduction): stored.
    FlowGraph g2 = trace_from({o::relu(y), o::sum(y, {1})}, {x});
    CHECK(count_named(graph::fuse_epilogues(g2), "FusedMatmul") == 0);
  }
  SUBCASE("a graph output ends the chain") {
    Tensor y = o::relu(o::matmul(x, w));
    FlowGraph g = trace_from({y, o::exp(y)}, {x});
    FlowGraph fused = graph::fuse_epilogues(g);
    INFO(fused.str());
    CHECK(fused.str().find("FlowGraph(Matmul, Relu)") != std::string::npos);
    CHECK(count_named(fused, "Exp") == 1);
    auto got = fused.run({a});
    auto want = g.run({a});
    expect_same(got[0], want[0]);
    expect_same(got[1], want[1]);
  }
  SUBCASE("an add of two products joins one of them") {
    Tensor w2 = make({9, 4}, dtypes::f32);
    FlowGraph g = trace_from(o::relu(o::matmul(x, w) + o::matmul(x, w2)));
    FlowGraph fused = graph::fuse_epilogues(g);
    INFO(fused.str());
    CHECK(count_named(fused, "FusedMatmul") == 1);
    CHECK(count_named(fused, "Matmul") == 1);
    CHECK(fused.nodes().size() == 2);
    expect_same(fused(a), g(a));
  }
  SUBCASE("a broadcast of the product") {
    Tensor y = o::matmul(x, w).reshape({6, 4, 1});
    FlowGraph g = trace_from(o::broadcast_to(y, {6, 4, 5}));
    FlowGraph fused = graph::fuse_epilogues(g);
    INFO(fused.str());
    CHECK(count_named(fused, "BroadcastTo") == 1); // the reshape joined, the broadcast did not
    expect_same(fused(a), g(a));
  }
}

TEST_CASE("profile: every node timed, summed per operator") {
  Tensor a = make({16, 24}, dtypes::f32), w = make({24, 8}, dtypes::f32), bias = make({8}, dtypes::f32);
  Tensor x = symbol_like(a);
  FlowGraph g = graph::optimize(trace_from(o::softmax(o::relu(o::matmul(x, w) + bias), 1)));
  graph::Profile p = graph::profile(g, {a});
  REQUIRE(p.nodes.size() == g.nodes().size());
  for (const auto &n : p.nodes) CHECK(n.ms > 0);
  CHECK(p.total_ms() > 0);
  std::string s = p.str();
  INFO(s);
  CHECK(s.rfind("profile: 2 operators", 0) == 0);
  CHECK(s.find("FusedMatmul") != std::string::npos);
  CHECK(s.find("Softmax") != std::string::npos);
  CHECK(s.find("slowest nodes:") != std::string::npos);
  // a view (a Reshape between two kernels, not optimized away) launches nothing: 0 ms
  FlowGraph v = trace_from(o::softmax(o::relu(x).reshape({8, 48}), 1));
  graph::Profile pv = graph::profile(v, {a});
  REQUIRE(pv.nodes.size() == 3);
  int views = 0;
  for (const auto &n : pv.nodes) {
    INFO(n.op);
    CHECK((n.op == "Reshape") == (n.ms == 0));
    views += n.op == "Reshape";
  }
  CHECK(views == 1);
}

TEST_CASE("fuse_prologue checks what it is given") {
  Tensor a = make({4, 5}, dtypes::f32);
  Tensor x = symbol_like(a);
  auto sum_op = std::dynamic_pointer_cast<const o::TaskOperator>(o::sum(x, {1}).trace().op);
  auto relu_op = std::dynamic_pointer_cast<const o::TaskOperator>(o::relu(x).trace().op);
  auto other_op = std::dynamic_pointer_cast<const o::TaskOperator>(o::relu(symbol({4, 6})).trace().op);
  REQUIRE(sum_op);
  REQUIRE(relu_op);
  expect_error([&] { o::fuse_prologue(relu_op->task(), 0, sum_op->task()); }, {"must be injective"});
  expect_error([&] { o::fuse_prologue(sum_op->task(), 3, relu_op->task()); }, {"no input 3"});
  expect_error([&] { o::fuse_prologue(sum_op->task(), 0, other_op->task()); }, {"(4, 6)", "(4, 5)"});
}

TEST_CASE("build compiles every task-defined node in parallel; the run then compiles nothing") {
  Tensor a = make({11, 29}, dtypes::f32), bias = make({29}, dtypes::f32);
  Tensor x = symbol_like(a);
  Tensor h = o::softmax(o::tanh(x) + bias, -1);
  FlowGraph opt = graph::optimize(trace_from({o::sum(h * h, {1}), o::max(h, {0})}, {x}));
  INFO(opt.str());
  auto st = graph::build(opt, 3);
  CHECK(st.nodes == opt.nodes().size());
  CHECK(st.compiled == st.nodes); // shapes no other test uses
  // The longest node is named; NVRTC ran only for kernels not in the disk cache (none on the
  // emulator under HIDET_EMULATOR_NVRTC=0).
  CHECK(st.slowest.find(" (node ") != std::string::npos);
  CHECK(st.slowest_seconds > 0);
  CHECK(st.slowest_seconds <= st.seconds);
  CHECK(st.nvrtc_seconds >= 0);
  auto before = o::compiled_task_count();
  auto outs = opt.run({a});
  CHECK(o::compiled_task_count() == before);
  CHECK(graph::build(opt).compiled == 0);
  Tensor he = o::softmax(o::tanh(a) + bias, -1);
  expect_same(outs[0], o::sum(he * he, {1}));
  expect_same(outs[1], o::max(he, {0}));
}

TEST_CASE("graph::build at search space 1 compiles the tuned nodes' candidates side by side; the first run times them") {
  namespace tuning = hidet::ops::tuning;
  // A private cache (no tuning records) and a timer of ties (each problem keeps its default).
  auto dir = std::filesystem::temp_directory_path() / str_cat("hidet-prebuild-test-", std::random_device{}());
  std::string old_dir = std::getenv("HIDET_CACHE_DIR") ? std::getenv("HIDET_CACHE_DIR") : "";
  ::setenv("HIDET_CACHE_DIR", dir.c_str(), 1);
  tuning::clear_memory();
  auto timed = std::make_shared<int>(0);
  tuning::set_timer([timed](const tuning::Launch &launch) {
    launch();
    ++*timed;
    return 1.0;
  });
  const int space = hidet::option::search_space();
  hidet::option::search_space(1);
  auto graph_of = [](int m, int k, int n1, int n2, Tensor &a, Tensor &want) {
    a = make({m, k}, dtypes::f32);
    Tensor w1 = make({k, n1}, dtypes::f32), w2 = make({n1, n2}, dtypes::f32);
    Tensor x = symbol_like(a);
    FlowGraph g = graph::optimize(trace_from({o::matmul(o::relu(o::matmul(x, w1)), w2)}, {x}));
    hidet::option::search_space(0); // the reference tunes nothing (its problems' keys are space 0's)
    want = o::matmul(o::relu(o::matmul(a, w1)), w2);
    hidet::option::search_space(1);
    return g;
  };
  Tensor a, want;
  FlowGraph g = graph_of(37, 40, 24, 16, a, want);
  INFO(g.str());
  const auto expected = hidet::ops::matmul_candidates(37, 24, 40, dtypes::f32, 1).size() +
                        hidet::ops::matmul_candidates(37, 16, 24, dtypes::f32, 1).size();
  REQUIRE(expected > 2);
  auto st0 = tuning::stats();
  graph::build(g);
  auto st1 = tuning::stats();
  CHECK(st1.prebuilt - st0.prebuilt == expected);
  CHECK(st1.tuned == st0.tuned); // nothing timed while building
  CHECK(*timed == 0);
  auto outs = g.run({a});
  CHECK(tuning::stats().tuned == st1.tuned + 2); // the first run times both problems
  CHECK(*timed > 0);
  expect_same(outs[0], want);
  // A second build finds both records: nothing to prebuild.
  graph::build(g);
  CHECK(tuning::stats().prebuilt == st1.prebuilt);
  // With the budget spent, a new graph prebuilds nothing, and its run keeps the defaults.
  hidet::option::tuning_budget(0);
  Tensor a2, want2;
  FlowGraph g2 = graph_of(29, 48, 40, 8, a2, want2);
  auto st2 = tuning::stats();
  graph::build(g2);
  CHECK(tuning::stats().prebuilt == st2.prebuilt);
  expect_same(g2.run({a2})[0], want2);
  CHECK(tuning::stats().tuned == st2.tuned);
  CHECK(tuning::stats().over_budget >= st2.over_budget + 2);
  hidet::option::tuning_budget(std::numeric_limits<double>::infinity());
  hidet::option::search_space(space);
  tuning::set_timer(nullptr);
  tuning::clear_memory();
  if (old_dir.empty()) ::unsetenv("HIDET_CACHE_DIR");
  else ::setenv("HIDET_CACHE_DIR", old_dir.c_str(), 1);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("correctness report: fused and unfused values of the traced tensors") {
  Tensor a = make({5, 23}, dtypes::f16), bias = make({23}, dtypes::f16);
  Tensor x = symbol_like(a);
  Tensor t = o::exp(x * 0.5 + bias);
  FlowGraph g = trace_from({o::softmax(t, -1), o::sum(t, {1})}, {x});
  FlowGraph opt = graph::optimize(g);
  auto report = graph::correctness_report(g, opt, {a});
  INFO(report.str());
  REQUIRE(report.rows.size() == 1 + g.nodes().size());
  CHECK(report.rows[0].kind == "input");
  int compared = 0, fused = 0;
  for (const auto &r : report.rows) (r.compared ? compared : fused)++;
  CHECK(fused == 2);    // x * 0.5 and + bias live inside the fused kernels
  CHECK(compared == 4); // the input, exp (read twice), softmax, sum
  CHECK(!report.any_flagged());
  CHECK(report.max_error() < 1e-2);
  std::string s = report.str();
  CHECK(s.rfind("    kind      operator", 0) == 0);
  CHECK(s.find("fused") != std::string::npos);
  CHECK(s.find("Softmax(axis=1)") != std::string::npos);
  // An optimized graph of other inputs is refused.
  Tensor y = symbol_like(a);
  expect_error([&] { graph::correctness_report(g, trace_from(o::exp(y)), {a}); }, {"not input 0 of the traced graph"});
}

TEST_CASE("PassContext: the graph after each pass is saved; a bad folder is an error") {
  Tensor a = make({3, 8}, dtypes::f32);
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from(o::sum(o::relu(x), {1}));
  auto dir = std::filesystem::temp_directory_path() / ("hidet_passes_" + std::to_string(g_seed));
  graph::PassContext ctx;
  ctx.save_graph_dir = dir.string();
  ctx.verbose = true;
  FlowGraph opt = graph::optimize(g, ctx);
  auto read = [](const std::filesystem::path &p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  CHECK(read(dir / "0_input.txt") == g.str() + "\n");
  CHECK(read(dir / "1_simplify_reshapes.txt") == g.str() + "\n"); // nothing to simplify
  CHECK(read(dir / "12_fuse_operators.txt") == opt.str() + "\n");
  CHECK(read(dir / "12_fuse_operators.dot").rfind("digraph FlowGraph {", 0) == 0);
  std::filesystem::remove_all(dir);
  ctx.save_graph_dir = "/proc/hidet_cannot_write_here";
  ctx.verbose = false;
  expect_error([&] { graph::optimize(g, ctx); }, {"cannot write the graph to /proc/hidet_cannot_write_here"});
}

TEST_CASE("simplify_reshapes: chains collapse, identities vanish") {
  Tensor a = make({6, 10}, dtypes::f32);
  Tensor x = symbol_like(a);
  Tensor y = o::exp(x).reshape({3, 20}).reshape({60}).reshape({2, 30}); // one reshape is enough
  Tensor z = o::tanh(y.reshape({6, 10}).reshape({60}).reshape({6, 10})); // tanh reads exp itself
  FlowGraph g = trace_from({y, z, x.reshape({60}).reshape({6, 10})}, {x});
  FlowGraph s = graph::simplify_reshapes(g);
  INFO(s.str());
  CHECK(count_named(g, "Reshape") == 8);
  CHECK(count_named(s, "Reshape") == 1); // exp -> [2, 30]; the rest come back to exp's own shape
  CHECK(s.outputs()[2].symbolic_info() == x.symbolic_info()); // the graph returns its input
  auto got = s.run({a}), want = g.run({a});
  for (int i = 0; i < 3; ++i) expect_same(got[std::size_t(i)], want[std::size_t(i)]);
  // tanh now reads exp directly.
  CHECK(s.nodes()[2]->inputs()[0].trace().op.get() == s.nodes()[0].get());
  FlowGraph opt = graph::optimize(g);
  expect_same(opt.run({a})[1], want[1]);
}

/// simplify_reshapes of `g` (one input, `x0` its value) leaves `views` Reshape views and `tasks`
/// reshape tasks, and g's results (optimized too) as they were.
static void check_simplified_reshapes(const FlowGraph &g, const Tensor &x0, int views, int tasks) {
  FlowGraph s = graph::simplify_reshapes(g);
  INFO(s.str());
  int seen_views = 0, seen_tasks = 0;
  for (const auto &op : s.nodes()) {
    if (op->name() != "Reshape") continue;
    (dynamic_cast<const ops::TaskOperator *>(op.get()) ? seen_tasks : seen_views) += 1;
  }
  CHECK(seen_views == views);
  CHECK(seen_tasks == tasks);
  expect_all_same(s.run({x0}), g.run({x0}));
  expect_all_same(graph::optimize(g).run({x0}), g.run({x0}), 4);
}

TEST_CASE("simplify_reshapes: a merged reshape is a view unless task-defined operators surround it") {
  // A decoding step's attention output [1, h, 1, d], transposed (a reshape: the moved axis has
  // extent 1) and flattened for the output projection: between two products, a view (it was
  // ops::reshape's task, a copy kernel of its own). Between two element-wise tasks it stays a
  // task, which fusion takes into them.
  Tensor x0 = make({4, 8}, dtypes::f32), w1 = make({8, 8}, dtypes::f32), w2 = make({32, 5}, dtypes::f32);
  Tensor x = symbol_like(x0);
  Tensor products = o::matmul(o::matmul(x, w1).reshape({4, 1, 8}).reshape({1, 32}), w2);
  Tensor tasks = o::tanh(o::exp(x).reshape({4, 1, 8}).reshape({1, 32}));
  FlowGraph g = trace_from({products, tasks}, {x});
  CHECK(count_named(g, "Reshape") == 4);
  check_simplified_reshapes(g, x0, 1, 1);
}

TEST_CASE("simplify_reshapes: a reshape task away from tasks is a view (the torch front end's reshapes)") {
  // ops::reshape at constant shapes records a task (a copy). Between a product and a Narrow (the
  // front end's q, k, v split of a fused projection): a view. Between element-wise tasks, or as a
  // graph output, or of a graph input: left as it is.
  Tensor x0 = make({4, 8}, dtypes::f32), w = make({8, 6}, dtypes::f32);
  Tensor x = symbol_like(x0);
  Tensor split = o::reshape(o::matmul(x, w), {24}).narrow(8, 8);
  Tensor tasks = o::tanh(o::reshape(o::exp(x), {8, 4}));
  Tensor out = o::reshape(o::matmul(x, w), {3, 8}), of_input = o::exp(o::reshape(x, {32}));
  FlowGraph g = trace_from({o::relu(split), tasks, out, of_input}, {x});
  CHECK(count_named(g, "Reshape") == 4);
  check_simplified_reshapes(g, x0, 1, 3);
}

TEST_CASE("simplify_reshapes: adding zeros, multiplying by ones (a cache position past + arange(1)) are views") {
  // A decoding step's cache position: the 0-d length plus arange(1) = [0], read by an index_put.
  Tensor len0 = asarray<std::int64_t>({5}).reshape(o::Shape{}), c0 = make({8, 4}, dtypes::f32), k0 = make({1, 4}, dtypes::f32);
  Tensor len = symbol_like(len0, "len"), cache = symbol_like(c0, "cache"), key = symbol_like(k0, "k");
  Tensor pos = o::arange(0, 1, 1, dtypes::i64) + len; // [1]
  Tensor y = o::index_put(cache, {pos}, key);
  Tensor x0 = make({3, 4}, dtypes::f32), x = symbol_like(x0, "x");
  Tensor ones = o::full(o::Shape{4}, 1, dtypes::f32, x.device()), zeros = o::full(o::Shape{3, 4}, 0, dtypes::f32, x.device());
  Tensor a = o::relu((x - zeros) * ones / ones);               // x itself
  Tensor kept = o::relu(zeros - x) + o::relu(x + o::full(o::Shape{2, 3, 4}, 0, dtypes::f32, x.device())); // 0 - x; a broadcast
  Tensor returned = x + zeros;                                 // an input returned: stays an Add
  FlowGraph g = trace_from({o::sum(y, {1}), a, kept, returned}, {len, cache, key, x});
  FlowGraph s = graph::simplify_reshapes(g);
  INFO(s.str());
  CHECK(count_named(g, "Add") + count_named(g, "Sub") + count_named(g, "Mul") + count_named(g, "Div") == 8);
  CHECK(count_named(s, "Mul") == 0);
  CHECK(count_named(s, "Div") == 0);
  CHECK(count_named(s, "Sub") == 1); // 0 - x
  CHECK(count_named(s, "Add") == 3); // the broadcast, the sum of the two relus, the returned input
  expect_all_same(s.run({len0, c0, k0, x0}), g.run({len0, c0, k0, x0}));
}

TEST_CASE("fold_conv_batch_norm: Conv2d + BatchNorm become one Conv2d with folded constants") {
  for (bool conv_bias : {false, true}) {
    CAPTURE(conv_bias);
    const std::int64_t n = 2, c = 3, h = 11, w = 9, o_ = 5;
    Tensor img = make({n, c, h, w}, dtypes::f32), wc = make({o_, c, 3, 3}, dtypes::f32, -0.5, 0.5);
    Tensor bc = make({o_}, dtypes::f32), mean = make({o_}, dtypes::f32), var = make({o_}, dtypes::f32, 0.5, 2.0);
    Tensor gamma = make({o_}, dtypes::f32), beta = make({o_}, dtypes::f32);
    auto net = [&](const Tensor &x) {
      std::optional<Tensor> b;
      if (conv_bias) b = bc;
      Tensor y = o::conv2d(x, wc, b, {2}, {1});
      return o::relu(o::batch_norm(y, mean, var, gamma, beta, 1e-3));
    };
    Tensor x = symbol_like(img);
    FlowGraph g = trace_from(net(x));
    FlowGraph f = graph::fold_conv_batch_norm(g);
    INFO(f.str());
    CHECK(count_named(g, "BatchNorm") == 1);
    CHECK(count_named(f, "BatchNorm") == 0);
    REQUIRE(count_named(f, "Conv2d") == 1);
    CHECK(f.str().find("stride=[2, 2], padding=[1, 1], dilation=[1, 1], groups=1") != std::string::npos);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({n, c, h, w}, dtypes::f32);
      expect_same(f(in), net(in), 10); // reassociated arithmetic: a few ulps
    }
    auto report = graph::correctness_report(g, graph::optimize(g), {img});
    INFO(report.str());
    CHECK(!report.any_flagged());
  }
  // Not folded: the conv's output is also read elsewhere.
  Tensor img = make({1, 2, 5, 5}, dtypes::f32), wc = make({4, 2, 3, 3}, dtypes::f32);
  Tensor stat = make({4}, dtypes::f32, 0.5, 1.5);
  Tensor x = symbol_like(img);
  Tensor y = o::conv2d(x, wc);
  FlowGraph g = trace_from(o::batch_norm(y, stat, stat) + y);
  CHECK(count_named(graph::fold_conv_batch_norm(g), "BatchNorm") == 1);
}

TEST_CASE("fold_conv_batch_norm: a product by constant weights, viewed [M, N], then BatchNorm1d (LeViT's LinearNorm)") {
  // BatchNorm1d(linear(x).flatten(0, 1)).reshape(B, N, -1): the weights' columns take the scale and
  // the shift becomes a bias, fused into the product's store (no BatchNorm left); f32 and f16.
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt);
    const std::int64_t b = 2, n = 49, k = 40, c = 24;
    Tensor xa = make({b, n, k}, dt), w = make({k, c}, dt, -0.5, 0.5);
    Tensor mean = make({c}, dt), var = make({c}, dt, 0.5, 2.0), gamma = make({c}, dt), beta = make({c}, dt);
    auto net = [&](const Tensor &x) {
      Tensor y = o::reshape(o::matmul(x, w), {b * n, c});
      return o::relu(o::reshape(o::batch_norm(y, mean, var, gamma, beta, 1e-5), {b, n, c}));
    };
    Tensor x = symbol_like(xa);
    FlowGraph g = trace_from(net(x));
    FlowGraph f = graph::fold_conv_batch_norm(g);
    INFO(f.str());
    CHECK(count_named(f, "BatchNorm") == 0);
    CHECK(count_named(f, "Matmul") == 1);
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(int(opt.nodes().size()) - count_named(opt, "Reshape") == 1); // one product, its epilogue the bias and relu
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({b, n, k}, dt);
      expect_same(opt.run({in})[0], net(in), dt == dtypes::f32 ? 10 : 4);
    }
  }
  // Not folded: the norm over another axis (x viewed [M, N, 1]... [B, C, L]: channels on axis 1 of a
  // 3-D input), or the product read elsewhere too.
  Tensor w = make({16, 8}, dtypes::f32), stat = make({8}, dtypes::f32, 0.5, 1.5);
  Tensor x = symbol({3, 16}, dtypes::f32, "cuda", "x");
  Tensor y = o::matmul(x, w);
  FlowGraph g = trace_from(o::batch_norm(o::reshape(y, {3, 8}), stat, stat) + y);
  CHECK(count_named(graph::fold_conv_batch_norm(g), "BatchNorm") == 1);
  Tensor x3 = symbol({2, 8, 16}, dtypes::f32, "cuda", "x3");
  Tensor w3 = make({16, 5}, dtypes::f32), s3 = make({8}, dtypes::f32, 0.5, 1.5);
  FlowGraph g3 = trace_from(o::batch_norm(o::reshape(o::matmul(x3, w3), {2, 8, 5}), s3, s3));
  CHECK(count_named(graph::fold_conv_batch_norm(g3), "BatchNorm") == 1);
}

TEST_CASE("convert_precision: f32 matmuls, convolutions and attention compute in f16 or bf16") {
  for (DataType low : {dtypes::f16, dtypes::bf16}) {
    CAPTURE(low);
    // Two matmuls share x (one cast of x), then attention over heads of 64, then a convolution.
    const std::int64_t b = 2, s = 24, hidden = 128;
    Tensor h = make({b * s, hidden}, dtypes::f32), wq = make({hidden, hidden}, dtypes::f32, -0.1, 0.1);
    Tensor wk = make({hidden, hidden}, dtypes::f32, -0.1, 0.1), bias = make({hidden}, dtypes::f32);
    Tensor wc = make({4, 2, 3, 3}, dtypes::f32, -0.3, 0.3);
    auto net = [&](const Tensor &x) {
      auto heads = [&](const Tensor &t) { return o::transpose(t.reshape({b, s, 2, 64}), 1, 2); };
      Tensor q = heads(o::matmul(x, wq) + bias), k = heads(o::gelu(o::matmul(x, wk)));
      Tensor a = o::scaled_dot_product_attention(q, k, k, std::nullopt, true); // [b, 2, s, 64]
      return o::relu(o::conv2d(a, wc, std::nullopt, {1}, {1}));
    };
    Tensor x = symbol_like(h);
    FlowGraph g = trace_from(net(x));
    FlowGraph c = graph::convert_precision(g, low);
    INFO(c.str());
    // Casts down: x once, then q and k (attention's inputs); the attention's output goes on to
    // the conv in low precision; casts back: the two matmuls and the conv.
    CHECK(count_named(c, "Cast") == 3 + 3);
    std::string lname = low == dtypes::f16 ? "float16" : "bfloat16";
    CHECK(c.str().find(lname + "[48, 128][cuda] = Matmul") != std::string::npos);
    CHECK(c.str().find(lname + "[2, 2, 24, 64][cuda] = ScaledDotProductAttention") != std::string::npos);
    CHECK(c.str().find(lname + "[2, 4, 24, 64][cuda] = Conv2d") != std::string::npos);
    graph::PassContext ctx;
    ctx.mixed_precision = low;
    FlowGraph opt = graph::optimize(g, ctx);
    INFO(opt.str());
    CHECK(count_named(opt, "FusedMatmul") == 2); // each stores f32 through its epilogue (cast, bias, gelu)
    for (int trial = 0; trial < 2; ++trial) {
      Tensor in = make({b * s, hidden}, dtypes::f32);
      Tensor want = net(in), got = opt(in);
      REQUIRE(got.dtype() == dtypes::f32);
      expect_close(got, want.shape(), want.to_double_vector(), false, low == dtypes::f16 ? 100 : 400);
    }
    auto report = graph::correctness_report(g, opt, {h});
    INFO(report.str());
    CHECK(report.str().find("Matmul") != std::string::npos);
  }
  // Already low precision: unchanged; a dtype that is not f16/bf16: an error.
  Tensor a = make({8, 8}, dtypes::f16);
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from(o::matmul(x, a));
  CHECK(graph::convert_precision(g, dtypes::f16).str() == g.str());
  expect_error([&] { graph::convert_precision(g, dtypes::f64); }, {"float16 or bfloat16, not float64"});
}

TEST_CASE("verify: a well-formed graph passes; a node given inputs its task does not read is named") {
  Tensor a = make({3, 5}, dtypes::f32), c = make({5}, dtypes::f32);
  Tensor x = symbol_like(a);
  FlowGraph g = trace_from(o::sum(o::exp(x) + c, {1}));
  graph::verify(g);
  graph::verify(graph::optimize(g)); // optimize verifies after every pass as well
  // A pass that rewires Exp onto an f16 tensor of another shape leaves an invalid graph.
  Tensor y = symbol({3, 4}, dtypes::f16, "cuda", "y");
  auto exp_op = g.nodes()[0];
  REQUIRE(exp_op->name() == "Exp");
  FlowGraph bad(outputs_of(exp_op->with_inputs({y})), {y});
  expect_error([&] { graph::verify(bad); }, {"invalid graph: input 0 of node 0 (Exp) is float16[3, 4]",
                                             "its task reads float32[3, 5]"});
}

TEST_CASE("fuse_attention: attention written out becomes one attention node") {
  // f16 heads of 64 (the flash-attention template), odd sequence lengths, an additive mask, the
  // scale as a multiplication or a division.
  const std::int64_t b = 2, h = 3, sq = 37, skv = 45, d = 64;
  Tensor qa = make({b, h, sq, d}, dtypes::f16), ka = make({b, h, skv, d}, dtypes::f16);
  Tensor va = make({b, h, skv, d}, dtypes::f16), mask = make({sq, skv}, dtypes::f16);
  for (bool divide : {false, true}) {
    CAPTURE(divide);
    auto net = [&](const Tensor &q, const Tensor &k, const Tensor &v) {
      Tensor s = o::matmul(q, o::transpose(k, -1, -2));
      s = divide ? s / 8.0 : s * 0.125;
      return o::matmul(o::softmax(s + mask, -1), v);
    };
    Tensor q = symbol_like(qa, "q"), k = symbol_like(ka, "k"), v = symbol_like(va, "v");
    FlowGraph g = trace_from(net(q, k, v), {q, k, v});
    FlowGraph f = graph::fuse_attention(g);
    INFO(f.str());
    REQUIRE(f.nodes().size() == 1);
    CHECK(f.str().find("ScaledDotProductAttention(q, k, v, c, is_causal=false, scale=0.125)") != std::string::npos);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor q1 = make({b, h, sq, d}, dtypes::f16), k1 = make({b, h, skv, d}, dtypes::f16),
             v1 = make({b, h, skv, d}, dtypes::f16);
      expect_same(f.run({q1, k1, v1})[0], g.run({q1, k1, v1})[0], 2);
    }
    auto report = graph::correctness_report(g, graph::optimize(g), {qa, ka, va});
    INFO(report.str());
    CHECK(!report.any_flagged());
  }
  // Not attention: softmax over another axis, or k transposed on other axes.
  Tensor q = symbol_like(qa, "q"), k = symbol_like(ka, "k"), v = symbol_like(va, "v");
  Tensor s = o::matmul(q, o::transpose(k, -1, -2));
  FlowGraph g1 = trace_from(o::matmul(o::softmax(s, 2), o::transpose(o::transpose(v, 1, 2), 1, 2)), {q, k, v});
  CHECK(count_named(graph::fuse_attention(g1), "ScaledDotProductAttention") == 0);
  // Scores read twice (returned as well): not swallowed.
  FlowGraph g2 = trace_from({o::matmul(o::softmax(s, -1), v), s}, {q, k, v});
  CHECK(count_named(graph::fuse_attention(g2), "ScaledDotProductAttention") == 0);
}

TEST_CASE("fuse_attention: scores in f32 under a Where mask (GPT-Neo's attention) become one attention node") {
  // GPT-Neo: q.to(f32) @ k.to(f32).transpose(-1, -2), torch.where(causal, scores, finfo.min),
  // + attention_mask, softmax, .to(v.dtype), @ v; no scale. q, k and v f16, heads of 64, odd lengths.
  const std::int64_t b = 2, h = 3, s = 37, d = 64;
  Tensor qa = make({b, h, s, d}, dtypes::f16), ka = make({b, h, s, d}, dtypes::f16), va = make({b, h, s, d}, dtypes::f16);
  std::vector<bool> causal(std::size_t(s * s)), some(std::size_t(s * s));
  std::bernoulli_distribution coin(0.6);
  for (std::int64_t i = 0; i < s; ++i)
    for (std::int64_t j = 0; j < s; ++j) {
      causal[std::size_t(i * s + j)] = j <= i;
      some[std::size_t(i * s + j)] = j == i || coin(g_rng); // every row attends somewhere
    }
  const Tensor lowest = o::full({}, -3.4028234663852886e38, dtypes::f32);
  auto net = [&](const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &cond, const Tensor &fill,
                 const std::optional<Tensor> &added) {
    Tensor sc = o::matmul(o::cast(q, dtypes::f32), o::transpose(o::cast(k, dtypes::f32), -1, -2));
    sc = o::where(cond, sc, fill);
    if (added) sc = sc + *added;
    return o::matmul(o::cast(o::softmax(sc, -1), dtypes::f16), v);
  };
  struct Case {
    const char *name;
    std::vector<bool> *cond;
    bool added;
    const char *expect; // in the fused node's printed form
  };
  for (Case c : {Case{"causal", &causal, true, "is_causal=true"}, Case{"a bool mask and an additive one", &some, true, ", c, is_causal=false"},
                 Case{"a bool mask alone", &some, false, ", c, is_causal=false"}}) {
    CAPTURE(c.name);
    Tensor cond = asarray(*c.cond, {1, 1, s, s});
    std::optional<Tensor> added; // zeros where causal (a padding mask without padding), else random
    if (c.added) added = c.cond == &causal ? o::full({b, 1, 1, s}, 0.0, dtypes::f32) : make({b, 1, 1, s}, dtypes::f32);
    Tensor q = symbol_like(qa, "q"), k = symbol_like(ka, "k"), v = symbol_like(va, "v");
    FlowGraph g = trace_from(net(q, k, v, cond, lowest, added), {q, k, v});
    FlowGraph f = graph::fuse_attention(g);
    INFO(f.str());
    CHECK(count_named(f, "ScaledDotProductAttention") == 1);
    CHECK(count_named(f, "Cast") == 0);
    CHECK(f.str().find(c.expect) != std::string::npos);
    CHECK(f.str().find("scale=1)") != std::string::npos);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor q1 = make({b, h, s, d}, dtypes::f16), k1 = make({b, h, s, d}, dtypes::f16), v1 = make({b, h, s, d}, dtypes::f16);
      expect_same(graph::optimize(g).run({q1, k1, v1})[0], g.run({q1, k1, v1})[0], 2);
    }
  }
  Tensor cond = asarray(causal, {1, 1, s, s});
  { // f32 throughout (GPT-Neo run in f32: no casts): the same rule, on the f32 attention kernel
    Tensor q32 = make({b, h, s, d}, dtypes::f32), k32 = make({b, h, s, d}, dtypes::f32), v32 = make({b, h, s, d}, dtypes::f32);
    Tensor q = symbol_like(q32, "q"), k = symbol_like(k32, "k"), v = symbol_like(v32, "v");
    Tensor sc = o::where(cond, o::matmul(q, o::transpose(k, -1, -2)), lowest);
    FlowGraph g = trace_from(o::matmul(o::softmax(sc, -1), v), {q, k, v});
    FlowGraph f = graph::fuse_attention(g);
    INFO(f.str());
    CHECK(count_named(f, "ScaledDotProductAttention") == 1);
    CHECK(f.str().find("is_causal=true") != std::string::npos);
    expect_same(graph::optimize(g).run({q32, k32, v32})[0], g.run({q32, k32, v32})[0], 2);
  }
  // Not attention's mask: a fill that is not far below the scores (0), or the scores kept where
  // the condition fails (where(cond, fill, scores)); k not cast while q is (f32 k): left alone.
  Tensor q = symbol_like(qa, "q"), k = symbol_like(ka, "k"), v = symbol_like(va, "v");
  CHECK(count_named(graph::fuse_attention(trace_from(net(q, k, v, cond, o::full({}, 0.0, dtypes::f32), std::nullopt), {q, k, v})),
                    "ScaledDotProductAttention") == 0);
  Tensor sc = o::matmul(o::cast(q, dtypes::f32), o::transpose(o::cast(k, dtypes::f32), -1, -2));
  Tensor flipped = o::matmul(o::cast(o::softmax(o::where(cond, lowest, sc), -1), dtypes::f16), v);
  CHECK(count_named(graph::fuse_attention(trace_from(flipped, {q, k, v})), "ScaledDotProductAttention") == 0);
  Tensor k32 = symbol({b, h, s, d}, dtypes::f32, "cuda", "k32");
  Tensor mixed = o::matmul(o::cast(o::softmax(o::matmul(o::cast(q, dtypes::f32), o::transpose(k32, -1, -2)), -1), dtypes::f16), v);
  CHECK(count_named(graph::fuse_attention(trace_from(mixed, {q, k32, v})), "ScaledDotProductAttention") == 0);
}

TEST_CASE("fuse_attention: attention at a head dim no kernel serves is written out, and fused") {
  // MobileViT's heads of 20 and 24 (and 40; f16): no template serves them and more than 8 query rows
  // rule out the decode kernel, so the ScaledDotProductAttention node ran the composition unfused
  // at every call (7 kernels). fuse_attention writes the composition out instead: the products, the
  // scale, the casts, the softmax and the heads' merge fuse into 3 kernels, and k's transpose is a
  // fourth (the products read their operands row-major). With a mask and causal, odd lengths; the
  // output matches the node's (eager) composition.
  const std::int64_t b = 2, h = 3, sq = 19, skv = 23;
  for (std::int64_t d : {20, 24, 40})
    for (bool heads_last : {false, true})
      for (bool masked : {false, true}) {
        CAPTURE(d);
        CAPTURE(heads_last);
        CAPTURE(masked);
        Tensor qa = make({b, h, sq, d}, dtypes::f16), ka = make({b, h, skv, d}, dtypes::f16);
        Tensor va = make({b, h, skv, d}, dtypes::f16), mask = make({sq, skv}, dtypes::f16);
        CHECK(o::attention_runs_composed(qa, ka, va));
        auto net = [&](const Tensor &q, const Tensor &k, const Tensor &v) {
          std::optional<Tensor> m;
          if (masked) m = mask;
          return heads_last ? o::scaled_dot_product_attention_heads_last(q, k, v, m, masked)
                            : o::scaled_dot_product_attention(q, k, v, m, masked);
        };
        Tensor q = symbol_like(qa, "q"), k = symbol_like(ka, "k"), v = symbol_like(va, "v");
        FlowGraph g = trace_from(net(q, k, v), {q, k, v});
        CHECK(count_named(g, "ScaledDotProductAttention") == 1);
        CHECK(count_named(graph::fuse_attention(g), "ScaledDotProductAttention") == 0);
        FlowGraph opt = graph::optimize(g);
        INFO(opt.str());
        CHECK(count_named(opt, "ScaledDotProductAttention") == 0);
        if (!masked) CHECK(int(opt.nodes().size()) - count_named(opt, "Reshape") == 4);
        for (int trial = 0; trial < 2; ++trial) {
          Tensor q1 = make({b, h, sq, d}, dtypes::f16), k1 = make({b, h, skv, d}, dtypes::f16),
                 v1 = make({b, h, skv, d}, dtypes::f16);
          expect_same(opt.run({q1, k1, v1})[0], g.run({q1, k1, v1})[0], 2);
        }
      }
  // Served by a kernel (head dim 32 or 16, v's head dim 32 with q's 16) or by the decode kernel
  // (8 query rows): the node stays. A v head dim no kernel takes (48) is composed.
  Tensor q32 = make({b, h, sq, 32}, dtypes::f16), k32 = make({b, h, skv, 32}, dtypes::f16);
  CHECK(!o::attention_runs_composed(q32, k32, k32));
  Tensor q16 = make({b, h, sq, 16}, dtypes::f16), k16 = make({b, h, skv, 16}, dtypes::f16);
  CHECK(!o::attention_runs_composed(q16, k16, k16));
  CHECK(!o::attention_runs_composed(q16, k16, k32));
  CHECK(o::attention_runs_composed(q16, k16, make({b, h, skv, 48}, dtypes::f16)));
  Tensor q8 = make({b, h, 8, 20}, dtypes::f16), k20 = make({b, h, skv, 20}, dtypes::f16);
  CHECK(!o::attention_runs_composed(q8, k20, k20));
  Tensor ks = symbol_like(k20, "k"), qd = symbol_like(q8, "q");
  FlowGraph decode = trace_from(o::scaled_dot_product_attention(qd, ks, ks), {qd, ks});
  CHECK(count_named(graph::fuse_attention(decode), "ScaledDotProductAttention") == 1);
}

TEST_CASE("fuse_attention: LeViT's attention (k permuted (0, 2, 3, 1), v's head dim twice q's, a bias per head)") {
  // timm's LeViT: q, k, v = qkv(x).view(B, N, H, -1).split([16, 16, 32], dim=3); q.permute(0, 2, 1,
  // 3) @ k.permute(0, 2, 3, 1) * scale + bias [H, N, N], softmax, @ v.permute(0, 2, 1, 3), then the
  // heads merged (transpose(1, 2).reshape(B, N, H * 32)). One attention node that reads q, k and v
  // in place from the projection's output (no permuted copies) and stores the merged layout; the
  // same output as the graph written out. f16 and bf16, 49 tokens (its second stage).
  const std::int64_t b = 2, n = 49, h = 3, dk = 16, dv = 32;
  for (DataType dt : {dtypes::f16, dtypes::bf16}) {
    CAPTURE(dt);
    Tensor xa = make({b, n, h, 2 * dk + dv}, dt), bias = make({h, n, n}, dt);
    auto net = [&](const Tensor &x) {
      Tensor q = o::permute(o::slice(x, {3}, {0}, {dk}), {0, 2, 1, 3});
      Tensor k = o::permute(o::slice(x, {3}, {dk}, {2 * dk}), {0, 2, 3, 1});
      Tensor v = o::permute(o::slice(x, {3}, {2 * dk}, {2 * dk + dv}), {0, 2, 1, 3});
      Tensor s = o::matmul(q, k) * 0.25 + bias;
      return o::permute(o::matmul(o::softmax(s, -1), v), {0, 2, 1, 3}).reshape({b, n, h * dv});
    };
    Tensor x = symbol_like(xa, "x");
    FlowGraph g = trace_from(net(x), {x});
    FlowGraph f = graph::fuse_attention(g);
    INFO(f.str());
    CHECK(count_named(f, "ScaledDotProductAttentionPacked") == 1);
    CHECK(f.str().find("q=0:16, k=16:16, v=32:32, is_causal=false, scale=0.25, heads_last=true") != std::string::npos);
    CHECK(count_named(f, "Matmul") == 0);
    CHECK(count_named(f, "Softmax") == 0);
    CHECK(count_named(f, "Permute") == 0);
    CHECK(count_named(f, "Slice") == 0);
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(int(opt.nodes().size()) - count_named(opt, "Reshape") == 1); // the attention alone
    for (int trial = 0; trial < 2; ++trial) {
      Tensor x1 = make({b, n, h, 2 * dk + dv}, dt);
      expect_same(opt.run({x1})[0], g.run({x1})[0], 2);
    }
  }
  // k permuted otherwise (0, 3, 2, 1: not the keys' layout): left alone.
  Tensor x = symbol({b, n, h, 2 * dk + dv}, dtypes::f16, "cuda", "x");
  Tensor q = o::permute(o::slice(x, {3}, {0}, {dk}), {0, 2, 1, 3});
  Tensor kx = o::reshape(o::slice(x, {3}, {dk}, {2 * dk}), {b, n, dk, h});
  Tensor v = o::permute(o::slice(x, {3}, {2 * dk}, {2 * dk + dv}), {0, 2, 1, 3});
  Tensor s = o::matmul(q, o::permute(kx, {0, 3, 2, 1}));
  CHECK(count_named(graph::fuse_attention(trace_from(o::matmul(o::softmax(s, -1), v), {x})), "ScaledDotProductAttention") == 0);
}

TEST_CASE("fuse_attention: q scaled before the product (Swin's q * scale) folds into the attention's scale") {
  // Swin-T's window attention: heads of 32, 49 tokens, q * 32^-0.5 then q k^T + bias; also q / c
  // into an attention with a scale of its own and the [B, Sq, H, D] output, and a q read twice.
  const std::int64_t b = 3, h = 2, s = 49, d = 32;
  Tensor qa = make({b, h, s, d}, dtypes::f16), ka = make({b, h, s, d}, dtypes::f16), va = make({b, h, s, d}, dtypes::f16);
  Tensor bias = make({1, h, s, s}, dtypes::f16);
  const double c = 1.0 / std::sqrt(32.0);
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    auto net = [&](const Tensor &q, const Tensor &k, const Tensor &v) -> std::vector<Tensor> {
      if (variant == 0) {
        Tensor sc = o::matmul(q * c, o::transpose(k, -1, -2)) + bias;
        return {o::matmul(o::softmax(sc, -1), v)};
      }
      Tensor y = o::scaled_dot_product_attention(q / 4.0, k, v, bias, false, 0.5);
      if (variant == 1) return {o::permute(y, {0, 2, 1, 3})};
      return {y, q / 4.0}; // the scaled q is an output too: it stays, the attention reads q
    };
    Tensor q = symbol_like(qa, "q"), k = symbol_like(ka, "k"), v = symbol_like(va, "v");
    FlowGraph g = trace_from(net(q, k, v), {q, k, v});
    FlowGraph f = graph::fuse_attention(g);
    INFO(f.str());
    const std::string want = variant == 0 ? "ScaledDotProductAttention(q, k, v, c, is_causal=false, scale=0.17677669529663687)"
                                          : "ScaledDotProductAttention(q, k, v, c, is_causal=false, scale=0.125";
    CHECK(f.str().find(want) != std::string::npos);
    CHECK(count_named(f, "Mul") + count_named(f, "Div") == (variant == 2 ? 1 : 0));
    if (variant == 1) CHECK(f.str().find("heads_last=true") != std::string::npos);
    for (int trial = 0; trial < 2; ++trial) {
      Tensor q1 = make({b, h, s, d}, dtypes::f16), k1 = make({b, h, s, d}, dtypes::f16), v1 = make({b, h, s, d}, dtypes::f16);
      auto got = f.run({q1, k1, v1}), ref = g.run({q1, k1, v1});
      for (std::size_t i = 0; i < got.size(); ++i) expect_same(got[i], ref[i], 4);
    }
  }
}

TEST_CASE("fuse_attention: Swin's shifted-window attention (bias, per-window mask through views) is one node") {
  // 4 windows of 49 tokens per image, 2 images, heads of 32: scores + bias [1, H, N, N], viewed as
  // [images, windows, H, N, N] + mask [1, windows, 1, N, N] (0 or -100), viewed back.
  const std::int64_t imgs = 2, nw = 4, b = imgs * nw, h = 3, n = 49, d = 32;
  Tensor qa = make({b, h, n, d}, dtypes::f16), ka = make({b, h, n, d}, dtypes::f16), va = make({b, h, n, d}, dtypes::f16);
  Tensor bias = make({1, h, n, n}, dtypes::f16);
  std::vector<double> mv(std::size_t(nw * n * n));
  for (std::size_t i = 0; i < mv.size(); ++i) mv[i] = (i * 7919 % 5 == 0 && i % std::size_t(n) != 0) ? -100.0 : 0.0;
  Tensor wmask = asarray(mv, {1, nw, 1, n, n}, dtypes::f16).to("cuda");
  auto net = [&](const Tensor &q, const Tensor &k, const Tensor &v) {
    Tensor sc = o::matmul(q * (1.0 / std::sqrt(32.0)), o::transpose(k, -1, -2)) + bias;
    sc = (sc.reshape({imgs, nw, h, n, n}) + wmask).reshape({b, h, n, n});
    return o::matmul(o::softmax(sc, -1), v);
  };
  Tensor q = symbol_like(qa, "q"), k = symbol_like(ka, "k"), v = symbol_like(va, "v");
  FlowGraph g = trace_from(net(q, k, v), {q, k, v});
  FlowGraph f = graph::fuse_attention(g);
  INFO(f.str());
  CHECK(f.nodes().size() == 1);
  CHECK(f.str().find("float16[8, 3, 49, 32][cuda] = ScaledDotProductAttention(q, k, v, c, is_causal=false, scale=0.17677") !=
        std::string::npos);
  for (int trial = 0; trial < 2; ++trial) {
    Tensor q1 = make({b, h, n, d}, dtypes::f16), k1 = make({b, h, n, d}, dtypes::f16), v1 = make({b, h, n, d}, dtypes::f16);
    expect_same(f.run({q1, k1, v1})[0], g.run({q1, k1, v1})[0], 4);
  }
  // Views to another shape than the scores' (not attention over the same rows): left alone.
  auto other = [&](const Tensor &q, const Tensor &k, const Tensor &v) {
    Tensor sc = o::matmul(q, o::transpose(k, -1, -2)) + bias;
    sc = (sc.reshape({imgs, nw, h, n, n}) + wmask).reshape({imgs, nw * h, n, n});
    return o::matmul(o::softmax(sc, -1), v.reshape({imgs, nw * h, n, d}));
  };
  FlowGraph g2 = trace_from(other(q, k, v), {q, k, v});
  CHECK(count_named(graph::fuse_attention(g2), "ScaledDotProductAttention") == 0);
}

TEST_CASE("eliminate_common_subexpressions: repeated work is done once; opaque operators stay") {
  Tensor a = make({6, 10}, dtypes::f32), w = make({10, 4}, dtypes::f32);
  Tensor x = symbol_like(a);
  auto opaque = [](const Tensor &t) {
    return hidet::apply_operator("Noise", {t}, {{t.sym_shape(), t.dtype(), t.device()}},
                                 [](const std::vector<Tensor> &in) { return std::vector<Tensor>{o::exp(in[0])}; })[0];
  };
  Tensor y = o::exp(x) + o::exp(x);
  Tensor z = o::matmul(y, w) * o::matmul(y, w);
  FlowGraph g = trace_from({z, opaque(x) + opaque(x)}, {x});
  FlowGraph c = graph::eliminate_common_subexpressions(g);
  INFO(c.str());
  CHECK(count_named(g, "Exp") == 2);
  CHECK(count_named(c, "Exp") == 1);
  CHECK(count_named(c, "Matmul") == 1);
  CHECK(count_named(c, "Noise") == 2);
  Tensor in = make({6, 10}, dtypes::f32);
  auto want = g.run({in}), got = c.run({in});
  for (std::size_t i = 0; i < 2; ++i) expect_same(got[i], want[i]);
}

TEST_CASE("bind_kernel_options: tensor cores off and split-k, bound to the matmul nodes") {
  // The choice itself: no template candidate for f16 without tensor cores; a forced split-k.
  {
    option::KernelOptionsScope off(option::KernelOptions{false, 0});
    CHECK(ops::matmul_candidates(128, 128, 256, dtypes::f16, 0).empty());
    CHECK(!ops::matmul_candidates(128, 128, 256, dtypes::f32, 0).empty()); // f32: the FMA kernel still
    {
      option::KernelOptionsScope split(option::KernelOptions{true, 4});
      CHECK(option::kernel_options().parallel_k == 4);
      auto c = ops::matmul_candidates(64, 48, 4096, dtypes::f32, 0);
      REQUIRE(c.size() == 1);
      CHECK(c[0].label.find("split-k 4") != std::string::npos);
    }
    CHECK(!option::kernel_options().tensor_cores); // restored by the inner scope's end
  }
  CHECK(option::kernel_options() == option::KernelOptions{});
  CHECK_THROWS_AS(option::KernelOptionsScope(option::KernelOptions{true, -2}), ValueError);

  // Through optimize: the nodes print their options and compute the same values.
  Tensor a = make({37, 2048}, dtypes::f32, -1, 1), w = make({2048, 45}, dtypes::f32, -1, 1), b = make({45}, dtypes::f32);
  auto net = [&](const Tensor &x) { return o::relu(o::matmul(x, w) + b); };
  FlowGraph g = trace_from(net(symbol_like(a)));
  graph::PassContext split, unsplit;
  split.parallel_k = 4;
  unsplit.parallel_k = 1;
  FlowGraph s4 = graph::optimize(g, split), s1 = graph::optimize(g, unsplit);
  INFO(s4.str());
  CHECK(s4.str().find("FusedMatmul(") != std::string::npos);
  CHECK(s4.str().find("parallel_k=4") != std::string::npos);
  CHECK(graph::optimize(g).str().find("parallel_k") == std::string::npos); // the defaults bind nothing
  Tensor in = make({37, 2048}, dtypes::f32, -1, 1);
  expect_same(s4(in), net(in), 4);
  expect_same(s1(in), net(in), 4);
  // Split-k sums its slices with a second kernel: two launches per run against one.
  struct CountLaunches : runtime::detail::CommandHook {
    int launches = 0;
    void kernel(const KernelHandle &, backend::Dim3, backend::Dim3, std::size_t, const std::vector<backend::KernelArg> &,
                const std::vector<const TensorMap *> &) override {
      ++launches;
    }
    void copy(void *, Device, const void *, Device, std::size_t) override {}
    void fill(void *, Device, std::uint8_t, std::size_t) override {}
  };
  graph::CompiledGraph c4(s4), c1(s1);
  auto launches = [&](const graph::CompiledGraph &cg) {
    CountLaunches counter;
    runtime::detail::command_hook() = &counter;
    (void)cg(in);
    runtime::detail::command_hook() = nullptr;
    return counter.launches;
  };
  CHECK(launches(c4) == 2);
  CHECK(launches(c1) == 1);
  expect_same(c4(in), net(in), 4);

  // f16 without tensor cores: the auto-scheduled kernel, the same values.
  Tensor h = make({33, 72}, dtypes::f16), wh = make({72, 40}, dtypes::f16);
  auto net16 = [&](const Tensor &x) { return o::gelu(o::matmul(x, wh)); };
  graph::PassContext cuda_cores;
  cuda_cores.tensor_cores = false;
  FlowGraph h0 = graph::optimize(trace_from(net16(symbol_like(h))), cuda_cores);
  CHECK(h0.str().find("tensor_cores=false") != std::string::npos);
  Tensor hin = make({33, 72}, dtypes::f16);
  expect_same(graph::CompiledGraph(h0)(hin), net16(hin), 2);
}

TEST_CASE("reduce precision f16: f16 matmuls accumulate in f16 on the mma.sync template") {
  {
    option::KernelOptions f16acc;
    f16acc.f16_accumulation = true;
    option::KernelOptionsScope scope(f16acc);
    for (int space : {0, 1}) {
      auto c = ops::matmul_candidates(256, 256, 512, dtypes::f16, space);
      REQUIRE(!c.empty());
      for (auto &cand : c) { // every candidate: mma.sync with f16 accumulators (no wgmma)
        INFO(cand.label);
        CHECK(cand.label.find("mma.sync") == 0);
        CHECK(cand.label.find("f16 accumulation") != std::string::npos);
      }
    }
    // bf16 and f32 products keep f32 accumulators.
    for (auto &cand : ops::matmul_candidates(256, 256, 512, dtypes::bf16, 1))
      CHECK(cand.label.find("f16 accumulation") == std::string::npos);
    CHECK(ops::matmul_candidates(64, 64, 64, dtypes::f32, 0)[0].label.find("fma") == 0);
  }
  CHECK_THROWS_AS(ops::templates::MatmulF16(32, 32, 32, dtypes::bf16, [] {
                    ops::templates::MatmulF16Config c;
                    c.acc_f16 = true;
                    return c;
                  }()),
                  ValueError);

  // Through optimize: a long reduction of positive products (sums near 500, where f16's spacing
  // is 0.25 to 0.5) loses more with f16 accumulators than with f32 ones; both stay close to the
  // exact result.
  const std::int64_t m = 24, k = 2048, n = 40;
  Tensor a = make({m, k}, dtypes::f16, 0, 1), w = make({k, n}, dtypes::f16, 0, 1);
  auto net = [&](const Tensor &x) { return o::relu(o::matmul(x, w)); };
  FlowGraph g = trace_from(net(symbol_like(a)));
  graph::PassContext ctx;
  ctx.reduce_precision = dtypes::f16;
  FlowGraph opt16 = graph::optimize(g, ctx);
  INFO(opt16.str());
  CHECK(opt16.str().find("reduce_precision=f16") != std::string::npos);
  ctx.reduce_precision = dtypes::f32; // the default: nothing bound
  CHECK(graph::optimize(g, ctx).str().find("reduce_precision") == std::string::npos);
  auto av = a.to_double_vector(), wv = w.to_double_vector();
  auto rel_err = [&](const Tensor &y) {
    auto yv = y.to_double_vector();
    double worst = 0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double e = 0;
        for (std::int64_t r = 0; r < k; ++r) e += av[std::size_t(i * k + r)] * wv[std::size_t(r * n + j)];
        worst = std::max(worst, std::abs(yv[std::size_t(i * n + j)] - e) / e);
      }
    return worst;
  };
  double err16 = rel_err(graph::CompiledGraph(opt16)(a)), err32 = rel_err(graph::optimize(g)(a));
  CAPTURE(err16);
  CAPTURE(err32);
  CHECK(err32 < 1e-3); // the f16 output's rounding only
  CHECK(err16 < 3e-2);
  CHECK(err16 > 2 * err32);
  ctx.reduce_precision = dtypes::bf16;
  CHECK_THROWS_WITH_AS(graph::optimize(g, ctx), doctest::Contains("reduce precision bf16"), ValueError);
}

TEST_CASE("fuse_attention: attention followed by the heads' merge stores [B, Sq, H, D] itself") {
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    CAPTURE(dt.name());
    const std::int64_t b = 2, h = 3, s = 37, d = 64;
    Tensor q = make({b, h, s, d}, dt, -1, 1), k = make({b, h, s, d}, dt, -1, 1), v = make({b, h, s, d}, dt, -1, 1);
    Tensor mask = make({1, 1, s, s}, dt, -1, 0);
    auto f = [&](const Tensor &x) {
      Tensor o = o::scaled_dot_product_attention(x, k, v, mask, false, 0.2);
      return o::permute(o, {0, 2, 1, 3}).reshape({b, s, h * d});
    };
    FlowGraph g = trace_from(f(symbol_like(q)));
    FlowGraph opt = graph::fuse_attention(g);
    INFO(opt.str());
    CHECK(count_named(opt, "Permute") == 0);
    CHECK(opt.str().find("heads_last=true") != std::string::npos);
    Tensor x = make({b, h, s, d}, dt, -1, 1);
    expect_same(opt(x), f(x), 2);
    expect_same(graph::optimize(g)(x), f(x), 2);
    if (dt == dtypes::f32) { // mixed precision rebuilds the node in f16: it keeps the layout
      graph::PassContext amp;
      amp.mixed_precision = dtypes::f16;
      FlowGraph low = graph::optimize(g, amp);
      INFO(low.str());
      CHECK(low.str().find("float16[2, 37, 3, 64][cuda] = ScaledDotProductAttention") != std::string::npos);
      auto got = low(x).to_double_vector(), want = f(x).to_double_vector();
      double err = 0;
      for (std::size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(got[i] - want[i]));
      CHECK(err < 2e-2);
    }
    // Eager: the same values as the permuted attention.
    expect_same(o::scaled_dot_product_attention_heads_last(x, k, v, mask, false, 0.2),
                o::permute(o::scaled_dot_product_attention(x, k, v, mask, false, 0.2), {0, 2, 1, 3}), 2);
  }
}

TEST_CASE("fuse_attention: grouped-query attention over repeated k and v (repeat_kv) reads them unrepeated") {
  const std::int64_t b = 2, h = 6, hkv = 2, s = 1, t = 41, d = 32;
  for (bool with_mask : {false, true}) {
    CAPTURE(with_mask);
    Tensor q = make({b, h, s, d}, dtypes::f16, -1, 1), mask = make({b, 1, s, t}, dtypes::boolean);
    auto repeat_kv = [&](const Tensor &x) { // transformers' repeat_kv
      return o::broadcast_to(x.reshape({b, hkv, 1, t, d}), {b, hkv, h / hkv, t, d}).reshape({b, h, t, d});
    };
    auto f = [&](const Tensor &k, const Tensor &v) {
      return o::scaled_dot_product_attention(q, repeat_kv(k), repeat_kv(v),
                                             with_mask ? std::optional<Tensor>(mask) : std::nullopt, false, 0.3);
    };
    Tensor k = make({b, hkv, t, d}, dtypes::f16, -1, 1), v = make({b, hkv, t, d}, dtypes::f16, -1, 1);
    Tensor ks = symbol_like(k, "k"), vs = symbol_like(v, "v");
    FlowGraph g = trace_from({f(ks, vs)}, {ks, vs});
    FlowGraph opt = graph::fuse_attention(g);
    INFO(opt.str());
    CHECK(count_named(g, "BroadcastTo") == 2);
    CHECK(count_named(opt, "BroadcastTo") == 0);
    CHECK(count_named(opt, "ScaledDotProductAttention") == 1);
    expect_same(opt(k, v), f(k, v), 2);
    expect_same(graph::optimize(g)(k, v), f(k, v), 2);
  }
  // Not a repeat of whole heads (the group axis after the sequence): left alone.
  Tensor q = make({1, 4, 1, 16}, dtypes::f16, -1, 1);
  auto f = [&](const Tensor &k) {
    Tensor r = o::broadcast_to(k.reshape({1, 2, 5, 1, 16}), {1, 2, 5, 2, 16}).reshape({1, 4, 5, 16});
    return o::scaled_dot_product_attention(q, r, r, std::nullopt, false, 0.3);
  };
  Tensor k = make({1, 2, 5, 16}, dtypes::f16, -1, 1);
  FlowGraph g = trace_from({f(symbol_like(k))});
  CHECK(count_named(graph::fuse_attention(g), "BroadcastTo") == count_named(g, "BroadcastTo"));
}

TEST_CASE("quantize_weights_int8: products by constant weights read them as int8, scales in the epilogue") {
  for (DataType dt : {dtypes::f16, dtypes::bf16}) {
    CAPTURE(dt.name());
    const std::int64_t k = 96, n = 80;
    Tensor w = make({k, n}, dt, -0.5, 0.5), bias = make({n}, dt), small = make({k, 8}, dt);
    auto f = [&](const Tensor &x) { // a product with a bias; a narrow one (N < 64) stays
      return std::vector<Tensor>{o::matmul(x, w) + bias, o::matmul(x, small)};
    };
    Tensor in = make({3, k}, dt, -1, 1);
    FlowGraph g = trace_from(f(symbol_like(in)));
    FlowGraph q = graph::quantize_weights_int8(g);
    INFO(q.str());
    CHECK(q.str().find("int8[96, 80]") != std::string::npos);
    CHECK(q.str().find("int8[96, 8]") == std::string::npos);
    graph::PassContext ctx;
    ctx.weight_only_int8 = true;
    FlowGraph opt = graph::optimize(g, ctx);
    INFO(opt.str());
    // the scales, the cast back and the bias are the product's epilogue: one kernel
    CHECK(opt.str().find("FusedMatmul(x, c, c_1, c_2, fused_graph=FlowGraph(Matmul, Mul, Cast, Add), anchor=0)") !=
          std::string::npos);
    for (std::int64_t rows : {3, 20}) { // the few-rows kernel, and b converted for more rows
      CAPTURE(rows);
      Tensor x = make({rows, k}, dt, -1, 1);
      FlowGraph gr = trace_from(f(symbol_like(x)));
      ctx.weight_only_int8 = true;
      auto got = graph::optimize(gr, ctx).run({x}), want = f(x);
      // the weights' int8 rounding: |w - q s| <= s / 2 = max|w| / 254 per element
      auto gv = got[0].to_double_vector(), wv = want[0].to_double_vector();
      double worst = 0;
      for (std::size_t i = 0; i < gv.size(); ++i) worst = std::max(worst, std::abs(gv[i] - wv[i]));
      CAPTURE(worst);
      CHECK(worst > 0);        // quantized
      CHECK(worst < 0.15);     // k * 0.5 / 254 * |x| bounds the error by 0.19; typical far less
      expect_same(got[1], want[1], 2);
    }
  }
}

TEST_CASE("merge_sibling_matmuls: Q, K and V projections become one product, heads split in its epilogue") {
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    CAPTURE(dt.name());
    // heads of 32, which the attention kernels serve (the attention becomes one node)
    const std::int64_t b = 2, s = 13, h = 3, d = 32, e = h * d;
    Tensor in = make({b, s, e}, dt, -1, 1);
    std::vector<Tensor> w, bias;
    for (int i = 0; i < 3; ++i) w.push_back(make({e, e}, dt, -0.3, 0.3)), bias.push_back(make({e}, dt));
    Tensor w_other = make({e, 2 * e}, dt, -0.3, 0.3); // another width: not merged
    auto heads = [&](const Tensor &t) { return o::permute(t.reshape({b, s, h, d}), {0, 2, 1, 3}); };
    auto f = [&](const Tensor &x) {
      Tensor q = heads(o::matmul(x, w[0]) + bias[0]), k = heads(o::matmul(x, w[1]) + bias[1]);
      Tensor v = heads(o::matmul(x, w[2]) + bias[2]);
      Tensor att = o::matmul(o::softmax(o::matmul(q, o::transpose(k, -2, -1)), -1), v);
      return std::vector<Tensor>{att, o::matmul(x, w_other)};
    };
    FlowGraph g = trace_from(f(symbol_like(in)));
    FlowGraph merged = graph::merge_sibling_matmuls(graph::fuse_attention(g)); // optimize's order
    INFO(merged.str());
    CHECK(count_named(merged, "Narrow") == 3);
    CHECK(merged.str().find("float" + std::string(dt == dtypes::f16 ? "16" : "32") + "[96, 288]") != std::string::npos);
    Tensor x = make({b, s, e}, dt, -1, 1);
    auto want = f(x);
    auto got = merged.run({x});
    expect_same(got[0], want[0], 4);
    expect_same(got[1], want[1], 4);
    // Through optimize: the three projections, their biases and head splits are one kernel.
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(opt.str().find("fused_graph=FlowGraph(Matmul, Add, Reshape, Permute, Reshape, Permute), anchor=0") !=
          std::string::npos);
    auto got2 = graph::CompiledGraph(opt).run({x});
    expect_same(got2[0], want[0], 4);
    expect_same(got2[1], want[1], 4);
  }
  // Siblings without biases read by reductions: merged products, values kept.
  Tensor in = make({5, 24}, dtypes::f32), w1 = make({24, 8}, dtypes::f32), w2 = make({24, 8}, dtypes::f32);
  auto f = [&](const Tensor &x) {
    Tensor p = o::matmul(x, w1), q = o::matmul(x, w2);
    return std::vector<Tensor>{o::softmax(p, -1), o::sum(q, {1})};
  };
  FlowGraph g = trace_from(f(symbol_like(in)));
  FlowGraph merged = graph::merge_sibling_matmuls(g);
  INFO(merged.str());
  CHECK(count_named(merged, "Matmul") == 1);
  Tensor x = make({5, 24}, dtypes::f32);
  auto want = f(x);
  auto got = merged.run({x});
  expect_same(got[0], want[0]);
  expect_same(got[1], want[1]);
  // Siblings without biases whose heads are split alike (Llama's K and V projections): merged,
  // the split applied once to both.
  auto f3 = [&](const Tensor &x) {
    Tensor k = o::matmul(x, w1).reshape({5, 2, 4}), v = o::matmul(x, w2).reshape({5, 2, 4});
    return std::vector<Tensor>{o::softmax(k, -1), o::sum(v, {2})};
  };
  FlowGraph g3 = trace_from(f3(symbol_like(in)));
  FlowGraph merged3 = graph::merge_sibling_matmuls(g3);
  INFO(merged3.str());
  CHECK(count_named(merged3, "Matmul") == 1);
  auto want3 = f3(x);
  auto got3 = merged3.run({x});
  expect_same(got3[0], want3[0]);
  expect_same(got3[1], want3[1]);
  // A sibling whose own epilogue would be lost (an activation after it): nothing merges.
  auto f2 = [&](const Tensor &x) { return std::vector<Tensor>{o::softmax(o::matmul(x, w1), -1), o::gelu(o::matmul(x, w2))}; };
  FlowGraph g2 = trace_from(f2(symbol_like(in)));
  CHECK(count_named(graph::merge_sibling_matmuls(g2), "Matmul") == 2);
}

TEST_CASE("graphs traced from the same weights share their derived constants") {
  // A model compiled per input shape (a batch of 1 and of 6, prefill and decode): the linear
  // weights' transposes and the sibling products' merged weights are computed once and held once
  // (an 8B Llama's graphs for three batch sizes held 122 GB before, runtime/shared_constants.hpp).
  const std::int64_t e = 32;
  std::vector<Tensor> w, bias;
  for (int i = 0; i < 3; ++i)
    w.push_back(make({e, e}, dtypes::f32, -0.3, 0.3)), bias.push_back(make({e}, dtypes::f32));
  Tensor w_out = make({e, e}, dtypes::f32, -0.3, 0.3);
  auto f = [&](const Tensor &x) {
    const std::int64_t b = x.sym_shape()[0].value();
    auto heads = [&](const Tensor &t) { return o::permute(t.reshape({b, 5, 2, e / 2}), {0, 2, 1, 3}); };
    Tensor q = heads(o::linear(x, w[0], bias[0])), k = heads(o::linear(x, w[1], bias[1]));
    Tensor v = heads(o::linear(x, w[2], bias[2]));
    Tensor att = o::matmul(o::softmax(o::matmul(q, o::transpose(k, -2, -1)), -1), v);
    return o::linear(o::permute(att, {0, 2, 1, 3}).reshape({b, 5, e}), w_out);
  };
  auto weights_of = [](const FlowGraph &g) {
    std::set<const void *> out;
    for (const auto &c : g.constants())
      if (c.ndim() == 2) out.insert(c.data_ptr());
    return out;
  };
  const std::size_t before = shared_constants_alive();
  std::vector<FlowGraph> graphs;
  std::vector<std::set<const void *>> held;
  for (std::int64_t rows : {1, 6, 1}) {
    Tensor x = make({rows, 5, e}, dtypes::f32, -1, 1);
    FlowGraph g = graph::optimize(trace_from({f(symbol_like(x))}));
    INFO(g.str());
    expect_same(graph::CompiledGraph(g).run({x})[0], f(x), 4);
    held.push_back(weights_of(g));
    graphs.push_back(std::move(g));
  }
  // Each graph holds the merged [32, 96] weights of q, k and v and w_out's transpose: the same
  // tensors in all three.
  CHECK(held[0].size() == 2);
  CHECK(held[0] == held[1]);
  CHECK(held[0] == held[2]);
  CHECK(shared_constants_alive() > before);
  // Weight-only int8: the quantized weights and their scales are shared likewise.
  graph::PassContext int8;
  int8.weight_only_int8 = true;
  Tensor w1 = make({96, 64}, dtypes::f16, -0.3, 0.3), w2 = make({64, 96}, dtypes::f16, -0.3, 0.3);
  auto mlp = [&](const Tensor &x) { return o::linear(o::gelu(o::linear(x, w1)), w2); };
  std::vector<std::set<const void *>> quantized;
  for (std::int64_t rows : {1, 6}) {
    Tensor x = make({rows, 64}, dtypes::f16, -1, 1);
    graphs.push_back(graph::optimize(trace_from({mlp(symbol_like(x))}), int8));
    quantized.push_back({});
    for (const auto &c : graphs.back().constants())
      if (c.dtype() == dtypes::i8) quantized.back().insert(c.data_ptr());
  }
  CHECK(quantized[0].size() == 2);
  CHECK(quantized[0] == quantized[1]);
  graphs.clear();
  CHECK(shared_constants_alive() == before); // freed with the last graph that held them
}

TEST_CASE("merge_row_products: a decoding step's Q projection joins its K and V (grouped-query heads, one row)") {
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    CAPTURE(dt.name());
    // One token of a grouped-query layer: 4 q heads and 2 kv heads of 32; and a product whose value
    // takes an epilogue (a residual add): it stays alone.
    const std::int64_t e = 128, d = 32, hq = 4, hkv = 2;
    Tensor in = make({1, 1, e}, dt, -1, 1), res = make({1, 1, 3 * d}, dt);
    Tensor wq = make({e, hq * d}, dt, -0.2, 0.2), wk = make({e, hkv * d}, dt, -0.2, 0.2),
           wv = make({e, hkv * d}, dt, -0.2, 0.2), wr = make({e, 3 * d}, dt, -0.2, 0.2);
    auto f = [&](const Tensor &x) {
      Tensor q = o::permute(o::matmul(x, wq).reshape({1, 1, hq, d}), {0, 2, 1, 3});
      Tensor k = o::permute(o::matmul(x, wk).reshape({1, 1, hkv, d}), {0, 2, 1, 3});
      Tensor v = o::permute(o::matmul(x, wv).reshape({1, 1, hkv, d}), {0, 2, 1, 3});
      Tensor att = o::scaled_dot_product_attention(q, k, v); // grouped heads: kv head h / 2
      return std::vector<Tensor>{o::neg(att), o::matmul(x, wr) + res};
    };
    FlowGraph g = trace_from(f(symbol_like(in)));
    FlowGraph merged = graph::merge_row_products(graph::merge_sibling_matmuls(g)); // optimize's order
    INFO(merged.str());
    CHECK(count_named(merged, "Matmul") == 2); // q, k and v; the residual's
    CHECK(merged.str().find(str_cat("[", e, ", ", (hq + 2 * hkv) * d, "]")) != std::string::npos);
    Tensor x = make({1, 1, e}, dt, -1, 1);
    auto want = f(x);
    expect_all_same(merged.run({x}), want, 4);
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    CHECK(count_named(opt, "FusedMatmul") + count_named(opt, "Matmul") == 2);
    expect_all_same(graph::CompiledGraph(opt).run({x}), want, 4);
    // More than one row (a prompt, a batch): the products stay as they are.
    Tensor in2 = make({2, 1, e}, dt, -1, 1);
    auto f2 = [&](const Tensor &x2) { return std::vector<Tensor>{o::matmul(x2, wq), o::matmul(x2, wk)}; };
    CHECK(count_named(graph::merge_row_products(trace_from(f2(symbol_like(in2)))), "Matmul") == 2);
  }
  // A member that would start off a 256-byte boundary stays alone: f32 widths 40 (160 bytes), 64.
  Tensor in = make({1, 64}, dtypes::f32), w1 = make({64, 40}, dtypes::f32), w2 = make({64, 64}, dtypes::f32),
         w3 = make({64, 8}, dtypes::f32);
  auto f = [&](const Tensor &x) {
    return std::vector<Tensor>{o::softmax(o::matmul(x, w2), -1), o::softmax(o::matmul(x, w1), -1), o::sum(o::matmul(x, w3), {1})};
  };
  FlowGraph g = trace_from(f(symbol_like(in)));
  FlowGraph merged = graph::merge_row_products(g);
  INFO(merged.str());
  CHECK(count_named(merged, "Matmul") == 2); // w2 with w1 ([64, 104]); w3 would start at 416 bytes
  Tensor x = make({1, 64}, dtypes::f32);
  expect_all_same(merged.run({x}), f(x));
}

TEST_CASE("lift_sibling_slices: a fused QKV projection split into heads (GPT-2) is read once, heads split in its epilogue") {
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    CAPTURE(dt.name());
    const std::int64_t b = 2, s = 11, h = 3, d = 32, e = h * d;
    Tensor in = make({b, s, e}, dt, -1, 1), w = make({e, 3 * e}, dt, -0.2, 0.2), bias = make({3 * e}, dt);
    auto f = [&](const Tensor &x) {
      Tensor qkv = (o::matmul(x.reshape({b * s, e}), w) + bias).reshape({b, s, 3 * e});
      auto parts = o::split(qkv, e, 2);
      std::vector<Tensor> heads;
      for (const auto &p : parts) heads.push_back(o::permute(p.reshape({b, s, h, d}), {0, 2, 1, 3}));
      return o::scaled_dot_product_attention(heads[0], heads[1], heads[2], std::nullopt, true);
    };
    FlowGraph g = trace_from(f(symbol_like(in)));
    FlowGraph lifted = graph::lift_sibling_slices(g);
    INFO(lifted.str());
    CHECK(count_named(lifted, "Slice") == 0);
    CHECK(count_named(lifted, "Narrow") == 3);
    Tensor x = make({b, s, e}, dt, -1, 1);
    Tensor want = f(x);
    expect_same(lifted(x), want, 2);
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    // One kernel makes q, k and v in the heads' layout: the product's; then attention.
    CHECK(count_named(opt, "FusedPermute") + count_named(opt, "Permute") + count_named(opt, "FusedSlice") == 0);
    CHECK(opt.str().find("fused_graph=FlowGraph(Matmul, Add, Reshape, Reshape, Permute") != std::string::npos);
    expect_same(graph::CompiledGraph(opt).run({x})[0], want, 2);
  }
  // Slices that do not cover the tensor, or chains that differ: left as they are.
  Tensor in = make({4, 12}, dtypes::f32);
  auto f = [&](const Tensor &x) {
    Tensor y = o::relu(x);
    Tensor a = o::permute(o::slice(y, {1}, {0}, {6}).reshape({4, 2, 3}), {1, 0, 2});
    Tensor c = o::permute(o::slice(y, {1}, {6}, {12}).reshape({4, 3, 2}), {1, 0, 2});
    return std::vector<Tensor>{o::exp(a), o::exp(c)};
  };
  FlowGraph g = trace_from(f(symbol_like(in)));
  CHECK(count_named(graph::lift_sibling_slices(g), "Narrow") == 0);
}

TEST_CASE("slices_as_views: q, k, v = qkv[0], qkv[1], qkv[2] (Swin, ViT) read the product's output in place") {
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    CAPTURE(dt.name());
    const std::int64_t b = 2, s = 16, h = 3, d = 32, e = h * d; // each slice: 3072 elements, 256-byte aligned
    Tensor in = make({b, s, e}, dt, -1, 1), w = make({e, 3 * e}, dt, -0.2, 0.2), bias = make({3 * e}, dt);
    auto f = [&](const Tensor &x) {
      Tensor qkv = o::permute((o::matmul(x, w) + bias).reshape({b, s, 3, h, d}), {2, 0, 3, 1, 4});
      auto part = [&](std::int64_t i) { return o::slice(qkv, {0}, {i}, {i + 1}).reshape({b, h, s, d}); };
      return o::scaled_dot_product_attention(part(0) * 0.5, part(1), part(2), std::nullopt, false);
    };
    FlowGraph g = trace_from(f(symbol_like(in)));
    FlowGraph viewed = graph::slices_as_views(g);
    INFO(viewed.str());
    // k and v become views; q, read by its scale alone, stays a slice fused into that kernel.
    CHECK(count_named(g, "Slice") == 3);
    CHECK(count_named(viewed, "Slice") == 1);
    CHECK(count_named(viewed, "Narrow") == 2);
    Tensor x = make({b, s, e}, dt, -1, 1);
    Tensor want = f(x);
    expect_same(viewed(x), want, 2);
    FlowGraph opt = graph::optimize(g);
    INFO(opt.str());
    // Kernels: the product (bias and layout in its epilogue) and attention; q, k and v are views
    // (fuse_attention moved q's scale into the attention's).
    CHECK(count_named(opt, "FusedReshape") == 0);
    CHECK(count_named(opt, "Narrow") == 3);
    CHECK(count_named(opt, "Mul") + count_named(opt, "FusedMul") == 0);
    expect_same(graph::CompiledGraph(opt).run({x})[0], want, 2);
  }
  // Left as they are: a run that starts off a 256-byte boundary (11 * 32 * 2 * 3 f16 elements), a
  // slice that is not one run (along axis 1 of a [3, 4, 5] value), a slice of a graph input.
  Tensor a = make({3, 2, 3, 11, 32}, dtypes::f16), c = make({3, 4, 5}, dtypes::f32);
  FlowGraph g1 = trace_from(o::exp(o::slice(o::relu(symbol_like(a)), {0}, {1}, {2})));
  CHECK(count_named(graph::slices_as_views(g1), "Slice") == 1);
  FlowGraph g2 = trace_from(o::exp(o::slice(o::relu(symbol_like(c)), {1}, {1}, {3})));
  CHECK(count_named(graph::slices_as_views(g2), "Slice") == 1);
  FlowGraph g3 = trace_from(o::exp(o::slice(symbol_like(c), {0}, {0}, {2})));
  CHECK(count_named(graph::slices_as_views(g3), "Slice") == 1);
  // An aligned run read by an element-wise operator alone fuses into it: it stays (the rows of
  // torch.roll, a slice and a concat, stay one kernel with the pad before them).
  Tensor big = make({4, 64}, dtypes::f32);
  FlowGraph g4 = trace_from(o::exp(o::slice(o::relu(symbol_like(big)), {0}, {1}, {3})));
  CHECK(count_named(graph::slices_as_views(g4), "Slice") == 1);
  auto roll = [](const Tensor &x) {
    Tensor p = o::pad(o::relu(x), {0, 0});
    return o::concat({o::slice(p, {0}, {3}, {4}), o::slice(p, {0}, {0}, {3})}, 0);
  };
  FlowGraph g5 = trace_from(roll(symbol_like(big)));
  CHECK(count_named(graph::slices_as_views(g5), "Slice") == 2);
  // Read by a reduction (a softmax) or by two readers: a view.
  auto two = [](const Tensor &x) {
    Tensor y = o::slice(o::relu(x), {0}, {1}, {3});
    return std::vector<Tensor>{o::softmax(y, -1), o::exp(y), o::softmax(o::slice(o::relu(x), {0}, {2}, {4}), -1)};
  };
  FlowGraph g6 = trace_from(two(symbol_like(big)));
  FlowGraph v6 = graph::slices_as_views(g6);
  CHECK(count_named(v6, "Slice") == 0);
  auto got = v6.run({big});
  auto want = two(big);
  for (std::size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i]);
}

TEST_CASE("attention traced with a constant mask: converted once; a mask that masks nothing is dropped; a causal one is is_causal") {
  const std::int64_t b = 1, h = 2, s = 19, d = 64;
  Tensor q = make({b, h, s, d}, dtypes::f16, -1, 1), k = make({b, h, s, d}, dtypes::f16, -1, 1);
  Tensor v = make({b, h, s, d}, dtypes::f16, -1, 1);
  std::vector<bool> all(std::size_t(s * s), true), some(all), tril(all), almost(all);
  std::vector<double> additive(all.size(), 0.0);
  for (std::int64_t i = 0; i < s; ++i) {
    some[std::size_t(i * s + (i + 3) % s)] = false;
    for (std::int64_t j = i + 1; j < s; ++j) {
      tril[std::size_t(i * s + j)] = almost[std::size_t(i * s + j)] = false;
      additive[std::size_t(i * s + j)] = -65504.0; // torch.finfo(float16).min, as HF builds it
    }
  }
  almost[std::size_t(5 * s + 5)] = false; // one more masked key: not causal
  for (int which = 0; which < 5; ++which) {
    CAPTURE(which);
    Tensor mask = which == 4 ? asarray(additive, {1, 1, s, s}, dtypes::f16, Device::cuda())
                             : asarray(which == 0 ? all : which == 1 ? some : which == 2 ? tril : almost, {1, 1, s, s}, "cuda");
    auto f = [&](const Tensor &x) { return o::scaled_dot_product_attention(x, k, v, mask); };
    FlowGraph g = trace_from(f(symbol_like(q)));
    INFO(g.str());
    REQUIRE(g.nodes().size() == 1);
    const auto &ins = g.nodes()[0]->inputs();
    if (which == 0 || which == 2 || which == 4) {
      CHECK(ins.size() == 3); // nothing masked, or the causal pattern: no mask
      CHECK((g.nodes()[0]->attrs().find("is_causal=true") != std::string::npos) == (which != 0));
    } else {
      REQUIRE(ins.size() == 4);
      CHECK(ins[3].dtype() == dtypes::f32); // the additive form, made once
      CHECK(g.nodes()[0]->attrs().find("is_causal=false") != std::string::npos);
    }
    Tensor x = make({b, h, s, d}, dtypes::f16, -1, 1);
    expect_same(g(x), f(x), 2);
  }
}

TEST_CASE("fuse_operators: a view Reshape between a slice and a permute fuses with them (one kernel)") {
  Tensor a = make({2, 7, 24}, dtypes::f32);
  auto f = [](const Tensor &x) {
    Tensor q = o::slice(o::exp(x), {2}, {8}, {16}); // [2, 7, 8]
    return o::permute(q.reshape({2, 7, 2, 4}), {0, 2, 1, 3});
  };
  FlowGraph g = trace_from(f(symbol_like(a)));
  FlowGraph fused = graph::fuse_operators(g);
  INFO(fused.str());
  REQUIRE(fused.nodes().size() == 1);
  CHECK(fused.str().find("fused_graph=FlowGraph(Exp, Slice, Reshape, Permute)") != std::string::npos);
  Tensor x = make({2, 7, 24}, dtypes::f32);
  expect_same(fused(x), f(x));
}

TEST_CASE("fuse_operators: a reduction broadcast over many elements keeps a kernel of its own") {
  // A squeeze-and-excite's excitation (ops::gemv: the 1x1 convolution of a 1x1 image, + bias,
  // sigmoid) scaling a channels-last map: fused, each of the map's elements would compute its
  // 64-term product again (33.5M multiply-adds at 32 x 32, past kMaxRecomputedReduction); on a
  // 4 x 4 map (0.5M) one kernel stays the cheaper.
  for (std::int64_t hw : {32, 4}) {
    CAPTURE(hw);
    Tensor ma = make({2, hw, hw, 256}, dtypes::f16), sa = make({2, 64}, dtypes::f16), w = make({256, 64}, dtypes::f16),
           b = make({256}, dtypes::f16);
    auto f = [&](const Tensor &map, const Tensor &sq) {
      Tensor e = o::sigmoid(o::gemv(sq, w) + b); // [2, 256]
      return map * e.reshape({2, 1, 1, 256});
    };
    Tensor m = symbol_like(ma, "map"), s = symbol_like(sa, "squeezed");
    FlowGraph g = trace_from(f(m, s), {m, s});
    FlowGraph fused = graph::fuse_operators(g);
    INFO(fused.str());
    if (hw == 32) {
      REQUIRE(fused.nodes().size() == 2);
      CHECK(fused.str().find("float16[2, 1, 1, 256][cuda] = FusedGemv(squeezed") != std::string::npos);
      CHECK(fused.str().find("= Mul(map, x)") != std::string::npos);
    } else {
      CHECK(fused.nodes().size() == 1);
    }
    expect_same(fused.run({ma, sa})[0], f(ma, sa), 2);
  }
}
