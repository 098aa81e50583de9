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
// Extents may be named symbols: hidet::symbol({"n", 3}) traces the operators once for every n
// (their outputs' extents are expressions over the symbols, [n, 2], [n*s, 768]); such a graph runs
// on inputs of any n, each node through its operator's eager path, and specialize({{"n", 4}}) gives
// the graph at one shape. graph::optimize of such a graph optimizes and compiles it per shape
// (graph::ShapeDispatch).
//
// Running binds each input's symbolic dimensions from the tensor given for it (a symbol that
// two inputs disagree on, or a constant extent, dtype or device that differs, is an error naming
// the input) and runs the operators in order, each through the same implementation as its eager
// call. This is the reference interpreter of a graph; graph::optimize and compiled graphs build on
// the same nodes.
//
// In-place updates of inputs. Nodes are pure; a graph may in addition update some of its inputs
// (a model's cache, a running count): each update names a graph input and the tensor of the
// graph that is its new value. Every node reads the inputs as they were given; after a run, each
// updated input holds its new value, written where the caller's tensor lives:
//
//   Tensor cache = hidet::symbol({8, 4}, f32, "cuda", "cache"), pos = ..., k = ...;
//   Tensor y = ops::index_put(cache, {pos}, k);                // the cache with rows pos set
//   FlowGraph g({ops::sum(y, {1})}, {cache, pos, k}, {{cache, y}});
//   std::cout << g;        // ... "cache <- x" before "return x_1": the update
//   g.run({c, p, v});      // c now holds y
//
// Passes keep the updates (their values are kept materialized, as outputs are); a compiled graph
// gives the node that makes the value the input's memory when nothing reads the old value after
// it, so the cache is written where it lives (graph/compiled_graph.hpp). An output that views an
// updated input's memory is copied before the input is written.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "hidet/runtime/operator.hpp"

namespace hidet::graph {

class CudaGraph;

/// A graph input updated in place (see the top of the file): after a run, `input` holds `value`.
struct InputUpdate {
  Tensor input; ///< a graph input
  Tensor value; ///< a tensor of the graph (or a constant) of the input's shape and dtype
};

/// A traced computation graph (see the top of the file).
class FlowGraph {
public:
  /// The graph computing `outputs` from `inputs` and updating the inputs of `updates` in place
  /// (see the top of the file). With no inputs given, the inputs are the symbolic tensors without
  /// a trace that the outputs and update values depend on, in the order found. Throws ValueError
  /// when an output is not symbolic, when the outputs depend on a symbolic tensor that is not
  /// among `inputs`, when an input is not a graph input (it has a trace or data), when there are
  /// neither outputs nor updates, or when an update names no graph input, names one twice, or
  /// gives a value of another shape or dtype than the input's.
  explicit FlowGraph(std::vector<Tensor> outputs, std::vector<Tensor> inputs = {},
                     std::vector<InputUpdate> updates = {});

  const std::vector<Tensor> &inputs() const { return inputs_; }
  const std::vector<Tensor> &outputs() const { return outputs_; }
  /// The inputs the graph updates in place, each with its new value.
  const std::vector<InputUpdate> &updates() const { return updates_; }
  /// The position among inputs() of each update's input, in updates() order.
  std::vector<std::size_t> updated_inputs() const;
  /// The operators, each after the operators it takes inputs from.
  const std::vector<std::shared_ptr<const Operator>> &nodes() const { return nodes_; }
  /// The tensors with data that operators take, in the order the nodes first use them.
  std::vector<Tensor> constants() const;

  /// Runs the graph on one tensor per input (see the top of the file); returns the outputs and
  /// writes the updated inputs' new values into the given tensors.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const;
  /// Runs the graph like run() without writing the updates back: the outputs, then the updates'
  /// values (on symbolic tensors of constant shapes: the graph traced again, as specialize() does).
  std::vector<Tensor> run_functional(const std::vector<Tensor> &inputs) const;
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
  /// The symbols in the extents of the tensors the nodes take and make, sorted: those the graph
  /// depends on (an input's symbol that no node reads nor shapes a tensor by is not among them).
  std::vector<std::string> node_symbols() const;
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
  /// The outputs, then the updates' values.
  std::vector<Tensor> run_impl(const std::vector<Tensor> &inputs, std::vector<std::vector<Tensor>> *all) const;

  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<InputUpdate> updates_;
  std::vector<std::size_t> updated_;
  std::vector<std::shared_ptr<const Operator>> nodes_;
};

std::ostream &operator<<(std::ostream &os, const FlowGraph &g);

/// The graph that computes `output` (see FlowGraph's constructor).
FlowGraph trace_from(const Tensor &output, std::vector<Tensor> inputs = {});
/// The graph that computes `outputs` (see FlowGraph's constructor).
FlowGraph trace_from(std::vector<Tensor> outputs, std::vector<Tensor> inputs = {});
/// The graph that computes `outputs` and updates the inputs of `updates` in place.
FlowGraph trace_from(std::vector<Tensor> outputs, std::vector<Tensor> inputs,
                     std::vector<InputUpdate> updates);

} // namespace hidet::graph

namespace hidet {
using graph::FlowGraph;
using graph::InputUpdate;
using graph::trace_from;
} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/flow_graph.ipp"
#endif
