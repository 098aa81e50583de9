// Tutorial 05: a Hopper matmul with TMA, wgmma and warp specialization.
//
// Why: tutorial 04's mma.sync kernel reaches about half of cuBLAS on an H100. mma.sync is the
// Ampere instruction: every operand passes through registers (ldmatrix), one warp issues one
// small product at a time, and the same threads that compute must also move the data. Hopper
// adds three things that remove those limits, and this kernel uses all three.
//
// TMA (the tensor memory accelerator): one thread hands the copy engine a *tensor map* (a
// 128-byte description of a global tensor: base address, sizes, strides, box size, swizzle;
// encoded on the host by hidet::TensorMap::tiled) and the coordinates of a box; the engine copies
// the whole box into shared memory by itself, zero-filling what lies outside the tensor, and
// reports the bytes on an mbarrier. No thread computes addresses, no registers hold the data, and
// partial tiles need no special code.
//
// mbarriers: a barrier object in shared memory with a phase. A consumer waits for the phase of a
// stage to complete (mbarrier_wait(bar, parity)); the producer arms it with the number of bytes
// the TMA will deliver (mbarrier_arrive_expect_tx). Stage kt % stages is used for the
// (kt / stages)-th time at step kt, so its parity is (kt / stages) % 2: full[s] tells consumers
// the data has landed, empty[s] tells the producer the consumers are done with it.
//
// wgmma: a warpgroup (4 warps, 128 threads) issues one asynchronous m64nNk16 product whose A and
// B operands are read *directly from shared memory*, described by 64-bit descriptors (start
// address, two strides, swizzle mode). With N = 256 one instruction does 64 x 256 x 16
// multiply-adds. The accumulators stay in registers: N / 2 f32 per thread, laid out like
// mma.sync's (lane (g, q) of warp w: rows 16 w + g and + 8, columns 8 j + 2 q and + 1).
// wgmma_fence / wgmma_commit_group / wgmma_wait_group order it against the registers.
//
// Swizzling: TMA writes a tile with the 128-byte swizzle (16-byte chunk c of row r goes to chunk
// c ^ (r % 8)) and wgmma reads the same layout, so both sides are free of bank conflicts. a's tile
// is K-major (a row of 64 halves of k is one 128-byte swizzled row); b is row-major [k][n], so
// its tile is MN-major (n contiguous), which wgmma reads in its transposed-B mode.
//
// Warp specialization: warpgroup 0 only produces (one thread issues the TMA copies), the others
// only consume (wgmma). setmaxnreg moves registers from the producer (40 per thread) to the
// consumers (232), which hold 128 accumulators each. Copies of the next stages overlap the
// products of this one, with no __syncthreads in the loop at all.
//
// The mapping of the 128 x 256 block tile to its workers is spatial(2, 1) * (one m64n256 wgmma
// tile): two consumer warpgroups, each 64 rows by all 256 columns; inside the warpgroup the
// hardware fixes the layout. The kernel is include/hidet/ops/templates/matmul_wgmma.hpp;
// benchmarks/bench_matmul measures it against cuBLAS.
//
// This program builds the kernel for sm_90a and, on a Hopper GPU, runs f16 and bf16 products on
// shapes with partial tiles (and k, n not multiples of 8, which go through padded copies) against
// a double-precision host reference. TMA and wgmma are not emulated: without a Hopper GPU it
// checks that NVRTC compiles the kernel for sm_90a and reports SKIP (exit code 77).
//
// Usage: 05_hopper_wgmma_tma [m n k]   (default 333 444 555, then a few more shapes, and split-k
// runs where k is cut into 4 slices whose f32 partial products a second kernel adds up)
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <hidet/backend/nvrtc.hpp> // CompiledModule::binary()
#include <hidet/hidet.hpp>
#include <hidet/ops/templates/matmul_wgmma.hpp>

#include "half_matmul_check.hpp"

using hidet::ops::templates::MatmulWgmma;
using hidet::ops::templates::MatmulWgmmaConfig;

/// One product to check: its sizes, dtype and tiling.
struct Case {
  int m, n, k;
  hidet::DataType dt;
  MatmulWgmmaConfig cfg;
};

/// Builds every case's kernels (a warp-specialized kernel takes NVRTC seconds: one compile per
/// thread), then checks the cases in order; returns the number that failed.
static int run_all(const std::vector<Case> &cases) {
  std::vector<std::unique_ptr<MatmulWgmma>> built(cases.size());
  std::vector<std::string> errors(cases.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < cases.size();) {
      try {
        const Case &c = cases[i];
        built[i] = std::make_unique<MatmulWgmma>(c.m, c.n, c.k, c.dt, c.cfg);
      } catch (const std::exception &e) {
        errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t) pool.emplace_back(work);
  work();
  for (auto &t : pool) t.join();
  int fails = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    if (!built[i]) {
      std::printf("FAILED to build %s: %s\n", c.cfg.str().c_str(), errors[i].c_str());
      ++fails;
      continue;
    }
    MatmulWgmma &matmul = *built[i];
    fails += check_half_matmul(c.m, c.n, c.k, c.dt, c.cfg.str(), [&](auto &a, auto &b, auto &out) {
      // With split_fixup the kernel counts each tile's slices: run once into a scratch tensor
      // first, so that out is right only if the counters were left ready for a second launch.
      if (c.cfg.split_k > 1) matmul(a, b, hidet::empty(out.shape(), c.dt, "cuda"));
      matmul(a, b, out);
    });
  }
  return fails;
}

int main(int argc, char **argv) {
  int m = 333, n = 444, k = 555;
  if (argc == 4) m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  if (m <= 0 || n <= 0 || k <= 0) {
    std::fprintf(stderr, "usage: %s [m n k] (positive sizes)\n", argv[0]);
    return 2;
  }
  MatmulWgmmaConfig big;                // 128 x 256 x 64: 2 consumer warpgroups, 4 stages
  MatmulWgmmaConfig little{1, 128, 6};  // 64 x 128 x 64: 1 consumer warpgroup, 6 stages

  MatmulWgmmaConfig split = little;     // k in 4 slices, summed by a second kernel
  split.split_k = 4;
  MatmulWgmmaConfig split_fixup = split; // the last block to finish a tile adds its slices up
  split_fixup.split_fixup = true;
  // Thread-block clusters: two blocks on vertically neighbouring tiles share b's k tile (each
  // loads half of its rows and multicasts them to both); in `row`, two blocks side by side share
  // a's; `quad` does both, with split-k.
  MatmulWgmmaConfig pair = big;
  pair.cluster_m = 2;
  MatmulWgmmaConfig row{2, 128, 6};
  row.cluster_n = 2;
  MatmulWgmmaConfig quad = little;
  quad.cluster_m = quad.cluster_n = 2, quad.split_k = 2;
  // Other tile shapes: 192 x 192 (3 consumer warpgroups of 64 rows) and 256 x 128 (2 consumers
  // of two m64 atoms each).
  MatmulWgmmaConfig three{3, 192, 4};
  MatmulWgmmaConfig tall{2, 128, 4};
  tall.atoms = 2;
  // The epilogue goes through shared memory (stmatrix, then 16-byte row stores) when n is a
  // multiple of 8; `direct` stores the accumulator pairs straight from the registers instead.
  MatmulWgmmaConfig direct = big;
  direct.smem_epilogue = false;
  // Ping-pong: each consumer warpgroup computes whole tiles (64 x 256 here, 128 x 192 with two
  // atoms in `ping_tall`, 64 x 128 for three consumers in `ping3`); the consumers take turns in
  // the main loop, one storing its tile while the next one computes. The shapes below have more
  // tiles than multiprocessors, so every consumer gets tiles.
  MatmulWgmmaConfig ping = big;
  ping.pingpong = true;
  MatmulWgmmaConfig ping_tall{2, 192, 4};
  ping_tall.atoms = 2, ping_tall.pingpong = true;
  MatmulWgmmaConfig ping3{3, 128, 5};
  ping3.pingpong = true;

  bool hopper = !hidet::cuda_emulated() && hidet::runtime::device_info(0).arch() == "sm_90a";
  if (!hopper) {
    // No Hopper GPU: generate the kernels and compile them for sm_90a (when NVRTC is present), so
    // at least the code path up to the binary is exercised.
    for (auto &[cfg, mma] : {std::pair{big, "m64n256k16"}, std::pair{split, "m64n128k16"},
                             std::pair{split_fixup, "m64n128k16"}, std::pair{quad, "m64n128k16"},
                             std::pair{three, "m64n192k16"}, std::pair{tall, "m64n128k16"}, std::pair{ping, "m64n256k16"},
                             std::pair{ping_tall, "m64n192k16"}, std::pair{ping3, "m64n128k16"}}) {
      auto mod = hidet::ops::templates::matmul_wgmma_module(m, n, k, hidet::f16, cfg);
      auto cm = mod.build(hidet::ops::templates::matmul_wgmma_build_options());
      const std::string &src = cm.source();
      std::vector<std::string> want{"cp.async.bulk.tensor.2d",
                                    "wgmma.mma_async.sync.aligned." + std::string(mma) + ".f32.f16.f16",
                                    "mbarrier.try_wait.parity",
                                    "setmaxnreg.inc.sync.aligned.u32 " + std::to_string(cfg.consumer_budget())};
      if (cfg.cluster_size() > 1) // clusters of 4: multicast loads, remote arrivals on the empty barriers
        for (const char *ptx : {"__cluster_dims__(4, 1, 1)", ".multicast::cluster", "mapa.shared::cluster.u32"})
          want.push_back(ptx);
      for (const auto &ptx : want)
        if (src.find(ptx) == std::string::npos) {
          std::printf("FAILED: the generated CUDA source of %s has no '%s'\n", cfg.str().c_str(), ptx.c_str());
          return 1;
        }
      std::printf("generated the %s kernel (%zu bytes of CUDA C++%s)\n", cfg.str().c_str(), src.size(),
                  cm.binary().cubin.empty() ? "; NVRTC not available, not compiled" : ", compiled for sm_90a by NVRTC");
    }
    {
      auto cm = hidet::ops::templates::matmul_wgmma_module(256, 520, 128, hidet::f16, big)
                    .build(hidet::ops::templates::matmul_wgmma_build_options());
      if (cm.source().find("stmatrix.sync.aligned.m8n8.x4.shared.b16") == std::string::npos) {
        std::printf("FAILED: the %s kernel for n = 520 has no stmatrix epilogue\n", big.str().c_str());
        return 1;
      }
    }
    std::printf("SKIP: TMA and wgmma need a Hopper GPU (sm_90a); the emulator does not run them\n");
    return 77;
  }
  const auto f16 = hidet::f16, bf16 = hidet::bf16;
  int fails = run_all({{m, n, k, f16, big}, {m, n, k, bf16, big}, {150, 140, 100, f16, little},
                       {256, 512, 128, bf16, big}, {37, 41, 23, f16, little},
                       {96, 200, 1000, bf16, split}, {70, 130, 333, f16, split},
                       {m, n, k, f16, pair}, {1000, 520, 300, bf16, pair}, {m, n, k, bf16, row},
                       {300, 1000, 200, f16, row}, {96, 200, 1000, f16, quad}, {333, 777, 555, bf16, quad},
                       {m, n, k, f16, three}, {2048, 2304, 768, bf16, three}, {m, n, k, bf16, tall},
                       {700, 300, 900, f16, tall}, {515, 260, 130, bf16, three},
                       {704, 296, 900, bf16, tall}, {264, 520, 200, f16, direct},
                       {2048, 768, 3072, f16, little}, {128, 768, 3072, bf16, split_fixup},
                       {96, 200, 1000, f16, split_fixup}, {333, 777, 555, f16, split_fixup},
                       {2048, 2304, 768, f16, ping}, {4095, 1000, 333, bf16, ping},
                       {2100, 3000, 500, f16, ping_tall}, {m, n, k, bf16, ping_tall},
                       {1000, 2000, 100, f16, ping3}, {2047, 1031, 1029, bf16, ping3}});
  std::printf(fails ? "FAILED\n" : "OK\n");
  return fails ? 1 : 0;
}
