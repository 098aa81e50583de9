// Definitions for hidet/ops/transform.hpp.
#pragma once

#include "hidet/ops/transform.hpp"

#include <cctype>
#include <numeric>
#include <sstream>

#include "hidet/ops/cache.hpp"
#include "hidet/ops/op_kind.hpp"
#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// Runs a one-input injective task out[i] = x[index_of(i)].
template <class F>
Tensor gather_like(const std::string &op, const std::string &attrs, const Tensor &x, const Extents &out_shape, F index_of) {
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto a = input("x", x.sym_shape(), x.dtype());
        auto y = compute(op, out_shape, [&](const Idx &i) { return a.at(index_of(i)); });
        return Task{op, {a}, {y}, attrs, {}};
      },
      {x})[0];
}

/// reshape(x, shape) for a shape of constant extents, else the symbolic Reshape node.
HIDET_INLINE Tensor reshape_dims(const Tensor &x, const SymShape &shape) {
  return is_constant_shape(shape) ? reshape(x, constant_shape(shape)) : x.reshape(shape);
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor reshape(const Tensor &x, Shape shape) {
  if (detail::has_symbolic_extents({x})) return x.reshape(std::move(shape)); // a Reshape node (a view when it runs)
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw ValueError(str_cat("reshape: only one dimension can be -1, got ", shape_str(shape)));
      infer = int(i);
    } else if (shape[i] < 0) {
      throw ValueError(str_cat("reshape: invalid dimension ", shape[i], " in ", shape_str(shape)));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0 && known != 0 && x.numel() % known == 0) shape[infer] = x.numel() / known;
  if (shape_numel(shape) != x.numel() || (infer >= 0 && shape[infer] == -1))
    throw ValueError(str_cat("reshape: cannot reshape a tensor of shape ", shape_str(x.shape()), " (", x.numel(),
                             " elements, ", x.dtype(), ") to ", shape_str(shape), ": the element count must not change"));
  Shape in = x.shape();
  return detail::gather_like("reshape", "shape=" + detail::ints_str(shape), x, shape, [&](const Idx &i) {
    Expr flat = Expr(0);
    for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * int(shape[d]) + i[d];
    Idx r;
    for (auto &e : detail::unravel(flat.ir(), in)) r.push_back(Expr(e));
    return r;
  });
}

HIDET_INLINE Tensor flatten(const Tensor &x, int start, int end) {
  if (x.ndim() == 0) return reshape(x, {1});
  const SymShape xs = x.sym_shape();
  int s = detail::normalize_axis("flatten", start, x.ndim(), xs), e = detail::normalize_axis("flatten", end, x.ndim(), xs);
  SymShape r(xs.begin(), xs.begin() + s);
  Dim m = 1;
  for (int d = s; d <= e; ++d) m *= xs[std::size_t(d)];
  r.push_back(m);
  r.insert(r.end(), xs.begin() + e + 1, xs.end());
  return detail::reshape_dims(x, r);
}

HIDET_INLINE Tensor squeeze(const Tensor &x, std::vector<int> axes) {
  const SymShape xs = x.sym_shape();
  std::vector<int> ax;
  for (int a : axes) {
    int n = detail::normalize_axis("squeeze", a, x.ndim(), xs);
    if (xs[std::size_t(n)] != 1)
      throw ValueError(str_cat("squeeze: axis ", a, " of shape ", shape_str(xs), " has size ", xs[std::size_t(n)], ", not 1"));
    ax.push_back(n);
  }
  SymShape r; // with no axes given, the extents that are 1 (a symbol is never dropped)
  for (int d = 0; d < x.ndim(); ++d) {
    bool drop = axes.empty() ? xs[std::size_t(d)] == 1 : std::find(ax.begin(), ax.end(), d) != ax.end();
    if (!drop) r.push_back(xs[std::size_t(d)]);
  }
  return detail::reshape_dims(x, r);
}

HIDET_INLINE Tensor unsqueeze(const Tensor &x, int axis) {
  SymShape r = x.sym_shape();
  int n = detail::normalize_axis("unsqueeze", axis, x.ndim() + 1, r);
  r.insert(r.begin() + n, 1);
  return detail::reshape_dims(x, r);
}

HIDET_INLINE Tensor permute(const Tensor &x, std::vector<int> perm) {
  const SymShape xs = x.sym_shape();
  if (int(perm.size()) != x.ndim())
    throw ValueError(str_cat("permute: the permutation has ", perm.size(), " axes but the tensor of shape ", shape_str(xs),
                             " has ", x.ndim()));
  std::vector<int> p;
  for (int a : perm) p.push_back(detail::normalize_axis("permute", a, x.ndim(), xs));
  auto sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < x.ndim(); ++i)
    if (sorted[i] != i) throw ValueError(str_cat("permute: ", [&] { std::ostringstream os; detail::print_attr(os, perm); return os.str(); }(), " is not a permutation of the axes of a tensor of shape ", shape_str(xs)));
  bool identity = true;
  for (int d = 0; d < x.ndim(); ++d) identity = identity && p[d] == d;
  if (identity) return x;
  // A permute that undoes a traced permute is that permute's input (NHWC -> NCHW -> NHWC between
  // layouts is no permute at all). Other pairs stay two nodes: the patterns of graph rewrites
  // (an attention's transposes) see them as written.
  if (auto tr = x.trace();
      tr && kind_of(*tr.op) == OpKind::Permute && tr.op->inputs().size() == 1) {
    std::vector<int> inner;
    const std::string &a = tr.op->attrs();
    for (std::size_t i = a.find('['); i != std::string::npos && i < a.size() && a[i] != ']'; ++i)
      if (std::isdigit(static_cast<unsigned char>(a[i]))) {
        int v = 0;
        for (; i < a.size() && std::isdigit(static_cast<unsigned char>(a[i])); ++i) v = v * 10 + (a[i] - '0');
        inner.push_back(v), --i;
      }
    bool undone = int(inner.size()) == x.ndim();
    for (int d = 0; undone && d < x.ndim(); ++d) undone = inner[std::size_t(p[std::size_t(d)])] == d;
    if (undone) return tr.op->inputs()[0];
  }
  SymShape r;
  for (int a : p) r.push_back(xs[std::size_t(a)]);
  // Moving only axes of extent 1 keeps the row-major order of the elements: a reshape, which is a
  // view (NCHW [n, c, 1, 1] <-> NHWC [n, 1, 1, c] between layouts costs no kernel).
  int last = -1;
  bool in_order = true;
  for (int a : p)
    if (xs[std::size_t(a)] != 1) in_order = in_order && a > last, last = a;
  if (in_order) return is_constant_shape(r) ? x.reshape(constant_shape(r)) : x.reshape(r);
  std::ostringstream os;
  detail::print_attr(os, p);
  return detail::gather_like("permute", "perm=" + os.str(), x, r, [&](const Idx &i) {
    Idx in(x.ndim());
    for (int d = 0; d < x.ndim(); ++d) in[p[d]] = i[d];
    return in;
  });
}

HIDET_INLINE Tensor transpose(const Tensor &x, int a, int b) {
  if (x.ndim() < 2) return x;
  std::vector<int> p(x.ndim());
  std::iota(p.begin(), p.end(), 0);
  const SymShape xs = x.sym_shape();
  std::swap(p[detail::normalize_axis("transpose", a, x.ndim(), xs)], p[detail::normalize_axis("transpose", b, x.ndim(), xs)]);
  return permute(x, p);
}

HIDET_INLINE Tensor broadcast_to(const Tensor &x, const Shape &shape) { return broadcast_to_dims(x, to_sym_shape(shape)); }

HIDET_INLINE Tensor broadcast_to_dims(const Tensor &x, const SymShape &shape) {
  const SymShape xs = x.sym_shape();
  SymShape s = broadcast_shapes("broadcast_to", xs, shape, x.dtype(), x.dtype());
  if (s != shape)
    throw ValueError(str_cat("broadcast_to: cannot broadcast shape ", shape_str(xs), " to ", shape_str(shape)));
  if (detail::has_symbolic_extents({x}) || !is_constant_shape(shape)) { // one kernel for every value of the symbols
    const std::string key = str_cat("broadcast_to{shape=", sym_shape_str(shape), "}");
    auto a = input("x", xs, x.dtype());
    auto y = compute("broadcast_to", shape, [&](const Idx &i) { return a.at(broadcast_index(xs, i)); });
    Task task{"broadcast_to", {a}, {y}, str_cat("shape=", sym_shape_str(shape)), {}};
    if (x.is_symbolic()) return run_task(key, [&] { return task; }, {x})[0];
    // x holds data (a constant): the node's runs take the symbols from the graph that runs it.
    return detail::trace_generic_task(key, {x}, shape, x.dtype(), std::move(task), [shape](const std::vector<Tensor> &in) {
      return broadcast_to(in[0], evaluate_bound("broadcast_to", shape));
    });
  }
  Shape out = constant_shape(shape);
  Shape in = x.shape();
  return detail::gather_like("broadcast_to", "shape=" + detail::ints_str(out), x, out,
                             [&](const Idx &i) { return broadcast_index(in, i); });
}

HIDET_INLINE Tensor slice(const Tensor &x, std::vector<int> axes, Shape starts, Shape stops, Shape steps) {
  if (steps.empty()) steps.assign(axes.size(), 1);
  if (starts.size() != axes.size() || stops.size() != axes.size() || steps.size() != axes.size())
    throw ValueError(str_cat("slice: axes, starts, stops and steps must have the same length"));
  SymShape out = x.sym_shape(); // the sliced axes need constant extents; the others may be symbols
  Shape begin(x.ndim(), 0), step(x.ndim(), 1);
  for (std::size_t k = 0; k < axes.size(); ++k) {
    int a = detail::normalize_axis("slice", axes[k], x.ndim(), out);
    if (!out[std::size_t(a)].is_constant())
      throw ValueError(str_cat("slice: axis ", a, " of the tensor of shape ", shape_str(x.sym_shape()),
                               " is symbolic; the sliced axes need constant extents"));
    std::int64_t n = out[std::size_t(a)].value();
    if (steps[k] <= 0) throw ValueError(str_cat("slice: step ", steps[k], " on axis ", a, " must be positive"));
    auto clampi = [&](std::int64_t v) { v = v < 0 ? v + n : v; return std::min(std::max<std::int64_t>(v, 0), n); };
    std::int64_t s = clampi(starts[k]), e = clampi(stops[k]);
    begin[a] = s, step[a] = steps[k];
    out[std::size_t(a)] = e > s ? (e - s + steps[k] - 1) / steps[k] : 0;
  }
  std::string attrs = str_cat("begin=", detail::ints_str(begin), ", step=", detail::ints_str(step), ", shape=");
  // Symbolic extents (off the sliced axes): a node whose run takes one kernel for every value of
  // the symbols, and which specialize() traces again as the constant slice (graph passes read
  // its constant output shape from the attributes).
  if (detail::has_symbolic_extents({x})) {
    const SymShape xs = x.sym_shape();
    const std::string key = str_cat("slice{", attrs, sym_shape_str(out), "}");
    auto a = input("x", xs, x.dtype());
    auto y = compute("slice", out, [&](const Idx &i) {
      Idx r;
      for (int d = 0; d < x.ndim(); ++d) r.push_back(step[d] == 1 ? i[d] + int(begin[d]) : i[d] * int(step[d]) + int(begin[d]));
      return a.at(r);
    });
    Task task{"slice", {a}, {y}, attrs + sym_shape_str(out), {}};
    return detail::trace_generic_task(key, {x}, out, x.dtype(), std::move(task), [=](const std::vector<Tensor> &in) {
      return slice(in[0], axes, starts, stops, steps);
    });
  }
  Shape shape = constant_shape(out);
  return detail::gather_like("slice", attrs + detail::ints_str(shape), x, shape, [&](const Idx &i) {
    Idx r;
    for (int d = 0; d < x.ndim(); ++d) r.push_back(i[d] * int(step[d]) + int(begin[d]));
    return r;
  });
}

HIDET_INLINE Tensor flip(const Tensor &x, std::vector<int> axes) {
  const SymShape xs = x.sym_shape();
  auto ax = detail::normalize_axes("flip", axes, xs);
  std::ostringstream os;
  detail::print_attr(os, ax);
  return detail::gather_like("flip", "axes=" + os.str(), x, xs, [&](const Idx &i) {
    Idx r = i;
    for (int a : ax) r[a] = dim_expr(xs[std::size_t(a)]) - 1 - i[a];
    return r;
  });
}

namespace detail {
/// The axis concat joins `xs` along, after checking that their dtypes and other extents match.
inline int concat_axis(const std::vector<Tensor> &xs, int axis) {
  if (xs.empty()) throw ValueError("concat: needs at least one tensor");
  const SymShape first = xs[0].sym_shape();
  const int ax = normalize_axis("concat", axis, xs[0].ndim(), first);
  for (auto &t : xs) {
    const SymShape ts = t.sym_shape();
    bool ok = t.ndim() == xs[0].ndim() && t.dtype() == xs[0].dtype();
    for (int d = 0; ok && d < t.ndim(); ++d) ok = d == ax || ts[std::size_t(d)] == first[std::size_t(d)];
    if (!ok)
      throw ValueError(str_cat("concat: cannot join ", xs[0].dtype(), shape_str(first), " and ", t.dtype(), shape_str(ts),
                               " along axis ", ax, ": dtypes and all other dimensions must match"));
  }
  return ax;
}

/// The concat task of inputs of these shapes (equal but along `ax`) and dtype.
inline Task concat_task(const std::vector<SymShape> &shapes, DataType dtype, int ax) {
  std::vector<TensorDef> in;
  std::vector<Dim> offs; // where each input starts along the axis
  SymShape out = shapes[0];
  out[std::size_t(ax)] = 0;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    in.push_back(input(str_cat("x", k), shapes[k], dtype));
    offs.push_back(out[std::size_t(ax)]);
    out[std::size_t(ax)] += shapes[k][std::size_t(ax)];
  }
  auto y = compute("concat", out, [&](const Idx &i) {
    Expr v; // from the last input whose offset is <= i[ax]
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const Dim len = shapes[k][std::size_t(ax)];
      if (len == 0) continue;
      Idx j = i;
      j[ax] = lang::min(lang::max(i[ax] - dim_expr(offs[k]), 0), dim_expr(len - 1));
      Expr e = in[k].at(j);
      v = v.defined() ? Expr(lang::select(i[ax] >= dim_expr(offs[k]), e, v)) : e;
    }
    return v;
  });
  return Task{"concat", in, {y}, str_cat("axis=", ax), {}};
}
} // namespace detail

HIDET_INLINE Tensor concat(const std::vector<Tensor> &xs, int axis) {
  const int ax = detail::concat_axis(xs, axis);
  std::vector<SymShape> shapes;
  for (const auto &t : xs) shapes.push_back(t.sym_shape());
  return run_task(str_cat("concat{axis=", ax, "}"), [&] { return detail::concat_task(shapes, xs[0].dtype(), ax); },
                  xs)[0];
}

HIDET_INLINE Tensor concat_generic(const std::vector<Tensor> &xs, int axis) {
  const int ax = detail::concat_axis(xs, axis);
  for (const auto &t : xs)
    if (!t.defined() || t.is_symbolic()) return concat(xs, ax); // traced: the usual node
  // The extents as symbols (the kernel's parameters): the shared ones, and each input's along
  // the axis.
  SymShape common;
  for (int d = 0; d < xs[0].ndim(); ++d) common.push_back(Dim::symbol(str_cat("concat_d", d)));
  std::vector<SymShape> shapes(xs.size(), common);
  for (std::size_t k = 0; k < xs.size(); ++k) shapes[k][std::size_t(ax)] = Dim::symbol(str_cat("concat_n", k));
  return detail::run_symbolic_task(str_cat("concat_generic{n=", xs.size(), ", rank=", xs[0].ndim(), ", axis=", ax, "}"),
                                   detail::concat_task(shapes, xs[0].dtype(), ax), xs, std::nullopt)[0];
}

namespace detail {
/// Index `v` (an integer expression) into an axis of extent `n`: negative values count from the
/// end, then clamped into [0, n - 1] (a symbol's value is at least 1, as dynamo's sizes are).
HIDET_INLINE Expr axis_index(const Expr &v, const Dim &n) {
  const Dim last = n.is_constant() ? Dim(std::max<std::int64_t>(n.value() - 1, 0)) : n - 1;
  Expr k = lang::cast(v, dtypes::i32);
  k = lang::select(k < 0, k + dim_expr(n), k);
  return lang::min(lang::max(k, 0), dim_expr(last));
}
} // namespace detail

HIDET_INLINE Tensor take(const Tensor &x, const Tensor &indices, int axis) {
  int ax = detail::normalize_axis("take", axis, x.ndim(), x.sym_shape());
  if (!indices.dtype().is_integer())
    throw ValueError(str_cat("take: indices must be integers, got dtype ", indices.dtype(), " of shape ",
                             shape_str(indices.sym_shape())));
  const SymShape xs = x.sym_shape(), is = indices.sym_shape();
  SymShape out(xs.begin(), xs.begin() + ax);
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), xs.begin() + ax + 1, xs.end());
  const Dim n = xs[std::size_t(ax)]; // the extent taken from
  return run_task(
      str_cat("take{axis=", ax, "}"),
      [&] {
        auto a = input("x", xs, x.dtype());
        auto ix = input("indices", is, indices.dtype());
        auto y = compute("take", out, [&](const Idx &i) {
          Idx ii(i.begin() + ax, i.begin() + ax + indices.ndim());
          Expr k = detail::axis_index(ix.at(ii), n);
          Idx j(i.begin(), i.begin() + ax);
          j.push_back(k);
          for (std::size_t d = ax + indices.ndim(); d < i.size(); ++d) j.push_back(i[d]);
          return a.at(j);
        });
        return Task{"take", {a, ix}, {y}, str_cat("axis=", ax), {}};
      },
      {x, indices})[0];
}

HIDET_INLINE Tensor index_select(const Tensor &x, int axis, const Tensor &indices) { return take(x, indices, axis); }

HIDET_INLINE Tensor gather(const Tensor &x, int axis, const Tensor &index) {
  const SymShape xs = x.sym_shape(), is = index.sym_shape();
  int ax = detail::normalize_axis("gather", axis, x.ndim(), xs);
  if (!index.dtype().is_integer())
    throw ValueError(str_cat("gather: index must be integers, got dtype ", index.dtype(), " of shape ",
                             shape_str(is)));
  // Off the axis, index's extents are at most x's: equal, or constants (symbols only equal).
  bool fits = index.ndim() == x.ndim();
  for (int d = 0; fits && d < x.ndim(); ++d) {
    const Dim &a = is[std::size_t(d)], &b = xs[std::size_t(d)];
    fits = d == ax || a == b || (a.is_constant() && b.is_constant() && a.value() <= b.value()) || a == 1;
  }
  if (!fits)
    throw ValueError(str_cat("gather: index of shape ", shape_str(is), " must have the rank of x ", shape_str(xs),
                             " and no larger extents off axis ", ax));
  const Dim n = xs[std::size_t(ax)]; // the extent gathered from: one kernel for every value of the symbols
  return run_task(
      str_cat("gather{axis=", ax, "}"),
      [&] {
        auto a = input("x", xs, x.dtype());
        auto ix = input("index", is, index.dtype());
        auto y = compute("gather", is, [&](const Idx &i) {
          Expr k = detail::axis_index(ix.at(i), n);
          Idx j = i;
          j[std::size_t(ax)] = k;
          return a.at(j);
        });
        return Task{"gather", {a, ix}, {y}, str_cat("axis=", ax), {}};
      },
      {x, index})[0];
}

HIDET_INLINE Tensor embedding(const Tensor &indices, const Tensor &weight) {
  if (weight.ndim() != 2)
    throw ValueError(str_cat("embedding: weight must be 2-D, got shape ", shape_str(weight.sym_shape())));
  return take(weight, indices, 0);
}

HIDET_INLINE Tensor pad(const Tensor &x, const Shape &pads, double value) {
  const SymShape xs = x.sym_shape();
  if (pads.size() % 2 != 0 || pads.size() / 2 > std::size_t(x.ndim()))
    throw ValueError(str_cat("pad: pads ", detail::ints_str(pads), " must hold (before, after) pairs for at most the ", x.ndim(),
                             " axes of a tensor of shape ", shape_str(xs)));
  Shape before(x.ndim(), 0), after(x.ndim(), 0);
  for (std::size_t k = 0; k < pads.size() / 2; ++k) {
    int d = x.ndim() - 1 - int(k);
    if (pads[2 * k] < 0 || pads[2 * k + 1] < 0)
      throw ValueError(str_cat("pad: pads ", detail::ints_str(pads), " must be non-negative (use slice to crop)"));
    before[d] = pads[2 * k], after[d] = pads[2 * k + 1];
  }
  SymShape out = xs;
  for (int d = 0; d < x.ndim(); ++d) out[std::size_t(d)] += Dim(before[d] + after[d]);
  const std::string attrs = str_cat("pads=", detail::ints_str(pads), ", value=", detail::fmt_double(value));
  // Over x's extents, which may be symbols (every axis, padded or not): one kernel for every value.
  auto task = [&] {
    auto a = input("x", xs, x.dtype());
    auto y = compute("pad", out, [&](const Idx &i) {
      Expr ok = Expr(true);
      Idx j;
      for (int d = 0; d < x.ndim(); ++d) {
        const Dim &n = xs[std::size_t(d)];
        Expr k = i[d] - int(before[d]);
        if (before[d] != 0 || after[d] != 0) ok = ok && k >= 0 && k < dim_expr(n);
        j.push_back(n.is_constant() ? lang::min(lang::max(k, 0), int(std::max<std::int64_t>(n.value() - 1, 0)))
                                    : lang::min(lang::max(k, 0), lang::max(dim_expr(n) - 1, 0)));
      }
      Expr fill = x.dtype().is_float() ? Expr(ir::ConstantNode::make_float(dtypes::f64, value))
                                       : Expr(ir::ConstantNode::make_int(dtypes::i64, std::int64_t(value)));
      if (is_constant_shape(xs) && x.numel() == 0) return lang::cast(fill, x.dtype());
      return lang::select(ok, a.at(j), lang::cast(fill, x.dtype()));
    });
    return Task{"pad", {a}, {y}, attrs, {}};
  };
  if (detail::has_symbolic_extents({x}))
    return detail::trace_generic_task(str_cat("pad{", attrs, "}"), {x}, out, x.dtype(), task(),
                                      [=](const std::vector<Tensor> &in) { return pad(in[0], pads, value); });
  return run_task(str_cat("pad{", attrs, "}"), task, {x})[0];
}

HIDET_INLINE Tensor tile(const Tensor &x, Shape reps) {
  for (auto r : reps)
    if (r < 0) throw ValueError(str_cat("tile: reps ", detail::ints_str(reps), " must be non-negative"));
  if (detail::has_symbolic_extents({x})) { // one kernel for every value of the symbols
    SymShape in = x.sym_shape();
    Shape r = reps;
    while (in.size() < r.size()) in.insert(in.begin(), Dim(1));
    while (r.size() < in.size()) r.insert(r.begin(), 1);
    SymShape out(in.size());
    for (std::size_t d = 0; d < in.size(); ++d) out[d] = in[d] * Dim(r[d]);
    const std::string key = str_cat("tile{reps=", detail::ints_str(r), "}");
    auto a = input("x", in, x.dtype());
    auto y = compute("tile", out, [&](const Idx &i) {
      Idx j;
      for (std::size_t d = 0; d < in.size(); ++d)
        j.push_back(r[d] == 1 || in[d] == 1 ? (in[d] == 1 ? Expr(0) : i[d]) : Expr(i[d] % lang::max(dim_expr(in[d]), 1)));
      return a.at(j);
    });
    Task task{"tile", {a}, {y}, "reps=" + detail::ints_str(r), {}};
    return detail::trace_generic_task(key, {x.reshape(in)}, out, x.dtype(), std::move(task),
                                      [=](const std::vector<Tensor> &v) { return tile(v[0], reps); });
  }
  Shape in = x.shape();
  while (in.size() < reps.size()) in.insert(in.begin(), 1);
  while (reps.size() < in.size()) reps.insert(reps.begin(), 1);
  Shape out(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) out[d] = in[d] * reps[d];
  Tensor xv = x.reshape(in);
  return detail::gather_like("tile", "reps=" + detail::ints_str(reps), xv, out, [&](const Idx &i) {
    Idx r;
    for (std::size_t d = 0; d < in.size(); ++d) r.push_back(in[d] == 1 ? Expr(0) : Expr(i[d] % int(in[d])));
    return r;
  });
}

namespace detail {
/// The extent of x's axis `axis` for split (normalized into `ax`); an error when it is a symbol.
HIDET_INLINE std::int64_t split_extent(const Tensor &x, int axis, int &ax) {
  if (x.ndim() == 0) throw ValueError("split: cannot split a 0-d tensor");
  const SymShape xs = x.sym_shape();
  ax = normalize_axis("split", axis, x.ndim(), xs);
  if (!xs[std::size_t(ax)].is_constant())
    throw ValueError(str_cat("split: axis ", ax, " of the tensor of shape ", shape_str(xs),
                             " is symbolic; the split axis needs a constant extent"));
  return xs[std::size_t(ax)].value();
}
} // namespace detail

HIDET_INLINE std::vector<Tensor> split(const Tensor &x, const Shape &sizes, int axis) {
  int ax = 0;
  std::int64_t n = detail::split_extent(x, axis, ax);
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0) throw ValueError(str_cat("split: sizes ", detail::ints_str(sizes), " must be non-negative"));
    total += s;
  }
  if (total != n)
    throw ValueError(str_cat("split: sizes ", detail::ints_str(sizes), " add up to ", total, " but axis ", ax,
                             " of the tensor of shape ", shape_str(x.sym_shape()), " has ", n, " elements"));
  std::vector<Tensor> r;
  std::int64_t off = 0;
  for (auto s : sizes) {
    r.push_back(slice(x, {ax}, {off}, {off + s}));
    off += s;
  }
  return r;
}

HIDET_INLINE std::vector<Tensor> split(const Tensor &x, std::int64_t chunk, int axis) {
  int ax = 0;
  std::int64_t n = detail::split_extent(x, axis, ax);
  if (chunk <= 0) throw ValueError(str_cat("split: chunk size ", chunk, " must be positive"));
  Shape sizes;
  for (std::int64_t off = 0; off < n; off += chunk) sizes.push_back(std::min(chunk, n - off));
  return split(x, sizes, ax);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
