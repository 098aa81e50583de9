// The Hopper matmul's configuration (templates/matmul_wgmma.hpp): the tiling parameters, their
// checks, the split-k and counter arithmetic, the heuristic that picks a tiling for a shape (a
// cost model of waves measured on an H200) and the build options of the sm_90a kernels. Apart
// from the kernel so that what chooses a configuration does not pay for the kernel's code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "hidet/ir/dtype.hpp"
#include "hidet/error.hpp"
#include "hidet/lang/expr.hpp"
#include "hidet/ops/templates/matmul_batch.hpp"
#include "hidet/runtime/compiled_module.hpp"

namespace hidet::ops::templates {

/// Tiling parameters of the Hopper matmul: block_m = 64 * consumers.
struct MatmulWgmmaConfig {
  int consumers = 2;  ///< consumer warpgroups (1 or 2), each computing 64 rows of the block tile
  int block_n = 256;  ///< columns of the block tile (a multiple of 64, at most 256)
  int stages = 4;     ///< shared-memory stages of the TMA ring (2..8)
  int group_m = 8;    ///< block rows per rasterization group (L2 reuse)
  bool persistent = true; ///< one block per multiprocessor looping over the tiles
  int split_k = 1;        ///< k is split into this many slices summed by a second kernel
  /// Thread-block clusters of cluster_m x cluster_n blocks on neighbouring output tiles: the
  /// blocks of a cluster column (same n) share b's k tile, each loading 64 / cluster_m of its k
  /// rows and multicasting them to the others; the blocks of a cluster row (same m) share a's
  /// tile the same way (block_m / cluster_n rows each). This divides the L2 -> shared traffic of
  /// the shared operand by the cluster's extent.
  int cluster_m = 1, cluster_n = 1;
  /// setmaxnreg budgets; consumer_regs 0: what the multiprocessor's 64K registers leave after
  /// the producer, split over the consumers (at most 232).
  int producer_regs = 40, consumer_regs = 0;
  int atoms = 1; ///< m64 wgmma atoms per consumer warpgroup (its rows: 64 * atoms)
  /// Split-k: true: the last block to finish a tile's k slices adds them up from the f32
  /// workspace and stores the tile through the epilogue, in the same kernel (each consumer warp
  /// counts its rows' slices with an atomic counter, which it resets). false (default): a second
  /// kernel adds them. On an H200 the in-kernel sum is slower as it stands (128x768x3072, split
  /// 8: 17.1 us against 10.0; docs/notes/matmul_wgmma.md): its partials are written and read
  /// back in the accumulator layout, 4 bytes over 8 rows per instruction, behind a fence.
  bool split_fixup = false;
  /// Epilogue through shared memory: each consumer warp packs its accumulators to halves,
  /// writes them 16 x 64 at a time to a swizzled buffer of its own with stmatrix and stores them
  /// back as 16-byte row segments (4 full 128-byte lines per warp instruction, instead of
  /// 4-byte pairs over 8 rows). Used when n is a multiple of 8, without split-k and when the
  /// fused epilogue keeps runs of 8 elements; otherwise the pairs are stored directly.
  bool smem_epilogue = true;
  /// Ping-pong schedule (persistent, 2 or 3 consumers, no split-k, no clusters): each consumer
  /// warpgroup computes whole tiles of 64 * atoms x block_n on its own, the block's tiles dealt
  /// round-robin, and the consumers take turns in the main loop (an mbarrier per consumer passes
  /// the turn when a main loop has read its last stage), so that one consumer's epilogue runs
  /// while the next one's products keep the tensor cores busy. false: the consumers share each
  /// tile (64 * atoms rows each) and store it together.
  bool pingpong = false;

  static constexpr int block_k = 64; ///< one 128-byte swizzled row of halves
  /// The k extent of a stage for inputs of dtype `in`: one 128-byte row (64 halves, 128 fp8).
  static int block_k_of(DataType in) { return 128 / int(in.nbytes()); }
  /// Rows of one tile: the consumers' rows together, or one consumer's under ping-pong.
  int block_m() const { return 64 * atoms * (pingpong ? 1 : consumers); }
  int threads() const { return 128 * (consumers + 1); }
  int consumer_budget() const {
    return consumer_regs ? consumer_regs : std::min(232, (65536 / 128 - producer_regs) / consumers / 8 * 8);
  }
  int cluster_size() const { return cluster_m * cluster_n; }
  int a_stage_bytes() const { return block_m() * block_k * 2; }
  int b_stage_bytes() const { return block_k * block_n * 2; }
  /// The epilogue buffers: 16 x 64 halves per consumer warp.
  int epilogue_bytes() const { return smem_epilogue ? consumers * 4 * 16 * 64 * 2 : 0; }
  /// Dynamic shared memory: the stages, the epilogue buffers, then the full and empty mbarriers
  /// and, under ping-pong, one turn mbarrier per consumer.
  int smem_bytes() const {
    return stages * (a_stage_bytes() + b_stage_bytes()) + epilogue_bytes() + stages * 16 + (pingpong ? consumers * 8 : 0);
  }
  /// "128x256x64 (2 consumer warpgroups, 4 stages)"
  std::string str() const {
    return str_cat(block_m(), "x", block_n, "x", block_k, " (", consumers, " consumer warpgroup", consumers > 1 ? "s" : "",
                   atoms > 1 ? str_cat(" of ", atoms, " m64 atoms") : std::string(), pingpong ? ", ping-pong" : "", ", ",
                   stages, " stages", persistent ? ", persistent" : "",
                   cluster_size() > 1 ? str_cat(", cluster ", cluster_m, "x", cluster_n) : std::string(),
                   split_k > 1 ? str_cat(", split-k ", split_k, split_fixup ? " summed in-kernel" : "") : std::string(),
                   smem_epilogue ? std::string() : ", direct stores", ")");
  }
};

/// Throws ValueError naming the config when it cannot be built.
inline void check_matmul_wgmma_config(const MatmulWgmmaConfig &c) {
  auto bad = [&](const std::string &why) { throw ValueError(str_cat("matmul_wgmma config ", c.str(), ": ", why)); };
  // (4 consumers, 640 threads and setmaxnreg 112, hung on an H200; not diagnosed)
  if (c.consumers < 1 || c.consumers > 3) bad("consumers must be 1, 2 or 3 warpgroups");
  if (c.atoms < 1 || c.atoms > 2) bad("atoms (m64 wgmma atoms per consumer) must be 1 or 2");
  if (c.block_n < 64 || c.block_n > 256 || c.block_n % 64)
    bad("block_n must be 64, 128, 192 or 256 (64-column TMA boxes, wgmma n <= 256)");
  if (c.stages < 2 || c.stages > 8) bad("stages must be in [2, 8]");
  if (c.group_m < 1) bad("group_m must be positive");
  if (c.split_k < 1) bad("split_k must be positive");
  for (int e : {c.cluster_m, c.cluster_n})
    if (e != 1 && e != 2 && e != 4) bad("cluster_m and cluster_n must be 1, 2 or 4");
  if (c.pingpong && (c.consumers < 2 || !c.persistent || c.split_k != 1 || c.cluster_size() != 1))
    bad("ping-pong needs 2 or 3 consumers, a persistent kernel, no split-k and no clusters");
  if (c.cluster_n > 1 && c.block_m() / c.cluster_n < 32)
    bad("a's multicast slices (block_m / cluster_n rows) must have at least 32 rows");
  if (c.smem_bytes() > 227 * 1024) bad(str_cat(c.smem_bytes(), " bytes of shared memory; an H100 block may use 232448"));
  const int cr = c.consumer_budget();
  if (c.producer_regs < 24 || cr < 24 || cr > 256 || c.producer_regs % 8 || cr % 8)
    bad("setmaxnreg budgets must be multiples of 8 in [24, 256]");
  if (128 * (c.producer_regs + c.consumers * cr) > 65536)
    bad(str_cat("register budgets need ", 128 * (c.producer_regs + c.consumers * cr),
                " registers; a multiprocessor has 65536"));
  if (c.atoms * c.block_n / 2 + 40 > cr)
    bad(str_cat(c.atoms * c.block_n / 2, " f32 accumulators per consumer thread do not fit its budget of ", cr,
                " registers (40 kept for addresses)"));
}

/// The number of k slices actually used for k (k tiles of `block_k`): every slice gets at least
/// one k tile.
inline int matmul_wgmma_splits(int k, const MatmulWgmmaConfig &cfg, int block_k = MatmulWgmmaConfig::block_k) {
  int k_tiles = lang::ceil_div(k, block_k);
  int per_split = lang::ceil_div(k_tiles, std::max(1, cfg.split_k));
  return lang::ceil_div(k_tiles, per_split);
}

/// The number of i32 counters of the in-kernel split-k fixup: one per consumer warp of each
/// block tile (of each product of a batch).
inline int matmul_wgmma_counters(int m, int n, const MatmulWgmmaConfig &cfg, const MatmulBatch &batch = {}) {
  const int rows = lang::ceil_div(lang::ceil_div(m, cfg.block_m()), cfg.cluster_m) * cfg.cluster_m;
  const int cols = lang::ceil_div(lang::ceil_div(n, cfg.block_n), cfg.cluster_n) * cfg.cluster_n;
  return batch.count * rows * cols * cfg.consumers * 4;
}

/// Build options of the Hopper kernels: sm_90a (wgmma and setmaxnreg need the 'a' target).
inline BuildOptions matmul_wgmma_build_options() {
  BuildOptions o;
  o.arch = "sm_90a";
  return o;
}

/// A tiling for an m x n x k product on `num_sms` multiprocessors, chosen by a cost model: a
/// persistent kernel takes ceil(tiles / num_sms) waves of (fixed + k tiles x per_k_tile), with
/// each tile shape's fixed cost (waiting for the first stage, the epilogue) and cost per k tile
/// measured on an H200 with per-tile timestamps (docs/notes/matmul_wgmma.md: BERT-base's
/// products at batch 16, squares from 1024 to 8192). Then k is split while the blocks still
/// fit half the GPU and each slice keeps at least 8 k tiles.
/// `epilogue_math_calls`: the fused epilogue's costly math calls per element
/// (ops::epilogue_math_calls). Each adds about 30 ns per tile for every output element that a
/// consumer thread evaluates (block_m x block_n / (128 consumers)): measured with a GELU (one
/// erfc) on an H200, 29 to 35 ns over four tile shapes, where the tensor cores wait
/// (docs/notes/matmul_wgmma.md, "GELU epilogues"). Tiles of one consumer warpgroup then lose:
/// ViT-B/16's MLP product at batch 16 (3152 x 3072 x 768) + GELU took 48.7 us on 64 x 256 tiles
/// and 36.3 on 128 x 128 tiles of two consumers (26.2 and 26.0 bare).
inline MatmulWgmmaConfig matmul_wgmma_heuristic_config(int m, int n, int k, int num_sms, int epilogue_math_calls = 0) {
  struct Candidate {
    MatmulWgmmaConfig cfg;
    double fixed_us, per_k_tile_us;
  };
  static const Candidate candidates[] = {
      {MatmulWgmmaConfig{2, 256, 4}, 2.2, 0.65},  // 128 x 256
      {MatmulWgmmaConfig{3, 192, 4}, 2.3, 0.72},  // 192 x 192
      {MatmulWgmmaConfig{2, 192, 4}, 1.55, 0.50}, // 128 x 192
      {MatmulWgmmaConfig{2, 128, 6}, 1.0, 0.36},  // 128 x 128
      {MatmulWgmmaConfig{1, 256, 5}, 1.05, 0.335}, // 64 x 256
      {MatmulWgmmaConfig{1, 128, 6}, 0.6, 0.237}, // 64 x 128
  };
  auto tiles = [&](const MatmulWgmmaConfig &t) {
    return std::int64_t(lang::ceil_div(m, t.block_m())) * lang::ceil_div(n, t.block_n);
  };
  const int k_tiles = lang::ceil_div(k, MatmulWgmmaConfig::block_k);
  MatmulWgmmaConfig c = candidates[0].cfg;
  double best = 1e300;
  for (const auto &cand : candidates) {
    double waves = double(lang::ceil_div(tiles(cand.cfg), std::int64_t(std::max(1, num_sms))));
    const double per_thread = double(cand.cfg.block_m()) * cand.cfg.block_n / (128.0 * cand.cfg.consumers);
    double t = waves * (cand.fixed_us + k_tiles * cand.per_k_tile_us + 0.030 * epilogue_math_calls * per_thread);
    if (t < best) best = t, c = cand.cfg;
  }
  // Split k while the blocks still fit one wave and each keeps at least 8 k tiles: a split pays
  // for a summing kernel and the f32 partials' traffic. H200, space-2 runs at 4548fc9:
  // 128x768x3072 split 4 9.4 us, split 8 9.9; 128x2304x768 unsplit 5.2 us, split 2 slower.
  while (tiles(c) * c.split_k * 2 <= num_sms && k_tiles / (c.split_k * 2) >= 8) c.split_k *= 2;
  // Two or more waves of 128 x 256 tiles: clusters of two blocks along m sharing b's k tile
  // (multicast). H200, f16: 4096^3 747 against 739 TFLOP/s, 8192^3 762 against 751; at
  // 2048x4096x4096 (1.9 waves) the same within 0.3%.
  if (c.block_m() == 128 && c.block_n == 256 && c.split_k == 1 && tiles(c) >= 2 * std::int64_t(num_sms))
    c.cluster_m = 2;
  return c;
}

} // namespace hidet::ops::templates
