// CudaGraph: a FlowGraph captured once as a CUDA graph and replayed with one launch.
//
//   hidet::graph::CudaGraph cg = opt_graph.cuda_graph();   // or CudaGraph(opt_graph)
//   hidet::Tensor y = cg.run({a})[0];                      // copy a in, replay, read y
//
// Capturing: the graph is compiled (graph/compiled_graph.hpp: kernels built in parallel, one
// planned workspace for the intermediates and temporaries) and its inputs get static buffers
// (their shapes must be constant); a run of the compiled graph on a fresh stream is captured
// (relaxed mode) and instantiated. Every block of memory allocated during the capture (the
// outputs, and blocks inside the workspace) is kept by the CudaGraph, so replays write only
// memory it owns: the workspace and the outputs. Each run() copies the given inputs into the
// static input buffers, launches the graph on the current stream and returns the static output
// tensors: a later run() overwrites them (clone() what you keep), as with PyTorch's CUDA graphs.
//
// Inputs updated in place (FlowGraph::updates): the replay writes their new values into the
// static input buffers, and run(inputs) copies them back into the given tensors. Given the tensors
// to capture as the input buffers themselves (CudaGraph(compiled, buffers): a model's cache), a
// run on those same tensors copies nothing in or out: the replay updates the cache where it lives.
// Capturing runs the graph once more on copies of such buffers, so capturing updates nothing.
//
// On the CPU emulator there is nothing to capture: run() runs the graph's nodes and copies the
// results into the same static outputs, so programs behave alike (captured() is false).
//
// Errors: an input with a symbolic extent, an operator that synchronizes with the host while
// captured (the capture is abandoned and the CudaError names the failing call), inputs of the
// wrong count, shape, dtype or device (a ValueError naming the input).
#pragma once

#include <memory>
#include <vector>

#include "hidet/graph/compiled_graph.hpp"
#include "hidet/graph/flow_graph.hpp"

namespace hidet::graph {

/// A FlowGraph captured as a CUDA graph (see the top of the file).
class CudaGraph {
public:
  /// Captures `graph` (see the top of the file). Throws ValueError for a symbolic input extent.
  explicit CudaGraph(FlowGraph graph);
  /// Captures a run of `compiled` (shares its workspace: do not run both concurrently).
  explicit CudaGraph(CompiledGraph compiled);
  /// Captures a run of `compiled` with `buffers[i]`, where defined, as input i's buffer (its
  /// memory is where the replay reads the input and writes its update; see the top of the file).
  /// A ValueError names a buffer of another shape, dtype or device than its input.
  CudaGraph(CompiledGraph compiled, const std::vector<Tensor> &buffers);
  ~CudaGraph();
  CudaGraph(CudaGraph &&) noexcept;
  CudaGraph &operator=(CudaGraph &&) noexcept;
  CudaGraph(const CudaGraph &) = delete;
  CudaGraph &operator=(const CudaGraph &) = delete;

  /// Copies `inputs` into the static input buffers (those that are not them already), replays,
  /// copies the updated inputs' new values back into `inputs`, returns the static outputs.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);
  /// Replays on the data already in inputs() (write them in place to skip the copies); the
  /// updated ones hold their new values afterwards.
  std::vector<Tensor> run();
  /// The static input buffers, one per graph input.
  const std::vector<Tensor> &inputs() const;
  /// The static outputs, overwritten by each run.
  const std::vector<Tensor> &outputs() const;
  /// True when a CUDA graph was captured (false on the emulator).
  bool captured() const;

private:
  struct State;
  std::unique_ptr<State> s_;
};

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/cuda_graph.ipp"
#endif
