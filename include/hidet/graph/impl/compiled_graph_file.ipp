// Definitions for CompiledGraph::save and CompiledGraph::load (hidet/graph/compiled_graph.hpp):
// a compiled graph as one file.
//
// Saving records one run of the compiled graph at the launch level (runtime/command_hook.hpp):
// every kernel launch with its final arguments, every device copy and fill, in order. Each
// pointer argument is rewritten as (region, offset), where a region is a graph input, a block the
// run allocates (the workspace, the outputs, blocks outside the plan: allocated again by each
// run of the loaded graph), or read-only data (the graph's constants and blocks operators keep
// between runs: their bytes go into the file). Tensor maps (TMA) are saved as what they are
// encoded from and encoded again over the loaded graph's memory at each launch. The file holds
// the kernels' cubins, that program, the inputs' and outputs' metadata and the data, behind a
// header (magic, format, hidet version, target) and a checksum of the rest.
//
// A loaded graph is a CompiledGraph of one node ("SavedGraph") whose run replays the program:
// no operator, no compiler and no tuning is involved, and cuda_graph(), streams and the planned
// workspace work as for any compiled graph.
#pragma once

#include "hidet/graph/compiled_graph.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "hidet/backend/compile_cache.hpp"
#include "hidet/backend/emulator/program.hpp"
#include "hidet/runtime/command_hook.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/detail/kernel_info.hpp"
#include "hidet/runtime/tensor_map.hpp"
#include "hidet/util/hash.hpp"
#include "hidet/version.hpp"

namespace hidet::graph {

namespace detail {

inline constexpr char saved_graph_magic[8] = {'H', 'I', 'D', 'E', 'T', 'C', 'G', '\n'};
// 2: every kernel starts with HIDET_GRID_DEPENDENCY_SYNC and is launched as a programmatic
// dependent (format 1's cubins lack the wait, so they cannot be launched that way).
// 3: each input says whether the graph updates it in place.
inline constexpr std::uint32_t saved_graph_format = 3;
inline constexpr std::uint32_t no_region = ~std::uint32_t(0);

/// A place in the memory of a run: byte `offset` of region `region` (no_region: a null pointer).
struct SavedRef {
  std::uint32_t region = no_region;
  std::uint64_t offset = 0;
};

struct SavedArg {
  backend::KernelArg::Kind kind = backend::KernelArg::Kind::Int; ///< Bytes: a tensor map
  DataType dtype;
  SavedRef ref;          ///< Pointer, and the tensor map's address
  std::int64_t i = 0;
  double f = 0;
  std::vector<std::int64_t> shape, box; ///< a tensor map
  std::uint8_t swizzle = 0;
};

struct SavedCommand {
  enum class Kind : std::uint8_t { kernel, copy, fill, write } kind = Kind::kernel;
  std::uint32_t kernel = 0;
  backend::Dim3 grid, block;
  std::uint64_t smem = 0;
  std::vector<SavedArg> args;
  SavedRef dst, src;   ///< copy, fill, write
  std::uint64_t n = 0; ///< bytes copied or filled
  std::uint8_t value = 0;
  std::string bytes; ///< write: the bytes written from the host
};

struct SavedRegion {
  enum class Kind : std::uint8_t { input, scratch, data } kind = Kind::scratch;
  std::uint64_t index = 0; ///< input: the graph input
  std::uint64_t nbytes = 0;
  std::string bytes; ///< data
};

struct SavedModule {
  std::string key, name, arch;
  std::vector<char> cubin;
};

struct SavedTensor {
  DataType dtype;
  std::vector<std::int64_t> shape;
  std::string name;
  SavedRef ref;         ///< outputs
  bool updated = false; ///< inputs: updated in place (FlowGraph::updates)
};

/// What a saved compiled graph replays (see the top of the file).
struct SavedProgram {
  std::string target; ///< the kernels' architecture ("sm_90a"), or "emulator"
  std::vector<SavedTensor> inputs, outputs;
  std::vector<SavedRegion> regions;
  std::vector<SavedModule> modules;
  std::vector<std::pair<std::uint32_t, std::string>> kernels; ///< module, kernel name
  std::vector<SavedCommand> commands;
};

// ---- bytes ----------------------------------------------------------------------------------

class SavedWriter {
public:
  std::string out;
  template <class T> void pod(const T &v) { out.append(reinterpret_cast<const char *>(&v), sizeof(T)); }
  void str(const std::string &s) {
    pod(std::uint64_t(s.size()));
    out += s;
  }
  void ints(const std::vector<std::int64_t> &v) {
    pod(std::uint64_t(v.size()));
    for (auto x : v) pod(x);
  }
  void ref(const SavedRef &r) {
    pod(r.region);
    pod(r.offset);
  }
  void dim3(const backend::Dim3 &d) {
    pod(d.x);
    pod(d.y);
    pod(d.z);
  }
};

class SavedReader {
public:
  SavedReader(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}
  template <class T> T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    auto n = pod<std::uint64_t>();
    need(n);
    std::string s(data_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::vector<std::int64_t> ints() {
    auto n = pod<std::uint64_t>();
    need(n * sizeof(std::int64_t));
    std::vector<std::int64_t> v(n);
    for (auto &x : v) x = pod<std::int64_t>();
    return v;
  }
  SavedRef ref() {
    SavedRef r;
    r.region = pod<std::uint32_t>();
    r.offset = pod<std::uint64_t>();
    return r;
  }
  backend::Dim3 dim3() {
    backend::Dim3 d;
    d.x = pod<std::uint32_t>();
    d.y = pod<std::uint32_t>();
    d.z = pod<std::uint32_t>();
    return d;
  }
  /// A count of items of at least `min_bytes` each (bounded by what is left: a corrupt count
  /// does not allocate).
  std::uint64_t count(std::uint64_t min_bytes) {
    auto n = pod<std::uint64_t>();
    if (n > (data_.size() - pos_) / std::max<std::uint64_t>(min_bytes, 1)) corrupt("a count past the end");
    return n;
  }
  DataType dtype() {
    auto c = pod<std::uint8_t>();
    if (c > std::uint8_t(DTypeCode::F64)) corrupt("an unknown dtype");
    return DataType(DTypeCode(c));
  }
  std::size_t pos() const { return pos_; }
  [[noreturn]] void corrupt(const std::string &what) const {
    throw ValueError(str_cat(where_, " is corrupt (", what, " at byte ", pos_, ")"));
  }

private:
  void need(std::uint64_t n) const {
    if (n > data_.size() - pos_) corrupt("it ends early");
  }
  std::string_view data_;
  std::size_t pos_ = 0;
  std::string where_;
};

inline void write_tensor(SavedWriter &w, const SavedTensor &t) {
  w.pod(std::uint8_t(t.dtype.code));
  w.ints(t.shape);
  w.str(t.name);
  w.ref(t.ref);
  w.pod(std::uint8_t(t.updated));
}

inline SavedTensor read_tensor(SavedReader &r) {
  SavedTensor t;
  t.dtype = r.dtype();
  t.shape = r.ints();
  t.name = r.str();
  t.ref = r.ref();
  t.updated = r.pod<std::uint8_t>() != 0;
  return t;
}

/// The payload (everything after the header).
inline std::string encode_program(const SavedProgram &p) {
  SavedWriter w;
  w.pod(std::uint64_t(p.inputs.size()));
  for (const auto &t : p.inputs) write_tensor(w, t);
  w.pod(std::uint64_t(p.outputs.size()));
  for (const auto &t : p.outputs) write_tensor(w, t);
  w.pod(std::uint64_t(p.regions.size()));
  for (const auto &r : p.regions) {
    w.pod(std::uint8_t(r.kind));
    w.pod(r.index);
    w.pod(r.nbytes);
    w.str(r.bytes);
  }
  w.pod(std::uint64_t(p.modules.size()));
  for (const auto &m : p.modules) {
    w.str(m.key);
    w.str(m.name);
    w.str(m.arch);
    w.str(std::string(m.cubin.begin(), m.cubin.end()));
  }
  w.pod(std::uint64_t(p.kernels.size()));
  for (const auto &[m, name] : p.kernels) {
    w.pod(m);
    w.str(name);
  }
  w.pod(std::uint64_t(p.commands.size()));
  for (const auto &c : p.commands) {
    w.pod(std::uint8_t(c.kind));
    switch (c.kind) {
    case SavedCommand::Kind::kernel:
      w.pod(c.kernel);
      w.dim3(c.grid);
      w.dim3(c.block);
      w.pod(c.smem);
      w.pod(std::uint64_t(c.args.size()));
      for (const auto &a : c.args) {
        w.pod(std::uint8_t(a.kind));
        w.pod(std::uint8_t(a.dtype.code));
        w.ref(a.ref);
        w.pod(a.i);
        w.pod(a.f);
        if (a.kind == backend::KernelArg::Kind::Bytes) {
          w.ints(a.shape);
          w.ints(a.box);
          w.pod(a.swizzle);
        }
      }
      break;
    case SavedCommand::Kind::copy:
      w.ref(c.dst);
      w.ref(c.src);
      w.pod(c.n);
      break;
    case SavedCommand::Kind::fill:
      w.ref(c.dst);
      w.pod(c.n);
      w.pod(c.value);
      break;
    case SavedCommand::Kind::write:
      w.ref(c.dst);
      w.str(c.bytes);
      break;
    }
  }
  return std::move(w.out);
}

inline SavedProgram decode_program(SavedReader &r) {
  SavedProgram p;
  auto tensors = [&](std::vector<SavedTensor> &v) {
    auto n = r.count(1 + 8 + 8 + 12);
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(read_tensor(r));
  };
  tensors(p.inputs);
  tensors(p.outputs);
  auto nregions = r.count(1 + 8 + 8 + 8);
  for (std::uint64_t i = 0; i < nregions; ++i) {
    SavedRegion g;
    auto kind = r.pod<std::uint8_t>();
    if (kind > std::uint8_t(SavedRegion::Kind::data)) r.corrupt("an unknown region kind");
    g.kind = SavedRegion::Kind(kind);
    g.index = r.pod<std::uint64_t>();
    g.nbytes = r.pod<std::uint64_t>();
    g.bytes = r.str();
    p.regions.push_back(std::move(g));
  }
  auto nmodules = r.count(32);
  for (std::uint64_t i = 0; i < nmodules; ++i) {
    SavedModule m;
    m.key = r.str();
    m.name = r.str();
    m.arch = r.str();
    std::string cubin = r.str();
    m.cubin.assign(cubin.begin(), cubin.end());
    p.modules.push_back(std::move(m));
  }
  auto nkernels = r.count(12);
  for (std::uint64_t i = 0; i < nkernels; ++i) {
    auto m = r.pod<std::uint32_t>();
    if (m >= p.modules.size()) r.corrupt("a kernel of no module");
    p.kernels.emplace_back(m, r.str());
  }
  auto check_ref = [&](const SavedRef &ref) {
    if (ref.region != no_region && ref.region >= p.regions.size()) r.corrupt("a reference to no region");
    return ref;
  };
  for (auto &t : p.outputs) check_ref(t.ref);
  auto ncommands = r.count(1);
  for (std::uint64_t i = 0; i < ncommands; ++i) {
    SavedCommand c;
    auto kind = r.pod<std::uint8_t>();
    if (kind > std::uint8_t(SavedCommand::Kind::write)) r.corrupt("an unknown command");
    c.kind = SavedCommand::Kind(kind);
    switch (c.kind) {
    case SavedCommand::Kind::kernel: {
      c.kernel = r.pod<std::uint32_t>();
      if (c.kernel >= p.kernels.size()) r.corrupt("a launch of no kernel");
      c.grid = r.dim3();
      c.block = r.dim3();
      c.smem = r.pod<std::uint64_t>();
      auto nargs = r.count(30);
      for (std::uint64_t j = 0; j < nargs; ++j) {
        SavedArg a;
        auto k = r.pod<std::uint8_t>();
        if (k > std::uint8_t(backend::KernelArg::Kind::Bytes)) r.corrupt("an unknown argument kind");
        a.kind = backend::KernelArg::Kind(k);
        a.dtype = r.dtype();
        a.ref = check_ref(r.ref());
        a.i = r.pod<std::int64_t>();
        a.f = r.pod<double>();
        if (a.kind == backend::KernelArg::Kind::Bytes) {
          a.shape = r.ints();
          a.box = r.ints();
          a.swizzle = r.pod<std::uint8_t>();
        }
        c.args.push_back(std::move(a));
      }
      break;
    }
    case SavedCommand::Kind::copy:
      c.dst = check_ref(r.ref());
      c.src = check_ref(r.ref());
      c.n = r.pod<std::uint64_t>();
      break;
    case SavedCommand::Kind::fill:
      c.dst = check_ref(r.ref());
      c.n = r.pod<std::uint64_t>();
      c.value = r.pod<std::uint8_t>();
      break;
    case SavedCommand::Kind::write:
      c.dst = check_ref(r.ref());
      c.bytes = r.str();
      break;
    }
    p.commands.push_back(std::move(c));
  }
  return p;
}

// ---- recording ------------------------------------------------------------------------------

/// Uninstalls the command hook of this thread for its lifetime (the recorder's own copies).
struct NoCommandHook {
  NoCommandHook() : saved(runtime::detail::command_hook()) { runtime::detail::command_hook() = nullptr; }
  ~NoCommandHook() { runtime::detail::command_hook() = saved; }
  runtime::detail::CommandHook *saved;
};

/// Records a run of a compiled graph into a SavedProgram (see the top of the file).
class RecordProgram : public runtime::detail::CommandHook, public RunObserver {
public:
  RecordProgram(SavedProgram &p, Device device, std::vector<Tensor> constants)
      : p_(p), device_(device), constants_(std::move(constants)) {}

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
    if (!base) std::tie(base, nbytes) = [&] {
      auto [q, n] = allocator(device_).find_live(ptr);
      return std::pair<const void *, std::size_t>(q, n);
    }();
    if (!base)
      throw ValueError(str_cat("save: ", what, " in graph node ", node_, " (", node_name_,
                               ") points to memory the graph does not own (neither an input, a constant, the "
                               "workspace nor a block of the caching allocator); this graph cannot be saved"));
    SavedRegion g;
    g.kind = SavedRegion::Kind::data;
    g.bytes.resize(nbytes);
    {
      NoCommandHook quiet;
      bool host = uses_host_memory(device_);
      runtime::detail::copy_bytes(g.bytes.data(), Device::cpu(), true, base, device_, host, nbytes);
    }
    std::uint32_t id = add_region(base, nbytes, std::move(g));
    return {id, a - reinterpret_cast<std::uintptr_t>(base)};
  }

  void node(std::size_t k, const Operator &op) override {
    node_ = k;
    node_name_ = op.name();
  }

  void allocated(const std::shared_ptr<Storage> &s) override {
    if (!s->alloc) return; // served from the workspace (a region already)
    add_region(s->ptr, s->nbytes, {SavedRegion::Kind::scratch, 0, 0, {}});
  }

  void kernel(const KernelHandle &k, backend::Dim3 grid, backend::Dim3 block, std::size_t smem,
              const std::vector<backend::KernelArg> &args, const std::vector<const TensorMap *> &maps) override {
    const auto &shared = k.shared();
    auto [mit, fresh] = module_of_.try_emplace(shared.get(), std::uint32_t(p_.modules.size()));
    if (fresh) {
      SavedModule m;
      m.key = shared->key;
      m.name = shared->module_name;
      if (shared->binary) {
        m.arch = shared->binary->arch;
        m.cubin = shared->binary->cubin;
      }
      p_.modules.push_back(std::move(m));
    }
    auto [kit, kfresh] = kernel_of_.try_emplace({mit->second, k.name()}, std::uint32_t(p_.kernels.size()));
    if (kfresh) p_.kernels.emplace_back(mit->second, k.name());
    SavedCommand c;
    c.kind = SavedCommand::Kind::kernel;
    c.kernel = kit->second;
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
      case backend::KernelArg::Kind::Pointer: s.ref = locate(a.ptr, what()); break;
      case backend::KernelArg::Kind::Int: s.i = a.i; break;
      case backend::KernelArg::Kind::Float: s.f = a.f; break;
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
      throw ValueError(str_cat("save: graph node ", node_, " (", node_name_,
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
  SavedProgram &p_;
  Device device_;
  std::vector<Tensor> constants_;
  std::vector<Span> spans_;
  std::map<const void *, std::uint32_t> module_of_;
  std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> kernel_of_;
  std::size_t node_ = 0;
  std::string node_name_;
};

/// Installs a command hook on this thread for its lifetime.
struct CommandHookGuard {
  explicit CommandHookGuard(runtime::detail::CommandHook *h) : saved(runtime::detail::command_hook()) {
    runtime::detail::command_hook() = h;
  }
  ~CommandHookGuard() { runtime::detail::command_hook() = saved; }
  runtime::detail::CommandHook *saved;
};

// ---- replay ---------------------------------------------------------------------------------

/// A SavedProgram made ready to run: modules loaded (or found, on the emulator), data on the device.
struct LoadedProgram {
  SavedProgram program;
  Device device;
  std::vector<std::shared_ptr<runtime::detail::KernelShared>> modules;
  std::vector<CUfunction> functions;              ///< per kernel, on a GPU
  std::vector<Tensor> data;                       ///< per region: the data regions' tensors
  std::vector<std::size_t> max_smem;              ///< per kernel

  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const {
    const auto &p = program;
    std::vector<std::shared_ptr<Storage>> storage(p.regions.size());
    std::vector<std::size_t> offset(p.regions.size(), 0);
    for (std::size_t r = 0; r < p.regions.size(); ++r) {
      const auto &g = p.regions[r];
      switch (g.kind) {
      case SavedRegion::Kind::input:
        storage[r] = inputs[g.index].storage();
        offset[r] = inputs[g.index].offset();
        break;
      case SavedRegion::Kind::scratch: storage[r] = allocate_storage(g.nbytes, device); break;
      case SavedRegion::Kind::data:
        storage[r] = data[r].storage();
        offset[r] = data[r].offset();
        break;
      }
    }
    auto address = [&](const SavedRef &ref) -> void * {
      if (ref.region == no_region) return nullptr;
      return static_cast<char *>(storage[ref.region]->ptr) + offset[ref.region] + ref.offset;
    };
    const bool host = uses_host_memory(device);
    const bool emulated = runtime::cuda_emulated();
    if (!emulated) ensure_some_context(); // run from a thread the user started
    for (const auto &c : p.commands) {
      switch (c.kind) {
      case SavedCommand::Kind::kernel: {
        std::vector<backend::KernelArg> kargs;
        std::vector<TensorMap> maps;
        maps.reserve(c.args.size());
        for (const auto &a : c.args) {
          switch (a.kind) {
          case backend::KernelArg::Kind::Pointer: kargs.push_back(backend::KernelArg::pointer(address(a.ref))); break;
          case backend::KernelArg::Kind::Int: kargs.push_back(backend::KernelArg::integer(a.dtype, a.i)); break;
          case backend::KernelArg::Kind::Float: kargs.push_back(backend::KernelArg::floating(a.dtype, a.f)); break;
          case backend::KernelArg::Kind::Bytes:
            maps.push_back(TensorMap::tiled(
                TensorMap::Spec{address(a.ref), a.dtype, a.shape, a.box, TensorMap::Swizzle(a.swizzle)}));
            kargs.push_back(backend::KernelArg::bytes(&maps.back().map(), std::int64_t(sizeof(CUtensorMap))));
            break;
          }
        }
        const auto &[m, name] = p.kernels[c.kernel];
        if (emulated) modules[m]->emulator->launch(name, kargs, c.grid, c.block, c.smem);
        else
          runtime::launch_with_args(functions[c.kernel], name, c.grid, c.block, c.smem, current_stream().handle(),
                                    kargs, modules[m]->programmatic);
        break;
      }
      case SavedCommand::Kind::copy:
        runtime::detail::copy_bytes(address(c.dst), device, host, address(c.src), device, host, c.n);
        break;
      case SavedCommand::Kind::fill:
        if (host) std::memset(address(c.dst), c.value, c.n);
        else
          cuda::check(cuda::driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(address(c.dst)), c.value, c.n,
                                                     current_stream().handle()),
                      "SavedGraph: a fill");
        break;
      case SavedCommand::Kind::write:
        runtime::detail::copy_bytes(address(c.dst), device, host, c.bytes.data(), Device::cpu(), true, c.bytes.size());
        break;
      }
    }
    std::vector<Tensor> outs;
    for (const auto &o : p.outputs) {
      HIDET_ASSERT(o.ref.region != no_region, "SavedGraph: an output without memory");
      outs.emplace_back(storage[o.ref.region], o.shape, o.dtype, offset[o.ref.region] + o.ref.offset);
    }
    return outs;
  }
};

/// This process's target: the GPU's architecture, or "emulator".
inline std::string saved_graph_target() {
  return runtime::cuda_emulated() ? std::string("emulator") : runtime::device_info(0).arch();
}

} // namespace detail

HIDET_INLINE void CompiledGraph::save(const std::string &path) const {
  detail::SavedProgram program;
  if (s_->loaded) {
    program = *s_->loaded;
  } else {
    const FlowGraph &g = s_->graph;
    if (!s_->symbol_values.empty())
      throw ValueError("save: this compiled graph has symbolic input extents; a saved graph has one shape: save "
                       "CompiledGraph(graph.specialize(values)) instead");
    std::vector<Tensor> scratch = detail::scratch_inputs(g, {});
    Device device = s_->workspace ? s_->workspace->device
                    : !g.outputs().empty() ? g.outputs()[0].device()
                                           : Device::cuda();
    program.target = detail::saved_graph_target();
    detail::RecordProgram rec(program, device, g.constants());
    const auto updated = g.updated_inputs();
    for (std::size_t i = 0; i < scratch.size(); ++i) {
      const Tensor &x = g.inputs()[i];
      bool is_updated = std::find(updated.begin(), updated.end(), i) != updated.end();
      program.inputs.push_back({x.dtype(), scratch[i].shape(), x.name(), {}, is_updated});
      rec.add_region(scratch[i].data_ptr(), scratch[i].nbytes(), {detail::SavedRegion::Kind::input, i, 0, {}});
    }
    if (s_->workspace) rec.add_region(s_->workspace->ptr, s_->workspace->nbytes, {});
    std::vector<Tensor> outs;
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      if (s_->ran) s_->last_stream.synchronize();
      current_stream().synchronize();
      s_->last_stream = current_stream();
      s_->ran = true;
      detail::CommandHookGuard hook(&rec);
      outs = s_->run_nodes(scratch, State::Mode::serve, nullptr, nullptr, &rec);
    }
    current_stream().synchronize();
    for (std::size_t i = 0; i < outs.size(); ++i) {
      detail::SavedTensor t{outs[i].dtype(), outs[i].shape(), "", {}};
      t.ref = rec.locate(outs[i].data_ptr(), str_cat("graph output ", i));
      program.outputs.push_back(std::move(t));
    }
    // Modules compiled without a binary (the emulator without NVRTC) are saved by key alone.
    for (const auto &m : program.modules)
      if (!m.arch.empty() && program.target != "emulator" && m.arch != program.target)
        throw ValueError(str_cat("save: kernel module '", m.name, "' was compiled for ", m.arch, ", the GPU is ",
                                 program.target));
  }
  std::string payload = detail::encode_program(program);
  detail::SavedWriter head;
  head.out.append(detail::saved_graph_magic, sizeof(detail::saved_graph_magic));
  head.pod(detail::saved_graph_format);
  head.str(HIDET_VERSION_STRING);
  head.str(program.target);
  head.pod(std::uint64_t(payload.size()));
  head.str(util::hash128(payload).hex());
  if (!backend::detail::write_file_atomic(path, head.out + payload))
    throw Error(str_cat("save: cannot write '", path, "'"));
}

HIDET_INLINE CompiledGraph CompiledGraph::load(const std::string &path) {
  auto data = backend::detail::read_file_bytes(path);
  if (!data) throw ValueError(str_cat("load: cannot read '", path, "'"));
  std::string where = str_cat("'", path, "'");
  detail::SavedReader r(*data, where);
  if (data->size() < sizeof(detail::saved_graph_magic) ||
      std::memcmp(data->data(), detail::saved_graph_magic, sizeof(detail::saved_graph_magic)) != 0)
    throw ValueError(str_cat("load: ", where, " is not a compiled graph saved by hidet (CompiledGraph::save)"));
  for (std::size_t i = 0; i < sizeof(detail::saved_graph_magic); ++i) (void)r.pod<char>();
  auto format = r.pod<std::uint32_t>();
  std::string version = r.str();
  std::string target = r.str();
  if (format != detail::saved_graph_format || version != HIDET_VERSION_STRING)
    throw ValueError(str_cat("load: ", where, " was saved by hidet ", version, " (file format ", format,
                             "); this is hidet ", HIDET_VERSION_STRING, " (format ", detail::saved_graph_format,
                             "): compile and save the graph again with this version"));
  std::string here = detail::saved_graph_target();
  if (target != here) {
    if (here == "emulator")
      throw ValueError(str_cat("load: ", where, " holds kernels compiled for ", target,
                               "; this process runs kernels on the CPU emulator (no GPU), which needs their IR: "
                               "load it on a ", target, " GPU"));
    throw ValueError(str_cat("load: ", where, " holds kernels compiled for ", target, "; this GPU (",
                             runtime::device_info(0).name, ") is ", here,
                             ": compile and save the graph on this architecture"));
  }
  auto size = r.pod<std::uint64_t>();
  std::string sum = r.str();
  if (data->size() - r.pos() != size)
    throw ValueError(str_cat("load: ", where, " is truncated or corrupt (", data->size() - r.pos(),
                             " bytes after the header, ", size, " expected)"));
  std::string_view payload(data->data() + r.pos(), size);
  if (util::hash128(payload).hex() != sum)
    throw ValueError(str_cat("load: ", where, " is corrupt (its checksum does not match)"));
  detail::SavedReader pr(payload, where);
  auto lp = std::make_shared<detail::LoadedProgram>();
  lp->program = detail::decode_program(pr);
  lp->program.target = target;
  const auto &p = lp->program;
  if (p.inputs.empty()) throw ValueError(str_cat("load: ", where, " has no inputs"));
  lp->device = Device::cuda();
  // Modules: loaded from their cubins on a GPU; on the emulator, the modules this process built.
  for (const auto &m : p.modules) {
    std::shared_ptr<runtime::detail::KernelShared> shared;
    if (runtime::cuda_emulated()) {
      shared = runtime::detail::find_emulated_module(m.key);
      if (!shared)
        throw ValueError(str_cat("load: ", where, " was saved on the CPU emulator, which runs kernels from their IR; "
                                 "the file holds cubins only, so it loads on the emulator only in a process that "
                                 "has built its kernels (kernel module '", m.name, "' is not built here)"));
    } else {
      if (m.cubin.empty()) throw ValueError(str_cat("load: ", where, ": kernel module '", m.name, "' has no cubin"));
      shared = std::make_shared<runtime::detail::KernelShared>();
      ensure_some_context();
      shared->module = runtime::load_module(m.cubin);
      shared->programmatic = runtime::programmatic_launch_for(m.arch);
    }
    lp->modules.push_back(std::move(shared));
  }
  lp->max_smem.assign(p.kernels.size(), 0);
  for (const auto &c : p.commands)
    if (c.kind == detail::SavedCommand::Kind::kernel)
      lp->max_smem[c.kernel] = std::max<std::size_t>(lp->max_smem[c.kernel], c.smem);
  if (!runtime::cuda_emulated())
    for (std::size_t k = 0; k < p.kernels.size(); ++k) {
      const auto &[m, name] = p.kernels[k];
      lp->functions.push_back(runtime::get_function(lp->modules[m]->module, name.c_str()));
      if (lp->max_smem[k] > 48 * 1024) runtime::set_max_dynamic_smem(lp->functions.back(), int(lp->max_smem[k]), name);
    }
  // Data: the constants and the blocks operators kept, on the device.
  lp->data.resize(p.regions.size());
  for (std::size_t i = 0; i < p.regions.size(); ++i) {
    const auto &g = p.regions[i];
    if (g.kind == detail::SavedRegion::Kind::input && g.index >= p.inputs.size())
      throw ValueError(str_cat("load: ", where, " is corrupt (a region of input ", g.index, ")"));
    if (g.kind != detail::SavedRegion::Kind::data) continue;
    if (g.bytes.size() != g.nbytes) throw ValueError(str_cat("load: ", where, " is corrupt (a data region's size)"));
    Tensor t = empty({std::int64_t(g.nbytes)}, dtypes::u8, lp->device);
    t.copy_from_host(g.bytes.data());
    lp->data[i] = std::move(t);
  }
  // The graph: one node that replays the program.
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    SymShape shape;
    for (auto d : p.inputs[i].shape) shape.push_back(d);
    xs.push_back(symbol(shape, p.inputs[i].dtype, lp->device, p.inputs[i].name.empty() ? "x" : p.inputs[i].name));
  }
  std::vector<TensorMeta> metas;
  for (const auto &o : p.outputs) {
    SymShape shape;
    for (auto d : o.shape) shape.push_back(d);
    metas.push_back({shape, o.dtype, lp->device});
  }
  // The inputs it updates: the program writes them; the node returns them as extra outputs, the
  // updates' values (so a CUDA graph of the loaded graph copies them back).
  std::vector<std::size_t> updated;
  for (std::size_t i = 0; i < p.inputs.size(); ++i)
    if (p.inputs[i].updated) updated.push_back(i), metas.push_back({xs[i].sym_shape(), xs[i].dtype(), lp->device});
  std::size_t nkernels = 0;
  for (const auto &c : p.commands) nkernels += c.kind == detail::SavedCommand::Kind::kernel;
  std::vector<Tensor> ys = apply_operator(
      "SavedGraph", xs, metas,
      [lp, updated](const std::vector<Tensor> &ins) {
        std::vector<Tensor> outs = lp->run(ins);
        for (std::size_t i : updated) outs.push_back(ins[i]);
        return outs;
      },
      str_cat("file='", path, "', launches=", nkernels, ", commands=", p.commands.size()));
  std::vector<InputUpdate> updates;
  for (std::size_t j = 0; j < updated.size(); ++j) updates.push_back({xs[updated[j]], ys[p.outputs.size() + j]});
  ys.resize(p.outputs.size());
  CompiledGraph cg(FlowGraph(ys, xs, std::move(updates)));
  cg.s_->loaded = std::shared_ptr<const detail::SavedProgram>(lp, &lp->program);
  return cg;
}

} // namespace hidet::graph
