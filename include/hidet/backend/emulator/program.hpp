// The SIMT emulator's entry point: a Program compiles every kernel and device function of a
// lowered IR module once, then runs kernels on the CPU. Blocks run one after another; the threads
// of a block run in lockstep (exec.hpp). Every global, shared and register access is checked;
// barriers reached by only some threads fail; with HIDET_EMULATOR_RACECHECK=1 shared-memory races
// and reads of never-written shared memory fail too. HIDET_EMULATOR_MAX_STEPS (default 1e10)
// bounds the thread-statements of one launch. A failed launch leaves the Program usable.
// Launches from several host threads are safe; those of one Program take turns.
//
// Limits: pointer arguments that do not point into a tensor argument are registered as
// allocations of unknown extent (accesses through them are only checked against other
// allocations); syncwarp is a no-op (lanes run in lockstep) and does not start a race-check
// epoch; taking the address of a scalar local variable and recursion are rejected at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hidet/backend/kernel_arg.hpp"
#include "hidet/config.hpp"
#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::backend::emu {

/// Reads an unsigned integer environment variable (default when unset or malformed).
std::uint64_t env_u64(const char *name, std::uint64_t dflt);

/// A lowered module prepared for emulation.
class Program {
public:
  /// Compiles every kernel and device function of `lowered`; throws EmulatorError for constructs
  /// the emulator cannot run (naming the function and the line).
  explicit Program(ir::Module lowered);
  ~Program();
  Program(Program &&) noexcept;
  Program &operator=(Program &&) noexcept;

  /// Runs kernel `name` with `args` in the order of its parameters (tensors and pointers: host
  /// pointers; scalars: KernelArg::integer / floating), on `grid` x `block` threads with
  /// `dynamic_smem_bytes` of dynamic shared memory per block.
  void launch(const std::string &name, const std::vector<KernelArg> &args, Dim3 grid, Dim3 block,
              std::size_t dynamic_smem_bytes);

  /// The lowered module this program runs.
  const ir::Module &module() const { return module_; }

private:
  /// The compiled functions and the nodes they own (impl/program.ipp).
  struct Compiled;

  ir::Module module_;
  std::unique_ptr<Compiled> compiled_;
};

} // namespace hidet::backend::emu

#if HIDET_HEADER_ONLY
#include "hidet/backend/emulator/impl/program.ipp"
#endif
