// Scaled dot-product attention with PyTorch's semantics:
//   scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale)
//     = softmax(q @ k^T * scale + attn_mask + causal_bias, -1) @ v
// for q [B, H, Sq, D], k [B, H, Skv, D] and v [B, H, Skv, Dv] (Dv may differ from D, as in
// PyTorch). On cuda, f16 and bf16 with D and Dv each 16, 32, 64 or 128 run the flash-attention
// template on tensor cores (ops/templates/attention.hpp) and f32 with D = Dv = 32, 64, 96 or 128 its
// f32 counterpart on CUDA cores (ops/templates/attention_f32.hpp), tuned per problem
// over hidet::option::search_space() (0: the default tiling, no benchmarking); other dtypes and
// head dims run a composition of matmul, softmax and element-wise operators. Built kernels are kept
// per (problem, tiling) in this process, so a repeated call compiles nothing.
#pragma once

#include <optional>

#include "hidet/runtime/tensor.hpp"

namespace hidet::ops {

/// Attention of q [B, H, Sq, D] over k [B, H, Skv, D] and v [B, H, Skv, Dv] (PyTorch's
/// torch.nn.functional.scaled_dot_product_attention): softmax(q k^T * scale + mask) v with
/// scale = 1 / sqrt(D) by default; `attn_mask` is an additive float mask broadcastable to
/// [B, H, Sq, Skv] whose last two dims are exactly [Sq, Skv] (or a bool mask: true = attend);
/// `is_causal` masks keys j > i (top-left aligned); both may be given. Rows with every key
/// masked give 0, as PyTorch. Returns [B, H, Sq, Dv] in q's dtype.
Tensor scaled_dot_product_attention(const Tensor &q, const Tensor &k, const Tensor &v,
                                    const std::optional<Tensor> &attn_mask = std::nullopt,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

/// scaled_dot_product_attention(...).transpose(1, 2): the output as [B, Sq, H, D], the layout a
/// transformer's output projection reads after merging the heads; the attention kernel stores it
/// so (no separate permute). graph::fuse_attention rewrites attention followed by that permute
/// into this.
Tensor scaled_dot_product_attention_heads_last(const Tensor &q, const Tensor &k, const Tensor &v,
                                               const std::optional<Tensor> &attn_mask = std::nullopt,
                                               bool is_causal = false,
                                               std::optional<double> scale = std::nullopt);
/// One of packed attention's inputs: the `dim` columns from `offset` of x [B, S, H, W], whose heads
/// (permuted to [B, H, S, dim]) are attention's q, k or v.
struct PackedHeads {
  Tensor x;
  std::int64_t offset = 0, dim = 0;
};
/// Attention over q, k and v read in place from the heads of projections: q is
/// q.x[..., q.offset : q.offset + q.dim].permute(0, 2, 1, 3), and k and v likewise (LeViT splits
/// q, k and v from one QKV projection viewed [B, N, H, 64] and permutes each; graph::fuse_attention
/// makes such attention this node). Otherwise as scaled_dot_product_attention (heads_last: the
/// output [B, Sq, H, Dv]). In f16/bf16 on cuda, with head dims of 16, 32, 64 or 128, widths and
/// offsets that are multiples of 8 and 16-byte aligned data, the flash kernel reads the columns
/// where they are (no permuted copies), unless the Hopper kernel would serve the problem (long
/// sequences at head dim 64 or 128); otherwise the slices are made and attention runs as usual.
Tensor scaled_dot_product_attention_packed(const PackedHeads &q, const PackedHeads &k, const PackedHeads &v,
                                           const std::optional<Tensor> &attn_mask = std::nullopt,
                                           bool is_causal = false, std::optional<double> scale = std::nullopt,
                                           bool heads_last = false);

/// True when attention of these q, k, v (constant shapes) runs as a composition of products,
/// softmax and element-wise operators at any time: no kernel serves its dtype and head dim, and
/// more than 8 query rows rule out the decode kernel. graph::fuse_attention replaces such
/// attention nodes by that composition (scaled_dot_product_attention_composed), so the graph
/// fuses it, and leaves such compositions written out alone.
bool attention_runs_composed(const Tensor &q, const Tensor &k, const Tensor &v);

/// The composition of products, softmax and element-wise operators that attention runs where no
/// kernel serves it (the arguments of scaled_dot_product_attention; a bool mask is converted to
/// its additive form; the output [B, Sq, H, D] when heads_last). q, k, v of constant extents.
Tensor scaled_dot_product_attention_composed(const Tensor &q, const Tensor &k, const Tensor &v,
                                             const std::optional<Tensor> &attn_mask, bool is_causal,
                                             std::optional<double> scale, bool heads_last);

/// A bool mask (true = attend) as the f32 mask added to the scores: 0 where attended, -inf
/// elsewhere (ValueError for another dtype).
Tensor attention_additive_mask(const Tensor &mask);

/// Attention nodes over symbolic batch and lengths (a graph traced with hidet::symbol) run, where
/// the graph binds the symbols, on the mma.sync (f16, bf16) or f32 template built once for every
/// value of them (templates::AttentionSymbols; where the heuristic picks the Hopper kernel, the
/// mma.sync one; split-KV with a power of two of runs): the number of such builds in this process.
std::size_t attention_symbolic_builds();

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/attention.ipp"
#endif
