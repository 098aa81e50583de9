// 2-D convolution of NCHW tensors as a compute definition (a reduction over input channels of the
// group and the kernel window), scheduled by the auto-scheduler: correct for every shape, stride,
// padding, dilation and group count; the implicit-GEMM template comes with a later issue.
//
//   y[n, o, i, j] = bias[o] + sum_{c < C/groups, p < KH, q < KW}
//                   x[n, g C/groups + c, i sh - ph + p dh, j sw - pw + q dw] * w[o, c, p, q]
// with g = o / (O / groups) and x = 0 outside the input (zero padding).
#pragma once

#include "hidet/ops/reduce.hpp"

namespace hidet::ops {

/// Attributes of conv2d (each a (height, width) pair).
struct Conv2dAttrs {
  BOOST_HANA_DEFINE_STRUCT(Conv2dAttrs, (std::vector<std::int64_t>, stride), (std::vector<std::int64_t>, padding),
                           (std::vector<std::int64_t>, dilation), (std::int64_t, groups), (bool, bias));
};

/// 2-D convolution (see the top of the file): x [N, C, H, W], weight [O, C / groups, KH, KW],
/// optional bias [O]; stride/padding/dilation take 1 (both axes) or 2 values. PyTorch's conv2d.
inline Tensor conv2d(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias = std::nullopt,
                     std::vector<std::int64_t> stride = {1}, std::vector<std::int64_t> padding = {0},
                     std::vector<std::int64_t> dilation = {1}, std::int64_t groups = 1) {
  const char *op = "conv2d";
  auto pair = [&](const char *what, std::vector<std::int64_t> v) {
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2) throw ValueError(str_cat(op, ": ", what, " must have 1 or 2 values, got ", detail::ints_str(v)));
    return v;
  };
  stride = pair("stride", stride), padding = pair("padding", padding), dilation = pair("dilation", dilation);
  if (x.ndim() != 4 || weight.ndim() != 4)
    throw ValueError(str_cat(op, ": expected x [N, C, H, W] and weight [O, C/groups, KH, KW], got shapes ", shape_str(x.shape()),
                             " and ", shape_str(weight.shape())));
  std::int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  std::int64_t O = weight.shape()[0], CG = weight.shape()[1], KH = weight.shape()[2], KW = weight.shape()[3];
  if (groups <= 0 || C % groups != 0 || O % groups != 0 || CG != C / groups)
    throw ValueError(str_cat(op, ": x of shape ", shape_str(x.shape()), " and weight of shape ", shape_str(weight.shape()),
                             " do not match groups=", groups, ": C and O must be divisible by groups and weight.shape[1] ",
                             "must be C / groups"));
  for (int i = 0; i < 2; ++i)
    if (stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0)
      throw ValueError(str_cat(op, ": stride ", detail::ints_str(stride), " and dilation ", detail::ints_str(dilation),
                               " must be positive and padding ", detail::ints_str(padding), " non-negative"));
  if (x.dtype().is_bool() || weight.dtype().is_bool())
    throw ValueError(str_cat(op, ": dtype bool is not supported (x ", x.dtype(), ", weight ", weight.dtype(), ")"));
  if (bias && (bias->ndim() != 1 || bias->shape()[0] != O))
    throw ValueError(str_cat(op, ": bias must have shape (", O, ",), got ", shape_str(bias->shape())));
  auto out_size = [](std::int64_t n, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d) -> std::int64_t {
    std::int64_t span = n + 2 * p - d * (k - 1) - 1;
    return span < 0 ? 0 : span / s + 1;
  };
  std::int64_t OH = out_size(H, KH, stride[0], padding[0], dilation[0]);
  std::int64_t OW = out_size(W, KW, stride[1], padding[1], dilation[1]);
  if (OH <= 0 || OW <= 0)
    throw ValueError(str_cat(op, ": the kernel ", shape_str({KH, KW}), " (dilation ", detail::ints_str(dilation),
                             ") is larger than the padded input of shape ", shape_str(x.shape())));
  DataType t = promote_types(x.dtype(), weight.dtype());
  if (bias) t = promote_types(t, bias->dtype());
  DataType cd = compute_dtype(t);
  Conv2dAttrs a{stride, padding, dilation, groups, bool(bias)};
  std::string attrs = attrs_str(a);
  Shape out{N, O, OH, OW};
  std::vector<Tensor> ins{x, weight};
  if (bias) ins.push_back(*bias);
  return run_task(
      str_cat(op, "{", attrs, "}"),
      [&] {
        auto xi = input("x", x.shape(), x.dtype());
        auto wi = input("weight", weight.shape(), weight.dtype());
        std::int64_t og = O / groups;
        auto r = reduce(out, {CG, KH, KW}, [&](const Idx &o, const Idx &k) {
          Expr h = o[2] * int(stride[0]) - int(padding[0]) + k[1] * int(dilation[0]);
          Expr w = o[3] * int(stride[1]) - int(padding[1]) + k[2] * int(dilation[1]);
          Expr ok = h >= 0 && h < int(H) && w >= 0 && w < int(W);
          Expr c = o[1] / int(og) * int(CG) + k[0];
          Expr xv = lang::cast(xi.at({o[0], c, lang::min(lang::max(h, 0), int(H - 1)), lang::min(lang::max(w, 0), int(W - 1))}), cd);
          Expr prod = xv * lang::cast(wi.at({o[1], k[0], k[1], k[2]}), cd);
          return lang::select(ok, prod, lang::cast(Expr(0), cd));
        }, ReduceKind::Sum, cd, bias ? cd : t, bias ? "conv2d_sum" : op);
        if (!bias) return Task{op, {xi, wi}, {r}, attrs, {}};
        auto bi = input("bias", bias->shape(), bias->dtype());
        auto y = compute(op, out, [&](const Idx &i) { return r.at(i) + lang::cast(bi.at({i[1]}), cd); }, t);
        return Task{op, {xi, wi, bi}, {y}, attrs, {}};
      },
      ins)[0];
}

} // namespace hidet::ops
