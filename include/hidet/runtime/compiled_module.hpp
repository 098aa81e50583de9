// CompiledModule: a script module after lowering, CUDA codegen and NVRTC compilation, loaded on
// the GPU (or prepared for the CPU emulator when the 'cuda' device is emulated). Calling a kernel
// checks the arguments against the declared parameters (count, dtype, shape, device), binds the
// symbolic dimensions from the argument shapes, evaluates the launch dimensions and launches on
// the current stream.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "hidet/backend/compiled_binary.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/lang/module.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/stream.hpp"
#include "hidet/runtime/tensor.hpp"

namespace hidet::runtime::detail {
struct KernelInfo;
struct KernelShared;

/// While true on a thread, kernels launched there on the CPU emulator check their arguments and
/// launch dimensions but do not run (a dry run: a compiled graph records the allocations of a
/// second run this way, since only the first run's results are used; on a GPU every launch runs).
bool &skip_emulated_launches();
} // namespace hidet::runtime::detail

namespace hidet {

class TensorMap;

/// Options of ScriptModule::build().
struct BuildOptions {
  std::string arch;             ///< e.g. "sm_90a"; default: the GPU's, else $HIDET_CUDA_ARCH, else sm_90a
  bool lineinfo = true;         ///< -lineinfo (profilers and debuggers map SASS to the DSL source)
  bool fast_math = false;       ///< --use_fast_math
  std::vector<std::string> nvrtc_options; ///< extra NVRTC options
  /// On the emulator: also compile the generated code with NVRTC (when installed), proving that it
  /// compiles for a real GPU. Default: yes, unless HIDET_EMULATOR_NVRTC=0.
  std::optional<bool> emulator_nvrtc;
};

/// One argument of a kernel call: a tensor, a TMA tensor map (for a tensor_map_param) or a scalar.
struct LaunchArg {
  std::variant<const Tensor *, std::int64_t, double, const TensorMap *> value;
  LaunchArg(const Tensor &t) : value(&t) {}
  LaunchArg(const TensorMap &m) : value(&m) {}
  template <class T>
    requires std::is_integral_v<T>
  LaunchArg(T v) : value(static_cast<std::int64_t>(v)) {}
  template <class T>
    requires std::is_floating_point_v<T>
  LaunchArg(T v) : value(static_cast<double>(v)) {}
};

namespace detail {

/// True when NVRTC can be loaded (checked once).
bool nvrtc_available();

/// "(2, 3)", "(6,)", "()": a shape as a Python tuple.
std::string shape_str(const std::vector<std::int64_t> &s);

} // namespace detail

/// A kernel of a compiled module, callable with tensors and scalars.
class KernelHandle {
public:
  /// The kernel's IR (as defined and lowered), where its symbolic dimensions come from, its
  /// static shared memory and its CUfunction on a GPU. A complete type where
  /// "hidet/runtime/detail/kernel_info.hpp" is included.
  using Info = runtime::detail::KernelInfo;
  /// What the kernels of one module share: the loaded CUDA module or the emulator's program.
  using Shared = runtime::detail::KernelShared;

  KernelHandle(std::shared_ptr<Info> info, std::shared_ptr<Shared> shared)
      : info_(std::move(info)), shared_(std::move(shared)) {}

  /// Launches the kernel: k(a, b, c) with hidet::Tensor and scalar arguments.
  template <class... A> void operator()(const A &...args) const { launch({LaunchArg(args)...}); }

  /// Launches with a list of arguments, on `stream` (default: the current stream).
  void launch(const std::vector<LaunchArg> &args) const;

  const std::string &name() const;
  const Info &info() const { return *info_; }
  /// The module the kernel belongs to (its loaded code and binary).
  const std::shared_ptr<Shared> &shared() const { return shared_; }

private:
  std::shared_ptr<Info> info_;
  std::shared_ptr<Shared> shared_;
};

/// The result of ScriptModule::build().
class CompiledModule {
public:
  /// Launches the module's only kernel (an error when it has several: use mod["name"]).
  template <class... A> void operator()(const A &...args) const { single().launch({LaunchArg(args)...}); }
  /// The kernel named `name`.
  KernelHandle operator[](const std::string &name) const;
  /// The generated CUDA C++ source.
  const std::string &source() const { return source_; }
  /// The IR after lowering.
  const ir::Module &lowered_ir() const { return lowered_; }
  /// The compiled binary (empty on the emulator when NVRTC is unavailable).
  const backend::CompiledBinary &binary() const;
  /// True when the kernels run on the CPU emulator.
  bool emulated() const { return emulated_; }
  std::vector<std::string> kernel_names() const;

  static CompiledModule build(const ir::Module &m, const BuildOptions &opts, SourceLoc loc);

private:
  const KernelHandle &single() const;

  std::vector<KernelHandle> kernels_;
  std::string source_;
  ir::Module lowered_;
  std::shared_ptr<const backend::CompiledBinary> binary_; ///< null until built
  bool emulated_ = false;
};

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/compiled_module.ipp"
#endif
