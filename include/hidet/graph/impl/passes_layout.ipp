// Definitions for the layout and precision passes of hidet/graph/passes.hpp: convert_precision
// (mixed precision), convert_layout_nhwc (channels-last convolutions) and bind_kernel_options.
#pragma once

#include "hidet/graph/passes.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "hidet/graph/detail/node_attrs.hpp"
#include "hidet/graph/detail/rewriter.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/conv.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/norm.hpp"
#include "hidet/ops/op_kind.hpp"
#include "hidet/ops/pool.hpp"
#include "hidet/ops/transform.hpp"
#include "hidet/runtime/shared_constants.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

HIDET_INLINE FlowGraph quantize_weights_int8(const FlowGraph &graph) {
  using namespace detail;
  return rewrite_nodes(graph, [](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (ops::kind_of(*op) != ops::OpKind::Matmul || op->inputs().size() != 2 || op->num_outputs() != 1)
      return std::nullopt;
    const Tensor &a = op->inputs()[0], &w = op->inputs()[1];
    if (!a.is_symbolic() || w.is_symbolic() || w.ndim() != 2 || !w.dtype().is_half() || a.dtype() != w.dtype() ||
        w.shape()[0] < 64 || w.shape()[1] < 64)
      return std::nullopt;
    // per column: scale = max |w| / 127 (a zero column: tiny, its q all 0), q = round(w / scale),
    // on the device; once for every graph optimized from the same weights while one of them
    // lives (runtime/shared_constants.hpp: a model's graph per input shape)
    Tensor scale = shared_constant("quantize_weights_int8 scale", {w}, [&] {
      return ops::div(ops::add(ops::max(ops::abs(ops::cast(w, dtypes::f32)), {0}, false), 1e-30), 127.0);
    });
    Tensor q = shared_constant("quantize_weights_int8", {w}, [&] {
      return ops::cast(ops::clamp(ops::round(ops::div(ops::cast(w, dtypes::f32), scale)), -127, 127), dtypes::i8);
    });
    Tensor y = ops::matmul(rw.map(a), q);
    return ops::cast(ops::mul(y, scale), a.dtype());
  });
}

HIDET_INLINE FlowGraph convert_precision(const FlowGraph &graph, DataType dtype) {
  using namespace detail;
  using ops::OpKind;
  if (dtype != dtypes::f16 && dtype != dtypes::bf16)
    throw ValueError(str_cat(
        "convert_precision: mixed precision computes in float16 or bfloat16, not ", dtype.name()));
  // One cast per tensor: symbolic ones by identity, constants by storage and offset.
  std::map<std::pair<const void *, std::size_t>, Tensor> low_of;
  auto low = [&](const Tensor &t) -> Tensor {
    if (t.dtype() != dtypes::f32) return t;
    if (auto tr = t.trace();
        tr && ops::kind_of(*tr.op) == OpKind::Cast && tr.op->inputs()[0].dtype() == dtype)
      return tr.op->inputs()[0]; // a value cast up from `dtype` (a converted operator's): exact
    auto it = low_of.find(identity_of(t));
    if (it != low_of.end()) return it->second;
    Tensor c = ops::cast(t, dtype); // a constant is converted now (constant folding)
    low_of.emplace(identity_of(t), c);
    return c;
  };
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    const OpKind kind = ops::kind_of(*op);
    const std::size_t n = op->inputs().size();
    const bool anchor = (kind == OpKind::Matmul && n == 2) ||
                        (kind == OpKind::Conv2d && n >= 2 && n <= 3) ||
                        ((kind == OpKind::ScaledDotProductAttention ||
                          kind == OpKind::ScaledDotProductAttentionHeadsLast) &&
                         n >= 3);
    if (!anchor || op->num_outputs() != 1 || op->output_metas()[0].dtype != dtypes::f32)
      return std::nullopt;
    const std::vector<Tensor> ins = rw.map(op->inputs());
    Tensor y;
    if (kind == OpKind::Matmul) {
      y = ops::matmul(low(ins[0]), low(ins[1]));
    } else if (kind == OpKind::Conv2d) {
      std::optional<Tensor> bias;
      if (n > 2) bias = low(ins[2]);
      y = ConvAttrs(op->attrs()).apply(low(ins[0]), low(ins[1]), bias);
    } else {
      std::optional<Tensor> mask;
      if (n > 3) mask = ins[3]; // an f32 mask is added to the scores as it is
      y = attention_like(op->attrs(), low(ins[0]), low(ins[1]), low(ins[2]), mask,
                         attr_text(op->attrs(), "heads_last") == "true");
    }
    HIDET_ASSERT(y.sym_shape() == op->output_metas()[0].shape, "convert_precision: ", op->name(),
                 " rebuilt with another shape");
    y = ops::cast(y, dtypes::f32);
    // The cast back stands for the converted operator's output (only we hold it yet).
    std::const_pointer_cast<Operator>(y.trace().op)->set_origin(op->origin_or_self());
    return y;
  });
}

namespace detail {
/// A constant weight [O, C, KH, KW] as [O, KH, KW, C], permuted on the host (no kernel to compile
/// per weight shape): raw elements, nothing converted.
inline Tensor weight_to_nhwc(const Tensor &w) {
  auto s = w.shape();
  const std::int64_t O = s[0], C = s[1], KH = s[2], KW = s[3];
  auto typed = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> in(std::size_t(w.numel())), out(in.size());
    w.copy_to_host(in.data());
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t h = 0; h < KH; ++h)
          for (std::int64_t k = 0; k < KW; ++k)
            out[std::size_t(((o * KH + h) * KW + k) * C + c)] =
                in[std::size_t(((o * C + c) * KH + h) * KW + k)];
    Tensor r = empty({O, KH, KW, C}, w.dtype(), w.device());
    r.copy_from_host(out.data());
    return r;
  };
  switch (w.dtype().nbytes()) {
  case 1:
    return typed(std::uint8_t{});
  case 2:
    return typed(std::uint16_t{});
  case 4:
    return typed(std::uint32_t{});
  default:
    return typed(std::uint64_t{});
  }
}
} // namespace detail

HIDET_INLINE FlowGraph convert_layout_nhwc(const FlowGraph &graph) {
  using namespace detail;
  using ops::OpKind;
  const std::vector<int> to_nhwc{0, 2, 3, 1}, to_nchw{0, 3, 1, 2};
  GraphRewriter rw(graph);          // old tensor -> its NCHW value in the new graph
  std::map<TensorKey, Tensor> twin; // old tensor -> its NHWC value in the new graph
  auto nchw = [&](const Tensor &t) -> Tensor {
    if (!t.trace()) return t;
    if (const Tensor *v = rw.find(t)) return *v;
    Tensor v = ops::permute(twin.at(key_of(t)), to_nchw); // the NCHW value, needed now
    std::const_pointer_cast<Operator>(v.trace().op)->set_origin(t.trace().op->origin_or_self());
    rw.set(t, v);
    return v;
  };
  auto nhwc = [&](const Tensor &t) -> Tensor { // graph inputs too: turned once
    if (t.is_symbolic())
      if (auto it = twin.find(key_of(t)); it != twin.end()) return it->second;
    Tensor v = ops::permute(nchw(t), to_nhwc);
    if (t.is_symbolic()) twin[key_of(t)] = v;
    return v;
  };
  auto has_twin = [&](const Tensor &t) { return t.is_symbolic() && twin.count(key_of(t)); };
  // Element-wise operators of channels-last values stay channels-last.
  using Unary = Tensor (*)(const Tensor &);
  static const std::map<OpKind, Unary> unary_fns{
      {OpKind::Relu, &ops::relu}, {OpKind::Sigmoid, &ops::sigmoid}, {OpKind::Silu, &ops::silu},
      {OpKind::Tanh, &ops::tanh}, {OpKind::Exp, &ops::exp},         {OpKind::Neg, &ops::neg},
      {OpKind::Abs, &ops::abs}};
  rw.visit([&](const OpPtr &op, GraphRewriter &) -> NodeRewrite {
    const auto &in = op->inputs();
    const OpKind kind = ops::kind_of(*op);
    const TensorKey out{op.get(), 0};
    const bool one_output = op->num_outputs() == 1;
    if (kind == OpKind::Conv2d && (in.size() == 2 || in.size() == 3) && one_output) {
      const Tensor &x = in[0], &w = in[1];
      bool constants = !w.is_symbolic() && (in.size() == 2 || !in[2].is_symbolic());
      bool half = x.dtype().is_half() && w.dtype() == x.dtype() &&
                  (in.size() == 2 || in[2].dtype() == x.dtype());
      const ConvAttrs conv(op->attrs());
      const std::int64_t groups = conv.groups, C = w.shape()[1];
      // Channel counts that are multiples of 4 are read in place channels-last (ShuffleNetV2's 116);
      // others stay NCHW: padding them to 8 (ResNet's 3-channel stem, an EfficientNet's squeeze
      // convolutions) was measured slower on the H200 (a Pad kernel, and the padded stem no faster
      // than the NCHW one).
      // Depthwise convolutions (groups == C == O) have a direct kernel for either layout.
      const bool depthwise = x.ndim() == 4 && C == 1 && groups > 1 && x.sym_shape()[1] == groups &&
                             w.shape()[0] == groups;
      // A 1x1 convolution of a 1x1 image (a squeeze-and-excite's) is a product [N, C] @ [O, C]^T,
      // a row reduction per output (ops::gemv; N is small: the templates' tiles would stay
      // empty). NCHW [N, O, 1, 1] and NHWC [N, 1, 1, O] are both views of it, whatever C is.
      auto all_of = [](const std::vector<std::int64_t> &a, std::int64_t v) {
        return std::all_of(a.begin(), a.end(), [v](std::int64_t e) { return e == v; });
      };
      if (constants && half && x.ndim() == 4 && groups == 1 && is_constant_shape(x.sym_shape()) &&
          x.shape()[2] == 1 && x.shape()[3] == 1 && w.shape()[2] == 1 && w.shape()[3] == 1 &&
          all_of(conv.stride, 1) && all_of(conv.padding, 0)) {
        const std::int64_t N = x.shape()[0], O = w.shape()[0];
        // [O, C, 1, 1] viewed as [1, O, C, 1], turned to [1, C, 1, O] on the host: [C, O].
        Tensor xin = has_twin(x) ? nhwc(x) : nchw(x);
        Tensor y = ops::gemv(xin.reshape({N, C}), w.reshape({O, C}));
        if (in.size() == 3) y = y + in[2];
        Tensor y_nchw = y.reshape({N, O, 1, 1});
        twin[out] = y.reshape({N, 1, 1, O});
        return y_nchw;
      }
      // A patch embedding (the window is the stride, no padding: ViT's and DeiT's 16 x 16 / 16 and
      // the 4 x 4 / 4 stems of Swin and ConvNeXt, over 3 channels the template would repack and
      // pad): its im2col is a permutation of x, so it is the product [N*OH*OW, C*KH*KW] @
      // [C*KH*KW, O] of a permuted copy of x (one copy kernel) by the weight viewed so, and the
      // product's rows are the output's pixels channels-last (no permute on the way out). H200,
      // DeiT-III-S at batch 16: 47.7 us for the repacked NCHW convolution.
      // The batch may be symbolic (one graph for every batch size); the image's extents are not.
      const SymShape xss = x.ndim() == 4 ? x.sym_shape() : SymShape{};
      if (constants && half && x.ndim() == 4 && groups == 1 && C % 4 != 0 && xss[1].is_constant() &&
          xss[2].is_constant() && xss[3].is_constant()) {
        const Dim N = xss[0];
        const std::int64_t H = xss[2].value(), W = xss[3].value(), O = w.shape()[0], KH = w.shape()[2],
                           KW = w.shape()[3];
        const auto pair = [](const std::vector<std::int64_t> &v) {
          return v.size() == 1 ? std::vector<std::int64_t>{v[0], v[0]} : v;
        };
        if (pair(conv.stride) == std::vector<std::int64_t>{KH, KW} && all_of(conv.padding, 0) &&
            all_of(conv.dilation, 1) && KH * KW > 1 && H % KH == 0 && W % KW == 0 &&
            C * KH * KW % 8 == 0) { // rows of 16 bytes: the product's templates read them in place
          const std::int64_t OH = H / KH, OW = W / KW, K = C * KH * KW;
          Tensor a = ops::permute(nchw(x).reshape(std::vector<Dim>{N, C, OH, KH, OW, KW}), {0, 2, 4, 1, 3, 5})
                         .reshape(std::vector<Dim>{N * OH * OW, K});
          // [O, C, KH, KW] viewed as [1, O, K, 1], turned to [1, K, 1, O] on the host: [K, O].
          Tensor y = ops::matmul(a, weight_to_nhwc(w.reshape({1, O, K, 1})).reshape({K, O}));
          if (in.size() == 3) y = y + in[2];
          twin[out] = y.reshape(std::vector<Dim>{N, OH, OW, O});
          return NodeRewrite::removed();
        }
      }
      // Grouped convolutions of few channels per group (ResNeXt's 4) run on the direct kernel,
      // which reads NHWC in place at any channel count.
      const bool direct = depthwise || (w.ndim() == 4 && ops::conv2d_runs_direct(groups, C, w.shape()[0] / std::max<std::int64_t>(groups, 1),
                                                                                w.shape()[2], w.shape()[3]));
      if (constants && half && x.ndim() == 4 && (C % 4 == 0 || direct)) {
        std::optional<Tensor> bias;
        if (in.size() == 3) bias = in[2];
        twin[out] = conv.apply(nhwc(x), weight_to_nhwc(w), bias, true);
        return NodeRewrite::removed();
      }
    }
    // Pooling of a channels-last value pools it channels-last.
    if ((kind == OpKind::MaxPool2d || kind == OpKind::AvgPool2d) && in.size() == 1 && one_output &&
        has_twin(in[0])) {
      const std::string &pa = op->attrs();
      auto ints = [&](const char *key) { return attr_ints(pa, key); };
      bool ceil_mode = attr_text(pa, "ceil_mode") == "true";
      Tensor y = kind == OpKind::MaxPool2d
                     ? ops::max_pool2d_nhwc(nhwc(in[0]), ints("kernel"), ints("stride"),
                                            ints("padding"), ints("dilation"), ceil_mode)
                     : ops::avg_pool2d_nhwc(
                           nhwc(in[0]), ints("kernel"), ints("stride"), ints("padding"), ceil_mode,
                           attr_text(pa, "count_include_pad") == "true", ints("dilation"));
      HIDET_ASSERT(y.dtype() == op->output_metas()[0].dtype, "convert_layout_nhwc: ", op->name(),
                   " rebuilt with another dtype");
      twin[out] = y;
      return NodeRewrite::removed();
    }
    // A group normalization of one group (PoolFormer's GroupNorm(1, C) before each token mixer and
    // MLP) of a channels-last value normalizes it channels-last (ops::group_norm_nhwc): no turn to
    // NCHW and back around it. ops::group_norm records Reshape (to [N, 1, C*H*W]), GroupNorm,
    // Reshape (back): matched at the last.
    if (kind == OpKind::Reshape && in.size() == 1 && one_output && in[0].trace() &&
        ops::kind_of(*in[0].trace().op) == OpKind::GroupNorm) {
      const Operator &gn = *in[0].trace().op;
      const std::string &ga = gn.attrs();
      const auto &gi = gn.inputs();
      const bool has_w = attr_text(ga, "weight") == "1", has_b = attr_text(ga, "bias") == "1";
      const Trace view = gi.empty() ? Trace{} : gi[0].trace(); // the Reshape to [N, 1, C*H*W]
      if (view && ops::kind_of(*view.op) == OpKind::Reshape && has_twin(view.op->inputs()[0]) &&
          view.op->inputs()[0].sym_shape() == op->output_metas()[0].shape && attr_text(ga, "num_groups") == "1" &&
          !attr_text(ga, "eps").empty() && gi.size() == std::size_t(1 + has_w + has_b)) {
        std::optional<Tensor> w, b;
        if (has_w) w = rw.map(gi[1]);
        if (has_b) b = rw.map(gi[1 + has_w]);
        twin[out] = ops::group_norm_nhwc(nhwc(view.op->inputs()[0]), 1, w, b, std::stod(attr_text(ga, "eps")));
        return NodeRewrite::removed();
      }
    }
    // A model's own turn to channels-last (ConvNeXt's x.permute(0, 2, 3, 1)) of a channels-last
    // value is that value.
    if (kind == OpKind::Permute && in.size() == 1 && one_output && has_twin(in[0]) &&
        attr_ints(op->attrs(), "perm") == std::vector<std::int64_t>{0, 2, 3, 1})
      return nhwc(in[0]);
    // A concatenation of channels with a channels-last input (DenseNet's features, the branches
    // of Inception and SqueezeNet's fire modules) is concatenated channels-last: the inputs are not
    // turned back to NCHW (a permute that reads NCHW and writes NHWC, per dense layer, for the
    // convolution after it). An input without a twin is turned once.
    if (kind == OpKind::Concat && one_output && op->output_metas()[0].shape.size() == 4) {
      const auto axis = attr_ints(op->attrs(), "axis");
      bool channels = axis == std::vector<std::int64_t>{1} || axis == std::vector<std::int64_t>{-3}, any = false;
      for (const auto &t : in) channels = channels && t.ndim() == 4, any = any || has_twin(t);
      if (channels && any) {
        std::vector<Tensor> xs;
        for (const auto &t : in) xs.push_back(nhwc(t));
        twin[out] = ops::concat(xs, 3);
        return NodeRewrite::removed();
      }
    }
    // Batch normalization (inference, constant statistics) of a channels-last value: a scale and a
    // shift per channel (batch_norm_fold, on the host), two [C] f32 constants that broadcast along
    // the last axis, applied in f32 as batch_norm computes. DenseNet's pre-activation norms after
    // each concatenation.
    if (kind == OpKind::BatchNorm && one_output && has_twin(in[0]) && in[0].ndim() == 4) {
      if (const auto fold = batch_norm_fold(*op)) {
        const auto C = std::int64_t(fold->scale.size());
        Tensor scale = asarray(fold->scale, {C}, dtypes::f32, in[0].device()),
               shift = asarray(fold->shift, {C}, dtypes::f32, in[0].device());
        const DataType dt = in[0].dtype();
        Tensor x = nhwc(in[0]);
        Tensor y = ops::add(ops::mul(dt == dtypes::f32 ? x : ops::cast(x, dtypes::f32), scale), shift);
        twin[out] = dt == dtypes::f32 ? y : ops::cast(y, dt);
        return NodeRewrite::removed();
      }
    }
    // Adaptive average pooling likewise (an EfficientNet's squeeze-and-excite: [N, 1, 1, C]).
    if (kind == OpKind::AdaptiveAvgPool2d && in.size() == 1 && one_output && has_twin(in[0])) {
      Tensor y = ops::adaptive_avg_pool2d_nhwc(nhwc(in[0]), attr_ints(op->attrs(), "output_size"));
      HIDET_ASSERT(y.dtype() == op->output_metas()[0].dtype, "convert_layout_nhwc: ", op->name(),
                   " rebuilt with another dtype");
      twin[out] = y;
      return NodeRewrite::removed();
    }
    const bool unary_op = kind == OpKind::Cast || unary_fns.count(kind);
    const bool binary_op = kind == OpKind::Add || kind == OpKind::Sub || kind == OpKind::Mul;
    // One channels-last input is enough: another one is turned (one permute either way, and the
    // result stays channels-last for the convolutions after it).
    // An input of shape [n, c, 1, 1] (a squeeze-and-excite's scale) is a broadcast whose NHWC
    // form is a view; one of the full shape must be channels-last.
    bool same_shape = one_output && !in.empty(), any_twin = false, full_twin = false;
    const SymShape &oshape = one_output ? op->output_metas()[0].shape : SymShape{};
    for (const auto &t : in) {
      bool full = t.is_symbolic() && t.sym_shape() == oshape;
      SymShape ts = t.sym_shape();
      bool pixel = oshape.size() == 4 && ts.size() == 4 && ts[2] == 1 && ts[3] == 1 &&
                   ts[0] == oshape[0] && ts[1] == oshape[1];
      same_shape = same_shape && (full || pixel);
      any_twin = any_twin || has_twin(t);
      full_twin = full_twin || (full && has_twin(t));
    }
    same_shape = same_shape && full_twin;
    bool plain = op->attrs().empty() || kind == OpKind::Cast; // a cast's attribute is its dtype
    if (same_shape && plain && ((unary_op && in.size() == 1) || (binary_op && in.size() == 2))) {
      Tensor y;
      if (kind == OpKind::Cast)
        y = ops::cast(nhwc(in[0]), op->output_metas()[0].dtype);
      else if (auto f = unary_fns.find(kind); f != unary_fns.end())
        y = f->second(nhwc(in[0]));
      else if (kind == OpKind::Add)
        y = nhwc(in[0]) + nhwc(in[1]);
      else if (kind == OpKind::Sub)
        y = nhwc(in[0]) - nhwc(in[1]);
      else
        y = nhwc(in[0]) * nhwc(in[1]);
      if (y.dtype() == op->output_metas()[0].dtype) {
        twin[out] = y;
        return NodeRewrite::removed();
      }
    }
    // Any other element-wise operator of a channels-last value (a clamp, a scaled add, a
    // hardswish's pieces): computed as it is on NCHW views of its inputs and turned back, which
    // fusion then folds into one kernel (permute, operator, permute: no permute is stored), so the
    // value stays channels-last for the convolutions after it.
    auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(op);
    bool elementwise = task_op && task_op->task().injective() && one_output && any_twin &&
                       op->output_metas()[0].shape.size() == 4;
    for (const auto &t : in)
      elementwise =
          elementwise && (!t.is_symbolic() || t.sym_shape() == op->output_metas()[0].shape);
    for (const auto &t : in)
      nchw(t);
    std::vector<Tensor> outs = rw.keep(*op);
    if (elementwise) twin[out] = ops::permute(outs[0], to_nhwc);
    return outs;
  });
  for (const auto &t : graph.outputs())
    nchw(t);
  for (const auto &u : graph.updates())
    nchw(u.value);
  return rw.result();
}

namespace detail {
/// A node run under kernel options (bind_kernel_options): the same operator, its run wrapped.
class KernelOptionsNode : public Operator {
public:
  KernelOptionsNode(std::shared_ptr<const Operator> inner, option::KernelOptions opts)
      : Operator(inner->name(), inner->inputs(), attrs_of(*inner, opts), inner->output_metas(),
                 [inner, opts](const std::vector<Tensor> &xs) {
                   option::KernelOptionsScope scope(opts);
                   return inner->run(xs);
                 }),
        inner_(std::move(inner)), opts_(opts) {
    set_scratch_build(inner_->scratch_build());
    set_inplace_input(inner_->inplace_input());
    set_origin(inner_->origin_or_self());
  }
  std::shared_ptr<const Operator> with_inputs(std::vector<Tensor> inputs) const override {
    return std::make_shared<KernelOptionsNode>(inner_->with_inputs(std::move(inputs)), opts_);
  }

private:
  static std::string attrs_of(const Operator &op, const option::KernelOptions &o) {
    return op.attrs().empty() ? o.str() : str_cat(op.attrs(), ", ", o.str());
  }
  std::shared_ptr<const Operator> inner_;
  option::KernelOptions opts_;
};
} // namespace detail

HIDET_INLINE FlowGraph bind_kernel_options(const FlowGraph &graph,
                                           const option::KernelOptions &options) {
  using namespace detail;
  if (options == option::KernelOptions{}) return graph;
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    const ops::OpKind kind = ops::kind_of(*op);
    if ((kind != ops::OpKind::Matmul && kind != ops::OpKind::FusedMatmul) ||
        dynamic_cast<const KernelOptionsNode *>(op.get()))
      return std::nullopt;
    return outputs_of(std::make_shared<KernelOptionsNode>(rw.with_mapped_inputs(*op), options));
  });
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
