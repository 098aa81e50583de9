// Definitions for hidet/graph/passes.hpp.
#pragma once

#include "hidet/graph/passes.hpp"
#include "hidet/graph/pattern.hpp"
#include "hidet/graph/shape_dispatch.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "hidet/ops/attention.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/conv.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/fuse.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/pool.hpp"
#include "hidet/ops/schedule_row.hpp"
#include "hidet/ops/transform.hpp"

// Uses detail::TensorKey and key_of of flow_graph.ipp, which src/graph.cpp includes first.

namespace hidet::graph {

namespace detail {
/// A task-defined operator being fused: its task, the inputs of the task (old graph tensors), its
/// key and members.
struct FusionGroup {
  std::shared_ptr<const ops::TaskOperator> head; ///< the last operator of the group (its outputs)
  ops::Task task;
  std::vector<Tensor> inputs;
  std::string key;
  std::vector<std::string> members;
  std::vector<bool> injective; ///< per member
  std::vector<std::shared_ptr<const ops::TaskOperator>> ops; ///< the members' operators, in order
};

inline FusionGroup single_group(const std::shared_ptr<const ops::TaskOperator> &op) {
  // An operator fused before (fuse_epilogues' grouping of an activation) keeps its members' names.
  std::vector<std::string> members = op->members().size() > 1 ? op->members() : std::vector<std::string>{op->name()};
  std::vector<bool> injective(members.size(), op->task().injective());
  return {op, op->task(), op->inputs(), op->key(), members, injective, {op}};
}

/// The group reading each distinct tensor once: a task input that repeats an earlier one (an
/// activation written out, x * tanh(x + x^3)) reads that one instead.
inline void merge_repeated_inputs(FusionGroup &g) {
  for (std::size_t j = 1; j < g.inputs.size();) {
    std::size_t first = 0;
    while (first < j && !(g.inputs[first].is_symbolic() && g.inputs[j].is_symbolic() &&
                          key_of(g.inputs[first]) == key_of(g.inputs[j])))
      ++first;
    if (first == j) {
      ++j;
      continue;
    }
    ops::Task same{"same", {}, {g.task.inputs[first]}, "", {}}; // input j is input `first`
    g.task = ops::detail::compose(g.task, j, same);
    g.inputs.erase(g.inputs.begin() + std::ptrdiff_t(j));
    g.key = str_cat(g.key, "|same(", j, "=", first, ")");
  }
}

/// The anchor among a group's members: the first non-injective one, else the last.
inline int anchor_of(const FusionGroup &g) {
  for (std::size_t i = 0; i < g.injective.size(); ++i)
    if (!g.injective[i]) return int(i);
  return int(g.members.size()) - 1;
}
} // namespace detail

namespace detail {
/// A view Reshape between two injective task-defined operators (a slice, then a permute) becomes
/// ops::reshape's task, so that prologue fusion runs through it: one kernel, not two.
inline FlowGraph reshapes_between_tasks(const FlowGraph &graph) {
  std::map<TensorKey, int> uses;
  std::map<TensorKey, const Operator *> consumer;
  for (const auto &op : graph.nodes())
    for (const auto &t : op->inputs())
      if (t.is_symbolic()) ++uses[key_of(t)], consumer[key_of(t)] = op.get();
  for (const auto &t : graph.outputs()) uses[key_of(t)] += 2;
  auto injective_task = [](const Operator *op) {
    auto *t = dynamic_cast<const ops::TaskOperator *>(op);
    return t && t->task().injective();
  };
  std::map<TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  bool changed = false;
  for (const auto &op : graph.nodes()) {
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    if (op->name() == "Reshape" && op->inputs().size() == 1 && !dynamic_cast<const ops::TaskOperator *>(op.get()) &&
        op->inputs()[0].trace() && injective_task(op->inputs()[0].trace().op.get()) &&
        uses[key_of(op->inputs()[0])] == 1 && uses[{op.get(), 0}] == 1 && injective_task(consumer[{op.get(), 0}]) &&
        is_constant_shape(op->output_metas()[0].shape)) {
      new_of[{op.get(), 0}] = ops::reshape(ins[0], constant_shape(op->output_metas()[0].shape));
      changed = true;
      continue;
    }
    auto outs = outputs_of(op->with_inputs(std::move(ins)));
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
  }
  if (!changed) return graph;
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}
} // namespace detail

namespace detail {
/// fuse_operators (all = true), or its first step for fuse_epilogues (all = false): only
/// injective operators into injective consumers, and a group is kept only when it reads some
/// tensor more than once (an activation written out: one operator with one input, which can then
/// follow its anchor as an epilogue); every other group is left as its operators were.
HIDET_INLINE FlowGraph fuse_task_operators(const FlowGraph &input, bool all) {
  using detail::TensorKey;
  using detail::key_of;
  const FlowGraph graph = all ? detail::reshapes_between_tasks(input) : input;
  // Uses of each symbolic tensor (as an operator input or a graph output) and its consumers.
  std::map<TensorKey, int> uses;
  std::map<TensorKey, const Operator *> consumer;
  for (const auto &op : graph.nodes())
    for (const auto &t : op->inputs())
      if (t.is_symbolic()) ++uses[key_of(t)], consumer[key_of(t)] = op.get();
  std::set<TensorKey> graph_outputs;
  for (const auto &t : graph.outputs()) graph_outputs.insert(key_of(t)), ++uses[key_of(t)];

  auto as_task_op = [](const std::shared_ptr<const Operator> &op) {
    return std::dynamic_pointer_cast<const ops::TaskOperator>(op);
  };
  // Groups waiting to be fused into their consumer, by their head's old operator.
  std::map<const Operator *, detail::FusionGroup> pending;
  std::map<TensorKey, Tensor> new_of; // old symbolic tensor -> tensor of the new graph
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t; // constants and graph inputs stay
    auto it = new_of.find(key_of(t));
    HIDET_ASSERT(it != new_of.end(), "fuse_operators: no new tensor for an input of a node");
    return it->second;
  };
  // A group as one node of the new graph, standing for its head's outputs.
  auto emit = [&](detail::FusionGroup g) {
    const auto &top = g.head;
    std::size_t before = g.inputs.size();
    detail::merge_repeated_inputs(g);
    if (!all && g.members.size() > 1 && g.inputs.size() == before) { // nothing read twice: as it was
      for (const auto &m : g.ops) {
        std::vector<Tensor> mins;
        for (const auto &t : m->inputs()) mins.push_back(map_input(t));
        auto outs = outputs_of(m->with_inputs(std::move(mins)));
        for (int i = 0; i < m->num_outputs(); ++i) new_of[{m.get(), i}] = outs[std::size_t(i)];
      }
      return;
    }
    std::vector<Tensor> ins;
    for (const auto &t : g.inputs) ins.push_back(map_input(t));
    std::shared_ptr<const Operator> node;
    if (g.members.size() == 1 && g.inputs.size() == before) {
      node = top->with_inputs(std::move(ins));
    } else if (g.members.size() == 1) { // one operator reading a tensor twice (x * x): once
      auto one = std::make_shared<ops::TaskOperator>(top->name(), std::move(ins), top->attrs(), top->output_metas(),
                                                     g.key, g.task, top->device());
      one->set_origin(top->origin_or_self());
      node = one;
    } else {
      int anchor = detail::anchor_of(g);
      std::string list;
      for (const auto &m : g.members) list += (list.empty() ? "" : ", ") + m;
      std::string attrs = str_cat("fused_graph=FlowGraph(", list, "), anchor=", anchor);
      auto fused = std::make_shared<ops::TaskOperator>("Fused" + g.members[std::size_t(anchor)], std::move(ins), attrs,
                                                       top->output_metas(), g.key, g.task, top->device(), g.members,
                                                       anchor);
      fused->set_origin(top->origin_or_self());
      node = fused;
    }
    auto outs = outputs_of(node);
    for (int i = 0; i < top->num_outputs(); ++i) new_of[{top.get(), i}] = outs[std::size_t(i)];
  };
  for (const auto &op : graph.nodes()) {
    auto top = as_task_op(op);
    if (!top) {
      std::vector<Tensor> ins;
      for (const auto &t : op->inputs()) ins.push_back(map_input(t));
      auto outs = outputs_of(op->with_inputs(std::move(ins)));
      for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
      continue;
    }
    detail::FusionGroup g = detail::single_group(top);
    // Fuse pending producers feeding this operator, until none is left.
    for (bool fused = true; fused;) {
      fused = false;
      for (std::size_t j = 0; j < g.inputs.size(); ++j) {
        auto tr = g.inputs[j].trace();
        if (!tr) continue;
        auto it = pending.find(tr.op.get());
        if (it == pending.end()) continue;
        detail::FusionGroup p = std::move(it->second);
        pending.erase(it);
        auto injective = [](const detail::FusionGroup &x) {
          return std::all_of(x.injective.begin(), x.injective.end(), [](bool b) { return b; });
        };
        bool p_injective = injective(p);
        if (!p_injective && (!all || !injective(g))) { // a second anchor (sum(t) + max(t)): a node of its own
          emit(p);
          fused = true;
          break;
        }
        detail::FusionGroup merged;
        merged.head = g.head;
        merged.task = p_injective ? ops::fuse_prologue(g.task, j, p.task) : ops::fuse_epilogue(g.task, j, p.task);
        merged.inputs.assign(g.inputs.begin(), g.inputs.begin() + std::ptrdiff_t(j));
        merged.inputs.insert(merged.inputs.end(), p.inputs.begin(), p.inputs.end());
        merged.inputs.insert(merged.inputs.end(), g.inputs.begin() + std::ptrdiff_t(j) + 1, g.inputs.end());
        merged.key = str_cat("fused{", p.key, " -> ", j, ":", g.key, "}");
        merged.members = p.members;
        merged.members.insert(merged.members.end(), g.members.begin(), g.members.end());
        merged.injective = p.injective;
        merged.injective.insert(merged.injective.end(), g.injective.begin(), g.injective.end());
        merged.ops = p.ops;
        merged.ops.insert(merged.ops.end(), g.ops.begin(), g.ops.end());
        g = std::move(merged);
        fused = true;
        break;
      }
    }
    // An injective one-output operator whose output feeds one task-defined operator once waits
    // to be fused into it (a prologue). A group with an anchor (a reduction) waits likewise for
    // an injective consumer (an epilogue: a bias, an activation, a cast), unless that would cost
    // the anchor its one-kernel row-resident schedule (a softmax followed by a permute).
    TensorKey out{op.get(), 0};
    bool all_injective = true;
    for (bool b : g.injective) all_injective = all_injective && b;
    auto cons = consumer.find(out);
    if (op->num_outputs() == 1 && uses[out] == 1 && !graph_outputs.count(out) && cons != consumer.end()) {
      std::shared_ptr<const ops::TaskOperator> c;
      for (const auto &n : graph.nodes())
        if (n.get() == cons->second) c = as_task_op(n);
      bool wait = c && all_injective && (all || c->task().injective());
      if (all && c && !all_injective && c->task().injective() && c->num_outputs() == 1) {
        wait = true;
        if (ops::detail::analyze_row_resident(g.task)) {
          std::size_t j = 0;
          while (j < c->inputs().size() && !(c->inputs()[j].trace() && c->inputs()[j].trace().op.get() == op.get())) ++j;
          wait = j < c->inputs().size() && ops::detail::analyze_row_resident(ops::fuse_epilogue(c->task(), j, g.task));
        }
      }
      if (wait) {
        pending.emplace(op.get(), std::move(g));
        continue;
      }
    }
    emit(g);
  }
  HIDET_ASSERT(pending.empty(), "fuse_operators: ", pending.size(), " operators were left unfused");
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}
} // namespace detail

HIDET_INLINE FlowGraph fuse_operators(const FlowGraph &input) { return detail::fuse_task_operators(input, true); }

HIDET_INLINE void verify(const FlowGraph &graph) {
  using detail::key_of;
  std::map<const Operator *, std::size_t> position;
  std::set<detail::TensorKey> inputs;
  for (const auto &x : graph.inputs()) inputs.insert(key_of(x));
  auto meta_str = [](const SymShape &s, DataType d) { return str_cat(d.name(), sym_shape_str(s)); };
  auto check_tensor = [&](const Tensor &t, const std::string &where) {
    if (!t.defined()) throw ValueError(str_cat("invalid graph: ", where, " is an undefined tensor"));
    if (!t.is_symbolic()) return; // a constant
    auto tr = t.trace();
    if (!tr) {
      if (!inputs.count(key_of(t)))
        throw ValueError(str_cat("invalid graph: ", where, " is a symbolic tensor that is not a graph input"));
      return;
    }
    auto it = position.find(tr.op.get());
    if (it == position.end())
      throw ValueError(str_cat("invalid graph: ", where, " is made by ", tr.op->name(), ", which is not an earlier node"));
    if (tr.index < 0 || tr.index >= tr.op->num_outputs())
      throw ValueError(str_cat("invalid graph: ", where, " is output ", tr.index, " of node ", it->second, " (",
                               tr.op->name(), "), which has ", tr.op->num_outputs()));
    const TensorMeta &m = tr.op->output_metas()[std::size_t(tr.index)];
    if (m.dtype != t.dtype() || !(m.shape == t.sym_shape()))
      throw ValueError(str_cat("invalid graph: ", where, " is ", meta_str(t.sym_shape(), t.dtype()), " but node ",
                               it->second, " (", tr.op->name(), ") makes ", meta_str(m.shape, m.dtype)));
  };
  const auto &nodes = graph.nodes();
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Operator &op = *nodes[k];
    std::string node = str_cat("node ", k, " (", op.name(), ")");
    if (position.count(&op)) throw ValueError(str_cat("invalid graph: ", node, " appears twice"));
    for (std::size_t i = 0; i < op.inputs().size(); ++i) check_tensor(op.inputs()[i], str_cat("input ", i, " of ", node));
    if (auto task_op = dynamic_cast<const ops::TaskOperator *>(&op)) {
      const ops::Task &task = task_op->task();
      if (task.inputs.size() != op.inputs().size() || task.outputs.size() != std::size_t(op.num_outputs()))
        throw ValueError(str_cat("invalid graph: ", node, " has ", op.inputs().size(), " inputs and ", op.num_outputs(),
                                 " outputs but its task ", task.inputs.size(), " and ", task.outputs.size()));
      for (std::size_t i = 0; i < task.inputs.size(); ++i) {
        const Tensor &t = op.inputs()[i];
        if (t.dtype() != task.inputs[i].dtype() || !(t.sym_shape() == task.inputs[i].sym_shape()))
          throw ValueError(str_cat("invalid graph: input ", i, " of ", node, " is ", meta_str(t.sym_shape(), t.dtype()),
                                   " but its task reads ",
                                   meta_str(task.inputs[i].sym_shape(), task.inputs[i].dtype())));
      }
      for (std::size_t i = 0; i < task.outputs.size(); ++i) {
        const TensorMeta &m = op.output_metas()[i];
        if (m.dtype != task.outputs[i].dtype() || !(m.shape == task.outputs[i].sym_shape()))
          throw ValueError(str_cat("invalid graph: output ", i, " of ", node, " is recorded as ",
                                   meta_str(m.shape, m.dtype), " but its task makes ",
                                   meta_str(task.outputs[i].sym_shape(), task.outputs[i].dtype())));
      }
    }
    position[&op] = k;
  }
  for (std::size_t i = 0; i < graph.outputs().size(); ++i) {
    if (!graph.outputs()[i].is_symbolic())
      throw ValueError(str_cat("invalid graph: output ", i, " holds data (it depends on no input)"));
    check_tensor(graph.outputs()[i], str_cat("output ", i));
  }
}

namespace detail {
/// An attention node rebuilt on other inputs from a recorded node's attributes (`attrs`:
/// is_causal, scale; the layout is `heads_last`), for passes that replace one.
inline Tensor attention_like(const std::string &attrs, const Tensor &q, const Tensor &k, const Tensor &v,
                             const std::optional<Tensor> &mask, bool heads_last,
                             std::optional<double> scale = std::nullopt) {
  if (std::string sc = attr_text(attrs, "scale"); !scale && !sc.empty()) scale = std::stod(sc);
  bool causal = attr_text(attrs, "is_causal") == "true";
  return heads_last ? ops::scaled_dot_product_attention_heads_last(q, k, v, mask, causal, scale)
                    : ops::scaled_dot_product_attention(q, k, v, mask, causal, scale);
}
} // namespace detail

namespace detail {
/// The factor a captured Mul or Div by a scalar constant applies (x * c: c, x / c: 1 / c); none
/// for c / x, a division by zero or a Mul/Div of two tensors.
inline std::optional<double> scalar_factor(const Match &m, const std::string &op) {
  std::string s = m.attr(op, "scalar");
  if (s.empty()) return std::nullopt;
  double c = std::stod(s);
  if (m.op_name(op) != "Div") return c;
  if (m.attr(op, "left") != "0" || c == 0) return std::nullopt;
  return 1.0 / c;
}
} // namespace detail

HIDET_INLINE std::vector<RewriteRule> attention_rules() {
  using P = Pattern;
  P scores = P::op("Matmul", {P::any("q"), P::op("Permute", {P::any("k")}, "kt")});
  P scaled = P::one_of({P::op("Mul|Div", {scores}, "scale"), scores});
  P masked = P::one_of({P::op("Add", {scaled, P::any("mask")}), P::op("Add", {P::any("mask"), scaled}), scaled});
  P attention = P::op("Matmul", {P::op("Softmax", {masked}, "softmax"), P::any("v")});
  using detail::scalar_factor;
  auto replace = [](const Match &m) -> std::optional<Tensor> {
    const Tensor &q = m["q"], &k = m["k"], &v = m["v"];
    if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4) return std::nullopt;
    if (detail::attr_ints(m.ops.at("kt")->attrs(), "perm") != std::vector<std::int64_t>{0, 1, 3, 2}) return std::nullopt;
    auto axis = detail::attr_ints(m.ops.at("softmax")->attrs(), "axis");
    if (axis.size() != 1 || (axis[0] != 3 && axis[0] != -1)) return std::nullopt;
    std::optional<double> scale = m.ops.count("scale") ? scalar_factor(m, "scale") : 1.0;
    if (!scale) return std::nullopt;
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    return ops::scaled_dot_product_attention(q, k, v, mask, false, scale);
  };
  // Attention whose output is transposed to [B, Sq, H, D] (merging the heads): the kernel stores
  // that layout itself.
  P sdpa = P::one_of({P::op("ScaledDotProductAttention", {P::any("q"), P::any("k"), P::any("v")}, "sdpa"),
                      P::op("ScaledDotProductAttention", {P::any("q"), P::any("k"), P::any("v"), P::any("mask")}, "sdpa")});
  P heads_last = P::op("Permute", {sdpa}, "perm");
  auto replace_heads_last = [](const Match &m) -> std::optional<Tensor> {
    if (detail::attr_ints(m.ops.at("perm")->attrs(), "perm") != std::vector<std::int64_t>{0, 2, 1, 3}) return std::nullopt;
    if (m.attr("sdpa", "heads_last") == "true") return std::nullopt;
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    return detail::attention_like(m.ops.at("sdpa")->attrs(), m["q"], m["k"], m["v"], mask, true);
  };
  // Shifted-window attention (Swin): the scores plus a constant (the position bias), viewed per
  // window, plus another constant (the window mask), viewed back, then the softmax and the product
  // by v. The constants become one additive mask of the scores' shape, computed once here.
  auto added = [](const P &x, const char *c) { return P::one_of({P::op("Add", {x, P::any(c)}), P::op("Add", {P::any(c), x})}); };
  P windowed = P::op("Matmul", {P::op("Softmax", {P::op("Reshape", {added(P::op("Reshape", {added(scaled, "bias")}, "view"), "wmask")}, "back")}, "softmax"),
                                P::any("v")});
  auto replace_windowed = [](const Match &m) -> std::optional<Tensor> {
    const Tensor &q = m["q"], &k = m["k"], &v = m["v"], &bias = m["bias"], &wmask = m["wmask"];
    if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || bias.is_symbolic() || wmask.is_symbolic()) return std::nullopt;
    if (!is_constant_shape(q.sym_shape()) || !is_constant_shape(k.sym_shape())) return std::nullopt;
    if (detail::attr_ints(m.ops.at("kt")->attrs(), "perm") != std::vector<std::int64_t>{0, 1, 3, 2}) return std::nullopt;
    auto axis = detail::attr_ints(m.ops.at("softmax")->attrs(), "axis");
    if (axis.size() != 1 || (axis[0] != 3 && axis[0] != -1)) return std::nullopt;
    const SymShape &view = m.ops.at("view")->output_metas()[0].shape, &back = m.ops.at("back")->output_metas()[0].shape;
    if (!is_constant_shape(view) || !is_constant_shape(back)) return std::nullopt;
    const std::vector<std::int64_t> scores{q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2]};
    if (constant_shape(back) != scores) return std::nullopt; // viewed back to the scores' shape
    std::optional<double> scale = m.ops.count("scale") ? scalar_factor(m, "scale") : 1.0;
    if (!scale) return std::nullopt;
    Tensor mask;
    try { // constants: computed now (broadcasting errors mean another pattern: left alone)
      mask = ops::reshape(ops::broadcast_to(bias, scores), constant_shape(view)) + wmask;
      if (mask.shape() != constant_shape(view)) return std::nullopt;
      mask = ops::reshape(mask, scores);
    } catch (const ValueError &) {
      return std::nullopt;
    }
    return ops::scaled_dot_product_attention(q, k, v, mask, false, scale);
  };
  // q scaled by a constant before the product (q * c or q / c, as Swin writes it): the constant
  // joins the attention's scale, and q is read as it is (a view of the QKV projection, no kernel).
  P scaled_q = P::op("Mul|Div", {P::any("q")}, "qscale");
  P sdpa_q = P::one_of({P::op("ScaledDotProductAttention", {scaled_q, P::any("k"), P::any("v")}, "sdpa"),
                        P::op("ScaledDotProductAttention", {scaled_q, P::any("k"), P::any("v"), P::any("mask")}, "sdpa")});
  auto replace_scaled_q = [](const Match &m) -> std::optional<Tensor> {
    std::optional<double> c = scalar_factor(m, "qscale");
    if (!c) return std::nullopt;
    const Tensor &q = m["q"];
    if (q.ndim() != 4 || q.dtype() != m.ops.at("sdpa")->output_metas()[0].dtype) return std::nullopt;
    const std::string &attrs = m.ops.at("sdpa")->attrs();
    std::string sc = detail::attr_text(attrs, "scale");
    if (sc.empty() && !q.sym_shape().back().is_constant()) return std::nullopt;
    double scale = sc.empty() ? 1.0 / std::sqrt(double(q.sym_shape().back().value())) : std::stod(sc);
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    return detail::attention_like(attrs, q, m["k"], m["v"], mask, detail::attr_text(attrs, "heads_last") == "true",
                                  scale * *c);
  };
  return {{"attention", attention, replace},
          {"attention_windowed", windowed, replace_windowed},
          {"attention_scaled_q", sdpa_q, replace_scaled_q},
          {"attention_heads_last", heads_last, replace_heads_last}};
}

HIDET_INLINE FlowGraph fuse_attention(const FlowGraph &graph) { return rewrite(graph, attention_rules()); }

HIDET_INLINE FlowGraph eliminate_common_subexpressions(const FlowGraph &graph) {
  using detail::key_of;
  std::map<detail::TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  std::map<std::string, std::vector<Tensor>> seen; // signature -> outputs in the new graph
  for (const auto &op : graph.nodes()) {
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    std::string sig;
    if (auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(op)) sig = "task:" + task_op->key();
    else if (op->name() == "Matmul" || op->name() == "Conv2d" || op->name() == "Conv2dNhwc" || op->name() == "Reshape")
      sig = str_cat(op->name(), "(", op->attrs(), ")");
    if (!sig.empty()) {
      for (const auto &t : ins) {
        auto [p, off] = detail::identity_of(t);
        sig += str_cat("|", p, "+", off, ":", t.is_symbolic() ? 0 : 1);
      }
      for (const auto &m : op->output_metas()) sig += str_cat("|", m.dtype.name(), sym_shape_str(m.shape));
      if (auto it = seen.find(sig); it != seen.end()) {
        for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = it->second[std::size_t(i)];
        continue;
      }
    }
    auto outs = outputs_of(op->with_inputs(std::move(ins)));
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
    if (!sig.empty()) seen.emplace(sig, outs);
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}

HIDET_INLINE FlowGraph simplify_reshapes(const FlowGraph &graph) {
  using detail::key_of;
  std::map<detail::TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  for (const auto &op : graph.nodes()) {
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    if (op->name() == "Reshape" && ins.size() == 1 && op->num_outputs() == 1) {
      Tensor base = ins[0];
      if (auto tr = base.trace(); tr && tr.op->name() == "Reshape" && tr.op->inputs().size() == 1)
        base = tr.op->inputs()[0]; // a reshape of a reshape reads the first one's input
      const SymShape &shape = op->output_metas()[0].shape;
      if (base.sym_shape() == shape) {
        new_of[{op.get(), 0}] = base; // reshaping to its own shape: nothing to do
        continue;
      }
      if (!(base.sym_shape() == ins[0].sym_shape()) && is_constant_shape(shape)) {
        // The reshape now reads another shape: made anew for it (a recorded Reshape may be a
        // task over its input's shape).
        Tensor y = ops::reshape(base, constant_shape(shape));
        std::const_pointer_cast<Operator>(y.trace().op)->set_origin(op->origin_or_self());
        new_of[{op.get(), 0}] = y;
        continue;
      }
    }
    auto outs = outputs_of(op->with_inputs(std::move(ins)));
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}


namespace detail {
/// w [O, ...] with row o multiplied by scale[o], on the host (no kernel per shape): f16, bf16 and
/// f32 in typed loops (float products rounded once), other dtypes through doubles.
inline Tensor scale_rows(const Tensor &w, const std::vector<double> &scale) {
  const std::size_t rows = scale.size(), per = std::size_t(w.numel()) / rows;
  auto typed = [&](auto tag, auto load, auto store) {
    using T = decltype(tag);
    std::vector<T> v(std::size_t(w.numel()));
    w.copy_to_host(v.data());
    for (std::size_t o = 0; o < rows; ++o) {
      const float sc = float(scale[o]);
      for (std::size_t j = 0; j < per; ++j) v[o * per + j] = store(load(v[o * per + j]) * sc);
    }
    Tensor r = empty(w.shape(), w.dtype(), w.device());
    r.copy_from_host(v.data());
    return r;
  };
  switch (w.dtype().code) {
  case DTypeCode::F16: return typed(std::uint16_t{}, half_bits_to_float, float_to_half_bits);
  case DTypeCode::BF16: return typed(std::uint16_t{}, bf16_bits_to_float, float_to_bf16_bits);
  case DTypeCode::F32: return typed(float{}, [](float x) { return x; }, [](float x) { return x; });
  default: {
    std::vector<double> v = w.to_double_vector();
    for (std::size_t o = 0; o < rows; ++o)
      for (std::size_t j = 0; j < per; ++j) v[o * per + j] *= scale[o];
    return asarray(v, w.shape(), w.dtype(), w.device());
  }
  }
}

/// A constant weight [O, C, KH, KW] as [O, KH, KW, C], permuted on the host (no kernel to compile
/// per weight shape): raw elements, nothing converted.
inline Tensor weight_to_nhwc(const Tensor &w) {
  auto s = w.shape();
  const std::int64_t O = s[0], C = s[1], KH = s[2], KW = s[3];
  auto typed = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> in(std::size_t(w.numel())), out(in.size());
    w.copy_to_host(in.data());
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t h = 0; h < KH; ++h)
          for (std::int64_t k = 0; k < KW; ++k)
            out[std::size_t(((o * KH + h) * KW + k) * C + c)] = in[std::size_t(((o * C + c) * KH + h) * KW + k)];
    Tensor r = empty({O, KH, KW, C}, w.dtype(), w.device());
    r.copy_from_host(out.data());
    return r;
  };
  switch (w.dtype().nbytes()) {
  case 1: return typed(std::uint8_t{});
  case 2: return typed(std::uint16_t{});
  case 4: return typed(std::uint32_t{});
  default: return typed(std::uint64_t{});
  }
}
} // namespace detail

HIDET_INLINE FlowGraph fold_conv_batch_norm(const FlowGraph &graph) {
  using detail::key_of;
  std::map<detail::TensorKey, int> uses;
  for (const auto &op : graph.nodes())
    for (const auto &t : op->inputs())
      if (t.is_symbolic()) ++uses[key_of(t)];
  for (const auto &t : graph.outputs()) ++uses[key_of(t)];
  std::map<detail::TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  auto all_constant = [](const std::vector<Tensor> &ts, std::size_t from) {
    for (std::size_t i = from; i < ts.size(); ++i)
      if (ts[i].is_symbolic()) return false;
    return true;
  };
  for (const auto &op : graph.nodes()) {
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    if (op->name() == "BatchNorm" && op->inputs()[0].trace() && all_constant(op->inputs(), 1)) {
      auto conv = op->inputs()[0].trace().op;
      const std::string &ba = op->attrs();
      bool has_w = detail::attr_text(ba, "weight") == "1", has_b = detail::attr_text(ba, "bias") == "1";
      if (conv->name() == "Conv2d" && uses[key_of(op->inputs()[0])] == 1 && all_constant(conv->inputs(), 1) &&
          op->inputs().size() == std::size_t(3 + has_w + has_b) && !detail::attr_text(ba, "eps").empty()) {
        double eps = std::stod(detail::attr_text(ba, "eps"));
        const auto &ci = conv->inputs();
        const Tensor &w = ci[1];
        DataType wt = w.dtype();
        std::int64_t channels = w.shape()[0];
        // On the host, in double precision: no kernel to compile per channel count.
        auto host = [](const Tensor &t) { return t.to_double_vector(); };
        std::vector<double> mean = host(op->inputs()[1]), var = host(op->inputs()[2]);
        std::vector<double> gamma = has_w ? host(op->inputs()[3]) : std::vector<double>();
        std::vector<double> beta = has_b ? host(op->inputs()[3 + has_w]) : std::vector<double>();
        std::vector<double> bias = ci.size() > 2 ? host(ci[2]) : std::vector<double>(std::size_t(channels), 0.0);
        std::vector<double> b2v(static_cast<std::size_t>(channels), 0.0), scale(b2v.size());
        for (std::size_t o = 0; o < std::size_t(channels); ++o) {
          scale[o] = 1.0 / std::sqrt(var[o] + eps) * (has_w ? gamma[o] : 1.0);
          b2v[o] = (bias[o] - mean[o]) * scale[o] + (has_b ? beta[o] : 0.0);
        }
        Tensor w2 = detail::scale_rows(w, scale);
        Tensor b2 = asarray(b2v, {channels}, ci.size() > 2 ? ci[2].dtype() : wt, w.device());
        const std::string &ca = conv->attrs();
        Tensor x = map_input(ci[0]);
        Tensor y = ops::conv2d(x, w2, b2, detail::attr_ints(ca, "stride"), detail::attr_ints(ca, "padding"),
                               detail::attr_ints(ca, "dilation"), detail::attr_ints(ca, "groups").at(0));
        // The new Conv2d stands for the BatchNorm's output (it was created just now, only we hold it).
        std::const_pointer_cast<Operator>(y.trace().op)->set_origin(op->origin_or_self());
        new_of[{op.get(), 0}] = y;
        continue;
      }
    }
    auto outs = outputs_of(op->with_inputs(std::move(ins)));
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}

HIDET_INLINE FlowGraph convert_precision(const FlowGraph &graph, DataType dtype) {
  using detail::key_of;
  if (dtype != dtypes::f16 && dtype != dtypes::bf16)
    throw ValueError(str_cat("convert_precision: mixed precision computes in float16 or bfloat16, not ", dtype.name()));
  std::map<detail::TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  // One cast per tensor: symbolic ones by identity, constants by storage and offset.
  std::map<std::pair<const void *, std::size_t>, Tensor> low_of;
  auto low = [&](const Tensor &t) -> Tensor {
    if (t.dtype() != dtypes::f32) return t;
    if (auto tr = t.trace(); tr && tr.op->name() == "Cast" && tr.op->inputs()[0].dtype() == dtype)
      return tr.op->inputs()[0]; // a value cast up from `dtype` (a converted operator's): exact
    std::pair<const void *, std::size_t> key =
        t.is_symbolic() ? std::pair<const void *, std::size_t>{t.symbolic_info(), 0}
                        : std::pair<const void *, std::size_t>{t.storage().get(), t.offset()};
    auto it = low_of.find(key);
    if (it != low_of.end()) return it->second;
    Tensor c = ops::cast(t, dtype); // a constant is converted now (constant folding)
    low_of.emplace(key, c);
    return c;
  };
  for (const auto &op : graph.nodes()) {
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    bool f32_out = op->num_outputs() == 1 && op->output_metas()[0].dtype == dtypes::f32;
    const std::string &name = op->name();
    bool anchor = (name == "Matmul" && ins.size() == 2) || (name == "Conv2d" && ins.size() >= 2 && ins.size() <= 3) ||
                  ((name == "ScaledDotProductAttention" || name == "ScaledDotProductAttentionHeadsLast") && ins.size() >= 3);
    if (anchor && f32_out) {
      Tensor y;
      if (name == "Matmul") {
        y = ops::matmul(low(ins[0]), low(ins[1]));
      } else if (name == "Conv2d") {
        const std::string &ca = op->attrs();
        std::optional<Tensor> bias;
        if (ins.size() > 2) bias = low(ins[2]);
        y = ops::conv2d(low(ins[0]), low(ins[1]), bias, detail::attr_ints(ca, "stride"), detail::attr_ints(ca, "padding"),
                        detail::attr_ints(ca, "dilation"), detail::attr_ints(ca, "groups").at(0));
      } else {
        std::optional<Tensor> mask;
        if (ins.size() > 3) mask = ins[3]; // an f32 mask is added to the scores as it is
        y = detail::attention_like(op->attrs(), low(ins[0]), low(ins[1]), low(ins[2]), mask,
                                   detail::attr_text(op->attrs(), "heads_last") == "true");
      }
      HIDET_ASSERT(y.sym_shape() == op->output_metas()[0].shape, "convert_precision: ", name,
                   " rebuilt with another shape");
      y = ops::cast(y, dtypes::f32);
      // The cast back stands for the converted operator's output (only we hold it yet).
      std::const_pointer_cast<Operator>(y.trace().op)->set_origin(op->origin_or_self());
      new_of[{op.get(), 0}] = y;
      continue;
    }
    auto outs = outputs_of(op->with_inputs(std::move(ins)));
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}

HIDET_INLINE FlowGraph convert_layout_nhwc(const FlowGraph &graph) {
  using detail::key_of;
  const std::vector<int> to_nhwc{0, 2, 3, 1}, to_nchw{0, 3, 1, 2};
  std::map<detail::TensorKey, Tensor> new_of; // old tensor -> its NCHW value in the new graph
  std::map<detail::TensorKey, Tensor> twin;   // old tensor -> its NHWC value in the new graph
  std::map<detail::TensorKey, std::shared_ptr<const Operator>> maker; // old tensor -> its operator
  auto nchw = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    auto k = key_of(t);
    if (auto it = new_of.find(k); it != new_of.end()) return it->second;
    Tensor v = ops::permute(twin.at(k), to_nchw); // the NCHW value, needed now
    std::const_pointer_cast<Operator>(v.trace().op)->set_origin(maker.at(k)->origin_or_self());
    new_of[k] = v;
    return v;
  };
  auto nhwc = [&](const Tensor &t) -> Tensor { // graph inputs too: turned once
    if (t.is_symbolic())
      if (auto it = twin.find(key_of(t)); it != twin.end()) return it->second;
    Tensor v = ops::permute(nchw(t), to_nhwc);
    if (t.is_symbolic()) twin[key_of(t)] = v;
    return v;
  };
  auto has_twin = [&](const Tensor &t) { return t.is_symbolic() && twin.count(key_of(t)); };
  for (const auto &op : graph.nodes()) {
    const auto &in = op->inputs();
    for (int i = 0; i < op->num_outputs(); ++i) maker[{op.get(), i}] = op;
    const std::string &name = op->name();
    if (name == "Conv2d" && (in.size() == 2 || in.size() == 3) && op->num_outputs() == 1) {
      const Tensor &x = in[0], &w = in[1];
      bool constants = !w.is_symbolic() && (in.size() == 2 || !in[2].is_symbolic());
      bool half = x.dtype().is_half() && w.dtype() == x.dtype() && (in.size() == 2 || in[2].dtype() == x.dtype());
      const std::string &ca = op->attrs();
      const std::int64_t groups = detail::attr_ints(ca, "groups").at(0), C = w.shape()[1];
      // Other channel counts stay NCHW: padding them to 8 (ResNet's 3-channel stem, an
      // EfficientNet's squeeze convolutions) was measured slower on the H200 (a Pad kernel, and
      // the padded stem no faster than the NCHW one).
      // Depthwise convolutions (groups == C == O) have a direct kernel for either layout.
      const bool depthwise = x.ndim() == 4 && C == 1 && groups > 1 && x.sym_shape()[1] == groups && w.shape()[0] == groups;
      // A 1x1 convolution of a 1x1 image (a squeeze-and-excite's) is a product [N, C] @ [O, C]^T,
      // a row reduction per output (ops::gemv; N is small: the templates' tiles would stay
      // empty). NCHW [N, O, 1, 1] and NHWC [N, 1, 1, O] are both views of it, whatever C is.
      auto ones = [&](const char *key, std::int64_t v) {
        auto a = detail::attr_ints(ca, key);
        return std::all_of(a.begin(), a.end(), [v](std::int64_t e) { return e == v; });
      };
      if (constants && half && x.ndim() == 4 && groups == 1 && is_constant_shape(x.sym_shape()) && x.shape()[2] == 1 &&
          x.shape()[3] == 1 && w.shape()[2] == 1 && w.shape()[3] == 1 && ones("stride", 1) && ones("padding", 0)) {
        const std::int64_t N = x.shape()[0], O = w.shape()[0];
        // [O, C, 1, 1] viewed as [1, O, C, 1], turned to [1, C, 1, O] on the host: [C, O].
        Tensor xin = has_twin(x) ? nhwc(x) : nchw(x);
        Tensor y = ops::gemv(xin.reshape({N, C}), w.reshape({O, C}));
        if (in.size() == 3) y = y + in[2];
        new_of[{op.get(), 0}] = y.reshape({N, O, 1, 1});
        twin[{op.get(), 0}] = y.reshape({N, 1, 1, O});
        continue;
      }
      if (constants && half && x.ndim() == 4 && (C % 8 == 0 || depthwise)) {
        std::optional<Tensor> bias;
        if (in.size() == 3) bias = in[2];
        Tensor y = ops::conv2d_nhwc(nhwc(x), detail::weight_to_nhwc(w), bias, detail::attr_ints(ca, "stride"),
                                    detail::attr_ints(ca, "padding"), detail::attr_ints(ca, "dilation"), groups);
        twin[{op.get(), 0}] = y;
        continue;
      }
    }
    // Pooling of a channels-last value pools it channels-last.
    if ((name == "MaxPool2d" || name == "AvgPool2d") && in.size() == 1 && op->num_outputs() == 1 && has_twin(in[0])) {
      const std::string &pa = op->attrs();
      auto ints = [&](const char *key) { return detail::attr_ints(pa, key); };
      bool ceil_mode = detail::attr_text(pa, "ceil_mode") == "true";
      Tensor y = name == "MaxPool2d"
                     ? ops::max_pool2d_nhwc(nhwc(in[0]), ints("kernel"), ints("stride"), ints("padding"), ints("dilation"),
                                            ceil_mode)
                     : ops::avg_pool2d_nhwc(nhwc(in[0]), ints("kernel"), ints("stride"), ints("padding"), ceil_mode,
                                            detail::attr_text(pa, "count_include_pad") == "true", ints("dilation"));
      HIDET_ASSERT(y.dtype() == op->output_metas()[0].dtype, "convert_layout_nhwc: ", name, " rebuilt with another dtype");
      twin[{op.get(), 0}] = y;
      continue;
    }
    // A model's own turn to channels-last (ConvNeXt's x.permute(0, 2, 3, 1)) of a channels-last
    // value is that value.
    if (name == "Permute" && in.size() == 1 && op->num_outputs() == 1 && has_twin(in[0]) &&
        detail::attr_ints(op->attrs(), "perm") == std::vector<std::int64_t>{0, 2, 3, 1}) {
      new_of[{op.get(), 0}] = nhwc(in[0]);
      continue;
    }
    // Adaptive average pooling likewise (an EfficientNet's squeeze-and-excite: [N, 1, 1, C]).
    if (name == "AdaptiveAvgPool2d" && in.size() == 1 && op->num_outputs() == 1 && has_twin(in[0])) {
      Tensor y = ops::adaptive_avg_pool2d_nhwc(nhwc(in[0]), detail::attr_ints(op->attrs(), "output_size"));
      HIDET_ASSERT(y.dtype() == op->output_metas()[0].dtype, "convert_layout_nhwc: ", name, " rebuilt with another dtype");
      twin[{op.get(), 0}] = y;
      continue;
    }
    // Element-wise operators of channels-last values stay channels-last.
    using Unary = Tensor (*)(const Tensor &);
    static const std::map<std::string, Unary> unary_fns{
        {"Relu", &ops::relu}, {"Sigmoid", &ops::sigmoid}, {"Silu", &ops::silu}, {"Tanh", &ops::tanh},
        {"Exp", &ops::exp},   {"Neg", &ops::neg},         {"Abs", &ops::abs}};
    static const std::set<std::string> binary{"Add", "Sub", "Mul"};
    const bool unary_op = name == "Cast" || unary_fns.count(name);
    // One channels-last input is enough: another one is turned (one permute either way, and the
    // result stays channels-last for the convolutions after it).
    // An input of shape [n, c, 1, 1] (a squeeze-and-excite's scale) is a broadcast whose NHWC
    // form is a view; one of the full shape must be channels-last.
    bool same_shape = op->num_outputs() == 1 && !in.empty(), any_twin = false, full_twin = false;
    const SymShape &oshape = op->num_outputs() == 1 ? op->output_metas()[0].shape : SymShape{};
    for (const auto &t : in) {
      bool full = t.is_symbolic() && t.sym_shape() == oshape;
      SymShape ts = t.sym_shape();
      bool pixel = oshape.size() == 4 && ts.size() == 4 && ts[2] == 1 && ts[3] == 1 && ts[0] == oshape[0] &&
                   ts[1] == oshape[1];
      same_shape = same_shape && (full || pixel);
      any_twin = any_twin || has_twin(t);
      full_twin = full_twin || (full && has_twin(t));
    }
    same_shape = same_shape && full_twin;
    bool plain = op->attrs().empty() || name == "Cast"; // a cast's attribute is its dtype
    if (same_shape && plain && ((unary_op && in.size() == 1) || (binary.count(name) && in.size() == 2))) {
      Tensor y;
      if (name == "Cast") y = ops::cast(nhwc(in[0]), op->output_metas()[0].dtype);
      else if (auto f = unary_fns.find(name); f != unary_fns.end()) y = f->second(nhwc(in[0]));
      else if (name == "Add") y = nhwc(in[0]) + nhwc(in[1]);
      else if (name == "Sub") y = nhwc(in[0]) - nhwc(in[1]);
      else y = nhwc(in[0]) * nhwc(in[1]);
      if (y.dtype() == op->output_metas()[0].dtype) {
        twin[{op.get(), 0}] = y;
        continue;
      }
    }
    // Any other element-wise operator of a channels-last value (a clamp, a scaled add, a
    // hardswish's pieces): computed as it is on NCHW views of its inputs and turned back, which
    // fusion then folds into one kernel (permute, operator, permute: no permute is stored), so the
    // value stays channels-last for the convolutions after it.
    auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(op);
    bool elementwise = task_op && task_op->task().injective() && op->num_outputs() == 1 && any_twin &&
                       op->output_metas()[0].shape.size() == 4;
    for (const auto &t : in) elementwise = elementwise && (!t.is_symbolic() || t.sym_shape() == op->output_metas()[0].shape);
    std::vector<Tensor> ins;
    for (const auto &t : in) ins.push_back(nchw(t));
    auto outs = outputs_of(op->with_inputs(std::move(ins)));
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
    if (elementwise) twin[{op.get(), 0}] = ops::permute(outs[0], to_nhwc);
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(nchw(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}

namespace detail {
/// One operator of an epilogue chain after a product of symbolic extents: a Reshape to `shape`,
/// or a task-defined operator reading the chain at input `j`.
struct EpilogueStep {
  bool reshape = false;
  SymShape shape;
  ops::Task task;
  std::size_t j = 0;
  std::string key, member;
};

/// The epilogue of `steps` after a product of `shape` and `dtype` at the symbol values `values`
/// (each task specialized there); `fitted` gets the number of steps that fit an epilogue.
HIDET_INLINE ops::Epilogue epilogue_at(const SymShape &shape, DataType dtype, const std::vector<EpilogueStep> &steps,
                                       const SymbolValues &values, std::size_t &fitted) {
  ops::Epilogue e = ops::Epilogue::identity(evaluate_shape(shape, values), dtype);
  for (fitted = 0; fitted < steps.size(); ++fitted) {
    const EpilogueStep &s = steps[fitted];
    std::optional<ops::Epilogue> next;
    try {
      if (s.reshape) {
        next = e.reshape(evaluate_shape(s.shape, values));
      } else {
        ops::Task t = ops::specialize(s.task, values);
        next = e.then(t, s.j, str_cat(s.key, "|", t.str()), s.member);
      }
    } catch (const ValueError &) {
      next.reset();
    }
    if (!next) break;
    e = std::move(*next);
  }
  return e;
}

/// The epilogue of `steps` after a product of `shape` and `dtype` over the symbols themselves (for
/// a template kernel built for symbolic rows), or nullopt when some step does not fit one.
HIDET_INLINE std::optional<ops::Epilogue> symbolic_epilogue(const SymShape &shape, DataType dtype,
                                                            const std::vector<EpilogueStep> &steps) {
  try {
    ops::Epilogue e = ops::Epilogue::identity(shape, dtype);
    for (const EpilogueStep &s : steps) {
      std::optional<ops::Epilogue> next =
          s.reshape ? std::optional<ops::Epilogue>(e.reshape(s.shape)) : e.then(s.task, s.j, str_cat(s.key, "|", s.task.str()), s.member);
      if (!next) return std::nullopt;
      e = std::move(*next);
    }
    return e;
  } catch (const ValueError &) {
    return std::nullopt;
  }
}

/// Runs a product's (or convolution's) epilogue chain `steps` at `values` where the symbols have
/// constant extents: fused into `anchor` (run(epilogue, extras)) where the chain fits an epilogue
/// there, else the anchor alone and then each step.
template <class Anchor>
std::vector<Tensor> run_chain_per_shape(Anchor &&anchor_run, const std::vector<EpilogueStep> &steps, const TensorMeta &anchor,
                                        const std::vector<Tensor> &extras, const SymbolValues &values) {
  std::size_t fitted = 0;
  ops::Epilogue e = epilogue_at(anchor.shape, anchor.dtype, steps, values, fitted);
  if (fitted == steps.size()) return {anchor_run(std::make_shared<const ops::Epilogue>(std::move(e)), extras)};
  Tensor y = anchor_run(nullptr, {});
  std::size_t next = 0;
  for (const auto &s : steps) {
    if (s.reshape) {
      y = y.reshape(evaluate_shape(s.shape, values));
      continue;
    }
    std::vector<Tensor> step_in;
    for (std::size_t i = 0; i < s.task.inputs.size(); ++i) step_in.push_back(i == s.j ? y : extras.at(next++));
    ops::Task t = ops::specialize(s.task, values);
    y = ops::run_task(s.key, [&] { return t; }, step_in)[0];
  }
  return {y};
}

/// A FusedMatmul node over symbolic extents: a product and its epilogue chain `steps`, whose
/// epilogue is built at the symbol values of each run (the graph's binding), so that the product's
/// template stores through it. Where the chain does not fit an epilogue at some values, the
/// product and then each step run on their own.
HIDET_INLINE Tensor symbolic_fused_matmul(const Tensor &a, const Tensor &b, const std::vector<Tensor> &extras,
                                          std::vector<EpilogueStep> steps, const TensorMeta &anchor,
                                          const TensorMeta &out, const std::string &attrs) {
  std::vector<Tensor> ins{a, b};
  ins.insert(ins.end(), extras.begin(), extras.end());
  // The product's rows (a's leading extents, b a matrix) and the chain over the symbols: one
  // template kernel for every value of them (ops::matmul_rows), where a template takes them.
  Dim rows = ops::matmul_row_count(a.sym_shape());
  std::shared_ptr<const ops::Epilogue> generic;
  if (a.ndim() >= 2 && b.ndim() == 2 && !rows.is_constant())
    if (auto e = symbolic_epilogue(anchor.shape, anchor.dtype, steps)) generic = std::make_shared<const ops::Epilogue>(std::move(*e));
  auto run = [steps = std::move(steps), anchor, rows, generic](const std::vector<Tensor> &in) -> std::vector<Tensor> {
    const SymbolValues *bound = SymbolBinding::current();
    SymbolValues values = bound ? *bound : SymbolValues{};
    std::vector<Tensor> extras(in.begin() + 2, in.end());
    if (generic && bound)
      if (auto y = ops::matmul_rows(in[0], in[1], generic, extras, rows, values)) return {*y};
    return run_chain_per_shape(
        [&](const std::shared_ptr<const ops::Epilogue> &e, const std::vector<Tensor> &ex) {
          return e ? ops::matmul(in[0], in[1], e, ex) : ops::matmul(in[0], in[1]);
        },
        steps, anchor, extras, values);
  };
  return mark_scratch_build(trace_operator("FusedMatmul", std::move(ins), attrs, {out}, std::move(run))[0]);
}

/// A convolution over a symbolic batch (a shape-generic graph) and its epilogue chain `steps`
/// (possibly none): at each run the symbols other than the batch's (channels, image sizes) take
/// their values, the chain becomes an epilogue over the batch's symbols (kept per those values),
/// and the template built once for every batch runs it (ops::conv2d_symbolic_batch). Where that
/// does not serve, the convolution runs per shape with the chain fused where it fits.
HIDET_INLINE Tensor symbolic_fused_conv(const Tensor &x, const Tensor &w, const std::optional<Tensor> &bias,
                                        const std::vector<Tensor> &extras, std::vector<EpilogueStep> steps,
                                        const TensorMeta &anchor, const TensorMeta &out, const std::string &conv_attrs,
                                        bool nhwc) {
  std::vector<Tensor> ins{x, w};
  if (bias) ins.push_back(*bias);
  ins.insert(ins.end(), extras.begin(), extras.end());
  const Dim batch = x.sym_shape().at(0);
  const auto stride = attr_ints(conv_attrs, "stride"), padding = attr_ints(conv_attrs, "padding"),
             dilation = attr_ints(conv_attrs, "dilation");
  const std::int64_t groups = attr_ints(conv_attrs, "groups").at(0);
  std::string attrs = conv_attrs;
  if (!steps.empty()) {
    std::string members;
    for (const auto &st : steps)
      if (!st.reshape) members += (members.empty() ? "" : ", ") + st.member;
    attrs += str_cat(", epilogue=[", members, "]");
  }
  // The chain as an epilogue over the batch's symbols, per value of the other symbols (`fits`
  // false where it does not make one; `epi` null without steps).
  struct Entry {
    bool fits = false;
    std::shared_ptr<const ops::Epilogue> epi;
  };
  struct Epilogues {
    std::mutex mu;
    std::map<std::string, Entry> at;
  };
  auto epilogues = std::make_shared<Epilogues>();
  const bool has_bias = bool(bias);
  const std::string name = steps.empty() ? (nhwc ? "Conv2dNhwc" : "Conv2d") : (nhwc ? "FusedConv2dNhwc" : "FusedConv2d");
  auto generic_epilogue = [steps, anchor](const SymbolValues &rest) {
    Entry entry;
    if (steps.empty()) {
      entry.fits = true;
      return entry;
    }
    SymShape shape;
    for (const auto &d : anchor.shape) shape.push_back(d.substitute(rest));
    std::vector<EpilogueStep> partial = steps;
    for (auto &st : partial) {
      if (st.reshape)
        for (auto &d : st.shape) d = d.substitute(rest);
      else
        st.task = ops::substitute(st.task, rest);
    }
    if (auto e = symbolic_epilogue(shape, anchor.dtype, partial)) {
      entry.fits = true;
      entry.epi = std::make_shared<const ops::Epilogue>(std::move(*e));
    }
    return entry;
  };
  auto run = [=](const std::vector<Tensor> &in) -> std::vector<Tensor> {
    const SymbolValues *bound = SymbolBinding::current();
    SymbolValues values = bound ? *bound : SymbolValues{};
    std::optional<Tensor> b;
    if (has_bias) b = in[2];
    std::vector<Tensor> ex(in.begin() + (has_bias ? 3 : 2), in.end());
    if (bound && !batch.is_constant()) {
      SymbolValues rest = values;
      for (const auto &s : batch.symbols()) rest.erase(s);
      std::string key;
      for (const auto &[k, v] : rest) key += str_cat(k, "=", v, ";");
      Entry entry;
      bool found = false;
      {
        std::lock_guard<std::mutex> lock(epilogues->mu);
        if (auto it = epilogues->at.find(key); it != epilogues->at.end()) entry = it->second, found = true;
      }
      if (!found) {
        try {
          entry = generic_epilogue(rest);
        } catch (const ValueError &) {
          entry = Entry{};
        }
        std::lock_guard<std::mutex> lock(epilogues->mu);
        epilogues->at.emplace(key, entry);
      }
      if (entry.fits)
        if (auto y = ops::conv2d_symbolic_batch(in[0], in[1], b, stride, padding, dilation, groups, nhwc, entry.epi,
                                                entry.epi ? ex : std::vector<Tensor>{}, batch, values))
          return {*y};
    }
    return run_chain_per_shape(
        [&](const std::shared_ptr<const ops::Epilogue> &e, const std::vector<Tensor> &extras_in) {
          return nhwc ? ops::conv2d_nhwc(in[0], in[1], b, stride, padding, dilation, groups, e, extras_in)
                      : ops::conv2d(in[0], in[1], b, stride, padding, dilation, groups, e, extras_in);
        },
        steps, anchor, ex, values);
  };
  return mark_scratch_build(trace_operator(name, std::move(ins), attrs, {out}, std::move(run))[0]);
}
} // namespace detail

HIDET_INLINE FlowGraph fuse_epilogues(const FlowGraph &input) {
  using detail::TensorKey;
  using detail::key_of;
  // Activations written out (GPT-2's gelu: x read three times) become one operator of one input
  // first, so that they can follow their anchor.
  const FlowGraph graph = detail::fuse_task_operators(input, false);
  std::map<TensorKey, int> uses;
  std::map<TensorKey, std::shared_ptr<const Operator>> consumer; // the reader of a tensor read once
  for (const auto &op : graph.nodes())
    for (const auto &t : op->inputs())
      if (t.is_symbolic()) ++uses[key_of(t)], consumer[key_of(t)] = op;
  for (const auto &t : graph.outputs()) uses[key_of(t)] += 2; // a graph output stays materialized

  // An anchor's chain: the epilogue, its extra inputs (old graph tensors) and its operators.
  struct Chain {
    std::shared_ptr<ops::Epilogue> epilogue;
    std::vector<Tensor> extras;
    std::vector<const Operator *> members;
    std::vector<detail::EpilogueStep> steps; ///< a product of symbolic extents: its chain, built per run
    std::string attrs;                       ///< ... and the fused node's attributes
    bool symbolic_conv = false;              ///< a convolution of symbolic extents (steps possibly none)
  };
  std::map<const Operator *, Chain> chains;           // by anchor
  std::map<const Operator *, const Operator *> last_of; // last chain member -> its anchor
  std::set<const Operator *> absorbed;                // anchors and chain members but the last
  std::set<const Operator *> claimed;                 // members of some chain (one chain each: a
                                                      // residual add may follow two anchors)
  for (const auto &op : graph.nodes()) {
    bool matmul = op->name() == "Matmul" && op->inputs().size() == 2;
    bool conv = (op->name() == "Conv2d" || op->name() == "Conv2dNhwc") &&
                (op->inputs().size() == 2 || op->inputs().size() == 3);
    if (!(matmul || conv) || op->num_outputs() != 1) continue;
    const TensorMeta &meta = op->output_metas()[0];
    if (!is_constant_shape(meta.shape)) {
      // A product or convolution of symbolic extents (a shape-generic graph): its chain as steps,
      // checked by building the epilogue at stand-in values of the symbols. A convolution is
      // replaced even without a chain (symbolic_fused_conv runs its template over the batch).
      Chain chain;
      chain.symbolic_conv = conv;
      SymbolValues probe;
      std::int64_t prime = 17;
      auto add_symbols = [&](const SymShape &s) {
        for (const auto &d : s)
          for (const auto &name : d.symbols())
            if (!probe.count(name)) probe[name] = prime, prime = prime == 17 ? 19 : prime + 4;
      };
      add_symbols(meta.shape);
      std::vector<std::vector<Tensor>> step_extras;
      TensorKey cur{op.get(), 0};
      while (uses[cur] == 1) {
        const auto &c = consumer.at(cur);
        if (c->num_outputs() != 1 || claimed.count(c.get())) break;
        detail::EpilogueStep step;
        std::vector<Tensor> extras;
        if (c->name() == "Reshape" && c->inputs().size() == 1) {
          step.reshape = true;
          step.shape = c->output_metas()[0].shape;
        } else if (auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(c)) {
          const ops::Task &task = task_op->task();
          if (task.inputs.size() != c->inputs().size()) break;
          while (step.j < c->inputs().size() && key_of(c->inputs()[step.j]) != cur) ++step.j;
          step.task = task, step.key = task_op->key(), step.member = c->name();
          if (task_op->members().size() > 1) {
            step.member.clear();
            for (const auto &m : task_op->members()) step.member += (step.member.empty() ? "" : ", ") + m;
          }
          for (std::size_t i = 0; i < c->inputs().size(); ++i)
            if (i != step.j) extras.push_back(c->inputs()[i]);
        } else {
          break;
        }
        for (const auto &t : c->inputs()) add_symbols(t.sym_shape());
        add_symbols(c->output_metas()[0].shape);
        chain.steps.push_back(std::move(step));
        step_extras.push_back(std::move(extras));
        chain.members.push_back(c.get());
        cur = {c.get(), 0};
      }
      std::size_t fitted = 0;
      ops::Epilogue e = detail::epilogue_at(meta.shape, meta.dtype, chain.steps, probe, fitted);
      chain.steps.resize(fitted), chain.members.resize(fitted);
      if (chain.members.empty() && !conv) continue;
      for (std::size_t k = 0; k < fitted; ++k)
        chain.extras.insert(chain.extras.end(), step_extras[k].begin(), step_extras[k].end());
      chain.attrs = conv ? op->attrs() : ops::fused_attrs("Matmul", e);
      if (chain.members.empty()) { // a convolution alone: replaced in place
        last_of[op.get()] = op.get();
      } else {
        absorbed.insert(op.get());
        for (std::size_t i = 0; i + 1 < chain.members.size(); ++i) absorbed.insert(chain.members[i]);
        claimed.insert(chain.members.begin(), chain.members.end());
        last_of[chain.members.back()] = op.get();
      }
      chains.emplace(op.get(), std::move(chain));
      continue;
    }
    Chain chain;
    ops::Epilogue e = ops::Epilogue::identity(constant_shape(meta.shape), meta.dtype);
    TensorKey cur{op.get(), 0};
    while (uses[cur] == 1) {
      const auto &c = consumer.at(cur);
      if (c->num_outputs() != 1 || !is_constant_shape(c->output_metas()[0].shape) || claimed.count(c.get())) break;
      std::optional<ops::Epilogue> next;
      std::vector<Tensor> extras;
      if (c->name() == "Reshape" && c->inputs().size() == 1) { // a view, or ops::reshape's copy
        next = e.reshape(constant_shape(c->output_metas()[0].shape));
      } else if (auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(c)) {
        std::size_t j = 0;
        while (j < c->inputs().size() && key_of(c->inputs()[j]) != cur) ++j;
        const ops::Task &task = task_op->task();
        if (task.inputs.size() != c->inputs().size()) break;
        std::string member = c->name();
        if (task_op->members().size() > 1) { // a fused group: its members by name
          member.clear();
          for (const auto &m : task_op->members()) member += (member.empty() ? "" : ", ") + m;
        }
        next = e.then(task, j, str_cat(task_op->key(), "|", task.str()), member);
        for (std::size_t i = 0; i < c->inputs().size(); ++i)
          if (i != j) extras.push_back(c->inputs()[i]);
      }
      if (!next) break;
      e = std::move(*next);
      chain.extras.insert(chain.extras.end(), extras.begin(), extras.end());
      chain.members.push_back(c.get());
      cur = {c.get(), 0};
    }
    if (chain.members.empty()) continue;
    chain.epilogue = std::make_shared<ops::Epilogue>(std::move(e));
    absorbed.insert(op.get());
    for (std::size_t i = 0; i + 1 < chain.members.size(); ++i) absorbed.insert(chain.members[i]);
    claimed.insert(chain.members.begin(), chain.members.end());
    last_of[chain.members.back()] = op.get();
    chains.emplace(op.get(), std::move(chain));
  }

  std::map<TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  std::map<const Operator *, std::shared_ptr<const Operator>> anchor_op;
  for (const auto &op : graph.nodes()) {
    if (absorbed.count(op.get())) continue;
    if (auto it = last_of.find(op.get()); it != last_of.end()) {
      const Chain &chain = chains.at(it->second);
      const auto &anchor = *std::find_if(graph.nodes().begin(), graph.nodes().end(),
                                         [&](const auto &n) { return n.get() == it->second; });
      std::vector<Tensor> extras;
      for (const auto &t : chain.extras) extras.push_back(map_input(t));
      const auto &ai = anchor->inputs();
      Tensor y;
      if (chain.symbolic_conv) {
        std::optional<Tensor> bias;
        if (ai.size() > 2) bias = map_input(ai[2]);
        y = detail::symbolic_fused_conv(map_input(ai[0]), map_input(ai[1]), bias, extras, chain.steps,
                                        anchor->output_metas()[0], op->output_metas()[0], chain.attrs,
                                        anchor->name() == "Conv2dNhwc");
      } else if (!chain.steps.empty()) {
        y = detail::symbolic_fused_matmul(map_input(ai[0]), map_input(ai[1]), extras, chain.steps,
                                          anchor->output_metas()[0], op->output_metas()[0], chain.attrs);
      } else if (anchor->name() == "Matmul") {
        y = ops::matmul(map_input(ai[0]), map_input(ai[1]), chain.epilogue, extras);
      } else {
        const std::string &ca = anchor->attrs();
        std::optional<Tensor> bias;
        if (ai.size() > 2) bias = map_input(ai[2]);
        bool nhwc = anchor->name() == "Conv2dNhwc";
        y = nhwc ? ops::conv2d_nhwc(map_input(ai[0]), map_input(ai[1]), bias, detail::attr_ints(ca, "stride"),
                                    detail::attr_ints(ca, "padding"), detail::attr_ints(ca, "dilation"),
                                    detail::attr_ints(ca, "groups").at(0), chain.epilogue, extras)
                 : ops::conv2d(map_input(ai[0]), map_input(ai[1]), bias, detail::attr_ints(ca, "stride"),
                               detail::attr_ints(ca, "padding"), detail::attr_ints(ca, "dilation"),
                               detail::attr_ints(ca, "groups").at(0), chain.epilogue, extras);
      }
      std::const_pointer_cast<Operator>(y.trace().op)->set_origin(op->origin_or_self());
      new_of[{op.get(), 0}] = y;
      continue;
    }
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    auto outs = outputs_of(op->with_inputs(std::move(ins)));
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}

namespace detail {
inline void save_graph(const PassContext &ctx, const std::string &stem, const FlowGraph &g) {
  if (ctx.save_graph_dir.empty()) return;
  std::filesystem::path dir(ctx.save_graph_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const auto &[ext, text] : {std::pair<std::string, std::string>{".txt", g.str() + "\n"}, {".dot", g.dot()}}) {
    auto path = dir / (stem + ext);
    std::ofstream f(path);
    f << text;
    if (!f) throw ValueError(str_cat("optimize: cannot write the graph to ", path.string()));
  }
}
} // namespace detail

namespace detail {
/// A node run under kernel options (bind_kernel_options): the same operator, its run wrapped.
class KernelOptionsNode : public Operator {
public:
  KernelOptionsNode(std::shared_ptr<const Operator> inner, option::KernelOptions opts)
      : Operator(inner->name(), inner->inputs(), attrs_of(*inner, opts), inner->output_metas(),
                 [inner, opts](const std::vector<Tensor> &xs) {
                   option::KernelOptionsScope scope(opts);
                   return inner->run(xs);
                 }),
        inner_(std::move(inner)), opts_(opts) {
    set_scratch_build(inner_->scratch_build());
    set_origin(inner_->origin_or_self());
  }
  std::shared_ptr<const Operator> with_inputs(std::vector<Tensor> inputs) const override {
    return std::make_shared<KernelOptionsNode>(inner_->with_inputs(std::move(inputs)), opts_);
  }

private:
  static std::string attrs_of(const Operator &op, const option::KernelOptions &o) {
    return op.attrs().empty() ? o.str() : str_cat(op.attrs(), ", ", o.str());
  }
  std::shared_ptr<const Operator> inner_;
  option::KernelOptions opts_;
};
} // namespace detail

HIDET_INLINE FlowGraph bind_kernel_options(const FlowGraph &graph, const option::KernelOptions &options) {
  if (options == option::KernelOptions{}) return graph;
  std::map<detail::TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(detail::key_of(t));
  };
  for (const auto &op : graph.nodes()) {
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    std::shared_ptr<const Operator> next = op->with_inputs(std::move(ins));
    if ((op->name() == "Matmul" || op->name() == "FusedMatmul") && !dynamic_cast<const detail::KernelOptionsNode *>(op.get()))
      next = std::make_shared<detail::KernelOptionsNode>(next, options);
    auto outs = outputs_of(next);
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}

namespace detail {
using Pass = std::function<FlowGraph(const FlowGraph &)>;
using PassList = std::vector<std::pair<const char *, Pass>>;

/// Appends the passes every pipeline ends with: mixed precision (when `precision`), [layout,] the
/// fusions and the kernel options; checks the reduce precision.
HIDET_INLINE void add_final_passes(PassList &passes, const PassContext &ctx, bool precision, bool layout) {
  if (precision && ctx.mixed_precision) {
    DataType dt = *ctx.mixed_precision;
    passes.push_back({"convert_precision", [dt](const FlowGraph &g) { return convert_precision(g, dt); }});
  }
  if (layout && ctx.layout_nhwc) passes.push_back({"convert_layout_nhwc", &convert_layout_nhwc});
  passes.push_back({"fuse_epilogues", &fuse_epilogues});
  passes.push_back({"fuse_operators", &fuse_operators});
  if (ctx.reduce_precision && *ctx.reduce_precision != dtypes::f16 && *ctx.reduce_precision != dtypes::f32)
    throw ValueError(str_cat("optimize: reduce precision ", *ctx.reduce_precision,
                             " is not supported; use f16 (f16 accumulators in f16 matmuls) or f32 (the default)"));
  option::KernelOptions kopts{ctx.tensor_cores, ctx.parallel_k,
                              ctx.reduce_precision && *ctx.reduce_precision == dtypes::f16};
  if (!(kopts == option::KernelOptions{}))
    passes.push_back({"bind_kernel_options", [kopts](const FlowGraph &g) { return bind_kernel_options(g, kopts); }});
}

/// Runs `passes` in order with ctx's instruments (saved graphs, log lines, verification).
HIDET_INLINE FlowGraph run_passes(const FlowGraph &graph, const PassContext &ctx, const PassList &passes) {
  detail::save_graph(ctx, "0_input", graph);
  FlowGraph g = graph;
  int k = 0;
  for (const auto &[name, pass] : passes) {
    auto t0 = std::chrono::steady_clock::now();
    FlowGraph next = pass(g);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ctx.verbose)
      std::fprintf(stderr, "hidet: optimize: %s: %zu -> %zu operators in %.1f ms\n", name, g.nodes().size(),
                   next.nodes().size(), ms);
    g = std::move(next);
    detail::save_graph(ctx, str_cat(++k, "_", name), g);
    if (ctx.verify) {
      try {
        verify(g);
      } catch (const ValueError &e) {
        throw ValueError(str_cat("optimize: the pass ", name, " left an invalid graph: ", e.what()));
      }
    }
  }
  return g;
}
} // namespace detail

HIDET_INLINE FlowGraph optimize(const FlowGraph &graph, const PassContext &ctx) {
  if (graph.has_symbolic_extents()) { // optimized and compiled per shape when it runs
    DispatchOptions options;
    options.pass_context = ctx;
    options.shape_generic = ctx.shape_generic;
    return dispatch_per_shape(graph, options);
  }
  detail::PassList passes = {
      {"simplify_reshapes", &simplify_reshapes},
      {"fuse_attention", &fuse_attention},
      {"eliminate_common_subexpressions", &eliminate_common_subexpressions},
      {"fold_conv_batch_norm", &fold_conv_batch_norm},
      {"merge_sibling_matmuls", &merge_sibling_matmuls},
      {"lift_sibling_slices", &lift_sibling_slices},
      {"slices_as_views", &slices_as_views}};
  detail::add_final_passes(passes, ctx, true, true);
  return detail::run_passes(graph, ctx, passes);
}

HIDET_INLINE FlowGraph optimize_shape_generic(const FlowGraph &graph, const PassContext &ctx) {
  detail::PassList passes = {{"simplify_reshapes", &simplify_reshapes},
                             {"fuse_attention", &fuse_attention},
                             {"eliminate_common_subexpressions", &eliminate_common_subexpressions},
                             {"fold_conv_batch_norm", &fold_conv_batch_norm}};
  detail::add_final_passes(passes, ctx, true, true);
  return detail::run_passes(graph, ctx, passes);
}

} // namespace hidet::graph
