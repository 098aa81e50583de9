// Matmul (tiled kernel), conv2d, pooling, softmax/log_softmax/layer_norm/rms_norm (row-resident
// schedule), group_norm and batch_norm against double-precision host references (GPU when
// present, else the CPU emulator).
#include "ops_test_util.hpp"

using namespace ops_test;

namespace {
/// Host c = a @ b for a [B?, m, k], b [B?, k, n] with batch broadcasting over `batch`.
std::vector<double> ref_matmul(const std::vector<double> &a, const o::Shape &sa, const std::vector<double> &b, const o::Shape &sb,
                               const o::Shape &out) {
  std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  o::Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), batch(out.begin(), out.end() - 2);
  std::int64_t nb = o::shape_numel(batch);
  std::vector<double> c(std::size_t(nb * m * n));
  for (std::int64_t z = 0; z < nb; ++z) {
    std::size_t za = ba.empty() ? 0 : bidx(ba, batch, z), zb = bb.empty() ? 0 : bidx(bb, batch, z);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t r = 0; r < k; ++r) s += a[(za * m + i) * k + r] * b[(zb * k + r) * n + j];
        c[(z * m + i) * n + j] = s;
      }
  }
  return c;
}
} // namespace

TEST_CASE("matmul: odd shapes with partial tiles, batch broadcasting, 1-D operands, dtypes") {
  struct Case {
    o::Shape a, b, out;
  };
  for (auto c : std::vector<Case>{{{67, 33}, {33, 70}, {67, 70}},
                                  {{2, 1, 5, 17}, {3, 17, 9}, {2, 3, 5, 9}},
                                  {{1, 1}, {1, 1}, {1, 1}}}) {
    for (DataType d : {dtypes::f32, dtypes::f16, dtypes::bf16}) {
      Tensor a = make(c.a, d), b = make(c.b, d);
      INFO("a " << o::shape_str(c.a) << " b " << o::shape_str(c.b) << " dtype " << d);
      auto r = ref_matmul(a.to_double_vector(), c.a, b.to_double_vector(), c.b, c.out);
      Tensor y = o::matmul(a, b);
      CHECK(y.dtype() == d);
      expect_close(y, c.out, r, false, 2);
    }
  }
  // Integers are exact; mixed i32 @ f32 promotes to f32.
  Tensor ai = make({9, 20}, dtypes::i32, -4, 4), bi = make({20, 3}, dtypes::i32, -4, 4);
  expect_close(o::matmul(ai, bi), {9, 3}, ref_matmul(ai.to_double_vector(), {9, 20}, bi.to_double_vector(), {20, 3}, {9, 3}));
  CHECK(o::matmul(ai, o::cast(bi, dtypes::f32)).dtype() == dtypes::f32);
  // 1-D operands: (k,) @ (k, n) -> (n,), (m, k) @ (k,) -> (m,).
  Tensor v = make({6}, dtypes::f32), m = make({6, 4}, dtypes::f32), m2 = make({3, 6}, dtypes::f32);
  expect_close(o::matmul(v, m), {4}, ref_matmul(v.to_double_vector(), {1, 6}, m.to_double_vector(), {6, 4}, {1, 4}));
  expect_close(o::matmul(m2, v), {3}, ref_matmul(m2.to_double_vector(), {3, 6}, v.to_double_vector(), {6, 1}, {3, 1}));
  // Empty k gives zeros; empty m gives an empty result.
  expect_close(o::matmul(make({3, 0}, dtypes::f32), make({0, 2}, dtypes::f32)), {3, 2}, std::vector<double>(6, 0.0), true);
  CHECK(o::matmul(make({0, 4}, dtypes::f32), make({4, 2}, dtypes::f32)).shape() == o::Shape{0, 2});
  // batch_matmul and linear (x @ w^T + bias) and the method form.
  Tensor x = make({2, 5, 7}, dtypes::f32), y = make({2, 7, 3}, dtypes::f32);
  expect_close(o::batch_matmul(x, y), {2, 5, 3}, ref_matmul(x.to_double_vector(), {2, 5, 7}, y.to_double_vector(), {2, 7, 3}, {2, 5, 3}));
  expect_close(x.matmul(y), {2, 5, 3}, ref_matmul(x.to_double_vector(), {2, 5, 7}, y.to_double_vector(), {2, 7, 3}, {2, 5, 3}));
  Tensor w = make({4, 7}, dtypes::f32), bias = make({4}, dtypes::f32);
  auto wv = w.to_double_vector(), bv = bias.to_double_vector(), xv = x.to_double_vector();
  std::vector<double> lin(40);
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 4; ++j) {
      lin[i * 4 + j] = bv[j];
      for (int k = 0; k < 7; ++k) lin[i * 4 + j] += xv[i * 7 + k] * wv[j * 7 + k];
    }
  expect_close(o::linear(x, w, bias), {2, 5, 4}, lin);
  auto xb = x.to_double_vector();
  expect_error([&] { (void)o::matmul(x, w); }, {"matmul: cannot multiply shapes (2, 5, 7) and (4, 7)", "f32"});
  expect_error([&] { (void)o::matmul(make({2, 3, 4}, dtypes::f32), make({3, 4, 2}, dtypes::f32)); },
               {"matmul: cannot broadcast shapes (2,) and (3,)"});
  expect_error([&] { (void)o::batch_matmul(x, make({3, 7, 3}, dtypes::f32)); }, {"batch_matmul: expected [B, m, k] and [B, k, n]"});
  expect_error([&] { (void)o::linear(x, bias); }, {"linear: weight must be 2-D"});
  CHECK(x.to_double_vector() == xb);
}

TEST_CASE("linear: constant weights of every shape share one transposing kernel per dtype") {
  // Tracing a model transposes each of its constant weights (an NVRTC compile each, one after
  // another, when every shape had a kernel of its own): one shape-generic kernel serves them all.
  Tensor x = symbol({3, 9}, dtypes::f32, Device::cuda(), "x");
  Tensor w1 = make({5, 9}, dtypes::f32), w2 = make({11, 5}, dtypes::f32), w3 = make({2, 11}, dtypes::f32);
  auto before = o::compiled_task_count();
  Tensor y = o::linear(o::linear(o::linear(x, w1), w2), w3);
  CHECK(y.shape() == o::Shape{3, 2});
  CHECK(o::compiled_task_count() - before <= 1); // 0 when an earlier case built it
  // The same chain run eagerly (through that kernel) against the host's.
  Tensor xv = make({3, 9}, dtypes::f32);
  Tensor got = o::linear(o::linear(o::linear(xv, w1), w2), w3);
  auto chain = [](const std::vector<double> &a, std::int64_t m, std::int64_t k, const Tensor &w) {
    std::int64_t n = w.shape()[0];
    auto wv = w.to_double_vector();
    std::vector<double> out(std::size_t(m * n), 0.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::int64_t q = 0; q < k; ++q) acc += a[std::size_t(i * k + q)] * wv[std::size_t(j * k + q)];
        out[std::size_t(i * n + j)] = double(float(acc)); // f32 between the products
      }
    return out;
  };
  auto want = chain(chain(chain(xv.to_double_vector(), 3, 9, w1), 3, 5, w2), 3, 11, w3);
  expect_close(got, {3, 2}, want, false, 10); // f32 sums in another order
}

namespace {
/// Host conv2d (PyTorch semantics).
std::vector<double> ref_conv(const Tensor &x, const Tensor &w, const std::vector<double> *bias, o::Shape s, o::Shape p, o::Shape dl,
                             std::int64_t g, o::Shape &out) {
  auto xv = x.to_double_vector(), wv = w.to_double_vector();
  auto xs = x.shape(), ws = w.shape();
  std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  std::int64_t OH = (H + 2 * p[0] - dl[0] * (KH - 1) - 1) / s[0] + 1, OW = (W + 2 * p[1] - dl[1] * (KW - 1) - 1) / s[1] + 1;
  out = {N, O, OH, OW};
  std::vector<double> y(std::size_t(N * O * OH * OW));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < O; ++oc)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = bias ? (*bias)[oc] : 0;
          std::int64_t grp = oc / (O / g);
          for (std::int64_t c = 0; c < CG; ++c)
            for (std::int64_t a = 0; a < KH; ++a)
              for (std::int64_t b = 0; b < KW; ++b) {
                std::int64_t h = i * s[0] - p[0] + a * dl[0], ww = j * s[1] - p[1] + b * dl[1];
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                acc += xv[((n * C + grp * CG + c) * H + h) * W + ww] * wv[((oc * CG + c) * KH + a) * KW + b];
              }
          y[((n * O + oc) * OH + i) * OW + j] = acc;
        }
  return y;
}
} // namespace

TEST_CASE("conv2d: stride, padding, dilation, groups, bias, dtypes") {
  struct Case {
    o::Shape x, w, s, p, d;
    std::int64_t g;
    bool bias;
  };
  for (auto c : std::vector<Case>{{{2, 3, 7, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
                                  {{1, 4, 9, 8}, {6, 2, 3, 2}, {2, 3}, {1, 0}, {2, 1}, 2, false},
                                  {{1, 2, 5, 5}, {2, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 2, true}}) {
    for (DataType d : {dtypes::f32, dtypes::f16}) {
      INFO("x " << o::shape_str(c.x) << " w " << o::shape_str(c.w) << " dtype " << d);
      Tensor x = make(c.x, d), w = make(c.w, d), b = make({c.w[0]}, d);
      auto bv = b.to_double_vector();
      o::Shape out;
      auto want = ref_conv(x, w, c.bias ? &bv : nullptr, c.s, c.p, c.d, c.g, out);
      Tensor y = o::conv2d(x, w, c.bias ? std::optional<Tensor>(b) : std::nullopt, c.s, c.p, c.d, c.g);
      CHECK(y.dtype() == d);
      expect_close(y, out, want, false, 3);
    }
  }
  Tensor x = make({1, 4, 5, 5}, dtypes::f32);
  auto before = x.to_double_vector();
  expect_error([&] { (void)o::conv2d(x, make({3, 3, 3, 3}, dtypes::f32)); }, {"conv2d: x of shape (1, 4, 5, 5) and weight of shape (3, 3, 3, 3)", "groups=1"});
  expect_error([&] { (void)o::conv2d(x, make({2, 2, 3, 3}, dtypes::f32), std::nullopt, {1}, {0}, {1}, 3); }, {"groups=3"});
  expect_error([&] { (void)o::conv2d(x, make({2, 4, 7, 7}, dtypes::f32)); }, {"conv2d: the kernel (7, 7)", "larger than the padded input"});
  expect_error([&] { (void)o::conv2d(x, make({2, 4, 3, 3}, dtypes::f32), std::nullopt, {0}); }, {"conv2d: stride [0, 0]"});
  expect_error([&] { (void)o::conv2d(o::reshape(x, {4, 5, 5}), make({2, 4, 3, 3}, dtypes::f32)); }, {"conv2d: expected x [N, C, H, W]"});
  expect_error([&] { (void)o::conv2d(x, make({2, 4, 3, 3}, dtypes::f32), make({3}, dtypes::f32)); }, {"conv2d: bias must have shape (2,)"});
  CHECK(x.to_double_vector() == before);
}

namespace {
/// Host pooling (PyTorch semantics); `kind`: 0 max, 1 avg (count_include_pad), 2 avg (exclude).
std::vector<double> ref_pool(const Tensor &x, o::Shape k, o::Shape s, o::Shape p, o::Shape dl, bool ceil_mode, int kind, o::Shape &out) {
  auto xv = x.to_double_vector();
  auto xs = x.shape();
  auto osz = [&](std::int64_t n, int d) {
    std::int64_t span = n + 2 * p[d] - dl[d] * (k[d] - 1) - 1 + (ceil_mode ? s[d] - 1 : 0);
    std::int64_t r = (std::int64_t)std::floor(double(span) / double(s[d])) + 1;
    if (ceil_mode && (r - 1) * s[d] >= n + p[d]) --r;
    return r;
  };
  std::int64_t H = xs[2], W = xs[3], OH = osz(H, 0), OW = osz(W, 1);
  out = {xs[0], xs[1], OH, OW};
  std::vector<double> y;
  for (std::int64_t nc = 0; nc < xs[0] * xs[1]; ++nc)
    for (std::int64_t i = 0; i < OH; ++i)
      for (std::int64_t j = 0; j < OW; ++j) {
        double m = -INFINITY, sum = 0;
        std::int64_t cnt = 0;
        for (std::int64_t a = 0; a < k[0]; ++a)
          for (std::int64_t b = 0; b < k[1]; ++b) {
            std::int64_t h = i * s[0] - p[0] + a * dl[0], w = j * s[1] - p[1] + b * dl[1];
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            double v = xv[(nc * H + h) * W + w];
            m = std::max(m, v), sum += v, cnt++;
          }
        std::int64_t h0 = i * s[0] - p[0], w0 = j * s[1] - p[1];
        std::int64_t incl = (std::min(h0 + k[0], H + p[0]) - h0) * (std::min(w0 + k[1], W + p[1]) - w0);
        y.push_back(kind == 0 ? m : sum / double(kind == 1 ? incl : cnt));
      }
  return y;
}
} // namespace

TEST_CASE("max_pool2d and avg_pool2d: padding, stride, dilation, ceil_mode") {
  struct Case {
    o::Shape x, k, s, p, d;
    bool ceil;
  };
  for (auto c : std::vector<Case>{{{2, 3, 7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
                                  {{1, 2, 8, 7}, {3, 2}, {2, 3}, {1, 1}, {1, 1}, true},
                                  {{1, 1, 9, 9}, {2, 2}, {1, 2}, {0, 1}, {2, 2}, true},
                                  {{1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false},
                                  // a window longer than the input: one output under ceil_mode
                                  {{1, 2, 3, 3}, {5, 4}, {5, 4}, {0, 0}, {1, 1}, true}}) {
    for (DataType dt : {dtypes::f32, dtypes::f16}) {
      INFO("x " << o::shape_str(c.x) << " k " << o::shape_str(c.k) << " ceil " << c.ceil << " dtype " << dt);
      Tensor x = make(c.x, dt);
      o::Shape out;
      auto want = ref_pool(x, c.k, c.s, c.p, c.d, c.ceil, 0, out);
      expect_close(o::max_pool2d(x, c.k, c.s, c.p, c.d, c.ceil), out, want);
      // Channels-last: the same windows over an NHWC copy, compared as NCHW.
      Tensor xl = o::permute(x, {0, 2, 3, 1});
      auto nchw = [](const Tensor &t) { return o::permute(t, {0, 3, 1, 2}); };
      expect_close(nchw(o::max_pool2d_nhwc(xl, c.k, c.s, c.p, c.d, c.ceil)), out, want);
      if (c.d == o::Shape{1, 1}) {
        expect_close(o::avg_pool2d(x, c.k, c.s, c.p, c.ceil, true), out, ref_pool(x, c.k, c.s, c.p, c.d, c.ceil, 1, out));
        expect_close(o::avg_pool2d(x, c.k, c.s, c.p, c.ceil, false), out, ref_pool(x, c.k, c.s, c.p, c.d, c.ceil, 2, out));
        expect_close(nchw(o::avg_pool2d_nhwc(xl, c.k, c.s, c.p, c.ceil, false)), out,
                     ref_pool(x, c.k, c.s, c.p, c.d, c.ceil, 2, out));
      }
    }
  }
  // Integers: max keeps the dtype; avg gives f32.
  Tensor xi = make({1, 2, 5, 5}, dtypes::i32, -9, 9);
  o::Shape out;
  auto want = ref_pool(xi, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, 0, out);
  Tensor mi = o::max_pool2d(xi, {2});
  CHECK(mi.dtype() == dtypes::i32);
  expect_close(mi, out, want);
  CHECK(o::avg_pool2d(xi, {2}).dtype() == dtypes::f32);
  Tensor x = make({1, 1, 4, 4}, dtypes::f32);
  expect_error([&] { (void)o::max_pool2d(x, {2}, {}, {2}); }, {"max_pool2d: padding [2, 2] must be at most half the kernel [2, 2]"});
  expect_error([&] { (void)o::max_pool2d(x, {0}); }, {"max_pool2d: kernel [0, 0]", "must be positive"});
  expect_error([&] { (void)o::avg_pool2d(o::reshape(x, {4, 4}), {2}); }, {"avg_pool2d: expected an NCHW tensor (4-D), got shape (4, 4)"});
  expect_error([&] { (void)o::max_pool2d_nhwc(o::reshape(x, {4, 4}), {2}); },
               {"max_pool2d_nhwc: expected an NHWC tensor (4-D), got shape (4, 4)"});
  expect_error([&] { (void)o::max_pool2d(x, {5}); }, {"max_pool2d: the window [5, 5]", "larger than the padded input"});
  expect_error([&] { (void)o::max_pool2d(x, {2, 2, 2}); }, {"max_pool2d: kernel must have 1 or 2 values"});
}

TEST_CASE("adaptive_avg_pool2d and adaptive_max_pool2d") {
  // (output sizes that divide the input, that do not (overlapping windows), and larger than it)
  for (bool is_max : {false, true})
    for (auto [shape, os] : std::vector<std::pair<o::Shape, o::Shape>>{{{2, 3, 7, 10}, {3, 4}}, {{1, 1, 5, 5}, {1, 1}}, {{1, 2, 3, 4}, {5, 7}}}) {
      INFO((is_max ? "max" : "avg") << " " << o::shape_str(shape) << " -> " << o::shape_str(os));
      Tensor x = make(shape, dtypes::f32, -3, 3); // negative values: a max that starts at 0 is wrong
      auto xv = x.to_double_vector();
      std::int64_t H = shape[2], W = shape[3];
      std::vector<double> want;
      for (std::int64_t nc = 0; nc < shape[0] * shape[1]; ++nc)
        for (std::int64_t i = 0; i < os[0]; ++i)
          for (std::int64_t j = 0; j < os[1]; ++j) {
            std::int64_t h0 = i * H / os[0], h1 = ((i + 1) * H + os[0] - 1) / os[0];
            std::int64_t w0 = j * W / os[1], w1 = ((j + 1) * W + os[1] - 1) / os[1];
            double s = 0, m = -INFINITY;
            for (std::int64_t h = h0; h < h1; ++h)
              for (std::int64_t w = w0; w < w1; ++w) s += xv[(nc * H + h) * W + w], m = std::max(m, xv[(nc * H + h) * W + w]);
            want.push_back(is_max ? m : s / double((h1 - h0) * (w1 - w0)));
          }
      expect_close(is_max ? o::adaptive_max_pool2d(x, os) : o::adaptive_avg_pool2d(x, os), {shape[0], shape[1], os[0], os[1]},
                   want);
    }
  expect_error([&] { (void)o::adaptive_avg_pool2d(make({1, 1, 4, 4}, dtypes::f32), {0}); }, {"adaptive_avg_pool2d: output size [0, 0]"});
  expect_error([&] { (void)o::adaptive_avg_pool2d(make({1, 1, 4, 4}, dtypes::i32), {2}); }, {"adaptive_avg_pool2d: expected a floating-point"});
  expect_error([&] { (void)o::adaptive_max_pool2d(make({4, 4}, dtypes::f32), {2}); }, {"adaptive_max_pool2d: expected an NCHW tensor (4-D)"});
}

TEST_CASE("group_norm and batch_norm (inference)") {
  for (DataType d : {dtypes::f32, dtypes::f16, dtypes::bf16}) {
    INFO("dtype " << d);
    std::int64_t N = 2, C = 6, S = 5, G = 3;
    Tensor x = make({N, C, S}, d), w = make({C}, d), b = make({C}, d);
    auto xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector();
    std::vector<double> want(xv.size());
    std::int64_t cg = C / G;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t g = 0; g < G; ++g) {
        double mu = 0, var = 0, cnt = double(cg * S);
        for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c)
          for (std::int64_t s = 0; s < S; ++s) mu += xv[(n * C + c) * S + s] / cnt;
        for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c)
          for (std::int64_t s = 0; s < S; ++s) var += std::pow(xv[(n * C + c) * S + s] - mu, 2) / cnt;
        for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c)
          for (std::int64_t s = 0; s < S; ++s) {
            std::size_t f = std::size_t((n * C + c) * S + s);
            want[f] = (xv[f] - mu) / std::sqrt(var + 1e-5) * wv[c] + bv[c];
          }
      }
    expect_close(o::group_norm(x, G, w, b), {N, C, S}, want, false, 2);
    // batch_norm with running statistics (variance positive).
    Tensor rm = make({C}, d), rv = make({C}, d, 0.5, 2);
    auto rmv = rm.to_double_vector(), rvv = rv.to_double_vector();
    std::vector<double> bn(xv.size());
    for (std::size_t f = 0; f < xv.size(); ++f) {
      std::int64_t c = std::int64_t(f / S) % C;
      bn[f] = (xv[f] - rmv[c]) / std::sqrt(rvv[c] + 1e-5) * wv[c] + bv[c];
    }
    expect_close(o::batch_norm(x, rm, rv, w, b), {N, C, S}, bn, false, 2);
  }
  // 4-D input, no affine parameters: each group has mean 0.
  Tensor x4 = make({1, 4, 3, 3}, dtypes::f32);
  auto y4 = o::group_norm(x4, 2).to_double_vector();
  double s0 = 0;
  for (int i = 0; i < 18; ++i) s0 += y4[i];
  CHECK(std::abs(s0) < 1e-4);
  Tensor x = make({2, 6, 5}, dtypes::f32);
  expect_error([&] { (void)o::group_norm(x, 4); }, {"group_norm: num_groups 4 must be positive and divide the 6 channels", "(2, 6, 5)"});
  expect_error([&] { (void)o::group_norm(x, 3, make({5}, dtypes::f32)); }, {"group_norm: weight has shape (5,) but the normalized shape is (6,)"});
  expect_error([&] { (void)o::batch_norm(x, make({6}, dtypes::f32), make({6}, dtypes::f16)); }, {"batch_norm: running_var has dtype f16"});
  expect_error([&] { (void)o::batch_norm(o::cast(x, dtypes::i32), make({6}, dtypes::f32), make({6}, dtypes::f32)); },
               {"batch_norm: expected a floating-point tensor"});
}

namespace {
/// Host softmax (log: log_softmax) over the last axis of rows of length n.
std::vector<double> ref_softmax(const std::vector<double> &x, std::int64_t n, bool log) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / std::size_t(n); ++r) {
    const double *a = &x[r * std::size_t(n)];
    double m = -INFINITY, z = 0;
    for (std::int64_t j = 0; j < n; ++j) m = std::max(m, a[j]);
    for (std::int64_t j = 0; j < n; ++j) z += std::exp(a[j] - m);
    for (std::int64_t j = 0; j < n; ++j) y[r * std::size_t(n) + std::size_t(j)] = log ? a[j] - m - std::log(z) : std::exp(a[j] - m) / z;
  }
  return y;
}
/// Host layer_norm (rms: rms_norm) over the last axis, with optional weight and bias.
std::vector<double> ref_layer_norm(const std::vector<double> &x, std::int64_t n, const std::vector<double> *w,
                                   const std::vector<double> *b, double eps, bool rms) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / std::size_t(n); ++r) {
    const double *a = &x[r * std::size_t(n)];
    double mu = 0, var = 0;
    if (!rms)
      for (std::int64_t j = 0; j < n; ++j) mu += a[j] / double(n);
    for (std::int64_t j = 0; j < n; ++j) var += (a[j] - mu) * (a[j] - mu) / double(n);
    for (std::int64_t j = 0; j < n; ++j) {
      double v = (a[j] - mu) / std::sqrt(var + eps);
      if (w) v *= (*w)[std::size_t(j)];
      if (b) v += (*b)[std::size_t(j)];
      y[r * std::size_t(n) + std::size_t(j)] = v;
    }
  }
  return y;
}
} // namespace

TEST_CASE("softmax, log_softmax, layer_norm, rms_norm over the last axis: odd shapes, dtypes") {
  // Vector loads (1000, 5000: 37 rows leave a partial block of warps; 5000 uses 256 threads per
  // row with a partial last chunk), scalar loads (129, 45), a 3-D input, and a row too long for
  // registers (20000: the materialized schedule).
  std::vector<o::Shape> shapes{{37, 1000}, {3, 5000}, {130, 129}, {2, 3, 45}, {2, 20000}};
  for (DataType d : {dtypes::f32, dtypes::f16, dtypes::bf16})
    for (auto &s : shapes) {
      if (d != dtypes::f32 && (s[0] == 130 || s[1] == 20000)) continue; // keep the emulator time modest
      INFO("dtype " << d << ", shape " << o::shape_str(s));
      std::int64_t n = s.back();
      Tensor x = make(s, d, -4, 4), w = make({n}, d), b = make({n}, d);
      auto xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector();
      expect_close(o::softmax(x, -1), s, ref_softmax(xv, n, false), false, 2);
      expect_close(o::log_softmax(x, -1), s, ref_softmax(xv, n, true), false, 2);
      expect_close(o::layer_norm(x, 1, w, b), s, ref_layer_norm(xv, n, &wv, &bv, 1e-5, false), false, 4);
      expect_close(o::rms_norm(x, 1, w), s, ref_layer_norm(xv, n, &wv, nullptr, 1e-6, true), false, 4);
    }
  // No affine parameters; eps placement (a constant row has variance 0: output 0, not NaN).
  Tensor c = o::full({3, 64}, 2.5);
  expect_close(o::layer_norm(c), {3, 64}, std::vector<double>(192, 0.0), true);
  Tensor x = make({5, 64}, dtypes::f32);
  auto xv = x.to_double_vector();
  expect_close(o::layer_norm(x), {5, 64}, ref_layer_norm(xv, 64, nullptr, nullptr, 1e-5, false), false, 2);
  expect_close(o::rms_norm(x, 1, std::nullopt, 1e-2), {5, 64}, ref_layer_norm(xv, 64, nullptr, nullptr, 1e-2, true), false, 2);
  // -inf entries (masked attention scores) and a max that is not the first element.
  std::vector<double> mv{-INFINITY, 1, 3, -INFINITY, 2, 0, -1, 3};
  Tensor mx = asarray(mv, {2, 4}, dtypes::f32);
  expect_close(o::softmax(mx, -1), {2, 4}, ref_softmax(mv, 4, false));
  // A view at an offset that breaks 16-byte alignment: the plan runs on an aligned copy.
  Tensor base = make({1, 4 * 64 + 1}, dtypes::f32);
  Tensor view(base.storage(), {4, 64}, dtypes::f32, base.offset() + 4);
  auto bv = base.to_double_vector();
  std::vector<double> vv(bv.begin() + 1, bv.end());
  expect_close(o::softmax(view, -1), {4, 64}, ref_softmax(vv, 64, false));
  expect_close(o::layer_norm(view), {4, 64}, ref_layer_norm(vv, 64, nullptr, nullptr, 1e-5, false), false, 2);
}
