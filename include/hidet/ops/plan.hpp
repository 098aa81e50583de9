// The execution plan of a task: the kernels of one script module, the buffers they use (task
// inputs, task outputs, temporaries) and the launches in order. The scheduler (schedule.hpp)
// produces plans; run_plan (cache.hpp) compiles and launches them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hidet/ops/compute.hpp"

namespace hidet {
class Tensor;
} // namespace hidet

namespace hidet::ops {

/// A buffer of an execution plan: a task input, a task output or a temporary.
struct PlanBuffer {
  enum class Role : std::uint8_t { Input, Output, Temp };
  Role role = Role::Temp;
  int index = 0; ///< position among the task's inputs / outputs
  std::string name;
  SymShape shape; ///< evaluated with the plan's symbols at launch
  DataType dtype;
  /// Bytes the kernels need the data aligned to (vector accesses); 0 or 1: the element size.
  /// run_plan copies a task input that is not aligned (a view at an odd offset) before launching.
  int align = 0;
};

/// One kernel launch: the kernel's name in the module and the buffers passed to it.
struct PlanStep {
  std::string kernel;
  std::vector<int> args;
  Dim work = 0; ///< number of output elements; 0 skips the launch (empty tensors)
  /// The step copies its first buffer into its second: skipped when they are one memory (an
  /// output given the memory of the input it updates, Plan::inplace_input).
  bool copy = false;
};

/// How a task runs: a script module with one kernel per materialized tensor, the buffers and the
/// launches in order. A plan of a task with symbolic extents lists its symbols: every kernel takes
/// them, in this order, as i32 parameters after the buffers (define_kernel), and the launch binds
/// their values from the input shapes (ops/cache.hpp).
struct Plan {
  lang::ScriptModule module{"task"};
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;
  std::vector<std::string> symbols;
  /// The input whose memory the one output may be given (Operator::inplace_input), -1 for none.
  int inplace_input = -1;
  /// Checks the inputs of every launch (eager or as a graph node) before the kernels run, and
  /// throws what it finds wrong: the index ranges of scatter and index_put, which inputs in host
  /// memory (the cpu device, the emulator) let it read. Empty for none.
  std::function<void(const std::vector<hidet::Tensor> &)> check;
};

} // namespace hidet::ops
