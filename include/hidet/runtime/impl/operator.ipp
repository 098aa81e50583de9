// Definitions for hidet/runtime/operator.hpp.
#pragma once

#include "hidet/runtime/operator.hpp"

#include "hidet/error.hpp"

namespace hidet {

HIDET_INLINE Operator::Operator(std::string name, std::vector<Tensor> inputs, std::string attrs,
                                std::vector<TensorMeta> outputs, Run run)
    : name_(std::move(name)), inputs_(std::move(inputs)), attrs_(std::move(attrs)),
      outputs_(std::move(outputs)), run_(std::move(run)) {
  for (std::size_t i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i].defined())
      throw ValueError(str_cat(name_, ": input ", i, " is an undefined tensor"));
}

HIDET_INLINE Operator::~Operator() = default;

HIDET_INLINE std::vector<Tensor> Operator::run(const std::vector<Tensor> &inputs) const {
  if (inputs.size() != inputs_.size())
    throw ValueError(str_cat("operator ", name_, ": expected ", inputs_.size(), " inputs, got ",
                             inputs.size()));
  std::vector<Tensor> out = run_(inputs);
  if (out.size() != outputs_.size())
    throw ValueError(str_cat("operator ", name_, ": produced ", out.size(), " outputs, recorded ",
                             outputs_.size()));
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].dtype() != outputs_[i].dtype ||
        out[i].ndim() != int(outputs_[i].shape.size()))
      throw ValueError(str_cat("operator ", name_, ": output ", i, " is ", out[i].dtype(),
                               sym_shape_str(out[i].sym_shape()), " but was traced as ",
                               outputs_[i].dtype, sym_shape_str(outputs_[i].shape)));
  return out;
}

HIDET_INLINE std::shared_ptr<const Operator> Operator::with_inputs(std::vector<Tensor> inputs) const {
  if (inputs.size() != inputs_.size())
    throw ValueError(str_cat("operator ", name_, ": with_inputs got ", inputs.size(), " inputs, has ",
                             inputs_.size()));
  auto op = std::make_shared<Operator>(name_, std::move(inputs), attrs_, outputs_, run_);
  op->set_origin(origin_or_self());
  op->set_scratch_build(scratch_build_);
  op->set_inplace_input(inplace_input_);
  return op;
}

HIDET_INLINE Tensor mark_scratch_build(Tensor t) {
  if (auto tr = t.trace()) std::const_pointer_cast<Operator>(tr.op)->set_scratch_build(true);
  return t;
}

HIDET_INLINE Tensor mark_inplace_input(Tensor t, int input) {
  if (auto tr = t.trace()) std::const_pointer_cast<Operator>(tr.op)->set_inplace_input(input);
  return t;
}

HIDET_INLINE std::vector<Tensor> outputs_of(const std::shared_ptr<const Operator> &op) {
  std::vector<Tensor> out;
  for (int i = 0; i < op->num_outputs(); ++i) {
    const auto &m = op->output_metas()[std::size_t(i)];
    out.push_back(Tensor::symbolic(m.shape, m.dtype, m.device, "", op, i));
  }
  return out;
}

HIDET_INLINE std::vector<Tensor> apply_operator(std::string name, std::vector<Tensor> inputs,
                                                std::vector<TensorMeta> outputs, Operator::Run run, std::string attrs) {
  if (any_symbolic(inputs))
    return trace_operator(std::move(name), std::move(inputs), std::move(attrs), std::move(outputs), std::move(run));
  std::vector<Tensor> out = run(inputs);
  if (out.size() != outputs.size())
    throw ValueError(str_cat("operator ", name, ": produced ", out.size(), " outputs, declared ", outputs.size()));
  return out;
}

HIDET_INLINE bool any_symbolic(const std::vector<Tensor> &xs) {
  for (const auto &x : xs)
    if (x.is_symbolic()) return true;
  return false;
}

HIDET_INLINE std::vector<Tensor> trace_operator(std::string name, std::vector<Tensor> inputs,
                                                std::string attrs, std::vector<TensorMeta> outputs,
                                                Operator::Run run) {
  auto op = std::make_shared<const Operator>(std::move(name), std::move(inputs), std::move(attrs),
                                             std::move(outputs), std::move(run));
  return outputs_of(op);
}

namespace runtime::detail {
HIDET_INLINE const SymbolValues *&current_symbols() {
  thread_local const SymbolValues *values = nullptr;
  return values;
}
} // namespace runtime::detail

HIDET_INLINE SymbolBinding::SymbolBinding(SymbolValues values)
    : values_(std::move(values)), previous_(runtime::detail::current_symbols()) {
  runtime::detail::current_symbols() = &values_;
}

HIDET_INLINE SymbolBinding::~SymbolBinding() { runtime::detail::current_symbols() = previous_; }

HIDET_INLINE const SymbolValues *SymbolBinding::current() { return runtime::detail::current_symbols(); }

HIDET_INLINE std::vector<std::int64_t> evaluate_bound(const std::string &op, const SymShape &shape) {
  if (is_constant_shape(shape)) return constant_shape(shape);
  const SymbolValues *values = SymbolBinding::current();
  if (!values)
    throw ValueError(str_cat(op, ": the shape ", sym_shape_str(shape),
                             " has symbols but no graph run binds them here; run the node through FlowGraph::run"));
  for (const Dim &d : shape)
    for (const auto &name : d.symbols())
      if (!values->count(name))
        throw ValueError(str_cat(op, ": the symbol ", name, " of the shape ", sym_shape_str(shape),
                                 " has no value in this graph run (the graph's inputs bind no ", name, ")"));
  return evaluate_shape(shape, *values);
}

namespace runtime::detail {
HIDET_INLINE const std::string &operator_name(const Operator &op) { return op.name(); }

HIDET_INLINE Tensor trace_reshape(const Tensor &x, std::vector<std::int64_t> shape) {
  std::string attrs = str_cat("shape=", sym_shape_str(to_sym_shape(shape)));
  return trace_operator("Reshape", {x}, attrs, {{to_sym_shape(shape), x.dtype(), x.device()}},
                        [shape](const std::vector<Tensor> &in) { return std::vector<Tensor>{in[0].reshape(shape)}; })[0];
}

HIDET_INLINE Tensor trace_sym_reshape(const Tensor &x, SymShape shape) {
  const SymShape &in = x.sym_shape();
  SymShape out = shape;
  int infer = -1;
  Dim known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0)
        throw ValueError(str_cat("reshape: cannot reshape a tensor of shape ", sym_shape_str(in), " into ",
                                 sym_shape_str(shape), ": only one extent may be -1"));
      infer = int(i);
    } else if (shape[i].is_constant() && shape[i].value() < 0) {
      throw ValueError(str_cat("reshape: invalid target shape ", sym_shape_str(shape), " for a tensor of shape ",
                               sym_shape_str(in), ": extents must be >= 0, or -1 for one inferred extent"));
    } else {
      known *= shape[i];
    }
  }
  Dim n = sym_numel(in);
  if (infer >= 0) {
    out[std::size_t(infer)] = n / known;
    known *= out[std::size_t(infer)];
  }
  if (known != n)
    throw ValueError(str_cat("reshape: cannot reshape a tensor of shape ", sym_shape_str(in), " (", n,
                             " elements) into ", sym_shape_str(out), " (", known,
                             " elements): the counts must be equal for every value of the symbols"));
  return trace_operator("Reshape", {x}, str_cat("shape=", sym_shape_str(out)), {{out, x.dtype(), x.device()}},
                        [shape](const std::vector<Tensor> &ins) {
                          return std::vector<Tensor>{ins[0].reshape(evaluate_bound("reshape", shape))};
                        })[0];
}

HIDET_INLINE Tensor trace_narrow(const Tensor &x, std::int64_t start, std::int64_t length) {
  std::vector<std::int64_t> shape = x.shape();
  shape[0] = length;
  return trace_operator("Narrow", {x}, str_cat("start=", start, ", length=", length),
                        {{to_sym_shape(shape), x.dtype(), x.device()}},
                        [start, length](const std::vector<Tensor> &in) {
                          return std::vector<Tensor>{in[0].narrow(start, length)};
                        })[0];
}
} // namespace runtime::detail

} // namespace hidet
