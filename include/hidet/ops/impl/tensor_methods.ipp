// Definitions for hidet/ops/tensor_methods.hpp.
#pragma once

#include "hidet/ops/tensor_methods.hpp"

#include "hidet/ops/matmul.hpp"
#include "hidet/ops/transform.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet {

HIDET_INLINE Tensor Tensor::sum(std::vector<int> axes, bool keepdims) const { return ops::sum(*this, axes, keepdims); }
HIDET_INLINE Tensor Tensor::mean(std::vector<int> axes, bool keepdims) const { return ops::mean(*this, axes, keepdims); }
HIDET_INLINE Tensor Tensor::max(std::vector<int> axes, bool keepdims) const { return ops::max(*this, axes, keepdims); }
HIDET_INLINE Tensor Tensor::min(std::vector<int> axes, bool keepdims) const { return ops::min(*this, axes, keepdims); }
HIDET_INLINE Tensor Tensor::prod(std::vector<int> axes, bool keepdims) const { return ops::prod(*this, axes, keepdims); }
HIDET_INLINE Tensor Tensor::var(std::vector<int> axes, bool keepdims, int correction) const {
  return ops::var(*this, axes, keepdims, correction);
}
HIDET_INLINE Tensor Tensor::std(std::vector<int> axes, bool keepdims, int correction) const {
  return ops::std(*this, axes, keepdims, correction);
}
HIDET_INLINE Tensor Tensor::argmax(int axis, bool keepdims) const { return ops::argmax(*this, axis, keepdims); }
HIDET_INLINE Tensor Tensor::argmin(int axis, bool keepdims) const { return ops::argmin(*this, axis, keepdims); }
HIDET_INLINE Tensor Tensor::transpose(int a, int b) const { return ops::transpose(*this, a, b); }
HIDET_INLINE Tensor Tensor::permute(std::vector<int> perm) const { return ops::permute(*this, perm); }
HIDET_INLINE Tensor Tensor::flatten(int start, int end) const { return ops::flatten(*this, start, end); }
HIDET_INLINE Tensor Tensor::squeeze(std::vector<int> axes) const { return ops::squeeze(*this, axes); }
HIDET_INLINE Tensor Tensor::unsqueeze(int axis) const { return ops::unsqueeze(*this, axis); }
HIDET_INLINE Tensor Tensor::broadcast_to(std::vector<std::int64_t> shape) const { return ops::broadcast_to(*this, shape); }
HIDET_INLINE Tensor Tensor::flip(std::vector<int> axes) const { return ops::flip(*this, axes); }
HIDET_INLINE Tensor Tensor::astype(DataType dtype) const { return ops::cast(*this, dtype); }
HIDET_INLINE Tensor Tensor::matmul(const Tensor &other) const { return ops::matmul(*this, other); }
HIDET_INLINE Tensor Tensor::abs() const { return ops::abs(*this); }
HIDET_INLINE Tensor Tensor::exp() const { return ops::exp(*this); }
HIDET_INLINE Tensor Tensor::relu() const { return ops::relu(*this); }

} // namespace hidet

#include "hidet/util/cold_end.hpp"
