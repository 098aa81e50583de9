// Compute definitions: the single source of truth for what an operator computes.
//
//   auto a = ops::input("a", {m, k}, f32);
//   auto b = ops::input("b", {k, n}, f32);
//   auto c = ops::reduce({m, n}, {k}, [&](Idx i, Idx r) { return a[i[0]][r[0]] * b[r[0]][i[1]]; },
//                        ReduceKind::Sum);
//   auto d = ops::compute("relu", {m, n}, [&](Idx i) { return max(c[i[0]][i[1]], 0.0f); });
//
// A definition is a DAG of tensor nodes:
//  * Input: a named tensor with a shape and a dtype;
//  * Compute: out[axes] = value(axes), where value is a Hidet Script expression that may read
//    inputs and other definitions at any (integer expression) index. Computes are injective
//    element definitions; the scheduler inlines them into their consumers.
//  * Reduce: out[axes] = reduce_{raxes in extents} value(axes, raxes) with a ReduceKind and an
//    accumulator dtype; arg-reductions return the (i64) flat index of the extreme element over
//    the reduced axes. Reduces are materialized by the scheduler.
// Shapes are concrete (int64) here: eager operators specialize their kernels per shape (the
// kernel cache key includes the shapes).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hidet/lang.hpp"

namespace hidet::ops {

using lang::Expr;
/// A list of index expressions (i32), one per axis.
using Idx = std::vector<Expr>;
/// A concrete tensor shape.
using Shape = std::vector<std::int64_t>;

/// The reductions a Reduce node can perform.
enum class ReduceKind : std::uint8_t { Sum, Mean, Max, Min, Prod, And, Or, ArgMax, ArgMin };

/// "sum", "argmax", ...
inline const char *reduce_kind_name(ReduceKind k) {
  static const char *names[] = {"sum", "mean", "max", "min", "prod", "and", "or", "argmax", "argmin"};
  return names[static_cast<int>(k)];
}
/// True for argmax/argmin (output i64 indices).
inline bool is_arg_reduce(ReduceKind k) { return k == ReduceKind::ArgMax || k == ReduceKind::ArgMin; }

/// "(2, 3)", "(5,)", "()": shapes as users read them in messages.
inline std::string shape_str(const Shape &s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}
/// Number of elements of a shape.
inline std::int64_t shape_numel(const Shape &s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

/// One node of a compute definition (see the top of this file).
struct TensorNode {
  enum class Kind : std::uint8_t { Input, Compute, Reduce };
  Kind kind = Kind::Input;
  std::string name;
  DataType dtype;
  Shape shape;
  ir::Var buf;                 ///< names this tensor in value expressions (a tensor-typed var)
  std::vector<ir::Var> axes;   ///< Compute/Reduce: the output axes (i32 vars)
  std::vector<ir::Var> raxes;  ///< Reduce: the reduction axes
  Shape rextents;              ///< Reduce: their extents
  ir::Expr value;              ///< Compute/Reduce: the element (or reduced term) expression
  ReduceKind reduce_kind = ReduceKind::Sum;
  DataType acc_dtype;          ///< Reduce: the accumulator dtype
  std::vector<std::shared_ptr<const TensorNode>> deps; ///< the tensors `value` reads
};

namespace detail {
/// The definitions read while an index function runs (recorded by TensorDef indexing).
inline thread_local std::vector<std::vector<std::shared_ptr<const TensorNode>>> *dep_stack = nullptr;
inline void record_use(const std::shared_ptr<const TensorNode> &n) {
  if (!dep_stack || dep_stack->empty()) return;
  auto &top = dep_stack->back();
  for (auto &d : top)
    if (d == n) return;
  top.push_back(n);
}
/// Collects the uses of definitions while it lives.
struct DepScope {
  std::vector<std::vector<std::shared_ptr<const TensorNode>>> own;
  std::vector<std::vector<std::shared_ptr<const TensorNode>>> *saved;
  DepScope() : saved(dep_stack) {
    if (!dep_stack) dep_stack = &own;
    dep_stack->emplace_back();
  }
  std::vector<std::shared_ptr<const TensorNode>> take() {
    auto r = std::move(dep_stack->back());
    return r;
  }
  ~DepScope() {
    dep_stack->pop_back();
    dep_stack = saved;
  }
};
} // namespace detail

/// A handle to a tensor of a compute definition. Index it like a DSL tensor: t[i][j] or t.at(idx).
class TensorDef {
public:
  TensorDef() = default;
  explicit TensorDef(std::shared_ptr<const TensorNode> n) : node_(std::move(n)) {}

  /// t[i]: indexing one dimension at a time (complete it with one index per dimension).
  lang::Element operator[](const lang::Operand &i) const {
    detail::record_use(node_);
    return lang::Tensor(node_->buf)[i];
  }
  /// The element at `idx` (one index per dimension) as an expression.
  Expr at(const Idx &idx, HIDET_LOC_PARAM) const {
    if (idx.size() != node_->shape.size())
      throw ValueError(str_cat("tensor '", node_->name, "' of shape ", shape_str(node_->shape),
                               " is indexed with ", idx.size(), " indices"),
                       loc_);
    detail::record_use(node_);
    std::vector<ir::Expr> ii;
    for (auto &e : idx) ii.push_back(lang::detail::convert(e.ir(), dtypes::i32, loc_));
    return Expr(ir::TensorElementNode::make(node_->buf, std::move(ii), loc_));
  }
  const std::string &name() const { return node_->name; }
  DataType dtype() const { return node_->dtype; }
  const Shape &shape() const { return node_->shape; }
  std::size_t ndim() const { return node_->shape.size(); }
  const TensorNode &node() const { return *node_; }
  const std::shared_ptr<const TensorNode> &ptr() const { return node_; }
  bool defined() const { return node_ != nullptr; }

private:
  std::shared_ptr<const TensorNode> node_;
};

namespace detail {

inline ir::Var make_buf(const std::string &name, DataType d, const Shape &shape) {
  std::vector<ir::Expr> dims;
  for (auto s : shape) {
    if (s < 0 || s > INT32_MAX)
      throw ValueError(str_cat("tensor '", name, "': dimension ", s, " is out of range [0, 2^31)"));
    dims.push_back(ir::int32(s));
  }
  return ir::make_var(ir::TensorTypeNode::make(d, dims, ir::Scope::Global, {}), name);
}

inline std::vector<ir::Var> make_axes(std::size_t n, const char *prefix) {
  std::vector<ir::Var> r;
  for (std::size_t i = 0; i < n; ++i) r.push_back(ir::make_var(ir::scalar_type(dtypes::i32), str_cat(prefix, i)));
  return r;
}

inline Idx to_idx(const std::vector<ir::Var> &vs) {
  Idx r;
  for (auto &v : vs) r.push_back(Expr(ir::Expr(v)));
  return r;
}

/// Calls f(idx) when f takes an Idx, else f(idx[0], idx[1], ...) with as many Exprs as f takes.
template <class F> Expr call_index_fn(F &f, const Idx &idx, const std::string &name) {
  if constexpr (std::is_invocable_v<F &, const Idx &>) {
    return Expr(f(idx));
  } else {
    constexpr std::size_t n = lang::detail::lambda_arity<std::decay_t<F>>::value;
    if (idx.size() != n)
      throw ValueError(str_cat("compute '", name, "': the index function takes ", n,
                               " indices but the shape has ", idx.size(), " dimensions"));
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return Expr(f(idx[I]...));
    }(std::make_index_sequence<n>{});
  }
}

} // namespace detail

/// A named input tensor of a compute definition.
inline TensorDef input(const std::string &name, const Shape &shape, DataType dtype) {
  auto n = std::make_shared<TensorNode>();
  n->kind = TensorNode::Kind::Input;
  n->name = name;
  n->dtype = dtype;
  n->shape = shape;
  n->buf = detail::make_buf(name, dtype, shape);
  return TensorDef(std::move(n));
}

/// out[i...] = f(i...): an element-wise definition. `f` takes an Idx (or one Expr per axis) and
/// returns an expression; its dtype is the tensor's dtype unless `dtype` is given (then the
/// value is converted).
template <class F>
TensorDef compute(const std::string &name, const Shape &shape, F &&f, std::optional<DataType> dtype = std::nullopt) {
  auto n = std::make_shared<TensorNode>();
  n->kind = TensorNode::Kind::Compute;
  n->name = name;
  n->shape = shape;
  n->axes = detail::make_axes(shape.size(), "i");
  detail::DepScope deps;
  Expr v = detail::call_index_fn(f, detail::to_idx(n->axes), name);
  n->deps = deps.take();
  if (!v.defined() || !ir::is_scalar(v.ir()->type))
    throw ValueError(str_cat("compute '", name, "': the index function must return a scalar expression"));
  n->dtype = dtype ? *dtype : v.dtype();
  n->value = lang::detail::convert(v.ir(), n->dtype, {});
  n->buf = detail::make_buf(name, n->dtype, shape);
  return TensorDef(std::move(n));
}

/// The default accumulator dtype of a reduction over values of dtype `d`: f32 for f16/bf16,
/// i64 for bool and integers under Sum/Mean/Prod, bool for And/Or, else `d`.
inline DataType default_acc_dtype(ReduceKind k, DataType d) {
  if (k == ReduceKind::And || k == ReduceKind::Or) return dtypes::boolean;
  if (d.is_half()) return dtypes::f32;
  if ((d.is_integer() || d.is_bool()) && (k == ReduceKind::Sum || k == ReduceKind::Prod)) return d.is_signed() || d.is_bool() ? dtypes::i64 : dtypes::u64;
  if ((d.is_integer() || d.is_bool()) && k == ReduceKind::Mean) return dtypes::f32;
  if (d.is_bool()) return dtypes::i32;
  return d;
}

/// out[i...] = reduce over r in extents of f(i, r): a reduction. The output dtype is `out_dtype`
/// if given, else i64 for arg-reductions, bool for And/Or, and the value dtype otherwise
/// (promoted like the accumulator for integer Sum/Prod/Mean).
template <class F>
TensorDef reduce(const Shape &shape, const Shape &extents, F &&f, ReduceKind kind,
                 std::optional<DataType> acc_dtype = std::nullopt, std::optional<DataType> out_dtype = std::nullopt,
                 const std::string &name = "reduce") {
  auto n = std::make_shared<TensorNode>();
  n->kind = TensorNode::Kind::Reduce;
  n->name = name;
  n->shape = shape;
  n->rextents = extents;
  n->reduce_kind = kind;
  n->axes = detail::make_axes(shape.size(), "i");
  n->raxes = detail::make_axes(extents.size(), "r");
  detail::DepScope deps;
  Expr v = Expr(f(detail::to_idx(n->axes), detail::to_idx(n->raxes)));
  n->deps = deps.take();
  if (!v.defined() || !ir::is_scalar(v.ir()->type))
    throw ValueError(str_cat(name, ": the reduced expression must be a scalar expression"));
  DataType vd = v.dtype();
  n->acc_dtype = acc_dtype ? *acc_dtype : default_acc_dtype(kind, vd);
  if (is_arg_reduce(kind)) {
    n->acc_dtype = acc_dtype ? *acc_dtype : (vd.is_half() ? dtypes::f32 : vd);
    n->dtype = out_dtype ? *out_dtype : dtypes::i64;
  } else if (kind == ReduceKind::And || kind == ReduceKind::Or) {
    n->dtype = dtypes::boolean;
  } else {
    n->dtype = out_dtype ? *out_dtype : (vd.is_half() || vd.is_float() ? vd : n->acc_dtype);
  }
  n->value = (kind == ReduceKind::And || kind == ReduceKind::Or) ? lang::detail::to_bool(lang::Operand(v), name.c_str())
                                                                 : lang::detail::convert(v.ir(), n->acc_dtype, {});
  n->buf = detail::make_buf(name, n->dtype, shape);
  return TensorDef(std::move(n));
}

/// Element-wise helper: a compute of the same shape as `x` applying `f` to each element.
template <class F> TensorDef map(const std::string &name, const TensorDef &x, F &&f) {
  return compute(name, x.shape(), [&](const Idx &i) { return f(x.at(i)); });
}

} // namespace hidet::ops
