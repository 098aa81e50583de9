// Matrix products: matmul (numpy semantics), batch_matmul and linear. When a and b have one
// dtype among f32, f16 and bf16, the product runs on a template (matmul_templates.hpp: FMA,
// mma.sync or TMA + wgmma kernels, tuned per shape under hidet::option::search_space): a matrix b
// folds a's batch dimensions into its rows; batched operands each carry the whole batch or none
// of it. Every other case (integer or mixed dtypes, a partly broadcast batch) runs the tiled
// shared-memory kernel of schedule_matmul.hpp, correct for every shape and dtype.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/epilogue.hpp"

namespace hidet::ops {

/// a @ b with numpy semantics: 1-D operands are promoted (and the axis removed afterwards),
/// leading (batch) dimensions broadcast. Accumulates in f32 for f16/bf16.
Tensor matmul(const Tensor &a, const Tensor &b);
/// a @ b followed by the epilogue `e` (its x: the product's shape and dtype; `extras`: its other
/// inputs, e->inputs in order) in one kernel when a template serves the product, else the product
/// and then the epilogue. Graph passes build these (graph::fuse_epilogues); with symbolic inputs
/// it records a FusedMatmul node.
Tensor matmul(const Tensor &a, const Tensor &b, const std::shared_ptr<const Epilogue> &e,
              const std::vector<Tensor> &extras);
/// The row count of a of shape `a_shape` in a product with a matrix: its leading extents together.
Dim matmul_row_count(const SymShape &a_shape);
/// a @ b, then the epilogue `e` when given, for operands of constant shapes whose row count (a's
/// leading dimensions together, b a matrix) is the symbolic `rows` at the symbol `values`, e.g.
/// n*s for a of [n, s, 768]: the product runs on a template kernel built once for symbolic rows
/// and shared by every value of the symbols that picks the same tiling
/// (matmul_template_kernel_rows). `e` may be over the symbols (Epilogue::identity({rows, n}),
/// steps of symbolic tasks); `extras` are its inputs at `values`. f32, f16 and bf16 (the FMA,
/// mma.sync and wgmma templates); nullopt where no such template serves (integer or mixed
/// dtypes, a batched b, tensor cores off for half products, a failed build): the
/// caller runs the constant-shape path. A graph's Matmul and FusedMatmul nodes over symbolic
/// extents take this path (graph::optimize with shape_generic).
std::optional<Tensor> matmul_rows(const Tensor &a, const Tensor &b, const std::shared_ptr<const Epilogue> &e,
                                  const std::vector<Tensor> &extras, const Dim &rows, const SymbolValues &values);
/// Batched matrix product of [B, m, k] and [B, k, n].
Tensor batch_matmul(const Tensor &a, const Tensor &b);
/// x @ weight^T + bias, with weight [out_features, in_features] (PyTorch's layout).
Tensor linear(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias = std::nullopt);
/// x [m, k] @ w^T for w [n, k] as a row reduction per output (the auto-scheduler's schedule:
/// threads of one output read both rows contiguously), for a few rows, where the templates'
/// tiles would stay mostly empty (a squeeze-and-excite's 1x1 convolutions of a pooled pixel).
/// Float inputs of one dtype; accumulates in f32 for f16/bf16. A task: graph fusion gives it
/// element-wise epilogues (a bias, an activation) in the same kernel.
Tensor gemv(const Tensor &x, const Tensor &w);
/// The grouped product of mixture-of-experts layers (transformers' grouped_mm, torch's
/// F.grouped_mm with a 2-D a and a 3-D b): x [S, K] holds rows sorted by expert and offs [E]
/// (int32 or int64, on the device) the cumulative row counts; expert e multiplies rows
/// [offs[e - 1], offs[e]) (from 0 for e = 0) by weight[e] [K, N], and rows past offs[E - 1] are 0.
/// Out-of-range ends are clamped to [0, S] and a decreasing end gives its expert no rows (each
/// expert starts at the largest end before it). x and weight share a dtype among f32, f16 and
/// bf16 (f32 accumulation). offs is read on the device (no host synchronization), so one build of
/// the kernels (templates/matmul_grouped.hpp) serves every routing and every S; only experts with
/// rows read their weights. Few rows per expert (decoding) run on a GEMV-like kernel, more on
/// tensor cores (f16/bf16) or the FMA kernel (f32). Symbolic inputs record a GroupedMatmul node.
Tensor grouped_matmul(const Tensor &x, const Tensor &weight, const Tensor &offs);
/// c = scale_a * scale_b * (a @ b^T) in `out_dtype` (f16, bf16 or f32) for 8-bit floats a: [m, k]
/// and b: [n, k] (f8e4m3 or f8e5m2; b is given transposed, k innermost, like a linear layer's
/// weight) and per-tensor scales: f32 tensors of one element. This is
/// torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=...). On a Hopper GPU, when a and b
/// share a dtype and k is a multiple of 16, the FP8 wgmma kernel runs
/// (templates/matmul_fp8.hpp); otherwise a reduction kernel computes it in f32 (HIDET_DEBUG=1
/// says so).
Tensor scaled_mm(const Tensor &a, const Tensor &b, const Tensor &scale_a, const Tensor &scale_b, DataType out_dtype);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/matmul.ipp"
#endif
