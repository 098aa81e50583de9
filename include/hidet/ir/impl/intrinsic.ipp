// Definitions for hidet/ir/intrinsic.hpp.
#pragma once
#include "hidet/ir/intrinsic.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE std::string_view intrinsic_name(Intrinsic op) {
  switch (op) {
  case Intrinsic::None: return "<call>";
#define HIDET_X(e, n)                                                                              \
  case Intrinsic::e: return n;
    HIDET_INTRINSICS(HIDET_X)
#undef HIDET_X
  }
  return "?";
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
