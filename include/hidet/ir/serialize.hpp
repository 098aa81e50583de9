// A binary form of IR modules, so that a file can carry kernels as IR: the CPU emulator runs
// kernels from their lowered IR, and a compiled graph saved on the emulator keeps it to be loaded
// by another process (graph/compiled_graph.hpp, "Saving").
//
// Every node is written once, the first time it is met, and later uses refer to it by number:
// shared subtrees stay shared and each variable keeps its identity (its declaration, uses and the
// symbolic dimensions of tensor types are one node after reading, as before writing). Types,
// layouts, source positions (file names kept for the life of the process) and name hints are
// kept, so the module read back prints the same and is structurally equal (ir/equal.hpp).
//
// The encoding belongs to one hidet version (files that carry it record the version and refuse
// others). A malformed input gives a ValueError naming `where` and the byte.
#pragma once

#include <string>
#include <string_view>

#include "hidet/ir/func.hpp"

namespace hidet::ir {

/// The module's bytes (see the top of the file).
std::string serialize_module(const Module &m);

/// The module serialize_module wrote; `where` names the input in errors.
Module deserialize_module(std::string_view bytes, const std::string &where = "serialized IR");

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/serialize.ipp"
#endif
