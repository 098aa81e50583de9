// Scaled dot-product attention for f32 in Hidet Script, in the flash-attention style on CUDA
// cores: out = softmax(q k^T * scale + mask) v for q, k, v, out in PyTorch's layout [B, H, S, D],
// head dim D = 32, 64, 96 or 128, any Sq and Skv, the causal and additive / bool masks of
// attention.hpp, and the same symbolic sizes (one build for every batch and length). Products
// and sums stay in f32 (no tensor cores, no rounding of P), so the result matches the composed
// matmul-softmax-matmul to f32 rounding while reading q, k and v once and never writing the
// scores to memory.
//
// Structure (config `fma`: `warps` warps, warp_q = 4, 8 or 16 query rows per warp, K/V tiles of
// block_kv = 32 or 64 keys):
//  * Block (qt, h, b) owns block_q = warps * warp_q query rows. A warp is 4 row groups of 8
//    lanes; row group r (of G = 4 * warps) holds rows r, r + G, r + 2G, ... (rt = warp_q / 4 of
//    them), so the 4 groups of a warp read 4 consecutive Q rows. Lane x of a group holds keys
//    x, x + 8, ... of each tile (block_kv / 8 scores per row) and output columns
//    32c + 4x .. 32c + 4x + 3 (D / 8 per row).
//  * Q (block_q rows) and the K/V tiles stream through shared memory by cp.async (the ring and
//    the masking of attention.hpp: attention_detail::kv_tile_loop). Q and K rows are padded by 4
//    floats so that the 16-byte loads of a warp (4 rows of Q, 8 keys of K) hit distinct banks.
//  * Per tile: S = Q K^T as float4 dot products from shared memory; the online softmax in
//    log2 units reduces each row over its 8 lanes (xor-shuffles 1, 2, 4); P goes to a per-warp
//    region of shared memory (rows padded by 8) and O += P V reads it back as float4 with V's
//    rows (a float4 of 4 columns per lane: a warp reads 128 contiguous bytes of a V row).
//  * Epilogue: each lane's partial row sum is reduced over the group, out = o / l as float4.
// The loops over head-dim and key steps are unrolled by 2 only (their bodies are unrolled in
// C++): fully unrolled they compiled 4-5x slower in NVRTC (1.3 s against 0.28 s for 64-row
// blocks) and ran 0-5% faster on the H200 (bench_attention, 2026-11-27).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/templates/attention_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Adds kernel `name` for f32 problem `p` with an `fma` config: parameters q, k, v, then (with a
/// mask) the mask, then out, scale (f32) and, with `sym`, the symbols' i32 values, as
/// add_attention_kernel (attention.hpp) takes them.
inline void add_attention_f32_kernel(lang::ScriptModule &mod, const std::string &name, const AttentionProblem &p,
                                     const AttentionConfig &cfg, const AttentionSymbols *sym = nullptr) {
  using namespace hidet::lang;
  check_attention_problem(p);
  check_attention_config(cfg, p.head_dim);
  if (p.dtype != dtypes::f32 || !cfg.fma)
    throw ValueError(str_cat("attention kernel for ", p.str(), ": the f32 kernel takes f32 inputs and an fma config, got ",
                             cfg.str()));
  const int H = p.heads, D = p.head_dim;
  const int bq = cfg.block_q(), bkv = cfg.block_kv, stages = cfg.stages, threads = cfg.threads();
  const int rt = cfg.warp_q / 4, groups = 4 * cfg.warps; // rows per thread; row groups per block
  const int nkc = bkv / 8, ndc = D / 32;                   // keys per lane; float4 column chunks per lane
  const int qpitch = D + 4, ppitch = bkv + 8;
  const auto ext = attention_detail::extents(p, sym, bq, bkv);
  const float neg_inf = -std::numeric_limits<float>::infinity();

  auto body = [&](lang::Tensor q, lang::Tensor k, lang::Tensor v, const lang::Tensor *mask, lang::Tensor out, Var scale) {
    attrs.cuda.grid_dim = {sym ? Expr(max(ext.q_tiles, 1)) : ext.q_tiles, H, ext.batch};
    attrs.cuda.block_dim = threads;
    attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes(D);

    const int k_at = bq * qpitch, v_at = k_at + stages * bkv * qpitch, p_at = v_at + stages * bkv * D;
    auto sq = dynamic_shared_tensor(f32[1][bq][qpitch], 0, "smem_q");
    auto sk = dynamic_shared_tensor(f32[stages][bkv][qpitch], k_at * 4, "smem_k");
    auto sv = dynamic_shared_tensor(f32[stages][bkv][D], v_at * 4, "smem_v");
    auto sp = dynamic_shared_tensor(f32[bq][ppitch], p_at * 4, "smem_p");
    auto qf = register_tensor(f32[rt][4], "q_frag");
    auto kf = register_tensor(f32[4], "k_frag");
    auto pf = register_tensor(f32[rt][4], "p_frag");
    auto vf = register_tensor(f32[4], "v_frag");
    auto sacc = register_tensor(f32[rt][nkc], "s");
    auto oacc = register_tensor(f32[rt][ndc][4], "o");
    auto row_max = register_tensor(f32[rt], "row_max");
    auto row_sum = register_tensor(f32[rt], "row_sum");
    auto res = register_tensor(f32[4], "res");

    Var b = blockIdx.z, h = blockIdx.y;
    Var kvh = p.kv_head(h); // grouped-query attention: the kv head of q head h
    Var qt = p.causal ? Expr(ext.q_tiles - 1 - blockIdx.x) : Expr(blockIdx.x); // causal: the longest rows first
    Var q0 = qt * bq;
    Var lane = threadIdx.x % 32, grp = threadIdx.x / 32 * 4 + lane / 8, x = lane % 8;
    Var sl2 = scale * attention_detail::log2e;
    Var n_tiles = p.causal ? Expr(ceil_div(min(q0 + bq, ext.seq_kv), bkv)) : ext.kv_tiles;
    auto row_of = [&](int i) { return grp + i * groups; }; // the block's row of this thread's row i

    auto load_kv = [&](Expr stage, Expr kv0) {
      attention_detail::load_rows(sk, stage, k, b, kvh, kv0, bkv, D, 4, threads, ext.seq_kv, ext.guard_kv);
      attention_detail::load_rows(sv, stage, v, b, kvh, kv0, bkv, D, 4, threads, ext.seq_kv, ext.guard_kv);
    };
    auto tile = [&](Expr stage, Expr kv0, bool masked) {
      for (int i = 0; i < rt; ++i)
        for (int c = 0; c < nkc; ++c)
          sacc[i][c] = 0.0f;
      for_(range(0, D, 4).unroll(2), [&](Var d) { // S = Q K^T
        for (int i = 0; i < rt; ++i)
          load_vector(qf[i][0], sq[0][row_of(i)][d], 16);
        for (int c = 0; c < nkc; ++c) {
          load_vector(kf[0], sk[stage][x + 8 * c][d], 16);
          for (int i = 0; i < rt; ++i)
            for (int e = 0; e < 4; ++e)
              sacc[i][c] = fma(qf[i][e], kf[e], sacc[i][c]);
        }
      });
      for (int i = 0; i < rt; ++i) {
        for (int c = 0; c < nkc; ++c)
          sacc[i][c] = attention_detail::masked_score(p, sym, ext, mask, sacc[i][c], sl2, q0 + row_of(i), kv0 + x + 8 * c, b, h,
                                                      masked);
        Var mx = sacc[i][0];
        for (int c = 1; c < nkc; ++c)
          mx = max(mx, sacc[i][c]);
        for (int m = 1; m < 8; m *= 2)
          mx = max(mx, shfl_xor_sync(0xffffffffu, mx, m));
        auto [m_use, corr] = attention_detail::softmax_step(row_max[i], mx);
        Var psum = var(f32, 0.0f, "psum");
        for (int c = 0; c < nkc; ++c) {
          Var pv = exp2(sacc[i][c] - m_use);
          psum += pv;
          sp[row_of(i)][x + 8 * c] = pv;
        }
        row_sum[i] = row_sum[i] * corr + psum;
        for (int c = 0; c < ndc; ++c)
          for (int e = 0; e < 4; ++e)
            oacc[i][c][e] = oacc[i][c][e] * corr;
      }
      syncwarp(); // P's rows of this warp are written by its own lanes only
      for_(range(0, bkv, 4).unroll(2), [&](Var j) { // O += P V
        for (int i = 0; i < rt; ++i)
          load_vector(pf[i][0], sp[row_of(i)][j], 16);
        for (int e = 0; e < 4; ++e)
          for (int c = 0; c < ndc; ++c) {
            load_vector(vf[0], sv[stage][j + e][c * 32 + x * 4], 16);
            for (int i = 0; i < rt; ++i)
              for (int n = 0; n < 4; ++n)
                oacc[i][c][n] = fma(pf[i][e], vf[n], oacc[i][c][n]);
          }
      });
    };

    for (int i = 0; i < rt; ++i) {
      row_max[i] = neg_inf, row_sum[i] = 0.0f;
      for (int c = 0; c < ndc; ++c)
        for (int e = 0; e < 4; ++e)
          oacc[i][c][e] = 0.0f;
    }
    attention_detail::load_rows(sq, 0, q, b, h, q0, bq, D, 4, threads, ext.seq_q, ext.guard_q);
    attention_detail::kv_tile_loop(p, ext, stages, bkv, q0, Expr(0), n_tiles, load_kv, [] {}, tile);

    for (int i = 0; i < rt; ++i) { // out = o / l
      Var l = row_sum[i];
      for (int m = 1; m < 8; m *= 2)
        l += shfl_xor_sync(0xffffffffu, l, m);
      Var inv = select(l > 0.0f, 1.0f / l, 0.0f), row = q0 + row_of(i);
      auto store = [&] {
        for (int c = 0; c < ndc; ++c) {
          for (int e = 0; e < 4; ++e)
            res[e] = oacc[i][c][e] * inv;
          Expr col = c * 32 + x * 4;
          if (p.heads_last) store_vector(out[b][row][h][col], res, 16);
          else store_vector(out[b][h][row][col], res, 16);
        }
      };
      if (ext.guard_q) if_(row < ext.seq_q, store);
      else store();
    }
  };

  attention_detail::add_attention_entry(
      mod, name, p, sym, ext, {p.heads_last ? f32[ext.batch][ext.seq_q][H][D] : f32[ext.batch][H][ext.seq_q][D]},
      [&](lang::Tensor q, lang::Tensor k, lang::Tensor v, const lang::Tensor *mask, const std::vector<lang::Tensor> &outs,
          Var scale) { body(q, k, v, mask, outs[0], scale); });
}

/// The default f32 tiling for `num_sms` multiprocessors: 4 warps and K/V tiles of 64 keys, with
/// 4 rows per thread (64-row blocks) when the query tiles still fill the GPU, else 2 or 1 (32- or
/// 16-row blocks: short sequences at small batch, where the grid would leave most
/// multiprocessors idle).
inline AttentionConfig attention_f32_config(const AttentionProblem &p, int num_sms) {
  AttentionConfig c;
  c.fma = true, c.warps = 4, c.block_kv = 64, c.stages = 2, c.q_in_regs = false;
  const std::int64_t heads = std::int64_t(p.batch) * p.heads;
  for (int wq : {16, 8, 4}) {
    c.warp_q = wq;
    if (std::int64_t(lang::ceil_div(p.seq_q, c.block_q())) * heads >= num_sms) break;
  }
  return c;
}

/// Candidate f32 tilings (search space 1: rows per warp, K/V tile, stages; 2: also 2 and 8 warps).
inline std::vector<AttentionConfig> attention_f32_candidates(const AttentionProblem &p, int space, int num_sms) {
  std::vector<AttentionConfig> out{attention_f32_config(p, num_sms)};
  if (space <= 0) return out;
  for (int warps : space >= 2 ? std::vector<int>{2, 4, 8} : std::vector<int>{4})
    for (int wq : {4, 8, 16})
      for (int bkv : {32, 64})
        for (int stages : {2, 3}) {
          AttentionConfig c;
          c.fma = true, c.warps = warps, c.warp_q = wq, c.block_kv = bkv, c.stages = stages, c.q_in_regs = false;
          try {
            check_attention_config(c, p.head_dim);
          } catch (const ValueError &) {
            continue;
          }
          if (std::none_of(out.begin(), out.end(), [&](const AttentionConfig &o) { return o.str() == c.str(); }))
            out.push_back(c);
        }
  return out;
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
