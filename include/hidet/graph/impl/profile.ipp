// Definitions for hidet/graph/profile.hpp.
#pragma once

#include "hidet/graph/profile.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "hidet/graph/cuda_graph.hpp"
#include "hidet/graph/detail/tensor_key.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/timing.hpp"

#include "hidet/util/cold_begin.hpp"

// Uses detail::type_str of flow_graph.ipp, which src/graph.cpp includes first.

namespace hidet::graph {

HIDET_INLINE double Profile::total_ms() const {
  double t = 0;
  for (const auto &n : nodes) t += n.ms;
  return t;
}

HIDET_INLINE std::string Profile::str(std::size_t slowest) const {
  struct Sum {
    int count = 0;
    double ms = 0;
  };
  std::map<std::string, Sum> by_op;
  for (const auto &n : nodes) ++by_op[n.op].count, by_op[n.op].ms += n.ms;
  std::vector<std::pair<std::string, Sum>> rows(by_op.begin(), by_op.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.second.ms > b.second.ms; });
  double total = total_ms();
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "profile: %zu operators, %.3f ms summed (each node timed alone), %s\n",
                nodes.size(), total, device.c_str());
  os << line;
  std::snprintf(line, sizeof line, "  %-28s %6s %10s %7s\n", "operator", "count", "ms", "share");
  os << line;
  for (const auto &[op, s] : rows) {
    std::snprintf(line, sizeof line, "  %-28s %6d %10.4f %6.1f%%\n", op.c_str(), s.count, s.ms,
                  total > 0 ? 100 * s.ms / total : 0.0);
    os << line;
  }
  std::vector<NodeTime> sorted = nodes;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.ms > b.ms; });
  if (slowest > 0 && !sorted.empty()) os << "  slowest nodes:\n";
  for (std::size_t i = 0; i < std::min(slowest, sorted.size()); ++i) {
    std::snprintf(line, sizeof line, "  %5zu  %-24s %8.4f ms  %s\n", sorted[i].index, sorted[i].op.c_str(),
                  sorted[i].ms, sorted[i].output.c_str());
    os << line;
  }
  return os.str();
}

HIDET_INLINE std::ostream &operator<<(std::ostream &os, const Profile &p) { return os << p.str(); }

HIDET_INLINE Profile profile(const FlowGraph &graph, const std::vector<Tensor> &inputs) {
  auto outs = graph.node_outputs(inputs); // builds every kernel; the values feed the timed nodes
  // A graph of symbolic extents: its nodes, timed alone, see the inputs' symbol values.
  SymbolBinding binding(graph.bind_symbols(inputs));
  std::map<detail::TensorKey, Tensor> env;
  for (std::size_t i = 0; i < inputs.size(); ++i) env[detail::key_of(graph.inputs()[i])] = inputs[i];
  for (std::size_t k = 0; k < graph.nodes().size(); ++k)
    for (std::size_t i = 0; i < outs[k].size(); ++i) env[{graph.nodes()[k].get(), int(i)}] = outs[k][i];
  Profile p;
  const auto &info = runtime::device_info(0);
  p.device = info.emulated ? "CPU emulator" : info.name;
  for (std::size_t k = 0; k < graph.nodes().size(); ++k) {
    const auto &op = graph.nodes()[k];
    NodeTime n;
    n.index = k;
    n.op = op->name();
    n.output = detail::type_str(outs[k].at(0));
    // A node whose outputs all share an input's storage (a Reshape, a Narrow along the first
    // axis) is a view: a compiled graph launches nothing for it. Timed alone it would be a copy
    // into the one-node graph's output (about 1.5 us on the H200), which is not its cost.
    bool view = true;
    for (const auto &o : outs[k]) {
      bool shares = false;
      for (const auto &t : op->inputs()) {
        const Tensor &v = t.is_symbolic() ? env.at(detail::key_of(t)) : t;
        shares = shares || (o.storage() && v.storage() == o.storage());
      }
      view = view && shares;
    }
    if (view) {
      p.nodes.push_back(std::move(n));
      continue;
    }
    // The node alone as a graph of its own, captured as a CUDA graph: replays time the GPU's
    // work without the host's per-call overhead.
    std::map<detail::TensorKey, Tensor> symbol_of;
    std::vector<Tensor> node_ins, graph_ins, values;
    for (const auto &t : op->inputs()) {
      if (!t.is_symbolic()) {
        node_ins.push_back(t);
        continue;
      }
      auto key = detail::key_of(t);
      auto it = symbol_of.find(key);
      if (it == symbol_of.end()) {
        Tensor v = env.at(key);
        it = symbol_of.emplace(key, symbol(to_sym_shape(v.shape()), v.dtype(), v.device(), "x")).first;
        graph_ins.push_back(it->second);
        values.push_back(v);
      }
      node_ins.push_back(it->second);
    }
    FlowGraph one(outputs_of(op->with_inputs(node_ins)), graph_ins);
    CudaGraph cg(one);
    cg.run(values);
    n.ms = median_ms([&] { cg.run(); }, 5, 1.0);
    p.nodes.push_back(std::move(n));
  }
  return p;
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
