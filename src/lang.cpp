// libhidet: the lang layer's definitions (compiled mode).
#include "hidet/lang/impl/builder.ipp"
#include "hidet/lang/impl/control.ipp"
#include "hidet/lang/impl/cuda.ipp"
#include "hidet/lang/impl/expr.ipp"
#include "hidet/lang/impl/mapping.ipp"
#include "hidet/lang/impl/module.ipp"
#include "hidet/lang/impl/types.ipp"
#include "hidet/lang/impl/var.ipp"

#include "hidet/lang/primitives/impl/half.ipp"
#include "hidet/lang/primitives/impl/hopper.ipp"
#include "hidet/lang/primitives/impl/memory.ipp"
#include "hidet/lang/primitives/impl/mma.ipp"
