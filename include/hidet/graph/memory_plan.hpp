// Static memory planning of a graph's intermediate tensors.
//
// plan_memory(graph) gives every intermediate tensor (an operator output that is not a graph
// output) a byte offset in one workspace, such that two tensors alive at the same time never
// overlap. A tensor is alive from the step of the operator that makes it to the step of its last
// reader (steps: the graph's nodes in order). Offsets are found greedily, largest tensors first,
// each at the lowest 256-byte aligned offset free during its lifetime (the "greedy by size"
// heuristic of TFLite and others). The plan reports the workspace size (its peak) next to the
// sum of all intermediates and to the lower bound (the most bytes alive at one step).
//
// plan_memory() plans from the graph's metadata alone. Compiled graphs (graph/compiled_graph.hpp)
// plan what a run really allocates (the operators' temporaries too) with place_blocks() and run
// inside the workspace.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hidet/graph/flow_graph.hpp"

namespace hidet::graph {

/// One planned tensor: output `output` of node `node` (-1: a temporary the node allocates and
/// frees), alive over steps [first, last].
struct PlannedTensor {
  std::size_t node = 0;
  int output = 0;
  std::size_t bytes = 0;  ///< rounded up to the alignment
  std::size_t first = 0, last = 0;
  std::size_t offset = 0; ///< in the workspace
};

/// A static memory plan (see the top of the file).
struct MemoryPlan {
  static constexpr std::size_t alignment = 256;
  std::vector<PlannedTensor> tensors;
  std::size_t workspace_bytes = 0; ///< the peak: the end of the highest placed tensor
  std::size_t total_bytes = 0;     ///< the sum of all planned tensors
  std::size_t lower_bound = 0;     ///< the most bytes alive at one step
  /// "workspace 1.5 MiB for 24 tensors of 6.0 MiB (lower bound 1.5 MiB)".
  std::string str() const;
};

/// Plans the intermediates of `graph` (see the top of the file). Symbolic extents are not
/// plannable: throws ValueError naming the first such tensor.
MemoryPlan plan_memory(const FlowGraph &graph);

/// Places `tensors` (node, output, bytes, first and last set; bytes a multiple of the alignment)
/// greedily by size (see the top of the file) and returns the plan with their offsets, the
/// workspace size, the total and the lower bound.
MemoryPlan place_blocks(std::vector<PlannedTensor> tensors);

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/memory_plan.ipp"
#endif
