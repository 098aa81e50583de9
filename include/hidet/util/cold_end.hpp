// Ends a region of cold code opened by hidet/util/cold_begin.hpp. No include guard.
#if HIDET_COLD_CODE_O0
#pragma GCC pop_options
#endif
