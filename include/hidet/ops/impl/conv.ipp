// Definitions for hidet/ops/conv.hpp.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "hidet/ops/conv.hpp"

#include "hidet/ops/cache.hpp"
#include "hidet/ops/reduce.hpp"
#include "hidet/ops/templates/conv2d.hpp"
#include "hidet/ops/transform.hpp"
#include "hidet/ops/tuning.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

/// Attributes of conv2d (each a (height, width) pair).
struct Conv2dAttrs {
  BOOST_HANA_DEFINE_STRUCT(Conv2dAttrs, (std::vector<std::int64_t>, stride),
                           (std::vector<std::int64_t>, padding),
                           (std::vector<std::int64_t>, dilation), (std::int64_t, groups),
                           (bool, bias));
};

namespace detail {
/// Validated sizes of a conv2d call (NCHW order whatever the layout).
struct Conv2dSizes {
  std::int64_t N, C, H, W, O, CG, KH, KW, OH, OW;
  std::vector<std::int64_t> stride, padding, dilation;
  std::int64_t groups;
};

/// Checks a conv2d call and derives its sizes; `nhwc` selects the shapes' axis order.
HIDET_INLINE Conv2dSizes conv2d_sizes(const char *op, const Tensor &x, const Tensor &weight,
                                const std::optional<Tensor> &bias, std::vector<std::int64_t> stride,
                                std::vector<std::int64_t> padding,
                                std::vector<std::int64_t> dilation, std::int64_t groups,
                                bool nhwc) {
  auto pair = [&](const char *what, std::vector<std::int64_t> v) {
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2)
      throw ValueError(
          str_cat(op, ": ", what, " must have 1 or 2 values, got ", detail::ints_str(v)));
    return v;
  };
  stride = pair("stride", stride), padding = pair("padding", padding),
  dilation = pair("dilation", dilation);
  if (x.ndim() != 4 || weight.ndim() != 4)
    throw ValueError(
        str_cat(op,
                nhwc ? ": expected x [N, H, W, C] and weight [O, KH, KW, C/groups], got shapes "
                     : ": expected x [N, C, H, W] and weight [O, C/groups, KH, KW], got shapes ",
                shape_str(x.shape()), " and ", shape_str(weight.shape())));
  const auto &xs = x.shape(), &ws = weight.shape();
  Conv2dSizes z;
  z.N = xs[0], z.C = nhwc ? xs[3] : xs[1], z.H = nhwc ? xs[1] : xs[2], z.W = nhwc ? xs[2] : xs[3];
  z.O = ws[0], z.CG = nhwc ? ws[3] : ws[1], z.KH = nhwc ? ws[1] : ws[2],
  z.KW = nhwc ? ws[2] : ws[3];
  if (groups <= 0 || z.C % groups != 0 || z.O % groups != 0 || z.CG != z.C / groups)
    throw ValueError(str_cat(
        op, ": x of shape ", shape_str(xs), " and weight of shape ", shape_str(ws),
        " do not match groups=", groups, ": C and O must be divisible by groups and the weight's ",
        "channel extent (", nhwc ? "shape[3]" : "shape[1]", ") must be C / groups"));
  for (int i = 0; i < 2; ++i)
    if (stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0)
      throw ValueError(str_cat(op, ": stride ", detail::ints_str(stride), " and dilation ",
                               detail::ints_str(dilation), " must be positive and padding ",
                               detail::ints_str(padding), " non-negative"));
  if (x.dtype().is_bool() || weight.dtype().is_bool())
    throw ValueError(str_cat(op, ": dtype bool is not supported (x ", x.dtype(), ", weight ",
                             weight.dtype(), ")"));
  if (bias && (bias->ndim() != 1 || bias->shape()[0] != z.O))
    throw ValueError(
        str_cat(op, ": bias must have shape (", z.O, ",), got ", shape_str(bias->shape())));
  auto out_size = [](std::int64_t n, std::int64_t k, std::int64_t s, std::int64_t p,
                     std::int64_t d) -> std::int64_t {
    std::int64_t span = n + 2 * p - d * (k - 1) - 1;
    return span < 0 ? 0 : span / s + 1;
  };
  z.OH = out_size(z.H, z.KH, stride[0], padding[0], dilation[0]);
  z.OW = out_size(z.W, z.KW, stride[1], padding[1], dilation[1]);
  if (z.OH <= 0 || z.OW <= 0)
    throw ValueError(str_cat(op, ": the kernel ", shape_str({z.KH, z.KW}), " (dilation ",
                             detail::ints_str(dilation),
                             ") is larger than the padded input of shape ", shape_str(xs)));
  z.stride = stride, z.padding = padding, z.dilation = dilation, z.groups = groups;
  return z;
}

/// The template's inputs on the device it runs on, or nullopt when a template cannot read them:
/// dtypes other than f32/f16/bf16 or mixed, sizes past 2^30, views not 16-byte aligned.
HIDET_INLINE std::optional<std::vector<Tensor>> conv2d_template_inputs(const Conv2dSizes &z, const Tensor &x,
                                                                    const Tensor &weight,
                                                                    const std::optional<Tensor> &bias, Device run_dev) {
  DataType dt = x.dtype();
  if (weight.dtype() != dt || (bias && bias->dtype() != dt)) return std::nullopt;
  if (!(dt == dtypes::f32 || dt.is_half())) return std::nullopt;
  const std::int64_t lim = std::int64_t(1) << 30;
  for (std::int64_t v : {z.N, z.C, z.H, z.W, z.O, z.KH, z.KW, z.OH, z.OW, z.groups, z.stride[0],
                         z.stride[1], z.padding[0], z.padding[1], z.dilation[0], z.dilation[1]})
    if (v >= lim) return std::nullopt;
  std::vector<Tensor> ins{x, weight};
  if (bias) ins.push_back(*bias);
  for (auto &t : ins)
    if (!(t.device() == run_dev)) t = t.to(run_dev);
  for (auto &t : ins)
    if (reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 != 0)
      return std::nullopt; // a view: 16-byte copies fail
  return ins;
}

HIDET_INLINE templates::Conv2dShape conv2d_shape(const Conv2dSizes &z) {
  return templates::Conv2dShape{int(z.N),           int(z.C),          int(z.H),          int(z.W),
                                int(z.O),           int(z.KH),         int(z.KW),         int(z.stride[0]),
                                int(z.stride[1]),   int(z.padding[0]), int(z.padding[1]), int(z.dilation[0]),
                                int(z.dilation[1]), int(z.groups)};
}

/// The built conv2d runners of the process, by dtype, layout, problem (Conv2dShape::str: a
/// symbolic batch prints as its symbols), bias, config and epilogue; and how many were built for
/// a symbolic batch (conv2d_symbolic_batch).
struct Conv2dRunners {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<templates::Conv2d>> built;
  std::size_t symbolic_builds = 0;
};
HIDET_INLINE Conv2dRunners &conv2d_runners() {
  static Conv2dRunners cache;
  return cache;
}
/// The runner for a problem and config, built (outside the lock) the first time.
HIDET_INLINE std::shared_ptr<templates::Conv2d> conv2d_runner(const templates::Conv2dShape &s, DataType dt,
                                                              templates::Conv2dLayout layout, bool bias,
                                                              const templates::Conv2dConfig &cfg,
                                                              const std::shared_ptr<const Epilogue> &epi) {
  std::string key = str_cat(dt, layout == templates::Conv2dLayout::NHWC ? " nhwc " : " nchw ", s.str(),
                            bias ? " bias " : " ", cfg.str(), epi ? " epilogue " + epi->key : "");
  auto &cache = conv2d_runners();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.built.find(key); it != cache.built.end()) return it->second;
  }
  auto made = std::make_shared<templates::Conv2d>(s, dt, layout, bias, cfg, epi);
  std::lock_guard<std::mutex> lock(cache.mu);
  auto [it, fresh] = cache.built.emplace(key, made);
  if (fresh && s.symbolic_batch()) ++cache.symbolic_builds;
  return it->second;
}

/// The config for a problem: the heuristic at search space 0, else the tuned choice (remembered
/// per problem and space in this process; tuning::pick records it on disk).
HIDET_INLINE templates::Conv2dConfig conv2d_config(const templates::Conv2dShape &s, DataType dt,
                                             templates::Conv2dLayout layout, const Tensor &x,
                                             const Tensor &w, const std::optional<Tensor> &bias,
                                             const Shape &out_shape) {
  using templates::Conv2d;
  int space = option::search_space();
  int sms = runtime::device_info(0).sm_count;
  bool nhwc = layout == templates::Conv2dLayout::NHWC;
  bool hopper = templates::wgmma_available();
  if (space == 0) return templates::conv2d_heuristic_config(s, dt, sms, hopper);
  std::string sig = str_cat(dt, nhwc ? " nhwc " : " nchw ", s.str(), bias ? " bias" : "");
  static std::mutex mu;
  static std::map<std::string, templates::Conv2dConfig> chosen;
  std::string mkey = str_cat(sig, " space ", space);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = chosen.find(mkey); it != chosen.end()) return it->second;
  }
  auto cfgs = templates::conv2d_candidates(s, dt, space, sms, hopper);
  Tensor y = empty(out_shape, dt, "cuda");
  std::vector<tuning::Candidate> cands;
  for (auto &cfg : cfgs)
    cands.push_back({cfg.str(), [=]() -> tuning::Launch {
                       auto r = std::make_shared<Conv2d>(s, dt, layout, bool(bias), cfg);
                       return [=] { (*r)(x, w, bias ? &*bias : nullptr, y); };
                     }});
  auto best = cfgs[tuning::pick("conv2d", tuning::make_key("conv2d", sig), cands)];
  std::lock_guard<std::mutex> lock(mu);
  chosen.emplace(mkey, best);
  return best;
}

/// Runs conv2d through a template when one serves the call (see the top of the file); nullopt
/// otherwise.
HIDET_INLINE std::optional<Tensor> conv2d_template(const Conv2dSizes &z, const Tensor &x,
                                             const Tensor &weight,
                                             const std::optional<Tensor> &bias,
                                             templates::Conv2dLayout layout,
                                             const std::shared_ptr<const Epilogue> &epi,
                                             const std::vector<Tensor> &extras) {
  using namespace templates;
  DataType dt = x.dtype();
  Conv2dShape s = conv2d_shape(z);
  try {
    check_conv2d_problem(s, dt);
  } catch (const ValueError &) {
    return std::nullopt;
  }
  Device dev = detail::common_device("conv2d", bias ? std::vector<Tensor>{x, weight, *bias} : std::vector<Tensor>{x, weight});
  Device run_dev = dev.is_cpu() ? Device::cuda() : dev;
  auto maybe_ins = conv2d_template_inputs(z, x, weight, bias, run_dev);
  if (!maybe_ins) return std::nullopt;
  std::vector<Tensor> &ins = *maybe_ins;
  std::optional<Tensor> b;
  if (bias) b = ins[2];
  bool nhwc = layout == Conv2dLayout::NHWC;
  Shape out = nhwc ? Shape{z.N, z.OH, z.OW, z.O} : Shape{z.N, z.O, z.OH, z.OW};
  Conv2dConfig cfg = conv2d_config(s, dt, layout, ins[0], ins[1], b, out);
  std::shared_ptr<Conv2d> runner = conv2d_runner(s, dt, layout, bool(bias), cfg, epi);
  Tensor y = epi ? empty(epi->out.shape(), epi->out.dtype(), run_dev) : empty(out, dt, run_dev);
  std::vector<Tensor> extras2;
  for (const auto &t : extras) extras2.push_back(t.to(run_dev));
  (*runner)(ins[0], ins[1], b ? &*b : nullptr, y, extras2);
  return dev.is_cpu() ? y.to(dev) : y;
}

/// The node recorded when an input is symbolic (its run calls `eager`, the operator itself).
HIDET_INLINE std::optional<Tensor> conv2d_trace(const char *name, const Conv2dSizes &z, const Tensor &x,
                                               const Tensor &weight, const std::optional<Tensor> &bias,
                                               const Shape &out,
                                               Tensor (*eager)(const Tensor &, const Tensor &,
                                                               const std::optional<Tensor> &,
                                                               std::vector<std::int64_t>, std::vector<std::int64_t>,
                                                               std::vector<std::int64_t>, std::int64_t),
                                               const std::shared_ptr<const Epilogue> &epi = nullptr,
                                               const std::vector<Tensor> &extras = {}, bool nhwc = false) {
  std::vector<Tensor> ins{x, weight};
  if (bias) ins.push_back(*bias);
  ins.insert(ins.end(), extras.begin(), extras.end());
  if (!any_symbolic(ins)) return std::nullopt;
  DataType t = promote_types(x.dtype(), weight.dtype());
  if (bias) t = promote_types(t, bias->dtype());
  Device dev = common_device(name, ins);
  std::string attrs = str_cat("stride=", ints_str(z.stride), ", padding=", ints_str(z.padding),
                              ", dilation=", ints_str(z.dilation), ", groups=", z.groups);
  if (epi) {
    bool has_bias = bool(bias);
    auto run = [z, epi, has_bias, nhwc](const std::vector<Tensor> &in) {
      std::optional<Tensor> b;
      if (has_bias) b = in[2];
      std::vector<Tensor> ex(in.begin() + (has_bias ? 3 : 2), in.end());
      using Fn = Tensor (*)(const Tensor &, const Tensor &, const std::optional<Tensor> &, std::vector<std::int64_t>,
                            std::vector<std::int64_t>, std::vector<std::int64_t>, std::int64_t,
                            const std::shared_ptr<const Epilogue> &, const std::vector<Tensor> &);
      Fn f = nhwc ? static_cast<Fn>(&conv2d_nhwc) : static_cast<Fn>(&conv2d); // with an epilogue
      return std::vector<Tensor>{f(in[0], in[1], b, z.stride, z.padding, z.dilation, z.groups, epi, ex)};
    };
    return mark_scratch_build(trace_operator(str_cat("Fused", name), ins, str_cat(attrs, ", ", fused_attrs(name, *epi)),
                          {{to_sym_shape(epi->out.shape()), epi->out.dtype(), dev}}, run)[0]);
  }
  auto run = [z, eager](const std::vector<Tensor> &in) {
    std::optional<Tensor> b;
    if (in.size() > 2) b = in[2];
    return std::vector<Tensor>{eager(in[0], in[1], b, z.stride, z.padding, z.dilation, z.groups)};
  };
  return mark_scratch_build(trace_operator(name, ins, attrs, {{to_sym_shape(out), t, dev}}, run)[0]);
}

/// The auto-scheduled conv2d of NCHW tensors (every dtype and size).
HIDET_INLINE Tensor conv2d_generic(const Conv2dSizes &z, const Tensor &x, const Tensor &weight,
                             const std::optional<Tensor> &bias) {
  const char *op = "conv2d";
  auto [N, C, H, W, O, CG, KH, KW, OH, OW, stride, padding, dilation, groups] = z;
  (void)N, (void)C;
  DataType t = promote_types(x.dtype(), weight.dtype());
  if (bias) t = promote_types(t, bias->dtype());
  DataType cd = compute_dtype(t);
  Conv2dAttrs a{stride, padding, dilation, groups, bool(bias)};
  std::string attrs = attrs_str(a);
  Shape out{z.N, O, OH, OW};
  std::vector<Tensor> ins{x, weight};
  if (bias) ins.push_back(*bias);
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto xi = input("x", x.shape(), x.dtype());
        auto wi = input("weight", weight.shape(), weight.dtype());
        std::int64_t og = O / groups;
        auto r = reduce(
            out, {CG, KH, KW},
            [&](const Idx &o, const Idx &k) {
              Expr h = o[2] * int(stride[0]) - int(padding[0]) + k[1] * int(dilation[0]);
              Expr w = o[3] * int(stride[1]) - int(padding[1]) + k[2] * int(dilation[1]);
              Expr ok = h >= 0 && h < int(H) && w >= 0 && w < int(W);
              Expr c = o[1] / int(og) * int(CG) + k[0];
              Expr xv = lang::cast(xi.at({o[0], c, lang::min(lang::max(h, 0), int(H - 1)),
                                          lang::min(lang::max(w, 0), int(W - 1))}),
                                   cd);
              Expr prod = xv * lang::cast(wi.at({o[1], k[0], k[1], k[2]}), cd);
              return lang::select(ok, prod, lang::cast(Expr(0), cd));
            },
            ReduceKind::Sum, cd, bias ? cd : t, bias ? "conv2d_sum" : op);
        if (!bias) return Task{op, {xi, wi}, {r}, attrs, {}};
        auto bi = input("bias", bias->shape(), bias->dtype());
        auto y = compute(
            op, out, [&](const Idx &i) { return r.at(i) + lang::cast(bi.at({i[1]}), cd); }, t);
        return Task{op, {xi, wi, bi}, {y}, attrs, {}};
      },
      ins)[0];
}
} // namespace detail

namespace detail {
/// A convolution's output extents from symbolic input extents (constant weights), or nullopt
/// where they do not follow (a symbolic weight, malformed attributes: the operator's own checks
/// then report them).
HIDET_INLINE std::optional<SymShape> conv2d_sym_shape(const Tensor &x, const Tensor &weight, std::vector<std::int64_t> stride,
                                                      std::vector<std::int64_t> padding, std::vector<std::int64_t> dilation,
                                                      bool channels_last) {
  SymShape xs = x.sym_shape(), ws = weight.sym_shape();
  auto pair = [](std::vector<std::int64_t> &v) { if (v.size() == 1) v.push_back(v[0]); return v.size() == 2; };
  if (xs.size() != 4 || ws.size() != 4 || !is_constant_shape(ws) || !pair(stride) || !pair(padding) || !pair(dilation))
    return std::nullopt;
  const int h = channels_last ? 1 : 2;
  const std::int64_t kh = ws[channels_last ? 1 : 2].value(), kw = ws[channels_last ? 2 : 3].value();
  Dim oh = window_out_extent(xs[std::size_t(h)], kh, stride[0], padding[0], dilation[0]);
  Dim ow = window_out_extent(xs[std::size_t(h + 1)], kw, stride[1], padding[1], dilation[1]);
  Dim o = ws[0];
  return channels_last ? SymShape{xs[0], oh, ow, o} : SymShape{xs[0], o, oh, ow};
}
} // namespace detail

HIDET_INLINE Tensor conv2d(const Tensor &x, const Tensor &weight,
                     const std::optional<Tensor> &bias,
                     std::vector<std::int64_t> stride,
                     std::vector<std::int64_t> padding,
                     std::vector<std::int64_t> dilation, std::int64_t groups) {
  return conv2d(x, weight, bias, std::move(stride), std::move(padding), std::move(dilation), groups, nullptr, {});
}

HIDET_INLINE Tensor conv2d(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias,
                           std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                           std::vector<std::int64_t> dilation, std::int64_t groups,
                           const std::shared_ptr<const Epilogue> &epi, const std::vector<Tensor> &extras) {
  if (!epi && detail::has_symbolic_extents({x, weight})) // the batch and the image sizes may be symbols
    return detail::trace_by_probing("conv2d", bias ? std::vector<Tensor>{x, weight, *bias} : std::vector<Tensor>{x, weight},
                                    [=](const std::vector<Tensor> &in) {
                                      return conv2d(in[0], in[1], in.size() > 2 ? std::optional<Tensor>(in[2]) : std::nullopt,
                                                    stride, padding, dilation, groups);
                                    }, detail::conv2d_sym_shape(x, weight, stride, padding, dilation, false));
  auto z =
      detail::conv2d_sizes("conv2d", x, weight, bias, stride, padding, dilation, groups, false);
  Shape out{z.N, z.O, z.OH, z.OW};
  if (epi) {
    DataType t = promote_types(x.dtype(), weight.dtype());
    if (bias) t = promote_types(t, bias->dtype());
    check_epilogue("conv2d", *epi, out, t, extras);
  }
  Tensor (*plain)(const Tensor &, const Tensor &, const std::optional<Tensor> &, std::vector<std::int64_t>,
                  std::vector<std::int64_t>, std::vector<std::int64_t>, std::int64_t) = &conv2d;
  if (auto traced = detail::conv2d_trace("Conv2d", z, x, weight, bias, out, plain, epi, extras))
    return *traced;
  if (auto y = detail::conv2d_template(z, x, weight, bias, templates::Conv2dLayout::NCHW, epi, extras))
    return *y;
  Tensor y = detail::conv2d_generic(z, x, weight, bias);
  return epi ? apply_epilogue(*epi, y, extras) : y;
}

HIDET_INLINE std::optional<Tensor> conv2d_symbolic_batch(const Tensor &x, const Tensor &weight,
                                                         const std::optional<Tensor> &bias, std::vector<std::int64_t> stride,
                                                         std::vector<std::int64_t> padding,
                                                         std::vector<std::int64_t> dilation, std::int64_t groups, bool nhwc,
                                                         const std::shared_ptr<const Epilogue> &epi,
                                                         const std::vector<Tensor> &extras, const Dim &batch,
                                                         const SymbolValues &values) {
  using namespace templates;
  const char *op = nhwc ? "conv2d_nhwc" : "conv2d";
  if (batch.is_constant() || x.is_symbolic() || weight.is_symbolic() || (bias && bias->is_symbolic()))
    return std::nullopt;
  auto z = detail::conv2d_sizes(op, x, weight, bias, stride, padding, dilation, groups, nhwc);
  if (batch.evaluate(values) != z.N)
    throw ValueError(str_cat(op, ": the batch ", batch.str(), " is ", batch.evaluate(values),
                             " at these symbol values, but x of shape ", shape_str(x.shape()), " has ", z.N));
  const DataType dt = x.dtype();
  Conv2dShape s = detail::conv2d_shape(z);
  Device dev = detail::common_device(op, bias ? std::vector<Tensor>{x, weight, *bias} : std::vector<Tensor>{x, weight});
  if (!dev.is_cuda()) return std::nullopt;
  auto ins = detail::conv2d_template_inputs(z, x, weight, bias, dev);
  if (!ins) return std::nullopt;
  const Shape out = nhwc ? Shape{z.N, z.OH, z.OW, z.O} : Shape{z.N, z.O, z.OH, z.OW};
  if (epi) {
    DataType t = promote_types(x.dtype(), weight.dtype());
    check_epilogue(op, *epi, out, t, extras, values);
  }
  // The tiling that search space 0 picks for the batch rounded up to a power of two (every batch
  // in (2^(k-1), 2^k] shares one build), checked at this batch (grid limits grow with it).
  Conv2dShape hint = s;
  hint.n = int(conv2d_batch_bucket(z.N));
  Conv2dConfig cfg = conv2d_heuristic_config(hint, dt, runtime::device_info(0).sm_count, wgmma_available());
  try {
    check_conv2d_problem(s, dt);
    check_conv2d_config(s, dt, cfg);
  } catch (const ValueError &) {
    return std::nullopt;
  }
  s.batch = batch;
  const auto layout = nhwc ? Conv2dLayout::NHWC : Conv2dLayout::NCHW;
  std::shared_ptr<Conv2d> runner = detail::conv2d_runner(s, dt, layout, bool(bias), cfg, epi);
  Tensor y = epi ? empty(evaluate_shape(epi->out.sym_shape(), values), epi->out.dtype(), dev) : empty(out, dt, dev);
  (*runner)((*ins)[0], (*ins)[1], bias ? &(*ins)[2] : nullptr, y, extras, values);
  return y;
}

HIDET_INLINE bool conv2d_runs_direct(std::int64_t groups, std::int64_t cg, std::int64_t og, std::int64_t kh,
                                     std::int64_t kw) {
  if (groups <= 1 || cg <= 0 || og <= 0 || groups * std::max(cg, og) > (std::int64_t(1) << 30) || kh * kw > (1 << 20))
    return false;
  templates::Conv2dShape s;
  s.c = int(groups * cg), s.o = int(groups * og), s.groups = int(groups), s.kh = int(kh), s.kw = int(kw);
  s.h = s.kh, s.w = s.kw;
  return templates::conv2d_prefers_direct(s);
}

HIDET_INLINE std::int64_t conv2d_batch_bucket(std::int64_t n) {
  std::int64_t b = 1;
  while (b < n) b *= 2;
  return b;
}

HIDET_INLINE std::size_t conv2d_symbolic_builds() {
  auto &cache = detail::conv2d_runners();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.symbolic_builds;
}

HIDET_INLINE Tensor conv2d_nhwc(const Tensor &x, const Tensor &weight,
                          const std::optional<Tensor> &bias,
                          std::vector<std::int64_t> stride,
                          std::vector<std::int64_t> padding,
                          std::vector<std::int64_t> dilation, std::int64_t groups) {
  return conv2d_nhwc(x, weight, bias, std::move(stride), std::move(padding), std::move(dilation), groups, nullptr,
                     {});
}

HIDET_INLINE Tensor conv2d_nhwc(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias,
                                std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                                std::vector<std::int64_t> dilation, std::int64_t groups,
                                const std::shared_ptr<const Epilogue> &epi, const std::vector<Tensor> &extras) {
  if (!epi && detail::has_symbolic_extents({x, weight})) // the batch and the image sizes may be symbols
    return detail::trace_by_probing("conv2d_nhwc", bias ? std::vector<Tensor>{x, weight, *bias} : std::vector<Tensor>{x, weight},
                                    [=](const std::vector<Tensor> &in) {
                                      return conv2d_nhwc(in[0], in[1], in.size() > 2 ? std::optional<Tensor>(in[2]) : std::nullopt,
                                                    stride, padding, dilation, groups);
                                    }, detail::conv2d_sym_shape(x, weight, stride, padding, dilation, true));
  auto z =
      detail::conv2d_sizes("conv2d_nhwc", x, weight, bias, stride, padding, dilation, groups, true);
  Shape out{z.N, z.OH, z.OW, z.O};
  if (epi) {
    DataType t = promote_types(x.dtype(), weight.dtype());
    if (bias) t = promote_types(t, bias->dtype());
    check_epilogue("conv2d_nhwc", *epi, out, t, extras);
  }
  Tensor (*plain)(const Tensor &, const Tensor &, const std::optional<Tensor> &, std::vector<std::int64_t>,
                  std::vector<std::int64_t>, std::vector<std::int64_t>, std::int64_t) = &conv2d_nhwc;
  if (auto traced = detail::conv2d_trace("Conv2dNhwc", z, x, weight, bias, out, plain, epi, extras, true))
    return *traced;
  if (auto y = detail::conv2d_template(z, x, weight, bias, templates::Conv2dLayout::NHWC, epi, extras))
    return *y;
  Tensor y =
      permute(detail::conv2d_generic(z, permute(x, {0, 3, 1, 2}), permute(weight, {0, 3, 1, 2}), bias), {0, 2, 3, 1});
  return epi ? apply_epilogue(*epi, y, extras) : y;
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
