// conv2d templates (include/hidet/ops/templates/conv2d.hpp) through ops::conv2d / conv2d_nhwc
// and directly: tensor-core implicit GEMM (f16/bf16), FMA implicit GEMM (f32), depthwise;
// NCHW and NHWC; stride, padding, dilation, groups, bias; partial tiles; every candidate of
// search space 1 on a small shape; the fallback for other dtypes; user errors. Numerics against
// a double-precision host reference (ops_test_util.hpp's tolerance table).
#include "ops_test_util.hpp"

#include <algorithm>

#include "hidet/ops/templates/conv2d.hpp"
#include "hidet/ops/tuning.hpp"

using namespace ops_test;
namespace t = hidet::ops::templates;

namespace {

struct Case {
  o::Shape x, w; ///< NCHW x [N, C, H, W], weight [O, C/groups, KH, KW]
  std::int64_t s, p, d, g;
  bool bias;
};

/// Host conv2d of NCHW data (PyTorch semantics), double precision.
std::vector<double> ref_conv(const std::vector<double> &xv, const std::vector<double> &wv,
                             const std::vector<double> *bias, const Case &c, o::Shape &out) {
  std::int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], O = c.w[0], CG = c.w[1], KH = c.w[2],
               KW = c.w[3];
  std::int64_t OH = (H + 2 * c.p - c.d * (KH - 1) - 1) / c.s + 1,
               OW = (W + 2 * c.p - c.d * (KW - 1) - 1) / c.s + 1;
  out = {N, O, OH, OW};
  std::vector<double> y(std::size_t(N * O * OH * OW));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < O; ++oc)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = bias ? (*bias)[oc] : 0;
          std::int64_t grp = oc / (O / c.g);
          for (std::int64_t ci = 0; ci < CG; ++ci)
            for (std::int64_t a = 0; a < KH; ++a)
              for (std::int64_t b = 0; b < KW; ++b) {
                std::int64_t h = i * c.s - c.p + a * c.d, w = j * c.s - c.p + b * c.d;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                acc += xv[((n * C + grp * CG + ci) * H + h) * W + w] *
                       wv[((oc * CG + ci) * KH + a) * KW + b];
              }
          y[((n * O + oc) * OH + i) * OW + j] = acc;
        }
  return y;
}

/// [A, B, C, D] -> [A, C, D, B] (NCHW -> NHWC) of a host vector.
std::vector<double> to_nhwc(const std::vector<double> &v, const o::Shape &s) {
  std::vector<double> r(v.size());
  for (std::int64_t a = 0; a < s[0]; ++a)
    for (std::int64_t b = 0; b < s[1]; ++b)
      for (std::int64_t c = 0; c < s[2]; ++c)
        for (std::int64_t d = 0; d < s[3]; ++d)
          r[std::size_t(((a * s[2] + c) * s[3] + d) * s[1] + b)] =
              v[std::size_t(((a * s[1] + b) * s[2] + c) * s[3] + d)];
  return r;
}
o::Shape nhwc_shape(const o::Shape &s) { return {s[0], s[2], s[3], s[1]}; }
bool has(const std::string &s, const std::string &sub) { return s.find(sub) != std::string::npos; }

/// A template problem on the device: random x, weight and bias of shape `s` in `layout` and
/// dtype d, and the host reference output (with bias) in that layout.
struct Prepared {
  Tensor x, w, b;
  std::vector<double> want;
  o::Shape out;
};
Prepared prepare(const t::Conv2dShape &s, DataType d, t::Conv2dLayout layout) {
  Case c{{s.n, s.c, s.h, s.w}, {s.o, s.cg(), s.kh, s.kw}, s.sh, s.ph, s.dh, s.groups, true};
  Prepared p{make(c.x, d, -2, 2, true), make(c.w, d, -2, 2, true), make({s.o}, d), {}, {}};
  auto xv = p.x.to_double_vector(), wv = p.w.to_double_vector(), bv = p.b.to_double_vector();
  p.want = ref_conv(xv, wv, &bv, c, p.out);
  if (layout == t::Conv2dLayout::NHWC) {
    p.x = asarray(to_nhwc(xv, c.x), nhwc_shape(c.x), d),
    p.w = asarray(to_nhwc(wv, c.w), nhwc_shape(c.w), d);
    p.want = to_nhwc(p.want, p.out), p.out = nhwc_shape(p.out);
  }
  p.x = p.x.to("cuda"), p.w = p.w.to("cuda"), p.b = p.b.to("cuda");
  return p;
}

/// Runs one case through ops::conv2d (NCHW) or ops::conv2d_nhwc and checks it.
void check_case(const Case &c, DataType d, bool nhwc, double scale = 1) {
  INFO("x " << o::shape_str(c.x) << " w " << o::shape_str(c.w) << " s" << c.s << " p" << c.p << " d"
            << c.d << " g" << c.g << std::string(c.bias ? " bias" : "") << " dtype " << d
            << std::string(nhwc ? " NHWC" : " NCHW"));
  Tensor x = make(c.x, d, -2, 2, true), w = make(c.w, d, -2, 2, true), b = make({c.w[0]}, d);
  auto xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector();
  o::Shape out;
  auto want = ref_conv(xv, wv, c.bias ? &bv : nullptr, c, out);
  std::optional<Tensor> bias = c.bias ? std::optional<Tensor>(b) : std::nullopt;
  if (!nhwc) {
    Tensor y = o::conv2d(x.to("cuda"), w.to("cuda"), bias, {c.s}, {c.p}, {c.d}, c.g);
    CHECK(y.dtype() == d);
    expect_close(y, out, want, false, scale);
    return;
  }
  Tensor xn = asarray(to_nhwc(xv, c.x), nhwc_shape(c.x), d),
         wn = asarray(to_nhwc(wv, c.w), nhwc_shape(c.w), d);
  Tensor y = o::conv2d_nhwc(xn.to("cuda"), wn.to("cuda"), bias, {c.s}, {c.p}, {c.d}, c.g);
  CHECK(y.dtype() == d);
  expect_close(y, nhwc_shape(out), to_nhwc(want, out), false, scale);
}

} // namespace

namespace {
/// 1x1, 3x3, 7x7, stride, padding, dilation, groups, bias, NCHW and NHWC in dtype d. Channel
/// counts leave partial tiles along every GEMM dimension; C = 3 and C / groups = 6 need the
/// channel padding of the tensor-core path. One test case per dtype: on a GPU each of the 28
/// configurations builds a kernel (NVRTC), and meson runs the three side by side
/// (tests/ops/meson.build).
void check_case_table(DataType d) {
  std::vector<Case> cases{
      {{2, 16, 6, 7}, {24, 16, 1, 1}, 1, 0, 1, 1, true},   // 1x1
      {{1, 8, 9, 9}, {16, 8, 3, 3}, 1, 1, 1, 1, false},    // 3x3, padding
      {{2, 16, 9, 8}, {8, 16, 3, 3}, 2, 1, 1, 1, true},    // stride 2
      {{1, 3, 12, 12}, {8, 3, 7, 7}, 2, 3, 1, 1, true},    // the ResNet stem's 7x7 (C = 3)
      {{1, 8, 9, 10}, {8, 8, 3, 3}, 1, 2, 2, 1, false},    // dilation 2
      {{1, 32, 5, 5}, {32, 16, 3, 3}, 1, 1, 1, 2, true},   // groups 2 (C/groups 16)
      {{1, 12, 5, 6}, {10, 6, 3, 3}, 1, 1, 1, 2, true},    // groups 2, C/groups 6 (padded to 8)
      {{2, 16, 7, 7}, {16, 1, 3, 3}, 1, 1, 1, 16, true},   // depthwise
      {{1, 8, 9, 9}, {8, 1, 5, 5}, 2, 2, 1, 8, false},     // depthwise 5x5 stride 2
      {{1, 8, 7, 7}, {24, 8, 1, 1}, 2, 0, 1, 1, false},    // 1x1 stride 2 (downsample)
      {{1, 64, 4, 4}, {16, 64, 3, 3}, 1, 1, 1, 1, true},   // few tiles, long k: split-k (f32)
      {{1, 128, 3, 3}, {16, 128, 3, 3}, 1, 1, 1, 1, true}, // k = 1152: split-k (f16)
      {{1, 4, 6, 6}, {8, 4, 3, 3}, 1, 1, 1, 1, true},      // C = 4: 8-byte copies, in place in NHWC
      {{1, 24, 5, 5}, {8, 12, 3, 3}, 1, 1, 1, 2, false},   // C/groups = 12: 8-byte copies, k = 108
  };
  for (auto &c : cases)
    for (bool nhwc : {false, true})
      check_case(c, d, nhwc, d == dtypes::f32 ? 1 : 2);
}
} // namespace

TEST_CASE("conv2d templates: the case table in f32") { check_case_table(dtypes::f32); }
TEST_CASE("conv2d templates: the case table in f16") { check_case_table(dtypes::f16); }
TEST_CASE("conv2d templates: the case table in bf16") { check_case_table(dtypes::bf16); }

TEST_CASE("conv2d templates: the heuristic splits k when the tiles do not fill the GPU") {
  t::Conv2dShape s{1, 64, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1}; // one 64 x 64 tile, k = 576
  CHECK(t::conv2d_heuristic_config(s, dtypes::f16, 132).mma.split_k == 4); // k / 4 keeps 144
  CHECK(t::conv2d_heuristic_config(s, dtypes::f16, 132).mma.str() ==
        "mma 64x64x64 (warps 2x2 of 32x32, 3 stages, split-k 4)");
  s.n = 16, s.h = s.w = 14; // 49 tiles (over a quarter of the GPU), k < 1024: no split
  CHECK(t::conv2d_heuristic_config(s, dtypes::f16, 132).mma.split_k == 1);
  s.n = 1, s.h = s.w = 4;
  CHECK(t::conv2d_heuristic_config(s, dtypes::f32, 132).fma.split_k == 8);
  // f32 at batch 16: the tilings that won space-2 tuning over ResNet-50's layers.
  auto fma = [](t::Conv2dShape x) { return t::conv2d_heuristic_config(x, dtypes::f32, 132).fma.str(); };
  CHECK(fma({16, 64, 56, 56, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1}).find("fma 64x32x8") == 0);    // k = 64
  CHECK(fma({16, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1}).find("fma 128x64x8") == 0);  // the stem
  CHECK(fma({16, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1}).find("fma 32x64x16") == 0); // 196 tiles of 64 x 64
  CHECK(fma({16, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1}).find("fma 64x64x16") == 0);   // 104 tiles
  s.c = s.o = 512; // k = 4608, 8 tiles
  CHECK(t::conv2d_heuristic_config(s, dtypes::f16, 132).mma.split_k == 16);
  s.n = 64, s.h = s.w = 28; // plenty of tiles
  CHECK(t::conv2d_heuristic_config(s, dtypes::f16, 132).mma.split_k == 1);
}

TEST_CASE("conv2d templates: every candidate of search space 1") {
  // Small channel counts keep the emulator quick; OG = 24 and M = 2 * 5 * 6 leave partial tiles
  // (and take the 32-wide tiles of narrow outputs).
  const int sms = hidet::runtime::device_info(0).sm_count;
  struct Problem {
    t::Conv2dShape s;
    DataType d;
    t::Conv2dLayout layout;
  };
  for (auto pr : std::vector<Problem>{
           {{2, 16, 6, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1}, dtypes::f16, t::Conv2dLayout::NHWC},
           {{2, 16, 6, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1}, dtypes::f32, t::Conv2dLayout::NCHW},
           {{1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8}, dtypes::f32, t::Conv2dLayout::NHWC},
           // an RGB stem of 24 outputs, NCHW as models give it: the direct kernel and 32-wide tiles
           {{2, 3, 9, 11, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1}, dtypes::f16, t::Conv2dLayout::NCHW}}) {
    auto &s = pr.s;
    auto [x, w, b, want, out] = prepare(s, pr.d, pr.layout);
    auto cands = t::conv2d_candidates(s, pr.d, 1, sms);
    CHECK(cands.size() >= (s.depthwise() ? 3u : 8u));
    CHECK(cands.size() <= 30u);
    CHECK(cands[0].str() == t::conv2d_heuristic_config(s, pr.d, sms).str());
    CHECK(t::conv2d_candidates(s, pr.d, 0, sms).size() == 1u);
    CHECK(t::conv2d_candidates(s, pr.d, 2, sms).size() >= cands.size());
    CHECK(std::any_of(cands.begin(), cands.end(), [](auto &c) {
            return c.str().find("split-k") != std::string::npos;
          }) == (!s.depthwise() && s.gemm_k() >= 128)); // k slices of at least 64
    for (auto &cfg : configs_to_run(cands, 3)) {
      INFO("config " << cfg.str() << ", " << s.str() << ", " << pr.d);
      t::Conv2d run(s, pr.d, pr.layout, true, cfg);
      Tensor y = empty(out, pr.d, "cuda");
      run(x, w, &b, y);
      expect_close(y, out, want, false, 2);
    }
  }
}

TEST_CASE("conv2d templates: the depthwise kernel's pixel groups, both layouts") {
  // Pixels per thread that divide the row and that do not (the last group ends past it), with
  // padding, stride 2, dilation 2, and 48 channels (a second, half-empty block of 32 in NHWC).
  std::vector<t::Conv2dShape> shapes{
      {1, 48, 9, 11, 48, 7, 7, 1, 1, 3, 3, 1, 1, 48},  // ConvNeXt's 7x7, padding 3
      {2, 8, 9, 9, 8, 5, 5, 2, 2, 2, 2, 1, 1, 8},      // 5x5 stride 2 (EfficientNet)
      {1, 16, 8, 10, 16, 3, 3, 1, 1, 2, 2, 2, 2, 16},  // dilation 2
      {1, 8, 6, 8, 8, 3, 3, 1, 1, 0, 0, 1, 1, 8},      // no padding
      {1, 8, 9, 12, 8, 21, 21, 1, 1, 10, 10, 1, 1, 8},  // 441 taps: weights past shared memory (NHWC)
      {2, 148, 4, 5, 148, 3, 3, 1, 1, 1, 1, 1, 1, 148}, // 37 vectors of 4: blocks of 32, the second partial
      {1, 160, 3, 9, 160, 5, 5, 1, 1, 2, 2, 1, 1, 160}, // 40 vectors of 4: blocks of 20
      {1, 6, 5, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6}};      // 6 channels: vectors of 2
  for (auto &s : shapes)
    for (auto layout : {t::Conv2dLayout::NCHW, t::Conv2dLayout::NHWC})
      for (DataType d : {dtypes::f32, dtypes::f16}) {
        bool nhwc = layout == t::Conv2dLayout::NHWC;
        Case c{{s.n, s.c, s.h, s.w}, {s.o, 1, s.kh, s.kw}, s.sh, s.ph, s.dh, s.groups, true};
        Tensor x = make(c.x, d, -2, 2, true), w = make(c.w, d, -2, 2, true), b = make({s.o}, d);
        auto xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector();
        o::Shape out;
        auto want = ref_conv(xv, wv, &bv, c, out);
        if (nhwc) {
          x = asarray(to_nhwc(xv, c.x), nhwc_shape(c.x), d);
          want = to_nhwc(want, out), out = nhwc_shape(out);
        }
        x = x.to("cuda"), w = w.to("cuda"), b = b.to("cuda");
        // (channels per thread, pixels): NHWC reads 4 channels as one vector by default (2 for 6
        // channels), and takes 1 (the scalar form), 2 and 8 on request.
        std::vector<std::pair<int, int>> forms{{0, 0}, {0, 1}, {0, 3}, {0, 4}, {0, 8}};
        if (nhwc) forms.insert(forms.end(), {{1, 3}, {2, 3}, {8, 0}});
        for (auto [vector, pixels] : forms) {
          t::Conv2dConfig cfg;
          cfg.kind = t::Conv2dConfig::Kind::Depthwise;
          cfg.dw_threads = 64, cfg.dw_pixels = pixels, cfg.dw_vector = vector;
          INFO("config " << cfg.str() << ", " << s.str() << ", " << d << (nhwc ? " NHWC" : " NCHW"));
          t::Conv2d run(s, d, layout, true, cfg);
          Tensor y = empty(out, d, "cuda");
          run(x, w, &b, y);
          expect_close(y, out, want, false, 2);
        }
      }
  // The channels per thread: 4 in NHWC where O allows (2 for 6 channels; f32 vectors of 16 bytes
  // take at most 4), 1 in NCHW, for grouped convolutions and on request.
  t::Conv2dShape cnx{16, 96, 56, 56, 96, 7, 7, 1, 1, 3, 3, 1, 1, 96};
  CHECK(t::depthwise_vector(cnx, dtypes::f16, true) == 4);
  CHECK(t::depthwise_vector(cnx, dtypes::f16, true, 8) == 8);
  CHECK(t::depthwise_vector(cnx, dtypes::f32, true, 8) == 1);
  CHECK(t::depthwise_vector(cnx, dtypes::f16, true, 1) == 1);
  CHECK(t::depthwise_vector(cnx, dtypes::f16, false) == 1);
  CHECK(t::depthwise_vector({1, 6, 5, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6}, dtypes::f16, true) == 2);
  CHECK(t::depthwise_vector({1, 7, 5, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 7}, dtypes::f16, true) == 1);
  CHECK(t::depthwise_vector({1, 16, 5, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 4}, dtypes::f16, true) == 1);
  CHECK(t::depthwise_block_vectors(24) == 24);
  CHECK(t::depthwise_block_vectors(40) == 20);
  CHECK(t::depthwise_block_vectors(37) == 32);
  // ConvNeXt's first stage at batch 16 (12544 groups of 4 pixels, 10 groups of 24 vectors a
  // block): 2 rounds keep 627 blocks.
  CHECK(t::depthwise_vector_rounds(12544, 10, 1, 132) == 2);
  CHECK(t::depthwise_vector_rounds(98, 10, 1, 132) == 1);
  {
    // The vector form refuses x off its vectors' boundary (a view 2 bytes in): a clear error; the
    // operator realigns such views before any template runs.
    t::Conv2dShape s{1, 8, 5, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8};
    t::Conv2dConfig v4;
    v4.kind = t::Conv2dConfig::Kind::Depthwise, v4.dw_vector = 4;
    auto buf = hidet::empty({1 * 5 * 6 * 8 + 8}, dtypes::f16, "cuda");
    Tensor x(buf.storage(), {1, 5, 6, 8}, dtypes::f16, 2);
    Tensor w = hidet::empty({8, 3, 3, 1}, dtypes::f16, "cuda"), y = hidet::empty({1, 5, 6, 8}, dtypes::f16, "cuda");
    t::Conv2d run(s, dtypes::f16, t::Conv2dLayout::NHWC, false, v4);
    CHECK_THROWS_WITH_AS(run(x, w, nullptr, y), doctest::Contains("x is not aligned to the 8-byte vectors"),
                         hidet::ValueError);
  }
  t::Conv2dConfig v8;
  v8.kind = t::Conv2dConfig::Kind::Depthwise, v8.dw_vector = 8;
  CHECK(v8.str() == "direct 256 threads, 8 channels");
  v8.dw_vector = 3;
  expect_error([&] { t::check_conv2d_config(cnx, dtypes::f16, v8); }, {"channels per thread must be 0"});
  // The vector form's threads are 4 times fewer: 2 pixels where 4 would not fill the GPU.
  CHECK(t::depthwise_default_pixels(cnx, 132, 4) == 4);
  CHECK(t::depthwise_default_pixels({1, 192, 28, 28, 192, 7, 7, 1, 1, 3, 3, 1, 1, 192}, 132, 4) == 2);
  // The default groups 4 pixels where the threads still fill the GPU, fewer where they would not.
  CHECK(t::depthwise_default_pixels({1, 96, 56, 56, 96, 7, 7, 1, 1, 3, 3, 1, 1, 96}) == 4);
  CHECK(t::depthwise_default_pixels({1, 768, 7, 7, 768, 7, 7, 1, 1, 3, 3, 1, 1, 768}) == 2);
  CHECK(t::depthwise_default_pixels({1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8}) == 1);
}

TEST_CASE("conv2d templates: grouped convolutions on the direct kernel and on tensor cores") {
  // ResNeXt's 4 and 8 channels per group (the first the direct kernel's default), more outputs than inputs
  // per group, 32 per group (the most the direct kernel takes at 3x3), 48 output channels (a
  // half-empty second block of 32 in NHWC), stride 2 and no padding; each on the direct kernel
  // (two pixel groupings) and on the tensor-core kernel (channels padded to 8 where C/groups is 4).
  std::vector<t::Conv2dShape> shapes{
      {2, 16, 7, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 4},  // 4 per group
      {1, 32, 8, 8, 32, 3, 3, 2, 2, 1, 1, 1, 1, 4},  // 8 per group, stride 2
      {1, 24, 6, 7, 48, 3, 3, 1, 1, 1, 1, 1, 1, 3},  // 8 in, 16 out per group
      {1, 48, 5, 6, 48, 3, 3, 1, 1, 0, 0, 1, 1, 12}, // 4 per group, 48 channels, no padding
      {1, 64, 5, 6, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2}}; // 32 per group
  const int sms = hidet::runtime::device_info(0).sm_count;
  for (auto &s : shapes) {
    CHECK(t::conv2d_direct_serves(s));
    CHECK(t::conv2d_prefers_direct(s) == (s.cg() <= 4));
    CHECK(o::conv2d_runs_direct(s.groups, s.cg(), s.og(), s.kh, s.kw) == (s.cg() <= 4));
    for (auto layout : {t::Conv2dLayout::NCHW, t::Conv2dLayout::NHWC})
      for (DataType d : {dtypes::f32, dtypes::f16}) {
        bool nhwc = layout == t::Conv2dLayout::NHWC;
        auto [x, w, b, want, out] = prepare(s, d, layout);
        std::vector<t::Conv2dConfig> cfgs;
        for (int pixels : {0, 3}) {
          t::Conv2dConfig cfg;
          cfg.kind = t::Conv2dConfig::Kind::Depthwise;
          cfg.dw_threads = 64, cfg.dw_pixels = pixels;
          cfgs.push_back(cfg);
        }
        // The GEMM the heuristic would pick without the direct kernel: the candidates after it.
        auto cands = t::conv2d_candidates(s, d, 1, sms);
        auto gemm = std::find_if(cands.begin(), cands.end(), [](const t::Conv2dConfig &c) {
          return c.kind != t::Conv2dConfig::Kind::Depthwise;
        });
        REQUIRE(gemm != cands.end());
        cfgs.push_back(*gemm);
        CHECK(cands[0].str() == t::conv2d_heuristic_config(s, d, sms).str());
        for (auto &cfg : cfgs) {
          INFO("config " << cfg.str() << ", " << s.str() << ", " << d << (nhwc ? " NHWC" : " NCHW"));
          t::Conv2d run(s, d, layout, true, cfg);
          Tensor y = empty(out, d, "cuda");
          run(x, w, &b, y);
          expect_close(y, out, want, false, 2);
        }
      }
  }
  // Dense convolutions of at most 4 input channels (an image's stem) run on the direct kernel too,
  // as candidates of search space 1 beside the GEMMs (the default stays a GEMM): 3x3 stride 2 over
  // RGB (EfficientNetV2's stem), 7x7 stride 2 (ResNet's), 4 channels at 5x5.
  for (t::Conv2dShape s : std::vector<t::Conv2dShape>{{2, 3, 9, 11, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1},
                                                      {1, 3, 13, 12, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1},
                                                      {1, 4, 6, 7, 8, 5, 5, 1, 1, 2, 2, 1, 1, 1}}) {
    CHECK(t::conv2d_direct_serves(s));
    CHECK(!t::conv2d_prefers_direct(s));
    CHECK(t::conv2d_heuristic_config(s, dtypes::f16, sms).kind != t::Conv2dConfig::Kind::Depthwise);
    auto cands = t::conv2d_candidates(s, dtypes::f16, 1, sms);
    const auto directs = std::count_if(cands.begin(), cands.end(), [](const t::Conv2dConfig &c) {
      return c.kind == t::Conv2dConfig::Kind::Depthwise;
    });
    CHECK(directs >= 2);
    CHECK(directs <= 4);
    for (auto layout : {t::Conv2dLayout::NCHW, t::Conv2dLayout::NHWC})
      for (DataType d : {dtypes::f32, dtypes::f16}) {
        bool nhwc = layout == t::Conv2dLayout::NHWC;
        auto [x, w, b, want, out] = prepare(s, d, layout);
        for (int pixels : {0, 4}) {
          t::Conv2dConfig cfg;
          cfg.kind = t::Conv2dConfig::Kind::Depthwise;
          cfg.dw_threads = 64, cfg.dw_pixels = pixels;
          INFO("config " << cfg.str() << ", " << s.str() << ", " << d << (nhwc ? " NHWC" : " NCHW"));
          t::Conv2d run(s, d, layout, true, cfg);
          Tensor y = empty(out, d, "cuda");
          run(x, w, &b, y);
          expect_close(y, out, want, false, 2);
        }
      }
  }
  // Past 384 weights per output channel (3x3 over 48 channels per group): the GEMMs only.
  t::Conv2dShape wide{1, 96, 5, 5, 96, 3, 3, 1, 1, 1, 1, 1, 1, 2};
  CHECK(!t::conv2d_direct_serves(wide));
  t::Conv2dConfig direct;
  direct.kind = t::Conv2dConfig::Kind::Depthwise;
  expect_error([&] { t::check_conv2d_config(wide, dtypes::f16, direct); }, {"at most 384 weights per output channel"});
  CHECK(!o::conv2d_runs_direct(1, 8, 8, 3, 3)); // not grouped
  // The defaults: 8 pixels and 512 threads on the direct kernel, 128 x 64 x 32 tiles for a grouped
  // GEMM of at most 8 outputs per group, 64 x 64 x 32 (4 stages) above.
  t::Conv2dShape s1{16, 128, 56, 56, 128, 3, 3, 1, 1, 1, 1, 1, 1, 32}, s2{16, 256, 28, 28, 256, 3, 3, 1, 1, 1, 1, 1, 1, 32},
      s3{16, 512, 14, 14, 512, 3, 3, 1, 1, 1, 1, 1, 1, 32};
  CHECK(t::conv2d_heuristic_config(s1, dtypes::f16, 132).str() == "direct 512 threads, 8 pixels");
  CHECK(t::conv2d_heuristic_config(s2, dtypes::f16, 132).str() == "mma 128x64x32 (warps 2x2 of 64x32, 3 stages)");
  CHECK(t::conv2d_heuristic_config(s3, dtypes::f16, 132).str() == "mma 64x64x32 (warps 2x2 of 32x32, 4 stages)");
}

TEST_CASE("conv2d templates: the Hopper kernel (wgmma + TMA, gathered A tiles)") {
  // Which problems it serves, and when the default picks it.
  t::Conv2dShape big{16, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1}; // ResNet s3 3x3, batch 16
  CHECK(t::conv2d_wgmma_supports(big, dtypes::f16));
  CHECK(t::conv2d_heuristic_config(big, dtypes::f16, 132, true).kind == t::Conv2dConfig::Kind::Wgmma);
  CHECK(t::conv2d_heuristic_config(big, dtypes::f16, 132, false).kind == t::Conv2dConfig::Kind::Mma);
  CHECK(t::conv2d_heuristic_config(big, dtypes::f32, 132, true).kind == t::Conv2dConfig::Kind::Fma);
  t::Conv2dShape small = big;
  small.n = 1; // 16 tiles of 64 x 64: mma.sync with a deep split-k wins
  CHECK(t::conv2d_heuristic_config(small, dtypes::f16, 132, true).kind == t::Conv2dConfig::Kind::Mma);
  auto h = t::conv2d_heuristic_config(big, dtypes::f16, 132, true).wgmma;
  CHECK(h.str() == "64x128x64 (1 consumer warpgroup, 4 stages, persistent)"); // the staged epilogue
  // Larger tiles while they make 0.7 of a wave (92 of 132): 128 x 256, 128 x 128, then 64 x 256.
  auto tiling = [](t::Conv2dShape x) {
    return t::conv2d_heuristic_config(x, dtypes::f16, 132, true).wgmma.str();
  };
  CHECK(tiling({16, 256, 28, 28, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1}) == // 98 tiles of 128 x 256
        "128x256x64 (2 consumer warpgroups, 4 stages, persistent)");
  CHECK(tiling({16, 256, 56, 56, 128, 1, 1, 1, 1, 0, 0, 1, 1, 1}) == // 4 k tiles
        "128x128x64 (2 consumer warpgroups, 4 stages, persistent)");
  CHECK(tiling({16, 1024, 14, 14, 512, 1, 1, 1, 1, 0, 0, 1, 1,
                1}) == // 100 tiles of 128 x 128, 16 k tiles
        "128x128x64 (2 consumer warpgroups, 6 stages, persistent)");
  CHECK(tiling(
            {16, 512, 14, 14, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1}) == // 50 of 128 x 128, 98 of 64 x 256
        "64x256x64 (1 consumer warpgroup, 4 stages, persistent)");
  CHECK(tiling({16, 1024, 7, 7, 1024, 3, 3, 1, 1, 1, 1, 1, 1,
                1}) == // 784 pixels: 52 tiles of 64 x 256
        "64x128x64 (1 consumer warpgroup, 6 stages, persistent)");
  t::Conv2dShape narrow = big;
  narrow.c = 64; // fewer than 256 input channels over 3136 pixels: mma.sync
  CHECK(t::conv2d_heuristic_config(narrow, dtypes::f16, 132, true).kind == t::Conv2dConfig::Kind::Mma);
  narrow.h = narrow.w = 28; // 12544 pixels: the Hopper kernel, unless under 64 output channels
  CHECK(t::conv2d_heuristic_config(narrow, dtypes::f16, 132, true).kind == t::Conv2dConfig::Kind::Wgmma);
  narrow.o = 32;
  CHECK(t::conv2d_heuristic_config(narrow, dtypes::f16, 132, true).kind == t::Conv2dConfig::Kind::Mma);
  // 1x1 over 64 channels: the Hopper kernel from 8192 pixels (batch 16 at 56 x 56), not at batch 1
  t::Conv2dShape pointwise{16, 64, 56, 56, 256, 1, 1, 1, 1, 0, 0, 1, 1, 1};
  CHECK(t::conv2d_heuristic_config(pointwise, dtypes::f16, 132, true).kind == t::Conv2dConfig::Kind::Wgmma);
  pointwise.n = 1;
  CHECK(t::conv2d_heuristic_config(pointwise, dtypes::f16, 132, true).kind == t::Conv2dConfig::Kind::Mma);
  // the space has the default's tiling with direct stores
  auto big_cands = t::conv2d_candidates(big, dtypes::f16, 1, 132, true);
  CHECK(std::any_of(big_cands.begin(), big_cands.end(), [&](auto &c) {
    return c.kind == t::Conv2dConfig::Kind::Wgmma && c.wgmma.str() == "64x128x64 (1 consumer warpgroup, 4 stages, persistent, direct stores)";
  }));
  t::Conv2dShape stem{16, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1};
  CHECK(!t::conv2d_wgmma_supports(stem, dtypes::f16)); // C % 64 != 0
  t::Conv2dShape grouped = big;
  grouped.groups = 2;
  CHECK(!t::conv2d_wgmma_supports(grouped, dtypes::bf16));
  t::Conv2dConfig wg;
  wg.kind = t::Conv2dConfig::Kind::Wgmma;
  expect_error([&] { t::check_conv2d_config(grouped, dtypes::f16, wg); },
               {"conv2d config wgmma", "groups == 1 and C % 64 == 0"});
  wg.wgmma.block_n = 96;
  expect_error([&] { t::check_conv2d_config(big, dtypes::f16, wg); }, {"block_n must be 64, 128, 192 or 256"});
  auto hopper_cands = t::conv2d_candidates(big, dtypes::f16, 1, 132, true);
  CHECK(hopper_cands.size() <= 30u);
  CHECK(std::count_if(hopper_cands.begin(), hopper_cands.end(),
                      [](auto &c) { return c.kind == t::Conv2dConfig::Kind::Wgmma; }) >= 8);
  CHECK(std::any_of(hopper_cands.begin(), hopper_cands.end(),
                    [](auto &c) { return c.kind == t::Conv2dConfig::Kind::Mma; }));

  // Small problems with partial tiles along m and n, padding, stride, 1x1 and 3x3, split-k; on a
  // Hopper GPU every configuration runs against the host reference, elsewhere the kernels are
  // generated and compiled for sm_90a (the emulator does not run wgmma or TMA).
  struct Problem {
    Case c;
    std::vector<t::Conv2dConfig> cfgs;
  };
  // (staged: the epilogue through shared memory where it serves, NHWC without split-k)
  auto wgmma_cfg = [](int consumers, int bn, int stages, int split, bool persistent = true, bool staged = true) {
    t::Conv2dConfig c;
    c.kind = t::Conv2dConfig::Kind::Wgmma;
    c.wgmma.consumers = consumers, c.wgmma.block_n = bn, c.wgmma.stages = stages, c.wgmma.split_k = split;
    c.wgmma.persistent = persistent, c.wgmma.smem_epilogue = staged;
    return c;
  };
  std::vector<Problem> problems{
      {{{2, 64, 9, 10}, {72, 64, 3, 3}, 1, 1, 1, 1, true},
       {wgmma_cfg(2, 128, 4, 1), wgmma_cfg(1, 64, 6, 1), wgmma_cfg(1, 64, 6, 1, true, false),
        wgmma_cfg(1, 128, 3, 3, false), wgmma_cfg(2, 256, 4, 2)}},
      {{{1, 128, 7, 7}, {64, 128, 1, 1}, 2, 0, 1, 1, false}, {wgmma_cfg(1, 64, 4, 1), wgmma_cfg(2, 64, 4, 2)}},
      {{{1, 64, 6, 5}, {129, 64, 3, 3}, 2, 1, 1, 1, true}, {wgmma_cfg(2, 192, 4, 1), wgmma_cfg(1, 256, 4, 4)}},
  };
  const bool run = t::wgmma_available();
  if (!run) MESSAGE("no Hopper GPU: the wgmma conv2d kernels are generated and compiled, not run");
  for (auto &pr : problems) {
    const Case &c = pr.c;
    t::Conv2dShape s{int(c.x[0]), int(c.x[1]), int(c.x[2]), int(c.x[3]), int(c.w[0]), int(c.w[2]), int(c.w[3]),
                     int(c.s),    int(c.s),    int(c.p),    int(c.p),    int(c.d),    int(c.d),    int(c.g)};
    for (DataType d : {dtypes::f16, dtypes::bf16})
      for (auto layout : {t::Conv2dLayout::NHWC, t::Conv2dLayout::NCHW})
        for (auto &cfg : pr.cfgs) {
          INFO("config " << cfg.str() << ", " << s.str() << ", " << d
                         << std::string(layout == t::Conv2dLayout::NHWC ? " NHWC" : " NCHW"));
          t::check_conv2d_config(s, d, cfg);
          if (!run) {
            hidet::BuildOptions o = t::matmul_wgmma_build_options();
            o.emulator_nvrtc = true; // the compile is this test's check
            auto cm = t::conv2d_module(s, d, layout, c.bias, cfg).build(o);
            CHECK(has(cm.source(), "cp.async.mbarrier.arrive.noinc.shared::cta.b64"));
            CHECK(has(cm.source(), "wgmma.mma_async.sync.aligned.m64n" + std::to_string(cfg.wgmma.block_n) + "k16"));
            const bool staged = cfg.wgmma.smem_epilogue && cfg.wgmma.split_k == 1 &&
                                layout == t::Conv2dLayout::NHWC && s.o % 8 == 0;
            CHECK(has(cm.source(), "stmatrix") == staged);
            if (hidet::detail::nvrtc_available()) CHECK(!cm.binary().cubin.empty());
            continue;
          }
          Tensor x = make(c.x, d, -2, 2, true), w = make(c.w, d, -2, 2, true), b = make({c.w[0]}, d);
          auto xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector();
          o::Shape out;
          auto want = ref_conv(xv, wv, c.bias ? &bv : nullptr, c, out);
          if (layout == t::Conv2dLayout::NHWC) {
            x = asarray(to_nhwc(xv, c.x), nhwc_shape(c.x), d), w = asarray(to_nhwc(wv, c.w), nhwc_shape(c.w), d);
            want = to_nhwc(want, out), out = nhwc_shape(out);
          }
          x = x.to("cuda"), w = w.to("cuda"), b = b.to("cuda");
          t::Conv2d r(s, d, layout, c.bias, cfg);
          Tensor y = empty(out, d, "cuda");
          for (int rep = 0; rep < 2; ++rep) { // the second call reuses the cached tensor map
            r(x, w, c.bias ? &b : nullptr, y);
            expect_close(y, out, want, false, 2);
          }
        }
  }
}

TEST_CASE("conv2d templates: search space 1 through ops::conv2d (injected timer), runner cache") {
  hidet::ops::tuning::set_timer([](const hidet::ops::tuning::Launch &l) {
    l();
    return 1.0; // every candidate ties: the first (the heuristic default) wins
  });
  hidet::option::search_space(1);
  Case c{{1, 8, 5, 5}, {8, 8, 3, 3}, 1, 1, 1, 1, true};
  for (int rep = 0; rep < 2; ++rep)
    check_case(c, dtypes::f16, true);
  hidet::option::search_space(0);
  hidet::ops::tuning::set_timer(nullptr);
  // A repeated call compiles nothing: neither a task nor a template module.
  check_case(c, dtypes::f32, false);
  auto tasks = o::compiled_task_count();
  check_case(c, dtypes::f32, false);
  CHECK(o::compiled_task_count() == tasks);
}

TEST_CASE("conv2d: dtypes and inputs the templates do not serve fall back to the auto-scheduler") {
  Case c{{1, 4, 5, 6}, {6, 2, 3, 3}, 2, 1, 1, 2, true};
  check_case(c, dtypes::i32, false); // integer: exact
  check_case(c, dtypes::i32, true);
  check_case(c, dtypes::f64, true);
  // Mixed dtypes promote (f16 x, f32 weight -> f32).
  Tensor x = make({1, 4, 5, 5}, dtypes::f16, -2, 2, true),
         w = make({3, 4, 3, 3}, dtypes::f32, -2, 2, true);
  Case m{{1, 4, 5, 5}, {3, 4, 3, 3}, 1, 0, 1, 1, false};
  o::Shape out;
  auto want = ref_conv(x.to_double_vector(), w.to_double_vector(), nullptr, m, out);
  Tensor y = o::conv2d(x, w);
  CHECK(y.dtype() == dtypes::f32);
  expect_close(y, out, want);
  // Host tensors run on the device and come back.
  Tensor yc = o::conv2d(x.astype(dtypes::f32).cpu(), w.cpu());
  CHECK(yc.device().is_cpu());
  expect_close(yc, out, want);
}

TEST_CASE("conv2d templates: errors") {
  Tensor x = make({1, 5, 5, 4}, dtypes::f16);
  expect_error(
      [&] {
        (void)o::conv2d_nhwc(x, make({3, 3, 3, 3}, dtypes::f16));
      },
      {"conv2d_nhwc: x of shape (1, 5, 5, 4) and weight of shape (3, 3, 3, 3)", "groups=1",
       "shape[3]"});
  expect_error(
      [&] {
        (void)o::conv2d_nhwc(o::reshape(x, {5, 5, 4}), make({2, 3, 3, 4}, dtypes::f16));
      },
      {"conv2d_nhwc: expected x [N, H, W, C]"});
  expect_error(
      [&] {
        (void)o::conv2d_nhwc(x, make({2, 7, 7, 4}, dtypes::f16));
      },
      {"larger than the padded input"});
  expect_error(
      [&] {
        (void)o::conv2d_nhwc(x, make({2, 3, 3, 4}, dtypes::f16), make({3}, dtypes::f16));
      },
      {"conv2d_nhwc: bias must have shape (2,)"});
  expect_error(
      [&] {
        (void)o::conv2d_nhwc(x.astype(dtypes::boolean), make({2, 3, 3, 4}, dtypes::f16));
      },
      {"dtype bool is not supported"});
  t::Conv2dShape s{1, 8, 5, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  t::Conv2dConfig bad;
  bad.mma.block_k = 24;
  expect_error([&] { t::check_conv2d_config(s, dtypes::f16, bad); },
               {"conv2d config mma", "block_k must be 16, 32 or 64"});
  bad = t::conv2d_heuristic_config(s, dtypes::f16, 132);
  expect_error([&] { t::check_conv2d_config(s, dtypes::f32, bad); },
               {"the tensor-core kernel takes f16 or bf16"});
  bad.kind = t::Conv2dConfig::Kind::Depthwise;
  expect_error([&] { t::check_conv2d_config(s, dtypes::f16, bad); }, {"groups == C == O"});
  expect_error([&] { t::check_conv2d_problem(s, dtypes::i8); },
               {"conv2d template", "takes f32, f16 or bf16"});
  // The runner checks its bias argument.
  t::Conv2d r(s, dtypes::f32, t::Conv2dLayout::NCHW, true,
              t::conv2d_heuristic_config(s, dtypes::f32, 132));
  Tensor xs = empty({1, 8, 5, 5}, dtypes::f32, "cuda"),
         ws = empty({8, 8, 3, 3}, dtypes::f32, "cuda");
  expect_error(
      [&] {
        r(xs, ws, nullptr, empty({1, 8, 5, 5}, dtypes::f32, "cuda"));
      },
      {"built with a bias"});
}
