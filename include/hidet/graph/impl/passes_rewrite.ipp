// Definitions for the algebraic rewrites of hidet/graph/passes.hpp: simplify_reshapes,
// eliminate_common_subexpressions, fold_conv_batch_norm, and fuse_attention with its rules in the
// pattern language.
#pragma once

#include "hidet/graph/passes.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "hidet/graph/detail/node_attrs.hpp"
#include "hidet/graph/detail/rewriter.hpp"
#include "hidet/ops/attention.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/conv.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/op_kind.hpp"
#include "hidet/ops/transform.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

namespace detail {
/// For x + 0, 0 + x, x - 0, x * 1, 1 * x and x / 1 with a small constant of zeros or ones (a
/// decoding step's cache position, past + arange(1)) whose result has x's dtype and element count:
/// x (its reshape to the result's shape); else an undefined tensor. A graph input stays an
/// operation when the result is a graph output or update (it would alias the input).
inline Tensor identity_operand(const Operator &op, GraphRewriter &rw, const Readers &readers) {
  const ops::OpKind kind = ops::kind_of(op);
  const bool add = kind == ops::OpKind::Add, sub = kind == ops::OpKind::Sub, mul = kind == ops::OpKind::Mul,
             div = kind == ops::OpKind::Div;
  if (!(add || sub || mul || div) || op.inputs().size() != 2 || op.num_outputs() != 1) return {};
  const TensorMeta &out = op.output_metas()[0];
  for (std::size_t c = 0; c < 2; ++c) {
    if ((sub || div) && c == 0) continue; // 0 - x, 1 / x are not x
    const Tensor &k = op.inputs()[c], &x = op.inputs()[1 - c];
    if (k.is_symbolic() || !x.is_symbolic() || k.numel() > 4096 || x.dtype() != out.dtype) continue;
    if (sym_numel(x.sym_shape()) != sym_numel(out.shape)) continue; // x broadcast to a larger shape
    const double want = add || sub ? 0.0 : 1.0;
    bool identity = true;
    for (double v : k.to_double_vector()) identity = identity && v == want;
    if (!identity) continue;
    if (!x.trace() && readers.is_output({&op, 0})) return {};
    Tensor y = rw.map(x);
    if (y.sym_shape() == out.shape) return y;
    return is_constant_shape(out.shape) ? y.reshape(constant_shape(out.shape)) : Tensor{};
  }
  return {};
}
} // namespace detail

HIDET_INLINE FlowGraph simplify_reshapes(const FlowGraph &graph) {
  using namespace detail;
  const Readers readers(graph);
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (Tensor y = identity_operand(*op, rw, readers); y.defined()) return y;
    if (ops::kind_of(*op) != ops::OpKind::Reshape || op->inputs().size() != 1 ||
        op->num_outputs() != 1)
      return std::nullopt;
    const Tensor x = rw.map(op->inputs()[0]);
    Tensor base = x;
    if (auto tr = base.trace();
        tr && ops::kind_of(*tr.op) == ops::OpKind::Reshape && tr.op->inputs().size() == 1)
      base = tr.op->inputs()[0]; // a reshape of a reshape reads the first one's input
    const SymShape &shape = op->output_metas()[0].shape;
    if (base.sym_shape() == shape) return base; // reshaping to its own shape: nothing to do
    if (!is_constant_shape(shape)) return std::nullopt;
    // Between task-defined operators a Reshape is ops::reshape's task, which fusion takes into a
    // neighbour; elsewhere a view, since the task would copy in a kernel of its own (a decode
    // step's attention output, [1, h, 1, d] transposed and flattened for the output projection,
    // was one such kernel per layer; the torch front end's reshapes of a product's output before
    // a Narrow, 123 kernels in DeiT-III-S, 0.14 ms of its 0.58 on the H200).
    const auto tasks_around = [&] {
      auto tr = base.trace();
      if (!tr || !dynamic_cast<const ops::TaskOperator *>(tr.op.get())) return false;
      const TensorKey out{op.get(), 0};
      if (readers.is_output(out) || readers.of(out).empty()) return false;
      for (const auto &r : readers.of(out))
        if (!dynamic_cast<const ops::TaskOperator *>(r.get())) return false;
      return true;
    };
    if (base.sym_shape() == x.sym_shape()) {
      // Not a reshape of a reshape: a task of an intermediate value, away from tasks and not a
      // graph output, becomes a view.
      if (!dynamic_cast<const ops::TaskOperator *>(op.get()) || !x.trace() || readers.is_output({op.get(), 0}) ||
          tasks_around())
        return std::nullopt;
      return x.reshape(constant_shape(shape));
    }
    // A reshape of a reshape reads the first one's input: made anew (a recorded Reshape may be a
    // task over its input's shape).
    Tensor y = tasks_around() ? ops::reshape(base, constant_shape(shape)) : base.reshape(constant_shape(shape));
    if (auto tr = y.trace()) std::const_pointer_cast<Operator>(tr.op)->set_origin(op->origin_or_self());
    return y;
  });
}

namespace detail {
/// The rank of a sum AllReduce node (its attributes: "op=sum, rank=0, world_size=2"); -1 for any
/// other node.
inline int sum_all_reduce_rank(const Operator &op) {
  if (ops::kind_of(op) != ops::OpKind::AllReduce || op.inputs().size() != 1 || op.num_outputs() != 1) return -1;
  const std::string &a = op.attrs();
  const std::size_t at = a.find("rank=");
  if (a.find("op=sum") == std::string::npos || at == std::string::npos) return -1;
  return std::atoi(a.c_str() + at + 5);
}

} // namespace detail

HIDET_INLINE FlowGraph fold_residual_into_all_reduce(const FlowGraph &graph) {
  using namespace detail;
  const Readers readers(graph);
  std::map<const Operator *, Tensor> residual_of; // a sum AllReduce -> the other operand of its Add
  for (const auto &op : graph.nodes()) {
    if (sum_all_reduce_rank(*op) < 0) continue;
    const TensorKey out{op.get(), 0};
    OpPtr add = readers.is_output(out) ? nullptr : readers.single(out);
    if (!add || ops::kind_of(*add) != ops::OpKind::Add || add->inputs().size() != 2 || add->num_outputs() != 1)
      continue;
    auto is_out = [&](const Tensor &t) { return t.trace() && t.trace().op.get() == op.get(); };
    const bool first = is_out(add->inputs()[0]);
    if (first == is_out(add->inputs()[1])) continue; // (the sum added to itself)
    const Tensor &r = add->inputs()[first ? 1 : 0];
    const TensorMeta &sum = op->output_metas()[0], &result = add->output_metas()[0];
    // (r cannot be computed from the sum: the add is the sum's one reader)
    if (result.shape != sum.shape || result.dtype != sum.dtype || r.dtype() != sum.dtype) continue;
    residual_of.emplace(op.get(), r);
  }
  if (residual_of.empty()) return graph;
  std::set<const Operator *> folded; // the AllReduce nodes whose Add is gone
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (auto it = residual_of.find(op.get()); it != residual_of.end()) {
      const Tensor *r = it->second.trace() ? rw.find(it->second) : &it->second;
      if (!r) return std::nullopt; // the residual comes later in the node order: left as it is
      folded.insert(op.get());
      if (sum_all_reduce_rank(*op) != 0) return std::nullopt;
      Tensor partial = ops::add(rw.map(op->inputs()[0]), *r);
      if (auto tr = partial.trace()) std::const_pointer_cast<Operator>(tr.op)->set_origin(op->origin_or_self());
      return outputs_of(op->with_inputs({partial}));
    }
    if (ops::kind_of(*op) == ops::OpKind::Add && op->inputs().size() == 2)
      for (const auto &in : op->inputs())
        if (in.trace() && folded.count(in.trace().op.get())) return rw.map(in); // the sum is the result
    return std::nullopt;
  });
}

HIDET_INLINE FlowGraph eliminate_common_subexpressions(const FlowGraph &graph) {
  using namespace detail;
  std::map<std::string, std::vector<Tensor>> seen; // signature -> outputs in the new graph
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    const ops::OpKind kind = ops::kind_of(*op);
    std::string sig;
    if (auto task_op = std::dynamic_pointer_cast<const ops::TaskOperator>(op))
      sig = "task:" + task_op->key();
    else if (kind == ops::OpKind::Matmul || kind == ops::OpKind::Conv2d ||
             kind == ops::OpKind::Conv2dNhwc || kind == ops::OpKind::Reshape)
      sig = str_cat(op->name(), "(", op->attrs(), ")");
    if (sig.empty()) return std::nullopt;
    for (const auto &t : rw.map(op->inputs())) {
      auto [p, off] = identity_of(t);
      sig += str_cat("|", p, "+", off, ":", t.is_symbolic() ? 0 : 1);
    }
    for (const auto &m : op->output_metas())
      sig += str_cat("|", m.dtype.name(), sym_shape_str(m.shape));
    if (auto it = seen.find(sig); it != seen.end()) return it->second;
    std::vector<Tensor> outs = rw.keep(*op);
    seen.emplace(sig, outs);
    return outs;
  });
}

namespace detail {
/// w [O, ...] with row o multiplied by scale[o] (`columns`: w [..., O] with column o so), on the
/// host (no kernel per shape): f16, bf16 and f32 in typed loops (float products rounded once),
/// other dtypes through doubles.
inline Tensor scale_rows(const Tensor &w, const std::vector<double> &scale, bool columns = false) {
  const std::size_t channels = scale.size(), per = std::size_t(w.numel()) / channels;
  // element i's channel: its row (i / per) or its column (i % channels)
  auto channel = [&](std::size_t i) { return columns ? i % channels : i / per; };
  auto typed = [&](auto tag, auto load, auto store) {
    using T = decltype(tag);
    std::vector<T> v(std::size_t(w.numel()));
    w.copy_to_host(v.data());
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = store(load(v[i]) * float(scale[channel(i)]));
    Tensor r = empty(w.shape(), w.dtype(), w.device());
    r.copy_from_host(v.data());
    return r;
  };
  switch (w.dtype().code) {
  case DTypeCode::F16:
    return typed(std::uint16_t{}, half_bits_to_float, float_to_half_bits);
  case DTypeCode::BF16:
    return typed(std::uint16_t{}, bf16_bits_to_float, float_to_bf16_bits);
  case DTypeCode::F32:
    return typed(
        float{}, [](float x) { return x; }, [](float x) { return x; });
  default: {
    std::vector<double> v = w.to_double_vector();
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] *= scale[channel(i)];
    return asarray(v, w.shape(), w.dtype(), w.device());
  }
  }
}

} // namespace detail

HIDET_INLINE FlowGraph fold_conv_batch_norm(const FlowGraph &graph) {
  using namespace detail;
  const Readers readers(graph);
  auto all_constant = [](const std::vector<Tensor> &ts, std::size_t from) {
    for (std::size_t i = from; i < ts.size(); ++i)
      if (ts[i].is_symbolic()) return false;
    return true;
  };
  // A product by constant weights w [K, N] viewed [M, N], then the norm over its N channels
  // (LeViT's LinearNorm: BatchNorm1d(linear(x).flatten(0, 1))): w's columns take the scale and the
  // shift becomes a bias, which fuses into the product's store; the norm's four vectors and its
  // square root per element go.
  auto fold_linear = [&](const OpPtr &op, const OpPtr &view, GraphRewriter &rw) -> NodeRewrite {
    const Tensor &y = view->inputs()[0];
    if (!y.trace() || ops::kind_of(*y.trace().op) != ops::OpKind::Matmul) return std::nullopt;
    const OpPtr mm = y.trace().op;
    const Tensor &w = mm->inputs()[1], &v = op->inputs()[0];
    if (mm->inputs().size() != 2 || !mm->attrs().empty() || w.is_symbolic() || w.ndim() != 2 || v.ndim() != 2 ||
        !readers.single(key_of(v)) || !readers.single(key_of(y)))
      return std::nullopt;
    const std::int64_t n = w.shape()[1];
    const SymShape vs = v.sym_shape(), ys = y.sym_shape();
    if (!vs[1].is_constant() || vs[1].value() != n || !ys.back().is_constant() || ys.back().value() != n) return std::nullopt;
    const auto fold = batch_norm_fold(*op);
    if (!fold || fold->scale.size() != std::size_t(n)) return std::nullopt;
    if (w.dtype() == dtypes::f16) { // scaled weights past f16's range (a tiny variance): left to the norm
      const std::vector<double> wv = w.to_double_vector();
      for (std::size_t i = 0; i < wv.size(); ++i)
        if (!(std::abs(wv[i] * fold->scale[i % std::size_t(n)]) < 65504.0)) return std::nullopt;
    }
    Tensor z = ops::matmul(rw.map(mm->inputs()[0]), scale_rows(w, fold->scale, true));
    z = ops::add(z, asarray(fold->shift, {n}, w.dtype(), w.device()));
    return ops::reshape(z, op->output_metas()[0].shape);
  };
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    if (ops::kind_of(*op) != ops::OpKind::BatchNorm || !op->inputs()[0].trace()) return std::nullopt;
    const OpPtr conv = op->inputs()[0].trace().op;
    if (ops::kind_of(*conv) == ops::OpKind::Reshape) return fold_linear(op, conv, rw);
    if (ops::kind_of(*conv) != ops::OpKind::Conv2d || !readers.single(key_of(op->inputs()[0])) ||
        !all_constant(conv->inputs(), 1))
      return std::nullopt;
    const auto fold = batch_norm_fold(*op); // on the host, in double precision
    if (!fold) return std::nullopt;
    const auto &ci = conv->inputs();
    const Tensor &w = ci[1];
    std::int64_t channels = w.shape()[0];
    std::vector<double> b2v = ci.size() > 2 ? ci[2].to_double_vector() : std::vector<double>(std::size_t(channels), 0.0);
    for (std::size_t o = 0; o < std::size_t(channels); ++o) b2v[o] = b2v[o] * fold->scale[o] + fold->shift[o];
    Tensor w2 = scale_rows(w, fold->scale);
    Tensor b2 = asarray(b2v, {channels}, ci.size() > 2 ? ci[2].dtype() : w.dtype(), w.device());
    Tensor y = ConvAttrs(conv->attrs()).apply(rw.map(ci[0]), w2, b2);
    // The new Conv2d stands for the BatchNorm's output (it was created just now, only we hold it).
    std::const_pointer_cast<Operator>(y.trace().op)->set_origin(op->origin_or_self());
    return y;
  });
}

namespace detail {
/// The factor a captured Mul or Div by a scalar constant applies (x * c: c, x / c: 1 / c); none
/// for c / x, a division by zero or a Mul/Div of two tensors.
inline std::optional<double> scalar_factor(const Match &m, const std::string &op) {
  std::string s = m.attr(op, "scalar");
  if (s.empty()) return std::nullopt;
  double c = std::stod(s);
  if (ops::kind_of(*m.ops.at(op)) != ops::OpKind::Div) return c;
  if (m.attr(op, "left") != "0" || c == 0) return std::nullopt;
  return 1.0 / c;
}
/// q, k and v of a matched attention as its kernel reads them: q and k through their captured
/// Casts ("qcast", "kcast") unless a Cast only widens a half tensor to f32 (the kernels multiply
/// half operands exactly and accumulate in f32), and the probabilities' Cast ("pcast") only where
/// it narrows them to v's dtype. None when the dtypes of q, k and v then differ, or the softmax's
/// output (after its cast) is not of v's dtype.
inline std::optional<std::array<Tensor, 3>> attention_operands(const Match &m) {
  auto operand = [&](const char *x, const char *cast) {
    const Tensor &t = m[x];
    if (!m.ops.count(cast)) return t;
    const DataType to = m.ops.at(cast)->output_metas()[0].dtype;
    return to == dtypes::f32 && t.dtype().is_half() ? t : ops::cast(t, to);
  };
  Tensor q = operand("q", "qcast"), k = operand("k", "kcast");
  const Tensor &v = m["v"];
  if (q.dtype() != v.dtype() || k.dtype() != v.dtype()) return std::nullopt;
  const DataType probs = m.ops.at(m.ops.count("pcast") ? "pcast" : "softmax")->output_metas()[0].dtype;
  if (probs != v.dtype()) return std::nullopt;
  return std::array<Tensor, 3>{q, k, v};
}

/// The keys [B, H, Skv, D] of scores q @ kt, kt the captured Permute ("kt") of `k`: k itself under
/// perm (0, 1, 3, 2) (q @ k.transpose(-2, -1)), k [B, Skv, H, D] permuted (0, 2, 1, 3) under perm
/// (0, 2, 3, 1) (LeViT's k.permute(0, 2, 3, 1) of the keys split from its QKV projection). None
/// for other perms.
inline std::optional<Tensor> keys_of(const Match &m, const Tensor &k) {
  const auto perm = detail::attr_ints(m.ops.at("kt")->attrs(), "perm");
  if (perm == std::vector<std::int64_t>{0, 1, 3, 2}) return k;
  if (perm == std::vector<std::int64_t>{0, 2, 3, 1} && k.ndim() == 4) return ops::permute(k, {0, 2, 1, 3});
  return std::nullopt;
}

/// The captured Where(wcond, scores, wfill) as an additive mask: 0 where wcond holds, -inf where
/// not. Only for a bool condition and a one-element constant fill at most -1e4 (torch.finfo's
/// lowest, as transformers writes it), which the softmax turns into zeros as it does -inf (a row
/// with every key masked differs: there eager averages the row's values). None otherwise.
inline std::optional<Tensor> where_as_mask(const Match &m) {
  const Tensor &cond = m["wcond"], &fill = m["wfill"];
  if (!cond.dtype().is_bool() || fill.is_symbolic() || fill.numel() != 1) return std::nullopt;
  if (!(fill.to_double_vector()[0] <= -1e4)) return std::nullopt;
  return ops::attention_additive_mask(cond);
}
} // namespace detail

HIDET_INLINE std::vector<RewriteRule> attention_rules() {
  using P = Pattern;
  // q and k may be cast first (GPT-Neo computes its scores in f32: q.to(float32) @
  // k.to(float32).transpose(-1, -2)), the scores masked by a Where (torch.where(causal, scores,
  // finfo.min)), and the probabilities cast back to v's dtype.
  P scores = P::op("Matmul", {P::one_of({P::op("Cast", {P::any("q")}, "qcast"), P::any("q")}),
                              P::one_of({P::op("Permute", {P::op("Cast", {P::any("k")}, "kcast")}, "kt"),
                                         P::op("Permute", {P::any("k")}, "kt")})});
  P scaled = P::one_of({P::op("Mul|Div", {scores}, "scale"), scores});
  P kept = P::one_of({P::op("Where", {P::any("wcond"), scaled, P::any("wfill")}, "where"), scaled});
  P masked = P::one_of({P::op("Add", {kept, P::any("mask")}), P::op("Add", {P::any("mask"), kept}), kept});
  P probs = P::one_of({P::op("Cast", {P::op("Softmax", {masked}, "softmax")}, "pcast"),
                       P::op("Softmax", {masked}, "softmax")});
  P attention = P::op("Matmul", {probs, P::any("v")});
  using detail::scalar_factor;
  auto replace = [](const Match &m) -> std::optional<Tensor> {
    auto qkv = detail::attention_operands(m);
    if (!qkv) return std::nullopt;
    const auto &[q, kin, v] = *qkv;
    if (q.ndim() != 4 || kin.ndim() != 4 || v.ndim() != 4) return std::nullopt;
    // No kernel serves it (its head dim): a node would run this same composition unfused. (Only
    // q's and v's extents decide it, so the keys may still be in their layout before the permute.)
    if (ops::attention_runs_composed(q, kin, v)) return std::nullopt;
    auto axis = detail::attr_ints(m.ops.at("softmax")->attrs(), "axis");
    if (axis.size() != 1 || (axis[0] != 3 && axis[0] != -1)) return std::nullopt;
    std::optional<double> scale = m.ops.count("scale") ? scalar_factor(m, "scale") : 1.0;
    if (!scale) return std::nullopt;
    const std::optional<Tensor> k = detail::keys_of(m, kin);
    if (!k) return std::nullopt;
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    if (m.ops.count("where")) {
      std::optional<Tensor> kept_mask = detail::where_as_mask(m);
      if (!kept_mask) return std::nullopt;
      mask = mask ? ops::add(*kept_mask, *mask) : *kept_mask;
    }
    return ops::scaled_dot_product_attention(q, *k, v, mask, false, scale);
  };
  // Attention whose output is transposed to [B, Sq, H, D] (merging the heads): the kernel stores
  // that layout itself.
  P sdpa = P::one_of(
      {P::op("ScaledDotProductAttention", {P::any("q"), P::any("k"), P::any("v")}, "sdpa"),
       P::op("ScaledDotProductAttention", {P::any("q"), P::any("k"), P::any("v"), P::any("mask")},
             "sdpa")});
  P heads_last = P::op("Permute", {sdpa}, "perm");
  auto replace_heads_last = [](const Match &m) -> std::optional<Tensor> {
    if (detail::attr_ints(m.ops.at("perm")->attrs(), "perm") !=
        std::vector<std::int64_t>{0, 2, 1, 3})
      return std::nullopt;
    if (m.attr("sdpa", "heads_last") == "true") return std::nullopt;
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    return detail::attention_like(m.ops.at("sdpa")->attrs(), m["q"], m["k"], m["v"], mask, true);
  };
  // Shifted-window attention (Swin): the scores plus a constant (the position bias), viewed per
  // window, plus another constant (the window mask), viewed back, then the softmax and the product
  // by v. The constants become one additive mask of the scores' shape, computed once here.
  auto added = [](const P &x, const char *c) {
    return P::one_of({P::op("Add", {x, P::any(c)}), P::op("Add", {P::any(c), x})});
  };
  P windowed = P::op(
      "Matmul",
      {P::op("Softmax",
             {P::op("Reshape", {added(P::op("Reshape", {added(scaled, "bias")}, "view"), "wmask")},
                    "back")},
             "softmax"),
       P::any("v")});
  auto replace_windowed = [](const Match &m) -> std::optional<Tensor> {
    auto qkv = detail::attention_operands(m);
    if (!qkv || m.ops.count("where")) return std::nullopt;
    const auto &[q, k, v] = *qkv;
    const Tensor &bias = m["bias"], &wmask = m["wmask"];
    if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || bias.is_symbolic() ||
        wmask.is_symbolic())
      return std::nullopt;
    if (!is_constant_shape(q.sym_shape()) || !is_constant_shape(k.sym_shape())) return std::nullopt;
    if (ops::attention_runs_composed(q, k, v)) return std::nullopt; // no kernel: the composition stays
    if (detail::attr_ints(m.ops.at("kt")->attrs(), "perm") != std::vector<std::int64_t>{0, 1, 3, 2})
      return std::nullopt;
    auto axis = detail::attr_ints(m.ops.at("softmax")->attrs(), "axis");
    if (axis.size() != 1 || (axis[0] != 3 && axis[0] != -1)) return std::nullopt;
    const SymShape &view = m.ops.at("view")->output_metas()[0].shape,
                   &back = m.ops.at("back")->output_metas()[0].shape;
    if (!is_constant_shape(view) || !is_constant_shape(back)) return std::nullopt;
    const std::vector<std::int64_t> scores{q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2]};
    if (constant_shape(back) != scores) return std::nullopt; // viewed back to the scores' shape
    std::optional<double> scale = m.ops.count("scale") ? scalar_factor(m, "scale") : 1.0;
    if (!scale) return std::nullopt;
    Tensor mask;
    try { // constants: computed now (broadcasting errors mean another pattern: left alone)
      // Kernels built now, one after another, per shape: as few as can be. A bias the same for
      // every window batch ([1, H, N, N] or fewer axes) adds to the window mask as it is, and
      // Tensor::reshape is a view of a constant.
      const std::vector<std::int64_t> vs = constant_shape(view);
      std::vector<std::int64_t> bs = bias.shape();
      while (bs.size() < 4) bs.insert(bs.begin(), 1);
      if (bs.size() == 4 && bs[0] == 1 && vs.size() == 5) {
        mask = ops::add(bias.reshape(std::vector<std::int64_t>{1, 1, bs[1], bs[2], bs[3]}), wmask);
        if (mask.shape() != vs) mask = ops::broadcast_to(mask, vs);
      } else {
        mask = ops::broadcast_to(bias, scores).reshape(vs) + wmask;
      }
      if (mask.shape() != vs) return std::nullopt;
      mask = mask.reshape(scores);
    } catch (const ValueError &) {
      return std::nullopt;
    }
    return ops::scaled_dot_product_attention(q, k, v, mask, false, scale);
  };
  // q scaled by a constant before the product (q * c or q / c, as Swin writes it): the constant
  // joins the attention's scale, and q is read as it is (a view of the QKV projection, no kernel).
  P scaled_q = P::op("Mul|Div", {P::any("q")}, "qscale");
  P sdpa_q =
      P::one_of({P::op("ScaledDotProductAttention", {scaled_q, P::any("k"), P::any("v")}, "sdpa"),
                 P::op("ScaledDotProductAttention",
                       {scaled_q, P::any("k"), P::any("v"), P::any("mask")}, "sdpa")});
  auto replace_scaled_q = [](const Match &m) -> std::optional<Tensor> {
    std::optional<double> c = scalar_factor(m, "qscale");
    if (!c) return std::nullopt;
    const Tensor &q = m["q"];
    if (q.ndim() != 4 || q.dtype() != m.ops.at("sdpa")->output_metas()[0].dtype)
      return std::nullopt;
    const std::string &attrs = m.ops.at("sdpa")->attrs();
    std::string sc = detail::attr_text(attrs, "scale");
    if (sc.empty() && !q.sym_shape().back().is_constant()) return std::nullopt;
    double scale =
        sc.empty() ? 1.0 / std::sqrt(double(q.sym_shape().back().value())) : std::stod(sc);
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    return detail::attention_like(attrs, q, m["k"], m["v"], mask,
                                  detail::attr_text(attrs, "heads_last") == "true", scale * *c);
  };
  // Grouped-query attention written with k and v repeated for each q head (transformers'
  // repeat_kv: [B, Hkv, S, D] viewed [B, Hkv, 1, S, D], broadcast to [B, Hkv, G, S, D], viewed
  // [B, Hkv * G, S, D]): the attention reads k and v in place (q head h uses kv head h / G), so the
  // repeated copies, G times the cache at every decoding step, are never made.
  auto repeated = [](const char *x) {
    return P::op("Reshape", {P::op("BroadcastTo", {P::op("Reshape", {P::any(x)}, str_cat(x, "_view"))},
                                   str_cat(x, "_bcast"))},
                 str_cat(x, "_rep"));
  };
  P sdpa_rep = P::one_of(
      {P::op("ScaledDotProductAttention", {P::any("q"), repeated("k"), repeated("v")}, "sdpa"),
       P::op("ScaledDotProductAttention", {P::any("q"), repeated("k"), repeated("v"), P::any("mask")}, "sdpa")});
  auto replace_repeated = [](const Match &m) -> std::optional<Tensor> {
    const Tensor &q = m["q"], &k = m["k"], &v = m["v"];
    if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || k.sym_shape() != v.sym_shape()) return std::nullopt;
    const SymShape &ks = k.sym_shape();
    for (const char *x : {"k", "v"}) { // [B, Hkv, S, D] -> [B, Hkv, 1, S, D] -> [B, Hkv, G, S, D] -> [B, Hkv * G, S, D]
      const SymShape &view = m.ops.at(str_cat(x, "_view"))->output_metas()[0].shape;
      const SymShape &bcast = m.ops.at(str_cat(x, "_bcast"))->output_metas()[0].shape;
      const SymShape &rep = m.ops.at(str_cat(x, "_rep"))->output_metas()[0].shape;
      if (view != SymShape{ks[0], ks[1], Dim(1), ks[2], ks[3]} || bcast.size() != 5 || bcast[0] != ks[0] ||
          bcast[1] != ks[1] || bcast[3] != ks[2] || bcast[4] != ks[3] || !bcast[2].is_constant() ||
          !ks[1].is_constant() || rep != SymShape{ks[0], Dim(ks[1].value() * bcast[2].value()), ks[2], ks[3]})
        return std::nullopt;
    }
    if (m.ops.at("k_bcast")->output_metas()[0].shape != m.ops.at("v_bcast")->output_metas()[0].shape)
      return std::nullopt;
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    const std::string &attrs = m.ops.at("sdpa")->attrs();
    return detail::attention_like(attrs, q, k, v, mask, detail::attr_text(attrs, "heads_last") == "true");
  };
  // Attention that no kernel serves (its head dim; more than 8 query rows): the node would run the
  // composition unfused at every call, as several kernels of its own. Written out instead, the
  // graph fuses it (MobileViT's heads of 16, 20 and 24).
  const char *any_sdpa = "ScaledDotProductAttention|ScaledDotProductAttentionHeadsLast";
  P sdpa_any = P::one_of({P::op(any_sdpa, {P::any("q"), P::any("k"), P::any("v")}, "sdpa"),
                          P::op(any_sdpa, {P::any("q"), P::any("k"), P::any("v"), P::any("mask")}, "sdpa")});
  auto replace_composed = [](const Match &m) -> std::optional<Tensor> {
    const Tensor &q = m["q"], &k = m["k"], &v = m["v"];
    if (!ops::attention_runs_composed(q, k, v)) return std::nullopt;
    const std::string &attrs = m.ops.at("sdpa")->attrs();
    std::optional<double> scale;
    if (std::string sc = detail::attr_text(attrs, "scale"); !sc.empty()) scale = std::stod(sc);
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    return ops::scaled_dot_product_attention_composed(q, k, v, mask, detail::attr_text(attrs, "is_causal") == "true",
                                                      scale, detail::attr_text(attrs, "heads_last") == "true" ||
                                                                 m.ops.at("sdpa")->name() == "ScaledDotProductAttentionHeadsLast");
  };
  // Attention whose q, k or v are heads split from a projection along its last axis and permuted
  // (0, 2, 1, 3) (LeViT: q, k, v = qkv(x).view(B, N, H, 64).split([16, 16, 32], 3), each permuted):
  // the flash kernel reads the columns in place, so the three permuted copies (a kernel each) go.
  // f16/bf16 with more than 8 query rows (fewer: the decode kernel, which reads [B, H, S, D]).
  auto replace_packed = [](const Match &m) -> std::optional<Tensor> {
    const Tensor &q = m["q"], &k = m["k"], &v = m["v"];
    if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || !q.dtype().is_half()) return std::nullopt;
    if (!is_constant_shape(q.sym_shape()) || !is_constant_shape(k.sym_shape()) || !is_constant_shape(v.sym_shape()) ||
        q.sym_shape()[2].value() <= 8)
      return std::nullopt;
    // The projection and the first column of heads t: t = Slice(x)[.., c0 : c0 + D].permute(0, 2, 1, 3).
    auto split_heads = [](const Tensor &t) -> std::optional<ops::PackedHeads> {
      if (!t.trace() || t.trace().op->name() != "Permute" ||
          detail::attr_ints(t.trace().op->attrs(), "perm") != std::vector<std::int64_t>{0, 2, 1, 3})
        return std::nullopt;
      const Tensor &sl = t.trace().op->inputs()[0];
      if (!sl.trace() || sl.trace().op->name() != "Slice") return std::nullopt;
      const auto &cut = sl.trace().op;
      const Tensor &x = cut->inputs()[0];
      const auto begin = detail::attr_ints(cut->attrs(), "begin"), step = detail::attr_ints(cut->attrs(), "step");
      if (x.ndim() != 4 || !is_constant_shape(x.sym_shape()) || begin.size() != 4 || step != std::vector<std::int64_t>{1, 1, 1, 1})
        return std::nullopt;
      const std::vector<std::int64_t> xs = constant_shape(x.sym_shape()), ss = constant_shape(sl.sym_shape());
      for (int a = 0; a < 3; ++a)
        if (begin[std::size_t(a)] != 0 || ss[std::size_t(a)] != xs[std::size_t(a)]) return std::nullopt;
      if (begin[3] % 8 != 0 || xs[3] % 8 != 0) return std::nullopt;
      return ops::PackedHeads{x, begin[3], ss[3]};
    };
    auto pq = split_heads(q), pk = split_heads(k), pv = split_heads(v);
    if (!pq && !pk && !pv) return std::nullopt;
    // The others as they are, viewed [B, S, H, D] (a permute that cancels the one that made them).
    auto whole = [](const Tensor &t) { return ops::PackedHeads{ops::permute(t, {0, 2, 1, 3}), 0, t.sym_shape()[3].value()}; };
    const std::string &attrs = m.ops.at("sdpa")->attrs();
    std::optional<double> scale;
    if (std::string sc = detail::attr_text(attrs, "scale"); !sc.empty()) scale = std::stod(sc);
    std::optional<Tensor> mask;
    if (m.tensors.count("mask")) mask = m["mask"];
    const bool heads_last = detail::attr_text(attrs, "heads_last") == "true" ||
                            m.ops.at("sdpa")->name() == "ScaledDotProductAttentionHeadsLast";
    Tensor y = ops::scaled_dot_product_attention_packed(pq ? *pq : whole(q), pk ? *pk : whole(k), pv ? *pv : whole(v), mask,
                                                        detail::attr_text(attrs, "is_causal") == "true", scale, heads_last);
    // Not served in place (the operator fell back to the permuted copies): left as it was.
    if (!y.trace() || y.trace().op->name() != "ScaledDotProductAttentionPacked") return std::nullopt;
    return y;
  };
  return {{"attention", attention, replace},
          {"attention_composed", sdpa_any, replace_composed},
          {"attention_windowed", windowed, replace_windowed},
          {"attention_scaled_q", sdpa_q, replace_scaled_q},
          {"attention_repeated_kv", sdpa_rep, replace_repeated},
          {"attention_heads_last", heads_last, replace_heads_last},
          {"attention_packed", sdpa_any, replace_packed}};
}

HIDET_INLINE FlowGraph fuse_attention(const FlowGraph &graph) {
  return rewrite(graph, attention_rules());
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
