// Shared pieces of the auto-scheduler: the execution plan of a task (buffers and kernel
// launches), inlining of element-wise definitions into their consumers, index decomposition and
// the definition of kernels with a run-time number of parameters.
#pragma once

#include <functional>
#include <map>

#include "hidet/ir/functor.hpp"
#include "hidet/ops/task.hpp"

namespace hidet::ops {

/// A buffer of an execution plan: a task input, a task output or a temporary.
struct PlanBuffer {
  enum class Role : std::uint8_t { Input, Output, Temp };
  Role role = Role::Temp;
  int index = 0; ///< position among the task's inputs / outputs
  std::string name;
  Shape shape;
  DataType dtype;
  /// Bytes the kernels need the data aligned to (vector accesses); 0 or 1: the element size.
  /// run_plan copies a task input that is not aligned (a view at an odd offset) before launching.
  int align = 0;
};

/// One kernel launch: the kernel's name in the module and the buffers passed to it.
struct PlanStep {
  std::string kernel;
  std::vector<int> args;
  std::int64_t work = 0; ///< number of output elements; 0 skips the launch (empty tensors)
};

/// How a task runs: a script module with one kernel per materialized tensor, the buffers and the
/// launches in order.
struct Plan {
  lang::ScriptModule module{"task"};
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;
};

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
  ir::Expr mutate_Var(const ir::Expr &e, const ir::VarNode *v) override {
    auto it = subst_.find(v);
    return it == subst_.end() ? e : it->second;
  }
  ir::Expr mutate_TensorElement(const ir::Expr &e, const ir::TensorElementNode *n) override {
    std::vector<ir::Expr> idx;
    for (auto &i : n->indices) idx.push_back(mutate(i));
    if (rewrite_)
      if (ir::Expr r = rewrite_(e, idx)) return r;
    return ir::TensorElementNode::make(n->base, std::move(idx), e->loc);
  }

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
          std::map<const ir::VarNode *, ir::Expr> subst)
      : ReadRewriter(std::move(subst), [&params, &inlined](const ir::Expr &e, const std::vector<ir::Expr> &idx) {
          const auto *n = e.as<ir::TensorElementNode>();
          if (auto p = params.find(n->base.get()); p != params.end())
            return ir::TensorElementNode::make(p->second, idx, e->loc);
          if (auto c = inlined.find(n->base.get()); c != inlined.end()) {
            const TensorNode *t = c->second;
            std::map<const ir::VarNode *, ir::Expr> s;
            for (std::size_t i = 0; i < t->axes.size(); ++i) s[t->axes[i].get()] = idx[i];
            return Inliner(params, inlined, std::move(s)).mutate(t->value);
          }
          throw ValueError(str_cat("tensor '", n->base->hint,
                                   "' is read by a compute definition but was not indexed inside an index "
                                   "function (index tensors only inside compute/reduce lambdas)"));
        }) {}
};

/// Whether `e` mentions the variable `v`.
inline bool mentions(const ir::Expr &e, const ir::VarNode *v) {
  struct Find : ir::IRVisitor {
    const ir::VarNode *target;
    bool found = false;
    void visit_Var(const ir::VarNode *x) override { found = found || x == target; }
  } f;
  f.target = v;
  f.visit(e);
  return f.found;
}

/// Whether `e` is the variable `v` itself.
inline bool is_var(const ir::Expr &e, const ir::VarNode *v) { return e && e.get() == v; }

/// The smallest power of two >= v (v >= 1).
inline std::int64_t pow2_ceil(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

/// The row-major multi-index of flat index `flat` (an i32 expression) in `shape`.
inline std::vector<ir::Expr> unravel(const ir::Expr &flat, const Shape &shape) {
  std::vector<ir::Expr> r(shape.size());
  std::int64_t stride = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    ir::Expr q = stride == 1 ? flat : (lang::Expr(flat) / int(stride)).ir();
    r[k] = k == 0 ? q : (lang::Expr(q) % int(shape[k])).ir();
    stride *= shape[k];
  }
  return r;
}

/// Defines a kernel whose body receives its parameters as a vector (any count up to 24).
template <class F>
void define_kernel(lang::ScriptModule &mod, const std::string &name, const std::vector<lang::ParamSpec> &specs, F body) {
  auto go = [&]<std::size_t N>(std::integral_constant<std::size_t, N>) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      struct Body {
        F *f;
        void operator()(decltype((void)I, lang::ParamHandle{})... ps) const { (*f)(std::vector<ir::Var>{ps.v...}); }
      };
      mod.kernel(name, specs, Body{&body});
    }(std::make_index_sequence<N>{});
  };
  bool done = false;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((specs.size() == K ? (go(std::integral_constant<std::size_t, K>{}), done = true) : false), ...);
  }(std::make_index_sequence<25>{});
  HIDET_ASSERT(done, "kernel '", name, "' has ", specs.size(), " parameters; at most 24 are supported");
}

/// A tensor parameter spec with a constant shape.
inline lang::ParamSpec param_spec(const std::string &name, DataType d, const Shape &shape) {
  std::vector<ir::Expr> dims;
  for (auto s : shape) dims.push_back(ir::int32(s));
  return lang::ParamSpec(lang::TensorSpec(d, dims).named(name));
}

/// Stores `value` to param[idx] (converted to the param's dtype).
inline void store(const ir::Var &param, const std::vector<ir::Expr> &idx, const ir::Expr &value) {
  lang::Element el(param, idx, {});
  el = lang::Operand::of(value, {});
}

/// A Var initialized with an IR expression.
inline lang::Var let(DataType d, const ir::Expr &init, const char *hint = "v") {
  lang::Operand o = lang::Operand::of(init, {});
  return lang::var(d, o, hint);
}

} // namespace detail
} // namespace hidet::ops
