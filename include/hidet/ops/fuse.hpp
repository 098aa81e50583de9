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

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/fuse.ipp"
#endif
