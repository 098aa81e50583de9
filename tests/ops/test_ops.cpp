// Eager operators against host references in double precision (runs kernels: on the GPU when
// present, else on the CPU emulator). Fresh random inputs every run; the seed is printed on a
// failure. Small odd shapes keep the emulator fast.
#include <doctest/doctest.h>

#include <tuple>

#include <cmath>
#include <functional>
#include <random>

#include "hidet/hidet.hpp"
#include "hidet/ops.hpp"

using namespace hidet;
namespace o = hidet::ops;

namespace {
std::uint64_t g_seed = std::random_device{}();
std::mt19937_64 g_rng(g_seed);

/// A tensor of `shape` with uniform values in [lo, hi) (small integers when `ints`).
Tensor make(const o::Shape &shape, DataType d, double lo = -2, double hi = 2, bool ints = false) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(std::size_t(o::shape_numel(shape)));
  for (auto &x : v) x = ints ? std::floor(u(g_rng)) : u(g_rng);
  return asarray(v, shape, d);
}

double tol(DataType d) { return d == dtypes::f16 ? 2e-2 : d == dtypes::bf16 ? 1e-1 : d == dtypes::f64 ? 1e-10 : 1e-4; }

/// Compares `got` with `want` (relative+absolute tolerance for dtype); rejects an all-zero output
/// unless `allow_zero`.
void expect_close(const Tensor &got, const o::Shape &shape, const std::vector<double> &want, bool allow_zero = false) {
  INFO("seed " << g_seed);
  REQUIRE(got.shape() == shape);
  auto g = got.to_double_vector();
  REQUIRE(g.size() == want.size());
  double t = tol(got.dtype());
  bool nonzero = false;
  for (std::size_t i = 0; i < g.size(); ++i) {
    nonzero |= g[i] != 0;
    if (!(std::abs(g[i] - want[i]) <= t * (1 + std::abs(want[i])))) {
      FAIL_CHECK("first bad index " << i << ": got " << g[i] << ", want " << want[i]);
      return;
    }
  }
  if (!allow_zero && !g.empty()) CHECK_MESSAGE(nonzero, "all-zero output");
}

/// Host broadcast helper: the flat input index for output flat index `f`.
std::size_t bidx(const o::Shape &in, const o::Shape &out, std::size_t f) {
  std::size_t r = 0, stride = 1;
  std::size_t off = out.size() - in.size();
  std::vector<std::size_t> idx(out.size());
  for (std::size_t d = out.size(); d-- > 0;) idx[d] = f % out[d], f /= out[d];
  for (std::size_t d = in.size(); d-- > 0;) {
    r += (in[d] == 1 ? 0 : idx[d + off]) * stride;
    stride *= in[d];
  }
  return r;
}

template <class E> void expect_error(E &&f, const std::string &text) {
  try {
    f();
    FAIL("expected a ValueError containing: " << text);
  } catch (const ValueError &e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(std::string(e.what()).find(text) != std::string::npos);
  }
}
} // namespace

TEST_CASE("binary ops broadcast and promote") {
  for (DataType d : {dtypes::f32, dtypes::f16}) {
    o::Shape sa{3, 1, 5}, sb{4, 1}, so{3, 4, 5};
    Tensor a = make(sa, d), b = make(sb, d);
    auto av = a.to_double_vector(), bv = b.to_double_vector();
    std::vector<double> add(60), mul(60), mx(60);
    for (std::size_t i = 0; i < 60; ++i) {
      double x = av[bidx(sa, so, i)], y = bv[bidx(sb, so, i)];
      add[i] = x + y, mul[i] = x * y, mx[i] = std::max(x, y);
    }
    expect_close(a + b, so, add);
    expect_close(a * b, so, mul);
    expect_close(o::maximum(a, b), so, mx);
    CHECK((a + b).dtype() == d);
  }
  CHECK(o::promote_types(dtypes::f16, dtypes::bf16) == dtypes::f32);
  CHECK(o::promote_types(dtypes::u8, dtypes::i8) == dtypes::i16);
  CHECK(o::promote_types(dtypes::i32, dtypes::f16) == dtypes::f16);
  CHECK(o::promote_types(dtypes::boolean, dtypes::i8) == dtypes::i8);
  Tensor i = make({7}, dtypes::i32, -5, 5, true);
  CHECK((i / 2).dtype() == dtypes::f32);
  CHECK((i + 1).dtype() == dtypes::i32);
  CHECK((i * 0.5).dtype() == dtypes::f32);
}

TEST_CASE("unary ops, comparisons, where and cast") {
  o::Shape s{2, 33};
  Tensor x = make(s, dtypes::f32);
  auto xv = x.to_double_vector();
  auto ref = [&](std::function<double(double)> f) {
    std::vector<double> r;
    for (double v : xv) r.push_back(f(v));
    return r;
  };
  expect_close(o::relu(x), s, ref([](double v) { return std::max(v, 0.0); }));
  expect_close(o::exp(x), s, ref([](double v) { return std::exp(v); }));
  expect_close(o::sigmoid(x), s, ref([](double v) { return 1 / (1 + std::exp(-v)); }));
  expect_close(o::gelu(x), s, ref([](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  expect_close(-x, s, ref([](double v) { return -v; }));
  Tensor c = x > 0.0;
  CHECK(c.dtype() == dtypes::boolean);
  expect_close(o::cast(c, dtypes::f32), s, ref([](double v) { return v > 0 ? 1.0 : 0.0; }));
  expect_close(o::where(c, x, o::full({1}, 3.0)), s, ref([](double v) { return v > 0 ? v : 3.0; }));
  expect_close(o::cast(x, dtypes::f16), s, xv);
}

TEST_CASE("reductions with keepdims over leading, trailing and all axes") {
  for (DataType d : {dtypes::f32, dtypes::f16}) {
    o::Shape s{3, 37, 5};
    Tensor x = make(s, d);
    auto xv = x.to_double_vector();
    auto at = [&](int i, int j, int k) { return xv[(i * 37 + j) * 5 + k]; };
    std::vector<double> s1(15), s0(185), mx(15), am(15);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double best = -1e30;
        int bi = 0;
        for (int j = 0; j < 37; ++j) {
          s1[i * 5 + k] += at(i, j, k);
          if (at(i, j, k) > best) best = at(i, j, k), bi = j;
        }
        mx[i * 5 + k] = best, am[i * 5 + k] = bi;
      }
    for (int j = 0; j < 37; ++j)
      for (int k = 0; k < 5; ++k)
        for (int i = 0; i < 3; ++i) s0[j * 5 + k] += at(i, j, k);
    expect_close(o::sum(x, {1}, true), {3, 1, 5}, s1);
    expect_close(o::sum(x, {0}), {37, 5}, s0);
    expect_close(o::max(x, {-2}), {3, 5}, mx);
    expect_close(o::argmax(x, 1), {3, 5}, am, true);
    double total = 0;
    for (double v : xv) total += v;
    expect_close(o::mean(x), {}, {total / xv.size()});
  }
  // A long row: split over several blocks.
  Tensor y = make({2, 20000}, dtypes::f32, 0, 1);
  auto yv = y.to_double_vector();
  std::vector<double> r(2);
  for (int i = 0; i < 40000; ++i) r[i / 20000] += yv[i];
  expect_close(o::sum(y, {1}), {2}, r);
  // Empty reduction: sum is 0.
  expect_close(o::sum(o::full({3, 0}, 1.0), {1}), {3}, {0, 0, 0}, true);
}

TEST_CASE("softmax, layer_norm and matmul") {
  o::Shape s{4, 45};
  Tensor x = make(s, dtypes::f32);
  auto xv = x.to_double_vector();
  std::vector<double> sm(xv.size()), ln(xv.size());
  for (int i = 0; i < 4; ++i) {
    double m = -1e30, z = 0, mu = 0, var = 0;
    for (int j = 0; j < 45; ++j) m = std::max(m, xv[i * 45 + j]);
    for (int j = 0; j < 45; ++j) z += std::exp(xv[i * 45 + j] - m), mu += xv[i * 45 + j] / 45;
    for (int j = 0; j < 45; ++j) var += (xv[i * 45 + j] - mu) * (xv[i * 45 + j] - mu) / 45;
    for (int j = 0; j < 45; ++j) {
      sm[i * 45 + j] = std::exp(xv[i * 45 + j] - m) / z;
      ln[i * 45 + j] = (xv[i * 45 + j] - mu) / std::sqrt(var + 1e-5);
    }
  }
  expect_close(o::softmax(x), s, sm);
  expect_close(o::layer_norm(x), s, ln);
  Tensor a = make({5, 7}, dtypes::f32), b = make({7, 3}, dtypes::f32);
  auto av = a.to_double_vector(), bv = b.to_double_vector();
  std::vector<double> c(15);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 7; ++k) c[i * 3 + j] += av[i * 7 + k] * bv[k * 3 + j];
  expect_close(o::matmul(a, b), {5, 3}, c);
}

TEST_CASE("transforms") {
  Tensor x = make({2, 3, 4}, dtypes::f32);
  auto xv = x.to_double_vector();
  std::vector<double> t(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) t[(k * 3 + j) * 2 + i] = xv[(i * 3 + j) * 4 + k];
  expect_close(o::permute(x, {2, 1, 0}), {4, 3, 2}, t);
  expect_close(o::reshape(x, {6, -1}), {6, 4}, xv);
  std::vector<double> sl;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 1; k < 4; k += 2) sl.push_back(xv[(i * 3 + j) * 4 + k]);
  expect_close(o::slice(x, {2}, {1}, {4}, {2}), {2, 3, 2}, sl);
  std::vector<double> cat = xv;
  cat.insert(cat.end(), xv.begin(), xv.end());
  expect_close(o::concat({x, x}, 0), {4, 3, 4}, cat);
}

TEST_CASE("bad inputs raise ValueError naming the operator and leave the inputs untouched") {
  Tensor a = make({2, 3}, dtypes::f32), b = make({4, 3}, dtypes::f32);
  auto before = a.to_double_vector();
  expect_error([&] { (void)(a + b); }, "add: cannot broadcast shapes (2, 3) and (4, 3)");
  expect_error([&] { (void)o::sum(a, {2}); }, "sum: axis 2 is out of range for a tensor of shape (2, 3)");
  expect_error([&] { (void)o::reshape(a, {4, 2}); }, "reshape: cannot reshape a tensor of shape (2, 3)");
  expect_error([&] { (void)o::matmul(a, a); }, "matmul: cannot multiply shapes (2, 3) and (2, 3)");
  expect_error([&] { (void)o::softmax(o::cast(a, dtypes::i32)); }, "softmax: expected a floating-point tensor");
  expect_error([&] { (void)(a + a.to(Device::cpu())); }, "all inputs must be on the same device");
  CHECK(a.to_double_vector() == before);
}

TEST_CASE("the kernel cache reuses compiled tasks") {
  Tensor a = make({3, 5}, dtypes::f32);
  (void)o::relu(a);
  auto n = o::compiled_task_count();
  (void)o::relu(make({3, 5}, dtypes::f32));
  CHECK(o::compiled_task_count() == n);
  (void)o::relu(make({3, 6}, dtypes::f32));
  CHECK(o::compiled_task_count() == n + 1);
}

TEST_CASE("concat_generic: one kernel for every shape, the values of concat") {
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    CAPTURE(dt.name());
    // Widths of 3 and 2 joined along the last axis, then widths of 7 and 5 and other rows: the
    // first call builds the kernel, the second reuses it. Along the first axis too.
    (void)o::concat_generic({make({4, 3}, dt), make({4, 2}, dt)}, 1);
    const auto n = o::compiled_task_count();
    std::vector<std::pair<std::vector<Tensor>, Tensor>> runs;
    for (auto [rows, w0, w1] : {std::tuple{5, 7, 5}, std::tuple{1, 1, 9}, std::tuple{33, 16, 48}}) {
      std::vector<Tensor> in{make({rows, w0}, dt), make({rows, w1}, dt)};
      runs.emplace_back(in, o::concat_generic(in, -1));
      CHECK(runs.back().second.shape() == std::vector<std::int64_t>{rows, w0 + w1});
    }
    CHECK(o::compiled_task_count() == n);
    for (const auto &[in, got] : runs) CHECK(got.to_double_vector() == o::concat(in, 1).to_double_vector());
    Tensor a = make({2, 6}, dt), b = make({3, 6}, dt), c = make({1, 6}, dt);
    CHECK(o::concat_generic({a, b, c}, 0).to_double_vector() == o::concat({a, b, c}, 0).to_double_vector());
  }
  expect_error([&] { (void)o::concat_generic({make({2, 3}, dtypes::f32), make({3, 3}, dtypes::f32)}, 1); },
               "along axis 1: dtypes and all other dimensions must match");
}

TEST_CASE("full: constants of any shape without a kernel to build where a memset writes them") {
  // Tracing a model makes small constants of many shapes: 1-, 2- and 4-byte patterns (and 8-byte
  // ones of equal halves) are driver memsets on a GPU, host fills on the emulator; no kernel.
  struct Case {
    DataType dt;
    double value;
    bool memset;
  };
  for (Case c : {Case{dtypes::f16, 1.5, true}, Case{dtypes::bf16, -3.0, true}, Case{dtypes::f32, 0.25, true},
                 Case{dtypes::i8, -3, true}, Case{dtypes::boolean, 1, true}, Case{dtypes::i64, 0, true},
                 Case{dtypes::i64, -1, true}, Case{dtypes::f64, 1.1, false}, Case{dtypes::i32, 7, true}}) {
    INFO(c.dt << " " << c.value);
    for (o::Shape shape : {o::Shape{3, 7}, o::Shape{5}, o::Shape{2, 0}, o::Shape{}}) {
      auto n = o::compiled_task_count();
      Tensor t = o::full(shape, c.value, c.dt, Device::cuda());
      if (c.memset) CHECK(o::compiled_task_count() == n);
      CHECK(t.shape() == shape);
      CHECK(t.dtype() == c.dt);
      const double want = c.value; // exact in each dtype (bool: 1)
      for (double v : t.to_double_vector()) CHECK(v == want);
    }
  }
  // On the cpu too.
  CHECK(o::full({4}, 2.0, dtypes::f32, Device::cpu()).to_double_vector() == std::vector<double>(4, 2.0));
}
