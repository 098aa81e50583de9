// libhidet: the graph layer's definitions (compiled mode): FlowGraph, tracing, passes, CUDA graphs, builds,
// correctness reports, memory plans.
#include "hidet/graph/impl/flow_graph.ipp"
#include "hidet/graph/impl/pattern.ipp"
#include "hidet/graph/impl/passes.ipp"
#include "hidet/graph/impl/merge_matmuls.ipp"
#include "hidet/graph/impl/compiled_graph.ipp"
#include "hidet/graph/impl/compiled_graph_file.ipp"
#include "hidet/graph/impl/cuda_graph.ipp"
#include "hidet/graph/impl/shape_dispatch.ipp"
#include "hidet/graph/impl/build.ipp"
#include "hidet/graph/impl/report.ipp"
#include "hidet/graph/impl/memory_plan.ipp"
#include "hidet/graph/impl/profile.ipp"
