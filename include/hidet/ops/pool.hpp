// 2-D pooling over NCHW tensors as compute definitions (a reduction over the window, then an
// element-wise finish), scheduled by the auto-scheduler: max_pool2d, avg_pool2d,
// adaptive_avg_pool2d, adaptive_max_pool2d.
//
// Output size (PyTorch's rule): out = floor_or_ceil((in + 2 pad - dilation (k - 1) - 1) / stride)
// + 1; with ceil_mode the last window must start inside the input or the left padding, else it is
// dropped. Padding never wins a max (padded positions are skipped). avg_pool2d divides by the
// window clipped to the padded input when count_include_pad (PyTorch's default), else by the
// number of real input elements in the window.
#pragma once

#include "hidet/ops/reduce.hpp"

namespace hidet::ops {

/// Max pooling over the last two axes of an NCHW tensor; `stride` defaults to `kernel`; each of
/// kernel/stride/padding/dilation has 1 (both axes) or 2 values.
Tensor max_pool2d(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride = {},
                  std::vector<std::int64_t> padding = {0}, std::vector<std::int64_t> dilation = {1}, bool ceil_mode = false);
/// Average pooling over the last two axes of an NCHW tensor (see the top of the file for the
/// divisor); integer inputs give f32.
Tensor avg_pool2d(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride = {},
                  std::vector<std::int64_t> padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::vector<std::int64_t> dilation = {1});

/// max_pool2d and avg_pool2d over a channels-last (NHWC) tensor, giving NHWC: the same windows
/// over axes 1 and 2 (graph::convert_layout_nhwc keeps pooling between channels-last
/// convolutions so).
Tensor max_pool2d_nhwc(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride = {},
                       std::vector<std::int64_t> padding = {0}, std::vector<std::int64_t> dilation = {1},
                       bool ceil_mode = false);
Tensor avg_pool2d_nhwc(const Tensor &x, std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride = {},
                       std::vector<std::int64_t> padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                       std::vector<std::int64_t> dilation = {1});

/// Adaptive average pooling of an NCHW tensor to `output_size` (out_h, out_w): output (i, j)
/// averages rows floor(i H / out_h) .. ceil((i + 1) H / out_h) - 1, and likewise for columns.
Tensor adaptive_avg_pool2d(const Tensor &x, std::vector<std::int64_t> output_size);
/// adaptive_avg_pool2d over a channels-last (NHWC) tensor, giving NHWC [N, out_h, out_w, C].
Tensor adaptive_avg_pool2d_nhwc(const Tensor &x, std::vector<std::int64_t> output_size);
/// Adaptive max pooling of an NCHW tensor: output (i, j) is the max over the windows of
/// adaptive_avg_pool2d (no indices).
Tensor adaptive_max_pool2d(const Tensor &x, std::vector<std::int64_t> output_size);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/pool.ipp"
#endif
