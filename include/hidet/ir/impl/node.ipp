// Definitions for hidet/ir/node.hpp.
#pragma once
#include "hidet/ir/node.hpp"

namespace hidet::ir {

// Out of line: Object's key function, so that its vtable is emitted once.
HIDET_INLINE Object::~Object() = default;

} // namespace hidet::ir
