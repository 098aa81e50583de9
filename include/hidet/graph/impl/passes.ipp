// Definitions for hidet/graph/passes.hpp: the verifier and the pipeline (optimize() and its
// PassContext instruments). The passes are defined by family: passes_rewrite.ipp (algebraic
// rewrites), passes_siblings.ipp (sibling products and slices), passes_layout.ipp (layout and
// precision) and passes_fusion.ipp (fusion).
#pragma once

#include "hidet/graph/passes.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "hidet/graph/detail/tensor_key.hpp"
#include "hidet/graph/shape_dispatch.hpp"
#include "hidet/ops/cache.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

HIDET_INLINE void verify(const FlowGraph &graph) {
  using detail::key_of;
  std::map<const Operator *, std::size_t> position;
  std::set<detail::TensorKey> inputs;
  for (const auto &x : graph.inputs())
    inputs.insert(key_of(x));
  auto meta_str = [](const SymShape &s, DataType d) { return str_cat(d.name(), sym_shape_str(s)); };
  auto check_tensor = [&](const Tensor &t, const std::string &where) {
    if (!t.defined())
      throw ValueError(str_cat("invalid graph: ", where, " is an undefined tensor"));
    if (!t.is_symbolic()) return; // a constant
    auto tr = t.trace();
    if (!tr) {
      if (!inputs.count(key_of(t)))
        throw ValueError(
            str_cat("invalid graph: ", where, " is a symbolic tensor that is not a graph input"));
      return;
    }
    auto it = position.find(tr.op.get());
    if (it == position.end())
      throw ValueError(str_cat("invalid graph: ", where, " is made by ", tr.op->name(),
                               ", which is not an earlier node"));
    if (tr.index < 0 || tr.index >= tr.op->num_outputs())
      throw ValueError(str_cat("invalid graph: ", where, " is output ", tr.index, " of node ",
                               it->second, " (", tr.op->name(), "), which has ",
                               tr.op->num_outputs()));
    const TensorMeta &m = tr.op->output_metas()[std::size_t(tr.index)];
    if (m.dtype != t.dtype() || !(m.shape == t.sym_shape()))
      throw ValueError(str_cat("invalid graph: ", where, " is ", meta_str(t.sym_shape(), t.dtype()),
                               " but node ", it->second, " (", tr.op->name(), ") makes ",
                               meta_str(m.shape, m.dtype)));
  };
  const auto &nodes = graph.nodes();
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Operator &op = *nodes[k];
    std::string node = str_cat("node ", k, " (", op.name(), ")");
    if (position.count(&op)) throw ValueError(str_cat("invalid graph: ", node, " appears twice"));
    for (std::size_t i = 0; i < op.inputs().size(); ++i)
      check_tensor(op.inputs()[i], str_cat("input ", i, " of ", node));
    if (auto task_op = dynamic_cast<const ops::TaskOperator *>(&op)) {
      const ops::Task &task = task_op->task();
      if (task.inputs.size() != op.inputs().size() ||
          task.outputs.size() != std::size_t(op.num_outputs()))
        throw ValueError(str_cat("invalid graph: ", node, " has ", op.inputs().size(),
                                 " inputs and ", op.num_outputs(), " outputs but its task ",
                                 task.inputs.size(), " and ", task.outputs.size()));
      for (std::size_t i = 0; i < task.inputs.size(); ++i) {
        const Tensor &t = op.inputs()[i];
        if (t.dtype() != task.inputs[i].dtype() || !(t.sym_shape() == task.inputs[i].sym_shape()))
          throw ValueError(str_cat("invalid graph: input ", i, " of ", node, " is ",
                                   meta_str(t.sym_shape(), t.dtype()), " but its task reads ",
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
      throw ValueError(
          str_cat("invalid graph: output ", i, " holds data (it depends on no input)"));
    check_tensor(graph.outputs()[i], str_cat("output ", i));
  }
  const auto updated = graph.updated_inputs();
  for (std::size_t j = 0; j < graph.updates().size(); ++j) {
    const auto &u = graph.updates()[j];
    check_tensor(u.value, str_cat("the new value of input ", updated[j], " ('", u.input.name(), "')"));
    if (u.value.dtype() != u.input.dtype() || !(u.value.sym_shape() == u.input.sym_shape()))
      throw ValueError(str_cat("invalid graph: the new value of input ", updated[j], " is ",
                               meta_str(u.value.sym_shape(), u.value.dtype()), " but the input is ",
                               meta_str(u.input.sym_shape(), u.input.dtype())));
  }
}

namespace detail {
inline void save_graph(const PassContext &ctx, const std::string &stem, const FlowGraph &g) {
  if (ctx.save_graph_dir.empty()) return;
  std::filesystem::path dir(ctx.save_graph_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const auto &[ext, text] :
       {std::pair<std::string, std::string>{".txt", g.str() + "\n"}, {".dot", g.dot()}}) {
    auto path = dir / (stem + ext);
    std::ofstream f(path);
    f << text;
    if (!f) throw ValueError(str_cat("optimize: cannot write the graph to ", path.string()));
  }
}
} // namespace detail

namespace detail {
using Pass = std::function<FlowGraph(const FlowGraph &)>;
using PassList = std::vector<std::pair<const char *, Pass>>;

/// Appends the passes every pipeline ends with: mixed precision (when `precision`), [layout,] the
/// fusions and the kernel options; checks the reduce precision.
HIDET_INLINE void add_final_passes(PassList &passes, const PassContext &ctx, bool precision,
                                   bool layout) {
  if (precision && ctx.mixed_precision) {
    DataType dt = *ctx.mixed_precision;
    passes.push_back(
        {"convert_precision", [dt](const FlowGraph &g) { return convert_precision(g, dt); }});
  }
  if (ctx.weight_only_int8) passes.push_back({"quantize_weights_int8", &quantize_weights_int8});
  if (layout && ctx.layout_nhwc) passes.push_back({"convert_layout_nhwc", &convert_layout_nhwc});
  passes.push_back({"fuse_epilogues", &fuse_epilogues});
  passes.push_back({"fuse_operators", &fuse_operators});
  if (ctx.reduce_precision && *ctx.reduce_precision != dtypes::f16 &&
      *ctx.reduce_precision != dtypes::f32)
    throw ValueError(str_cat(
        "optimize: reduce precision ", *ctx.reduce_precision,
        " is not supported; use f16 (f16 accumulators in f16 matmuls) or f32 (the default)"));
  option::KernelOptions kopts{ctx.tensor_cores, ctx.parallel_k,
                              ctx.reduce_precision && *ctx.reduce_precision == dtypes::f16};
  if (!(kopts == option::KernelOptions{}))
    passes.push_back({"bind_kernel_options",
                      [kopts](const FlowGraph &g) { return bind_kernel_options(g, kopts); }});
}

/// Runs `passes` in order with ctx's instruments (saved graphs, log lines, verification).
HIDET_INLINE FlowGraph run_passes(const FlowGraph &graph, const PassContext &ctx,
                                  const PassList &passes) {
  detail::save_graph(ctx, "0_input", graph);
  FlowGraph g = graph;
  int k = 0;
  for (const auto &[name, pass] : passes) {
    auto t0 = std::chrono::steady_clock::now();
    FlowGraph next = pass(g);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ctx.verbose)
      std::fprintf(stderr, "hidet: optimize: %s: %zu -> %zu operators in %.1f ms\n", name,
                   g.nodes().size(), next.nodes().size(), ms);
    g = std::move(next);
    detail::save_graph(ctx, str_cat(++k, "_", name), g);
    if (ctx.verify) {
      try {
        verify(g);
      } catch (const ValueError &e) {
        throw ValueError(
            str_cat("optimize: the pass ", name, " left an invalid graph: ", e.what()));
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
  detail::PassList passes = {{"simplify_reshapes", &simplify_reshapes},
                             {"fuse_attention", &fuse_attention},
                             {"eliminate_common_subexpressions", &eliminate_common_subexpressions},
                             {"fold_residual_into_all_reduce", &fold_residual_into_all_reduce},
                             {"fold_conv_batch_norm", &fold_conv_batch_norm},
                             {"merge_sibling_matmuls", &merge_sibling_matmuls},
                             {"merge_row_products", &merge_row_products},
                             {"lift_sibling_slices", &lift_sibling_slices},
                             {"slices_as_views", &slices_as_views}};
  detail::add_final_passes(passes, ctx, true, true);
  return detail::run_passes(graph, ctx, passes);
}

HIDET_INLINE FlowGraph optimize_shape_generic(const FlowGraph &graph, const PassContext &ctx) {
  detail::PassList passes = {{"simplify_reshapes", &simplify_reshapes},
                             {"fuse_attention", &fuse_attention},
                             {"eliminate_common_subexpressions", &eliminate_common_subexpressions},
                             {"fold_residual_into_all_reduce", &fold_residual_into_all_reduce},
                             {"fold_conv_batch_norm", &fold_conv_batch_norm}};
  detail::add_final_passes(passes, ctx, true, true);
  return detail::run_passes(graph, ctx, passes);
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
