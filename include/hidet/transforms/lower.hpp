// The lowering pipeline: one list of passes, run in order. To add a pass, add an entry to
// lowering_passes() (or pass your own list to lower()).
//
// With the environment variable HIDET_DUMP_IR=<dir>, the IR is written after every pass to
// <dir>/<name of the module's first kernel>/<NN>_<pass>.txt, with 00_input.txt holding the input.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"
#include "hidet/transforms/instantiate_symbols.hpp"
#include "hidet/transforms/simplify.hpp"
#include "hidet/transforms/simplify_index.hpp"
#include "hidet/transforms/verify.hpp"

namespace hidet::ir {

/// One step of lowering: a name (used in dumps) and a module-to-module function.
struct Pass {
  std::string name;
  std::function<Module(const Module &)> run;
};

/// The default pipeline, in order.
std::vector<Pass> lowering_passes();

/// Runs `passes` (the default pipeline unless given) over `m` and returns the lowered module.
Module lower(const Module &m, const std::vector<Pass> &passes = lowering_passes());

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/transforms/impl/lower.ipp"
#endif
