// Element-wise operators over dtypes (f32, f16, bf16, integers, bool) against double-precision
// host references (GPU when present, else the CPU emulator).
#include "ops_test_util.hpp"

using namespace ops_test;

namespace {
using F = std::function<double(double)>;
double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }
} // namespace

TEST_CASE("unary float ops on f32, f16 and bf16 (odd shape, size-1 dims)") {
  struct U {
    const char *name;
    std::function<Tensor(const Tensor &)> op;
    F ref;
    double lo, hi;
  };
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
  auto ref2 = [&](std::function<double(double, double)> f, const std::vector<double> &x, const o::Shape &xs, const std::vector<double> &y,
                  const o::Shape &ys, const o::Shape &os) {
    std::vector<double> r;
    for (std::size_t i = 0; i < std::size_t(o::shape_numel(os)); ++i) r.push_back(f(x[bidx(xs, os, i)], y[bidx(ys, os, i)]));
    return r;
  };
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
