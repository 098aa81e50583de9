// Pass: check that a module is well formed. Lowering runs it before and after the other passes,
// and tests run it on what they build.
//
// Rules:
//  * Every variable used is defined and in scope: function parameters, symbolic dims of the
//    parameters' tensor shapes, enclosing DeclareStmts (visible to the statements after them in
//    the same block) and enclosing ForStmt variables. Blocks are the bodies of for, while and if.
//  * break and continue appear only inside loops.
//  * TensorElement and BufferStore use as many indices as the tensor's rank; BufferStore's base
//    is a tensor; Assign's target is a scalar or pointer variable, never a tensor.
//  * Kernels have grid and block dims; called device functions exist in the module (with a
//    matching number of arguments).
//  * grid_dependency_wait() (lang/cuda.hpp) appears at most once, in a kernel, as a statement
//    of its body's top level, and nothing before it touches global or shared memory except
//    prefetch_l2 (index arithmetic and register tensors may come first).
// Violations the user can cause throw DSLError at the offending statement's or expression's
// SourceLoc; inconsistencies only a bug in hidet can cause throw InternalError.
#pragma once

#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

/// Checks every function of `m` (see the rules above); throws DSLError or InternalError.
void verify(const Module &m);

/// Checks one function on its own (calls to device functions cannot be resolved and are errors).
void verify(const Function &f);

/// True when kernel `f` waits for the kernel before it itself: a grid_dependency_wait() statement
/// at its body's top level (code generation then adds no wait at the kernel's start).
bool calls_grid_dependency_wait(const Function &f);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/transforms/impl/verify.ipp"
#endif
