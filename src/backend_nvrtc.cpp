// libhidet: the backend layer's definitions (compiled mode): NVRTC and the compiled-kernel caches.
#include "hidet/backend/impl/compile_cache.ipp"
#include "hidet/backend/impl/nvrtc.ipp"
#include "hidet/backend/impl/nvrtc_workers.ipp"
