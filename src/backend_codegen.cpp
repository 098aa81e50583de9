// libhidet: the backend layer's definitions (compiled mode): CUDA code generation.
#include "hidet/backend/impl/codegen.ipp"
#include "hidet/backend/impl/codegen_intrinsics.ipp"
#include "hidet/backend/impl/codegen_names.ipp"
#include "hidet/backend/impl/codegen_primitives.ipp"
#include "hidet/backend/impl/cuda_prelude.ipp"
