// CUDA C++ code generation from lowered IR (symbolic dimensions already passed as scalar
// parameters). The output compiles under NVRTC with only -I<cuda>/include:
//  * a small prelude (cuda_prelude.hpp), then device functions (before their callers), then
//    `extern "C" __global__` kernels with __launch_bounds__ when the block size is constant;
//  * tensor parameters are `T * __restrict__`, tensors are indexed through ir::tensor_offset;
//  * every statement with a source location is preceded by `#line <line> "<file>"` whenever the
//    compiler's idea of the current line differs, so NVRTC errors, -lineinfo, profilers and
//    debuggers point at the user's DSL source;
//  * variable names come from hints, made unique per function (i, i_1, ...).
// Intrinsic spelling lives in codegen_intrinsics.hpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::backend {

/// Generated CUDA source and the names of its kernels (extern "C", in module order).
struct CudaSource {
  std::string code;
  std::vector<std::string> kernels;
};

/// `s` as the body of a C string literal (quotes, backslashes, control characters escaped).
std::string c_string_escape(std::string_view s);

/// A float as a CUDA literal with full precision: "1.5f", "(-2.0f)", inf and nan by bit pattern.
std::string cuda_f32_literal(float v);

/// A double as a CUDA literal with full precision.
std::string cuda_f64_literal(double v);

/// CUDA C++ for a lowered module: one extern "C" __global__ function per kernel. Throws
/// ValueError for an invalid kernel name and DSLError for constructs CUDA cannot express (an
/// intrinsic on an unsupported dtype, a shared tensor without a constant size).
CudaSource generate_cuda(const ir::Module &lowered);

} // namespace hidet::backend

#include "hidet/backend/codegen_intrinsics.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/codegen.ipp"
#endif
