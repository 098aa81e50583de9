// Definitions for hidet/ops/schedule_row.hpp.
#pragma once

#include "hidet/ops/schedule_row.hpp"

#include <set>

#include "hidet/ir/equal.hpp"
#include "hidet/lang/primitives/memory.hpp"
#include "hidet/ops/schedule_reduce.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

namespace row_detail {
/// Inlines element-wise definitions into a value over the placeholders, keeping reads of inputs,
/// of reductions, and of the definitions in `keep` read at (row, column). Records in `uses` the
/// phases that read each definition at (row, column); clears `ok` on a read of a reduction at
/// another row.
class RowInliner : public ir::IRMutator {
public:
  struct Ctx {
    const std::map<const ir::VarNode *, const TensorNode *> &by_buf;
    const RowResident &r;
    const std::set<const TensorNode *> &keep;
    std::map<const TensorNode *, std::set<int>> &uses;
    int phase = 0;
    bool ok = true;
  };
  RowInliner(Ctx &c, std::map<const ir::VarNode *, ir::Expr> subst)
      : c_(c), subst_(std::move(subst)) {}
  using ir::IRMutator::mutate;

  /// Whether index k of a read is row placeholder k: the placeholder itself, or 0 on an axis of
  /// extent 1 (where broadcasting writes the index as the constant).
  static bool row_index(const RowResident &r, std::size_t k, const ir::Expr &i) {
    if (is_var(i, r.rv[k].get())) return true;
    std::int64_t z = -1;
    const Dim &d = r.out->shape[k];
    return d.is_constant() && d.value() == 1 && ir::as_const_int(i, z) && z == 0;
  }

  /// Whether idx is (row placeholders..., column placeholder).
  static bool at_row_column(const RowResident &r, const std::vector<ir::Expr> &idx) {
    if (idx.size() != r.rv.size() + 1 || !is_var(idx.back(), r.jv.get())) return false;
    for (std::size_t k = 0; k < r.rv.size(); ++k)
      if (!row_index(r, k, idx[k])) return false;
    return true;
  }

protected:
  ir::Expr mutate_Var(const ir::Expr &e, const ir::VarNode *v) override {
    auto it = subst_.find(v);
    return it == subst_.end() ? e : it->second;
  }
  ir::Expr mutate_TensorElement(const ir::Expr &e, const ir::TensorElementNode *n) override {
    std::vector<ir::Expr> idx;
    for (auto &i : n->indices)
      idx.push_back(mutate(i));
    auto it = c_.by_buf.find(n->base.get());
    if (it == c_.by_buf.end()) {
      c_.ok = false;
      return e;
    }
    const TensorNode *t = it->second;
    if (t->kind == TensorNode::Kind::Reduce) {
      // Only the row's own result: m[rows...] or m[rows..., 0].
      bool own = idx.size() >= c_.r.rv.size();
      for (std::size_t k = 0; own && k < c_.r.rv.size(); ++k)
        own = row_index(c_.r, k, idx[k]);
      std::int64_t z = -1;
      if (own && idx.size() == c_.r.rv.size() + 1) own = ir::as_const_int(idx.back(), z) && z == 0;
      c_.ok = c_.ok && own;
    }
    if (t->kind != TensorNode::Kind::Compute)
      return ir::TensorElementNode::make(n->base, std::move(idx), e->loc);
    if (t == c_.r.out) {
      c_.ok = false;
      return e;
    }
    if (t->shape == c_.r.out->shape && at_row_column(c_.r, idx)) {
      c_.uses[t].insert(c_.phase);
      if (c_.keep.count(t)) return ir::TensorElementNode::make(n->base, std::move(idx), e->loc);
    }
    std::map<const ir::VarNode *, ir::Expr> s;
    for (std::size_t k = 0; k < t->axes.size(); ++k)
      s[t->axes[k].get()] = idx[k];
    return RowInliner(c_, std::move(s)).mutate(t->value);
  }

private:
  Ctx &c_;
  std::map<const ir::VarNode *, ir::Expr> subst_;
};

/// All reads in `e`.
HIDET_INLINE std::vector<ir::Expr> reads_of(const ir::Expr &e) {
  struct Collect : ir::IRVisitor {
    std::vector<ir::Expr> reads;
    void visit_TensorElement(const ir::TensorElementNode *n) override {
      reads.push_back(ir::TensorElementNode::make(n->base, n->indices, n->loc));
      ir::IRVisitor::visit_TensorElement(n);
    }
  } c;
  c.visit(e);
  return c.reads;
}
} // namespace row_detail

HIDET_INLINE std::optional<RowResident> analyze_row_resident(const Task &task, int threads_per_row) {
  using row_detail::RowInliner;
  if (task.outputs.size() != 1) return std::nullopt;
  RowResident r;
  r.out = &task.outputs[0].node();
  const SymShape &S = r.out->shape;
  if (r.out->kind != TensorNode::Kind::Compute || S.empty() || !S.back().is_constant() || S.back().value() < 1)
    return std::nullopt;
  r.n = S.back().value();
  SymShape lead(S.begin(), S.end() - 1), keep_shape = lead;
  r.rows = sym_numel(lead);
  if (r.rows.is_constant() && r.rows.value() < 1) return std::nullopt;
  keep_shape.push_back(1);
  auto order = topo_order(task.outputs);
  std::map<const ir::VarNode *, const TensorNode *> by_buf;
  for (auto *t : order) {
    by_buf[t->buf.get()] = t;
    if (t->kind != TensorNode::Kind::Reduce) continue;
    if (is_arg_reduce(t->reduce_kind) || t->rextents != SymShape{Dim(r.n)} ||
        (t->shape != lead && t->shape != keep_shape))
      return std::nullopt;
    r.reduces.push_back(t);
  }
  if (r.reduces.empty()) return std::nullopt;
  for (std::size_t k = 0; k < lead.size(); ++k)
    r.rv.push_back(ir::make_var(ir::scalar_type(dtypes::i32), str_cat("row", k)));
  r.jv = ir::make_var(ir::scalar_type(dtypes::i32), "col");
  int P = int(r.reduces.size());

  // The value of each phase over the placeholders, inlining all but the definitions in `keep`.
  auto phase_subst = [&](int p) {
    std::map<const ir::VarNode *, ir::Expr> s;
    const TensorNode *t = p < P ? r.reduces[std::size_t(p)] : r.out;
    for (std::size_t k = 0; k < lead.size(); ++k)
      s[t->axes[k].get()] = r.rv[k];
    if (p < P) {
      if (t->shape.size() > lead.size()) s[t->axes.back().get()] = ir::int32(0);
      s[t->raxes[0].get()] = r.jv;
    } else {
      s[t->axes.back().get()] = r.jv;
    }
    return s;
  };
  std::set<const TensorNode *> keep;
  std::map<const TensorNode *, std::set<int>> uses;
  RowInliner::Ctx ctx{by_buf, r, keep, uses};
  for (int p = 0; p <= P; ++p) {
    ctx.phase = p;
    const TensorNode *t = p < P ? r.reduces[std::size_t(p)] : r.out;
    (void)RowInliner(ctx, phase_subst(p)).mutate(t->value);
  }
  if (!ctx.ok) return std::nullopt;
  // Definitions read at (row, column) by two or more phases are computed once into registers.
  for (auto &[t, ps] : uses)
    if (ps.size() >= 2) keep.insert(t);
  std::map<const TensorNode *, std::set<int>> uses2;
  RowInliner::Ctx ctx2{by_buf, r, keep, uses2};
  for (int p = 0; p <= P; ++p) {
    ctx2.phase = p;
    const TensorNode *t = p < P ? r.reduces[std::size_t(p)] : r.out;
    r.phase_value.push_back(RowInliner(ctx2, phase_subst(p)).mutate(t->value));
  }
  for (auto *t : order) {
    if (!keep.count(t)) continue;
    std::map<const ir::VarNode *, ir::Expr> s;
    for (std::size_t k = 0; k < lead.size(); ++k)
      s[t->axes[k].get()] = r.rv[k];
    s[t->axes.back().get()] = r.jv;
    RowCache c;
    c.node = t;
    c.first_phase = *uses.at(t).begin();
    c.value = RowInliner(ctx2, s).mutate(t->value);
    r.caches.push_back(c);
  }
  if (!ctx2.ok) return std::nullopt;

  // Reads of inputs along the row: x[lead..., column] with the lead free of the column. Each
  // distinct one becomes a register array, loaded in the first phase that reads it.
  auto scan = [&](const ir::Expr &value, int phase) {
    for (auto &e : row_detail::reads_of(value)) {
      auto *n = e.as<ir::TensorElementNode>();
      const TensorNode *t = by_buf.at(n->base.get());
      if (t->kind != TensorNode::Kind::Input) continue;
      bool row_read = !n->indices.empty() && is_var(n->indices.back(), r.jv.get());
      for (std::size_t k = 0; row_read && k + 1 < n->indices.size(); ++k)
        row_read =
            !mentions(n->indices[k], r.jv.get()) && row_detail::reads_of(n->indices[k]).empty();
      if (!row_read) {
        // A reduction must read its row from registers; the output phase may read anything.
        bool along = false;
        for (auto &i : n->indices)
          along = along || mentions(i, r.jv.get());
        if (along && phase < P) return false;
        continue;
      }
      bool found = false;
      for (auto &c : r.caches)
        if (c.node->kind == TensorNode::Kind::Input && ir::structural_equal(c.read, e)) {
          c.first_phase = std::min(c.first_phase, phase);
          found = true;
        }
      if (!found) r.caches.push_back(RowCache{t, e, {}, phase});
    }
    return true;
  };
  for (int p = 0; p <= P; ++p)
    if (!scan(r.phase_value[std::size_t(p)], p)) return std::nullopt;
  for (std::size_t i = 0; i < r.caches.size(); ++i) {
    if (r.caches[i].node->kind != TensorNode::Kind::Compute) continue;
    ir::Expr value = r.caches[i].value; // scan() appends to r.caches
    if (!scan(value, r.caches[i].first_phase)) return std::nullopt;
  }

  // Vector width: 16 bytes of the widest loaded or stored dtype, when every row starts aligned.
  std::size_t widest = r.out->dtype.nbytes();
  for (auto &c : r.caches)
    if (c.node->kind == TensorNode::Kind::Input) widest = std::max(widest, c.node->dtype.nbytes());
  r.V = int(std::max<std::size_t>(1, 16 / widest));
  auto vec_ok = [&](DataType d, const Dim &last) {
    std::size_t b = d.nbytes() * std::size_t(r.V);
    return (b == 4 || b == 8 || b == 16) && last.is_constant() && last.value() % r.V == 0;
  };
  bool vec = r.V > 1 && vec_ok(r.out->dtype, r.n);
  for (auto &c : r.caches)
    if (c.node->kind == TensorNode::Kind::Input)
      vec = vec && vec_ok(c.node->dtype, c.node->shape.back());
  if (!vec) r.V = 1;

  // Threads per row: the fewest (from a warp) that keep the registers within budget.
  std::int64_t chunks = (r.n + r.V - 1) / r.V;
  int held = 0, widest_array = 0;
  for (auto &c : r.caches) {
    int b = int(c.node->dtype.nbytes()) * r.V;
    widest_array = std::max(widest_array, b);
    if (c.first_phase < P) held += b;
  }
  if (threads_per_row > 0) {
    r.T = threads_per_row;
    r.K = int((chunks + r.T - 1) / r.T);
    if (r.K > 32) return std::nullopt;
  } else if (chunks < 32) {
    // A short row: the fewest threads (a power of two below a warp) that give each one chunk, so
    // that a warp holds 32 / T rows instead of leaving lanes idle (ConvNeXt's layer norm over 96
    // f16 channels is 12 chunks: 12 of a warp's 32 lanes worked before).
    r.T = int(pow2_ceil(chunks));
    r.K = 1;
  } else {
    for (r.T = 32;; r.T *= 2) {
      r.K = int((chunks + r.T - 1) / r.T);
      if (r.K <= 32 && r.K * widest_array <= kRowArrayBytes && r.K * held <= kRowResidentBytes)
        break;
      if (r.T == kRowMaxThreads) return std::nullopt;
    }
  }
  r.rows_per_block = std::max(1, 256 / r.T);
  return r;
}

HIDET_INLINE void emit_row_resident(const RowResident &r, const Task &task,
                                    const std::vector<ir::Var> &params) {
  using namespace hidet::lang;
  const TensorNode &out = *r.out;
  int P = int(r.reduces.size()), T = r.T, K = r.K, V = r.V, RPB = r.rows_per_block;
  std::int64_t chunks = (r.n + V - 1) / V;
  bool partial_rows = !r.rows.is_constant() || r.rows.value() % RPB != 0, partial_chunks = chunks % T != 0;
  const Expr rows_e = dim_expr(r.rows);
  attrs.cuda.grid_dim = blocks_for(r.rows, RPB);
  attrs.cuda.block_dim = T * RPB;
  std::map<const ir::VarNode *, ir::Var> param_of;
  for (std::size_t i = 0; i < task.inputs.size(); ++i)
    param_of[task.inputs[i].node().buf.get()] = params[i];
  const ir::Var &y = params.back();

  Var tid = threadIdx.x;
  Var lane = RPB == 1 ? tid : Var(tid % T);
  Expr group = RPB == 1 ? Expr(0) : Expr(tid / T); // the block's row this thread works on
  Var row = RPB == 1 ? Var(blockIdx.x) : Var(blockIdx.x * RPB + group);
  Var row_c = partial_rows ? Var(min(row, rows_e - 1)) : row;
  SymShape lead(out.shape.begin(), out.shape.end() - 1);
  auto ridx = unravel(row_c.ir(), lead);
  std::map<const ir::VarNode *, ir::Expr> row_subst;
  std::vector<ir::Expr> row_vars;
  for (std::size_t k = 0; k < lead.size(); ++k) {
    row_vars.push_back(let(dtypes::i32, ridx[k], "i").ir());
    row_subst[r.rv[k].get()] = row_vars.back();
  }

  std::vector<lang::Tensor> regs;
  for (std::size_t i = 0; i < r.caches.size(); ++i)
    regs.push_back(
        register_tensor(TensorSpec(r.caches[i].node->dtype, {ir::int32(K), ir::int32(V)}),
                        str_cat(r.caches[i].node->name, "_row")));
  std::map<const TensorNode *, ir::Expr> finished; // reduction -> its value (a scalar register)

  // The value `e` at chunk k, element v: placeholders substituted, reads from registers.
  auto at = [&](const ir::Expr &e, const Expr &cc, const Expr &k, const Expr &v) {
    auto s = row_subst;
    s[r.jv.get()] = (cc * V + v).ir();
    auto rewrite = [&](const ir::Expr &read, const std::vector<ir::Expr> &idx) -> ir::Expr {
      auto *n = read.as<ir::TensorElementNode>();
      for (std::size_t i = 0; i < r.caches.size(); ++i) {
        const RowCache &c = r.caches[i];
        bool hit = c.node->kind == TensorNode::Kind::Input ? ir::structural_equal(c.read, read)
                                                           : c.node->buf.get() == n->base.get();
        if (hit) return lang::Element(regs[i].var(), {k.ir(), v.ir()}, {}).to_ir({});
      }
      if (auto f = param_of.find(n->base.get()); f != param_of.end())
        return ir::TensorElementNode::make(f->second, idx, read->loc);
      for (auto *t : r.reduces)
        if (t->buf.get() == n->base.get()) {
          HIDET_ASSERT(finished.count(t), "row schedule: reduction '", t->name,
                       "' read before it is computed");
          return finished.at(t);
        }
      HIDET_ASSERT(false, "row schedule: unexpected read of '", n->base->hint, "'");
      return {};
    };
    return ReadRewriter(std::move(s), rewrite).mutate(e);
  };
  // Chunk k of this thread: c = lane + k * T, clamped to the last chunk (so every load is in
  // bounds); `valid` is false for the clamped copies.
  auto chunk = [&](const Var &k) { return Var(lane + k * T); };
  auto clamp = [&](const Var &c) { return partial_chunks ? Var(min(c, int(chunks - 1))) : c; };
  // Loads chunk k of the input caches first read in `phase`.
  auto load = [&](int phase, const Var &k, const Var &cc) {
    for (std::size_t i = 0; i < r.caches.size(); ++i) {
      const RowCache &c = r.caches[i];
      if (c.node->kind != TensorNode::Kind::Input || c.first_phase != phase) continue;
      auto *n = c.read.as<ir::TensorElementNode>();
      std::vector<ir::Expr> idx;
      for (std::size_t d = 0; d + 1 < n->indices.size(); ++d)
        idx.push_back(at(n->indices[d], cc, k, Expr(0)));
      idx.push_back((cc * V).ir());
      lang::Element src(param_of.at(n->base.get()), idx, {});
      if (V > 1)
        load_vector(regs[i][k][0], src, int(c.node->dtype.nbytes()) * V);
      else
        regs[i][k][0] = Operand::of(src.to_ir({}), {});
    }
  };
  // Computes chunk k of the computed caches first read in `phase`.
  auto compute_caches = [&](int phase, const Var &k, const Var &cc) {
    for (std::size_t i = 0; i < r.caches.size(); ++i) {
      const RowCache &c = r.caches[i];
      if (c.node->kind != TensorNode::Kind::Compute || c.first_phase != phase) continue;
      for_(range(V).unroll(),
           [&](Var v) { regs[i][k][v] = Operand::of(at(c.value, cc, k, v), {}); });
    }
  };

  for (int p = 0; p < P; ++p) {
    const TensorNode &red = *r.reduces[std::size_t(p)];
    ReduceKind kind = red.reduce_kind;
    ir::Expr init = reduce_init(kind, red.acc_dtype);
    for_(range(K).unroll(), [&](Var k) { load(p, k, clamp(chunk(k))); });
    Acc acc{let(red.acc_dtype, init, "acc"), std::nullopt};
    for_(range(K).unroll(), [&](Var k) {
      Var c = chunk(k);
      Var cc = clamp(c);
      compute_caches(p, k, cc);
      for_(range(V).unroll(), [&](Var v) {
        Var x = let(red.acc_dtype, at(r.phase_value[std::size_t(p)], cc, k, v), "x");
        combine(kind, acc, partial_chunks ? Expr(select(c < int(chunks), x, Expr(init))) : Expr(x),
                nullptr);
      });
    });
    warp_reduce(kind, acc, std::min(T, 32)); // (below a warp: the butterfly stays within the row's T lanes)
    if (T > 32) {
      lang::Tensor part =
          shared_tensor(TensorSpec(red.acc_dtype, {ir::int32(RPB), ir::int32(T / 32)}),
                        str_cat(red.name, "_warps"));
      if_(lane % 32 == 0, [&] { part[group][lane / 32] = acc.v; });
      syncthreads();
      acc.v = Operand::of(init, {});
      for_(range(T / 32).unroll(),
           [&](Var w) { combine(kind, acc, Expr(part[group][w]), nullptr); });
    }
    finished[&red] = let(red.dtype, reduce_finish(kind, acc, r.n, red.dtype), "red").ir();
  }

  std::optional<lang::Tensor> stage;
  if (V > 1) stage = register_tensor(TensorSpec(out.dtype, {ir::int32(V)}), "y_row");
  for_(range(K).unroll(), [&](Var k) {
    Var c = chunk(k);
    Var cc = clamp(c);
    load(P, k, cc);
    compute_caches(P, k, cc);
    Expr ok = Expr(true);
    if (partial_rows) ok = ok && row < rows_e;
    if (partial_chunks) ok = ok && c < int(chunks);
    auto out_idx = [&](const Expr &col) {
      auto idx = row_vars;
      idx.push_back(col.ir());
      return idx;
    };
    if (V > 1) {
      for_(range(V).unroll(), [&](Var v) {
        (*stage)[v] = Operand::of(at(r.phase_value[std::size_t(P)], cc, k, v), {});
      });
      if_(ok, [&] {
        store_vector(lang::Element(y, out_idx(c * V), {}), (*stage)[0],
                     int(out.dtype.nbytes()) * V);
      });
    } else {
      ir::Expr value = at(r.phase_value[std::size_t(P)], cc, k, Expr(0));
      if_(ok, [&] { store(y, out_idx(c), value); });
    }
  });
}

HIDET_INLINE std::optional<Plan> schedule_row_resident(const Task &task, int threads_per_row) {
  auto r = analyze_row_resident(task, threads_per_row);
  if (!r) return std::nullopt;
  Plan plan;
  plan.module = lang::script_module(task.name);
  plan.symbols = task_symbols(task);
  std::vector<lang::ParamSpec> specs;
  std::vector<int> args;
  for (std::size_t i = 0; i < task.inputs.size(); ++i) {
    const auto &n = task.inputs[i].node();
    PlanBuffer b{PlanBuffer::Role::Input, int(i), n.name, n.shape, n.dtype};
    b.align = int(n.dtype.nbytes()) * r->V;
    plan.buffers.push_back(b);
    specs.push_back(param_spec(n.name, n.dtype, n.shape));
    args.push_back(int(i));
  }
  PlanBuffer ob{PlanBuffer::Role::Output, 0, r->out->name, r->out->shape, r->out->dtype};
  ob.align = int(r->out->dtype.nbytes()) * r->V;
  plan.buffers.push_back(ob);
  specs.push_back(param_spec("out", r->out->dtype, r->out->shape));
  args.push_back(int(task.inputs.size()));
  std::string kname = str_cat(task.name, "_rows");
  define_kernel(plan.module, kname, specs,
                [&](const std::vector<ir::Var> &params) { emit_row_resident(*r, task, params); }, plan.symbols);
  plan.steps.push_back({kname, args, sym_numel(r->out->shape)});
  return plan;
}

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"
