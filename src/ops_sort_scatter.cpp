// libhidet: the ops layer's definitions (compiled mode): sort, argsort, topk, searchsorted and
// bucketize; scatter, index_put and index_add; solve_triangular.
#include "hidet/ops/impl/linalg.ipp"
#include "hidet/ops/impl/scatter.ipp"
#include "hidet/ops/impl/sort.ipp"
