// Auto-schedule of an element-wise definition whose output's contiguous axis walks a
// non-contiguous axis of an input: out[..., i_a, ..., i_l] reads x[..., i_l, ..., i_a] (transpose,
// permutes that move the last axis, and anything fused around them).
//
// The plain element-wise schedule writes the output coalesced but then reads the input with a
// stride of a whole row per thread. Here the pattern is detected on the inlined value: a read
// whose innermost index is the bare output axis a (not the last axis l) while another of its
// indices depends on l. Each block of 256 threads owns a TA x TL tile of the (a, l) plane (other
// axes fixed per block) and works in two phases:
//  1. staging: consecutive threads take consecutive i_a (the read's contiguous index) and store
//     the read's value into shared memory s[l][a] (coalesced global reads);
//  2. output: consecutive threads take consecutive i_l, evaluate the whole value with the staged
//     read replaced by s[l][a] (other reads are evaluated in place) and store coalesced.
// The tile is 64 x 64 elements (16 per thread per phase), narrowed to the next power of two of a
// short axis with the other side widened to keep 4096 elements, so skinny shapes still fill the
// block. Rows of s are padded to a multiple of 4 bytes plus one word, so phase 2's column reads
// hit 32 different banks. Elements outside the output (partial tiles) are skipped in both phases.
#pragma once

#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// Threads per block of the tiled transpose schedule, and elements per tile.
inline constexpr int kTransposeBlock = 256, kTransposeTileElems = 4096;

/// The reads a tiled transpose schedule stages through shared memory, and its tile.
struct TransposePattern {
  int a = -1;                  ///< the output axis that is the reads' contiguous index
  std::vector<ir::Expr> reads; ///< distinct staged reads (of kernel parameters)
  std::int64_t ta = 0, tl = 0; ///< tile extents along axis a and along the last axis
};

/// Finds the transposed reads of `value` (an inlined value whose free variables are `axes`, the
/// output axes of `shape`); nullopt when the plain element-wise schedule reads coalesced.
/// `tile_elems` (a power of two, 1024 or 4096) overrides the tile size, for measurements.
std::optional<TransposePattern>
find_transpose(const ir::Expr &value, const std::vector<ir::Var> &axes, const Shape &shape,
               std::int64_t tile_elems = kTransposeTileElems);

/// Emits the body of the tiled transpose kernel for `node` (see the top of this file): `value`
/// is its inlined value over `node.axes`, reading kernel parameters; `out` is the output.
void emit_transpose_tiled(const TensorNode &node, const ir::Expr &value,
                          const TransposePattern &p, const ir::Var &out);

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule_transpose.ipp"
#endif
