// Auto-schedule of an element-wise (injective) definition: out[i...] = value(i...).
//
// Each block of 256 threads covers 256 * E consecutive output elements, E = 16 bytes / element
// size (at least 1, at most 8), halved while a constant-size output would make fewer than
// kInjectiveMinBlocks blocks (down to 1: small outputs spread over the SMs): thread t handles elements base + k * 256 + t for k < E, so every
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

/// Blocks below which an output of constant size gets fewer elements per thread (two per SM of
/// an H100 or H200).
inline constexpr int kInjectiveMinBlocks = 264;

/// Elements per thread for an output of dtype `d` and `numel` elements (-1: symbolic size).
int injective_elems_per_thread(DataType d, std::int64_t numel);

/// Emits the body of an element-wise kernel for `node` (its params: reads..., out).
void emit_injective(const TensorNode &node, const std::vector<ir::Var> &params, const std::vector<const TensorNode *> &reads,
                    const std::map<const ir::VarNode *, const TensorNode *> &inlined);

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule_injective.ipp"
#endif
