// Definitions for hidet/ops/schedule.hpp.
#pragma once

#include "hidet/ops/schedule.hpp"

#include <functional>
#include <map>
#include <set>

#include "hidet/ops/schedule_injective.hpp"
#include "hidet/ops/schedule_reduce.hpp"
#include "hidet/ops/schedule_row.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

HIDET_INLINE Plan schedule_materialized(const Task &task) {
  Plan plan;
  plan.module = lang::script_module(task.name);
  plan.symbols = task_symbols(task);
  const auto &syms = plan.symbols;
  auto order = topo_order(task.outputs);
  std::map<const TensorNode *, int> buffer_of;
  auto add_buffer = [&](PlanBuffer b) {
    plan.buffers.push_back(std::move(b));
    return int(plan.buffers.size()) - 1;
  };
  for (std::size_t i = 0; i < task.inputs.size(); ++i) {
    const auto &n = task.inputs[i].node();
    buffer_of[&n] = add_buffer({PlanBuffer::Role::Input, int(i), n.name, n.shape, n.dtype});
  }
  for (std::size_t i = 0; i < task.outputs.size(); ++i) {
    const auto &n = task.outputs[i].node();
    if (buffer_of.count(&n))
      throw ValueError(str_cat("task '", task.name, "': output ", i, " ('", n.name,
                               "') is an input or another output; outputs must be distinct definitions"));
    buffer_of[&n] = add_buffer({PlanBuffer::Role::Output, int(i), n.name, n.shape, n.dtype});
  }
  for (auto *n : order)
    if (n->kind == TensorNode::Kind::Input && !buffer_of.count(n))
      throw ValueError(str_cat("task '", task.name, "': the definition reads tensor '", n->name,
                               "', which is not one of the task's inputs"));
  // Materialized: inputs, outputs and every reduction; the materialized tensors each one reads
  // (through inlined computes).
  auto materialized = [&](const TensorNode *n) { return buffer_of.count(n) || n->kind == TensorNode::Kind::Reduce; };
  std::map<const TensorNode *, std::vector<const TensorNode *>> reads_of;
  std::map<const TensorNode *, int> readers;
  std::map<const TensorNode *, std::size_t> position;
  for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  for (auto *n : order) {
    if (n->kind == TensorNode::Kind::Input || !materialized(n)) continue;
    auto &reads = reads_of[n];
    std::function<void(const TensorNode *)> collect = [&](const TensorNode *t) {
      for (auto &d : t->deps) {
        if (materialized(d.get())) {
          if (std::find(reads.begin(), reads.end(), d.get()) == reads.end()) reads.push_back(d.get()), ++readers[d.get()];
        } else {
          collect(d.get());
        }
      }
    };
    collect(n);
  }
  std::map<const ir::VarNode *, const TensorNode *> inlined;
  for (auto *n : order)
    if (!materialized(n)) inlined[n->buf.get()] = n;
  // A reduction's finish: an element-wise output that reads a reduction (read by nothing else)
  // only at its own index, and otherwise only tensors ready before the reduction, is evaluated
  // where the reduction stores its result (a mean's division, a bias, an activation): one kernel,
  // and the reduction is never written to memory.
  std::map<const TensorNode *, const TensorNode *> finish_of; // reduction -> output
  std::set<const TensorNode *> finished;                      // outputs computed so
  for (auto *c : order) {
    if (c->kind != TensorNode::Kind::Compute || !buffer_of.count(c)) continue;
    const TensorNode *r = nullptr;
    bool ok = true;
    for (auto *d : reads_of[c])
      if (d->kind == TensorNode::Kind::Reduce) ok = ok && !r, r = d;
    if (!ok || !r || readers[r] != 1 || buffer_of.count(r) || finish_of.count(r) || !(r->shape == c->shape)) continue;
    for (auto *d : reads_of[c]) ok = ok && (d == r || d->kind == TensorNode::Kind::Input || position[d] < position[r]);
    if (!ok) continue;
    std::map<const ir::VarNode *, ir::Var> probe_params;
    for (auto *d : reads_of[c]) probe_params[d->buf.get()] = d->buf;
    ir::Expr value = detail::Inliner(probe_params, inlined, {}).mutate(c->value);
    struct OwnIndex : ir::IRVisitor {
      const TensorNode *r = nullptr, *c = nullptr;
      bool ok = true;
      void visit_TensorElement(const ir::TensorElementNode *n) override {
        if (n->base.get() == r->buf.get()) {
          ok = ok && n->indices.size() == c->axes.size();
          for (std::size_t i = 0; ok && i < n->indices.size(); ++i) ok = detail::is_var(n->indices[i], c->axes[i].get());
        }
        ir::IRVisitor::visit_TensorElement(n);
      }
    } own;
    own.r = r, own.c = c;
    own.visit(value);
    if (own.ok) finish_of[r] = c, finished.insert(c);
  }
  for (auto *n : order)
    if (n->kind == TensorNode::Kind::Reduce && !buffer_of.count(n) && !finish_of.count(n))
      buffer_of[n] = add_buffer({PlanBuffer::Role::Temp, 0, n->name, n->shape, n->dtype});

  int kernel_id = 0;
  for (auto *n : order) {
    if (n->kind == TensorNode::Kind::Input || !materialized(n) || finished.count(n)) continue;
    std::vector<const TensorNode *> reads = reads_of[n];
    const std::size_t own_reads = reads.size();
    // With a fused finish, the kernel (or the combine) also reads what the finish reads and
    // writes the finish's output.
    const TensorNode *fin = finish_of.count(n) ? finish_of[n] : nullptr;
    if (fin)
      for (auto *d : reads_of[fin])
        if (d != n && std::find(reads.begin(), reads.end(), d) == reads.end()) reads.push_back(d);
    const TensorNode *dest = fin ? fin : n;
    // The finish's store: the output's value with the reduction's read replaced by the result.
    auto finish_store = [&inlined, n, fin](std::map<const ir::VarNode *, ir::Var> params, ir::Var out) -> detail::StoreResult {
      if (!fin) return nullptr;
      return [n, fin, params, out, &inlined](const std::vector<ir::Expr> &idx, const ir::Expr &result) {
        lang::Var v = detail::let(n->dtype, result, "red");
        auto ps = params;
        ps[n->buf.get()] = n->buf; // kept as a read, replaced below
        ir::Expr value = detail::Inliner(ps, inlined, {}).mutate(fin->value);
        std::map<const ir::VarNode *, ir::Expr> sub;
        for (std::size_t a = 0; a < fin->axes.size(); ++a) sub[fin->axes[a].get()] = idx[a];
        ir::Expr rv = lang::Expr(v).ir();
        const ir::VarNode *rb = n->buf.get();
        value = detail::ReadRewriter(std::move(sub), [rb, rv](const ir::Expr &e, const std::vector<ir::Expr> &) {
                  return e.as<ir::TensorElementNode>()->base.get() == rb ? rv : ir::Expr();
                }).mutate(value);
        detail::store(out, idx, value);
      };
    };
    std::vector<lang::ParamSpec> specs;
    std::vector<int> args;
    for (auto *r : reads) {
      specs.push_back(detail::param_spec(r->name, r->dtype, r->shape));
      args.push_back(buffer_of[r]);
    }
    std::string kname = str_cat(task.name, "_", kernel_id++);
    Dim work = sym_numel(n->shape);
    if (n->kind == TensorNode::Kind::Compute) {
      specs.push_back(detail::param_spec("out", n->dtype, n->shape));
      args.push_back(buffer_of[n]);
      detail::define_kernel(plan.module, kname, specs, [&](const std::vector<ir::Var> &params) {
        detail::emit_injective(*n, params, reads, inlined);
      }, syms);
      plan.steps.push_back({kname, args, work});
      continue;
    }
    // A reduction: decide the schedule from the inlined value.
    std::map<const ir::VarNode *, ir::Var> pmap_probe;
    for (std::size_t i = 0; i < own_reads; ++i) pmap_probe[reads[i]->buf.get()] = reads[i]->buf;
    detail::Inliner probe(pmap_probe, inlined, {});
    auto s = detail::choose_reduce_schedule(*n, probe.mutate(n->value));
    bool arg = is_arg_reduce(n->reduce_kind);
    int pv = -1, pi = -1;
    SymShape pshape{work * s.splits};
    if (s.splits > 1) {
      pv = add_buffer({PlanBuffer::Role::Temp, 0, n->name + "_partial", pshape, n->acc_dtype});
      if (arg) pi = add_buffer({PlanBuffer::Role::Temp, 0, n->name + "_partial_index", pshape, dtypes::i64});
    }
    // The first kernel reads the reduction's own inputs; the finish's go to the combine when
    // the reduction is split.
    const std::size_t k1_reads = s.splits > 1 ? own_reads : reads.size();
    std::vector<lang::ParamSpec> specs1(specs.begin(), specs.begin() + std::ptrdiff_t(k1_reads));
    std::vector<int> args1(args.begin(), args.begin() + std::ptrdiff_t(k1_reads));
    if (s.splits > 1) {
      specs1.push_back(detail::param_spec("partial", n->acc_dtype, pshape));
      args1.push_back(pv);
      if (arg) specs1.push_back(detail::param_spec("partial_index", dtypes::i64, pshape)), args1.push_back(pi);
    } else {
      specs1.push_back(detail::param_spec("out", dest->dtype, dest->shape));
      args1.push_back(buffer_of[dest]);
    }
    detail::define_kernel(plan.module, kname, specs1, [&](const std::vector<ir::Var> &params) {
      std::map<const ir::VarNode *, ir::Var> pmap;
      for (std::size_t i = 0; i < k1_reads; ++i) pmap[reads[i]->buf.get()] = params[i];
      ir::Var out, pvv, piv;
      if (s.splits > 1) {
        pvv = params[k1_reads];
        if (arg) piv = params[k1_reads + 1];
      } else {
        out = params.back();
      }
      detail::StoreResult st = s.splits > 1 ? nullptr : finish_store(pmap, out);
      if (s.row) detail::emit_row_reduce(*n, s, pmap, inlined, out, pvv, piv, st);
      else detail::emit_column_reduce(*n, s, pmap, inlined, out, pvv, piv, st);
    }, syms);
    plan.steps.push_back({kname, args1, work});
    if (s.splits > 1) {
      std::string k2 = str_cat(task.name, "_", kernel_id++);
      std::vector<lang::ParamSpec> specs2{detail::param_spec("partial", n->acc_dtype, pshape)};
      std::vector<int> args2{pv};
      if (arg) specs2.push_back(detail::param_spec("partial_index", dtypes::i64, pshape)), args2.push_back(pi);
      const std::size_t first_fin = specs2.size();
      for (std::size_t i = own_reads; i < reads.size(); ++i) specs2.push_back(specs[i]), args2.push_back(args[i]);
      specs2.push_back(detail::param_spec("out", dest->dtype, dest->shape));
      args2.push_back(buffer_of[dest]);
      detail::define_kernel(plan.module, k2, specs2, [&](const std::vector<ir::Var> &params) {
        std::map<const ir::VarNode *, ir::Var> pmap;
        for (std::size_t i = own_reads; i < reads.size(); ++i) pmap[reads[i]->buf.get()] = params[first_fin + i - own_reads];
        detail::emit_combine_partials(*n, s, params[0], arg ? params[1] : ir::Var(), params.back(),
                                      finish_store(pmap, params.back()));
      }, syms);
      plan.steps.push_back({k2, args2, work});
    }
  }
  return plan;
}

HIDET_INLINE Plan schedule(const Task &task) {
  if (auto rows = detail::schedule_row_resident(task)) return std::move(*rows);
  return schedule_materialized(task);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
