// Definitions for hidet/ops/sort.hpp.
#pragma once

#include "hidet/ops/sort.hpp"

#include <algorithm>

#include "hidet/ops/cache.hpp"
#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// The index of a tensor of shape `s` at position `pos` along axis `ax` of the line (o, in): o
/// runs over the axes before `ax`, in over those after it (row-major).
HIDET_INLINE std::vector<ir::Expr> line_index(const Shape &s, int ax, const lang::Expr &o,
                                              const lang::Expr &pos, const lang::Expr &in) {
  std::vector<ir::Expr> r = unravel(o.ir(), Shape(s.begin(), s.begin() + ax));
  r.push_back(pos.ir());
  for (auto &e : unravel(in.ir(), Shape(s.begin() + ax + 1, s.end())))
    r.push_back(e);
  return r;
}

/// The extents before and after axis `ax` of `s`, multiplied out.
HIDET_INLINE std::pair<std::int64_t, std::int64_t> outer_inner(const Shape &s, int ax) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; ++d)
    outer *= s[std::size_t(d)];
  for (std::size_t d = std::size_t(ax) + 1; d < s.size(); ++d)
    inner *= s[d];
  return {outer, inner};
}

/// Whether (ka, ia) goes before (kb, ib) in sorted order: by value (NaN the largest; `descending`
/// reverses the values' order), equal values by index. A total order on distinct indices, so a
/// sort by it is stable. ka, kb, ia, ib should be variables (each is read several times).
HIDET_INLINE lang::Expr sort_before(const lang::Expr &ka, const lang::Expr &ia,
                                    const lang::Expr &kb, const lang::Expr &ib, bool descending) {
  using namespace hidet::lang;
  DataType d = ka.dtype();
  Expr a = d.is_narrow_float() ? cast(ka, dtypes::f32) : ka,
       b = d.is_narrow_float() ? cast(kb, dtypes::f32) : kb;
  Expr first = descending ? (b < a) : (a < b);
  Expr tie = a == b;
  if (d.is_float()) {
    Expr na = lang::isnan(a), nb = lang::isnan(b);
    first = descending ? (first || (na && !nb)) : (first || (!na && nb));
    tie = tie || (na && nb);
  }
  return first || (tie && ia < ib);
}

/// How sort_plan splits a row of n elements: chunks sorted in shared memory by blocks of
/// `threads`, then `passes` merges.
struct SortSizes {
  std::int64_t chunk = 1, threads = 32;
  int passes = 0;
};
HIDET_INLINE SortSizes sort_sizes(std::int64_t n, DataType d) {
  SortSizes z;
  z.chunk =
      std::min(pow2_ceil(std::max<std::int64_t>(n, 1)), std::int64_t(d.nbytes() > 4 ? 2048 : 4096));
  z.threads = std::clamp<std::int64_t>(z.chunk / 2, 32, 512);
  for (std::int64_t s = z.chunk; s < n; s *= 2)
    z.passes++;
  return z;
}

/// The plan of the first k elements of x (shape `s`, dtype `dt`) sorted along axis `ax`: values
/// and i64 indices of shape s with s[ax] = k (see the top of sort.hpp).
HIDET_INLINE Plan sort_plan(const Shape &s, int ax, DataType dt, std::int64_t k, bool descending) {
  using namespace hidet::lang;
  const std::int64_t n = s[std::size_t(ax)];
  const auto [outer, inner] = outer_inner(s, ax);
  const std::int64_t rows = outer * inner;
  const SortSizes z = sort_sizes(n, dt);
  const std::int64_t C = z.chunk, chunks = (n + C - 1) / C;
  const int T = int(z.threads);
  Shape os = s;
  os[std::size_t(ax)] = k;
  Plan plan;
  plan.module = script_module("sort");
  plan.buffers.push_back({PlanBuffer::Role::Input, 0, "x", to_sym_shape(s), dt});
  plan.buffers.push_back({PlanBuffer::Role::Output, 0, "values", to_sym_shape(os), dt});
  plan.buffers.push_back({PlanBuffer::Role::Output, 1, "indices", to_sym_shape(os), dtypes::i64});
  for (int b = 0; b < std::min(z.passes, 2); ++b) { // ping-pong runs of the merge passes
    plan.buffers.push_back(
        {PlanBuffer::Role::Temp, 0, str_cat("keys", b), to_sym_shape(Shape{rows, n}), dt});
    plan.buffers.push_back({PlanBuffer::Role::Temp, 0, str_cat("order", b),
                            to_sym_shape(Shape{rows, n}), dtypes::i32});
  }
  auto specs = [&](const std::vector<int> &args) {
    std::vector<ParamSpec> r;
    for (int a : args) {
      const PlanBuffer &b = plan.buffers[std::size_t(a)];
      r.push_back(param_spec(b.name, b.dtype, b.shape));
    }
    return r;
  };
  const Dim work = rows * k;
  if (rows * k == 0) return plan;    // nothing to sort or to keep: no kernel
  const bool direct = z.passes == 0; // the chunk is the whole row: write the outputs
  const std::vector<int> chunk_args =
      direct ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 3, 4};
  define_kernel(plan.module, "sort_chunks", specs(chunk_args), [&](const std::vector<ir::Var> &p) {
    attrs.cuda.grid_dim = int(std::max<std::int64_t>(rows * chunks, 1));
    attrs.cuda.block_dim = T;
    lang::Tensor keys = shared_tensor(TensorSpec(dt, {ir::int32(int(C))}), "keys");
    lang::Tensor order = shared_tensor(TensorSpec(dtypes::i32, {ir::int32(int(C))}), "order");
    Var row = blockIdx.x / int(chunks), start = blockIdx.x % int(chunks) * int(C);
    Var o = row / int(inner), in = row % int(inner);
    Var tid = threadIdx.x;
    // Load the chunk; positions past the row are padding (index >= n), which sorts last.
    for_(range(tid, int(C), T), [&](Var t) {
      Var pos = start + t;
      if_(pos < int(n), [&] {
        keys[t] = lang::Element(p[0], line_index(s, ax, o, pos, in), {});
        order[t] = pos;
      }).else_([&] {
        keys[t] = lang::cast(0, dt);
        order[t] = int(n) + t;
      });
    });
    syncthreads();
    const bool padded = chunks * C != n;
    auto before = [&](const Var &ka, const Var &ia, const Var &kb, const Var &ib) {
      Expr b = sort_before(ka, ia, kb, ib, descending);
      return padded ? Expr(ia < int(n) && (ib >= int(n) || b)) : b;
    };
    // Bitonic network: merges of sorted runs of `size`, compare-exchange at distance j.
    int log2c = 0;
    while ((std::int64_t(1) << log2c) < C)
      ++log2c;
    for_(range(1, log2c + 1), [&](Var kk) {
      Var size = 1 << kk;
      for_(range(kk), [&](Var jj) {
        Var j = size >> (jj + 1);
        for_(range(tid, int(C / 2), T), [&](Var t) {
          Var i = 2 * t - (t & (j - 1));
          Var l = i + j;
          Var ka = keys[i], kb = keys[l], ia = order[i], ib = order[l];
          Var swap = select((i & size) == 0, before(kb, ib, ka, ia), before(ka, ia, kb, ib));
          if_(swap, [&] {
            keys[i] = kb;
            keys[l] = ka;
            order[i] = ib;
            order[l] = ia;
          });
        });
        syncthreads();
      });
    });
    Var count = lang::min(lang::min(int(n) - start, int(C)), int(k));
    for_(range(tid, count, T), [&](Var t) {
      const std::vector<ir::Expr> at =
          direct ? line_index(os, ax, o, t, in) : std::vector<ir::Expr>{row.ir(), (start + t).ir()};
      store(p[1], at, Expr(keys[t]).ir());
      store(p[2], at, Expr(order[t]).ir());
    });
  });
  plan.steps.push_back({"sort_chunks", chunk_args, work});
  // Merge passes: runs of S (each truncated to k) pairwise into runs of 2S; an element's place in
  // the merged run is its offset plus the number of the partner run's elements before it.
  for (int pass = 0; pass < z.passes; ++pass) {
    const std::int64_t S = C << pass, R = (n + S - 1) / S, W = std::min(k, S),
                       threads = rows * R * W;
    const bool last = pass + 1 == z.passes;
    const int from = 3 + 2 * (pass % 2), to = 3 + 2 * ((pass + 1) % 2);
    const std::vector<int> args{from, from + 1, last ? 1 : to, last ? 2 : to + 1};
    const std::string name = str_cat("sort_merge", pass);
    define_kernel(plan.module, name, specs(args), [&](const std::vector<ir::Var> &p) {
      attrs.cuda.grid_dim = blocks_for(threads, 256);
      attrs.cuda.block_dim = 256;
      lang::Tensor kin(p[0]), oin(p[1]);
      Var g = blockIdx.x * 256 + threadIdx.x;
      if_(g < int(threads), [&] {
        Var row = g / int(R * W), rem = g % int(R * W);
        Var r = rem / int(W), i = rem % int(W);
        Var base = r * int(S);
        if_(i < lang::min(int(n) - base, int(W)), [&] {
          Var a = kin[row][base + i], ia = oin[row][base + i];
          Var partner = (r ^ 1) * int(S);
          Var lo = 0;
          Var hi = lang::max(lang::min(int(n) - partner, int(W)), 0);
          while_(lo < hi, [&] {
            Var mid = (lo + hi) / 2;
            Var km = kin[row][partner + mid], im = oin[row][partner + mid];
            if_(sort_before(km, im, a, ia, descending), [&] { lo = mid + 1; }).else_([&] {
              hi = mid;
            });
          });
          Var pos = i + lo;
          if_(pos < int(k), [&] {
            std::vector<ir::Expr> at;
            if (last) { // two runs: the merged one starts at 0
              Var o = row / int(inner), in = row % int(inner);
              at = line_index(os, ax, o, pos, in);
            } else {
              at = {row.ir(), ((r - (r & 1)) * int(S) + pos).ir()};
            }
            store(p[2], at, a.ir());
            store(p[3], at, ia.ir());
          });
        });
      });
    });
    plan.steps.push_back({name, args, work});
  }
  return plan;
}

/// Checks what every sort-like operator needs of x: a dtype the kernels compare and 32-bit sizes.
HIDET_INLINE void require_sortable(const std::string &op, const Tensor &x) {
  if (x.dtype().is_fp8())
    throw ValueError(str_cat(op, ": x of dtype ", x.dtype(), " and shape ",
                             shape_str(x.sym_shape()),
                             " cannot be sorted; cast it to f16 or f32 first"));
  if (!has_symbolic_extents({x}) && x.numel() > (std::int64_t(1) << 30))
    throw ValueError(str_cat(op, ": x of shape ", shape_str(x.shape()), " has ", x.numel(),
                             " elements; at most 2^30 are supported"));
}

/// The first k elements of x sorted along `ax` (`k` = the extent: sort). Over symbolic extents, a
/// node whose run calls `at_shape` (the operator itself) on its inputs.
HIDET_INLINE std::pair<Tensor, Tensor>
sorted_prefix(const std::string &key, const Tensor &x, int ax, const Dim &k, bool descending,
              std::function<std::vector<Tensor>(const std::vector<Tensor> &)> at_shape) {
  if (has_symbolic_extents({x})) {
    SymShape os = x.sym_shape();
    if (!os.empty()) os[std::size_t(ax)] = k;
    auto outs =
        trace_symbolic_outputs(key, {x}, {{os, x.dtype()}, {os, dtypes::i64}}, std::move(at_shape));
    return {outs[0], outs[1]};
  }
  const bool scalar = x.ndim() == 0;
  const Shape s = scalar ? Shape{1} : x.shape();
  const std::int64_t kv = k.value();
  auto outs = run_plan(key, [&] { return sort_plan(s, ax, x.dtype(), kv, descending); },
                       {scalar ? x.reshape(Shape{1}) : x});
  if (scalar && kv == 1) return {outs[0].reshape(Shape{}), outs[1].reshape(Shape{})};
  return {outs[0], outs[1]};
}

/// The plan of searchsorted: one thread per value, a binary search in its row of `seq`.
HIDET_INLINE Plan searchsorted_plan(const Shape &seq, DataType seq_dtype, const Shape &values,
                                    DataType values_dtype, bool right) {
  using namespace hidet::lang;
  const std::int64_t m = seq.back(), count = shape_numel(values);
  const std::int64_t per_row =
      seq.size() == 1 ? std::max<std::int64_t>(count, 1) : std::max<std::int64_t>(values.back(), 1);
  DataType cmp = seq_dtype == values_dtype                           ? compute_dtype(seq_dtype)
                 : (seq_dtype.is_float() || values_dtype.is_float()) ? dtypes::f64
                                                                     : dtypes::i64;
  Plan plan;
  plan.module = script_module("searchsorted");
  plan.buffers.push_back(
      {PlanBuffer::Role::Input, 0, "sorted_sequence", to_sym_shape(seq), seq_dtype});
  plan.buffers.push_back(
      {PlanBuffer::Role::Input, 1, "values", to_sym_shape(values), values_dtype});
  plan.buffers.push_back({PlanBuffer::Role::Output, 0, "y", to_sym_shape(values), dtypes::i64});
  if (count == 0) return plan;
  define_kernel(plan.module, "searchsorted",
                {param_spec("sorted_sequence", seq_dtype, seq),
                 param_spec("values", values_dtype, values), param_spec("y", dtypes::i64, values)},
                [&](const std::vector<ir::Var> &p) {
                  attrs.cuda.grid_dim = blocks_for(count, 256);
                  attrs.cuda.block_dim = 256;
                  Var g = blockIdx.x * 256 + threadIdx.x;
                  if_(g < int(count), [&] {
                    const std::vector<ir::Expr> vi = unravel(g.ir(), values);
                    Var v = cast(lang::Element(p[1], vi, {}), cmp);
                    Var row = g / int(per_row);
                    Var lo = 0, hi = int(m);
                    while_(lo < hi, [&] {
                      Var mid = (lo + hi) / 2;
                      std::vector<ir::Expr> si =
                          unravel(row.ir(), Shape(seq.begin(), seq.end() - 1));
                      si.push_back(mid.ir());
                      Var e = cast(lang::Element(p[0], si, {}), cmp);
                      if_(!(right ? Expr(e > v) : Expr(e >= v)), [&] { lo = mid + 1; }).else_([&] {
                        hi = mid;
                      });
                    });
                    store(p[2], vi, cast(lo, dtypes::i64).ir());
                  });
                });
  plan.steps.push_back({"searchsorted", {0, 1, 2}, count});
  return plan;
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE std::pair<Tensor, Tensor> sort(const Tensor &x, int axis, bool descending,
                                            bool stable) {
  const SymShape xs = x.sym_shape();
  int ax = detail::normalize_axis_or_scalar("sort", axis, xs);
  detail::require_sortable("sort", x);
  const Dim n = xs.empty() ? Dim(1) : xs[std::size_t(ax)];
  return detail::sorted_prefix(
      str_cat("sort{axis=", ax, ", descending=", descending ? "true" : "false", "}"), x, ax, n,
      descending, [=](const std::vector<Tensor> &in) {
        auto [v, i] = sort(in[0], axis, descending, stable);
        return std::vector<Tensor>{v, i};
      });
}

HIDET_INLINE Tensor argsort(const Tensor &x, int axis, bool descending, bool stable) {
  return sort(x, axis, descending, stable).second;
}

HIDET_INLINE std::pair<Tensor, Tensor> topk(const Tensor &x, std::int64_t k, int axis, bool largest,
                                            bool sorted) {
  const SymShape xs = x.sym_shape();
  int ax = detail::normalize_axis_or_scalar("topk", axis, xs);
  detail::require_sortable("topk", x);
  const Dim n = xs.empty() ? Dim(1) : xs[std::size_t(ax)];
  if (k < 0 || (n.is_constant() && k > n.value()))
    throw ValueError(str_cat("topk: k = ", k, " is out of range for axis ", ax, " of size ", n,
                             " of x of shape ", shape_str(xs),
                             "; k must be between 0 and the axis size"));
  return detail::sorted_prefix(
      str_cat("topk{k=", k, ", axis=", ax, ", largest=", largest ? "true" : "false", "}"), x, ax,
      Dim(k), largest, [=](const std::vector<Tensor> &in) {
        auto [v, i] = topk(in[0], k, axis, largest, sorted);
        return std::vector<Tensor>{v, i};
      });
}

HIDET_INLINE Tensor searchsorted(const Tensor &sorted_sequence, const Tensor &values, bool right) {
  const SymShape ss = sorted_sequence.sym_shape(), vs = values.sym_shape();
  for (const auto &[t, what] :
       {std::pair<const Tensor *, const char *>{&sorted_sequence, "sorted_sequence"},
        {&values, "values"}})
    if (t->dtype().is_fp8() || t->dtype().is_bool())
      throw ValueError(str_cat("searchsorted: ", what, " has dtype ", t->dtype(),
                               "; expected an integer or a f16, bf16, f32 or f64 dtype"));
  bool ok = !ss.empty();
  if (ok && ss.size() > 1) {
    ok = vs.size() == ss.size();
    for (std::size_t d = 0; ok && d + 1 < ss.size(); ++d)
      ok = ss[d] == vs[d];
  }
  if (!ok)
    throw ValueError(str_cat(
        "searchsorted: sorted_sequence of shape ", shape_str(ss), " and values of shape ",
        shape_str(vs),
        " do not fit: the sequence must be 1-D, or have the values' rank and leading extents"));
  const std::string key = str_cat("searchsorted{right=", right ? "true" : "false", "}");
  if (detail::has_symbolic_extents({sorted_sequence, values}))
    return detail::trace_symbolic(
        key, {sorted_sequence, values}, vs, dtypes::i64,
        [=](const std::vector<Tensor> &in) { return searchsorted(in[0], in[1], right); });
  return run_plan(key,
                  [&] {
                    return detail::searchsorted_plan(sorted_sequence.shape(),
                                                     sorted_sequence.dtype(), values.shape(),
                                                     values.dtype(), right);
                  },
                  {sorted_sequence, values})[0];
}

HIDET_INLINE Tensor bucketize(const Tensor &x, const Tensor &boundaries, bool right) {
  if (boundaries.ndim() != 1)
    throw ValueError(str_cat("bucketize: boundaries must be 1-D, got shape ",
                             shape_str(boundaries.sym_shape())));
  return searchsorted(boundaries, x, right);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
