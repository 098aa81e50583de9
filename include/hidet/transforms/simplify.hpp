// Pass: simplify expressions and statements.
//
//  * Constant folding of unary, binary and cast expressions on constants, exactly as CUDA C++
//    computes them on the operand dtype: integers wrap to the dtype's width, division truncates,
//    unsigned values compare unsigned; nothing is folded where C++ leaves the result undefined
//    (division by zero, INT64_MIN / -1, shifts by the width or more, float-to-int conversions out
//    of range). f32 results round to f32. f16/bf16 arithmetic is not folded.
//  * Integer identities: x+0, 0+x, x-0, x*1, 1*x, x/1 -> x; x*0, 0*x, x%1, x-x -> 0 (only when
//    the dropped operand has no side effects).
//  * Re-association of constants: (x+c1)+c2 -> x+(c1+c2), (x-c1)+c2, (x+c1)-c2, (x-c1)-c2,
//    (x*c1)*c2 -> x*(c1*c2) (exact under wrapping arithmetic).
//  * Float identities that are exact for every x, including -0 and NaN: x*1.0, 1.0*x, x/1.0, x-0.0.
//    Never x*0.0 or x+0.0.
//  * Logic: true&&x, x&&true, false||x, x||false -> x; false&&x -> false; true||x -> true; the
//    same with the constant on the right when x has no side effects; !!x -> x.
//  * Casts of constants fold; casts to the operand's own type vanish.
//  * Statements: select/if/while with a constant condition resolve to the taken branch (an if(false)
//    without else and a while(false) disappear); for loops whose constant bounds give zero trips
//    disappear.
// Unchanged subtrees are returned as the same nodes.
#pragma once

#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

/// Simplifies an expression (see the rules above).
Expr simplify(const Expr &e);
/// Simplifies a statement; a statement that simplifies away becomes an empty SeqStmt.
Stmt simplify(const Stmt &s);
/// Simplifies a function's body and launch attributes.
Function simplify(const Function &f);
/// Simplifies every function of a module.
Module simplify(const Module &m);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/transforms/impl/simplify.ipp"
#endif
