// The devices a graph's runs launch on. Internal: included by the graph layer's .ipp files.
#pragma once

#include <algorithm>
#include <vector>

#include "hidet/graph/flow_graph.hpp"

namespace hidet::graph::detail {

/// The cuda devices of the graph's inputs and outputs: where its runs on scratch inputs launch
/// (runtime::ScratchRuns clears what those runs record there).
inline std::vector<Device> graph_devices(const FlowGraph &graph) {
  std::vector<Device> devices;
  auto add = [&](const Tensor &t) {
    if (t.device().is_cuda() && std::find(devices.begin(), devices.end(), t.device()) == devices.end())
      devices.push_back(t.device());
  };
  for (const auto &x : graph.inputs()) add(x);
  for (const auto &y : graph.outputs()) add(y);
  return devices;
}

} // namespace hidet::graph::detail
