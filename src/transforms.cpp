// libhidet: the transforms layer's definitions (compiled mode).
#include "hidet/transforms/impl/instantiate_symbols.ipp"
#include "hidet/transforms/impl/lower.ipp"
#include "hidet/transforms/impl/simplify.ipp"
#include "hidet/transforms/impl/simplify_index.ipp"
#include "hidet/transforms/impl/verify.ipp"
