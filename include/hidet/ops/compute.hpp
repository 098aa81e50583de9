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
// Extents are constants or symbolic Dims (runtime/dim.hpp). Eager operators build definitions of
// constant extents and specialize their kernels per shape (the kernel cache key includes the
// shapes). A definition whose extents are symbols (a batch n, a sequence length n*s) gives kernels
// that serve every value of them: in value expressions a symbol is the i32 variable
// symbol_var(name) (dim_expr(d) gives any extent as an expression), and the scheduler passes each
// symbol to the kernels as a scalar parameter whose value the launch binds (ops/cache.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/runtime/dim.hpp"

namespace hidet::ops {

using lang::Expr;
/// A list of index expressions (i32), one per axis.
using Idx = std::vector<Expr>;
/// A concrete tensor shape.
using Shape = std::vector<std::int64_t>;

/// The extents of a compute-definition tensor: constants or symbolic Dims. Converts from a Shape,
/// a SymShape or a braced list ({m, n}, {"n", 768}).
struct Extents {
  SymShape dims;
  Extents() = default;
  Extents(const Shape &s) : dims(to_sym_shape(s)) {}
  Extents(SymShape s) : dims(std::move(s)) {}
  Extents(std::initializer_list<Dim> l) : dims(l) {}
};

/// The i32 variable that stands for the symbol `name` in every compute definition and kernel of
/// the process (one variable per name).
ir::Var symbol_var(const std::string &name);
/// The symbol's name when `v` is a symbol_var, else null.
const std::string *symbol_name(const ir::VarNode *v);
/// The extent `d` as an i32 expression over the symbols' variables (a constant when d is).
Expr dim_expr(const Dim &d);

/// The reductions a Reduce node can perform.
enum class ReduceKind : std::uint8_t { Sum, Mean, Max, Min, Prod, And, Or, ArgMax, ArgMin };

/// "sum", "argmax", ...
const char *reduce_kind_name(ReduceKind k);
/// True for argmax/argmin (output i64 indices).
inline bool is_arg_reduce(ReduceKind k) { return k == ReduceKind::ArgMax || k == ReduceKind::ArgMin; }

/// "(2, 3)", "(5,)", "()": shapes as users read them in messages.
std::string shape_str(const Shape &s);
/// shape_str of extents that may be symbols: "(n, 3)".
template <class D = Dim> std::string shape_str(const std::vector<D> &s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + Dim(s[i]).str();
  return r + (s.size() == 1 ? ",)" : ")");
}
/// Number of elements of a shape.
std::int64_t shape_numel(const Shape &s);

/// One node of a compute definition (see the top of this file).
struct TensorNode {
  enum class Kind : std::uint8_t { Input, Compute, Reduce };
  Kind kind = Kind::Input;
  std::string name;
  DataType dtype;
  SymShape shape;
  ir::Var buf;                 ///< names this tensor in value expressions (a tensor-typed var)
  std::vector<ir::Var> axes;   ///< Compute/Reduce: the output axes (i32 vars)
  std::vector<ir::Var> raxes;  ///< Reduce: the reduction axes
  SymShape rextents;           ///< Reduce: their extents
  ir::Expr value;              ///< Compute/Reduce: the element (or reduced term) expression
  ReduceKind reduce_kind = ReduceKind::Sum;
  DataType acc_dtype;          ///< Reduce: the accumulator dtype
  std::vector<std::shared_ptr<const TensorNode>> deps; ///< the tensors `value` reads
};

namespace detail {
/// Records that the index function now running reads `n` (called by TensorDef indexing).
void record_use(const std::shared_ptr<const TensorNode> &n);
/// Collects the uses of definitions while it lives.
struct DepScope {
  std::vector<std::vector<std::shared_ptr<const TensorNode>>> own;
  std::vector<std::vector<std::shared_ptr<const TensorNode>>> *saved;
  DepScope();
  std::vector<std::shared_ptr<const TensorNode>> take();
  ~DepScope();
};
} // namespace detail

/// A handle to a tensor of a compute definition. Index it like a DSL tensor: t[i][j] or t.at(idx).
class TensorDef {
public:
  TensorDef() = default;
  explicit TensorDef(std::shared_ptr<const TensorNode> n) : node_(std::move(n)) {}

  /// t[i]: indexing one dimension at a time (complete it with one index per dimension).
  lang::Element operator[](const lang::Operand &i) const;
  /// The element at `idx` (one index per dimension) as an expression.
  Expr at(const Idx &idx, HIDET_LOC_PARAM) const;
  const std::string &name() const { return node_->name; }
  DataType dtype() const { return node_->dtype; }
  /// The extents (constants or symbols).
  const SymShape &sym_shape() const { return node_->shape; }
  /// The constant extents; a ValueError naming the tensor when one is a symbol.
  Shape shape() const;
  /// True when some extent is a symbol.
  bool symbolic() const { return !is_constant_shape(node_->shape); }
  std::size_t ndim() const { return node_->shape.size(); }
  const TensorNode &node() const { return *node_; }
  const std::shared_ptr<const TensorNode> &ptr() const { return node_; }
  bool defined() const { return node_ != nullptr; }

private:
  std::shared_ptr<const TensorNode> node_;
};

namespace detail {

/// The index variables `vs` as an Idx.
Idx to_idx(const std::vector<ir::Var> &vs);

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

/// A Compute node named `name` of `shape` with fresh output axes (compute's first step).
std::shared_ptr<TensorNode> compute_node(const std::string &name, const Extents &shape);
/// Completes a Compute node with the value `v` of its index function, the definitions `v` reads
/// and its dtype (v's unless given).
TensorDef finish_compute(std::shared_ptr<TensorNode> n, const Expr &v,
                         std::vector<std::shared_ptr<const TensorNode>> deps,
                         std::optional<DataType> dtype);
/// A Reduce node named `name` of `shape` reducing over `extents` with fresh output and reduction
/// axes (reduce's first step).
std::shared_ptr<TensorNode> reduce_node(const std::string &name, const Extents &shape,
                                        const Extents &extents, ReduceKind kind);
/// Completes a Reduce node with the reduced term `v`, the definitions `v` reads and its dtypes
/// (see reduce).
TensorDef finish_reduce(std::shared_ptr<TensorNode> n, const Expr &v,
                        std::vector<std::shared_ptr<const TensorNode>> deps,
                        std::optional<DataType> acc_dtype, std::optional<DataType> out_dtype);

} // namespace detail

/// A named input tensor of a compute definition.
TensorDef input(const std::string &name, const Extents &shape, DataType dtype);

/// out[i...] = f(i...): an element-wise definition. `f` takes an Idx (or one Expr per axis) and
/// returns an expression; its dtype is the tensor's dtype unless `dtype` is given (then the
/// value is converted).
template <class F>
TensorDef compute(const std::string &name, const Extents &shape, F &&f, std::optional<DataType> dtype = std::nullopt) {
  auto n = detail::compute_node(name, shape);
  detail::DepScope deps;
  Expr v = detail::call_index_fn(f, detail::to_idx(n->axes), name);
  return detail::finish_compute(std::move(n), v, deps.take(), dtype);
}

/// The default accumulator dtype of a reduction over values of dtype `d`: f32 for f16/bf16,
/// i64 for bool and integers under Sum/Mean/Prod, bool for And/Or, else `d`.
DataType default_acc_dtype(ReduceKind k, DataType d);
/// The output dtype of a reduction of values of dtype `value` (finish_reduce's rule): `out` when
/// given (not for And/Or: bool), else i64 for arg-reductions, bool for And/Or, the value dtype
/// for floats, the accumulator dtype (`acc`, or default_acc_dtype) otherwise.
DataType reduce_output_dtype(ReduceKind k, DataType value, std::optional<DataType> acc, std::optional<DataType> out);

/// out[i...] = reduce over r in extents of f(i, r): a reduction. The output dtype is `out_dtype`
/// if given, else i64 for arg-reductions, bool for And/Or, and the value dtype otherwise
/// (promoted like the accumulator for integer Sum/Prod/Mean).
template <class F>
TensorDef reduce(const Extents &shape, const Extents &extents, F &&f, ReduceKind kind,
                 std::optional<DataType> acc_dtype = std::nullopt, std::optional<DataType> out_dtype = std::nullopt,
                 const std::string &name = "reduce") {
  auto n = detail::reduce_node(name, shape, extents, kind);
  detail::DepScope deps;
  Expr v = Expr(f(detail::to_idx(n->axes), detail::to_idx(n->raxes)));
  return detail::finish_reduce(std::move(n), v, deps.take(), acc_dtype, out_dtype);
}

/// Element-wise helper: a compute of the same shape as `x` applying `f` to each element.
template <class F> TensorDef map(const std::string &name, const TensorDef &x, F &&f) {
  return compute(name, x.sym_shape(), [&](const Idx &i) { return f(x.at(i)); });
}

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/compute.ipp"
#endif
