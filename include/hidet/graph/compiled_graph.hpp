// CompiledGraph: a FlowGraph made ready to run many times, its intermediates and the operators'
// temporaries in one workspace laid out by the static memory planner.
//
//   hidet::graph::CompiledGraph cg = hidet::graph::compile(opt);   // or CompiledGraph(opt)
//   hidet::Tensor y = cg(a);                                       // on the current stream
//   std::vector<hidet::Tensor> ys = cg.run({a}, stream);           // on a given stream
//   std::cout << cg.memory_plan().str();   // workspace 3.1 MiB for 58 tensors of 41.2 MiB (...)
//
// Compiling builds every kernel (graph/build.hpp, in parallel, with a progress bar), then runs the
// graph twice on scratch inputs of the input shapes (random floats, zero integers): the first run
// loads every kernel and lets operators fill their own caches; the second records each block of
// memory every node allocates, in order: its size and what became of it when the node returned:
// freed (a temporary, alive during that node only), one of the node's outputs (alive until the
// last node that reads it, or a view of it, runs), or neither (kept by the operator itself, or
// returned by the graph). Temporaries and intermediates are then placed in one workspace
// (graph::place_blocks: no two blocks alive at the same node overlap) allocated once.
//
// A run binds and checks the inputs like FlowGraph::run, then runs the nodes in order with the
// node's allocations served in recorded order: a request of the recorded size gets its planned
// place in the workspace; any other (a node that allocates differently than when recorded) comes
// from the caching allocator and is counted in stats().unplanned. A run allocates only the graph's
// outputs (fresh tensors the caller keeps; the caching allocator serves them from its cache).
//
// Streams and threads: runs are serialized (one workspace); a run on another stream than the
// previous run first waits for the previous stream. cuda_graph() captures a run, so a replay
// reuses the workspace too: its memory is the workspace plus its outputs, not the sum of all
// intermediates.
//
// Saving: cg.save("model.hidet") records one run at the level of the device work: every kernel
// launch with its arguments, copies and fills, each pointer rewritten as a place in the inputs, in
// memory the run allocates (the workspace, the outputs) or in read-only data (the constants and
// blocks operators keep). The file holds that program, the kernels' cubins (on the CPU emulator,
// their lowered IR, which the emulator runs) and the data, behind a header (format, hidet version,
// target) and checksums: a model file (graph/model.hpp; graph::save_model writes one compiled
// graph per set of input shapes into one file). CompiledGraph::load(path) gives a compiled graph
// of one node ("SavedGraph") that replays it through a hidet::Model: no operator, compiler or
// tuning runs, and run(), streams and cuda_graph() work as before (a graph that updates inputs
// in place updates them too: the file marks them). Work that depends on values read back to the
// host during a run cannot be saved (a ValueError naming the node). A file loads in any process
// on the target it was saved for.
//
// Updates of inputs in place (FlowGraph::updates, a model's cache): the recording finds, for each
// update, the block that holds its new value and the node p that allocates it. When no node
// after p reads the input's old value (nor p itself, except through the input its kernels update
// in place, Operator::inplace_input: index_put, scatter, index_add), no output views the old value
// and no other update reads it, that block is the input's own memory: p writes the new value
// where the caller's tensor lives (an index_put into a cache stores only the indexed rows) and
// nothing is copied. Otherwise the value is copied into the input after the nodes ran.
// stats().updates_in_place and updates_copied count each kind. A run given overlapping inputs
// (one tensor for two inputs), or an updated input not aligned to MemoryPlan::alignment (a view at
// an odd offset), copies instead.
//
// A graph with symbolic input extents compiles at one value of each symbol
// (CompiledGraph(graph, {{"n", 8}})): the scratch runs, the recording and the plan are made at
// those values, and its shape-generic nodes (docs/graph.md, "Shape-generic kernels") reuse the
// kernels that other values built; run() takes inputs of those values only, and save() records
// it at those values. run_unplanned() runs it at other values of its symbols: the same nodes on
// the given inputs, with their allocations from the caching allocator (the workspace is planned
// for the compiled values) and the kernels the compile built (a node that needs another one at
// these sizes, a product's other tiling, builds it then); no CUDA graph. graph::ShapeDispatch's
// buckets run the sizes of a bucket so on the graph compiled for the first of them.
//
// Collectives (ops/collective.hpp, docs/distributed.md): every rank compiles the same graph, and
// both scratch runs issue its collectives on every rank alike; the first one compares the ranks'
// calls (distributed::CheckGuard), so ranks that traced different graphs fail here, on every rank.
// save() refuses a graph with collectives (a ValueError naming the node).
//
// Errors: a graph input with a symbolic extent and no value for it (a ValueError: a compiled graph
// has one shape; see graph::ShapeDispatch for symbolic sizes), inputs of the wrong count, shape,
// dtype or device, or of other symbol values (a ValueError naming the input), and an error inside
// a node (rethrown naming the node).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hidet/graph/flow_graph.hpp"
#include "hidet/graph/memory_plan.hpp"
#include "hidet/runtime/stream.hpp"

namespace hidet::graph {

/// Counters of a compiled graph.
struct CompiledGraphStats {
  std::size_t nodes = 0;            ///< operators run per run
  std::size_t planned = 0;          ///< allocations per run served from the workspace
  std::size_t unplanned = 0;        ///< allocations of the last run that did not match the recording
  std::size_t kept = 0;             ///< allocations per run the plan leaves to the caching allocator
                                    ///< (graph outputs, blocks kept by operators)
  std::uint64_t runs = 0;           ///< runs so far
  std::uint64_t unplanned_runs = 0; ///< of which run_unplanned() (at other symbol values)
  double compile_seconds = 0;       ///< build, recording and planning
  std::size_t updates_in_place = 0; ///< input updates whose value is made in the input's memory
  std::size_t updates_copied = 0;   ///< input updates copied into the input after the nodes ran
};

/// A FlowGraph compiled to run in one planned workspace (see the top of the file).
class CudaGraph;
namespace detail {
struct GraphRecorder;
} // namespace detail

class CompiledGraph {
public:
  /// Compiles `graph` (see the top of the file). Throws ValueError for a symbolic input extent.
  /// Copies share the compiled graph (its kernels, plan and workspace).
  explicit CompiledGraph(FlowGraph graph);
  /// Compiles `graph`, whose input extents may be symbols, at the symbol values `values` (see the
  /// top of the file); a ValueError naming a symbol without a value.
  CompiledGraph(FlowGraph graph, SymbolValues values);

  /// Runs on the current stream; returns the outputs (fresh tensors) and writes the updated
  /// inputs' new values into the given tensors.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const;
  /// Runs on `stream`.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs, const Stream &stream) const;
  /// Runs a graph compiled at symbol values on inputs of other values of its symbols (see the top
  /// of the file); a ValueError for inputs the graph does not take (count, dtype, device, constant
  /// extents, a symbol two inputs disagree on) and for a graph loaded from a file.
  std::vector<Tensor> run_unplanned(const std::vector<Tensor> &inputs, const Stream &stream) const;
  /// run() for a graph of one output: cg(a), cg(a, b).
  template <class... Ts> Tensor operator()(const Ts &...xs) const {
    return single_output(run(std::vector<Tensor>{Tensor(xs)...}));
  }

  /// The graph it runs.
  const FlowGraph &graph() const;
  /// The symbol values it was compiled at (empty for a graph of constant shapes).
  const SymbolValues &symbol_values() const;
  /// Where each planned block lies (PlannedTensor::output -1 for a node's temporaries).
  const MemoryPlan &memory_plan() const;
  /// The workspace's size in bytes (memory_plan().workspace_bytes).
  std::size_t workspace_bytes() const;
  CompiledGraphStats stats() const;

  /// A CUDA graph of one run (graph/cuda_graph.hpp; include it to use the result).
  CudaGraph cuda_graph() const;

  /// Writes the compiled graph to one file at `path` (see "Saving" above): written to a
  /// temporary file and renamed, so a failed save leaves nothing half-written. Runs the graph
  /// once. Throws ValueError when a node's work cannot be replayed from a file.
  void save(const std::string &path) const;
  /// Reads a file written by save(): a compiled graph of one node that replays the saved kernels.
  /// Throws ValueError for a file that is not one, is truncated or corrupt, was saved by another
  /// hidet version or for another target, or holds several shapes (load those with hidet::Model).
  static CompiledGraph load(const std::string &path);

private:
  friend struct detail::GraphRecorder;
  Tensor single_output(std::vector<Tensor> outs) const;
  struct State;
  std::shared_ptr<State> s_;
};

/// CompiledGraph(graph).
CompiledGraph compile(const FlowGraph &graph);

} // namespace hidet::graph

namespace hidet {
using graph::CompiledGraph;
} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/compiled_graph.ipp"
#include "hidet/graph/impl/compiled_graph_file.ipp"
#endif
