// Definitions for hidet/graph/compiled_graph.hpp.
#pragma once

#include "hidet/graph/compiled_graph.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "hidet/error.hpp"
#include "hidet/graph/build.hpp"
#include "hidet/graph/cuda_graph.hpp"
#include "hidet/graph/detail/graph_devices.hpp"
#include "hidet/graph/detail/tensor_key.hpp"
#include "hidet/graph/model.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/runtime/device_errors.hpp"
#include "hidet/runtime/distributed.hpp"

namespace hidet::graph {

namespace detail {

/// One allocation of a node, in the order the node makes them.
struct NodeAllocation {
  std::size_t nbytes = 0;
  bool planned = false;   ///< served from the workspace at `offset`
  std::size_t offset = 0;
  int input = -1;         ///< served from the memory of this graph input (an update in place)
};

/// Where a node's input comes from: a graph input, a constant, or output `index` of node `node`.
struct ValueRef {
  enum class Kind { input, constant, node } kind = Kind::input;
  std::size_t node = 0; ///< the graph input's position, or the producing node
  int index = 0;
  Tensor constant;
};

/// An allocation seen by the recording run.
struct RecordedAllocation {
  std::size_t nbytes;
  Device device;
  std::weak_ptr<Storage> storage;
};

/// Records every allocation of the node being run (the recording run).
class RecordAllocations : public runtime::detail::AllocationHook {
public:
  std::vector<RecordedAllocation> *list = nullptr;
  std::shared_ptr<Storage> serve(std::size_t, Device) override { return nullptr; }
  void allocated(const std::shared_ptr<Storage> &s) override {
    if (list) list->push_back({s->nbytes, s->device, s});
  }
};

/// Watches a run of the nodes (saving a compiled graph records a run through one).
class RunObserver {
public:
  virtual ~RunObserver() = default;
  /// Node k is about to run.
  virtual void node(std::size_t k, const Operator &op) = 0;
  /// A storage was allocated (served from the workspace or not).
  virtual void allocated(const std::shared_ptr<Storage> &s) = 0;
};

/// Serves the node's allocations from the workspace, in recorded order (a run), and the
/// allocations of updates in place from the updated inputs' memory.
class ServeAllocations : public runtime::detail::AllocationHook {
public:
  const std::vector<NodeAllocation> *list = nullptr;
  std::shared_ptr<Storage> workspace;
  RunObserver *observer = nullptr;
  const std::vector<Tensor> *inputs = nullptr; ///< the run's inputs
  const std::vector<bool> *in_place = nullptr; ///< per input: its update is written in place this run
  std::size_t next = 0, unplanned = 0;
  void allocated(const std::shared_ptr<Storage> &s) override {
    if (observer) observer->allocated(s);
  }
  std::shared_ptr<Storage> serve(std::size_t nbytes, Device device) override {
    std::size_t j = next++;
    if (list && j < list->size() && (*list)[j].input >= 0 && (*list)[j].nbytes == nbytes) {
      const std::size_t i = std::size_t((*list)[j].input);
      if (!inputs || !in_place || !(*in_place)[i]) return nullptr; // copied this run
      const Tensor &x = (*inputs)[i];
      return sub_storage(x.storage(), x.offset(), nbytes);
    }
    if (!list || !workspace || j >= list->size() || (*list)[j].nbytes != nbytes || device != workspace->device) {
      ++unplanned;
      return nullptr;
    }
    if (!(*list)[j].planned) return nullptr;
    return sub_storage(workspace, (*list)[j].offset, nbytes);
  }
};

/// Installs an allocation hook on this thread for its lifetime.
struct HookGuard {
  explicit HookGuard(runtime::detail::AllocationHook *h) : saved(runtime::detail::allocation_hook()) {
    runtime::detail::allocation_hook() = h;
  }
  ~HookGuard() { runtime::detail::allocation_hook() = saved; }
  runtime::detail::AllocationHook *saved;
};

/// Scratch inputs for `graph` at the symbol values `values`: random floats, zero integers and
/// booleans (valid indices).
inline std::vector<Tensor> scratch_inputs(const FlowGraph &graph, const SymbolValues &values) {
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < graph.inputs().size(); ++i) {
    const Tensor &x = graph.inputs()[i];
    SymShape shape = x.sym_shape();
    if (!is_constant_shape(shape) && !values.empty()) {
      try {
        shape = to_sym_shape(evaluate_shape(shape, values));
      } catch (const ValueError &e) {
        throw ValueError(str_cat("compile: graph input ", i, x.name().empty() ? "" : " '" + x.name() + "'", " ",
                                 sym_shape_str(x.sym_shape()), ": ", e.what()));
      }
    }
    if (!is_constant_shape(shape))
      throw ValueError(str_cat("compile: graph input ", i, x.name().empty() ? "" : " '" + x.name() + "'",
                               " has the symbolic shape ", sym_shape_str(shape),
                               "; a compiled graph runs one shape: compile graph.specialize({{symbol, value}}), or "
                               "use graph::ShapeDispatch(graph) to compile once per shape"));
    auto s = constant_shape(shape);
    xs.push_back(x.dtype().is_float() ? randn(s, x.dtype(), x.device()) : zeros(s, x.dtype(), x.device()));
  }
  return xs;
}

/// Runs `op` on `ins` as graph node k, naming the node in errors.
inline std::vector<Tensor> run_node(std::size_t k, const Operator &op, const std::vector<Tensor> &ins) {
  try {
    return op.run(ins);
  } catch (const ValueError &e) {
    throw ValueError(str_cat("graph node ", k, " (", op.name(), "): ", e.what()));
  } catch (const CudaError &e) {
    throw CudaError(str_cat("graph node ", k, " (", op.name(), "): ", e.what()));
  }
}
} // namespace detail

struct CompiledGraph::State {
  FlowGraph graph;
  std::vector<std::vector<detail::ValueRef>> node_inputs; ///< per node
  std::vector<detail::ValueRef> outputs;
  std::vector<detail::ValueRef> update_values; ///< per update: its new value
  std::vector<std::size_t> updated;            ///< per update: the input it updates
  std::vector<bool> in_place;                  ///< per input: its update's value is made in its memory
  /// Per node and output: the last node reading it (nodes.size() for graph outputs), so that
  /// values outside the workspace are released early.
  std::vector<std::vector<std::size_t>> last_use;
  std::vector<std::vector<detail::NodeAllocation>> allocations; ///< per node
  MemoryPlan plan;
  std::shared_ptr<Storage> workspace;
  mutable std::mutex mu;
  mutable Stream last_stream;
  mutable bool ran = false;
  mutable CompiledGraphStats stats;
  /// For a graph loaded from a file: the model its one node runs.
  std::optional<Model> loaded;
  /// The symbol values a symbolic graph is compiled at (bound on the thread while nodes run).
  SymbolValues symbol_values;

  State(FlowGraph g, SymbolValues v) : graph(std::move(g)), symbol_values(std::move(v)) {}

  enum class Mode { warm_up, record, serve };
  /// Runs the nodes on bound inputs: without a hook (warm_up), recording each node's
  /// allocations into `record` and its outputs into `record_outs` (record), or in the workspace.
  std::vector<Tensor>
  run_nodes(const std::vector<Tensor> &inputs, Mode mode,
            std::vector<std::vector<Tensor>> *record_outs = nullptr,
            std::vector<std::vector<detail::RecordedAllocation>> *record = nullptr,
            detail::RunObserver *observer = nullptr,
            const SymbolValues *run_values = nullptr) const {
    const auto &nodes = graph.nodes();
    std::vector<std::vector<Tensor>> values(nodes.size());
    auto value_of = [&](const detail::ValueRef &r) -> const Tensor & {
      switch (r.kind) {
      case detail::ValueRef::Kind::input: return inputs[r.node];
      case detail::ValueRef::Kind::constant: return r.constant;
      default: return values[r.node][std::size_t(r.index)];
      }
    };
    detail::RecordAllocations recorder;
    detail::ServeAllocations server;
    server.workspace = workspace;
    server.observer = observer;
    std::vector<bool> in_place_now;
    if (mode == Mode::serve && !update_values.empty()) {
      // An input that overlaps another one (the caller gave one tensor twice), or that is not
      // aligned as the workspace's blocks are (a view at an odd offset), is updated by a copy.
      in_place_now = in_place;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (reinterpret_cast<std::uintptr_t>(inputs[i].data_ptr()) % MemoryPlan::alignment != 0)
          in_place_now[i] = false;
        for (std::size_t k = 0; k < inputs.size() && in_place_now[i]; ++k)
          if (k != i && detail::overlaps(inputs[i], inputs[k])) in_place_now[i] = false;
      }
      server.inputs = &inputs;
      server.in_place = &in_place_now;
    }
    runtime::detail::AllocationHook *hook = nullptr;
    if (mode == Mode::record) hook = &recorder;
    if (mode == Mode::serve) hook = &server;
    detail::HookGuard guard(hook);
    std::optional<SymbolBinding> binding; // for nodes whose attributes hold symbols
    if (run_values)
      binding.emplace(*run_values); // a run at other values (run_unplanned)
    else if (!symbol_values.empty())
      binding.emplace(symbol_values);
    std::size_t unplanned = 0;
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      std::vector<Tensor> ins;
      ins.reserve(node_inputs[k].size());
      for (const auto &r : node_inputs[k]) ins.push_back(value_of(r));
      if (mode == Mode::record) recorder.list = &(*record)[k];
      if (mode == Mode::serve) server.list = &allocations[k], server.next = 0;
      if (observer) observer->node(k, *nodes[k]);
      values[k] = detail::run_node(k, *nodes[k], ins);
      if (mode == Mode::record) {
        (*record_outs)[k] = values[k];
        continue;
      }
      unplanned += server.unplanned;
      server.unplanned = 0;
      // Release what no later node reads (values outside the workspace go back early).
      ins.clear();
      for (const auto &r : node_inputs[k])
        if (r.kind == detail::ValueRef::Kind::node && last_use[r.node][std::size_t(r.index)] == k)
          values[r.node][std::size_t(r.index)] = Tensor();
      for (std::size_t i = 0; i < values[k].size(); ++i)
        if (last_use[k][i] == k) values[k][i] = Tensor();
    }
    if (mode == Mode::serve) stats.unplanned = unplanned;
    std::vector<Tensor> outs;
    for (const auto &r : outputs) outs.push_back(value_of(r));
    if (!update_values.empty() && mode != Mode::record) {
      std::vector<Tensor> dsts, news;
      for (std::size_t j = 0; j < update_values.size(); ++j) {
        dsts.push_back(inputs[updated[j]]);
        news.push_back(value_of(update_values[j]));
      }
      detail::write_updates(dsts, std::move(news), outs);
    }
    return outs;
  }
};

HIDET_INLINE CompiledGraph::CompiledGraph(FlowGraph graph) : CompiledGraph(std::move(graph), SymbolValues{}) {}

HIDET_INLINE CompiledGraph::CompiledGraph(FlowGraph graph, SymbolValues values)
    : s_(std::make_shared<State>(std::move(graph), std::move(values))) {
  auto t0 = std::chrono::steady_clock::now();
  const FlowGraph &g = s_->graph;
  const auto &nodes = g.nodes();
  std::vector<Tensor> scratch = detail::scratch_inputs(g, s_->symbol_values);
  if (!s_->symbol_values.empty()) s_->symbol_values = g.bind_symbols(scratch); // exactly the graph's symbols
  // Where each node's inputs come from.
  std::map<detail::TensorKey, detail::ValueRef> ref_of;
  for (std::size_t i = 0; i < g.inputs().size(); ++i)
    ref_of[detail::key_of(g.inputs()[i])] = {detail::ValueRef::Kind::input, i, 0, {}};
  auto ref = [&](const Tensor &t) -> detail::ValueRef {
    if (!t.is_symbolic()) return {detail::ValueRef::Kind::constant, 0, 0, t};
    auto it = ref_of.find(detail::key_of(t));
    HIDET_ASSERT(it != ref_of.end(), "compile: a node reads a tensor made by no earlier node");
    return it->second;
  };
  s_->node_inputs.resize(nodes.size());
  s_->last_use.resize(nodes.size());
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    for (const auto &t : nodes[k]->inputs()) {
      detail::ValueRef r = ref(t);
      if (r.kind == detail::ValueRef::Kind::node) s_->last_use[r.node][std::size_t(r.index)] = k;
      s_->node_inputs[k].push_back(std::move(r));
    }
    s_->last_use[k].assign(std::size_t(nodes[k]->num_outputs()), k);
    for (int i = 0; i < nodes[k]->num_outputs(); ++i)
      ref_of[{nodes[k].get(), i}] = {detail::ValueRef::Kind::node, k, i, {}};
  }
  for (const auto &t : g.outputs()) {
    detail::ValueRef r = ref(t);
    if (r.kind == detail::ValueRef::Kind::node) s_->last_use[r.node][std::size_t(r.index)] = nodes.size();
    s_->outputs.push_back(std::move(r));
  }
  s_->updated = g.updated_inputs();
  s_->in_place.assign(g.inputs().size(), false);
  for (const auto &u : g.updates()) {
    detail::ValueRef r = ref(u.value);
    if (r.kind == detail::ValueRef::Kind::node) s_->last_use[r.node][std::size_t(r.index)] = nodes.size();
    s_->update_values.push_back(std::move(r));
  }

  // Build the kernels, run once (loads, operators' caches), then record a run. Both runs read
  // scratch inputs (the first updates them in place: the second's indices may lie past a
  // cache): what their kernels find out of range means nothing and is dropped.
  build(g, 0, s_->symbol_values);
  g.bind_symbols(scratch);
  std::optional<runtime::ScratchRuns> scratch_runs(std::in_place, detail::graph_devices(g));
  {
    // The ranks' collectives are compared once, here (on a GPU too: runtime/distributed.hpp).
    distributed::CheckGuard check_collectives;
    (void)s_->run_nodes(scratch, State::Mode::warm_up);
  }
  std::vector<std::vector<detail::RecordedAllocation>> record(nodes.size());
  std::vector<std::vector<Tensor>> outs(nodes.size());
  std::vector<Tensor> graph_outs;
  {
    // Only the allocations matter: on the emulator, where a run costs seconds, kernels are not run.
    bool &skip = runtime::detail::skip_emulated_launches();
    bool saved = std::exchange(skip, runtime::cuda_emulated());
    struct Restore {
      bool &flag, value;
      ~Restore() { flag = value; }
    } restore{skip, saved};
    graph_outs = s_->run_nodes(scratch, State::Mode::record, &outs, &record);
  }
  scratch_runs.reset(); // waits for the runs' kernels, drops their made-up errors
  // The workspace lives on the device of the first allocation; allocations elsewhere are kept
  // outside the plan.
  std::optional<Device> dev;
  for (const auto &list : record)
    if (!dev && !list.empty()) dev = list[0].device;

  // Classify each allocation: a temporary (dead when its node returned), an intermediate (a
  // storage of the node's outputs, alive to its last reader), or kept outside the plan.
  struct Block {
    std::size_t node, j, last;
    bool output;
  };
  std::map<const Storage *, std::size_t> block_of; // storage of an intermediate -> index in blocks
  std::vector<Block> blocks;
  s_->allocations.resize(nodes.size());
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    auto &list = s_->allocations[k];
    for (std::size_t j = 0; j < record[k].size(); ++j) {
      const auto &[nbytes, device, weak] = record[k][j];
      list.push_back({nbytes, false, 0});
      if (device != *dev) continue;
      std::shared_ptr<Storage> s = weak.lock();
      if (!s) {
        blocks.push_back({k, j, k, false});
        continue;
      }
      bool is_output = false;
      for (const auto &o : outs[k]) is_output = is_output || o.storage() == s;
      if (is_output && s->alloc) {
        block_of[s.get()] = blocks.size();
        blocks.push_back({k, j, k, true});
      }
    }
    // Lifetimes: this node reads its inputs' storages.
    for (const auto &r : s_->node_inputs[k]) {
      if (r.kind != detail::ValueRef::Kind::node) continue;
      const auto &st = outs[r.node][std::size_t(r.index)].storage();
      auto it = block_of.find(st.get());
      if (it != block_of.end()) blocks[it->second].last = std::max(blocks[it->second].last, k);
    }
  }
  // What the graph returns stays outside the workspace.
  std::vector<bool> returned(blocks.size(), false);
  for (const auto &t : graph_outs) {
    auto it = block_of.find(t.storage().get());
    if (it != block_of.end()) returned[it->second] = true;
  }
  // An update's value is copied into its input after the last node: alive to the end (unless
  // made in the input's memory, below).
  for (const auto &r : s_->update_values) {
    if (r.kind != detail::ValueRef::Kind::node) continue;
    auto it = block_of.find(outs[r.node][std::size_t(r.index)].storage().get());
    if (it != block_of.end()) blocks[it->second].last = nodes.size();
  }
  // Updates in place: the block that holds an update's value (made by node p) is the updated
  // input's memory when nothing reads the input's old value after p, nor p itself except through
  // its inplace_input(), no output views the old value and no other update reads it.
  // A one-element input updated by an injective task of one one-element output (a cache's length,
  // cumulative_length + 1): one thread reads the inputs, then stores, so the store may take the
  // input's memory.
  auto single_element = [&](std::size_t p, const Tensor &x) {
    auto t = std::dynamic_pointer_cast<const ops::TaskOperator>(nodes[p]);
    return t && x.numel() == 1 && t->num_outputs() == 1 && t->task().injective() &&
           is_constant_shape(t->output_metas()[0].shape) && sym_numel(t->output_metas()[0].shape) == Dim(1);
  };
  auto in_place_allowed = [&](std::size_t i, std::size_t j, std::size_t p, std::size_t nbytes) {
    const Tensor &x = scratch[i];
    const Tensor &v = outs[s_->update_values[j].node][std::size_t(s_->update_values[j].index)];
    if (!x.storage() || nbytes != x.nbytes() || v.offset() != 0 || v.nbytes() != x.nbytes()) return false;
    auto old_value = [&](const Tensor &t) { return t.defined() && !t.is_symbolic() && t.storage() == x.storage(); };
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      int reads = 0;
      for (std::size_t a = 0; a < s_->node_inputs[k].size(); ++a) {
        const auto &r = s_->node_inputs[k][a];
        const Tensor &t = r.kind == detail::ValueRef::Kind::input      ? scratch[r.node]
                          : r.kind == detail::ValueRef::Kind::constant ? r.constant
                                                                       : outs[r.node][std::size_t(r.index)];
        if (!old_value(t)) continue;
        if (k > p) return false;
        if (k == p && (++reads > 1 || (nodes[p]->inplace_input() != int(a) && !single_element(p, x)) ||
                       t.offset() != x.offset() || t.nbytes() != x.nbytes()))
          return false;
      }
    }
    for (const auto &t : graph_outs)
      if (old_value(t)) return false;
    for (std::size_t k = 0; k < s_->update_values.size(); ++k) {
      const auto &r = s_->update_values[k];
      if (k != j && r.kind == detail::ValueRef::Kind::node && old_value(outs[r.node][std::size_t(r.index)]))
        return false;
      if (k != j && r.kind == detail::ValueRef::Kind::input && r.node == i) return false;
    }
    return true;
  };
  std::vector<bool> aliased(blocks.size(), false);
  for (std::size_t j = 0; j < s_->update_values.size(); ++j) {
    const auto &r = s_->update_values[j];
    if (r.kind != detail::ValueRef::Kind::node) continue;
    auto it = block_of.find(outs[r.node][std::size_t(r.index)].storage().get());
    if (it == block_of.end() || aliased[it->second]) continue;
    const Block &bl = blocks[it->second];
    if (in_place_allowed(s_->updated[j], j, bl.node, s_->allocations[bl.node][bl.j].nbytes)) {
      aliased[it->second] = true;
      s_->allocations[bl.node][bl.j].input = int(s_->updated[j]);
      s_->in_place[s_->updated[j]] = true;
    }
  }
  std::vector<PlannedTensor> planned;
  std::vector<std::size_t> block_index;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    if (returned[b] || aliased[b]) continue;
    const Block &bl = blocks[b];
    std::size_t bytes = s_->allocations[bl.node][bl.j].nbytes;
    bytes = (bytes + MemoryPlan::alignment - 1) / MemoryPlan::alignment * MemoryPlan::alignment;
    int output = -1;
    if (bl.output)
      for (std::size_t i = 0; i < outs[bl.node].size(); ++i)
        if (block_of.at(outs[bl.node][i].storage().get()) == b) output = int(i);
    planned.push_back({bl.node, output, std::max<std::size_t>(bytes, MemoryPlan::alignment), bl.node, bl.last, 0});
    block_index.push_back(b);
  }
  s_->plan = place_blocks(std::move(planned));
  for (std::size_t p = 0; p < block_index.size(); ++p) {
    const Block &bl = blocks[block_index[p]];
    auto &a = s_->allocations[bl.node][bl.j];
    a.planned = true;
    a.offset = s_->plan.tensors[p].offset;
  }
  if (dev) s_->workspace = allocate_storage(std::max<std::size_t>(s_->plan.workspace_bytes, 1), *dev);
  s_->stats.nodes = nodes.size();
  for (const auto &list : s_->allocations)
    for (const auto &a : list)
      if (a.input < 0) (a.planned ? s_->stats.planned : s_->stats.kept)++;
  for (std::size_t i : s_->updated) (s_->in_place[i] ? s_->stats.updates_in_place : s_->stats.updates_copied)++;
  s_->stats.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}


HIDET_INLINE std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor> &inputs) const {
  return run(inputs, current_stream());
}

HIDET_INLINE std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor> &inputs, const Stream &stream) const {
  runtime::check_device_errors(); // what an earlier run's kernels found (an index out of range on a GPU)
  SymbolValues values = s_->graph.bind_symbols(inputs); // count, dtype, device and shape of each input
  if (values != s_->symbol_values) {
    auto str = [](const SymbolValues &v) {
      std::string s;
      for (const auto &[k, x] : v) s += str_cat(s.empty() ? "" : ", ", k, "=", x);
      return s;
    };
    throw ValueError(str_cat("compiled graph: compiled at ", str(s_->symbol_values), " but the inputs give ", str(values),
                             "; compile one per shape (graph::ShapeDispatch does)"));
  }
  std::lock_guard<std::mutex> lock(s_->mu);
  if (s_->ran && !(s_->last_stream == stream)) s_->last_stream.synchronize(); // the workspace is reused
  StreamGuard guard(stream);
  s_->last_stream = stream;
  s_->ran = true;
  ++s_->stats.runs;
  return s_->run_nodes(inputs, State::Mode::serve);
}

HIDET_INLINE std::vector<Tensor> CompiledGraph::run_unplanned(const std::vector<Tensor> &inputs,
                                                              const Stream &stream) const {
  if (s_->loaded)
    throw ValueError(
        "compiled graph: a graph loaded from a file runs at its saved shapes only (run_unplanned)");
  SymbolValues values = s_->graph.bind_symbols(inputs); // count, dtype, device and constant extents
  std::lock_guard<std::mutex> lock(s_->mu);
  if (s_->ran && !(s_->last_stream == stream)) s_->last_stream.synchronize(); // one run at a time
  StreamGuard guard(stream);
  s_->last_stream = stream;
  s_->ran = true;
  ++s_->stats.runs;
  ++s_->stats.unplanned_runs;
  // The nodes allocate from the caching allocator (no hook): warm_up's way of running.
  return s_->run_nodes(inputs, State::Mode::warm_up, nullptr, nullptr, nullptr, &values);
}

HIDET_INLINE const FlowGraph &CompiledGraph::graph() const { return s_->graph; }
HIDET_INLINE const SymbolValues &CompiledGraph::symbol_values() const { return s_->symbol_values; }
HIDET_INLINE const MemoryPlan &CompiledGraph::memory_plan() const { return s_->plan; }
HIDET_INLINE std::size_t CompiledGraph::workspace_bytes() const { return s_->plan.workspace_bytes; }
HIDET_INLINE CompiledGraphStats CompiledGraph::stats() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->stats;
}

HIDET_INLINE Tensor CompiledGraph::single_output(std::vector<Tensor> outs) const {
  if (outs.size() != 1)
    throw ValueError(str_cat("the graph has ", outs.size(), " outputs; call run() to get all of them"));
  return outs[0];
}

HIDET_INLINE CompiledGraph compile(const FlowGraph &graph) { return CompiledGraph(graph); }

HIDET_INLINE CudaGraph CompiledGraph::cuda_graph() const { return CudaGraph(*this); }

} // namespace hidet::graph
