// Grouped matrix products for mixture-of-experts layers, in Hidet Script:
// out[S, N] = x[S, K] grouped by rows through weight[E, K, N]: expert e multiplies the rows
// [start_e, end_e) of x by weight[e], where end_e = offs[e] clamped to [0, S] and start_e is the
// largest end before it (0 for the first): for non-decreasing offs (the cumulative row counts that
// MoE layers pass, rows sorted by expert) that is [offs[e - 1], offs[e]). Rows past the last end
// are 0. offs (int32 or int64) is read on the device: no host synchronization, and one build of the
// kernels serves every routing; the row count S is a symbol of the kernels (lang::symbol), so one
// build also serves every S.
//
// The tile scheduler (grouped_tile): the grid is (column tiles, row slots); a block's slot is its
// blockIdx.y. Warp 0 reads offs 32 experts at a time and, with warp shuffles, computes each
// expert's range (a running maximum of the ends) and its row-tile count (an inclusive prefix sum),
// then finds the expert whose tiles hold the slot: the block computes rows [row0, min(row0 + tile,
// end)) of that expert. The slots after the experts' tiles cover the tail [last end, S) with zero
// tiles; the remaining slots exit at once. Slots: ceil(S / tile) + min(E, S) + 1 bound the tiles
// of every routing (each expert with rows adds at most one partial tile, the tail one more).
// Experts without rows get no tile: their weights are never read.
//
// Three kernels share the scheduler:
//  * the tensor-core kernel (f16 / bf16): the mma.sync pipeline of matmul_f16.hpp (cp.async
//    stages, swizzled shared tiles, ldmatrix, m16n8k16 with f32 accumulators) on one expert's
//    rows per tile; rows past the expert's end are zero-filled by cp.async and not stored.
//  * the FMA kernel (f32, and f16 / bf16 with tensor cores off): 64 x 64 tiles, 16-deep k slices in
//    shared memory (converted to f32), 4 x 4 accumulators per thread.
//  * the GEMV kernel (decode: a few rows per expert, any of the three dtypes): each block reads a
//    column strip of one expert's weight once, with 16-byte vector loads (`unroll` of them in
//    flight per thread), for up to `rows` rows of that expert at a time; the block's warps split k
//    (k-groups of threads interleaved by row of the weight) and reduce their partial sums with warp
//    shuffles and shared memory at the end. Only the weights of experts that have rows are read,
//    and each once per `rows` rows: the memory traffic of decoding.
#pragma once

#include <algorithm>
#include <string>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/templates/matmul_f16.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// The kernel kind of a grouped product.
enum class GroupedKind {
  Mma,  ///< tensor cores (f16, bf16): MatmulF16Config tiles
  Fma,  ///< CUDA cores, 64 x 64 tiles (every float dtype)
  Gemv, ///< few rows per expert: weight strips streamed once per `gemv_rows` rows
};

/// A grouped product's kernel and tiling.
struct MatmulGroupedConfig {
  GroupedKind kind = GroupedKind::Mma;
  MatmulF16Config mma{}; ///< the tile of the Mma kind (acc_f16 is not used)
  int gemv_rows = 8;     ///< Gemv: rows of one expert per block (1, 2, 4 or 8)
  int gemv_lanes = 8;    ///< Gemv: threads along a weight row (a strip of lanes x vector columns)
  int gemv_unroll = 4;   ///< Gemv: vector loads of the weight in flight per thread

  /// Rows of one tile (the scheduler's unit).
  int tile_rows() const {
    return kind == GroupedKind::Mma ? mma.block_m() : kind == GroupedKind::Fma ? 64 : gemv_rows;
  }
  /// "mma 128x128x32 (...)", "fma 64x64x16", "gemv 8 rows x 8 lanes, unroll 4"
  std::string str() const {
    if (kind == GroupedKind::Mma) return "mma " + mma.str();
    if (kind == GroupedKind::Fma) return "fma 64x64x16";
    return str_cat("gemv ", gemv_rows, " rows x ", gemv_lanes, " lanes, unroll ", gemv_unroll);
  }
};

/// Throws ValueError naming the config when it cannot be built for dtype `dt`.
inline void check_matmul_grouped_config(const MatmulGroupedConfig &c, DataType dt) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("grouped matmul config ", c.str(), " for ", dt, ": ", why));
  };
  if (!(dt == dtypes::f32 || dt.is_half())) bad("the grouped product takes f32, f16 or bf16");
  if (c.kind == GroupedKind::Mma) {
    if (!dt.is_half()) bad("the tensor-core kernel takes f16 or bf16");
    if (c.mma.acc_f16) bad("f16 accumulation is not supported by the grouped kernel");
    check_matmul_f16_config(c.mma);
  }
  if (c.kind == GroupedKind::Gemv) {
    if (c.gemv_rows != 1 && c.gemv_rows != 2 && c.gemv_rows != 4 && c.gemv_rows != 8)
      bad("gemv_rows must be 1, 2, 4 or 8");
    if (c.gemv_lanes != 4 && c.gemv_lanes != 8 && c.gemv_lanes != 16 && c.gemv_lanes != 32)
      bad("gemv_lanes must be 4, 8, 16 or 32");
    if (c.gemv_unroll < 1 || c.gemv_unroll > 8) bad("gemv_unroll must be 1 to 8");
  }
}

/// The number of row slots (blockIdx.y) of a grouped kernel over `rows` rows, `experts` experts
/// and tiles of `tile_rows`: enough for every routing (see the top of the file).
inline lang::Expr grouped_row_slots(const lang::Expr &rows, int experts, int tile_rows) {
  using namespace hidet::lang;
  return ceil_div(rows, tile_rows) + min(rows, experts) + 1;
}

/// A block's tile: rows [row0, min(row0 + tile_rows, row1)) of expert `expert`; expert -1: zero
/// rows of the tail; -2: no tile (the block exits).
struct GroupedTile {
  lang::Var expert, row0, row1;
};

/// Emits the tile scheduler (see the top of the file) for the block's `slot`: warp 0 scans `offs`
/// (int32 or int64 [experts]) and writes the tile into the shared i32[3] `sched`; then a barrier,
/// and every thread reads it. `rows`: S.
inline GroupedTile grouped_tile(const lang::Tensor &offs, int experts, const lang::Expr &rows,
                                int tile_rows, const lang::Expr &slot, const lang::Tensor &sched) {
  using namespace hidet::lang;
  const unsigned full = 0xffffffffu;
  if_(threadIdx.x < 32, [&] {
    Var lane = threadIdx.x;
    // this lane's find: the expert, first row and end of the slot's tile (-1: not this lane's)
    Var found_e = var(i32, -1, "found_e"), found_r0 = var(i32, -1, "found_r0"),
        found_r1 = var(i32, -1, "found_r1");
    Var carry_end = var(i32, 0, "carry_end"), carry_tiles = var(i32, 0, "carry_tiles");
    for_(range((experts + 31) / 32), [&](Var c) {
      Var e = c * 32 + lane;
      Var end = var(i32, 0, "end");
      if_(e < experts, [&] { end = cast(min(max(offs[e], 0), rows), i32); });
      // the running maximum of the ends: this expert's end
      Var hi = var(i32, max(end, carry_end), "hi");
      for (int d = 1; d < 32; d *= 2) {
        Var t = shfl_up_sync(full, hi, d);
        if_(lane >= d, [&] { hi = max(hi, t); });
      }
      Var start = var(i32, shfl_up_sync(full, hi, 1), "start");
      if_(lane == 0, [&] { start = carry_end; });
      Var tiles = var(i32, (hi - start + (tile_rows - 1)) / tile_rows, "tiles");
      Var incl = var(i32, tiles, "incl"); // inclusive prefix sum of the tiles
      for (int d = 1; d < 32; d *= 2) {
        Var t = shfl_up_sync(full, incl, d);
        if_(lane >= d, [&] { incl += t; });
      }
      Var first = var(i32, carry_tiles + incl - tiles, "first");
      if_(e < experts && slot >= first && slot < first + tiles, [&] {
        found_e = e;
        found_r0 = start + (slot - first) * tile_rows;
        found_r1 = hi;
      });
      carry_end = shfl_sync(full, hi, 31);
      carry_tiles = carry_tiles + shfl_sync(full, incl, 31);
    });
    // at most one lane found the slot: a maximum over the warp gives its values to every lane
    for (int d = 1; d < 32; d *= 2) {
      found_e = max(found_e, shfl_xor_sync(full, found_e, d));
      found_r0 = max(found_r0, shfl_xor_sync(full, found_r0, d));
      found_r1 = max(found_r1, shfl_xor_sync(full, found_r1, d));
    }
    if_(lane == 0, [&] {
      // the slots past the experts' tiles hold the tail
      Var tail_r0 = carry_end + (slot - carry_tiles) * tile_rows;
      Var kind =
          select(found_e >= 0, found_e, select(slot >= carry_tiles && tail_r0 < rows, -1, -2));
      sched[0] = kind;
      sched[1] = select(found_e >= 0, found_r0, tail_r0);
      sched[2] = select(found_e >= 0, found_r1, rows);
    });
  });
  syncthreads();
  return {var(i32, sched[0], "expert"), var(i32, sched[1], "row0"), var(i32, sched[2], "row1")};
}

/// Adds kernel `name`: out = the grouped product (top of the file) for x: dt[S][ldx], weight:
/// dt[E][K][ldw], offs: `offs_dt`[E], out: dt[S][N], S a symbol (taken from x). The Mma kind
/// needs ldx = matmul_f16_lda(K) and ldw = matmul_f16_ldb(N) (16-byte rows for cp.async; the
/// padding is never read); the others take ldx = K, ldw = N.
inline void add_matmul_grouped_kernel(lang::ScriptModule &mod, const std::string &name, int experts,
                                      int n, int k, DataType dt, DataType offs_dt,
                                      const MatmulGroupedConfig &cfg) {
  using namespace hidet::lang;
  check_matmul_grouped_config(cfg, dt);
  if (experts <= 0 || n <= 0 || k <= 0)
    throw ValueError(str_cat("grouped matmul '", name, "': E, N, K must be positive, got ", experts,
                             ", ", n, ", ", k));
  if (offs_dt != dtypes::i32 && offs_dt != dtypes::i64)
    throw ValueError(
        str_cat("grouped matmul '", name, "': offs must be int32 or int64, got ", offs_dt));
  const bool mma = cfg.kind == GroupedKind::Mma;
  const int ldx = mma ? matmul_f16_lda(k) : k, ldw = mma ? matmul_f16_ldb(n) : n;
  const Expr S = symbol("rows");
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };
  std::vector<ParamSpec> specs{T({})[S][ldx], T({})[experts][k][ldw],
                               TensorSpec(offs_dt, {})[experts], T({})[S][n]};
  const int tr = cfg.tile_rows();

  if (cfg.kind == GroupedKind::Mma) {
    const MatmulF16Config &c = cfg.mma;
    const int bm = c.block_m(), bn = c.block_n(), bk = c.block_k, threads = c.threads(),
              stages = c.stages;
    const int mt = c.warp_m / 16, nt = c.warp_n / 8, k_tiles = ceil_div(k, bk);
    const bool guard_n = n % bn != 0 || n % 8 != 0, guard_k = k % bk != 0;
    mod.kernel(
        name, specs, [&](lang::Tensor x, lang::Tensor w, lang::Tensor offs, lang::Tensor out) {
          attrs.cuda.grid_dim = {ceil_div(n, bn), grouped_row_slots(S, experts, tr)};
          attrs.cuda.block_dim = threads;
          // the scheduler's words after the tiles, in dynamic shared memory: a static array beside
          // 48 KB of tiles would pass the 48 KB that a launch gets without opting in
          attrs.cuda.dynamic_smem_bytes = c.smem_bytes() + 16;
          if (c.min_blocks > 0) attrs.cuda.min_blocks = c.min_blocks;
          auto sched = dynamic_shared_tensor(i32[3], c.smem_bytes(), "sched");
          GroupedTile tile = grouped_tile(offs, experts, S, tr, blockIdx.y, sched);
          if_(tile.expert == -2, [&] { return_(); });
          Var n0 = blockIdx.x * bn;
          if_(tile.expert == -1, [&] { // the tail: zeros
            for_(range(ceil_div(bm * bn, threads)), [&](Var it) {
              Var i = it * threads + threadIdx.x;
              Var row = tile.row0 + i / bn, col = n0 + i % bn;
              if_(i < bm * bn && row < tile.row1 && col < n, [&] { out[row][col] = 0.0f; });
            });
            return_();
          });
          auto sa = dynamic_shared_tensor(
              T({})[stages][bm][bk].with_layout(matmul_f16_detail::swizzled_tile(stages, bm, bk)),
              0, "smem_a");
          auto sb = dynamic_shared_tensor(
              T({})[stages][bk][bn].with_layout(matmul_f16_detail::swizzled_tile(stages, bk, bn)),
              stages * bm * bk * 2, "smem_b");
          auto acc = register_tensor(f32[mt][nt][4], "acc");
          auto af = register_tensor(T({})[mt][8], "a_frag");
          auto bf = register_tensor(T({})[nt][4], "b_frag");
          Var e = tile.expert, m0 = tile.row0, m_end = tile.row1;
          Var warp = threadIdx.x / 32, lane = threadIdx.x % 32;
          auto wt = matmul_f16_detail::spatial_task(spatial(c.warps_m, c.warps_n), warp);
          Var wm0 = wt[0] * c.warp_m, wn0 = wt[1] * c.warp_n;

          auto load_tiles = [&](Expr stage, Expr k0) {
            for_(auto_map({bm, bk / 8}, threads).on(threadIdx.x), [&](Expr r, Expr v) {
              Expr row = m0 + r, col = k0 + v * 8;
              Expr bytes = guard_k ? max(min((k - col) * 2, 16), 0) : Expr(16);
              bytes = select(row < m_end, bytes, 0);
              Expr src_col = guard_k ? min(col, ldx - 8) : col;
              cp_async(sa[stage][r][v * 8], x[min(row, m_end - 1)][src_col], 16, bytes);
            });
            for_(auto_map({bk, bn / 8}, threads).on(threadIdx.x), [&](Expr r, Expr v) {
              Expr row = k0 + r, col = n0 + v * 8;
              if (!guard_k && !guard_n) return cp_async(sb[stage][r][v * 8], w[e][row][col], 16);
              Expr bytes = guard_n ? max(min((n - col) * 2, 16), 0) : Expr(16);
              if (guard_k) bytes = select(row < k, bytes, 0);
              Expr src_row = guard_k ? min(row, k - 1) : row,
                   src_col = guard_n ? min(col, ldw - 8) : col;
              cp_async(sb[stage][r][v * 8], w[e][src_row][src_col], 16, bytes);
            });
          };
          auto compute = [&](Expr stage) {
            for_(range(bk / 16).unroll(), [&](Var kk) {
              for_(repeat(mt, 1).on(0), [&](Expr i, Expr) {
                ldmatrix(af[i][0], sa[stage][wm0 + i * 16 + lane % 16][kk * 16 + lane / 16 * 8], 4);
              });
              for_(repeat(1, nt / 2).on(0), [&](Expr, Expr j) {
                ldmatrix(bf[j * 2][0], sb[stage][kk * 16 + lane % 16][wn0 + j * 16 + lane / 16 * 8],
                         4, true);
              });
              for_(repeat(mt, nt).on(0), [&](Expr i, Expr j) {
                mma_sync(acc[i][j][0], af[i][0], bf[j][0], acc[i][j][0]);
              });
            });
          };
          for_(grid(mt, nt, 4).unroll(), [&](Var i, Var j, Var q) { acc[i][j][q] = 0.0f; });
          for (int s = 0; s < stages - 1; ++s) {
            if (s < k_tiles) load_tiles(Expr(s), Expr(s * bk));
            cp_async_commit_group();
          }
          for_(range(k_tiles), [&](Var kt) {
            cp_async_wait_group(stages - 2);
            syncthreads();
            Var next = kt + (stages - 1);
            if_(next < k_tiles, [&] { load_tiles(next % stages, next * bk); });
            cp_async_commit_group();
            compute(kt % stages);
          });
          cp_async_wait_all();
          // lane (g, q) of an m16n8 tile holds rows g, g + 8 and columns 2q, 2q + 1
          auto pair = register_tensor(u32[1], "pair");
          Var g = lane / 4, q = lane % 4;
          for_(repeat(mt, nt, 2).on(0), [&](Expr i, Expr j, Expr h) {
            Expr row = m0 + wm0 + i * 16 + h * 8 + g, col = n0 + wn0 + j * 8 + q * 2;
            Expr lo = acc[i][j][h * 2], hi = acc[i][j][h * 2 + 1];
            if (n % 2 == 0) { // col even, n even: the pair is inside and 4-byte aligned
              if_(row < m_end && col < n, [&] {
                pair[0] = half2_pack(lo, hi, dt);
                store_vector(out[row][col], pair, 4);
              });
            } else {
              if_(row < m_end && col < n, [&] { out[row][col] = lo; });
              if_(row < m_end && col + 1 < n, [&] { out[row][col + 1] = hi; });
            }
          });
        });
    return;
  }

  if (cfg.kind == GroupedKind::Fma) {
    const int bm = 64, bn = 64, bk = 16, threads = 256, pad = 4;
    mod.kernel(
        name, specs, [&](lang::Tensor x, lang::Tensor w, lang::Tensor offs, lang::Tensor out) {
          attrs.cuda.grid_dim = {ceil_div(n, bn), grouped_row_slots(S, experts, tr)};
          attrs.cuda.block_dim = threads;
          auto sched = shared_tensor(i32[3], "sched");
          GroupedTile tile = grouped_tile(offs, experts, S, tr, blockIdx.y, sched);
          if_(tile.expert == -2, [&] { return_(); });
          Var n0 = blockIdx.x * bn, tx = threadIdx.x % 16, ty = threadIdx.x / 16;
          auto acc = register_tensor(f32[4][4], "acc");
          for_(grid(4, 4).unroll(), [&](Var i, Var j) { acc[i][j] = 0.0f; });
          if_(tile.expert >= 0, [&] {
            Var e = tile.expert, m0 = tile.row0, m_end = tile.row1;
            auto sa =
                shared_tensor(f32[bk][bm + pad], "smem_a"); // k-major: a thread's rows side by side
            auto sb = shared_tensor(f32[bk][bn], "smem_b");
            auto ar = register_tensor(f32[4], "a_reg");
            auto br = register_tensor(f32[4], "b_reg");
            for_(range(ceil_div(k, bk)), [&](Var kt) {
              Var k0 = kt * bk;
              for_(range(bm * bk / threads).unroll(), [&](Var it) {
                Var i = it * threads + threadIdx.x;
                Var r = i / bk, kk = i % bk;
                sa[kk][r] = select(m0 + r < m_end && k0 + kk < k,
                                   cast(x[min(m0 + r, m_end - 1)][min(k0 + kk, k - 1)], f32), 0.0f);
              });
              for_(range(bk * bn / threads).unroll(), [&](Var it) {
                Var i = it * threads + threadIdx.x;
                Var kk = i / bn, cc = i % bn;
                sb[kk][cc] =
                    select(k0 + kk < k && n0 + cc < n,
                           cast(w[e][min(k0 + kk, k - 1)][min(n0 + cc, n - 1)], f32), 0.0f);
              });
              syncthreads();
              for_(range(bk).unroll(), [&](Var kk) {
                for_(range(4).unroll(), [&](Var i) {
                  ar[i] = sa[kk][ty + 16 * i];
                  br[i] = sb[kk][tx + 16 * i];
                });
                for_(grid(4, 4).unroll(),
                     [&](Var i, Var j) { acc[i][j] = acc[i][j] + ar[i] * br[j]; });
              });
              syncthreads();
            });
          });
          // the expert's rows, or zeros for the tail (acc stays 0)
          for_(grid(4, 4).unroll(), [&](Var i, Var j) {
            Var row = tile.row0 + ty + 16 * i, col = n0 + tx + 16 * j;
            if_(row < tile.row1 && col < n, [&] { out[row][col] = acc[i][j]; });
          });
        });
    return;
  }

  // Gemv: 256 threads; `lanes` threads cover a strip of lanes * vec columns of one weight row,
  // the block's groups = 256 / lanes threads take every groups-th row of the weight.
  const int threads = 256, lanes = cfg.gemv_lanes, groups = threads / lanes, R = cfg.gemv_rows,
            U = cfg.gemv_unroll;
  const int max_vec = 16 / dt.nbytes();
  int vec = max_vec; // elements per load: 16 bytes where n allows (rows stay aligned), else fewer
  while (vec > 1 && n % vec)
    vec /= 2;
  const int bn = lanes * vec, warps = threads / 32, groups_per_warp = 32 / lanes;
  mod.kernel(name, specs, [&](lang::Tensor x, lang::Tensor w, lang::Tensor offs, lang::Tensor out) {
    attrs.cuda.grid_dim = {ceil_div(n, bn), grouped_row_slots(S, experts, tr)};
    attrs.cuda.block_dim = threads;
    auto sched = shared_tensor(i32[3], "sched");
    GroupedTile tile = grouped_tile(offs, experts, S, tr, blockIdx.y, sched);
    if_(tile.expert == -2, [&] { return_(); });
    auto red = shared_tensor(f32[warps][R][bn], "partial");
    auto acc = register_tensor(f32[R][vec], "acc");
    for_(grid(R, vec).unroll(), [&](Var r, Var v) { acc[r][v] = 0.0f; });
    Var lane_c = threadIdx.x % lanes, group = threadIdx.x / lanes;
    Var n0 = blockIdx.x * bn, col = n0 + lane_c * vec;
    if_(tile.expert >= 0, [&] {
      Var e = tile.expert, m0 = tile.row0, m_end = tile.row1;
      auto wv = register_tensor(T({})[U][vec], "w_vec");
      auto xv = register_tensor(f32[R], "x_val");
      const int step = groups * U;
      for_(range(ceil_div(k, step)), [&](Var it) {
        Var k0 = it * step + group;
        for_(range(U).unroll(), [&](Var u) { // the loads first: U in flight
          Var kk = k0 + u * groups;
          if (vec * dt.nbytes() >= 4) {
            if_(kk < k && col < n, [&] {
              load_vector(wv[u][0], w[e][kk][col], vec * dt.nbytes());
            }).else_([&] { for_(range(vec).unroll(), [&](Var v) { wv[u][v] = 0.0f; }); });
          } else {
            wv[u][0] = select(kk < k && col < n, w[e][min(kk, k - 1)][min(col, n - 1)],
                              cast(Expr(0.0f), dt));
          }
        });
        for_(range(U).unroll(), [&](Var u) {
          Var kk = k0 + u * groups;
          for_(range(R).unroll(), [&](Var r) {
            xv[r] = select(m0 + r < m_end && kk < k,
                           cast(x[min(m0 + r, m_end - 1)][min(kk, k - 1)], f32), 0.0f);
          });
          for_(grid(R, vec).unroll(),
               [&](Var r, Var v) { acc[r][v] = acc[r][v] + xv[r] * cast(wv[u][v], f32); });
        });
      });
    });
    // the groups of a warp (lanes apart) add up by shuffles; each warp's sums meet in shared memory
    for_(grid(R, vec).unroll(), [&](Var r, Var v) {
      for (int d = lanes; d < 32; d *= 2)
        acc[r][v] = acc[r][v] + shfl_xor_sync(0xffffffffu, acc[r][v], d);
    });
    Var warp = threadIdx.x / 32;
    if_(threadIdx.x % 32 < lanes, [&] {
      for_(grid(R, vec).unroll(),
           [&](Var r, Var v) { red[warp][r][lane_c * vec + v] = acc[r][v]; });
    });
    syncthreads();
    for_(range(ceil_div(R * bn, threads)), [&](Var it) {
      Var i = it * threads + threadIdx.x;
      Var r = i / bn, cc = i % bn;
      Var row = tile.row0 + r;
      if_(i < R * bn && row < tile.row1 && n0 + cc < n, [&] {
        Var sum = var(f32, 0.0f, "sum");
        for_(range(warps).unroll(), [&](Var q) { sum += red[q][r][cc]; });
        out[row][n0 + cc] = sum;
      });
    });
    (void)groups_per_warp;
  });
}

/// The configuration for S rows over `experts` experts of [K, N] weights in dtype `dt` on a GPU
/// with `num_sms` multiprocessors (`tensor_cores`: f16/bf16 may use them). Decoding, where an
/// expert gets a few rows (S <= max(16, 2 E)): the GEMV kernel with the power of two of rows per
/// block that covers an expert's share of S (S / min(E, S), at most 8), in strips of 4 lanes where 8 would leave the GPU short of
/// blocks; else f16/bf16 on tensor cores, 128 x 128 tiles when the experts average 96 rows or more
/// and the tiles fill the GPU, 64 x 64 tiles otherwise; else the FMA kernel.
inline MatmulGroupedConfig matmul_grouped_heuristic_config(std::int64_t s, int experts, int n,
                                                           int k, DataType dt, int num_sms,
                                                           bool tensor_cores) {
  (void)k;
  MatmulGroupedConfig c;
  if (s <= std::max<std::int64_t>(16, 2 * std::int64_t(experts))) {
    c.kind = GroupedKind::Gemv;
    // rows per block: the power of two that covers an expert's share when the rows spread over
    // min(E, S) experts (top-k routing spreads them). A block computes all of its rows, the
    // missing ones as zeros: 8 rows for experts of 2 (8 tokens, top-2 of 8 experts) made the
    // kernel issue-bound at a fifth of the bandwidth on the H200.
    const std::int64_t share = lang::ceil_div(s, std::min<std::int64_t>(std::max<std::int64_t>(s, 1), experts));
    c.gemv_rows = share <= 1 ? 1 : share <= 2 ? 2 : share <= 4 ? 4 : 8;
    // narrower strips (4 lanes of 16 bytes) when 8-lane ones would give the experts that may have
    // rows (at most min(E, S)) fewer than two blocks per multiprocessor (a short N: the down
    // projection)
    const int vec = 16 / dt.nbytes();
    const std::int64_t strips = lang::ceil_div(std::int64_t(n), std::int64_t(8 * vec));
    if (strips * std::min<std::int64_t>(experts, s) < 2 * std::int64_t(num_sms)) c.gemv_lanes = 4;
    return c;
  }
  if (dt.is_half() && tensor_cores) {
    c.kind = GroupedKind::Mma;
    std::int64_t tiles =
        lang::ceil_div(s, std::int64_t(128)) * lang::ceil_div(std::int64_t(n), std::int64_t(128));
    if (s < 96 * std::int64_t(experts) || tiles < num_sms)
      c.mma = MatmulF16Config{2, 2, 32, 32, 32, 3, 1};
    return c;
  }
  c.kind = GroupedKind::Fma;
  return c;
}

/// A built grouped product for fixed E, N, K, dtypes and config (S free): f(x, weight, offs, out)
/// launches it on the current stream. x [S, K], weight [E, K, N], offs [E] and out [S, N] on the
/// device, x and weight 16-byte aligned; for the Mma kind x and weight are padded here when K or N
/// is not a multiple of 8 (a copy per call: real layers have multiples of 8).
class MatmulGrouped {
public:
  MatmulGrouped(int experts, int n, int k, DataType dt, DataType offs_dt,
                const MatmulGroupedConfig &cfg)
      : cfg_(cfg), experts_(experts), n_(n), k_(k), dt_(dt), offs_dt_(offs_dt),
        cm_(build(experts, n, k, dt, offs_dt, cfg)) {}

  void operator()(const Tensor &x, const Tensor &w, const Tensor &offs, const Tensor &out) const {
    const std::int64_t s = x.shape()[0];
    if (s == 0) return;
    Tensor px = x, pw = w;
    if (cfg_.kind == GroupedKind::Mma) {
      const int ldx = matmul_f16_lda(k_), ldw = matmul_f16_ldb(n_);
      if (ldx != k_)
        px = pad_columns(cm_, "pad_x", x, hidet::empty({s, ldx}, dt_, x.device()), {"grouped_rows"},
                         {{"grouped_rows", s}});
      if (ldw != n_)
        pw = pad_columns(cm_, "pad_w", w,
                         hidet::empty({std::int64_t(experts_) * k_, ldw}, dt_, w.device()));
    }
    cm_["grouped_matmul"].launch({px, pw, offs, out});
  }
  const MatmulGroupedConfig &config() const { return cfg_; }

private:
  static CompiledModule build(int experts, int n, int k, DataType dt, DataType offs_dt,
                              const MatmulGroupedConfig &cfg) {
    auto mod = lang::script_module(str_cat("grouped_matmul_", dt, "_e", experts, "_", n, "x", k));
    add_matmul_grouped_kernel(mod, "grouped_matmul", experts, n, k, dt, offs_dt, cfg);
    if (cfg.kind == GroupedKind::Mma && matmul_f16_lda(k) != k)
      add_pad_columns_kernel(mod, "pad_x", Dim::symbol("grouped_rows"), k, matmul_f16_lda(k), dt);
    if (cfg.kind == GroupedKind::Mma && matmul_f16_ldb(n) != n)
      add_pad_columns_kernel(mod, "pad_w", Dim(std::int64_t(experts) * k), n, matmul_f16_ldb(n),
                             dt);
    return mod.build();
  }

  MatmulGroupedConfig cfg_;
  int experts_, n_, k_;
  DataType dt_, offs_dt_;
  CompiledModule cm_;
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
