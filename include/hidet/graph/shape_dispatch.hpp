// ShapeDispatch: a model with symbolic sizes (a batch n, a sequence length s), compiled once per
// distinct input shape and cached. The model is a function called on symbolic inputs of each
// shape, or a FlowGraph traced once with symbolic extents (ShapeDispatch(graph)).
//
//   graph::ShapeDispatch model(
//       [&](const std::vector<Tensor> &xs) { return std::vector<Tensor>{net(xs[0])}; },
//       {hidet::symbol({"n", 3, 224, 224}, hidet::f16, "cuda", "img")});
//   Tensor y1 = model.run({batch_of_1})[0];  // traces net at n = 1, optimizes, compiles
//   Tensor y8 = model.run({batch_of_8})[0];  // n = 8: a second compiled graph
//   Tensor y  = model.run({batch_of_1})[0];  // n = 1 again: the cached one, nothing compiled
//
// The inputs of each call are checked against the specification as FlowGraph::run checks a
// graph's (count, dtype, device, rank, constant extents; a symbol takes one value across all
// inputs) and the error names the input. A new shape is traced by calling the model function on
// symbolic inputs of that shape, optimized (graph::optimize with the given PassContext) and
// compiled (graph::CompiledGraph: parallel kernel builds with progress, one planned workspace),
// optionally captured as a CUDA graph; operators thus only ever see constant shapes. Compiled
// graphs are kept per shape (at most `max_shapes` of them, the least recently used dropped).
//
// With DispatchOptions::shape_generic (PassContext::shape_generic through graph::optimize), the
// model is traced once on the symbolic inputs and optimized once with the passes that work on
// symbolic extents (graph::optimize_shape_generic); each new shape then only compiles that one
// graph at its symbol values (CompiledGraph(graph, values)): the shape-generic nodes (element-wise,
// reductions, norms, softmax, most layout operators, and their fusions) build no kernel again,
// and only the nodes that build kernels per shape (matmul, convolution, attention, ...) do. The
// per-shape path fuses more (epilogues into matmuls, attention patterns, layouts): it compiles
// more per shape and runs faster; docs/notes/dynamic_shapes.md has measurements.
//
// Buckets (DispatchOptions::buckets, with shape_generic): the shapes whose symbol values round up
// to the same powers of two (n in 5..8, s in 9..16: the bucket n <= 8, s <= 16) share one compiled
// graph, compiled for the first shape of the bucket that comes: a prompt of a new length in a
// bucket seen before compiles nothing. That shape runs on its plan (and CUDA graph); the bucket's
// other shapes run the same nodes through CompiledGraph::run_unplanned (allocations from the
// caching allocator, no CUDA graph), until one has run `own_plan_after` times: it then gets its
// own compiled graph (no new kernel: the bucket built them), so a shape that repeats (a decode
// step over a cache of a new length) is planned and replayed again. A symbol's bucket is its
// value rounded up to a power of two (0 and 1 are buckets of their own).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "hidet/graph/compiled_graph.hpp"
#include "hidet/graph/passes.hpp"

namespace hidet::graph {

/// Options of a ShapeDispatch.
struct DispatchOptions {
  PassContext pass_context; ///< for graph::optimize
  bool optimize = true;     ///< run graph::optimize before compiling
  bool cuda_graph = false;  ///< replay a CUDA graph per shape (outputs are then static tensors
                            ///< overwritten by the next call of the same shape)
  std::size_t max_shapes = 64; ///< compiled shapes kept (least recently used dropped)
  bool shape_generic = false;  ///< optimize once on symbolic extents, reuse kernels across shapes
                               ///< (see the top of the file)
  bool buckets = false;        ///< with shape_generic: the shapes of a power-of-two bucket share a
                               ///< compiled graph (see the top of the file)
  std::size_t own_plan_after = 3; ///< with buckets: runs of a shape on its bucket's graph before it
                                  ///< gets its own compiled graph (0: never)
};

/// A model compiled per input shape (see the top of the file).
class ShapeDispatch {
public:
  using Model = std::function<std::vector<Tensor>(const std::vector<Tensor> &)>;
  /// `inputs`: symbolic tensors giving each input's dtype, device and (symbolic) shape.
  ShapeDispatch(Model model, std::vector<Tensor> inputs, DispatchOptions options = {});
  /// A traced graph whose inputs' extents may be symbols (hidet::symbol({"n", 3})), compiled per
  /// shape: each new shape specializes the graph (FlowGraph::specialize), then optimizes and
  /// compiles it as above.
  explicit ShapeDispatch(FlowGraph graph, DispatchOptions options = {});
  ~ShapeDispatch();
  ShapeDispatch(ShapeDispatch &&) noexcept;
  ShapeDispatch &operator=(ShapeDispatch &&) noexcept;

  /// Runs the model on concrete inputs, compiling it first for a shape not seen before.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);
  /// run() for a model of one output.
  template <class... Ts> Tensor operator()(const Ts &...xs) {
    auto outs = run(std::vector<Tensor>{Tensor(xs)...});
    return single_output(std::move(outs));
  }
  /// The compiled graph for the shapes of `inputs` (compiling it when new; with buckets, the
  /// graph of their bucket, which may be compiled for another shape of it).
  const CompiledGraph &compiled_for(const std::vector<Tensor> &inputs);
  /// Shapes compiled and kept now.
  std::size_t num_compiled() const;
  /// Compilations so far (a shape dropped and seen again counts twice).
  std::size_t num_compilations() const;
  /// With buckets: runs so far of a shape on its bucket's graph compiled for another shape.
  std::size_t num_shared_runs() const;
  /// With shape_generic: the optimized symbolic graph every shape compiles (traced and optimized
  /// on the first call); else an error.
  const FlowGraph &generic_graph();

private:
  Tensor single_output(std::vector<Tensor> outs) const;
  struct State;
  std::unique_ptr<State> s_;
};

/// A graph of one node, ShapeDispatch(x, ..., graph=FlowGraph(...)), that runs `graph` (whose
/// inputs have symbolic extents) through a ShapeDispatch with `options`: what graph::optimize
/// returns for such a graph. On symbolic inputs of constant shapes the node traces `graph` again
/// at those shapes (so specialize() of the result gives the unoptimized graph at one shape).
FlowGraph dispatch_per_shape(const FlowGraph &graph, DispatchOptions options = {});

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/shape_dispatch.ipp"
#endif
