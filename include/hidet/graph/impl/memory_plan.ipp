// Definitions for hidet/graph/memory_plan.hpp.
#pragma once

#include "hidet/graph/memory_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "hidet/error.hpp"
#include "hidet/graph/detail/tensor_key.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

namespace detail {
inline std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}
} // namespace detail

HIDET_INLINE std::string MemoryPlan::str() const {
  return str_cat("workspace ", detail::mib(workspace_bytes), " for ", tensors.size(), " tensors of ",
                 detail::mib(total_bytes), " (lower bound ", detail::mib(lower_bound), ")");
}

HIDET_INLINE MemoryPlan plan_memory(const FlowGraph &graph) {
  MemoryPlan plan;
  const auto &nodes = graph.nodes();
  std::map<detail::TensorKey, std::size_t> index; // node output -> position in plan.tensors
  std::map<detail::TensorKey, bool> is_output;
  for (const auto &t : graph.outputs()) is_output[detail::key_of(t)] = true;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const auto &op = nodes[k];
    for (const auto &t : op->inputs()) { // extend the lifetimes of what this step reads
      if (!t.is_symbolic()) continue;
      auto it = index.find(detail::key_of(t));
      if (it != index.end()) plan.tensors[it->second].last = k;
    }
    for (int i = 0; i < op->num_outputs(); ++i) {
      detail::TensorKey key{op.get(), i};
      if (is_output.count(key)) continue; // returned to the caller: not in the workspace
      const auto &m = op->output_metas()[std::size_t(i)];
      if (!is_constant_shape(m.shape))
        throw ValueError(str_cat("plan_memory: output ", i, " of graph node ", k, " (", op->name(),
                                 ") has the symbolic shape ", sym_shape_str(m.shape)));
      std::size_t bytes = std::size_t(sym_numel(m.shape).value()) * m.dtype.nbytes();
      bytes = (bytes + MemoryPlan::alignment - 1) / MemoryPlan::alignment * MemoryPlan::alignment;
      index[key] = plan.tensors.size();
      plan.tensors.push_back({k, i, bytes, k, k, 0});
    }
  }
  return place_blocks(std::move(plan.tensors));
}

HIDET_INLINE MemoryPlan place_blocks(std::vector<PlannedTensor> tensors) {
  MemoryPlan plan;
  plan.tensors = std::move(tensors);
  std::size_t steps = 0;
  for (const auto &t : plan.tensors) steps = std::max(steps, t.last + 1);
  // Lower bound and total.
  std::vector<std::size_t> live(steps + 1, 0);
  for (const auto &t : plan.tensors) {
    plan.total_bytes += t.bytes;
    for (std::size_t s = t.first; s <= t.last; ++s) live[s] += t.bytes;
  }
  for (auto b : live) plan.lower_bound = std::max(plan.lower_bound, b);
  // Greedy by size: largest first, lowest free offset among the already placed overlapping ones.
  std::vector<std::size_t> order(plan.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return plan.tensors[a].bytes > plan.tensors[b].bytes; });
  std::vector<std::size_t> placed;
  for (std::size_t i : order) {
    auto &t = plan.tensors[i];
    std::vector<std::pair<std::size_t, std::size_t>> busy; // [begin, end) of overlapping placed tensors
    for (std::size_t j : placed) {
      const auto &u = plan.tensors[j];
      if (u.first <= t.last && t.first <= u.last) busy.push_back({u.offset, u.offset + u.bytes});
    }
    std::sort(busy.begin(), busy.end());
    std::size_t offset = 0;
    for (const auto &[b, e] : busy) {
      if (offset + t.bytes <= b) break;
      offset = std::max(offset, e);
    }
    t.offset = offset;
    plan.workspace_bytes = std::max(plan.workspace_bytes, offset + t.bytes);
    placed.push_back(i);
  }
  return plan;
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
