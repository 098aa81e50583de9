// Range-aware simplification of integer index arithmetic.
//
// A fused element-wise kernel recovers its multi-index from a flat thread index and rewrites it
// through every reshape, slice, concatenation and permutation it inlines: each step divides and
// takes remainders by the step's extents. Composed, these grow into expressions with hundreds of
// divisions (EVA-02's rotary embedding: one output element computed in over a thousand integer
// instructions), which cost more than the element's memory traffic. Most of the terms cancel once
// the ranges of the values are known: `(a * 64 + b) / 64` is `a` when `b` lies in [0, 64).
//
// simplify_index(e, ranges) rewrites the integer arithmetic of `e` bottom-up, given inclusive
// ranges of some variables (a flat index under its bounds check, a loop variable):
//  * Ranges are computed for +, -, *, / and % by constants, min, max, select and casts, from
//    constants, the given variables and CUDA's special registers; an overflow of the dtype makes
//    a range unknown.
//  * Sums are kept as linear forms (constant coefficients over "atoms": the other expressions),
//    with equal atoms merged and two identities applied: `(x / a) * a + x % a` is `x` (always, in
//    C's truncating arithmetic; also where `x / a` is written `x' / (a1 * a)` for x = x' / a1: an
//    unravelled flat index raveled back, `((v / 4608) * 6 + (v / 768) % 6) * 6 + (v / 128) % 6` is
//    `v / 128`), and `((x / a) % b) * a + x % a` is `x % (a * b)` (x >= 0).
//  * For x >= 0 and a constant c > 0: `x / c` is 0 and `x % c` is x when x < c; `(x / a) / c` is
//    `x / (a * c)`, `(x % (c * m)) % c` is `x % c`; and writing x = c * q + r with the terms of r
//    not multiples of c, `x / c` is `q + r / c` and `x % c` is `r % c` when r >= 0.
//  * min and max whose operands' ranges do not overlap pick the operand; comparisons that the
//    ranges decide become constants.
// Then the simplify pass folds what is left. The result is equal to `e` for every value of the
// variables within their ranges (checked exhaustively in tests/transforms/test_simplify_index).
// Shared subexpressions are rewritten once (the index trees of fused kernels are DAGs).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"

namespace hidet::ir {

/// An inclusive range of integer values.
struct IndexRange {
  std::int64_t lo = 0, hi = 0;
};
/// Known ranges of variables, by identity.
using IndexRanges = std::unordered_map<const VarNode *, IndexRange>;

/// `e` with its integer index arithmetic simplified under `ranges` (see the file comment).
Expr simplify_index(const Expr &e, const IndexRanges &ranges);

/// The pass: every expression of `f` simplified under the ranges that hold where it is evaluated:
/// a kernel's constant launch dimensions bound threadIdx and blockIdx; a loop with a positive
/// constant step bounds its variable by its start and stop; a variable declared with a value
/// and never written again (no assignment, asm output or address taken) has its value's range;
/// the then-branch of an if narrows such variables by the comparisons it is conjoined of.
Function simplify_index(const Function &f);
/// The pass over every function of `m`.
Module simplify_index(const Module &m);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/transforms/impl/simplify_index.ipp"
#endif
