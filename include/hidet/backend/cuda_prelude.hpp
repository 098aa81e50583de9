// The device prelude at the top of every generated CUDA source: fixed-width integer typedefs
// (NVRTC has no <cstdint>), the f16/bf16/fp8 headers only when used, dynamic shared memory, and the
// CAS-loop atomics for dtypes CUDA has no native atomic for, and HIDET_GRID_DEPENDENCY_SYNC() (the
// programmatic-dependent-launch wait every kernel starts with; runtime/cuda_driver.hpp). No host
// headers.
#pragma once

#include <string>

#include "hidet/config.hpp"

namespace hidet::backend {

/// Which optional parts of the prelude a module needs.
struct PreludeFeatures {
  bool f16 = false;          ///< #include <cuda_fp16.h>
  bool bf16 = false;         ///< #include <cuda_bf16.h> + typedef bfloat16
  bool fp8 = false;          ///< #include <cuda_fp8.h> (__nv_fp8_e4m3, __nv_fp8_e5m2)
  bool dynamic_smem = false; ///< extern __shared__ hidet_dynamic_smem[] (1024-byte aligned)
  bool atomic_rmw = false;   ///< hidet_atomic_rmw<T, Bits>(addr, value, op)
  bool tensor_map = false;   ///< struct hidet_tensor_map: a by-value CUtensorMap parameter
  std::string extra;         ///< more device helpers, appended last (codegen_primitives.hpp)
};

/// The prelude text for the given features.
std::string cuda_prelude(const PreludeFeatures &f);

} // namespace hidet::backend

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/cuda_prelude.ipp"
#endif
