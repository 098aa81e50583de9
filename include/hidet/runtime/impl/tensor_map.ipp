// Definitions for hidet/runtime/tensor_map.hpp.
#pragma once

#include "hidet/runtime/tensor_map.hpp"

#include <cstring>

#include "hidet/runtime/cuda_driver.hpp"

namespace hidet {

HIDET_INLINE TensorMap TensorMap::tiled(const Tensor &t, const std::vector<std::int64_t> &box,
                                        Swizzle swizzle) {
  if (t.device().kind != runtime::Device::Kind::CUDA || runtime::cuda_emulated())
    throw ValueError("TensorMap::tiled: the tensor must live on a real GPU (TMA is not emulated)");
  return tiled(Spec{const_cast<void *>(t.data_ptr()), t.dtype(), t.shape(), box, swizzle});
}

HIDET_INLINE TensorMap TensorMap::tiled(const Spec &spec) {
  const auto &shape = spec.shape;
  const auto &box = spec.box;
  std::size_t r = shape.size();
  if (r < 1 || r > 5 || box.size() != r)
    throw ValueError(str_cat("TensorMap::tiled: tensor of rank ", r, " with a box of rank ", box.size(),
                             "; both need the same rank in [1, 5]"));
  if (runtime::cuda_emulated())
    throw ValueError("TensorMap::tiled: TMA is not emulated; tensor maps need a real GPU");
  CUtensorMapDataType dt;
  switch (spec.dtype.code) {
  case DTypeCode::F16: dt = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
  case DTypeCode::BF16: dt = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
  case DTypeCode::F32: dt = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
  case DTypeCode::I32: dt = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
  case DTypeCode::U8: case DTypeCode::I8: case DTypeCode::F8E4M3: case DTypeCode::F8E5M2:
    dt = CU_TENSOR_MAP_DATA_TYPE_UINT8; // TMA copies bytes; fp8 has no type of its own
    break;
  default:
    throw ValueError(str_cat("TensorMap::tiled: dtype ", spec.dtype,
                             " is not supported (f16, bf16, f32, i32, i8, u8, f8e4m3, f8e5m2)"));
  }
  std::uint64_t dims[5], strides[4];
  std::uint32_t boxes[5], elem_strides[5];
  std::uint64_t esize = spec.dtype.nbytes(), stride = esize;
  for (std::size_t i = 0; i < r; ++i) { // the driver wants the innermost dimension first
    std::size_t d = r - 1 - i;
    dims[i] = std::uint64_t(shape[d]);
    if (box[d] < 1 || box[d] > 256) // a box may overhang the tensor: TMA zero-fills outside
      throw ValueError(str_cat("TensorMap::tiled: box dimension ", d, " is ", box[d], "; it must be in [1, 256]"));
    boxes[i] = std::uint32_t(box[d]);
    elem_strides[i] = 1;
    if (i > 0) strides[i - 1] = stride;
    stride *= std::uint64_t(shape[d]);
  }
  if ((std::uint64_t(box[r - 1]) * esize) % 16 != 0)
    throw ValueError(str_cat("TensorMap::tiled: the innermost box row is ", box[r - 1] * std::int64_t(esize),
                             " bytes; it must be a multiple of 16"));
  TensorMap m;
  CUresult res = cuda::driver().cuTensorMapEncodeTiled(
      &m.map_, dt, cuuint32_t(r), spec.address, dims, strides, boxes, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CUtensorMapSwizzle(int(spec.swizzle)), CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  cuda::check(res, "cuTensorMapEncodeTiled");
  m.spec_ = spec;
  return m;
}

HIDET_INLINE Tensor TensorMap::to_device() const {
  std::vector<std::uint8_t> bytes(sizeof(CUtensorMap));
  std::memcpy(bytes.data(), &map_, bytes.size());
  return asarray(bytes, {std::int64_t(bytes.size())});
}

} // namespace hidet
