// libhidet: the runtime layer's definitions (compiled mode): devices, streams, memory, tensors, symbolic
// dimensions and traced operators.
#include "hidet/runtime/impl/allocator.ipp"
#include "hidet/runtime/impl/cuda_driver.ipp"
#include "hidet/runtime/impl/device.ipp"
#include "hidet/runtime/impl/dim.ipp"
#include "hidet/runtime/impl/random.ipp"
#include "hidet/runtime/impl/stream.ipp"
#include "hidet/runtime/impl/tensor.ipp"
#include "hidet/runtime/impl/operator.ipp"
#include "hidet/runtime/impl/tensor_map.ipp"
#include "hidet/runtime/impl/tensor_print.ipp"
#include "hidet/runtime/impl/timing.ipp"
