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

#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
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
  ir::Var var;           ///< when set: the parameter is this variable (see symbol_param)
};

/// A scalar parameter that is the symbolic dimension `sym` itself (an i32 from symbol("n")): the
/// kernel's tensor types may use it in compound extents (f32[2*n]) and its body may use it
/// anywhere; the caller passes its value like any scalar. Parameter shapes are checked after the
/// scalars are bound.
ParamSpec symbol_param(const Expr &sym, HIDET_LOC_PARAM);

/// A kernel parameter holding a TMA tensor map (hidet::TensorMap) by value, as a
/// `const __grid_constant__` parameter: the kernel sees a u8[128] tensor in param space whose
/// address tma_load / tma_store take; the caller passes the TensorMap itself.
ParamSpec tensor_map_param();

/// What a body lambda receives for one parameter; converts to Tensor, Var or Expr.
struct ParamHandle {
  ir::Var v;
  operator Tensor() const { return Tensor(v); }
  operator Var() const;
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
  void set(const std::vector<Operand> &dims) const;
};
struct SmemAttr {
  void operator=(const Operand &bytes) const;
};
struct MinBlocksAttr {
  void operator=(int n) const;
};
/// attrs.cuda.cluster_dim = {2, 1, 1}: thread-block clusters of that shape (compile time; sm_90).
/// The grid dims must be multiples of it (checked at launch).
struct ClusterDimAttr {
  void operator=(std::initializer_list<int> dims) const;
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
  Action call(std::vector<Operand> args) const;
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
  explicit ScriptModule(std::string name);

  /// Defines a kernel. `body` takes one Tensor (or Var, for scalar params) per parameter, or
  /// all of them as one `const std::vector<ParamHandle> &` (a run-time number of parameters).
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
    if constexpr (std::is_invocable_v<F &, const std::vector<ParamHandle> &>) { // any number of parameters
      std::vector<ir::Var> params = begin_define(name, kind, specs, specs.size(), loc);
      FunctionBuilder b(name, kind, loc);
      b.ret_type = ret;
      {
        BuilderGuard g(b);
        std::vector<ParamHandle> handles;
        for (const auto &p : params) handles.push_back(ParamHandle{p});
        body(handles);
      }
      return end_define(b, std::move(params), std::move(ret));
    } else {
      constexpr std::size_t arity = detail::lambda_arity<std::decay_t<F>>::value;
      std::vector<ir::Var> params = begin_define(name, kind, specs, arity, loc);
      FunctionBuilder b(name, kind, loc);
      b.ret_type = ret;
      {
        BuilderGuard g(b);
        detail::invoke_with_params(body, params, std::make_index_sequence<arity>{});
      }
      return end_define(b, std::move(params), std::move(ret));
    }
  }
  /// Checks a new function's name and its number of parameters (`arity`: the body lambda's);
  /// returns the parameter variables.
  std::vector<ir::Var> begin_define(const std::string &name, ir::FuncKind kind,
                                    const std::vector<ParamSpec> &specs, std::size_t arity,
                                    SourceLoc loc) const;
  /// Finishes the function `b` has built (a kernel must have set its launch dims) and adds it.
  ir::Function end_define(FunctionBuilder &b, std::vector<ir::Var> params, ir::Type ret);

  std::shared_ptr<State> st_;
};

/// A new, empty script module.
inline ScriptModule script_module(std::string name = "module") { return ScriptModule(std::move(name)); }

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/module.ipp"
#endif
