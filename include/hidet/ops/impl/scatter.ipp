// Definitions for hidet/ops/scatter.hpp.
#pragma once

#include "hidet/ops/scatter.hpp"

#include <functional>
#include <sstream>

#include "hidet/ops/cache.hpp"
#include "hidet/ops/create.hpp"
#include "hidet/ops/schedule_common.hpp"
#include "hidet/runtime/device_errors.hpp"
#include "hidet/util/env.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

HIDET_INLINE const char *scatter_reduce_name(ScatterReduce r) {
  switch (r) {
  case ScatterReduce::None:
    return "none";
  case ScatterReduce::Add:
    return "add";
  case ScatterReduce::Max:
    return "amax";
  case ScatterReduce::Min:
    return "amin";
  }
  return "?";
}

} // namespace hidet::ops

namespace hidet::ops::detail {

/// An error naming `op` and `arg` unless `index` holds integers.
HIDET_INLINE void require_index_dtype(const std::string &op, const std::string &arg,
                                      const Tensor &index) {
  if (!index.dtype().is_integer())
    throw ValueError(str_cat(op, ": ", arg, " must hold integers, got dtype ", index.dtype(),
                             " (shape ", shape_str(index.sym_shape()), ")"));
}

/// On an eager call with `index` in host memory (the cpu device, the emulator): a ValueError naming
/// `op`, `arg` and the first entry outside [-n, n), where n is the extent of `what`.
HIDET_INLINE void check_index_range(const std::string &op, const std::string &arg,
                                    const Tensor &index, std::int64_t n, const std::string &what) {
  if (index.is_symbolic() || !index.is_host_memory() || index.numel() == 0) return;
  // Read where the index lives (host memory: no copy, which a recorded run would take for device
  // work, graph::CompiledGraph::save).
  const void *data = index.data_ptr();
  const Shape s = index.shape();
  std::vector<double> v(std::size_t(index.numel()));
  for (std::size_t f = 0; f < v.size(); ++f)
    v[f] = runtime::detail::element_as_double(data, index.dtype(), std::int64_t(f));
  for (std::size_t f = 0; f < v.size(); ++f) {
    if (v[f] >= double(-n) && v[f] < double(n)) continue;
    Shape at(s.size());
    for (std::size_t d = s.size(), r = f; d-- > 0;)
      at[d] = std::int64_t(r % std::size_t(s[d])), r /= std::size_t(s[d]);
    throw ValueError(str_cat(op, ": ", arg, " holds ", std::int64_t(v[f]), " at position ",
                             shape_str(at), ", out of range for ", what, " of size ", n,
                             "; valid indices are ", -n, " to ", n - 1));
  }
}

/// Whether run_plan checks the indices of updates of cuda tensors in host memory before the
/// kernels run (the default; the emulator's): off ($HIDET_HOST_INDEX_CHECKS=0), only the kernels'
/// report through the device's error record remains, as on a GPU, so the emulator tests that
/// path. Cpu tensors are always checked on the host, except in runs on made-up inputs
/// (runtime::ScratchRuns).
HIDET_INLINE bool host_index_checks() {
  static const bool on = util::env_bool("HIDET_HOST_INDEX_CHECKS", true);
  return on;
}

/// A Plan::check of an update of x (input 0): the entries of input `at[m]` (argument `args[m]`)
/// lie in [-n, n) for n the extent of x on axis `axes[m]` (check_index_range), on every launch.
HIDET_INLINE std::function<void(const std::vector<Tensor> &)>
index_range_check(std::string op, std::vector<std::string> args, std::vector<std::size_t> at,
                  std::vector<int> axes) {
  return [=](const std::vector<Tensor> &in) {
    if (!host_index_checks() && in[0].device().is_cuda()) return;
    if (runtime::ScratchRuns::active()) return; // made-up indices: the kernels skip what is out of range
    for (std::size_t m = 0; m < at.size(); ++m)
      check_index_range(op, args[m], in[at[m]], in[0].shape()[std::size_t(axes[m])],
                        str_cat("axis ", axes[m], " of x"));
  };
}

/// True when extent a is at most b for every value of the symbols (equal, 1, or constants a <= b).
HIDET_INLINE bool extent_at_most(const Dim &a, const Dim &b) {
  return a == b || a == 1 || (a.is_constant() && b.is_constant() && a.value() <= b.value());
}

/// Emits the update of work item g: the kernel's params are the inputs (x first) and then y;
/// `errors` is the device's error record (runtime/device_errors.hpp) for report_bad_indices.
using UpdateBody = std::function<void(const std::vector<ir::Var> &params, const lang::Var &g, const ir::Var &errors)>;

/// The record the update kernels of x report a bad index into: the device's for x on a cuda device
/// (the host reads it at its next call); for x on the cpu, whose indices are always checked on the
/// host before the kernels run, one scratch record that nothing reads.
HIDET_INLINE Tensor error_record_for(const Tensor &x) {
  if (x.device().is_cuda()) return runtime::device_error_record(x.device());
  // Never destroyed: its memory outlives the allocator's teardown at exit.
  static const Tensor *scratch = new Tensor(ops::full(Shape{runtime::kDeviceErrorFields}, 0, dtypes::i64, Device::cpu()));
  return *scratch;
}


/// One index a kernel wraps: its value as read (i64), the extent of its axis and what names it
/// ("index_put: indices[1]").
struct KernelIndex {
  lang::Var raw;
  std::int64_t extent;
  std::string what;
};

/// Emits, for a work item whose indices are not all in range, the record of the first bad one in
/// the device's error record (plain stores, the state last after a system-wide fence: the host
/// reads it without synchronizing). Several bad items may each store; one of them is reported.
HIDET_INLINE void report_bad_indices(const ir::Var &errors, const std::vector<KernelIndex> &indices) {
  using namespace hidet::lang;
  auto i64 = [](std::int64_t v) { return Expr(ir::ConstantNode::make_int(dtypes::i64, v)); };
  auto field = [&](int f) { return lang::Element(errors, {ir::ConstantNode::make_int(dtypes::i32, f)}, {}); };
  auto report = [&](const KernelIndex &k) {
    lang::Element code = field(runtime::kDeviceErrorCode), value = field(runtime::kDeviceErrorValue),
                  extent = field(runtime::kDeviceErrorExtent), state = field(runtime::kDeviceErrorState);
    code = i64(runtime::device_error_code(k.what));
    value = k.raw;
    extent = i64(k.extent);
    threadfence_system();
    state = i64(1);
  };
  std::function<void(std::size_t)> chain = [&](std::size_t m) {
    const KernelIndex &k = indices[m];
    Expr bad = k.raw < i64(-k.extent) || k.raw >= i64(k.extent);
    if (m + 1 == indices.size())
      if_(bad, [&] { report(k); });
    else
      if_(bad, [&] { report(k); }).else_([&] { chain(m + 1); });
  };
  chain(0);
}

/// The plan of an out-of-place update: y = x, then `body` for each g in [0, count) (no kernel for
/// an empty x or no work). The last of `inputs` is the error record (error_record_for(x)).
HIDET_INLINE Plan update_plan(const std::string &op, const std::vector<Tensor> &inputs,
                              const std::vector<std::string> &names, std::int64_t count,
                              const UpdateBody &body) {
  using namespace hidet::lang;
  const Shape xs = inputs[0].shape();
  const DataType dt = inputs[0].dtype();
  const std::int64_t numel = shape_numel(xs);
  Plan plan;
  plan.module = script_module(op);
  std::vector<ParamSpec> specs;
  std::vector<int> args;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    plan.buffers.push_back({PlanBuffer::Role::Input, int(i), names[i],
                            to_sym_shape(inputs[i].shape()), inputs[i].dtype()});
    specs.push_back(param_spec(names[i], inputs[i].dtype(), inputs[i].shape()));
    args.push_back(int(i));
  }
  const int y = int(inputs.size());
  plan.buffers.push_back({PlanBuffer::Role::Output, 0, "y", to_sym_shape(xs), dt});
  specs.push_back(param_spec("y", dt, xs));
  args.push_back(y);
  if (numel > 0) {
    define_kernel(plan.module, op + "_copy", {param_spec("x", dt, xs), param_spec("y", dt, xs)},
                  [&](const std::vector<ir::Var> &p) {
                    attrs.cuda.grid_dim = blocks_for(numel, 256);
                    attrs.cuda.block_dim = 256;
                    Var g = blockIdx.x * 256 + threadIdx.x;
                    if_(g < int(numel), [&] {
                      const std::vector<ir::Expr> i = unravel(g.ir(), xs);
                      store(p[1], i, lang::Element(p[0], i, {}).to_ir({}));
                    });
                  });
    plan.steps.push_back({op + "_copy", {0, y}, numel, true});
  }
  if (count > 0) {
    define_kernel(plan.module, op + "_update", specs, [&](const std::vector<ir::Var> &p) {
      attrs.cuda.grid_dim = blocks_for(count, 256);
      attrs.cuda.block_dim = 256;
      Var g = blockIdx.x * 256 + threadIdx.x;
      std::vector<ir::Var> params(p.begin(), p.end());
      const ir::Var errors = params[params.size() - 2]; // the last input, before y
      params.erase(params.end() - 2);
      if_(g < int(count), [&] { body(params, g, errors); });
    });
    plan.steps.push_back({op + "_update", args, count});
  }
  plan.inplace_input = 0; // y may be x's memory: the copy is skipped, the updates stored in place
  return plan;
}

/// Index value `v` (any integer dtype) of an axis of extent n, negative ones counted from the end,
/// as an i64 variable; `ok` becomes false when it is out of range.
HIDET_INLINE lang::Var wrap_index(const lang::Expr &v, std::int64_t n, lang::Expr &ok) {
  using namespace hidet::lang;
  Var k = cast(v, dtypes::i64);
  Var w = select(k < 0, k + (long long)n, k);
  ok = ok.defined() ? Expr(ok && w >= 0 && w < (long long)n) : Expr(w >= 0 && w < (long long)n);
  return w;
}

/// dst (an element of the output) set to v or combined with it by `reduce` (atomics).
HIDET_INLINE void scatter_combine(ScatterReduce reduce, const lang::Element &dst,
                                  const lang::Var &v) {
  using namespace hidet::lang;
  auto extreme = [&] {
    if (reduce == ScatterReduce::Max)
      atomic_max(dst, v);
    else
      atomic_min(dst, v);
  };
  switch (reduce) {
  case ScatterReduce::None: {
    lang::Element d = dst;
    d = v;
    break;
  }
  case ScatterReduce::Add:
    atomic_add(dst, v);
    break;
  case ScatterReduce::Max:
  case ScatterReduce::Min:
    // A NaN is stored; a maximum or minimum with a NaN keeps it (NaN propagates, as in PyTorch).
    if (dst.dtype().is_float())
      if_(lang::isnan(v), [&] { atomic_exchange(dst, v); }).else_(extreme);
    else
      extreme();
    break;
  }
}

/// An error naming `op` when `reduce` needs atomics that x's dtype has not.
HIDET_INLINE void require_atomic_dtype(const std::string &op, const std::string &what,
                                       const Tensor &x) {
  if (x.dtype().nbytes() < 2 || x.dtype().is_fp8())
    throw ValueError(str_cat(
        op, ": ", what, " on x of dtype ", x.dtype(), " (shape ", shape_str(x.sym_shape()),
        ") needs atomics, which CUDA has for 2, 4 and 8-byte dtypes only; cast x to int32 or "
        "float32 first"));
}

HIDET_INLINE Tensor scatter_unchecked(const Tensor &x, int ax, const Tensor &index,
                                      const Tensor &src, ScatterReduce reduce) {
  const std::string key =
      str_cat("scatter{axis=", ax, ", reduce=", scatter_reduce_name(reduce), "}");
  if (has_symbolic_extents({x, index, src}))
    return mark_inplace_input(trace_symbolic(key, {x, index, src}, x.sym_shape(), x.dtype(),
                                             [=](const std::vector<Tensor> &in) {
                                               return scatter_unchecked(in[0], ax, in[1], in[2], reduce);
                                             }),
                              0);
  const Shape is = index.shape();
  const std::int64_t n = x.shape()[std::size_t(ax)];
  const bool one_value = src.ndim() == 0 && index.ndim() != 0;
  const DataType dt = x.dtype();
  const std::vector<Tensor> inputs{x, index, src, error_record_for(x)};
  return run_plan(
      key,
      [&] {
        Plan plan = update_plan(
            "scatter", inputs, {"x", "index", "src", "errors"}, shape_numel(is),
            [&](const std::vector<ir::Var> &p, const lang::Var &g, const ir::Var &errors) {
              using namespace hidet::lang;
              const std::vector<ir::Expr> at = unravel(g.ir(), is);
              Expr ok;
              Var raw = cast(lang::Element(p[1], at, {}), dtypes::i64);
              Var k = wrap_index(raw, n, ok);
              if_(ok, [&] {
                std::vector<ir::Expr> to = at;
                to[std::size_t(ax)] = cast(k, dtypes::i32).ir();
                Var v = cast(lang::Element(p[2], one_value ? std::vector<ir::Expr>{} : at, {}), dt);
                scatter_combine(reduce, lang::Element(p[3], to, {}), v);
              }).else_([&] { report_bad_indices(errors, {{raw, n, "scatter: index"}}); });
            });
        plan.check = index_range_check("scatter", {"index"}, {1}, {ax});
        return plan;
      },
      inputs)[0];
}

/// index_put with one bool index (a mask over axes first..first+m of x) and values that do not vary
/// along the masked elements: where(mask, values, x), or x + where(mask, values, 0).
HIDET_INLINE Tensor index_put_mask(const Tensor &x, std::size_t first, const Tensor &mask,
                                   const Tensor &values, bool accumulate) {
  const SymShape xs = x.sym_shape(), ms = mask.sym_shape(), vs = values.sym_shape();
  const std::size_t m = ms.size();
  bool fits = first + m <= xs.size();
  for (std::size_t d = 0; fits && d < m; ++d)
    fits = ms[d] == xs[first + d];
  if (!fits)
    throw ValueError(str_cat("index_put: the bool index of shape ", shape_str(ms), " at axis ",
                             first, " must match the extents of x of shape ", shape_str(xs),
                             " from that axis"));
  // The indexed shape is x's with the masked axes replaced by one axis (the selected elements).
  const std::size_t rank = xs.size() - m + 1;
  if (vs.size() > rank)
    throw ValueError(str_cat("index_put: values of shape ", shape_str(vs),
                             " have more axes than the ", rank, " of x of shape ", shape_str(xs),
                             " indexed by a mask of shape ", shape_str(ms)));
  SymShape v(rank - vs.size(), Dim(1));
  v.insert(v.end(), vs.begin(), vs.end());
  if (v[first] != 1)
    throw ValueError(
        str_cat("index_put: values of shape ", shape_str(vs),
                " vary along the elements that the bool index of shape ", shape_str(ms),
                " selects; only values that broadcast over them (a scalar, or one value per "
                "element of the other axes) are supported"));
  SymShape vr(v.begin(), v.begin() + std::ptrdiff_t(first)), mr(first, Dim(1));
  vr.insert(vr.end(), m, Dim(1));
  vr.insert(vr.end(), v.begin() + std::ptrdiff_t(first) + 1, v.end());
  mr.insert(mr.end(), ms.begin(), ms.end());
  mr.insert(mr.end(), xs.size() - first - m, Dim(1));
  const Tensor cond = mask.reshape(mr), val = cast(values.reshape(vr), x.dtype());
  if (accumulate) return add(x, where(cond, val, ops::full(Shape{}, 0, x.dtype(), x.device())));
  return where(cond, val, x);
}

/// index_put with integer index tensors at axes `axes` (validated): see index_put.
HIDET_INLINE Tensor index_put_unchecked(const Tensor &x, const std::vector<int> &axes,
                                        const std::vector<Tensor> &idx, const Tensor &values,
                                        bool accumulate) {
  std::string key = str_cat(
      "index_put{axes=",
      [&] {
        std::ostringstream os;
        print_attr(os, axes);
        return os.str();
      }(),
      ", accumulate=", accumulate ? "true" : "false", "}");
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), idx.begin(), idx.end());
  inputs.push_back(values);
  if (has_symbolic_extents(inputs))
    return mark_inplace_input(
        trace_symbolic(key, inputs, x.sym_shape(), x.dtype(),
                       [=](const std::vector<Tensor> &in) {
                         return index_put_unchecked(in[0], axes, std::vector<Tensor>(in.begin() + 1, in.end() - 1),
                                                    in.back(), accumulate);
                       }),
        0);
  const Shape xs = x.shape();
  Shape b;
  for (const auto &t : idx)
    b = broadcast_shapes("index_put", b, t.shape(), t.dtype(), t.dtype());
  bool adjacent = true;
  for (std::size_t m = 1; m < axes.size(); ++m)
    adjacent = adjacent && axes[m] == axes[m - 1] + 1;
  // The indexed shape: where each of its axes comes from (-1: B's axes, else an axis of x).
  Shape r;
  std::vector<int> from;
  const int b_at = adjacent ? axes[0] : 0;
  for (int d = 0; d < int(xs.size()); ++d) {
    if (d == b_at)
      for (std::size_t k = 0; k < b.size(); ++k)
        r.push_back(b[k]), from.push_back(-1);
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      r.push_back(xs[std::size_t(d)]), from.push_back(d);
  }
  const Shape vs = values.shape();
  bool broadcasts = vs.size() <= r.size();
  for (std::size_t d = 0; broadcasts && d < vs.size(); ++d)
    broadcasts = vs[d] == 1 || vs[d] == r[r.size() - vs.size() + d];
  if (!broadcasts)
    throw ValueError(str_cat("index_put: values of shape ", shape_str(vs),
                             " do not broadcast to the indexed shape ", shape_str(r),
                             " of x of shape ", shape_str(xs)));
  std::vector<std::string> names{"x"};
  for (std::size_t m = 0; m < idx.size(); ++m)
    names.push_back(str_cat("index", m));
  names.push_back("values");
  names.push_back("errors");
  inputs.push_back(error_record_for(x));
  const DataType dt = x.dtype();
  return run_plan(
      key,
      [&] {
        Plan plan = update_plan(
            "index_put", inputs, names, shape_numel(r),
            [&](const std::vector<ir::Var> &p, const lang::Var &g, const ir::Var &errors) {
              using namespace hidet::lang;
              std::vector<ir::Expr> at = unravel(g.ir(), r), to(xs.size());
              std::vector<KernelIndex> wrapped;
              Idx bi;
              for (std::size_t k = 0; k < r.size(); ++k) {
                if (from[k] < 0)
                  bi.push_back(Expr(at[k]));
                else
                  to[std::size_t(from[k])] = at[k];
              }
              Expr ok;
              for (std::size_t m = 0; m < idx.size(); ++m) {
                std::vector<ir::Expr> ii;
                for (auto &e : broadcast_index(idx[m].shape(), bi))
                  ii.push_back(e.ir());
                Var raw = cast(lang::Element(p[1 + m], ii, {}), dtypes::i64);
                Var k = wrap_index(raw, xs[std::size_t(axes[m])], ok);
                to[std::size_t(axes[m])] = cast(k, dtypes::i32).ir();
                wrapped.push_back({raw, xs[std::size_t(axes[m])], str_cat("index_put: indices[", axes[m], "]")});
              }
              Idx ri;
              for (auto &e : at)
                ri.push_back(Expr(e));
              std::vector<ir::Expr> vi;
              for (auto &e : broadcast_index(vs, ri))
                vi.push_back(e.ir());
              if_(ok, [&] {
                Var v = cast(lang::Element(p[p.size() - 2], vi, {}), dt);
                scatter_combine(accumulate ? ScatterReduce::Add : ScatterReduce::None,
                                lang::Element(p.back(), to, {}), v);
              }).else_([&] { report_bad_indices(errors, wrapped); });
            });
        std::vector<std::string> args;
        std::vector<std::size_t> at;
        for (std::size_t m = 0; m < axes.size(); ++m)
          args.push_back(str_cat("indices[", axes[m], "]")), at.push_back(1 + m);
        plan.check = index_range_check("index_put", args, at, axes);
        return plan;
      },
      inputs)[0];
}

HIDET_INLINE Tensor index_add_unchecked(const Tensor &x, int ax, const Tensor &index,
                                        const Tensor &src, double alpha) {
  const std::string key = str_cat("index_add{axis=", ax, ", alpha=", fmt_double(alpha), "}");
  if (has_symbolic_extents({x, index, src}))
    return mark_inplace_input(trace_symbolic(key, {x, index, src}, x.sym_shape(), x.dtype(),
                                             [=](const std::vector<Tensor> &in) {
                                               return index_add_unchecked(in[0], ax, in[1], in[2], alpha);
                                             }),
                              0);
  const Shape ss = src.shape();
  const std::int64_t n = x.shape()[std::size_t(ax)];
  const DataType dt = x.dtype(), cd = compute_dtype(dt);
  const bool scalar_index = index.ndim() == 0;
  const std::vector<Tensor> inputs{x, index, src, error_record_for(x)};
  return run_plan(
      key,
      [&] {
        Plan plan = update_plan(
            "index_add", inputs, {"x", "index", "src", "errors"}, shape_numel(ss),
            [&](const std::vector<ir::Var> &p, const lang::Var &g, const ir::Var &errors) {
              using namespace hidet::lang;
              const std::vector<ir::Expr> at = unravel(g.ir(), ss);
              Expr ok;
              Var raw = cast(lang::Element(p[1],
                                           scalar_index ? std::vector<ir::Expr>{}
                                                        : std::vector<ir::Expr>{at[std::size_t(ax)]},
                                           {}),
                             dtypes::i64);
              Var k = wrap_index(raw, n, ok);
              if_(ok, [&] {
                std::vector<ir::Expr> to = at;
                to[std::size_t(ax)] = cast(k, dtypes::i32).ir();
                Expr v = cast(lang::Element(p[2], at, {}), cd);
                if (alpha != 1)
                  v = v * Expr(cd.is_float() ? ir::ConstantNode::make_float(cd, alpha)
                                             : ir::ConstantNode::make_int(cd, std::int64_t(alpha)));
                Var vv = cast(v, dt);
                atomic_add(lang::Element(p[3], to, {}), vv);
              }).else_([&] { report_bad_indices(errors, {{raw, n, "index_add: index"}}); });
            });
        plan.check = index_range_check("index_add", {"index"}, {1}, {ax});
        return plan;
      },
      inputs)[0];
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor scatter(const Tensor &x, int axis, const Tensor &index, const Tensor &src,
                            ScatterReduce reduce) {
  const SymShape xs = x.sym_shape(), is = index.sym_shape(), ss = src.sym_shape();
  const int ax = detail::normalize_axis_or_scalar("scatter", axis, xs);
  detail::require_index_dtype("scatter", "index", index);
  if (reduce != ScatterReduce::None)
    detail::require_atomic_dtype("scatter", str_cat("reduce='", scatter_reduce_name(reduce), "'"),
                                 x);
  bool fits = index.ndim() == x.ndim();
  for (int d = 0; fits && d < x.ndim(); ++d)
    fits = d == ax || detail::extent_at_most(is[std::size_t(d)], xs[std::size_t(d)]);
  if (!fits)
    throw ValueError(str_cat("scatter: index of shape ", shape_str(is),
                             " must have the rank of x of shape ", shape_str(xs),
                             " and no larger extents off axis ", ax));
  bool src_fits = src.ndim() == 0 || src.ndim() == x.ndim();
  for (int d = 0; src_fits && src.ndim() != 0 && d < x.ndim(); ++d)
    src_fits = detail::extent_at_most(is[std::size_t(d)], ss[std::size_t(d)]);
  if (!src_fits)
    throw ValueError(str_cat("scatter: src of shape ", shape_str(ss),
                             " must be 0-d or have the rank of index of shape ", shape_str(is),
                             " and no smaller extents"));
  if (xs.empty())
    return detail::scatter_unchecked(x.reshape(Shape{1}), 0, index.reshape(Shape{1}), src, reduce)
        .reshape(Shape{});
  return detail::scatter_unchecked(x, ax, index, src, reduce);
}

HIDET_INLINE Tensor scatter(const Tensor &x, int axis, const Tensor &index, double value,
                            ScatterReduce reduce) {
  return scatter(x, axis, index, ops::full(Shape{}, value, x.dtype(), x.device()), reduce);
}

HIDET_INLINE Tensor scatter_add(const Tensor &x, int axis, const Tensor &index, const Tensor &src) {
  return scatter(x, axis, index, src, ScatterReduce::Add);
}

HIDET_INLINE Tensor index_put(const Tensor &x, const std::vector<std::optional<Tensor>> &indices,
                              const Tensor &values, bool accumulate) {
  const SymShape xs = x.sym_shape();
  if (indices.size() > xs.size())
    throw ValueError(str_cat("index_put: ", indices.size(), " indices for x of shape ",
                             shape_str(xs), " (rank ", xs.size(), "); give at most one per axis"));
  if (accumulate) detail::require_atomic_dtype("index_put", "accumulate=true", x);
  std::vector<int> axes;
  std::vector<Tensor> idx;
  for (std::size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d]) continue;
    const Tensor &t = *indices[d];
    if (t.dtype().is_bool()) {
      if (indices.size() - std::size_t(std::count(indices.begin(), indices.end(), std::nullopt)) !=
          1)
        throw ValueError(
            str_cat("index_put: a bool index (at axis ", d, ") must be the only index tensor"));
      return detail::index_put_mask(x, d, t, values, accumulate);
    }
    detail::require_index_dtype("index_put", str_cat("indices[", d, "]"), t);
    axes.push_back(int(d));
    idx.push_back(t);
  }
  if (idx.empty()) throw ValueError("index_put: indices holds no index tensor; give at least one");
  SymShape b; // the index tensors broadcast together (an error names the shapes when they do not)
  for (const auto &t : idx)
    b = broadcast_shapes("index_put", b, t.sym_shape(), t.dtype(), t.dtype());
  return detail::index_put_unchecked(x, axes, idx, values, accumulate);
}

HIDET_INLINE Tensor index_add(const Tensor &x, int axis, const Tensor &index, const Tensor &src,
                              double alpha) {
  const SymShape xs = x.sym_shape(), is = index.sym_shape(), ss = src.sym_shape();
  const int ax = detail::normalize_axis_or_scalar("index_add", axis, xs);
  detail::require_index_dtype("index_add", "index", index);
  detail::require_atomic_dtype("index_add", "the addition", x);
  if (index.ndim() > 1)
    throw ValueError(str_cat("index_add: index must be 1-D or 0-d, got shape ", shape_str(is)));
  if (!x.dtype().is_float() && alpha != double(std::int64_t(alpha)))
    throw ValueError(
        str_cat("index_add: alpha = ", alpha, " must be an integer for x of dtype ", x.dtype()));
  const Dim len = index.ndim() == 0 ? Dim(1) : is[0];
  bool fits = src.ndim() == x.ndim() || (x.ndim() == 0 && src.ndim() <= 1);
  for (int d = 0; fits && d < int(ss.size()) && x.ndim() > 0; ++d)
    fits = ss[std::size_t(d)] == (d == ax ? len : xs[std::size_t(d)]);
  if (!fits)
    throw ValueError(str_cat("index_add: src of shape ", shape_str(ss),
                             " must have the shape of x ", shape_str(xs), " with extent ", len,
                             " (the length of index) on axis ", ax));
  if (xs.empty())
    return detail::index_add_unchecked(x.reshape(Shape{1}), 0, index.reshape(Shape{1}),
                                       src.reshape(Shape{1}), alpha)
        .reshape(Shape{});
  return detail::index_add_unchecked(x, ax, index, src, alpha);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
