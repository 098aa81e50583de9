// Building a graph's kernels ahead of its first run.
//
// build(graph) compiles the kernels of every task-defined node (ops::TaskOperator: the
// auto-scheduled and fused operators) on a thread pool: scheduling and NVRTC run in parallel,
// with NVRTC's disk cache underneath (a second process compiles nothing) and the in-process
// kernel cache on top (a node compiled before, by an eager call or another graph, is skipped).
// Progress goes to stderr: a bar on a terminal (kernels built, elapsed, remaining), log lines
// otherwise. Operators with hand-written templates (Matmul, Conv2d, ScaledDotProductAttention
// and their fused forms; Operator::scratch_build) are built in the same pool by one run each on
// zeros of their input shapes, on a GPU at search space 0 (on the emulator they build on their
// first run). At spaces 1 and 2 the same runs prebuild (ops/tuning.hpp, PrebuildScope): a node
// whose problem has no tuning record compiles every candidate and stops, all nodes side by side
// (the candidates of a whole model compile on every core at once instead of one node's after
// another's), and its first run times the candidates alone, each build a compile-cache hit. A
// node whose kernels fail to build is reported by a CudaError or ValueError naming the node
// after the other nodes are built.
#pragma once

#include <cstddef>

#include "hidet/graph/flow_graph.hpp"

namespace hidet::graph {

/// What build() did.
struct BuildStats {
  std::size_t nodes = 0;    ///< task-defined nodes in the graph, and template nodes built here
  std::size_t compiled = 0; ///< of them, compiled by this call
  double seconds = 0;       ///< wall time
  double nvrtc_seconds = 0; ///< NVRTC's compile time during the build, summed over the threads
  double slowest_seconds = 0; ///< the longest node to build (its schedule, codegen and NVRTC)
  std::string slowest;      ///< that node: "<name> (node <index>)"
};

/// Compiles the graph's task-defined kernels in parallel (see the top of the file); `threads` 0
/// means one per hardware thread. With `values` (a graph of symbolic extents compiled for those
/// values of its symbols: CompiledGraph(graph, values)), its template nodes are built by scratch
/// runs at the extents those values give, each under a SymbolBinding of them, so that the
/// templates built for symbolic sizes (a new batch's tiling) compile in parallel too.
BuildStats build(const FlowGraph &graph, unsigned threads = 0, const SymbolValues &values = {});

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/build.ipp"
#endif
