// Begins a region of cold code (see config.hpp: HIDET_COLD_CODE_O0): included after a file's
// own includes, closed by hidet/util/cold_end.hpp at its end. No include guard: it opens every
// region.
#include "hidet/config.hpp"

#if HIDET_COLD_CODE_O0
#pragma GCC push_options
#pragma GCC optimize("O0")
#endif
