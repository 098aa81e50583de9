// Definitions for hidet/ops/cache.hpp.
#pragma once

#include "hidet/ops/cache.hpp"

#include "hidet/runtime/device_errors.hpp"
#include "hidet/util/log.hpp"

#include <algorithm>

#include <cctype>
#include <mutex>
#include <unordered_map>

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

namespace detail {
/// The in-process kernel cache of run_plan and run_task: compiled tasks by full key.
struct TaskCache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<CompiledTask>> map;
  std::size_t compiles = 0;
};
HIDET_INLINE TaskCache &task_cache() {
  static TaskCache c;
  return c;
}

HIDET_INLINE std::string signature_of(const std::vector<Tensor> &xs) {
  std::string s;
  for (auto &x : xs) s += str_cat(x.dtype(), shape_str(x.shape()), ";");
  return s;
}

HIDET_INLINE Device common_device(const std::string &op, const std::vector<Tensor> &xs) {
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

HIDET_INLINE std::shared_ptr<CompiledTask> find_compiled(const std::string &full_key) {
  auto &c = detail::task_cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.map.find(full_key);
  return it != c.map.end() ? it->second : nullptr;
}

HIDET_INLINE std::shared_ptr<CompiledTask> add_compiled(const std::string &full_key, Plan plan) {
  auto fresh = std::make_shared<CompiledTask>();
  fresh->plan = std::move(plan);
  if (!fresh->plan.steps.empty()) fresh->module = fresh->plan.module.build();
  for (auto &b : fresh->plan.buffers) {
    if (b.role != PlanBuffer::Role::Output) continue;
    if (fresh->output_shapes.size() <= std::size_t(b.index)) {
      fresh->output_shapes.resize(b.index + 1);
      fresh->output_dtypes.resize(b.index + 1);
    }
    fresh->output_shapes[b.index] = b.shape, fresh->output_dtypes[b.index] = b.dtype;
  }
  util::debug_log(str_cat("built the kernels of task ", full_key.substr(0, 160), full_key.size() > 160 ? "..." : ""));
  auto &c = detail::task_cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.compiles++;
  return c.map.emplace(full_key, fresh).first->second;
}

HIDET_INLINE SymbolValues bind_symbols(const std::string &op, const std::vector<std::string> &symbols,
                                       const std::vector<SymShape> &expected,
                                       const std::vector<std::vector<std::int64_t>> &shapes) {
  SymbolValues values;
  auto input_str = [&](std::size_t i) {
    return str_cat("input ", i, " of shape ", shape_str(shapes[i]), " (expected ", shape_str(expected[i]), ")");
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (shapes.at(i).size() != expected[i].size())
      throw ValueError(str_cat(op, ": ", input_str(i), " has the wrong rank"));
    for (std::size_t d = 0; d < expected[i].size(); ++d) {
      const Dim &e = expected[i][d];
      auto names = e.symbols();
      if (names.size() == 1 && !values.count(names[0]) && e == Dim::symbol(names[0])) values[names[0]] = shapes[i][d];
    }
  }
  const SymbolValues *bound = SymbolBinding::current();
  for (const auto &s : symbols) {
    if (values.count(s)) continue;
    auto it = bound ? bound->find(s) : SymbolValues::const_iterator();
    if (!bound || it == bound->end())
      throw ValueError(str_cat(op, ": symbol ", s, " is not an extent of any input by itself, and no graph that runs binds it"));
    values[s] = it->second;
  }
  for (std::size_t i = 0; i < expected.size(); ++i)
    for (std::size_t d = 0; d < expected[i].size(); ++d)
      if (expected[i][d].evaluate(values) != shapes[i][d])
        throw ValueError(str_cat(op, ": ", input_str(i), ": dim ", d, " must be ", expected[i][d], " = ",
                                 expected[i][d].evaluate(values)));
  return values;
}

HIDET_INLINE std::string task_signature(const Task &task) {
  std::string s;
  for (const auto &x : task.inputs) s += str_cat(x.dtype(), shape_str(x.sym_shape()), ";");
  return s;
}

HIDET_INLINE std::vector<Tensor> launch_compiled(const CompiledTask &ct, const std::vector<Tensor> &inputs, Device dev) {
  runtime::check_device_errors(); // what earlier kernels found (an index out of range on a GPU)
  Device run_dev = dev.is_cpu() ? Device::cuda() : dev;
  std::vector<Tensor> bufs(ct.plan.buffers.size());
  std::vector<Tensor> outputs(ct.output_shapes.size());
  SymbolValues values;
  if (!ct.plan.symbols.empty()) {
    std::vector<SymShape> expected;
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto &b : ct.plan.buffers)
      if (b.role == PlanBuffer::Role::Input) expected.push_back(b.shape), shapes.push_back(inputs.at(b.index).shape());
    values = bind_symbols(ct.plan.module.name(), ct.plan.symbols, expected, shapes);
  }
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const auto &b = ct.plan.buffers[i];
    const Shape shape = evaluate_shape(b.shape, values);
    if (b.role == PlanBuffer::Role::Input) {
      bufs[i] = inputs.at(b.index).device() == run_dev ? inputs[b.index] : inputs[b.index].to(run_dev);
      if (b.align > 1 && reinterpret_cast<std::uintptr_t>(bufs[i].data_ptr()) % std::uintptr_t(b.align) != 0) {
        // A view at an offset the kernels' vector accesses cannot use: run on an aligned copy.
        Tensor copy = empty(shape, b.dtype, run_dev);
        runtime::detail::copy_bytes(copy.data_ptr(), run_dev, copy.is_host_memory(), bufs[i].data_ptr(), run_dev,
                                    bufs[i].is_host_memory(), bufs[i].nbytes());
        bufs[i] = copy;
      }
    } else {
      bufs[i] = empty(shape, b.dtype, run_dev);
      if (b.role == PlanBuffer::Role::Output) outputs[b.index] = bufs[i];
    }
  }
  for (auto &step : ct.plan.steps) {
    if (step.work.evaluate(values) == 0) continue;
    if (step.copy && bufs[std::size_t(step.args.at(0))].data_ptr() == bufs[std::size_t(step.args.at(1))].data_ptr())
      continue; // the output is the input's memory (an update in place)
    std::vector<LaunchArg> args;
    for (int a : step.args) args.emplace_back(bufs[a]);
    for (const auto &s : ct.plan.symbols) args.emplace_back(values.at(s));
    ct.module[step.kernel].launch(args);
  }
  if (dev.is_cpu())
    for (auto &o : outputs) o = o.to(dev);
  return outputs;
}
HIDET_INLINE std::string op_display_name(const std::string &key) {
  std::string op = key.substr(0, key.find('{')), name;
  bool upper = true;
  for (char ch : op) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    name += upper ? char(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return name;
}

/// The outputs' metadata of a plan's Output buffers, on `dev`.
HIDET_INLINE std::vector<TensorMeta> plan_output_metas(const Plan &plan, Device dev) {
  std::vector<TensorMeta> metas;
  for (const auto &b : plan.buffers) {
    if (b.role != PlanBuffer::Role::Output) continue;
    if (metas.size() <= std::size_t(b.index)) metas.resize(std::size_t(b.index) + 1);
    metas[std::size_t(b.index)] = TensorMeta{b.shape, b.dtype, dev};
  }
  return metas;
}

/// The attributes part of "op{attrs}".
HIDET_INLINE std::string key_attrs(const std::string &key) {
  auto open = key.find('{');
  return open != std::string::npos && key.size() > open + 2 ? key.substr(open + 1, key.size() - open - 2) : "";
}

HIDET_INLINE bool has_symbolic_extents(const std::vector<Tensor> &xs) {
  for (const auto &x : xs)
    if (x.is_symbolic() && !x.symbolic_info()->constant_shape) return true;
  return false;
}

HIDET_INLINE std::vector<Tensor> with_optional(std::vector<Tensor> tensors,
                                               const std::vector<std::optional<Tensor>> &optional) {
  for (const auto &t : optional)
    if (t) tensors.push_back(*t);
  return tensors;
}

HIDET_INLINE std::pair<std::optional<Tensor>, std::optional<Tensor>>
optional_pair(const std::vector<Tensor> &in, std::size_t first, bool has_a, bool has_b) {
  std::pair<std::optional<Tensor>, std::optional<Tensor>> r;
  if (has_a) r.first = in.at(first++);
  if (has_b) r.second = in.at(first);
  return r;
}

HIDET_INLINE Tensor trace_symbolic(const std::string &key, const std::vector<Tensor> &inputs, SymShape shape,
                                   DataType dtype, std::function<Tensor(const std::vector<Tensor> &)> apply) {
  return trace_symbolic_outputs(key, inputs, {{std::move(shape), dtype}},
                                [apply = std::move(apply)](const std::vector<Tensor> &in) {
                                  return std::vector<Tensor>{apply(in)};
                                })[0];
}

HIDET_INLINE std::vector<Tensor>
trace_symbolic_outputs(const std::string &key, const std::vector<Tensor> &inputs,
                       const std::vector<std::pair<SymShape, DataType>> &outputs,
                       std::function<std::vector<Tensor>(const std::vector<Tensor> &)> apply) {
  Device dev = common_device(key.substr(0, key.find('{')), inputs);
  std::vector<TensorMeta> metas;
  for (const auto &[shape, dtype] : outputs) metas.push_back(TensorMeta{shape, dtype, dev});
  return trace_operator(op_display_name(key), inputs, key_attrs(key), std::move(metas), std::move(apply));
}

HIDET_INLINE Tensor trace_generic_task(const std::string &key, const std::vector<Tensor> &inputs, SymShape shape,
                                       DataType dtype, Task task,
                                       std::function<Tensor(const std::vector<Tensor> &)> at_constant_shapes) {
  return trace_symbolic(key, inputs, std::move(shape), dtype,
                        [key, task = std::move(task), at = std::move(at_constant_shapes)](const std::vector<Tensor> &in) {
                          if (any_symbolic(in)) return at(in);
                          return run_symbolic_task(key, task, in, std::nullopt)[0];
                        });
}

HIDET_INLINE Dim window_out_extent(const Dim &in, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
                                   std::int64_t dilation) {
  return (in + Dim(2 * padding - dilation * (kernel - 1) - 1)) / Dim(stride) + Dim(1);
}

HIDET_INLINE Tensor trace_by_probing(const std::string &op, const std::vector<Tensor> &inputs,
                                     std::function<Tensor(const std::vector<Tensor> &)> apply,
                                     const std::optional<SymShape> &expected) {
  std::vector<std::string> names; // the symbols, in order of appearance
  std::vector<Dim> candidates;    // the inputs' symbolic extents
  for (const auto &x : inputs)
    for (const Dim &d : x.sym_shape()) {
      if (d.is_constant()) continue;
      if (std::find(candidates.begin(), candidates.end(), d) == candidates.end()) candidates.push_back(d);
      for (const auto &n : d.symbols())
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  // Primes above 200: an image size stays above 1 through a network's downsamplings (ConvNeXt's
  // stem and three stride-2 stages divide it by 32).
  static const std::int64_t primes[] = {211, 223, 227, 229, 233, 239, 241, 251, 257, 263, 269, 271, 277, 281, 283, 293};
  if (names.size() > 8) throw ValueError(str_cat(op, ": more than 8 symbols in one operator's inputs"));
  Tensor probes[2];
  SymbolValues values[2];
  for (int k = 0; k < 2; ++k) {
    for (std::size_t i = 0; i < names.size(); ++i) values[k][names[i]] = primes[i + std::size_t(k) * 8];
    std::vector<Tensor> stand_ins;
    for (const auto &x : inputs)
      stand_ins.push_back(has_symbolic_extents({x}) ? Tensor::symbolic(to_sym_shape(evaluate_shape(x.sym_shape(), values[k])),
                                                                       x.dtype(), x.device(), x.name())
                                                    : x);
    probes[k] = apply(stand_ins);
    if (!probes[k].is_symbolic() || !probes[k].trace())
      throw ValueError(str_cat(op, ": does not trace inputs of symbolic extents (", shape_str(inputs[0].sym_shape()), ")"));
  }
  SymShape shape;
  for (std::size_t d = 0; d < probes[0].shape().size(); ++d) {
    std::int64_t a = probes[0].shape()[d], b = probes[1].shape()[d];
    if (a == b) {
      shape.push_back(a);
      continue;
    }
    auto fits = [&](const Dim &c) { return c.evaluate(values[0]) == a && c.evaluate(values[1]) == b; };
    if (expected && d < expected->size() && fits((*expected)[d])) {
      shape.push_back((*expected)[d]);
      continue;
    }
    auto it = std::find_if(candidates.begin(), candidates.end(), fits);
    if (it == candidates.end())
      throw ValueError(str_cat(op, ": output dim ", d, " depends on the symbols of the inputs' extents in a way this operator "
                                   "does not trace (inputs ", [&] {
                                     std::string s;
                                     for (const auto &x : inputs) s += (s.empty() ? "" : ", ") + shape_str(x.sym_shape());
                                     return s;
                                   }(), "); give it constant extents there"));
    shape.push_back(*it);
  }
  // The last node apply recorded: its attributes when it is `op`'s, or the operator `op` is a
  // variant of (ScaledDotProductAttentionHeadsLast records ScaledDotProductAttention, heads_last=true).
  const Operator &traced = *probes[0].trace().op;
  std::string name = op_display_name(op);
  return trace_operator(name, inputs, name.rfind(traced.name(), 0) == 0 ? traced.attrs() : std::string(),
                        {{std::move(shape), probes[0].dtype(), probes[0].device()}},
                        [apply = std::move(apply)](const std::vector<Tensor> &in) { return std::vector<Tensor>{apply(in)}; })[0];
}

HIDET_INLINE void require_equal_extents(const std::string &op, const Dim &a, const Dim &b, const std::string &what) {
  if (a != b)
    throw ValueError(str_cat(op, ": ", what, " are ", a, " and ", b,
                             a.is_constant() && b.is_constant() ? "; they must be equal"
                                                                : "; they must be equal for every value of the symbols"));
}

HIDET_INLINE std::vector<Tensor> trace_task(const std::string &key, Task task, const std::vector<Tensor> &inputs,
                                            std::optional<Device> device) {
  Device dev = device ? *device : common_device(key.substr(0, key.find('{')), inputs);
  std::vector<TensorMeta> metas;
  for (const auto &o : task.outputs) metas.push_back(TensorMeta{o.sym_shape(), o.dtype(), dev});
  std::string name = op_display_name(key);
  auto op = std::make_shared<const TaskOperator>(name, inputs, key_attrs(key), std::move(metas), key, std::move(task),
                                                 device, std::vector<std::string>{name}, 0);
  return outputs_of(op);
}

HIDET_INLINE std::vector<Tensor> run_symbolic_task(const std::string &key, const Task &task,
                                                   const std::vector<Tensor> &inputs, std::optional<Device> device) {
  const std::string op = key.substr(0, key.find('{'));
  if (inputs.size() != task.inputs.size())
    throw ValueError(str_cat(op, ": takes ", task.inputs.size(), " inputs, got ", inputs.size()));
  if (any_symbolic(inputs)) {
    if (has_symbolic_extents(inputs)) return trace_task(key, task, inputs, device); // traced again as it is
    std::vector<SymShape> expected;
    std::vector<std::vector<std::int64_t>> shapes;
    for (std::size_t i = 0; i < inputs.size(); ++i) expected.push_back(task.inputs[i].sym_shape()), shapes.push_back(inputs[i].shape());
    return trace_task(key, specialize(task, bind_symbols(op, task_symbols(task), expected, shapes)), inputs, device);
  }
  Device dev = device ? *device : common_device(op, inputs);
  std::string full_key = str_cat(key, "|", task_signature(task));
  std::shared_ptr<CompiledTask> ct = find_compiled(full_key);
  if (!ct) ct = add_compiled(full_key, schedule(task));
  return launch_compiled(*ct, inputs, dev);
}

HIDET_INLINE std::vector<Tensor> trace_plan(const std::string &key, Plan plan, const std::vector<Tensor> &inputs,
                                            std::optional<Device> device) {
  std::string op = key.substr(0, key.find('{'));
  Device dev = device ? *device : common_device(op, inputs);
  std::vector<TensorMeta> metas = plan_output_metas(plan, dev);
  std::string attrs = key_attrs(key);
  const int inplace = plan.inplace_input;
  auto shared = std::make_shared<const Plan>(std::move(plan));
  std::vector<Tensor> outs = trace_operator(op_display_name(key), inputs, attrs, std::move(metas),
                                            [key, shared, device](const std::vector<Tensor> &ins) {
                                              return run_plan(key, [&] { return *shared; }, ins, device);
                                            });
  if (inplace >= 0 && outs.size() == 1) mark_inplace_input(outs[0], inplace);
  return outs;
}
} // namespace detail

HIDET_INLINE TaskOperator::TaskOperator(std::string name, std::vector<Tensor> inputs, std::string attrs,
                                        std::vector<TensorMeta> outputs, std::string key, Task task,
                                        std::optional<Device> device, std::vector<std::string> members, int anchor)
    : Operator(std::move(name), std::move(inputs), std::move(attrs), std::move(outputs),
               [key, task, device, generic = !task_symbols(task).empty()](const std::vector<Tensor> &ins) {
                 if (generic) return detail::run_symbolic_task(key, task, ins, device);
                 return run_plan(key, [&] { return schedule(task); }, ins, device);
               }),
      key_(std::move(key)), task_(std::move(task)), device_(device), members_(std::move(members)), anchor_(anchor) {
  if (members_.empty()) members_.push_back(this->name());
}

HIDET_INLINE std::shared_ptr<const Operator> TaskOperator::with_inputs(std::vector<Tensor> inputs) const {
  auto op = std::make_shared<TaskOperator>(name(), std::move(inputs), attrs(), output_metas(), key_, task_, device_,
                                            members_, anchor_);
  op->set_origin(origin_or_self());
  return op;
}

HIDET_INLINE std::size_t compiled_task_count() { return detail::task_cache().compiles; }

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
