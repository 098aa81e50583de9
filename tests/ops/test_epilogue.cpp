// Epilogues (include/hidet/ops/epilogue.hpp) on the matmul templates, on the GPU when present,
// else on the emulator: chains of injective tasks composed into one definition and stored by the
// template's kernel (FMA f32 with and without split-k, mma.sync f16/bf16, wgmma on Hopper), with
// element-wise, broadcast, reshape and permuting steps, against the unfused eager operators on
// fresh random inputs of odd shapes; what cannot be an epilogue is refused.
#include "ops_test_util.hpp"

#include "hidet/ir/equal.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/templates/matmul_wgmma.hpp"
#include "hidet/transforms/simplify.hpp"

using namespace ops_test;
using o::Expr;
using o::Idx;
using o::Task;

namespace {
/// out = x + bias[j] (bias over the last axis), as a task reading x as input 0.
Task add_bias_task(const o::Shape &shape, DataType dt) {
  auto x = o::input("x", shape, dt);
  auto b = o::input("bias", {shape.back()}, dt);
  auto y = o::compute("add", shape, [&](const Idx &i) { return x.at(i) + b.at({i.back()}); });
  return Task{"add", {x, b}, {y}, ""};
}
/// out = x * sigmoid(x) (reads x twice).
Task silu_task(const o::Shape &shape, DataType dt) {
  auto x = o::input("x", shape, dt);
  auto y = o::compute("silu", shape, [&](const Idx &i) {
    Expr v = x.at(i);
    return v / (lang::cast(1.0f, dt) + lang::exp(-v));
  });
  return Task{"silu", {x}, {y}, ""};
}
/// out = r + x with the residual r as input 0 and x as input 1.
Task residual_task(const o::Shape &shape, DataType dt) {
  auto r = o::input("r", shape, dt);
  auto x = o::input("x", shape, dt);
  auto y = o::compute("add", shape, [&](const Idx &i) { return r.at(i) + x.at(i); });
  return Task{"add", {r, x}, {y}, ""};
}
/// out = permute(x, perm) (extents constant or symbolic).
Task permute_task(const o::Extents &extents, const std::vector<int> &perm, DataType dt) {
  const hidet::SymShape &shape = extents.dims;
  auto x = o::input("x", shape, dt);
  hidet::SymShape s;
  for (int p : perm) s.push_back(shape[std::size_t(p)]);
  auto y = o::compute("permute", s, [&](const Idx &i) {
    Idx in(shape.size());
    for (std::size_t k = 0; k < perm.size(); ++k) in[std::size_t(perm[k])] = i[k];
    return x.at(in);
  });
  return Task{"permute", {x}, {y}, ""};
}
std::shared_ptr<const o::Epilogue> then(const o::Epilogue &e, const Task &t, std::size_t j) {
  auto next = e.then(t, j, t.str(), t.name);
  REQUIRE(next.has_value());
  return std::make_shared<const o::Epilogue>(*next);
}
void expect_same_nonzero(const Tensor &got, const Tensor &want, double scale = 1) {
  REQUIRE(got.dtype() == want.dtype());
  expect_close(got, want.shape(), want.to_double_vector(), false, scale);
}
} // namespace

TEST_CASE("matmul + bias + silu + residual: one template kernel, as the unfused operators") {
  struct Case {
    std::int64_t m, n, k;
    DataType dt;
  };
  // Odd sizes leave partial tiles and odd rows; 9 x 24 x 4096 (f32) is served with split-k.
  for (Case c : {Case{37, 45, 29, dtypes::f32}, Case{9, 24, 4096, dtypes::f32}, Case{70, 136, 88, dtypes::f16},
                 Case{33, 51, 40, dtypes::bf16}}) {
    CAPTURE(c.m);
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.dt.name());
    o::Shape shape{c.m, c.n};
    auto e = o::Epilogue::identity(shape, c.dt);
    auto e1 = then(e, add_bias_task(shape, c.dt), 0);
    auto e2 = then(*e1, silu_task(shape, c.dt), 0);
    auto e3 = then(*e2, residual_task(shape, c.dt), 1);
    CHECK(e3->linear);
    CHECK(e3->members == std::vector<std::string>{"add", "silu", "add"});
    REQUIRE(e3->inputs.size() == 2); // bias, then the residual
    for (int trial = 0; trial < 2; ++trial) {
      Tensor a = make({c.m, c.k}, c.dt, -1, 1), b = make({c.k, c.n}, c.dt, -1, 1);
      Tensor bias = make({c.n}, c.dt), r = make(shape, c.dt);
      Tensor got = o::matmul(a, b, e3, {bias, r});
      Tensor want = r + o::silu(o::matmul(a, b) + bias);
      expect_same_nonzero(got, want, c.dt == dtypes::f32 ? 10 : 2);
    }
  }
}

TEST_CASE("wgmma: chains with extra inputs read 16 bytes at a time") {
  // The staged epilogue of the Hopper template reads the extras (a bias and a residual here) as
  // vectors of 8 halves. Partial tiles in m and n (guarded reads), two atoms, 64- to 256-column
  // tiles, against the unfused operators.
  namespace t = hidet::ops::templates;
  struct Case {
    std::int64_t m, n, k;
    int consumers, bn, atoms;
  };
  const bool run = t::wgmma_available();
  if (!run) MESSAGE("no Hopper GPU: the wgmma epilogue kernels are generated and compiled, not run");
  for (Case c : {Case{200, 520, 72, 2, 128, 1}, Case{256, 384, 64, 1, 256, 1}, Case{130, 200, 136, 1, 64, 2},
                 Case{64, 256, 64, 2, 192, 1}}) {
    CAPTURE(c.m);
    CAPTURE(c.n);
    CAPTURE(c.bn);
    const DataType dt = dtypes::f16;
    o::Shape shape{c.m, c.n};
    auto e = then(*then(*then(o::Epilogue::identity(shape, dt), add_bias_task(shape, dt), 0), silu_task(shape, dt), 0),
                  residual_task(shape, dt), 1);
    t::MatmulWgmmaConfig cfg;
    cfg.consumers = c.consumers, cfg.block_n = c.bn, cfg.atoms = c.atoms, cfg.stages = 3;
    if (!run) {
      hidet::BuildOptions bo = t::matmul_wgmma_build_options();
      bo.emulator_nvrtc = true; // the compile is the check here
      auto cm = t::matmul_wgmma_module(int(c.m), int(c.n), int(c.k), dt, cfg, 132, {}, e.get()).build(bo);
      CHECK(cm.source().find("extra_run") != std::string::npos); // the extras' vector reads
      if (hidet::detail::nvrtc_available()) CHECK(!cm.binary().cubin.empty());
      continue;
    }
    Tensor a = make({c.m, c.k}, dt, -1, 1).to("cuda"), b = make({c.k, c.n}, dt, -1, 1).to("cuda");
    Tensor bias = make({c.n}, dt).to("cuda"), r = make(shape, dt).to("cuda");
    t::MatmulWgmma mm(int(c.m), int(c.n), int(c.k), dt, cfg, {}, e);
    Tensor got = empty(shape, dt, "cuda");
    mm(a, b, got, {bias, r});
    Tensor want = r + o::silu(o::matmul(a, b) + bias);
    expect_same_nonzero(got, want, 2);
    // A residual that starts 2 bytes past an alignment: copied to an aligned buffer first.
    Tensor r_off = make({c.m * c.n + 1}, dt).to("cuda");
    hidet::runtime::detail::copy_bytes(static_cast<char *>(r_off.data_ptr()) + 2, r_off.device(), false, r.data_ptr(),
                                       r.device(), false, std::size_t(c.m * c.n) * 2);
    Tensor r_view = r_off.narrow(1, c.m * c.n).reshape(shape);
    REQUIRE(reinterpret_cast<std::uintptr_t>(r_view.data_ptr()) % 16 != 0);
    Tensor got2 = empty(shape, dt, "cuda");
    mm(a, b, got2, {bias, r_view});
    expect_same_nonzero(got2, want, 2);
  }
}

TEST_CASE("epilogue math calls weigh the wgmma heuristic's tiles") {
  namespace t = hidet::ops::templates;
  o::Shape shape{3152, 3072};
  const DataType dt = dtypes::f16;
  auto bias = then(o::Epilogue::identity(shape, dt), add_bias_task(shape, dt), 0);
  CHECK(o::epilogue_math_calls(o::Epilogue::identity(shape, dt)) == 0);
  CHECK(o::epilogue_math_calls(*bias) == 0);
  auto gx = o::input("x", shape, dt);
  auto gy = o::compute("gelu", shape, [&](const Idx &i) {
    Expr v = lang::cast(gx.at(i), dtypes::f32);
    return lang::cast(0.5f * v * lang::erfc(v * -0.70710678f), dt);
  });
  auto gelu = then(*bias, Task{"gelu", {gx}, {gy}, ""}, 0);
  CHECK(o::epilogue_math_calls(*gelu) == 1);
  auto silu_res = then(*then(*gelu, silu_task(shape, dt), 0), residual_task(shape, dt), 1);
  CHECK(o::epilogue_math_calls(*silu_res) == 2); // erfc, exp (the division is no call)
  // ViT-B/16's MLP product at batch 16: one consumer warpgroup's 64 x 256 tiles bare, two
  // consumers' 128 x 128 tiles with a GELU (48.7 against 36.3 us on an H200).
  auto bare = t::matmul_wgmma_heuristic_config(3152, 3072, 768, 132);
  CHECK(bare.consumers == 1);
  auto fused = t::matmul_wgmma_heuristic_config(3152, 3072, 768, 132, 1);
  CHECK(fused.consumers == 2);
  CHECK(fused.block_m() == 128);
  CHECK(fused.block_n == 128);
  // ConvNeXt-S's stage-3 product keeps its 128 x 192 tiles (the fastest of those timed with GELU).
  for (int calls : {0, 1}) {
    auto c = t::matmul_wgmma_heuristic_config(3136, 1536, 384, 132, calls);
    CHECK(c.block_m() == 128);
    CHECK(c.block_n == 192);
  }
}

TEST_CASE("epilogue runs: the widest vector a chain keeps") {
  auto e = o::Epilogue::identity({5, 12}, dtypes::f16);
  CHECK(e.run == 4);
  CHECK(e.reshape({5, 3, 4}).run == 4);
  CHECK(e.reshape({5, 6, 2}).run == 2);
  CHECK(e.reshape({60}).run == 4);
  CHECK(o::Epilogue::identity({3, 7}, dtypes::f16).run == 1);
  CHECK(o::Epilogue::identity({3, 64}, dtypes::f16).reshape({3, 4, 16}).run == 8);
}

TEST_CASE("reshape and permute epilogues store where the unfused operators would") {
  // [b * s, h * d] -> [b, s, h, d] -> [b, h, s, d]: the split of attention heads.
  const std::int64_t b = 2, s = 13, h = 3, d = 8;
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    o::Shape shape{b * s, h * d};
    auto e = o::Epilogue::identity(shape, dt);
    auto e1 = then(e, add_bias_task(shape, dt), 0);
    auto e2 = std::make_shared<const o::Epilogue>(e1->reshape({b, s, h, d}));
    CHECK(e2->linear);
    auto e3 = then(*e2, permute_task({b, s, h, d}, {0, 2, 1, 3}, dt), 0);
    CHECK_FALSE(e3->linear);
    CHECK(e3->run == 8); // d stays the last axis: runs of 8 (and pairs) are stored as vectors
    CHECK(e3->out.shape() == o::Shape{b, h, s, d});
    Tensor a = make({b * s, 40}, dt, -1, 1), w = make({40, h * d}, dt, -1, 1), bias = make({h * d}, dt);
    Tensor got = o::matmul(a, w, e3, {bias});
    Tensor want = o::permute((o::matmul(a, w) + bias).reshape({b, s, h, d}), {0, 2, 1, 3});
    expect_same_nonzero(got, want, 2);
    // Moving the last axis: no paired stores.
    auto e4 = then(*e2, permute_task({b, s, h, d}, {0, 1, 3, 2}, dt), 0);
    CHECK(e4->run == 1);
    expect_same_nonzero(o::matmul(a, w, e4, {bias}), o::permute((o::matmul(a, w) + bias).reshape({b, s, h, d}), {0, 1, 3, 2}), 2);
    // A batched product with a 3-D output and an epilogue over it.
    Tensor a3 = make({3, 11, 16}, dt, -1, 1), b3 = make({3, 16, 10}, dt, -1, 1);
    auto eb = then(o::Epilogue::identity({3, 11, 10}, dt), add_bias_task({3, 11, 10}, dt), 0);
    Tensor bias3 = make({10}, dt);
    expect_same_nonzero(o::matmul(a3, b3, eb, {bias3}), o::matmul(a3, b3) + bias3, 2);
  }
}

TEST_CASE("a permute undone by a later one keeps the flat index (ConvNeXt's layer scale)") {
  // torchvision's CNBlock after its second linear layer, channels-last: + bias, permute to NCHW,
  // times the layer scale [C, 1, 1], permute back (the next block's NHWC convolution), + residual.
  const std::int64_t n = 2, h = 5, w = 3, c = 16;
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    const o::Shape nhwc{n, h, w, c}, nchw{n, c, h, w};
    auto scale_task = [&] {
      auto x = o::input("x", nchw, dt);
      auto g = o::input("gamma", {c, 1, 1}, dt);
      auto y = o::compute("mul", nchw, [&](const Idx &i) { return x.at(i) * g.at({i[1], Expr(0), Expr(0)}); });
      return Task{"mul", {x, g}, {y}, ""};
    }();
    auto e1 = then(o::Epilogue::identity(nhwc, dt), add_bias_task(nhwc, dt), 0);
    auto e2 = then(*e1, permute_task(nhwc, {0, 3, 1, 2}, dt), 0);
    CHECK_FALSE(e2->linear);
    auto e3 = then(*e2, scale_task, 0);
    CHECK_FALSE(e3->linear);
    auto e4 = then(*e3, permute_task(nchw, {0, 2, 3, 1}, dt), 0);
    CHECK(e4->linear); // the flat index again: vector stores
    auto e5 = then(*e4, residual_task(nhwc, dt), 1);
    CHECK(e5->linear);
    // A different order back is not the flat index.
    CHECK_FALSE(then(*e3, permute_task(nchw, {0, 3, 2, 1}, dt), 0)->linear);
    Tensor a = make({n, h, w, 40}, dt, -1, 1), wt = make({40, c}, dt, -1, 1), bias = make({c}, dt),
           gamma = make({c, 1, 1}, dt), r = make(nhwc, dt);
    Tensor got = o::matmul(a, wt, e5, {bias, gamma, r});
    Tensor want = r + o::permute(o::permute(o::matmul(a, wt) + bias, {0, 3, 1, 2}) * gamma, {0, 2, 3, 1});
    expect_same_nonzero(got, want, 2);
  }
}

TEST_CASE("an image turned to NCHW, flattened and transposed to tokens keeps the flat index (a patch embedding)") {
  // A ViT's patch embedding as a product (graph::convert_layout_nhwc): [N*P, C] + bias, viewed
  // [N, H, W, C], permuted to NCHW, flattened to [N, C, H*W], transposed to [N, H*W, C] (tokens),
  // + the position embedding: the flat index again through reshapes between the permutes.
  const std::int64_t n = 2, h = 3, w = 5, c = 24;
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt.name());
    const o::Shape rows{n * h * w, c}, nhwc{n, h, w, c}, nchw{n, c, h, w}, flat{n, c, h * w}, tokens{n, h * w, c};
    auto pos_task = [&] {
      auto x = o::input("x", tokens, dt);
      auto p = o::input("pos", {1, h * w, c}, dt);
      auto y = o::compute("add", tokens, [&](const Idx &i) { return x.at(i) + p.at({Expr(0), i[1], i[2]}); });
      return Task{"add", {x, p}, {y}, ""};
    }();
    auto e1 = then(o::Epilogue::identity(rows, dt), add_bias_task(rows, dt), 0);
    auto e2 = then(e1->reshape(nhwc), permute_task(nhwc, {0, 3, 1, 2}, dt), 0);
    CHECK_FALSE(e2->linear);
    auto e3 = then(e2->reshape(flat), permute_task(flat, {0, 2, 1}, dt), 0);
    CHECK(e3->linear); // vector stores
    auto e4 = then(*e3, pos_task, 0);
    CHECK(e4->linear);
    // Transposed without the flatten's merge (H and W swapped): not the flat index.
    CHECK_FALSE(then(*e2, permute_task(nchw, {0, 3, 2, 1}, dt), 0)->linear);
    Tensor a = make({n * h * w, 48}, dt, -1, 1), wt = make({48, c}, dt, -1, 1), bias = make({c}, dt),
           pos = make({1, h * w, c}, dt);
    Tensor got = o::matmul(a, wt, e4, {bias, pos});
    Tensor want = o::permute(o::permute((o::matmul(a, wt) + bias).reshape(nhwc), {0, 3, 1, 2}).reshape(flat), {0, 2, 1}) + pos;
    expect_same_nonzero(got, want, 2);
  }
  // The same chain over a symbolic batch n (a shape-generic graph): still the flat index.
  const hidet::Dim n_sym = hidet::Dim::symbol("n");
  const hidet::SymShape image{n_sym, h, w, c}, channels_first{n_sym, c, h * w};
  auto s1 = o::Epilogue::identity({n_sym * (h * w), c}, dtypes::f16).reshape(image);
  auto s2 = then(s1, permute_task(image, {0, 3, 1, 2}, dtypes::f16), 0);
  CHECK_FALSE(s2->linear);
  auto s3 = then(s2->reshape(channels_first), permute_task(channels_first, {0, 2, 1}, dtypes::f16), 0);
  CHECK(s3->linear);
  CHECK_FALSE(then(s2->reshape(channels_first), permute_task(channels_first, {1, 0, 2}, dtypes::f16), 0)->linear);
}

TEST_CASE("conv2d + relu + residual: the convolution templates store through the epilogue") {
  struct Case {
    std::int64_t n, c, h, w, o, k, stride, pad, groups;
    DataType dt;
  };
  // FMA (f32), mma.sync (f16, NCHW output through the pixel index), depthwise, and an f32 case
  // with few output tiles and a deep reduction that the heuristic splits over k; a depthwise
  // convolution to a 1x1 image, whose NHWC permute keeps the element order (a linear epilogue:
  // ConvNeXt's last stage at 32x32).
  for (Case c : {Case{2, 5, 9, 7, 6, 3, 1, 1, 1, dtypes::f32}, Case{1, 16, 11, 9, 24, 3, 2, 1, 1, dtypes::f16},
                 Case{2, 8, 10, 10, 8, 3, 1, 1, 8, dtypes::f32}, Case{1, 256, 7, 7, 8, 3, 1, 1, 1, dtypes::f32},
                 Case{1, 24, 1, 1, 24, 7, 1, 3, 24, dtypes::f32}}) {
    CAPTURE(c.c);
    CAPTURE(c.o);
    CAPTURE(c.groups);
    CAPTURE(c.dt.name());
    Tensor x = make({c.n, c.c, c.h, c.w}, c.dt, -1, 1), w = make({c.o, c.c / c.groups, c.k, c.k}, c.dt, -1, 1);
    Tensor bias = make({c.o}, c.dt);
    Tensor plain = o::conv2d(x, w, bias, {c.stride}, {c.pad}, {1}, c.groups);
    o::Shape shape = plain.shape();
    Tensor r = make(shape, c.dt);
    auto relu_task = [&] {
      auto xi = o::input("x", shape, c.dt);
      auto y = o::compute("relu", shape, [&](const Idx &i) { return lang::max(xi.at(i), lang::cast(0.0f, c.dt)); });
      return Task{"relu", {xi}, {y}, ""};
    }();
    auto e = then(*then(o::Epilogue::identity(shape, c.dt), residual_task(shape, c.dt), 1), relu_task, 0);
    Tensor got = o::conv2d(x, w, bias, {c.stride}, {c.pad}, {1}, c.groups, e, {r});
    expect_same_nonzero(got, o::relu(r + plain), c.dt == dtypes::f32 ? 10 : 2);
    // A permuting epilogue: NCHW -> NHWC at the store.
    auto ep = then(o::Epilogue::identity(shape, c.dt), permute_task(shape, {0, 2, 3, 1}, c.dt), 0);
    expect_same_nonzero(o::conv2d(x, w, bias, {c.stride}, {c.pad}, {1}, c.groups, ep, {}), o::permute(plain, {0, 2, 3, 1}));
  }
  // Channels-last depthwise (the direct kernel's vector form: 4 channels per thread, stored as
  // one vector where the epilogue keeps the layout): a residual and a ReLU, then a permute to
  // NCHW, whose stores go element by element.
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    CAPTURE(dt.name());
    Tensor x = make({2, 6, 5, 12}, dt, -1, 1), w = make({12, 3, 3, 1}, dt, -1, 1), bias = make({12}, dt);
    Tensor plain = o::conv2d_nhwc(x, w, bias, {1}, {1}, {1}, 12);
    o::Shape shape = plain.shape();
    Tensor r = make(shape, dt);
    auto relu_task = [&] {
      auto xi = o::input("x", shape, dt);
      auto y = o::compute("relu", shape, [&](const Idx &i) { return lang::max(xi.at(i), lang::cast(0.0f, dt)); });
      return Task{"relu", {xi}, {y}, ""};
    }();
    auto e = then(*then(o::Epilogue::identity(shape, dt), residual_task(shape, dt), 1), relu_task, 0);
    expect_same_nonzero(o::conv2d_nhwc(x, w, bias, {1}, {1}, {1}, 12, e, {r}), o::relu(r + plain), dt == dtypes::f32 ? 10 : 2);
    auto ep = then(o::Epilogue::identity(shape, dt), permute_task(shape, {0, 3, 1, 2}, dt), 0);
    expect_same_nonzero(o::conv2d_nhwc(x, w, bias, {1}, {1}, {1}, 12, ep, {}), o::permute(plain, {0, 3, 1, 2}));
  }
}

TEST_CASE("integer products run the epilogue after the auto-scheduled kernel") {
  auto e = then(o::Epilogue::identity({5, 7}, dtypes::i32), add_bias_task({5, 7}, dtypes::i32), 0);
  Tensor a = make({5, 6}, dtypes::i32, -3, 3), b = make({6, 7}, dtypes::i32, -3, 3), bias = make({7}, dtypes::i32);
  Tensor got = o::matmul(a, b, e, {bias});
  CHECK(got.to_double_vector() == (o::matmul(a, b) + bias).to_double_vector());
}

TEST_CASE("what cannot be an epilogue is refused") {
  const o::Shape shape{4, 6};
  auto e = o::Epilogue::identity(shape, dtypes::f32);
  SUBCASE("a reduction") {
    auto x = o::input("x", shape, dtypes::f32);
    auto y = o::reduce({4}, {6}, [&](const Idx &i, const Idx &r) { return x.at({i[0], r[0]}); }, o::ReduceKind::Sum);
    CHECK_FALSE(e.then(Task{"sum", {x}, {y}, ""}, 0, "sum", "Sum").has_value());
  }
  SUBCASE("x broadcast: one element stored twice") {
    auto x = o::input("x", {4, 1}, dtypes::f32);
    auto y = o::compute("bcast", shape, [&](Expr i, Expr) { return x[i][0]; });
    auto e1 = o::Epilogue::identity({4, 1}, dtypes::f32);
    CHECK_FALSE(e1.then(Task{"bcast", {x}, {y}, ""}, 0, "bcast", "BroadcastTo").has_value());
  }
  SUBCASE("x read at a shifted index") {
    auto x = o::input("x", shape, dtypes::f32);
    auto y = o::compute("roll", shape, [&](Expr i, Expr j) { return x[i][(j + 1) % 6]; });
    CHECK_FALSE(e.then(Task{"roll", {x}, {y}, ""}, 0, "roll", "Roll").has_value());
  }
  SUBCASE("another shape or dtype") {
    CHECK_FALSE(e.then(add_bias_task({4, 7}, dtypes::f32), 0, "add", "Add").has_value());
    CHECK_FALSE(e.then(add_bias_task(shape, dtypes::f16), 0, "add", "Add").has_value());
  }
  SUBCASE("an epilogue for another product, or the wrong extra inputs") {
    auto e1 = then(e, add_bias_task(shape, dtypes::f32), 0);
    Tensor a = make({4, 5}, dtypes::f32), b = make({5, 6}, dtypes::f32), b7 = make({5, 7}, dtypes::f32);
    expect_error([&] { o::matmul(a, b7, e1, {make({6}, dtypes::f32)}); }, {"epilogue takes", "(4, 6)", "(4, 7)"});
    expect_error([&] { o::matmul(a, b, e1, {}); }, {"1 extra inputs", "0 were given"});
    expect_error([&] { o::matmul(a, b, e1, {make({5}, dtypes::f32)}); }, {"extra input 0", "[5]", "(6,)"});
  }
}

TEST_CASE("reshape_index: the law over every element, and divisions only within groups") {
  // Law: for every flat position f, reshape_index(unravel(f, from), from, to) == unravel(f, to).
  auto value = [](const Expr &e) {
    std::int64_t v = -1;
    REQUIRE(ir::as_const_int(ir::simplify(e.ir()), v));
    return v;
  };
  for (auto [from, to] : {std::pair<o::Shape, o::Shape>{{6, 10}, {2, 3, 5, 2}}, {{6, 10}, {3, 2, 10}},
                          {{4, 1, 6}, {1, 24}}, {{2, 12}, {2, 3, 1, 4}}, {{24}, {2, 3, 4}}, {{2, 3, 4}, {4, 6}}}) {
    CAPTURE(o::shape_str(from));
    CAPTURE(o::shape_str(to));
    for (std::int64_t f = 0; f < o::shape_numel(from); ++f) {
      Idx idx;
      for (auto x : unravel(f, from)) idx.push_back(Expr(int(x)));
      Idx got = o::reshape_index(idx, from, to);
      auto want = unravel(f, to);
      REQUIRE(got.size() == want.size());
      for (std::size_t a = 0; a < want.size(); ++a) CHECK(value(got[a]) == want[a]);
    }
  }
  // BERT's head split [2048, 2304] -> [16, 128, 3, 12, 64]: the row is divided by 128 only, the
  // column by 768 and 64 only (no flat row * 2304 + col).
  Expr i(ir::Expr(ir::make_var(ir::scalar_type(dtypes::i32), "i")));
  Expr j(ir::Expr(ir::make_var(ir::scalar_type(dtypes::i32), "j")));
  Idx r = o::reshape_index({i, j}, {2048, 2304}, {16, 128, 3, 12, 64});
  REQUIRE(r.size() == 5);
  CHECK(ir::structural_equal(r[0].ir(), (i / 128).ir()));
  CHECK(ir::structural_equal(r[1].ir(), (i % 128).ir()));
  CHECK(ir::structural_equal(r[2].ir(), (j / 768).ir()));
  CHECK(ir::structural_equal(r[3].ir(), (j / 64 % 12).ir()));
  CHECK(ir::structural_equal(r[4].ir(), (j % 64).ir()));
}

TEST_CASE("reshape_index keeps shared leading and trailing dimensions") {
  Expr i(ir::Expr(ir::make_var(ir::scalar_type(dtypes::i32), "i")));
  Expr j(ir::Expr(ir::make_var(ir::scalar_type(dtypes::i32), "j")));
  Idx r = o::reshape_index({i, j}, {26, 24}, {2, 13, 24});
  REQUIRE(r.size() == 3);
  CHECK(ir::structural_equal(r[2].ir(), j.ir()));
  Idx same = o::reshape_index({i, j}, {26, 24}, {1, 26, 24});
  CHECK(ir::structural_equal(same[1].ir(), i.ir()));
  CHECK(ir::structural_equal(same[2].ir(), j.ir()));
}
