// libhidet: the ops layer's definitions (compiled mode): compute definitions, tasks, the kernel
// cache, creation, matmul (with its templates and the tuner), the Tensor methods and the collectives. The scheduler, the element-wise operators and
// the reductions, transforms, normalizations and pooling, conv2d and attention are in src/ops_*.cpp.
#include "hidet/ops/impl/compute.ipp"
#include "hidet/ops/impl/task.ipp"
#include "hidet/ops/impl/fuse.ipp"
#include "hidet/ops/impl/epilogue.ipp"
#include "hidet/ops/impl/cache.ipp"
#include "hidet/ops/impl/create.ipp"
#include "hidet/ops/impl/matmul.ipp"
#include "hidet/ops/impl/tuning.ipp"
#include "hidet/ops/impl/tensor_methods.ipp"
#include "hidet/ops/impl/collective.ipp"
