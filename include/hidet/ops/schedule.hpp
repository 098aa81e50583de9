// The auto-scheduler: turns a task (any compute definition) into a plan of Hidet Script kernels.
//
//  1. Materialize: task outputs and every Reduce are written to memory; every other Compute is
//     inlined into the kernels that read it (post-scheduling fusion of element-wise producers).
//  2. For each materialized tensor, in dependency order, one kernel (two for split reductions):
//     schedule_injective.hpp for element-wise definitions, schedule_reduce.hpp for reductions.
//     Kernels are specialized for the task's shapes.
//  3. Buffers: task inputs, task outputs, and temporaries (intermediate reductions, partials).
// A task that normalizes rows over the last axis (softmax, layer_norm, ...) gets instead the
// one-kernel row-resident schedule of schedule_row.hpp when its rows fit in registers.
#pragma once

#include "hidet/ops/plan.hpp"
#include "hidet/ops/task.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

/// The general plan of `task`: one kernel per materialized tensor (steps 1-3 above).
Plan schedule_materialized(const Task &task);

/// Builds the execution plan of `task` (see the top of this file): the row-resident schedule
/// when it applies, else the general one.
Plan schedule(const Task &task);

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule.ipp"
#endif
