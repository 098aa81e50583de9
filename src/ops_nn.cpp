// libhidet: the ops layer's definitions (compiled mode): reductions, transforms, normalizations
// and pooling.
#include "hidet/ops/impl/reduce.ipp"
#include "hidet/ops/impl/transform.ipp"
#include "hidet/ops/impl/norm.ipp"
#include "hidet/ops/impl/pool.ipp"
