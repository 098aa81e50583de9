// Definitions for hidet/graph/cuda_graph.hpp.
#pragma once

#include "hidet/graph/cuda_graph.hpp"

#include "hidet/error.hpp"
#include "hidet/graph/build.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/stream.hpp"

namespace hidet::graph {

struct CudaGraph::State {
  CompiledGraph graph;
  std::vector<Tensor> inputs, outputs;
  std::vector<std::shared_ptr<Storage>> keep; ///< every block allocated while capturing
  CUgraph cu_graph = nullptr;
  CUgraphExec exec = nullptr;
  Device device;

  explicit State(CompiledGraph g) : graph(std::move(g)) {}
  ~State() {
    if (!cu_graph && !exec) return;
    const auto &drv = cuda::driver_table();
    if (exec) drv.cuGraphExecDestroy(exec);
    if (cu_graph) drv.cuGraphDestroy(cu_graph);
  }
};

namespace detail {
/// Records the storages allocated on this thread while it lives (see capture_keep_list).
struct KeepAllocations {
  explicit KeepAllocations(std::vector<std::shared_ptr<Storage>> *list) {
    runtime::detail::capture_keep_list() = list;
  }
  ~KeepAllocations() { runtime::detail::capture_keep_list() = nullptr; }
};

/// Copies src into dst (same shape and dtype), stream-ordered on the current stream.
inline void copy_into(const Tensor &dst, const Tensor &src) {
  if (dst.storage() == src.storage() && dst.offset() == src.offset()) return;
  runtime::detail::copy_bytes(dst.data_ptr(), dst.device(), dst.is_host_memory(), src.data_ptr(), src.device(),
                              src.is_host_memory(), src.nbytes());
}
} // namespace detail

HIDET_INLINE CudaGraph::CudaGraph(FlowGraph graph) : CudaGraph(CompiledGraph(std::move(graph))) {}

HIDET_INLINE CudaGraph::CudaGraph(CompiledGraph compiled) : s_(std::make_unique<State>(std::move(compiled))) {
  const CompiledGraph &g = s_->graph;
  for (const auto &x : g.graph().inputs()) // the compiled graph's shapes (at its symbol values)
    s_->inputs.push_back(zeros(evaluate_shape(x.sym_shape(), g.symbol_values()), x.dtype(), x.device()));
  s_->device = g.graph().outputs()[0].device();
  bool capturable = s_->device.is_cuda() && !runtime::cuda_emulated();
  for (const auto &x : s_->inputs) capturable = capturable && x.device() == s_->device;
  if (!capturable) { // the emulator: static outputs of a plain run
    s_->outputs = g.run(s_->inputs);
    return;
  }
  // The compiled graph has run twice already (every kernel is loaded); this run, on the stream
  // captured next, gives the allocator blocks of the outputs' sizes.
  current_stream().synchronize();
  const auto &drv = cuda::driver();
  Stream stream = Stream::create(s_->device);
  StreamGuard guard(stream);
  std::vector<Tensor> warm = g.run(s_->inputs);
  stream.synchronize();
  std::vector<Tensor> outs;
  {
    detail::KeepAllocations keep(&s_->keep);
    cuda::check(drv.cuStreamBeginCapture_v2(stream.handle(), CU_STREAM_CAPTURE_MODE_RELAXED),
                "cuda_graph: beginning the stream capture");
    try {
      outs = g.run(s_->inputs);
    } catch (const Error &e) {
      CUgraph partial = nullptr;
      drv.cuStreamEndCapture(stream.handle(), &partial);
      if (partial) drv.cuGraphDestroy(partial);
      throw CudaError(str_cat("cuda_graph: the graph cannot be captured as a CUDA graph (an operator "
                              "synchronizes with the host or allocates outside the stream?): ",
                              e.what()));
    }
  }
  cuda::check(drv.cuStreamEndCapture(stream.handle(), &s_->cu_graph), "cuda_graph: ending the stream capture");
  cuda::check(drv.cuGraphInstantiateWithFlags(&s_->exec, s_->cu_graph, 0), "cuda_graph: instantiating the graph");
  s_->outputs = std::move(outs);
  stream.synchronize();
}

HIDET_INLINE CudaGraph::~CudaGraph() = default;
HIDET_INLINE CudaGraph::CudaGraph(CudaGraph &&) noexcept = default;
HIDET_INLINE CudaGraph &CudaGraph::operator=(CudaGraph &&) noexcept = default;

HIDET_INLINE std::vector<Tensor> CudaGraph::run(const std::vector<Tensor> &inputs) {
  if (s_->graph.graph().bind_symbols(inputs) != s_->graph.symbol_values()) // count, dtype, device, shapes
    throw ValueError("cuda_graph: the inputs' shapes are not the ones the graph was captured at; capture one per shape "
                     "(graph::ShapeDispatch with cuda_graph does)");
  for (std::size_t i = 0; i < inputs.size(); ++i) detail::copy_into(s_->inputs[i], inputs[i]);
  return run();
}

HIDET_INLINE std::vector<Tensor> CudaGraph::run() {
  if (s_->exec) {
    cuda::check(cuda::driver().cuGraphLaunch(s_->exec, current_stream().handle()), "cuda_graph: launching the graph");
    return s_->outputs;
  }
  std::vector<Tensor> outs = s_->graph.run(s_->inputs);
  for (std::size_t i = 0; i < outs.size(); ++i) detail::copy_into(s_->outputs[i], outs[i]);
  return s_->outputs;
}

HIDET_INLINE const std::vector<Tensor> &CudaGraph::inputs() const { return s_->inputs; }
HIDET_INLINE const std::vector<Tensor> &CudaGraph::outputs() const { return s_->outputs; }
HIDET_INLINE bool CudaGraph::captured() const { return s_->exec != nullptr; }

HIDET_INLINE CudaGraph FlowGraph::cuda_graph() const { return CudaGraph(*this); }

} // namespace hidet::graph
