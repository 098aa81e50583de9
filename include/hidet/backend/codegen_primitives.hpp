// How codegen spells the primitives of ir/intrinsic.hpp (vector copies, cp.async, ldmatrix,
// mma.sync, packed half2, and the Hopper ones: mbarrier, TMA, wgmma, setmaxnreg, clusters) in
// CUDA C++: inline PTX, mostly emitted in place, plus a few helpers appended to the prelude. Also
// check_primitive_arch(), which rejects a module using a primitive its target arch lacks.
// Included by codegen_intrinsics.hpp only.
#pragma once

#include <string>

#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::backend {

/// Throws a DSLError naming the primitive, the kernel, the user's line and both archs when a
/// function of `m` uses a primitive that `arch` ("sm_80", "sm_90a", ...) does not have.
void check_primitive_arch(const ir::Module &m, const std::string &arch);

} // namespace hidet::backend

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/codegen_primitives.ipp"
#endif
