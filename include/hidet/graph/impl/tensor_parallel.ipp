// Definitions for hidet/graph/tensor_parallel.hpp. Two steps: a plan (which nodes run sharded,
// along which axis, in which group of column-parallel products), found again without the groups
// that must stay whole until every group is kept; then the graph rebuilt by the plan, each sharded
// node traced anew on its sharded inputs.
#pragma once

#include "hidet/graph/tensor_parallel.hpp"

#include <map>
#include <numeric>
#include <set>

#include "hidet/graph/detail/node_attrs.hpp"
#include "hidet/graph/detail/rewriter.hpp"
#include "hidet/ops/collective.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/norm.hpp"
#include "hidet/ops/op_kind.hpp"
#include "hidet/ops/transform.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

HIDET_INLINE std::string TensorParallelReport::str() const {
  return str_cat("column-parallel ", column_parallel, ", row-parallel ", row_parallel,
                 " (one all-reduce each), other sharded nodes ", sharded_nodes, ", all-gathers ",
                 all_gathers, ", groups left whole ", groups_left_whole);
}

namespace detail {

/// A value sharded along `axis`, whose whole extent there is `full`; `group`: the column-parallel
/// products it comes from.
struct Sharding {
  int axis = 0;
  std::int64_t full = 0;
  int group = 0;
};

/// What becomes of one node.
struct ShardPlan {
  enum class Action { keep, column, row, shard, gather } action = Action::keep;
  /// shard: per input, how it enters: as it is, its sharded value, or cut along `cut_axis[i]`.
  enum class In { same, sharded, cut };
  std::vector<In> in;
  std::vector<int> cut_axis;
  Sharding out;          ///< column, shard: the output's sharding
  int reshape_axis = -1; ///< shard of a Reshape: the output axis that is sharded
};

/// Union-find over groups.
struct Groups {
  std::vector<int> parent;
  int make() {
    parent.push_back(int(parent.size()));
    return parent.back();
  }
  int find(int g) {
    return parent[std::size_t(g)] == g ? g : parent[std::size_t(g)] = find(parent[std::size_t(g)]);
  }
  void join(int a, int b) { parent[std::size_t(find(a))] = find(b); }
};

class TensorParallelPlanner {
public:
  TensorParallelPlanner(const FlowGraph &g, int world) : g_(g), world_(world) {}

  /// Plans with the column-parallel candidates `allowed` (node indices); returns the candidates of
  /// the groups that must stay whole (empty when the plan is final).
  std::set<std::size_t> plan(const std::set<std::size_t> &allowed) {
    const auto &nodes = g_.nodes();
    plans_.assign(nodes.size(), {});
    state_.clear();
    groups_ = Groups();
    std::vector<std::size_t> seed_of_group;
    std::map<int, bool> has_row, inner_gather;
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const Operator &op = *nodes[k];
      ShardPlan &p = plans_[k];
      std::vector<const Sharding *> ins;
      bool any = false;
      for (const auto &t : op.inputs()) {
        ins.push_back(sharding_of(t));
        any = any || ins.back();
      }
      if (!any) {
        if (allowed.count(k) && column_candidate(op)) {
          p.action = ShardPlan::Action::column;
          p.out = {op.output_metas()[0].shape.size() > 0
                       ? int(op.output_metas()[0].shape.size()) - 1
                       : 0,
                   op.inputs()[1].shape()[1], groups_.make()};
          seed_of_group.push_back(k);
          state_[{&op, 0}] = p.out;
        }
        continue;
      }
      int group = -1;
      for (const auto *s : ins)
        if (s) group = group < 0 ? s->group : (groups_.join(group, s->group), groups_.find(group));
      plan_sharded(op, ins, p);
      if (p.action == ShardPlan::Action::row) has_row[groups_.find(group)] = true;
      if (p.action == ShardPlan::Action::gather) inner_gather[groups_.find(group)] = true;
      if (p.action == ShardPlan::Action::shard) {
        p.out.group = group;
        state_[{&op, 0}] = p.out;
      }
    }
    // Which groups are kept (see graph/tensor_parallel.hpp).
    std::set<std::size_t> drop;
    whole_groups_ = 0;
    std::set<int> dropped_groups;
    for (std::size_t s = 0; s < seed_of_group.size(); ++s) {
      int g = groups_.find(int(s));
      bool keep = has_row[g] || !inner_gather[g];
      if (!keep) {
        drop.insert(seed_of_group[s]);
        dropped_groups.insert(g);
      }
    }
    whole_groups_ = int(dropped_groups.size());
    return drop;
  }

  const std::vector<ShardPlan> &plans() const { return plans_; }
  /// The sharding of an old graph tensor, or null when it is whole.
  const Sharding *sharding_of(const Tensor &t) const {
    if (!t.trace()) return nullptr;
    auto it = state_.find(key_of(t));
    return it == state_.end() ? nullptr : &it->second;
  }

private:
  bool column_candidate(const Operator &op) const {
    if (ops::kind_of(op) != ops::OpKind::Matmul || op.inputs().size() != 2) return false;
    const Tensor &x = op.inputs()[0], &w = op.inputs()[1];
    if (!x.is_symbolic() || w.is_symbolic() || w.ndim() != 2 || x.ndim() < 1) return false;
    return w.shape()[1] % world_ == 0 && w.shape()[1] >= world_;
  }

  /// The extent of `t` along `axis` when constant, else -1.
  static std::int64_t extent(const Tensor &t, int axis) {
    const Dim d = t.sym_shape()[std::size_t(axis)];
    return d.is_constant() ? d.value() : -1;
  }

  void plan_sharded(const Operator &op, const std::vector<const Sharding *> &ins, ShardPlan &p) {
    using K = ops::OpKind;
    const K kind = ops::kind_of(op);
    const auto &in = op.inputs();
    p.action = ShardPlan::Action::gather; // unless a rule below applies
    if (op.num_outputs() != 1) return;
    const int out_rank = int(op.output_metas()[0].shape.size());
    p.in.assign(in.size(), ShardPlan::In::same);
    p.cut_axis.assign(in.size(), -1);
    auto shard_as = [&](Sharding s) {
      p.action = ShardPlan::Action::shard;
      p.out = s;
      for (std::size_t i = 0; i < in.size(); ++i)
        if (ins[i]) p.in[i] = ShardPlan::In::sharded;
    };
    switch (kind) {
    case K::Matmul: {
      if (in.size() != 2) return;
      const Sharding *sx = ins[0], *sw = ins[1];
      const Tensor &x = in[0], &w = in[1];
      if (sx && !sw && !w.is_symbolic() && w.ndim() == 2 && sx->axis == x.ndim() - 1 &&
          sx->full == w.shape()[0] && w.shape()[0] % world_ == 0) {
        p.action = ShardPlan::Action::row;
        p.in[0] = ShardPlan::In::sharded;
        return;
      }
      // A batched product of two values sharded along the same batch axis (attention written out).
      if (sx && sw && x.ndim() == w.ndim() && sx->axis == sw->axis && sx->axis < x.ndim() - 2 &&
          sx->full == sw->full)
        shard_as({sx->axis + (out_rank - x.ndim()), sx->full});
      return;
    }
    case K::Add:
    case K::Sub:
    case K::Mul:
    case K::Div: {
      std::optional<Sharding> out;
      for (std::size_t i = 0; i < in.size(); ++i)
        if (ins[i]) {
          Sharding s{ins[i]->axis + (out_rank - in[i].ndim()), ins[i]->full};
          if (out && (out->axis != s.axis || out->full != s.full)) return;
          out = s;
        }
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (ins[i]) continue;
        int axis = out->axis - (out_rank - in[i].ndim());
        if (axis < 0) continue;
        std::int64_t e = extent(in[i], axis);
        if (e == 1) continue;
        if (e != out->full) return;
        p.in[i] = ShardPlan::In::cut;
        p.cut_axis[i] = axis;
      }
      std::vector<ShardPlan::In> modes = p.in;
      std::vector<int> cuts = p.cut_axis;
      shard_as(*out);
      for (std::size_t i = 0; i < in.size(); ++i)
        if (modes[i] == ShardPlan::In::cut) p.in[i] = modes[i], p.cut_axis[i] = cuts[i];
      return;
    }
    case K::Neg:
    case K::Abs:
    case K::Exp:
    case K::Tanh:
    case K::Relu:
    case K::Sigmoid:
    case K::Silu:
    case K::Gelu:
    case K::Cast:
      if (in.size() == 1) shard_as(*ins[0]);
      return;
    case K::Permute: {
      std::vector<std::int64_t> perm = attr_ints(op.attrs(), "perm");
      for (std::size_t b = 0; b < perm.size(); ++b)
        if (perm[b] == ins[0]->axis) shard_as({int(b), ins[0]->full});
      return;
    }
    case K::Reshape: {
      const SymShape &from = in[0].sym_shape(), &to = op.output_metas()[0].shape;
      Dim prefix_in(1);
      for (int d = 0; d < ins[0]->axis; ++d)
        prefix_in = prefix_in * from[std::size_t(d)];
      Dim prefix(1);
      for (std::size_t b = 0; b < to.size(); ++b) {
        if (prefix == prefix_in && to[b].is_constant() && to[b].value() > 1) {
          if (to[b].value() % world_ == 0) {
            shard_as({int(b), to[b].value()});
            p.reshape_axis = int(b);
          }
          return;
        }
        prefix = prefix * to[b];
      }
      return;
    }
    case K::ScaledDotProductAttention:
    case K::ScaledDotProductAttentionHeadsLast: {
      if (in.size() < 3 || !ins[0] || !ins[1] || !ins[2]) return;
      const int heads = kind == K::ScaledDotProductAttention ? 1 : 2;
      for (int i = 0; i < 3; ++i)
        if (ins[std::size_t(i)]->axis != heads) return;
      for (std::size_t i = 3; i < in.size(); ++i) { // a mask: broadcast over the heads, or cut
        if (ins[i] || in[i].ndim() < out_rank) return;
        std::int64_t e = extent(in[i], heads + (in[i].ndim() - out_rank));
        if (e != 1 && e != ins[0]->full) return;
        if (e != 1) p.in[i] = ShardPlan::In::cut, p.cut_axis[i] = heads;
      }
      std::vector<ShardPlan::In> modes = p.in;
      shard_as({heads, ins[0]->full});
      for (std::size_t i = 3; i < in.size(); ++i)
        p.in[i] = modes[i];
      return;
    }
    default:
      if (op.name() == "Softmax" && in.size() == 1) {
        std::vector<std::int64_t> axis = attr_ints(op.attrs(), "axis");
        if (axis.size() == 1 && axis[0] != ins[0]->axis) shard_as(*ins[0]);
      }
      return;
    }
  }

  const FlowGraph &g_;
  int world_;
  std::vector<ShardPlan> plans_;
  std::map<TensorKey, Sharding> state_;
  Groups groups_;

public:
  int whole_groups_ = 0;
};

/// `t` (whole) cut along `axis` to this rank's part of `full`.
HIDET_INLINE Tensor cut_part(const Tensor &t, int axis, std::int64_t full, int rank, int world) {
  const std::int64_t part = full / world;
  return ops::slice(t, {axis}, {rank * part}, {(rank + 1) * part});
}

/// The node `op` traced anew on sharded inputs `xs` (plan `p`).
HIDET_INLINE Tensor retrace(const Operator &op, const std::vector<Tensor> &xs, const ShardPlan &p,
                            int world) {
  using K = ops::OpKind;
  const std::string &attrs = op.attrs();
  auto scalar_op = [&](auto f) {
    const double s = std::stod(attr_text(attrs, "scalar"));
    return attr_text(attrs, "left") == "1" ? f(Tensor(), s, true) : f(xs[0], s, false);
  };
  switch (ops::kind_of(op)) {
  case K::Add:
    if (xs.size() == 1) return scalar_op([&](const Tensor &, double s, bool) { return xs[0] + s; });
    return ops::add(xs[0], xs[1]);
  case K::Mul:
    if (xs.size() == 1) return scalar_op([&](const Tensor &, double s, bool) { return xs[0] * s; });
    return ops::mul(xs[0], xs[1]);
  case K::Sub:
    if (xs.size() == 1)
      return scalar_op(
          [&](const Tensor &, double s, bool left) { return left ? s - xs[0] : xs[0] - s; });
    return ops::sub(xs[0], xs[1]);
  case K::Div:
    if (xs.size() == 1)
      return scalar_op(
          [&](const Tensor &, double s, bool left) { return left ? s / xs[0] : xs[0] / s; });
    return ops::div(xs[0], xs[1]);
  case K::Neg:
    return ops::neg(xs[0]);
  case K::Abs:
    return ops::abs(xs[0]);
  case K::Exp:
    return ops::exp(xs[0]);
  case K::Tanh:
    return ops::tanh(xs[0]);
  case K::Relu:
    return ops::relu(xs[0]);
  case K::Sigmoid:
    return ops::sigmoid(xs[0]);
  case K::Silu:
    return ops::silu(xs[0]);
  case K::Gelu:
    return ops::gelu(xs[0], attr_text(attrs, "approximate_tanh") == "1");
  case K::Cast:
    return ops::cast(xs[0], op.output_metas()[0].dtype);
  case K::Matmul:
    return ops::matmul(xs[0], xs[1]);
  case K::Permute: {
    std::vector<int> perm;
    for (auto v : attr_ints(attrs, "perm"))
      perm.push_back(int(v));
    return ops::permute(xs[0], perm);
  }
  case K::Reshape: {
    SymShape to = op.output_metas()[0].shape;
    to[std::size_t(p.reshape_axis)] = Dim(to[std::size_t(p.reshape_axis)].value() / world);
    return xs[0].reshape(to);
  }
  case K::ScaledDotProductAttention:
  case K::ScaledDotProductAttentionHeadsLast:
    return op.run(xs)[0];
  default:
    HIDET_ASSERT(op.name() == "Softmax", "shard_tensor_parallel: no rule to trace ", op.name());
    return ops::softmax(xs[0], int(attr_ints(attrs, "axis")[0]));
  }
}

} // namespace detail

HIDET_INLINE FlowGraph shard_tensor_parallel(const FlowGraph &graph,
                                             const distributed::Communicator &comm,
                                             TensorParallelReport *report) {
  using namespace detail;
  if (!comm.defined())
    throw ValueError("shard_tensor_parallel: the communicator is undefined (default-constructed)");
  TensorParallelReport rep;
  const int world = comm.world_size(), rank = comm.rank();
  if (world == 1) {
    if (report) *report = rep;
    return graph;
  }
  TensorParallelPlanner planner(graph, world);
  std::set<std::size_t> allowed;
  for (std::size_t k = 0; k < graph.nodes().size(); ++k)
    allowed.insert(k);
  int whole = 0;
  for (;;) {
    std::set<std::size_t> drop = planner.plan(allowed);
    whole += planner.whole_groups_;
    if (drop.empty()) break;
    for (auto k : drop)
      allowed.erase(k);
  }
  rep.groups_left_whole = whole;
  const auto &plans = planner.plans();
  GraphRewriter rw(graph);
  std::map<TensorKey, Tensor> gathered;
  auto gather = [&](const Tensor &old) {
    auto k = key_of(old);
    auto it = gathered.find(k);
    if (it != gathered.end()) return it->second;
    ++rep.all_gathers;
    Tensor whole_value = ops::all_gather(rw.map(old), comm, planner.sharding_of(old)->axis);
    gathered.emplace(k, whole_value);
    return whole_value;
  };
  std::size_t k = 0;
  rw.visit([&](const OpPtr &op, GraphRewriter &) -> NodeRewrite {
    const ShardPlan &p = plans[k++];
    const auto &in = op->inputs();
    switch (p.action) {
    case ShardPlan::Action::keep:
      return std::nullopt;
    case ShardPlan::Action::column:
      ++rep.column_parallel;
      return ops::matmul(rw.map(in[0]), cut_part(in[1], 1, in[1].shape()[1], rank, world));
    case ShardPlan::Action::row:
      ++rep.row_parallel;
      return ops::all_reduce(
          ops::matmul(rw.map(in[0]), cut_part(in[1], 0, in[1].shape()[0], rank, world)), comm);
    case ShardPlan::Action::gather: {
      std::vector<Tensor> xs;
      for (const auto &t : in)
        xs.push_back(planner.sharding_of(t) ? gather(t) : rw.map(t));
      return outputs_of(op->with_inputs(std::move(xs)));
    }
    case ShardPlan::Action::shard: {
      ++rep.sharded_nodes;
      std::vector<Tensor> xs;
      for (std::size_t i = 0; i < in.size(); ++i) {
        Tensor x = rw.map(in[i]);
        if (p.in[i] == ShardPlan::In::cut)
          x = cut_part(x, p.cut_axis[i], x.sym_shape()[std::size_t(p.cut_axis[i])].value(), rank,
                       world);
        xs.push_back(x);
      }
      return retrace(*op, xs, p, world);
    }
    }
    return std::nullopt;
  });
  for (const auto &t : graph.outputs())
    if (planner.sharding_of(t)) rw.set(t, gather(t));
  for (const auto &u : graph.updates())
    if (planner.sharding_of(u.value)) rw.set(u.value, gather(u.value));
  if (report) *report = rep;
  return rw.result();
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
