// The attention templates' shared vocabulary: one problem (AttentionProblem: sizes, dtype,
// masks), one tiling (AttentionConfig: the mma.sync kernel of attention.hpp or, with `wgmma`, the
// Hopper kernel of attention_wgmma.hpp) and the checks that name what a kernel cannot serve.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/runtime/dim.hpp"

namespace hidet::ops::templates {

/// Tiling of an attention kernel: the mma.sync kernel (attention.hpp; block_q = warps * warp_q
/// query rows per block) or, with `wgmma`, the Hopper kernel (attention_wgmma.hpp; block_q = 64
/// rows per consumer warpgroup, block_kv keys per TMA tile, a ring of `stages` K and V tiles).
struct AttentionConfig {
  int warps = 4;         ///< warps of a block
  int warp_q = 16;       ///< query rows of one warp: 16 or 32 (m16 tiles)
  int block_kv = 64;     ///< keys of one K/V tile: 32, 64 or 128 (wgmma: 64, 96, 128, 160 or 192)
  int stages = 2;        ///< K/V buffers of the cp.async ring (2 or 3; wgmma: 2 to 4)
  bool q_in_regs = true; ///< keep the Q fragments in registers (else re-load them per tile)
  bool wgmma = false;    ///< the Hopper kernel (sm_90a): TMA, wgmma, a producer warpgroup
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
  /// Dynamic shared memory in bytes for head dim `d`: the Q tile and `stages` K and V tiles
  /// (wgmma: and the mbarriers: Q, then K full, V full, K empty and V empty per stage).
  int smem_bytes(int d) const { return (block_q() + 2 * stages * block_kv) * d * 2 + (wgmma ? 8 * (1 + 4 * stages) : 0); }
  /// A rough count of the 32-bit registers a thread needs for head dim `d`: the O and S
  /// accumulators (P replaces S; wgmma: P is kept beside S), the Q fragments when kept, the K/V
  /// fragments.
  int fragment_registers(int d) const {
    if (wgmma) return d / 2 + block_kv / 2 + block_kv / 4 + 32;
    int mt = warp_q / 16;
    return mt * (d / 8) * 4 + mt * (block_kv / 8) * 4 + (q_in_regs ? mt * d / 4 : 4) + 8;
  }
  /// "q64 kv64 (4 warps of 16 rows, 2 stages, Q in registers)", "wgmma q128 kv128 (2 consumer
  /// warpgroups, 2 stages)"
  std::string str() const {
    if (wgmma)
      return str_cat("wgmma q", block_q(), " kv", block_kv, " (", consumers, " consumer warpgroup",
                     consumers > 1 ? "s" : "", ", ", stages, " stages)");
    return str_cat("q", block_q(), " kv", block_kv, " (", warps, " warps of ", warp_q, " rows, ",
                   stages, " stages, Q in ", q_in_regs ? "registers" : "shared memory",
                   kv_splits > 1 ? str_cat(", split-kv ", kv_splits) : std::string(), ")");
  }
};

/// One attention problem: sizes, dtype and masks. The kernel is specialized for it.
struct AttentionProblem {
  int batch = 1, heads = 1, seq_q = 1, seq_kv = 1, head_dim = 64;
  DataType dtype = dtypes::f16;
  bool causal = false;
  bool has_mask = false; ///< a mask [mask_batch, mask_heads, seq_q, seq_kv]: additive, or bool (true = attend)
  DataType mask_dtype = dtypes::f32;
  int mask_batch = 1, mask_heads = 1; ///< 1 (broadcast) or batch / heads
  bool heads_last = false; ///< out is [B, Sq, H, D] (attention.transpose(1, 2)) instead of [B, H, Sq, D]

  /// "f16 [2, 8, 128, 64] x kv 256, causal, mask f32 [1, 8]"
  std::string str() const {
    std::string s =
        str_cat(dtype, " [", batch, ", ", heads, ", ", seq_q, ", ", head_dim, "] x kv ", seq_kv);
    if (causal) s += ", causal";
    if (has_mask) s += str_cat(", mask ", mask_dtype, " [", mask_batch, ", ", mask_heads, "]");
    if (heads_last) s += ", out [B, Sq, H, D]";
    return s;
  }
};

/// Throws ValueError naming the config when it cannot be built for head dim `head_dim`.
inline void check_attention_config(const AttentionConfig &c, int head_dim) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("attention config ", c.str(), " for head dim ", head_dim, ": ", why));
  };
  if (c.kv_splits < 1 || c.kv_splits > 64) bad("kv_splits must be in [1, 64]");
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
  if (head_dim != 32 && head_dim != 64 && head_dim != 128) bad("the tensor-core kernel takes head dim 32, 64 or 128");
  if (c.warps < 1 || c.warps > 16) bad("warps must be in [1, 16]");
  if (c.warp_q != 16 && c.warp_q != 32) bad("warp_q must be 16 or 32 (one or two m16 tiles)");
  if (c.block_kv != 32 && c.block_kv != 64 && c.block_kv != 128)
    bad("block_kv must be 32, 64 or 128");
  if (c.stages < 2 || c.stages > 3) bad(str_cat("stages is ", c.stages, "; use 2 or 3"));
  if (c.smem_bytes(head_dim) > 227 * 1024)
    bad(str_cat(c.smem_bytes(head_dim), " bytes of shared memory; an H100 block may use 232448"));
  int vec = head_dim / 8;
  if ((c.block_q() * vec) % c.threads() || (c.block_kv * vec) % c.threads())
    bad(str_cat("the ", c.threads(),
                " threads must copy the tiles in whole rounds of 16-byte vectors"));
}

/// True when every tensor of the problem has fewer than 2^31 elements: the kernel indexes them
/// with 32-bit integers.
inline bool attention_fits_int32(const AttentionProblem &p) {
  const std::int64_t lim = std::int64_t(1) << 31, bh = std::int64_t(p.batch) * p.heads;
  std::int64_t mask =
      p.has_mask ? std::int64_t(p.mask_batch) * p.mask_heads * p.seq_q * p.seq_kv : 0;
  return bh * std::max(p.seq_q, p.seq_kv) * p.head_dim < lim && mask < lim;
}

/// Throws ValueError naming the problem when the kernel cannot serve it.
inline void check_attention_problem(const AttentionProblem &p) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("attention kernel for ", p.str(), ": ", why));
  };
  if (!p.dtype.is_half()) bad("q, k, v must be f16 or bf16");
  if (p.head_dim != 32 && p.head_dim != 64 && p.head_dim != 128) bad("head dim must be 32, 64 or 128");
  if (p.batch <= 0 || p.heads <= 0 || p.seq_q <= 0 || p.seq_kv <= 0) bad("sizes must be positive");
  if (p.batch > 65535 || p.heads > 65535)
    bad("batch and heads must be at most 65535 (grid dimensions)");
  if (!attention_fits_int32(p))
    bad("q, k, v, out and the mask must each have fewer than 2^31 elements (32-bit indexing); "
        "split the batch");
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
} // namespace attention_detail


} // namespace hidet::ops::templates
