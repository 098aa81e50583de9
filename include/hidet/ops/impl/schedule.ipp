// Definitions for hidet/ops/schedule.hpp.
#pragma once

#include "hidet/ops/schedule.hpp"

#include <functional>
#include <map>

#include "hidet/ops/schedule_injective.hpp"
#include "hidet/ops/schedule_reduce.hpp"
#include "hidet/ops/schedule_row.hpp"

namespace hidet::ops {

HIDET_INLINE Plan schedule_materialized(const Task &task) {
  Plan plan;
  plan.module = lang::script_module(task.name);
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
  for (auto *n : order) {
    if (n->kind == TensorNode::Kind::Input && !buffer_of.count(n))
      throw ValueError(str_cat("task '", task.name, "': the definition reads tensor '", n->name,
                               "', which is not one of the task's inputs"));
    if (n->kind == TensorNode::Kind::Reduce && !buffer_of.count(n))
      buffer_of[n] = add_buffer({PlanBuffer::Role::Temp, 0, n->name, n->shape, n->dtype});
  }
  std::map<const ir::VarNode *, const TensorNode *> inlined;
  for (auto *n : order)
    if (!buffer_of.count(n)) inlined[n->buf.get()] = n;

  int kernel_id = 0;
  for (auto *n : order) {
    if (n->kind == TensorNode::Kind::Input) continue;
    if (!buffer_of.count(n)) continue;
    // The materialized tensors this node reads, through inlined computes.
    std::vector<const TensorNode *> reads;
    std::function<void(const TensorNode *)> collect = [&](const TensorNode *t) {
      for (auto &d : t->deps) {
        if (buffer_of.count(d.get())) {
          if (std::find(reads.begin(), reads.end(), d.get()) == reads.end()) reads.push_back(d.get());
        } else {
          collect(d.get());
        }
      }
    };
    collect(n);
    std::vector<lang::ParamSpec> specs;
    std::vector<int> args;
    for (auto *r : reads) {
      specs.push_back(detail::param_spec(r->name, r->dtype, r->shape));
      args.push_back(buffer_of[r]);
    }
    std::string kname = str_cat(task.name, "_", kernel_id++);
    std::int64_t work = shape_numel(n->shape);
    if (n->kind == TensorNode::Kind::Compute) {
      specs.push_back(detail::param_spec("out", n->dtype, n->shape));
      args.push_back(buffer_of[n]);
      detail::define_kernel(plan.module, kname, specs, [&](const std::vector<ir::Var> &params) {
        detail::emit_injective(*n, params, reads, inlined);
      });
      plan.steps.push_back({kname, args, work});
      continue;
    }
    // A reduction: decide the schedule from the inlined value.
    std::map<const ir::VarNode *, ir::Var> pmap_probe;
    for (auto *r : reads) pmap_probe[r->buf.get()] = r->buf;
    detail::Inliner probe(pmap_probe, inlined, {});
    auto s = detail::choose_reduce_schedule(*n, probe.mutate(n->value));
    bool arg = is_arg_reduce(n->reduce_kind);
    int pv = -1, pi = -1;
    Shape pshape{work * s.splits};
    if (s.splits > 1) {
      pv = add_buffer({PlanBuffer::Role::Temp, 0, n->name + "_partial", pshape, n->acc_dtype});
      if (arg) pi = add_buffer({PlanBuffer::Role::Temp, 0, n->name + "_partial_index", pshape, dtypes::i64});
    }
    auto specs1 = specs;
    auto args1 = args;
    if (s.splits > 1) {
      specs1.push_back(detail::param_spec("partial", n->acc_dtype, pshape));
      args1.push_back(pv);
      if (arg) specs1.push_back(detail::param_spec("partial_index", dtypes::i64, pshape)), args1.push_back(pi);
    } else {
      specs1.push_back(detail::param_spec("out", n->dtype, n->shape));
      args1.push_back(buffer_of[n]);
    }
    detail::define_kernel(plan.module, kname, specs1, [&](const std::vector<ir::Var> &params) {
      std::map<const ir::VarNode *, ir::Var> pmap;
      for (std::size_t i = 0; i < reads.size(); ++i) pmap[reads[i]->buf.get()] = params[i];
      ir::Var out, pvv, piv;
      if (s.splits > 1) {
        pvv = params[reads.size()];
        if (arg) piv = params[reads.size() + 1];
      } else {
        out = params.back();
      }
      if (s.row) detail::emit_row_reduce(*n, s, pmap, inlined, out, pvv, piv);
      else detail::emit_column_reduce(*n, s, pmap, inlined, out, pvv, piv);
    });
    plan.steps.push_back({kname, args1, work});
    if (s.splits > 1) {
      std::string k2 = str_cat(task.name, "_", kernel_id++);
      std::vector<lang::ParamSpec> specs2{detail::param_spec("partial", n->acc_dtype, pshape)};
      std::vector<int> args2{pv};
      if (arg) specs2.push_back(detail::param_spec("partial_index", dtypes::i64, pshape)), args2.push_back(pi);
      specs2.push_back(detail::param_spec("out", n->dtype, n->shape));
      args2.push_back(buffer_of[n]);
      detail::define_kernel(plan.module, k2, specs2, [&](const std::vector<ir::Var> &params) {
        detail::emit_combine_partials(*n, s, params[0], arg ? params[1] : ir::Var(), params.back());
      });
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
