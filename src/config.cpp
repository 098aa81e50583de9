// libhidet: the build-mode check (include/hidet/config.hpp).
#include "hidet/impl/config.ipp"
