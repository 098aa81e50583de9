// hidet::Operator: an operator application recorded by tracing, the node of a FlowGraph.
//
// Every operator of hidet::ops runs at once when its inputs hold data. When one of them is
// symbolic (see runtime/tensor.hpp), it validates its arguments and derives its outputs' shapes
// and dtypes exactly as an eager call does, then records an Operator instead of launching
// anything: its name ("Matmul"), its inputs (symbolic tensors, or tensors with data, which a
// graph shows as constants), its attributes as printed ("axis=1"), its outputs' metadata, and a
// function that computes the outputs from concrete inputs. That function calls the operator's
// own eager implementation, so a traced node and an eager call are one implementation.
//
//   Tensor x = hidet::symbol({2, 3}, dtypes::f32, "cuda");
//   Tensor y = hidet::ops::relu(x);     // y.trace().op->name() == "Relu", no kernel runs
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hidet/runtime/tensor.hpp"

namespace hidet {

/// One output of an operator, before it holds data.
struct TensorMeta {
  SymShape shape;
  DataType dtype;
  Device device;
};

/// An operator application recorded by tracing (see the top of the file).
class Operator : public std::enable_shared_from_this<Operator> {
public:
  /// Computes the outputs from concrete inputs (one per input of the node, in order).
  using Run = std::function<std::vector<Tensor>(const std::vector<Tensor> &)>;

  Operator(std::string name, std::vector<Tensor> inputs, std::string attrs,
           std::vector<TensorMeta> outputs, Run run);
  virtual ~Operator();
  Operator(const Operator &) = delete;
  Operator &operator=(const Operator &) = delete;

  /// "Matmul", "Add", "Conv2d".
  const std::string &name() const { return name_; }
  /// The inputs: symbolic tensors and constants (tensors with data).
  const std::vector<Tensor> &inputs() const { return inputs_; }
  /// The attributes as printed: "axis=1, keepdims=true"; empty when there are none.
  const std::string &attrs() const { return attrs_; }
  /// The outputs' shapes, dtypes and devices.
  const std::vector<TensorMeta> &output_metas() const { return outputs_; }
  int num_outputs() const { return int(outputs_.size()); }
  /// Runs the operator on concrete inputs (as many as inputs()); throws ValueError naming the
  /// operator when the count is wrong or an output's dtype or rank differs from its metadata.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const;
  /// The same operator applied to other inputs (for graph passes: as many, of what the operator's
  /// run accepts; the outputs keep their recorded shapes and dtypes).
  /// The copy's origin() is this operator's origin, or this operator.
  virtual std::shared_ptr<const Operator> with_inputs(std::vector<Tensor> inputs) const;
  /// The operator of the traced graph this one stands for after graph passes (a fused operator:
  /// the last operator it was fused from); null for an operator recorded by tracing.
  const std::shared_ptr<const Operator> &origin() const { return origin_; }
  /// Sets origin() (for passes, before the operator is shared).
  void set_origin(std::shared_ptr<const Operator> origin) { origin_ = std::move(origin); }
  /// True for operators whose kernels are templates built on the first run: one run on scratch
  /// inputs (zeros of the input shapes) builds them, and such runs of different operators may go
  /// on in parallel threads (graph::build does so at search space 0).
  bool scratch_build() const { return scratch_build_; }
  /// Sets scratch_build() (for the operator that records the node, before it is shared).
  void set_scratch_build(bool on) { scratch_build_ = on; }
  /// origin(), or this operator when it has none.
  std::shared_ptr<const Operator> origin_or_self() const { return origin_ ? origin_ : shared_from_this(); }
  /// The input whose memory the operator's one output may be given (-1: none): its kernels
  /// then read each element of that input before they write it, or not at all (an update at
  /// indexed positions skips copying the rest). A compiled graph uses this to update a graph input
  /// in place (graph/compiled_graph.hpp).
  int inplace_input() const { return inplace_input_; }
  /// Sets inplace_input() (for the operator that records the node, before it is shared).
  void set_inplace_input(int i) { inplace_input_ = i; }

private:
  std::string name_;
  std::vector<Tensor> inputs_;
  std::string attrs_;
  std::vector<TensorMeta> outputs_;
  Run run_;
  std::shared_ptr<const Operator> origin_;
  bool scratch_build_ = false;
  int inplace_input_ = -1;
};

/// Marks the operator that just made `t` by tracing (held by nobody else yet) as
/// scratch_build() and returns t.
Tensor mark_scratch_build(Tensor t);
/// Sets inplace_input() of the operator that just made `t` by tracing (held by nobody else yet)
/// to `input` and returns t; a tensor with data is returned as it is.
Tensor mark_inplace_input(Tensor t, int input);

/// True when some tensor of `xs` is symbolic.
bool any_symbolic(const std::vector<Tensor> &xs);

/// A user's operator (a kernel of their own, a library call) as a graph citizen: runs `run` at
/// once when every input holds data; when one is symbolic, records an Operator named `name` whose
/// outputs are described by `outputs` and returns its symbolic outputs.
///
///   std::vector<Tensor> my_op(const Tensor &x) {
///     return hidet::apply_operator("MyOp", {x}, {{x.sym_shape(), x.dtype(), x.device()}},
///                                  [](const std::vector<Tensor> &in) { ...launch...; return {y}; });
///   }
std::vector<Tensor> apply_operator(std::string name, std::vector<Tensor> inputs, std::vector<TensorMeta> outputs,
                                   Operator::Run run, std::string attrs = "");

/// The symbolic outputs of `op`, created anew: call it once per operator and share the tensors
/// (a graph identifies a tensor by its operator and index, so copies agree).
std::vector<Tensor> outputs_of(const std::shared_ptr<const Operator> &op);

/// The symbol values bound on this thread while a graph runs (FlowGraph::run binds the values its
/// inputs give while its nodes run). An operator recorded with symbolic extents in its attributes
/// (a reshape to [n, s, 12, 64]) evaluates them here when its node runs. Bindings nest; the
/// innermost one is current.
class SymbolBinding {
public:
  explicit SymbolBinding(SymbolValues values);
  ~SymbolBinding();
  SymbolBinding(const SymbolBinding &) = delete;
  SymbolBinding &operator=(const SymbolBinding &) = delete;
  /// The current values, or null when no graph runs on this thread.
  static const SymbolValues *current();

private:
  SymbolValues values_;
  const SymbolValues *previous_;
};

/// `shape` evaluated with the current SymbolBinding (constant shapes need none); a ValueError
/// naming `op` when a symbol has no value.
std::vector<std::int64_t> evaluate_bound(const std::string &op, const SymShape &shape);

/// Records an operator (see the top of the file) and returns its symbolic outputs, one per
/// entry of `outputs`. Each output is created once here: copies share its identity in a graph.
std::vector<Tensor> trace_operator(std::string name, std::vector<Tensor> inputs, std::string attrs,
                                   std::vector<TensorMeta> outputs, Operator::Run run);

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/operator.ipp"
#endif
