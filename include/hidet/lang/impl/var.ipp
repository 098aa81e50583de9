// Definitions for hidet/lang/var.hpp.
#pragma once
#include "hidet/lang/var.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

namespace detail {
HIDET_INLINE ir::Expr store_value(const Operand &v, DataType d, const char *what) {
  require_scalar(v, what);
  return convert(v.node, d, v.loc);
}
} // namespace detail

HIDET_INLINE Var Var::declare_new(DataType d, const Operand *init, std::string hint,
                                  SourceLoc loc) {
  auto &b = require_builder("declaring a variable", loc);
  auto v = ir::make_var(ir::scalar_type(d), std::move(hint), loc);
  ir::Expr i = init ? detail::store_value(*init, d, "=") : ir::Expr();
  b.emit(ir::DeclareStmtNode::make(v, i, loc));
  return Var(v);
}

HIDET_INLINE void Var::declare(const Operand &init, std::string hint, SourceLoc loc) {
  detail::require_scalar(init, "=");
  DataType d = ir::dtype_of(init.node->type);
  if (init.weak && d == dtypes::f64 && !init.weak_float_is_double) d = dtypes::f32;
  Var fresh = declare_new(d, &init, std::move(hint), loc);
  node_ = fresh.node_;
  var_ = fresh.var_;
}

HIDET_INLINE void Var::assign(ir::Expr v, SourceLoc loc) {
  auto &b = require_builder("assigning a variable", loc);
  b.emit(ir::AssignStmtNode::make(var_, std::move(v), loc));
}

#define HIDET_COMPOUND(sym)                                                                        \
  HIDET_INLINE Var &Var::operator sym##=(const Operand &value) {                                   \
    Expr r = Operand::of(ir(), value.loc) sym value;                                               \
    assign(detail::store_value(Operand::of(r.ir(), value.loc), dtype(), #sym "="), value.loc);     \
    return *this;                                                                                  \
  }
HIDET_COMPOUND(+) HIDET_COMPOUND(-) HIDET_COMPOUND(*) HIDET_COMPOUND(/) HIDET_COMPOUND(%)
HIDET_COMPOUND(&) HIDET_COMPOUND(|) HIDET_COMPOUND(^) HIDET_COMPOUND(<<) HIDET_COMPOUND(>>)
#undef HIDET_COMPOUND

HIDET_INLINE Element Element::operator[](const Operand &i) const {
  Element e = *this;
  e.push(i);
  return e;
}

HIDET_INLINE ir::Expr Element::to_ir(SourceLoc use) const {
  check_complete(use);
  return ir::TensorElementNode::make(base_, idx_, loc_);
}

HIDET_INLINE Expr Element::address() const {
  check_complete(loc_);
  return ir::AddressNode::make(ir::TensorElementNode::make(base_, idx_, loc_), loc_);
}

#define HIDET_COMPOUND(sym)                                                                        \
  HIDET_INLINE Element &Element::operator sym##=(const Operand &value) {                           \
    Expr r = Operand::of(to_ir(value.loc), value.loc) sym value;                                   \
    store(detail::store_value(Operand::of(r.ir(), value.loc), dtype(), #sym "="), value.loc);      \
    return *this;                                                                                  \
  }
HIDET_COMPOUND(+) HIDET_COMPOUND(-) HIDET_COMPOUND(*) HIDET_COMPOUND(/) HIDET_COMPOUND(%)
HIDET_COMPOUND(&) HIDET_COMPOUND(|) HIDET_COMPOUND(^) HIDET_COMPOUND(<<) HIDET_COMPOUND(>>)
#undef HIDET_COMPOUND

HIDET_INLINE void Element::push(const Operand &i) {
  if (idx_.size() >= type().rank())
    throw DSLError(str_cat("tensor '", base_->hint, "' has rank ", type().rank(),
                           " but is indexed with ", idx_.size() + 1, " indices"),
                   i.loc);
  detail::require_scalar(i, "[]");
  DataType d = ir::dtype_of(i.node->type);
  if (!d.is_integer())
    throw DSLError(str_cat("index ", idx_.size(), " of tensor '", base_->hint, "' must be an integer, got ", d), i.loc);
  idx_.push_back(d == dtypes::i32 || d == dtypes::i64 ? i.node : detail::convert(i.node, dtypes::i32, i.loc));
}

HIDET_INLINE void Element::check_complete(SourceLoc use) const {
  if (idx_.size() != type().rank())
    throw DSLError(str_cat("tensor '", base_->hint, "' has rank ", type().rank(), " but is indexed with ",
                           idx_.size(), " indices; give one index per dimension"),
                   use.valid() ? use : loc_);
}

HIDET_INLINE void Element::store(ir::Expr v, SourceLoc loc) {
  check_complete(loc);
  if (type().scope == ir::Scope::Param)
    throw DSLError(str_cat("tensor '", base_->hint, "' is a by-value kernel parameter (a tensor map) and is read-only"),
                   loc);
  auto &b = require_builder("storing to a tensor", loc);
  b.emit(ir::BufferStoreStmtNode::make(base_, idx_, std::move(v), loc));
}

HIDET_INLINE Tensor::Tensor(ir::Var v) : var_(std::move(v)) {
  HIDET_ASSERT(var_->type.is<ir::TensorTypeNode>(), "Tensor over a non-tensor variable");
}

HIDET_INLINE Element Tensor::operator[](const Operand &i) const {
  Element e(var_, {}, i.loc);
  e.push(i);
  return e;
}


namespace detail {
HIDET_INLINE Tensor declare_tensor(const TensorSpec &spec, ir::Scope scope, std::string name,
                                   ir::Expr view, SourceLoc loc) {
  auto &b = require_kernel(scope == ir::Scope::Shared ? "shared_tensor" : "register_tensor", loc);
  for (std::size_t i = 0; i < spec.shape().size(); ++i) {
    std::int64_t v;
    if (!view && !ir::as_const_int(spec.shape()[i], v))
      throw DSLError(str_cat(ir::scope_name(scope), " tensor '", name, "' needs constant dimensions; dimension ",
                             i, " is not a constant (use dynamic shared memory for run-time sizes)"),
                     loc);
  }
  auto v = ir::make_var(spec.ir_type(scope), std::move(name), loc);
  b.emit(ir::DeclareStmtNode::make(v, view, loc));
  return Tensor(v);
}
} // namespace detail

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
