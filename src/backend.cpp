// libhidet: the backend layer's definitions (compiled mode).
#include "hidet/backend/impl/codegen.ipp"
#include "hidet/backend/impl/codegen_intrinsics.ipp"
#include "hidet/backend/impl/codegen_names.ipp"
#include "hidet/backend/impl/codegen_primitives.ipp"
#include "hidet/backend/impl/compile_cache.ipp"
#include "hidet/backend/impl/cuda_prelude.ipp"
#include "hidet/backend/impl/nvrtc.ipp"
