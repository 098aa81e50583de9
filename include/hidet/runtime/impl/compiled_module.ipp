// Definitions for hidet/runtime/compiled_module.hpp.
#pragma once

#include "hidet/runtime/compiled_module.hpp"

#include <array>
#include <map>
#include <mutex>

#include "hidet/backend/codegen.hpp"
#include "hidet/backend/compile_cache.hpp"
#include "hidet/backend/emulator/program.hpp"
#include "hidet/backend/kernel_arg.hpp"
#include "hidet/runtime/command_hook.hpp"
#include "hidet/ir/eval.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/detail/kernel_info.hpp"
#include "hidet/runtime/tensor_map.hpp"
#include "hidet/transforms/instantiate_symbols.hpp"
#include "hidet/transforms/lower.hpp"
#include "hidet/util/env.hpp"

namespace hidet {

namespace detail {

HIDET_INLINE bool nvrtc_available() {
  static const bool ok = [] {
    try {
      backend::nvrtc_version();
      return true;
    } catch (const Error &) {
      return false;
    }
  }();
  return ok;
}

/// Bytes of static shared memory a function declares (constant-size shared tensors).
HIDET_INLINE std::size_t static_smem_bytes(const ir::Function &f) {
  struct V : ir::IRVisitor {
    std::size_t bytes = 0;
    void visit_DeclareStmt(const ir::DeclareStmtNode *s) override {
      auto tt = s->var->type.as<ir::TensorTypeNode>();
      if (tt && tt->scope == ir::Scope::Shared && !s->init) {
        auto n = ir::try_evaluate(ir::tensor_storage_size(*tt));
        if (n) bytes += std::size_t(*n) * tt->dtype.nbytes();
      }
      ir::IRVisitor::visit_DeclareStmt(s);
    }
  } v;
  v.visit(f->body);
  return v.bytes;
}

HIDET_INLINE std::string describe_param(const ir::Var &p) {
  return str_cat(p->hint, ": ", ir::to_string(p->type));
}

HIDET_INLINE std::string shape_str(const std::vector<std::int64_t> &s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

} // namespace detail

HIDET_INLINE const std::string &KernelHandle::name() const { return info_->name; }

HIDET_INLINE KernelHandle CompiledModule::operator[](const std::string &name) const {
  for (auto &k : kernels_)
    if (k.name() == name) return k;
  std::string names;
  for (auto &k : kernels_) names += (names.empty() ? "" : ", ") + k.name();
  throw ValueError(str_cat("module has no kernel named '", name, "' (kernels: ", names, ")"));
}

HIDET_INLINE const backend::CompiledBinary &CompiledModule::binary() const {
  static const backend::CompiledBinary empty;
  return binary_ ? *binary_ : empty;
}

HIDET_INLINE std::vector<std::string> CompiledModule::kernel_names() const {
  std::vector<std::string> r;
  for (auto &k : kernels_) r.push_back(k.name());
  return r;
}

HIDET_INLINE const KernelHandle &CompiledModule::single() const {
  if (kernels_.size() != 1)
    throw ValueError(str_cat("module has ", kernels_.size(), " kernels; call one by name: mod[\"name\"](...)"));
  return kernels_[0];
}

HIDET_INLINE CompiledModule CompiledModule::build(const ir::Module &m, const BuildOptions &opts,
                                                  SourceLoc loc) {
  CompiledModule cm;
  bool has_kernel = false;
  for (auto &f : m->functions) has_kernel |= f->func_kind == ir::FuncKind::Kernel;
  if (!has_kernel) throw DSLError("the module defines no kernel (use mod.kernel(...))", loc);

  cm.lowered_ = ir::lower(m);
  auto src = backend::generate_cuda(cm.lowered_);
  cm.source_ = src.code;
  cm.emulated_ = runtime::cuda_emulated();

  backend::CompileOptions co;
  co.arch = opts.arch;
  if (co.arch.empty() && !cm.emulated_) co.arch = runtime::device_info(0).arch();
  co.lineinfo = opts.lineinfo;
  co.fast_math = opts.fast_math;
  co.extra = opts.nvrtc_options;
  backend::check_primitive_arch(cm.lowered_, co.arch.empty() ? backend::default_cuda_arch() : co.arch);
  std::string module_name = m->functions.empty() ? "module" : m->functions.front()->name;
  for (auto &f : m->functions)
    if (f->func_kind == ir::FuncKind::Kernel) {
      module_name = f->name;
      break;
    }

  auto shared = std::make_shared<KernelHandle::Shared>();
  auto binary = std::make_shared<backend::CompiledBinary>();
  cm.binary_ = binary;
  shared->binary = binary;
  shared->module_name = module_name;
  shared->key = backend::compile_cache_key(cm.source_, co);
  if (cm.emulated_) {
    // The emulator runs the lowered IR; NVRTC still compiles the generated code (when it is
    // installed, unless HIDET_EMULATOR_NVRTC=0) so that every kernel is proven to compile for a
    // real GPU.
    static const bool nvrtc_by_default = util::env_bool("HIDET_EMULATOR_NVRTC", true);
    if (opts.emulator_nvrtc.value_or(nvrtc_by_default) && detail::nvrtc_available())
      *binary = backend::compile_cuda_cached(cm.source_, module_name, co);
    shared->emulator = std::make_shared<backend::emu::Program>(cm.lowered_);
    runtime::detail::register_emulated_module(shared);
  } else {
    *binary = backend::compile_cuda_cached(cm.source_, module_name, co);
    ensure_some_context();
    shared->module = runtime::load_module(binary->cubin);
    shared->programmatic = runtime::programmatic_launch_for(binary->arch);
  }

  for (auto &lf : cm.lowered_->functions) {
    if (lf->func_kind != ir::FuncKind::Kernel) continue;
    auto info = std::make_shared<KernelHandle::Info>();
    info->name = lf->name;
    info->lowered = lf;
    info->original = m->lookup(lf->name);
    info->symbols = ir::symbol_sources(info->original);
    info->static_smem = detail::static_smem_bytes(lf);
    const auto &dev = runtime::device_info(0);
    if (info->static_smem > 48 * 1024)
      throw DSLError(str_cat("kernel '", lf->name, "' declares ", info->static_smem,
                             " bytes of static shared memory; CUDA allows at most 49152 (48 KB) of static shared "
                             "memory per block: use dynamic_shared_tensor and attrs.cuda.dynamic_smem_bytes for more"),
                     info->original->loc);
    if (info->static_smem > std::size_t(dev.max_shared_per_block_optin))
      throw DSLError(str_cat("kernel '", lf->name, "' declares ", info->static_smem, " bytes of shared memory; ",
                             dev.name, " allows ", dev.max_shared_per_block_optin, " per block"),
                     info->original->loc);
    if (shared->module) info->function = runtime::get_function(shared->module, lf->name.c_str());
    cm.kernels_.emplace_back(info, shared);
  }
  return cm;
}

namespace runtime::detail {
HIDET_INLINE bool &skip_emulated_launches() {
  thread_local bool skip = false;
  return skip;
}

struct EmulatedModules {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<KernelShared>> by_key;
};
HIDET_INLINE EmulatedModules &emulated_modules() {
  static EmulatedModules m;
  return m;
}

HIDET_INLINE std::shared_ptr<KernelShared> find_emulated_module(const std::string &key) {
  auto &m = emulated_modules();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.by_key.find(key);
  return it == m.by_key.end() ? nullptr : it->second.lock();
}

HIDET_INLINE void register_emulated_module(const std::shared_ptr<KernelShared> &shared) {
  auto &m = emulated_modules();
  std::lock_guard<std::mutex> lock(m.mu);
  m.by_key[shared->key] = shared;
}
} // namespace runtime::detail

HIDET_INLINE void KernelHandle::launch(const std::vector<LaunchArg> &args) const {
  const auto &orig = info_->original;
  const auto &params = orig->params;
  auto sig = [&] {
    std::string s;
    for (auto &p : params) s += (s.empty() ? "" : ", ") + detail::describe_param(p);
    return s;
  };
  if (args.size() != params.size())
    throw ValueError(str_cat("kernel '", info_->name, "' takes ", params.size(), " arguments (", sig(), "), got ",
                             args.size()));
  bool emulated = shared_->emulator != nullptr;
  ir::VarBindings env;
  std::vector<backend::KernelArg> kargs;
  // Bind symbolic dims first, so that compound dims can be checked.
  for (auto &[var, src] : info_->symbols) {
    auto *t = std::get_if<const Tensor *>(&args[src.param_index].value);
    if (!t) continue; // reported below
    if (std::size_t((*t)->ndim()) > src.dim_index) env[var.get()] = double((*t)->shape()[src.dim_index]);
  }
  // Integer scalars next: tensor types may use scalar parameters (lang::symbol_param) in extents.
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!params[i]->type.as<ir::TensorTypeNode>())
      if (auto *iv = std::get_if<std::int64_t>(&args[i].value)) env[params[i].get()] = double(*iv);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto &p = params[i];
    auto what = [&] { return str_cat("kernel '", info_->name, "' argument ", i, " (", detail::describe_param(p), ")"); };
    auto tt = p->type.as<ir::TensorTypeNode>();
    if (tt && tt->scope == ir::Scope::Param) {
      auto *mp = std::get_if<const TensorMap *>(&args[i].value);
      if (!mp) throw ValueError(str_cat(what(), ": expected a hidet::TensorMap (a by-value tensor map parameter)"));
      if (emulated)
        throw ValueError(str_cat(what(), ": tensor maps (TMA) need a GPU; the CPU emulator cannot run this kernel"));
      kargs.push_back(backend::KernelArg::bytes(&(*mp)->map(), std::int64_t(sizeof(CUtensorMap))));
    } else if (tt) {
      auto *tp = std::get_if<const Tensor *>(&args[i].value);
      if (!tp)
        throw ValueError(str_cat(what(), ": expected a tensor, got ",
                                 std::holds_alternative<const TensorMap *>(args[i].value) ? "a tensor map" : "a scalar"));
      const Tensor &t = **tp;
      if (t.dtype() != tt->dtype)
        throw ValueError(str_cat(what(), ": expected dtype ", tt->dtype.name(), ", got ", t.dtype().name()));
      if (std::size_t(t.ndim()) != tt->rank())
        throw ValueError(str_cat(what(), ": expected rank ", tt->rank(), ", got a tensor of shape ",
                                 detail::shape_str(t.shape())));
      for (std::size_t d = 0; d < tt->rank(); ++d) {
        auto want = ir::try_evaluate(tt->shape[d], env);
        if (!want)
          throw ValueError(str_cat(what(), ": cannot evaluate dimension ", d, " (", ir::to_string(tt->shape[d]), ")"));
        if (std::int64_t(*want) != t.shape()[d])
          throw ValueError(str_cat(what(), ": shape mismatch at dimension ", d, ": expected ", std::int64_t(*want),
                                   " (", ir::to_string(tt->shape[d]), "), got a tensor of shape ",
                                   detail::shape_str(t.shape())));
      }
      if (t.device().kind != runtime::Device::Kind::CUDA)
        throw ValueError(str_cat(what(), ": the tensor is on ", t.device().str(),
                                 "; kernels run on cuda: move it with .to(\"cuda\") or create it on \"cuda\""));
      if (!emulated && t.device().index != 0)
        throw ValueError(str_cat(what(), ": the tensor is on ", t.device().str(), "; ", runtime::kOneGpuPerProcess));
      kargs.push_back(backend::KernelArg::pointer(t.data_ptr()));
    } else {
      DataType d = ir::dtype_of(p->type);
      double v = 0;
      if (auto *iv = std::get_if<std::int64_t>(&args[i].value)) v = double(*iv);
      else if (auto *fv = std::get_if<double>(&args[i].value)) {
        if (!d.is_float()) throw ValueError(str_cat(what(), ": expected an integer, got a floating-point value"));
        v = *fv;
      } else {
        throw ValueError(str_cat(what(), ": expected a scalar of dtype ", d.name(), ", got a tensor"));
      }
      env[p.get()] = v;
      kargs.push_back(d.is_float() ? backend::KernelArg::floating(d, v)
                                   : backend::KernelArg::integer(d, std::get_if<std::int64_t>(&args[i].value)
                                                                       ? *std::get_if<std::int64_t>(&args[i].value)
                                                                       : std::int64_t(v)));
    }
  }
  for (auto &[var, src] : info_->symbols) kargs.push_back(backend::KernelArg::integer(dtypes::i32, std::int64_t(env[var.get()])));
  std::vector<const TensorMap *> maps;
  if (runtime::detail::command_hook()) {
    maps.assign(kargs.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i)
      if (auto *mp = std::get_if<const TensorMap *>(&args[i].value)) maps[i] = *mp;
  }

  auto eval_dims = [&](const std::array<ir::Expr, 3> &dims, const char *what) {
    backend::Dim3 r;
    std::uint32_t *out[3] = {&r.x, &r.y, &r.z};
    for (int i = 0; i < 3; ++i) {
      if (!dims[i]) continue;
      auto v = ir::try_evaluate(dims[i], env);
      if (!v) throw ValueError(str_cat("kernel '", info_->name, "': cannot evaluate ", what, "[", i, "] = ", ir::to_string(dims[i])));
      if (*v < 1)
        throw ValueError(str_cat("kernel '", info_->name, "': ", what, "[", i, "] = ", ir::to_string(dims[i]), " evaluates to ",
                                 std::int64_t(*v), "; launch dimensions must be positive (an empty input?)"));
      *out[i] = std::uint32_t(*v);
    }
    return r;
  };
  const auto &attrs = info_->lowered->attrs;
  backend::Dim3 grid = eval_dims(attrs.grid_dim, "grid_dim");
  backend::Dim3 block = eval_dims(attrs.block_dim, "block_dim");
  if (block.count() > 1024)
    throw ValueError(str_cat("kernel '", info_->name, "': block_dim (", block.x, ", ", block.y, ", ", block.z, ") has ",
                             block.count(), " threads; CUDA allows at most 1024"));
  for (int i = 0; i < 3; ++i) {
    std::uint32_t g = i == 0 ? grid.x : i == 1 ? grid.y : grid.z, c = std::uint32_t(attrs.cluster_dim[std::size_t(i)]);
    if (g % c != 0)
      throw ValueError(str_cat("kernel '", info_->name, "': grid_dim (", grid.x, ", ", grid.y, ", ", grid.z,
                               ") is not a multiple of its cluster_dim (", attrs.cluster_dim[0], ", ",
                               attrs.cluster_dim[1], ", ", attrs.cluster_dim[2], ")"));
  }
  if (grid.y > 65535 || grid.z > 65535)
    throw ValueError(str_cat("kernel '", info_->name, "': grid_dim (", grid.x, ", ", grid.y, ", ", grid.z,
                             ") exceeds the limit of 65535 in y and z"));
  std::size_t smem = 0;
  if (attrs.dynamic_smem_bytes) {
    auto v = ir::try_evaluate(attrs.dynamic_smem_bytes, env);
    if (!v || *v < 0) throw ValueError(str_cat("kernel '", info_->name, "': cannot evaluate dynamic_smem_bytes"));
    smem = std::size_t(*v);
  }
  const auto &dev = runtime::device_info(0);
  if (smem + info_->static_smem > std::size_t(dev.max_shared_per_block_optin))
    throw ValueError(str_cat("kernel '", info_->name, "' needs ", smem + info_->static_smem, " bytes of shared memory (",
                             info_->static_smem, " static + ", smem, " dynamic); ", dev.name, " allows ",
                             dev.max_shared_per_block_optin, " per block"));

  if (auto *hook = runtime::detail::command_hook()) hook->kernel(*this, grid, block, smem, kargs, maps);
  if (emulated) {
    if (!runtime::detail::skip_emulated_launches()) shared_->emulator->launch(info_->name, kargs, grid, block, smem);
    return;
  }
  ensure_some_context(); // a thread the user started may have none yet
  {
    std::lock_guard<std::mutex> g(info_->mu);
    // The opt-in is needed once static plus dynamic shared memory pass 48 KB (49152 bytes of
    // dynamic memory beside a static counter fail to launch without it).
    if (smem > info_->max_dynamic_smem_set && smem + info_->static_smem > 48 * 1024) {
      runtime::set_max_dynamic_smem(info_->function, int(smem), info_->name);
      info_->max_dynamic_smem_set = smem;
    }
  }
  const auto &stream = runtime::current_stream();
  runtime::launch_with_args(info_->function, info_->name, grid, block, smem, stream.handle(), kargs,
                            shared_->programmatic);
  static const bool sync_launch = util::env_bool("HIDET_SYNC_LAUNCH");
  if (sync_launch) {
    // Localize faults: wait for this kernel and name it if it failed.
    auto r = cuda::driver().cuStreamSynchronize(stream.handle());
    if (r != CUDA_SUCCESS)
      throw CudaError(cuda::error_message(r, str_cat("kernel '", info_->name, "' (HIDET_SYNC_LAUNCH=1)")));
  }
}

} // namespace hidet

namespace hidet::lang {
HIDET_INLINE CompiledModule ScriptModule::build(const BuildOptions &options) const {
  return CompiledModule::build(ir(), options, {});
}
HIDET_INLINE CompiledModule ScriptModule::build() const { return build(BuildOptions{}); }
} // namespace hidet::lang
