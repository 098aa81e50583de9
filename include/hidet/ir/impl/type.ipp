// Definitions for hidet/ir/type.hpp.
#pragma once
#include "hidet/ir/type.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE const char *scope_name(Scope s) {
  switch (s) {
  case Scope::Global: return "global";
  case Scope::Shared: return "shared";
  case Scope::Register: return "register";
  case Scope::Param: return "param";
  }
  return "?";
}

HIDET_INLINE Type ScalarTypeNode::make(DataType d) {
  static const Type table[] = {
#define HIDET_X(e, s, l, c, n, f, sg) Type(new ScalarTypeNode(DTypeCode::e)),
      HIDET_DTYPES(HIDET_X)
#undef HIDET_X
  };
  return table[static_cast<int>(d.code)];
}

HIDET_INLINE Type VoidTypeNode::make() {
  static const Type t(new VoidTypeNode());
  return t;
}

HIDET_INLINE DataType dtype_of(const Type &t) {
  if (auto s = t.as<ScalarTypeNode>()) return s->dtype;
  HIDET_ASSERT(false, "expected a scalar type");
  return {};
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
