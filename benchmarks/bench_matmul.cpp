// Benchmark: c = a @ b in hidet (Hidet Script kernels) against cuBLAS, measured in the same run.
//
// f32 rows run hidet's FMA kernel (include/hidet/ops/templates/matmul_f32.hpp) against
// cublasSgemm with CUBLAS_DEFAULT_MATH and NVIDIA_TF32_OVERRIDE=0 (plain f32, no TF32). f16 and
// bf16 rows run hidet's tensor-core kernels (mma.sync + ldmatrix + cp.async pipeline,
// include/hidet/ops/templates/matmul_f16.hpp, and on Hopper TMA + wgmma with warp
// specialization, matmul_wgmma.hpp; f32 accumulation, f16/bf16 output) against
// cublasGemmEx with CUDA_R_16F / CUDA_R_16BF operands and CUBLAS_COMPUTE_32F; each shape tries a
// few tilings (all printed) and reports the best. cuBLAS
// is loaded with dlopen (libcublas.so.13/.12 from the toolkit, or PyTorch's bundled copy; set
// HIDET_CUBLAS to a path to choose one); when it cannot be loaded the table says so and
// benchmarks/bench_matmul_torch.py measures torch.matmul instead. Every shape is checked before
// it is timed: against cuBLAS (relative Frobenius error) and, on 256 sampled elements, against a
// double-precision host reference. Times: CUDA events around batches of launches after warm-up,
// the median of the batches. TFLOP/s = 2 m n k / time.
//
// Usage: bench_matmul [--sweep] [--f32 | --f16] [m n k]...   (--sweep also times alternative
// tilings; --f32 runs the f32 rows only, --f16 the f16 rows only; the default shapes are those of the issue and BERT-base's
// products at batch 16, seq 128, which have f32 rows only). Needs a GPU; on the emulator it says so and exits 0.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <hidet/hidet.hpp>
#include <hidet/ops/templates/matmul_f16.hpp>
#include <hidet/ops/templates/matmul_f32.hpp>
#include <hidet/ops/templates/matmul_wgmma.hpp>

#include "bench_matmul_common.hpp"

using hidet::ops::templates::MatmulF16;
using hidet::ops::templates::MatmulF16Config;
using hidet::ops::templates::MatmulF32;
using hidet::ops::templates::MatmulF32Config;
using hidet::ops::templates::MatmulWgmma;
using hidet::ops::templates::MatmulWgmmaConfig;

struct Shape {
  int m, n, k;
  const char *kind;
  bool f32_only = false; ///< BERT's products: f32 rows only
};

int main(int argc, char **argv) {
  if (hidet::cuda_emulated()) {
    std::printf("bench_matmul needs a CUDA GPU (the 'cuda' device is the CPU emulator here); nothing measured.\n");
    return 0;
  }
  bool sweep = false, f32_only = false, f16_only = false;
  std::vector<Shape> shapes;
  std::vector<int> nums;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--sweep") sweep = true;
    else if (s == "--f32") f32_only = true;
    else if (s == "--f16") f16_only = true;
    else nums.push_back(std::atoi(argv[i]));
  }
  for (std::size_t i = 0; i + 2 < nums.size(); i += 3) shapes.push_back({nums[i], nums[i + 1], nums[i + 2], "custom"});
  if (shapes.empty())
    shapes = {{1024, 1024, 1024, "square"},   {2048, 2048, 2048, "square"},     {4096, 4096, 4096, "square"},
              {8192, 8192, 8192, "square"},   {333, 444, 555, "odd"},           {4095, 4097, 1023, "odd"},
              {128, 768, 3072, "transformer"}, {2048, 4096, 4096, "transformer"},
              // BERT-base at batch 16, seq 128 (2048 rows): QKV merged, attention output, FFN up, FFN down
              {2048, 2304, 768, "bert", true}, {2048, 768, 768, "bert", true},
              {2048, 3072, 768, "bert", true}, {2048, 768, 3072, "bert", true}};

  const auto &dev = hidet::runtime::device_info(0);
  auto cb = cublas::load();
  std::printf("device: %s, %d SMs\n", dev.name.c_str(), dev.sm_count);
  if (cb.ok()) std::printf("cuBLAS: %s (cublasSgemm_v2, CUBLAS_DEFAULT_MATH, NVIDIA_TF32_OVERRIDE=0: no TF32)\n", cb.path.c_str());
  else std::printf("cuBLAS: NOT LOADED (%s); run benchmarks/bench_matmul_torch.py for the torch numbers\n", cb.why.c_str());

  std::mt19937 rng(std::random_device{}());
  struct Row {
    const char *dtype;
    Shape s;
    std::string tiling;
    double ms, tflops, cublas_tflops;
    Check chk;
  };
  std::vector<Row> rows;
  int failures = 0;
  // f16 and bf16 on the tensor cores: a few tilings per shape, the best one reported.
  for (auto dt : {hidet::DataType(hidet::f16), hidet::DataType(hidet::bf16)}) {
    const char *dname = dt == hidet::f16 ? "f16" : "bf16";
    for (auto &s : shapes) {
      if (f32_only || s.f32_only || (f16_only && dt != hidet::f16)) continue;
      double flop = 2.0 * s.m * s.n * s.k;
      hidet::manual_seed(rng());
      auto a = hidet::randn({s.m, s.k}, dt, "cuda");
      auto b = hidet::randn({s.k, s.n}, dt, "cuda");
      auto c = hidet::empty({s.m, s.n}, dt, "cuda");
      hidet::Tensor cref;
      double cublas_ms = -1;
      if (cb.ok() && cb.gemm_ex) {
        cref = hidet::empty({s.m, s.n}, dt, "cuda");
        if (int st = cublas::gemm_ex_row_major(cb, s.m, s.n, s.k, a, b, cref); st != 0) {
          std::printf("cublasGemmEx %s %dx%dx%d: status %d\n", dname, s.m, s.n, s.k, st);
          cref = hidet::Tensor();
        } else {
          cublas_ms = time_ms([&] { cublas::gemm_ex_row_major(cb, s.m, s.n, s.k, a, b, cref); });
        }
      }
      // Candidates: the heuristic's tiling, 128x128 (4 warps of 64x64), and 128x256 (8 warps) for
      // shapes with many tiles or 64x64 (4 warps of 32x32) for the others; more in --sweep.
      std::vector<MatmulF16Config> configs{hidet::ops::templates::matmul_f16_heuristic_config(s.m, s.n, s.k, dev.sm_count)};
      auto add = [&](MatmulF16Config c) {
        for (auto &x : configs)
          if (x.str() == c.str()) return;
        configs.push_back(c);
      };
      std::int64_t big_tiles = std::int64_t(hidet::lang::ceil_div(s.m, 128)) * hidet::lang::ceil_div(s.n, 128);
      add(MatmulF16Config{});
      if (big_tiles >= dev.sm_count) add(MatmulF16Config{2, 4, 64, 64, 32, 3, 1});
      else add(MatmulF16Config{2, 2, 32, 32, 32, 3, 1});
      if (sweep) {
        add(MatmulF16Config{2, 2, 64, 64, 32, 4, 1});
        add(MatmulF16Config{2, 4, 64, 64, 32, 4, 1});
        add(MatmulF16Config{4, 2, 64, 64, 32, 3, 1});
        add(MatmulF16Config{2, 2, 64, 64, 64, 3, 1});
      }
      Row best{dname, s, "", 1e30, 0, 0, {}};
      // Checks, times and prints one candidate kernel; keeps the fastest correct one.
      auto try_kernel = [&](const std::string &tiling, const std::function<void(const hidet::Tensor &)> &mm) {
        auto poison = hidet::full({s.m, s.n}, std::nan(""), dt, "cuda");
        mm(poison);
        auto chk = check_half(s.m, s.n, s.k, a, b, poison, cref.defined() ? &cref : nullptr, rng);
        double ms = chk.ok ? time_ms([&] { mm(c); }) : 1e30;
        std::printf("  %-4s %5dx%5dx%5d %-55s %s %8.3f ms %7.2f TFLOP/s (vs cuBLAS %.2g, sample %.2g)\n", dname, s.m,
                    s.n, s.k, tiling.c_str(), chk.ok ? "ok " : "BAD", chk.ok ? ms : 0.0,
                    chk.ok ? flop / ms * 1e-9 : 0.0, chk.rel_vs_cublas, chk.worst_sample);
        std::fflush(stdout);
        if (!chk.ok || ms < best.ms) {
          if (!chk.ok && best.chk.ok) return;
          best = {dname, s, tiling, ms, flop / ms * 1e-9, cublas_ms > 0 ? flop / cublas_ms * 1e-9 : 0, chk};
        }
      };
      for (auto &cfg : configs) {
        MatmulF16 mm(s.m, s.n, s.k, dt, cfg);
        try_kernel("mma.sync " + cfg.str(), [&](const hidet::Tensor &out) { mm(a, b, out); });
      }
      // The Hopper kernel (TMA + wgmma + warp specialization), on sm_90a GPUs.
      if (dev.arch() == "sm_90a") {
        std::vector<MatmulWgmmaConfig> wconfigs{
            hidet::ops::templates::matmul_wgmma_heuristic_config(s.m, s.n, s.k, dev.sm_count)};
        auto wadd = [&](MatmulWgmmaConfig c) {
          for (auto &x : wconfigs)
            if (x.str() == c.str()) return;
          wconfigs.push_back(c);
        };
        wadd(MatmulWgmmaConfig{});
        wadd(MatmulWgmmaConfig{2, 128, 6});
        MatmulWgmmaConfig one_tile_per_block;
        one_tile_per_block.persistent = false;
        wadd(one_tile_per_block);
        if (sweep) {
          wadd(MatmulWgmmaConfig{2, 256, 3});
          wadd(MatmulWgmmaConfig{1, 256, 5});
          wadd(MatmulWgmmaConfig{1, 128, 6});
          wadd(MatmulWgmmaConfig{2, 192, 4});
          // 192-row tiles (3 consumers), 256-row tiles (2 consumers of two m64 atoms).
          wadd(MatmulWgmmaConfig{3, 192, 4});
          wadd(MatmulWgmmaConfig{3, 128, 5});
          for (int bn : {128, 192}) {
            MatmulWgmmaConfig t{2, bn, 4};
            t.atoms = 2;
            wadd(t);
          }
          // Ping-pong consumers (each computes whole tiles; one's epilogue overlaps the other's loop).
          for (auto [bn, atoms] : {std::pair{192, 2}, std::pair{128, 2}, std::pair{256, 1}}) {
            MatmulWgmmaConfig c{2, bn, 4};
            c.atoms = atoms, c.pingpong = true;
            wadd(c);
          }
          // Clusters of two blocks sharing b's tile (along m), multicast.
          for (MatmulWgmmaConfig c : {MatmulWgmmaConfig{2, 256, 4}, MatmulWgmmaConfig{3, 192, 4}}) {
            c.cluster_m = 2;
            wadd(c);
          }
        }
        for (auto &cfg : wconfigs) {
          try {
            MatmulWgmma mm(s.m, s.n, s.k, dt, cfg);
            try_kernel("wgmma " + cfg.str(), [&](const hidet::Tensor &out) { mm(a, b, out); });
          } catch (const hidet::Error &e) {
            std::printf("  %-4s %5dx%5dx%5d wgmma %s: %s\n", dname, s.m, s.n, s.k, cfg.str().c_str(), e.what());
          }
        }
      }
      if (!best.chk.ok) ++failures;
      rows.push_back(best);
    }
  }

  // f32 on the FMA units.
  for (auto &s : shapes) {
    if (f16_only) break;
    double flop = 2.0 * s.m * s.n * s.k;
    hidet::manual_seed(rng());
    auto a = hidet::randn({s.m, s.k}, hidet::f32, "cuda");
    auto b = hidet::randn({s.k, s.n}, hidet::f32, "cuda");
    auto c = hidet::empty({s.m, s.n}, hidet::f32, "cuda");
    double cublas_ms = -1;
    if (cb.ok()) {
      auto cref = hidet::empty({s.m, s.n}, hidet::f32, "cuda");
      cublas_ms = time_ms([&] { cublas::sgemm_row_major(cb, s.m, s.n, s.k, a, b, cref); });
    }
    using namespace hidet::ops::templates;
    std::vector<MatmulF32Config> configs{matmul_f32_heuristic_config(s.m, s.n, s.k, dev.sm_count)};
    auto add = [&](MatmulF32Config c) {
      try {
        check_matmul_f32_config(c);
      } catch (const hidet::ValueError &) {
        return;
      }
      for (auto &x : configs)
        if (x.str() == c.str()) return;
      configs.push_back(c);
    };
    if (sweep) {
      // Every tile shape of the heuristic and a 128 x 96 one (192 threads), with the split-ks
      // that do not overfill the GPU; v1's tiling (register staging); pipeline variants (register
      // staging, 2 and 4 stages, the other block_k) of the heuristic's choice and of 128 x 128.
      auto tiles = matmul_f32_tiles();
      MatmulF32Config t96{2, 3, 2, 2, 8, 4, 4, 4, 16, 2};
      t96.stages = 3;
      tiles.push_back(t96);
      for (const auto &tile : tiles) {
        std::int64_t t = std::int64_t(hidet::lang::ceil_div(s.m, tile.block_m())) * hidet::lang::ceil_div(s.n, tile.block_n());
        for (int sk : {1, 2, 3, 4, 6, 8, 16}) {
          if (sk > 1 && (s.k / sk < 64 || t * sk > 4 * dev.sm_count)) continue;
          auto v = tile;
          v.split_k = sk;
          if (s.n % 4 != 0) v.block_k = 8;
          add(v);
        }
      }
      add(MatmulF32Config{});
      auto big = matmul_f32_tiles()[0];
      big.split_k = configs[0].split_k;
      for (auto base : {configs[0], big}) {
        for (int st : {0, 2, 4}) {
          auto v = base;
          v.stages = st;
          if (st == 0) v.block_k = 8;
          add(v);
        }
        auto v = base;
        v.block_k = base.block_k == 16 ? 8 : 16;
        add(v);
      }
    }
    Row best{"f32", s, "", 1e30, 0, 0, {}};
    for (auto &cfg : configs) {
      MatmulF32 mm(s.m, s.n, s.k, cfg);
      auto poison = hidet::full({s.m, s.n}, std::nan(""), hidet::f32, "cuda");
      mm(a, b, poison);
      auto chk = check(s.m, s.n, s.k, a, b, poison, cb, rng);
      double ms = chk.ok ? time_ms([&] { mm(a, b, c); }) : 1e30;
      if (sweep)
        std::printf("  %5dx%5dx%5d %-95s %s %8.3f ms %6.2f TFLOP/s (model %.3f ms)\n", s.m, s.n, s.k,
                    cfg.str().c_str(), chk.ok ? "ok " : "BAD", chk.ok ? ms : 0.0,
                    chk.ok ? flop / ms * 1e-9 : 0.0, matmul_f32_cost_us(cfg, s.m, s.n, s.k, dev.sm_count) * 1e-3);
      if (!chk.ok || ms < best.ms) {
        if (!chk.ok && best.chk.ok) continue;
        best = {"f32", s, cfg.str(), ms, flop / ms * 1e-9, cublas_ms > 0 ? flop / cublas_ms * 1e-9 : 0, chk};
      }
    }
    if (!best.chk.ok) ++failures;
    rows.push_back(best);
    std::fflush(stdout);
  }

  std::printf("\nmatmul, hidet vs cuBLAS (f32: FMA kernel vs cuBLAS f32 without TF32; f16/bf16: best of the mma.sync and wgmma kernels vs "
              "cublasGemmEx, f32 accumulation), %s\n",
              dev.name.c_str());
  std::printf("%-6s %-11s %-17s %9s %9s %9s %7s  %-9s %s\n", "dtype", "kind", "m x n x k", "ms", "TFLOP/s",
              "cuBLAS", "ratio", "check", "tiling");
  for (auto &r : rows) {
    char ratio[32] = "n/a", cbs[32] = "n/a";
    if (r.cublas_tflops > 0) {
      std::snprintf(ratio, sizeof ratio, "%.2f", r.tflops / r.cublas_tflops);
      std::snprintf(cbs, sizeof cbs, "%.2f", r.cublas_tflops);
    }
    std::string shape = hidet::str_cat(r.s.m, "x", r.s.n, "x", r.s.k);
    std::printf("%-6s %-11s %-17s %9.3f %9.2f %9s %7s  %-9s %s\n", r.dtype, r.s.kind, shape.c_str(),
                r.chk.ok ? r.ms : 0.0, r.chk.ok ? r.tflops : 0.0, cbs, ratio, r.chk.ok ? "ok" : "FAILED",
                r.tiling.c_str());
  }
  if (!cb.ok()) std::printf("cuBLAS could not be loaded: ratios are n/a; see benchmarks/bench_matmul_torch.py\n");
  return failures ? 1 : 0;
}
