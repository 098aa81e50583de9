// Pass: instantiate symbolic dimensions.
//
// A kernel parameter's tensor type may use integer variables that are not parameters, e.g.
// `a: f32[m, k]` with `m` and `k` symbolic. Generated code needs them as values, so this pass
// appends each such variable (the same Var object, so every use stays valid) as an extra scalar
// parameter at the end of the kernel's parameters, in order of first appearance (parameters in
// order, dimensions in order). The launcher fills each one from the shape of an argument tensor;
// symbol_sources() says from which. Device functions are left alone. Running the pass twice
// appends nothing the second time.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

/// The symbolic dimensions of a function: variables used in its parameters' tensor shapes that
/// are not parameters themselves, in order of first appearance.
std::vector<Var> symbolic_dims(const Function &f);

/// True when `v` occurs in the shape of tensor type `t`.
bool type_mentions(const Type &t, const VarNode *v);

/// Where the launcher reads a symbol's value: dimension `dim_index` of the tensor argument at
/// `param_index`.
struct SymbolSource {
  std::size_t param_index;
  std::size_t dim_index;
};

/// For each symbolic dimension of `kernel` as the user wrote it (before instantiate_symbols), in
/// the order the pass appends them, the first (tensor parameter, dimension) whose extent is exactly
/// that variable. Throws DSLError when a symbol only appears inside compound extents (f32[2*n]),
/// because its value could not be read from any argument's shape.
std::vector<std::pair<Var, SymbolSource>> symbol_sources(const Function &kernel);

/// Appends the symbolic dimensions of every kernel as trailing scalar parameters (see above).
Function instantiate_symbols(const Function &f);

/// instantiate_symbols over every function of a module.
Module instantiate_symbols(const Module &m);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/transforms/impl/instantiate_symbols.ipp"
#endif
