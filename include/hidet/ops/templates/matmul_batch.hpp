// The batch of a templated matrix product: c[z] = a[z or 0] @ b[z or 0] for z < count, where an
// operand without a batch dimension is shared by every product (numpy broadcasting of a batch
// of 1). count == 1 means plain 2-D operands.
#pragma once

#include <string>

#include "hidet/error.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

struct MatmulBatch {
  int count = 1;        ///< products (blockIdx.z of the grid, or part of the persistent tile id)
  bool a = true, b = true; ///< whether a / b has the batch dimension (else it is shared)

  bool batched() const { return count > 1; }
  /// "" or ", batch 8 (b shared)"
  std::string str() const {
    if (!batched()) return "";
    return str_cat(", batch ", count, a && b ? "" : a ? " (b shared)" : " (a shared)");
  }
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
