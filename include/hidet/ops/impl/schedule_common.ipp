// Definitions for hidet/ops/schedule_common.hpp.
#pragma once

#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

HIDET_INLINE ir::Expr ReadRewriter::mutate_Var(const ir::Expr &e, const ir::VarNode *v) {
  auto it = subst_.find(v);
  return it == subst_.end() ? e : it->second;
}

HIDET_INLINE ir::Expr ReadRewriter::mutate_TensorElement(const ir::Expr &e, const ir::TensorElementNode *n) {
  std::vector<ir::Expr> idx;
  for (auto &i : n->indices) idx.push_back(mutate(i));
  if (rewrite_)
    if (ir::Expr r = rewrite_(e, idx)) return r;
  return ir::TensorElementNode::make(n->base, std::move(idx), e->loc);
}

HIDET_INLINE Inliner::Inliner(const std::map<const ir::VarNode *, ir::Var> &params,
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

HIDET_INLINE bool mentions(const ir::Expr &e, const ir::VarNode *v) {
  struct Find : ir::IRVisitor {
    const ir::VarNode *target;
    bool found = false;
    void visit_Var(const ir::VarNode *x) override { found = found || x == target; }
  } f;
  f.target = v;
  f.visit(e);
  return f.found;
}

HIDET_INLINE std::int64_t pow2_ceil(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

HIDET_INLINE std::vector<ir::Expr> unravel(const ir::Expr &flat, const Extents &extents) {
  const SymShape &shape = extents.dims;
  std::vector<ir::Expr> r(shape.size());
  Dim stride = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    ir::Expr q = stride == 1 ? flat : (lang::Expr(flat) / dim_expr(stride)).ir();
    r[k] = k == 0 ? q : (lang::Expr(q) % dim_expr(shape[k])).ir();
    stride *= shape[k];
  }
  return r;
}

HIDET_INLINE lang::ParamSpec param_spec(const std::string &name, DataType d, const Extents &shape) {
  std::vector<ir::Expr> dims;
  for (const auto &s : shape.dims) dims.push_back(dim_expr(s).ir());
  return lang::ParamSpec(lang::TensorSpec(d, dims).named(name));
}

HIDET_INLINE lang::Expr blocks_for(const Dim &count, std::int64_t per) {
  if (count.is_constant()) return int(std::max<std::int64_t>(1, (count.value() + per - 1) / per));
  return lang::max((dim_expr(count) + int(per - 1)) / int(per), 1);
}

HIDET_INLINE void store(const ir::Var &param, const std::vector<ir::Expr> &idx, const ir::Expr &value) {
  lang::Element el(param, idx, {});
  el = lang::Operand::of(value, {});
}

HIDET_INLINE lang::Var let(DataType d, const ir::Expr &init, const char *hint) {
  lang::Operand o = lang::Operand::of(init, {});
  return lang::var(d, o, hint);
}

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"
