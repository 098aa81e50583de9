// Definitions for the fusion passes of hidet/graph/passes.hpp: fuse_operators (prologues and
// epilogues of task-defined operators composed into one task) and fuse_epilogues (chains after a
// Matmul or Conv2d stored by its template's kernel, with the fused anchors of symbolic extents
// that build their epilogue per run).
#pragma once

#include "hidet/graph/passes.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "hidet/graph/detail/node_attrs.hpp"
#include "hidet/graph/detail/rewriter.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/conv.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/fuse.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/op_kind.hpp"
#include "hidet/ops/schedule_row.hpp"
#include "hidet/ops/transform.hpp"

#include "hidet/util/cold_begin.hpp"

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
  std::vector<bool> injective;                               ///< per member
  std::vector<std::shared_ptr<const ops::TaskOperator>> ops; ///< the members' operators, in order

  bool all_injective() const {
    return std::all_of(injective.begin(), injective.end(), [](bool b) { return b; });
  }
};

inline FusionGroup single_group(const std::shared_ptr<const ops::TaskOperator> &op) {
  // An operator fused before (fuse_epilogues' grouping of an activation) keeps its members' names.
  std::vector<std::string> members =
      op->members().size() > 1 ? op->members() : std::vector<std::string>{op->name()};
  std::vector<bool> injective(members.size(), op->task().injective());
  return {op, op->task(), op->inputs(), op->key(), members, injective, {op}};
}

/// The group `p` fused into `g`, whose input `j` p's head makes: as g's prologue when p is
/// injective, else as p's epilogue.
inline FusionGroup merge_groups(const FusionGroup &p, const FusionGroup &g, std::size_t j) {
  FusionGroup merged;
  merged.head = g.head;
  merged.task = p.all_injective() ? ops::fuse_prologue(g.task, j, p.task)
                                  : ops::fuse_epilogue(g.task, j, p.task);
  merged.inputs.assign(g.inputs.begin(), g.inputs.begin() + std::ptrdiff_t(j));
  merged.inputs.insert(merged.inputs.end(), p.inputs.begin(), p.inputs.end());
  merged.inputs.insert(merged.inputs.end(), g.inputs.begin() + std::ptrdiff_t(j) + 1,
                       g.inputs.end());
  merged.key = str_cat("fused{", p.key, " -> ", j, ":", g.key, "}");
  merged.members = p.members;
  merged.members.insert(merged.members.end(), g.members.begin(), g.members.end());
  merged.injective = p.injective;
  merged.injective.insert(merged.injective.end(), g.injective.begin(), g.injective.end());
  merged.ops = p.ops;
  merged.ops.insert(merged.ops.end(), g.ops.begin(), g.ops.end());
  return merged;
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

/// A view Reshape between two injective task-defined operators (a slice, then a permute) becomes
/// ops::reshape's task, so that prologue fusion runs through it: one kernel, not two.
inline FlowGraph reshapes_between_tasks(const FlowGraph &graph) {
  const Readers readers(graph);
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (ops::kind_of(*op) != ops::OpKind::Reshape || op->inputs().size() != 1 ||
        dynamic_cast<const ops::TaskOperator *>(op.get()))
      return std::nullopt;
    const Tensor &x = op->inputs()[0];
    const SymShape &shape = op->output_metas()[0].shape;
    OpPtr reader = readers.single({op.get(), 0});
    if (!x.trace() || !injective_task(x.trace().op.get()) || !readers.single(key_of(x)) ||
        !reader || !injective_task(reader.get()) || !is_constant_shape(shape))
      return std::nullopt;
    return ops::reshape(rw.map(x), constant_shape(shape));
  });
}

/// The operators to make again for each reader of `op`'s value when its readers meet in one
/// kernel (empty when they do not): `op` is injective and task-defined with one output, not a
/// graph output, read by two to four inputs of task-defined operators, one of which (the meeting
/// one) reads, besides `op`, the one output of each other reader, read by nothing else; at most
/// one of these readers is not injective (one anchor: a reduction, a pooling). The copies then
/// fuse as prologues into one kernel that reads `op`'s inputs once: the value is neither stored
/// nor read back, and what is done twice is its arithmetic (a channels-last group norm's
/// normalization, read by PoolFormer's pooling and by its subtraction of the normalized value).
/// With `op` go the injective task-defined operators and Reshapes it reads that nothing else
/// reads (the statistics' slices and views), up to 24 operators in all (fused members counted).
HIDET_INLINE std::vector<const Operator *> recomputed_where_readers_meet(const Operator &op,
                                                                         const Readers &readers) {
  if (op.num_outputs() != 1 || !injective_task(&op)) return {};
  const TensorKey out{&op, 0};
  const auto &rs = readers.of(out);
  if (rs.size() < 2 || rs.size() > 4 || readers.is_output(out)) return {};
  std::vector<const Operator *> distinct;
  for (const auto &r : rs) {
    if (!dynamic_cast<const ops::TaskOperator *>(r.get())) return {};
    if (std::find(distinct.begin(), distinct.end(), r.get()) == distinct.end())
      distinct.push_back(r.get());
  }
  int anchors = 0;
  for (const Operator *r : distinct) anchors += !injective_task(r);
  if (anchors > 1) return {};
  // The meeting reader: every other reader's one output is read by it alone.
  auto feeds = [&](const Operator *a, const Operator *b) {
    if (a->num_outputs() != 1) return false;
    const auto &ra = readers.of({a, 0});
    return ra.size() == 1 && ra[0].get() == b && !readers.is_output({a, 0});
  };
  bool meet = false;
  for (const Operator *b : distinct) {
    bool all = true;
    for (const Operator *a : distinct) all = all && (a == b || feeds(a, b));
    meet = meet || all;
  }
  if (!meet) return {};
  // op and what only it (or what goes with it) reads
  std::vector<const Operator *> cone{&op};
  auto size_of = [](const Operator &o) {
    auto *t = dynamic_cast<const ops::TaskOperator *>(&o);
    return t && t->members().size() > 1 ? int(t->members().size()) : 1;
  };
  int size = size_of(op);
  for (std::size_t i = 0; i < cone.size(); ++i)
    for (const auto &t : cone[i]->inputs()) {
      const Operator *p = t.trace() ? t.trace().op.get() : nullptr;
      if (!p || p->num_outputs() != 1 || std::find(cone.begin(), cone.end(), p) != cone.end() ||
          readers.is_output({p, 0}))
        continue;
      const bool view = ops::kind_of(*p) == ops::OpKind::Reshape && p->inputs().size() == 1 &&
                        !dynamic_cast<const ops::TaskOperator *>(p);
      if (!view && !injective_task(p)) continue;
      bool inside = true;
      for (const auto &r : readers.of({p, 0}))
        inside = inside && std::find(cone.begin(), cone.end(), r.get()) != cone.end();
      if (!inside) continue;
      cone.push_back(p);
      size += size_of(*p);
    }
  if (size > 24) return {};
  return cone;
}

/// A cast read by several task-defined operators (RMSNorm's x.to(f32), read by its square and by
/// its scaling) made again for each input that reads it, so that each copy fuses into its reader
/// as a prologue: the readers read the narrower input and the cast's kernel and its output go.
/// Likewise a slice (pure indexing: EVA-02's rotary embedding slices the tokens after the class
/// token and reads them twice, a copy kernel per layer and per q and k), and a cast or slice whose
/// one reader is a Reshape read by several task-defined operators, with that Reshape (EVA-02's
/// key, sliced from the fused Q/K/V product at an offset that slices_as_views leaves a copy, then
/// viewed per head). Such a node may read another (made again with it), up to three deep. A cast
/// or slice that is a graph output stays. So does a narrowing cast (f32 to f16) of a
/// task-defined operator's output: it fuses into its producer, which then stores the narrow
/// value; copies in the readers would have the producer store the wide one. A value whose
/// readers meet in one kernel goes into them whole (recomputed_where_readers_meet: PoolFormer's
/// channels-last group norm, its narrowing cast included).
HIDET_INLINE FlowGraph recompute_shared_casts_and_slices(const FlowGraph &graph) {
  const Readers readers(graph);
  std::map<const Operator *, int> shared; // -> how deep: 1 + the most of the shared nodes it reads
  auto depth_of = [&](const Operator &op) {
    int d = 1;
    for (const auto &t : op.inputs())
      if (auto it = t.trace() ? shared.find(t.trace().op.get()) : shared.end(); it != shared.end())
        d = std::max(d, it->second + 1);
    return d;
  };
  for (const auto &op : graph.nodes()) {
    const ops::OpKind kind = ops::kind_of(*op);
    if ((kind != ops::OpKind::Cast && kind != ops::OpKind::Slice) || op->num_outputs() != 1 ||
        !injective_task(op.get()))
      continue;
    const TensorKey out{op.get(), 0};
    const Operator *view = nullptr;
    if (const auto &one = readers.of(out); one.size() == 1 && ops::kind_of(*one[0]) == ops::OpKind::Reshape &&
                                           one[0]->num_outputs() == 1 && one[0]->inputs().size() == 1 &&
                                           !readers.is_output(out))
      view = one[0].get();
    const TensorKey read = view ? TensorKey{view, 0} : out;
    const auto &rs = readers.of(read);
    if (rs.size() < 2 || readers.is_output(read)) continue;
    const Tensor &x = op->inputs().at(0);
    if (kind == ops::OpKind::Cast && op->output_metas()[0].dtype.nbytes() < x.dtype().nbytes() && x.trace() &&
        dynamic_cast<const ops::TaskOperator *>(x.trace().op.get()))
      continue;
    bool tasks = true;
    for (const auto &r : rs) tasks = tasks && dynamic_cast<const ops::TaskOperator *>(r.get());
    const int depth = depth_of(*op);
    if (!tasks || depth > 3) continue;
    shared[op.get()] = depth;
    if (view) shared[view] = depth;
  }
  for (const auto &op : graph.nodes())
    if (!shared.count(op.get()))
      for (const Operator *m : recomputed_where_readers_meet(*op, readers)) shared.emplace(m, 1);
  if (shared.empty()) return graph;
  GraphRewriter rw(graph);
  // t in the new graph: a copy of it (and of the shared nodes it reads) when it is a shared node's
  std::function<Tensor(const Tensor &)> copy_of = [&](const Tensor &t) -> Tensor {
    if (!t.trace() || !shared.count(t.trace().op.get())) return rw.map(t);
    const Operator &node = *t.trace().op;
    std::vector<Tensor> ins;
    for (const auto &u : node.inputs()) ins.push_back(copy_of(u));
    return outputs_of(node.with_inputs(std::move(ins)))[t.trace().index];
  };
  rw.visit([&](const OpPtr &op, GraphRewriter &) -> NodeRewrite {
    if (shared.count(op.get())) return NodeRewrite::removed();
    bool reads = false;
    for (const auto &t : op->inputs()) reads = reads || (t.trace() && shared.count(t.trace().op.get()));
    if (!reads) return std::nullopt;
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(copy_of(t)); // a copy per reading input
    return outputs_of(op->with_inputs(std::move(ins)));
  });
  return rw.result();
}

/// The most multiply-adds that fusing a reduction into a consumer that broadcasts it may add (each
/// of the consumer's elements computes the reduction again): past it the reduction keeps a kernel
/// of its own and the consumer reads its stored result. EfficientNetV2-S at batch 16 on an H200:
/// a squeeze-and-excite's scale fused with its 40-term excitation product over a 16 x 14 x 14 x 960
/// map (120M multiply-adds) took 15.5 us a block, where the product alone is a few microseconds
/// and the scale a pass over 12 MB; at batch 1 (7.5M) one kernel is still the cheaper.
inline constexpr std::int64_t kMaxRecomputedReduction = std::int64_t(1) << 24;

/// True when fusing the reduction group `g` into its injective consumer `c` would compute each
/// reduced value again for each of several consumer elements, kMaxRecomputedReduction
/// multiply-adds or more in all (constant shapes; symbolic ones are not judged).
inline bool recomputes_reduction(const ops::Task &g, const Operator &c) {
  if (g.outputs.size() != 1 || c.output_metas().size() != 1) return false;
  const SymShape &in = g.outputs[0].sym_shape(), &out = c.output_metas()[0].shape;
  if (!is_constant_shape(in) || !is_constant_shape(out)) return false;
  const std::int64_t n_in = ops::shape_numel(constant_shape(in)), n_out = ops::shape_numel(constant_shape(out));
  if (n_out <= n_in) return false;
  std::int64_t extent = 1;
  for (const ops::TensorNode *t : ops::topo_order(g.outputs))
    if (t->kind == ops::TensorNode::Kind::Reduce && is_constant_shape(t->rextents))
      extent = std::max(extent, ops::shape_numel(constant_shape(t->rextents)));
  return n_out * extent >= kMaxRecomputedReduction;
}

/// fuse_operators (all = true), or its first step for fuse_epilogues (all = false): only
/// injective operators into injective consumers, and a group is kept only when it reads some
/// tensor more than once (an activation written out: one operator with one input, which can then
/// follow its anchor as an epilogue); every other group is left as its operators were.
HIDET_INLINE FlowGraph fuse_task_operators(const FlowGraph &input, bool all) {
  const FlowGraph graph = all ? reshapes_between_tasks(input) : input;
  const Readers readers(graph);
  // Groups waiting to be fused into their consumer, by their head's old operator.
  std::map<const Operator *, FusionGroup> pending;
  GraphRewriter rw(graph);
  // A group as one node of the new graph; returns its head's outputs there.
  auto emit = [&](FusionGroup g) -> std::vector<Tensor> {
    const auto &top = g.head;
    const std::size_t before = g.inputs.size();
    merge_repeated_inputs(g);
    if (g.members.size() == 1 && g.inputs.size() == before) return rw.keep(*top);
    if (!all && g.inputs.size() == before) { // nothing read twice: as it was
      std::vector<Tensor> outs;
      for (const auto &m : g.ops)
        outs = rw.keep(*m);
      return outs;
    }
    std::shared_ptr<ops::TaskOperator> node;
    if (g.members.size() == 1) { // one operator reading a tensor twice (x * x): once
      node = std::make_shared<ops::TaskOperator>(top->name(), rw.map(g.inputs), top->attrs(),
                                                 top->output_metas(), g.key, g.task, top->device());
    } else {
      int anchor = anchor_of(g);
      std::string list;
      for (const auto &m : g.members)
        list += (list.empty() ? "" : ", ") + m;
      std::string attrs = str_cat("fused_graph=FlowGraph(", list, "), anchor=", anchor);
      node = std::make_shared<ops::TaskOperator>("Fused" + g.members[std::size_t(anchor)],
                                                 rw.map(g.inputs), attrs, top->output_metas(),
                                                 g.key, g.task, top->device(), g.members, anchor);
    }
    node->set_origin(top->origin_or_self());
    return outputs_of(node);
  };
  rw.visit([&](const OpPtr &op, GraphRewriter &) -> NodeRewrite {
    auto top = std::dynamic_pointer_cast<const ops::TaskOperator>(op);
    if (!top) return std::nullopt;
    FusionGroup g = single_group(top);
    // Fuse pending producers feeding this operator, until none is left.
    for (bool fused = true; fused;) {
      fused = false;
      for (std::size_t j = 0; j < g.inputs.size(); ++j) {
        auto tr = g.inputs[j].trace();
        if (!tr) continue;
        auto it = pending.find(tr.op.get());
        if (it == pending.end()) continue;
        FusionGroup p = std::move(it->second);
        pending.erase(it);
        if (!p.all_injective() && (!all || !g.all_injective())) {
          // A second anchor (sum(t) + max(t)): a node of its own.
          const Operator &head = *p.head;
          rw.set(head, emit(std::move(p)));
        } else {
          g = merge_groups(p, g, j);
        }
        fused = true;
        break;
      }
    }
    // An injective one-output operator whose output feeds one task-defined operator once waits
    // to be fused into it (a prologue). A group with an anchor (a reduction) waits likewise for
    // an injective consumer (an epilogue: a bias, an activation, a cast), unless that would cost
    // the anchor its one-kernel row-resident schedule (a softmax followed by a permute).
    auto c = std::dynamic_pointer_cast<const ops::TaskOperator>(
        op->num_outputs() == 1 ? readers.single({op.get(), 0}) : nullptr);
    bool wait = c && g.all_injective() && (all || c->task().injective());
    if (all && c && !g.all_injective() && c->task().injective() && c->num_outputs() == 1) {
      std::size_t j = 0;
      while (j < c->inputs().size() &&
             !(c->inputs()[j].trace() && c->inputs()[j].trace().op.get() == op.get()))
        ++j;
      bool rows = j < c->inputs().size() &&
                  ops::detail::analyze_row_resident(ops::fuse_epilogue(c->task(), j, g.task));
      // A row-resident result computes each row's reductions once, whatever the consumer
      // broadcasts: an RMSNorm's scale over 4096 channels (x * rsqrt(mean(x^2))) is one kernel,
      // where the recompute estimate alone (4096 x 4096) split it in two.
      wait = rows || (!ops::detail::analyze_row_resident(g.task) && !recomputes_reduction(g.task, *c));
    }
    if (wait) {
      pending.emplace(op.get(), std::move(g));
      return NodeRewrite::removed();
    }
    return emit(std::move(g));
  });
  HIDET_ASSERT(pending.empty(), "fuse_operators: ", pending.size(), " operators were left unfused");
  return rw.result();
}
} // namespace detail

HIDET_INLINE FlowGraph fuse_operators(const FlowGraph &input) {
  return detail::fuse_task_operators(detail::recompute_shared_casts_and_slices(input), true);
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
HIDET_INLINE ops::Epilogue epilogue_at(const SymShape &shape, DataType dtype,
                                       const std::vector<EpilogueStep> &steps,
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
HIDET_INLINE std::optional<ops::Epilogue>
symbolic_epilogue(const SymShape &shape, DataType dtype, const std::vector<EpilogueStep> &steps) {
  try {
    ops::Epilogue e = ops::Epilogue::identity(shape, dtype);
    for (const EpilogueStep &s : steps) {
      std::optional<ops::Epilogue> next =
          s.reshape ? std::optional<ops::Epilogue>(e.reshape(s.shape))
                    : e.then(s.task, s.j, str_cat(s.key, "|", s.task.str()), s.member);
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
std::vector<Tensor> run_chain_per_shape(Anchor &&anchor_run, const std::vector<EpilogueStep> &steps,
                                        const TensorMeta &anchor, const std::vector<Tensor> &extras,
                                        const SymbolValues &values) {
  std::size_t fitted = 0;
  ops::Epilogue e = epilogue_at(anchor.shape, anchor.dtype, steps, values, fitted);
  if (fitted == steps.size())
    return {anchor_run(std::make_shared<const ops::Epilogue>(std::move(e)), extras)};
  Tensor y = anchor_run(nullptr, {});
  std::size_t next = 0;
  for (const auto &s : steps) {
    if (s.reshape) {
      y = y.reshape(evaluate_shape(s.shape, values));
      continue;
    }
    std::vector<Tensor> step_in;
    for (std::size_t i = 0; i < s.task.inputs.size(); ++i)
      step_in.push_back(i == s.j ? y : extras.at(next++));
    ops::Task t = ops::specialize(s.task, values);
    y = ops::run_task(
        s.key, [&] { return t; }, step_in)[0];
  }
  return {y};
}

/// A FusedMatmul node over symbolic extents: a product and its epilogue chain `steps`, whose
/// epilogue is built at the symbol values of each run (the graph's binding), so that the product's
/// template stores through it. Where the chain does not fit an epilogue at some values, the
/// product and then each step run on their own.
HIDET_INLINE Tensor symbolic_fused_matmul(const Tensor &a, const Tensor &b,
                                          const std::vector<Tensor> &extras,
                                          std::vector<EpilogueStep> steps, const TensorMeta &anchor,
                                          const TensorMeta &out, const std::string &attrs) {
  std::vector<Tensor> ins{a, b};
  ins.insert(ins.end(), extras.begin(), extras.end());
  // The product's rows (a's leading extents, b a matrix) and the chain over the symbols: one
  // template kernel for every value of them (ops::matmul_rows), where a template takes them.
  Dim rows = ops::matmul_row_count(a.sym_shape());
  std::shared_ptr<const ops::Epilogue> generic;
  if (a.ndim() >= 2 && b.ndim() == 2 && !rows.is_constant())
    if (auto e = symbolic_epilogue(anchor.shape, anchor.dtype, steps))
      generic = std::make_shared<const ops::Epilogue>(std::move(*e));
  auto run = [steps = std::move(steps), anchor, rows,
              generic](const std::vector<Tensor> &in) -> std::vector<Tensor> {
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
  return mark_scratch_build(
      trace_operator("FusedMatmul", std::move(ins), attrs, {out}, std::move(run))[0]);
}

/// A convolution over a symbolic batch (a shape-generic graph) and its epilogue chain `steps`
/// (possibly none): at each run the symbols other than the batch's (channels, image sizes) take
/// their values, the chain becomes an epilogue over the batch's symbols (kept per those values),
/// and the template built once for every batch runs it (ops::conv2d_symbolic_batch). Where that
/// does not serve, the convolution runs per shape with the chain fused where it fits.
HIDET_INLINE Tensor symbolic_fused_conv(const Tensor &x, const Tensor &w,
                                        const std::optional<Tensor> &bias,
                                        const std::vector<Tensor> &extras,
                                        std::vector<EpilogueStep> steps, const TensorMeta &anchor,
                                        const TensorMeta &out, const std::string &conv_attrs,
                                        bool nhwc) {
  std::vector<Tensor> ins{x, w};
  if (bias) ins.push_back(*bias);
  ins.insert(ins.end(), extras.begin(), extras.end());
  const Dim batch = x.sym_shape().at(0);
  const ConvAttrs conv(conv_attrs);
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
  const std::string name =
      steps.empty() ? (nhwc ? "Conv2dNhwc" : "Conv2d") : (nhwc ? "FusedConv2dNhwc" : "FusedConv2d");
  auto generic_epilogue = [steps, anchor](const SymbolValues &rest) {
    Entry entry;
    if (steps.empty()) {
      entry.fits = true;
      return entry;
    }
    SymShape shape;
    for (const auto &d : anchor.shape)
      shape.push_back(d.substitute(rest));
    std::vector<EpilogueStep> partial = steps;
    for (auto &st : partial) {
      if (st.reshape)
        for (auto &d : st.shape)
          d = d.substitute(rest);
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
      for (const auto &s : batch.symbols())
        rest.erase(s);
      std::string key;
      for (const auto &[k, v] : rest)
        key += str_cat(k, "=", v, ";");
      Entry entry;
      bool found = false;
      {
        std::lock_guard<std::mutex> lock(epilogues->mu);
        if (auto it = epilogues->at.find(key); it != epilogues->at.end())
          entry = it->second, found = true;
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
        if (auto y = ops::conv2d_symbolic_batch(
                in[0], in[1], b, conv.stride, conv.padding, conv.dilation, conv.groups, nhwc,
                entry.epi, entry.epi ? ex : std::vector<Tensor>{}, batch, values))
          return {*y};
    }
    return run_chain_per_shape(
        [&](const std::shared_ptr<const ops::Epilogue> &e, const std::vector<Tensor> &extras_in) {
          return conv.apply(in[0], in[1], b, nhwc, e, extras_in);
        },
        steps, anchor, ex, values);
  };
  return mark_scratch_build(trace_operator(name, std::move(ins), attrs, {out}, std::move(run))[0]);
}
} // namespace detail

HIDET_INLINE FlowGraph fuse_epilogues(const FlowGraph &input) {
  using detail::key_of;
  using detail::TensorKey;
  // Activations written out (GPT-2's gelu: x read three times) become one operator of one input
  // first, so that they can follow their anchor.
  const FlowGraph graph = detail::fuse_task_operators(input, false);
  const detail::Readers readers(graph);

  // An anchor's chain: the epilogue, its extra inputs (old graph tensors) and its operators.
  struct Chain {
    std::shared_ptr<ops::Epilogue> epilogue;
    std::vector<Tensor> extras;
    std::vector<const Operator *> members;
    std::vector<detail::EpilogueStep>
        steps;                  ///< a product of symbolic extents: its chain, built per run
    std::string attrs;          ///< ... and the fused node's attributes
    bool symbolic_conv = false; ///< a convolution of symbolic extents (steps possibly none)
  };
  std::map<const Operator *, Chain> chains;             // by anchor
  std::map<const Operator *, const Operator *> last_of; // last chain member -> its anchor
  std::set<const Operator *> absorbed;                  // anchors and chain members but the last
  std::set<const Operator *> claimed;                   // members of some chain (one chain each: a
                                                        // residual add may follow two anchors)
  // The anchor's chain recorded: the anchor and the members but the last leave the graph, the
  // last becomes the fused node (a convolution without a chain is replaced in place).
  auto add_chain = [&](const Operator *anchor, Chain chain) {
    if (chain.members.empty()) {
      last_of[anchor] = anchor;
    } else {
      absorbed.insert(anchor);
      for (std::size_t i = 0; i + 1 < chain.members.size(); ++i)
        absorbed.insert(chain.members[i]);
      claimed.insert(chain.members.begin(), chain.members.end());
      last_of[chain.members.back()] = anchor;
    }
    chains.emplace(anchor, std::move(chain));
  };
  // A fused group of task-defined operators as one epilogue step: its members by name.
  auto member_of = [](const ops::TaskOperator &task_op) {
    if (task_op.members().size() <= 1) return task_op.name();
    std::string member;
    for (const auto &m : task_op.members())
      member += (member.empty() ? "" : ", ") + m;
    return member;
  };
  for (const auto &op : graph.nodes()) {
    const ops::OpKind kind = ops::kind_of(*op);
    bool matmul = kind == ops::OpKind::Matmul && op->inputs().size() == 2;
    bool conv = (kind == ops::OpKind::Conv2d || kind == ops::OpKind::Conv2dNhwc) &&
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
      while (auto c = readers.single(cur)) {
        if (c->num_outputs() != 1 || claimed.count(c.get())) break;
        detail::EpilogueStep step;
        std::vector<Tensor> extras;
        if (ops::kind_of(*c) == ops::OpKind::Reshape && c->inputs().size() == 1) {
          step.reshape = true;
          step.shape = c->output_metas()[0].shape;
        } else if (auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(c)) {
          const ops::Task &task = task_op->task();
          if (task.inputs.size() != c->inputs().size()) break;
          while (step.j < c->inputs().size() && key_of(c->inputs()[step.j]) != cur)
            ++step.j;
          step.task = task, step.key = task_op->key(), step.member = member_of(*task_op);
          for (std::size_t i = 0; i < c->inputs().size(); ++i)
            if (i != step.j) extras.push_back(c->inputs()[i]);
        } else {
          break;
        }
        for (const auto &t : c->inputs())
          add_symbols(t.sym_shape());
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
      add_chain(op.get(), std::move(chain));
      continue;
    }
    Chain chain;
    ops::Epilogue e = ops::Epilogue::identity(constant_shape(meta.shape), meta.dtype);
    TensorKey cur{op.get(), 0};
    while (auto c = readers.single(cur)) {
      if (c->num_outputs() != 1 || !is_constant_shape(c->output_metas()[0].shape) ||
          claimed.count(c.get()))
        break;
      std::optional<ops::Epilogue> next;
      std::vector<Tensor> extras;
      if (ops::kind_of(*c) == ops::OpKind::Reshape &&
          c->inputs().size() == 1) { // a view, or ops::reshape's copy
        next = e.reshape(constant_shape(c->output_metas()[0].shape));
      } else if (auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(c)) {
        std::size_t j = 0;
        while (j < c->inputs().size() && key_of(c->inputs()[j]) != cur)
          ++j;
        const ops::Task &task = task_op->task();
        if (task.inputs.size() != c->inputs().size()) break;
        next = e.then(task, j, str_cat(task_op->key(), "|", task.str()), member_of(*task_op));
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
    add_chain(op.get(), std::move(chain));
  }

  // The anchor and its chain become one node where the chain ends.
  using detail::GraphRewriter;
  using detail::NodeRewrite;
  return detail::rewrite_nodes(
      graph, [&](const detail::OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
        if (absorbed.count(op.get())) return NodeRewrite::removed();
        auto it = last_of.find(op.get());
        if (it == last_of.end()) return std::nullopt;
        const Chain &chain = chains.at(it->second);
        const Operator &anchor = *it->second;
        const std::vector<Tensor> extras = rw.map(chain.extras);
        const Tensor a = rw.map(anchor.inputs()[0]), b = rw.map(anchor.inputs()[1]);
        std::optional<Tensor> bias;
        if (anchor.inputs().size() > 2) bias = rw.map(anchor.inputs()[2]);
        const bool nhwc = ops::kind_of(anchor) == ops::OpKind::Conv2dNhwc;
        Tensor y;
        if (chain.symbolic_conv)
          y = detail::symbolic_fused_conv(a, b, bias, extras, chain.steps, anchor.output_metas()[0],
                                          op->output_metas()[0], chain.attrs, nhwc);
        else if (!chain.steps.empty())
          y = detail::symbolic_fused_matmul(a, b, extras, chain.steps, anchor.output_metas()[0],
                                            op->output_metas()[0], chain.attrs);
        else if (ops::kind_of(anchor) == ops::OpKind::Matmul)
          y = ops::matmul(a, b, chain.epilogue, extras);
        else
          y = detail::ConvAttrs(anchor.attrs()).apply(a, b, bias, nhwc, chain.epilogue, extras);
        std::const_pointer_cast<Operator>(y.trace().op)->set_origin(op->origin_or_self());
        return y;
      });
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
