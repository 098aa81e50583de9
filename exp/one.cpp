// Diagnostic (not committed): one wgmma config on one shape, checked against cuBLAS, timed.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <hidet/hidet.hpp>
#include <hidet/ops/templates/matmul_wgmma.hpp>
#include <hidet/ops/matmul_templates.hpp>
#include "../benchmarks/bench_matmul_common.hpp"
using namespace hidet::ops::templates;
int main(int argc, char **argv) {
  int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  MatmulWgmmaConfig cfg{std::atoi(argv[4]), std::atoi(argv[5]), std::atoi(argv[6])};
  cfg.atoms = std::atoi(argv[7]); cfg.cluster_m = std::atoi(argv[8]); cfg.cluster_n = std::atoi(argv[9]);
  cfg.split_k = std::atoi(argv[10]);
  if (argc > 11) cfg.smem_epilogue = std::atoi(argv[11]) != 0;
  auto a = hidet::randn({m, k}, hidet::f16, "cuda"), b = hidet::randn({k, n}, hidet::f16, "cuda");
  auto c = hidet::full({m, n}, 0.0, hidet::f16, "cuda"), r = hidet::empty({m, n}, hidet::f16, "cuda");
  auto cb = cublas::load();
  cublas::gemm_ex_row_major(cb, m, n, k, a, b, r);
  double cms = time_ms([&] { cublas::gemm_ex_row_major(cb, m, n, k, a, b, r); });
  std::printf("%5dx%5dx%5d %-80s ", m, n, k, cfg.str().c_str()); std::fflush(stdout);
  if (cfg.consumers == 0) { // the space-0 default of ops::matmul
    auto cands = hidet::ops::matmul_candidates(m, n, k, hidet::f16, 0);
    auto run = cands[0].build();
    run(a, b, c, {});
    double ms = time_ms([&] { run(a, b, c, {}); });
    std::printf("default %s: %8.4f ms (cuBLAS %.4f) ratio %.2f\n", cands[0].label.c_str(), ms, cms, cms / ms);
    return 0;
  }
  if (argc > 12) cfg.split_fixup = std::atoi(argv[12]) != 0;
  MatmulWgmma mm(m, n, k, hidet::f16, cfg);
  mm(a, b, c);
  hidet::runtime::synchronize();
  std::mt19937 rng(1);
  auto chk = check_half(m, n, k, a, b, c, &r, rng);
  std::printf("%s rel %.2g ", chk.ok ? "ok " : "BAD", chk.rel_vs_cublas);
  double ms = time_ms([&] { mm(a, b, c); });
  std::printf("%8.4f ms (cuBLAS %.4f) ratio %.2f\n", ms, cms, cms / ms);
#ifdef TRACE
  hidet::runtime::synchronize();
  mm(a, b, c);
  hidet::runtime::synchronize();
  auto t = mm.trace_.to_vector<std::int64_t>();
  double sum[6] = {}, mx[6] = {};
  int cnt[6] = {};
  std::int64_t t0min = INT64_MAX, t0max = 0, tend = 0;
  auto add = [&](int i, double v) { sum[i] += v, mx[i] = std::max(mx[i], v), cnt[i]++; };
  for (int bl = 0; bl < 1024; ++bl) {
    const std::int64_t *T = &t[std::size_t(bl) * 64];
    int nt = int(T[63]);
    if (nt <= 0) continue;
    double cpn = double(T[61] - T[60]) / double(std::max<std::int64_t>(1, T[62] - T[0])); // cycles per ns
    t0min = std::min(t0min, T[0]), t0max = std::max(t0max, T[0]), tend = std::max(tend, T[62]);
    add(0, (T[1] - T[60]) / cpn); // entry -> first tile
    for (int i = 0; i < nt && 4 * i + 4 < 60; ++i) {
      add(1, (T[4 * i + 2] - T[4 * i + 1]) / cpn); // wait for the first k tile
      add(2, (T[4 * i + 3] - T[4 * i + 2]) / cpn); // main loop
      add(3, (T[4 * i + 4] - T[4 * i + 3]) / cpn); // epilogue
      if (i) add(4, (T[4 * i + 1] - T[4 * i]) / cpn);
    }
    add(5, (T[61] - T[4 * std::min(nt, 14)]) / cpn); // last epilogue -> exit
  }
  const char *nm[6] = {"prologue", "first-wait", "mainloop", "epilogue", "between", "tail"};
  std::printf("   trace (ns, avg/max over block tiles): ");
  for (int i = 0; i < 6; ++i) if (cnt[i]) std::printf("%s %.0f/%.0f  ", nm[i], sum[i] / cnt[i], mx[i]);
  std::printf("| start skew %lld ns, span %lld ns\n", (long long)(t0max - t0min), (long long)(tend - t0min));
#endif
}
