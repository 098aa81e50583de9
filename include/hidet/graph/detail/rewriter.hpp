// The walk that graph passes rebuild a graph with (what TVM's ExprMutator and Halide's IRMutator
// are to their IRs): the nodes are visited in order, each node's inputs are mapped to the graph
// being built, and the pass says only what it changes. A node it leaves alone is kept: the same
// Operator when none of its inputs changed, else a copy on the new inputs. A graph in which
// nothing changed comes back as it was.
//
//   // Drops every Relu (its readers read its input):
//   FlowGraph drop_relus(const FlowGraph &graph) {
//     return rewrite_nodes(graph, [](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
//       if (ops::kind_of(*op) != ops::OpKind::Relu) return std::nullopt; // kept
//       return rw.map(op->inputs()[0]);                                 // its one output
//     });
//   }
//
// Readers (which nodes read a tensor) and injective_task answer what passes ask before they
// rebuild.
//
// Internal: included by the graph layer's .ipp files and tests, not by public headers.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/graph/detail/tensor_key.hpp"
#include "hidet/graph/flow_graph.hpp"
#include "hidet/ops/cache.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph::detail {

using OpPtr = std::shared_ptr<const Operator>;

/// What a pass makes of one node (the answer of a rewrite_nodes callback).
class NodeRewrite {
public:
  /// Kept, on its inputs mapped (`return std::nullopt;`).
  NodeRewrite() = default;
  NodeRewrite(std::nullopt_t) {}
  /// Its one output is `output`, a tensor of the new graph.
  NodeRewrite(Tensor output) : outputs_(std::vector<Tensor>{std::move(output)}) {}
  /// Its outputs are `outputs`, tensors of the new graph, one per output.
  NodeRewrite(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {}
  /// Taken into another node: the new graph has no value for its outputs unless the pass gives
  /// them one later (GraphRewriter::set).
  static NodeRewrite removed() {
    NodeRewrite r;
    r.removed_ = true;
    return r;
  }

private:
  friend class GraphRewriter;
  std::optional<std::vector<Tensor>> outputs_;
  bool removed_ = false;
};

/// A graph being rebuilt from `graph` (see the top of the file). Tensors of the old graph map to
/// tensors of the new one by key (detail::key_of).
class GraphRewriter {
public:
  explicit GraphRewriter(const FlowGraph &graph) : graph_(graph) {
    auto record = [&](const Tensor &t) {
      if (t.trace()) original_.emplace(key_of(t), t);
    };
    for (const auto &op : graph_.nodes())
      for (const auto &t : op->inputs())
        record(t);
    for (const auto &t : graph_.outputs())
      record(t);
    for (const auto &u : graph_.updates())
      record(u.value);
  }

  /// The graph being rebuilt.
  const FlowGraph &graph() const { return graph_; }

  /// The new graph's tensor for `t` of the old one. Constants and graph inputs are themselves;
  /// an output of a node not visited yet, or removed and given no value, is an internal error.
  Tensor map(const Tensor &t) const {
    if (!t.trace()) return t;
    const Tensor *v = find(t);
    HIDET_ASSERT(v, "graph rewrite: output ", t.trace().index, " of ", t.trace().op->name(),
                 " has no tensor in the new graph");
    return *v;
  }
  std::vector<Tensor> map(const std::vector<Tensor> &ts) const {
    std::vector<Tensor> out;
    for (const auto &t : ts)
      out.push_back(map(t));
    return out;
  }
  /// The new graph's tensor for `t` when it has one yet (for passes that make it on first
  /// use), else null.
  const Tensor *find(const Tensor &t) const {
    auto it = new_of_.find(key_of(t));
    return it == new_of_.end() ? nullptr : &it->second;
  }

  /// `op` on its inputs mapped: `op` itself when none changed, else a copy on the new inputs.
  OpPtr with_mapped_inputs(const Operator &op) const {
    std::vector<Tensor> ins = map(op.inputs());
    bool same = true;
    for (std::size_t i = 0; i < ins.size(); ++i)
      same = same && same_tensor(ins[i], op.inputs()[i]);
    return same ? op.shared_from_this() : op.with_inputs(std::move(ins));
  }
  /// Keeps `op` (with_mapped_inputs) and returns its outputs in the new graph.
  std::vector<Tensor> keep(const Operator &op) {
    OpPtr node = with_mapped_inputs(op);
    std::vector<Tensor> outs = outputs_of(node);
    if (node.get() == &op) // the tensors the graph's readers hold
      for (int i = 0; i < op.num_outputs(); ++i)
        if (auto it = original_.find({&op, i}); it != original_.end())
          outs[std::size_t(i)] = it->second;
    set(op, outs);
    return outs;
  }
  /// `op`'s outputs in the new graph are `outputs`, one per output.
  void set(const Operator &op, std::vector<Tensor> outputs) {
    HIDET_ASSERT(outputs.size() == std::size_t(op.num_outputs()), "graph rewrite: ", op.name(),
                 " has ", op.num_outputs(), " outputs, given ", outputs.size());
    for (int i = 0; i < op.num_outputs(); ++i)
      new_of_[{&op, i}] = std::move(outputs[std::size_t(i)]);
  }
  /// The old tensor `t`'s value in the new graph is `now`.
  void set(const Tensor &t, Tensor now) { new_of_[key_of(t)] = std::move(now); }

  /// Records what becomes of `op`.
  void apply(const Operator &op, NodeRewrite r) {
    if (r.removed_) return;
    if (r.outputs_)
      set(op, std::move(*r.outputs_));
    else
      keep(op);
  }
  /// Visits every node in order: `fn(op, *this)` returns what becomes of it (a NodeRewrite).
  template <class Fn> void visit(Fn &&fn) {
    for (const auto &op : graph_.nodes())
      apply(*op, fn(op, *this));
  }

  /// The new graph: the old one's outputs and update values mapped, its inputs as they are; the
  /// old graph itself when every node's outputs are themselves.
  FlowGraph result() const {
    bool changed = false;
    for (const auto &op : graph_.nodes())
      for (int i = 0; i < op->num_outputs() && !changed; ++i) {
        const TensorKey k{op.get(), i};
        auto it = new_of_.find(k);
        changed = it == new_of_.end() || !it->second.trace() || key_of(it->second) != k;
      }
    if (!changed) return graph_;
    std::vector<InputUpdate> updates;
    for (const auto &u : graph_.updates())
      updates.push_back({u.input, map(u.value)});
    return FlowGraph(map(graph_.outputs()), graph_.inputs(), std::move(updates));
  }

private:
  static bool same_tensor(const Tensor &a, const Tensor &b) {
    if (a.is_symbolic() || b.is_symbolic())
      return a.is_symbolic() && b.is_symbolic() && key_of(a) == key_of(b);
    return identity_of(a) == identity_of(b) && a.shape() == b.shape() && a.dtype() == b.dtype();
  }

  FlowGraph graph_;
  std::map<TensorKey, Tensor> new_of_;   ///< old tensor -> its value in the new graph
  std::map<TensorKey, Tensor> original_; ///< each node output as the graph's readers hold it
};

/// Rebuilds `graph`: `fn(op, rw)` says what becomes of each node (see the top of the file).
template <class Fn> FlowGraph rewrite_nodes(const FlowGraph &graph, Fn &&fn) {
  GraphRewriter rw(graph);
  rw.visit(fn);
  return rw.result();
}

/// The nodes that read each tensor of a graph.
class Readers {
public:
  explicit Readers(const FlowGraph &graph) {
    for (const auto &op : graph.nodes())
      for (const auto &t : op->inputs())
        if (t.is_symbolic()) of_[key_of(t)].push_back(op);
    for (const auto &t : graph.outputs())
      outputs_.insert(key_of(t));
    // An update's value is written into its input after the run: kept as an output is.
    for (const auto &u : graph.updates())
      if (u.value.is_symbolic()) outputs_.insert(key_of(u.value));
  }
  /// The nodes reading `t`, in graph order, once per input that reads it.
  const std::vector<OpPtr> &of(const TensorKey &t) const {
    static const std::vector<OpPtr> none;
    auto it = of_.find(t);
    return it == of_.end() ? none : it->second;
  }
  /// Every symbolic tensor that some node reads, with its readers (by key).
  const std::map<TensorKey, std::vector<OpPtr>> &all() const { return of_; }
  /// True when `t` is an output of the graph, or the new value of an input it updates.
  bool is_output(const TensorKey &t) const { return outputs_.count(t) > 0; }
  /// The node reading `t` when one input of one node reads it and it is not a graph output (a
  /// value that node may take in); else null.
  OpPtr single(const TensorKey &t) const {
    const auto &rs = of(t);
    return rs.size() == 1 && !is_output(t) ? rs[0] : nullptr;
  }

private:
  std::map<TensorKey, std::vector<OpPtr>> of_;
  std::set<TensorKey> outputs_;
};

/// True for a task-defined operator whose task is injective (element-wise, a broadcast, a view
/// computed by a kernel): what fusion composes with its neighbours.
inline bool injective_task(const Operator *op) {
  auto *t = dynamic_cast<const ops::TaskOperator *>(op);
  return t && t->task().injective();
}

} // namespace hidet::graph::detail

#include "hidet/util/cold_end.hpp"
