// Composition of compute definitions: the task-level half of operator fusion.
//
// fuse_prologue(consumer, j, producer) is the task that computes `consumer` with its input j
// replaced by the single output of the injective task `producer`: every read of input j becomes
// a read of the producer's element definition, which the scheduler inlines into the consumer's
// kernels (schedule.hpp, step 1), so the producer's result is never written to memory. The new
// task's inputs are the consumer's with input j replaced by the producer's inputs, in order.
//
//   Task relu_sum = fuse_prologue(sum_task, 0, relu_task);   // sum(relu(x)) in one kernel
#pragma once

#include <cstddef>

#include "hidet/ops/task.hpp"

namespace hidet::ops {

/// The consumer with input `input_index` computed by `producer` (see the top of the file).
/// Throws ValueError when the producer is not injective, has more than one output, or its output
/// differs from the consumer's input in shape or dtype.
Task fuse_prologue(const Task &consumer, std::size_t input_index, const Task &producer);
/// The injective `consumer` with input `input_index` computed by `producer`, any task of one
/// output (a reduction): the consumer becomes the producer's epilogue, which the scheduler
/// evaluates at the reduction's store when it reads the result at its own index (schedule.hpp).
/// Throws ValueError when the consumer is not injective or the producer has more outputs.
Task fuse_epilogue(const Task &consumer, std::size_t input_index, const Task &producer);

namespace detail {
/// The composition behind both: consumer's input replaced by producer's output (checked: shape
/// and dtype).
Task compose(const Task &consumer, std::size_t input_index, const Task &producer);
} // namespace detail

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/fuse.ipp"
#endif
