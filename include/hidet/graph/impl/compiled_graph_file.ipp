// Definitions for CompiledGraph::save, CompiledGraph::load and graph::save_model: compiled graphs
// recorded into a model file (graph/detail/saved_file.hpp; graph/model.hpp says what it holds).
//
// Saving records one run of each compiled graph at the launch level (runtime/command_hook.hpp):
// every kernel launch with its final arguments, every device copy and fill, in order. Each
// pointer argument is rewritten as (region, offset), where a region is a graph input, a block the
// run allocates (the workspace, the outputs, blocks outside the plan: allocated again by each
// run of the loaded graph), or read-only data (the graph's constants and blocks operators keep
// between runs: their bytes go into the file once, however many programs use them). Tensor maps
// (TMA) are saved as what they are encoded from and encoded again over the loaded graph's memory
// at each launch. Kernel modules are saved once per file: their cubins and, for modules the
// emulator runs, their lowered IR.
//
// A loaded CompiledGraph is a graph of one node ("SavedGraph") that runs a hidet::Model.
#pragma once

#include "hidet/graph/compiled_graph.hpp"

#include <deque>
#include <map>
#include <tuple>

#include "hidet/backend/compile_cache.hpp"
#include "hidet/backend/emulator/program.hpp"
#include "hidet/graph/detail/graph_devices.hpp"
#include "hidet/graph/detail/saved_file.hpp"
#include "hidet/graph/model.hpp"
#include "hidet/ir/serialize.hpp"
#include "hidet/runtime/command_hook.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/detail/kernel_info.hpp"
#include "hidet/runtime/device_errors.hpp"
#include "hidet/runtime/tensor_map.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

namespace detail {

/// A SavedFile under construction: modules, kernels and data blobs (by content) shared between
/// the programs recorded into it.
class FileBuilder {
public:
  SavedFile file;

  std::uint32_t blob(std::string bytes) {
    auto [it, fresh] =
        blob_of_.try_emplace(util::hash128(bytes).hex(), std::uint32_t(file.blobs.size()));
    if (fresh) {
      store_.push_back(std::move(bytes));
      file.blobs.push_back(store_.back());
    }
    return it->second;
  }

  std::uint32_t module(const runtime::detail::KernelShared &shared) {
    auto [it, fresh] = module_of_.try_emplace(shared.key, std::uint32_t(file.modules.size()));
    if (fresh) {
      SavedModule m;
      m.key = shared.key;
      m.name = shared.module_name;
      if (shared.binary) {
        m.arch = shared.binary->arch;
        m.cubin.assign(shared.binary->cubin.begin(), shared.binary->cubin.end());
      }
      if (shared.emulator) m.ir = ir::serialize_module(shared.emulator->module());
      file.modules.push_back(std::move(m));
    }
    return it->second;
  }

  std::uint32_t kernel(std::uint32_t module, const std::string &name) {
    auto [it, fresh] = kernel_of_.try_emplace({module, name}, std::uint32_t(file.kernels.size()));
    if (fresh) file.kernels.emplace_back(module, name);
    return it->second;
  }

private:
  std::deque<std::string> store_; ///< the blobs' bytes (a deque keeps them in place)
  std::map<std::string, std::uint32_t> blob_of_, module_of_;
  std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> kernel_of_;
};

/// Uninstalls the command hook of this thread for its lifetime (the recorder's own copies).
struct NoCommandHook {
  NoCommandHook() : saved(runtime::detail::command_hook()) {
    runtime::detail::command_hook() = nullptr;
  }
  ~NoCommandHook() { runtime::detail::command_hook() = saved; }
  runtime::detail::CommandHook *saved;
};

/// Records a run of a compiled graph into a SavedProgram (see the top of the file).
class RecordProgram : public runtime::detail::CommandHook, public RunObserver {
public:
  RecordProgram(FileBuilder &file, SavedProgram &p, Device device, std::vector<Tensor> constants)
      : file_(file), p_(p), device_(device), constants_(std::move(constants)) {}

  /// Makes [ptr, ptr + nbytes) a region (the latest region holding an address wins).
  std::uint32_t add_region(const void *ptr, std::size_t nbytes, SavedRegion region) {
    region.nbytes = nbytes;
    p_.regions.push_back(std::move(region));
    auto id = std::uint32_t(p_.regions.size() - 1);
    spans_.push_back({reinterpret_cast<std::uintptr_t>(ptr), nbytes, id});
    return id;
  }

  /// Where `ptr` lies (see the top of the file); `what` names its use in errors.
  SavedRef locate(const void *ptr, const std::string &what) {
    if (!ptr) return {};
    auto a = reinterpret_cast<std::uintptr_t>(ptr);
    for (auto it = spans_.rbegin(); it != spans_.rend(); ++it)
      if (a >= it->base && (a < it->base + it->size || (it->size == 0 && a == it->base)))
        return {it->region, a - it->base};
    // The device's error record (a constant of index_put and scatter nodes): the loading process
    // binds its own.
    {
      Tensor rec = runtime::device_error_record(device_.is_cpu() ? Device::cuda() : device_);
      auto b = reinterpret_cast<std::uintptr_t>(rec.data_ptr());
      if (a >= b && a < b + rec.nbytes()) {
        std::uint32_t id = add_region(rec.data_ptr(), rec.nbytes(), {SavedRegion::Kind::errors, 0, rec.nbytes()});
        return {id, a - b};
      }
    }
    // Read-only data: a constant of the graph, or a block an operator keeps between runs.
    const void *base = nullptr;
    std::size_t nbytes = 0;
    for (const auto &c : constants_) {
      const auto &st = c.storage();
      auto b = reinterpret_cast<std::uintptr_t>(st->ptr);
      if (a >= b && a < b + st->nbytes) {
        base = st->ptr;
        nbytes = st->nbytes;
        break;
      }
    }
    const bool constant = base != nullptr; // else an operator's own memory: per-workspace state
    if (!base)
      std::tie(base, nbytes) = [&] {
        auto [q, n] = allocator(device_).find_live(ptr);
        return std::pair<const void *, std::size_t>(q, n);
      }();
    if (!base)
      throw ValueError(
          str_cat("save: ", what, " in graph node ", node_, " (", node_name_,
                  ") points to memory the graph does not own (neither an input, a constant, the "
                  "workspace nor a block of the caching allocator); this graph cannot be saved"));
    std::string bytes(nbytes, '\0');
    {
      NoCommandHook quiet;
      bool host = uses_host_memory(device_);
      runtime::detail::copy_bytes(bytes.data(), Device::cpu(), true, base, device_, host, nbytes);
    }
    std::uint32_t id =
        add_region(base, nbytes, {constant ? SavedRegion::Kind::data : SavedRegion::Kind::state,
                                  file_.blob(std::move(bytes)), 0});
    return {id, a - reinterpret_cast<std::uintptr_t>(base)};
  }

  void node(std::size_t k, const Operator &op) override {
    node_ = k;
    node_name_ = op.name();
  }

  void allocated(const std::shared_ptr<Storage> &s) override {
    if (!s->alloc) return; // served from the workspace (a region already)
    add_region(s->ptr, s->nbytes, {SavedRegion::Kind::scratch, 0, 0});
  }

  void kernel(const KernelHandle &k, backend::Dim3 grid, backend::Dim3 block, std::size_t smem,
              const std::vector<backend::KernelArg> &args,
              const std::vector<const TensorMap *> &maps) override {
    SavedCommand c;
    c.kind = SavedCommand::Kind::kernel;
    c.kernel = file_.kernel(file_.module(*k.shared()), k.name());
    c.grid = grid;
    c.block = block;
    c.smem = smem;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const auto &a = args[i];
      SavedArg s;
      s.kind = a.kind;
      s.dtype = a.dtype;
      auto what = [&] { return str_cat("argument ", i, " of kernel '", k.name(), "'"); };
      switch (a.kind) {
      case backend::KernelArg::Kind::Pointer:
        s.ref = locate(a.ptr, what());
        break;
      case backend::KernelArg::Kind::Int:
        s.i = a.i;
        break;
      case backend::KernelArg::Kind::Float:
        s.f = a.f;
        break;
      case backend::KernelArg::Kind::Bytes: {
        const TensorMap *m = i < maps.size() ? maps[i] : nullptr;
        HIDET_ASSERT(m, "save: a by-value argument that is not a tensor map");
        const auto &spec = m->spec();
        s.dtype = spec.dtype;
        s.ref = locate(spec.address, what() + " (a tensor map)");
        s.shape = spec.shape;
        s.box = spec.box;
        s.swizzle = std::uint8_t(spec.swizzle);
        break;
      }
      }
      c.args.push_back(std::move(s));
    }
    p_.commands.push_back(std::move(c));
  }

  void copy(void *dst, Device dst_dev, const void *src, Device src_dev, std::size_t n) override {
    if (dst_dev.is_cpu() && src_dev.is_cpu()) return; // host work of an operator
    SavedCommand c;
    if (dst_dev.is_cpu())
      throw ValueError(
          str_cat("save: graph node ", node_, " (", node_name_,
                  ") copies device memory to the host during a run (its work depends on values it "
                  "reads back); this graph cannot be saved"));
    c.dst = locate(dst, "a copy's destination");
    c.n = n;
    if (src_dev.is_cpu()) {
      c.kind = SavedCommand::Kind::write;
      c.bytes.assign(static_cast<const char *>(src), n);
    } else {
      c.kind = SavedCommand::Kind::copy;
      c.src = locate(src, "a copy's source");
    }
    p_.commands.push_back(std::move(c));
  }

  void collective(const std::string &name) override {
    throw ValueError(str_cat("save: graph node ", node_, " (", node_name_, ") runs the collective ",
                         name, " with the other ranks of its communicator; a model file replays one "
                         "process's work, so a graph with collectives cannot be saved"));
  }

  void fill(void *dst, Device device, std::uint8_t value, std::size_t n) override {
    if (device.is_cpu()) return;
    SavedCommand c;
    c.kind = SavedCommand::Kind::fill;
    c.dst = locate(dst, "a fill's destination");
    c.n = n;
    c.value = value;
    p_.commands.push_back(std::move(c));
  }

private:
  struct Span {
    std::uintptr_t base;
    std::size_t size;
    std::uint32_t region;
  };
  FileBuilder &file_;
  SavedProgram &p_;
  Device device_;
  std::vector<Tensor> constants_;
  std::vector<Span> spans_;
  std::size_t node_ = 0;
  std::string node_name_;
};

/// Installs a command hook on this thread for its lifetime.
struct CommandHookGuard {
  explicit CommandHookGuard(runtime::detail::CommandHook *h)
      : saved(runtime::detail::command_hook()) {
    runtime::detail::command_hook() = h;
  }
  ~CommandHookGuard() { runtime::detail::command_hook() = saved; }
  runtime::detail::CommandHook *saved;
};

/// What saving needs of a compiled graph's insides.
struct GraphRecorder {
  /// The model a loaded graph runs (null for a compiled one).
  static const Model *loaded(const CompiledGraph &cg) {
    return cg.s_->loaded ? &*cg.s_->loaded : nullptr;
  }
  /// Records one run of `cg` (its graph's inputs at its symbol values) as a program of `file`.
  static SavedProgram record_run(const CompiledGraph &cg, FileBuilder &file);
};

inline SavedProgram GraphRecorder::record_run(const CompiledGraph &cg, FileBuilder &file) {
  const CompiledGraph::State &s = *cg.s_;
  SavedProgram program;
  const FlowGraph &g = s.graph;
  std::vector<Tensor> scratch = scratch_inputs(g, s.symbol_values);
  Device device = s.workspace            ? s.workspace->device
                  : !g.outputs().empty() ? g.outputs()[0].device()
                                         : Device::cuda();
  RecordProgram rec(file, program, device, g.constants());
  for (std::size_t i = 0; i < scratch.size(); ++i) {
    program.input_shapes.push_back(scratch[i].shape());
    rec.add_region(scratch[i].data_ptr(), scratch[i].nbytes(), {SavedRegion::Kind::input, i, 0});
  }
  if (s.workspace) rec.add_region(s.workspace->ptr, s.workspace->nbytes, {});
  std::vector<Tensor> outs;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.ran) s.last_stream.synchronize();
    current_stream().synchronize();
    s.last_stream = current_stream();
    s.ran = true;
    runtime::ScratchRuns scratch_run(graph_devices(g)); // scratch inputs: made-up indices, dropped errors
    CommandHookGuard hook(&rec);
    outs = s.run_nodes(scratch, CompiledGraph::State::Mode::serve, nullptr, nullptr, &rec);
  }
  current_stream().synchronize();
  for (std::size_t i = 0; i < outs.size(); ++i)
    program.outputs.push_back(
        {outs[i].shape(), rec.locate(outs[i].data_ptr(), str_cat("graph output ", i))});
  return program;
}

/// The tensors' infos of a model saved from `graphs` (see save_model): given ones checked against
/// the programs, missing ones made from the first graph.
inline std::vector<ModelTensorInfo>
model_infos(std::vector<ModelTensorInfo> given, const std::vector<Tensor> &tensors,
            const std::vector<std::vector<std::vector<std::int64_t>>> &shapes, const char *kind) {
  if (given.empty()) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      ModelTensorInfo t;
      t.name = kind == std::string("input") && !tensors[i].name().empty() ? tensors[i].name()
                                                                          : str_cat(kind, i);
      t.dtype = tensors[i].dtype();
      const SymShape sym = tensors[i].sym_shape();
      for (std::size_t d = 0; d < sym.size(); ++d) {
        bool same = true;
        for (const auto &p : shapes)
          same = same && p[i][d] == shapes[0][i][d];
        t.shape.push_back(same ? shapes[0][i][d] : -1);
        t.dims.push_back(same                    ? ""
                         : !sym[d].is_constant() ? sym[d].str()
                                                 : str_cat(t.name, "_dim", d));
      }
      given.push_back(std::move(t));
    }
  }
  if (given.size() != tensors.size())
    throw ValueError(str_cat("save_model: ", given.size(), " ", kind, " infos for a model of ",
                             tensors.size(), " ", kind, "s"));
  for (std::size_t i = 0; i < given.size(); ++i) {
    auto &t = given[i];
    if (t.dims.empty()) t.dims.assign(t.shape.size(), "");
    if (t.dtype != tensors[i].dtype() || std::size_t(tensors[i].ndim()) != t.shape.size() ||
        t.dims.size() != t.shape.size())
      throw ValueError(str_cat("save_model: ", kind, " ", i, " (", t.str(),
                               ") does not match the graph's ", tensors[i].dtype().name(),
                               " tensor of rank ", tensors[i].ndim()));
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      for (const auto &p : shapes)
        if (t.shape[d] >= 0 && p[i][d] != t.shape[d])
          throw ValueError(str_cat("save_model: ", kind, " ", i, " (", t.str(), ") has extent ",
                                   t.shape[d], " at dimension ", d, " but a graph has ",
                                   hidet::detail::shape_str(p[i])));
      if (t.shape[d] < 0 && t.dims[d].empty()) t.dims[d] = str_cat(t.name, "_dim", d);
    }
  }
  return given;
}

} // namespace detail

HIDET_INLINE void save_model(const std::string &path, const std::vector<CompiledGraph> &graphs,
                             std::vector<ModelTensorInfo> inputs,
                             std::vector<ModelTensorInfo> outputs) {
  if (graphs.empty()) throw ValueError("save_model: no compiled graph given");
  for (const auto &g : graphs)
    if (const Model *loaded = detail::GraphRecorder::loaded(g)) {
      if (graphs.size() > 1)
        throw ValueError("save_model: a compiled graph loaded from a file saves only by itself "
                         "(CompiledGraph::save)");
      loaded->save(path);
      return;
    }
  detail::FileBuilder b;
  b.file.target = detail::saved_graph_target();
  std::vector<std::vector<std::vector<std::int64_t>>> in_shapes, out_shapes;
  const FlowGraph &first = graphs[0].graph();
  for (std::size_t k = 0; k < graphs.size(); ++k) {
    const FlowGraph &g = graphs[k].graph();
    if (g.inputs().size() != first.inputs().size() || g.outputs().size() != first.outputs().size())
      throw ValueError(str_cat("save_model: graph ", k, " has ", g.inputs().size(), " inputs and ",
                               g.outputs().size(), " outputs, graph 0 has ", first.inputs().size(),
                               " and ", first.outputs().size()));
    for (std::size_t i = 0; i < g.inputs().size(); ++i)
      if (g.inputs()[i].dtype() != first.inputs()[i].dtype() ||
          g.inputs()[i].ndim() != first.inputs()[i].ndim())
        throw ValueError(str_cat("save_model: input ", i, " of graph ", k,
                                 " differs from graph 0's in dtype or rank"));
    for (std::size_t i = 0; i < g.outputs().size(); ++i)
      if (g.outputs()[i].dtype() != first.outputs()[i].dtype() ||
          g.outputs()[i].ndim() != first.outputs()[i].ndim())
        throw ValueError(str_cat("save_model: output ", i, " of graph ", k,
                                 " differs from graph 0's in dtype or rank"));
    b.file.programs.push_back(detail::GraphRecorder::record_run(graphs[k], b));
    const auto &p = b.file.programs.back();
    for (std::size_t j = 0; j < k; ++j)
      if (b.file.programs[j].input_shapes == p.input_shapes)
        throw ValueError(str_cat("save_model: graphs ", j, " and ", k,
                                 " both take inputs of shapes ", detail::shapes_str(p.input_shapes),
                                 "; give one graph per set of input shapes"));
    in_shapes.push_back(p.input_shapes);
    std::vector<std::vector<std::int64_t>> os;
    for (const auto &o : p.outputs)
      os.push_back(o.shape);
    out_shapes.push_back(std::move(os));
  }
  // Modules compiled without a binary (the emulator without NVRTC) carry their IR.
  for (const auto &m : b.file.modules)
    if (!m.arch.empty() && b.file.target != "emulator" && m.arch != b.file.target)
      throw ValueError(str_cat("save_model: kernel module '", m.name, "' was compiled for ", m.arch,
                               ", the GPU is ", b.file.target));
  b.file.inputs = detail::model_infos(std::move(inputs), first.inputs(), in_shapes, "input");
  b.file.outputs = detail::model_infos(std::move(outputs), first.outputs(), out_shapes, "output");
  // The inputs updated in place: the same in every graph, marked in the file.
  for (std::size_t k = 0; k < graphs.size(); ++k)
    if (graphs[k].graph().updated_inputs() != first.updated_inputs())
      throw ValueError(
          str_cat("save_model: graph ", k, " updates other inputs in place than graph 0"));
  for (auto &t : b.file.inputs)
    t.updated = false;
  for (std::size_t i : first.updated_inputs())
    b.file.inputs[i].updated = true;
  if (!backend::detail::write_file_atomic(path, detail::encode_file(b.file)))
    throw Error(str_cat("save: cannot write '", path, "'"));
}

HIDET_INLINE void CompiledGraph::save(const std::string &path) const { save_model(path, {*this}); }

HIDET_INLINE CompiledGraph CompiledGraph::load(const std::string &path) {
  ModelOptions options;
  options.cuda_graph = false; // the compiled graph's own cuda_graph() captures it
  Model model = Model::load(path, options);
  auto shapes = model.compiled_shapes();
  if (shapes.size() != 1)
    throw ValueError(str_cat(
        "load: '", path, "' holds programs for ", shapes.size(),
        " sets of input shapes; a CompiledGraph runs one: load it with hidet::Model::load"));
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < shapes[0].size(); ++i)
    xs.push_back(symbol(to_sym_shape(shapes[0][i]), model.inputs()[i].dtype, Device::cuda(),
                        model.inputs()[i].name));
  std::vector<TensorMeta> metas;
  auto out_shapes = model.output_shapes(shapes[0]);
  for (std::size_t j = 0; j < out_shapes.size(); ++j)
    metas.push_back({to_sym_shape(out_shapes[j]), model.outputs()[j].dtype, Device::cuda()});
  // The inputs it updates: the model writes them; the node returns them as extra outputs, the
  // updates' values (so that a CUDA graph of the loaded graph copies them back).
  std::vector<std::size_t> updated;
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (model.inputs()[i].updated)
      updated.push_back(i), metas.push_back({xs[i].sym_shape(), xs[i].dtype(), Device::cuda()});
  std::vector<Tensor> ys = apply_operator(
      "SavedGraph", xs, metas,
      [model, updated](const std::vector<Tensor> &ins) {
        std::vector<Tensor> outs = model.run(ins, current_stream());
        for (std::size_t i : updated)
          outs.push_back(ins[i]);
        return outs;
      },
      str_cat("file='", path, "', target=", model.target()));
  std::vector<InputUpdate> updates;
  for (std::size_t j = 0; j < updated.size(); ++j)
    updates.push_back({xs[updated[j]], ys[out_shapes.size() + j]});
  ys.resize(out_shapes.size());
  CompiledGraph cg(FlowGraph(ys, xs, std::move(updates)));
  cg.s_->loaded = model;
  return cg;
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
