// Auto-schedule of an element-wise (injective) definition: out[i...] = value(i...).
//
// Each block of 256 threads covers 256 * E consecutive output elements, E = 16 bytes / element
// size (at least 1, at most 8): thread t handles elements base + k * 256 + t for k < E, so every
// memory instruction of a warp touches consecutive addresses (coalesced), and each thread has E
// independent loads in flight. The multi-index is recovered with constant divisors (the kernel is
// specialized for the shape).
//
// When the output's contiguous axis walks a non-contiguous axis of an input (a transpose), the
// tiled schedule of schedule_transpose.hpp runs instead.
#pragma once

#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// Threads per block of element-wise kernels.
inline constexpr int kInjectiveBlock = 256;

/// Elements per thread for an output of dtype `d`.
int injective_elems_per_thread(DataType d);

/// Emits the body of an element-wise kernel for `node` (its params: reads..., out).
void emit_injective(const TensorNode &node, const std::vector<ir::Var> &params, const std::vector<const TensorNode *> &reads,
                    const std::map<const ir::VarNode *, const TensorNode *> &inlined);

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule_injective.ipp"
#endif
