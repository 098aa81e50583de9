// Definitions for hidet/ops/fuse.hpp.
#pragma once

#include "hidet/ops/fuse.hpp"

#include <map>

#include "hidet/ir/functor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

namespace detail {
/// Rewrites reads of tensors (TensorElement on their buffer vars) to other tensors' buffers.
class BufferRedirect : public ir::IRMutator {
public:
  explicit BufferRedirect(std::map<const ir::VarNode *, ir::Var> to) : to_(std::move(to)) {}

protected:
  ir::Expr mutate_TensorElement(const ir::Expr &e, const ir::TensorElementNode *n) override {
    std::vector<ir::Expr> idx;
    bool changed = mutate_list(n->indices, idx);
    auto it = to_.find(n->base.get());
    if (it == to_.end() && !changed) return e;
    return ir::TensorElementNode::make(it != to_.end() ? it->second : n->base, std::move(idx), n->loc);
  }

private:
  std::map<const ir::VarNode *, ir::Var> to_;
};
} // namespace detail

namespace detail {
HIDET_INLINE Task compose(const Task &consumer, std::size_t input_index, const Task &producer) {
  if (input_index >= consumer.inputs.size())
    throw ValueError(str_cat("fuse_prologue: task '", consumer.name, "' has ", consumer.inputs.size(),
                             " inputs; no input ", input_index));
  const TensorNode *target = &consumer.inputs[input_index].node();
  const auto &pout = producer.outputs[0].ptr();
  if (pout->shape != target->shape || pout->dtype != target->dtype)
    throw ValueError(str_cat("fuse_prologue: '", producer.name, "' gives ", pout->dtype, shape_str(pout->shape),
                             " but input ", input_index, " of '", consumer.name, "' is ", target->dtype,
                             shape_str(target->shape)));
  // Rebuild the consumer's nodes that read the target, directly or through other nodes.
  std::map<const TensorNode *, std::shared_ptr<const TensorNode>> remap;
  remap[target] = pout;
  std::map<const ir::VarNode *, ir::Var> redirect{{target->buf.get(), pout->buf}};
  std::function<std::shared_ptr<const TensorNode>(const std::shared_ptr<const TensorNode> &)> rebuild =
      [&](const std::shared_ptr<const TensorNode> &n) -> std::shared_ptr<const TensorNode> {
    if (auto it = remap.find(n.get()); it != remap.end()) return it->second;
    std::vector<std::shared_ptr<const TensorNode>> deps;
    bool changed = false;
    for (const auto &d : n->deps) {
      deps.push_back(rebuild(d));
      changed = changed || deps.back() != d;
    }
    if (!changed) return remap[n.get()] = n;
    auto copy = std::make_shared<TensorNode>(*n);
    copy->deps = std::move(deps);
    copy->value = detail::BufferRedirect(redirect).mutate(n->value);
    return remap[n.get()] = copy;
  };
  Task fused;
  fused.name = consumer.name;
  fused.attrs = consumer.attrs;
  for (std::size_t i = 0; i < consumer.inputs.size(); ++i) {
    if (i != input_index) {
      fused.inputs.push_back(consumer.inputs[i]);
      continue;
    }
    for (const auto &p : producer.inputs)
      fused.inputs.push_back(p);
  }
  for (const auto &o : consumer.outputs) {
    auto n = rebuild(o.ptr());
    if (n.get() == pout.get())
      throw ValueError(str_cat("fuse_prologue: output of '", consumer.name, "' is its input ", input_index,
                               "; nothing to fuse"));
    fused.outputs.emplace_back(n);
  }
  return fused;
}
} // namespace detail

HIDET_INLINE Task fuse_prologue(const Task &consumer, std::size_t input_index, const Task &producer) {
  if (producer.outputs.size() != 1 || !producer.injective())
    throw ValueError(str_cat("fuse_prologue: task '", producer.name,
                             "' must be injective with one output to fuse into '", consumer.name, "'"));
  return detail::compose(consumer, input_index, producer);
}

HIDET_INLINE Task fuse_epilogue(const Task &consumer, std::size_t input_index, const Task &producer) {
  if (producer.outputs.size() != 1 || !consumer.injective())
    throw ValueError(str_cat("fuse_epilogue: task '", consumer.name, "' must be injective to follow '", producer.name,
                             "', which must have one output"));
  return detail::compose(consumer, input_index, producer);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
