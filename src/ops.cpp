// libhidet: the ops layer's definitions (compiled mode): compute definitions, tasks, the kernel
// cache, creation, matmul and the Tensor methods. The scheduler, the element-wise operators and
// the reductions, transforms, normalizations and pooling are in src/ops_*.cpp.
#include "hidet/ops/impl/compute.ipp"
#include "hidet/ops/impl/task.ipp"
#include "hidet/ops/impl/cache.ipp"
#include "hidet/ops/impl/create.ipp"
#include "hidet/ops/impl/matmul.ipp"
#include "hidet/ops/impl/tensor_methods.ipp"
