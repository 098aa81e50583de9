// A tiled f32 matrix multiplication on the FMA units, written in Hidet Script with task mappings:
// c[m][n] = a[m][k] @ b[k][n], all row-major, any m, n, k (partial tiles are guarded).
//
// Structure (the default config is the classic 128x128x8 SGEMM tiling; the heuristic picks
// block_k 16 tiles with cp.async):
//  * Each block computes a block_m x block_n tile of c. Its threads own the tile through the task
//    mapping   spatial(warps_m, warps_n) * repeat(repeat_m, repeat_n)
//              * spatial(lanes_m, lanes_n) * repeat(thread_m, thread_n)
//    (matmul_f32_c_mapping): warps split the tile, each lane holds repeat x thread sub-tiles of
//    thread_m x thread_n accumulators in registers. By the composition law, the thread's element
//    (ri, ti) along m is   ((wi * repeat_m + ri) * lanes_m + li) * thread_m + ti
//    where (wi, li) are the spatial tasks of its warp and lane; ri and ti are unrolled loop
//    variables, so register tensors are indexed with compile-time constants only.
//  * The k dimension advances block_k at a time through shared-memory buffers, in one of two
//    pipelines (MatmulF32Config::stages):
//    - register staging (stages = 0, v1): two buffers; while the block computes on one, each
//      thread has already loaded its part of the next tile from global memory into registers,
//      and stores it into the other buffer after the computation; one barrier per k-tile;
//    - cp.async (stages >= 2): `stages` buffers in dynamic shared memory, the copies of tile
//      kt + stages - 1 in flight while the block computes tile kt (no register staging); a goes
//      by 4-byte copies to its transposed place, b by 16-byte copies (4-byte ones when n is not a
//      multiple of 4); one cp.async group and one barrier per k-tile. Each thread's copies are
//      one address per tile plus constant offsets (immediates in SASS) when the tile is whole.
//      With `pipeline` (the default, even block_k) all `stages` buffers hold tiles in flight and
//      the fragments of step k + 1 are read while step k's FMAs run, across the tile boundary:
//      the barrier, the next copies and the next tile's first fragments come before the last
//      step's FMAs (docs/notes/matmul_f32.md, v5).
//  * a's tile is stored transposed (k-major) so that a thread's thread_m rows are contiguous
//    (16-byte shared loads), with rows padded by 4 floats (a strided layout) so that the
//    transposing stores of a warp (8 k x 4 m) fall in 32 distinct banks.
//  * Bounds checks are emitted only along the dimensions that are not multiples of the tile.
//  * matmul_f32_heuristic_config picks the tile shape and split-k with an explicit cost model of
//    wave quantization on the GPU's SMs (matmul_f32_cost_us), fitted to H200 sweeps
//    (docs/notes/matmul_f32.md).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/templates/matmul_batch.hpp"
#include "hidet/ops/templates/matmul_rows.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Tiling parameters of the f32 matmul kernel. block_m = warps_m * repeat_m * lanes_m * thread_m
/// (likewise along n); the block has warps_m * warps_n warps.
struct MatmulF32Config {
  int warps_m = 4, warps_n = 2;   ///< warps of a block
  int repeat_m = 2, repeat_n = 2; ///< sub-tiles per lane, one warp tile apart
  int lanes_m = 4, lanes_n = 8;   ///< lanes of a warp (lanes_m * lanes_n == 32)
  int thread_m = 4, thread_n = 4; ///< contiguous accumulators per sub-tile
  int block_k = 8;                ///< k extent of one shared-memory tile
  int min_blocks = 2;             ///< __launch_bounds__ blocks per SM (0: none)
  int split_k = 1;                ///< slices of k computed by separate blocks, then summed
  int stages = 0;                 ///< 0: register-staged double buffer; >= 2: cp.async buffers
  bool pipeline = true;           ///< cp.async: fragments of step k + 1 read during step k's FMAs,
                                  ///< across tiles (all `stages` buffers then hold tiles in flight)

  int block_m() const { return warps_m * repeat_m * lanes_m * thread_m; }
  int block_n() const { return warps_n * repeat_n * lanes_n * thread_n; }
  int threads() const { return warps_m * warps_n * 32; }
  /// The row pitch of the transposed a tile in shared memory: block_m rounded up to 4, plus 4.
  int a_pitch() const { return (block_m() + 3) / 4 * 4 + 4; }
  /// Shared memory of the tiles' buffers, in bytes (dynamic under cp.async).
  int smem_bytes() const { return (stages == 0 ? 2 : stages) * block_k * (a_pitch() + block_n()) * 4; }
  /// "128x128x8 (warps 4x2, repeat 2x2, lanes 4x8, thread 4x4, min_blocks 2), cp.async 3 stages"
  std::string str() const {
    return str_cat(block_m(), "x", block_n(), "x", block_k, " (warps ", warps_m, "x", warps_n, ", repeat ",
                   repeat_m, "x", repeat_n, ", lanes ", lanes_m, "x", lanes_n, ", thread ", thread_m, "x",
                   thread_n, min_blocks > 0 ? str_cat(", min_blocks ", min_blocks) : std::string(), ")", stages > 0 ? str_cat(", cp.async ", stages, " stages", pipeline ? " (pipelined)" : "") : std::string(),
                   split_k > 1 ? str_cat(", split-k ", split_k) : std::string());
  }
};

/// The mapping of the c tile's elements to the threads of a block (see the top of this file).
inline lang::TaskMapping matmul_f32_c_mapping(const MatmulF32Config &c) {
  using namespace hidet::lang;
  return spatial(c.warps_m, c.warps_n) * repeat(c.repeat_m, c.repeat_n) * spatial(c.lanes_m, c.lanes_n) *
         repeat(c.thread_m, c.thread_n);
}

/// Throws ValueError naming the config when its tiles cannot be split over its threads.
inline void check_matmul_f32_config(const MatmulF32Config &c) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("matmul_f32 config ", c.str(), ": ", why));
  };
  for (int v : {c.warps_m, c.warps_n, c.repeat_m, c.repeat_n, c.lanes_m, c.lanes_n, c.thread_m, c.thread_n, c.block_k})
    if (v <= 0) bad("every extent must be positive");
  if (c.split_k <= 0) bad("split_k must be positive");
  if (c.lanes_m * c.lanes_n != 32) bad(str_cat("lanes_m * lanes_n is ", c.lanes_m * c.lanes_n, ", must be 32"));
  if (c.threads() > 1024) bad(str_cat(c.threads(), " threads per block; CUDA allows 1024"));
  if (c.stages < 0 || c.stages == 1) bad(str_cat("stages is ", c.stages, "; use 0 (register staging) or at least 2"));
  if (c.smem_bytes() > 227 * 1024)
    bad(str_cat(c.smem_bytes(), " bytes of shared memory; a block may use 232448 (227 KiB)"));
  if (c.stages == 0 && c.smem_bytes() > 48 * 1024)
    bad(str_cat(c.smem_bytes(), " bytes of static shared memory; at most 49152 without cp.async stages"));
  int t = c.threads();
  if (c.stages == 0 &&
      (t % c.block_k != 0 || c.block_m() % (t / c.block_k) != 0 || c.block_n() % (t / c.block_k) != 0))
    bad(str_cat("the ", t, " threads must load the ", c.block_m(), "x", c.block_k, " and ", c.block_k, "x",
                c.block_n(), " tiles in whole rounds: block_k must divide the thread count and ", t / c.block_k,
                " must divide block_m and block_n (or use cp.async stages, which have no such rule)"));
}

namespace matmul_detail {
/// The coordinates of the single task of `worker` in a spatial mapping (emits no statement).
inline std::vector<lang::Expr> spatial_task(const lang::TaskMapping &m, const lang::Expr &worker) {
  std::vector<lang::Expr> out;
  lang::for_(m.on(worker, -1), [&](lang::Expr i, lang::Expr j) { out = {i, j}; });
  return out;
}
} // namespace matmul_detail

/// Adds kernel `name`: c = a @ b for a: f32[m][k], b: f32[k][n], c: f32[m][n] (row-major).
/// With cfg.split_k = s > 1 the third parameter is f32[s][m][n] instead: block z of the grid
/// computes the partial product over the z-th slice of k into c[z] (sum them: add_sum_kernel).
/// With a batch, each operand that has it gets a leading dimension of batch.count (the split-k
/// workspace is f32[s][count * m][n]) and blockIdx.z / s picks the product. With an epilogue
/// `epi` and no split, c is replaced by the epilogue's output and extra inputs. With symbolic rows
/// m (matmul_rows.hpp), the symbols (matmul_symbols) follow as i32 parameters.
inline void add_matmul_f32_kernel(lang::ScriptModule &mod, const std::string &name, const MatmulRows &rows, int n,
                                  int k, const MatmulF32Config &cfg = {}, const MatmulBatch &batch = {},
                                  const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  check_matmul_f32_config(cfg);
  const bool sym = rows.symbolic();
  if ((!sym && rows.value() <= 0) || n <= 0 || k <= 0)
    throw ValueError(str_cat("matmul_f32 '", name, "': m, n, k must be positive, got ", rows.str(), ", ", n, ", ", k));
  const Expr m = rows.expr();
  const int bm = cfg.block_m(), bn = cfg.block_n(), bk = cfg.block_k, threads = cfg.threads();
  const int rm = cfg.repeat_m, rn = cfg.repeat_n, tm = cfg.thread_m, tn = cfg.thread_n;
  const int frag_m = rm * tm, frag_n = rn * tn; // accumulators per thread along m and n
  const int a_pitch = cfg.a_pitch();            // padded row of the transposed a tile
  const int stages = cfg.stages;
  const int split = cfg.split_k;
  const int k_slice = ceil_div(ceil_div(k, split), bk) * bk; // k per slice, whole tiles
  const int k_tiles = k_slice / bk;
  const bool guard_m = sym || rows.value() % bm != 0, guard_n = n % bn != 0, guard_k = k_slice * split != k;
  const int count = batch.count;
  auto batched = [&](bool has, const Expr &r, int cols) {
    return batch.batched() && has ? f32[count][r][cols] : f32[r][cols];
  };
  const SymShape c_shape = batch.batched() ? SymShape{count, rows.dim, n} : SymShape{rows.dim, n};
  std::vector<ParamSpec> specs{batched(batch.a, m, k), batched(batch.b, Expr(k), n)};
  if (split > 1) specs.push_back(f32[split][sym ? Expr(count * m) : Expr(count * rows.value())][n]);
  else
    for (auto &p : ops::detail::EpilogueEmitter::param_specs(epi, c_shape, f32)) specs.push_back(p);
  const std::size_t n_extras = split > 1 || !epi ? 0 : epi->inputs.size();
  push_symbol_params(specs, matmul_symbols(rows, split > 1 ? nullptr : epi));

  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &params) {
    lang::Tensor a_param = params[0], b_param = params[1], c_param = params[2];
    std::vector<ir::Var> extras;
    for (std::size_t i = 3; i < 3 + n_extras; ++i) extras.push_back(params[i].v);
    ops::detail::EpilogueEmitter out(split > 1 ? nullptr : epi, c_shape, params[2].v, std::move(extras));
    if (sym) attrs.cuda.grid_dim = {ceil_div(n, bn), max(ceil_div(m, bm), 1), split * count};
    else attrs.cuda.grid_dim = {ceil_div(n, bn), ceil_div(rows.value(), bm), split * count};
    Var zb = blockIdx.z / split, zs = blockIdx.z % split; // the product and the k slice
    auto at = [&](const lang::Tensor &t, bool has) {
      return [&t, has, &zb, on = batch.batched()](Expr r, Expr c) { return on && has ? t[zb][r][c] : t[r][c]; };
    };
    auto a = at(a_param, batch.a), b = at(b_param, batch.b);
    attrs.cuda.block_dim = threads;
    if (cfg.min_blocks > 0) attrs.cuda.min_blocks = cfg.min_blocks;

    // The shared buffers of each tile (two with register staging, `stages` with cp.async); a is
    // stored k-major with padded rows.
    const int buffers = stages == 0 ? 2 : stages;
    auto a_layout = strided(std::vector<std::int64_t>{buffers, bk, bm},
                            std::vector<std::int64_t>{std::int64_t(bk) * a_pitch, a_pitch, 1});
    if (stages > 0) attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes();
    lang::Tensor smem_a = stages == 0 ? shared_tensor(f32[2][bk][bm].with_layout(a_layout), "smem_a")
                                      : dynamic_shared_tensor(f32[stages][bk][bm].with_layout(a_layout), 0, "smem_a");
    lang::Tensor smem_b = stages == 0 ? shared_tensor(f32[2][bk][bn], "smem_b")
                                      : dynamic_shared_tensor(f32[stages][bk][bn], stages * bk * a_pitch * 4, "smem_b");
    auto acc = register_tensor(f32[frag_m][frag_n], "acc");
    auto a_frag = register_tensor(f32[frag_m], "a_frag");
    auto b_frag = register_tensor(f32[frag_n], "b_frag");

    Var m0 = blockIdx.y * bm, n0 = blockIdx.x * bn;
    Expr k_base = split > 1 ? Expr(zs * k_slice) : Expr(0);
    // c[row][col] of this block's output: its slice of the workspace under split-k, else
    // through the epilogue
    auto c_store = [&](Expr row, Expr col, Expr v) {
      if (split > 1) c_param[zs][zb * m + row][col] = v;
      else out.store(batch.batched() ? Idx{zb, row, col} : Idx{row, col}, v);
    };
    Var warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // The spatial parts of the c mapping: this thread's warp tile and lane position.
    auto wt = matmul_detail::spatial_task(spatial(cfg.warps_m, cfg.warps_n), warp);
    auto lt = matmul_detail::spatial_task(spatial(cfg.lanes_m, cfg.lanes_n), lane);
    Var row0 = wt[0] * (rm * cfg.lanes_m * tm) + lt[0] * tm; // + ri * lanes_m * tm + ti
    Var col0 = wt[1] * (rn * cfg.lanes_n * tn) + lt[1] * tn; // + rj * lanes_n * tn + tj
    auto row_of = [&](Expr ri, Expr ti) { return row0 + ri * (cfg.lanes_m * tm) + ti; };
    auto col_of = [&](Expr rj, Expr tj) { return col0 + rj * (cfg.lanes_n * tn) + tj; };

    // One k step on buffer `buf`: the thread's fragments of a and b (16- or 8-byte shared loads
    // of thread_m / thread_n contiguous floats), then frag_m x frag_n FMAs.
    auto load_frag = [&](const lang::Tensor &frag, int reps, int per, auto &&smem_at) {
      const int vec = per % 4 == 0 ? 4 : per % 2 == 0 ? 2 : 1;
      for_(repeat(reps, per / vec).on(0), [&](Expr r, Expr v) {
        if (vec == 1) frag[r * per + v] = smem_at(r, v);
        else load_vector(frag[r * per + v * vec], smem_at(r, v * vec), vec * 4);
      });
    };
    auto compute = [&](Expr buf) {
      for_(range(bk).unroll(), [&](Var kk) {
        load_frag(a_frag, rm, tm, [&](Expr ri, Expr ti) { return smem_a[buf][kk][row_of(ri, ti)]; });
        load_frag(b_frag, rn, tn, [&](Expr rj, Expr tj) { return smem_b[buf][kk][col_of(rj, tj)]; });
        for_(grid(frag_m, frag_n).unroll(), [&](Var i, Var j) { acc[i][j] += a_frag[i] * b_frag[j]; });
      });
    };
    for_(grid(frag_m, frag_n).unroll(), [&](Var i, Var j) { acc[i][j] = 0.0f; });

    if (stages == 0) {
      // Register staging: global -> registers (the next tile, during the computation) ->
      // shared. a's tile (bm x bk) by repeat(a_rounds, 1) * spatial(load_rows, bk): a warp reads
      // 32 / bk whole rows of bk floats. b's tile (bk x bn) by repeat(1, b_rounds) *
      // spatial(bk, load_rows): a warp reads 32 consecutive floats of a row.
      const int load_rows = threads / bk; // rows of a (cols of b) loaded per round
      const int a_rounds = bm / load_rows, b_rounds = bn / load_rows;
      auto a_next = register_tensor(f32[a_rounds], "a_next");
      auto b_next = register_tensor(f32[b_rounds], "b_next");
      auto load_a = [&](Expr k0) {
        for_(repeat(a_rounds, 1).on(0), [&](Expr r, Expr) {
          for_(spatial(load_rows, bk).on(threadIdx.x), [&](Expr i, Expr kk) {
            Expr row = m0 + r * load_rows + i, col = k0 + kk;
            Expr ok = true;
            if (guard_m) ok = ok && row < m;
            if (guard_k) ok = ok && col < k;
            if (guard_m || guard_k) {
              a_next[r] = 0.0f;
              if_(ok, [&] { a_next[r] = a(row, col); });
            } else {
              a_next[r] = a(row, col);
            }
          });
        });
      };
      auto load_b = [&](Expr k0) {
        for_(repeat(1, b_rounds).on(0), [&](Expr, Expr r) {
          for_(spatial(bk, load_rows).on(threadIdx.x), [&](Expr kk, Expr j) {
            Expr row = k0 + kk, col = n0 + r * load_rows + j;
            Expr ok = true;
            if (guard_k) ok = ok && row < k;
            if (guard_n) ok = ok && col < n;
            if (guard_k || guard_n) {
              b_next[r] = 0.0f;
              if_(ok, [&] { b_next[r] = b(row, col); });
            } else {
              b_next[r] = b(row, col);
            }
          });
        });
      };
      // Registers -> shared buffer `buf` (a transposed).
      auto store_tiles = [&](Expr buf) {
        for_(repeat(a_rounds, 1).on(0), [&](Expr r, Expr) {
          for_(spatial(load_rows, bk).on(threadIdx.x),
               [&](Expr i, Expr kk) { smem_a[buf][kk][r * load_rows + i] = a_next[r]; });
        });
        for_(repeat(1, b_rounds).on(0), [&](Expr, Expr r) {
          for_(spatial(bk, load_rows).on(threadIdx.x),
               [&](Expr kk, Expr j) { smem_b[buf][kk][r * load_rows + j] = b_next[r]; });
        });
      };
      load_a(k_base);
      load_b(k_base);
      store_tiles(Expr(0));
      syncthreads();
      for_(range(k_tiles), [&](Var kt) {
        Var buf = kt % 2;
        if (k_tiles > 1) {
          if_(kt + 1 < k_tiles, [&] {
            load_a(k_base + (kt + 1) * bk);
            load_b(k_base + (kt + 1) * bk);
          });
        }
        compute(buf);
        if (k_tiles > 1) {
          if_(kt + 1 < k_tiles, [&] { store_tiles(1 - buf); });
        }
        syncthreads();
      });
    } else {
      // cp.async pipeline: tile kt + stages - 1 is in flight while the block computes tile kt.
      // a (bm x bk) goes by 4-byte copies, each to its transposed place: element e of a round
      // is (chunk, row, kk) of the tile viewed as [bk / kc][bm][kc] with kc = 8 (when it
      // divides bk), so that a warp reads 4 rows of 32 bytes and its 32 stores
      // smem_a[kk][row] fall in distinct banks (a_pitch = bm + 4). b (bk x bn) goes by
      // 16-byte copies (4-byte ones when n is not a multiple of 4), a warp along a row.
      const int kc = bk % 8 == 0 ? 8 : bk;
      const int vb = n % 4 == 0 && bn % 4 == 0 ? 4 : 1; // floats per copy of b
      const int a_elems = bm * bk, b_chunks = bk * bn / vb;
      // Copy r of a thread takes element e = tid + r * threads. When every copy's (row, col) is
      // the first copy's plus constants for all threads (the usual tilings), the copies are
      // written as one per-thread base plus constants, which the compiler folds into immediate
      // offsets of one address per tile (instead of ~4 integer instructions per copy).
      auto copies = [&](int elems, auto &&place) {
        std::vector<std::pair<int, int>> offsets;
        for (int r = 0; r * threads < elems; ++r) {
          if ((r + 1) * threads > elems) return std::vector<std::pair<int, int>>{};
          auto [row0, col0] = place(0);
          auto [row, col] = place(r * threads);
          for (int t = 1; t < threads; ++t) {
            auto [tr0, tc0] = place(t);
            auto [tr, tc] = place(t + r * threads);
            if (tr - tr0 != row - row0 || tc - tc0 != col - col0) return std::vector<std::pair<int, int>>{};
          }
          offsets.emplace_back(row - row0, col - col0);
        }
        return offsets;
      };
      auto a_place = [&](int e) { return std::pair<int, int>{e / kc % bm, e / (kc * bm) * kc + e % kc}; };
      auto b_place = [&](int e) { return std::pair<int, int>{e / (bn / vb), e % (bn / vb) * vb}; };
      const auto a_offsets = copies(a_elems, a_place), b_offsets = copies(b_chunks, b_place);
      Var a_row = threadIdx.x / kc % bm, a_kk = threadIdx.x / (kc * bm) * kc + threadIdx.x % kc;
      Var b_row = threadIdx.x / (bn / vb), b_col = threadIdx.x % (bn / vb) * vb;
      const int a_ld = k, b_ld = n; // row pitches of a and b
      auto load_tiles = [&](Expr buf, Expr k0) {
        if (!a_offsets.empty() && !guard_m && !guard_k) { // pointers plus constant offsets
          Expr ga = a(m0 + a_row, k0 + a_kk).address(), sa = smem_a[buf][a_kk][a_row].address();
          for (auto [dr, dk] : a_offsets) cp_async(sa + (dk * a_pitch + dr), ga + (std::int64_t(dr) * a_ld + dk), 4);
        } else
        for (int r = 0; r * threads < a_elems; ++r) {
          Expr e = threadIdx.x + r * threads;
          Expr row = e / kc % bm, kk = e / (kc * bm) * kc + e % kc;
          if (!a_offsets.empty()) row = a_row + a_offsets[r].first, kk = a_kk + a_offsets[r].second;
          auto copy = [&] {
            Expr grow = m0 + row, gcol = k0 + kk;
            if (!guard_m && !guard_k) return cp_async(smem_a[buf][kk][row], a(grow, gcol), 4);
            Expr ok = true;
            if (guard_m) ok = ok && grow < m;
            if (guard_k) ok = ok && gcol < k;
            cp_async(smem_a[buf][kk][row], a(guard_m ? min(grow, m - 1) : grow, guard_k ? min(gcol, k - 1) : gcol), 4,
                     select(ok, 4, 0));
          };
          if ((r + 1) * threads > a_elems) if_(e < a_elems, copy);
          else copy();
        }
        if (!b_offsets.empty() && !guard_k && !guard_n) {
          Expr gb = b(k0 + b_row, n0 + b_col).address(), sb = smem_b[buf][b_row][b_col].address();
          for (auto [dr, dc] : b_offsets) cp_async(sb + (dr * bn + dc), gb + (std::int64_t(dr) * b_ld + dc), vb * 4);
        } else
        for (int r = 0; r * threads < b_chunks; ++r) {
          Expr e = threadIdx.x + r * threads;
          Expr row = e / (bn / vb), col = e % (bn / vb) * vb;
          if (!b_offsets.empty()) row = b_row + b_offsets[r].first, col = b_col + b_offsets[r].second;
          auto copy = [&] {
            Expr grow = k0 + row, gcol = n0 + col;
            if (!guard_k && !guard_n) return cp_async(smem_b[buf][row][col], b(grow, gcol), vb * 4);
            Expr ok = true;
            if (guard_k) ok = ok && grow < k;
            if (guard_n) ok = ok && gcol < n;
            cp_async(smem_b[buf][row][col], b(guard_k ? min(grow, k - 1) : grow, guard_n ? min(gcol, n - vb) : gcol),
                     vb * 4, select(ok, vb * 4, 0));
          };
          if ((r + 1) * threads > b_chunks) if_(e < b_chunks, copy);
          else copy();
        }
      };
      if (cfg.pipeline && bk % 2 == 0) { // (an even bk: tile kt + 1's first step takes slot 0)
        // All `stages` buffers hold tiles in flight. The fragments of step kk + 1 are read from
        // shared memory while the FMAs of step kk run; at the last step of a tile the barrier, the
        // copies of tile kt + stages (into the buffer just read) and the first fragments of tile
        // kt + 1 come before that step's FMAs, which hide their latency.
        for (int s = 0; s < stages; ++s) {
          if (s < k_tiles) load_tiles(Expr(s), k_base + s * bk);
          cp_async_commit_group();
        }
        const lang::Tensor a_fr[2] = {a_frag, register_tensor(f32[frag_m], "a_frag_1")};
        const lang::Tensor b_fr[2] = {b_frag, register_tensor(f32[frag_n], "b_frag_1")};
        auto load_frags = [&](int slot, Expr buf, int kk) {
          load_frag(a_fr[slot], rm, tm, [&](Expr ri, Expr ti) { return smem_a[buf][kk][row_of(ri, ti)]; });
          load_frag(b_fr[slot], rn, tn, [&](Expr rj, Expr tj) { return smem_b[buf][kk][col_of(rj, tj)]; });
        };
        auto fmas = [&](int slot) {
          for_(grid(frag_m, frag_n).unroll(), [&](Var i, Var j) { acc[i][j] += a_fr[slot][i] * b_fr[slot][j]; });
        };
        cp_async_wait_group(stages - 1); // tile 0 has landed
        syncthreads();
        load_frags(0, Expr(0), 0);
        Var rd = 0; // the buffer of tile kt (kt % stages)
        for_(range(k_tiles), [&](Var kt) {
          for (int kk = 0; kk + 1 < bk; ++kk) {
            load_frags((kk + 1) % 2, rd, kk + 1);
            fmas(kk % 2);
          }
          cp_async_wait_group(stages - 2); // tile kt + 1 has landed (for this thread) ...
          syncthreads();                   // ... for all threads, and all have read tile kt
          Var next = kt + stages;
          if_(next < k_tiles, [&] { load_tiles(rd, k_base + next * bk); });
          cp_async_commit_group(); // an empty group at the tail keeps the count uniform
          rd = select(rd == stages - 1, 0, rd + 1);
          load_frags(0, rd, 0); // tile kt + 1's first step (unused after the last tile)
          fmas((bk - 1) % 2);
        });
      } else {
        for (int s = 0; s < stages - 1; ++s) { // prologue: the first stages - 1 tiles in flight
          if (s < k_tiles) load_tiles(Expr(s), k_base + s * bk);
          cp_async_commit_group();
        }
        Var rd = 0, wr = stages - 1; // the buffers of tiles kt and kt + stages - 1 (kt % stages, ...)
        for_(range(k_tiles), [&](Var kt) {
          cp_async_wait_group(stages - 2); // tile kt has landed (for this thread) ...
          syncthreads();                   // ... for all threads; buffer (kt - 1) % stages is free
          Var next = kt + (stages - 1);
          if_(next < k_tiles, [&] { load_tiles(wr, k_base + next * bk); });
          cp_async_commit_group(); // an empty group at the tail keeps the count uniform
          compute(rd);
          wr = rd;
          rd = select(rd == stages - 1, 0, rd + 1);
        });
      }
      cp_async_wait_all();
    }

    // Registers -> c, element by element (16-byte stores of the accumulators made ptxas spill
    // at the 128-register cap of 64 x 128 x 16 and 128 x 128 x 16 tiles).
    for_(repeat(rm, tm).on(0), [&](Expr ri, Expr ti) {
      for_(repeat(rn, tn).on(0), [&](Expr rj, Expr tj) {
        Expr row = m0 + row_of(ri, ti), col = n0 + col_of(rj, tj);
        Expr ok = true;
        if (guard_m) ok = ok && row < m;
        if (guard_n) ok = ok && col < n;
        auto store = [&] { c_store(row, col, acc[ri * tm + ti][rj * tn + tj]); };
        if (guard_m || guard_n) if_(ok, store);
        else store();
      });
    });
  });
}

/// Adds kernel `name`: c[i][j] = sum_z parts[z][i][j] for parts: f32[s][m][n], c: f32[m][n];
/// with an epilogue (x of m x n elements), c is replaced by its output and extra inputs. Symbolic
/// rows: the symbols (matmul_symbols) follow as i32 parameters.
inline void add_sum_kernel(lang::ScriptModule &mod, const std::string &name, int s, const MatmulRows &rows, int n,
                           const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  const int threads = 256;
  const bool sym = rows.symbolic();
  const Dim total_dim = rows.dim * Dim(n);
  const Expr total = sym ? dim_expr(total_dim) : Expr(std::int64_t(rows.value()) * n);
  const bool by4 = sym ? n % 4 == 0 : (std::int64_t(rows.value()) * n) % 4 == 0;
  std::vector<ParamSpec> specs{f32[s][total]};
  for (auto &p : ops::detail::EpilogueEmitter::param_specs(epi, SymShape{total_dim}, f32)) specs.push_back(p);
  push_symbol_params(specs, matmul_symbols(rows, epi));
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &params) {
    lang::Tensor parts = params[0];
    std::vector<ir::Var> extras;
    for (std::size_t i = 2; i < 2 + (epi ? epi->inputs.size() : 0); ++i) extras.push_back(params[i].v);
    ops::detail::EpilogueEmitter out(epi, SymShape{total_dim}, params[1].v, std::move(extras));
    attrs.cuda.block_dim = threads;
    // The grid for `items` per thread.
    auto grid_for = [&](int items) -> Operand {
      if (sym) return max(ceil_div(total, threads * items), 1);
      return int(ceil_div(std::int64_t(rows.value()) * n / items, std::int64_t(threads)));
    };
    if (!by4) {
      attrs.cuda.grid_dim = grid_for(1);
      Var i = blockIdx.x * threads + threadIdx.x;
      if_(i < total, [&] {
        Var sum = parts[0][i];
        for_(range(1, s).unroll(), [&](Var z) { sum += parts[z][i]; });
        out.store({i}, sum);
      });
      return;
    }
    // Four elements per thread, by 16-byte loads (and stores without an epilogue).
    attrs.cuda.grid_dim = grid_for(4);
    auto sum = register_tensor(f32[4], "sum");
    auto part = register_tensor(f32[4], "part");
    Var i = (blockIdx.x * threads + threadIdx.x) * 4;
    if_(i < total, [&] {
      load_vector(sum, parts[0][i], 16);
      for_(range(1, s).unroll(), [&](Var z) {
        load_vector(part, parts[z][i], 16);
        for_(range(4).unroll(), [&](Var e) { sum[e] += part[e]; });
      });
      if (epi == nullptr) store_vector(out.at({i}), sum, 16);
      else for_(range(4).unroll(), [&](Var e) { out.store({i + e}, sum[e]); });
    });
  });
}

/// A script module for these sizes: kernel "matmul_f32" (and "sum_slices" under split-k). Without
/// split-k, build() it and call it as cm(a, b, c); MatmulF32 runs either form.
inline lang::ScriptModule matmul_f32_module(const MatmulRows &m, int n, int k, const MatmulF32Config &cfg = {},
                                            const MatmulBatch &batch = {}, const Epilogue *epi = nullptr) {
  auto mod = lang::script_module(str_cat("matmul_f32_", m.symbolic() ? "rows" : m.str(), "x", n, "x", k,
                                         epi ? "_epilogue" : ""));
  add_matmul_f32_kernel(mod, "matmul_f32", m, n, k, cfg, batch, epi);
  if (cfg.split_k > 1) add_sum_kernel(mod, "sum_slices", cfg.split_k, MatmulRows(Dim(batch.count) * m.dim), n, epi);
  return mod;
}

/// The tile shapes the heuristic chooses among, biggest first, all with 4 x 4 sub-tiles per lane,
/// block_k 16 and cp.async with 3 stages: 128x128 (256 threads, 8 x 8 accumulators each, 2 blocks
/// per SM), 64x128 (128 threads, 8 x 8, 4 blocks per SM), 64x64 (128 threads, 8 x 4). (128x64
/// x 16, 8 x 8 per thread, spills at the 128-register cap: 16 4-byte copies of a per tile.)
inline const std::vector<MatmulF32Config> &matmul_f32_tiles() {
  static const std::vector<MatmulF32Config> tiles = [] {
    std::vector<MatmulF32Config> t{
        {4, 2, 2, 2, 4, 8, 4, 4, 16, 2}, // 128 x 128
        {2, 2, 2, 2, 4, 8, 4, 4, 16, 4}, // 64 x 128
        {2, 2, 2, 1, 4, 8, 4, 4, 16, 4}, // 64 x 64
    };
    for (auto &c : t) c.stages = 3;
    return t;
  }();
  return tiles;
}

/// The multiply-adds of the busiest SM when the blocks of `c` (tiles x split-k slices, whole
/// tiles counted) are spread evenly over `num_sms` SMs: ceil(blocks / SMs) blocks of
/// block_m x block_n x k_slice. Against m n k / SMs it measures the wave quantization.
inline double matmul_f32_busiest_sm_work(const MatmulF32Config &c, int m, int n, int k, int num_sms) {
  std::int64_t tiles = std::int64_t(lang::ceil_div(m, c.block_m())) * lang::ceil_div(n, c.block_n());
  std::int64_t blocks = tiles * c.split_k;
  int k_slice = lang::ceil_div(lang::ceil_div(k, c.split_k), c.block_k) * c.block_k;
  return double((blocks + num_sms - 1) / num_sms) * c.block_m() * c.block_n() * k_slice;
}

/// A cost model of an m x n x k product with tiling `c` on `num_sms` SMs, in microseconds. The
/// busiest SM runs ceil(blocks / SMs) blocks, min_blocks at a time: each round of j blocks takes
/// their multiply-adds over the SM's rate, which is the rate of 128 x 128 x 16 tiles with 16 warps
/// resident (0.1865 M multiply-adds per us: 47.7 TFLOP/s on 4096^3 over 132 SMs of an H200) times
/// a factor for the tile (fewer FMAs per shared load and per barrier: 64 x 128 0.98, 128 x 64
/// 0.95, 8 x 4 accumulators per thread 0.8, block_k 8 0.96) and one for the warps of the round
/// (latency hiding: 12 or more 1, 8 0.9, fewer 0.75), plus 1 us per round (the pipeline's fill
/// and the epilogue). Split-k adds the sum kernel: a launch and a pass over the slices and the
/// output at 2.5 TB/s. Fitted to the H200 sweep in docs/notes/matmul_f32.md (10% RMS error over
/// its 180 tilings; its pick is within 3% of the best measured on each shape).
inline double matmul_f32_cost_us(const MatmulF32Config &c, int m, int n, int k, int num_sms) {
  const double mac_per_us = 0.1865e6;
  const int frag = c.repeat_m * c.thread_m * c.repeat_n * c.thread_n;
  double shape = frag < 64 ? 0.8 : c.block_m() * c.block_n() >= 128 * 128 ? 1.0 : c.block_m() < c.block_n() ? 0.98 : 0.95;
  if (c.block_k < 16) shape *= 0.96;
  std::int64_t tiles = std::int64_t(lang::ceil_div(m, c.block_m())) * lang::ceil_div(n, c.block_n());
  std::int64_t per_sm = (tiles * c.split_k + num_sms - 1) / num_sms;
  const std::int64_t resident = std::max(1, c.min_blocks);
  int k_slice = lang::ceil_div(lang::ceil_div(k, c.split_k), c.block_k) * c.block_k;
  const double block_us = double(c.block_m()) * c.block_n() * k_slice / (mac_per_us * shape);
  auto occupancy = [&](std::int64_t blocks) {
    std::int64_t warps = blocks * c.warps_m * c.warps_n;
    return warps >= 12 ? 1.0 : warps >= 8 ? 0.9 : 0.75;
  };
  double t = double(per_sm / resident) * resident * block_us / occupancy(resident);
  if (std::int64_t rest = per_sm % resident) t += double(rest) * block_us / occupancy(rest);
  t += 1.0 * double((per_sm + resident - 1) / resident); // per round: filling the pipeline, the epilogue
  if (c.split_k > 1) t += 4.0 + double(c.split_k + 1) * m * n * 4 / 2.5e6;
  return t;
}

/// A tiling for an m x n x k product on a GPU with `num_sms` multiprocessors: the tile shape of
/// matmul_f32_tiles() and the split-k (1, 2, 3, 4, 6, 8, 16; each slice at least 64 of k; only
/// the 64-row tiles split: 128 x 128 with split-k never beat them in the H200 sweeps, e.g. 66 us
/// against 59 on 1024^3) with the least matmul_f32_cost_us (ties go to the earlier tile and the
/// smaller split); block_k 8
/// instead of 16 when n is not a multiple of 4 (b then goes by 4-byte copies, twice as many per
/// tile: 4095x4097x1023 ran 10% slower with 16); the fragment pipeline unless the k slices end
/// in a partial tile (guarded copies).
inline MatmulF32Config matmul_f32_heuristic_config(int m, int n, int k, int num_sms) {
  MatmulF32Config best = matmul_f32_tiles()[0];
  double best_cost = 1e300;
  for (const auto &tile : matmul_f32_tiles())
    for (int split : {1, 2, 3, 4, 6, 8, 16}) {
      if (split > 1 && k / split < 64) break;
      if (split > 1 && tile.block_m() * tile.block_n() >= 128 * 128) break; // never won with split-k
      MatmulF32Config c = tile;
      c.split_k = split;
      if (n % 4 != 0) c.block_k = 8;
      const int k_slice = lang::ceil_div(lang::ceil_div(k, split), c.block_k) * c.block_k;
      if (split > 1 && k_slice * (split - 1) >= k) continue; // the last slices would be empty
      c.pipeline = k_slice * split == k; // guarded k tiles ran 2-6% slower pipelined (1024^3 split 3, 4095x4097x1023)
      double cost = matmul_f32_cost_us(c, m, n, k, num_sms);
      if (cost < best_cost * 0.999) best = c, best_cost = cost;
    }
  return best;
}

/// A built f32 matmul for fixed sizes: f(a, b, c) computes c = a @ b (a: [m, k], b: [k, n],
/// c: [m, n], f32 tensors on cuda), with split-k through a workspace when the config asks. With
/// symbolic rows m (matmul_rows.hpp), one build serves every value: each call passes the symbols'
/// values, and the workspace is kept per value of m.
class MatmulF32 {
public:
  MatmulF32(const MatmulRows &m, int n, int k, const MatmulF32Config &cfg = {}, const MatmulBatch &batch = {},
            std::shared_ptr<const Epilogue> epi = nullptr)
      : cfg_(cfg), epi_(epi), rows_(m), n_(n), batch_(batch),
        main_symbols_(matmul_symbols(m, cfg.split_k > 1 ? nullptr : epi.get())),
        sum_symbols_(matmul_symbols(MatmulRows(Dim(batch.count) * m.dim), epi.get())),
        cm_(matmul_f32_module(m, n, k, cfg, batch, epi.get()).build()) {}
  /// Launches the kernels on the current stream.
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c) const { (*this)(a, b, c, {}); }
  /// With an epilogue: c is its output (viewed with c's size when it keeps the layout), `extras`
  /// its other inputs. `values`: the symbols' values (symbolic rows).
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c, const std::vector<Tensor> &extras,
                  const SymbolValues &values = {}) const {
    const std::int64_t m = rows_.at(values);
    const Shape c_shape = batch_.batched() ? Shape{batch_.count, m, n_} : Shape{m, n_};
    Shape anchor = c_shape;
    if (cfg_.split_k > 1) anchor = {shape_numel(c_shape)};
    Tensor out = epilogue_out_arg(epi_.get(), c, anchor);
    std::vector<LaunchArg> args{a, b};
    Tensor workspace;
    if (cfg_.split_k > 1) {
      workspace = workspace_.get("ws", m, [&] {
        return hidet::empty({cfg_.split_k, std::int64_t(batch_.count) * m, n_}, hidet::f32, "cuda");
      });
      args.emplace_back(workspace);
    } else {
      args.emplace_back(out);
      for (const auto &t : extras) args.emplace_back(t);
    }
    push_symbol_args(args, main_symbols_, values);
    cm_["matmul_f32"].launch(args);
    if (cfg_.split_k == 1) return;
    Tensor parts = workspace.reshape({cfg_.split_k, shape_numel(c_shape)});
    std::vector<LaunchArg> sum_args{parts, out};
    for (const auto &t : extras) sum_args.emplace_back(t);
    push_symbol_args(sum_args, sum_symbols_, values);
    cm_["sum_slices"].launch(sum_args);
  }
  const MatmulF32Config &config() const { return cfg_; }
  const CompiledModule &module() const { return cm_; }

private:
  MatmulF32Config cfg_;
  std::shared_ptr<const Epilogue> epi_;
  MatmulRows rows_;
  int n_;
  MatmulBatch batch_;
  std::vector<std::string> main_symbols_, sum_symbols_; // the symbol parameters of each kernel
  CompiledModule cm_;
  mutable RowBuffers workspace_; // the split-k workspace, per value of m
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
