// Shared pieces of the auto-scheduler: the execution plan of a task (plan.hpp: buffers and kernel
// launches), inlining of element-wise definitions into their consumers, index decomposition and
// the definition of kernels with a run-time number of parameters.
#pragma once

#include <functional>
#include <map>

#include "hidet/ir/functor.hpp"
#include "hidet/ops/plan.hpp"
#include "hidet/ops/task.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

namespace detail {

/// Substitutes variables and rewrites tensor reads: `rewrite(read, indices)` gets a read as it
/// was and its indices after substitution, and returns its replacement, or null to keep the read
/// (with the new indices).
class ReadRewriter : public ir::IRMutator {
public:
  using Rewrite = std::function<ir::Expr(const ir::Expr &, const std::vector<ir::Expr> &)>;
  ReadRewriter(std::map<const ir::VarNode *, ir::Expr> subst, Rewrite rewrite)
      : subst_(std::move(subst)), rewrite_(std::move(rewrite)) {}

  using ir::IRMutator::mutate;

protected:
  ir::Expr mutate_Var(const ir::Expr &e, const ir::VarNode *v) override;
  ir::Expr mutate_TensorElement(const ir::Expr &e, const ir::TensorElementNode *n) override;

private:
  std::map<const ir::VarNode *, ir::Expr> subst_;
  Rewrite rewrite_;
};

/// Substitutes axis variables and inlines element-wise definitions: a read of an inlined
/// Compute becomes its value at the read's indices; a read of a materialized tensor becomes a
/// read of the kernel parameter that holds it.
class Inliner : public ReadRewriter {
public:
  Inliner(const std::map<const ir::VarNode *, ir::Var> &params,
          const std::map<const ir::VarNode *, const TensorNode *> &inlined,
          std::map<const ir::VarNode *, ir::Expr> subst);
};

/// Whether `e` mentions the variable `v`.
bool mentions(const ir::Expr &e, const ir::VarNode *v);

/// Whether `e` is the variable `v` itself.
inline bool is_var(const ir::Expr &e, const ir::VarNode *v) { return e && e.get() == v; }

/// The smallest power of two >= v (v >= 1).
std::int64_t pow2_ceil(std::int64_t v);

/// The row-major multi-index of flat index `flat` (an i32 expression) in `shape`.
std::vector<ir::Expr> unravel(const ir::Expr &flat, const Extents &shape);

/// Defines a kernel whose body receives its parameters as a vector of variables. The kernel also
/// takes the symbols (symbol_var) named in `symbols`, in order, as i32 parameters after `specs`
/// (the body does not receive them: it uses symbol_var or dim_expr).
template <class F>
void define_kernel(lang::ScriptModule &mod, const std::string &name, std::vector<lang::ParamSpec> specs, F body,
                   const std::vector<std::string> &symbols = {}) {
  const std::size_t own = specs.size();
  for (const auto &s : symbols) specs.push_back(lang::symbol_param(lang::Expr(ir::Expr(symbol_var(s)))));
  mod.kernel(name, specs, [&](const std::vector<lang::ParamHandle> &ps) {
    std::vector<ir::Var> vs;
    for (std::size_t i = 0; i < own; ++i) vs.push_back(ps[i].v);
    body(vs);
  });
}

/// A tensor parameter spec of `shape` (symbolic extents become expressions of the symbols).
lang::ParamSpec param_spec(const std::string &name, DataType d, const Extents &shape);

/// The number of blocks that cover `count` items at `per` items a block (at least 1): a constant,
/// or an expression of the symbols for the launch to evaluate.
lang::Expr blocks_for(const Dim &count, std::int64_t per);

/// Stores `value` to param[idx] (converted to the param's dtype).
void store(const ir::Var &param, const std::vector<ir::Expr> &idx, const ir::Expr &value);

/// A Var initialized with an IR expression.
lang::Var let(DataType d, const ir::Expr &init, const char *hint = "v");

} // namespace detail
} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule_common.ipp"
#endif
