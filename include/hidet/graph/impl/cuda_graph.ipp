// Definitions for hidet/graph/cuda_graph.hpp.
#pragma once

#include "hidet/graph/cuda_graph.hpp"

#include "hidet/error.hpp"
#include "hidet/graph/build.hpp"
#include "hidet/graph/detail/graph_devices.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/device_errors.hpp"
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
} // namespace detail

HIDET_INLINE CudaGraph::CudaGraph(FlowGraph graph) : CudaGraph(CompiledGraph(std::move(graph))) {}

HIDET_INLINE CudaGraph::CudaGraph(CompiledGraph compiled) : CudaGraph(std::move(compiled), {}) {}

HIDET_INLINE CudaGraph::CudaGraph(CompiledGraph compiled, const std::vector<Tensor> &buffers)
    : s_(std::make_unique<State>(std::move(compiled))) {
  const CompiledGraph &g = s_->graph;
  const auto &xs = g.graph().inputs();
  if (buffers.size() > xs.size())
    throw ValueError(str_cat("cuda_graph: ", buffers.size(), " buffers for a graph of ", xs.size(), " inputs"));
  for (std::size_t i = 0; i < xs.size(); ++i) { // the compiled graph's shapes (at its symbol values)
    const Tensor &x = xs[i];
    auto shape = evaluate_shape(x.sym_shape(), g.symbol_values());
    if (i < buffers.size() && buffers[i].defined()) {
      const Tensor &b = buffers[i];
      if (b.is_symbolic() || b.shape() != shape || b.dtype() != x.dtype() || !(b.device() == x.device()))
        throw ValueError(str_cat("cuda_graph: the buffer given for ", detail::input_label(x, i), " is ",
                                 b.is_symbolic() ? "symbolic" : detail::type_str(b), "; it must hold data of the input's shape, "
                                 "dtype and device"));
      s_->inputs.push_back(b);
    } else {
      s_->inputs.push_back(zeros(shape, x.dtype(), x.device()));
    }
  }
  // Runs before the capture work on copies of the updated inputs: capturing updates nothing.
  std::vector<Tensor> scratch = s_->inputs;
  for (std::size_t i : g.graph().updated_inputs()) scratch[i] = s_->inputs[i].clone();
  s_->device = !g.graph().outputs().empty() ? g.graph().outputs()[0].device() : xs[g.graph().updated_inputs()[0]].device();
  bool capturable = s_->device.is_cuda() && !runtime::cuda_emulated();
  for (const auto &x : s_->inputs) capturable = capturable && x.device() == s_->device;
  if (!capturable) { // the emulator: static outputs of a plain run
    runtime::ScratchRuns scratch_run(detail::graph_devices(g.graph())); // zeros for inputs not given
    s_->outputs = g.run(scratch);
    for (auto &o : s_->outputs) o = o.clone(); // not views of the scratch inputs
    return;
  }
  // The compiled graph has run twice already (every kernel is loaded); this run, on the stream
  // captured next, gives the allocator blocks of the outputs' sizes.
  current_stream().synchronize();
  const auto &drv = cuda::driver();
  Stream stream = Stream::create(s_->device, true); // non-blocking: see Stream::create
  StreamGuard guard(stream);
  {
    // Zeros for inputs not given, copies of those updated: what this run finds means nothing.
    runtime::ScratchRuns scratch_run({s_->device});
    std::vector<Tensor> warm = g.run(scratch);
    stream.synchronize();
  }
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
  // The captured buffers' shapes, dtypes and devices are the graph's at its symbol values: inputs
  // alike bind the same values (a few integer compares a call, not bind_symbols' 67 us on a
  // 67-input decoding step); others get bind_symbols' precise error, or this one.
  bool same = inputs.size() == s_->inputs.size();
  for (std::size_t i = 0; same && i < inputs.size(); ++i) {
    const Tensor &x = inputs[i], &b = s_->inputs[i];
    same = x.defined() && !x.is_symbolic() && x.dtype() == b.dtype() && x.device() == b.device() &&
           x.shape() == b.shape();
  }
  if (!same && s_->graph.graph().bind_symbols(inputs) != s_->graph.symbol_values()) // count, dtype, device, shapes
    throw ValueError("cuda_graph: the inputs' shapes are not the ones the graph was captured at; capture one per shape "
                     "(graph::ShapeDispatch with cuda_graph does)");
  for (std::size_t i = 0; i < inputs.size(); ++i) detail::copy_into(s_->inputs[i], inputs[i]);
  std::vector<Tensor> outs = run();
  for (std::size_t i : s_->graph.graph().updated_inputs()) detail::copy_into(inputs[i], s_->inputs[i]);
  return outs;
}

HIDET_INLINE std::vector<Tensor> CudaGraph::run() {
  runtime::check_device_errors(); // what an earlier replay's kernels found (an index out of range)
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
