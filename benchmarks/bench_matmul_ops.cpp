// Benchmark: hidet::ops::matmul, the operator API, at search spaces 0 and 2, against cuBLAS in
// the same run. Space 0 runs each template's default configuration for the shape (no tuning);
// space 2 tunes the large candidate set on the first call (the tuning time is printed) and runs
// the fastest. The times include what a user's call costs: dispatch and the output allocation.
// Every result is checked against cuBLAS and a sampled double-precision reference first.
//
// Usage: bench_matmul_ops [--all]   (space 2 tunes a few shapes by default; --all tunes every one)
// HIDET_BENCH_SHAPES="128x768x768,128x3072x768" replaces the shapes (each tuned at space 2, the
// chosen candidate printed); HIDET_BENCH_DTYPES="f16,bf16" restricts the dtypes.
// Needs a GPU; on the emulator it says so and exits 0.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <hidet/hidet.hpp>
#include <hidet/ops.hpp>
#include <hidet/ops/tuning.hpp>

#include "bench_matmul_common.hpp"

struct Shape {
  int m, n, k;
  const char *kind;
  bool tune; ///< tuned at space 2 without --all
};

int main(int argc, char **argv) {
  if (hidet::cuda_emulated()) {
    std::printf("bench_matmul_ops needs a CUDA GPU (the 'cuda' device is the CPU emulator here); nothing measured.\n");
    return 0;
  }
  bool all = argc > 1 && std::string(argv[1]) == "--all";
  std::vector<Shape> shapes{{1024, 1024, 1024, "square", false},  {2048, 2048, 2048, "square", false},
                            {4096, 4096, 4096, "square", true},    {8192, 8192, 8192, "square", false},
                            {333, 444, 555, "odd", false},         {4095, 4097, 1023, "odd", true},
                            {128, 768, 3072, "transformer", true}, {2048, 4096, 4096, "transformer", false}};
  if (const char *env = std::getenv("HIDET_BENCH_SHAPES")) {
    shapes.clear();
    std::string list = env;
    for (std::size_t pos = 0; pos < list.size();) {
      std::size_t end = std::min(list.find(',', pos), list.size());
      int m = 0, n = 0, k = 0;
      if (std::sscanf(list.substr(pos, end - pos).c_str(), "%dx%dx%d", &m, &n, &k) == 3)
        shapes.push_back({m, n, k, "given", true});
      pos = end + 1;
    }
  }
  std::string dtypes = std::getenv("HIDET_BENCH_DTYPES") ? std::getenv("HIDET_BENCH_DTYPES") : "f16,bf16,f32";
  const auto &dev = hidet::runtime::device_info(0);
  auto cb = cublas::load();
  std::printf("device: %s, %d SMs; cuBLAS: %s\n", dev.name.c_str(), dev.sm_count,
              cb.ok() ? cb.path.c_str() : ("NOT LOADED (" + cb.why + ")").c_str());
  std::mt19937 rng(std::random_device{}());
  struct Row {
    std::string dtype, kind, shape, choice;
    double s0 = 0, s2 = 0, cublas = 0, tune_s = -1;
    bool ok = true;
  };
  std::vector<Row> rows;
  int failures = 0;
  for (auto dt : {hidet::DataType(hidet::f16), hidet::DataType(hidet::bf16), hidet::DataType(hidet::f32)}) {
    if (("," + dtypes + ",").find(hidet::str_cat(",", dt.short_name(), ",")) == std::string::npos) continue;
    for (auto &s : shapes) {
      double flop = 2.0 * s.m * s.n * s.k;
      hidet::manual_seed(rng());
      auto a = hidet::randn({s.m, s.k}, dt, "cuda"), b = hidet::randn({s.k, s.n}, dt, "cuda");
      Row r{hidet::str_cat(dt), s.kind, hidet::str_cat(s.m, "x", s.n, "x", s.k), "", 0, 0, 0, -1, true};
      hidet::Tensor cref;
      if (cb.ok() && (dt == hidet::f32 || cb.gemm_ex)) {
        cref = hidet::empty({s.m, s.n}, dt, "cuda");
        auto run = [&] {
          return dt == hidet::f32 ? cublas::sgemm_row_major(cb, s.m, s.n, s.k, a, b, cref)
                                  : cublas::gemm_ex_row_major(cb, s.m, s.n, s.k, a, b, cref);
        };
        if (run() == 0) r.cublas = flop / time_ms([&] { run(); }) * 1e-9;
        else cref = hidet::Tensor();
      }
      auto check_result = [&](const hidet::Tensor &c) {
        auto chk = dt == hidet::f32 ? check(s.m, s.n, s.k, a, b, c, cb, rng)
                                    : check_half(s.m, s.n, s.k, a, b, c, cref.defined() ? &cref : nullptr, rng);
        if (!chk.ok) {
          std::printf("  CHECK FAILED %s %s: vs cuBLAS %.3g, worst sample %.3g\n", r.dtype.c_str(), r.shape.c_str(),
                      chk.rel_vs_cublas, chk.worst_sample);
          r.ok = false;
        }
      };
      for (int space : {0, 2}) {
        if (space == 2 && !(s.tune || all)) continue;
        hidet::option::search_space(space);
        auto t0 = std::chrono::steady_clock::now();
        auto c = hidet::ops::matmul(a, b); // compiles (and at space 2 tunes) on the first call
        hidet::synchronize();
        double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        check_result(c);
        double ms = time_ms([&] { (void)hidet::ops::matmul(a, b); });
        (space == 0 ? r.s0 : r.s2) = flop / ms * 1e-9;
        if (space == 2) r.tune_s = first_s;
        auto label = hidet::ops::tuning::stored_label(
            hidet::ops::tuning::make_key("matmul", hidet::str_cat(dt, " ", s.m, "x", s.n, "x", s.k, " space ", space)));
        std::printf("  %-4s %-17s space %d: %8.3f ms %8.2f TFLOP/s (first call %.1f s)%s\n", r.dtype.c_str(),
                    r.shape.c_str(), space, ms, flop / ms * 1e-9, first_s,
                    label ? (" chose " + *label).c_str() : "");
        std::fflush(stdout);
      }
      failures += !r.ok;
      rows.push_back(r);
    }
  }
  hidet::option::search_space(0);
  std::printf("\nhidet::ops::matmul (operator API) vs cuBLAS, %s; TFLOP/s and ratio to cuBLAS; tune: wall time "
              "of the first call at space 2 (build, benchmark, pick)\n",
              dev.name.c_str());
  std::printf("%-5s %-11s %-16s %9s %6s %9s %6s %8s %9s %s\n", "dtype", "kind", "m x n x k", "space0", "ratio",
              "space2", "ratio", "tune_s", "cuBLAS", "check");
  for (auto &r : rows) {
    auto ratio = [&](double v) { return r.cublas > 0 && v > 0 ? hidet::str_cat(std::round(v / r.cublas * 100) / 100) : std::string("-"); };
    std::printf("%-5s %-11s %-16s %9.2f %6s %9s %6s %8s %9.2f %s\n", r.dtype.c_str(), r.kind.c_str(), r.shape.c_str(),
                r.s0, ratio(r.s0).c_str(), r.s2 > 0 ? hidet::str_cat(std::round(r.s2 * 100) / 100).c_str() : "-",
                ratio(r.s2).c_str(), r.tune_s >= 0 ? hidet::str_cat(std::round(r.tune_s * 10) / 10).c_str() : "-",
                r.cublas, r.ok ? "ok" : "FAILED");
  }
  return failures ? 1 : 0;
}
