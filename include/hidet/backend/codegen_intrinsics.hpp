// How codegen spells each intrinsic of ir/intrinsic.hpp in CUDA C++: math per dtype (native
// h* functions for f16/bf16 where CUDA has them, else float math rounded back), barriers,
// atomics (native where CUDA has them, else the prelude's CAS loop), warp shuffles and votes,
// printf and dynamic shared memory. Included by codegen.hpp only.
#pragma once

#include "hidet/backend/codegen.hpp"
#include "hidet/backend/codegen_primitives.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/codegen_intrinsics.ipp"
#endif
