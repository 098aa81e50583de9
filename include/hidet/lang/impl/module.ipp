// Definitions for hidet/lang/module.hpp.
#pragma once
#include "hidet/lang/module.hpp"

#include <array>
#include <cctype>

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE ParamSpec symbol_param(const Expr &sym, std::source_location loc_) {
  const ir::Expr &e = sym.ir();
  auto v = e.as<ir::VarNode>();
  auto st = e ? e->type.as<ir::ScalarTypeNode>() : nullptr;
  if (!v || !st || !st->dtype.is_integer())
    throw DSLError("symbol_param: expected a symbolic dimension (symbol(\"n\"), an integer variable)", loc_);
  ParamSpec p(st->dtype);
  p.var = ir::Var(v);
  return p;
}

HIDET_INLINE ParamSpec tensor_map_param() {
  ParamSpec p(TensorSpec(dtypes::u8, {ir::int32(128)}));
  p.by_value = true;
  return p;
}

HIDET_INLINE ParamHandle::operator Var() const {
  if (!ir::is_scalar(v->type))
    throw DSLError(str_cat("parameter '", v->hint, "' is a tensor; declare it as Tensor in the lambda"), v->loc);
  return Var(v);
}

HIDET_INLINE void DimsAttr::set(const std::vector<Operand> &dims) const {
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

HIDET_INLINE void SmemAttr::operator=(const Operand &bytes) const {
  auto &b = require_builder("attrs.cuda.dynamic_smem_bytes", bytes.loc);
  detail::require_scalar(bytes, "dynamic_smem_bytes");
  b.attrs().dynamic_smem_bytes = detail::convert(bytes.node, dtypes::i32, bytes.loc);
}

HIDET_INLINE void MinBlocksAttr::operator=(int n) const {
  auto &b = require_builder("attrs.cuda.min_blocks", {});
  b.attrs().min_blocks = n;
}

HIDET_INLINE Action DeviceFunction::call(std::vector<Operand> args) const {
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

HIDET_INLINE void ClusterDimAttr::operator=(std::initializer_list<int> dims) const {
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

HIDET_INLINE ScriptModule::ScriptModule(std::string name) : st_(std::make_shared<State>()) {
  st_->name = std::move(name);
}

HIDET_INLINE std::vector<ir::Var> ScriptModule::begin_define(const std::string &name,
                                                             ir::FuncKind kind,
                                                             const std::vector<ParamSpec> &specs,
                                                             std::size_t arity,
                                                             SourceLoc loc) const {
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
  if (arity != specs.size())
    throw DSLError(str_cat(ir::func_kind_name(kind), " '", name, "' declares ", specs.size(),
                           " parameters but its body lambda takes ", arity),
                   loc);
  std::vector<ir::Var> params;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto &s = specs[i];
    std::string pname = s.tensor.name().empty() ? str_cat("arg", i) : s.tensor.name();
    if (s.var) {
      for (const auto &p : params)
        if (p.get() == s.var.get())
          throw DSLError(str_cat(ir::func_kind_name(kind), " '", name, "': symbol ", s.var->hint,
                                 " is passed twice as a parameter"),
                         loc);
      params.push_back(s.var);
      continue;
    }
    ir::Type t = s.is_tensor ? s.tensor.ir_type(s.by_value ? ir::Scope::Param : ir::Scope::Global)
                             : ir::scalar_type(s.scalar);
    params.push_back(ir::make_var(t, pname, loc));
  }
  return params;
}

HIDET_INLINE ir::Function ScriptModule::end_define(FunctionBuilder &b, std::vector<ir::Var> params,
                                                   ir::Type ret) {
  const std::string &name = b.name();
  SourceLoc loc = b.loc();
  auto body_stmt = b.finish();
  if (b.kind() == ir::FuncKind::Kernel) {
    if (!b.attrs().has_grid)
      throw DSLError(str_cat("kernel '", name, "' does not set attrs.cuda.grid_dim; set it in the kernel body, e.g. "
                                               "attrs.cuda.grid_dim = {ceil_div(n, 256)}"),
                     loc);
    if (!b.attrs().has_block)
      throw DSLError(str_cat("kernel '", name, "' does not set attrs.cuda.block_dim; set it in the kernel body, e.g. "
                                               "attrs.cuda.block_dim = 256"),
                     loc);
  }
  auto f = ir::make_function(name, std::move(params), body_stmt, std::move(ret), b.kind(), b.attrs(), loc);
  st_->functions.push_back(f);
  return f;
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
