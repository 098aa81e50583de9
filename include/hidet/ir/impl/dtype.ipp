// Definitions for hidet/ir/dtype.hpp.
#pragma once
#include "hidet/ir/dtype.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet {

HIDET_INLINE bool parse_dtype(std::string_view s, DataType &out) {
#define HIDET_X(e, sh, l, c, n, f, sg)                                                             \
  if (s == sh || s == l) {                                                                         \
    out = DataType(DTypeCode::e);                                                                  \
    return true;                                                                                   \
  }
  HIDET_DTYPES(HIDET_X)
#undef HIDET_X
  if (s == "half") return out = dtypes::f16, true;
  if (s == "float") return out = dtypes::f32, true;
  if (s == "double") return out = dtypes::f64, true;
  if (s == "int") return out = dtypes::i32, true;
  if (s == "float8_e4m3fn") return out = dtypes::f8e4m3, true; // PyTorch's name
  return false;
}

} // namespace hidet

#include "hidet/util/cold_end.hpp"
