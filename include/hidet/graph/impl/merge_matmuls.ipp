// Definitions for graph::merge_sibling_matmuls (hidet/graph/passes.hpp).
#pragma once

#include "hidet/graph/passes.hpp"

#include <map>
#include <set>

#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/transform.hpp"

namespace hidet::graph {

namespace detail {
/// One step of a sibling's chain after its matmul: a Reshape to `shape` or a Permute by `perm`.
struct SiblingStep {
  std::string name, attrs;
  std::vector<std::int64_t> shape; ///< the step's output shape
  const Operator *op = nullptr;
};
/// A matmul of a sibling group and what follows it.
struct Sibling {
  std::shared_ptr<const Operator> matmul;
  const Operator *bias_add = nullptr; ///< Add of a constant [N] right after the product
  Tensor bias;
  std::vector<SiblingStep> steps;
};
} // namespace detail

HIDET_INLINE FlowGraph merge_sibling_matmuls(const FlowGraph &graph) {
  using detail::key_of;
  using detail::TensorKey;
  std::map<TensorKey, int> uses;
  std::map<TensorKey, std::shared_ptr<const Operator>> consumer;
  for (const auto &op : graph.nodes())
    for (const auto &t : op->inputs())
      if (t.is_symbolic()) ++uses[key_of(t)], consumer[key_of(t)] = op;
  for (const auto &t : graph.outputs()) uses[key_of(t)] += 2; // a graph output stays as it is
  auto single_reader = [&](const TensorKey &k) -> std::shared_ptr<const Operator> {
    return uses[k] == 1 ? consumer.at(k) : nullptr;
  };

  // Groups: products of one symbolic input by constant [K, N] matrices of its dtype, by N.
  using GroupKey = std::pair<TensorKey, std::int64_t>; // the input, N
  std::map<GroupKey, std::vector<detail::Sibling>> groups;
  std::vector<GroupKey> order;
  for (const auto &op : graph.nodes()) {
    if (op->name() != "Matmul" || op->inputs().size() != 2 || op->num_outputs() != 1) continue;
    const Tensor &a = op->inputs()[0], &b = op->inputs()[1];
    if (!a.is_symbolic() || b.is_symbolic() || b.ndim() != 2 || a.dtype() != b.dtype()) continue;
    if (!is_constant_shape(a.sym_shape()) || !is_constant_shape(op->output_metas()[0].shape)) continue;
    GroupKey gk{key_of(a), b.shape()[1]};
    auto &g = groups[gk];
    if (g.empty()) order.push_back(gk);
    g.push_back({op, nullptr, {}, {}});
  }

  // Each sibling's chain: an optional bias Add, then Reshapes and Permutes read once each.
  std::map<const Operator *, std::size_t> first_of; // a group's first matmul -> index in `merged`
  struct Merge {
    std::vector<detail::Sibling> siblings;
    std::size_t steps = 0; ///< the chain prefix all siblings share
    bool bias = false;
  };
  std::vector<Merge> merged;
  std::set<const Operator *> absorbed;
  std::map<TensorKey, std::pair<std::size_t, std::size_t>> replaced; // -> (merge, sibling)
  for (const auto &key : order) {
    auto &sibs = groups[key];
    if (sibs.size() < 2) continue;
    const std::int64_t n = key.second;
    bool all_bias = true;
    for (auto &s : sibs) {
      TensorKey cur{s.matmul.get(), 0};
      if (auto c = single_reader(cur); c && c->name() == "Add" && c->inputs().size() == 2 && c->num_outputs() == 1) {
        int j = key_of(c->inputs()[0]) == cur ? 1 : 0;
        const Tensor &other = c->inputs()[std::size_t(j)];
        if (!other.is_symbolic() && other.ndim() == 1 && other.shape()[0] == n && other.dtype() == c->output_metas()[0].dtype &&
            c->output_metas()[0].dtype == s.matmul->output_metas()[0].dtype) {
          s.bias_add = c.get();
          s.bias = other;
          cur = {c.get(), 0};
        }
      }
      all_bias = all_bias && s.bias_add;
      while (auto c = single_reader(cur)) {
        bool reshape = c->name() == "Reshape", permute = c->name() == "Permute";
        if (!(reshape || permute) || c->inputs().size() != 1 || c->num_outputs() != 1) break;
        if (!is_constant_shape(c->output_metas()[0].shape)) break;
        if (permute && detail::attr_ints(c->attrs(), "perm").empty()) break;
        s.steps.push_back({c->name(), c->attrs(), constant_shape(c->output_metas()[0].shape), c.get()});
        cur = {c.get(), 0};
      }
    }
    Merge m;
    m.bias = all_bias;
    if (!all_bias) // a bias on some siblings only: merge the products alone
      for (auto &s : sibs) s.bias_add = nullptr, s.steps.clear();
    std::size_t common = sibs[0].steps.size();
    for (const auto &s : sibs) {
      std::size_t i = 0;
      while (i < std::min(common, s.steps.size()) && s.steps[i].name == sibs[0].steps[i].name &&
             s.steps[i].attrs == sibs[0].steps[i].attrs && s.steps[i].shape == sibs[0].steps[i].shape)
        ++i;
      common = i;
    }
    m.steps = common;
    // Merge only where nothing is lost: a sibling whose value after the shared chain is read
    // once by an injective operator would have taken it into its own kernel (fuse_epilogues).
    // The operator whose output a sibling's view replaces: the end of the shared chain.
    auto last_of = [&](const detail::Sibling &s) -> const Operator * {
      return common ? s.steps[common - 1].op : m.bias ? s.bias_add : s.matmul.get();
    };
    bool loses_epilogue = false;
    for (const auto &s : sibs) {
      auto c = single_reader({last_of(s), 0});
      auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(c);
      loses_epilogue = loses_epilogue || (c && (c->name() == "Reshape" || (task_op && task_op->task().injective())));
    }
    if (loses_epilogue) continue;
    m.siblings = sibs;
    std::size_t index = merged.size();
    for (std::size_t i = 0; i < sibs.size(); ++i) {
      const auto &s = sibs[i];
      absorbed.insert(s.matmul.get());
      if (m.bias) absorbed.insert(s.bias_add);
      for (std::size_t j = 0; j < common; ++j) absorbed.insert(s.steps[j].op);
      replaced[{last_of(s), 0}] = {index, i};
    }
    first_of[sibs[0].matmul.get()] = index;
    merged.push_back(std::move(m));
  }
  if (merged.empty()) return graph;

  std::map<TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  // The merged product laid out [G, rows..., N], the shared chain applied with a leading group
  // axis, then one view per sibling.
  auto build = [&](const Merge &m) {
    const auto &sibs = m.siblings;
    const auto g = std::int64_t(sibs.size());
    const Tensor &b0 = sibs[0].matmul->inputs()[1];
    const std::int64_t k = b0.shape()[0], n = b0.shape()[1];
    std::vector<double> w(std::size_t(k * g * n)), bias;
    for (std::int64_t s = 0; s < g; ++s) { // on the host: no kernel to compile per shape
      std::vector<double> bs = sibs[std::size_t(s)].matmul->inputs()[1].to_double_vector();
      for (std::int64_t r = 0; r < k; ++r)
        for (std::int64_t c = 0; c < n; ++c) w[std::size_t((r * g + s) * n + c)] = bs[std::size_t(r * n + c)];
      if (m.bias) {
        std::vector<double> bv = sibs[std::size_t(s)].bias.to_double_vector();
        bias.insert(bias.end(), bv.begin(), bv.end());
      }
    }
    Tensor wcat = asarray(w, {k, g * n}, b0.dtype(), b0.device());
    Tensor y = ops::matmul(map_input(sibs[0].matmul->inputs()[0]), wcat);
    if (m.bias) y = y + asarray(bias, {g * n}, sibs[0].bias.dtype(), sibs[0].bias.device());
    std::vector<std::int64_t> shape = y.shape(); // [rows..., G * N]
    const auto r = std::int64_t(shape.size());
    shape.back() = g;
    shape.push_back(n);
    y = y.reshape(shape); // [rows..., G, N]
    std::vector<int> perm{int(r - 1)};
    for (int i = 0; i < r - 1; ++i) perm.push_back(i);
    perm.push_back(int(r));
    y = ops::permute(y, perm); // [G, rows..., N]
    for (std::size_t j = 0; j < m.steps; ++j) {
      const auto &st = sibs[0].steps[j];
      if (st.name == "Reshape") {
        std::vector<std::int64_t> s{g};
        s.insert(s.end(), st.shape.begin(), st.shape.end());
        y = y.reshape(s);
      } else {
        std::vector<int> p{0};
        for (auto v : detail::attr_ints(st.attrs, "perm")) p.push_back(int(v) + 1);
        y = ops::permute(y, p);
      }
    }
    std::vector<Tensor> outs;
    // The replaced tensor's shape: the last shared step's, else the product's (a bias keeps it).
    const auto final_shape =
        m.steps ? sibs[0].steps[m.steps - 1].shape : constant_shape(sibs[0].matmul->output_metas()[0].shape);
    for (std::int64_t s = 0; s < g; ++s) outs.push_back(y.narrow(s, 1).reshape(final_shape));
    return outs;
  };
  std::vector<std::vector<Tensor>> outs_of(merged.size());
  for (const auto &op : graph.nodes()) {
    if (auto it = first_of.find(op.get()); it != first_of.end()) outs_of[it->second] = build(merged[it->second]);
    if (absorbed.count(op.get())) {
      if (auto it = replaced.find({op.get(), 0}); it != replaced.end())
        new_of[{op.get(), 0}] = outs_of[it->second.first][it->second.second];
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

} // namespace hidet::graph
