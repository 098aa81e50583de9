// Shared by tutorials 04 and 05: runs an f16/bf16 matmul kernel on fresh random inputs and checks
// every element against a double-precision host reference. The inputs are exact in the
// reference (it uses the same rounded values); the f32 accumulation adds ~k * 2^-24 relative
// error and the final rounding to f16 (bf16) up to 2^-11 (2^-8) of the value. The output is
// poisoned with NaN first, so an unwritten element fails.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <hidet/hidet.hpp>

/// Runs `matmul(a, b, c)` for a: [m, k], b: [k, n], c: [m, n] of dtype dt and checks c; prints one
/// line naming `tiling` and returns 0 when correct, 1 (after printing the first bad element) else.
inline int check_half_matmul(int m, int n, int k, hidet::DataType dt, const std::string &tiling,
                             const std::function<void(const hidet::Tensor &, const hidet::Tensor &,
                                                      const hidet::Tensor &)> &matmul) {
  unsigned seed = std::random_device{}();
  hidet::manual_seed(seed);
  auto a = hidet::randn({m, k}, dt, "cuda");
  auto b = hidet::randn({k, n}, dt, "cuda");
  auto c = hidet::full({m, n}, std::nan(""), dt, "cuda");
  matmul(a, b, c);
  auto ha = a.to_double_vector(), hb = b.to_double_vector(), hc = c.to_double_vector();
  const double out_eps = dt == hidet::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  double err2 = 0, ref2 = 0;
  std::vector<double> refs(n), mags(n); // one row of the reference, accumulated along b's rows
  for (int i = 0; i < m; ++i) {
    std::fill(refs.begin(), refs.end(), 0.0), std::fill(mags.begin(), mags.end(), 0.0);
    for (int kk = 0; kk < k; ++kk) {
      const double x = ha[std::size_t(i) * k + kk];
      const double *row = &hb[std::size_t(kk) * n];
      for (int j = 0; j < n; ++j) {
        double p = x * row[j];
        refs[j] += p, mags[j] += std::abs(p);
      }
    }
    for (int j = 0; j < n; ++j) {
      double ref = refs[j], mag = mags[j];
      double got = hc[std::size_t(i) * n + j];
      err2 += (got - ref) * (got - ref), ref2 += ref * ref;
      double bound = 1.01 * out_eps * std::abs(ref) + 1e-6 * k * mag + 1e-6;
      if (!(std::abs(got - ref) <= bound)) {
        std::printf("FAILED %s %dx%dx%d, tiling %s: c[%d][%d] = %.6g, want %.6g (bound %.3g, seed %u)\n",
                    hidet::str_cat(dt).c_str(), m, n, k, tiling.c_str(), i, j, got, ref, bound, seed);
        return 1;
      }
    }
  }
  double rel = std::sqrt(err2 / ref2);
  std::printf("%-4s matmul %dx%dx%d, tiling %s, on %s: relative error %.3g (seed %u)\n", hidet::str_cat(dt).c_str(),
              m, n, k, tiling.c_str(), c.device_str().c_str(), rel, seed);
  return rel < 2 * out_eps && ref2 > 0 ? 0 : 1;
}
