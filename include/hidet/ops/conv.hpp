// 2-D convolution, NCHW (conv2d, PyTorch's layout) and NHWC (conv2d_nhwc).
//
//   y[n, o, i, j] = bias[o] + sum_{c < C/groups, p < KH, q < KW}
//                   x[n, g C/groups + c, i sh - ph + p dh, j sw - pw + q dw] * w[o, c, p, q]
// with g = o / (O / groups) and x = 0 outside the input (zero padding).
//
// f32, f16 and bf16 (x, weight and bias of one dtype) run the templates of
// ops/templates/conv2d.hpp: implicit GEMM on tensor cores (f16/bf16, f32 accumulation) or on the
// FMA units (f32), a direct kernel for depthwise convolutions (groups == C == O). The config is
// the template's heuristic default at search space 0 and tuned (tuning::pick, recorded on disk)
// at spaces 1 and 2; built runners are cached in-process, so a repeated call compiles nothing.
// Everything else (integer dtypes, mixed dtypes, sizes past 32-bit indexing, unaligned views)
// runs a compute definition (a reduction over the group's input channels and the window)
// through the auto-scheduler: correct for every shape, stride, padding, dilation and group count.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "hidet/runtime/dim.hpp"
#include "hidet/runtime/tensor.hpp"

namespace hidet::ops {

struct Epilogue;

/// 2-D convolution (see the top of the file): x [N, C, H, W], weight [O, C / groups, KH, KW],
/// optional bias [O]; stride/padding/dilation take 1 (both axes) or 2 values. PyTorch's conv2d.
/// The result has the promoted dtype of x, weight and bias.
Tensor conv2d(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias = std::nullopt,
              std::vector<std::int64_t> stride = {1}, std::vector<std::int64_t> padding = {0},
              std::vector<std::int64_t> dilation = {1}, std::int64_t groups = 1);

/// conv2d followed by the epilogue `e` (its x: the convolution's output; `extras`: its other
/// inputs) stored by the template's kernel when a template serves the call, else conv2d and then
/// the epilogue. Graph passes build these (graph::fuse_epilogues); with symbolic inputs it
/// records a FusedConv2d node.
Tensor conv2d(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias,
              std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
              std::vector<std::int64_t> dilation, std::int64_t groups, const std::shared_ptr<const Epilogue> &e,
              const std::vector<Tensor> &extras);

/// conv2d of channels-last tensors: x [N, H, W, C], weight [O, KH, KW, C / groups], optional bias
/// [O]; returns y [N, OH, OW, O]. The fast layout of the tensor-core template (no repacking when
/// C / groups is a multiple of 8); other dtypes run conv2d on permuted copies.
Tensor conv2d_nhwc(const Tensor &x, const Tensor &weight,
                   const std::optional<Tensor> &bias = std::nullopt,
                   std::vector<std::int64_t> stride = {1}, std::vector<std::int64_t> padding = {0},
                   std::vector<std::int64_t> dilation = {1}, std::int64_t groups = 1);

/// conv2d_nhwc followed by the epilogue `e` (as conv2d's; records a FusedConv2dNhwc node).
Tensor conv2d_nhwc(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias,
                   std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                   std::vector<std::int64_t> dilation, std::int64_t groups, const std::shared_ptr<const Epilogue> &e,
                   const std::vector<Tensor> &extras);

/// conv2d (NCHW, or NHWC with `nhwc`) of cuda tensors whose batch (x's first extent) is the
/// symbolic `batch` at `values` (a shape-generic graph's run: batch n, or n*2), with the epilogue
/// `e` (null: none) over those symbols. The template kernel is built once for every value of
/// the batch's symbols at these channel and image sizes, with the tiling that search space 0
/// picks for the batch rounded up to a power of two (conv2d_batch_bucket); a later batch that
/// picks the same tiling builds nothing (never tunes). nullopt where no template serves the
/// call (the caller runs conv2d); a ValueError when the batch's value is not x's.
std::optional<Tensor> conv2d_symbolic_batch(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias,
                                            std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                                            std::vector<std::int64_t> dilation, std::int64_t groups, bool nhwc,
                                            const std::shared_ptr<const Epilogue> &e, const std::vector<Tensor> &extras,
                                            const Dim &batch, const SymbolValues &values);

/// True when a convolution of `groups` groups of `cg` input and `og` output channels each and a
/// kh x kw window runs on the direct kernel by default (templates/conv2d_depthwise.hpp:
/// depthwise, or grouped with at most 4 input channels per group), which reads channels-last input in
/// place whatever the channel count (graph::convert_layout_nhwc's test).
bool conv2d_runs_direct(std::int64_t groups, std::int64_t cg, std::int64_t og, std::int64_t kh, std::int64_t kw);

/// The batch conv2d_symbolic_batch picks a tiling for: n rounded up to a power of two.
std::int64_t conv2d_batch_bucket(std::int64_t n);

/// Template kernels built for a symbolic batch so far in this process (conv2d_symbolic_batch).
std::size_t conv2d_symbolic_builds();

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/conv.ipp"
#endif
