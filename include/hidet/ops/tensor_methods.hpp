// Definitions of the operator methods of hidet::Tensor (t.sum(...), t.transpose(...),
// t.astype(...), ...): each forwards to the hidet::ops function of the same name (astype: cast).
// Declared in runtime/tensor.hpp; defined here so the runtime layer does not include ops.
#pragma once

#include "hidet/ops/matmul.hpp"
#include "hidet/ops/transform.hpp"

namespace hidet {

inline Tensor Tensor::sum(std::vector<int> axes, bool keepdims) const { return ops::sum(*this, axes, keepdims); }
inline Tensor Tensor::mean(std::vector<int> axes, bool keepdims) const { return ops::mean(*this, axes, keepdims); }
inline Tensor Tensor::max(std::vector<int> axes, bool keepdims) const { return ops::max(*this, axes, keepdims); }
inline Tensor Tensor::min(std::vector<int> axes, bool keepdims) const { return ops::min(*this, axes, keepdims); }
inline Tensor Tensor::prod(std::vector<int> axes, bool keepdims) const { return ops::prod(*this, axes, keepdims); }
inline Tensor Tensor::var(std::vector<int> axes, bool keepdims, int correction) const {
  return ops::var(*this, axes, keepdims, correction);
}
inline Tensor Tensor::std(std::vector<int> axes, bool keepdims, int correction) const {
  return ops::std(*this, axes, keepdims, correction);
}
inline Tensor Tensor::argmax(int axis, bool keepdims) const { return ops::argmax(*this, axis, keepdims); }
inline Tensor Tensor::argmin(int axis, bool keepdims) const { return ops::argmin(*this, axis, keepdims); }
inline Tensor Tensor::transpose(int a, int b) const { return ops::transpose(*this, a, b); }
inline Tensor Tensor::permute(std::vector<int> perm) const { return ops::permute(*this, perm); }
inline Tensor Tensor::flatten(int start, int end) const { return ops::flatten(*this, start, end); }
inline Tensor Tensor::squeeze(std::vector<int> axes) const { return ops::squeeze(*this, axes); }
inline Tensor Tensor::unsqueeze(int axis) const { return ops::unsqueeze(*this, axis); }
inline Tensor Tensor::broadcast_to(std::vector<std::int64_t> shape) const { return ops::broadcast_to(*this, shape); }
inline Tensor Tensor::flip(std::vector<int> axes) const { return ops::flip(*this, axes); }
inline Tensor Tensor::astype(DataType dtype) const { return ops::cast(*this, dtype); }
inline Tensor Tensor::matmul(const Tensor &other) const { return ops::matmul(*this, other); }
inline Tensor Tensor::abs() const { return ops::abs(*this); }
inline Tensor Tensor::exp() const { return ops::exp(*this); }
inline Tensor Tensor::relu() const { return ops::relu(*this); }

} // namespace hidet
