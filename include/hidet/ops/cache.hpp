// Eager execution of tasks with an in-process kernel cache.
//
// run_task(key, make_task, inputs) looks the key up (operator name, attributes, input shapes,
// dtypes and device); on a miss it builds the task, schedules it and compiles the plan's module
// (NVRTC's disk cache underneath makes a second process compile nothing); then it allocates the
// outputs and temporaries and launches the plan's kernels in order on the current stream.
#pragma once

#include <mutex>
#include <unordered_map>

#include "hidet/ops/schedule.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"

namespace hidet::ops {

/// A task scheduled and compiled: ready to launch.
struct CompiledTask {
  Plan plan;
  CompiledModule module;
  std::vector<Shape> output_shapes;
  std::vector<DataType> output_dtypes;
};

namespace detail {
struct TaskCache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<CompiledTask>> map;
  std::size_t compiles = 0;
};
inline TaskCache &task_cache() {
  static TaskCache c;
  return c;
}

/// "f32(2, 3)" per input: the part of a cache key that depends on the arguments.
inline std::string signature_of(const std::vector<Tensor> &xs) {
  std::string s;
  for (auto &x : xs) s += str_cat(x.dtype(), shape_str(x.shape()), ";");
  return s;
}

/// The device all inputs are on; an error naming the operator when they differ.
inline Device common_device(const std::string &op, const std::vector<Tensor> &xs) {
  if (xs.empty()) return Device::cuda();
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (!xs[i].defined()) throw ValueError(str_cat(op, ": input ", i, " is an undefined tensor"));
  auto d = xs[0].device();
  for (auto &x : xs)
    if (!(x.device() == d))
      throw ValueError(str_cat(op, ": all inputs must be on the same device, got ", d.str(), " and ", x.device().str(),
                               "; move them with .to(\"cuda\")"));
  return d;
}
} // namespace detail

/// Number of tasks compiled by this process so far (cache misses).
inline std::size_t compiled_task_count() { return detail::task_cache().compiles; }

/// Runs a hand-written plan eagerly (like run_task, for operators with their own kernels):
/// `make_plan` is only called on a cache miss and returns the Plan; its Output buffers give the
/// output shapes and dtypes.
template <class MakePlan>
std::vector<Tensor> run_plan(const std::string &key, MakePlan &&make_plan, const std::vector<Tensor> &inputs,
                             std::optional<Device> device = std::nullopt) {
  Device dev = device ? *device : detail::common_device(key.substr(0, key.find('{')), inputs);
  std::string full_key = str_cat(key, "|", detail::signature_of(inputs));
  std::shared_ptr<CompiledTask> ct;
  {
    auto &c = detail::task_cache();
    std::lock_guard<std::mutex> g(c.mu);
    auto it = c.map.find(full_key);
    if (it != c.map.end()) ct = it->second;
  }
  if (!ct) {
    auto fresh = std::make_shared<CompiledTask>();
    fresh->plan = make_plan();
    if (!fresh->plan.steps.empty()) fresh->module = fresh->plan.module.build();
    for (auto &b : fresh->plan.buffers) {
      if (b.role != PlanBuffer::Role::Output) continue;
      if (fresh->output_shapes.size() <= std::size_t(b.index)) {
        fresh->output_shapes.resize(b.index + 1);
        fresh->output_dtypes.resize(b.index + 1);
      }
      fresh->output_shapes[b.index] = b.shape, fresh->output_dtypes[b.index] = b.dtype;
    }
    auto &c = detail::task_cache();
    std::lock_guard<std::mutex> g(c.mu);
    c.compiles++;
    ct = c.map.emplace(full_key, fresh).first->second;
  }
  Device run_dev = dev.is_cpu() ? Device::cuda() : dev;
  std::vector<Tensor> bufs(ct->plan.buffers.size());
  std::vector<Tensor> outputs(ct->output_shapes.size());
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const auto &b = ct->plan.buffers[i];
    if (b.role == PlanBuffer::Role::Input) {
      bufs[i] = inputs.at(b.index).device() == run_dev ? inputs[b.index] : inputs[b.index].to(run_dev);
      if (b.align > 1 && reinterpret_cast<std::uintptr_t>(bufs[i].data_ptr()) % std::uintptr_t(b.align) != 0) {
        // A view at an offset the kernels' vector accesses cannot use: run on an aligned copy.
        Tensor copy = empty(b.shape, b.dtype, run_dev);
        runtime::detail::copy_bytes(copy.data_ptr(), run_dev, copy.is_host_memory(), bufs[i].data_ptr(), run_dev,
                                    bufs[i].is_host_memory(), bufs[i].nbytes());
        bufs[i] = copy;
      }
    } else {
      bufs[i] = empty(b.shape, b.dtype, run_dev);
      if (b.role == PlanBuffer::Role::Output) outputs[b.index] = bufs[i];
    }
  }
  for (auto &step : ct->plan.steps) {
    if (step.work == 0) continue;
    std::vector<LaunchArg> args;
    for (int a : step.args) args.emplace_back(bufs[a]);
    ct->module[step.kernel].launch(args);
  }
  if (dev.is_cpu())
    for (auto &o : outputs) o = o.to(dev);
  return outputs;
}

/// Runs a task eagerly (see the top of this file). `make_task` is only called on a cache miss;
/// `device` is where the outputs go (cpu inputs run on cuda and come back).
template <class MakeTask>
std::vector<Tensor> run_task(const std::string &key, MakeTask &&make_task, const std::vector<Tensor> &inputs,
                             std::optional<Device> device = std::nullopt) {
  return run_plan(key, [&] { return schedule(make_task()); }, inputs, device);
}

} // namespace hidet::ops
