// Scaled dot-product attention for f16 and bf16 in Hidet Script, in the flash-attention style:
// out = softmax(q k^T * scale + mask) v for q, k, v, out in PyTorch's layout [B, H, S, D]
// (row-major), head dim D = 16, 32, 64 or 128 (v's and the output's may be another of these:
// LeViT's q and k have 16, its v 32 or 64), any Sq and Skv, optional causal mask (query i attends
// keys j <= i, top-left aligned like PyTorch's is_causal) and an optional additive mask
// [B or 1, H or 1, Sq, Skv] (f32, f16 or bf16) added to the scaled scores.
//
// Structure (defaults: 4 warps, 64 or 128 query rows per block, K/V tiles of 64 keys):
//  * Block (qt, h, b) owns query rows [qt * block_q, (qt + 1) * block_q) of head (b, h); warp w
//    owns warp_q of those rows (16 or 32: one or two m16 tiles). The block copies its Q tile to
//    shared memory once and the warps keep their Q fragments in registers (ldmatrix), unless
//    q_in_regs is off (then they re-load them per K tile, saving registers).
//  * K/V tiles of block_kv keys stream through a `stages`-deep cp.async ring (one commit group
//    per tile, zero-filled past Skv), exactly like the k tiles of matmul_f16.hpp.
//  * Per tile, a warp computes S = Q K^T with mma.sync.m16n8k16 (the row-major K tile is the
//    column-major B operand: plain ldmatrix.x4 gives two n8 tiles), in f32 registers.
//  * Online softmax in f32 registers: the scores are scaled by scale * log2(e) (so exp2 replaces
//    exp), the mask is added (times log2(e)), keys past Skv and, on diagonal tiles, keys above the
//    diagonal become -inf. A lane holds rows g and g + 8 of each m16 tile, so row maxima reduce
//    over the 4 lanes of a quad with two xor-shuffles. The running max m and sum l of each row
//    are updated and the output accumulator is rescaled by exp2(m_old - m_new). A row whose
//    scores are all -inf so far uses 0 as its max (no inf - inf); a row masked entirely ends
//    with l = 0 and outputs NaN, like softmax of all -inf.
//  * P = exp2(S - m) is converted to f16/bf16 in registers: the C fragment of the two n8 tiles
//    of keys 16kk..16kk+15 is exactly the A fragment of the k16 step kk of P V (see
//    docs/primitives.md), so P never goes through shared memory. V is k-major (keys are rows),
//    so its B fragments come from ldmatrix.x4.trans as in matmul_f16.hpp.
//  * Causal: the block stops after the last tile that holds a key <= its last row (tiles entirely
//    above the diagonal are skipped); only tiles crossing the diagonal (and a partial last tile)
//    run the masked variant of the tile body. Blocks of the last query tiles (the most work) are
//    launched first.
//  * Epilogue: l is summed over the quad, out = o / l rounded to f16/bf16, stored as packed pairs.
// Shared tiles use matmul_f16_detail::swizzled_tile (16-byte vectors, 8 rows of an ldmatrix
// phase in 8 distinct bank groups).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/templates/attention_common.hpp"
#include "hidet/ops/templates/attention_f32.hpp"
#include "hidet/ops/templates/attention_wgmma.hpp"
#include "hidet/ops/templates/hopper.hpp"
#include "hidet/ops/templates/matmul_f16.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"
#include "hidet/runtime/tensor_map.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {
/// Adds kernel `name` for problem `p`. Parameters: q, k, v: dt[B][H][S][D], then (with a mask)
/// mask: mask_dt[mask_batch][mask_heads][Sq][Skv], then out: dt[B][H][Sq][D] (dt[B][Sq][H][D]
/// when p.heads_last) and scale (f32). With `sym`, the batch and lengths are those Dims and the
/// symbols (sym->names()) follow as i32 parameters: one build for every value. Split-KV over
/// symbols keeps cfg.kv_splits runs and sizes each run (whole tiles) from the key length at run
/// time; runs left without tiles write an empty partial result that the combine weighs with 0.
inline void add_attention_kernel(lang::ScriptModule &mod, const std::string &name,
                                 const AttentionProblem &p, const AttentionConfig &cfg,
                                 const AttentionSymbols *sym = nullptr) {
  using namespace hidet::lang;
  check_attention_problem(p);
  check_attention_config(cfg, p.head_dim, p.dv());
  // D: q and k's head dim; Dv: v's and the output's (LeViT: 16 and 32)
  const int B = p.batch, H = p.heads, Sq = p.seq_q, Skv = p.seq_kv, D = p.head_dim, Dv = p.dv();
  const int bq = cfg.block_q(), bkv = cfg.block_kv, stages = cfg.stages, threads = cfg.threads();
  const int mt = cfg.warp_q / 16, nk = bkv / 8, dk = D / 16, nd = Dv / 8, pk = bkv / 16;
  const int q_tiles = ceil_div(Sq, bq), total_tiles = ceil_div(Skv, bkv);
  const int splits = cfg.kv_splits, run_tiles = ceil_div(total_tiles, splits); // split-KV: tiles per run
  const bool causal = p.causal;
  const auto ext = attention_detail::extents(p, sym, bq, bkv);
  const bool guard_q = ext.guard_q;
  const Expr B_e = ext.batch, Sq_e = ext.seq_q, Skv_e = ext.seq_kv, q_tiles_e = ext.q_tiles, total_tiles_e = ext.kv_tiles;
  const Expr run_tiles_e = sym ? Expr(ceil_div(total_tiles_e, splits)) : Expr(run_tiles);
  const Expr rows_e = sym ? Expr(B_e * H * Sq_e) : Expr(B * H * Sq); // split-KV: the workspace rows
  const DataType dt = p.dtype;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  auto T = [&](DataType d) { return TensorSpec(d, {}); };

  // out: the output, or (split-KV) ws_o f32[splits][B * H * Sq][Dv] and ws_ml f32[splits][B * H * Sq][2]
  auto body = [&](lang::Tensor q, lang::Tensor k, lang::Tensor v, const lang::Tensor *mask,
                  lang::Tensor out, const lang::Tensor *ws_ml, Var scale) {
    if (sym) attrs.cuda.grid_dim = {max(q_tiles_e, 1) * splits, H, B_e};
    else attrs.cuda.grid_dim = {q_tiles * splits, H, B};
    attrs.cuda.block_dim = threads;
    attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes(D, Dv);

    auto sq = dynamic_shared_tensor(
        T(dt)[1][bq][D].with_layout(matmul_f16_detail::swizzled_tile(1, bq, D)), 0, "smem_q");
    auto sk = dynamic_shared_tensor(
        T(dt)[stages][bkv][D].with_layout(matmul_f16_detail::swizzled_tile(stages, bkv, D)),
        bq * D * 2, "smem_k");
    auto sv = dynamic_shared_tensor(
        T(dt)[stages][bkv][Dv].with_layout(matmul_f16_detail::swizzled_tile(stages, bkv, Dv)),
        (bq + stages * bkv) * D * 2, "smem_v");
    auto qf = register_tensor(T(dt)[mt][cfg.q_in_regs ? dk : 1][8], "q_frag");
    auto kf = register_tensor(T(dt)[2][4], "k_frag");
    auto vf = register_tensor(T(dt)[2][4], "v_frag");
    auto sacc = register_tensor(f32[mt][nk][4], "s");
    auto pf = register_tensor(T(dt)[mt][pk][8], "p_frag");
    auto oacc = register_tensor(f32[mt][nd][4], "o");
    auto row_max = register_tensor(f32[mt][2], "row_max");
    auto row_sum = register_tensor(f32[mt][2], "row_sum");
    auto pair = register_tensor(u32[1], "pair");

    Var b = blockIdx.z, h = blockIdx.y;
    Var kvh = p.kv_head(h); // grouped-query attention: the kv head of q head h
    Var qi = splits > 1 ? Expr(blockIdx.x / splits) : Expr(blockIdx.x);
    Var qt = causal ? Expr(q_tiles_e - 1 - qi) : Expr(qi);
    Var q0 = qt * bq;
    Var warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    Var wq0 = warp * cfg.warp_q;
    Var g = lane / 4, qd = lane % 4;
    Var a_row = lane % 16, a_col = lane / 16 * 8; // ldmatrix A (and .trans B) addressing
    Var b_row = lane / 16 * 8 + lane % 8, b_col = lane / 8 % 2 * 8; // ldmatrix B from a [n][k] tile
    Var sl2 = scale * attention_detail::log2e;
    // This block's K/V tiles: [t_begin, t_begin + n_tiles) (all of them without split-KV).
    Expr needed = causal ? Expr(ceil_div(min(q0 + bq, Skv_e), bkv)) : total_tiles_e;
    Var t_begin = splits > 1 ? Expr(blockIdx.x % splits * run_tiles_e) : Expr(0);
    Var n_tiles = splits > 1 ? Expr(max(min(t_begin + run_tiles_e, needed) - t_begin, 0)) : needed;

    auto load_kv = [&](Expr stage, Expr kv0) {
      attention_detail::load_rows(sk, stage, k, b, kvh, kv0, bkv, D, 8, threads, ext.seq_kv, ext.guard_kv, p.in_k);
      attention_detail::load_rows(sv, stage, v, b, kvh, kv0, bkv, Dv, 8, threads, ext.seq_kv, ext.guard_kv, p.in_v);
    };
    auto load_q_frags = [&](int kk_first, int kk_count) {
      for (int i = 0; i < mt; ++i)
        for (int kk = kk_first; kk < kk_first + kk_count; ++kk)
          ldmatrix(qf[i][cfg.q_in_regs ? kk : 0][0], sq[0][wq0 + i * 16 + a_row][kk * 16 + a_col],
                   4);
    };

    // One K/V tile in buffer `stage` starting at key kv0; `masked`: apply the causal / bounds mask.
    auto tile = [&](Expr stage, Expr kv0, bool masked) {
      for (int i = 0; i < mt; ++i)
        for (int j = 0; j < nk; ++j)
          for (int e = 0; e < 4; ++e)
            sacc[i][j][e] = 0.0f;
      for (int kk = 0; kk < dk; ++kk) { // S = Q K^T
        if (!cfg.q_in_regs) load_q_frags(kk, 1);
        for (int j2 = 0; j2 < nk / 2; ++j2) {
          ldmatrix(kf[0][0], sk[stage][j2 * 16 + b_row][kk * 16 + b_col], 4);
          for (int i = 0; i < mt; ++i) {
            auto a = qf[i][cfg.q_in_regs ? kk : 0][0];
            mma_sync(sacc[i][2 * j2][0], a, kf[0][0], sacc[i][2 * j2][0]);
            mma_sync(sacc[i][2 * j2 + 1][0], a, kf[1][0], sacc[i][2 * j2 + 1][0]);
          }
        }
      }
      // Scale (log2 units), additive mask, causal / bounds mask.
      for (int i = 0; i < mt; ++i)
        for (int j = 0; j < nk; ++j)
          for (int e = 0; e < 4; ++e) {
            Expr row = q0 + wq0 + (i * 16 + e / 2 * 8) + g, col = kv0 + (j * 8 + e % 2) + qd * 2;
            sacc[i][j][e] = attention_detail::masked_score(p, sym, ext, mask, sacc[i][j][e], sl2, row, col, b, h, masked);
          }
      // Online softmax per row (half hh of m16 tile i: row g + 8 hh).
      for (int i = 0; i < mt; ++i)
        for (int hh = 0; hh < 2; ++hh) {
          Var mx = max(sacc[i][0][2 * hh], sacc[i][0][2 * hh + 1]);
          for (int j = 1; j < nk; ++j)
            mx = max(mx, max(sacc[i][j][2 * hh], sacc[i][j][2 * hh + 1]));
          mx = max(mx, shfl_xor_sync(0xffffffffu, mx, 1));
          mx = max(mx, shfl_xor_sync(0xffffffffu, mx, 2));
          auto [m_use, corr] = attention_detail::softmax_step(row_max[i][hh], mx);
          Var psum = var(f32, 0.0f, "psum");
          for (int j = 0; j < nk; ++j)
            for (int e = 2 * hh; e < 2 * hh + 2; ++e) {
              sacc[i][j][e] = exp2(sacc[i][j][e] - m_use);
              psum += sacc[i][j][e];
            }
          row_sum[i][hh] = row_sum[i][hh] * corr + psum;
          for (int n = 0; n < nd; ++n)
            for (int e = 2 * hh; e < 2 * hh + 2; ++e)
              oacc[i][n][e] = oacc[i][n][e] * corr;
        }
      // P in registers: the C fragments of n8 tiles 2kk, 2kk+1 are the A fragment of k step kk.
      for (int i = 0; i < mt; ++i)
        for (int kk = 0; kk < pk; ++kk)
          for (int e = 0; e < 8; ++e)
            pf[i][kk][e] = sacc[i][2 * kk + e / 4][e % 4];
      for (int kk = 0; kk < pk; ++kk) // O += P V
        for (int j2 = 0; j2 < nd / 2; ++j2) {
          ldmatrix(vf[0][0], sv[stage][kk * 16 + a_row][j2 * 16 + a_col], 4, true);
          for (int i = 0; i < mt; ++i) {
            mma_sync(oacc[i][2 * j2][0], pf[i][kk][0], vf[0][0], oacc[i][2 * j2][0]);
            mma_sync(oacc[i][2 * j2 + 1][0], pf[i][kk][0], vf[1][0], oacc[i][2 * j2 + 1][0]);
          }
        }
    };

    for (int i = 0; i < mt; ++i) {
      for (int hh = 0; hh < 2; ++hh)
        row_max[i][hh] = neg_inf, row_sum[i][hh] = 0.0f;
      for (int n = 0; n < nd; ++n)
        for (int e = 0; e < 4; ++e)
          oacc[i][n][e] = 0.0f;
    }
    attention_detail::load_rows(sq, 0, q, b, h, q0, bq, D, 8, threads, Sq_e, guard_q, p.in_q);
    attention_detail::kv_tile_loop(
        p, ext, stages, bkv, q0, t_begin, n_tiles, load_kv, [&] { if (cfg.q_in_regs) load_q_frags(0, dk); }, tile);

    // Epilogue: lane (g, qd) holds rows g, g + 8 and columns 2 qd, 2 qd + 1 of each n8 tile.
    for (int i = 0; i < mt; ++i)
      for (int hh = 0; hh < 2; ++hh) {
        Var l = row_sum[i][hh];
        l += shfl_xor_sync(0xffffffffu, l, 1);
        l += shfl_xor_sync(0xffffffffu, l, 2);
        Var row = q0 + wq0 + (i * 16 + hh * 8) + g;
        if (splits > 1) { // this run's unnormalized output, row max (log2 units) and row sum
          Var sp = blockIdx.x % splits, r = (b * H + h) * Sq_e + row;
          auto store = [&] {
            for (int n = 0; n < nd; ++n)
              for (int x = 0; x < 2; ++x) out[sp][r][n * 8 + qd * 2 + x] = oacc[i][n][2 * hh + x];
            if_(qd == 0, [&] { (*ws_ml)[sp][r][0] = row_max[i][hh], (*ws_ml)[sp][r][1] = l; });
          };
          if (guard_q) if_(row < Sq_e, store);
          else store();
          continue;
        }
        Var inv = select(l > 0.0f, 1.0f / l, 0.0f); // a row with every key masked: 0, as PyTorch
        auto store = [&] {
          for (int n = 0; n < nd; ++n) {
            pair[0] = half2_pack(oacc[i][n][2 * hh] * inv, oacc[i][n][2 * hh + 1] * inv, dt);
            if (p.heads_last)
              store_vector(out[b][row][h][n * 8 + qd * 2], pair, 4);
            else
              store_vector(out[b][h][row][n * 8 + qd * 2], pair, 4);
          }
        };
        if (guard_q)
          if_(row < Sq_e, store);
        else
          store();
      }
  };

  auto To = p.heads_last ? T(dt)[B_e][Sq_e][H][Dv] : T(dt)[B_e][H][Sq_e][Dv];
  std::vector<ParamSpec> outs{To};
  if (splits > 1) outs = {f32[splits][rows_e][Dv], f32[splits][rows_e][2]};
  attention_detail::add_attention_entry(
      mod, name, p, sym, ext, outs,
      [&](lang::Tensor q, lang::Tensor k, lang::Tensor v, const lang::Tensor *mask, const std::vector<lang::Tensor> &os,
          Var scale) { body(q, k, v, mask, os[0], os.size() > 1 ? &os[1] : nullptr, scale); });
  if (splits == 1) return;
  // Split-KV: out = sum_s 2^(m_s - M) o_s / sum_s 2^(m_s - M) l_s per row (M = max_s m_s), one
  // thread per two adjacent output elements.
  const Expr pairs = rows_e * (Dv / 2);
  std::vector<ParamSpec> combine_specs{f32[splits][rows_e][Dv], f32[splits][rows_e][2], To};
  if (sym) push_symbol_params(combine_specs, sym->names());
  mod.kernel(name + "_combine", combine_specs, [&](const std::vector<ParamHandle> &ps) {
    lang::Tensor ws_o = ps[0], ws_ml = ps[1], out = ps[2];
    attrs.cuda.grid_dim = sym ? Expr(ceil_div(pairs, 256)) : Expr(ceil_div(B * H * Sq * (Dv / 2), 256));
    attrs.cuda.block_dim = 256;
    Var idx = blockIdx.x * 256 + threadIdx.x;
    if_(idx < pairs, [&] {
      Var r = idx / (Dv / 2), d = idx % (Dv / 2) * 2;
      Var mx = var(f32, neg_inf, "mx");
      for (int s = 0; s < splits; ++s) mx = max(mx, ws_ml[s][r][0]);
      Var m_use = select(mx == neg_inf, 0.0f, mx);
      Var l = var(f32, 0.0f, "l"), o0 = var(f32, 0.0f, "o0"), o1 = var(f32, 0.0f, "o1");
      for (int s = 0; s < splits; ++s) {
        Var w = exp2(ws_ml[s][r][0] - m_use);
        l += w * ws_ml[s][r][1], o0 += w * ws_o[s][r][d], o1 += w * ws_o[s][r][d + 1];
      }
      Var inv = select(l > 0.0f, 1.0f / l, 0.0f), b = r / (H * Sq_e), h = r / Sq_e % H, row = r % Sq_e;
      auto pair = register_tensor(u32[1], "pair");
      pair[0] = half2_pack(o0 * inv, o1 * inv, dt);
      if (p.heads_last) store_vector(out[b][row][h][d], pair, 4);
      else store_vector(out[b][h][row][d], pair, 4);
    });
  });
}

/// A script module with kernel "attention" for problem `p`: add_attention_kernel,
/// add_attention_wgmma_kernel for a Hopper config (cfg.wgmma) or add_attention_f32_kernel for an
/// f32 one (cfg.fma). With `sym`: the mma.sync or f32 kernel over symbolic sizes.
inline lang::ScriptModule attention_module(const AttentionProblem &p, const AttentionConfig &cfg,
                                           const AttentionSymbols *sym = nullptr) {
  auto mod = lang::script_module(str_cat("attention_", cfg.wgmma ? "wgmma_" : cfg.fma ? "fma_" : "", p.dtype, "_d", p.head_dim,
                                         p.dv() != p.head_dim ? str_cat("_v", p.dv()) : std::string(),
                                         p.causal ? "_causal" : "", p.heads_last ? "_bshd" : "", p.packed() ? "_packed" : "",
                                         sym ? "_symbolic" : ""));
  if (cfg.wgmma && sym)
    throw ValueError(str_cat("attention kernel for ", sym->str(), ": the Hopper kernel takes constant sizes"));
  if (cfg.fma != (p.dtype == dtypes::f32))
    throw ValueError(str_cat("attention kernel for ", p.str(), ": config ", cfg.str(),
                             " does not fit (f32 problems take an fma config, f16 and bf16 ones a tensor-core config)"));
  if (p.packed() && (cfg.wgmma || cfg.fma))
    throw ValueError(str_cat("attention kernel for ", p.str(), ": packed inputs are read by the mma.sync kernel only"));
  if (cfg.wgmma) add_attention_wgmma_kernel(mod, "attention", p, cfg);
  else if (cfg.fma) add_attention_f32_kernel(mod, "attention", p, cfg, sym);
  else add_attention_kernel(mod, "attention", p, cfg, sym);
  return mod;
}

/// The default mma.sync tiling, from the H100 sweep of search space 1 (docs/notes/attention.md):
/// 4 warps, Q fragments in registers, K/V tiles of 64 keys, double-buffered; head dim 128 takes
/// 16 rows per warp (64-row blocks: 32-row warps need too many registers), head dim 64 takes 32
/// rows per warp (128-row blocks) when the keys are many (>= 256) and the grid still fills the GPU.
/// Split-KV when the query tiles give fewer blocks than half the multiprocessors and the keys fill
/// at least 8 tiles: about two blocks per multiprocessor, each run at least 4 tiles long (runs
/// that would be empty are dropped).
inline AttentionConfig attention_mma_config(const AttentionProblem &p, int num_sms) {
  AttentionConfig c{4, 16, 64, 2, true};
  std::int64_t big_blocks = std::int64_t(lang::ceil_div(p.seq_q, 128)) * p.batch * p.heads;
  if (p.head_dim == 64 && p.seq_kv >= 256 && big_blocks >= num_sms) c.warp_q = 32;
  const std::int64_t blocks = std::int64_t(lang::ceil_div(p.seq_q, c.block_q())) * p.batch * p.heads;
  const int tiles = lang::ceil_div(p.seq_kv, c.block_kv);
  if (2 * blocks <= num_sms && tiles >= 8) {
    int splits = int(std::min<std::int64_t>({lang::ceil_div(std::int64_t(2) * num_sms, blocks), tiles / 4, 64}));
    splits = lang::ceil_div(tiles, lang::ceil_div(tiles, splits));
    if (splits > 1) c.kv_splits = splits;
  }
  return c;
}

/// The default tiling. On Hopper (`hopper`: wgmma_available()) the wgmma kernel, with 2 consumer
/// warpgroups (128 query rows) and tiles of 128 keys, serves head dim 128 when the keys fill more
/// than one tile (3 stages without a causal mask, else 2: the best of search space 2 on the
/// H200's Llama-7B rows, docs/notes/attention.md) and head dim 64 from 1024 keys on (at 512
/// keys the mma.sync kernel measured 6% faster), unless the mma.sync config splits the keys
/// (decoding: few query tiles); otherwise attention_mma_config. f32: attention_f32_config.
inline AttentionConfig attention_heuristic_config(const AttentionProblem &p, int num_sms, bool hopper = false) {
  if (p.dtype == dtypes::f32) return attention_f32_config(p, num_sms);
  auto mma = attention_mma_config(p, num_sms);
  const bool wgmma = hopper && attention_wgmma_supports(p) && mma.kv_splits == 1 &&
                     (p.head_dim == 128 ? p.seq_kv > 128 : p.seq_kv >= 1024);
  if (!wgmma) return mma;
  AttentionConfig c;
  c.wgmma = true, c.consumers = 2, c.block_kv = 128, c.stages = p.head_dim == 128 && !p.causal ? 3 : 2;
  return c;
}

/// Candidate tilings for problem `p` in search space `space` (0: the default for `num_sms`
/// multiprocessors; 1: rows per warp, K/V tile, stages and Q placement, up to about 20, and on
/// Hopper the wgmma kernel's consumers, K/V tile and stages; 2: also 8 warps and more K/V tiles).
/// Configs that fail the checks or would exceed the registers are left out. f32:
/// attention_f32_candidates.
inline std::vector<AttentionConfig> attention_candidates(const AttentionProblem &p, int space,
                                                         int num_sms = 132, bool hopper = false) {
  if (p.dtype == dtypes::f32) return attention_f32_candidates(p, space, num_sms);
  auto def = attention_heuristic_config(p, num_sms, hopper);
  std::vector<AttentionConfig> out{def};
  if (space <= 0) return out;
  auto add = [&](const AttentionConfig &c) {
    try {
      check_attention_config(c, p.head_dim, p.dv());
    } catch (const ValueError &) {
      return;
    }
    if (!c.wgmma && c.fragment_registers(p.head_dim, p.dv()) > 232) return;
    for (auto &o : out)
      if (o.str() == c.str()) return;
    out.push_back(c);
  };
  for (int warps : space >= 2 ? std::vector<int>{4, 8} : std::vector<int>{4})
    for (int warp_q : {16, 32})
      for (int bkv : {32, 64, 128})
        for (int stages : {2, 3})
          for (bool qr : {true, false})
            for (int splits : def.kv_splits > 1 ? std::vector<int>{1, def.kv_splits} : std::vector<int>{1}) {
              AttentionConfig c{warps, warp_q, bkv, stages, qr};
              c.kv_splits = splits;
              add(c);
            }
  if (hopper && attention_wgmma_supports(p))
    for (int consumers : {1, 2, 3})
      for (int bkv : space >= 2 ? std::vector<int>{64, 96, 128, 160, 192} : std::vector<int>{64, 128})
        for (int stages : {2, 3}) {
          AttentionConfig c;
          c.wgmma = true, c.consumers = consumers, c.block_kv = bkv, c.stages = stages;
          add(c);
        }
  return out;
}

/// A built attention kernel for one problem: f(q, k, v, out, scale) or, with a mask,
/// f(q, k, v, mask, out, scale) (all on cuda, shapes and dtypes as in the problem; q, k and v
/// 16-byte aligned). A Hopper config encodes the TMA maps of q, k and v on the host (kept while
/// the addresses stay) and passes them by value.
class Attention {
public:
  /// With `sym`: one build for every value of its symbols (each launch passes their values).
  Attention(const AttentionProblem &p, const AttentionConfig &cfg = {}, const AttentionSymbols *sym = nullptr)
      : problem_(p), cfg_(cfg), cm_(attention_module(p, cfg, sym).build(build_options(p))) {
    if (sym) symbols_ = sym->names();
  }
  /// Launches on the current stream (no mask). `values`: the symbols' values (symbolic builds).
  void operator()(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out,
                  double scale, const SymbolValues &values = {}) const {
    if (problem_.has_mask)
      throw ValueError(str_cat("attention kernel for ", problem_.str(), ": the mask is missing"));
    launch(q, k, v, nullptr, out, scale, values);
  }
  /// Launches on the current stream with the additive mask.
  void operator()(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &mask,
                  const Tensor &out, double scale, const SymbolValues &values = {}) const {
    if (!problem_.has_mask)
      throw ValueError(str_cat("attention kernel for ", problem_.str(), ": built without a mask"));
    launch(q, k, v, &mask, out, scale, values);
  }
  const AttentionProblem &problem() const { return problem_; }
  const AttentionConfig &config() const { return cfg_; }
  const CompiledModule &module() const { return cm_; }

private:
  void launch(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor *mask, const Tensor &out,
              double scale, const SymbolValues &values) const {
    const auto &p = problem_;
    for (const auto *t : {&q, &k, &v})
      if (reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 != 0)
        throw ValueError(str_cat("attention kernel for ", p.str(), ": ", t == &q ? "q" : t == &k ? "k" : "v",
                                 " is not 16-byte aligned (the kernels load 16-byte vectors; clone() realigns it)"));
    if (cfg_.kv_splits > 1) {
      // One workspace per row count B * H * Sq (a symbolic build sees several), kept: a CUDA
      // graph captured at one size keeps replaying on its buffers.
      const std::int64_t rows = q.ndim() == 4 ? q.shape()[0] * q.shape()[1] * q.shape()[2] : 0;
      std::pair<Tensor, Tensor> ws;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto &w = workspaces_[rows];
        if (!w.first.defined()) {
          w.first = hidet::empty({cfg_.kv_splits, rows, p.dv()}, dtypes::f32, "cuda");
          w.second = hidet::empty({cfg_.kv_splits, rows, 2}, dtypes::f32, "cuda");
        }
        ws = w;
      }
      std::vector<LaunchArg> args{q, k, v};
      if (mask) args.emplace_back(*mask);
      args.emplace_back(ws.first), args.emplace_back(ws.second), args.emplace_back(scale);
      push_symbol_args(args, symbols_, values);
      cm_["attention"].launch(args);
      std::vector<LaunchArg> combine{ws.first, ws.second, out};
      push_symbol_args(combine, symbols_, values);
      return cm_["attention_combine"].launch(combine);
    }
    if (!cfg_.wgmma) {
      std::vector<LaunchArg> args{q, k, v};
      if (mask) args.emplace_back(*mask);
      args.emplace_back(out), args.emplace_back(scale);
      push_symbol_args(args, symbols_, values);
      return cm_["attention"].launch(args);
    }
    const std::int64_t bh = std::int64_t(p.batch) * p.heads;
    auto check = [&](const Tensor &t, std::int64_t s, const char *what) {
      std::vector<std::int64_t> want{p.batch, p.heads, s, p.head_dim};
      if (t.shape() != want || t.dtype() != p.dtype || !t.device().is_cuda())
        throw ValueError(str_cat("attention kernel for ", p.str(), ": ", what, " is ", t.dtype(), " ",
                                 hidet::detail::shape_str(t.shape()), " on ", t.device_str(), ", expected ", p.dtype,
                                 " ", hidet::detail::shape_str(want), " on cuda"));
    };
    check(q, p.seq_q, "q"), check(k, p.seq_kv, "k"), check(v, p.seq_kv, "v");
    std::vector<LaunchArg> args;
    {
      std::lock_guard<std::mutex> lock(mu_);
      map_for(maps_[0], q, {bh, p.seq_q, p.head_dim}, cfg_.block_q());
      map_for(maps_[1], k, {bh, p.seq_kv, p.head_dim}, cfg_.block_kv);
      map_for(maps_[2], v, {bh, p.seq_kv, p.head_dim}, cfg_.block_kv);
      args = {*maps_[0].map, *maps_[1].map, *maps_[2].map};
    }
    if (mask) args.emplace_back(*mask);
    args.emplace_back(out), args.emplace_back(scale);
    cm_["attention"].launch(args);
  }
  /// The map of `t` viewed as `shape` ([B * H, S, D]) with boxes of 1 x rows x 64.
  static void map_for(CachedMap &m, const Tensor &t, std::vector<std::int64_t> shape, int rows) {
    m.get(t.data_ptr(), [&] {
      TensorMap::Spec spec;
      spec.address = t.data_ptr(), spec.dtype = t.dtype(), spec.shape = std::move(shape);
      spec.box = {1, rows, 64}, spec.swizzle = TensorMap::Swizzle::B128;
      return TensorMap::tiled(spec);
    });
  }
  /// --use_fast_math for f16 and bf16: exp2 as one ex2.approx (the scores are f32, P is rounded
  /// to 16 bits anyway). Not for f32, whose result should match the composed operators.
  static BuildOptions build_options(const AttentionProblem &p) {
    BuildOptions o;
    o.fast_math = p.dtype != dtypes::f32;
    return o;
  }
  AttentionProblem problem_;
  AttentionConfig cfg_;
  CompiledModule cm_;
  std::vector<std::string> symbols_; ///< a symbolic build's symbol parameters
  mutable std::mutex mu_;
  mutable CachedMap maps_[3]; ///< q, k, v (Hopper configs)
  /// split-KV, per row count: the runs' outputs, and their row maxima and sums
  mutable std::map<std::int64_t, std::pair<Tensor, Tensor>> workspaces_;
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
