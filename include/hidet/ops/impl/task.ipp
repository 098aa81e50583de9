// Definitions for hidet/ops/task.hpp.
#pragma once

#include "hidet/ops/task.hpp"

#include <set>

#include "hidet/ir/functor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

namespace detail {
HIDET_INLINE std::string ints_str(const std::vector<std::int64_t> &v) {
  std::ostringstream os;
  print_attr(os, v);
  return os.str();
}
} // namespace detail

HIDET_INLINE std::string Task::str() const {
  std::string s = name + "(";
  for (std::size_t i = 0; i < inputs.size(); ++i)
    s += str_cat(i ? ", " : "", inputs[i].name(), ": ", inputs[i].dtype(), shape_str(inputs[i].sym_shape()));
  s += ") -> ";
  for (std::size_t i = 0; i < outputs.size(); ++i)
    s += str_cat(i ? ", " : "", outputs[i].dtype(), shape_str(outputs[i].sym_shape()));
  if (!attrs.empty()) s += " {" + attrs + "}";
  return s;
}

HIDET_INLINE std::vector<const TensorNode *> topo_order(const std::vector<TensorDef> &outputs) {
  std::vector<const TensorNode *> order;
  std::vector<const TensorNode *> visiting;
  std::function<void(const TensorNode *)> visit = [&](const TensorNode *n) {
    for (auto *o : order)
      if (o == n) return;
    for (auto &d : n->deps) visit(d.get());
    order.push_back(n);
  };
  for (auto &o : outputs) visit(&o.node());
  return order;
}

HIDET_INLINE std::vector<std::string> task_symbols(const Task &task) {
  std::set<std::string> names;
  auto add = [&](const SymShape &s) {
    for (const auto &d : s)
      for (const auto &n : d.symbols()) names.insert(n);
  };
  std::vector<const TensorNode *> nodes = topo_order(task.outputs);
  for (const auto &x : task.inputs) nodes.push_back(&x.node());
  for (const auto *n : nodes) add(n->shape), add(n->rextents);
  return {names.begin(), names.end()};
}

namespace detail {
/// Replaces tensor bases by the specialized nodes' buffers and symbols by constants.
class Specializer : public ir::IRMutator {
public:
  Specializer(const std::map<const ir::VarNode *, ir::Var> &bufs, const SymbolValues &values, bool partial = false)
      : bufs_(bufs), values_(values), partial_(partial) {}
  using ir::IRMutator::mutate;

protected:
  ir::Expr mutate_Var(const ir::Expr &e, const ir::VarNode *v) override {
    if (const std::string *name = symbol_name(v)) {
      auto it = values_.find(*name);
      if (it == values_.end()) {
        if (partial_) return e;
        throw ValueError(str_cat("specialize: symbol ", *name, " has no value"));
      }
      return ir::int32(it->second);
    }
    return e;
  }
  ir::Expr mutate_TensorElement(const ir::Expr &e, const ir::TensorElementNode *n) override {
    std::vector<ir::Expr> idx;
    for (const auto &i : n->indices) idx.push_back(mutate(i));
    auto it = bufs_.find(n->base.get());
    return ir::TensorElementNode::make(it == bufs_.end() ? n->base : it->second, std::move(idx), e->loc);
  }

private:
  const std::map<const ir::VarNode *, ir::Var> &bufs_;
  const SymbolValues &values_;
  bool partial_;
};

/// specialize (partial: substitute).
HIDET_INLINE Task bind_symbols(const Task &task, const SymbolValues &values, bool partial) {
  if (task_symbols(task).empty()) return task;
  std::map<const TensorNode *, std::shared_ptr<const TensorNode>> done;
  std::map<const ir::VarNode *, ir::Var> bufs;
  auto evaluate = [&](const std::string &name, const SymShape &s) {
    if (partial) {
      SymShape out;
      for (const auto &d : s) out.push_back(d.substitute(values));
      return out;
    }
    try {
      return to_sym_shape(evaluate_shape(s, values));
    } catch (const ValueError &e) {
      throw ValueError(str_cat("task '", task.name, "': tensor '", name, "' ", shape_str(s), ": ", e.what()));
    }
  };
  std::function<std::shared_ptr<const TensorNode>(const TensorNode *)> clone = [&](const TensorNode *n) {
    if (auto it = done.find(n); it != done.end()) return it->second;
    auto m = std::make_shared<TensorNode>(*n);
    m->deps.clear();
    for (const auto &d : n->deps) m->deps.push_back(clone(d.get()));
    m->shape = evaluate(n->name, n->shape);
    m->rextents = evaluate(n->name, n->rextents);
    m->buf = ir::make_var(ir::TensorTypeNode::make(n->dtype, [&] {
      std::vector<ir::Expr> dims;
      for (const auto &d : m->shape) dims.push_back(d.is_constant() ? ir::int32(d.value()) : dim_expr(d).ir());
      return dims;
    }(), ir::Scope::Global, {}), n->name);
    bufs[n->buf.get()] = m->buf;
    if (m->value) m->value = Specializer(bufs, values, partial).mutate(n->value);
    return done[n] = m;
  };
  Task r = task;
  r.inputs.clear(), r.outputs.clear();
  for (const auto &x : task.inputs) r.inputs.emplace_back(clone(&x.node()));
  for (const auto &y : task.outputs) r.outputs.emplace_back(clone(&y.node()));
  return r;
}
} // namespace detail

HIDET_INLINE Task specialize(const Task &task, const SymbolValues &values) {
  return detail::bind_symbols(task, values, false);
}

HIDET_INLINE Task substitute(const Task &task, const SymbolValues &values) {
  return detail::bind_symbols(task, values, true);
}

HIDET_INLINE bool Task::injective() const {
  for (auto *n : topo_order(outputs))
    if (n->kind == TensorNode::Kind::Reduce) return false;
  return true;
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
