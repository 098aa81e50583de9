// Linear algebra beyond products: triangular solves (torch.linalg.solve_triangular).
//
// solve_triangular(A, B) solves A X = B (left) or X A = B for X, with A triangular: batched over
// the leading axes of A and B, which broadcast against each other. The kernel gives each thread
// one column of X (columns are independent) and substitutes row by row: forward for a lower A,
// backward for an upper one, reading the rows of X it has written (its own column) back from the
// output. That is n^2 / 2 multiply-adds per column, sequential over the rows, and meant for the
// small systems models solve inside a graph: the 64 x 64 chunk systems of gated delta-rule
// attention (Qwen3-Next, Qwen3.5: transformers' torch_chunk_gated_delta_rule), not for large
// dense solves. f32 and f64 (as PyTorch on CUDA).
#pragma once

#include "hidet/runtime/tensor.hpp"

namespace hidet::ops {

/// torch.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular): X
/// with A X = B (left) or X A = B (right). A: [..., n, n], B: [..., n, k] (left) or [..., k, n]
/// (right), the leading axes broadcast; only A's triangle named by `upper` is read (and not its
/// diagonal when `unitriangular`: taken as ones). f32 or f64, one dtype for both; a zero on A's
/// diagonal gives inf or nan, as in PyTorch. Wrong ranks, shapes or dtypes: ValueError.
Tensor solve_triangular(const Tensor &a, const Tensor &b, bool upper, bool left = true,
                        bool unitriangular = false);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/linalg.ipp"
#endif
