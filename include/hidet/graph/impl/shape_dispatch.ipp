// Definitions for hidet/graph/shape_dispatch.hpp.
#pragma once

#include "hidet/graph/shape_dispatch.hpp"

#include <chrono>
#include <cstdio>
#include <list>
#include <map>
#include <optional>

#include "hidet/error.hpp"
#include "hidet/graph/cuda_graph.hpp"

namespace hidet::graph {

namespace detail {
/// A symbol value's bucket (DispatchOptions::buckets): the value rounded up to a power of two.
inline std::int64_t bucket_of(std::int64_t v) {
  std::int64_t b = 1;
  while (b < v)
    b *= 2;
  return v <= 1 ? v : b;
}
} // namespace detail

struct ShapeDispatch::State {
  struct Entry {
    CompiledGraph compiled;
    std::unique_ptr<CudaGraph> replay;
    std::vector<std::int64_t> bucket; ///< with buckets: its symbols' buckets
  };
  using Key = std::vector<std::vector<std::int64_t>>;
  using Entries = std::list<std::pair<Key, Entry>>;
  /// The compiled graph for a call, and whether it was compiled for the call's shape.
  struct Found {
    Entry *entry;
    bool own;
  };
  Model model;
  std::vector<Tensor> specs;
  FlowGraph spec_graph; ///< the specification's inputs, for checking calls (bind_symbols)
  DispatchOptions options;
  Entries entries; ///< most recently used first
  std::map<Key, Entries::iterator> index;
  std::size_t compilations = 0, shared = 0;
  std::map<std::vector<std::int64_t>, Key>
      bucket_owner;                       ///< bucket -> the shape its graph was compiled for
  std::map<Key, std::size_t> shared_runs; ///< per shape: runs on its bucket's graph so far
  std::optional<FlowGraph> generic; ///< shape_generic: the optimized symbolic graph
  std::optional<FlowGraph> source;  ///< the graph given to ShapeDispatch(graph), if any

  const FlowGraph &generic_graph() {
    if (!generic) {
      FlowGraph g = source ? *source : FlowGraph(model(specs), specs);
      generic = options.optimize ? optimize_shape_generic(g, options.pass_context) : g;
    }
    return *generic;
  }

  State(Model m, std::vector<Tensor> in, DispatchOptions o)
      : model(std::move(m)), specs(in), spec_graph(in, in), options(std::move(o)) {}

  Found use(Entries::iterator it, bool own) {
    entries.splice(entries.begin(), entries, it);
    return {&entries.front().second, own};
  }

  /// The compiled graph for `inputs` (compiled now when their shape needs one); `run`: the call
  /// runs it (a run on a bucket's graph counts toward the shape's own).
  Found find(const std::vector<Tensor> &inputs, bool run) {
    SymbolValues values = spec_graph.bind_symbols(inputs); // count, dtype, device, rank, extents, symbols agree
    Key key;
    for (const auto &x : inputs) key.push_back(x.shape());
    if (auto it = index.find(key); it != index.end()) return use(it->second, true);
    std::vector<std::int64_t> bucket;
    if (options.shape_generic && options.buckets && !values.empty()) {
      for (const auto &[name, v] : values)
        bucket.push_back(detail::bucket_of(v));
      if (auto b = bucket_owner.find(bucket); b != bucket_owner.end()) {
        std::size_t runs = run ? ++shared_runs[key] : 0;
        if (!run || options.own_plan_after == 0 || runs < options.own_plan_after) {
          if (run) ++shared;
          if (shared_runs.size() > 4096) shared_runs.clear();
          return use(index.at(b->second), false);
        }
        shared_runs.erase(key); // run often enough: its own compiled graph
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    std::optional<CompiledGraph> compiled;
    if (options.shape_generic) {
      compiled.emplace(generic_graph(), values);
    } else if (source) { // the graph at this shape, with its updates of inputs
      FlowGraph g = source->specialize(values);
      if (options.optimize) g = optimize(g, options.pass_context);
      compiled.emplace(std::move(g));
    } else {
      std::vector<Tensor> symbols;
      for (std::size_t i = 0; i < inputs.size(); ++i)
        symbols.push_back(symbol(to_sym_shape(inputs[i].shape()), specs[i].dtype(), specs[i].device(),
                                 specs[i].name().empty() ? str_cat("x", i) : specs[i].name()));
      std::vector<Tensor> outs = model(symbols);
      FlowGraph g(outs, symbols);
      if (options.optimize) g = optimize(g, options.pass_context);
      compiled.emplace(std::move(g));
    }
    Entry e{std::move(*compiled), nullptr, bucket};
    if (options.cuda_graph) {
      // The inputs it updates are captured where the caller's tensors live (a cache).
      std::vector<Tensor> buffers(inputs.size());
      for (std::size_t i : e.compiled.graph().updated_inputs()) buffers[i] = inputs[i];
      e.replay = std::make_unique<CudaGraph>(e.compiled, buffers);
    }
    ++compilations;
    const bool first_of_bucket = !bucket.empty() && !bucket_owner.count(bucket);
    if (first_of_bucket) bucket_owner[bucket] = key;
    if (options.pass_context.verbose) {
      std::string at, in;
      std::size_t k = 0;
      for (const auto &[name, v] : values) {
        at += str_cat(at.empty() ? "" : ", ", name, "=", v);
        if (!bucket.empty()) in += str_cat(in.empty() ? "" : ", ", name, " <= ", bucket[k++]);
      }
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "hidet: ShapeDispatch: compiled %s in %.2f s%s\n",
                   at.empty() ? "the graph" : at.c_str(), seconds,
                   bucket.empty()    ? ""
                   : first_of_bucket ? str_cat(" for the bucket ", in).c_str()
                                     : str_cat(" (its own plan in the bucket ", in, ")").c_str());
    }
    entries.emplace_front(key, std::move(e));
    index[key] = entries.begin();
    while (options.max_shapes > 0 && entries.size() > options.max_shapes) {
      const auto &[old_key, old] = entries.back();
      if (auto b = bucket_owner.find(old.bucket); b != bucket_owner.end() && b->second == old_key)
        bucket_owner.erase(b); // the bucket's next shape compiles it again
      index.erase(old_key);
      entries.pop_back();
    }
    return {&entries.front().second, true};
  }
};

HIDET_INLINE ShapeDispatch::ShapeDispatch(Model model, std::vector<Tensor> inputs, DispatchOptions options) {
  if (inputs.empty()) throw ValueError("ShapeDispatch: give at least one input specification (hidet::symbol)");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].is_symbolic() || inputs[i].trace())
      throw ValueError(str_cat("ShapeDispatch: input ", i, " must be a symbolic graph input (hidet::symbol)"));
  s_ = std::make_unique<State>(std::move(model), std::move(inputs), std::move(options));
}

HIDET_INLINE ShapeDispatch::ShapeDispatch(FlowGraph graph, DispatchOptions options)
    : ShapeDispatch([graph](const std::vector<Tensor> &xs) { return graph.run(xs); }, graph.inputs(), std::move(options)) {
  s_->source = std::move(graph);
}

HIDET_INLINE ShapeDispatch::~ShapeDispatch() = default;
HIDET_INLINE ShapeDispatch::ShapeDispatch(ShapeDispatch &&) noexcept = default;
HIDET_INLINE ShapeDispatch &ShapeDispatch::operator=(ShapeDispatch &&) noexcept = default;

HIDET_INLINE std::vector<Tensor> ShapeDispatch::run(const std::vector<Tensor> &inputs) {
  State::Found f = s_->find(inputs, true);
  if (!f.own)
    return f.entry->compiled.run_unplanned(inputs, current_stream()); // another shape of its bucket
  if (f.entry->replay) return f.entry->replay->run(inputs);
  return f.entry->compiled.run(inputs);
}

HIDET_INLINE const CompiledGraph &ShapeDispatch::compiled_for(const std::vector<Tensor> &inputs) {
  return s_->find(inputs, false).entry->compiled;
}

HIDET_INLINE std::size_t ShapeDispatch::num_compiled() const { return s_->entries.size(); }
HIDET_INLINE std::size_t ShapeDispatch::num_compilations() const { return s_->compilations; }
HIDET_INLINE std::size_t ShapeDispatch::num_shared_runs() const { return s_->shared; }

HIDET_INLINE const FlowGraph &ShapeDispatch::generic_graph() {
  if (!s_->options.shape_generic) throw ValueError("ShapeDispatch: generic_graph() needs DispatchOptions::shape_generic");
  return s_->generic_graph();
}

HIDET_INLINE Tensor ShapeDispatch::single_output(std::vector<Tensor> outs) const {
  if (outs.size() != 1)
    throw ValueError(str_cat("the model has ", outs.size(), " outputs; call run() to get all of them"));
  return outs[0];
}

HIDET_INLINE FlowGraph dispatch_per_shape(const FlowGraph &graph, DispatchOptions options) {
  auto dispatch = std::make_shared<ShapeDispatch>(graph, std::move(options));
  std::vector<TensorMeta> metas;
  std::string members;
  for (const auto &y : graph.outputs()) metas.push_back({y.sym_shape(), y.dtype(), y.device()});
  // The updates' values are outputs too: the dispatch writes them into the node's inputs, which
  // it returns (so the graph's own write-back finds them in place).
  for (const auto &u : graph.updates()) metas.push_back({u.input.sym_shape(), u.input.dtype(), u.input.device()});
  for (const auto &op : graph.nodes()) members += (members.empty() ? "" : ", ") + op->name();
  const std::vector<std::size_t> updated = graph.updated_inputs();
  auto op = std::make_shared<const Operator>(
      "ShapeDispatch", graph.inputs(), str_cat("graph=FlowGraph(", members, "), compiled per shape"), std::move(metas),
      [dispatch, graph, updated](const std::vector<Tensor> &in) {
        if (any_symbolic(in)) return graph.run_functional(in);
        std::vector<Tensor> outs = dispatch->run(in);
        for (std::size_t i : updated) outs.push_back(in[i]);
        return outs;
      });
  std::vector<Tensor> outs = outputs_of(op);
  std::vector<InputUpdate> updates;
  for (std::size_t j = 0; j < updated.size(); ++j) updates.push_back({graph.inputs()[updated[j]], outs[graph.outputs().size() + j]});
  outs.resize(graph.outputs().size());
  return FlowGraph(std::move(outs), graph.inputs(), std::move(updates));
}

} // namespace hidet::graph
