// Shared helpers of the eager operator tests: random inputs (the seed is printed on a failure),
// a per-dtype tolerance table, comparison against double-precision host references that rejects
// all-zero outputs, host index helpers and a ValueError checker.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "hidet/hidet.hpp"
#include "hidet/ops.hpp"
#include "hidet/util/env.hpp"

namespace ops_test {

using namespace hidet;
namespace o = hidet::ops;

inline std::uint64_t g_seed = std::random_device{}();
inline std::mt19937_64 g_rng(g_seed);

/// The configurations of an "every tiling" test to run here: all of them on a GPU (or with
/// HIDET_TEST_ALL_CONFIGS=1), on the CPU emulator the first (the heuristic's default) and every
/// `stride`-th of the rest from an offset chosen by the seed, so that successive runs cover every
/// configuration while one run compiles a fraction of them (NVRTC dominates these tests there).
template <class T> std::vector<T> configs_to_run(const std::vector<T> &all, std::size_t stride = 4) {
  static const bool every = !hidet::cuda_emulated() || hidet::util::env_bool("HIDET_TEST_ALL_CONFIGS");
  if (every || all.size() <= 2 || stride <= 1) return all;
  std::vector<T> out{all[0]};
  for (std::size_t i = 1 + g_seed % stride; i < all.size(); i += stride) out.push_back(all[i]);
  MESSAGE("emulator: " << out.size() << " of " << all.size() << " configurations (seed " << g_seed
                       << "; HIDET_TEST_ALL_CONFIGS=1 runs all)");
  return out;
}

/// A tensor of `shape` with uniform values in [lo, hi) (small integers when `ints` or when the
/// dtype is an integer; 0/1 for bool).
inline Tensor make(const o::Shape &shape, DataType d, double lo = -2, double hi = 2, bool ints = false) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(std::size_t(o::shape_numel(shape)));
  for (auto &x : v) {
    x = u(g_rng);
    if (ints || d.is_integer()) x = std::floor(x);
    if (d.is_bool()) x = x > (lo + hi) / 2 ? 1 : 0;
  }
  return asarray(v, shape, d);
}

/// The tolerance table: relative+absolute error allowed per output dtype (integers and bool are
/// exact).
inline double tol(DataType d) {
  if (d == dtypes::f16) return 1e-2;
  if (d == dtypes::bf16) return 2e-2;
  if (d == dtypes::f32) return 1e-4;
  if (d == dtypes::f64) return 1e-10;
  return 0;
}

/// Compares `got` with `want` (tolerance by dtype, times `scale`; NaN and infinities match
/// themselves); rejects an all-zero output unless `allow_zero`. On failure prints the first bad
/// index, both values and the seed.
inline void expect_close(const Tensor &got, const o::Shape &shape, const std::vector<double> &want, bool allow_zero = false,
                         double scale = 1) {
  INFO("seed " << g_seed << ", got shape " << o::shape_str(got.shape()) << ", want " << o::shape_str(shape));
  REQUIRE(got.shape() == shape);
  auto g = got.to_double_vector();
  REQUIRE(g.size() == want.size());
  double t = tol(got.dtype()) * scale;
  bool nonzero = false;
  for (std::size_t i = 0; i < g.size(); ++i) {
    nonzero |= g[i] != 0;
    bool same_special = (std::isnan(g[i]) && std::isnan(want[i])) || g[i] == want[i]; // NaN, +-inf
    if (!same_special && !(std::abs(g[i] - want[i]) <= t * (1 + std::abs(want[i])))) {
      FAIL_CHECK("first bad index " << i << ": got " << g[i] << ", want " << want[i] << " (dtype " << got.dtype() << ")");
      return;
    }
  }
  if (!allow_zero && !g.empty()) CHECK_MESSAGE(nonzero, "all-zero output");
}

/// The row-major multi-index of flat index `f` in `shape`.
inline std::vector<std::int64_t> unravel(std::int64_t f, const o::Shape &shape) {
  std::vector<std::int64_t> r(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) r[d] = f % shape[d], f /= shape[d];
  return r;
}
/// The flat index of multi-index `i` in `shape`.
inline std::int64_t ravel(const std::vector<std::int64_t> &i, const o::Shape &shape) {
  std::int64_t r = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) r = r * shape[d] + i[d];
  return r;
}
/// The flat input index (shape `in`, broadcast to `out`) for output flat index `f`.
inline std::size_t bidx(const o::Shape &in, const o::Shape &out, std::size_t f) {
  auto idx = unravel(std::int64_t(f), out);
  std::size_t r = 0, stride = 1, off = out.size() - in.size();
  for (std::size_t d = in.size(); d-- > 0;) {
    r += (in[d] == 1 ? 0 : idx[d + off]) * stride;
    stride *= in[d];
  }
  return r;
}
/// Applies f to every element.
inline std::vector<double> map(const std::vector<double> &xs, const std::function<double(double)> &f) {
  std::vector<double> r;
  for (double v : xs) r.push_back(f(v));
  return r;
}

/// got equals want: the same dtype and shape, values within the dtype's tolerance times `scale`
/// (an all-zero result is allowed: want is computed the same way).
inline void expect_same(const Tensor &got, const Tensor &want, double scale = 1) {
  REQUIRE(got.dtype() == want.dtype());
  expect_close(got, want.shape(), want.to_double_vector(), true, scale);
}

/// Runs f and checks that it throws a ValueError whose message contains every one of `texts`.
template <class E> void expect_error(E &&f, std::initializer_list<std::string> texts) {
  try {
    f();
    FAIL("expected a ValueError containing: " << *texts.begin());
  } catch (const ValueError &e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    for (auto &t : texts) CHECK(msg.find(t) != std::string::npos);
  }
}

} // namespace ops_test
