// Convolutions whose batch is symbolic (Conv2dShape::batch, ops::conv2d_symbolic_batch), on the
// GPU when present, else on the emulator: the templates built once for a batch n (or 2*n) serve
// every value that picks the same tiling (chosen for the batch rounded up to a power of two), in both layouts, on every kernel kind (tensor-core
// implicit GEMM with its repack of NCHW input, FMA, depthwise, split-k with its sum kernel, the
// Hopper kernel on an H100/H200), with epilogues over the batch's symbol; against ops::conv2d
// at constant shapes on fresh random inputs of odd sizes; errors.
#include "ops_test_util.hpp"

#include <set>

#include "hidet/ops/conv.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/templates/conv2d.hpp"

using namespace ops_test;
using o::Idx;
using o::Task;
namespace t = hidet::ops::templates;

namespace {
const Dim n_sym = Dim::symbol("n");

/// out = relu(x + r): the residual r as input 1.
Task add_relu_task(const SymShape &shape, DataType dt) {
  auto x = o::input("x", shape, dt);
  auto r = o::input("r", shape, dt);
  auto y = o::compute("add_relu", shape, [&](const Idx &i) {
    return hidet::lang::max(x.at(i) + r.at(i), hidet::lang::cast(o::Expr(0.0f), dt));
  });
  return Task{"add_relu", {x, r}, {y}, ""};
}

struct Case {
  const char *what;
  DataType dt;
  bool nhwc;
  std::int64_t c, h, w, o, k, stride, pad, groups;
  std::vector<std::int64_t> batches; ///< values of n, in order
  bool twice = false;                ///< the batch is 2*n (x's first extent)
};

/// ops::conv2d's inputs laid out for the layout: x [N, C, H, W] or [N, H, W, C], w likewise.
Tensor layout_of(const Tensor &t, bool nhwc) { return nhwc ? o::permute(t, {0, 2, 3, 1}) : t; }
} // namespace

TEST_CASE("conv2d over a symbolic batch: one build per tiling serves every batch, with epilogues") {
  const int sms = hidet::runtime::device_info(0).sm_count;
  const bool hopper = t::wgmma_available();
  std::vector<Case> cases{
      {"f16 NCHW 3x3 (mma.sync, x repacked)", dtypes::f16, false, 24, 9, 11, 40, 3, 1, 1, 1, {1, 3, 2, 5}},
      {"f16 NHWC 3x3 stride 2, batch 2*n", dtypes::f16, true, 32, 10, 9, 24, 3, 2, 1, 1, {1, 2, 3}, true},
      {"bf16 NCHW 1x1, long k (split-k)", dtypes::bf16, false, 1040, 3, 3, 16, 1, 1, 0, 1, {1, 2, 4}},
      {"f32 NCHW 3x3 (FMA)", dtypes::f32, false, 6, 7, 8, 20, 3, 1, 1, 1, {2, 1, 3}},
      {"f32 NHWC 3x3 grouped", dtypes::f32, true, 8, 6, 5, 12, 3, 1, 1, 2, {1, 3}},
      {"f16 depthwise 3x3 NCHW", dtypes::f16, false, 40, 9, 7, 40, 3, 1, 1, 40, {1, 4, 2}},
      {"f16 depthwise 5x5 NHWC stride 2", dtypes::f16, true, 36, 11, 10, 36, 5, 2, 2, 36, {3, 1}},
  };
  // 256 channels and 7x7 maps: the Hopper kernel once the batch makes 24 tiles (n >= 7 here).
  if (hopper) cases.push_back({"f16 NHWC 1x1, 256 channels (wgmma)", dtypes::f16, true, 256, 7, 7, 256, 1, 1, 0, 1, {1, 8, 9}});
  for (const auto &c : cases) {
    INFO(c.what);
    const Dim batch = c.twice ? n_sym * 2 : n_sym;
    Tensor w = make({c.o, c.c / c.groups, c.k, c.k}, c.dt), bias = make({c.o}, c.dt);
    Tensor wl = layout_of(w, c.nhwc);
    const std::int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    const SymShape ys = c.nhwc ? SymShape{batch, oh, ow, c.o} : SymShape{batch, c.o, oh, ow};
    auto plain = o::Epilogue::identity(ys, c.dt);
    auto next = plain.then(add_relu_task(ys, c.dt), 0, "add_relu", "add_relu");
    REQUIRE(next.has_value());
    auto relu = std::make_shared<const o::Epilogue>(*next);
    CHECK(relu->symbols() == std::vector<std::string>{"n"});
    std::set<std::string> tilings;
    const std::size_t before = o::conv2d_symbolic_builds();
    for (std::int64_t v : c.batches) {
      const std::int64_t nb = c.twice ? 2 * v : v;
      INFO("n = " << v << " (batch " << nb << ")");
      const SymbolValues values{{"n", v}};
      t::Conv2dShape s{int(o::conv2d_batch_bucket(nb)), int(c.c), int(c.h), int(c.w), int(c.o), int(c.k), int(c.k), int(c.stride),
                       int(c.stride), int(c.pad), int(c.pad), 1, 1, int(c.groups)};
      tilings.insert(t::conv2d_heuristic_config(s, c.dt, sms, hopper).str());
      Tensor x = make({nb, c.c, c.h, c.w}, c.dt);
      Tensor xl = layout_of(x, c.nhwc);
      Tensor want = o::conv2d(x, w, bias, {c.stride}, {c.pad}, {1}, c.groups); // NCHW
      Tensor want_l = layout_of(want, c.nhwc);
      auto got = o::conv2d_symbolic_batch(xl, wl, bias, {c.stride}, {c.pad}, {1}, c.groups, c.nhwc, nullptr, {}, batch,
                                          values);
      REQUIRE(got.has_value());
      expect_close(*got, want_l.shape(), want_l.to_double_vector());

      Tensor r = make(want_l.shape(), c.dt);
      Tensor fused = o::add(want_l, r).relu();
      got = o::conv2d_symbolic_batch(xl, wl, bias, {c.stride}, {c.pad}, {1}, c.groups, c.nhwc, relu, {r}, batch, values);
      REQUIRE(got.has_value());
      expect_close(*got, fused.shape(), fused.to_double_vector());
    }
    // Two epilogues (none, add + relu), each built once per tiling the batches picked.
    INFO("tilings: " << tilings.size());
    CHECK(o::conv2d_symbolic_builds() - before == 2 * tilings.size());
    CHECK(tilings.size() < c.batches.size()); // some batches shared a build
  }
}

TEST_CASE("conv2d over a symbolic batch: what it does not serve, and bad input") {
  Tensor x = make({2, 8, 5, 5}, dtypes::f16), w = make({8, 8, 3, 3}, dtypes::f16);
  const SymbolValues values{{"n", 2}};
  // integer and mixed dtypes, a constant batch: not served (the caller runs conv2d)
  CHECK_FALSE(o::conv2d_symbolic_batch(make({2, 8, 5, 5}, dtypes::i32), make({8, 8, 3, 3}, dtypes::i32), std::nullopt,
                                       {1}, {1}, {1}, 1, false, nullptr, {}, n_sym, values));
  CHECK_FALSE(o::conv2d_symbolic_batch(x, make({8, 8, 3, 3}, dtypes::bf16), std::nullopt, {1}, {1}, {1}, 1, false,
                                       nullptr, {}, n_sym, values));
  CHECK_FALSE(o::conv2d_symbolic_batch(x, w, std::nullopt, {1}, {1}, {1}, 1, false, nullptr, {}, Dim(2), values));
  // a batch that disagrees with x's, a missing symbol, malformed arguments
  expect_error([&] { (void)o::conv2d_symbolic_batch(x, w, std::nullopt, {1}, {1}, {1}, 1, false, nullptr, {}, n_sym, {{"n", 3}}); },
               {"conv2d", "batch", "n", "3", "(2, 8, 5, 5)"});
  expect_error([&] { (void)o::conv2d_symbolic_batch(x, w, std::nullopt, {1}, {1}, {1}, 1, false, nullptr, {}, n_sym, {}); },
               {"n"});
  expect_error([&] { (void)o::conv2d_symbolic_batch(x, make({8, 4, 3, 3}, dtypes::f16), std::nullopt, {1}, {1}, {1}, 1,
                                                    false, nullptr, {}, n_sym, values); },
               {"conv2d", "groups"});
  // the runner itself: a call whose x does not have the batch's value
  t::Conv2dShape s{2, 8, 5, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  s.batch = n_sym;
  t::Conv2d run(s, dtypes::f16, t::Conv2dLayout::NCHW, false, t::conv2d_heuristic_config(s, dtypes::f16, 132));
  Tensor y = hidet::empty({3, 8, 5, 5}, dtypes::f16, x.device());
  expect_error([&] { run(make({3, 8, 5, 5}, dtypes::f16), w, nullptr, y, {}, values); },
               {"conv2d runner", "(3, 8, 5, 5)", "batch 2"});
}
