// The attention templates' shared vocabulary: one problem (AttentionProblem: sizes, dtype,
// masks), one tiling (AttentionConfig: the mma.sync kernel of attention.hpp, with `wgmma` the
// Hopper kernel of attention_wgmma.hpp, with `fma` the f32 kernel of attention_f32.hpp), the
// checks that name what a kernel cannot serve, and the pieces the mma.sync and f32 kernels share
// (their sizes as expressions, the cp.async tile loads, the masked score, the K/V tile loop).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/compute.hpp"
#include "hidet/ops/templates/matmul_rows.hpp"
#include "hidet/runtime/dim.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Tiling of an attention kernel: the mma.sync kernel (attention.hpp; block_q = warps * warp_q
/// query rows per block), with `wgmma` the Hopper kernel (attention_wgmma.hpp; block_q = 64
/// rows per consumer warpgroup, block_kv keys per TMA tile, a ring of `stages` K and V tiles), or
/// with `fma` the f32 kernel (attention_f32.hpp; warp_q / 4 query rows per thread).
struct AttentionConfig {
  int warps = 4;         ///< warps of a block
  int warp_q = 16;       ///< query rows of one warp: 16 or 32 (m16 tiles); fma: 4, 8 or 16
  int block_kv = 64;     ///< keys of one K/V tile: 32, 64 or 128 (wgmma: 64, 96, 128, 160 or 192; fma: 32 or 64)
  int stages = 2;        ///< K/V buffers of the cp.async ring (2 or 3; wgmma: 2 to 4)
  bool q_in_regs = true; ///< keep the Q fragments in registers (else re-load them per tile); not fma
  bool wgmma = false;    ///< the Hopper kernel (sm_90a): TMA, wgmma, a producer warpgroup
  bool fma = false;      ///< the f32 kernel (CUDA cores: f32 products, no tensor cores)
  int consumers = 2;     ///< wgmma: consumer warpgroups of 64 query rows each (1 to 3)
  int producer_regs = 24; ///< wgmma: the producer warpgroup's setmaxnreg budget
  /// mma.sync kernel: the keys are split into this many runs of whole tiles, one block per run
  /// (split-KV, for grids of few query tiles such as decoding); each run writes its unnormalized
  /// output, row max and row sum in f32, and a second kernel combines the runs.
  int kv_splits = 1;

  int block_q() const { return wgmma ? 64 * consumers : warps * warp_q; }
  int threads() const { return wgmma ? 128 * (consumers + 1) : warps * 32; }
  /// wgmma: the consumers' setmaxnreg budget (what the 64K registers leave, at most 240).
  int consumer_regs() const { return std::min(240, (65536 / 128 - producer_regs) / consumers / 8 * 8); }
  /// Dynamic shared memory in bytes for head dim `d` of q and k and `dv` of v (0: d): the Q
  /// tile and `stages` K and V tiles (wgmma: and the mbarriers: Q, then K full, V full, K empty
  /// and V empty per stage; fma: f32 tiles, Q and K rows padded by 4, and the P tile, its rows
  /// padded by 8). Only the mma.sync kernel takes a dv other than d.
  int smem_bytes(int d, int dv = 0) const {
    if (dv <= 0) dv = d;
    if (fma) return ((block_q() + stages * block_kv) * (d + 4) + stages * block_kv * d + block_q() * (block_kv + 8)) * 4;
    return ((block_q() + stages * block_kv) * d + stages * block_kv * dv) * 2 + (wgmma ? 8 * (1 + 4 * stages) : 0);
  }
  /// A rough count of the 32-bit registers a thread needs for head dim `d` (q, k) and `dv` (v;
  /// 0: d): the O and S accumulators (P replaces S; wgmma: P is kept beside S), the Q fragments
  /// when kept, the K/V fragments.
  int fragment_registers(int d, int dv = 0) const {
    if (dv <= 0) dv = d;
    if (fma) return warp_q / 4 * (block_kv / 8 + d / 8 + 4 + 2) + 8;
    if (wgmma) return d / 2 + block_kv / 2 + block_kv / 4 + 32;
    int mt = warp_q / 16;
    return mt * (dv / 8) * 4 + mt * (block_kv / 8) * 4 + (q_in_regs ? mt * d / 4 : 4) + 8;
  }
  /// "q64 kv64 (4 warps of 16 rows, 2 stages, Q in registers)", "wgmma q128 kv128 (2 consumer
  /// warpgroups, 2 stages)"
  std::string str() const {
    if (fma)
      return str_cat("fma q", block_q(), " kv", block_kv, " (", warps, " warps of ", warp_q, " rows, ", stages, " stages)");
    if (wgmma)
      return str_cat("wgmma q", block_q(), " kv", block_kv, " (", consumers, " consumer warpgroup",
                     consumers > 1 ? "s" : "", ", ", stages, " stages)");
    return str_cat("q", block_q(), " kv", block_kv, " (", warps, " warps of ", warp_q, " rows, ",
                   stages, " stages, Q in ", q_in_regs ? "registers" : "shared memory",
                   kv_splits > 1 ? str_cat(", split-kv ", kv_splits) : std::string(), ")");
  }
};

/// Where the mma.sync kernel reads q, k or v: a [B, H, S, D] tensor (the default), or, packed, the
/// columns [offset, offset + D) of a [B, S, H, width] tensor: the heads of a projection's output
/// split along its last axis and permuted (0, 2, 1, 3), read in place (LeViT's q, k and v are
/// columns 0-15, 16-31 and 32-63 of its QKV projection viewed [B, N, H, 64]).
struct AttentionInput {
  int width = 0, offset = 0; ///< width 0: not packed
  bool packed() const { return width > 0; }
  std::string str() const { return packed() ? str_cat("[B, S, H, ", width, "] at ", offset) : std::string("[B, H, S, D]"); }
};

/// One attention problem: sizes, dtype and masks. The kernel is specialized for it.
struct AttentionProblem {
  int batch = 1, heads = 1, seq_q = 1, seq_kv = 1, head_dim = 64;
  /// v's (and the output's) head dim when it differs from q and k's (LeViT: 16 for q and k, 32
  /// or 64 for v; the mma.sync kernel only). 0: head_dim.
  int head_dim_v = 0;
  DataType dtype = dtypes::f16;
  bool causal = false;
  bool has_mask = false; ///< a mask [mask_batch, mask_heads, seq_q, seq_kv]: additive, or bool (true = attend)
  DataType mask_dtype = dtypes::f32;
  int mask_batch = 1, mask_heads = 1; ///< 1 (broadcast) or batch / heads
  bool heads_last = false; ///< out is [B, Sq, H, D] (attention.transpose(1, 2)) instead of [B, H, Sq, D]
  /// Grouped-query attention: k and v have kv_heads heads (a divisor of heads) and q head h reads
  /// kv head h / (heads / kv_heads), without K/V repeated. 0: as many as q.
  int kv_heads = 0;
  /// The layouts q, k and v are read in (the mma.sync kernel reads packed ones in place).
  AttentionInput in_q, in_k, in_v;
  bool packed() const { return in_q.packed() || in_k.packed() || in_v.packed(); }

  /// The heads of k and v.
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  /// v's and the output's head dim.
  int dv() const { return head_dim_v > 0 ? head_dim_v : head_dim; }
  /// The kv head that q head `h` reads.
  lang::Expr kv_head(const lang::Expr &h) const { return kv() == heads ? h : h / (heads / kv()); }

  /// "f16 [2, 8, 128, 64] x kv 256, causal, mask f32 [1, 8]"
  std::string str() const {
    std::string s =
        str_cat(dtype, " [", batch, ", ", heads, ", ", seq_q, ", ", head_dim, "] x kv ", seq_kv);
    if (causal) s += ", causal";
    if (has_mask) s += str_cat(", mask ", mask_dtype, " [", mask_batch, ", ", mask_heads, "]");
    if (heads_last) s += ", out [B, Sq, H, D]";
    if (kv() != heads) s += str_cat(", ", kv(), " kv heads");
    if (dv() != head_dim) s += str_cat(", v head dim ", dv());
    if (packed()) s += str_cat(", q ", in_q.str(), ", k ", in_k.str(), ", v ", in_v.str());
    return s;
  }
};

/// Throws ValueError naming the config when it cannot be built for head dim `head_dim` of q and k
/// and `head_dim_v` of v (0: head_dim).
inline void check_attention_config(const AttentionConfig &c, int head_dim, int head_dim_v = 0) {
  const int dv = head_dim_v > 0 ? head_dim_v : head_dim;
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("attention config ", c.str(), " for head dim ", head_dim,
                             dv != head_dim ? str_cat(" (v ", dv, ")") : std::string(), ": ", why));
  };
  if (dv != head_dim && (c.fma || c.wgmma))
    bad(str_cat("the ", c.fma ? "f32" : "Hopper", " kernel takes v's head dim equal to q's"));
  if (c.kv_splits < 1 || c.kv_splits > 64) bad("kv_splits must be in [1, 64]");
  if (c.fma) {
    if (c.wgmma) bad("fma and wgmma exclude each other");
    if (head_dim % 32 != 0 || head_dim > 128) bad("the f32 kernel takes head dim 32, 64, 96 or 128");
    if (c.kv_splits != 1) bad("the f32 kernel does not split the keys (kv_splits must be 1)");
    if (c.warps < 1 || c.warps > 8) bad("warps must be in [1, 8]");
    if (c.warp_q != 4 && c.warp_q != 8 && c.warp_q != 16) bad("warp_q must be 4, 8 or 16 (1, 2 or 4 rows per thread)");
    if (c.block_kv != 32 && c.block_kv != 64) bad("block_kv must be 32 or 64");
    if (c.stages < 2 || c.stages > 3) bad(str_cat("stages is ", c.stages, "; use 2 or 3"));
    if (c.smem_bytes(head_dim) > 227 * 1024)
      bad(str_cat(c.smem_bytes(head_dim), " bytes of shared memory; an H100 block may use 232448"));
    if ((c.block_q() * head_dim / 4) % c.threads() || (c.block_kv * head_dim / 4) % c.threads())
      bad(str_cat("the ", c.threads(), " threads must copy the tiles in whole rounds of 16-byte vectors"));
    return;
  }
  if (c.wgmma) {
    if (head_dim != 64 && head_dim != 128) bad("the Hopper kernel takes head dim 64 or 128");
    if (c.kv_splits != 1) bad("the Hopper kernel does not split the keys (kv_splits must be 1)");
    if (c.consumers < 1 || c.consumers > 3) bad("consumers must be 1, 2 or 3 warpgroups");
    if (c.block_kv < 64 || c.block_kv > 192 || c.block_kv % 32 != 0) bad("block_kv must be 64, 96, 128, 160 or 192");
    if (c.stages < 2 || c.stages > 4) bad(str_cat("stages is ", c.stages, "; use 2 to 4"));
    if (c.producer_regs < 24 || c.producer_regs > 64 || c.producer_regs % 8 != 0)
      bad("producer_regs must be a multiple of 8 in [24, 64]");
    if (c.fragment_registers(head_dim) > c.consumer_regs())
      bad(str_cat("the S, P and O fragments need about ", c.fragment_registers(head_dim),
                  " registers per thread; a consumer may use ", c.consumer_regs()));
    if (c.smem_bytes(head_dim) > 227 * 1024)
      bad(str_cat(c.smem_bytes(head_dim), " bytes of shared memory; an H100 block may use 232448"));
    return;
  }
  for (int d : {head_dim, dv})
    if (d != 16 && d != 32 && d != 64 && d != 128) bad("the tensor-core kernel takes head dims 16, 32, 64 or 128");
  if (c.warps < 1 || c.warps > 16) bad("warps must be in [1, 16]");
  if (c.warp_q != 16 && c.warp_q != 32) bad("warp_q must be 16 or 32 (one or two m16 tiles)");
  if (c.block_kv != 32 && c.block_kv != 64 && c.block_kv != 128)
    bad("block_kv must be 32, 64 or 128");
  if (c.stages < 2 || c.stages > 3) bad(str_cat("stages is ", c.stages, "; use 2 or 3"));
  if (c.smem_bytes(head_dim, dv) > 227 * 1024)
    bad(str_cat(c.smem_bytes(head_dim, dv), " bytes of shared memory; an H100 block may use 232448"));
  int vec = head_dim / 8;
  if ((c.block_q() * vec) % c.threads() || (c.block_kv * vec) % c.threads() || (c.block_kv * dv / 8) % c.threads())
    bad(str_cat("the ", c.threads(),
                " threads must copy the tiles in whole rounds of 16-byte vectors"));
}

/// True when every tensor of the problem has fewer than 2^31 elements: the kernel indexes them
/// with 32-bit integers.
inline bool attention_fits_int32(const AttentionProblem &p) {
  const std::int64_t lim = std::int64_t(1) << 31, bh = std::int64_t(p.batch) * p.heads;
  std::int64_t mask =
      p.has_mask ? std::int64_t(p.mask_batch) * p.mask_heads * p.seq_q * p.seq_kv : 0;
  return bh * std::max(p.seq_q, p.seq_kv) * std::max(p.head_dim, p.dv()) < lim && mask < lim;
}

/// Throws ValueError naming the problem when the kernel cannot serve it.
inline void check_attention_problem(const AttentionProblem &p) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("attention kernel for ", p.str(), ": ", why));
  };
  auto tensor_core_dim = [](int d) { return d == 16 || d == 32 || d == 64 || d == 128; };
  if (p.dtype == dtypes::f32) {
    if (p.head_dim % 32 != 0 || p.head_dim > 128) bad("head dim must be 32, 64, 96 or 128 (f32)");
    if (p.dv() != p.head_dim) bad("v's head dim must equal q's (f32)");
  } else if (!p.dtype.is_half()) {
    bad("q, k, v must be f16, bf16 or f32");
  } else if (!tensor_core_dim(p.head_dim) || !tensor_core_dim(p.dv())) {
    bad("head dims must be 16, 32, 64 or 128 (f16, bf16)");
  }
  if (p.batch <= 0 || p.heads <= 0 || p.seq_q <= 0 || p.seq_kv <= 0) bad("sizes must be positive");
  if (p.batch > 65535 || p.heads > 65535)
    bad("batch and heads must be at most 65535 (grid dimensions)");
  if (p.kv() <= 0 || p.heads % p.kv() != 0)
    bad(str_cat("k and v's ", p.kv(), " heads must divide q's ", p.heads, " (grouped-query attention)"));
  if (!attention_fits_int32(p))
    bad("q, k, v, out and the mask must each have fewer than 2^31 elements (32-bit indexing); "
        "split the batch");
  const std::pair<const AttentionInput *, int> inputs[] = {{&p.in_q, p.head_dim}, {&p.in_k, p.head_dim}, {&p.in_v, p.dv()}};
  for (const auto &[in, d] : inputs)
    if (in->packed() && (!p.dtype.is_half() || in->width % 8 != 0 || in->offset % 8 != 0 || in->offset < 0 ||
                         in->offset + d > in->width))
      bad(str_cat("a packed input ", in->str(), " must be f16 or bf16, of a width and at an offset that are multiples "
                  "of 8 (16-byte rows), its ", d, " columns inside the width"));
  if (p.has_mask) {
    if (p.mask_dtype != dtypes::f32 && !p.mask_dtype.is_half() && !p.mask_dtype.is_bool())
      bad("the mask must be f32, f16 or bf16 (added to the scores) or bool (true = attend)");
    if ((p.mask_batch != 1 && p.mask_batch != p.batch) ||
        (p.mask_heads != 1 && p.mask_heads != p.heads))
      bad("the mask's batch and head dims must be 1 or those of q");
  }
}

/// Symbolic extents of an attention problem, for one kernel that serves every value of the
/// symbols (the mma.sync kernel without split-KV): the batch and the query and key lengths as Dims
/// (n, s, ...), and whether the mask's batch dimension is the batch (else 1). The
/// AttentionProblem's numbers are then one value of them (for the checks and the heuristic).
struct AttentionSymbols {
  Dim batch, seq_q, seq_kv;
  bool mask_batched = false;
  /// The symbols, sorted (the kernel's trailing i32 parameters).
  std::vector<std::string> names() const {
    std::vector<std::string> r;
    for (const Dim *d : {&batch, &seq_q, &seq_kv})
      for (const auto &n : d->symbols())
        if (std::find(r.begin(), r.end(), n) == r.end()) r.push_back(n);
    std::sort(r.begin(), r.end());
    return r;
  }
  /// "[n, s] x kv s"
  std::string str() const { return str_cat("[", batch.str(), ", ", seq_q.str(), "] x kv ", seq_kv.str(), mask_batched ? ", mask batched" : ""); }
};

namespace attention_detail {
constexpr float log2e = 1.4426950408889634f;

/// A kernel's sizes as expressions: constants, or (with `sym`) of the symbols' i32 parameters.
/// `guard_q` / `guard_kv`: a query / key tile may be partial (always so over symbols).
struct Extents {
  lang::Expr batch, seq_q, seq_kv, q_tiles, kv_tiles;
  bool guard_q = false, guard_kv = false;
};
inline Extents extents(const AttentionProblem &p, const AttentionSymbols *sym, int block_q, int block_kv) {
  using lang::Expr;
  Extents e;
  e.batch = sym ? dim_expr(sym->batch) : Expr(p.batch);
  e.seq_q = sym ? dim_expr(sym->seq_q) : Expr(p.seq_q);
  e.seq_kv = sym ? dim_expr(sym->seq_kv) : Expr(p.seq_kv);
  e.q_tiles = sym ? lang::ceil_div(e.seq_q, block_q) : Expr(lang::ceil_div(p.seq_q, block_q));
  e.kv_tiles = sym ? lang::ceil_div(e.seq_kv, block_kv) : Expr(lang::ceil_div(p.seq_kv, block_kv));
  e.guard_q = sym || p.seq_q % block_q != 0, e.guard_kv = sym || p.seq_kv % block_kv != 0;
  return e;
}

/// cp.async of `rows` rows of head (b, h) of `src` [B][H][S][D] (packed `in`: columns in.offset..
/// of src [B][S][H][in.width]), from row `row0`, into dst[stage] in 16-byte vectors of `vec`
/// elements spread over `threads` threads; with `guard`, rows at and past `limit` are zero-filled
/// (and read from row limit - 1).
inline void load_rows(lang::Tensor dst, lang::Expr stage, lang::Tensor src, lang::Expr b, lang::Expr h, lang::Expr row0,
                      int rows, int d, int vec, int threads, const lang::Expr &limit, bool guard,
                      const AttentionInput &in = {}) {
  using namespace hidet::lang;
  auto at = [&](const Expr &row, const Expr &col) { return in.packed() ? src[b][row][h][in.offset + col] : src[b][h][row][col]; };
  for_(auto_map({rows, d / vec}, threads).on(threadIdx.x), [&](Expr r, Expr c) {
    Expr row = row0 + r;
    if (!guard) return cp_async(dst[stage][r][c * vec], at(row, c * vec), 16);
    cp_async(dst[stage][r][c * vec], at(min(row, limit - 1), c * vec), 16, select(row < limit, 16, 0));
  });
}

/// The score of query `row` and key `col` in log2 units: `s` (q . k) times `sl2` (scale * log2 e),
/// plus the mask's element times log2 e (an additive mask) or -inf where a bool mask is false;
/// with `masked`, -inf for keys past the end and (causal) above the diagonal.
inline lang::Expr masked_score(const AttentionProblem &p, const AttentionSymbols *sym, const Extents &e,
                               const lang::Tensor *mask, lang::Expr s, const lang::Expr &sl2, const lang::Expr &row,
                               const lang::Expr &col, const lang::Expr &b, const lang::Expr &h, bool masked) {
  using namespace hidet::lang;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  s = s * sl2;
  if (mask) {
    Expr mrow = e.guard_q ? Expr(min(row, e.seq_q - 1)) : row, mcol = e.guard_kv ? Expr(min(col, e.seq_kv - 1)) : col;
    Expr mb = (sym ? !sym->mask_batched : p.mask_batch == 1) ? Expr(0) : b, mh = p.mask_heads == 1 ? Expr(0) : h;
    if (p.mask_dtype.is_bool()) s = select((*mask)[mb][mh][mrow][mcol], s, neg_inf);
    else s = fma(cast((*mask)[mb][mh][mrow][mcol], f32), log2e, s);
  }
  if (masked) {
    Expr ok = p.causal ? Expr(col <= row) : Expr(col < e.seq_kv);
    if (p.causal && e.guard_kv) ok = ok && col < e.seq_kv;
    s = select(ok, s, neg_inf);
  }
  return s;
}

/// The online-softmax step of one row whose running max (log2 units) is `row_max` and whose
/// max over the new tile is `mx`: updates row_max and returns the max to subtract (0 while
/// every score so far is -inf: no inf - inf) and the factor exp2(old - new) that rescales the
/// row's sum and output.
inline std::pair<lang::Var, lang::Var> softmax_step(lang::Element row_max, const lang::Expr &mx) {
  using namespace hidet::lang;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  Var m_new = max(row_max, mx);
  Var m_use = select(m_new == neg_inf, 0.0f, m_new);
  Var corr = exp2(row_max - m_use);
  row_max = m_new;
  return {m_use, corr};
}

/// Adds kernel `name` of the mma.sync or f32 kernel: parameters q, k, v ([B][H][S][D] of
/// p.dtype), the mask when p.has_mask ([B or 1][H or 1][Sq][Skv]), then `outs` (the output, or
/// split-KV's workspaces), scale (f32) and, with `sym`, the symbols (i32). `body` gets them as
/// tensors (the mask null without one).
inline void add_attention_entry(
    lang::ScriptModule &mod, const std::string &name, const AttentionProblem &p, const AttentionSymbols *sym,
    const Extents &e, const std::vector<lang::ParamSpec> &outs,
    const std::function<void(lang::Tensor, lang::Tensor, lang::Tensor, const lang::Tensor *, const std::vector<lang::Tensor> &,
                             lang::Var)> &body) {
  using namespace hidet::lang;
  auto spec = [&](const AttentionInput &in, int heads, const Expr &s, int d) -> ParamSpec {
    auto t = TensorSpec(p.dtype, {})[e.batch];
    return in.packed() ? ParamSpec(t[s][heads][in.width]) : ParamSpec(t[heads][s][d]);
  };
  std::vector<ParamSpec> specs{spec(p.in_q, p.heads, e.seq_q, p.head_dim), spec(p.in_k, p.kv(), e.seq_kv, p.head_dim),
                               spec(p.in_v, p.kv(), e.seq_kv, p.dv())};
  const Expr mask_b = sym ? (sym->mask_batched ? e.batch : Expr(1)) : Expr(p.mask_batch);
  if (p.has_mask) specs.push_back(TensorSpec(p.mask_dtype, {})[mask_b][p.mask_heads][e.seq_q][e.seq_kv]);
  specs.insert(specs.end(), outs.begin(), outs.end());
  specs.push_back(f32);
  if (sym) push_symbol_params(specs, sym->names());
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &ps) {
    std::size_t i = 3;
    std::optional<lang::Tensor> m;
    if (p.has_mask) m = lang::Tensor(ps[i++]);
    std::vector<lang::Tensor> os;
    for (std::size_t j = 0; j < outs.size(); ++j) os.emplace_back(ps[i++]);
    body(ps[0], ps[1], ps[2], m ? &*m : nullptr, os, ps[i]);
  });
}

/// The K/V tile loop of the mma.sync and f32 kernels after the Q tile's cp.async was issued:
/// `stages - 1` tiles in flight ahead of the one computed (one commit group per tile, empty at
/// the tail), `after_q` once the Q tile has landed, then `tile(stage, kv0, masked)` for tiles
/// t_begin .. t_begin + n_tiles - 1 of block_kv keys. `masked` is true on tiles that cross the
/// causal diagonal of the block's rows from q0 (block_q of them) and on the partial last tile.
inline void kv_tile_loop(const AttentionProblem &p, const Extents &e, int stages, int block_kv, const lang::Expr &q0,
                         const lang::Expr &t_begin, const lang::Expr &n_tiles,
                         const std::function<void(lang::Expr, lang::Expr)> &load_kv, const std::function<void()> &after_q,
                         const std::function<void(lang::Expr, lang::Expr, bool)> &tile) {
  using namespace hidet::lang;
  cp_async_commit_group(); // the Q tile
  for (int s = 0; s < stages - 1; ++s) { // prologue: the first stages - 1 K/V tiles in flight
    if_(s < n_tiles, [&] { load_kv(Expr(s), (t_begin + s) * block_kv); });
    cp_async_commit_group();
  }
  cp_async_wait_group(stages - 1); // the Q tile has landed (for this thread) ...
  syncthreads();                   // ... for all threads
  after_q();
  for_(range(n_tiles), [&](Var t) {
    cp_async_wait_group(stages - 2); // tile t has landed (for this thread) ...
    syncthreads();                   // ... for all threads; buffer (t - 1) % stages is free
    Var next = t + (stages - 1);
    if_(next < n_tiles, [&] { load_kv(next % stages, (t_begin + next) * block_kv); });
    cp_async_commit_group(); // an empty group at the tail keeps the count uniform
    Var kv0 = (t_begin + t) * block_kv;
    if (p.causal || e.guard_kv) {
      Expr need = p.causal ? Expr(kv0 + (block_kv - 1) > q0) : Expr(false);
      Expr last = t_begin + t == e.kv_tiles - 1; // the partial tile
      if (e.guard_kv) need = p.causal ? Expr(need || last) : last;
      if_(need, [&] { tile(t % stages, kv0, true); }).else_([&] { tile(t % stages, kv0, false); });
    } else {
      tile(t % stages, kv0, false);
    }
  });
  cp_async_wait_all();
}
} // namespace attention_detail


} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
