// sort, argsort, topk, searchsorted/bucketize, the scans (cumprod, cummax, cummin), scatter,
// index_put, index_add and solve_triangular against host references (stable sorts with NaN the largest value, exact
// integer-valued sums), their errors, and the same operators traced on symbolic inputs.
#include "ops_test_util.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "hidet/graph.hpp"

using namespace ops_test;

namespace {

/// x with NaN written at every `every`-th element (floats only).
Tensor with_nans(const Tensor &x, std::size_t every) {
  auto v = x.to_double_vector();
  for (std::size_t i = 3; i < v.size(); i += every)
    v[i] = std::nan("");
  return asarray(v, x.shape(), x.dtype());
}

/// The host reference of sort / topk: the first k of each line along `ax` in stable order (NaN the
/// largest value), values and indices.
std::pair<std::vector<double>, std::vector<double>> host_sort(const std::vector<double> &xv,
                                                              const o::Shape &s, int ax,
                                                              bool descending, std::int64_t k) {
  std::int64_t outer = 1, inner = 1, n = s[std::size_t(ax)];
  for (int d = 0; d < ax; ++d)
    outer *= s[std::size_t(d)];
  for (std::size_t d = std::size_t(ax) + 1; d < s.size(); ++d)
    inner *= s[d];
  std::vector<double> values(std::size_t(outer * k * inner)), indices(values.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto at = [&](std::int64_t j) { return xv[std::size_t((o * n + j) * inner + i)]; };
      std::vector<std::int64_t> order(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        double va = at(a), vb = at(b);
        if (descending) return (std::isnan(va) && !std::isnan(vb)) || va > vb;
        return (!std::isnan(va) && std::isnan(vb)) || va < vb;
      });
      for (std::int64_t j = 0; j < k; ++j) {
        std::size_t f = std::size_t((o * k + j) * inner + i);
        values[f] = at(order[std::size_t(j)]);
        indices[f] = double(order[std::size_t(j)]);
      }
    }
  return {values, indices};
}

/// Checks sort (k = extent) or topk (k) of x along ax against host_sort.
void check_sorted(const std::pair<Tensor, Tensor> &got, const Tensor &x, int ax, bool descending,
                  std::int64_t k) {
  o::Shape s = x.shape(), os = s;
  os[std::size_t(ax)] = k;
  auto [values, indices] = host_sort(x.to_double_vector(), s, ax, descending, k);
  CHECK(got.first.dtype() == x.dtype());
  CHECK(got.second.dtype() == dtypes::i64);
  INFO("dtype " << x.dtype() << " shape " << o::shape_str(s) << " axis " << ax << " descending "
                << descending << " k " << k);
  expect_close(got.first, os, values, true, 0);
  expect_close(got.second, os, indices, true);
}

/// A 0-d f32 tensor holding v (made on the host: no kernel).
Tensor scalar(double v) {
  return asarray(std::vector<double>{v}, {1}, dtypes::f32).reshape(o::Shape{});
}

/// The host reference of cummax (or cummin) along the last axis of rows of n: PyTorch's rule.
std::pair<std::vector<double>, std::vector<double>> host_cum_extreme(const std::vector<double> &xv,
                                                                     int n, bool is_max) {
  std::vector<double> val(xv.size()), idx(xv.size());
  for (std::size_t r = 0; r < xv.size() / std::size_t(n); ++r) {
    double cur = xv[r * std::size_t(n)];
    int at = 0;
    for (int j = 0; j < n; ++j) {
      double v = xv[r * std::size_t(n) + std::size_t(j)];
      if (std::isnan(v) || (!std::isnan(cur) && (is_max ? v >= cur : v <= cur))) cur = v, at = j;
      val[r * std::size_t(n) + std::size_t(j)] = cur, idx[r * std::size_t(n) + std::size_t(j)] = at;
    }
  }
  return {val, idx};
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

} // namespace

/// An out-of-range index: a ValueError where the index is in host memory (the emulator); on a
/// GPU the kernels skip such entries (the check would need a synchronization) and the call returns.
template <class F>
void expect_range_error(F &&f, std::initializer_list<std::string> parts,
                        std::initializer_list<std::string> device_parts) {
  // Indices in host memory (the emulator) are checked before the kernels run; on a GPU, or with
  // $HIDET_HOST_INDEX_CHECKS=0 (meson test ops/sort_scatter_device_errors), the kernel skips the
  // element and records it (runtime/device_errors.hpp): the next launch or synchronization after
  // the kernel ran throws, once.
  if (hidet::cuda_emulated() && hidet::util::env_bool("HIDET_HOST_INDEX_CHECKS", true)) {
    expect_error(std::forward<F>(f), parts);
    return;
  }
  try {
    f();
    hidet::synchronize();
    FAIL("expected a ValueError containing: " << *device_parts.begin());
  } catch (const ValueError &e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    for (auto &t : device_parts) CHECK(msg.find(t) != std::string::npos);
    CHECK(msg.find("by a kernel launched before this call") != std::string::npos);
  }
  CHECK_NOTHROW(hidet::synchronize()); // reported once, then cleared
}

TEST_CASE("sort: stable in both directions, NaN the largest, any axis, float and integer dtypes") {
  Tensor x = with_nans(make({3, 37}, dtypes::f32, -5, 5, true), 11); // ties and NaNs
  for (bool desc : {false, true})
    check_sorted(o::sort(x, -1, desc), x, 1, desc, 37);
  CHECK(o::argsort(x, 1).to_double_vector() == o::sort(x).second.to_double_vector());
  Tensor h = make({5, 4, 3}, dtypes::f16, -3, 3, true);
  check_sorted(o::sort(h, 0), h, 0, false, 5);
  Tensor i = make({5, 1000}, dtypes::i32, -300, 300);
  check_sorted(o::sort(i, 1, true), i, 1, true, 1000);
  Tensor u = make({3, 37}, dtypes::u8, 0, 9);
  check_sorted(o::sort(u, 1), u, 1, false, 37);
  // Rows of one element, a 0-d tensor and empty tensors.
  Tensor one = make({4, 1}, dtypes::f32);
  check_sorted(o::sort(one, 1, true), one, 1, true, 1);
  auto [v0, i0] = o::sort(scalar(2.5));
  CHECK(v0.shape() == o::Shape{});
  CHECK(v0.to_double_vector() == std::vector<double>{2.5});
  CHECK(i0.to_double_vector() == std::vector<double>{0});
  CHECK(o::sort(make({0, 5}, dtypes::f32), 1).first.shape() == o::Shape{0, 5});
  CHECK(o::sort(make({3, 0}, dtypes::f32), 1).second.shape() == o::Shape{3, 0});
  expect_error([&] { (void)o::sort(x, 2); },
               {"sort: axis 2 is out of range for a tensor of shape (3, 37)"});
  expect_error(
      [&] {
        (void)o::sort(make({2, 3}, dtypes::f8e4m3));
      },
      {"sort: x of dtype", "cannot be sorted"});
}

TEST_CASE("sort and topk of rows longer than a block: chunks in shared memory, then merge passes") {
  // f32: chunks of 4096, one merge pass; f64: chunks of 2048, two passes over three runs.
  Tensor a = make({2, 5000}, dtypes::f32, -100, 100, true);
  check_sorted(o::sort(a, 1), a, 1, false, 5000);
  check_sorted(o::topk(a, 50, 1), a, 1, true, 50);
  Tensor b = with_nans(make({1, 5000}, dtypes::f64, -50, 50, true), 997);
  check_sorted(o::sort(b, -1, true), b, 1, true, 5000);
  check_sorted(o::topk(b, 7, -1, false), b, 1, false, 7);
}

TEST_CASE("topk: k = 1 and k = n, smallest, along an inner axis, integers, errors") {
  Tensor x = with_nans(make({3, 37}, dtypes::f32, -5, 5, true), 13);
  check_sorted(o::topk(x, 1), x, 1, true, 1);
  check_sorted(o::topk(x, 37, 1, false), x, 1, false, 37);
  Tensor h = make({5, 20}, dtypes::bf16, -4, 4, true);
  check_sorted(o::topk(h, 3, 0), h, 0, true, 3);
  Tensor i = make({5, 1000}, dtypes::i32, -300, 300);
  check_sorted(o::topk(i, 5, 1), i, 1, true, 5);
  CHECK(o::topk(x, 0).first.shape() == o::Shape{3, 0});
  expect_error([&] { (void)o::topk(x, 38); },
               {"topk: k = 38 is out of range for axis 1 of size 37"});
  expect_error([&] { (void)o::topk(x, -1); }, {"topk: k = -1"});
}

TEST_CASE("searchsorted and bucketize: left and right, 1-D and batched sequences") {
  Tensor seq = asarray(std::vector<double>{-3, -1, -1, 0, 2, 2, 2, 5, 7, 9}, {10}, dtypes::f32);
  Tensor v = make({3, 4}, dtypes::f32, -5, 11, true);
  auto sv = seq.to_double_vector(), vv = v.to_double_vector();
  for (bool right : {false, true}) {
    std::vector<double> want;
    for (double x : vv)
      want.push_back(double(right ? std::upper_bound(sv.begin(), sv.end(), x) - sv.begin()
                                  : std::lower_bound(sv.begin(), sv.end(), x) - sv.begin()));
    Tensor y = o::searchsorted(seq, v, right);
    CHECK(y.dtype() == dtypes::i64);
    expect_close(y, {3, 4}, want, true);
    if (!right) expect_close(o::bucketize(v, seq), {3, 4}, want, true);
  }
  // A sequence per row (i32), values of another length.
  std::vector<double> rv = make({3, 8}, dtypes::i32, -10, 10).to_double_vector();
  for (int r = 0; r < 3; ++r)
    std::sort(rv.begin() + r * 8, rv.begin() + r * 8 + 8);
  Tensor rows = asarray(rv, {3, 8}, dtypes::i32), q = make({3, 5}, dtypes::i32, -12, 12);
  auto qv = q.to_double_vector();
  std::vector<double> want;
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 5; ++j)
      want.push_back(double(
          std::lower_bound(rv.begin() + r * 8, rv.begin() + r * 8 + 8, qv[std::size_t(r * 5 + j)]) -
          (rv.begin() + r * 8)));
  expect_close(o::searchsorted(rows, q), {3, 5}, want, true);
  expect_error(
      [&] {
        (void)o::searchsorted(rows, make({2, 5}, dtypes::i32));
      },
      {"searchsorted: sorted_sequence of shape (3, 8)"});
  expect_error([&] { (void)o::bucketize(v, rows); }, {"bucketize: boundaries must be 1-D"});
}

TEST_CASE("solve_triangular: lower and upper, unit diagonals, right solves, broadcast batches, f64; errors") {
  // A [2, 1, n, n] (diagonally dominant) against B [3, n, k]: X [2, 3, n, k]; the host substitutes in
  // double, row by row, from A's named triangle only (the other triangle holds noise to be ignored).
  const std::int64_t n = 7, k = 5;
  for (DataType dt : {dtypes::f32, dtypes::f64})
    for (bool upper : {false, true})
      for (bool unit : {false, true}) {
        CAPTURE(dt.name());
        CAPTURE(upper);
        CAPTURE(unit);
        Tensor a = make({2, 1, n, n}, dt, -0.3, 0.3), b = make({3, n, k}, dt);
        auto av = a.to_double_vector(), bv = b.to_double_vector();
        for (std::int64_t z = 0; z < 2; ++z)
          for (std::int64_t i = 0; i < n; ++i) av[std::size_t((z * n + i) * n + i)] += 2;
        a = asarray(av, a.shape(), dt);
        std::vector<double> want(std::size_t(2 * 3 * n * k));
        for (std::int64_t za = 0; za < 2; ++za)
          for (std::int64_t zb = 0; zb < 3; ++zb)
            for (std::int64_t c = 0; c < k; ++c)
              for (std::int64_t step = 0; step < n; ++step) {
                std::int64_t r = upper ? n - 1 - step : step;
                double sum = bv[std::size_t((zb * n + r) * k + c)];
                for (std::int64_t q = 0; q < n; ++q)
                  if (upper ? q > r : q < r)
                    sum -= av[std::size_t((za * n + r) * n + q)] *
                           want[std::size_t(((za * 3 + zb) * n + q) * k + c)];
                if (!unit) sum /= av[std::size_t((za * n + r) * n + r)];
                want[std::size_t(((za * 3 + zb) * n + r) * k + c)] = sum;
              }
        expect_close(o::solve_triangular(a, b, upper, true, unit), {2, 3, n, k}, want);
        // X A^T = B^T is the transpose of the same solve with the other triangle
        Tensor right = o::solve_triangular(o::transpose(a, -2, -1), o::transpose(b, -2, -1), !upper, false, unit);
        expect_close(o::transpose(right, -2, -1), {2, 3, n, k}, want);
      }
  auto fails = [](const std::function<void()> &f, const std::string &text) {
    try {
      f();
      FAIL("no error; expected: ", text);
    } catch (const ValueError &e) {
      INFO(std::string(e.what()));
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  fails([] { o::solve_triangular(make({4, 4}, dtypes::f16), make({4, 2}, dtypes::f16), true); },
        "solve_triangular: dtype f16 is not supported");
  fails([] { o::solve_triangular(make({4, 3}, dtypes::f32), make({4, 2}, dtypes::f32), true); },
        "A must be square");
  fails([] { o::solve_triangular(make({4, 4}, dtypes::f32), make({3, 2}, dtypes::f32), true); },
        "B must have 4 rows");
  fails([] { o::solve_triangular(make({4, 4}, dtypes::f32), make({4, 2}, dtypes::f64), true); },
        "A and B must have one dtype");
}

TEST_CASE("scans: cumprod, cummax and cummin share cumsum's kernel") {
  o::Shape s{3, 10, 4};
  Tensor x = make(s, dtypes::f32, 0.5, 1.5);
  auto xv = x.to_double_vector();
  std::vector<double> prod(xv.size());
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 4; ++c) {
      double p = 1;
      for (int j = 0; j < 10; ++j)
        p *= xv[std::size_t((a * 10 + j) * 4 + c)], prod[std::size_t((a * 10 + j) * 4 + c)] = p;
    }
  expect_close(o::cumprod(x, 1), s, prod);
  Tensor xi = make({2, 9}, dtypes::i32, -3, 4);
  auto iv = xi.to_double_vector();
  std::vector<double> iprod(iv.size());
  for (int r = 0; r < 2; ++r) {
    double p = 1;
    for (int j = 0; j < 9; ++j)
      p *= iv[std::size_t(r * 9 + j)], iprod[std::size_t(r * 9 + j)] = p;
  }
  Tensor yi = o::cumprod(xi, -1);
  CHECK(yi.dtype() == dtypes::i64);
  expect_close(yi, {2, 9}, iprod, true);
  // cummax / cummin: ties move the index to the last one; NaN propagates with its own index.
  Tensor m = with_nans(make({4, 9}, dtypes::f32, -3, 3, true), 17);
  auto mv = m.to_double_vector();
  for (bool is_max : {true, false}) {
    auto [val, idx] = host_cum_extreme(mv, 9, is_max);
    auto [v, i] = is_max ? o::cummax(m, 1) : o::cummin(m, 1);
    INFO((is_max ? "cummax" : "cummin"));
    expect_close(v, {4, 9}, val, true);
    expect_close(i, {4, 9}, idx, true);
  }
  expect_error([&] { (void)o::cumprod(x, 3); }, {"cumprod: axis 3 is out of range"});
}

TEST_CASE(
    "scatter: replace, add, amax and amin with duplicate and negative indices; src of one value") {
  // Replace: a permutation per row (no duplicates), src larger than index.
  Tensor x = make({4, 6}, dtypes::f32), src = make({4, 5}, dtypes::f32);
  std::vector<double> iv;
  for (int r = 0; r < 4; ++r) {
    std::vector<double> p{0, 1, 2, 3, 4, 5};
    std::shuffle(p.begin(), p.end(), g_rng);
    for (int j = 0; j < 3; ++j)
      iv.push_back(j == 1 ? p[std::size_t(j)] - 6 : p[std::size_t(j)]); // one negative each
  }
  Tensor index = asarray(iv, {4, 3}, dtypes::i64);
  auto want = x.to_double_vector(), sv = src.to_double_vector();
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 3; ++j) {
      int k = int(iv[std::size_t(r * 3 + j)]);
      want[std::size_t(r * 6 + (k + 6) % 6)] = sv[std::size_t(r * 5 + j)];
    }
  expect_close(o::scatter(x, 1, index, src), {4, 6}, want);
  // One value (torch.scatter(x, 1, index, value=2.5)).
  auto want_value = x.to_double_vector();
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 3; ++j)
      want_value[std::size_t(r * 6 + (int(iv[std::size_t(r * 3 + j)]) + 6) % 6)] = 2.5;
  expect_close(o::scatter(x, 1, index, 2.5), {4, 6}, want_value);
  // Reductions along axis 0 with many duplicates: small integers, so sums are exact in any order.
  Tensor base = make({5, 7}, dtypes::f32, -4, 4, true);
  Tensor dup = make({8, 7}, dtypes::i32, -5, 5), s = make({8, 7}, dtypes::f32, -4, 4, true);
  Tensor s_nan = with_nans(s, 19); // NaN propagates through amax and amin
  auto bv = base.to_double_vector(), dv = dup.to_double_vector();
  auto reference = [&](o::ScatterReduce r, const Tensor &src) {
    auto w = bv, sv = src.to_double_vector();
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 7; ++j) {
        double &t = w[std::size_t(((int(dv[std::size_t(i * 7 + j)]) + 5) % 5) * 7 + j)];
        double v = sv[std::size_t(i * 7 + j)];
        if (r == o::ScatterReduce::Add)
          t += v;
        else if (std::isnan(v) || std::isnan(t))
          t = std::nan("");
        else
          t = r == o::ScatterReduce::Max ? std::max(t, v) : std::min(t, v);
      }
    return w;
  };
  for (o::ScatterReduce r : {o::ScatterReduce::Add, o::ScatterReduce::Max, o::ScatterReduce::Min}) {
    INFO("reduce " << o::scatter_reduce_name(r));
    const Tensor &src_r = r == o::ScatterReduce::Add ? s : s_nan;
    expect_close(o::scatter(base, 0, dup, src_r, r), {5, 7}, reference(r, src_r));
  }
  CHECK(o::scatter_add(base, 0, dup, s).to_double_vector() ==
        o::scatter(base, 0, dup, s, o::ScatterReduce::Add).to_double_vector());
  // The same on i32 (native integer atomics).
  Tensor bi = asarray(bv, {5, 7}, dtypes::i32),
         si = asarray(s.to_double_vector(), {8, 7}, dtypes::i32);
  expect_close(o::scatter(bi, 0, dup, si, o::ScatterReduce::Max), {5, 7},
               reference(o::ScatterReduce::Max, s));
  // Errors: out-of-range index (checked on host memory), shapes, dtypes.
  Tensor bad = asarray(std::vector<double>{0, 1, 7, 2}, {2, 2}, dtypes::i64);
  expect_range_error([&] { (void)o::scatter(x, 1, bad, src); },
                     {"scatter: index holds 7 at position (1, 0)", "axis 1 of x of size 6"},
                     {"scatter: index: index 7 is out of range for an axis of size 6"});
  expect_error(
      [&] {
        (void)o::scatter(x, 1, asarray(iv, {4, 3}, dtypes::f32), src);
      },
      {"scatter: index must hold integers, got dtype f32"});
  expect_error(
      [&] {
        (void)o::scatter(x, 0, make({5, 3}, dtypes::i64, 0, 3), src);
      },
      {"scatter: src of shape (4, 5)"});
  expect_error(
      [&] {
        (void)o::scatter(x, 1, make({4, 3, 1}, dtypes::i64, 0, 3), src);
      },
      {"scatter: index of shape (4, 3, 1)"});
  expect_error(
      [&] {
        (void)o::scatter(make({4, 6}, dtypes::i8), 1, index, src, o::ScatterReduce::Add);
      },
      {"scatter: reduce='add' on x of dtype i8", "needs atomics"});
}

TEST_CASE("index_put: adjacent and separated index tensors, broadcasting, accumulate, bool masks") {
  // x[:, idx] = values (adjacent; the indexed shape is (5, 3, 4)), values broadcast from (4,).
  Tensor x = make({5, 6, 4}, dtypes::f32);
  Tensor idx = asarray(std::vector<double>{4, -6, 2}, {3}, dtypes::i64);
  Tensor row = make({4}, dtypes::f32);
  auto want = x.to_double_vector(), rv = row.to_double_vector();
  for (int a = 0; a < 5; ++a)
    for (int k : {4, 0, 2})
      for (int c = 0; c < 4; ++c)
        want[std::size_t((a * 6 + k) * 4 + c)] = rv[std::size_t(c)];
  expect_close(o::index_put(x, {std::nullopt, idx}, row), {5, 6, 4}, want);
  // x[i0, :, i2] += values with i0 (2, 1) and i2 (3,) broadcast to (2, 3), separated: the indexed
  // shape is (2, 3, 6); duplicates accumulate.
  Tensor i0 = asarray(std::vector<double>{1, 1}, {2, 1}, dtypes::i32),
         i2 = asarray(std::vector<double>{3, 0, 3}, {3}, dtypes::i64);
  Tensor vals = make({2, 3, 6}, dtypes::f32, -4, 4, true),
         xi = make({5, 6, 4}, dtypes::f32, -4, 4, true);
  auto w2 = xi.to_double_vector(), vv = vals.to_double_vector();
  int c2[3] = {3, 0, 3};
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int j = 0; j < 6; ++j)
        w2[std::size_t((1 * 6 + j) * 4 + c2[b])] += vv[std::size_t((a * 3 + b) * 6 + j)];
  expect_close(o::index_put(xi, {i0, std::nullopt, i2}, vals, true), {5, 6, 4}, w2);
  // Bool masks: x[mask] = 0 and x[mask] += a row.
  Tensor y = make({4, 5}, dtypes::f32), mask = make({4, 5}, dtypes::boolean);
  auto yv = y.to_double_vector(), mv = mask.to_double_vector();
  std::vector<double> w3 = yv;
  for (std::size_t f = 0; f < w3.size(); ++f)
    if (mv[f] != 0) w3[f] = 0;
  expect_close(o::index_put(y, {mask}, scalar(0)), {4, 5}, w3, true);
  Tensor rmask = asarray(std::vector<double>{1, 0, 1, 1}, {4}, dtypes::boolean),
         add_row = make({5}, dtypes::f32);
  auto av = add_row.to_double_vector();
  std::vector<double> w4 = yv;
  for (int r : {0, 2, 3})
    for (int c = 0; c < 5; ++c)
      w4[std::size_t(r * 5 + c)] += av[std::size_t(c)];
  expect_close(o::index_put(y, {rmask}, add_row, true), {4, 5}, w4);
  expect_error(
      [&] {
        (void)o::index_put(y, {rmask}, make({3, 5}, dtypes::f32));
      },
      {"index_put: values of shape (3, 5) vary"});
  expect_range_error(
      [&] {
        (void)o::index_put(x, {std::nullopt, asarray(std::vector<double>{6}, {1}, dtypes::i64)},
                           row);
      },
      {"index_put: indices[1] holds 6 at position (0,), out of range for axis 1 of x of size 6"},
      {"index_put: indices[1]: index 6 is out of range for an axis of size 6"});
  expect_error(
      [&] {
        (void)o::index_put(x, {std::nullopt, idx}, make({2, 4}, dtypes::f32));
      },
      {"index_put: values of shape (2, 4) do not broadcast to the indexed shape (5, 3, 4)"});
  expect_error([&] { (void)o::index_put(x, {std::nullopt}, row); },
               {"index_put: indices holds no index tensor"});
}

TEST_CASE("index_add: duplicates accumulate, alpha, integers") {
  Tensor x = make({6, 5}, dtypes::f32, -4, 4, true), src = make({7, 5}, dtypes::f32, -4, 4, true);
  Tensor index = asarray(std::vector<double>{0, 5, -1, 2, 2, 0, 3}, {7}, dtypes::i64);
  auto want = x.to_double_vector(), sv = src.to_double_vector();
  int at[7] = {0, 5, 5, 2, 2, 0, 3};
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 5; ++j)
      want[std::size_t(at[i] * 5 + j)] += 2 * sv[std::size_t(i * 5 + j)];
  expect_close(o::index_add(x, 0, index, src, 2), {6, 5}, want);
  Tensor xi = asarray(x.to_double_vector(), {6, 5}, dtypes::i32);
  expect_close(o::index_add(xi, 0, index, asarray(sv, {7, 5}, dtypes::i32), 2), {6, 5}, want);
  expect_error([&] { (void)o::index_add(xi, 0, index, src, 0.5); },
               {"index_add: alpha = 0.5 must be an integer"});
  expect_error([&] { (void)o::index_add(x, 1, index, src); }, {"index_add: src of shape (7, 5)"});
  expect_range_error(
      [&] {
        (void)o::index_add(
            x, 0, asarray(std::vector<double>{0, 1, 2, 3, 4, 5, -7}, {7}, dtypes::i64), src);
      },
      {"index_add: index holds -7 at position (6,)"},
      {"index_add: index: index -7 is out of range for an axis of size 6", "from -6 to 5"});
}

TEST_CASE("traced: symbolic inputs give FlowGraph nodes that run like the eager operators") {
  // Symbolic extents: nodes that run each run's shape (the eager operators' kernels).
  Tensor xs = symbol({"n", 37}, dtypes::f32, "cuda", "x");
  Tensor is = symbol({"n", 3}, dtypes::i64, "cuda", "index");
  auto [sv, si] = o::sort(xs, 1, true);
  auto [tv, ti] = o::topk(xs, 1);
  auto [mv, mi] = o::cummax(xs, 1);
  Tensor sc = o::scatter(xs, 1, is, xs, o::ScatterReduce::Add);
  Tensor cp = o::cumprod(xs, 1);
  CHECK(sv.sym_shape() == SymShape{"n", 37});
  CHECK(ti.sym_shape() == SymShape{"n", 1});
  FlowGraph g = trace_from({sv, si, tv, ti, mv, mi, sc, cp}, {xs, is});
  std::string text = g.str();
  INFO(text);
  CHECK(contains(text, "= Sort(x"));
  CHECK(contains(text, "= Topk(x"));
  CHECK(contains(text, "= Cummax("));
  CHECK(contains(text, "= Scatter(x, index, x"));
  for (std::int64_t n : {3, 2}) {
    INFO("n = " << n);
    Tensor a = with_nans(make({n, 37}, dtypes::f32, -5, 5, true), 11);
    Tensor idx = make({n, 3}, dtypes::i64, 0, 37);
    auto got = g.run({a, idx});
    check_sorted({got[0], got[1]}, a, 1, true, 37);
    check_sorted({got[2], got[3]}, a, 1, true, 1);
    auto av = a.to_double_vector(), iv = idx.to_double_vector();
    auto [mv, mi] = host_cum_extreme(av, 37, true);
    expect_close(got[4], {n, 37}, mv, true);
    expect_close(got[5], {n, 37}, mi, true);
    auto sc = av;
    for (std::int64_t r = 0; r < n; ++r)
      for (int j = 0; j < 3; ++j)
        sc[std::size_t(r * 37 + std::int64_t(iv[std::size_t(r * 3 + j)]))] +=
            av[std::size_t(r * 37 + j)];
    expect_close(got[6], {n, 37}, sc, true);
    // cumprod's kernel serves every n (compare with a host product of the first rows' values).
    auto cp = got[7].to_double_vector();
    for (std::int64_t r = 0; r < n; ++r) {
      double p = 1;
      for (int j = 0; j < 37; ++j) {
        double v = av[std::size_t(r * 37 + j)];
        p = std::isnan(v) ? v : p * v;
        if (std::isnan(p) || std::isinf(p)) break;
        CHECK(cp[std::size_t(r * 37 + j)] == doctest::Approx(p).epsilon(1e-4));
      }
    }
  }
  // Constant shapes: the plans are recorded; index_put and index_add with constants.
  Tensor a = make({5, 6}, dtypes::f32), b = make({7, 6}, dtypes::f32);
  Tensor index = asarray(std::vector<double>{0, 4, 4, 1, 0, 2, 3}, {7}, dtypes::i64);
  Tensor x = symbol_like(a, "x");
  FlowGraph h = trace_from(
      {o::index_add(x, 0, index, b), o::index_put(x, {index}, b, true), o::argsort(x, 0)}, {x});
  std::vector<std::string> names;
  for (const auto &op : h.nodes())
    names.push_back(op->name());
  CHECK(names == std::vector<std::string>{"IndexAdd", "IndexPut", "Sort"});
  auto got = h.run({a});
  expect_same(got[0], o::index_add(a, 0, index, b));
  expect_same(got[1], o::index_put(a, {index}, b, true));
  expect_same(got[2], o::argsort(a, 0));
}

TEST_CASE(
    "index ranges are checked on every run of a graph node: a cache position beyond the cache") {
  // A decoder's cache of 6 rows written at a position the graph computes (pos + 0, 1): a position
  // past the end is an error before anything is written, as in the eager call.
  Tensor c0 = make({6, 4}, dtypes::f32);
  Tensor cache = symbol_like(c0, "cache"), pos = symbol({1}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({2, 4}, dtypes::f32, Device::cuda(), "k");
  Tensor at = pos + o::arange(0, 2, 1, dtypes::i64);
  Tensor y = o::index_put(cache, {at}, key);
  FlowGraph g({o::sum(y, {1})}, {cache, pos, key}, {{cache, y}});
  graph::CompiledGraph cg(g);
  Tensor k = make({2, 4}, dtypes::f32);
  Tensor c = c0.clone();
  cg.run({c, asarray<std::int64_t>({4}), k}); // rows 4 and 5
  expect_same(c, o::index_put(c0, {asarray<std::int64_t>({4, 5})}, k));
  Tensor before = c.clone();
  for (const auto *what : {"compiled", "reference"}) {
    INFO(what);
    auto run = [&] {
      if (std::string(what) == "compiled")
        cg.run({c, asarray<std::int64_t>({5}), k}); // rows 5 and 6: 6 is past the end
      else
        g.run({c, asarray<std::int64_t>({5}), k});
    };
    expect_range_error(run, {"index_put: indices[0] holds 6 at position (1,)", "axis 0 of x of size 6"},
                       {"index_put: indices[0]: index 6 is out of range for an axis of size 6"});
    // Nothing written before the host's check; with the kernels' check only row 6 is skipped.
    if (hidet::cuda_emulated() && hidet::util::env_bool("HIDET_HOST_INDEX_CHECKS", true))
      expect_same(c, before);
    else
      expect_same(c, o::index_put(before, {asarray<std::int64_t>({5})}, o::slice(k, {0}, {0}, {1})));
  }
  // A run that finds nothing wrong after the error: the record was cleared.
  cg.run({c, asarray<std::int64_t>({0}), k});
  hidet::synchronize();
}

TEST_CASE("index ranges found by the runs on scratch inputs that compile or capture a graph are not errors") {
  // A decoder's step: rows pos + 5 and pos + 6 of a cache of 6, then pos <- pos + 2 in place. The
  // compiled graph runs on scratch inputs while it is built (pos = 0: rows 5 and 6; then pos = 2,
  // as the first run left it: rows 7 and 8), and a CUDA graph once more before it captures: those
  // rows mean nothing, the kernels skip them, and neither building nor any later call reports them.
  Tensor c0 = make({6, 4}, dtypes::f32);
  Tensor cache = symbol_like(c0, "cache"), pos = symbol({1}, dtypes::i64, Device::cuda(), "pos"),
         key = symbol({2, 4}, dtypes::f32, Device::cuda(), "k");
  Tensor at = pos + o::arange(5, 7, 1, dtypes::i64);
  Tensor y = o::index_put(cache, {at}, key);
  FlowGraph g({o::sum(y, {1})}, {cache, pos, key}, {{cache, y}, {pos, pos + 2}});
  std::optional<graph::CompiledGraph> cg;
  REQUIRE_NOTHROW(cg.emplace(g));
  std::optional<graph::CudaGraph> replay;
  REQUIRE_NOTHROW(replay.emplace(*cg));
  hidet::synchronize(); // nothing recorded for the caller
  // Real runs: pos -5, -3, -1 write rows 0-1, 2-3, 4-5, through the compiled graph and the replay.
  Tensor c = c0.clone(), p = asarray<std::int64_t>({-5}), want = c0.clone();
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    Tensor k = make({2, 4}, dtypes::f32);
    want = o::index_put(want, {asarray<std::int64_t>({2 * step, 2 * step + 1})}, k);
    if (step == 1)
      replay->run({c, p, k});
    else
      cg->run({c, p, k});
    hidet::synchronize();
    expect_same(c, want);
    CHECK(p.to_double_vector() == std::vector<double>{-3.0 + 2 * step});
  }
  // The next step (pos 1: rows 6 and 7) is the caller's error, reported as always.
  Tensor k = make({2, 4}, dtypes::f32);
  expect_range_error([&] { cg->run({c, p, k}); },
                     {"index_put: indices[0] holds 6 at position (0,)", "axis 0 of x of size 6"},
                     {"index_put: indices[0]: index ", " is out of range for an axis of size 6"}); // 6 or 7
}
