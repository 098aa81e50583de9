// check_plan: the law of a static memory plan (graph/memory_plan.hpp), shared by the memory-plan
// and compiled-graph tests: no two blocks alive at one step overlap; offsets are aligned; every
// block lies inside the workspace, which is between the lower bound and the sum of the blocks.
#pragma once

#include "../ops/ops_test_util.hpp"

#include "hidet/graph/memory_plan.hpp"

namespace ops_test {
inline void check_plan(const hidet::graph::MemoryPlan &plan) {
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const auto &a = plan.tensors[i];
    CHECK(a.offset % hidet::graph::MemoryPlan::alignment == 0);
    CHECK(a.offset + a.bytes <= plan.workspace_bytes);
    CHECK(a.first <= a.last);
    for (std::size_t j = i + 1; j < plan.tensors.size(); ++j) {
      const auto &b = plan.tensors[j];
      bool live_together = a.first <= b.last && b.first <= a.last;
      bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (live_together) CHECK_MESSAGE(!overlap, "blocks " << i << " (node " << a.node << ") and " << j << " (node "
                                                   << b.node << ") overlap while both alive");
    }
  }
  CHECK(plan.workspace_bytes >= plan.lower_bound);
  CHECK(plan.workspace_bytes <= plan.total_bytes);
}
} // namespace ops_test
