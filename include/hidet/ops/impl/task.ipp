// Definitions for hidet/ops/task.hpp.
#pragma once

#include "hidet/ops/task.hpp"

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
    s += str_cat(i ? ", " : "", inputs[i].name(), ": ", inputs[i].dtype(), shape_str(inputs[i].shape()));
  s += ") -> ";
  for (std::size_t i = 0; i < outputs.size(); ++i)
    s += str_cat(i ? ", " : "", outputs[i].dtype(), shape_str(outputs[i].shape()));
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

HIDET_INLINE bool Task::injective() const {
  for (auto *n : topo_order(outputs))
    if (n->kind == TensorNode::Kind::Reduce) return false;
  return true;
}

} // namespace hidet::ops
