// Host-side evaluation of scalar integer/float expressions over bound variables: used by the
// launcher (grid and block dims over kernel parameters) and by the simplifier's constant folding.
#pragma once

#include <optional>
#include <unordered_map>

#include "hidet/ir/expr.hpp"

namespace hidet::ir {

/// Values bound to variables, by identity.
using VarBindings = std::unordered_map<const VarNode *, double>;

/// Evaluates `e` when it only involves constants, bound variables, arithmetic, comparisons,
/// logical ops, casts, selects and min/max; returns nullopt otherwise (or on division by zero).
/// Integer arithmetic follows C++ on the expression's dtype.
std::optional<double> try_evaluate(const Expr &e, const VarBindings &env = {});

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/eval.ipp"
#endif
