// Script modules: a collection of kernels and device functions defined with C++ lambdas, plus
// the kernel attributes (attrs.cuda.grid_dim, block_dim, dynamic_smem_bytes, min_blocks).
//
//   auto mod = script_module();
//   mod.kernel("matmul", {f32[m][k], f32[k][n], f32[m][n]}, [&](Tensor a, Tensor b, Tensor c) {
//     attrs.cuda.grid_dim = {ceil_div(m, 32), ceil_div(n, 32)};
//     attrs.cuda.block_dim = {32, 32};
//     ...
//   });
//   hidet::CompiledModule cm = mod.build();   // see hidet/runtime/compiled_module.hpp
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "hidet/lang/cuda.hpp"

namespace hidet {
class CompiledModule;
struct BuildOptions;
} // namespace hidet

namespace hidet::lang {

/// A kernel or device-function parameter: a tensor type (f32[m][k]) or a scalar dtype (i32).
struct ParamSpec {
  ParamSpec(const TensorSpec &t) : tensor(t), is_tensor(true) {}
  ParamSpec(const DTypeSpec &d) : tensor(d, {}), scalar(d) {}
  ParamSpec(DataType d) : tensor(d, {}), scalar(d) {}
  TensorSpec tensor;
  DataType scalar;
  bool is_tensor = false;
  bool by_value = false; ///< a TMA tensor map passed by value (see tensor_map_param)
};

/// A kernel parameter holding a TMA tensor map (hidet::TensorMap) by value, as a
/// `const __grid_constant__` parameter: the kernel sees a u8[128] tensor in param space whose
/// address tma_load / tma_store take; the caller passes the TensorMap itself.
inline ParamSpec tensor_map_param() {
  ParamSpec p(TensorSpec(dtypes::u8, {ir::int32(128)}));
  p.by_value = true;
  return p;
}

/// What a body lambda receives for one parameter; converts to Tensor, Var or Expr.
struct ParamHandle {
  ir::Var v;
  operator Tensor() const { return Tensor(v); }
  operator Var() const {
    if (!ir::is_scalar(v->type))
      throw DSLError(str_cat("parameter '", v->hint, "' is a tensor; declare it as Tensor in the lambda"), v->loc);
    return Var(v);
  }
  operator Expr() const { return Expr(ir::Expr(v)); }
};

namespace detail {
template <class T> struct lambda_arity : lambda_arity<decltype(&T::operator())> {};
template <class C, class R, class... A> struct lambda_arity<R (C::*)(A...) const> {
  static constexpr std::size_t value = sizeof...(A);
};
template <class C, class R, class... A> struct lambda_arity<R (C::*)(A...)> {
  static constexpr std::size_t value = sizeof...(A);
};

template <class F, std::size_t... I> void invoke_with_params(F &f, const std::vector<ir::Var> &p, std::index_sequence<I...>) {
  f(ParamHandle{p[I]}...);
}
} // namespace detail

/// Launch attributes, set inside a kernel body: attrs.cuda.grid_dim = {x, y};
struct DimsAttr {
  bool grid;
  void operator=(std::initializer_list<Operand> dims) const { set(std::vector<Operand>(dims)); }
  void operator=(const Operand &d) const { set({d}); }

private:
  void set(const std::vector<Operand> &dims) const {
    const char *name = grid ? "attrs.cuda.grid_dim" : "attrs.cuda.block_dim";
    SourceLoc loc = dims.empty() ? SourceLoc{} : dims[0].loc;
    auto &b = require_builder(name, loc);
    if (b.kind() != ir::FuncKind::Kernel) throw DSLError(str_cat(name, " can only be set in a kernel"), loc);
    if (dims.empty() || dims.size() > 3) throw DSLError(str_cat(name, " takes 1 to 3 dimensions, got ", dims.size()), loc);
    std::array<ir::Expr, 3> out{ir::int32(1), ir::int32(1), ir::int32(1)};
    std::int64_t total = 1;
    bool all_const = true;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      detail::require_scalar(dims[i], name);
      if (!ir::dtype_of(dims[i].node->type).is_integer())
        throw DSLError(str_cat(name, "[", i, "] must be an integer expression"), dims[i].loc);
      out[i] = detail::convert(dims[i].node, dtypes::i32, dims[i].loc);
      std::int64_t v;
      if (ir::as_const_int(out[i], v)) {
        if (v <= 0) throw DSLError(str_cat(name, "[", i, "] is ", v, "; dimensions must be positive"), dims[i].loc);
        total *= v;
      } else {
        all_const = false;
      }
    }
    if (!grid && all_const && total > 1024)
      throw DSLError(str_cat(name, " has ", total, " threads per block; CUDA allows at most 1024"), loc);
    if (grid) b.attrs().grid_dim = out, b.attrs().has_grid = true;
    else b.attrs().block_dim = out, b.attrs().has_block = true;
  }
};
struct SmemAttr {
  void operator=(const Operand &bytes) const {
    auto &b = require_builder("attrs.cuda.dynamic_smem_bytes", bytes.loc);
    detail::require_scalar(bytes, "dynamic_smem_bytes");
    b.attrs().dynamic_smem_bytes = detail::convert(bytes.node, dtypes::i32, bytes.loc);
  }
};
struct MinBlocksAttr {
  void operator=(int n) const {
    auto &b = require_builder("attrs.cuda.min_blocks", {});
    b.attrs().min_blocks = n;
  }
};
/// attrs.cuda.cluster_dim = {2, 1, 1}: thread-block clusters of that shape (compile time; sm_90).
/// The grid dims must be multiples of it (checked at launch).
struct ClusterDimAttr {
  void operator=(std::initializer_list<int> dims) const {
    auto &b = require_builder("attrs.cuda.cluster_dim", {});
    if (b.kind() != ir::FuncKind::Kernel) throw DSLError("attrs.cuda.cluster_dim can only be set in a kernel", {});
    if (dims.size() < 1 || dims.size() > 3)
      throw DSLError(str_cat("attrs.cuda.cluster_dim takes 1 to 3 dimensions, got ", dims.size()), {});
    std::array<int, 3> c{1, 1, 1};
    int i = 0, total = 1;
    for (int d : dims) {
      if (d < 1) throw DSLError(str_cat("attrs.cuda.cluster_dim[", i, "] is ", d, "; dimensions must be positive"), {});
      c[std::size_t(i++)] = d, total *= d;
    }
    if (total > 8)
      throw DSLError(str_cat("attrs.cuda.cluster_dim has ", total, " blocks; portable clusters have at most 8"), {});
    b.attrs().cluster_dim = c;
  }
  void operator=(int x) const { *this = {x}; }
};
struct CudaAttrs {
  DimsAttr grid_dim{true};
  DimsAttr block_dim{false};
  SmemAttr dynamic_smem_bytes;
  MinBlocksAttr min_blocks;
  ClusterDimAttr cluster_dim;
};
struct Attrs {
  CudaAttrs cuda;
};
/// The attributes of the kernel whose body is being defined.
inline constexpr Attrs attrs{};

/// A device function defined in a module; calling it in device code builds a call.
class DeviceFunction {
public:
  DeviceFunction(std::string name, ir::Type ret, std::vector<ir::Type> params)
      : name_(std::move(name)), ret_(std::move(ret)), params_(std::move(params)) {}
  template <class... A> Action operator()(const A &...args) const { return call({Operand(args)...}); }
  const std::string &name() const { return name_; }

private:
  Action call(std::vector<Operand> args) const {
    SourceLoc loc = args.empty() ? SourceLoc{} : args[0].loc;
    require_kernel(name_.c_str(), loc);
    if (args.size() != params_.size())
      throw DSLError(str_cat("device function '", name_, "' takes ", params_.size(), " arguments, got ", args.size()), loc);
    std::vector<ir::Expr> a;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (ir::is_scalar(params_[i])) a.push_back(detail::store_value(args[i], ir::dtype_of(params_[i]), name_.c_str()));
      else a.push_back(args[i].node);
    }
    return Action(ir::CallNode::make_func(name_, std::move(a), ret_, loc), loc);
  }
  std::string name_;
  ir::Type ret_;
  std::vector<ir::Type> params_;
};

/// A tensor argument for device functions: pass the Tensor itself.
struct TensorArg {
  Tensor t;
  ir::Expr to_ir(SourceLoc) const { return ir::Expr(t.var()); }
};
inline TensorArg pass(const Tensor &t) { return TensorArg{t}; }

/// A module of kernels and device functions written in Hidet Script.
class ScriptModule {
public:
  explicit ScriptModule(std::string name) : st_(std::make_shared<State>()) { st_->name = std::move(name); }

  /// Defines a kernel. `body` takes one Tensor (or Var, for scalar params) per parameter.
  template <class F>
  ScriptModule &kernel(const std::string &name, const std::vector<ParamSpec> &params, F &&body, HIDET_LOC_PARAM) {
    define(name, ir::FuncKind::Kernel, ir::void_type(), params, body, loc_);
    return *this;
  }

  /// Defines a device function returning `ret` (use void_ for none) and returns a callable.
  template <class F>
  DeviceFunction device_function(const std::string &name, DataType ret, const std::vector<ParamSpec> &params, F &&body,
                                 HIDET_LOC_PARAM) {
    auto f = define(name, ir::FuncKind::Device, ir::scalar_type(ret), params, body, loc_);
    std::vector<ir::Type> pt;
    for (auto &p : f->params) pt.push_back(p->type);
    return DeviceFunction(name, ir::scalar_type(ret), pt);
  }
  /// A device function without a return value.
  template <class F>
  DeviceFunction device_function(const std::string &name, const std::vector<ParamSpec> &params, F &&body, HIDET_LOC_PARAM) {
    auto f = define(name, ir::FuncKind::Device, ir::void_type(), params, body, loc_);
    std::vector<ir::Type> pt;
    for (auto &p : f->params) pt.push_back(p->type);
    return DeviceFunction(name, ir::void_type(), pt);
  }

  /// The module's IR (before lowering).
  ir::Module ir() const { return ir::make_module(st_->functions); }
  const std::string &name() const { return st_->name; }

  /// Lowers, generates CUDA C++, compiles it (cached) and loads it; defined in
  /// hidet/runtime/compiled_module.hpp (include hidet/hidet.hpp).
  CompiledModule build() const;
  CompiledModule build(const BuildOptions &options) const;

private:
  struct State {
    std::string name;
    std::vector<ir::Function> functions;
  };

  template <class F>
  ir::Function define(const std::string &name, ir::FuncKind kind, ir::Type ret, const std::vector<ParamSpec> &specs, F &body,
                      SourceLoc loc) {
    if (current_builder())
      throw DSLError(str_cat("function '", name, "' is defined inside the body of '", current_builder()->name(),
                             "'; define functions at module level"),
                     loc);
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
      throw DSLError(str_cat("function name '", name, "' is not a valid identifier"), loc);
    for (char c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
        throw DSLError(str_cat("function name '", name, "' is not a valid identifier"), loc);
    for (auto &f : st_->functions)
      if (f->name == name) throw DSLError(str_cat("module already has a function named '", name, "'"), loc);
    constexpr std::size_t arity = detail::lambda_arity<std::decay_t<F>>::value;
    if (arity != specs.size())
      throw DSLError(str_cat(ir::func_kind_name(kind), " '", name, "' declares ", specs.size(),
                             " parameters but its body lambda takes ", arity),
                     loc);
    std::vector<ir::Var> params;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      auto &s = specs[i];
      std::string pname = s.tensor.name().empty() ? str_cat("arg", i) : s.tensor.name();
      ir::Type t = s.is_tensor ? s.tensor.ir_type(s.by_value ? ir::Scope::Param : ir::Scope::Global)
                               : ir::scalar_type(s.scalar);
      params.push_back(ir::make_var(t, pname, loc));
    }
    FunctionBuilder b(name, kind, loc);
    b.ret_type = ret;
    {
      BuilderGuard g(b);
      detail::invoke_with_params(body, params, std::make_index_sequence<arity>{});
    }
    auto body_stmt = b.finish();
    if (kind == ir::FuncKind::Kernel) {
      if (!b.attrs().has_grid)
        throw DSLError(str_cat("kernel '", name, "' does not set attrs.cuda.grid_dim; set it in the kernel body, e.g. "
                                                 "attrs.cuda.grid_dim = {ceil_div(n, 256)}"),
                       loc);
      if (!b.attrs().has_block)
        throw DSLError(str_cat("kernel '", name, "' does not set attrs.cuda.block_dim; set it in the kernel body, e.g. "
                                                 "attrs.cuda.block_dim = 256"),
                       loc);
    }
    auto f = ir::make_function(name, params, body_stmt, ret, kind, b.attrs(), loc);
    st_->functions.push_back(f);
    return f;
  }

  std::shared_ptr<State> st_;
};

/// A new, empty script module.
inline ScriptModule script_module(std::string name = "module") { return ScriptModule(std::move(name)); }

} // namespace hidet::lang
