// Reductions not covered by test_ops (var/std, prod, min, all/any, argmin, integer and bf16
// sums, cumsum), transforms (take, flip, pad, tile, split, squeeze...), creation ops and the
// Tensor method forms, against double-precision host references.
#include "ops_test_util.hpp"

using namespace ops_test;

TEST_CASE("var and std over axes with keepdims and correction") {
  for (DataType d : {dtypes::f32, dtypes::f16, dtypes::bf16}) {
    INFO("dtype " << d);
    o::Shape s{4, 9, 3};
    Tensor x = make(s, d);
    auto xv = x.to_double_vector();
    for (int corr : {0, 1}) {
      std::vector<double> v1(12), v0(27);
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 3; ++k) {
          double mu = 0, ss = 0;
          for (int j = 0; j < 9; ++j) mu += xv[(i * 9 + j) * 3 + k] / 9;
          for (int j = 0; j < 9; ++j) ss += std::pow(xv[(i * 9 + j) * 3 + k] - mu, 2);
          v1[i * 3 + k] = ss / (9 - corr);
        }
      for (int j = 0; j < 9; ++j)
        for (int k = 0; k < 3; ++k) {
          double mu = 0, ss = 0;
          for (int i = 0; i < 4; ++i) mu += xv[(i * 9 + j) * 3 + k] / 4;
          for (int i = 0; i < 4; ++i) ss += std::pow(xv[(i * 9 + j) * 3 + k] - mu, 2);
          v0[j * 3 + k] = ss / (4 - corr);
        }
      expect_close(o::var(x, {1}, true, corr), {4, 1, 3}, v1, false, 2);
      expect_close(x.std({0}, false, corr), {9, 3}, map(v0, [](double v) { return std::sqrt(v); }), false, 2);
    }
  }
  expect_error([&] { (void)o::var(make({3}, dtypes::i32), {0}); }, {"var: expected a floating-point tensor"});
  expect_error([&] { (void)o::std(make({3, 2}, dtypes::f32), {0, 0}); }, {"std: axis 0 is given twice"});
}

TEST_CASE("prod, min, argmin, all, any; integer and bf16 sums; method forms") {
  Tensor x = make({5, 6}, dtypes::f32, 0.5, 1.5);
  auto xv = x.to_double_vector();
  std::vector<double> pr(5, 1), mn(5, 1e30), am(5), col(6);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 6; ++j) {
      pr[i] *= xv[i * 6 + j];
      if (xv[i * 6 + j] < mn[i]) mn[i] = xv[i * 6 + j], am[i] = j;
      col[j] += xv[i * 6 + j];
    }
  expect_close(o::prod(x, {1}), {5}, pr);
  expect_close(x.min({-1}), {5}, mn);
  expect_close(o::argmin(x, 1), {5}, am, true);
  expect_close(x.argmin(1, true), {5, 1}, am, true);
  expect_close(x.sum({0}), {6}, col);
  Tensor xi = make({4, 7}, dtypes::i32, -50, 50);
  auto iv = xi.to_double_vector();
  double tot = 0;
  for (double v : iv) tot += v;
  Tensor si = o::sum(xi);
  CHECK(si.dtype() == dtypes::i64);
  expect_close(si, {}, {tot}, true);
  Tensor mi = o::mean(xi);
  CHECK(mi.dtype() == dtypes::f32);
  expect_close(mi, {}, {tot / 28}, true);
  Tensor xb = make({3, 5}, dtypes::bf16);
  auto bv = xb.to_double_vector();
  std::vector<double> bs(3);
  for (int i = 0; i < 15; ++i) bs[i / 5] += bv[i];
  expect_close(o::sum(xb, {1}), {3}, bs, false, 2);
  // all / any on bool rows (one all-true row, one all-false row).
  Tensor b = asarray(std::vector<double>{1, 1, 1, 0, 0, 0, 1, 0, 1}, {3, 3}, dtypes::boolean);
  expect_close(o::all(b, {1}), {3}, {1, 0, 0}, true);
  expect_close(o::any(b, {1}), {3}, {1, 0, 1}, true);
  expect_close(o::any(make({2, 3}, dtypes::f32, 1, 2), {}), {}, {1});
  expect_error([&] { (void)o::max(make({3, 0}, dtypes::f32), {1}); }, {"max: cannot reduce over axis 1 of size 0"});
  expect_error([&] { (void)o::argmax(x, -3); }, {"argmax: axis -3 is out of range for a tensor of shape (5, 6)"});
}

TEST_CASE("cumsum: a linear scan along any axis, integers, f16, empty") {
  for (DataType d : {dtypes::f32, dtypes::f16, dtypes::i32}) {
    o::Shape s{3, 40, 5};
    Tensor x = make(s, d, -3, 3);
    auto xv = x.to_double_vector();
    for (int ax : {0, 1, 2}) {
      INFO("dtype " << d << " axis " << ax);
      std::vector<double> want(xv.size());
      for (std::size_t f = 0; f < xv.size(); ++f) {
        auto i = unravel(std::int64_t(f), s);
        auto j = i;
        double acc = 0;
        for (j[ax] = 0; j[ax] <= i[ax]; ++j[ax]) acc += xv[std::size_t(ravel(j, s))];
        want[f] = acc;
      }
      Tensor y = o::cumsum(x, ax);
      CHECK(y.dtype() == (d == dtypes::i32 ? dtypes::i64 : d));
      expect_close(y, s, want, false, d == dtypes::f16 ? 4 : 1);
    }
  }
  // A long row stays cheap: 1 x 3000 (quadratic work would be 4.5M terms).
  Tensor l = o::full({1, 3000}, 1.0);
  std::vector<double> want(3000);
  for (int i = 0; i < 3000; ++i) want[i] = i + 1;
  expect_close(o::cumsum(l, 1), {1, 3000}, want);
  CHECK(o::cumsum(make({0, 4}, dtypes::f32), 0).shape() == o::Shape{0, 4});
  expect_error([&] { (void)o::cumsum(l, 2); }, {"cumsum: axis 2 is out of range"});
}

TEST_CASE("take, index_select, embedding, flip") {
  Tensor x = make({4, 5, 3}, dtypes::f16);
  auto xv = x.to_double_vector();
  Tensor idx = asarray(std::vector<double>{3, -1, 0, 2, 2, 1}, {2, 3}, dtypes::i64);
  // take along axis 1: out [4, 2, 3, 3].
  std::vector<double> t1;
  std::vector<int> ids{3, 4, 0, 2, 2, 1};
  for (int i = 0; i < 4; ++i)
    for (int k : ids)
      for (int c = 0; c < 3; ++c)
        if (k < 5) t1.push_back(xv[(i * 5 + k) * 3 + c]);
  expect_close(o::take(x, idx, 1), {4, 2, 3, 3}, t1);
  Tensor i32 = asarray(std::vector<double>{2, 0}, {2}, dtypes::i32);
  std::vector<double> sel;
  for (int r : {2, 0})
    for (int j = 0; j < 15; ++j) sel.push_back(xv[r * 15 + j]);
  expect_close(o::index_select(x, 0, i32), {2, 5, 3}, sel);
  Tensor w = make({6, 4}, dtypes::f32);
  auto wv = w.to_double_vector();
  std::vector<double> emb;
  for (int r : {2, 0})
    for (int j = 0; j < 4; ++j) emb.push_back(wv[r * 4 + j]);
  expect_close(o::embedding(i32, w), {2, 4}, emb);
  // flip over two axes.
  std::vector<double> fl(xv.size());
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k) fl[(i * 5 + j) * 3 + k] = xv[((3 - i) * 5 + j) * 3 + (2 - k)];
  expect_close(o::flip(x, {0, -1}), {4, 5, 3}, fl);
  expect_close(x.flip({0, 2}), {4, 5, 3}, fl);
  expect_error([&] { (void)o::take(x, o::cast(idx, dtypes::f32), 0); }, {"take: indices must be integers, got dtype f32"});
  expect_error([&] { (void)o::flip(x, {3}); }, {"flip: axis 3 is out of range for a tensor of shape (4, 5, 3)"});
  expect_error([&] { (void)o::embedding(i32, make({6}, dtypes::f32)); }, {"embedding: weight must be 2-D, got shape (6,)"});
}

TEST_CASE("gather along an axis, negative indices, a smaller index, errors") {
  Tensor x = make({3, 5, 4}, dtypes::f32);
  auto xv = x.to_double_vector();
  std::vector<double> iv;
  for (int i = 0; i < 2 * 5 * 3; ++i) iv.push_back(double(int(g_rng() % 9) - 4)); // -4 .. 4 along axis 2 (4)
  Tensor idx = asarray(iv, {2, 5, 3}, dtypes::i64);
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k) {
        int t = int(iv[std::size_t((i * 5 + j) * 3 + k)]);
        t = t < 0 ? t + 4 : t;
        t = std::min(t, 3);
        want.push_back(xv[std::size_t((i * 5 + j) * 4 + t)]);
      }
  expect_close(o::gather(x, -1, idx), {2, 5, 3}, want);
  expect_error([&] { (void)o::gather(x, 0, o::cast(idx, dtypes::f32)); }, {"gather: index must be integers"});
  expect_error([&] { (void)o::gather(x, 2, asarray(std::vector<double>{0}, {1}, dtypes::i64)); },
               {"gather: index of shape (1,) must have the rank of x (3, 5, 4)"});
  expect_error([&] { (void)o::gather(x, 2, zeros({4, 5, 4}, dtypes::i64)); }, {"no larger extents off axis 2"});
}

TEST_CASE("pad, tile, split") {
  Tensor x = make({2, 3}, dtypes::i32, 1, 9);
  auto xv = x.to_double_vector();
  // pad last axis (1, 2) and first axis (0, 1) with 7.
  std::vector<double> pd;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 6; ++j) pd.push_back(i < 2 && j >= 1 && j < 4 ? xv[i * 3 + j - 1] : 7);
  expect_close(o::pad(x, {1, 2, 0, 1}, 7), {3, 6}, pd);
  Tensor xf = make({1, 2, 2}, dtypes::bf16);
  auto fv = xf.to_double_vector();
  expect_close(o::pad(xf, {1, 0}), {1, 2, 3}, {0, fv[0], fv[1], 0, fv[2], fv[3]});
  // tile: numpy semantics, reps longer than ndim.
  std::vector<double> tl;
  for (int a = 0; a < 2; ++a)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) tl.push_back(xv[(i % 2) * 3 + j % 3]);
  expect_close(o::tile(x, {2, 2, 2}), {2, 4, 6}, tl);
  CHECK(o::tile(x, {0, 1}).shape() == o::Shape{0, 3});
  // split by sizes and by chunk.
  Tensor y = make({7, 2}, dtypes::f32);
  auto yv = y.to_double_vector();
  auto parts = o::split(y, o::Shape{2, 0, 5}, 0);
  REQUIRE(parts.size() == 3);
  expect_close(parts[0], {2, 2}, std::vector<double>(yv.begin(), yv.begin() + 4));
  CHECK(parts[1].shape() == o::Shape{0, 2});
  expect_close(parts[2], {5, 2}, std::vector<double>(yv.begin() + 4, yv.end()));
  auto chunks = o::split(y, std::int64_t(3), 0);
  REQUIRE(chunks.size() == 3);
  expect_close(chunks[2], {1, 2}, std::vector<double>(yv.begin() + 12, yv.end()));
  auto cols = o::split(y, std::int64_t(1), -1);
  REQUIRE(cols.size() == 2);
  std::vector<double> c1;
  for (int i = 0; i < 7; ++i) c1.push_back(yv[i * 2 + 1]);
  expect_close(cols[1], {7, 1}, c1);
  expect_error([&] { (void)o::pad(x, {1, 2, 3}); }, {"pad: pads [1, 2, 3] must hold (before, after) pairs"});
  expect_error([&] { (void)o::pad(x, {-1, 0}); }, {"pad: pads [-1, 0] must be non-negative"});
  expect_error([&] { (void)o::tile(x, {-1}); }, {"tile: reps [-1] must be non-negative"});
  expect_error([&] { (void)o::split(y, o::Shape{3, 3}, 0); }, {"split: sizes [3, 3] add up to 6 but axis 0 of the tensor of shape (7, 2) has 7"});
  expect_error([&] { (void)o::split(y, std::int64_t(0), 0); }, {"split: chunk size 0 must be positive"});
}

TEST_CASE("squeeze, unsqueeze, flatten, broadcast_to, transpose: functions and methods") {
  Tensor x = make({2, 1, 3}, dtypes::f32);
  auto xv = x.to_double_vector();
  expect_close(x.squeeze(), {2, 3}, xv);
  expect_close(o::squeeze(x, {1}), {2, 3}, xv);
  expect_close(x.unsqueeze(-1), {2, 1, 3, 1}, xv);
  expect_close(x.flatten(), {6}, xv);
  expect_close(x.flatten(1), {2, 3}, xv);
  std::vector<double> bc;
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 3; ++k) bc.push_back(xv[i * 3 + k]);
  expect_close(x.broadcast_to({4, 2, 5, 3}), {4, 2, 5, 3}, bc);
  std::vector<double> tr;
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 2; ++i) tr.push_back(xv[i * 3 + k]);
  expect_close(x.squeeze().transpose(), {3, 2}, tr);
  expect_close(x.permute({2, 1, 0}), {3, 1, 2}, tr);
  expect_close(x.abs(), {2, 1, 3}, map(xv, [](double v) { return std::abs(v); }));
  expect_close(x.exp().sum(), {}, {[&] { double s = 0; for (double v : xv) s += std::exp(v); return s; }()});
  expect_close(x.relu().max(), {}, {std::max(0.0, *std::max_element(xv.begin(), xv.end()))}, true);
  expect_close(x.mean({0, 2}, true), {1, 1, 1}, {[&] { double s = 0; for (double v : xv) s += v; return s / 6; }()});
  expect_close(x.prod({2}), {2, 1}, {xv[0] * xv[1] * xv[2], xv[3] * xv[4] * xv[5]});
  expect_close(x.var(), {}, {[&] { double m = 0, s = 0; for (double v : xv) m += v / 6; for (double v : xv) s += (v - m) * (v - m); return s / 5; }()});
  expect_error([&] { (void)x.squeeze({0}); }, {"squeeze: axis 0 of shape (2, 1, 3) has size 2, not 1"});
  expect_error([&] { (void)x.broadcast_to({2, 2}); }, {"broadcast_to: cannot broadcast shape"});
  expect_error([&] { (void)x.permute({0, 0, 1}); }, {"permute: [0, 0, 1] is not a permutation"});
  expect_error([&] { (void)x.astype(dtypes::f32).unsqueeze(5); }, {"unsqueeze: axis 5 is out of range"});
}

TEST_CASE("creation: full, arange, linspace, *_like") {
  expect_close(o::full({2, 3}, 2.5), {2, 3}, std::vector<double>(6, 2.5));
  Tensor fi = o::full({4}, -7, dtypes::i32);
  CHECK(fi.dtype() == dtypes::i32);
  expect_close(fi, {4}, std::vector<double>(4, -7));
  expect_close(o::full({3}, 1, dtypes::boolean), {3}, {1, 1, 1});
  Tensor e = o::full({0, 5}, 1.0);
  CHECK_MESSAGE((e.shape() == o::Shape{0, 5}), o::shape_str(e.shape()));
  Tensor ar = o::arange(2, 11, 3);
  CHECK(ar.dtype() == dtypes::i64);
  expect_close(ar, {3}, {2, 5, 8});
  expect_close(o::arange(1, 0, -0.25, dtypes::f32), {4}, {1, 0.75, 0.5, 0.25});
  CHECK(o::arange(5, 5).shape() == o::Shape{0});
  expect_close(o::linspace(-1, 1, 5, dtypes::f16), {5}, {-1, -0.5, 0, 0.5, 1}, false);
  expect_close(o::linspace(3, 9, 1), {1}, {3});
  Tensor base = make({2, 2}, dtypes::bf16);
  Tensor ol = o::ones_like(base), zl = o::zeros_like(base), fl = o::full_like(base, 4);
  CHECK(ol.dtype() == dtypes::bf16);
  CHECK(ol.device() == base.device());
  expect_close(ol, {2, 2}, std::vector<double>(4, 1));
  expect_close(zl, {2, 2}, std::vector<double>(4, 0), true);
  expect_close(fl, {2, 2}, std::vector<double>(4, 4));
  Tensor onc = o::full({2}, 3.0, dtypes::f32, Device::cpu());
  CHECK(onc.device() == Device::cpu());
  expect_close(onc, {2}, {3, 3});
  expect_error([&] { (void)o::arange(0, 1, 0); }, {"arange: step must not be 0"});
  expect_error([&] { (void)o::linspace(0, 1, -2); }, {"linspace: num must be non-negative, got -2"});
}

TEST_CASE("transpose and permute through the tiled schedule: partial tiles, skinny shapes, dtypes") {
  struct Case {
    o::Shape shape;
    std::vector<int> perm;
    DataType d;
  };
  std::vector<Case> cases{
      {{130, 129}, {1, 0}, dtypes::f32},     {{37, 1000}, {1, 0}, dtypes::f32},  {{3, 5000}, {1, 0}, dtypes::f32},
      {{5000, 3}, {1, 0}, dtypes::f32},      {{67, 131}, {1, 0}, dtypes::f16},   {{33, 65}, {1, 0}, dtypes::i8},
      {{65, 33}, {1, 0}, dtypes::f64},       {{33, 70}, {1, 0}, dtypes::boolean}, {{4, 37, 70}, {0, 2, 1}, dtypes::f32},
      {{5, 37, 70}, {2, 1, 0}, dtypes::bf16}, {{5, 37, 70}, {2, 0, 1}, dtypes::i32}, {{5, 37, 70}, {1, 0, 2}, dtypes::f32},
  };
  for (auto &c : cases) {
    INFO("shape " << o::shape_str(c.shape) << ", dtype " << c.d << ", perm " << c.perm[0] << c.perm[1] << (c.perm.size() > 2 ? c.perm[2] : -1));
    Tensor x = make(c.shape, c.d, -100, 100, true);
    auto xv = x.to_double_vector();
    o::Shape out;
    for (int p : c.perm) out.push_back(c.shape[std::size_t(p)]);
    std::vector<double> want(xv.size());
    for (std::size_t f = 0; f < want.size(); ++f) {
      auto oi = unravel(std::int64_t(f), out);
      std::vector<std::int64_t> ii(c.shape.size());
      for (std::size_t k = 0; k < c.perm.size(); ++k) ii[std::size_t(c.perm[k])] = oi[k];
      want[f] = xv[std::size_t(ravel(ii, c.shape))];
    }
    expect_close(o::permute(x, c.perm), out, want);
  }
}
