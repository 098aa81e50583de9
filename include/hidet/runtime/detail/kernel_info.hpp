// KernelHandle's internals, KernelHandle::Info and KernelHandle::Shared: the IR of one compiled
// kernel with what the launcher derives from it, and what the kernels of one module share (the
// loaded CUDA module, or the emulator's program). Internal: <hidet/hidet.hpp> does not include
// this header; the launcher (runtime/impl/compiled_module.ipp) and code that inspects a compiled
// kernel (KernelHandle::info(), e.g. the raw CUfunction) do.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hidet/backend/compiled_binary.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/transforms/instantiate_symbols.hpp"

namespace hidet::backend::emu {
class Program;
} // namespace hidet::backend::emu

namespace hidet::runtime::detail {

/// KernelHandle::Info: one kernel of a compiled module.
struct KernelInfo {
  std::string name;
  ir::Function original; ///< as the user defined it (its params are what callers pass)
  ir::Function lowered;  ///< after lowering: original params, then symbolic dims
  std::vector<std::pair<ir::Var, ir::SymbolSource>> symbols;
  std::size_t static_smem = 0;
  CUfunction function = nullptr; ///< on a GPU
  std::size_t max_dynamic_smem_set = 0; ///< the dynamic bytes allowed so far beyond the default
  std::mutex mu;
};

/// KernelHandle::Shared: what the kernels of one compiled module share.
struct KernelShared {
  std::shared_ptr<backend::emu::Program> emulator;
  CUmodule module = nullptr;
  /// The compiled binary (its cubin, empty on the emulator without NVRTC) and the name NVRTC
  /// compiled it under; a saved compiled graph stores them.
  std::shared_ptr<const backend::CompiledBinary> binary;
  std::string module_name;
  /// Identifies the module's code: a hash of its CUDA source and compile options.
  std::string key;
  /// Launch the kernels as programmatic dependents (cuda::programmatic_launch_for their arch).
  bool programmatic = false;
  ~KernelShared() {
    if (module) runtime::unload_module(module);
  }
};

/// The emulated modules built in this process, by KernelShared::key (the emulator runs the IR, which
/// a saved compiled graph does not hold: loading one on the emulator finds its kernels here).
/// Registered by CompiledModule::build; a module stays found while a kernel of it lives.
std::shared_ptr<KernelShared> find_emulated_module(const std::string &key);
void register_emulated_module(const std::shared_ptr<KernelShared> &shared);

} // namespace hidet::runtime::detail
