// Structural equality and hashing of IR nodes, up to renaming of bound variables
// (alpha-equivalence). Used by pass tests (before/expected) and by caches keyed on IR.
//
//  * Binding positions: function parameters, DeclareStmt variables and ForStmt variables. Two
//    bound variables are equal when they were bound at the same position of the two trees.
//  * Symbolic dimensions: a variable first met inside a parameter's tensor type (f32[m, k]) is
//    bound there, so two separately built kernels over their own `m` compare equal.
//  * Every other (free) variable compares by identity.
//  * Source locations and variable name hints are ignored. Layouts compare with
//    LayoutNode::equals and hash with LayoutNode::hash.
//  * The hash agrees with the equality: bound variables hash by their binding order, free ones
//    by identity.
#pragma once

#include <cstddef>

#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

/// True when `a` and `b` are the same up to renaming of bound variables (see the file comment).
bool structural_equal(const Expr &a, const Expr &b);
bool structural_equal(const Type &a, const Type &b);
bool structural_equal(const Stmt &a, const Stmt &b);
bool structural_equal(const Function &a, const Function &b);
bool structural_equal(const Module &a, const Module &b);

/// A hash consistent with structural_equal: equal nodes hash equal.
std::size_t structural_hash(const Expr &x);
std::size_t structural_hash(const Type &x);
std::size_t structural_hash(const Stmt &x);
std::size_t structural_hash(const Function &x);
std::size_t structural_hash(const Module &x);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/equal.ipp"
#endif
