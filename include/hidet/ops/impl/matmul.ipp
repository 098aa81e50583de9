// Definitions for hidet/ops/matmul.hpp.
#pragma once

#include "hidet/ops/matmul.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>

#include "hidet/ops/cache.hpp"
#include "hidet/ops/matmul_templates.hpp"
#include "hidet/ops/schedule_matmul.hpp"
#include "hidet/ops/templates/matmul_fp8.hpp"
#include "hidet/ops/templates/matmul_grouped.hpp"
#include "hidet/runtime/shared_constants.hpp"
#include "hidet/util/log.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

HIDET_INLINE Tensor matmul(const Tensor &a, const Tensor &b) { return matmul(a, b, nullptr, {}); }

HIDET_INLINE Tensor matmul(const Tensor &a, const Tensor &b, const std::shared_ptr<const Epilogue> &epi,
                           const std::vector<Tensor> &extras) {
  if (a.ndim() == 0 || b.ndim() == 0)
    throw ValueError(str_cat("matmul: operands must have at least one dimension, got shapes ", shape_str(a.sym_shape()),
                             " and ", shape_str(b.sym_shape())));
  if (detail::has_symbolic_extents({a, b})) { // extents that are symbols: no template or task until the node runs
    if (epi) throw ValueError("matmul: a fused epilogue needs operands of constant extents");
    SymShape sa = a.sym_shape(), sb = b.sym_shape();
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    detail::require_equal_extents("matmul", sa.back(), sb[sb.size() - 2],
                                  str_cat("the last dimension of a ", shape_str(a.sym_shape()),
                                          " and the second-to-last dimension of b ", shape_str(b.sym_shape())));
    SymShape shape = broadcast_shapes("matmul", SymShape(sa.begin(), sa.end() - 2), SymShape(sb.begin(), sb.end() - 2),
                                      a.dtype(), b.dtype());
    if (a.ndim() > 1) shape.push_back(sa[sa.size() - 2]);
    if (b.ndim() > 1) shape.push_back(sb.back());
    DataType t = promote_types(a.dtype(), b.dtype());
    // a matrix b: a's rows may run on a kernel built for every value
    Dim rows = matmul_row_count(a.sym_shape());
    bool generic = a.ndim() >= 2 && b.ndim() == 2 && !rows.is_constant();
    return detail::trace_symbolic("matmul{}", {a, b}, std::move(shape), t.is_bool() ? dtypes::i32 : t,
                                  [rows, generic](const std::vector<Tensor> &in) {
                                    if (const SymbolValues *v = SymbolBinding::current(); generic && v)
                                      if (auto y = matmul_rows(in[0], in[1], nullptr, {}, rows, *v)) return *y;
                                    return matmul(in[0], in[1]);
                                  });
  }
  Shape sa = a.shape(), sb = b.shape();
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  std::int64_t m = sa[sa.size() - 2], k = sa.back(), k2 = sb[sb.size() - 2], n = sb.back();
  if (k != k2)
    throw ValueError(str_cat("matmul: cannot multiply shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " (dtypes ",
                             a.dtype(), " and ", b.dtype(), "): the last dimension of a (", k,
                             ") must equal the second-to-last dimension of b (", k2, ")"));
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = broadcast_shapes("matmul", ba, bb, a.dtype(), b.dtype());
  if (shape_numel(batch) > 65535)
    throw ValueError(str_cat("matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " give ", shape_numel(batch),
                             " batches; at most 65535 are supported, reshape the batch into the rows of a"));
  DataType t = promote_types(a.dtype(), b.dtype());
  if (t.is_bool()) t = dtypes::i32;
  Shape out = batch;
  out.push_back(m), out.push_back(n);
  Shape final_shape = batch;
  if (a.ndim() > 1) final_shape.push_back(m);
  if (b.ndim() > 1) final_shape.push_back(n);
  if (epi) check_epilogue("matmul", *epi, final_shape, t, extras);
  std::vector<Tensor> all{a, b};
  all.insert(all.end(), extras.begin(), extras.end());
  if (any_symbolic(all)) { // record the node; running it calls this function (templates included)
    Device dev = detail::common_device("matmul", {a, b});
    if (!epi)
      return mark_scratch_build(trace_operator("Matmul", {a, b}, "", {{to_sym_shape(final_shape), t, dev}},
                            [](const std::vector<Tensor> &in) { return std::vector<Tensor>{matmul(in[0], in[1])}; })[0]);
    return mark_scratch_build(trace_operator("FusedMatmul", all, fused_attrs("Matmul", *epi),
                          {{to_sym_shape(epi->out.shape()), epi->out.dtype(), dev}}, [epi](const std::vector<Tensor> &in) {
                            return std::vector<Tensor>{
                                matmul(in[0], in[1], epi, std::vector<Tensor>(in.begin() + 2, in.end()))};
                          })[0]);
  }
  // Weight-only int8: a half or f32 a times an int8 matrix b (its scales an epilogue the caller
  // adds: graph::quantize_weights_int8). Few rows run the few-rows kernel reading b as int8;
  // more rows (a prefill) convert b to a's dtype and run the templates.
  if (b.dtype() == dtypes::i8 && sb.size() == 2 && (a.dtype().is_half() || a.dtype() == dtypes::f32)) {
    const std::int64_t rows = shape_numel(sa) / std::max<std::int64_t>(k, 1);
    static const bool few_rows = util::env_bool("HIDET_MATMUL_FEW_ROWS", true);
    if (!few_rows || rows > 8 || rows > std::numeric_limits<int>::max() || n > std::numeric_limits<int>::max() ||
        k > std::numeric_limits<int>::max())
      return matmul(a, cast(b, a.dtype()), epi, extras);
    Device dev = detail::common_device("matmul", {a, b});
    Device run_dev = dev.is_cpu() ? Device::cuda() : dev;
    auto aligned = [&](const Tensor &x, Shape shape) {
      Tensor y = x.to(run_dev).reshape(std::move(shape));
      return reinterpret_cast<std::uintptr_t>(y.data_ptr()) % 16 ? y.clone() : y;
    };
    Tensor a2 = aligned(a, {rows, k}), b2 = aligned(b, {k, n});
    const DataType at = a.dtype();
    Tensor c = epi ? empty(epi->out.shape(), epi->out.dtype(), run_dev) : empty({rows, n}, at, run_dev);
    std::vector<Tensor> extras2;
    for (const auto &x : extras) extras2.push_back(x.to(run_dev));
    static std::mutex mu;
    static std::map<std::string, std::shared_ptr<templates::MatmulGemv>> built;
    const auto &info = runtime::device_info(0);
    const auto cfg = templates::matmul_gemv_heuristic_config(int(rows), int(n), int(k), at,
                                                             info.emulated || info.sm_count <= 0 ? 132 : info.sm_count, true);
    const std::string key = str_cat(at, " x i8 ", rows, "x", n, "x", k, " ", cfg.str(), epi ? " epilogue " + epi->key : "");
    std::shared_ptr<templates::MatmulGemv> run;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (auto it = built.find(key); it != built.end()) run = it->second;
    }
    if (!run) {
      auto made = std::make_shared<templates::MatmulGemv>(int(rows), int(n), int(k), at, cfg, epi);
      std::lock_guard<std::mutex> lock(mu);
      run = built.emplace(key, made).first->second;
    }
    (*run)(a2, b2, c, extras2);
    if (dev.is_cpu()) c = c.to(dev);
    if (epi) return c;
    Shape out_shape(sa.begin(), sa.end() - 1);
    if (a.ndim() == 1) out_shape.clear();
    out_shape.push_back(n);
    return c.reshape(out_shape);
  }
  // The templates: one float dtype, sizes in int range; b a matrix (a's batch folds into rows),
  // or a batch in which each operand has the whole batch or none of it.
  std::int64_t rows = sb.size() == 2 ? shape_numel(sa) / std::max<std::int64_t>(k, 1) : m;
  std::int64_t count = sb.size() == 2 ? 1 : shape_numel(batch);
  bool a_has = shape_numel(ba) > 1, b_has = shape_numel(bb) > 1;
  bool batch_ok = count == 1 || ((!a_has || ba == batch) && (!b_has || bb == batch) && count <= 65535);
  const std::int64_t int_max = std::numeric_limits<int>::max();
  if (a.dtype() == b.dtype() && (t == dtypes::f32 || t.is_half()) && batch_ok && rows > 0 && n > 0 && k > 0 &&
      rows * count <= int_max && n <= int_max && k <= int_max) {
    templates::MatmulBatch mb{int(count), a_has, b_has};
    Device dev = detail::common_device("matmul", {a, b});
    Device run_dev = dev.is_cpu() ? Device::cuda() : dev;
    // On the device, with 16-byte aligned data (the kernels' vector copies and TMA need it).
    auto prepare = [&](const Tensor &x, Shape shape) {
      Tensor y = x.to(run_dev).reshape(std::move(shape));
      return reinterpret_cast<std::uintptr_t>(y.data_ptr()) % 16 ? y.clone() : y;
    };
    auto with_batch = [&](bool has, Shape s) {
      if (count > 1 && has) s.insert(s.begin(), count);
      return s;
    };
    Tensor a2 = prepare(a, with_batch(a_has, {rows, k})), b2 = prepare(b, with_batch(b_has, {k, n}));
    Tensor c = epi ? empty(epi->out.shape(), epi->out.dtype(), run_dev) : empty(out, t, run_dev);
    Tensor c2 = epi ? c : c.reshape(with_batch(true, {rows, n}));
    std::vector<Tensor> extras2;
    for (const auto &x : extras) extras2.push_back(x.to(run_dev));
    if (auto run = matmul_template_kernel(int(rows), int(n), int(k), t, a2, b2, c2, mb, epi, extras2)) {
      run(a2, b2, c2, extras2);
      if (dev.is_cpu()) c = c.to(dev);
      return epi || final_shape == out ? c : c.reshape(final_shape);
    }
  }
  Tensor r = run_plan(
      "matmul{}", [&] { return detail::matmul_plan(sa, a.dtype(), sb, b.dtype(), out, t, compute_dtype(t)); },
      {a.reshape(sa), b.reshape(sb)})[0];
  r = final_shape == out ? r : r.reshape(final_shape);
  return epi ? apply_epilogue(*epi, r, extras) : r;
}

HIDET_INLINE Dim matmul_row_count(const SymShape &a_shape) {
  return a_shape.empty() ? Dim(1) : sym_numel(SymShape(a_shape.begin(), a_shape.end() - 1));
}

HIDET_INLINE std::optional<Tensor> matmul_rows(const Tensor &a, const Tensor &b, const std::shared_ptr<const Epilogue> &epi,
                                               const std::vector<Tensor> &extras, const Dim &rows,
                                               const SymbolValues &values) {
  if (a.is_symbolic() || b.is_symbolic() || a.ndim() < 2 || b.ndim() != 2 || a.dtype() != b.dtype() ||
      !(a.dtype().is_half() || a.dtype() == dtypes::f32) || rows.is_constant())
    return std::nullopt;
  const Shape sa = a.shape();
  const std::int64_t k = sa.back(), n = b.shape()[1], m = a.numel() / std::max<std::int64_t>(k, 1);
  if (b.shape()[0] != k || m <= 0 || n <= 0 || k <= 0 || m > std::numeric_limits<int>::max() ||
      n > std::numeric_limits<int>::max() || k > std::numeric_limits<int>::max())
    return std::nullopt;
  if (rows.evaluate(values) != m)
    throw ValueError(str_cat("matmul_rows: the row count ", rows.str(), " is ", rows.evaluate(values),
                             " at these symbol values, but a of shape ", shape_str(sa), " has ", m, " rows"));
  Device dev = detail::common_device("matmul", {a, b});
  if (!dev.is_cuda()) return std::nullopt;
  const DataType t = a.dtype();
  Shape out(sa.begin(), sa.end() - 1);
  out.push_back(n);
  if (epi) { // x: the product as [rows, n] or with a's leading extents
    Shape xs = evaluate_shape(epi->x.sym_shape(), values);
    check_epilogue("matmul", *epi, xs.size() == 2 ? Shape{m, n} : out, t, extras, values);
  }
  auto run = matmul_template_kernel_rows(rows, int(m), int(n), int(k), t, {}, epi);
  if (!run) return std::nullopt;
  // 16-byte aligned data (the kernels' vector copies and TMA need it)
  auto aligned = [](const Tensor &x) { return reinterpret_cast<std::uintptr_t>(x.data_ptr()) % 16 ? x.clone() : x; };
  Tensor a2 = aligned(a.reshape({m, k})), b2 = aligned(b);
  Tensor c = epi ? empty(evaluate_shape(epi->out.sym_shape(), values), epi->out.dtype(), dev) : empty({m, n}, t, dev);
  run(a2, b2, c, extras, values);
  return epi ? c : c.reshape(out);
}

HIDET_INLINE Tensor batch_matmul(const Tensor &a, const Tensor &b) {
  if (a.ndim() != 3 || b.ndim() != 3 || a.sym_shape()[0] != b.sym_shape()[0])
    throw ValueError(str_cat("batch_matmul: expected [B, m, k] and [B, k, n], got shapes ", shape_str(a.sym_shape()),
                             " and ", shape_str(b.sym_shape())));
  return matmul(a, b);
}

HIDET_INLINE Tensor gemv(const Tensor &x, const Tensor &w) {
  if (x.ndim() != 2 || w.ndim() != 2 || x.shape()[1] != w.shape()[1])
    throw ValueError(str_cat("gemv: expected x [m, k] and w [n, k], got shapes ", shape_str(x.shape()), " and ",
                             shape_str(w.shape())));
  if (!x.dtype().is_float() || x.dtype() != w.dtype())
    throw ValueError(str_cat("gemv: expected float x and w of one dtype, got ", x.dtype(), " and ", w.dtype()));
  const std::int64_t m = x.shape()[0], n = w.shape()[0], k = x.shape()[1];
  DataType t = x.dtype(), cd = compute_dtype(t);
  return run_task(
      "gemv{}",
      [&] {
        auto xi = input("x", x.shape(), t);
        auto wi = input("w", w.shape(), t);
        auto y = reduce({m, n}, {k}, [&](const Idx &i, const Idx &r) {
          return lang::cast(xi.at({i[0], r[0]}), cd) * lang::cast(wi.at({i[1], r[0]}), cd);
        }, ReduceKind::Sum, cd, t, "gemv");
        return Task{"gemv", {xi, wi}, {y}, "", {}};
      },
      {x, w})[0];
}

namespace detail {
/// scaled_mm on tensors with data (validated by scaled_mm).
HIDET_INLINE Tensor scaled_mm_eager(const Tensor &a, const Tensor &b, const Tensor &scale_a, const Tensor &scale_b,
                                    DataType out_dtype) {
  const std::int64_t m = a.shape()[0], n = b.shape()[0], k = a.shape()[1];
  Device dev = common_device("scaled_mm", {a, b, scale_a, scale_b});
  Tensor sa = scale_a.reshape({1}), sb = scale_b.reshape({1});
  std::string why; // why the wgmma kernel does not serve
  if (!dev.is_cuda() || !templates::wgmma_available()) why = "no Hopper GPU here (the emulator has no wgmma)";
  else if (a.dtype() != b.dtype()) why = str_cat("mixed inputs ", a.dtype(), " x ", b.dtype());
  else if (k % 16) why = str_cat("k = ", k, " is not a multiple of 16");
  else if (std::max({m, n, k}) > std::numeric_limits<int>::max()) why = "sizes past the int range";
  if (why.empty()) {
    // TMA needs 16-byte aligned operands
    auto aligned = [](const Tensor &x) { return reinterpret_cast<std::uintptr_t>(x.data_ptr()) % 16 ? x.clone() : x; };
    static std::mutex mu;
    static std::map<std::string, std::shared_ptr<templates::MatmulFp8>> runs;
    std::shared_ptr<templates::MatmulFp8> run;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto &r = runs[str_cat(a.dtype(), " ", out_dtype, " ", m, "x", n, "x", k, " ", dev)];
      if (!r) r = std::make_shared<templates::MatmulFp8>(int(m), int(n), int(k), a.dtype(), out_dtype);
      run = r;
    }
    Tensor c = empty({m, n}, out_dtype, dev);
    (*run)(aligned(a), aligned(b), sa, sb, c);
    return c;
  }
  util::debug_log(str_cat("scaled_mm ", a.dtype(), " x ", b.dtype(), " ", m, "x", n, "x", k,
                          ": the portable reduction kernel runs (", why, ")"));
  return run_task(
      str_cat("scaled_mm{out_dtype=", out_dtype, "}"),
      [&] {
        auto ai = input("a", a.shape(), a.dtype());
        auto bi = input("b", b.shape(), b.dtype());
        auto sai = input("scale_a", {1}, dtypes::f32);
        auto sbi = input("scale_b", {1}, dtypes::f32);
        auto acc = reduce({m, n}, {k}, [&](const Idx &i, const Idx &r) {
          return lang::cast(ai.at({i[0], r[0]}), dtypes::f32) * lang::cast(bi.at({i[1], r[0]}), dtypes::f32);
        }, ReduceKind::Sum, dtypes::f32, dtypes::f32, "acc");
        auto y = compute("scaled_mm", {m, n}, [&](Expr i, Expr j) {
          return lang::cast(acc[i][j] * (sai.at({0}) * sbi.at({0})), out_dtype);
        });
        return Task{"scaled_mm", {ai, bi, sai, sbi}, {y}, "", {}};
      },
      {a, b, sa, sb})[0];
}
} // namespace detail

HIDET_INLINE Tensor scaled_mm(const Tensor &a, const Tensor &b, const Tensor &scale_a, const Tensor &scale_b,
                              DataType out_dtype) {
  if (a.ndim() != 2 || b.ndim() != 2 || a.sym_shape()[1] != b.sym_shape()[1])
    throw ValueError(str_cat("scaled_mm: expected a [m, k] and b [n, k] (b transposed, k innermost), got shapes ",
                             shape_str(a.sym_shape()), " and ", shape_str(b.sym_shape())));
  if (!a.dtype().is_fp8() || !b.dtype().is_fp8())
    throw ValueError(str_cat("scaled_mm: a and b must be f8e4m3 or f8e5m2, got ", a.dtype(), " and ", b.dtype(),
                             "; divide by a scale and cast them (ops::cast(x, f8e4m3))"));
  for (const Tensor *s : {&scale_a, &scale_b}) {
    bool one = true;
    for (const auto &d : s->sym_shape()) one = one && d == 1;
    if (s->dtype() != dtypes::f32 || !one)
      throw ValueError(str_cat("scaled_mm: ", s == &scale_a ? "scale_a" : "scale_b",
                               " must be an f32 tensor of one element (a per-tensor scale), got ", s->dtype(),
                               shape_str(s->sym_shape())));
  }
  if (!(out_dtype.is_half() || out_dtype == dtypes::f32))
    throw ValueError(str_cat("scaled_mm: out_dtype must be f16, bf16 or f32, got ", out_dtype));
  Device dev = detail::common_device("scaled_mm", {a, b, scale_a, scale_b});
  return apply_operator(
      "ScaledMM", {a, b, scale_a, scale_b}, {{SymShape{a.sym_shape()[0], b.sym_shape()[0]}, out_dtype, dev}},
      [out_dtype](const std::vector<Tensor> &in) {
        return std::vector<Tensor>{detail::scaled_mm_eager(in[0], in[1], in[2], in[3], out_dtype)};
      },
      str_cat("out_dtype=", out_dtype))[0];
}

namespace detail {
/// grouped_matmul on tensors with data (validated by grouped_matmul): the heuristic's kernel for
/// this S, built once per (dtypes, E, N, K, configuration).
HIDET_INLINE Tensor grouped_matmul_eager(const Tensor &x, const Tensor &w, const Tensor &offs) {
  const std::int64_t s = x.shape()[0], k = x.shape()[1], experts = w.shape()[0], n = w.shape()[2];
  Device dev = common_device("grouped_matmul", {x, w, offs});
  Device run_dev = dev.is_cpu() ? Device::cuda() : dev;
  if (s == 0 || n == 0 || k == 0) return zeros({s, n}, x.dtype(), dev); // an empty sum is 0
  const auto &info = runtime::device_info(0);
  const int sms = info.emulated || info.sm_count <= 0 ? 132 : info.sm_count;
  const auto cfg = templates::matmul_grouped_heuristic_config(
      s, int(experts), int(n), int(k), x.dtype(), sms, option::kernel_options().tensor_cores);
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<templates::MatmulGrouped>> runs;
  std::shared_ptr<templates::MatmulGrouped> run;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto &r = runs[str_cat(x.dtype(), " ", offs.dtype(), " E", experts, " ", n, "x", k, " ",
                           cfg.str(), " ", run_dev)];
    if (!r)
      r = std::make_shared<templates::MatmulGrouped>(int(experts), int(n), int(k), x.dtype(),
                                                     offs.dtype(), cfg);
    run = r;
  }
  // on the device, 16-byte aligned (vector loads and cp.async)
  auto prepare = [&](const Tensor &t) {
    Tensor y = t.to(run_dev);
    return reinterpret_cast<std::uintptr_t>(y.data_ptr()) % 16 ? y.clone() : y;
  };
  Tensor out = empty({s, n}, x.dtype(), run_dev);
  (*run)(prepare(x), prepare(w), offs.to(run_dev), out);
  return dev.is_cpu() ? out.to(dev) : out;
}
} // namespace detail

HIDET_INLINE Tensor grouped_matmul(const Tensor &x, const Tensor &weight, const Tensor &offs) {
  if (x.ndim() != 2 || weight.ndim() != 3 || offs.ndim() != 1)
    throw ValueError(
        str_cat("grouped_matmul: expected x [S, K], weight [E, K, N] and offs [E], got shapes ",
                shape_str(x.sym_shape()), ", ", shape_str(weight.sym_shape()), " and ",
                shape_str(offs.sym_shape())));
  detail::require_equal_extents("grouped_matmul", x.sym_shape()[1], weight.sym_shape()[1],
                                str_cat("the last dimension of x ", shape_str(x.sym_shape()),
                                        " and the second dimension of weight ",
                                        shape_str(weight.sym_shape())));
  detail::require_equal_extents("grouped_matmul", offs.sym_shape()[0], weight.sym_shape()[0],
                                str_cat("the length of offs ", shape_str(offs.sym_shape()),
                                        " and the expert count of weight ",
                                        shape_str(weight.sym_shape())));
  if (x.dtype() != weight.dtype() || !(x.dtype() == dtypes::f32 || x.dtype().is_half()))
    throw ValueError(
        str_cat("grouped_matmul: x and weight must share a dtype among f32, f16 and bf16, got ",
                x.dtype(), " and ", weight.dtype(), "; cast x to the weight's dtype"));
  if (offs.dtype() != dtypes::i32 && offs.dtype() != dtypes::i64)
    throw ValueError(str_cat(
        "grouped_matmul: offs must be int32 or int64 (cumulative row counts), got ", offs.dtype()));
  for (const Tensor *t : {&weight, &offs})
    if (!t->sym_shape()[0].is_constant())
      throw ValueError(str_cat("grouped_matmul: the expert count must be a constant, got ",
                               shape_str(t->sym_shape())));
  for (const auto &d : {weight.sym_shape()[1], weight.sym_shape()[2]})
    if (!d.is_constant())
      throw ValueError(str_cat("grouped_matmul: weight's K and N must be constants, got ",
                               shape_str(weight.sym_shape())));
  Device dev = detail::common_device("grouped_matmul", {x, weight, offs});
  return apply_operator("GroupedMatmul", {x, weight, offs},
                        {{SymShape{x.sym_shape()[0], weight.sym_shape()[2]}, x.dtype(), dev}},
                        [](const std::vector<Tensor> &in) {
                          // symbolic inputs of constant shapes (specialize): the node again
                          return std::vector<Tensor>{
                              any_symbolic(in) ? grouped_matmul(in[0], in[1], in[2])
                                               : detail::grouped_matmul_eager(in[0], in[1], in[2])};
                        })[0];
}

HIDET_INLINE Tensor linear(const Tensor &x, const Tensor &weight,
                           const std::optional<Tensor> &bias) {
  if (weight.ndim() != 2)
    throw ValueError(str_cat("linear: weight must be 2-D [out_features, in_features], got shape ", shape_str(weight.shape())));
  // One shape-generic kernel per dtype: a model's weights of many shapes are transposed while it
  // is traced, one after another, and a kernel per shape cost an NVRTC compile each (Swin-T: 20).
  const SymShape ws = weight.sym_shape();
  const bool generic = !weight.is_symbolic(); // a graph's symbolic weight: a node of its own extents
  const Dim n = generic ? Dim::symbol("linear_n") : ws[0], k = generic ? Dim::symbol("linear_k") : ws[1];
  auto w = input("w", SymShape{n, k}, weight.dtype());
  auto t = compute("wt", SymShape{k, n}, [&](const Idx &i) { return w.at({i[1], i[0]}); });
  Task task{"transpose", {w}, {t}, "", {}};
  auto transpose = [&] {
    return generic ? detail::run_symbolic_task("linear_weight_t{}", task, {weight}, std::nullopt)[0]
                   : run_task("linear_weight_t{}", [&] { return task; }, {weight})[0];
  };
  // Traced into a graph (x symbolic), the weight is a graph constant: its transpose is computed
  // once and shared by every graph traced from it (runtime/shared_constants.hpp); called on data,
  // the weight may change between calls and is transposed each time.
  Tensor wt = generic && x.is_symbolic() ? shared_constant("linear_weight_t", {weight}, transpose) : transpose();
  Tensor y = matmul(x, wt);
  return bias ? add(y, *bias) : y;
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
