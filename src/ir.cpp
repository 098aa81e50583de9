// libhidet: the ir layer's definitions (compiled mode), with hidet/error.hpp and hidet/util.
#include "hidet/impl/error.ipp"
#include "hidet/util/impl/dynlib.ipp"
#include "hidet/util/impl/env.ipp"
#include "hidet/util/impl/hash.ipp"

