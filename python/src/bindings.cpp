// hidet._C: the Python binding of the C++ library (nanobind). Thin: tensors, symbolic tensors,
// the operators, FlowGraph, optimize, compiled graphs and CUDA graphs (and, in
// bindings_distributed.cpp, communicators and collectives; in bindings_args.cpp, the torch
// backend's record of its call arguments). The Pythonic surface
// (hidet/__init__.py, hidet.torch) is written in Python over it.
//
// Tensors cross to and from other frameworks without copies through DLPack (nb::ndarray):
// from_dlpack(t) views the memory of a torch tensor (kept alive while hidet uses it) and
// Tensor.torch() gives a torch tensor viewing hidet's memory. On the CPU emulator the 'cuda'
// device lives in host memory, so it exchanges CPU tensors.
//
// Errors cross as Python exceptions with the C++ message unchanged: hidet::ValueError as
// ValueError, every other hidet::Error as hidet.HidetError (a RuntimeError).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <sstream>
#include <variant>

#include "hidet/backend/compile_cache.hpp"
#include "python_refs.hpp"
#include "hidet/graph.hpp"
#include "hidet/ops/matmul_templates.hpp"
#include "hidet/ops/tuning.hpp"
#include "hidet/runtime/shared_constants.hpp"
#include "hidet/runtime/stream.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using hidet::DataType;
using hidet::Tensor;
namespace o = hidet::ops;
namespace g = hidet::graph;

namespace {

DataType dtype_of(const std::string &name) {
  DataType dt;
  if (!hidet::parse_dtype(name, dt)) throw hidet::ValueError("unknown dtype '" + name + "'");
  return dt;
}

// DLPack 1.1's codes of the 8-bit floats (PyTorch's float8_e4m3fn and float8_e5m2).
constexpr std::uint8_t kDLFloat8_e4m3fn = 10, kDLFloat8_e5m2 = 12;

nb::dlpack::dtype dlpack_dtype(DataType dt) {
  using nb::dlpack::dtype_code;
  std::uint8_t bits = std::uint8_t(dt.nbytes() * 8);
  if (dt == hidet::dtypes::bf16) return {std::uint8_t(dtype_code::Bfloat), 16, 1};
  if (dt == hidet::dtypes::f8e4m3) return {kDLFloat8_e4m3fn, 8, 1};
  if (dt == hidet::dtypes::f8e5m2) return {kDLFloat8_e5m2, 8, 1};
  if (dt.is_bool()) return {std::uint8_t(dtype_code::Bool), 8, 1};
  if (dt.is_float()) return {std::uint8_t(dtype_code::Float), bits, 1};
  return {std::uint8_t(dt.is_signed() ? dtype_code::Int : dtype_code::UInt), bits, 1};
}

DataType hidet_dtype(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  auto code = dtype_code(d.code);
  std::string name;
  if (code == dtype_code::Float) name = "float" + std::to_string(d.bits);
  else if (code == dtype_code::Bfloat && d.bits == 16) name = "bfloat16";
  else if (d.code == kDLFloat8_e4m3fn && d.bits == 8) name = "float8_e4m3";
  else if (d.code == kDLFloat8_e5m2 && d.bits == 8) name = "float8_e5m2";
  else if (code == dtype_code::Bool) name = "bool";
  else if (code == dtype_code::Int) name = "int" + std::to_string(d.bits);
  else if (code == dtype_code::UInt) name = "uint" + std::to_string(d.bits);
  DataType dt;
  if (d.lanes != 1 || name.empty() || !hidet::parse_dtype(name, dt))
    throw hidet::ValueError("from_dlpack: unsupported element type (DLPack code " + std::to_string(d.code) +
                            ", " + std::to_string(d.bits) + " bits)");
  return dt;
}

/// A hidet tensor viewing a DLPack tensor's memory (c-contiguous; kept alive while used).
Tensor from_dlpack(nb::ndarray<nb::c_contig> a) {
  DataType dt = hidet_dtype(a.dtype());
  std::vector<std::int64_t> shape;
  std::int64_t n = 1;
  for (std::size_t i = 0; i < a.ndim(); ++i) shape.push_back(std::int64_t(a.shape(i))), n *= std::int64_t(a.shape(i));
  hidet::Device device;
  bool host = true;
  if (a.device_type() == nb::device::cuda::value) {
    if (hidet::runtime::cuda_emulated())
      throw hidet::ValueError("from_dlpack: a CUDA tensor was given but hidet runs on the CPU emulator (no GPU "
                              "driver could be loaded)");
    device = hidet::Device::cuda(a.device_id()), host = false;
  } else if (a.device_type() == nb::device::cpu::value) {
    // On the emulator the 'cuda' device lives in host memory: a CPU tensor serves it as it is.
    device = hidet::runtime::cuda_emulated() ? hidet::Device::cuda() : hidet::Device::cpu();
  } else {
    throw hidet::ValueError("from_dlpack: only CPU and CUDA tensors are supported (DLPack device type " +
                            std::to_string(a.device_type()) + ")");
  }
  // The ndarray holds a reference to the producer; release it with the GIL held.
  auto *keep = new nb::ndarray<nb::c_contig>(a);
  std::shared_ptr<const void> owner(keep, [](const void *p) {
    hidet_python::delete_with_gil(static_cast<const nb::ndarray<nb::c_contig> *>(p));
  });
  auto storage = hidet::external_storage(a.data(), std::size_t(n) * dt.nbytes(), device, host, std::move(owner));
  return Tensor(std::move(storage), std::move(shape), dt);
}

/// A torch tensor viewing `t`'s memory.
nb::ndarray<nb::pytorch> to_torch(const Tensor &t) {
  if (t.is_symbolic())
    throw hidet::ValueError("torch(): the tensor is symbolic (it holds no data): " + t.str());
  auto *keep = new std::shared_ptr<hidet::Storage>(t.storage());
  nb::capsule owner(keep, [](void *p) noexcept { delete static_cast<std::shared_ptr<hidet::Storage> *>(p); });
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  int device_type = t.is_host_memory() ? nb::device::cpu::value : nb::device::cuda::value;
  int device_id = t.is_host_memory() ? 0 : t.device().index;
  return nb::ndarray<nb::pytorch>(t.data_ptr(), shape.size(), shape.data(), owner, nullptr, dlpack_dtype(t.dtype()),
                                  device_type, device_id);
}

/// A numpy array viewing `t`'s host memory (t on the cpu device).
nb::ndarray<nb::numpy> to_numpy(const Tensor &t) {
  auto *keep = new std::shared_ptr<hidet::Storage>(t.storage());
  nb::capsule owner(keep, [](void *p) noexcept { delete static_cast<std::shared_ptr<hidet::Storage> *>(p); });
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  return nb::ndarray<nb::numpy>(t.data_ptr(), shape.size(), shape.data(), owner, nullptr, dlpack_dtype(t.dtype()),
                                nb::device::cpu::value, 0);
}

// A shape's extent from Python: an int, a symbol's name or a hidet.Dim.
using Extent = std::variant<std::int64_t, hidet::Dim, std::string>;
hidet::SymShape sym_shape(const std::vector<Extent> &shape) {
  hidet::SymShape out;
  for (const auto &e : shape) {
    if (const auto *v = std::get_if<std::int64_t>(&e)) out.push_back(hidet::Dim(*v));
    else if (const auto *d = std::get_if<hidet::Dim>(&e)) out.push_back(*d);
    else out.push_back(hidet::Dim::symbol(std::get<std::string>(e)));
  }
  return out;
}

/// An extent to Python: an int when constant, else a hidet.Dim.
nb::object py_extent(const hidet::Dim &d) { return d.is_constant() ? nb::cast(d.value()) : nb::cast(d); }

/// The PassContext of the keyword arguments of optimize() and ShapeDispatch().
g::PassContext pass_context(std::optional<std::string> mixed_precision, bool layout_nhwc, bool verbose,
                            const std::string &save_dir, bool tensor_cores, int parallel_k,
                            std::optional<std::string> reduce_precision, bool shape_generic,
                            bool weight_only_int8 = false) {
  g::PassContext ctx;
  ctx.shape_generic = shape_generic;
  ctx.weight_only_int8 = weight_only_int8;
  if (reduce_precision) ctx.reduce_precision = dtype_of(*reduce_precision);
  ctx.tensor_cores = tensor_cores;
  ctx.parallel_k = parallel_k;
  if (mixed_precision) ctx.mixed_precision = dtype_of(*mixed_precision);
  ctx.layout_nhwc = layout_nhwc;
  ctx.verbose = verbose;
  ctx.save_graph_dir = save_dir;
  return ctx;
}

hidet::Stream stream_of(std::uintptr_t handle) {
  if (handle == 0 || hidet::runtime::cuda_emulated()) return hidet::Stream();
  return hidet::Stream::from_handle(reinterpret_cast<void *>(handle));
}

} // namespace

// hidet._C.distributed, the collective operators and shard_tensor_parallel (bindings_distributed.cpp).
void bind_distributed(nb::module_ &m);
// hidet._C.ArgsRecord, the torch backend's checks of its call arguments (bindings_args.cpp).
void bind_args(nb::module_ &m);

NB_MODULE(_C, m) {
  m.doc() = "hidet: the C++ library's binding (see the hidet package)";
  // The operator registry (hidet.torch) keeps references to these functions until the
  // interpreter exits, after nanobind's leak check runs: that is not a leak.
  nb::set_leak_warnings(false);
  static nb::exception<hidet::Error> hidet_error(m, "HidetError", PyExc_RuntimeError);
  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const hidet::ValueError &e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const hidet::Error &e) {
      PyErr_SetString(hidet_error.ptr(), e.what());
    }
  });

  m.def("cuda_emulated", &hidet::runtime::cuda_emulated, "True when the 'cuda' device is the CPU emulator.");
  m.def("synchronize", [] { hidet::synchronize(); });
  m.def("forget_shared_constants", &hidet::forget_shared_constants,
        "Later traces compute the constants they derive from weights again (runtime/shared_constants.hpp).");
  m.def("shared_constants_alive", &hidet::shared_constants_alive);
  m.def(
      "kernel_builds",
      [] {
        std::map<std::string, std::uint64_t> r;
        r["tasks"] = hidet::ops::compiled_task_count();
        r["matmul_symbolic"] = hidet::ops::matmul_rows_builds();
        r["attention_symbolic"] = hidet::ops::attention_symbolic_builds();
        r["conv2d_symbolic"] = hidet::ops::conv2d_symbolic_builds();
        r["nvrtc_compiles"] = hidet::backend::compile_cache_stats().compiles;
        return r;
      },
      "Kernels built so far in this process: task kernels, matmul templates over symbolic rows, "
      "attention templates over symbolic sizes, conv2d templates over a symbolic batch, and NVRTC compiles.");

  // hidet::Dim: a symbolic extent ("n", "n*s") with Python's integer arithmetic (// floors).
  using hidet::Dim;
  nb::class_<Dim>(m, "Dim")
      .def(nb::init<std::int64_t>(), "value"_a)
      .def("__init__", [](Dim *self, const std::string &name) { new (self) Dim(Dim::symbol(name)); }, "name"_a)
      .def_prop_ro("is_constant", &Dim::is_constant)
      .def_prop_ro("symbols", &Dim::symbols)
      .def("evaluate", &Dim::evaluate, "values"_a, "The value with each symbol given its value ({'n': 4}).")
      .def("__int__", &Dim::value)
      .def("__index__", &Dim::value)
      .def("__add__", [](const Dim &a, const Dim &b) { return py_extent(a + b); })
      .def("__radd__", [](const Dim &a, const Dim &b) { return py_extent(b + a); })
      .def("__sub__", [](const Dim &a, const Dim &b) { return py_extent(a - b); })
      .def("__rsub__", [](const Dim &a, const Dim &b) { return py_extent(b - a); })
      .def("__mul__", [](const Dim &a, const Dim &b) { return py_extent(a * b); })
      .def("__rmul__", [](const Dim &a, const Dim &b) { return py_extent(b * a); })
      .def("__floordiv__", [](const Dim &a, const Dim &b) { return py_extent(a / b); })
      .def("__rfloordiv__", [](const Dim &a, const Dim &b) { return py_extent(b / a); })
      .def("__mod__", [](const Dim &a, const Dim &b) { return py_extent(a % b); })
      .def("__rmod__", [](const Dim &a, const Dim &b) { return py_extent(b % a); })
      .def("__neg__", [](const Dim &a) { return py_extent(-a); })
      .def("__eq__", [](const Dim &a, const Dim &b) { return a == b; })
      .def("__eq__", [](const Dim &a, const std::string &b) { return a.str() == b; })
      .def("__ne__", [](const Dim &a, const Dim &b) { return a != b; })
      .def("__ne__", [](const Dim &a, const std::string &b) { return a.str() != b; })
      .def("__hash__", [](const Dim &a) { return std::hash<std::string>()(a.str()); })
      .def("__str__", &Dim::str)
      .def("__repr__", &Dim::str);
  nb::implicitly_convertible<std::int64_t, Dim>();

  nb::class_<Tensor>(m, "Tensor")
      .def_prop_ro("shape",
                   [](const Tensor &t) {
                     if (t.is_symbolic()) {
                       std::vector<nb::object> out;
                       for (const auto &d : t.sym_shape()) out.push_back(py_extent(d));
                       return nb::tuple(nb::cast(out));
                     }
                     return nb::tuple(nb::cast(t.shape()));
                   })
      .def_prop_ro("dtype", [](const Tensor &t) { return std::string(t.dtype().name()); })
      .def_prop_ro("device", [](const Tensor &t) { return t.device().str(); })
      .def_prop_ro("ndim", &Tensor::ndim)
      .def_prop_ro("is_symbolic", &Tensor::is_symbolic)
      .def_prop_ro("name", [](const Tensor &t) { return t.name(); })
      .def_prop_ro("op", [](const Tensor &t) -> std::optional<std::string> {
        auto tr = t.trace();
        if (!tr) return std::nullopt;
        return tr.op->name();
      })
      .def_prop_ro("trace", [](const Tensor &t) -> std::optional<std::pair<std::string, int>> {
        auto tr = t.trace();
        if (!tr) return std::nullopt;
        return std::make_pair(tr.op->name(), tr.index);
      }, "How a symbolic tensor is computed: (the operator's name, the output's index), or None for a "
         "graph input or a tensor with data (Hidet's Tensor.trace).")
      .def("torch", &to_torch, "A torch tensor viewing this tensor's memory (no copy).")
      .def("numpy", [](const Tensor &t) { return to_numpy(t.cpu()); }, "A numpy array of the values (a copy on the host).")
      .def("cpu", &Tensor::cpu)
      .def("cuda", [](const Tensor &t) { return t.cuda(); })
      .def("to", [](const Tensor &t, const std::string &dev) { return t.to(hidet::Device(dev)); })
      .def("clone", &Tensor::clone)
      .def("reshape", [](const Tensor &t, const std::vector<Extent> &s) {
        hidet::SymShape shape = sym_shape(s);
        return hidet::is_constant_shape(shape) ? t.reshape(hidet::constant_shape(shape)) : t.reshape(shape);
      })
      .def("to_list", &Tensor::to_double_vector)
      .def("__repr__", [](const Tensor &t) {
        std::ostringstream os;
        os << t;
        return os.str();
      })
      .def("signature", [](const Tensor &t) { return t.str(); });

  // Creation.
  auto dev_default = "cuda";
  m.def("randn", [](std::vector<std::int64_t> s, const std::string &dt, const std::string &dev) {
    return hidet::randn(s, dtype_of(dt), hidet::Device(dev));
  }, "shape"_a, "dtype"_a = "float32", "device"_a = dev_default);
  m.def("zeros", [](std::vector<std::int64_t> s, const std::string &dt, const std::string &dev) {
    return hidet::zeros(s, dtype_of(dt), hidet::Device(dev));
  }, "shape"_a, "dtype"_a = "float32", "device"_a = dev_default);
  m.def("ones", [](std::vector<std::int64_t> s, const std::string &dt, const std::string &dev) {
    return hidet::ones(s, dtype_of(dt), hidet::Device(dev));
  }, "shape"_a, "dtype"_a = "float32", "device"_a = dev_default);
  m.def("full", [](std::vector<std::int64_t> s, double v, const std::string &dt, const std::string &dev) {
    return o::full(s, v, dtype_of(dt), hidet::Device(dev));
  }, "shape"_a, "value"_a, "dtype"_a = "float32", "device"_a = dev_default);
  m.def("asarray", [](const std::vector<double> &v, std::vector<std::int64_t> s, const std::string &dt,
                      const std::string &dev) { return hidet::asarray(v, s, dtype_of(dt), hidet::Device(dev)); },
        "values"_a, "shape"_a, "dtype"_a = "float32", "device"_a = dev_default);
  m.def("arange", [](double a, double b, double step, const std::string &dt, const std::string &dev) {
    return o::arange(a, b, step, dtype_of(dt), hidet::Device(dev));
  }, "start"_a, "stop"_a, "step"_a = 1.0, "dtype"_a = "int64", "device"_a = dev_default);
  m.def("from_dlpack", &from_dlpack, "array"_a, "A hidet tensor viewing a DLPack tensor's memory (no copy).");
  m.def("manual_seed", &hidet::manual_seed);
  m.def("set_search_space", [](int space) { hidet::option::search_space(space); }, "space"_a,
        "Template tuning: 0 (default configurations), 1 or 2 (tune a small or large space per shape).");
  m.def("search_space", [] { return hidet::option::search_space(); });
  m.def("set_tuning_budget", [](double seconds) { hidet::option::tuning_budget(seconds); }, "seconds"_a,
        "At most this many seconds of tuning from now (infinity: no limit); keys left when it is spent keep "
        "their default configuration.");
  m.def("tuning_budget", [] { return hidet::option::tuning_budget(); });

  // Symbolic tensors and graphs.
  m.def("symbol", [](const std::vector<Extent> &shape, const std::string &dt, const std::string &dev,
                     const std::string &name) { return hidet::symbol(sym_shape(shape), dtype_of(dt), hidet::Device(dev), name); },
        "shape"_a, "dtype"_a = "float32", "device"_a = dev_default, "name"_a = "x");
  m.def("symbol_like", [](const Tensor &t, const std::string &name) { return hidet::symbol_like(t, name); }, "t"_a,
        "name"_a = "x");

  nb::class_<g::FlowGraph>(m, "FlowGraph")
      .def_prop_ro("inputs", &g::FlowGraph::inputs)
      .def_prop_ro("outputs", &g::FlowGraph::outputs)
      .def_prop_ro("num_nodes", [](const g::FlowGraph &fg) { return fg.nodes().size(); })
      .def("node_names", [](const g::FlowGraph &fg) {
        std::vector<std::string> out;
        for (const auto &n : fg.nodes()) out.push_back(n->name());
        return out;
      })
      .def_prop_ro("updates", [](const g::FlowGraph &fg) {
        std::vector<std::pair<Tensor, Tensor>> out;
        for (const auto &u : fg.updates()) out.emplace_back(u.input, u.value);
        return out;
      }, "The inputs updated in place, as (input, new value) pairs.")
      .def("run", &g::FlowGraph::run, "inputs"_a)
      .def("specialize", &g::FlowGraph::specialize, "values"_a,
           "The graph traced again with each symbol given its value ({'n': 4}): constant shapes.")
      .def_prop_ro("has_symbolic_extents", &g::FlowGraph::has_symbolic_extents)
      .def("node_symbols", &g::FlowGraph::node_symbols,
           "The symbols in the extents of the tensors the nodes take and make (those the graph "
           "depends on).")
      .def("__str__", &g::FlowGraph::str)
      .def("__repr__", &g::FlowGraph::str)
      .def("dot", &g::FlowGraph::dot);
  m.def("trace_from", [](std::vector<Tensor> outs, std::vector<Tensor> ins, std::vector<std::pair<Tensor, Tensor>> ups) {
    std::vector<g::InputUpdate> updates;
    for (auto &[x, v] : ups) updates.push_back({x, v});
    return g::FlowGraph(outs, ins, std::move(updates));
  }, "outputs"_a, "inputs"_a = std::vector<Tensor>{}, "updates"_a = std::vector<std::pair<Tensor, Tensor>>{});
  m.def("optimize", [](const g::FlowGraph &fg, std::optional<std::string> mixed_precision, bool layout_nhwc,
                       bool verbose, const std::string &save_dir, bool tensor_cores, int parallel_k,
                       std::optional<std::string> reduce_precision, bool shape_generic, bool weight_only_int8) {
    return g::optimize(fg, pass_context(mixed_precision, layout_nhwc, verbose, save_dir, tensor_cores, parallel_k,
                                        reduce_precision, shape_generic, weight_only_int8));
  }, "graph"_a, "mixed_precision"_a = nb::none(), "layout_nhwc"_a = true, "verbose"_a = false, "save_dir"_a = "",
     "tensor_cores"_a = true, "parallel_k"_a = 0, "reduce_precision"_a = nb::none(), "shape_generic"_a = false,
     "weight_only_int8"_a = false);

  nb::class_<g::CompiledGraph>(m, "CompiledGraph")
      .def(nb::init<g::FlowGraph>(), "graph"_a)
      .def("run", [](const g::CompiledGraph &cg, const std::vector<Tensor> &xs, std::uintptr_t stream) {
        return cg.run(xs, stream_of(stream));
      }, "inputs"_a, "stream"_a = 0)
      .def_prop_ro("graph", &g::CompiledGraph::graph)
      .def_prop_ro("workspace_bytes", &g::CompiledGraph::workspace_bytes)
      .def("memory_plan", [](const g::CompiledGraph &cg) { return cg.memory_plan().str(); })
      .def_prop_ro("compile_seconds", [](const g::CompiledGraph &cg) { return cg.stats().compile_seconds; })
      .def_prop_ro("updates_in_place", [](const g::CompiledGraph &cg) { return cg.stats().updates_in_place; },
                   "Input updates whose value the graph makes in the input's memory.")
      .def_prop_ro("runs", [](const g::CompiledGraph &cg) { return cg.stats().runs; }, "Runs so far.")
      .def_prop_ro("unplanned_runs", [](const g::CompiledGraph &cg) { return cg.stats().unplanned_runs; },
                   "Runs so far at other symbol values than compiled for (a ShapeDispatch bucket's "
                   "other shapes).")
      .def_prop_ro("updates_copied", [](const g::CompiledGraph &cg) { return cg.stats().updates_copied; },
                   "Input updates copied into the input after the nodes ran.")
      .def("save", &g::CompiledGraph::save, "path"_a)
      .def_static("load", &g::CompiledGraph::load, "path"_a);

  nb::class_<g::CudaGraph>(m, "CudaGraph")
      .def("__init__", [](g::CudaGraph *self, const g::CompiledGraph &cg, std::vector<std::optional<Tensor>> buffers) {
        std::vector<Tensor> bufs;
        for (auto &b : buffers) bufs.push_back(b ? *b : Tensor());
        new (self) g::CudaGraph(cg, bufs);
      }, "compiled"_a, "buffers"_a = std::vector<std::optional<Tensor>>{})
      .def("run", [](g::CudaGraph &cg, const std::vector<Tensor> &xs, std::uintptr_t stream) {
        hidet::StreamGuard guard(stream_of(stream));
        return cg.run(xs);
      }, "inputs"_a, "stream"_a = 0)
      .def_prop_ro("captured", &g::CudaGraph::captured);

  nb::class_<g::ShapeDispatch>(m, "ShapeDispatch")
      .def("__init__", [](g::ShapeDispatch *self, const g::FlowGraph &graph, std::optional<std::string> mixed_precision,
                          bool layout_nhwc, bool verbose, bool tensor_cores, int parallel_k,
                          std::optional<std::string> reduce_precision, bool shape_generic, bool cuda_graph,
                          std::size_t max_shapes, bool buckets, std::size_t own_plan_after,
                          bool weight_only_int8) {
        g::DispatchOptions options;
        options.pass_context = pass_context(mixed_precision, layout_nhwc, verbose, "", tensor_cores, parallel_k,
                                            reduce_precision, shape_generic, weight_only_int8);
        options.shape_generic = shape_generic;
        options.cuda_graph = cuda_graph;
        options.max_shapes = max_shapes;
        options.buckets = buckets;
        options.own_plan_after = own_plan_after;
        new (self) g::ShapeDispatch(graph, options);
      }, "graph"_a, "mixed_precision"_a = nb::none(), "layout_nhwc"_a = true, "verbose"_a = false,
         "tensor_cores"_a = true, "parallel_k"_a = 0, "reduce_precision"_a = nb::none(), "shape_generic"_a = false,
         "cuda_graph"_a = false, "max_shapes"_a = 64, "buckets"_a = false, "own_plan_after"_a = 3,
         "weight_only_int8"_a = false)
      .def("run", [](g::ShapeDispatch &d, const std::vector<Tensor> &xs, std::uintptr_t stream) {
        hidet::StreamGuard guard(stream_of(stream));
        return d.run(xs);
      }, "inputs"_a, "stream"_a = 0)
      .def("prepare", [](g::ShapeDispatch &d, const std::vector<Tensor> &xs) { (void)d.compiled_for(xs); }, "inputs"_a,
           "Compiles (and with cuda_graph captures) the shape of `inputs` without running it: a CUDA graph "
           "captures the inputs the graph updates where they live.")
      .def_prop_ro("num_compiled", &g::ShapeDispatch::num_compiled)
      .def_prop_ro("num_compilations", &g::ShapeDispatch::num_compilations)
      .def_prop_ro("num_shared_runs", &g::ShapeDispatch::num_shared_runs)
      .def("generic_graph", [](g::ShapeDispatch &d) { return d.generic_graph(); })
      .def("compiled_for", [](g::ShapeDispatch &d, const std::vector<Tensor> &xs) { return d.compiled_for(xs); },
           "inputs"_a, "The compiled graph for inputs of these shapes (compiled now when new).");

  // Saved models (graph/model.hpp): a ModelTensorInfo crosses as (name, dtype, shape, dims).
  using Info = std::tuple<std::string, std::string, std::vector<std::int64_t>, std::vector<std::string>>;
  auto to_info = [](const Info &t) {
    return g::ModelTensorInfo{std::get<0>(t), dtype_of(std::get<1>(t)), std::get<2>(t), std::get<3>(t)};
  };
  auto from_info = [](const g::ModelTensorInfo &t) {
    return Info{t.name, std::string(t.dtype.name()), t.shape, t.dims};
  };
  m.def("save_model", [to_info](const std::string &path, const std::vector<g::CompiledGraph> &graphs,
                                const std::vector<Info> &inputs, const std::vector<Info> &outputs) {
    std::vector<g::ModelTensorInfo> ins, outs;
    for (const auto &t : inputs) ins.push_back(to_info(t));
    for (const auto &t : outputs) outs.push_back(to_info(t));
    g::save_model(path, graphs, ins, outs);
  }, "path"_a, "graphs"_a, "inputs"_a = std::vector<Info>{}, "outputs"_a = std::vector<Info>{});
  nb::class_<g::Model>(m, "Model")
      .def_static("load", [](const std::string &path, bool cuda_graph, int workspaces, bool warm_up) {
        g::ModelOptions options;
        options.cuda_graph = cuda_graph;
        options.workspaces = workspaces;
        options.warm_up = warm_up;
        return g::Model::load(path, options);
      }, "path"_a, "cuda_graph"_a = true, "workspaces"_a = 1, "warm_up"_a = true)
      .def_prop_ro("inputs", [from_info](const g::Model &md) {
        std::vector<Info> r;
        for (const auto &t : md.inputs()) r.push_back(from_info(t));
        return r;
      })
      .def_prop_ro("outputs", [from_info](const g::Model &md) {
        std::vector<Info> r;
        for (const auto &t : md.outputs()) r.push_back(from_info(t));
        return r;
      })
      .def_prop_ro("target", &g::Model::target)
      .def_prop_ro("updated_inputs", [](const g::Model &md) {
        std::vector<std::size_t> r;
        for (std::size_t i = 0; i < md.inputs().size(); ++i)
          if (md.inputs()[i].updated) r.push_back(i);
        return r;
      }, "The positions of the inputs a run updates in place (a cache).")
      .def_prop_ro("num_workspaces", &g::Model::num_workspaces)
      .def("compiled_shapes", &g::Model::compiled_shapes)
      .def("run", [](const g::Model &md, const std::vector<Tensor> &xs, std::uintptr_t stream) {
        return md.run(xs, stream_of(stream));
      }, "inputs"_a, "stream"_a = 0)
      .def("save", &g::Model::save, "path"_a);

  m.def("profile", [](const g::FlowGraph &graph, const std::vector<Tensor> &xs, std::size_t slowest) {
    auto p = g::profile(graph, xs);
    return nb::make_tuple(p.str(slowest), p.total_ms());
  }, "graph"_a, "inputs"_a, "slowest"_a = 10);
  m.def("correctness_report", [](const g::FlowGraph &graph, const g::FlowGraph &opt, const std::vector<Tensor> &xs) {
    auto r = g::correctness_report(graph, opt, xs);
    return std::make_pair(r.str(), r.max_error());
  }, "graph"_a, "optimized"_a, "inputs"_a);

  // Operators (hidet::ops). Scalars keep PyTorch's weak typing: an int or float operand does not
  // change the tensor's dtype.
  auto ops = m.def_submodule("ops", "hidet's operators");
#define HIDET_PY_BINARY(name)                                                                      \
  ops.def(#name, [](const Tensor &a, const Tensor &b) { return o::name(a, b); });                  \
  ops.def(#name, [](const Tensor &a, int s) { return o::name(a, s); });                            \
  ops.def(#name, [](const Tensor &a, double s) { return o::name(a, s); });                         \
  ops.def(#name, [](int s, const Tensor &a) { return o::name(s, a); });                            \
  ops.def(#name, [](double s, const Tensor &a) { return o::name(s, a); });
  HIDET_PY_BINARY(add)
  HIDET_PY_BINARY(sub)
  HIDET_PY_BINARY(mul)
  HIDET_PY_BINARY(div)
  HIDET_PY_BINARY(maximum)
  HIDET_PY_BINARY(minimum)
  HIDET_PY_BINARY(pow)
  HIDET_PY_BINARY(atan2)
  HIDET_PY_BINARY(fmod)
  HIDET_PY_BINARY(remainder)
  HIDET_PY_BINARY(floor_divide)
#undef HIDET_PY_BINARY
#define HIDET_PY_BITWISE(name)                                                                     \
  ops.def(#name, [](const Tensor &a, const Tensor &b) { return o::name(a, b); });                  \
  ops.def(#name, [](const Tensor &a, int s) { return o::name(a, s); });                            \
  ops.def(#name, [](int s, const Tensor &a) { return o::name(s, a); });
  HIDET_PY_BITWISE(bitwise_and)
  HIDET_PY_BITWISE(bitwise_or)
  HIDET_PY_BITWISE(bitwise_xor)
  HIDET_PY_BITWISE(bitwise_left_shift)
  HIDET_PY_BITWISE(bitwise_right_shift)
#undef HIDET_PY_BITWISE
#define HIDET_PY_COMPARE(name)                                                                     \
  ops.def(#name, [](const Tensor &a, const Tensor &b) { return o::name(a, b); });                  \
  ops.def(#name, [](const Tensor &a, double s) { return o::name(a, s); });
  HIDET_PY_COMPARE(eq)
  HIDET_PY_COMPARE(ne)
  HIDET_PY_COMPARE(lt)
  HIDET_PY_COMPARE(le)
  HIDET_PY_COMPARE(gt)
  HIDET_PY_COMPARE(ge)
#undef HIDET_PY_COMPARE
#define HIDET_PY_UNARY(name) ops.def(#name, [](const Tensor &x) { return o::name(x); });
  HIDET_PY_UNARY(exp)
  HIDET_PY_UNARY(log)
  HIDET_PY_UNARY(sqrt)
  HIDET_PY_UNARY(rsqrt)
  HIDET_PY_UNARY(reciprocal)
  HIDET_PY_UNARY(sin)
  HIDET_PY_UNARY(cos)
  HIDET_PY_UNARY(tanh)
  HIDET_PY_UNARY(erf)
  HIDET_PY_UNARY(sigmoid)
  HIDET_PY_UNARY(silu)
  HIDET_PY_UNARY(neg)
  HIDET_PY_UNARY(abs)
  HIDET_PY_UNARY(relu)
  HIDET_PY_UNARY(floor)
  HIDET_PY_UNARY(ceil)
  HIDET_PY_UNARY(round)
  HIDET_PY_UNARY(logical_not)
  HIDET_PY_UNARY(tan)
  HIDET_PY_UNARY(asin)
  HIDET_PY_UNARY(acos)
  HIDET_PY_UNARY(atan)
  HIDET_PY_UNARY(sinh)
  HIDET_PY_UNARY(cosh)
  HIDET_PY_UNARY(asinh)
  HIDET_PY_UNARY(acosh)
  HIDET_PY_UNARY(atanh)
  HIDET_PY_UNARY(log1p)
  HIDET_PY_UNARY(expm1)
  HIDET_PY_UNARY(log2)
  HIDET_PY_UNARY(log10)
  HIDET_PY_UNARY(exp2)
  HIDET_PY_UNARY(erfinv)
  HIDET_PY_UNARY(erfc)
  HIDET_PY_UNARY(trunc)
  HIDET_PY_UNARY(sign)
  HIDET_PY_UNARY(bitwise_not)
#undef HIDET_PY_UNARY
  ops.def("gelu", [](const Tensor &x, bool tanh) { return o::gelu(x, tanh); }, "x"_a, "approximate_tanh"_a = false);
  ops.def("leaky_relu", [](const Tensor &x, double s) { return o::leaky_relu(x, s); }, "x"_a, "slope"_a = 0.01);
  ops.def("clamp", [](const Tensor &x, double lo, double hi) { return o::clamp(x, lo, hi); });
  ops.def("cast", [](const Tensor &x, const std::string &dt) { return o::cast(x, dtype_of(dt)); });
  ops.def("where", [](const Tensor &c, const Tensor &a, const Tensor &b) { return o::where(c, a, b); });
  ops.def("logical_and", [](const Tensor &a, const Tensor &b) { return o::logical_and(a, b); });
  ops.def("logical_or", [](const Tensor &a, const Tensor &b) { return o::logical_or(a, b); });
  ops.def("logical_xor", [](const Tensor &a, const Tensor &b) { return o::logical_xor(a, b); });
#define HIDET_PY_REDUCE(name)                                                                      \
  ops.def(#name, [](const Tensor &x, std::vector<int> axes, bool keep) { return o::name(x, axes, keep); }, "x"_a, \
          "axes"_a = std::vector<int>{}, "keepdims"_a = false);
  HIDET_PY_REDUCE(sum)
  HIDET_PY_REDUCE(mean)
  HIDET_PY_REDUCE(max)
  HIDET_PY_REDUCE(min)
  HIDET_PY_REDUCE(prod)
  HIDET_PY_REDUCE(any)
  HIDET_PY_REDUCE(all)
#undef HIDET_PY_REDUCE
  ops.def("isnan", [](const Tensor &x) { return o::isnan(x); });
  ops.def("var", [](const Tensor &x, std::vector<int> axes, bool keep, int correction) {
    return o::var(x, axes, keep, correction);
  }, "x"_a, "axes"_a = std::vector<int>{}, "keepdims"_a = false, "correction"_a = 1);
  ops.def("argmax", [](const Tensor &x, int axis, bool keep) { return o::argmax(x, axis, keep); }, "x"_a, "axis"_a,
          "keepdims"_a = false);
  ops.def("argmin", [](const Tensor &x, int axis, bool keep) { return o::argmin(x, axis, keep); }, "x"_a, "axis"_a,
          "keepdims"_a = false);
  ops.def("cumsum", [](const Tensor &x, int axis) { return o::cumsum(x, axis); }, "x"_a, "axis"_a);
  ops.def("solve_triangular",
          [](const Tensor &a, const Tensor &b, bool upper, bool left, bool unit) {
            return o::solve_triangular(a, b, upper, left, unit);
          },
          "a"_a, "b"_a, "upper"_a, "left"_a = true, "unitriangular"_a = false);
  ops.def("cumprod", [](const Tensor &x, int axis) { return o::cumprod(x, axis); }, "x"_a, "axis"_a);
  ops.def("cummax", [](const Tensor &x, int axis) { return o::cummax(x, axis); }, "x"_a, "axis"_a,
          "(values, indices): the running maximum along axis and where it was taken.");
  ops.def("cummin", [](const Tensor &x, int axis) { return o::cummin(x, axis); }, "x"_a, "axis"_a,
          "(values, indices): the running minimum along axis and where it was taken.");
  ops.def("sort", [](const Tensor &x, int axis, bool descending, bool stable) { return o::sort(x, axis, descending, stable); },
          "x"_a, "axis"_a = -1, "descending"_a = false, "stable"_a = true,
          "(values, indices) of x sorted along axis (stable; NaN is the largest value).");
  ops.def("argsort", [](const Tensor &x, int axis, bool descending, bool stable) {
    return o::argsort(x, axis, descending, stable);
  }, "x"_a, "axis"_a = -1, "descending"_a = false, "stable"_a = true);
  ops.def("topk", [](const Tensor &x, std::int64_t k, int axis, bool largest, bool sorted) {
    return o::topk(x, k, axis, largest, sorted);
  }, "x"_a, "k"_a, "axis"_a = -1, "largest"_a = true, "sorted"_a = true,
     "(values, indices) of the k largest (or smallest) elements along axis, in sorted order.");
  ops.def("searchsorted", [](const Tensor &seq, const Tensor &v, bool right) { return o::searchsorted(seq, v, right); },
          "sorted_sequence"_a, "values"_a, "right"_a = false);
  ops.def("bucketize", [](const Tensor &x, const Tensor &b, bool right) { return o::bucketize(x, b, right); }, "x"_a,
          "boundaries"_a, "right"_a = false);
  // scatter's reduce as PyTorch spells it: None, 'add' or 'sum', 'amax', 'amin'.
  auto scatter_reduce = [](const std::optional<std::string> &r) {
    if (!r || *r == "none") return o::ScatterReduce::None;
    if (*r == "add" || *r == "sum") return o::ScatterReduce::Add;
    if (*r == "amax") return o::ScatterReduce::Max;
    if (*r == "amin") return o::ScatterReduce::Min;
    throw hidet::ValueError("scatter: reduce='" + *r + "' is not supported; use None, 'add' (or 'sum'), 'amax' or 'amin'");
  };
  ops.def("scatter", [scatter_reduce](const Tensor &x, int axis, const Tensor &index, std::variant<Tensor, double> src,
                                      std::optional<std::string> reduce) {
    if (auto *v = std::get_if<double>(&src)) return o::scatter(x, axis, index, *v, scatter_reduce(reduce));
    return o::scatter(x, axis, index, std::get<Tensor>(src), scatter_reduce(reduce));
  }, "x"_a, "axis"_a, "index"_a, "src"_a, "reduce"_a = nb::none(),
     "A copy of x with src scattered along axis at index (torch.scatter / scatter_reduce(include_self=True)).");
  ops.def("scatter_add", [](const Tensor &x, int axis, const Tensor &index, const Tensor &src) {
    return o::scatter_add(x, axis, index, src);
  }, "x"_a, "axis"_a, "index"_a, "src"_a);
  ops.def("index_put", [](const Tensor &x, const std::vector<std::optional<Tensor>> &indices, const Tensor &values,
                          bool accumulate) { return o::index_put(x, indices, values, accumulate); },
          "x"_a, "indices"_a, "values"_a, "accumulate"_a = false,
          "A copy of x with x[indices] = values (or += with accumulate); None in indices is a whole axis.");
  ops.def("index_add", [](const Tensor &x, int axis, const Tensor &index, const Tensor &src, double alpha) {
    return o::index_add(x, axis, index, src, alpha);
  }, "x"_a, "axis"_a, "index"_a, "src"_a, "alpha"_a = 1.0);
  ops.def("reshape", [](const Tensor &x, const std::vector<Extent> &s) {
    hidet::SymShape shape = sym_shape(s);
    return hidet::is_constant_shape(shape) ? o::reshape(x, hidet::constant_shape(shape)) : o::reshape(x, shape);
  });
  ops.def("flatten", [](const Tensor &x, int a, int b) { return o::flatten(x, a, b); }, "x"_a, "start"_a = 0,
          "end"_a = -1);
  ops.def("squeeze", [](const Tensor &x, std::vector<int> axes) { return o::squeeze(x, axes); });
  ops.def("unsqueeze", [](const Tensor &x, int axis) { return o::unsqueeze(x, axis); });
  ops.def("permute", [](const Tensor &x, std::vector<int> perm) { return o::permute(x, perm); });
  ops.def("transpose", [](const Tensor &x, int a, int b) { return o::transpose(x, a, b); });
  ops.def("broadcast_to", [](const Tensor &x, const std::vector<Extent> &s) {
    hidet::SymShape shape = sym_shape(s);
    return hidet::is_constant_shape(shape) ? o::broadcast_to(x, hidet::constant_shape(shape)) : o::broadcast_to_dims(x, shape);
  });
  ops.def("arange", [](const Dim &start, const Dim &stop, std::int64_t step, const std::string &dt,
                       const std::vector<Tensor> &shape_of) { return o::arange_dims(start, stop, step, dtype_of(dt), shape_of); },
          "start"_a, "stop"_a, "step"_a = 1, "dtype"_a = "int64", "shape_of"_a = std::vector<Tensor>{},
          "start, start + step, ... below stop; symbolic bounds take the tensors whose extents give their symbols.");
  ops.def("slice", [](const Tensor &x, std::vector<int> axes, std::vector<std::int64_t> starts,
                      std::vector<std::int64_t> stops, std::vector<std::int64_t> steps) {
    return o::slice(x, axes, starts, stops, steps);
  }, "x"_a, "axes"_a, "starts"_a, "stops"_a, "steps"_a = std::vector<std::int64_t>{});
  ops.def("concat", [](const std::vector<Tensor> &xs, int axis) { return o::concat(xs, axis); });
  ops.def("split", [](const Tensor &x, std::vector<std::int64_t> sizes, int axis) { return o::split(x, sizes, axis); });
  ops.def("index_select", [](const Tensor &x, int axis, const Tensor &i) { return o::index_select(x, axis, i); });
  ops.def("embedding", [](const Tensor &i, const Tensor &w) { return o::embedding(i, w); });
  ops.def("gather", [](const Tensor &x, int axis, const Tensor &i) { return o::gather(x, axis, i); });
  ops.def("take", [](const Tensor &x, const Tensor &i, int axis) { return o::take(x, i, axis); });
  ops.def("pad", [](const Tensor &x, std::vector<std::int64_t> pads, double v) { return o::pad(x, pads, v); },
          "x"_a, "pads"_a, "value"_a = 0.0);
  ops.def("matmul", [](const Tensor &a, const Tensor &b) { return o::matmul(a, b); });
  ops.def("grouped_matmul", [](const Tensor &x, const Tensor &w, const Tensor &offs) { return o::grouped_matmul(x, w, offs); },
          "x"_a, "weight"_a, "offs"_a,
          "Mixture-of-experts product: rows of x [S, K] sorted by expert, expert e taking rows offs[e-1]:offs[e] "
          "through weight[e] [K, N]; rows past offs[-1] are 0. offs (int32/int64 [E]) is read on the device.");
  ops.def("scaled_mm", [](const Tensor &a, const Tensor &b, const Tensor &scale_a, const Tensor &scale_b,
                          const std::string &out_dtype) { return o::scaled_mm(a, b, scale_a, scale_b, dtype_of(out_dtype)); },
          "a"_a, "b"_a, "scale_a"_a, "scale_b"_a, "out_dtype"_a);
  ops.def("linear", [](const Tensor &x, const Tensor &w, std::optional<Tensor> b) { return o::linear(x, w, b); },
          "x"_a, "weight"_a, "bias"_a = nb::none());
  ops.def("conv2d", [](const Tensor &x, const Tensor &w, std::optional<Tensor> b, std::vector<std::int64_t> stride,
                       std::vector<std::int64_t> padding, std::vector<std::int64_t> dilation, std::int64_t groups) {
    return o::conv2d(x, w, b, stride, padding, dilation, groups);
  }, "x"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = std::vector<std::int64_t>{1},
     "padding"_a = std::vector<std::int64_t>{0}, "dilation"_a = std::vector<std::int64_t>{1}, "groups"_a = 1);
  ops.def("max_pool2d", [](const Tensor &x, std::vector<std::int64_t> k, std::vector<std::int64_t> s,
                           std::vector<std::int64_t> p, std::vector<std::int64_t> d, bool ceil) {
    return o::max_pool2d(x, k, s, p, d, ceil);
  }, "x"_a, "kernel"_a, "stride"_a = std::vector<std::int64_t>{}, "padding"_a = std::vector<std::int64_t>{0},
     "dilation"_a = std::vector<std::int64_t>{1}, "ceil_mode"_a = false);
  ops.def("avg_pool2d", [](const Tensor &x, std::vector<std::int64_t> k, std::vector<std::int64_t> s,
                           std::vector<std::int64_t> p, bool ceil, bool include_pad) {
    return o::avg_pool2d(x, k, s, p, ceil, include_pad);
  }, "x"_a, "kernel"_a, "stride"_a = std::vector<std::int64_t>{}, "padding"_a = std::vector<std::int64_t>{0},
     "ceil_mode"_a = false, "count_include_pad"_a = true);
  ops.def("adaptive_avg_pool2d", [](const Tensor &x, std::vector<std::int64_t> s) { return o::adaptive_avg_pool2d(x, s); });
  ops.def("adaptive_max_pool2d", [](const Tensor &x, std::vector<std::int64_t> s) { return o::adaptive_max_pool2d(x, s); });
  ops.def("softmax", [](const Tensor &x, int axis) { return o::softmax(x, axis); }, "x"_a, "axis"_a = -1);
  ops.def("log_softmax", [](const Tensor &x, int axis) { return o::log_softmax(x, axis); }, "x"_a, "axis"_a = -1);
  ops.def("layer_norm", [](const Tensor &x, int nd, std::optional<Tensor> w, std::optional<Tensor> b, double eps) {
    return o::layer_norm(x, nd, w, b, eps);
  }, "x"_a, "normalized_ndim"_a = 1, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5);
  ops.def("rms_norm", [](const Tensor &x, int nd, std::optional<Tensor> w, double eps) {
    return o::rms_norm(x, nd, w, eps);
  }, "x"_a, "normalized_ndim"_a = 1, "weight"_a = nb::none(), "eps"_a = 1e-6);
  ops.def("group_norm", [](const Tensor &x, std::int64_t groups, std::optional<Tensor> w, std::optional<Tensor> b,
                           double eps) { return o::group_norm(x, groups, w, b, eps); },
          "x"_a, "num_groups"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5);
  ops.def("batch_norm", [](const Tensor &x, const Tensor &mean, const Tensor &var, std::optional<Tensor> w,
                           std::optional<Tensor> b, double eps) { return o::batch_norm(x, mean, var, w, b, eps); },
          "x"_a, "running_mean"_a, "running_var"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5);
  ops.def("scaled_dot_product_attention", [](const Tensor &q, const Tensor &k, const Tensor &v,
                                             std::optional<Tensor> mask, bool causal, std::optional<double> scale) {
    return o::scaled_dot_product_attention(q, k, v, mask, causal, scale);
  }, "q"_a, "k"_a, "v"_a, "attn_mask"_a = nb::none(), "is_causal"_a = false, "scale"_a = nb::none());
  bind_distributed(m);
  bind_args(m);
}
