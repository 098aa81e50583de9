// Eager execution of tasks with an in-process kernel cache.
//
// run_task(key, make_task, inputs) looks the key up (operator name, attributes, input shapes,
// dtypes and device); on a miss it builds the task, schedules it and compiles the plan's module
// (NVRTC's disk cache underneath makes a second process compile nothing); then it allocates the
// outputs and temporaries and launches the plan's kernels in order on the current stream.
// When an input is symbolic, nothing is compiled or launched: the operator is recorded (an
// Operator named after the key, "softmax{axis=1}" -> Softmax(..., axis=1); run_task records a
// TaskOperator holding the task) and its outputs are symbolic; running the node runs the same
// kernels.
//
// Shape-generic kernels: a task whose extents are symbols (built from inputs of symbolic extents,
// ops/compute.hpp) is scheduled and compiled once, cached under its symbolic signature
// ("add|f32(n, 768);f32(768,);"), and serves every value of its symbols: a launch binds each symbol
// from the inputs' shapes (an extent that is the symbol alone; else the values the running graph
// binds, SymbolBinding), checks every input extent against it, allocates the outputs at the
// evaluated shapes and passes the values to the kernels.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "hidet/ops/schedule.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/operator.hpp"
#include "hidet/runtime/tensor.hpp"

namespace hidet::ops {

/// A task scheduled and compiled: ready to launch.
struct CompiledTask {
  Plan plan;
  CompiledModule module;
  std::vector<SymShape> output_shapes;
  std::vector<DataType> output_dtypes;
};

namespace detail {
/// "f32(2, 3)" per input: the part of a cache key that depends on the arguments.
std::string signature_of(const std::vector<Tensor> &xs);

/// The device all inputs are on; an error naming the operator when they differ.
Device common_device(const std::string &op, const std::vector<Tensor> &xs);

/// The compiled task cached under `full_key`, or null.
std::shared_ptr<CompiledTask> find_compiled(const std::string &full_key);
/// Compiles `plan` (run_plan's cache miss) and caches it under `full_key`; returns the cached
/// entry (another thread's when it got there first).
std::shared_ptr<CompiledTask> add_compiled(const std::string &full_key, Plan plan);
/// Allocates the outputs and temporaries of `ct` on `dev` (cuda for cpu) and launches its kernels
/// in order on `inputs`; returns the outputs, on `dev`. A plan with symbols binds them first
/// (bind_symbols) and passes their values to every kernel.
std::vector<Tensor> launch_compiled(const CompiledTask &ct, const std::vector<Tensor> &inputs, Device dev);

/// The values of `symbols` for inputs of the given concrete `shapes` (what the inputs are, of
/// the symbolic extents `expected`): an extent that is a symbol alone binds it; a symbol that no
/// extent gives alone takes the running graph's value (SymbolBinding); then every extent must
/// equal its value. A ValueError naming `op`, the input and the extents otherwise.
SymbolValues bind_symbols(const std::string &op, const std::vector<std::string> &symbols,
                          const std::vector<SymShape> &expected, const std::vector<std::vector<std::int64_t>> &shapes);

/// "f32(n, 768);f32(768,);": the part of a cache key that the inputs of a symbolic task give.
std::string task_signature(const Task &task);

/// Runs a task with symbolic extents on `inputs` (TaskOperator's run): on tensors with data, its
/// shape-generic kernels (compiled on the first call, under task_signature); on symbolic inputs of
/// constant shapes (a graph traced again at one shape, FlowGraph::specialize), records the task
/// specialized to those shapes.
std::vector<Tensor> run_symbolic_task(const std::string &key, const Task &task, const std::vector<Tensor> &inputs,
                                      std::optional<Device> device);

/// Records the task-defined operator of `key` (run_task's tracing; see TaskOperator).
std::vector<Tensor> trace_task(const std::string &key, Task task, const std::vector<Tensor> &inputs,
                               std::optional<Device> device);

/// Records the operator of `key` (see the top of this file) on inputs of which some are symbolic;
/// returns its symbolic outputs.
std::vector<Tensor> trace_plan(const std::string &key, Plan plan, const std::vector<Tensor> &inputs,
                               std::optional<Device> device);

/// "Softmax" for "softmax{axis=1}": the operator's name in a graph.
std::string op_display_name(const std::string &key);

/// True when some tensor of `xs` has an extent that is a symbol ("n"), not a constant.
bool has_symbolic_extents(const std::vector<Tensor> &xs);

/// Records the operator of `key` ("softmax{axis=1}" -> Softmax(..., axis=1)) on inputs with
/// symbolic extents: one output of `shape` and `dtype` on the inputs' device. No task is built
/// (tasks need constant extents): running the node calls `apply` on the node's inputs, the
/// operator's own function, which runs eagerly on tensors with data and, on symbolic tensors of
/// constant shapes, traces the operator again at those shapes (FlowGraph::run on symbolic inputs:
/// a graph specialized to one shape).
Tensor trace_symbolic(const std::string &key, const std::vector<Tensor> &inputs, SymShape shape, DataType dtype,
                      std::function<Tensor(const std::vector<Tensor> &)> apply);
/// trace_symbolic for an operator of several outputs (sort's values and indices): one output per
/// entry of `outputs` (its extents and dtype), on the inputs' device.
std::vector<Tensor> trace_symbolic_outputs(const std::string &key, const std::vector<Tensor> &inputs,
                                           const std::vector<std::pair<SymShape, DataType>> &outputs,
                                           std::function<std::vector<Tensor>(const std::vector<Tensor> &)> apply);

/// trace_symbolic for an operator with a task over the symbols (`task`, key `key`): running the
/// node on tensors with data runs that task (one kernel for every value of the symbols, bound from
/// the inputs or the running graph); on symbolic tensors of constant shapes (specialize()) it calls
/// `at_constant_shapes`, the operator itself, so that the specialized graph holds the constant
/// operator that graph passes read.
Tensor trace_generic_task(const std::string &key, const std::vector<Tensor> &inputs, SymShape shape, DataType dtype,
                          Task task, std::function<Tensor(const std::vector<Tensor> &)> at_constant_shapes);

/// trace_symbolic for operators whose shape rules are written on constant extents (conv2d, pooling,
/// attention): `apply` (the operator itself) first traces twice on stand-ins, symbolic tensors of
/// constant shapes with each symbol given two different values (primes above 200), which validates
/// the call and gives the node's name, attributes and output dtype. An output extent that is the
/// same both times is a constant; one that changes must be one of the inputs' symbolic extents (the
/// batch n, a sequence length s), else the operator does not trace those symbols: a ValueError
/// naming `op`. An operator that knows its output extents as expressions of the inputs' (a
/// convolution's (h + 2p - k) / s + 1) gives them as `expected`: an extent that changes may then
/// also be its expected one, when that evaluates to both probes' values.
Tensor trace_by_probing(const std::string &op, const std::vector<Tensor> &inputs,
                        std::function<Tensor(const std::vector<Tensor> &)> apply,
                        const std::optional<SymShape> &expected = std::nullopt);

/// The output extent of a convolution or pooling window over an input extent `in` (symbolic or
/// not): (in + 2 padding - dilation (kernel - 1) - 1) / stride + 1, floor division.
Dim window_out_extent(const Dim &in, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
                      std::int64_t dilation);

/// `tensors`, then those of `optional` that are present: an operator's inputs as its node records
/// them (batch_norm's weight and bias).
std::vector<Tensor> with_optional(std::vector<Tensor> tensors, const std::vector<std::optional<Tensor>> &optional);
/// The inverse of with_optional for two optional tensors packed from in[first] on: each is
/// present when its flag says so.
std::pair<std::optional<Tensor>, std::optional<Tensor>> optional_pair(const std::vector<Tensor> &in, std::size_t first,
                                                                      bool has_a, bool has_b);

/// An error naming `op` unless the extents a and b (what: "the last dimension of a") are equal
/// for every value of their symbols.
void require_equal_extents(const std::string &op, const Dim &a, const Dim &b, const std::string &what);
} // namespace detail

/// A traced operator defined by a compute definition (recorded by run_task): besides what every
/// Operator has, its Task, the kernel-cache key it runs under and its device, so that graph
/// passes can compose it with its neighbours (ops/fuse.hpp). A fused one lists the operators it
/// was made from (`members`, in order) and which of them is the anchor (the reduction, or the
/// last when all are element-wise).
class TaskOperator : public Operator {
public:
  TaskOperator(std::string name, std::vector<Tensor> inputs, std::string attrs, std::vector<TensorMeta> outputs,
               std::string key, Task task, std::optional<Device> device, std::vector<std::string> members = {},
               int anchor = 0);
  const Task &task() const { return task_; }
  const std::string &key() const { return key_; }
  std::optional<Device> device() const { return device_; }
  /// The names of the operators this one was fused from ({name()} when it was not fused).
  const std::vector<std::string> &members() const { return members_; }
  int anchor() const { return anchor_; }
  std::shared_ptr<const Operator> with_inputs(std::vector<Tensor> inputs) const override;

private:
  std::string key_;
  Task task_;
  std::optional<Device> device_;
  std::vector<std::string> members_;
  int anchor_ = 0;
};

/// Number of tasks compiled by this process so far (cache misses).
std::size_t compiled_task_count();

/// Runs a hand-written plan eagerly (like run_task, for operators with their own kernels):
/// `make_plan` is only called on a cache miss and returns the Plan; its Output buffers give the
/// output shapes and dtypes.
template <class MakePlan>
std::vector<Tensor> run_plan(const std::string &key, MakePlan &&make_plan, const std::vector<Tensor> &inputs,
                             std::optional<Device> device = std::nullopt) {
  if (any_symbolic(inputs)) return detail::trace_plan(key, make_plan(), inputs, device);
  Device dev = device ? *device : detail::common_device(key.substr(0, key.find('{')), inputs);
  std::string full_key = str_cat(key, "|", detail::signature_of(inputs));
  std::shared_ptr<CompiledTask> ct = detail::find_compiled(full_key);
  if (!ct) ct = detail::add_compiled(full_key, make_plan());
  // (Not in a run that records allocations without launching: its inputs hold no values.)
  if (ct->plan.check && !runtime::detail::skip_emulated_launches()) ct->plan.check(inputs);
  return detail::launch_compiled(*ct, inputs, dev);
}

/// Runs a task eagerly (see the top of this file). `make_task` is only called on a cache miss;
/// `device` is where the outputs go (cpu inputs run on cuda and come back).
template <class MakeTask>
std::vector<Tensor> run_task(const std::string &key, MakeTask &&make_task, const std::vector<Tensor> &inputs,
                             std::optional<Device> device = std::nullopt) {
  if (any_symbolic(inputs)) return detail::trace_task(key, make_task(), inputs, device);
  return run_plan(key, [&] { return schedule(make_task()); }, inputs, device);
}

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/cache.ipp"
#endif
