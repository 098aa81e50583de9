// Per-operator profile of a graph: where the time of a run goes.
//
// profile(graph, inputs) runs the graph once (building every kernel), then times each node alone
// on its own inputs: the node as a graph of its own, captured as a CUDA graph and replayed
// (CUDA events around repeated replays: the GPU's time for the node's kernels, without the
// host's per-call overhead; on the emulator, host time); a view (a node whose outputs share its
// inputs' storage: a Reshape, a Narrow along the first axis) launches nothing in a compiled graph
// and counts 0 ms. The times are summed per operator name. The table answers "which operators
// cost the time" for a model that is slower than it should be:
//
//   profile: 57 operators, 0.452 ms summed (each node timed alone), NVIDIA H100 80GB HBM3
//   operator          count        ms   share
//   FusedConv2d          53     0.401   88.7%
//   ...
//   slowest nodes:
//     12  FusedConv2d  0.021 ms  float16[1, 256, 56, 56]
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "hidet/graph/flow_graph.hpp"

namespace hidet::graph {

/// The time of one node of a profiled graph.
struct NodeTime {
  std::size_t index = 0; ///< position in FlowGraph::nodes()
  std::string op;        ///< the operator's name
  std::string output;    ///< its first output's type, e.g. "float16[1, 256, 56, 56]"
  double ms = 0;         ///< per run, timed alone
};

/// A graph's profile (see the top of the file).
struct Profile {
  std::vector<NodeTime> nodes; ///< in graph order
  std::string device;
  /// The sum of the nodes' times.
  double total_ms() const;
  /// The table: per operator name (count, ms, share), then the `slowest` slowest nodes.
  std::string str(std::size_t slowest = 10) const;
};

std::ostream &operator<<(std::ostream &os, const Profile &p);

/// Profiles `graph` on `inputs` (see the top of the file).
Profile profile(const FlowGraph &graph, const std::vector<Tensor> &inputs);

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/profile.ipp"
#endif
