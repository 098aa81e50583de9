// Attention for decoding (flash-decoding): a few query rows per head over a long key/value cache,
// out = softmax(q k^T * scale + mask) v, with grouped-query attention read in place and only the
// keys that some row attends to read at all.
//
// At decode time q has 1 to a few rows per head and k, v [B, Hkv, S, D] are a static cache of S
// slots, of which the mask (made in the graph from the cache position, a device value) lets each
// row attend to the first few hundred. The time is the bytes of K and V read, so this kernel:
//  * gives one block all G * Sq query rows of one kv head (G = H / Hkv: the q heads that share
//    it), `rows` at a time, so each K/V element is read once per kv head instead of once per q
//    head;
//  * finds, before reading any key, the range of keys [first, last] that some row of the block
//    attends to (the mask says false, or holds the dtype's lowest value or -inf, for the others;
//    causal attention stops at the last row's index), by scanning the block's mask rows (a few
//    bytes per key against 4 * D for K and V), and splits that range evenly over `splits` blocks
//    (split-KV): a cache of 4096 slots with 300 valid reads 300 keys, in `splits` parallel parts;
//  * on each tile of block_kv keys: loads the tile's K and V vectors to registers (16-byte loads,
//    V issued with K), scores S = Q K^T on the CUDA cores (Q in shared memory, in f32, scaled by
//    scale * log2 e), the online softmax per row in exp2, O += P V with O in registers;
//  * with splits > 1, each block writes its unnormalized O with its row max and sum, counts itself
//    on the (batch, kv head, row group) counter, and the block that completes the count combines
//    the parts (out = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s) and takes the count back: no
//    second kernel.
// The batch and the key length are run-time values (one build serves every batch and cache
// length); heads, query rows, head dim, dtype and mask form are built in. A row with no attended
// key gives 0 (as the other attention kernels).
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/templates/attention_common.hpp"
#include "hidet/ops/templates/split_reduce.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Tiling of the decode attention kernel.
struct AttentionDecodeConfig {
  int rows = 4;      ///< query rows per block (of the G * Sq rows of one kv head): 1 to 8
  int block_kv = 64; ///< keys per tile: 32, 64 or 128
  int warps = 4;     ///< warps of a block: 2, 4 or 8
  int splits = 1; ///< blocks sharing the attended keys of one (batch, kv head, row group): 1 to 64

  int threads() const { return warps * 32; }
  /// "rows 4, kv 64, 4 warps, split-kv 8"
  std::string str() const {
    return str_cat("rows ", rows, ", kv ", block_kv, ", ", warps, " warps",
                   splits > 1 ? str_cat(", split-kv ", splits) : "");
  }
};

namespace attention_decode_detail {
/// The symbols of the run-time batch and key length (the kernel's trailing i32 parameters).
inline const Dim &batch_sym() {
  static const Dim d = Dim::symbol("decode_batch");
  return d;
}
inline const Dim &keys_sym() {
  static const Dim d = Dim::symbol("decode_keys");
  return d;
}
/// The elements of one 16-byte vector.
inline int vec(DataType dt) { return 16 / int(dt.nbytes()); }
/// Threads per key in the scores (a key's D elements split among them) and per V row group.
struct Split {
  int ps, dk, nk, dv, kg, nv;
};
inline Split split_of(const AttentionProblem &p, const AttentionDecodeConfig &c) {
  Split s;
  const int e = vec(p.dtype), d = p.head_dim;
  s.ps = c.threads() / c.block_kv;          // threads per key
  s.dk = s.ps > 0 ? d / s.ps : 0;           // elements of a key per thread
  s.nk = s.dk / e;                          // K vectors per thread
  s.dv = d / e;                             // vectors of a V row
  s.kg = s.dv > 0 ? c.threads() / s.dv : 0; // key groups in O += P V
  s.nv = s.kg > 0 ? c.block_kv / s.kg : 0;  // V vectors per thread
  return s;
}
/// The lowest finite value of a float mask dtype: HF's masked entries (torch.finfo(dtype).min).
inline float lowest(DataType d) {
  if (d == dtypes::f16) return -65504.0f;
  if (d == dtypes::bf16) return -3.3895313892515355e38f;
  return std::numeric_limits<float>::lowest();
}
} // namespace attention_decode_detail

/// Throws ValueError naming what the kernel cannot serve: the problem (its batch and seq_kv are
/// run-time values and not checked) or the config.
inline void check_attention_decode(const AttentionProblem &p, const AttentionDecodeConfig &c) {
  auto bad = [&](const std::string &why) {
    throw ValueError(
        str_cat("decode attention kernel for ", p.str(), " with ", c.str(), ": ", why));
  };
  if (!(p.dtype.is_half() || p.dtype == dtypes::f32)) bad("q, k, v must be f16, bf16 or f32");
  if (p.heads <= 0 || p.kv() <= 0 || p.heads % p.kv() != 0) bad("k and v's heads must divide q's");
  if (p.seq_q < 1) bad("q must have at least one row");
  if (p.dv() != p.head_dim) bad("v's head dim must equal q's");
  if (p.packed()) bad("packed inputs are read by the mma.sync kernel only");
  const int e = attention_decode_detail::vec(p.dtype);
  if (p.head_dim <= 0 || p.head_dim % e != 0 || p.head_dim > 256)
    bad(str_cat("head dim must be a multiple of ", e, " up to 256 (16-byte vectors)"));
  if (c.rows < 1 || c.rows > 8) bad("rows must be in [1, 8]");
  if (c.block_kv != 32 && c.block_kv != 64 && c.block_kv != 128)
    bad("block_kv must be 32, 64 or 128");
  if (c.warps != 2 && c.warps != 4 && c.warps != 8) bad("warps must be 2, 4 or 8");
  if (c.splits < 1 || c.splits > 64) bad("splits must be in [1, 64]");
  const auto s = attention_decode_detail::split_of(p, c);
  if (s.ps < 1 || c.threads() % c.block_kv || 32 % s.ps || p.head_dim % s.ps || s.dk % e)
    bad(str_cat("the ", c.threads(), " threads must split each of the ", c.block_kv,
                " keys of a tile into 1 to 32 "
                "parts of whole 16-byte vectors"));
  if (c.threads() % s.dv || s.kg < 1 || c.block_kv % s.kg)
    bad(str_cat("the ", c.threads(), " threads must cover the ", s.dv,
                " vectors of a V row in whole key groups"));
  if (p.has_mask &&
      !(p.mask_dtype.is_bool() || p.mask_dtype.is_half() || p.mask_dtype == dtypes::f32))
    bad("the mask must be bool (true = attend) or f16, bf16, f32 (added to the scores)");
  if (p.has_mask && p.mask_heads != 1 && p.mask_heads != p.heads)
    bad("the mask's head dim must be 1 or q's heads");
}

/// Adds kernel `name` for problem `p` (its batch and seq_kv are run-time values). Parameters: q
/// dt[B][H][Sq][D], k and v dt[B][Hkv][S][D], the mask when p.has_mask (mask_dt[B or 1][1 or
/// H][Sq][S]: p.mask_batch > 1 means B), out dt[B][H][Sq][D] (dt[B][Sq][H][D] when p.heads_last),
/// with splits > 1 the workspaces ws_o f32[splits][R][D], ws_ml f32[splits][R][2] and the
/// counters i32[B * Hkv * row groups] (zero before the first launch; left a multiple of the
/// splits), where R = B * Hkv * row groups * rows; then scale (f32) and the symbols decode_batch
/// and decode_keys (i32).
inline void add_attention_decode_kernel(lang::ScriptModule &mod, const std::string &name,
                                        const AttentionProblem &p,
                                        const AttentionDecodeConfig &cfg) {
  using namespace hidet::lang;
  namespace ad = attention_decode_detail;
  check_attention_decode(p, cfg);
  const int H = p.heads, Hkv = p.kv(), G = H / Hkv, Sq = p.seq_q, D = p.head_dim;
  const DataType dt = p.dtype;
  const int E = ad::vec(dt), R = G * Sq, RB = cfg.rows, RG = ceil_div(R, RB), T = cfg.block_kv;
  const int threads = cfg.threads(), W = cfg.warps, splits = cfg.splits;
  const auto sp = ad::split_of(p, cfg);
  const bool guard_r = R % RB != 0;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const Expr B = dim_expr(ad::batch_sym()), S = dim_expr(ad::keys_sym());
  const Expr NR = B * (Hkv * RG * RB); // workspace rows
  auto T_ = [](DataType d) { return TensorSpec(d, {}); };

  std::vector<ParamSpec> specs{T_(dt)[B][H][Sq][D], T_(dt)[B][Hkv][S][D], T_(dt)[B][Hkv][S][D]};
  const bool mask_batched = p.has_mask && p.mask_batch > 1;
  if (p.has_mask)
    specs.push_back(T_(p.mask_dtype)[mask_batched ? B : Expr(1)][p.mask_heads][Sq][S]);
  specs.push_back(p.heads_last ? T_(dt)[B][Sq][H][D] : T_(dt)[B][H][Sq][D]);
  if (splits > 1) {
    specs.push_back(T_(dtypes::f32)[splits][NR][D]);
    specs.push_back(T_(dtypes::f32)[splits][NR][2]);
    specs.push_back(T_(dtypes::i32)[B * (Hkv * RG)]);
  }
  specs.push_back(f32);
  push_symbol_params(specs, {"decode_batch", "decode_keys"});
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &ps) {
    std::size_t pi = 0;
    lang::Tensor q = ps[pi++], k = ps[pi++], v = ps[pi++];
    std::optional<lang::Tensor> mask;
    if (p.has_mask) mask = lang::Tensor(ps[pi++]);
    lang::Tensor out = ps[pi++];
    std::optional<lang::Tensor> ws_o, ws_ml, counters;
    if (splits > 1)
      ws_o = lang::Tensor(ps[pi++]), ws_ml = lang::Tensor(ps[pi++]),
      counters = lang::Tensor(ps[pi++]);
    Var scale = ps[pi++];
    attrs.cuda.grid_dim = {splits, Hkv * RG, max(B, 1)};
    attrs.cuda.block_dim = threads;
    const int q_bytes = RB * D * 4, s_bytes = RB * T * 4, o_bytes = sp.kg * RB * D * 4;
    attrs.cuda.dynamic_smem_bytes = q_bytes + s_bytes + o_bytes;
    auto q_s = dynamic_shared_tensor(f32[RB][D], 0, "q_rows");
    auto s_s = dynamic_shared_tensor(f32[RB][T], q_bytes, "scores");
    auto o_s = dynamic_shared_tensor(f32[sp.kg][RB][D], q_bytes + s_bytes, "o_parts");
    auto row_m = shared_tensor(f32[RB], "row_max"), row_l = shared_tensor(f32[RB], "row_sum");
    auto row_c = shared_tensor(f32[RB], "row_corr");
    auto range_s = shared_tensor(i32[2], "key_range"), warp_lo = shared_tensor(i32[W], "warp_lo");
    auto warp_hi = shared_tensor(i32[W], "warp_hi"), done = shared_tensor(i32[1], "done");
    auto acc = register_tensor(f32[RB][E], "o");
    auto kreg = register_tensor(T_(dt)[sp.nk][E], "k_vec");
    auto vreg = register_tensor(T_(dt)[sp.nv][E], "v_vec");

    Var split = blockIdx.x, kvh = blockIdx.y / RG, rg = blockIdx.y % RG, b = blockIdx.z;
    Var tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    // Row r of the block: q head kvh * G + (rg * RB + r) / Sq, query (rg * RB + r) % Sq.
    auto row_h = [&](const Expr &r) { return kvh * G + (rg * RB + r) / Sq; };
    auto row_i = [&](const Expr &r) { return (rg * RB + r) % Sq; };
    auto row_ok = [&](const Expr &r) { return guard_r ? Expr(rg * RB + r < R) : Expr(true); };
    // Row r's mask entry at key j.
    auto mask_at = [&](const Expr &r, const Expr &j) {
      Expr mb = mask_batched ? Expr(b) : Expr(0),
           mh = p.mask_heads == 1 ? Expr(0) : Expr(min(row_h(r), H - 1));
      return (*mask)[mb][mh][row_i(r)][j];
    };
    // Whether row r attends to key j per the mask and causality, given mv, its mask entry there.
    auto attends = [&](const Expr &r, const Expr &j, const Expr &mv) {
      Expr ok = row_ok(r);
      if (p.causal) ok = ok && j <= row_i(r);
      return ok && (p.mask_dtype.is_bool() ? mv : Expr(cast(mv, f32) > ad::lowest(p.mask_dtype)));
    };

    // 1. The block's rows of q in shared memory, in f32, times scale * log2 e (rows past R: 0).
    Var sl2 = scale * attention_detail::log2e;
    for_(range(ceil_div(RB * D, threads)), [&](Var it) {
      Var e = it * threads + tid;
      if_(e < RB * D, [&] {
        Var r = e / D, d = e % D;
        Expr val = cast(q[b][min(row_h(r), H - 1)][row_i(r)][d], f32) * sl2;
        q_s[r][d] = guard_r ? Expr(select(row_ok(r), val, 0.0f)) : val;
      });
    });
    if_(tid < RB, [&] { row_m[tid] = neg_inf, row_l[tid] = 0.0f; });

    // 2. The keys [first, last] that some row attends to.
    if (!p.has_mask) {
      if_(tid == 0, [&] {
        range_s[0] = 0;
        Expr last = S - 1;
        if (p.causal) { // the largest query index among the block's rows
          Expr mi = row_i(0);
          for (int r = 1; r < RB; ++r)
            mi = select(row_ok(r), max(mi, row_i(r)), mi);
          last = min(last, mi);
        }
        range_s[1] = last;
      });
    } else {
      // kScan keys per thread and pass, each row's mask entries loaded first at clamped indices
      // (no load under a branch): the loads of a pass are in flight together. One key per pass
      // made the scan a chain of dependent round trips to memory, S / threads of them: 32 for a
      // cache of 4096 slots, the likely cause of the kernel's time growing with the slots at
      // batch 1 (33.5 us on the H100 against 8.4 us with 576 slots and the same 544 valid keys,
      // bench_decode 2026-11-28; this change not yet timed on a GPU).
      constexpr int kScan = 8;
      Var lo = var(i32, std::numeric_limits<int>::max(), "lo"), hi = var(i32, -1, "hi");
      for_(range(ceil_div(S, threads * kScan)), [&](Var it) {
        std::vector<Var> keys, seen;
        for (int u = 0; u < kScan; ++u) {
          Var j = (it * kScan + u) * threads + tid;
          Var jc = min(j, S - 1);
          std::vector<Var> mv;
          for (int r = 0; r < RB; ++r)
            mv.push_back(Var(mask_at(r, jc)));
          Expr any = attends(0, jc, mv[0]);
          for (int r = 1; r < RB; ++r)
            any = any || attends(r, jc, mv[std::size_t(r)]);
          keys.push_back(j);
          seen.push_back(Var(Expr(j < S) && any));
        }
        for (int u = 0; u < kScan; ++u) {
          const Var &j = keys[std::size_t(u)];
          if_(seen[std::size_t(u)], [&] { lo = min(lo, j), hi = max(hi, j); });
        }
      });
      for (int off = 16; off >= 1; off /= 2) {
        lo = min(lo, shfl_xor_sync(0xffffffffu, lo, off));
        hi = max(hi, shfl_xor_sync(0xffffffffu, hi, off));
      }
      if_(lane == 0, [&] { warp_lo[warp] = lo, warp_hi[warp] = hi; });
      syncthreads();
      if_(tid == 0, [&] {
        Var l2 = var(i32, warp_lo[0], "first"), h2 = var(i32, warp_hi[0], "last");
        for (int w = 1; w < W; ++w)
          l2 = min(l2, warp_lo[w]), h2 = max(h2, warp_hi[w]);
        range_s[0] = l2, range_s[1] = h2;
      });
    }
    syncthreads();

    // 3. This block's part of the range: even parts of at least one tile each.
    Var count = select(range_s[1] >= range_s[0], range_s[1] - range_s[0] + 1, 0);
    Var first = select(count > 0, range_s[0], 0);
    Var chunk = max(ceil_div(count, splits), T);
    Var k_lo = first + split * chunk, k_hi = min(k_lo + chunk, first + count);
    Var n_tiles = select(k_hi > k_lo, ceil_div(k_hi - k_lo, T), 0);
    for (int r = 0; r < RB; ++r)
      for (int e = 0; e < E; ++e)
        acc[r][e] = 0.0f;
    Var key = tid / sp.ps, part = tid % sp.ps; // scores: key of the tile, part of its head dim
    Var kg = tid / sp.dv, dc = tid % sp.dv;    // O += P V: key group, vector of the head dim

    for_(range(n_tiles), [&](Var t) {
      Var kv0 = k_lo + t * T;
      // K and V of the tile to registers (keys past this part: zeros, never read)
      Var kr = kv0 + key;
      if_(kr < k_hi, [&] {
        for (int c = 0; c < sp.nk; ++c)
          load_vector(kreg[c][0], k[b][kvh][kr][part * sp.dk + c * E], 16);
      }).else_([&] {
        for (int c = 0; c < sp.nk; ++c)
          for (int e = 0; e < E; ++e)
            kreg[c][e] = 0.0f;
      });
      for (int jv = 0; jv < sp.nv; ++jv) {
        Var vr = kv0 + kg + jv * sp.kg;
        if_(vr < k_hi, [&] { load_vector(vreg[jv][0], v[b][kvh][vr][dc * E], 16); }).else_([&] {
          for (int e = 0; e < E; ++e)
            vreg[jv][e] = 0.0f;
        });
      }
      // S = Q K^T (log2 units), the parts of a key added across their lanes, masked
      for (int r = 0; r < RB; ++r) {
        Var s = var(f32, 0.0f, "s");
        for (int c = 0; c < sp.nk; ++c)
          for (int e = 0; e < E; ++e)
            s = fma(q_s[r][part * sp.dk + c * E + e], cast(kreg[c][e], f32), s);
        for (int off = sp.ps / 2; off >= 1; off /= 2)
          s = s + shfl_xor_sync(0xffffffffu, s, off);
        if_(part == 0, [&] {
          Expr val = s;
          if (p.has_mask) {
            Expr mv = mask_at(r, min(kr, S - 1));
            val = p.mask_dtype.is_bool() ? Expr(select(mv, val, neg_inf))
                                         : Expr(fma(cast(mv, f32), attention_detail::log2e, val));
          }
          Expr ok = kr < k_hi;
          if (p.causal) ok = ok && kr <= row_i(r);
          s_s[r][key] = select(ok, val, neg_inf);
        });
      }
      syncthreads();
      // The online softmax of each row, one warp per row
      for (int r = 0; r < RB; ++r)
        if_(warp == r % W, [&] {
          Var mx = var(f32, neg_inf, "mx");
          for (int x = 0; x < T / 32; ++x)
            mx = max(mx, s_s[r][lane + x * 32]);
          for (int off = 16; off >= 1; off /= 2)
            mx = max(mx, shfl_xor_sync(0xffffffffu, mx, off));
          Var m_old =
              var(f32, 0.0f,
                  "m_old"); // lane 0 reads and replaces the row's max; the warp gets it by shuffle
          if_(lane == 0, [&] { m_old = row_m[r]; });
          m_old = shfl_sync(0xffffffffu, m_old, 0);
          Var m_new = max(m_old, mx);
          Var m_use =
              select(m_new == neg_inf, 0.0f, m_new); // every score so far -inf: no inf - inf
          Var corr = exp2(m_old - m_use);
          Var psum = var(f32, 0.0f, "psum");
          for (int x = 0; x < T / 32; ++x) {
            Var pv = exp2(s_s[r][lane + x * 32] - m_use);
            s_s[r][lane + x * 32] = pv;
            psum += pv;
          }
          for (int off = 16; off >= 1; off /= 2)
            psum = psum + shfl_xor_sync(0xffffffffu, psum, off);
          if_(lane == 0,
              [&] { row_m[r] = m_new, row_l[r] = row_l[r] * corr + psum, row_c[r] = corr; });
        });
      syncthreads();
      // O = O * corr + P V
      for (int r = 0; r < RB; ++r) {
        Var corr = row_c[r];
        for (int e = 0; e < E; ++e)
          acc[r][e] = acc[r][e] * corr;
        for (int jv = 0; jv < sp.nv; ++jv) {
          Var pv = s_s[r][kg + jv * sp.kg];
          for (int e = 0; e < E; ++e)
            acc[r][e] = fma(pv, cast(vreg[jv][e], f32), acc[r][e]);
        }
      }
      syncthreads(); // the scores are read before the next tile writes them
    });

    // 4. The key groups' O added (in a fixed order), then stored or combined across the parts.
    for (int r = 0; r < RB; ++r)
      for (int e = 0; e < E; ++e)
        o_s[kg][r][dc * E + e] = acc[r][e];
    syncthreads();
    auto each_output = [&](const std::function<void(Expr r, Expr d, Expr o)> &f) {
      for_(range(ceil_div(RB * D, threads)), [&](Var it) {
        Var e = it * threads + tid;
        if_(e < RB * D && row_ok(e / D), [&] {
          Var r = e / D, d = e % D;
          Var o = var(f32, o_s[0][r][d], "o_sum");
          for (int g = 1; g < sp.kg; ++g)
            o = o + o_s[g][r][d];
          f(r, d, o);
        });
      });
    };
    auto store = [&](const Expr &r, const Expr &d, const Expr &val) {
      Expr h = row_h(r), i = row_i(r);
      if (p.heads_last)
        out[b][i][h][d] = cast(val, dt);
      else
        out[b][h][i][d] = cast(val, dt);
    };
    if (splits == 1)
      return each_output([&](Expr r, Expr d, Expr o) {
        Var l = row_l[r];
        store(r, d, o * select(l > 0.0f, 1.0f / l, 0.0f));
      });
    Var row0 = ((b * Hkv + kvh) * RG + rg) * RB; // this block's rows in the workspaces
    each_output([&](Expr r, Expr d, Expr o) { (*ws_o)[split][row0 + r][d] = o; });
    if_(tid < RB, [&] {
      (*ws_ml)[split][row0 + tid][0] = row_m[tid], (*ws_ml)[split][row0 + tid][1] = row_l[tid];
    });
    Var slot = (b * Hkv + kvh) * RG + rg;
    last_block_of_splits((*counters)[slot], tid, splits, done, [&] {
      for_(range(ceil_div(RB * D, threads)), [&](Var it) {
        Var e = it * threads + tid;
        if_(e < RB * D && row_ok(e / D), [&] {
          Var r = e / D, d = e % D, row = row0 + r;
          Var mx = var(f32, neg_inf, "mx");
          for_(range(splits), [&](Var s) { mx = max(mx, (*ws_ml)[s][row][0]); });
          Var m_use = select(mx == neg_inf, 0.0f, mx);
          Var l = var(f32, 0.0f, "l"), o = var(f32, 0.0f, "o");
          for_(range(splits), [&](Var s) {
            Var w = exp2((*ws_ml)[s][row][0] - m_use);
            l = fma(w, (*ws_ml)[s][row][1], l), o = fma(w, (*ws_o)[s][row][d], o);
          });
          store(r, d, o * select(l > 0.0f, 1.0f / l, 0.0f));
        });
      });
    });
  });
}

/// A tiling for problem `p` at batch `batch` and `keys` cache slots on `num_sms` multiprocessors:
/// up to 8 query rows per block (all of a kv head's rows when they fit), tiles of 64 keys (32
/// where a key's 16-byte vectors would be too many per thread: f32 with head dim 128 and more,
/// head dim 256), 4 warps, and the keys split over enough blocks for about 4 per multiprocessor
/// (at most one part per tile of the cache, at most 32: the valid keys are a device value, often
/// far fewer than the slots, and parts of a few keys each cost more in their combination than they
/// save; H200, bf16, batch 1, 544 valid keys of 4096 slots, bench_decode's candidates, 2026-11-30:
/// 32 parts 8.8 us against 64's 14.9 at Llama-3.2-1B's heads, 12.8 against 25.3 at 8B's; at 576
/// slots the 9 parts of one tile each were the fastest of 4 to 36).
inline AttentionDecodeConfig attention_decode_heuristic_config(const AttentionProblem &p,
                                                               std::int64_t batch,
                                                               std::int64_t keys, int num_sms) {
  AttentionDecodeConfig c;
  const int R = (p.heads / std::max(1, p.kv())) * p.seq_q;
  c.rows = std::min(8, std::max(1, R));
  c.block_kv = p.head_dim * int(p.dtype.nbytes()) > 256 ? 32 : 64;
  const std::int64_t base = batch * p.kv() * lang::ceil_div(R, c.rows);
  const std::int64_t want =
      lang::ceil_div(std::int64_t(4) * std::max(1, num_sms), std::max<std::int64_t>(base, 1));
  c.splits = int(std::clamp<std::int64_t>(
      std::min(want, lang::ceil_div(keys, std::int64_t(c.block_kv))), 1, 32));
  return c;
}

/// A built decode attention kernel for one problem (its batch and seq_kv are run-time values):
/// f(q, k, v, mask, out, scale) with the mask's tensor undefined when the problem has none. Shapes
/// are checked at launch against the problem; with split-KV the workspaces and counters are kept
/// per batch.
class AttentionDecode {
public:
  AttentionDecode(const AttentionProblem &p, const AttentionDecodeConfig &cfg)
      : p_(p), cfg_(cfg), cm_(module(p, cfg).build(options(p))) {}
  void operator()(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &mask,
                  const Tensor &out, double scale) const {
    const std::int64_t batch = q.shape()[0], keys = k.shape()[2];
    if (keys > std::numeric_limits<int>::max() / 2)
      throw ValueError(str_cat("decode attention kernel for ", p_.str(), ": ", keys,
                               " keys are too many (32-bit indices)"));
    std::vector<LaunchArg> args{q, k, v};
    if (p_.has_mask) args.emplace_back(mask);
    args.emplace_back(out);
    if (cfg_.splits > 1) {
      const int R = (p_.heads / p_.kv()) * p_.seq_q, RG = lang::ceil_div(R, cfg_.rows);
      const std::int64_t rows = batch * p_.kv() * RG * cfg_.rows;
      args.emplace_back(buffers_.get("o", batch, [&] {
        return hidet::empty({cfg_.splits, rows, p_.head_dim}, dtypes::f32, "cuda");
      }));
      args.emplace_back(buffers_.get("ml", batch, [&] {
        return hidet::empty({cfg_.splits, rows, 2}, dtypes::f32, "cuda");
      }));
      args.emplace_back(buffers_.get("counters", batch, [&] {
        return hidet::zeros({batch * p_.kv() * RG}, dtypes::i32, "cuda");
      }));
    }
    args.emplace_back(scale);
    args.emplace_back(batch), args.emplace_back(keys);
    cm_["attention_decode"].launch(args);
  }
  const AttentionProblem &problem() const { return p_; }
  const AttentionDecodeConfig &config() const { return cfg_; }

private:
  static lang::ScriptModule module(const AttentionProblem &p, const AttentionDecodeConfig &c) {
    auto mod = lang::script_module(str_cat("attention_decode_", p.dtype, "_h", p.heads, "_kv",
                                           p.kv(), "_q", p.seq_q, "_d", p.head_dim));
    add_attention_decode_kernel(mod, "attention_decode", p, c);
    return mod;
  }
  /// exp2 as one ex2.approx for f16 and bf16 (P is rounded to 16 bits in the other kernels too).
  static BuildOptions options(const AttentionProblem &p) {
    BuildOptions o;
    o.fast_math = p.dtype != dtypes::f32;
    return o;
  }
  AttentionProblem p_;
  AttentionDecodeConfig cfg_;
  CompiledModule cm_;
  mutable RowBuffers buffers_; // split-KV: workspaces and counters per batch
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
