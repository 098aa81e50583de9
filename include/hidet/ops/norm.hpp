// Normalizations as compute definitions: softmax, log_softmax, layer_norm, rms_norm, group_norm,
// batch_norm (inference). Each is one
// task whose reductions are materialized (row schedule) and whose element-wise parts are inlined.
#pragma once

#include "hidet/ops/reduce.hpp"

namespace hidet::ops {

namespace detail {
/// x with index i along `axis` replaced by 0 (the keepdims index of a reduction over `axis`).
Idx at_axis0(Idx i, const std::vector<int> &axes);
} // namespace detail

/// softmax along `axis` (computed in f32, max-subtracted).
Tensor softmax(const Tensor &x, int axis = -1);
/// log(softmax(x)) along `axis`, computed stably.
Tensor log_softmax(const Tensor &x, int axis = -1);

/// Layer normalization over the last `normalized_ndim` axes, then `* weight + bias` when given
/// (their shape is the normalized shape). Biased variance, like PyTorch.
Tensor layer_norm(const Tensor &x, int normalized_ndim = 1, const std::optional<Tensor> &weight = std::nullopt,
                  const std::optional<Tensor> &bias = std::nullopt, double eps = 1e-5, bool rms = false);
/// RMS normalization over the last `normalized_ndim` axes: x / sqrt(mean(x^2) + eps) * weight.
Tensor rms_norm(const Tensor &x, int normalized_ndim = 1, const std::optional<Tensor> &weight = std::nullopt,
                double eps = 1e-6);

/// Group normalization of x [N, C, *]: the C channels are split into `num_groups` groups and each
/// (sample, group) is normalized over its channels and spatial positions (biased variance), then
/// `* weight[c] + bias[c]` when given (shape [C]). PyTorch's group_norm.
Tensor group_norm(const Tensor &x, std::int64_t num_groups, const std::optional<Tensor> &weight = std::nullopt,
                  const std::optional<Tensor> &bias = std::nullopt, double eps = 1e-5);

/// group_norm for a channels-last x [N, *, C] with one group (PoolFormer's GroupNorm(1, C)): each
/// sample normalized over all its elements (biased variance), then `* weight[c] + bias[c]` along
/// the last axis. A composition: each sample's elements are split into pieces whose sums separate
/// blocks compute (one block per sample read PoolFormer's 200K-element samples alone), then the
/// pieces' results, in f32 (var = E[x^2] - E[x]^2, one pass); the normalization is element-wise, so
/// fusion joins it to its readers.
/// Other group counts throw ValueError (a group's channels are not contiguous channels-last).
Tensor group_norm_nhwc(const Tensor &x, std::int64_t num_groups, const std::optional<Tensor> &weight = std::nullopt,
                       const std::optional<Tensor> &bias = std::nullopt, double eps = 1e-5);

/// Batch normalization for inference on x [N, C, *] with per-channel running statistics:
/// (x - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c] + bias[c] (weight and bias
/// optional; all parameters of shape [C] and x's dtype). Computed in f32 for f16/bf16.
Tensor batch_norm(const Tensor &x, const Tensor &running_mean, const Tensor &running_var,
                  const std::optional<Tensor> &weight = std::nullopt, const std::optional<Tensor> &bias = std::nullopt,
                  double eps = 1e-5);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/norm.ipp"
#endif
