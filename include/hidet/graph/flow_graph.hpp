// FlowGraph: a traced computation graph.
//
// Operators applied to symbolic tensors record themselves (runtime/operator.hpp); trace_from()
// walks those records back from the outputs and keeps, in topological order, every operator the
// outputs depend on. The graph's inputs are the symbolic tensors without a trace (symbol(),
// symbol_like()); tensors with data that operators took become the graph's constants.
//
//   Tensor x = hidet::symbol_like(a);                       // a graph input named "x"
//   Tensor y = hidet::ops::matmul(x, b) + c;                // nothing runs
//   hidet::FlowGraph g = hidet::trace_from(y);              // inputs found: {x}
//   std::cout << g;                                         // Graph(x: float32[2, 3][cuda]){ ... }
//   Tensor y1 = g(a);                                       // runs every node on a
//
// Printing follows Hidet's form: one line per constant and per operator, tensors named x, x_1,
// x_2, ... and constants c, c_1, ...; dot() gives the same graph in Graphviz's DOT language.
//
// Extents may be named symbols: hidet::symbol({"n", 3}) traces the operators once for every n (their
// outputs' extents are expressions over the symbols, [n, 2], [n*s, 768]); such a graph runs on
// inputs of any n, each node through its operator's eager path, and specialize({{"n", 4}}) gives
// the graph at one shape. graph::optimize of such a graph optimizes and compiles it per shape
// (graph::ShapeDispatch).
//
// Running binds each input's symbolic dimensions from the tensor given for it (a symbol that
// two inputs disagree on, or a constant extent, dtype or device that differs, is an error naming
// the input) and runs the operators in order, each through the same implementation as its eager
// call. This is the reference interpreter of a graph; graph::optimize and compiled graphs build on
// the same nodes.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "hidet/runtime/operator.hpp"

namespace hidet::graph {

class CudaGraph;

/// A traced computation graph (see the top of the file).
class FlowGraph {
public:
  /// The graph computing `outputs` from `inputs`. With no inputs given, the inputs are the
  /// symbolic tensors without a trace that the outputs depend on, in the order found. Throws
  /// ValueError when an output is not symbolic, when the outputs depend on a symbolic tensor
  /// that is not among `inputs`, or when an input is not a graph input (it has a trace or data).
  explicit FlowGraph(std::vector<Tensor> outputs, std::vector<Tensor> inputs = {});

  const std::vector<Tensor> &inputs() const { return inputs_; }
  const std::vector<Tensor> &outputs() const { return outputs_; }
  /// The operators, each after the operators it takes inputs from.
  const std::vector<std::shared_ptr<const Operator>> &nodes() const { return nodes_; }
  /// The tensors with data that operators take, in the order the nodes first use them.
  std::vector<Tensor> constants() const;

  /// Runs the graph on one tensor per input (see the top of the file); returns the outputs.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const;
  /// Runs the graph like run() and returns every node's outputs, in nodes() order.
  std::vector<std::vector<Tensor>> node_outputs(const std::vector<Tensor> &inputs) const;
  /// run() for a graph of one output: g(a), g(a, b).
  template <class... Ts> Tensor operator()(const Ts &...xs) const {
    return single_output(run(std::vector<Tensor>{Tensor(xs)...}));
  }

  /// The symbol values the given inputs bind (checked as run() checks them).
  SymbolValues bind_symbols(const std::vector<Tensor> &inputs) const;
  /// True when an input has an extent that is a symbol (symbol({"n", 3})).
  bool has_symbolic_extents() const;
  /// The graph traced again with every symbol given its value: the same operators at constant
  /// shapes (graph inputs keep their names), ready for optimize() and CompiledGraph. Throws
  /// ValueError naming a symbol without a value, or an operator the values are invalid for.
  FlowGraph specialize(const SymbolValues &values) const;

  /// The graph captured as a CUDA graph (graph/cuda_graph.hpp; include it to use the result).
  CudaGraph cuda_graph() const;

  /// Hidet's printed form (see the top of the file).
  std::string str() const;
  /// Graphviz DOT: inputs, constants and operators as nodes, tensors as labeled edges.
  std::string dot() const;

private:
  Tensor single_output(std::vector<Tensor> outs) const;
  std::vector<Tensor> run_impl(const std::vector<Tensor> &inputs, std::vector<std::vector<Tensor>> *all) const;

  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<std::shared_ptr<const Operator>> nodes_;
};

std::ostream &operator<<(std::ostream &os, const FlowGraph &g);

/// The graph that computes `output` (see FlowGraph's constructor).
FlowGraph trace_from(const Tensor &output, std::vector<Tensor> inputs = {});
/// The graph that computes `outputs` (see FlowGraph's constructor).
FlowGraph trace_from(std::vector<Tensor> outputs, std::vector<Tensor> inputs = {});

} // namespace hidet::graph

namespace hidet {
using graph::FlowGraph;
using graph::trace_from;
} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/flow_graph.ipp"
#endif
