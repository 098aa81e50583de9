// Scaled dot-product attention on Hopper (sm_90a) in Hidet Script, in the FlashAttention-3 style:
// TMA loads by a producer warpgroup, wgmma for both products, P kept in registers, and the
// softmax of one K/V tile overlapped with the tensor-core work of the next. Same problem and
// parameters as attention.hpp's kernel (AttentionProblem), head dims 64 and 128, f16 and bf16.
//
// Structure (AttentionConfig with wgmma = true; defaults: 2 consumer warpgroups, 128 query rows
// per block, K/V tiles of 128 keys, 2 stages):
//  * Block (qt, h, b) owns query rows [qt * block_q, + block_q) of head (b, h); consumer
//    warpgroup c (1..consumers) owns 64 of them.
//  * Warpgroup 0 is the producer (setmaxnreg.dec): one thread loads the Q tile once and then,
//    per K/V tile, K's and V's boxes into stage t % stages. K and V have their own full and empty
//    mbarriers, so a stage's K can be refilled as soon as Q K^T has read it, while P V still
//    reads its V.
//  * Tiles are row-major [rows][D] in chunks of 64 columns (one 128-byte swizzled row per chunk,
//    the layout TMA writes and wgmma reads, as in matmul_wgmma.hpp). TMA boxes come from 3-D
//    maps over [B * H, S, D] (boxes of 1 x rows x 64): rows past S are zero-filled per head.
//  * S = Q K^T: m64n{block_kv}k16 wgmma with both operands K-major in shared memory (Q rows are
//    A, K rows are B without transpose), D / 16 steps. O += P V: wgmma with A from registers:
//    the f32 accumulator layout of S, packed to f16/bf16 pairs, is exactly the A fragment
//    (wgmma_rs), and V's tile is the MN-major B operand (transposed mode), block_kv / 16 steps.
//  * Pipelining inside a warpgroup: iteration t issues S_t = Q K_t^T, then O += P_{t-1} V_{t-1},
//    waits for S_t only (wgmma_wait_group(1)) and runs the online softmax of S_t while P V is in
//    flight; then it waits for P V, rescales O by exp2(m_old - m_new) and packs P_t.
//  * Online softmax as in attention.hpp: scores scaled by scale * log2(e) (exp2), the additive
//    mask, -inf for keys past Skv and, on tiles crossing this warpgroup's diagonal, above it; a
//    thread holds rows g and g + 8 of its warp's 16, so row maxima reduce over a quad.
//  * Causal: a block stops after the last tile holding a key <= its last row; blocks of the last
//    query tiles (the most work) are launched first.
//  * Epilogue: l summed over the quad, out = o / l, packed pairs stored per thread.
// Runs only on a GPU with sm_90a (the emulator rejects wgmma and TMA); attention.hpp's Attention
// falls back to the mma.sync kernel where this one cannot run.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/templates/attention_common.hpp"
#include "hidet/ops/templates/hopper.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// True when the Hopper attention kernel can serve problem `p` (any config): head dim 64 or 128.
/// (Bool masks: the mma.sync kernel; the operator turns them additive before a Hopper kernel.)
inline bool attention_wgmma_supports(const AttentionProblem &p) {
  return (p.head_dim == 64 || p.head_dim == 128) && p.dv() == p.head_dim && !p.packed() && !(p.has_mask && p.mask_dtype.is_bool()) &&
         p.kv() == p.heads; // grouped-query attention: the mma.sync kernel
}

/// Adds the Hopper kernel `name` for problem `p` (cfg.wgmma). Parameters: the TMA maps of q
/// ([B * H, Sq, D], boxes of 1 x block_q x 64, 128-byte swizzle), k and v ([B * H, Skv, D], boxes
/// of 1 x block_kv x 64), then (with a mask) mask: mask_dt[mask_batch][mask_heads][Sq][Skv],
/// then out: dt[B][H][Sq][D] (dt[B][Sq][H][D] when p.heads_last) and scale (f32).
inline void add_attention_wgmma_kernel(lang::ScriptModule &mod, const std::string &name, const AttentionProblem &p,
                                       const AttentionConfig &cfg) {
  using namespace hidet::lang;
  check_attention_problem(p);
  if (!cfg.wgmma) throw ValueError(str_cat("attention config ", cfg.str(), ": not a Hopper (wgmma) config"));
  if (p.kv() != p.heads)
    throw ValueError(str_cat("attention kernel for ", p.str(), ": the Hopper kernel reads as many kv heads as q "
                             "heads (grouped-query attention takes the mma.sync kernel)"));
  check_attention_config(cfg, p.head_dim);
  const int B = p.batch, H = p.heads, Sq = p.seq_q, Skv = p.seq_kv, D = p.head_dim;
  const int bq = cfg.block_q(), bkv = cfg.block_kv, stages = cfg.stages, chunks = D / 64;
  const int q_tiles = ceil_div(Sq, bq);
  const bool causal = p.causal, guard_q = Sq % bq != 0, guard_kv = Skv % bkv != 0;
  const DataType dt = p.dtype;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int q_bytes = bq * D * 2, kv_bytes = bkv * D * 2, bars = q_bytes + 2 * stages * kv_bytes;
  auto T = [&](DataType d) { return TensorSpec(d, {}); };

  std::vector<ParamSpec> specs{tensor_map_param(), tensor_map_param(), tensor_map_param()};
  if (p.has_mask) specs.push_back(T(p.mask_dtype)[p.mask_batch][p.mask_heads][Sq][Skv]);
  specs.push_back(p.heads_last ? T(dt)[B][Sq][H][D] : T(dt)[B][H][Sq][D]);
  specs.push_back(f32);
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &params) {
    lang::Tensor tmap_q = params[0], tmap_k = params[1], tmap_v = params[2];
    const std::size_t o_at = p.has_mask ? 4 : 3;
    std::optional<lang::Tensor> mask;
    if (p.has_mask) mask = lang::Tensor(params[3]);
    lang::Tensor out = params[o_at];
    Var scale = params[o_at + 1];
    attrs.cuda.grid_dim = {q_tiles, H, B};
    attrs.cuda.block_dim = cfg.threads();
    attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes(D);
    attrs.cuda.min_blocks = 1; // a register cap at entry, so that setmaxnreg takes effect

    auto sq = dynamic_shared_tensor(T(dt)[chunks][bq][64], 0, "smem_q");
    auto sk = dynamic_shared_tensor(T(dt)[stages][chunks][bkv][64], q_bytes, "smem_k");
    auto sv = dynamic_shared_tensor(T(dt)[stages][chunks][bkv][64], q_bytes + stages * kv_bytes, "smem_v");
    auto q_full = dynamic_shared_tensor(u64[1], bars, "q_full");
    auto k_full = dynamic_shared_tensor(u64[stages], bars + 8, "k_full");
    auto v_full = dynamic_shared_tensor(u64[stages], bars + 8 + 8 * stages, "v_full");
    auto k_empty = dynamic_shared_tensor(u64[stages], bars + 8 + 16 * stages, "k_empty");
    auto v_empty = dynamic_shared_tensor(u64[stages], bars + 8 + 24 * stages, "v_empty");

    Var b = blockIdx.z, h = blockIdx.y, bh = b * H + h;
    Var qt = causal ? Expr(q_tiles - 1 - blockIdx.x) : Expr(blockIdx.x);
    Var q0 = qt * bq;
    Var n_tiles = causal ? Expr(ceil_div(min(q0 + bq, Skv), bkv)) : Expr(ceil_div(Skv, bkv));
    Var wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if_(threadIdx.x == 0, [&] {
      mbarrier_init(q_full[0], 1);
      for (int s = 0; s < stages; ++s) {
        mbarrier_init(k_full[s], 1), mbarrier_init(v_full[s], 1);
        mbarrier_init(k_empty[s], cfg.consumers), mbarrier_init(v_empty[s], cfg.consumers);
      }
      fence_mbarrier_init();
    });
    syncthreads();

    if_(wg == 0, [&] { // the producer
      setmaxnreg(cfg.producer_regs, false);
      if_(tid == 0, [&] {
        mbarrier_arrive_expect_tx(q_full[0], q_bytes);
        for (int c = 0; c < chunks; ++c) tma_load(sq[c][0][0], tmap_q, q_full[0], {c * 64, q0, bh});
        for_(range(n_tiles), [&](Var t) {
          Var s = t % stages, parity = 1 - t / stages % 2; // a fresh barrier passes parity 1
          mbarrier_wait(k_empty[s], parity);
          mbarrier_arrive_expect_tx(k_full[s], kv_bytes);
          for (int c = 0; c < chunks; ++c) tma_load(sk[s][c][0][0], tmap_k, k_full[s], {c * 64, t * bkv, bh});
          mbarrier_wait(v_empty[s], parity);
          mbarrier_arrive_expect_tx(v_full[s], kv_bytes);
          for (int c = 0; c < chunks; ++c) tma_load(sv[s][c][0][0], tmap_v, v_full[s], {c * 64, t * bkv, bh});
        });
      });
    }).else_([&] { // the consumers
      setmaxnreg(cfg.consumer_regs(), true);
      auto sacc = register_tensor(f32[bkv / 2], "s");
      auto oacc = register_tensor(f32[D / 2], "o");
      auto pf = register_tensor(u32[bkv / 4], "p_frag");
      auto row_max = register_tensor(f32[2], "row_max");
      auto row_sum = register_tensor(f32[2], "row_sum");
      auto corr = register_tensor(f32[2], "corr");
      auto pair = register_tensor(u32[1], "pair");
      Var r0 = (wg - 1) * 64; // this warpgroup's first row in the block
      Var w = tid / 32, lane = tid % 32, g = lane / 4, qd = lane % 4;
      Var first_row = q0 + r0, sl2 = scale * attention_detail::log2e;

      // S = Q K^T of stage s (issued, committed; not waited for)
      auto issue_qk = [&](Expr s) {
        wgmma_fence();
        for (int kk = 0; kk < D / 16; ++kk)
          wgmma(sacc, make_wgmma_desc(sq[kk / 4][r0][kk % 4 * 16], 16, 1024, Swizzle::B128),
                make_wgmma_desc(sk[s][kk / 4][0][kk % 4 * 16], 16, 1024, Swizzle::B128), bkv, dt, kk == 0 ? 0 : 1,
                false, false);
        wgmma_commit_group();
      };
      // O += P V of stage s
      auto issue_pv = [&](Expr s) {
        wgmma_fence();
        for (int kk = 0; kk < bkv / 16; ++kk)
          wgmma_rs(oacc, pf[kk * 4], make_wgmma_desc(sv[s][0][kk * 16][0], bkv * 128, 1024, Swizzle::B128), D, dt, 1,
                   true);
        wgmma_commit_group();
      };
      // Online softmax of the scores in sacc for keys [kv0, kv0 + bkv); `masked`: apply the causal
      // and bounds masks. Leaves exp2(s - m) in sacc and each row's O correction in corr.
      auto softmax = [&](Expr kv0, bool masked) {
        // accumulator (j, hh, x): row 16 w + 8 hh + g, key 8 j + 2 qd + x
        for (int j = 0; j < bkv / 8; ++j)
          for (int e = 0; e < 4; ++e) {
            Expr row = first_row + w * 16 + (e / 2 * 8) + g, col = kv0 + (j * 8 + e % 2) + qd * 2;
            Expr s = sacc[j * 4 + e] * sl2;
            if (mask) {
              Expr mrow = guard_q ? Expr(min(row, Sq - 1)) : row, mcol = guard_kv ? Expr(min(col, Skv - 1)) : col;
              Expr mb = p.mask_batch == 1 ? Expr(0) : Expr(b), mh = p.mask_heads == 1 ? Expr(0) : Expr(h);
              if (p.mask_dtype.is_bool()) s = select((*mask)[mb][mh][mrow][mcol], s, neg_inf);
              else s = fma(cast((*mask)[mb][mh][mrow][mcol], f32), attention_detail::log2e, s);
            }
            if (masked) {
              Expr ok = causal ? Expr(col <= row) : Expr(col < Skv);
              if (causal && guard_kv) ok = ok && col < Skv;
              s = select(ok, s, neg_inf);
            }
            sacc[j * 4 + e] = s;
          }
        for (int hh = 0; hh < 2; ++hh) {
          Var mx = max(sacc[2 * hh], sacc[2 * hh + 1]);
          for (int j = 1; j < bkv / 8; ++j)
            mx = max(mx, max(sacc[j * 4 + 2 * hh], sacc[j * 4 + 2 * hh + 1]));
          mx = max(mx, shfl_xor_sync(0xffffffffu, mx, 1));
          mx = max(mx, shfl_xor_sync(0xffffffffu, mx, 2));
          Var m_new = max(row_max[hh], mx);
          Var m_use = select(m_new == neg_inf, 0.0f, m_new);
          corr[hh] = exp2(row_max[hh] - m_use);
          row_max[hh] = m_new;
          Var psum = var(f32, 0.0f, "psum");
          for (int j = 0; j < bkv / 8; ++j)
            for (int x = 0; x < 2; ++x) {
              int e = j * 4 + 2 * hh + x;
              sacc[e] = exp2(sacc[e] - m_use);
              psum += sacc[e];
            }
          row_sum[hh] = row_sum[hh] * corr[hh] + psum;
        }
      };
      // The softmax of tile t, masked where the tile needs it.
      auto softmax_tile = [&](Expr t) {
        Var kv0 = t * bkv;
        if (!causal && !guard_kv) return softmax(kv0, false);
        // causal: a key of the tile lies above the diagonal of one of this warpgroup's rows
        Expr need = causal ? Expr(kv0 + (bkv - 1) > first_row) : Expr(false);
        if (guard_kv) need = causal ? Expr(need || t == n_tiles - 1) : Expr(t == n_tiles - 1);
        if_(need, [&] { softmax(kv0, true); }).else_([&] { softmax(kv0, false); });
      };
      auto pack_p = [&] {
        for (int i = 0; i < bkv / 4; ++i) pf[i] = half2_pack(sacc[2 * i], sacc[2 * i + 1], dt);
      };
      auto rescale_o = [&] {
        for (int n = 0; n < D / 8; ++n)
          for (int e = 0; e < 4; ++e) oacc[n * 4 + e] = oacc[n * 4 + e] * corr[e / 2];
      };
      auto release = [&](const lang::Tensor &bar, Expr s) { if_(tid == 0, [&] { mbarrier_arrive(bar[s]); }); };

      for (int hh = 0; hh < 2; ++hh) row_max[hh] = neg_inf, row_sum[hh] = 0.0f;
      for_(range(D / 2).unroll(), [&](Var i) { oacc[i] = 0.0f; });
      for_(range(bkv / 2).unroll(), [&](Var i) { sacc[i] = 0.0f; }); // (the first product overwrites it)
      mbarrier_wait(q_full[0], 0);
      // tile 0: S, softmax, P
      mbarrier_wait(k_full[0], 0);
      issue_qk(0);
      wgmma_wait_group(0);
      release(k_empty, 0);
      softmax_tile(0);
      pack_p();
      for_(range(1, n_tiles), [&](Var t) {
        Var s = t % stages, prev = (t - 1) % stages;
        mbarrier_wait(k_full[s], t / stages % 2);
        issue_qk(s);
        mbarrier_wait(v_full[prev], (t - 1) / stages % 2);
        issue_pv(prev);
        wgmma_wait_group(1); // S_t is ready; P_{t-1} V_{t-1} stays in flight
        release(k_empty, s);
        softmax_tile(t);
        wgmma_wait_group(0);
        release(v_empty, prev);
        rescale_o();
        pack_p();
      });
      Var last = (n_tiles - 1) % stages;
      mbarrier_wait(v_full[last], (n_tiles - 1) / stages % 2);
      issue_pv(last);
      wgmma_wait_group(0);

      // Epilogue: lane (g, qd) of warp w holds rows 16 w + g (+ 8), columns 8 n + 2 qd (+ 1).
      for (int hh = 0; hh < 2; ++hh) {
        Var l = row_sum[hh];
        l += shfl_xor_sync(0xffffffffu, l, 1);
        l += shfl_xor_sync(0xffffffffu, l, 2);
        Var inv = select(l > 0.0f, 1.0f / l, 0.0f); // a row with every key masked: 0, as PyTorch
        Var row = first_row + w * 16 + hh * 8 + g;
        auto store = [&] {
          for (int n = 0; n < D / 8; ++n) {
            pair[0] = half2_pack(oacc[n * 4 + 2 * hh] * inv, oacc[n * 4 + 2 * hh + 1] * inv, dt);
            if (p.heads_last) store_vector(out[b][row][h][n * 8 + qd * 2], pair, 4);
            else store_vector(out[b][h][row][n * 8 + qd * 2], pair, 4);
          }
        };
        if (guard_q) if_(row < Sq, store);
        else store();
      }
    });
  });
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
