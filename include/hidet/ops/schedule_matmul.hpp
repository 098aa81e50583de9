// A tiled matrix-multiplication kernel in Hidet Script (the schedule of ops::matmul,
// batch_matmul and linear): c[batch..., m, n] = sum_k a[batch_a..., m, k] * b[batch_b..., k, n],
// with the batch dimensions of a and b broadcast to c's.
//
// Each block of 256 threads computes a 64x64 tile of c (blockIdx.x: column tile, blockIdx.y: row
// tile, blockIdx.z: flat batch index). The k loop walks 16-wide slices: the block stages a 64x16
// slice of a (stored transposed, as_[k][m]) and a 16x64 slice of b (bs[k][n]) in shared memory,
// four elements per thread, with consecutive threads on consecutive addresses of a row of a and
// of b (coalesced); out-of-range elements are staged as 0, so any shape is correct. Thread
// (ty, tx) = (tid / 16, tid % 16) accumulates the 4x4 outputs (ty + 16 i, tx + 16 j) in
// registers, reading 4 + 4 shared values per 16 multiply-adds. Accumulation is in
// compute_dtype (f32 for f16/bf16). The tensor-core templates come with a later issue.
#pragma once

#include "hidet/ops/plan.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// Tile sizes of the matmul kernel (see the top of this file).
inline constexpr int kMatmulTileM = 64, kMatmulTileN = 64, kMatmulTileK = 16;

/// The plan of c = a @ b for a of shape sa = [batch_a..., m, k] and b of shape sb = [batch_b...,
/// k, n] (both at least 2-D), c of shape out = [batch..., m, n] and dtype `out_dtype`, computed in
/// `cd`.
Plan matmul_plan(const Shape &sa, DataType da, const Shape &sb, DataType db, const Shape &out, DataType out_dtype,
                 DataType cd);

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule_matmul.ipp"
#endif
