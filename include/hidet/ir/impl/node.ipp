// Definitions for hidet/ir/node.hpp.
#pragma once
#include "hidet/ir/node.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

// Out of line: Object's key function, so that its vtable is emitted once.
HIDET_INLINE Object::~Object() = default;

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
