// The model file's contents and their encoding (graph/model.hpp, "A model file"): what
// CompiledGraph::save and graph::save_model write and Model::load reads. Internal.
//
//   header   magic "HIDETCG\n", format, hidet version, target, payload size, data block offset,
//            checksums (util::hash128 of the payload before the data block, util::block_checksum
//            of the data block: at memory speed, as a model's weights are most of the file)
//   payload  inputs and outputs (ModelTensorInfo), kernel modules (cubin, lowered IR), kernels,
//            data blobs (a table, then their bytes at 256-byte-aligned offsets of one block, which
//            loading uploads with one copy), programs (one per set of input shapes)
//
// A program is one recorded run: its regions (an input, memory each run allocates, or a data
// blob), its commands (kernel launches with their arguments, copies, fills, writes of host bytes)
// and its outputs, each a place (region, offset). Decoding checks every index it reads.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "hidet/backend/kernel_arg.hpp"
#include "hidet/graph/model.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/util/bytes.hpp"
#include "hidet/util/hash.hpp"
#include "hidet/version.hpp"

namespace hidet::graph::detail {

inline constexpr char saved_graph_magic[8] = {'H', 'I', 'D', 'E', 'T', 'C', 'G', '\n'};
// 2: every kernel starts with HIDET_GRID_DEPENDENCY_SYNC and is launched as a programmatic
// dependent (format 1's cubins lack the wait, so they cannot be launched that way).
// 3: each input says whether the graph updates it in place.
// 4: several programs (one per set of input shapes) sharing modules and data; tensor names and
// symbolic shapes; the emulator's lowered IR; data in one aligned block with its own checksum.
// 5: state regions. 6: the intrinsics' numbers in the emulator's IR moved (Intrinsic::Erfc).
inline constexpr std::uint32_t saved_graph_format = 6;
inline constexpr std::uint32_t no_region = ~std::uint32_t(0);
inline constexpr std::uint64_t blob_alignment = 256;

/// A place in the memory of a run: byte `offset` of region `region` (no_region: a null pointer).
struct SavedRef {
  std::uint32_t region = no_region;
  std::uint64_t offset = 0;
};

struct SavedArg {
  backend::KernelArg::Kind kind = backend::KernelArg::Kind::Int; ///< Bytes: a tensor map
  DataType dtype;
  SavedRef ref; ///< Pointer, and the tensor map's address
  std::int64_t i = 0;
  double f = 0;
  std::vector<std::int64_t> shape, box; ///< a tensor map
  std::uint8_t swizzle = 0;
};

struct SavedCommand {
  enum class Kind : std::uint8_t { kernel, copy, fill, write } kind = Kind::kernel;
  std::uint32_t kernel = 0; ///< into SavedFile::kernels
  backend::Dim3 grid, block;
  std::uint64_t smem = 0;
  std::vector<SavedArg> args;
  SavedRef dst, src;   ///< copy, fill, write
  std::uint64_t n = 0; ///< bytes copied or filled
  std::uint8_t value = 0;
  std::string bytes; ///< write: the bytes written from the host
};

struct SavedRegion {
  /// data: read-only bytes shared by every run (weights, constants); state: memory an operator
  /// keeps between launches (split-k counters, padding buffers), saved with its bytes, of which
  /// each workspace of a loaded model gets its own copy (runs in parallel must not share it);
  /// errors: the device's error record (runtime/device_errors.hpp), the loading process's own.
  enum class Kind : std::uint8_t { input, scratch, data, state, errors } kind = Kind::scratch;
  std::uint64_t index = 0; ///< input: the model input; data, state: the blob
  std::uint64_t nbytes = 0;
};

struct SavedModule {
  std::string key, name, arch;
  std::string cubin; ///< empty for modules built on the emulator without NVRTC
  std::string ir;    ///< the lowered IR (ir/serialize.hpp), saved on the emulator
};

/// One output of a program: its shape and where it lies.
struct SavedOutput {
  std::vector<std::int64_t> shape;
  SavedRef ref;
};

/// One recorded run, at one set of input shapes.
struct SavedProgram {
  std::vector<std::vector<std::int64_t>> input_shapes;
  std::vector<SavedOutput> outputs;
  std::vector<SavedRegion> regions;
  std::vector<SavedCommand> commands;
};

/// A model file's contents (see the top of the file).
struct SavedFile {
  std::string version, target; ///< the kernels' architecture ("sm_90a"), or "emulator"
  std::vector<ModelTensorInfo> inputs, outputs;
  std::vector<SavedModule> modules;
  std::vector<std::pair<std::uint32_t, std::string>> kernels; ///< module, kernel name
  /// The data blobs: views into the bytes being written, or into `blob_block` when read.
  std::vector<std::string_view> blobs;
  std::string_view blob_block; ///< read: every blob, at 256-byte-aligned offsets
  std::vector<SavedProgram> programs;
};

/// This process's target: the GPU's architecture, or "emulator".
inline std::string saved_graph_target() {
  return runtime::cuda_emulated() ? std::string("emulator") : runtime::device_info(0).arch();
}

/// "((1, 3, 224, 224), (1,))": the shapes of a set of inputs.
inline std::string shapes_str(const std::vector<std::vector<std::int64_t>> &shapes) {
  std::string s = "(";
  for (std::size_t i = 0; i < shapes.size(); ++i)
    s += (i ? ", " : "") + hidet::detail::shape_str(shapes[i]);
  return s + (shapes.size() == 1 ? ",)" : ")");
}

// ---- encoding -------------------------------------------------------------------------------

inline void write_ref(util::ByteWriter &w, const SavedRef &r) {
  w.pod(r.region);
  w.pod(r.offset);
}

inline void write_info(util::ByteWriter &w, const ModelTensorInfo &t) {
  w.str(t.name);
  w.pod(t.dtype.code);
  w.ints(t.shape);
  for (const auto &d : t.dims)
    w.str(d);
  w.pod(std::uint8_t(t.updated));
}

inline void write_command(util::ByteWriter &w, const SavedCommand &c) {
  w.pod(c.kind);
  switch (c.kind) {
  case SavedCommand::Kind::kernel:
    w.pod(c.kernel);
    w.pod(c.grid);
    w.pod(c.block);
    w.pod(c.smem);
    w.pod(std::uint64_t(c.args.size()));
    for (const auto &a : c.args) {
      w.pod(a.kind);
      w.pod(a.dtype.code);
      write_ref(w, a.ref);
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
    write_ref(w, c.dst);
    write_ref(w, c.src);
    w.pod(c.n);
    break;
  case SavedCommand::Kind::fill:
    write_ref(w, c.dst);
    w.pod(c.n);
    w.pod(c.value);
    break;
  case SavedCommand::Kind::write:
    write_ref(w, c.dst);
    w.str(c.bytes);
    break;
  }
}

/// The whole file: header and payload (see the top of the file).
inline std::string encode_file(const SavedFile &f) {
  util::ByteWriter w;
  w.pod(std::uint64_t(f.inputs.size()));
  for (const auto &t : f.inputs)
    write_info(w, t);
  w.pod(std::uint64_t(f.outputs.size()));
  for (const auto &t : f.outputs)
    write_info(w, t);
  w.pod(std::uint64_t(f.modules.size()));
  for (const auto &m : f.modules) {
    w.str(m.key);
    w.str(m.name);
    w.str(m.arch);
    w.str(m.cubin);
    w.str(m.ir);
  }
  w.pod(std::uint64_t(f.kernels.size()));
  for (const auto &[m, name] : f.kernels) {
    w.pod(m);
    w.str(name);
  }
  w.pod(std::uint64_t(f.programs.size()));
  for (const auto &p : f.programs) {
    for (const auto &s : p.input_shapes)
      w.ints(s);
    w.pod(std::uint64_t(p.outputs.size()));
    for (const auto &o : p.outputs) {
      w.ints(o.shape);
      write_ref(w, o.ref);
    }
    w.pod(std::uint64_t(p.regions.size()));
    for (const auto &r : p.regions) {
      w.pod(r.kind);
      w.pod(r.index);
      w.pod(r.nbytes);
    }
    w.pod(std::uint64_t(p.commands.size()));
    for (const auto &c : p.commands)
      write_command(w, c);
  }
  // The blobs last: a table of (offset, size), then one block of 256-byte-aligned bytes.
  auto align = [](std::uint64_t n) {
    return (n + blob_alignment - 1) / blob_alignment * blob_alignment;
  };
  w.pod(std::uint64_t(f.blobs.size()));
  std::uint64_t total = 0;
  for (const auto &b : f.blobs) {
    w.pod(total);
    w.pod(std::uint64_t(b.size()));
    total += align(b.size());
  }
  w.pod(total);
  std::size_t block = w.out.size(); // the data block: the rest of the payload
  w.out.resize(block + total, '\0');
  std::uint64_t at = 0;
  for (const auto &b : f.blobs) {
    std::memcpy(w.out.data() + block + at, b.data(), b.size());
    at += align(b.size());
  }

  util::ByteWriter head;
  head.out.append(saved_graph_magic, sizeof(saved_graph_magic));
  head.pod(saved_graph_format);
  head.str(HIDET_VERSION_STRING);
  head.str(f.target);
  std::string_view payload = w.out;
  head.pod(std::uint64_t(payload.size()));
  head.pod(std::uint64_t(block));
  head.str(util::hash128(payload.substr(0, block)).hex());
  head.pod(util::block_checksum(payload.substr(block)));
  return head.out + w.out;
}

// ---- decoding -------------------------------------------------------------------------------

/// The header of a model file, checked for magic and format (the caller checks the version and
/// target); returns the payload, its checksum verified.
struct SavedHeader {
  std::uint32_t format = 0;
  std::string version, target;
  std::string_view payload;
};

/// Reads and checks the header of `data` (`where` names the file in errors).
SavedHeader read_header(std::string_view data, const std::string &where);

/// Decodes the payload (see the top of the file); blobs are views into `payload`.
SavedFile decode_payload(std::string_view payload, const std::string &where);

} // namespace hidet::graph::detail
