// Element-wise operators over dtypes (f32, f16, bf16, integers, bool) against double-precision
// host references (GPU when present, else the CPU emulator).
#include "ops_test_util.hpp"

using namespace ops_test;

namespace {
using F = std::function<double(double)>;
using F2 = std::function<double(double, double)>;
double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

/// f over x (shape xs) and y (shape ys) broadcast to shape os.
std::vector<double> ref2(const F2 &f, const std::vector<double> &x, const o::Shape &xs,
                         const std::vector<double> &y, const o::Shape &ys, const o::Shape &os) {
  std::vector<double> r;
  for (std::size_t i = 0; i < std::size_t(o::shape_numel(os)); ++i)
    r.push_back(f(x[bidx(xs, os, i)], y[bidx(ys, os, i)]));
  return r;
}

/// erf^-1 by bisection (independent of the emulator's Newton iteration): on erf, or on erfc near
/// +-1, where 1 - |y| is exact and erfc keeps its relative precision.
double erfinv_ref(double y) {
  double a = std::abs(y), lo = 0, hi = 7;
  if (a == 1) return std::copysign(INFINITY, y);
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    (a > 0.5 ? std::erfc(mid) > 1 - a : std::erf(mid) < a) ? lo = mid : hi = mid;
  }
  return std::copysign((lo + hi) / 2, y);
}

/// -1, 0 or 1 (0 for NaN, as PyTorch).
double sign_ref(double v) { return double((v > 0) - (v < 0)); }

/// Python's x // y and x % y (the sign of y), as PyTorch's floor_divide and remainder.
double py_floordiv(double x, double y) {
  if (std::isinf(y) && std::isfinite(x)) return x != 0 && (x < 0) != (y < 0) ? -1 : 0;
  return std::floor(x / y);
}
double py_mod(double x, double y) {
  double r = std::fmod(x, y);
  return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

/// A unary operator, its double reference and its input range.
struct U {
  const char *name;
  std::function<Tensor(const Tensor &)> op;
  F ref;
  double lo, hi;
  std::vector<double> specials = {}; // written over the first inputs (edges of the domain, NaN, -0)
};

/// A tensor of `shape` with values from `v` (v[i] replaced by `fix` where `bad` holds).
Tensor tensor_of(std::vector<double> v, const o::Shape &shape, DataType d,
                 const std::function<bool(double)> &bad = {}, double fix = 1) {
  if (bad)
    for (auto &x : v)
      x = bad(x) ? fix : x;
  return asarray(v, shape, d);
}
} // namespace

TEST_CASE("unary float ops on f32, f16 and bf16 (odd shape, size-1 dims)") {
  std::vector<U> ops{
      {"neg", [](const Tensor &x) { return o::neg(x); }, [](double v) { return -v; }, -2, 2},
      {"abs", [](const Tensor &x) { return o::abs(x); }, [](double v) { return std::abs(v); }, -2, 2},
      {"exp", [](const Tensor &x) { return o::exp(x); }, [](double v) { return std::exp(v); }, -2, 2},
      {"log", [](const Tensor &x) { return o::log(x); }, [](double v) { return std::log(v); }, 0.1, 3},
      {"sqrt", [](const Tensor &x) { return o::sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.1, 3},
      {"rsqrt", [](const Tensor &x) { return o::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.1, 3},
      {"reciprocal", [](const Tensor &x) { return o::reciprocal(x); }, [](double v) { return 1 / v; }, 0.2, 3},
      {"sin", [](const Tensor &x) { return o::sin(x); }, [](double v) { return std::sin(v); }, -3, 3},
      {"cos", [](const Tensor &x) { return o::cos(x); }, [](double v) { return std::cos(v); }, -3, 3},
      {"tanh", [](const Tensor &x) { return o::tanh(x); }, [](double v) { return std::tanh(v); }, -2, 2},
      {"sigmoid", [](const Tensor &x) { return o::sigmoid(x); }, sigmoid, -3, 3},
      {"relu", [](const Tensor &x) { return o::relu(x); }, [](double v) { return std::max(v, 0.0); }, -2, 2},
      {"leaky_relu", [](const Tensor &x) { return o::leaky_relu(x, 0.1); }, [](double v) { return v > 0 ? v : 0.1 * v; }, -2, 2},
      {"gelu", [](const Tensor &x) { return o::gelu(x); }, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, -3, 3},
      {"gelu_tanh", [](const Tensor &x) { return o::gelu(x, true); },
       [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, -3, 3},
      {"silu", [](const Tensor &x) { return o::silu(x); }, [](double v) { return v * sigmoid(v); }, -3, 3},
      {"erf", [](const Tensor &x) { return o::erf(x); }, [](double v) { return std::erf(v); }, -2, 2},
      {"floor", [](const Tensor &x) { return o::floor(x); }, [](double v) { return std::floor(v); }, -3, 3},
      {"ceil", [](const Tensor &x) { return o::ceil(x); }, [](double v) { return std::ceil(v); }, -3, 3},
      {"round", [](const Tensor &x) { return o::round(x); }, [](double v) { return std::nearbyint(v); }, -3, 3},
      {"clamp", [](const Tensor &x) { return o::clamp(x, -0.5, 0.75); }, [](double v) { return std::min(std::max(v, -0.5), 0.75); }, -2, 2},
  };
  o::Shape s{3, 1, 13};
  for (auto &u : ops)
    for (DataType d : {dtypes::f32, dtypes::f16, dtypes::bf16}) {
      INFO(std::string(u.name) << " on " << d);
      Tensor x = make(s, d, u.lo, u.hi);
      auto before = x.to_double_vector();
      Tensor y = u.op(x);
      CHECK(y.dtype() == d);
      expect_close(y, s, map(before, u.ref), std::string(u.name) == "round" || std::string(u.name) == "floor");
      CHECK(x.to_double_vector() == before);
    }
  // round: ties go to the even neighbour (PyTorch), on every dtype.
  Tensor ties = asarray(std::vector<double>{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 1e9 + 1}, {8}, dtypes::f32);
  expect_close(o::round(ties), {8}, {-2, -2, -0, 0, 2, 2, 4, 1e9 + 1});
  expect_close(o::round(o::cast(ties, dtypes::bf16)), {8}, {-2, -2, -0, 0, 2, 2, 4, 1e9}, false, 1);
  // Empty tensors pass through.
  CHECK(o::exp(make({0, 3}, dtypes::f32)).shape() == o::Shape{0, 3});
}

TEST_CASE("unary ops on integers and bool; isnan; logical_not") {
  Tensor xi = make({5, 7}, dtypes::i32, -20, 20);
  auto xv = xi.to_double_vector();
  expect_close(o::abs(xi), {5, 7}, map(xv, [](double v) { return std::abs(v); }));
  expect_close(-xi, {5, 7}, map(xv, [](double v) { return -v; }));
  expect_close(o::relu(xi), {5, 7}, map(xv, [](double v) { return std::max(v, 0.0); }));
  expect_close(o::clamp(xi, -3, 4), {5, 7}, map(xv, [](double v) { return std::min(std::max(v, -3.0), 4.0); }));
  CHECK(o::abs(xi).dtype() == dtypes::i32);
  Tensor e = o::exp(o::clamp(xi, -3, 3));
  CHECK(e.dtype() == dtypes::f32);
  expect_close(e, {5, 7}, map(xv, [](double v) { return std::exp(std::min(std::max(v, -3.0), 3.0)); }));
  CHECK(o::floor(xi).to_double_vector() == xv);
  Tensor xb = make({4, 9}, dtypes::boolean);
  auto bv = xb.to_double_vector();
  Tensor nb = o::logical_not(xb);
  CHECK(nb.dtype() == dtypes::boolean);
  expect_close(nb, {4, 9}, map(bv, [](double v) { return v ? 0.0 : 1.0; }));
  expect_close(o::logical_not(xi), {5, 7}, map(xv, [](double v) { return v == 0 ? 1.0 : 0.0; }), true);
  // isnan: 0/0 gives NaN.
  Tensor z = o::div(make({6}, dtypes::f32, 0, 1, true), make({6}, dtypes::f32, 0, 1, true));
  expect_close(o::isnan(z), {6}, std::vector<double>(6, 1.0));
  expect_close(o::isnan(xi), {5, 7}, std::vector<double>(35, 0.0), true);
  expect_error([&] { (void)o::exp(xb); }, {"exp: dtype bool is not supported", "(4, 9)"});
  expect_error([&] { (void)o::gelu(xi); }, {"gelu: expected a floating-point tensor, got dtype"});
  expect_error([&] { (void)o::clamp(xi, 3, -3); }, {"clamp: min 3 is greater than max -3"});
}

TEST_CASE("binary ops on integers, bool, bf16 and mixed dtypes; broadcasting with size-1 and empty dims") {
  o::Shape sa{4, 1, 3}, sb{5, 1}, so{4, 5, 3};
  Tensor a = make(sa, dtypes::i32, -9, 9), b = make(sb, dtypes::i32, 1, 6);
  auto av = a.to_double_vector(), bv = b.to_double_vector();
  expect_close(a + b, so, ref2([](double x, double y) { return x + y; }, av, sa, bv, sb, so));
  expect_close(a * b, so, ref2([](double x, double y) { return x * y; }, av, sa, bv, sb, so));
  expect_close(o::sub(a, b), so, ref2([](double x, double y) { return x - y; }, av, sa, bv, sb, so));
  // Python-style modulo: the result has the sign of the divisor.
  expect_close(o::mod(a, b), so, ref2([](double x, double y) { return x - std::floor(x / y) * y; }, av, sa, bv, sb, so), true);
  expect_close(o::mod(o::cast(a, dtypes::f32), o::cast(b, dtypes::f32) * -1), so,
               ref2([](double x, double y) { return x - std::floor(x / -y) * -y; }, av, sa, bv, sb, so), true);
  Tensor q = a / b;
  CHECK(q.dtype() == dtypes::f32);
  expect_close(q, so, ref2([](double x, double y) { return x / y; }, av, sa, bv, sb, so));
  expect_close(o::pow(o::cast(b, dtypes::f32), 2.0), sb, map(bv, [](double v) { return v * v; }));
  expect_close(o::maximum(a, b), so, ref2([](double x, double y) { return std::max(x, y); }, av, sa, bv, sb, so));
  expect_close(o::minimum(a, b), so, ref2([](double x, double y) { return std::min(x, y); }, av, sa, bv, sb, so));
  // Comparisons give bool.
  for (auto [name, op, f] : std::vector<std::tuple<const char *, std::function<Tensor(const Tensor &, const Tensor &)>,
                                                   std::function<double(double, double)>>>{
           {"eq", [](const Tensor &x, const Tensor &y) { return o::eq(x, y); }, [](double x, double y) { return double(x == y); }},
           {"ne", [](const Tensor &x, const Tensor &y) { return o::ne(x, y); }, [](double x, double y) { return double(x != y); }},
           {"lt", [](const Tensor &x, const Tensor &y) { return o::lt(x, y); }, [](double x, double y) { return double(x < y); }},
           {"le", [](const Tensor &x, const Tensor &y) { return o::le(x, y); }, [](double x, double y) { return double(x <= y); }},
           {"gt", [](const Tensor &x, const Tensor &y) { return o::gt(x, y); }, [](double x, double y) { return double(x > y); }},
           {"ge", [](const Tensor &x, const Tensor &y) { return o::ge(x, y); }, [](double x, double y) { return double(x >= y); }}}) {
    INFO(name);
    Tensor c = op(a, b);
    CHECK(c.dtype() == dtypes::boolean);
    expect_close(c, so, ref2(f, av, sa, bv, sb, so), true);
  }
  // Logical ops on bool and on numbers (non-zero is true).
  Tensor p = make({3, 4}, dtypes::boolean), r = make({4}, dtypes::boolean);
  auto pv = p.to_double_vector(), rv = r.to_double_vector();
  expect_close(o::logical_and(p, r), {3, 4}, ref2([](double x, double y) { return double(x && y); }, pv, {3, 4}, rv, {4}, {3, 4}), true);
  expect_close(o::logical_or(p, r), {3, 4}, ref2([](double x, double y) { return double(x || y); }, pv, {3, 4}, rv, {4}, {3, 4}), true);
  // bool + bool promotes to i32 arithmetic; bf16 + f16 gives f32; u8 + i8 gives i16.
  CHECK((p + p).dtype() == dtypes::i32);
  Tensor h = make({2, 3}, dtypes::bf16), g = make({3}, dtypes::f16);
  Tensor hg = h + g;
  CHECK(hg.dtype() == dtypes::f32);
  expect_close(hg, {2, 3}, ref2([](double x, double y) { return x + y; }, h.to_double_vector(), {2, 3}, g.to_double_vector(), {3}, {2, 3}));
  Tensor u = make({5}, dtypes::u8, 0, 200), s8 = make({5}, dtypes::i8, -100, 100);
  Tensor us = u + s8;
  CHECK(us.dtype() == dtypes::i16);
  expect_close(us, {5}, ref2([](double x, double y) { return x + y; }, u.to_double_vector(), {5}, s8.to_double_vector(), {5}, {5}));
  // i64 arithmetic is exact beyond 2^31.
  Tensor big = o::full({3}, 3e9, dtypes::i64);
  expect_close(big + big, {3}, std::vector<double>(3, 6e9));
  // Empty and size-1 broadcasting.
  CHECK((make({0, 3}, dtypes::f32) + make({1, 3}, dtypes::f32)).shape() == o::Shape{0, 3});
  CHECK((make({2, 1}, dtypes::f32) + make({}, dtypes::f32)).shape() == o::Shape{2, 1});
  // where with a bool condition, mixed value dtypes (i32 and f16 give f16).
  Tensor cond = make({4, 1}, dtypes::boolean), x1 = make({4, 3}, dtypes::i32, -5, 5), x2 = make({3}, dtypes::f16);
  Tensor w = o::where(cond, x1, x2);
  CHECK(w.dtype() == dtypes::f16);
  auto cv = cond.to_double_vector(), x1v = x1.to_double_vector(), x2v = x2.to_double_vector();
  std::vector<double> wv;
  for (std::size_t i = 0; i < 12; ++i) wv.push_back(cv[i / 3] ? x1v[i] : x2v[i % 3]);
  expect_close(w, {4, 3}, wv);
  expect_error([&] { (void)o::where(cond, x1, make({2}, dtypes::f32)); }, {"where: cannot broadcast shapes (4, 3) and (2,)"});
  expect_error([&] { (void)(a * make({2, 2}, dtypes::i32)); }, {"mul: cannot broadcast shapes (4, 1, 3) and (2, 2)", "i32"});
}

TEST_CASE("cast between dtypes") {
  Tensor x = make({3, 11}, dtypes::f32, -100, 100);
  auto xv = x.to_double_vector();
  expect_close(o::cast(x, dtypes::i32), {3, 11}, map(xv, [](double v) { return std::trunc(v); }));
  expect_close(o::cast(x, dtypes::boolean), {3, 11}, map(xv, [](double v) { return double(v != 0); }));
  expect_close(o::cast(x, dtypes::bf16), {3, 11}, xv);
  expect_close(o::cast(o::cast(x, dtypes::f16), dtypes::f64), {3, 11}, xv, false, 1e8);
  Tensor b = make({7}, dtypes::boolean);
  expect_close(o::cast(b, dtypes::f16), {7}, b.to_double_vector(), true);
  Tensor i = make({7}, dtypes::i64, -50, 50);
  expect_close(o::cast(i, dtypes::i8), {7}, i.to_double_vector());
  expect_close(i.astype(dtypes::f32), {7}, i.to_double_vector());
  CHECK(o::cast(x, dtypes::f32).data_ptr() == x.data_ptr());
}

TEST_CASE("float math: trig, hyperbolic, log/exp variants, erfinv, trunc, sign over dtypes") {
  double nan = std::nan("");
  // clang-format off
  std::vector<U> ops{
      {"tan", [](const Tensor &x) { return o::tan(x); }, [](double v) { return std::tan(v); }, -1.4, 1.4, {0}},
      {"asin", [](const Tensor &x) { return o::asin(x); }, [](double v) { return std::asin(v); }, -1, 1, {1, -1}},
      {"acos", [](const Tensor &x) { return o::acos(x); }, [](double v) { return std::acos(v); }, -1, 1, {1, -1}},
      {"atan", [](const Tensor &x) { return o::atan(x); }, [](double v) { return std::atan(v); }, -4, 4},
      {"sinh", [](const Tensor &x) { return o::sinh(x); }, [](double v) { return std::sinh(v); }, -3, 3},
      {"cosh", [](const Tensor &x) { return o::cosh(x); }, [](double v) { return std::cosh(v); }, -3, 3},
      {"asinh", [](const Tensor &x) { return o::asinh(x); }, [](double v) { return std::asinh(v); }, -5, 5},
      {"acosh", [](const Tensor &x) { return o::acosh(x); }, [](double v) { return std::acosh(v); }, 1, 6, {1}},
      {"atanh", [](const Tensor &x) { return o::atanh(x); }, [](double v) { return std::atanh(v); }, -0.95, 0.95, {1, -1}},
      {"log1p", [](const Tensor &x) { return o::log1p(x); }, [](double v) { return std::log1p(v); }, -0.9, 3, {-1, 1e-3}},
      {"expm1", [](const Tensor &x) { return o::expm1(x); }, [](double v) { return std::expm1(v); }, -2, 2, {1e-3}},
      {"log2", [](const Tensor &x) { return o::log2(x); }, [](double v) { return std::log2(v); }, 0.1, 5, {0}},
      {"log10", [](const Tensor &x) { return o::log10(x); }, [](double v) { return std::log10(v); }, 0.1, 50},
      {"exp2", [](const Tensor &x) { return o::exp2(x); }, [](double v) { return std::exp2(v); }, -4, 4},
      {"erfinv", [](const Tensor &x) { return o::erfinv(x); }, erfinv_ref, -0.99, 0.99, {1, -1, 0}},
      {"erfc", [](const Tensor &x) { return o::erfc(x); }, [](double v) { return std::erfc(v); }, -3, 4, {0, -0.0}},
      {"trunc", [](const Tensor &x) { return o::trunc(x); }, [](double v) { return std::trunc(v); }, -5, 5, {-0.5}},
      {"sign", [](const Tensor &x) { return o::sign(x); }, sign_ref, -2, 2, {nan, -0.0, 0}},
  };
  // clang-format on
  o::Shape s{3, 37};
  for (std::size_t k = 0; k < ops.size(); ++k) {
    auto &u = ops[k];
    // Every op on f32, every other op also on f16 or bf16 (they all compute in f32 and round once;
    // each kernel costs an NVRTC compile on the emulator).
    std::vector<DataType> dts{dtypes::f32};
    if (k % 2) dts.push_back(k % 4 == 1 ? dtypes::f16 : dtypes::bf16);
    for (DataType d : dts) {
      INFO(u.name << " on " << d);
      auto v = make(s, d, u.lo, u.hi).to_double_vector();
      std::copy(u.specials.begin(), u.specials.end(), v.begin());
      Tensor x = asarray(v, s, d);
      auto before = x.to_double_vector();
      Tensor y = u.op(x);
      CHECK(y.dtype() == d);
      expect_close(y, s, map(before, u.ref), std::string(u.name) == "sign");
    }
  }
  // f64 computes in double (erfinv to full precision, also near +-1); integers give f32.
  auto ev = make({37}, dtypes::f64, -1, 1).to_double_vector();
  ev[0] = 1 - 1e-12, ev[1] = -0.999999;
  expect_close(o::erfinv(asarray(ev, {37}, dtypes::f64)), {37}, map(ev, erfinv_ref));
  Tensor xi = make({3, 37}, dtypes::i32, 1, 100);
  CHECK(o::log2(xi).dtype() == dtypes::f32);
  expect_close(o::log2(xi), {3, 37},
               map(xi.to_double_vector(), [](double v) { return std::log2(v); }));
  // trunc keeps integers; sign keeps the dtype of integers (unsigned: 0 or 1) and bool.
  CHECK(o::trunc(xi).data_ptr() == xi.data_ptr());
  Tensor si = make({3, 37}, dtypes::i8, -3, 3);
  Tensor sg = o::sign(si);
  CHECK(sg.dtype() == dtypes::i8);
  expect_close(sg, {3, 37}, map(si.to_double_vector(), sign_ref));
  Tensor xb = make({5}, dtypes::boolean);
  CHECK(o::sign(xb).data_ptr() == xb.data_ptr());
  expect_error([&] { (void)o::erfinv(xb); }, {"erfinv: dtype bool is not supported", "(5,)"});
}

TEST_CASE("erfc and gelu: relative accuracy into the tails, special values") {
  // On a GPU erfc is a fitted branch-free helper (codegen_intrinsics.ipp; GELU calls it): its
  // relative error stays below 1e-5 wherever erfc is above f32's smallest normal, where 1 - erf
  // would have lost every digit past z = 4. 4096 points over [-4, 9.5] plus the specials.
  const std::int64_t n = 4096;
  std::vector<double> zv(n);
  for (std::int64_t i = 0; i < n; ++i) zv[std::size_t(i)] = -4.0 + 13.5 * double(i) / double(n - 1);
  zv[0] = 0, zv[1] = -0.0, zv[2] = INFINITY, zv[3] = -INFINITY, zv[4] = std::nan("");
  // the points as f32 (the reference takes the rounded inputs)
  auto z32 = asarray(zv, {n}, dtypes::f32).to_double_vector();
  auto got = o::erfc(asarray(z32, {n}, dtypes::f32)).to_double_vector();
  double worst = 0, at = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double z = z32[std::size_t(i)], g = got[std::size_t(i)], want = std::erfc(z);
    if (std::isnan(z)) {
      CHECK(std::isnan(g));
      continue;
    }
    if (want < 1.2e-38) { // past f32's normal range: flushed to zero or a tiny value
      CHECK(std::abs(g) < 1e-37);
      continue;
    }
    double rel = std::abs(g / want - 1);
    if (rel > worst) worst = rel, at = z;
  }
  INFO("worst relative error " << worst << " at z = " << at);
  CHECK(worst < 1e-5);
  // GELU: 0.5 x erfc(-x / sqrt(2)), relative to the double reference (x < -4 included, where
  // 0.5 x (1 + erf(x / sqrt 2)) in f32 would be mostly rounding error).
  auto x32 = asarray(zv, {n}, dtypes::f32).to_double_vector();
  for (double &x : x32) x = std::isfinite(x) ? x * 0.9 - 1.5 : 0.5;
  auto gg = o::gelu(asarray(x32, {n}, dtypes::f32)).to_double_vector();
  double gworst = 0, gat = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double x = x32[std::size_t(i)], want = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    if (std::abs(want) < 1e-30) continue;
    double rel = std::abs(gg[std::size_t(i)] / want - 1);
    if (rel > gworst) gworst = rel, gat = x;
  }
  INFO("gelu: worst relative error " << gworst << " at x = " << gat);
  CHECK(gworst < 2e-5);
}

TEST_CASE("atan2, fmod, remainder, floor_divide: broadcasting, signs, zeros, floats and integers") {
  o::Shape sa{3, 37}, sb{1, 37};
  // Floats: divisors away from 0 and of both signs; the first columns hold exact cases where the
  // rounded quotient would mislead (1 // 0.1 is 9, -1 % 0.1), a zero dividend, infinite divisors.
  auto av = make(sa, dtypes::f32, -20, 20).to_double_vector(),
       bv = make(sb, dtypes::f32, -3, 3).to_double_vector();
  for (auto [i, x, y] : {std::tuple{0, 1.0, 0.1}, {1, -1.0, 0.1}, {2, 0.0, -2.0}, {3, 7.5, -2.5},
                         {4, -1.0, INFINITY}, {5, 2.0, -INFINITY}})
    av[i] = x, bv[i] = y;
  auto tiny = [](double v) { return std::abs(v) < 0.05; };
  Tensor a = tensor_of(av, sa, dtypes::f32), b = tensor_of(bv, sb, dtypes::f32, tiny, 0.75);
  av = a.to_double_vector(), bv = b.to_double_vector();
  expect_close(o::atan2(a, b), sa,
               ref2([](double x, double y) { return std::atan2(x, y); }, av, sa, bv, sb, sa));
  expect_close(o::fmod(a, b), sa,
               ref2([](double x, double y) { return std::fmod(x, y); }, av, sa, bv, sb, sa));
  expect_close(o::remainder(a, b), sa, ref2(py_mod, av, sa, bv, sb, sa));
  Tensor fd = o::floor_divide(a, b);
  expect_close(fd, sa, ref2(py_floordiv, av, sa, bv, sb, sa));
  CHECK(fd.to_double_vector()[0] == 9);
  // Integers of both signs (i32 with i16 promotes to i32): C's % for fmod, Python's for the others.
  auto is_zero = [](double v) { return v == 0; };
  Tensor ai = make(sa, dtypes::i32, -50, 50);
  auto biv = make(sb, dtypes::i16, -7, 7).to_double_vector();
  Tensor bi = tensor_of(biv, sb, dtypes::i16, is_zero, -3);
  auto aiv = ai.to_double_vector();
  biv = bi.to_double_vector();
  Tensor fmi = o::fmod(ai, bi), rmi = o::remainder(ai, bi), fdi = o::floor_divide(ai, bi);
  for (const Tensor *t : {&fmi, &rmi, &fdi})
    CHECK(t->dtype() == dtypes::i32);
  expect_close(fmi, sa,
               ref2([](double x, double y) { return std::fmod(x, y); }, aiv, sa, biv, sb, sa));
  expect_close(rmi, sa, ref2(py_mod, aiv, sa, biv, sb, sa));
  expect_close(fdi, sa, ref2(py_floordiv, aiv, sa, biv, sb, sa));
  // atan2 of integers gives f32; a scalar divisor keeps an integer dtype, a float one gives f32.
  Tensor at = o::atan2(ai, bi);
  CHECK(at.dtype() == dtypes::f32);
  expect_close(at, sa,
               ref2([](double x, double y) { return std::atan2(x, y); }, aiv, sa, biv, sb, sa));
  Tensor rs = o::remainder(ai, -7);
  CHECK(rs.dtype() == dtypes::i32);
  expect_close(rs, sa, map(aiv, [](double v) { return py_mod(v, -7); }));
  Tensor fs = o::floor_divide(ai, 2.5);
  CHECK(fs.dtype() == dtypes::f32);
  expect_close(fs, sa, map(aiv, [](double v) { return std::floor(v / 2.5); }));
  // Float division by zero follows IEEE (fmod and remainder NaN, floor_divide +-inf); integer
  // division by zero stops the emulated kernel (undefined on a GPU, as in CUDA C++).
  Tensor zero = tensor_of(bv, sb, dtypes::f32, [](double) { return true; }, 0);
  expect_close(o::floor_divide(a, zero), sa, map(av, [](double v) { return v / 0.0; }));
  expect_close(o::remainder(a, zero), sa, std::vector<double>(av.size(), std::nan("")));
  if (cuda_emulated()) {
    auto zv = biv;
    zv[5] = 0;
    Tensor bz = asarray(zv, sb, dtypes::i16);
    try {
      (void)o::remainder(ai, bz).to_double_vector();
      FAIL("expected an emulator error");
    } catch (const EmulatorError &e) {
      CHECK(std::string(e.what()).find("integer division by zero") != std::string::npos);
    }
  }
}

TEST_CASE("bitwise and/or/xor/not, shifts, logical_xor; bitwise ops reject floats") {
  o::Shape sa{3, 37}, sb{37};
  Tensor a = make(sa, dtypes::i32, -1000, 1000), b = make(sb, dtypes::i32, -1000, 1000);
  auto av = a.to_double_vector(), bv = b.to_double_vector();
  auto i32 = [](double v) { return std::int32_t(v); };
  expect_close(
      o::bitwise_and(a, b), sa,
      ref2([&](double x, double y) { return double(i32(x) & i32(y)); }, av, sa, bv, sb, sa));
  expect_close(
      o::bitwise_or(a, b), sa,
      ref2([&](double x, double y) { return double(i32(x) | i32(y)); }, av, sa, bv, sb, sa));
  expect_close(
      o::bitwise_xor(a, b), sa,
      ref2([&](double x, double y) { return double(i32(x) ^ i32(y)); }, av, sa, bv, sb, sa));
  expect_close(o::bitwise_not(a), sa, map(av, [&](double x) { return double(~i32(x)); }));
  // A u8 tensor with an int scalar stays u8; bool with bool stays bool.
  Tensor u = make({37}, dtypes::u8, 0, 256);
  Tensor uo = o::bitwise_or(u, 0x41);
  CHECK(uo.dtype() == dtypes::u8);
  expect_close(uo, {37}, map(u.to_double_vector(), [](double x) { return double(int(x) | 0x41); }));
  Tensor p = make(sa, dtypes::boolean), q = make(sb, dtypes::boolean);
  auto pv = p.to_double_vector(), qv = q.to_double_vector();
  Tensor pq = o::bitwise_xor(p, q);
  CHECK(pq.dtype() == dtypes::boolean);
  expect_close(pq, sa, ref2([](double x, double y) { return double(x != y); }, pv, sa, qv, sb, sa),
               true);
  expect_close(o::bitwise_not(p), sa, map(pv, [](double x) { return 1 - x; }), true);
  // Shifts: amounts in [-2, 40) cover negative and too-large ones (0, or -1 for a negative
  // operand shifted right); i8 wraps like PyTorch's int8.
  Tensor n = make(sb, dtypes::i32, -2, 40);
  auto nv = n.to_double_vector();
  auto shl = [](double x, double y, int bits) {
    if (y < 0 || y >= bits) return 0.0;
    std::uint64_t m = (std::uint64_t(1) << bits) - 1,
                  r = (std::uint64_t(std::int64_t(x)) << int(y)) & m;
    return double(r >= (m >> 1) + 1 ? std::int64_t(r) - std::int64_t(m) - 1 : std::int64_t(r));
  };
  auto shr = [](double x, double y, int bits) {
    return y < 0 || y >= bits ? (x < 0 ? -1.0 : 0.0) : std::floor(x / std::exp2(y));
  };
  expect_close(o::bitwise_left_shift(a, n), sa,
               ref2([&](double x, double y) { return shl(x, y, 32); }, av, sa, nv, sb, sa));
  expect_close(o::bitwise_right_shift(a, n), sa,
               ref2([&](double x, double y) { return shr(x, y, 32); }, av, sa, nv, sb, sa));
  Tensor c = make(sa, dtypes::i8, -100, 100), m = make(sb, dtypes::i8, -2, 10);
  auto cv = c.to_double_vector(), mv = m.to_double_vector();
  expect_close(o::bitwise_left_shift(c, m), sa,
               ref2([&](double x, double y) { return shl(x, y, 8); }, cv, sa, mv, sb, sa));
  // logical_xor takes any dtypes (non-zero is true).
  Tensor f = make(sa, dtypes::f32, -1, 1, true), g = make(sb, dtypes::i32, -1, 2);
  Tensor lx = o::logical_xor(f, g);
  CHECK(lx.dtype() == dtypes::boolean);
  expect_close(lx, sa,
               ref2([](double x, double y) { return double((x != 0) != (y != 0)); },
                    f.to_double_vector(), sa, g.to_double_vector(), sb, sa),
               true);
  // Floats are rejected, naming the operator, the dtype and the shape; shifts reject bool.
  expect_error([&] { (void)o::bitwise_and(a, f); },
               {"bitwise_and: expected an integer or bool tensor, got dtype f32", "(3, 37)"});
  expect_error([&] { (void)o::bitwise_xor(1, f); },
               {"bitwise_xor: expected an integer or bool tensor, got dtype f32"});
  expect_error([&] { (void)o::bitwise_not(make({2}, dtypes::f16)); },
               {"bitwise_not: expected an integer or bool tensor, got dtype f16"});
  expect_error([&] { (void)o::bitwise_left_shift(p, 1); },
               {"bitwise_left_shift: expected an integer tensor, got dtype bool"});
}
