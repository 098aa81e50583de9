// The graph layer: symbolic tracing of the operator library into FlowGraphs
// (hidet/graph/flow_graph.hpp), passes (graph/passes.hpp) and CUDA graphs (graph/cuda_graph.hpp).
// Includes the operators (hidet/ops.hpp).
#pragma once

// The operators first: in a header-only build their headers must complete before the graph
// layer's (whose .ipp files use them).
#include "hidet/ops.hpp"

#include "hidet/graph/build.hpp"
#include "hidet/graph/compiled_graph.hpp"
#include "hidet/graph/cuda_graph.hpp"
#include "hidet/graph/flow_graph.hpp"
#include "hidet/graph/memory_plan.hpp"
#include "hidet/graph/model.hpp"
#include "hidet/graph/passes.hpp"
#include "hidet/graph/pattern.hpp"
#include "hidet/graph/profile.hpp"
#include "hidet/graph/report.hpp"
#include "hidet/graph/shape_dispatch.hpp"
