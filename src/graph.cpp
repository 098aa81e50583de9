// libhidet: the graph layer's definitions (compiled mode): FlowGraph, tracing.
#include "hidet/graph/impl/flow_graph.ipp"
