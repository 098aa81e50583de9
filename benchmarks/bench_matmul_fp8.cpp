// Benchmark: FP8 matmul with per-tensor scales, c = scale_a * scale_b * (a @ b^T) for a: [m, k]
// and b: [n, k] in f8e4m3, f32 accumulation, bf16 (and f16, f32) output: hidet's Hopper kernel
// (include/hidet/ops/templates/matmul_fp8.hpp). The reference is cuBLASLt's FP8 GEMM through
// torch._scaled_mm, timed by benchmarks/bench_matmul_fp8_torch.py (same shapes, same timing
// method) in the same scripts/gpu-check run; this program prints hidet's side. Each shape runs
// the heuristic's tiling (search space 0) and a few others, all printed, and reports both.
// Every kernel is checked before it is timed: 256 sampled elements against a double-precision
// host reference (max error below 1e-2 of the largest value), and a poisoned output (an
// unwritten element fails). TFLOP/s = 2 m n k / time; times: CUDA events around batches of launches, the median.
//
// Usage: bench_matmul_fp8 [m n k]...   Needs a Hopper GPU; elsewhere it says so and exits 0.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <hidet/hidet.hpp>
#include <hidet/ops.hpp>
#include <hidet/ops/templates/matmul_fp8.hpp>
#include <hidet/runtime/timing.hpp>

using hidet::ops::templates::MatmulFp8;
using hidet::ops::templates::MatmulWgmmaConfig;

namespace {
/// max |c - ref| / max |ref| over 256 sampled elements (the measure of
/// bench_matmul_fp8_torch.py); NaN (an unwritten, poisoned element) gives infinity.
double sampled_error(int m, int n, int k, const std::vector<double> &a, const std::vector<double> &b, double scale,
                     const std::vector<double> &c, std::mt19937 &rng) {
  std::uniform_int_distribution<int> um(0, m - 1), un(0, n - 1);
  double worst = 0, top = 0;
  for (int t = 0; t < 256; ++t) {
    int i = um(rng), j = un(rng);
    double s = 0;
    for (int r = 0; r < k; ++r) s += a[std::size_t(i) * k + r] * b[std::size_t(j) * k + r];
    double e = std::abs(c[std::size_t(i) * n + j] - scale * s);
    if (std::isnan(e)) return INFINITY;
    worst = std::max(worst, e), top = std::max(top, std::abs(scale * s));
  }
  return worst / top;
}
} // namespace

int main(int argc, char **argv) {
  using hidet::DataType;
  namespace dtypes = hidet::dtypes;
  if (!hidet::ops::templates::wgmma_available()) {
    std::printf("bench_matmul_fp8 needs a Hopper GPU (sm_90a); nothing measured.\n");
    return 0;
  }
  struct Shape {
    int m, n, k;
  };
  std::vector<Shape> shapes;
  std::vector<int> nums;
  for (int i = 1; i < argc; ++i) nums.push_back(std::atoi(argv[i]));
  for (std::size_t i = 0; i + 2 < nums.size(); i += 3) shapes.push_back({nums[i], nums[i + 1], nums[i + 2]});
  if (shapes.empty())
    shapes = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {2048, 4096, 4096}, {128, 768, 3072},
              {4096, 4096, 1024}};
  const auto &dev = hidet::runtime::device_info(0);
  std::printf("device: %s, %d SMs\n", dev.name.c_str(), dev.sm_count);
  std::mt19937 rng(std::random_device{}());
  struct Row {
    std::string what, pick, best_tiling;
    double pick_ms, best_ms;
    bool ok;
  };
  std::vector<Row> rows;
  int failures = 0;
  for (auto s : shapes) {
    for (DataType out : {DataType(dtypes::bf16), DataType(dtypes::f16), DataType(dtypes::f32)}) {
      if (out != dtypes::bf16 && !(s.m == 4096 && s.n == 4096 && s.k == 4096)) continue; // other outputs: one shape
      const double flop = 2.0 * s.m * s.n * s.k;
      hidet::manual_seed(rng());
      auto a = hidet::ops::cast(hidet::randn({s.m, s.k}, hidet::f32, "cuda"), dtypes::f8e4m3);
      auto b = hidet::ops::cast(hidet::randn({s.n, s.k}, hidet::f32, "cuda"), dtypes::f8e4m3);
      auto sa = hidet::full({1}, 0.5, hidet::f32, "cuda"), sb = hidet::full({1}, 1.25, hidet::f32, "cuda");
      auto av = a.to_double_vector(), bv = b.to_double_vector();
      auto c = hidet::empty({s.m, s.n}, out, "cuda");
      const auto pick = hidet::ops::templates::matmul_fp8_heuristic_config(s.m, s.n, s.k, dev.sm_count);
      std::vector<MatmulWgmmaConfig> configs{pick};
      auto add = [&](MatmulWgmmaConfig c) {
        for (auto &x : configs)
          if (x.str() == c.str()) return;
        configs.push_back(c);
      };
      add(MatmulWgmmaConfig{2, 256, 4});
      add(MatmulWgmmaConfig{2, 256, 5});
      add(MatmulWgmmaConfig{3, 192, 4});
      add(MatmulWgmmaConfig{2, 192, 5});
      add(MatmulWgmmaConfig{2, 128, 6});
      MatmulWgmmaConfig pp{2, 256, 4};
      pp.pingpong = true, pp.atoms = 1;
      add(pp);
      std::string what = hidet::str_cat("e4m3->", out, " ", s.m, "x", s.n, "x", s.k);
      Row row{what, "", "", 0, 1e30, true};
      for (std::size_t ci = 0; ci < configs.size(); ++ci) {
        const auto &cfg = configs[ci];
        try {
          MatmulFp8 mm(s.m, s.n, s.k, dtypes::f8e4m3, out, cfg);
          auto poison = hidet::full({s.m, s.n}, NAN, out, "cuda");
          mm(a, b, sa, sb, poison);
          double err = sampled_error(s.m, s.n, s.k, av, bv, 0.625, poison.to_double_vector(), rng);
          bool ok = err < 1e-2;
          double ms = ok ? hidet::median_ms([&] { mm(a, b, sa, sb, c); }) : 0;
          std::printf("  %-28s %-75s %s %8.3f ms %7.1f TFLOP/s (err %.1e)\n", what.c_str(), cfg.str().c_str(),
                      ok ? "ok " : "BAD", ms, ok ? flop / ms * 1e-9 : 0.0, err);
          if (!ok) row.ok = false;
          if (ci == 0) row.pick = cfg.str(), row.pick_ms = ms;
          if (ok && ms < row.best_ms) row.best_ms = ms, row.best_tiling = cfg.str();
        } catch (const hidet::Error &e) {
          std::printf("  %-28s %-75s: %s\n", what.c_str(), cfg.str().c_str(), e.what());
          if (ci == 0) row.ok = false;
        }
        std::fflush(stdout);
      }
      if (!row.ok) ++failures;
      rows.push_back(row);
    }
  }
  std::printf("\nFP8 matmul (e4m3, per-tensor scales, f32 accumulation), hidet, %s; torch._scaled_mm "
              "(cuBLASLt): bench_matmul_fp8_torch.py\n",
              dev.name.c_str());
  std::printf("%-28s %9s %9s %9s %9s  %-6s %s\n", "product", "pick ms", "TFLOP/s", "best ms", "TFLOP/s", "check",
              "pick / best tiling");
  for (auto &r : rows) {
    double flop = 0;
    int m, n, k;
    if (std::sscanf(r.what.c_str() + r.what.find(' ') + 1, "%dx%dx%d", &m, &n, &k) == 3) flop = 2.0 * m * n * k;
    std::printf("%-28s %9.3f %9.1f %9.3f %9.1f  %-6s %s / %s\n", r.what.c_str(), r.pick_ms,
                r.pick_ms > 0 ? flop / r.pick_ms * 1e-9 : 0.0, r.best_ms, flop / r.best_ms * 1e-9,
                r.ok ? "ok" : "FAILED", r.pick.c_str(), r.best_tiling.c_str());
  }
  return failures ? 1 : 0;
}
