// Definitions for hidet/backend/emulator/program.hpp.
#pragma once

#include "hidet/backend/emulator/program.hpp"

#include <cstdlib>
#include <functional>
#include <mutex>

#include "hidet/backend/emulator/compile.hpp"
#include "hidet/ir/eval.hpp"

namespace hidet::backend::emu {

HIDET_INLINE std::uint64_t env_u64(const char *name, std::uint64_t dflt) {
  const char *v = std::getenv(name);
  if (!v || !*v) return dflt;
  char *end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || d < 0) return dflt;
  return std::uint64_t(d);
}

/// What a Program compiles its module into: one FuncCode per function and the nodes they run.
struct Program::Compiled {
  NodePool pool;
  std::unordered_map<std::string, std::unique_ptr<FuncCode>> funcs;
  /// Held by a launch: the nodes keep per-launch caches (AllocCache), so launches of one program
  /// from several host threads take turns.
  std::mutex launch_mu;

  static void run_block(Context &c, const FuncCode &k, const std::vector<Slot> &values,
                        std::size_t dyn_bytes) {
    enter_frame(c, k, 0);
    c.exited = c.reg(kReturnedReg);
    for (std::size_t i = 0; i < values.size(); ++i) std::fill_n(c.reg(k.param_regs[i]), c.T, values[i]);
    SharedBuffer &dyn = c.dynamic_smem;
    dyn.bytes = dyn_bytes;
    dyn.mem.reset(new std::byte[dyn_bytes + 128]());
    dyn.begin = (std::uintptr_t(dyn.mem.get()) + 127) & ~std::uintptr_t(127);
    if (c.racecheck) dyn.shadow = std::make_unique<SharedShadow>(dyn_bytes);
    Alloc a;
    a.begin = dyn.begin, a.end = dyn.begin + dyn_bytes, a.kind = MemKind::Shared;
    a.name = "dynamic_shared_memory", a.shadow = dyn.shadow.get();
    c.mem.add(std::move(a));

    k.body->exec(c, c.all_threads());

    leave_frame(c, 0, nullptr);
    c.mem.remove(dyn.begin);
    dyn = SharedBuffer();
    for (auto &[key, b] : c.shared) c.mem.remove(b.begin);
    c.shared.clear();
  }

  void check_no_recursion() const {
    std::unordered_map<const FuncCode *, int> state; // 1: on stack, 2: done
    std::function<void(const FuncCode *)> dfs = [&](const FuncCode *f) {
      state[f] = 1;
      for (auto *g : f->callees) {
        if (state[g] == 1)
          throw EmulatorError(str_cat("device function '", g->name, "' is called recursively (from '",
                                      f->name, "'); the emulator does not support recursion"),
                              g->fn->loc);
        if (state[g] == 0) dfs(g);
      }
      state[f] = 2;
    };
    for (auto &[n, f] : funcs)
      if (state[f.get()] == 0) dfs(f.get());
  }
};

HIDET_INLINE Program::Program(ir::Module lowered)
    : module_(std::move(lowered)), compiled_(std::make_unique<Compiled>()) {
  auto &funcs = compiled_->funcs;
  for (auto &f : module_->functions) {
    if (f->func_kind == ir::FuncKind::Host) continue;
    auto fc = std::make_unique<FuncCode>();
    fc->name = f->name, fc->fn = f;
    funcs[f->name] = std::move(fc);
  }
  for (auto &[name, fc] : funcs) FunctionCompiler(compiled_->pool, *fc, funcs).run();
  compiled_->check_no_recursion();
}

HIDET_INLINE Program::~Program() = default;
HIDET_INLINE Program::Program(Program &&) noexcept = default;
HIDET_INLINE Program &Program::operator=(Program &&) noexcept = default;

HIDET_INLINE void Program::launch(const std::string &name, const std::vector<KernelArg> &args,
                                  Dim3 grid, Dim3 block, std::size_t dynamic_smem_bytes) {
  auto it = compiled_->funcs.find(name);
  if (it == compiled_->funcs.end() || it->second->fn->func_kind != ir::FuncKind::Kernel)
    throw ValueError(str_cat("emulator: no kernel named '", name, "' in the module"));
  const FuncCode &k = *it->second;
  std::lock_guard<std::mutex> lock(compiled_->launch_mu);
  const auto &params = k.fn->params;
  if (args.size() != params.size())
    throw ValueError(str_cat("emulator: kernel '", name, "' takes ", params.size(),
                             " arguments, the launch passes ", args.size()),
                     k.fn->loc);
  if (block.count() == 0 || block.count() > std::uint64_t(kMaxThreads) || grid.count() == 0)
    throw ValueError(str_cat("emulator: kernel '", name, "' launched with grid (", grid.x, ", ",
                             grid.y, ", ", grid.z, ") and block (", block.x, ", ", block.y,
                             ", ", block.z, "); blocks need 1 to ", kMaxThreads,
                             " threads and grids at least one block"),
                     k.fn->loc);

  Context c;
  c.kernel = name, c.grid = grid, c.block = block, c.T = int(block.count());
  c.racecheck = env_u64("HIDET_EMULATOR_RACECHECK", 0) != 0;
  c.max_steps = env_u64("HIDET_EMULATOR_MAX_STEPS", 10000000000ull);
  c.all.resize(c.T);
  for (int t = 0; t < c.T; ++t) c.all[t] = std::uint16_t(t);
  c.mark.assign(c.T, 0);
  c.frames.reserve(64);

  // argument values and global allocations
  ir::VarBindings env;
  std::vector<Slot> values(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto &p = params[i];
    const KernelArg &a = args[i];
    bool is_ptr = !ir::is_scalar(p->type);
    if (is_ptr != (a.kind == KernelArg::Kind::Pointer))
      throw ValueError(str_cat("emulator: argument ", i, " ('", p->hint, "') of kernel '", name,
                               "' must be ", is_ptr ? "a pointer" : "a scalar"),
                       k.fn->loc);
    if (is_ptr) {
      values[i].i = std::int64_t(reinterpret_cast<std::uintptr_t>(a.ptr));
      continue;
    }
    DataType d = ir::dtype_of(p->type);
    Slot v = a.kind == KernelArg::Kind::Int ? Slot{a.i} : Slot{.f = a.f};
    values[i] = cast_value(v, a.kind == KernelArg::Kind::Int ? dtypes::i64 : dtypes::f64, d);
    env[p.get()] = d.is_float() ? values[i].f : double(values[i].i);
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto tt = params[i]->type.as<ir::TensorTypeNode>();
    if (!tt || !args[i].ptr) continue;
    auto n = ir::try_evaluate(ir::tensor_storage_size(*tt), env);
    Alloc a;
    a.begin = std::uintptr_t(args[i].ptr), a.kind = MemKind::Global, a.name = params[i]->hint;
    if (n) a.end = a.begin + std::size_t(*n) * tt->dtype.nbytes();
    else a.unbounded = true, a.end = a.begin;
    c.mem.add(std::move(a));
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!ir::is_pointer(params[i]->type) || !args[i].ptr) continue;
    auto addr = std::uintptr_t(args[i].ptr);
    const Alloc *in = c.mem.containing(addr);
    if (in && !in->unbounded) continue;
    Alloc a;
    a.begin = a.end = addr, a.unbounded = true, a.kind = MemKind::Global, a.name = params[i]->hint;
    c.mem.add(std::move(a));
  }

  for (std::uint32_t bz = 0; bz < grid.z; ++bz)
    for (std::uint32_t by = 0; by < grid.y; ++by)
      for (std::uint32_t bx = 0; bx < grid.x; ++bx) {
        c.block_idx = Dim3{bx, by, bz};
        Compiled::run_block(c, k, values, dynamic_smem_bytes);
      }
}

} // namespace hidet::backend::emu
