// Definitions for hidet/ir/func.hpp.
#pragma once
#include "hidet/ir/func.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE const char *func_kind_name(FuncKind k) {
  static const char *s[] = {"kernel", "device", "host"};
  return s[static_cast<int>(k)];
}

HIDET_INLINE Function ModuleNode::lookup(const std::string &name) const {
  for (auto &f : functions)
    if (f->name == name) return f;
  return {};
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
