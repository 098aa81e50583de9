// Tensor parallelism for a traced graph: shard_tensor_parallel rewrites the graph of a whole model
// into the part one rank computes (Megatron-LM's scheme), each rank running the same pass on the
// same graph with its own communicator:
//
//   FlowGraph g = hidet::trace_from(model(hidet::symbol_like(x)));   // the whole model
//   FlowGraph mine = graph::shard_tensor_parallel(g, comm);          // this rank's part
//   graph::CompiledGraph cg(graph::optimize(mine));                  // then as any graph
//
// - Column-parallel: a Matmul of a replicated activation by a constant [K, N] weight (N a multiple
//   of the world size) keeps the rank's N / world_size columns; its output is sharded along its
//   last axis.
// - Sharding follows the value through element-wise operators (Add, Sub, Mul, Div: a constant
//   operand such as a bias is cut alike; Neg, Abs, Exp, Tanh, Relu, Sigmoid, Silu, Gelu, Cast),
//   Reshape (a sharded axis split into [heads, head_dim] keeps the heads sharded, and merging them
//   back keeps the merged axis sharded), Permute, and ScaledDotProductAttention whose q, k and v
//   are sharded along their heads: attention heads are split between the ranks.
// - Row-parallel: a Matmul of an activation sharded along its last axis by a constant [K, N]
//   weight keeps the rank's K / world_size rows and is followed by an AllReduce (sum): the one
//   all-reduce of a transformer's attention block and of its MLP block. Its output is replicated
//   again, so biases, residuals and norms after it run whole on every rank.
// - Anywhere else a sharded value is needed whole (an operator not listed, a graph output, an
//   extent that does not divide), an AllGather restores it. A group of column-parallel products
//   (those whose values meet in one operator) is sharded only when it reaches a row-parallel
//   product or ends in graph outputs (a vocabulary-parallel LM head); a group that would need
//   gathering inside the graph is left whole.
//
// Every rank must run the pass on the same graph; the result depends only on the graph, the rank
// and the world size. Sharded weights are new constants (the rank's slice, copied); the whole
// weights stay with the input graph. A world of one returns the graph unchanged.
#pragma once

#include <string>

#include "hidet/graph/flow_graph.hpp"
#include "hidet/runtime/distributed.hpp"

namespace hidet::graph {

/// What shard_tensor_parallel did.
struct TensorParallelReport {
  int column_parallel = 0;   ///< products cut by columns
  int row_parallel = 0;      ///< products cut by rows (each followed by an all-reduce)
  int sharded_nodes = 0;     ///< other nodes that run on sharded values
  int all_gathers = 0;       ///< values gathered because a node or an output needs them whole
  int groups_left_whole = 0; ///< groups of column-parallel candidates not sharded (see the top)
  /// "column-parallel 3, row-parallel 1, ... ".
  std::string str() const;
};

/// This rank's part of `graph` (see the top of the file); `report`, when given, says what was
/// sharded. Throws ValueError for an undefined communicator.
FlowGraph shard_tensor_parallel(const FlowGraph &graph, const distributed::Communicator &comm,
                                TensorParallelReport *report = nullptr);

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/tensor_parallel.ipp"
#endif
