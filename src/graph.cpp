// libhidet: the graph layer's definitions (compiled mode): FlowGraph, tracing, passes.
#include "hidet/graph/impl/flow_graph.ipp"
#include "hidet/graph/impl/passes.ipp"
