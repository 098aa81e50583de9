// A Hopper (sm_90a) matrix multiplication for f16 and bf16 in Hidet Script: TMA loads into a
// multi-stage shared-memory ring, wgmma from shared-memory descriptors, and warp specialization.
// c[m][n] = a[m][k] @ b[k][n], all row-major, f32 accumulation, output in the input dtype.
//
// Structure (defaults: 128 x 256 x 64 block tile, 4 stages, 3 warpgroups of 128 threads):
//  * Warpgroup 0 is the producer: after setmaxnreg.dec it keeps few registers, and one of its
//    threads issues, per k tile, one TMA box of a (block_m x 64, k innermost) and block_n / 64
//    boxes of b (64 x 64, n innermost) into stage kt % stages, all completing on the stage's
//    `full` mbarrier as transaction bytes. Before it reuses a stage it waits on the stage's
//    `empty` mbarrier, which every consumer warpgroup arrives on once it has read the stage.
//  * Warpgroups 1..consumers are the consumers (setmaxnreg.inc): consumer w owns rows
//    [64 w, 64 w + 64) of the block tile and all its block_n columns, i.e. c's block tile maps
//    to the consumers by spatial(consumers, 1) * (one m64 x block_n wgmma tile). Per k tile it
//    waits on `full`, issues 4 wgmma.m64n{block_n}k16 (one per 16 of k) straight from shared
//    memory, and once the products of the previous k tile have completed (wgmma_wait_group(1):
//    one tile's products stay in flight) releases that tile's stage. Its accumulators
//    (block_n / 2 f32 per thread) stay in registers for the whole k loop.
//  * Shared tiles use the 128-byte swizzle that TMA writes and wgmma reads: a row of 64 halves is
//    128 bytes and its 16-byte chunks are XOR-ed with the row index mod 8, so neither side has
//    bank conflicts. a's tile is K-major (descriptor: 1024 bytes between 8-row groups; the k16
//    steps advance the start address by 32 bytes inside the swizzled row). b's tile is MN-major
//    (n contiguous, wgmma's transposed-B mode): 64-column boxes 8 KB apart (the leading byte
//    offset), 1024 bytes between groups of 8 k rows (the stride byte offset); a k16 step advances
//    by 16 rows = 2048 bytes. Both need 1024-byte aligned stages: dynamic shared memory is.
//  * Partial tiles: TMA fills elements outside the tensor with zeros, which add nothing; the
//    epilogue stores only elements inside c. TMA needs 16-byte aligned row strides, so when k
//    (or n) is not a multiple of 8 the runner copies a (or b) into a padded workspace first.
//  * Persistent (default): one block per multiprocessor walks the tiles blockIdx.x, + gridDim.x,
//    ...; the stage ring runs on across tiles (a counter of k tiles gives each stage's barrier
//    parity), so the producer already loads the next tile while the consumers store this one.
//    Tiles are rasterized in groups of `group_m` block rows (tile id -> (tile_m, tile_n)), so
//    the tiles in flight together share a's and b's panels in L2.
//  * Split-k (for shapes with few tiles): tiles are (k slice, tile_m, tile_n); each slice writes
//    f32 partial products to a workspace and a second kernel adds them up and rounds.
//  * Epilogue: each consumer thread converts its accumulators to f16/bf16 pairs and stores them
//    (lane (g, q) of warp w holds rows 16 w + g and 16 w + g + 8, columns 8 j + 2 q, + 1).
//
// The tensor maps are encoded on the host for the tensors' addresses (MatmulWgmma caches them
// per address) and passed to the kernel by value, as `const __grid_constant__` parameters
// (tensor_map_param): no copy to device memory before a launch.
#pragma once

#include <optional>
#include <utility>
#include <string>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/templates/matmul_f16.hpp"
#include "hidet/ops/templates/hopper.hpp"
#include "hidet/ops/templates/matmul_rows.hpp"
#include "hidet/ops/templates/matmul_wgmma_config.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"
#include "hidet/runtime/tensor_map.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// The scaled 8-bit variant of add_matmul_wgmma_kernel (matmul_fp8.hpp): `in` is a's and b's
/// dtype (f8e4m3 or f8e5m2).
struct MatmulScaling {
  DataType in = dtypes::f8e4m3;
};

namespace wgmma_detail {
/// The output tiles of a warp-specialized wgmma kernel: (k slice, batch, tile_m, tile_n), one per
/// block or walked by persistent blocks, rasterized in groups of `group` block rows.
/// With clusters of cm x cn blocks, the tiles are the clusters' (bm x bn, each block taking
/// bm / cm x bn / cn of it) and a cluster walks them as one block would.
/// With symbolic rows, `rows` holds the (clusters') tile rows as an expression of the symbols
/// and tiles_m is unused.
struct Tiles {
  int tiles_m, tiles_n, count, splits, split_tiles, k_tiles, group, bm, bn;
  bool persistent;
  int cm = 1, cn = 1;
  std::optional<lang::Expr> rows = std::nullopt;
  int total() const { return tiles_m * tiles_n * count * splits; }
  int cluster_size() const { return cm * cn; }
  /// Blocks of the grid: one per tile, or per multiprocessor (whole clusters) when persistent.
  int grid(int num_sms) const {
    int cs = cluster_size();
    return (persistent ? std::min(total(), std::max(1, num_sms / cs)) : total()) * cs;
  }
  /// The tile rows as an expression (a constant unless the rows are symbolic).
  lang::Expr tile_rows() const { return rows ? *rows : lang::Expr(tiles_m); }
  /// Tiles of one k slice (of all products), and of everything, as expressions.
  lang::Expr per_split() const { return rows ? lang::Expr(*rows * (tiles_n * count)) : lang::Expr(tiles_m * tiles_n * count); }
  lang::Expr total_expr() const { return rows ? lang::Expr(per_split() * splits) : lang::Expr(total()); }
  /// grid() for the launch to evaluate.
  lang::Expr grid_expr(int num_sms) const {
    if (!rows) return grid(num_sms);
    int cs = cluster_size();
    lang::Expr blocks = lang::max(total_expr(), 1);
    return (persistent ? lang::min(blocks, std::max(1, num_sms / cs)) : blocks) * cs;
  }
};
/// Runs body(m0, n0, z, split, first k tile, k tiles) for each tile of this block: blockIdx.x,
/// + gridDim.x, ... (persistent) or just blockIdx.x; with clusters, the cluster's index and
/// count instead, and the block's part of the cluster's tile (block rank r: rows r % cm, columns
/// r / cm).
template <class Body>
void for_each_tile(const Tiles &t, Body &&body) {
  using namespace hidet::lang;
  const int cs = t.cluster_size();
  Expr first = cs > 1 ? Expr(blockIdx.x / cs) : Expr(blockIdx.x), step = cs > 1 ? Expr(gridDim.x / cs) : Expr(gridDim.x);
  Range tiles = t.persistent ? range(first, t.total_expr(), step) : range(first, first + 1);
  const Expr per_z = t.rows ? Expr(*t.rows * t.tiles_n) : Expr(t.tiles_m * t.tiles_n);
  for_(tiles, [&](Var id) {
    Var split = id / t.per_split(), z = id / per_z % t.count;
    Var pid = id % per_z;
    Var kt0 = split * t.split_tiles;
    // Rasterization: groups of `group` block rows, column-major inside a group.
    Var first_m = pid / (t.group * t.tiles_n) * t.group;
    Var rows_in_group = min(t.tile_rows() - first_m, t.group);
    Var tile_m = first_m + pid % (t.group * t.tiles_n) % rows_in_group;
    Var tile_n = pid % (t.group * t.tiles_n) / rows_in_group;
    Expr m0 = tile_m * t.bm, n0 = tile_n * t.bn;
    if (cs > 1) {
      Var rank = cast(cluster_ctarank(), i32);
      m0 = m0 + rank % t.cm * (t.bm / t.cm), n0 = n0 + rank / t.cm * (t.bn / t.cn);
    }
    body(m0, n0, z, split, kt0, min(t.k_tiles - kt0, t.split_tiles));
  });
}
/// The k loop of a consumer warpgroup: for k tiles [kt0, kt0 + kts) (stage it % stages, `it`
/// counting k tiles over the block's tiles), waits on the stage's `full` barrier, issues the four
/// k16 wgmma of the stage with descriptors desc(stage, kk) -> {a, b} into `acc` (f32[bn / 2],
/// zeroed first), keeps one k tile's products in flight and releases the previous tile's stage
/// on `empty`. `generic_writes`: the stage was (partly) written by threads (cp.async), so a
/// proxy fence makes those writes visible to wgmma. With `atoms` > 1, acc is f32[atoms][bn / 2]
/// and each k16 step issues one wgmma per m64 atom, a's descriptor advanced by `atom_desc_step`
/// (the atom's byte offset / 16) per atom. `cluster_size` > 1: the stage is released on
/// the `empty` barrier of every block of the cluster (their producers multicast into it), thread
/// c of the warpgroup signalling block c, in parallel.
template <class Desc>
void consume_k_tiles(const lang::Tensor &acc, const lang::Tensor &full, const lang::Tensor &empty, lang::Var &it,
                     const lang::Expr &kt0, const lang::Expr &kts, int stages, int bn, DataType dt, bool trans_b,
                     bool generic_writes, int cluster_size, int atoms, int atom_desc_step, Desc &&desc) {
  using namespace hidet::lang;
  Var tid = threadIdx.x % 128;
  // Who signals a stage's release, and how.
  Expr signals = cluster_size == 1 ? Expr(tid == 0) : Expr(tid < cluster_size);
  auto release = [&](const lang::Expr &stage) {
    if (cluster_size == 1) mbarrier_arrive(empty[stage]);
    else mbarrier_arrive_cluster(empty[stage], tid);
  };
  for_(range(atoms * bn / 2).unroll(), [&](Var i) { acc[i] = 0.0f; });
  for_(range(kt0, kt0 + kts), [&](Var kt) {
    Var s = it % stages;
    mbarrier_wait(full[s], it / stages % 2);
    if (generic_writes) fence_proxy_async();
    wgmma_fence();
    for (int kk = 0; kk < MatmulWgmmaConfig::block_k / 16; ++kk) {
      auto [desc_a, desc_b] = desc(Expr(s), kk);
      for (int a = 0; a < atoms; ++a)
        wgmma(acc[a * bn / 2], a ? desc_a + Operand(static_cast<unsigned long long>(a * atom_desc_step)) : desc_a, desc_b,
              bn, dt, 1, false, trans_b);
    }
    wgmma_commit_group();
    // Keep this k tile's products in flight; once the previous tile's are done, its stage is
    // free for the producer.
    wgmma_wait_group(1);
    if_(signals && kt > kt0, [&] { release((it + stages - 1) % stages); });
    it = it + 1;
  });
  wgmma_wait_group(0);
  if_(signals, [&] { release((it + stages - 1) % stages); });
}

/// The staged epilogue of one consumer warp (MatmulWgmmaConfig::smem_epilogue): the warp's
/// accumulators acc (f32[atoms][bn / 2], wgmma's m64 layout: lane (g, q) of the warp holds rows
/// g and g + 8 of its 16, columns 8 j + 2 q and + 1) cover rows row0 + 64 a + [0, 16) and
/// columns n0 + [0, bn) of c. Per atom and 64 columns, stmatrix writes the halves to
/// buf[warp] (buf: dt[warps][16][64], one buffer per warp; 16-byte chunk c of row r at chunk
/// c ^ (r % 8), so that neither the stmatrix rows nor the row reads conflict), then each lane
/// reads 16-byte chunks back (8 lanes per row) and stores them to c: as they are, or, when
/// `apply` (a fused chain), as `out`'s values of those 8 halves, its extra inputs read 8
/// elements at a time where they lie like c (EpilogueEmitter::value_run). n must be a multiple
/// of 8 and out's vector width 8.
template <class IdxOf>
void store_staged(const ops::detail::EpilogueEmitter &out, const IdxOf &c_idx, const lang::Tensor &acc,
                  const lang::Tensor &buf, const lang::Expr &warp, const lang::Expr &row0, const lang::Expr &n0,
                  const lang::Expr &m,
                  int n, int bn, int atoms, bool guard_m, bool guard_n, DataType dt, bool apply) {
  using namespace hidet::lang;
  Var lane = threadIdx.x % 32;
  auto words = register_tensor(u32[4], "words");
  // the 8 halves read back, and the values stored (a fused chain)
  auto hv = register_tensor(TensorSpec(dt, {ir::int32(8)}), "hv"), ov = register_tensor(TensorSpec(dt, {ir::int32(8)}), "ov");
  // stmatrix: lane l gives row (l / 8 % 2) * 8 + l % 8 of matrix l / 8 (its columns + 8 for
  // matrices 2 and 3)
  Var st_row = lane / 8 % 2 * 8 + lane % 8, st_chunk = lane / 16;
  // reads: lane l takes chunk l % 8 of row 4 i + l / 8
  Var rd_chunk = lane % 8;
  for (int a = 0; a < atoms; ++a)
    for (int cc = 0; cc < bn / 64; ++cc) {
      for (int jj = 0; jj < 4; ++jj) {
        // matrix i: rows 8 (i % 2) .., columns 8 (2 jj + i / 2) ..; its word of lane (g, q) is
        // accumulator pair j = 8 cc + 2 jj + i / 2, half h = i % 2
        for (int i = 0; i < 4; ++i) {
          int e = a * (bn / 2) + (cc * 8 + 2 * jj + i / 2) * 4 + (i % 2) * 2;
          words[i] = half2_pack(acc[e], acc[e + 1], dt);
        }
        stmatrix(buf[warp][st_row][((2 * jj + st_chunk) ^ (st_row % 8)) * 8], words, 4);
      }
      syncwarp();
      // this lane's columns: 8 c8 .. 8 c8 + 7 (c8 a variable, so that value_run sees the alignment)
      Var c8 = var(i32, n0 / 8 + cc * 8 + rd_chunk, "c8");
      for (int it = 0; it < 4; ++it) {
        Var r = var(i32, it * 4 + lane / 8, "r");
        load_vector(hv, buf[warp][r][(rd_chunk ^ (r % 8)) * 8], 16);
        Expr row = row0 + a * 64 + r;
        Expr ok = true;
        if (guard_m) ok = ok && row < m;
        if (guard_n) ok = ok && c8 * 8 < n;
        auto store = [&] {
          if (!apply) return store_vector(out.at(c_idx(row, c8 * 8)), hv, 16);
          std::vector<Idx> idxs;
          std::vector<Expr> vs;
          for (int x = 0; x < 8; ++x) idxs.push_back(c_idx(row, c8 * 8 + x)), vs.push_back(hv[x]);
          std::vector<Expr> values = out.value_run(idxs, vs);
          for (int x = 0; x < 8; ++x) ov[x] = values[std::size_t(x)];
          store_vector(out.at(c_idx(row, c8 * 8)), ov, 16);
        };
        if (guard_m || guard_n) if_(ok, store);
        else store();
      }
      syncwarp(); // the buffer is free for the next 64 columns
    }
}
} // namespace wgmma_detail

/// Adds kernel `name`: c = a @ b, for c: dt[m][n] and the TMA maps of a: dt[m][lda] (boxes of
/// block_m x 64, 128-byte swizzle) and b: dt[k][ldb] (boxes of 64 x 64, 128-byte swizzle), with
/// lda = matmul_f16_lda(k), ldb = matmul_f16_ldb(n). Needs sm_90a. With split-k (S =
/// matmul_wgmma_splits(k, cfg) > 1) and split_fixup, two more parameters follow: an f32[S][m][n]
/// workspace of the partial products of each k slice and i32 counters
/// (matmul_wgmma_counters(...), zero before the first launch; the kernel leaves them zero).
/// Split-k without split_fixup: the last parameter is that workspace instead of c
/// (add_sum_splits_kernel adds the slices up). With a batch, c is [count][m][n] (the workspace
/// [S][count * m][n]) and the maps of the operands that have the batch are 3-D (boxes of 1 x
/// ...): the persistent tile id also walks the batch. With an epilogue `epi`, c is replaced by
/// the epilogue's output and extra inputs (in the sum kernel without split_fixup).
/// With `scaled` (8-bit inputs, matmul_fp8.hpp): a: in[m][k] and b given transposed, in[n][k]
/// (K-major, boxes of block_n x 128), k a multiple of 16; two f32[1] parameters, scale_a and
/// scale_b, follow the maps, and c = scale_a * scale_b * (a @ b^T) in dt (f16, bf16 or f32).
/// With symbolic rows m (matmul_rows.hpp; not with split_fixup), the symbols (matmul_symbols)
/// follow as i32 parameters last, and the persistent grid is evaluated at launch.
inline void add_matmul_wgmma_kernel(lang::ScriptModule &mod, const std::string &name, const MatmulRows &rows, int n,
                                    int k, DataType dt,
                                    const MatmulWgmmaConfig &cfg = {}, int num_sms = 132,
                                    const MatmulBatch &batch = {}, const Epilogue *epi = nullptr,
                                    const MatmulScaling *scaled = nullptr) {
  using namespace hidet::lang;
  if (scaled) {
    if (!scaled->in.is_fp8() || !(dt.is_half() || dt == dtypes::f32))
      throw ValueError(str_cat("matmul_wgmma '", name, "': scaled products take f8e4m3 or f8e5m2 inputs and give f16, bf16 or f32; got ",
                               scaled->in, " -> ", dt));
    if (k % 16 || batch.batched() || cfg.cluster_size() > 1)
      throw ValueError(str_cat("matmul_wgmma '", name, "': 8-bit inputs need k a multiple of 16 (TMA's 16-byte rows), got ",
                               k, ", no batch and no clusters"));
  } else {
    matmul_f16_detail::require_half(dt, str_cat("matmul_wgmma '", name, "'"));
  }
  check_matmul_wgmma_config(cfg);
  const bool sym = rows.symbolic();
  if ((!sym && rows.value() <= 0) || n <= 0 || k <= 0)
    throw ValueError(str_cat("matmul_wgmma '", name, "': m, n, k must be positive, got ", rows.str(), ", ", n, ", ", k));
  if (sym && cfg.split_fixup)
    throw ValueError(str_cat("matmul_wgmma '", name, "': the in-kernel split-k sum needs a constant row count, got ",
                             rows.str()));
  const int m = sym ? 1 : rows.value(); // (symbolic rows: the expressions below use m_expr)
  const Expr m_expr = rows.expr();
  const DataType in = scaled ? scaled->in : dt; // a's and b's dtype
  const bool kmajor_b = scaled != nullptr;
  const int bm = cfg.block_m(), bn = cfg.block_n, bk = MatmulWgmmaConfig::block_k_of(in), stages = cfg.stages;
  const int cm = cfg.cluster_m, cn = cfg.cluster_n, cs = cfg.cluster_size();
  const int tiles_m = ceil_div(m, bm), tiles_n = ceil_div(n, bn), k_tiles = ceil_div(k, bk);
  const int ctiles_m = ceil_div(tiles_m, cm), ctiles_n = ceil_div(tiles_n, cn); // the clusters' tiles
  const int splits = matmul_wgmma_splits(k, cfg, bk), split_tiles = ceil_div(k_tiles, splits);
  const int group = std::min(cfg.group_m, ctiles_m);
  const int stage_bytes = cfg.a_stage_bytes() + cfg.b_stage_bytes();
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };
  auto T_in = [&](std::vector<ir::Expr> shape) { return TensorSpec(in, std::move(shape)); };

  const int count = batch.count;
  wgmma_detail::Tiles tiles{ctiles_m, ctiles_n, count, splits,  split_tiles, k_tiles, group,
                            bm * cm,  bn * cn,  cfg.persistent, cm, cn};
  if (sym) { // the clusters' tile rows: ceil(ceil(m / bm) / cm) = ceil(m / (bm cm))
    tiles.rows = ceil_div(m_expr, bm * cm);
    tiles.group = cfg.group_m; // (min(group, rows) happens per group in for_each_tile)
  }
  const SymShape c_shape = batch.batched() ? SymShape{count, rows.dim, n} : SymShape{rows.dim, n};
  const Expr ws_rows = sym ? Expr(count * m_expr) : Expr(count * m);
  const bool fixup = splits > 1 && cfg.split_fixup, sum_kernel = splits > 1 && !fixup;
  // the blocks' tiles (a cluster's last ones may lie outside c), one counter per warp of each
  const int grid_rows = ctiles_m * cm, grid_cols = ctiles_n * cn, tile_warps = cfg.consumers * 4;
  std::vector<ParamSpec> specs{tensor_map_param(), tensor_map_param()};
  if (scaled) specs.push_back(f32[1]), specs.push_back(f32[1]);
  const std::size_t p0 = specs.size(); // the output (or workspace) parameter
  if (sum_kernel) specs.push_back(f32[splits][ws_rows][n]);
  else
    for (auto &p : ops::detail::EpilogueEmitter::param_specs(epi, c_shape, dt)) specs.push_back(p);
  const std::size_t n_extras = sum_kernel || !epi ? 0 : epi->inputs.size();
  if (fixup) {
    specs.push_back(f32[splits][ws_rows][n]);
    specs.push_back(i32[matmul_wgmma_counters(m, n, cfg, batch)]);
  }
  push_symbol_params(specs, matmul_symbols(rows, sum_kernel ? nullptr : epi));
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &params) {
    lang::Tensor tmap_a = params[0], tmap_b = params[1];
    // the f32 workspace (split-k) and the fixup's counters (else unused: any tensor parameter)
    const std::size_t ws_index = sum_kernel ? p0 : fixup ? p0 + 1 + n_extras : p0;
    lang::Tensor ws = params[ws_index], counters = params[fixup ? ws_index + 1 : ws_index];
    std::vector<ir::Var> extras;
    for (std::size_t i = p0 + 1; i < p0 + 1 + n_extras; ++i) extras.push_back(params[i].v);
    ops::detail::EpilogueEmitter out(sum_kernel ? nullptr : epi, c_shape, params[p0].v, std::move(extras));
    attrs.cuda.grid_dim = tiles.grid_expr(num_sms);
    attrs.cuda.block_dim = cfg.threads();
    attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes();
    attrs.cuda.min_blocks = 1; // a register cap at entry, so that setmaxnreg takes effect
    if (cs > 1) attrs.cuda.cluster_dim = {cs, 1, 1};

    auto sa = dynamic_shared_tensor(T_in({})[stages][bm][bk], 0, "smem_a");
    // b's stage: 64-column boxes of bk rows (n innermost), or K-major: bn rows of bk
    auto sb = kmajor_b ? dynamic_shared_tensor(T_in({})[stages][1][bn][bk], stages * cfg.a_stage_bytes(), "smem_b")
                       : dynamic_shared_tensor(T_in({})[stages][bn / 64][bk][64], stages * cfg.a_stage_bytes(), "smem_b");
    const int bars = stages * stage_bytes + cfg.epilogue_bytes();
    auto full = dynamic_shared_tensor(u64[stages], bars, "full");
    auto empty = dynamic_shared_tensor(u64[stages], bars + stages * 8, "empty");
    // Ping-pong: turn[c] completes when the consumer before c (cyclically) has read the last
    // stage of its tile (all its 128 threads arrive).
    auto turn = dynamic_shared_tensor(u64[std::max(1, cfg.consumers)], bars + stages * 16, "turn");
    Var wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    auto for_each_tile = [&](auto body) { wgmma_detail::for_each_tile(tiles, body); };

    if_(threadIdx.x == 0, [&] {
      for (int s = 0; s < stages; ++s) {
        mbarrier_init(full[s], 1);
        // the consumers of every block of the cluster; under ping-pong, the one consumer of the tile
        mbarrier_init(empty[s], cfg.pingpong ? 1 : cfg.consumers * cs);
      }
      for (int c = 0; cfg.pingpong && c < cfg.consumers; ++c) mbarrier_init(turn[c], 128);
      fence_mbarrier_init();
    });
    if (cs > 1) cluster_sync(); // the other blocks' barriers are initialized before any multicast
    else syncthreads();

    // `it` counts k tiles over all tiles of the block: stage it % stages, used for the
    // (it / stages)-th time, so its barriers' phase parity is (it / stages) % 2.
    if_(wg == 0, [&] { // the producer warpgroup
      setmaxnreg(cfg.producer_regs, false);
      if_(tid == 0, [&] {
        Var it = var(i32, 0, "it");
        // In a cluster, this block (rank r) loads rows [r / cm * bm / cn, + bm / cn) of a's tile
        // for the blocks of its cluster row (same r % cm) and k rows [r % cm * bk / cm, + bk / cm)
        // of b's tile for those of its cluster column (same r / cm), multicast.
        const int a_rows = bm / cn, b_rows = bk / cm;
        Expr rank = cs > 1 ? Expr(cast(cluster_ctarank(), i32)) : Expr(0);
        Expr rm = rank % cm, rn = rank / cm;
        int row_bits = 0, col_bits = (1 << cm) - 1;
        for (int j = 0; j < cn; ++j) row_bits |= 1 << (cm * j);
        Expr mask_a = Operand(row_bits) << rm, mask_b = Operand(col_bits) << (rn * cm);
        // The box at (x, y[, z]) of `map` into dst, multicast to `mask` or into this block only.
        auto load = [&](const PtrArg &dst, const PtrArg &map, const PtrArg &bar, const Expr &x, const Expr &y,
                        std::optional<Expr> z, std::optional<Expr> mask) {
          if (mask && z) tma_load_multicast(dst, map, bar, {x, y, *z}, *mask);
          else if (mask) tma_load_multicast(dst, map, bar, {x, y}, *mask);
          else if (z) tma_load(dst, map, bar, {x, y, *z});
          else tma_load(dst, map, bar, {x, y});
        };
        for_each_tile([&](Expr m0, Expr n0, Expr z, Expr, Expr kt0, Expr kts) {
          for_(range(kt0, kt0 + kts), [&](Var kt) {
            Var s = it % stages;
            // The stage's previous round was consumed (in every block this one multicasts to).
            mbarrier_wait(empty[s], 1 - it / stages % 2);
            mbarrier_arrive_expect_tx(full[s], stage_bytes);
            auto z_if = [&](bool has) { return batch.batched() && has ? std::optional<Expr>(z) : std::nullopt; };
            Expr a_row = cn > 1 ? rn * a_rows : Expr(0);
            load(sa[s][a_row][0], tmap_a, full[s], kt * bk, m0 + a_row, z_if(batch.a),
                 cn > 1 ? std::optional<Expr>(mask_a) : std::nullopt);
            Expr b_row = cm > 1 ? rm * b_rows : Expr(0);
            if (kmajor_b) load(sb[s][0][0][0], tmap_b, full[s], kt * bk, n0, std::nullopt, std::nullopt);
            else for (int j = 0; j < bn / 64; ++j)
              load(sb[s][j][b_row][0], tmap_b, full[s], n0 + j * 64, kt * bk + b_row, z_if(batch.b),
                   cm > 1 ? std::optional<Expr>(mask_b) : std::nullopt);
            it = it + 1;
          });
        });
      });
    }).else_([&] { // the consumer warpgroups
      setmaxnreg(cfg.consumer_budget(), true);
      const bool staged = cfg.smem_epilogue && !sum_kernel && n % 8 == 0 && out.vector_width() == 8 && dt.is_half();
      auto se = dynamic_shared_tensor(T({})[cfg.consumers * 4][16][64], stages * stage_bytes, "smem_epi");
      const int atoms = cfg.atoms;
      auto acc = register_tensor(f32[atoms * bn / 2], "acc");
      auto pair = register_tensor(u32[1], "pair");
      // the consumer's first row in the tile (and in a's stage)
      Var row0 = cfg.pingpong ? Var(Expr(0)) : Var((wg - 1) * (64 * atoms));
      Var w = tid / 32, g = tid % 32 / 4, q = tid % 4;
      Var it = var(i32, 0, "it");
      Var j = var(i32, 0, "j"); // the block's tiles so far (ping-pong deals tile j to consumer j % consumers)
      auto tile = [&](Expr m0, Expr n0, Expr z, Expr split, Expr kt0, Expr kts) {
        // c[row][col] of this tile's k slice in the workspace under split-k; else the anchor
        // index of c[row][col] (stored through the epilogue)
        auto ws_at = [&](Expr s, Expr row, Expr col) { return ws[s][z * m_expr + row][col]; };
        auto c_idx = [&, on = batch.batched()](Expr row, Expr col) { return on ? Idx{z, row, col} : Idx{row, col}; };
        // An atom's rows start 64 rows (64 x 128 bytes) further in a's tile.
        // Ping-pong: wait for the turn (the previous tile's main loop has read its stages, so
        // this tile's stages are at most one barrier phase ahead), pass it on after the loop.
        // Consumer c's i-th tile (j = i C + c) waits for turn[c]'s (i - 1 + (c > 0))-th phase.
        const int C = cfg.consumers;
        if (cfg.pingpong) if_(j > 0, [&] { mbarrier_wait(turn[wg - 1], (j / C + select(wg > 1, 0, 1)) % 2); });
        // Four wgmma per stage, 32 bytes of k each (k16 halves, k32 fp8); a K-major b's
        // descriptor is like a's, an MN-major one steps 16 k rows of 64-column boxes 8 KB apart.
        const int kstep = bk / 4;
        wgmma_detail::consume_k_tiles(acc, full, empty, it, kt0, kts, stages, bn, in, !kmajor_b, false, cs, atoms,
                                      64 * 128 / 16, [&](Expr s, int kk) {
                                        auto da = make_wgmma_desc(sa[s][row0][kk * kstep], 16, 1024, Swizzle::B128);
                                        if (kmajor_b)
                                          return std::pair{da, make_wgmma_desc(sb[s][0][0][kk * kstep], 16, 1024, Swizzle::B128)};
                                        return std::pair{da, make_wgmma_desc(sb[s][0][kk * kstep][0], 64 * 64 * 2, 1024,
                                                                             Swizzle::B128)};
                                      });
        if (cfg.pingpong) mbarrier_arrive(turn[wg % C]);
        if (scaled) { // c = scale_a * scale_b * (a @ b^T)
          Var scale = var(f32, lang::Tensor(params[2])[0] * lang::Tensor(params[3])[0], "scale");
          for_(range(atoms * bn / 2).unroll(), [&](Var i) { acc[i] = acc[i] * scale; });
        }

        // Epilogue (the producer already loads the next tile): lane (g, q) of warp w holds rows
        // 16 w + g (+ 8), columns 8 j + 2 q (+ 1); atom a holds the rows 64 a further, its
        // accumulators bn / 2 further.
        // (a cluster's last tiles may have blocks wholly outside c)
        const bool guard_m = sym || m % bm != 0 || tiles_m % cm != 0, guard_n = n % bn != 0 || tiles_n % cn != 0;
        // body(row, col, e) for each accumulator pair e, e + 1 of this thread (c[row][col], + 1)
        auto each_pair = [&](auto body) {
          for_(repeat(atoms, bn / 8, 2).on(0), [&](Expr a, Expr j, Expr h) {
            body(m0 + row0 + a * 64 + w * 16 + h * 8 + g, n0 + j * 8 + q * 2, a * (bn / 2) + j * 4 + h * 2);
          });
        };
        // body(row, col, e, x) for each accumulator e + x of this thread inside c
        auto each_element = [&](auto body) {
          each_pair([&](Expr row, Expr col, Expr e) {
            for (int x = 0; x < 2; ++x) {
              Expr ok = true;
              if (guard_m) ok = ok && row < m_expr;
              if (guard_n || n % 2) ok = ok && col + x < n;
              if_(ok, [&] { body(row, col, e, x); });
            }
          });
        };
        auto epilogue = [&] {
          if (staged)
            return wgmma_detail::store_staged(out, c_idx, acc, se, (wg - 1) * 4 + w, m0 + row0 + w * 16, n0, m_expr, n, bn,
                                              atoms, guard_m, guard_n, dt, epi && !epi->is_identity());
          each_pair([&](Expr row, Expr col, Expr e) {
            matmul_f16_detail::store_pair(out, c_idx, row, col, acc[e], acc[e + 1], m_expr, n, guard_m, guard_n, dt, pair);
          });
        };
        if (splits == 1) return epilogue();
        // f32 partial sums of this k slice
        each_element([&](Expr row, Expr col, Expr e, int x) { ws_at(split, row, col + x) = acc[e + x]; });
        if (sum_kernel) return;
        // Count this warp's slice; the warp that completes the count adds all slices (in slice
        // order, so the result does not depend on which block finishes last) and stores.
        threadfence();
        syncwarp();
        Var lane = tid % 32;
        Var slot = var(i32, ((z * grid_rows + m0 / bm) * grid_cols + n0 / bn) * tile_warps + (wg - 1) * 4 + w, "slot");
        Var done = var(i32, 0, "done");
        if_(lane == 0, [&] { done = atomic_add(counters[slot], 1); });
        done = shfl_sync(0xffffffffu, done, 0);
        if_(done == splits - 1, [&] {
          threadfence();
          each_element([&](Expr row, Expr col, Expr e, int x) {
            Var sum = var(f32, 0.0f, "sum");
            for (int sl = 0; sl < splits; ++sl) sum = sum + ws_at(sl, row, col + x);
            acc[e + x] = sum;
          });
          if_(lane == 0, [&] { counters[slot] = 0; }); // ready for the next launch
          epilogue();
        });
      };
      if (!cfg.pingpong) return for_each_tile(tile);
      for_each_tile([&](Expr m0, Expr n0, Expr z, Expr split, Expr kt0, Expr kts) {
        if_(j % cfg.consumers == wg - 1, [&] { tile(m0, n0, z, split, kt0, kts); }).else_([&] {
          it = it + kts; // another consumer's tile: its stages go by
        });
        j = j + 1;
      });
    });
    // No block of a cluster exits while another may still multicast into its shared memory or
    // arrive on its barriers.
    if (cs > 1) cluster_sync();
  });
}

/// Adds kernel `name`: c[i][j] = sum over s of ws[s][i][j], rounded to dt (ws: f32[splits][m][n]);
/// with an epilogue (x of m x n elements), c is replaced by its output and extra inputs. Symbolic
/// rows: the symbols (matmul_symbols) follow as i32 parameters.
inline void add_sum_splits_kernel(lang::ScriptModule &mod, const std::string &name, int splits, const MatmulRows &rows,
                                  int n, DataType dt, const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  const int threads = 256;
  const Expr m = rows.expr();
  const Expr total = rows.symbolic() ? Expr(m * n) : Expr(std::int64_t(rows.value()) * n);
  std::vector<ParamSpec> specs{f32[splits][m][n]};
  for (auto &p : ops::detail::EpilogueEmitter::param_specs(epi, SymShape{rows.dim, n}, dt)) specs.push_back(p);
  push_symbol_params(specs, matmul_symbols(rows, epi));
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &params) {
    lang::Tensor ws = params[0];
    std::vector<ir::Var> extras;
    for (std::size_t i = 2; i < 2 + (epi ? epi->inputs.size() : 0); ++i) extras.push_back(params[i].v);
    ops::detail::EpilogueEmitter out(epi, SymShape{rows.dim, n}, params[1].v, std::move(extras));
    if (rows.symbolic()) attrs.cuda.grid_dim = max(ceil_div(total, threads), 1);
    else attrs.cuda.grid_dim = int(ceil_div(std::int64_t(rows.value()) * n, std::int64_t(threads)));
    attrs.cuda.block_dim = threads;
    Var i = blockIdx.x * threads + threadIdx.x;
    if_(i < total, [&] {
      Var r = i / n, j = i % n;
      Var sum = var(f32, 0.0f, "sum");
      for_(range(splits).unroll(), [&](Var s) { sum = sum + ws[s][r][j]; });
      out.store({r, j}, sum);
    });
  });
}

/// A script module for these sizes: kernel "matmul_wgmma" (parameters as in
/// add_matmul_wgmma_kernel), "sum_splits" with split-k without split_fixup, and "pad_a" /
/// "pad_b" when k / n is not a multiple of 8.
inline lang::ScriptModule matmul_wgmma_module(const MatmulRows &m, int n, int k, DataType dt, const MatmulWgmmaConfig &cfg = {},
                                              int num_sms = 132, const MatmulBatch &batch = {},
                                              const Epilogue *epi = nullptr) {
  auto mod = lang::script_module(str_cat("matmul_wgmma_", dt, "_", m.symbolic() ? "rows" : m.str(), "x", n, "x", k,
                                         epi ? "_epilogue" : ""));
  add_matmul_wgmma_kernel(mod, "matmul_wgmma", m, n, k, dt, cfg, num_sms, batch, epi);
  if (int splits = matmul_wgmma_splits(k, cfg); splits > 1 && !cfg.split_fixup)
    add_sum_splits_kernel(mod, "sum_splits", splits, MatmulRows(Dim(batch.count) * m.dim), n, dt, epi);
  int ba = batch.a ? batch.count : 1, bb = batch.b ? batch.count : 1;
  if (matmul_f16_lda(k) != k) add_pad_columns_kernel(mod, "pad_a", Dim(ba) * m.dim, k, matmul_f16_lda(k), dt);
  if (matmul_f16_ldb(n) != n) add_pad_columns_kernel(mod, "pad_b", bb * k, n, matmul_f16_ldb(n), dt);
  return mod;
}

/// A built Hopper matmul for fixed sizes and dtype: f(a, b, c) computes c = a @ b (a: [m, k],
/// b: [k, n], c: [m, n], all f16 or all bf16, on a Hopper GPU; with a batch, [count, ...] for c
/// and for each operand that has the batch). The TMA maps are encoded for the tensors' addresses
/// and cached, so repeated calls on the same tensors encode nothing. With symbolic rows m
/// (matmul_rows.hpp), one build serves every value: each call passes the symbols' values, and the
/// workspaces are kept per value of m.
class MatmulWgmma {
public:
  MatmulWgmma(const MatmulRows &m, int n, int k, DataType dt, const MatmulWgmmaConfig &cfg = {},
              const MatmulBatch &batch = {}, std::shared_ptr<const Epilogue> epi = nullptr)
      : rows_(m), n_(n), k_(k), dt_(dt), cfg_(cfg), batch_(batch), epi_(epi), splits_(matmul_wgmma_splits(k, cfg)),
        cm_(matmul_wgmma_module(m, n, k, dt, cfg, runtime::device_info(0).sm_count, batch, epi.get())
                .build(matmul_wgmma_build_options())) {
    sum_kernel_ = splits_ > 1 && !cfg.split_fixup;
    main_symbols_ = matmul_symbols(m, sum_kernel_ ? nullptr : epi.get());
    sum_symbols_ = matmul_symbols(MatmulRows(Dim(batch.count) * m.dim), epi.get());
    if (splits_ > 1 && cfg.split_fixup) counters_ = hidet::zeros({matmul_wgmma_counters(m.value(), n, cfg, batch)}, i32, "cuda");
  }
  /// Launches the kernels on the current stream.
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c) { (*this)(a, b, c, {}); }
  /// With an epilogue: c is its output (viewed with c's size when it keeps the layout), `extras`
  /// its other inputs. `values`: the symbols' values (symbolic rows).
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c, const std::vector<Tensor> &extras,
                  const SymbolValues &values = {}) {
    const std::int64_t m = rows_.at(values);
    const std::int64_t ba = batch_.a ? batch_.count : 1, bb = batch_.b ? batch_.count : 1;
    Tensor pa = a, pb = b;
    if (matmul_f16_lda(k_) != k_)
      pa = pad_columns(cm_, "pad_a", a, bufs_.get("a", m, [&] { return hidet::empty({ba * m, matmul_f16_lda(k_)}, dt_, "cuda"); }),
                       rows_.dim.symbols(), values);
    if (matmul_f16_ldb(n_) != n_)
      pb = pad_columns(cm_, "pad_b", b, bufs_.get("b", 0, [&] { return hidet::empty({bb * k_, matmul_f16_ldb(n_)}, dt_, "cuda"); }));
    auto with_batch = [&](bool has, std::vector<std::int64_t> s) {
      if (batch_.batched() && has) s.insert(s.begin(), batch_.count);
      return s;
    };
    check(pa, with_batch(batch_.a, {m, matmul_f16_lda(k_)}), "a");
    check(pb, with_batch(batch_.b, {k_, matmul_f16_ldb(n_)}), "b");
    // Boxes: a block's share of the tiles (multicast to its cluster row / column).
    map_for(map_a_, pa, with_batch(batch_.a, {cfg_.block_m() / cfg_.cluster_n, MatmulWgmmaConfig::block_k}), batch_.a);
    map_for(map_b_, pb, with_batch(batch_.b, {MatmulWgmmaConfig::block_k / cfg_.cluster_m, 64}), batch_.b);
    Tensor ws;
    if (splits_ > 1)
      ws = bufs_.get("ws", m, [&] { return hidet::empty({splits_, std::int64_t(batch_.count) * m, n_}, f32, "cuda"); });
    Shape anchor = sum_kernel_ ? Shape{std::int64_t(batch_.count) * m, n_}
                   : batch_.batched() ? Shape{batch_.count, m, n_} : Shape{m, n_};
    Tensor out = epilogue_out_arg(epi_.get(), c, anchor);
    std::vector<LaunchArg> out_args{out};
    std::vector<Tensor> realigned; // (LaunchArg keeps a tensor's address: no reallocation)
    realigned.reserve(extras.size());
    for (std::size_t i = 0; i < extras.size(); ++i) {
      // The staged epilogue reads extras 16 bytes at a time (EpilogueEmitter::value_run): a
      // view that starts off that alignment is copied to an aligned buffer first.
      const Tensor &t = extras[i];
      if (sum_kernel_ || reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0) {
        out_args.emplace_back(t);
        continue;
      }
      const std::size_t bytes = std::size_t(t.numel()) * t.dtype().nbytes();
      const Tensor &aligned = realigned.emplace_back(bufs_.get(str_cat("extra", i), std::int64_t(bytes), [&] {
                                return hidet::empty({t.numel()}, t.dtype(), "cuda");
                              }).reshape(t.shape()));
      hidet::runtime::detail::copy_bytes(aligned.data_ptr(), aligned.device(), false, t.data_ptr(), t.device(), false,
                                         bytes);
      out_args.emplace_back(aligned);
    }
    std::vector<LaunchArg> args{*map_a_.map, *map_b_.map};
    if (!sum_kernel_) {
      args.insert(args.end(), out_args.begin(), out_args.end());
      if (counters_.defined()) args.emplace_back(ws), args.emplace_back(counters_);
      push_symbol_args(args, main_symbols_, values);
      return cm_["matmul_wgmma"].launch(args);
    }
    args.emplace_back(ws);
    push_symbol_args(args, main_symbols_, values);
    cm_["matmul_wgmma"].launch(args);
    out_args.insert(out_args.begin(), LaunchArg(ws));
    push_symbol_args(out_args, sum_symbols_, values);
    cm_["sum_splits"].launch(out_args);
  }
  const MatmulWgmmaConfig &config() const { return cfg_; }
  const CompiledModule &module() const { return cm_; }

private:
  void check(const Tensor &t, std::vector<std::int64_t> want, const char *what) const {
    if (t.shape() != want)
      throw ValueError(str_cat("matmul_wgmma: ", what, " has shape ", hidet::detail::shape_str(t.shape()), ", expected ",
                               hidet::detail::shape_str(want)));
  }
  /// The map of `t` with boxes of `box` (a leading batch dimension gets a box of 1).
  void map_for(CachedMap &m, const Tensor &t, std::vector<std::int64_t> box, bool has_batch) const {
    if (batch_.batched() && has_batch) box[0] = 1;
    m.update(t, box);
  }
  MatmulRows rows_;
  int n_, k_;
  DataType dt_;
  MatmulWgmmaConfig cfg_;
  MatmulBatch batch_;
  std::shared_ptr<const Epilogue> epi_;
  int splits_;
  bool sum_kernel_ = false;
  std::vector<std::string> main_symbols_, sum_symbols_; // the symbol parameters of each kernel
  CompiledModule cm_;
  Tensor counters_;
  RowBuffers bufs_; // padded operands and the split-k workspace, per value of m
  CachedMap map_a_, map_b_;
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
