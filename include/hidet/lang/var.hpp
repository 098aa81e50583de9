// Scalar variables and tensors in Hidet Script.
//  * `Var x = expr;` declares a new variable initialized with expr (evaluated once, here);
//    `x = e;` and `x += e;` emit assignments. Copying a Var (`Var y = x;`) makes another name
//    for the same variable.
//  * `Tensor` names a buffer: a kernel parameter, a shared or register tensor, or a view.
//    `t[i][j]` (or `t(i, j)`) is an element: an expression when read, a store when assigned.
#pragma once

#include <string>
#include <vector>

#include "hidet/lang/types.hpp"

namespace hidet::lang {

namespace detail {
/// Converts an operand for storing into a location of dtype `d` (C++ assignment conversion).
ir::Expr store_value(const Operand &v, DataType d, const char *what);
} // namespace detail

/// A scalar variable.
class Var : public Expr {
public:
  /// Wraps an existing IR variable (parameters, loop variables).
  explicit Var(ir::Var v) : Expr(ir::Expr(v)), var_(std::move(v)) {}
  Var(const Var &) = default; // another name for the same variable

  // Declarations: a new variable with the type of the initializer.
  Var(const Expr &init, HIDET_LOC_PARAM) { declare(Operand(init, loc_), "v", loc_); }
  Var(int v, HIDET_LOC_PARAM) { declare(Operand(ir::int32(v, loc_), loc_), "v", loc_); }
  Var(float v, HIDET_LOC_PARAM) {
    declare(Operand(ir::ConstantNode::make_float(dtypes::f32, v, loc_), loc_), "v", loc_);
  }
  Var(double v, HIDET_LOC_PARAM) {
    declare(Operand(ir::ConstantNode::make_float(dtypes::f64, v, loc_), loc_), "v", loc_);
  }
  Var(bool v, HIDET_LOC_PARAM) { declare(Operand(ir::boolean(v, loc_), loc_), "v", loc_); }
  template <ExprLike T> Var(const T &init, HIDET_LOC_PARAM) { declare(Operand(init, loc_), "v", loc_); }

  /// Declares a variable of dtype `d` with an optional initial value and a name hint.
  static Var declare_new(DataType d, const Operand *init, std::string hint, SourceLoc loc);

  /// Assignment emits `x = value` (converted to x's dtype). A template, so that it is preferred
  /// over converting the value to a Var (which would declare a new variable).
  template <class T>
    requires std::is_constructible_v<Operand, const T &>
  Var &operator=(const T &value) {
    Operand o(value);
    o.loc = o.node && o.node->loc.valid() ? o.node->loc : SourceLoc{};
    assign(detail::store_value(o, dtype(), "="), o.loc);
    return *this;
  }
  Var &operator=(const Var &other) { return *this = Operand::of(other.ir(), other.var_->loc); }
#define HIDET_COMPOUND(sym) Var &operator sym##=(const Operand &value);
  HIDET_COMPOUND(+) HIDET_COMPOUND(-) HIDET_COMPOUND(*) HIDET_COMPOUND(/) HIDET_COMPOUND(%)
  HIDET_COMPOUND(&) HIDET_COMPOUND(|) HIDET_COMPOUND(^) HIDET_COMPOUND(<<) HIDET_COMPOUND(>>)
#undef HIDET_COMPOUND

  const ir::Var &var() const { return var_; }

private:
  void declare(const Operand &init, std::string hint, SourceLoc loc);
  void assign(ir::Expr v, SourceLoc loc);
  Var() = default;
  ir::Var var_;
};

/// Declares a variable of dtype `d` (uninitialized) or with an initial value.
inline Var var(DataType d, std::string name = "v", HIDET_LOC_PARAM) {
  return Var::declare_new(d, nullptr, std::move(name), loc_);
}
inline Var var(DataType d, const Operand &init, std::string name = "v", HIDET_LOC_PARAM) {
  return Var::declare_new(d, &init, std::move(name), loc_);
}

/// An element (or a partially indexed tensor) t[i][j]...; complete when it has one index per
/// dimension. Reading converts it to an expression; assigning stores.
class Element {
public:
  Element(ir::Var base, std::vector<ir::Expr> idx, SourceLoc loc)
      : base_(std::move(base)), idx_(std::move(idx)), loc_(loc) {}
  Element(const Element &) = default;

  Element operator[](const Operand &i) const;
  /// The element as an expression (all indices must be given).
  ir::Expr to_ir(SourceLoc use) const;
  /// &t[i][j]
  Expr address() const;

  Element &operator=(const Operand &value) {
    store(detail::store_value(value, dtype(), "="), value.loc);
    return *this;
  }
  Element &operator=(const Element &other) { return *this = Operand::of(other.to_ir(other.loc_), other.loc_); }
#define HIDET_COMPOUND(sym) Element &operator sym##=(const Operand &value);
  HIDET_COMPOUND(+) HIDET_COMPOUND(-) HIDET_COMPOUND(*) HIDET_COMPOUND(/) HIDET_COMPOUND(%)
  HIDET_COMPOUND(&) HIDET_COMPOUND(|) HIDET_COMPOUND(^) HIDET_COMPOUND(<<) HIDET_COMPOUND(>>)
#undef HIDET_COMPOUND

  DataType dtype() const { return type().dtype; }
  const ir::Var &base() const { return base_; }
  const std::vector<ir::Expr> &indices() const { return idx_; }

  void push(const Operand &i);

private:
  const ir::TensorTypeNode &type() const { return *base_->type.as<ir::TensorTypeNode>(); }
  void check_complete(SourceLoc use) const;
  void store(ir::Expr v, SourceLoc loc);
  ir::Var base_;
  std::vector<ir::Expr> idx_;
  SourceLoc loc_;
};

/// A tensor: a kernel parameter, a shared or register buffer, or a view of memory.
class Tensor {
public:
  explicit Tensor(ir::Var v);
  /// t[i]: indexing, one dimension at a time.
  Element operator[](const Operand &i) const;
  /// t(i, j, ...): all indices at once.
  template <class... I> Element operator()(const I &...idx) const {
    Element e(var_, {}, SourceLoc{});
    (e.push(Operand(idx)), ...);
    return e;
  }
  const ir::Var &var() const { return var_; }
  DataType dtype() const { return type().dtype; }
  std::size_t rank() const { return type().rank(); }
  /// Extent of dimension `i` as an expression.
  Expr shape(std::size_t i) const { return Expr(type().shape.at(i)); }
  /// Pointer to the first element.
  Expr data() const { return ir::AddressNode::make(ir::Expr(var_), var_->loc); }

private:
  const ir::TensorTypeNode &type() const { return *var_->type.as<ir::TensorTypeNode>(); }
  ir::Var var_;
};

namespace detail {
/// Declares a shared or register tensor (or, with `view`, a tensor over the memory at `view`).
Tensor declare_tensor(const TensorSpec &spec, ir::Scope scope, std::string name, ir::Expr view,
                      SourceLoc loc);
} // namespace detail

/// Declares a tensor in shared memory (one per thread block); dims must be constants.
inline Tensor shared_tensor(const TensorSpec &spec, std::string name = "smem", HIDET_LOC_PARAM) {
  return detail::declare_tensor(spec, ir::Scope::Shared, std::move(name), {}, loc_);
}
/// Declares a tensor in registers (one per thread); dims must be constants.
inline Tensor register_tensor(const TensorSpec &spec, std::string name = "regs", HIDET_LOC_PARAM) {
  return detail::declare_tensor(spec, ir::Scope::Register, std::move(name), {}, loc_);
}

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/var.ipp"
#endif
