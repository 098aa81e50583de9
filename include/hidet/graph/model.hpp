// Model: a saved model file loaded for serving, with no compiler, no tuning and no Python.
//
//   hidet::Model model = hidet::Model::load("resnet50.hidet");   // kernels, weights, programs
//   std::vector<hidet::Tensor> ys = model.run({x});                // on the current stream
//   model.run({x_view}, {y_view}, stream);                         // into memory the caller owns
//
// A model file (written by graph::save_model, CompiledGraph::save or hidet.torch.export) holds
// one or more compiled graphs of the same model, one per set of input shapes (a symbolic batch or
// sequence length exported at several sizes), each recorded at the launch level: every kernel
// launch with its arguments, device copies and fills, each pointer as a place in the inputs, the
// outputs, the workspace or the weights. The file also holds the kernels' cubins (on the CPU
// emulator: their lowered IR, which the emulator runs), the weights once (shared by every shape),
// the names, dtypes and shapes of the inputs and outputs (ModelTensorInfo: a varying extent is -1
// and named), behind a header (format, hidet version, target architecture) and a checksum.
//
// Loading maps the file, checks it, loads the modules (cuModuleLoadData: nothing compiles, NVRTC
// is not loaded), uploads the weights in one copy and, on a GPU, runs each compiled shape once on
// zero inputs (ModelOptions::warm_up). A run finds the program of the inputs'
// shapes, takes a workspace from the model's pool (one is made when all are busy: runs from
// several threads proceed at once, each in its own workspace) and enqueues the program on the
// given stream. On a GPU, each workspace replays each program as a CUDA graph (captured when the
// workspace first runs it; ModelOptions::cuda_graph = false launches kernel by kernel): inputs are
// copied into the graph's buffers and outputs out of them, as the torch.compile path does. A
// workspace last used on another stream is ordered after that work with an event. On the emulator
// every run completes before run() returns. Inputs the model updates in place (a cache,
// ModelTensorInfo::updated) receive their new values in the caller's tensors, as
// CompiledGraph::run writes them.
//
// Errors (ValueError unless said): a file that cannot be read, is not a model file, is truncated
// or corrupt (checksum), was saved by another hidet version (format) or for another GPU
// architecture; inputs of the wrong count, dtype, device or rank, or shapes the file holds no
// program for (the message lists those it holds); outputs given of the wrong dtype or shape;
// null data pointers; a CudaError from the driver. After any of these the model stays usable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hidet/runtime/stream.hpp"
#include "hidet/runtime/tensor.hpp"

namespace hidet::graph {

class CompiledGraph;

/// The name, dtype and shape of a model's input or output.
struct ModelTensorInfo {
  std::string name;
  DataType dtype;
  std::vector<std::int64_t> shape; ///< -1 where the extent varies between compiled shapes
  std::vector<std::string> dims;   ///< per dimension: "" for a constant extent, else its symbol
                                   ///< or expression ("batch", "2*seq")
  bool updated = false; ///< an input the model updates in place (a cache): a run writes its new
                        ///< value into the caller's tensor (FlowGraph::updates)
  /// "x: float32[batch, 3, 224, 224]", with " (updated in place)" for an updated input.
  std::string str() const;
};

/// Options of Model::load.
struct ModelOptions {
  /// On a GPU, replay each program as a CUDA graph per workspace (see the top of the file).
  bool cuda_graph = true;
  /// Workspaces made at load time (each run that finds all of them busy makes one more).
  int workspaces = 1;
  /// On a GPU, run each compiled shape once at load time on zero inputs, so that the first run
  /// pays for none of the driver's first-use work (lazy loading of the kernels, the first launch
  /// of a CUDA graph, the first allocation of the outputs' sizes).
  bool warm_up = true;
};

/// A loaded model file (see the top of the file). Copies share the model; run() may be called
/// from several threads at once.
class Model {
public:
  /// Loads `path` (see the top of the file for the checks).
  static Model load(const std::string &path, ModelOptions options = {});

  const std::vector<ModelTensorInfo> &inputs() const;
  const std::vector<ModelTensorInfo> &outputs() const;
  /// The input shapes the file holds a program for: one entry per program, one shape per input.
  std::vector<std::vector<std::vector<std::int64_t>>> compiled_shapes() const;
  /// The output shapes for inputs of these shapes (a ValueError when no program has them).
  std::vector<std::vector<std::int64_t>>
  output_shapes(const std::vector<std::vector<std::int64_t>> &input_shapes) const;
  /// The kernels' target: a GPU architecture ("sm_90a"), or "emulator".
  const std::string &target() const;
  /// Workspaces made so far (at most the number of runs that were ever in flight at once, per
  /// compiled shape).
  std::size_t num_workspaces() const;

  /// Writes the model to `path` again (its programs, kernels and weights, read back from the
  /// device), atomically as CompiledGraph::save does.
  void save(const std::string &path) const;

  /// Runs on `stream` and returns the outputs (fresh tensors).
  std::vector<Tensor> run(const std::vector<Tensor> &inputs,
                          const Stream &stream = current_stream()) const;
  /// Runs on `stream`, writing the outputs into `outputs` (of the shapes output_shapes() gives,
  /// contiguous; tensor_view() wraps device pointers the caller owns).
  void run(const std::vector<Tensor> &inputs, const std::vector<Tensor> &outputs,
           const Stream &stream = current_stream()) const;

  /// The loaded contents (graph/impl/model.ipp).
  struct State;

private:
  /// The loaded contents; a ValueError for a Model that was never loaded (default-constructed).
  State &state() const;
  std::shared_ptr<State> s_;
};

/// A tensor over memory the caller owns (nothing is copied, nothing is freed): `data` on `device`
/// (a GPU pointer, or host memory on the emulator). A ValueError for a null pointer.
Tensor tensor_view(void *data, const std::vector<std::int64_t> &shape, DataType dtype,
                   Device device = Device::cuda());

/// Writes compiled graphs of one model (one per set of input shapes: the same inputs and outputs
/// in count and dtype) as one model file (see the top of the file); each graph runs once.
/// `inputs` and `outputs` name and shape the model's tensors; when empty they come from the first
/// graph (input names from its graph inputs, extents that differ between the graphs as -1, named
/// after the graph's symbolic dimension when it has one). Throws ValueError for graphs that do not
/// agree or whose work cannot be replayed from a file (see CompiledGraph::save).
void save_model(const std::string &path, const std::vector<CompiledGraph> &graphs,
                std::vector<ModelTensorInfo> inputs = {},
                std::vector<ModelTensorInfo> outputs = {});

} // namespace hidet::graph

namespace hidet {
using graph::Model;
using graph::ModelOptions;
using graph::ModelTensorInfo;
using graph::save_model;
using graph::tensor_view;
} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/graph/compiled_graph.hpp" // save_model's definition (graph/impl/compiled_graph_file.ipp)
#include "hidet/graph/impl/model.ipp"
#endif
