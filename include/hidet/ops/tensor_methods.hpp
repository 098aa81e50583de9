// Definitions of the operator methods of hidet::Tensor (t.sum(...), t.transpose(...),
// t.astype(...), ...): each forwards to the hidet::ops function of the same name (astype: cast).
// Declared in runtime/tensor.hpp; defined in impl/tensor_methods.ipp (included here in header-only
// mode, compiled into libhidet otherwise) so the runtime layer does not include ops.
#pragma once

#include "hidet/config.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/tensor_methods.ipp"
#endif
