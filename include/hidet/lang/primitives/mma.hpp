// Tensor-core primitives of one warp in Hidet Script: ldmatrix and stmatrix (x1/x2/x4, optionally
// transposed) and mma.sync (m16n8k16 f16/bf16 with f32 or f16 accumulation, m16n8k8 tf32, m16n8k32 int8).
// Fragments are register tensors of each lane; their layouts over the 32 lanes are the PTX ISA's
// (docs/primitives.md draws them). All 32 lanes of the warp must execute these together.
//
//   auto a = register_tensor(f16[8], "a"), b = register_tensor(f16[4], "b");
//   auto acc = register_tensor(f32[4], "acc");
//   ldmatrix(a, smem_a[row][col], 4);              // four 8x8 matrices: the A fragment
//   mma_sync(acc, a, b, acc, mma_m16n8k16);        // acc = a * b + acc
#pragma once

#include "hidet/lang/primitives/memory.hpp"

namespace hidet::lang {

/// An mma.sync shape.
struct MmaShape {
  int m, n, k;
};
inline constexpr MmaShape mma_m16n8k16{16, 8, 16}; ///< f16 / bf16 inputs
inline constexpr MmaShape mma_m16n8k8{16, 8, 8};   ///< tf32 inputs (f32 operands)
inline constexpr MmaShape mma_m16n8k32{16, 8, 32}; ///< i8 / u8 inputs, i32 accumulators

/// Per-lane fragment sizes (elements of the operand's dtype) of an mma.sync configuration.
struct MmaFragments {
  int a, b, c;
};

namespace detail {
/// Validates an mma configuration; returns the fragment sizes or throws a DSLError.
MmaFragments mma_check(MmaShape s, const PtrArg &d, const PtrArg &a, const PtrArg &b,
                       const PtrArg &c);
} // namespace detail

/// Per-lane fragment sizes of mma.sync `shape` (elements of A, B and C/D).
MmaFragments mma_fragments(MmaShape shape);

/// mma.sync.aligned: D = A * B + C for the warp (A row-major 16xk, B column-major kx8). `d`,
/// `a`, `b`, `c` are this lane's fragments in register tensors; `d` may be `c`.
void mma_sync(const PtrArg &d, const PtrArg &a, const PtrArg &b, const PtrArg &c,
              MmaShape shape = mma_m16n8k16);

/// ldmatrix.sync.aligned.m8n8.x{num}[.trans].b16: loads `num` (1, 2 or 4) 8x8 matrices of 16-bit
/// elements from shared memory. Lanes 8*i .. 8*i+7 give the row addresses of matrix i (16-byte
/// aligned rows of 8 elements) in `row`; each lane receives `num` 32-bit words into `dst`
/// (word i: row lane/4, elements 2*(lane%4) and +1 of matrix i; transposed: column lane/4).
void ldmatrix(const PtrArg &dst, const PtrArg &row, int num = 4, bool trans = false);

/// stmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16 (sm_90): the inverse of ldmatrix. Each
/// lane gives `num` 32-bit words in `src` (word i: row lane/4, elements 2*(lane%4) and +1 of
/// matrix i, i.e. an mma.sync accumulator fragment packed to halves; transposed: column lane/4),
/// and lanes 8*i .. 8*i+7 give the 16-byte aligned row addresses of matrix i in `row`.
void stmatrix(const PtrArg &row, const PtrArg &src, int num = 4, bool trans = false);

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/primitives/impl/mma.ipp"
#endif
