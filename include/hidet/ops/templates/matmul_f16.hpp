// A tensor-core matrix multiplication for f16 and bf16 in Hidet Script, with task mappings:
// c[m][n] = a[m][k] @ b[k][n], all row-major, f32 accumulation (f16 with acc_f16: reduce
// precision f16), output in the input dtype.
// Any m, n, k: partial tiles are zero-filled by cp.async.
//
// Structure (defaults: 128 x 128 x 32 block tile, 4 warps of 64 x 64, 3 stages):
//  * Each block computes a block_m x block_n tile of c. Its warps own warp_m x warp_n sub-tiles
//    through spatial(warps_m, warps_n); a warp computes its sub-tile as (warp_m / 16) x
//    (warp_n / 8) mma.sync.m16n8k16 tiles, i.e. the mapping of c's elements to the warps is
//    spatial(warps_m, warps_n) * repeat(warp_m / 16, warp_n / 8) * (one m16n8 mma tile),
//    with f32 accumulators in registers (4 per lane per mma tile; f16 ones with acc_f16).
//  * Global -> shared: cp.async of 16 bytes (8 halves) per thread and copy, the copies of a tile
//    spread over the threads by auto_map({rows, vectors per row}, threads). Partial vectors and
//    rows past the matrix read fewer bytes (src_bytes) and the rest is zero-filled, so no tile
//    ever needs a branch in the inner loop. 16-byte copies need row starts aligned to 16 bytes:
//    the kernel's a and b parameters have leading dimensions padded to a multiple of 8
//    (matmul_f16_lda/ldb); MatmulF16 pads the inputs with a copy kernel when k or n is not a
//    multiple of 8 (the padding itself is never read).
//  * A pipeline of `stages` shared buffers: tiles kt+1 .. kt+stages-1 are in flight (one
//    cp.async commit group per tile) while the warps compute on tile kt; cp_async_wait_group(
//    stages - 2) plus one barrier per k tile make tile kt visible and free the buffer that the
//    next copy overwrites (it was read in the previous iteration, before the barrier).
//  * Shared -> registers: ldmatrix.x4 loads a 16 x 16 A fragment; ldmatrix.x4.trans loads the B
//    fragments of two n8 tiles from the k-major b tile (the .trans delivers the column-major
//    operand that mma.sync wants). Tiles are stored with XOR swizzles of their 16-byte vectors
//    (swizzle(row_major(rows, vectors), ...) * row_major(1, 8)) so that the 8 row addresses of one
//    ldmatrix phase fall into 8 distinct bank groups: conflict-free without padding.
//  * Epilogue: accumulators converted to f16/bf16 and stored as packed pairs (4 bytes) when n is
//    even.
//  * Few rows (one row tile of constant rows, a decoding step's projections, bound by b's
//    bytes): before its grid_dependency_wait() (lang/cuda.hpp) each block prefetches into the L2
//    the rows of b its prologue's tiles read, while the kernel before it may still run.
#pragma once

#include <string>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/templates/matmul_batch.hpp"
#include "hidet/ops/templates/matmul_rows.hpp"
#include "hidet/ops/templates/split_reduce.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Tiling parameters of the tensor-core matmul. block_m = warps_m * warp_m, block_n = warps_n *
/// warp_n; the block has warps_m * warps_n warps.
struct MatmulF16Config {
  int warps_m = 2, warps_n = 2; ///< warps of a block
  int warp_m = 64, warp_n = 64; ///< sub-tile of one warp (multiples of 16)
  int block_k = 32;             ///< k extent of one shared tile (16, 32 or 64)
  int stages = 3;               ///< shared-memory buffers of the cp.async pipeline (2..4)
  int min_blocks = 1;           ///< __launch_bounds__ blocks per SM (0: none)
  bool acc_f16 = false;         ///< f16 accumulators (f16 inputs only; reduce precision f16)
  /// k slices, each a block (few rows: a batch of decoding steps, where the tiles alone leave most
  /// SMs idle); each writes its f32 partial tile and the block that completes a tile's count adds
  /// the slices in order and stores (in-kernel fixup: no second kernel).
  int split_k = 1;

  int block_m() const { return warps_m * warp_m; }
  int block_n() const { return warps_n * warp_n; }
  int threads() const { return warps_m * warps_n * 32; }
  /// Dynamic shared memory of the pipeline in bytes.
  int smem_bytes() const { return stages * (block_m() + block_n()) * block_k * 2; }
  /// "128x128x32 (warps 2x2 of 64x64, 3 stages)"
  std::string str() const {
    return str_cat(block_m(), "x", block_n(), "x", block_k, " (warps ", warps_m, "x", warps_n, " of ", warp_m,
                   "x", warp_n, ", ", stages, " stages", acc_f16 ? ", f16 accumulation" : "",
                   split_k > 1 ? str_cat(", split-k ", split_k, " summed in-kernel") : std::string(), ")");
  }
};

/// Throws ValueError naming the config when it cannot be built.
inline void check_matmul_f16_config(const MatmulF16Config &c) {
  auto bad = [&](const std::string &why) { throw ValueError(str_cat("matmul_f16 config ", c.str(), ": ", why)); };
  if (c.warps_m <= 0 || c.warps_n <= 0) bad("warps_m and warps_n must be positive");
  if (c.warp_m <= 0 || c.warp_m % 16 || c.warp_n <= 0 || c.warp_n % 16)
    bad("warp_m and warp_n must be positive multiples of 16 (m16n8k16 tiles, B loaded two n8 tiles at a time)");
  if (c.block_k != 16 && c.block_k != 32 && c.block_k != 64) bad("block_k must be 16, 32 or 64");
  if (c.stages < 2 || c.stages > 4) bad(str_cat("stages is ", c.stages, "; use 2, 3 or 4"));
  if (c.threads() > 1024) bad(str_cat(c.threads(), " threads per block; CUDA allows 1024"));
  if (c.smem_bytes() > 227 * 1024)
    bad(str_cat(c.smem_bytes(), " bytes of shared memory; an H100 block may use 232448"));
  if (c.split_k < 1 || c.split_k > 64) bad("split_k must be in [1, 64]");
  int vectors_b = c.block_n() / 8;
  if ((c.block_m() * c.block_k / 8) % c.threads() || (c.block_k * vectors_b) % c.threads())
    bad(str_cat("the ", c.threads(), " threads must copy the tiles in whole rounds of 16-byte vectors"));
}

/// The k tiles of each slice and the number of slices of config `c` for k: split_k, or fewer where
/// the slices would run past k.
inline std::pair<int, int> matmul_f16_slices(int k, const MatmulF16Config &c) {
  const int k_tiles = lang::ceil_div(k, c.block_k), per = lang::ceil_div(k_tiles, std::max(1, c.split_k));
  return {per, lang::ceil_div(k_tiles, per)};
}

/// Leading dimension of the kernel's a parameter: k rounded up to a multiple of 8 halves.
inline int matmul_f16_lda(int k) { return (k + 7) / 8 * 8; }
/// Leading dimension of the kernel's b parameter: n rounded up to a multiple of 8 halves.
inline int matmul_f16_ldb(int n) { return (n + 7) / 8 * 8; }

namespace matmul_f16_detail {
/// A shared tile of `rows` x `cols` halves in `stages` buffers, 16-byte vectors XOR-swizzled so
/// that any 8 consecutive rows at one vector column lie in 8 distinct 128-byte bank groups.
inline ir::Layout swizzled_tile(int stages, int rows, int cols) {
  using namespace hidet::lang;
  int vectors = cols / 8;
  int log_step = vectors >= 8 ? 0 : vectors == 4 ? 1 : 2; // rows sharing a 128-byte line
  return swizzle(row_major(stages, rows, vectors), 2, 1, log_step) * row_major(1, 1, 8);
}
/// The coordinates of the single task of `worker` in a spatial mapping (emits no statement).
inline std::vector<lang::Expr> spatial_task(const lang::TaskMapping &m, const lang::Expr &worker) {
  std::vector<lang::Expr> out;
  lang::for_(m.on(worker, -1), [&](lang::Expr i, lang::Expr j) { out = {i, j}; });
  return out;
}
inline void require_half(DataType d, const std::string &what) {
  if (!d.is_half()) throw ValueError(str_cat(what, ": dtype is ", d, "; the tensor-core matmul takes f16 or bf16"));
}
/// Stores the accumulators (lo, hi) of anchor elements (row, col) and (row, col + 1) of an m x n
/// f16/bf16 (or f32) product (idx(row, col) gives the full anchor index) through the epilogue
/// `out`: one packed 4-byte store of halves through the u32 register `pair` (an 8-byte store of
/// f32) when n is even and the epilogue keeps the layout (the pair is then aligned), else two
/// element stores; guarded where a tile can
/// overhang m or n (the epilogue reads its inputs only inside the guard).
template <class IdxOf>
void store_pair(const ops::detail::EpilogueEmitter &out, const IdxOf &idx, const lang::Expr &row, const lang::Expr &col,
                const lang::Expr &lo, const lang::Expr &hi, const lang::Expr &m, int n, bool guard_m, bool guard_n, DataType dt,
                const lang::Tensor &pair) {
  using namespace hidet::lang;
  if (n % 2 == 0 && out.keeps_layout() && (dt.is_half() || dt == dtypes::f32)) {
    auto store = [&] {
      if (dt == dtypes::f32) { // one 8-byte store
        auto pair_f32 = register_tensor(f32[2], "pair_f32");
        pair_f32[0] = out.value(idx(row, col), lo);
        pair_f32[1] = out.value(idx(row, col + 1), hi);
        return store_vector(out.at(idx(row, col)), pair_f32, 8);
      }
      pair[0] = half2_pack(out.value(idx(row, col), lo), out.value(idx(row, col + 1), hi), dt);
      store_vector(out.at(idx(row, col)), pair, 4);
    };
    Expr ok = true;
    if (guard_m) ok = ok && row < m;
    if (guard_n) ok = ok && col < n;
    if (guard_m || guard_n) if_(ok, store);
    else store();
  } else {
    const Expr *v[2] = {&lo, &hi};
    for (int x = 0; x < 2; ++x) {
      Expr ok = true;
      if (guard_m) ok = ok && row < m;
      if (guard_n || n % 2) ok = ok && col + x < n;
      if (guard_m || guard_n || n % 2) if_(ok, [&] { out.store(idx(row, col + x), *v[x]); });
      else out.store(idx(row, col + x), *v[x]);
    }
  }
}
} // namespace matmul_f16_detail

/// Adds kernel `name`: c = a @ b for a: dt[m][matmul_f16_lda(k)], b: dt[k][matmul_f16_ldb(n)],
/// c: dt[m][n] (row-major, dt f16 or bf16; only the first k / n columns of a / b are read). With
/// a batch, each operand that has it gets a leading dimension of batch.count, and blockIdx.z
/// picks the product. With an epilogue `epi` (x of c's size), c is replaced by the epilogue's
/// output and extra inputs (EpilogueEmitter::param_specs). With k slices (cfg.split_k, see
/// matmul_f16_slices), ws: f32[slices][batch * m][n] and counters: i32[batch * row tiles * column
/// tiles] follow (zero before the first launch; left a multiple of the slices). With symbolic rows
/// m (matmul_rows.hpp), the symbols (matmul_symbols) follow as i32 parameters.
inline void add_matmul_f16_kernel(lang::ScriptModule &mod, const std::string &name, const MatmulRows &rows, int n, int k,
                                  DataType dt, const MatmulF16Config &cfg = {}, const MatmulBatch &batch = {},
                                  const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  matmul_f16_detail::require_half(dt, str_cat("matmul_f16 '", name, "'"));
  check_matmul_f16_config(cfg);
  if (cfg.acc_f16 && dt != dtypes::f16)
    throw ValueError(str_cat("matmul_f16 '", name, "': f16 accumulation needs f16 inputs, got ", dt,
                             " (bf16 products accumulate in f32)"));
  if ((!rows.symbolic() && rows.value() <= 0) || n <= 0 || k <= 0)
    throw ValueError(str_cat("matmul_f16 '", name, "': m, n, k must be positive, got ", rows.str(), ", ", n, ", ", k));
  const Expr m = rows.expr();
  const bool sym = rows.symbolic();
  const int bm = cfg.block_m(), bn = cfg.block_n(), bk = cfg.block_k, threads = cfg.threads();
  const int stages = cfg.stages, lda = matmul_f16_lda(k), ldb = matmul_f16_ldb(n);
  const int mt = cfg.warp_m / 16, nt = cfg.warp_n / 8; // mma tiles of a warp
  const int k_tiles = ceil_div(k, bk);
  const auto [slice_tiles, splits] = matmul_f16_slices(k, cfg);
  const bool guard_m = sym || rows.value() % bm != 0, guard_n = n % bn != 0 || n % 8 != 0, guard_k = k % bk != 0;
  const Expr row_tiles = sym ? Expr(max(ceil_div(m, bm), 1)) : Expr(ceil_div(rows.value(), bm));
  const bool few_rows = !sym && rows.value() <= bm; // b's first tiles prefetched (below)
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };

  auto batched = [&](bool has, const Expr &r, int cols) {
    return batch.batched() && has ? T({})[batch.count][r][cols] : T({})[r][cols];
  };
  const SymShape c_shape = batch.batched() ? SymShape{batch.count, rows.dim, n} : SymShape{rows.dim, n};
  std::vector<ParamSpec> specs{batched(batch.a, m, lda), batched(batch.b, Expr(k), ldb)};
  for (auto &p : ops::detail::EpilogueEmitter::param_specs(epi, c_shape, dt)) specs.push_back(p);
  if (splits > 1) {
    specs.push_back(TensorSpec(dtypes::f32, {})[splits][batch.count * m][n]);
    specs.push_back(TensorSpec(dtypes::i32, {})[row_tiles * (ceil_div(n, bn) * batch.count)]);
  }
  push_symbol_params(specs, matmul_symbols(rows, epi));
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &params) {
    lang::Tensor a_param = params[0], b_param = params[1];
    std::vector<ir::Var> extras;
    for (std::size_t i = 3; i < 3 + (epi ? epi->inputs.size() : 0); ++i) extras.push_back(params[i].v);
    ops::detail::EpilogueEmitter out(epi, c_shape, params[2].v, std::move(extras));
    attrs.cuda.grid_dim = {ceil_div(n, bn), row_tiles, batch.count * splits};
    // The product of this block (z) and its k slice; blockIdx.z = z * splits + slice.
    Var z = splits > 1 ? Expr(blockIdx.z / splits) : Expr(blockIdx.z);
    Var slice = splits > 1 ? Expr(blockIdx.z % splits) : Expr(0);
    auto at = [&](const lang::Tensor &t, bool has) {
      return [&t, has, z, on = batch.batched()](Expr r, Expr c) { return on && has ? t[z][r][c] : t[r][c]; };
    };
    auto a = at(a_param, batch.a), b = at(b_param, batch.b);
    auto c_idx = [z, on = batch.batched()](Expr r, Expr c) { return on ? Idx{Expr(z), r, c} : Idx{r, c}; };
    attrs.cuda.block_dim = threads;
    attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes();
    if (cfg.min_blocks > 0) attrs.cuda.min_blocks = cfg.min_blocks;

    auto sa = dynamic_shared_tensor(T({})[stages][bm][bk].with_layout(matmul_f16_detail::swizzled_tile(stages, bm, bk)),
                                    0, "smem_a");
    auto sb = dynamic_shared_tensor(T({})[stages][bk][bn].with_layout(matmul_f16_detail::swizzled_tile(stages, bk, bn)),
                                    stages * bm * bk * 2, "smem_b");
    auto acc = register_tensor(TensorSpec(cfg.acc_f16 ? dtypes::f16 : dtypes::f32, {})[mt][nt][4], "acc");
    auto af = register_tensor(T({})[mt][8], "a_frag");
    auto bf = register_tensor(T({})[nt][4], "b_frag");

    Var m0 = blockIdx.y * bm, n0 = blockIdx.x * bn;
    Var warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    auto wt = matmul_f16_detail::spatial_task(spatial(cfg.warps_m, cfg.warps_n), warp);
    Var wm0 = wt[0] * cfg.warp_m, wn0 = wt[1] * cfg.warp_n;

    // Issues the cp.async copies of k tile `k0` into buffer `stage` (zero-fill outside).
    auto load_tiles = [&](Expr stage, Expr k0) {
      for_(auto_map({bm, bk / 8}, threads).on(threadIdx.x), [&](Expr r, Expr v) {
        Expr row = m0 + r, col = k0 + v * 8;
        if (!guard_m && !guard_k) return cp_async(sa[stage][r][v * 8], a(row, col), 16);
        Expr bytes = guard_k ? max(min((k - col) * 2, 16), 0) : Expr(16);
        if (guard_m) bytes = select(row < m, bytes, 0);
        Expr src_row = guard_m ? min(row, m - 1) : row, src_col = guard_k ? min(col, lda - 8) : col;
        cp_async(sa[stage][r][v * 8], a(src_row, src_col), 16, bytes);
      });
      for_(auto_map({bk, bn / 8}, threads).on(threadIdx.x), [&](Expr r, Expr v) {
        Expr row = k0 + r, col = n0 + v * 8;
        if (!guard_k && !guard_n) return cp_async(sb[stage][r][v * 8], b(row, col), 16);
        Expr bytes = guard_n ? max(min((n - col) * 2, 16), 0) : Expr(16);
        if (guard_k) bytes = select(row < k, bytes, 0);
        Expr src_row = guard_k ? min(row, k - 1) : row, src_col = guard_n ? min(col, ldb - 8) : col;
        cp_async(sb[stage][r][v * 8], b(src_row, src_col), 16, bytes);
      });
    };
    // One k tile of mma on buffer `stage`: per 16 of k, mt A fragments, nt B fragments, mt x nt mma.
    auto compute = [&](Expr stage) {
      for_(range(bk / 16).unroll(), [&](Var kk) {
        for_(repeat(mt, 1).on(0), [&](Expr i, Expr) {
          ldmatrix(af[i][0], sa[stage][wm0 + i * 16 + lane % 16][kk * 16 + lane / 16 * 8], 4);
        });
        for_(repeat(1, nt / 2).on(0), [&](Expr, Expr j) {
          ldmatrix(bf[j * 2][0], sb[stage][kk * 16 + lane % 16][wn0 + j * 16 + lane / 16 * 8], 4, true);
        });
        for_(repeat(mt, nt).on(0), [&](Expr i, Expr j) { mma_sync(acc[i][j][0], af[i][0], bf[j][0], acc[i][j][0]); });
      });
    };

    // This block's k tiles: [t0, t0 + n_tiles) (all of them without split-k).
    Var t0 = slice * slice_tiles;
    Var n_tiles = splits > 1 ? Expr(min(k_tiles - t0, slice_tiles)) : Expr(k_tiles);
    if (few_rows) {
      // Few rows (one row tile of constant rows: a decoding step's projections): the time is
      // b's bytes. Before waiting for the kernel before this one, which may still be running (a
      // programmatic launch, docs/notes/programmatic_launch.md), the rows of b of the prologue's
      // tiles go to the L2, one 128-byte line per thread and round, clamped to b.
      const int lines_per_row = ceil_div(bn * int(dt.nbytes()), 128), cols_per_line = 128 / int(dt.nbytes());
      const int lines = (stages - 1) * bk * lines_per_row;
      for (int round = 0; round * threads < lines; ++round) {
        Var idx = threadIdx.x + round * threads;
        if_(idx < lines, [&] {
          Var row = min(t0 * bk + idx / lines_per_row, k - 1);
          Var col = min(n0 + idx % lines_per_row * cols_per_line, n - 1);
          prefetch_l2(b(row, col));
        });
      }
      grid_dependency_wait();
    }
    for_(grid(mt, nt, 4).unroll(), [&](Var i, Var j, Var e) { acc[i][j][e] = 0.0f; });
    for (int s = 0; s < stages - 1; ++s) { // prologue: the first stages - 1 tiles in flight
      if (splits > 1) {
        if_(s < n_tiles, [&] { load_tiles(Expr(s), (t0 + s) * bk); });
      } else if (s < k_tiles) {
        load_tiles(Expr(s), Expr(s * bk));
      }
      cp_async_commit_group();
    }
    for_(range(n_tiles), [&](Var kt) {
      cp_async_wait_group(stages - 2); // tile kt has landed (for this thread) ...
      syncthreads();                   // ... for all threads; buffer (kt - 1) % stages is free
      Var next = kt + (stages - 1);
      if_(next < n_tiles, [&] { load_tiles(next % stages, (t0 + next) * bk); });
      cp_async_commit_group(); // an empty group at the tail keeps the count uniform
      compute(kt % stages);
    });
    cp_async_wait_all();

    // Epilogue: lane (g, q) of an m16n8 tile holds rows g, g + 8 and columns 2q, 2q + 1.
    auto pair = register_tensor(u32[1], "pair"); // two halves, packed (4-byte aligned)
    Var g = lane / 4, q = lane % 4;
    auto store = [&] {
      for_(repeat(mt, nt, 2).on(0), [&](Expr i, Expr j, Expr h) {
        Expr row = m0 + wm0 + i * 16 + h * 8 + g, col = n0 + wn0 + j * 8 + q * 2;
        matmul_f16_detail::store_pair(out, c_idx, row, col, acc[i][j][h * 2], acc[i][j][h * 2 + 1], m, n, guard_m,
                                      guard_n, dt, pair);
      });
    };
    if (splits == 1) return store();
    // Split-k: this slice's f32 partial tile, then the block that completes the tile's count adds
    // every slice (in order: the result does not depend on which block is last) and stores.
    const std::size_t wsi = 3 + (epi ? epi->inputs.size() : 0);
    lang::Tensor ws = params[wsi], counters = params[wsi + 1];
    auto each = [&](const std::function<void(Expr row, Expr col, Element v)> &f) {
      for_(repeat(mt, nt, 4).on(0), [&](Expr i, Expr j, Expr e) {
        Expr row = m0 + wm0 + i * 16 + e / 2 * 8 + g, col = n0 + wn0 + j * 8 + q * 2 + e % 2;
        Expr ok = Expr(row < m) && col < n;
        if_(ok, [&] { f(z * m + row, col, acc[i][j][e]); });
      });
    };
    each([&](Expr row, Expr col, Element v) { ws[slice][row][col] = v; });
    Var tile = (z * row_tiles + blockIdx.y) * ceil_div(n, bn) + blockIdx.x;
    last_block_of_splits(counters[tile], threadIdx.x, splits, shared_tensor(i32[1], "done"), [&] {
      // Every slice's partial of each of the thread's elements, loaded at clamped indices with no
      // branch around the loads, so that the unrolled loads are in flight together (under a
      // bounds check per element they ran about one round trip to L2 at a time: 32 elements of a
      // 32 x 32 warp tile, a likely part of why 32-row products took 2.7x cuBLAS's time on the
      // H100, bench_decode 2026-11-28). Elements past the edges hold a sum that store() skips.
      for_(repeat(mt, nt, 4).on(0), [&](Expr i, Expr j, Expr e) {
        Expr row = m0 + wm0 + i * 16 + e / 2 * 8 + g, col = n0 + wn0 + j * 8 + q * 2 + e % 2;
        Expr r = z * m + min(row, max(m, 1) - 1), c = min(col, n - 1);
        Var sum = var(f32, ws[0][r][c], "sum");
        for (int sl = 1; sl < splits; ++sl) sum = sum + ws[sl][r][c];
        Element v = acc[i][j][e];
        v = sum;
      });
      store();
    });
  });
}

/// Adds kernel `name`: dst[r][j] = src[r][j] for j < cols, 0 for cols <= j < ld (dt f16/bf16).
/// Symbolic rows: the kernel takes their symbols as i32 parameters after src and dst.
inline void add_pad_columns_kernel(lang::ScriptModule &mod, const std::string &name, const Dim &rows, int cols, int ld,
                                   DataType dt) {
  using namespace hidet::lang;
  const int threads = 256;
  const Expr r_expr = dim_expr(rows);
  const Expr total = rows.is_constant() ? Expr(rows.value() * ld) : r_expr * ld;
  std::vector<ParamSpec> specs{TensorSpec(dt, {})[r_expr][cols], TensorSpec(dt, {})[r_expr][ld]};
  push_symbol_params(specs, rows.symbols());
  mod.kernel(name, specs,
             [&](const std::vector<ParamHandle> &ps) {
               lang::Tensor src = ps[0], dst = ps[1];
               if (rows.is_constant()) attrs.cuda.grid_dim = int(ceil_div(rows.value() * ld, std::int64_t(threads)));
               else attrs.cuda.grid_dim = max(ceil_div(total, threads), 1);
               attrs.cuda.block_dim = threads;
               Var i = blockIdx.x * threads + threadIdx.x;
               if_(i < total, [&] {
                 Var r = i / ld, j = i % ld;
                 if_(j < cols, [&] { dst[r][j] = src[r][j]; }).else_([&] { dst[r][j] = 0.0f; });
               });
             });
}

/// Runs the padding kernel `kernel` of `cm` (add_pad_columns_kernel) over all the rows of `x` into
/// the workspace `ws` ([rows, ld]) and returns `ws` viewed with x's shape (last dim ld). `symbols`
/// and `values`: the kernel's symbol parameters, for symbolic rows.
inline Tensor pad_columns(const CompiledModule &cm, const char *kernel, const Tensor &x, const Tensor &ws,
                          const std::vector<std::string> &symbols = {}, const SymbolValues &values = {}) {
  std::int64_t cols = x.shape().back();
  Tensor src = x.reshape({x.numel() / cols, cols});
  std::vector<LaunchArg> args{src, ws};
  push_symbol_args(args, symbols, values);
  cm[kernel].launch(args);
  auto shape = x.shape();
  shape.back() = ws.shape().back();
  return ws.reshape(shape);
}

/// A script module for these sizes: kernel "matmul_f16" (parameters as in add_matmul_f16_kernel),
/// and "pad_a" / "pad_b" when k / n is not a multiple of 8 (over all the rows of the batch).
/// MatmulF16 runs it.
inline lang::ScriptModule matmul_f16_module(const MatmulRows &m, int n, int k, DataType dt, const MatmulF16Config &cfg = {},
                                            const MatmulBatch &batch = {}, const Epilogue *epi = nullptr) {
  auto mod = lang::script_module(str_cat("matmul_", dt, "_", m.symbolic() ? "rows" : m.str(), "x", n, "x", k, epi ? "_epilogue" : ""));
  add_matmul_f16_kernel(mod, "matmul_f16", m, n, k, dt, cfg, batch, epi);
  int ba = batch.a ? batch.count : 1, bb = batch.b ? batch.count : 1;
  if (matmul_f16_lda(k) != k) add_pad_columns_kernel(mod, "pad_a", Dim(ba) * m.dim, k, matmul_f16_lda(k), dt);
  if (matmul_f16_ldb(n) != n) add_pad_columns_kernel(mod, "pad_b", bb * k, n, matmul_f16_ldb(n), dt);
  return mod;
}

/// A tiling for an m x n x k product on a GPU with `num_sms` multiprocessors: 128 x 128 x 32
/// tiles of 4 warps with 3 stages; 64 x 64 x 32 tiles (4 warps of 32 x 32) when the big tiles
/// would leave most multiprocessors idle.
inline MatmulF16Config matmul_f16_heuristic_config(int m, int n, int k, int num_sms) {
  (void)k;
  MatmulF16Config c;
  std::int64_t tiles = std::int64_t(lang::ceil_div(m, c.block_m())) * lang::ceil_div(n, c.block_n());
  if (tiles * 2 < num_sms) c = MatmulF16Config{2, 2, 32, 32, 32, 3, 1};
  return c;
}

/// A tiling for a product of few rows (9 to 32 by ops::matmul's dispatch: a batch of decoding steps), m x n x k, on a GPU
/// with `num_sms` multiprocessors: one warp row of 16, 32 or 64 rows (the rows rounded up) by 2
/// warps of 32 columns, k tiles of 64 in 4 stages, and k split while the grid stays within about
/// two blocks per multiprocessor and each slice keeps two k tiles: the tiles alone (a 2048-column
/// projection has 32) would leave most SMs idle while b streams from memory. (Four blocks per
/// multiprocessor split twice as far and ran slower: H200, 8 rows, 4096x4096 split 8 against 4,
/// 2048x8192 split 4 against 2.)
inline MatmulF16Config matmul_f16_few_rows_config(int m, int n, int k, int num_sms) {
  MatmulF16Config c{1, 2, m <= 16 ? 16 : m <= 32 ? 32 : 64, 32, 64, 4, 1};
  const std::int64_t tiles = std::int64_t(lang::ceil_div(m, c.block_m())) * lang::ceil_div(n, c.block_n());
  const int k_tiles = lang::ceil_div(k, c.block_k);
  while (tiles * c.split_k * 2 <= 2 * std::int64_t(std::max(1, num_sms)) && k_tiles / (2 * c.split_k) >= 2 &&
         c.split_k < 64)
    c.split_k *= 2;
  return c;
}

/// A built tensor-core matmul for fixed sizes and dtype (and epilogue): f(a, b, c) computes c = a @ b
/// (a: [m, k], b: [k, n], c: [m, n], all f16 or all bf16, on cuda; with a batch, [count, ...] for
/// c and for each operand that has the batch). When k or n is not a multiple of 8 the inputs are
/// first copied into padded workspaces (16-byte aligned rows for cp.async). With symbolic rows m
/// (matmul_rows.hpp), one build serves every value: each call passes the symbols' values.
class MatmulF16 {
public:
  MatmulF16(const MatmulRows &m, int n, int k, DataType dt, const MatmulF16Config &cfg = {}, const MatmulBatch &batch = {},
            std::shared_ptr<const Epilogue> epi = nullptr)
      : cfg_(cfg), epi_(epi), rows_(m), n_(n), k_(k), dt_(dt), batch_(batch), symbols_(matmul_symbols(m, epi.get())),
        cm_(matmul_f16_module(m, n, k, dt, cfg, batch, epi.get()).build()) {}
  /// Launches the kernels on the current stream.
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c) const { (*this)(a, b, c, {}); }
  /// With an epilogue: c is its output (viewed with c's size when it keeps the layout), `extras`
  /// its other inputs. `values`: the symbols' values (symbolic rows).
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c, const std::vector<Tensor> &extras,
                  const SymbolValues &values = {}) const {
    const std::int64_t m = rows_.at(values);
    const std::int64_t ba = batch_.a ? batch_.count : 1, bb = batch_.b ? batch_.count : 1;
    const auto pad_syms = rows_.dim.symbols();
    Tensor pa = a, pb = b;
    if (matmul_f16_lda(k_) != k_)
      pa = pad_columns(cm_, "pad_a", a, pads_.get("a", m, [&] { return hidet::empty({ba * m, matmul_f16_lda(k_)}, dt_, "cuda"); }),
                       pad_syms, values);
    if (matmul_f16_ldb(n_) != n_)
      pb = pad_columns(cm_, "pad_b", b, pads_.get("b", 0, [&] { return hidet::empty({bb * k_, matmul_f16_ldb(n_)}, dt_, "cuda"); }));
    Shape c_shape = batch_.batched() ? Shape{batch_.count, m, n_} : Shape{m, n_};
    Tensor out = epilogue_out_arg(epi_.get(), c, c_shape);
    std::vector<LaunchArg> args{pa, pb, out};
    for (const auto &t : extras) args.emplace_back(t);
    if (const int splits = matmul_f16_slices(k_, cfg_).second; splits > 1) {
      const std::int64_t rows = batch_.count * m, tiles = std::int64_t(batch_.count) *
                                                          lang::ceil_div(m, std::int64_t(cfg_.block_m())) *
                                                          lang::ceil_div(n_, cfg_.block_n());
      args.emplace_back(pads_.get("ws", m, [&] { return hidet::empty({splits, rows, n_}, dtypes::f32, "cuda"); }));
      args.emplace_back(pads_.get("counters", m, [&] { return hidet::zeros({std::max<std::int64_t>(tiles, 1)}, dtypes::i32, "cuda"); }));
    }
    push_symbol_args(args, symbols_, values);
    cm_["matmul_f16"].launch(args);
  }
  const MatmulF16Config &config() const { return cfg_; }
  const CompiledModule &module() const { return cm_; }

private:
  MatmulF16Config cfg_;
  std::shared_ptr<const Epilogue> epi_;
  MatmulRows rows_;
  int n_, k_;
  DataType dt_;
  MatmulBatch batch_;
  std::vector<std::string> symbols_;
  CompiledModule cm_;
  mutable RowBuffers pads_; // padded operands, split-k's workspace and counters, per value of m
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
