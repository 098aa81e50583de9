// Definitions for hidet/graph/model.hpp: reading a model file, loading its kernels and weights,
// and running its programs in a pool of workspaces.
#pragma once

#include "hidet/graph/model.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hidet/backend/compile_cache.hpp"
#include "hidet/backend/emulator/program.hpp"
#include "hidet/graph/detail/saved_file.hpp"
#include "hidet/ir/serialize.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/device_errors.hpp"
#include "hidet/runtime/detail/kernel_info.hpp"
#include "hidet/runtime/tensor_map.hpp"
#include "hidet/util/env.hpp"

namespace hidet::graph {

namespace detail {

// ---- decoding -------------------------------------------------------------------------------

HIDET_INLINE SavedHeader read_header(std::string_view data, const std::string &where) {
  if (data.size() < sizeof(saved_graph_magic) ||
      std::memcmp(data.data(), saved_graph_magic, sizeof(saved_graph_magic)) != 0)
    throw ValueError(str_cat("load: ", where,
                             " is not a model file saved by hidet (CompiledGraph::save, "
                             "graph::save_model or hidet.torch.export)"));
  util::ByteReader r(data, where);
  for (std::size_t i = 0; i < sizeof(saved_graph_magic); ++i)
    (void)r.pod<char>();
  SavedHeader h;
  std::uint64_t size = 0, block = 0, block_sum = 0;
  std::string sum;
  try {
    h.format = r.pod<std::uint32_t>();
    h.version = r.str();
    h.target = r.str();
    size = r.pod<std::uint64_t>();
    block = r.pod<std::uint64_t>();
    sum = r.str();
    block_sum = r.pod<std::uint64_t>();
  } catch (const ValueError &) {
    throw ValueError(str_cat("load: ", where, " is truncated or corrupt (its ", data.size(),
                             " bytes end inside the header)"));
  }
  if (h.format != saved_graph_format || h.version != HIDET_VERSION_STRING)
    throw ValueError(str_cat("load: ", where, " was saved by hidet ", h.version, " (file format ",
                             h.format, "); this is hidet ", HIDET_VERSION_STRING, " (format ",
                             saved_graph_format,
                             "): compile and save (export) the model again with this version"));
  if (data.size() - r.pos() != size || block > size)
    throw ValueError(str_cat("load: ", where, " is truncated or corrupt (", data.size() - r.pos(),
                             " bytes after the header, ", size, " expected)"));
  h.payload = data.substr(r.pos(), size);
  if (util::hash128(h.payload.substr(0, block)).hex() != sum ||
      util::block_checksum(h.payload.substr(block)) != block_sum)
    throw ValueError(str_cat("load: ", where, " is corrupt (its checksum does not match)"));
  return h;
}

inline SavedRef read_ref(util::ByteReader &r) {
  SavedRef ref;
  ref.region = r.pod<std::uint32_t>();
  ref.offset = r.pod<std::uint64_t>();
  return ref;
}

inline DataType read_dtype(util::ByteReader &r) {
  return DataType(r.enumerator(DTypeCode::F8E5M2, "dtype"));
}

inline ModelTensorInfo read_info(util::ByteReader &r) {
  ModelTensorInfo t;
  t.name = r.str();
  t.dtype = read_dtype(r);
  t.shape = r.ints();
  for (std::size_t d = 0; d < t.shape.size(); ++d)
    t.dims.push_back(r.str());
  t.updated = r.pod<std::uint8_t>() != 0;
  return t;
}

inline SavedCommand read_command(util::ByteReader &r, const SavedFile &f) {
  SavedCommand c;
  c.kind = r.enumerator(SavedCommand::Kind::write, "command");
  switch (c.kind) {
  case SavedCommand::Kind::kernel: {
    c.kernel = r.pod<std::uint32_t>();
    if (c.kernel >= f.kernels.size()) r.corrupt("a launch of no kernel");
    c.grid = r.pod<backend::Dim3>();
    c.block = r.pod<backend::Dim3>();
    c.smem = r.pod<std::uint64_t>();
    auto nargs = r.count(30);
    for (std::uint64_t j = 0; j < nargs; ++j) {
      SavedArg a;
      a.kind = r.enumerator(backend::KernelArg::Kind::Bytes, "argument kind");
      a.dtype = read_dtype(r);
      a.ref = read_ref(r);
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
    c.dst = read_ref(r);
    c.src = read_ref(r);
    c.n = r.pod<std::uint64_t>();
    break;
  case SavedCommand::Kind::fill:
    c.dst = read_ref(r);
    c.n = r.pod<std::uint64_t>();
    c.value = r.pod<std::uint8_t>();
    break;
  case SavedCommand::Kind::write:
    c.dst = read_ref(r);
    c.bytes = r.str();
    break;
  }
  return c;
}

HIDET_INLINE SavedFile decode_payload(std::string_view payload, const std::string &where) {
  util::ByteReader r(payload, where);
  SavedFile f;
  auto ninputs = r.count(1 + 8 + 8);
  for (std::uint64_t i = 0; i < ninputs; ++i)
    f.inputs.push_back(read_info(r));
  auto noutputs = r.count(1 + 8 + 8);
  for (std::uint64_t i = 0; i < noutputs; ++i)
    f.outputs.push_back(read_info(r));
  auto nmodules = r.count(40);
  for (std::uint64_t i = 0; i < nmodules; ++i) {
    SavedModule m;
    m.key = r.str();
    m.name = r.str();
    m.arch = r.str();
    m.cubin = r.str();
    m.ir = r.str();
    f.modules.push_back(std::move(m));
  }
  auto nkernels = r.count(12);
  for (std::uint64_t i = 0; i < nkernels; ++i) {
    auto m = r.pod<std::uint32_t>();
    if (m >= f.modules.size()) r.corrupt("a kernel of no module");
    f.kernels.emplace_back(m, r.str());
  }
  auto nprograms = r.count(8);
  for (std::uint64_t k = 0; k < nprograms; ++k) {
    SavedProgram p;
    for (const auto &in : f.inputs) {
      p.input_shapes.push_back(r.ints());
      if (p.input_shapes.back().size() != in.shape.size())
        r.corrupt("an input shape of another rank");
    }
    if (r.count(20) != f.outputs.size()) r.corrupt("a program of another number of outputs");
    for (const auto &out : f.outputs) {
      SavedOutput o;
      o.shape = r.ints();
      if (o.shape.size() != out.shape.size()) r.corrupt("an output shape of another rank");
      o.ref = read_ref(r);
      p.outputs.push_back(std::move(o));
    }
    auto nregions = r.count(17);
    for (std::uint64_t i = 0; i < nregions; ++i) {
      SavedRegion g;
      g.kind = r.enumerator(SavedRegion::Kind::errors, "region kind");
      g.index = r.pod<std::uint64_t>();
      g.nbytes = r.pod<std::uint64_t>();
      if (g.kind == SavedRegion::Kind::input && g.index >= f.inputs.size())
        r.corrupt("a region of no input");
      p.regions.push_back(g);
    }
    auto ncommands = r.count(1);
    for (std::uint64_t i = 0; i < ncommands; ++i)
      p.commands.push_back(read_command(r, f));
    auto check = [&](const SavedRef &ref) {
      if (ref.region != no_region && ref.region >= p.regions.size())
        r.corrupt("a reference to no region");
    };
    for (const auto &o : p.outputs) {
      check(o.ref);
      if (o.ref.region == no_region) r.corrupt("an output without memory");
    }
    for (const auto &c : p.commands) {
      check(c.dst);
      check(c.src);
      for (const auto &a : c.args)
        check(a.ref);
    }
    f.programs.push_back(std::move(p));
  }
  auto nblobs = r.count(16);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (std::uint64_t i = 0; i < nblobs; ++i) {
    auto at = r.pod<std::uint64_t>();
    auto n = r.pod<std::uint64_t>();
    spans.emplace_back(at, n);
  }
  auto total = r.pod<std::uint64_t>();
  if (total != payload.size() - r.pos()) r.corrupt("a data block of another size");
  f.blob_block = payload.substr(r.pos());
  for (const auto &[at, n] : spans) {
    if (at > total || n > total - at || at % blob_alignment != 0)
      r.corrupt("a data blob outside the data block");
    f.blobs.push_back(f.blob_block.substr(at, n));
  }
  for (const auto &p : f.programs)
    for (const auto &g : p.regions)
      if ((g.kind == SavedRegion::Kind::data || g.kind == SavedRegion::Kind::state) &&
          (g.index >= f.blobs.size() || g.nbytes > f.blobs[g.index].size()))
        r.corrupt("a region of no data blob");
  return f;
}

/// A file's bytes: mapped read-only with its pages read in (no copy: the checksum and the upload
/// of the weights read them where the page cache holds them), or read into memory where mapping
/// fails.
class FileBytes {
public:
  /// The file at `path`, or nullopt when it cannot be read.
  static std::optional<FileBytes> open(const std::string &path) {
    FileBytes f;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void *p =
          ::mmap(nullptr, std::size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p != MAP_FAILED) {
        f.map_ = p, f.size_ = std::size_t(st.st_size);
        ::close(fd);
        return f;
      }
    }
    ::close(fd);
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    f.copy_.assign(std::istreambuf_iterator<char>(in), {});
    return f;
  }
  FileBytes(FileBytes &&o) noexcept
      : map_(std::exchange(o.map_, nullptr)), size_(o.size_), copy_(std::move(o.copy_)) {}
  FileBytes &operator=(FileBytes &&) = delete;
  ~FileBytes() {
    if (map_) ::munmap(map_, size_);
  }
  std::string_view view() const {
    return map_ ? std::string_view(static_cast<const char *>(map_), size_)
                : std::string_view(copy_);
  }

private:
  FileBytes() = default;
  void *map_ = nullptr;
  std::size_t size_ = 0;
  std::string copy_;
};

// ---- running ----------------------------------------------------------------------------------

/// Where a program's regions lie in a workspace block, and which outputs a run may write into
/// the caller's memory directly.
struct ProgramLayout {
  std::vector<std::uint64_t> offset;       ///< per region: its place in the block (scratch regions)
  std::vector<std::uint64_t> input_offset; ///< per input: its buffer for CUDA-graph replays
  std::uint64_t bytes = 0;
  std::vector<int>
      direct; ///< per region: the output it is, when the caller's memory can serve it; else -1
  std::vector<bool> output_direct;
};

/// One workspace: a block for any program's scratch regions and input buffers, and per program
/// its CUDA graph (captured on first use).
struct ModelWorkspace {
  struct Replay {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    bool failed = false; ///< the capture failed: this program runs kernel by kernel
  };
  std::shared_ptr<Storage> block;
  std::shared_ptr<Storage> state; ///< this workspace's copy of the state blobs (state_offset)
  std::vector<Replay> replays;
  bool used = false;
  CUstream last = nullptr; ///< the stream of the last run
  CUevent done = nullptr;  ///< recorded after the last run (GPU)
  ModelWorkspace() = default;
  ModelWorkspace(const ModelWorkspace &) = delete;
  ModelWorkspace &operator=(const ModelWorkspace &) = delete;
  ~ModelWorkspace() {
    const auto &drv = cuda::driver_table();
    for (auto &r : replays) {
      if (r.exec) drv.cuGraphExecDestroy(r.exec);
      if (r.graph) drv.cuGraphDestroy(r.graph);
    }
    if (done) drv.cuEventDestroy_v2(done);
  }
};

} // namespace detail

HIDET_INLINE std::string ModelTensorInfo::str() const {
  std::string s = str_cat(name, ": ", dtype.name(), "[");
  for (std::size_t d = 0; d < shape.size(); ++d)
    s += str_cat(d ? ", " : "",
                 d < dims.size() && !dims[d].empty() ? dims[d] : std::to_string(shape[d]));
  return s + (updated ? "] (updated in place)" : "]");
}

struct Model::State {
  std::string where; ///< "model 'path'"
  std::string path;
  ModelOptions options;
  detail::SavedFile file; ///< without the data (blobs cleared after the upload)
  std::vector<std::uint64_t> blob_offset, blob_size; ///< per blob: its place in `data`
  Device device = Device::cuda();
  bool emulated = false;
  std::vector<std::shared_ptr<runtime::detail::KernelShared>> modules;
  std::vector<CUfunction> functions; ///< per kernel (GPU)
  std::vector<bool> programmatic;    ///< per kernel
  std::shared_ptr<Storage> data;     ///< every blob, in one block
  std::vector<detail::ProgramLayout> layouts;
  std::map<std::vector<std::vector<std::int64_t>>, std::size_t> program_of;
  std::uint64_t workspace_bytes = 0;
  std::map<std::uint64_t, std::uint64_t> state_offset; ///< per state blob: its place in ws.state
  std::uint64_t state_bytes = 0;

  mutable std::mutex mu;
  mutable std::vector<std::unique_ptr<detail::ModelWorkspace>> idle;
  mutable std::size_t made = 0;

  // ---- programs -------------------------------------------------------------------------------
  std::size_t program_for(const std::vector<std::vector<std::int64_t>> &shapes) const {
    auto it = program_of.find(shapes);
    if (it != program_of.end()) return it->second;
    std::string held;
    for (const auto &[s, k] : program_of)
      held += (held.empty() ? "" : ", ") + detail::shapes_str(s);
    std::string sig;
    for (const auto &t : file.inputs)
      sig += (sig.empty() ? "" : ", ") + t.str();
    throw ValueError(str_cat(where, ": no compiled program for the input shapes ",
                             detail::shapes_str(shapes), " (inputs ", sig,
                             "); the file holds programs for ", held,
                             ": export the model with these sizes too"));
  }

  void lay_out(std::size_t k) {
    const auto &p = file.programs[k];
    detail::ProgramLayout l;
    auto align = [](std::uint64_t n) { return (n + 255) / 256 * 256; };
    l.offset.assign(p.regions.size(), 0);
    l.direct.assign(p.regions.size(), -1);
    l.output_direct.assign(p.outputs.size(), false);
    for (std::size_t r = 0; r < p.regions.size(); ++r)
      if (p.regions[r].kind == detail::SavedRegion::Kind::scratch) {
        l.offset[r] = l.bytes;
        l.bytes += align(std::max<std::uint64_t>(p.regions[r].nbytes, 1));
      } else if (p.regions[r].kind == detail::SavedRegion::Kind::state &&
                 !state_offset.count(p.regions[r].index)) {
        state_offset[p.regions[r].index] = state_bytes;
        state_bytes += align(std::max<std::uint64_t>(file.blobs[p.regions[r].index].size(), 1));
      }
    for (std::size_t i = 0; i < p.input_shapes.size(); ++i) {
      l.input_offset.push_back(l.bytes);
      l.bytes +=
          align(std::max<std::uint64_t>(nbytes_of(p.input_shapes[i], file.inputs[i].dtype), 1));
    }
    // An output alone in a scratch region of its own size is written where the caller wants it.
    std::vector<int> users(p.regions.size(), 0);
    for (const auto &o : p.outputs)
      ++users[o.ref.region];
    for (std::size_t j = 0; j < p.outputs.size(); ++j) {
      const auto &o = p.outputs[j];
      const auto &g = p.regions[o.ref.region];
      if (g.kind == detail::SavedRegion::Kind::scratch && users[o.ref.region] == 1 &&
          o.ref.offset == 0 && g.nbytes == nbytes_of(o.shape, file.outputs[j].dtype)) {
        l.direct[o.ref.region] = int(j);
        l.output_direct[j] = true;
      }
    }
    workspace_bytes = std::max(workspace_bytes, l.bytes);
    layouts.push_back(std::move(l));
  }

  static std::uint64_t nbytes_of(const std::vector<std::int64_t> &shape, DataType dt) {
    std::uint64_t n = dt.nbytes();
    for (auto d : shape)
      n *= std::uint64_t(d);
    return n;
  }

  // ---- workspaces -----------------------------------------------------------------------------
  std::unique_ptr<detail::ModelWorkspace> make_workspace() const {
    auto ws = std::make_unique<detail::ModelWorkspace>();
    ws->block = allocate_storage(std::max<std::uint64_t>(workspace_bytes, 1), device);
    if (state_bytes > 0) { // the operators' state as saved (counters at zero), one copy each
      ws->state = allocate_storage(state_bytes, device);
      for (const auto &[blob, offset] : state_offset)
        copy(static_cast<char *>(ws->state->ptr) + offset,
             static_cast<const char *>(data->ptr) + blob_offset[blob], file.blobs[blob].size(), nullptr);
      if (!emulated)
        cuda::check(cuda::driver().cuStreamSynchronize(nullptr), str_cat(where, ": copying the state"));
    }
    ws->replays.resize(file.programs.size());
    if (!emulated)
      cuda::check(cuda::driver().cuEventCreate(&ws->done, CU_EVENT_DISABLE_TIMING),
                  str_cat(where, ": creating an event"));
    std::lock_guard<std::mutex> lock(mu);
    ++made;
    return ws;
  }

  /// An idle workspace, preferring one last used on `stream`; a new one when none is idle.
  std::unique_ptr<detail::ModelWorkspace> acquire(CUstream stream) const {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!idle.empty()) {
        auto it = std::find_if(idle.begin(), idle.end(),
                               [&](const auto &w) { return w->last == stream; });
        if (it == idle.end()) it = idle.end() - 1;
        auto ws = std::move(*it);
        idle.erase(it);
        return ws;
      }
    }
    return make_workspace();
  }

  void release(std::unique_ptr<detail::ModelWorkspace> ws) const {
    std::lock_guard<std::mutex> lock(mu);
    idle.push_back(std::move(ws));
  }

  // ---- replay ---------------------------------------------------------------------------------
  /// Enqueues program k's commands on `stream` (the current stream), its regions at `base`.
  void enqueue(std::size_t k, const std::vector<char *> &base, CUstream stream) const {
    const auto &p = file.programs[k];
    auto address = [&](const detail::SavedRef &ref) -> void * {
      return ref.region == detail::no_region ? nullptr : base[ref.region] + ref.offset;
    };
    const bool host = uses_host_memory(device);
    std::vector<backend::KernelArg> kargs;
    std::vector<TensorMap> maps;
    for (const auto &c : p.commands) {
      switch (c.kind) {
      case detail::SavedCommand::Kind::kernel: {
        kargs.clear();
        maps.clear();
        maps.reserve(c.args.size());
        for (const auto &a : c.args) {
          switch (a.kind) {
          case backend::KernelArg::Kind::Pointer:
            kargs.push_back(backend::KernelArg::pointer(address(a.ref)));
            break;
          case backend::KernelArg::Kind::Int:
            kargs.push_back(backend::KernelArg::integer(a.dtype, a.i));
            break;
          case backend::KernelArg::Kind::Float:
            kargs.push_back(backend::KernelArg::floating(a.dtype, a.f));
            break;
          case backend::KernelArg::Kind::Bytes:
            maps.push_back(TensorMap::tiled(TensorMap::Spec{address(a.ref), a.dtype, a.shape, a.box,
                                                            TensorMap::Swizzle(a.swizzle)}));
            kargs.push_back(
                backend::KernelArg::bytes(&maps.back().map(), std::int64_t(sizeof(CUtensorMap))));
            break;
          }
        }
        const auto &[m, name] = file.kernels[c.kernel];
        if (emulated && runtime::detail::skip_emulated_launches())
          break; // a dry run (compiled_module.hpp)
        if (emulated)
          modules[m]->emulator->launch(name, kargs, c.grid, c.block, c.smem);
        else
          runtime::launch_with_args(functions[c.kernel], name, c.grid, c.block, c.smem, stream,
                                    kargs, programmatic[c.kernel]);
        break;
      }
      case detail::SavedCommand::Kind::copy:
        copy(address(c.dst), address(c.src), c.n, stream);
        break;
      case detail::SavedCommand::Kind::fill:
        if (host)
          std::memset(address(c.dst), c.value, c.n);
        else
          cuda::check(cuda::driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(address(c.dst)),
                                                     c.value, c.n, stream),
                      "model: a fill");
        break;
      case detail::SavedCommand::Kind::write:
        runtime::detail::copy_bytes(address(c.dst), device, host, c.bytes.data(), Device::cpu(),
                                    true, c.bytes.size());
        break;
      }
    }
  }

  /// Copies n bytes within the device, ordered on `stream`.
  void copy(void *dst, const void *src, std::size_t n, CUstream stream) const {
    if (n == 0 || dst == src) return;
    if (emulated) {
      std::memcpy(dst, src, n);
      return;
    }
    cuda::check(cuda::driver().cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(dst),
                                                    reinterpret_cast<CUdeviceptr>(src), n, stream),
                "model: copying a tensor");
  }

  /// The regions of program k in workspace `ws`; with `replay` (a CUDA graph) the inputs are the
  /// workspace's buffers and every output lies in the workspace, else the caller's memory serves.
  std::vector<char *> bases(std::size_t k, const detail::ModelWorkspace &ws, bool replay,
                            const std::vector<Tensor> *inputs,
                            const std::vector<Tensor> *outputs) const {
    const auto &p = file.programs[k];
    const auto &l = layouts[k];
    char *block = static_cast<char *>(ws.block->ptr);
    std::vector<char *> base(p.regions.size(), nullptr);
    for (std::size_t r = 0; r < p.regions.size(); ++r) {
      const auto &g = p.regions[r];
      switch (g.kind) {
      case detail::SavedRegion::Kind::input:
        base[r] = replay ? block + l.input_offset[g.index]
                         : static_cast<char *>((*inputs)[g.index].data_ptr());
        break;
      case detail::SavedRegion::Kind::scratch:
        base[r] = !replay && l.direct[r] >= 0
                      ? static_cast<char *>((*outputs)[std::size_t(l.direct[r])].data_ptr())
                      : block + l.offset[r];
        break;
      case detail::SavedRegion::Kind::data:
        base[r] = static_cast<char *>(data->ptr) + blob_offset[g.index];
        break;
      case detail::SavedRegion::Kind::state:
        base[r] = static_cast<char *>(ws.state->ptr) + state_offset.at(g.index);
        break;
      case detail::SavedRegion::Kind::errors: // where the kernels report bad indices
        base[r] = static_cast<char *>(runtime::device_error_record(device).data_ptr());
        break;
      }
    }
    return base;
  }

  /// Captures program k over workspace `ws` as a CUDA graph (a failure leaves it to run kernel by
  /// kernel, said under HIDET_DEBUG=1).
  void capture(std::size_t k, detail::ModelWorkspace &ws) const {
    auto &rp = ws.replays[k];
    const auto &drv = cuda::driver();
    Stream s = Stream::create(device, true); // non-blocking: other threads may run meanwhile
    StreamGuard guard(s);
    cuda::check(drv.cuStreamBeginCapture_v2(s.handle(), CU_STREAM_CAPTURE_MODE_RELAXED),
                "model: beginning a capture");
    std::string why;
    try {
      enqueue(k, bases(k, ws, true, nullptr, nullptr), s.handle());
    } catch (const Error &e) {
      why = e.what(); // a command that cannot be captured (a write from host memory)
    }
    CUgraph graph = nullptr;
    CUresult r = drv.cuStreamEndCapture(s.handle(), &graph);
    if (why.empty() && r != CUDA_SUCCESS) why = cuda::error_message(r, "ending the capture");
    if (why.empty()) {
      r = drv.cuGraphInstantiateWithFlags(&rp.exec, graph, 0);
      if (r != CUDA_SUCCESS) why = cuda::error_message(r, "instantiating the CUDA graph");
    }
    if (why.empty()) {
      rp.graph = graph;
      return;
    }
    if (graph) drv.cuGraphDestroy(graph);
    rp.exec = nullptr;
    rp.failed = true;
    if (util::env_bool("HIDET_DEBUG"))
      std::fprintf(stderr, "hidet: %s runs kernel by kernel (no CUDA graph): %s\n", where.c_str(),
                   why.c_str());
  }

  /// Runs program k on checked inputs into checked outputs (see the top of model.hpp).
  void run(std::size_t k, const std::vector<Tensor> &inputs, const std::vector<Tensor> &outputs,
           const Stream &stream) const {
    runtime::check_device_errors(); // what an earlier run's kernels found (an index out of range)
    const auto &p = file.programs[k];
    const auto &l = layouts[k];
    CUstream cs = stream.handle();
    if (!emulated) ensure_some_context(); // a thread the caller started
    StreamGuard guard(stream);
    // A run captured into the caller's CUDA graph (CompiledGraph::cuda_graph over a loaded graph)
    // launches kernel by kernel and records no event: the caller's graph orders its work.
    CUstreamCaptureStatus capture_status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!emulated)
      cuda::check(cuda::driver().cuStreamIsCapturing(cs, &capture_status),
                  str_cat(where, ": querying the stream"));
    const bool captured = capture_status != CU_STREAM_CAPTURE_STATUS_NONE;
    std::unique_ptr<detail::ModelWorkspace> ws = acquire(cs);
    struct Release { // the workspace goes back to the pool however the run ends
      const State &s;
      std::unique_ptr<detail::ModelWorkspace> &ws;
      CUstream stream;
      bool captured;
      ~Release() {
        if (ws->done && !captured) cuda::driver_table().cuEventRecord(ws->done, stream);
        ws->last = stream;
        ws->used = !captured;
        s.release(std::move(ws));
      }
    };
    bool other_stream = ws->used && ws->last != cs && ws->done;
    Release release{*this, ws, cs, captured};
    if (other_stream) // ordered after that stream's use of the workspace
      cuda::check(cuda::driver().cuStreamWaitEvent(cs, ws->done, 0),
                  str_cat(where, ": waiting for another stream"));
    bool replay = !emulated && options.cuda_graph && !captured && !ws->replays[k].failed;
    if (replay && !ws->replays[k].exec) {
      capture(k, *ws);
      replay = ws->replays[k].exec != nullptr;
    }
    std::vector<char *> base = bases(k, *ws, replay, &inputs, &outputs);
    if (replay) {
      for (std::size_t i = 0; i < inputs.size(); ++i)
        copy(static_cast<char *>(ws->block->ptr) + l.input_offset[i], inputs[i].data_ptr(),
             inputs[i].nbytes(), cs);
      cuda::check(cuda::driver().cuGraphLaunch(ws->replays[k].exec, cs),
                  str_cat(where, ": launching the CUDA graph"));
      for (std::size_t i = 0; i < inputs.size(); ++i) // the inputs' new values (a cache)
        if (file.inputs[i].updated)
          copy(inputs[i].data_ptr(), static_cast<char *>(ws->block->ptr) + l.input_offset[i],
               inputs[i].nbytes(), cs);
    } else {
      enqueue(k, base, cs);
    }
    for (std::size_t j = 0; j < outputs.size(); ++j)
      if (replay || !l.output_direct[j])
        copy(outputs[j].data_ptr(), base[p.outputs[j].ref.region] + p.outputs[j].ref.offset,
             outputs[j].nbytes(), cs);
  }

  // ---- checks ---------------------------------------------------------------------------------
  /// For memory hidet did not allocate (tensor_view, DLPack, the C ABI): that `t`'s bytes lie in
  /// one device allocation (on a GPU: cuPointerGetAttribute; on the emulator: when the pointer is
  /// in a block of hidet's allocator, that the block holds them).
  void check_memory(const Tensor &t, const std::string &what) const {
    if (t.nbytes() == 0 || t.storage()->alloc) return;
    auto p = reinterpret_cast<std::uintptr_t>(t.data_ptr());
    std::uintptr_t start = 0;
    std::size_t size = 0;
    if (emulated) {
      auto [base, n] = allocator(device).find_live(t.data_ptr());
      if (!base) return; // host memory of the program's own: the emulator bounds-checks launches
      start = reinterpret_cast<std::uintptr_t>(base), size = n;
    } else {
      const auto &drv = cuda::driver();
      unsigned int type = 0;
      CUdeviceptr dp = CUdeviceptr(p), range = 0;
      if (drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp) != CUDA_SUCCESS ||
          type != CU_MEMORYTYPE_DEVICE)
        throw ValueError(
            str_cat(what, ": the data pointer is not GPU memory (host memory?): give memory from "
                          "cuMemAlloc, cudaMalloc or hidet_device_malloc"));
      if (drv.cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dp) !=
              CUDA_SUCCESS ||
          drv.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dp) != CUDA_SUCCESS)
        return;
      start = std::uintptr_t(range);
    }
    if (p + t.nbytes() > start + size)
      throw ValueError(str_cat(what, ": the allocation at the data pointer holds ",
                               start + size - p, " bytes from it; ", "the tensor of shape ",
                               hidet::detail::shape_str(t.shape()), " needs ", t.nbytes()));
  }

  /// The program for `inputs`, after checking their count, dtype, device and rank.
  std::size_t check_inputs(const std::vector<Tensor> &inputs) const {
    const auto &ins = file.inputs;
    if (inputs.size() != ins.size()) {
      std::string sig;
      for (const auto &t : ins)
        sig += (sig.empty() ? "" : ", ") + t.str();
      throw ValueError(str_cat(where, " takes ", ins.size(), " input", ins.size() == 1 ? "" : "s",
                               " (", sig, "), got ", inputs.size()));
    }
    std::vector<std::vector<std::int64_t>> shapes;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor &x = inputs[i];
      auto what = [&] { return str_cat(where, ": input ", i, " (", ins[i].str(), ")"); };
      if (!x.defined()) throw ValueError(str_cat(what(), ": no tensor given"));
      if (x.is_symbolic())
        throw ValueError(str_cat(what(), ": a symbolic tensor; give one with data"));
      if (x.dtype() != ins[i].dtype)
        throw ValueError(
            str_cat(what(), ": expected dtype ", ins[i].dtype.name(), ", got ", x.dtype().name()));
      if (x.device() != device)
        throw ValueError(str_cat(what(), ": the tensor is on ", x.device(), "; the model runs on ",
                                 device, " (move the input there first)"));
      if (x.ndim() != int(ins[i].shape.size()))
        throw ValueError(str_cat(what(), ": expected rank ", ins[i].shape.size(),
                                 ", got a tensor of shape ", hidet::detail::shape_str(x.shape())));
      for (std::size_t d = 0; d < ins[i].shape.size(); ++d)
        if (ins[i].shape[d] >= 0 && x.shape()[d] != ins[i].shape[d])
          throw ValueError(str_cat(what(), ": dimension ", d, " must be ", ins[i].shape[d],
                                   ", got a tensor of shape ",
                                   hidet::detail::shape_str(x.shape())));
      if (x.nbytes() > 0 && !x.data_ptr())
        throw ValueError(str_cat(what(), ": a null data pointer"));
      check_memory(x, what());
      shapes.push_back(x.shape());
    }
    return program_for(shapes);
  }

  void check_outputs(std::size_t k, const std::vector<Tensor> &outputs) const {
    const auto &p = file.programs[k];
    const auto &outs = file.outputs;
    if (outputs.size() != outs.size())
      throw ValueError(str_cat(where, " has ", outs.size(), " output", outs.size() == 1 ? "" : "s",
                               ", ", outputs.size(), " were given"));
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      const Tensor &y = outputs[j];
      auto what = [&] { return str_cat(where, ": output ", j, " (", outs[j].str(), ")"); };
      if (!y.defined() || y.is_symbolic())
        throw ValueError(str_cat(what(), ": no tensor with memory given"));
      if (y.dtype() != outs[j].dtype)
        throw ValueError(
            str_cat(what(), ": expected dtype ", outs[j].dtype.name(), ", got ", y.dtype().name()));
      if (y.device() != device)
        throw ValueError(
            str_cat(what(), ": the tensor is on ", y.device(), "; the model runs on ", device));
      if (y.shape() != p.outputs[j].shape)
        throw ValueError(str_cat(what(), ": for inputs of shapes ",
                                 detail::shapes_str(p.input_shapes), " the output has shape ",
                                 hidet::detail::shape_str(p.outputs[j].shape), ", got ",
                                 hidet::detail::shape_str(y.shape())));
      if (y.nbytes() > 0 && !y.data_ptr())
        throw ValueError(str_cat(what(), ": a null data pointer"));
      check_memory(y, what());
    }
  }

  // ---- loading --------------------------------------------------------------------------------
  void load_modules() {
    for (const auto &m : file.modules) {
      std::shared_ptr<runtime::detail::KernelShared> shared;
      if (emulated) {
        shared = runtime::detail::find_emulated_module(m.key); // built in this process already
        if (!shared) {
          if (m.ir.empty())
            throw ValueError(str_cat("load: ", where, ": kernel module '", m.name,
                                     "' has no IR for the emulator"));
          shared = std::make_shared<runtime::detail::KernelShared>();
          shared->key = m.key;
          shared->module_name = m.name;
          shared->emulator = std::make_shared<backend::emu::Program>(
              ir::deserialize_module(m.ir, str_cat(where, " (module '", m.name, "')")));
          runtime::detail::register_emulated_module(shared);
        }
      } else {
        if (m.cubin.empty())
          throw ValueError(str_cat("load: ", where, ": kernel module '", m.name, "' has no cubin"));
        shared = std::make_shared<runtime::detail::KernelShared>();
        ensure_some_context();
        shared->module = runtime::load_module(std::vector<char>(m.cubin.begin(), m.cubin.end()));
        shared->programmatic = runtime::programmatic_launch_for(m.arch);
      }
      modules.push_back(std::move(shared));
    }
    std::vector<std::uint64_t> max_smem(file.kernels.size(), 0);
    for (const auto &p : file.programs)
      for (const auto &c : p.commands)
        if (c.kind == detail::SavedCommand::Kind::kernel)
          max_smem[c.kernel] = std::max(max_smem[c.kernel], c.smem);
    for (std::size_t k = 0; k < file.kernels.size(); ++k) {
      const auto &[m, name] = file.kernels[k];
      programmatic.push_back(modules[m]->programmatic);
      if (emulated) continue;
      functions.push_back(runtime::get_function(modules[m]->module, name.c_str()));
      if (max_smem[k] > 0) // (static shared memory beside it may pass 48 KB: always allowed)
        runtime::set_max_dynamic_smem(functions.back(), int(max_smem[k]), name);
    }
  }

  void upload_data() {
    const auto &block = file.blob_block;
    data = allocate_storage(std::max<std::size_t>(block.size(), 1), device);
    runtime::detail::copy_bytes(data->ptr, device, uses_host_memory(device), block.data(),
                                Device::cpu(), true, block.size());
    for (const auto &b : file.blobs) {
      blob_offset.push_back(std::uint64_t(b.data() - block.data()));
      blob_size.push_back(b.size());
    }
    file.blobs.clear(); // views into the file's bytes, which go away
    file.blob_block = {};
  }
};

HIDET_INLINE Model Model::load(const std::string &path, ModelOptions options) {
  auto bytes = detail::FileBytes::open(path);
  std::string where = str_cat("'", path, "'");
  if (!bytes) throw ValueError(str_cat("load: cannot read ", where));
  detail::SavedHeader h = detail::read_header(bytes->view(), where);
  std::string here = detail::saved_graph_target();
  if (h.target != here) {
    if (here == "emulator")
      throw ValueError(
          str_cat("load: ", where, " holds kernels compiled for ", h.target,
                  "; this process runs kernels on the CPU emulator (no GPU), which needs their IR: "
                  "load it on a ",
                  h.target, " GPU, or export the model on the emulator"));
    throw ValueError(str_cat("load: ", where, " holds kernels compiled for ", h.target,
                             "; this GPU (", runtime::device_info(0).name, ") is ", here,
                             ": compile and save (export) the model on this architecture"));
  }
  auto s = std::make_shared<State>();
  s->path = path;
  s->where = str_cat("model ", where);
  s->options = options;
  s->file = detail::decode_payload(h.payload, where);
  s->file.version = h.version;
  s->file.target = h.target;
  const auto &f = s->file;
  if (f.inputs.empty() || f.programs.empty())
    throw ValueError(str_cat("load: ", where, " has no inputs or no programs"));
  for (std::size_t k = 0; k < f.programs.size(); ++k) {
    const auto &p = f.programs[k];
    for (std::size_t i = 0; i < p.input_shapes.size(); ++i)
      for (std::size_t d = 0; d < p.input_shapes[i].size(); ++d)
        if (p.input_shapes[i][d] < 0 ||
            (f.inputs[i].shape[d] >= 0 && p.input_shapes[i][d] != f.inputs[i].shape[d]))
          throw ValueError(str_cat("load: ", where,
                                   " is corrupt (a program's input shapes do not fit the inputs)"));
    if (!s->program_of.emplace(p.input_shapes, k).second)
      throw ValueError(
          str_cat("load: ", where, " is corrupt (two programs for one set of input shapes)"));
    s->lay_out(k);
  }
  s->emulated = runtime::cuda_emulated();
  s->load_modules();
  s->upload_data();
  bytes.reset();
  // Workspaces made now (with their CUDA graphs), so that the first run costs what later runs do.
  for (int i = 0; i < std::max(options.workspaces, 0); ++i) {
    auto ws = s->make_workspace();
    if (!s->emulated && options.cuda_graph)
      for (std::size_t k = 0; k < f.programs.size(); ++k)
        s->capture(k, *ws);
    s->release(std::move(ws));
  }
  Model m;
  m.s_ = std::move(s);
  if (!m.s_->emulated && options.warm_up) { // see ModelOptions::warm_up
    for (const auto &p : f.programs) {
      std::vector<Tensor> xs;
      for (std::size_t i = 0; i < p.input_shapes.size(); ++i)
        xs.push_back(zeros(p.input_shapes[i], f.inputs[i].dtype, m.s_->device));
      m.run(xs);
    }
    current_stream().synchronize();
  }
  return m;
}

HIDET_INLINE Model::State &Model::state() const {
  if (!s_)
    throw ValueError("hidet::Model: this model holds nothing (default-constructed): assign "
                     "Model::load(path) to it");
  return *s_;
}

HIDET_INLINE const std::vector<ModelTensorInfo> &Model::inputs() const {
  return state().file.inputs;
}
HIDET_INLINE const std::vector<ModelTensorInfo> &Model::outputs() const {
  return state().file.outputs;
}
HIDET_INLINE const std::string &Model::target() const { return state().file.target; }

HIDET_INLINE std::vector<std::vector<std::vector<std::int64_t>>> Model::compiled_shapes() const {
  std::vector<std::vector<std::vector<std::int64_t>>> r;
  for (const auto &p : state().file.programs)
    r.push_back(p.input_shapes);
  return r;
}

HIDET_INLINE std::vector<std::vector<std::int64_t>>
Model::output_shapes(const std::vector<std::vector<std::int64_t>> &input_shapes) const {
  const State &s = state();
  std::vector<std::vector<std::int64_t>> r;
  for (const auto &o : s.file.programs[s.program_for(input_shapes)].outputs)
    r.push_back(o.shape);
  return r;
}

HIDET_INLINE std::size_t Model::num_workspaces() const {
  const State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.made;
}

HIDET_INLINE void Model::save(const std::string &path) const {
  const State &s = state();
  detail::SavedFile f = s.file;
  std::string block(s.data->nbytes, '\0');
  runtime::detail::copy_bytes(block.data(), Device::cpu(), true, s.data->ptr, s.device,
                              uses_host_memory(s.device), block.size());
  for (std::size_t i = 0; i < s.blob_offset.size(); ++i)
    f.blobs.push_back(std::string_view(block).substr(s.blob_offset[i], s.blob_size[i]));
  if (!backend::detail::write_file_atomic(path, detail::encode_file(f)))
    throw Error(str_cat("save: cannot write '", path, "'"));
}

HIDET_INLINE std::vector<Tensor> Model::run(const std::vector<Tensor> &inputs,
                                            const Stream &stream) const {
  const State &s = state();
  std::size_t k = s.check_inputs(inputs);
  StreamGuard guard(stream); // the outputs belong to the run's stream (reused only after its work)
  std::vector<Tensor> outs;
  for (std::size_t j = 0; j < s.file.outputs.size(); ++j)
    outs.push_back(empty(s.file.programs[k].outputs[j].shape, s.file.outputs[j].dtype, s.device));
  s.run(k, inputs, outs, stream);
  return outs;
}

HIDET_INLINE void Model::run(const std::vector<Tensor> &inputs, const std::vector<Tensor> &outputs,
                             const Stream &stream) const {
  const State &s = state();
  std::size_t k = s.check_inputs(inputs);
  s.check_outputs(k, outputs);
  s.run(k, inputs, outputs, stream);
}

HIDET_INLINE Tensor tensor_view(void *data, const std::vector<std::int64_t> &shape, DataType dtype,
                                Device device) {
  std::uint64_t n = dtype.nbytes();
  for (auto d : shape) {
    if (d < 0)
      throw ValueError(
          str_cat("tensor_view: a negative extent in shape ", hidet::detail::shape_str(shape)));
    n *= std::uint64_t(d);
  }
  if (!data && n > 0)
    throw ValueError(str_cat("tensor_view: a null data pointer for a tensor of shape ",
                             hidet::detail::shape_str(shape)));
  return Tensor(external_storage(data, n, device, uses_host_memory(device), nullptr), shape, dtype);
}

} // namespace hidet::graph
