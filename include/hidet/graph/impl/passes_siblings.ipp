// Definitions for the passes of hidet/graph/passes.hpp over sibling products and slices:
// merge_sibling_matmuls, merge_row_products, lift_sibling_slices and slices_as_views.
#pragma once

#include "hidet/graph/passes.hpp"

#include <map>
#include <set>

#include "hidet/graph/detail/node_attrs.hpp"
#include "hidet/graph/detail/rewriter.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/op_kind.hpp"
#include "hidet/ops/transform.hpp"
#include "hidet/runtime/shared_constants.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

namespace detail {
/// One step of a sibling's chain after its matmul: a Reshape to `shape` or a Permute by `perm`.
struct SiblingStep {
  ops::OpKind kind;
  std::string attrs;
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

/// The Reshapes and Permutes (constant shapes, each read once) that follow tensor `cur`.
inline std::vector<SiblingStep> chain_steps(TensorKey cur, const Readers &readers) {
  std::vector<SiblingStep> steps;
  while (auto c = readers.single(cur)) {
    const ops::OpKind kind = ops::kind_of(*c);
    bool reshape = kind == ops::OpKind::Reshape, permute = kind == ops::OpKind::Permute;
    if (!(reshape || permute) || c->inputs().size() != 1 || c->num_outputs() != 1) break;
    if (!is_constant_shape(c->output_metas()[0].shape)) break;
    if (permute && attr_ints(c->attrs(), "perm").empty()) break;
    steps.push_back({kind, c->attrs(), constant_shape(c->output_metas()[0].shape), c.get()});
    cur = {c.get(), 0};
  }
  return steps;
}

/// How many steps every chain of `chains` starts with alike.
inline std::size_t common_steps(const std::vector<const std::vector<SiblingStep> *> &chains) {
  std::size_t common = chains[0]->size();
  for (const auto *c : chains) {
    std::size_t i = 0;
    while (i < std::min(common, c->size()) && (*c)[i].kind == (*chains[0])[i].kind &&
           (*c)[i].attrs == (*chains[0])[i].attrs && (*c)[i].shape == (*chains[0])[i].shape)
      ++i;
    common = i;
  }
  return common;
}

/// True when the operator reading `t` once is one a kernel would have taken in (a Reshape or an
/// injective task: fuse_epilogues, fuse_operators): a merge that makes `t` a view loses that.
inline bool read_by_fusable(const TensorKey &t, const Readers &readers) {
  auto c = readers.single(t);
  return c && (ops::kind_of(*c) == ops::OpKind::Reshape || injective_task(c.get()));
}

/// y: [rows..., G, N]. Moves the group axis first, applies `steps` (Reshapes and Permutes of one
/// member, the first `common` of them) to all members at once with that leading axis, and returns
/// one view per member, each of shape `final_shape`.
inline std::vector<Tensor> lift_group(Tensor y, const std::vector<SiblingStep> &steps,
                                      std::size_t common,
                                      const std::vector<std::int64_t> &final_shape) {
  const auto r = std::int64_t(y.ndim()) - 1; // the group axis
  const std::int64_t g = y.shape()[std::size_t(r - 1)];
  std::vector<int> perm{int(r - 1)};
  for (int i = 0; i < r - 1; ++i)
    perm.push_back(i);
  perm.push_back(int(r));
  y = ops::permute(y, perm); // [G, rows..., N]
  for (std::size_t j = 0; j < common; ++j) {
    const auto &st = steps[j];
    if (st.kind == ops::OpKind::Reshape) {
      std::vector<std::int64_t> shape{g};
      shape.insert(shape.end(), st.shape.begin(), st.shape.end());
      y = y.reshape(shape);
    } else {
      std::vector<int> p{0};
      for (auto v : attr_ints(st.attrs, "perm"))
        p.push_back(int(v) + 1);
      y = ops::permute(y, p);
    }
  }
  std::vector<Tensor> outs;
  for (std::int64_t i = 0; i < g; ++i)
    outs.push_back(y.narrow(i, 1).reshape(final_shape));
  return outs;
}
} // namespace detail

HIDET_INLINE FlowGraph merge_sibling_matmuls(const FlowGraph &graph) {
  using namespace detail;
  const Readers readers(graph);

  // Groups: products of one symbolic input by constant [K, N] matrices of its dtype, by N.
  using GroupKey = std::pair<TensorKey, std::int64_t>; // the input, N
  std::map<GroupKey, std::vector<Sibling>> groups;
  std::vector<GroupKey> order;
  for (const auto &op : graph.nodes()) {
    if (ops::kind_of(*op) != ops::OpKind::Matmul || op->inputs().size() != 2 ||
        op->num_outputs() != 1)
      continue;
    const Tensor &a = op->inputs()[0], &b = op->inputs()[1];
    if (!a.is_symbolic() || b.is_symbolic() || b.ndim() != 2 || a.dtype() != b.dtype()) continue;
    if (!is_constant_shape(a.sym_shape()) || !is_constant_shape(op->output_metas()[0].shape))
      continue;
    GroupKey gk{key_of(a), b.shape()[1]};
    auto &g = groups[gk];
    if (g.empty()) order.push_back(gk);
    g.push_back({op, nullptr, {}, {}});
  }

  // Each sibling's chain: an optional bias Add, then Reshapes and Permutes read once each.
  std::map<const Operator *, std::size_t> first_of; // a group's first matmul -> index in `merged`
  struct Merge {
    std::vector<Sibling> siblings;
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
    bool all_bias = true, any_bias = false;
    for (auto &s : sibs) {
      TensorKey cur{s.matmul.get(), 0};
      if (auto c = readers.single(cur); c && ops::kind_of(*c) == ops::OpKind::Add &&
                                        c->inputs().size() == 2 && c->num_outputs() == 1) {
        int j = key_of(c->inputs()[0]) == cur ? 1 : 0;
        const Tensor &other = c->inputs()[std::size_t(j)];
        if (!other.is_symbolic() && other.ndim() == 1 && other.shape()[0] == n &&
            other.dtype() == c->output_metas()[0].dtype &&
            c->output_metas()[0].dtype == s.matmul->output_metas()[0].dtype) {
          s.bias_add = c.get();
          s.bias = other;
          cur = {c.get(), 0};
        }
      }
      all_bias = all_bias && s.bias_add;
      any_bias = any_bias || s.bias_add;
      s.steps = chain_steps(cur, readers);
    }
    Merge m;
    m.bias = all_bias;
    if (any_bias && !all_bias) // a bias on some siblings only: merge the products alone
      for (auto &s : sibs)
        s.bias_add = nullptr, s.steps.clear();
    std::vector<const std::vector<SiblingStep> *> chains;
    for (const auto &s : sibs)
      chains.push_back(&s.steps);
    const std::size_t common = common_steps(chains);
    m.steps = common;
    // Merge only where nothing is lost: a sibling whose value after the shared chain is read
    // once by an injective operator would have taken it into its own kernel (fuse_epilogues).
    // The operator whose output a sibling's view replaces: the end of the shared chain.
    auto last_of = [&](const Sibling &s) -> const Operator * {
      return common ? s.steps[common - 1].op : m.bias ? s.bias_add : s.matmul.get();
    };
    bool loses_epilogue = false;
    for (const auto &s : sibs)
      loses_epilogue = loses_epilogue || read_by_fusable({last_of(s), 0}, readers);
    if (loses_epilogue) continue;
    m.siblings = sibs;
    std::size_t index = merged.size();
    for (std::size_t i = 0; i < sibs.size(); ++i) {
      const auto &s = sibs[i];
      absorbed.insert(s.matmul.get());
      if (m.bias) absorbed.insert(s.bias_add);
      for (std::size_t j = 0; j < common; ++j)
        absorbed.insert(s.steps[j].op);
      replaced[{last_of(s), 0}] = {index, i};
    }
    first_of[sibs[0].matmul.get()] = index;
    merged.push_back(std::move(m));
  }

  // The merged product laid out [G, rows..., N], the shared chain applied with a leading group
  // axis, then one view per sibling.
  auto build = [&](const Merge &m, const GraphRewriter &rw) {
    const auto &sibs = m.siblings;
    const auto g = std::int64_t(sibs.size());
    const Tensor &b0 = sibs[0].matmul->inputs()[1];
    const std::int64_t n = b0.shape()[1];
    std::vector<Tensor> weights, biases;
    for (const auto &s : sibs) {
      weights.push_back(s.matmul->inputs()[1]);
      if (m.bias) biases.push_back(s.bias);
    }
    // By one shape-generic kernel (no compile per shape), once for all the graphs traced from
    // these weights (runtime/shared_constants.hpp: a model's graph per input shape).
    Tensor wcat = shared_constant("merge_sibling_matmuls", weights, [&] { return ops::concat_generic(weights, 1); });
    Tensor y = ops::matmul(rw.map(sibs[0].matmul->inputs()[0]), wcat);
    if (m.bias)
      y = y + shared_constant("merge_sibling_matmuls bias", biases, [&] { return ops::concat_generic(biases, 0); });
    std::vector<std::int64_t> shape = y.shape(); // [rows..., G * N]
    shape.back() = g;
    shape.push_back(n);
    // The replaced tensor's shape: the last shared step's, else the product's (a bias keeps it).
    const auto final_shape = m.steps ? sibs[0].steps[m.steps - 1].shape
                                     : constant_shape(sibs[0].matmul->output_metas()[0].shape);
    return lift_group(y.reshape(shape), sibs[0].steps, m.steps, final_shape);
  };
  std::vector<std::vector<Tensor>> outs_of(merged.size());
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (auto it = first_of.find(op.get()); it != first_of.end())
      outs_of[it->second] = build(merged[it->second], rw);
    if (!absorbed.count(op.get())) return std::nullopt;
    if (auto it = replaced.find({op.get(), 0}); it != replaced.end())
      return outs_of[it->second.first][it->second.second];
    return NodeRewrite::removed();
  });
}

namespace detail {
/// True when the value of product `op` (through Reshapes) is read once by an injective task that
/// fuse_epilogues would take into the product's kernel (a bias, an activation, a residual add).
inline bool takes_epilogue(const Operator &op, const Readers &readers) {
  const TensorMeta &meta = op.output_metas()[0];
  ops::Epilogue e = ops::Epilogue::identity(constant_shape(meta.shape), meta.dtype);
  TensorKey cur{&op, 0};
  while (auto c = readers.single(cur)) {
    if (c->num_outputs() != 1 || !is_constant_shape(c->output_metas()[0].shape)) return false;
    if (ops::kind_of(*c) == ops::OpKind::Reshape && c->inputs().size() == 1) {
      e = e.reshape(constant_shape(c->output_metas()[0].shape));
      cur = {c.get(), 0};
      continue;
    }
    auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(c);
    if (!task_op || task_op->task().inputs.size() != c->inputs().size()) return false;
    std::size_t j = 0;
    while (j < c->inputs().size() && key_of(c->inputs()[j]) != cur)
      ++j;
    return e.then(task_op->task(), j, task_op->key(), task_op->name()).has_value();
  }
  return false;
}
} // namespace detail

HIDET_INLINE FlowGraph merge_row_products(const FlowGraph &graph) {
  using namespace detail;
  const Readers readers(graph);
  // Candidates: one-row products of one input by constant [K, N] weights of its dtype, whose
  // value takes no epilogue; per input, in graph order.
  std::map<TensorKey, std::vector<OpPtr>> by_input;
  std::vector<TensorKey> order;
  for (const auto &op : graph.nodes()) {
    if (ops::kind_of(*op) != ops::OpKind::Matmul || op->inputs().size() != 2 || op->num_outputs() != 1) continue;
    const Tensor &a = op->inputs()[0], &b = op->inputs()[1];
    if (!a.is_symbolic() || b.is_symbolic() || b.ndim() != 2 || a.dtype() != b.dtype() || a.ndim() < 1) continue;
    if (!is_constant_shape(a.sym_shape()) || !is_constant_shape(op->output_metas()[0].shape)) continue;
    const auto as = constant_shape(a.sym_shape());
    if (ops::shape_numel(as) != as.back() || readers.is_output({op.get(), 0})) continue; // one row
    if (takes_epilogue(*op, readers)) continue;
    auto &v = by_input[key_of(a)];
    if (v.empty()) order.push_back(key_of(a));
    v.push_back(op);
  }
  // Groups of two or more whose members start on 256-byte boundaries of the merged row (the
  // allocator's alignment, which the kernels reading a member's view may assume).
  std::vector<std::vector<OpPtr>> groups;
  std::map<const Operator *, std::pair<std::size_t, std::size_t>> member; // -> (group, index)
  for (const auto &key : order) {
    std::vector<OpPtr> g;
    std::int64_t offset = 0;
    for (const auto &op : by_input[key]) {
      const Tensor &b = op->inputs()[1];
      if (offset * std::int64_t(b.dtype().nbytes()) % 256 != 0) continue;
      g.push_back(op);
      offset += b.shape()[1];
    }
    if (g.size() < 2) continue;
    for (std::size_t i = 0; i < g.size(); ++i)
      member[g[i].get()] = {groups.size(), i};
    groups.push_back(std::move(g));
  }
  if (groups.empty()) return graph;
  std::vector<std::vector<Tensor>> outs(groups.size());
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    auto it = member.find(op.get());
    if (it == member.end()) return std::nullopt;
    auto &out = outs[it->second.first];
    if (out.empty()) { // the group's first member: the product by the weights side by side
      const auto &g = groups[it->second.first];
      std::vector<Tensor> weights;
      for (const auto &m : g)
        weights.push_back(m->inputs()[1]);
      Tensor y = ops::matmul(rw.map(g[0]->inputs()[0]), // the concat runs now, once for every graph
                             shared_constant("merge_row_products", weights, [&] { return ops::concat_generic(weights, 1); }));
      Tensor flat = y.reshape({y.sym_shape().back().value()});
      std::int64_t offset = 0;
      for (const auto &m : g) {
        const std::int64_t n = m->inputs()[1].shape()[1];
        out.push_back(flat.narrow(offset, n).reshape(constant_shape(m->output_metas()[0].shape)));
        offset += n;
      }
    }
    return out[it->second.second];
  });
}

HIDET_INLINE FlowGraph lift_sibling_slices(const FlowGraph &graph) {
  using namespace detail;
  const Readers readers(graph);

  struct Lift {
    Tensor source;                        // [rows..., G * N]
    std::vector<const Operator *> slices; // by position along the last axis
    std::vector<std::vector<SiblingStep>> steps;
    std::size_t common = 0;
  };
  std::vector<Lift> lifts;
  std::map<const Operator *, std::pair<std::size_t, std::size_t>>
      replaced; // end of a chain -> (lift, member)
  std::set<const Operator *> absorbed;
  std::map<const Operator *, std::size_t> built_at; // the first slice in graph order -> lift
  std::map<const Operator *, std::size_t> position;
  for (std::size_t i = 0; i < graph.nodes().size(); ++i)
    position[graph.nodes()[i].get()] = i;
  for (const auto &[key, rs] : readers.all()) {
    if (rs.size() < 2 || readers.is_output(key)) continue; // a graph output stays as it is
    const Tensor &src = rs[0]->inputs()[0];
    if (!is_constant_shape(src.sym_shape()) || src.ndim() < 1) continue;
    const std::vector<std::int64_t> shape = constant_shape(src.sym_shape());
    const auto g = std::int64_t(rs.size()), last = shape.back();
    if (last % g != 0) continue;
    const std::int64_t n = last / g;
    // Each reader a Slice of the last axis: begin 0 elsewhere, steps 1, width n; all positions.
    std::vector<const Operator *> at(std::size_t(g), nullptr);
    bool ok = true;
    for (const auto &r : rs) {
      if (ops::kind_of(*r) != ops::OpKind::Slice || r->inputs().size() != 1 ||
          r->num_outputs() != 1) {
        ok = false;
        break;
      }
      auto begin = attr_ints(r->attrs(), "begin"), step = attr_ints(r->attrs(), "step");
      auto out = attr_ints(r->attrs(), "shape");
      std::vector<std::int64_t> want = shape;
      want.back() = n;
      if (begin.size() != shape.size() || out != want ||
          step != std::vector<std::int64_t>(shape.size(), 1)) {
        ok = false;
        break;
      }
      for (std::size_t d = 0; d + 1 < shape.size(); ++d)
        ok = ok && begin[d] == 0;
      if (!ok || begin.back() % n != 0 || at[std::size_t(begin.back() / n)]) {
        ok = false;
        break;
      }
      at[std::size_t(begin.back() / n)] = r.get();
    }
    if (!ok) continue;
    Lift l{src, at, {}, 0};
    std::vector<const std::vector<SiblingStep> *> chains;
    for (const auto *s : at)
      l.steps.push_back(chain_steps({s, 0}, readers));
    for (const auto &c : l.steps)
      chains.push_back(&c);
    l.common = common_steps(chains);
    if (l.common == 0) continue; // nothing shared: the slices fuse into their readers as they are
    bool loses = false;
    for (const auto &c : l.steps)
      loses = loses || read_by_fusable({c[l.common - 1].op, 0}, readers);
    if (loses) continue;
    const Operator *first_slice = at[0]; // the views are made there (the source exists by then)
    for (const auto *s : at) {
      absorbed.insert(s);
      if (position.at(s) < position.at(first_slice)) first_slice = s;
    }
    for (std::size_t i = 0; i < at.size(); ++i) {
      for (std::size_t j = 0; j < l.common; ++j)
        absorbed.insert(l.steps[i][j].op);
      replaced[l.steps[i][l.common - 1].op] = {lifts.size(), i};
    }
    built_at[first_slice] = lifts.size();
    lifts.push_back(std::move(l));
  }

  std::vector<std::vector<Tensor>> outs_of(lifts.size());
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (auto it = built_at.find(op.get()); it != built_at.end()) {
      const Lift &l = lifts[it->second];
      std::vector<std::int64_t> shape = constant_shape(l.source.sym_shape());
      const auto g = std::int64_t(l.slices.size());
      shape.back() /= g;
      shape.insert(shape.end() - 1, g); // [rows..., G, N]
      outs_of[it->second] = lift_group(rw.map(l.source).reshape(shape), l.steps[0], l.common,
                                       l.steps[0][l.common - 1].shape);
    }
    if (!absorbed.count(op.get())) return std::nullopt;
    if (auto it = replaced.find(op.get()); it != replaced.end())
      return outs_of[it->second.first][it->second.second];
    return NodeRewrite::removed();
  });
}

HIDET_INLINE FlowGraph slices_as_views(const FlowGraph &graph) {
  using namespace detail;
  const Readers readers(graph);
  // Whether the slice's value, through Reshapes, is read by one element-wise (injective) operator
  // alone: the slice then fuses into that operator's kernel, and stays (a view would cut it from a
  // chain such as torch.roll's pad, slices and concat).
  auto fuses_into_reader = [&](TensorKey t) {
    for (;;) {
      auto r = readers.single(t);
      if (!r) return false;
      if (ops::kind_of(*r) != ops::OpKind::Reshape) return injective_task(r.get());
      t = TensorKey{r.get(), 0};
    }
  };
  // The element offset and count of a Slice's run, when its elements are one aligned contiguous
  // run of an operator's output.
  auto run_of = [&](const Operator &op) -> std::optional<std::pair<std::int64_t, std::int64_t>> {
    if (ops::kind_of(op) != ops::OpKind::Slice || op.inputs().size() != 1 || op.num_outputs() != 1)
      return std::nullopt;
    const Tensor &src = op.inputs()[0];
    if (!src.is_symbolic() || !src.trace() || !is_constant_shape(src.sym_shape()))
      return std::nullopt;
    if (readers.is_output({&op, 0}) || fuses_into_reader({&op, 0})) return std::nullopt;
    const auto in = constant_shape(src.sym_shape());
    auto begin = attr_ints(op.attrs(), "begin"), step = attr_ints(op.attrs(), "step"),
         out = attr_ints(op.attrs(), "shape");
    if (begin.size() != in.size() || step.size() != in.size() || out.size() != in.size())
      return std::nullopt;
    int last = -1; // the last axis the slice narrows
    for (std::size_t d = 0; d < in.size(); ++d) {
      if (step[d] != 1 && out[d] > 1) return std::nullopt;
      if (out[d] != in[d]) last = int(d);
    }
    if (last < 0) return std::nullopt;
    std::int64_t offset = 0, stride = 1, count = 1;
    for (int d = int(in.size()) - 1; d >= 0; --d) {
      if (d < last && out[std::size_t(d)] != 1) return std::nullopt; // not one run
      offset += begin[std::size_t(d)] * stride;
      stride *= in[std::size_t(d)];
      count *= out[std::size_t(d)];
    }
    if ((offset * src.dtype().nbytes()) % 256 != 0 || count == 0) return std::nullopt;
    return std::make_pair(offset, count);
  };
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    auto run = run_of(*op);
    if (!run) return std::nullopt;
    Tensor src = rw.map(op->inputs()[0]);
    return src.reshape(std::vector<std::int64_t>{src.numel()})
        .narrow(run->first, run->second)
        .reshape(attr_ints(op->attrs(), "shape"));
  });
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
