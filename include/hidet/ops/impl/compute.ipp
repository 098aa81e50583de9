// Definitions for hidet/ops/compute.hpp.
#pragma once

#include "hidet/ops/compute.hpp"

#include <map>
#include <mutex>

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

namespace detail {
/// The variables of symbol_var, by name and by node.
struct SymbolVars {
  std::mutex mu;
  std::map<std::string, ir::Var> by_name;
  std::map<const ir::VarNode *, std::string> names;
};
HIDET_INLINE SymbolVars &symbol_vars() {
  static SymbolVars v;
  return v;
}
} // namespace detail

HIDET_INLINE ir::Var symbol_var(const std::string &name) {
  auto &s = detail::symbol_vars();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.by_name.find(name);
  if (it != s.by_name.end()) return it->second;
  ir::Var v = ir::make_var(ir::scalar_type(dtypes::i32), name);
  s.by_name.emplace(name, v);
  s.names.emplace(v.get(), name);
  return v;
}

HIDET_INLINE const std::string *symbol_name(const ir::VarNode *v) {
  auto &s = detail::symbol_vars();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.names.find(v);
  return it == s.names.end() ? nullptr : &it->second;
}

HIDET_INLINE Expr dim_expr(const Dim &d) {
  using runtime::detail::DimAtom;
  std::optional<Expr> sum;
  for (const auto &t : d.terms()) {
    std::optional<Expr> term;
    if (t.coef != 1 || t.atoms.empty()) term = Expr(ir::int32(t.coef));
    for (const auto &a : t.atoms) {
      Expr f;
      switch (a->kind) {
      case DimAtom::Symbol: f = Expr(ir::Expr(symbol_var(a->name))); break;
      case DimAtom::Div: f = dim_expr(a->a) / dim_expr(a->b); break; // extents are non-negative: floor
      case DimAtom::Mod: f = dim_expr(a->a) % dim_expr(a->b); break;
      case DimAtom::Max: f = lang::max(dim_expr(a->a), dim_expr(a->b)); break;
      case DimAtom::Min: f = lang::min(dim_expr(a->a), dim_expr(a->b)); break;
      }
      term = term ? *term * f : f;
    }
    sum = sum ? *sum + *term : *term;
  }
  return sum ? *sum : Expr(ir::int32(0));
}

HIDET_INLINE const char *reduce_kind_name(ReduceKind k) {
  static const char *names[] = {"sum", "mean", "max", "min", "prod", "and", "or", "argmax", "argmin"};
  return names[static_cast<int>(k)];
}

HIDET_INLINE std::string shape_str(const Shape &s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

HIDET_INLINE std::int64_t shape_numel(const Shape &s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

namespace detail {
/// The definitions read while an index function runs (recorded by TensorDef indexing).
HIDET_INLINE thread_local std::vector<std::vector<std::shared_ptr<const TensorNode>>> *dep_stack = nullptr;
HIDET_INLINE void record_use(const std::shared_ptr<const TensorNode> &n) {
  if (!dep_stack || dep_stack->empty()) return;
  auto &top = dep_stack->back();
  for (auto &d : top)
    if (d == n) return;
  top.push_back(n);
}
HIDET_INLINE DepScope::DepScope() : saved(dep_stack) {
  if (!dep_stack) dep_stack = &own;
  dep_stack->emplace_back();
}
HIDET_INLINE std::vector<std::shared_ptr<const TensorNode>> DepScope::take() {
  auto r = std::move(dep_stack->back());
  return r;
}
HIDET_INLINE DepScope::~DepScope() {
  dep_stack->pop_back();
  dep_stack = saved;
}
} // namespace detail

HIDET_INLINE lang::Element TensorDef::operator[](const lang::Operand &i) const {
  detail::record_use(node_);
  return lang::Tensor(node_->buf)[i];
}

HIDET_INLINE Shape TensorDef::shape() const {
  if (!is_constant_shape(node_->shape))
    throw ValueError(str_cat("tensor '", node_->name, "' of the compute definition has symbolic extents ",
                             shape_str(node_->shape), " where constant ones are needed"));
  return constant_shape(node_->shape);
}

HIDET_INLINE Expr TensorDef::at(const Idx &idx, std::source_location loc_) const {
  if (idx.size() != node_->shape.size())
    throw ValueError(str_cat("tensor '", node_->name, "' of shape ", shape_str(node_->shape),
                             " is indexed with ", idx.size(), " indices"),
                     loc_);
  detail::record_use(node_);
  std::vector<ir::Expr> ii;
  for (auto &e : idx) ii.push_back(lang::detail::convert(e.ir(), dtypes::i32, loc_));
  return Expr(ir::TensorElementNode::make(node_->buf, std::move(ii), loc_));
}

namespace detail {

HIDET_INLINE ir::Var make_buf(const std::string &name, DataType d, const SymShape &shape) {
  std::vector<ir::Expr> dims;
  for (const auto &s : shape) {
    if (s.is_constant() && (s.value() < 0 || s.value() > INT32_MAX))
      throw ValueError(str_cat("tensor '", name, "': dimension ", s.value(), " is out of range [0, 2^31)"));
    dims.push_back(dim_expr(s).ir());
  }
  return ir::make_var(ir::TensorTypeNode::make(d, dims, ir::Scope::Global, {}), name);
}

HIDET_INLINE std::vector<ir::Var> make_axes(std::size_t n, const char *prefix) {
  std::vector<ir::Var> r;
  for (std::size_t i = 0; i < n; ++i) r.push_back(ir::make_var(ir::scalar_type(dtypes::i32), str_cat(prefix, i)));
  return r;
}

HIDET_INLINE Idx to_idx(const std::vector<ir::Var> &vs) {
  Idx r;
  for (auto &v : vs) r.push_back(Expr(ir::Expr(v)));
  return r;
}

HIDET_INLINE std::shared_ptr<TensorNode> compute_node(const std::string &name, const Extents &shape) {
  auto n = std::make_shared<TensorNode>();
  n->kind = TensorNode::Kind::Compute;
  n->name = name;
  n->shape = shape.dims;
  n->axes = detail::make_axes(n->shape.size(), "i");
  return n;
}

HIDET_INLINE TensorDef finish_compute(std::shared_ptr<TensorNode> n, const Expr &v,
                                      std::vector<std::shared_ptr<const TensorNode>> deps,
                                      std::optional<DataType> dtype) {
  const std::string &name = n->name;
  n->deps = std::move(deps);
  if (!v.defined() || !ir::is_scalar(v.ir()->type))
    throw ValueError(str_cat("compute '", name, "': the index function must return a scalar expression"));
  n->dtype = dtype ? *dtype : v.dtype();
  n->value = lang::detail::convert(v.ir(), n->dtype, {});
  n->buf = detail::make_buf(name, n->dtype, n->shape);
  return TensorDef(std::move(n));
}

HIDET_INLINE std::shared_ptr<TensorNode> reduce_node(const std::string &name, const Extents &shape,
                                                     const Extents &extents, ReduceKind kind) {
  auto n = std::make_shared<TensorNode>();
  n->kind = TensorNode::Kind::Reduce;
  n->name = name;
  n->shape = shape.dims;
  n->rextents = extents.dims;
  n->reduce_kind = kind;
  n->axes = detail::make_axes(n->shape.size(), "i");
  n->raxes = detail::make_axes(n->rextents.size(), "r");
  return n;
}

HIDET_INLINE TensorDef finish_reduce(std::shared_ptr<TensorNode> n, const Expr &v,
                                     std::vector<std::shared_ptr<const TensorNode>> deps,
                                     std::optional<DataType> acc_dtype, std::optional<DataType> out_dtype) {
  const std::string &name = n->name;
  ReduceKind kind = n->reduce_kind;
  n->deps = std::move(deps);
  if (!v.defined() || !ir::is_scalar(v.ir()->type))
    throw ValueError(str_cat(name, ": the reduced expression must be a scalar expression"));
  DataType vd = v.dtype();
  n->acc_dtype = acc_dtype ? *acc_dtype : default_acc_dtype(kind, vd);
  if (is_arg_reduce(kind)) n->acc_dtype = acc_dtype ? *acc_dtype : (vd.is_narrow_float() ? dtypes::f32 : vd);
  n->dtype = reduce_output_dtype(kind, vd, acc_dtype, out_dtype);
  n->value = (kind == ReduceKind::And || kind == ReduceKind::Or) ? lang::detail::to_bool(lang::Operand(v), name.c_str())
                                                                 : lang::detail::convert(v.ir(), n->acc_dtype, {});
  n->buf = detail::make_buf(name, n->dtype, n->shape);
  return TensorDef(std::move(n));
}

} // namespace detail

HIDET_INLINE TensorDef input(const std::string &name, const Extents &shape, DataType dtype) {
  auto n = std::make_shared<TensorNode>();
  n->kind = TensorNode::Kind::Input;
  n->name = name;
  n->dtype = dtype;
  n->shape = shape.dims;
  n->buf = detail::make_buf(name, dtype, n->shape);
  return TensorDef(std::move(n));
}

HIDET_INLINE DataType reduce_output_dtype(ReduceKind k, DataType value, std::optional<DataType> acc,
                                          std::optional<DataType> out) {
  if (k == ReduceKind::And || k == ReduceKind::Or) return dtypes::boolean;
  if (out) return *out;
  if (is_arg_reduce(k)) return dtypes::i64;
  return value.is_float() ? value : acc ? *acc : default_acc_dtype(k, value);
}

HIDET_INLINE DataType default_acc_dtype(ReduceKind k, DataType d) {
  if (k == ReduceKind::And || k == ReduceKind::Or) return dtypes::boolean;
  if (d.is_narrow_float()) return dtypes::f32;
  if ((d.is_integer() || d.is_bool()) && (k == ReduceKind::Sum || k == ReduceKind::Prod)) return d.is_signed() || d.is_bool() ? dtypes::i64 : dtypes::u64;
  if ((d.is_integer() || d.is_bool()) && k == ReduceKind::Mean) return dtypes::f32;
  if (d.is_bool()) return dtypes::i32;
  return d;
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
