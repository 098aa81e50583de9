// Definitions for hidet/ops/attention.hpp.
#pragma once

#include <bit>
#include <charconv>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "hidet/ops/attention.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/create.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/norm.hpp"
#include "hidet/ops/templates/attention.hpp"
#include "hidet/ops/templates/attention_decode.hpp"
#include "hidet/ops/transform.hpp"
#include "hidet/ops/tuning.hpp"
#include "hidet/runtime/operator.hpp"
#include "hidet/util/env.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

namespace attention_detail {
inline constexpr const char *op = "scaled_dot_product_attention";

/// The built kernels of this process, by problem and tiling.
HIDET_INLINE std::shared_ptr<templates::Attention> runner(const templates::AttentionProblem &p,
                                                    const templates::AttentionConfig &c) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<templates::Attention>> built;
  std::string key = str_cat(p.str(), " | ", c.str());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = built.find(key); it != built.end()) return it->second;
  }
  auto r = std::make_shared<templates::Attention>(p, c); // compiles outside the lock
  std::lock_guard<std::mutex> lock(mu);
  return built.emplace(key, r).first->second;
}

/// The tiling chosen for a problem in search space `space` (tuned once per process and key).
HIDET_INLINE std::shared_ptr<templates::Attention>
choose(const templates::AttentionProblem &p, int space, const Tensor &q, const Tensor &k,
       const Tensor &v, const std::optional<Tensor> &mask, const Tensor &out, double scale) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<templates::Attention>> chosen;
  std::string key = str_cat(p.str(), " | space ", space);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  }
  auto cfgs = templates::attention_candidates(p, space, runtime::device_info(0).sm_count, templates::wgmma_available());
  std::size_t best = 0;
  if (cfgs.size() > 1) {
    std::vector<tuning::Candidate> cands;
    for (auto &c : cfgs)
      cands.push_back({c.str(), [=] {
                         auto r = runner(p, c);
                         return tuning::Launch([=] {
                           if (mask)
                             (*r)(q, k, v, *mask, out, scale);
                           else
                             (*r)(q, k, v, out, scale);
                         });
                       }});
    best = tuning::pick("sdpa", tuning::make_key("sdpa", p.str()), cands);
  }
  auto r = runner(p, cfgs[best]);
  std::lock_guard<std::mutex> lock(mu);
  return chosen.emplace(key, r).first->second;
}

/// [Sq, Skv] f32: 0 where key j <= query i, -inf above the diagonal (PyTorch's is_causal). Made
/// by kernels, not a host copy, so that a CUDA graph can capture it.
HIDET_INLINE Tensor causal_bias(std::int64_t sq, std::int64_t skv, Device device) {
  Tensor i = ops::arange(0, double(sq), 1, dtypes::i64, device).reshape({sq, 1});
  Tensor j = ops::arange(0, double(skv), 1, dtypes::i64, device).reshape({1, skv});
  return where(le(j, i), ops::full({1}, 0.0, dtypes::f32, device),
               ops::full({1}, -std::numeric_limits<double>::infinity(), dtypes::f32, device));
}
} // namespace attention_detail

namespace attention_detail {
/// The dtypes and head dims the templates serve: f16 and bf16 (tensor cores) with head dim 16, 32,
/// 64 or 128; f32 (CUDA cores) with a multiple of 32 up to 128. Others are composed.
HIDET_INLINE bool templated_dtype(DataType dt) { return dt.is_half() || dt == dtypes::f32; }
HIDET_INLINE bool templated_head_dim(DataType dt, std::int64_t d) {
  return dt == dtypes::f32 ? d % 32 == 0 && d <= 128 : d == 16 || d == 32 || d == 64 || d == 128;
}
/// Whether a template serves head dim `d` of q and k with `dv` of v: both served, and equal in f32
/// (the mma.sync kernel of f16 and bf16 takes a v head dim of its own).
HIDET_INLINE bool templated_head_dims(DataType dt, std::int64_t d, std::int64_t dv) {
  return templated_head_dim(dt, d) && templated_head_dim(dt, dv) && (dt.is_half() || d == dv);
}

/// `t`, or a copy of it when its data is not 16-byte aligned: the kernels load 16-byte vectors
/// (cp.async, TMA), and a view at an odd offset cannot be read so.
HIDET_INLINE Tensor aligned(const Tensor &t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 ? t.clone() : t; }

/// Whether the decode kernel (templates/attention_decode.hpp) serves attention of q [B, H, Sq, D]
/// over k, v [B, Hkv, Skv, D] with `mask` (4-D, its dtype as given) on these tensors: few query
/// rows (Sq <= 8, at most 32 rows of q per kv head), f16, bf16 or f32, on cuda, with a head dim
/// the kernel takes; HIDET_ATTENTION_DECODE=0 turns it off.
HIDET_INLINE bool decode_applies(const Tensor &q, const Tensor &k, const Tensor &v, const std::optional<Tensor> &mask) {
  static const bool enabled = util::env_bool("HIDET_ATTENTION_DECODE", true);
  if (!enabled || q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || !q.device().is_cuda()) return false;
  if (!templated_dtype(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype() || k.shape() != v.shape())
    return false;
  const Shape &sq = q.shape(), &sk = k.shape();
  if (sk[1] <= 0 || sq[1] % sk[1] != 0 || sq[2] > 8 || (sq[1] / sk[1]) * sq[2] > 32 || sq[0] > 65535 || sk[2] <= 0 ||
      sk[2] > std::numeric_limits<int>::max() / 2 || sq[0] * sk[1] * sk[2] * sq[3] >= (std::int64_t(1) << 31))
    return false;
  if (mask && (mask->ndim() != 4 || mask->numel() >= (std::int64_t(1) << 31))) return false;
  templates::AttentionProblem p;
  p.heads = int(sq[1]), p.kv_heads = int(sk[1]), p.seq_q = int(sq[2]), p.head_dim = int(sq[3]), p.dtype = q.dtype();
  if (mask) p.has_mask = true, p.mask_dtype = mask->dtype(), p.mask_heads = int(mask->shape()[1]);
  try {
    templates::check_attention_decode(p, templates::attention_decode_heuristic_config(p, sq[0], sk[2], 132));
  } catch (const ValueError &) {
    return false;
  }
  return true;
}

/// Attention on the decode kernel (decode_applies holds; `mask` 4-D, bool or float), its output
/// [B, H, Sq, D] or (heads_last) [B, Sq, H, D]. One build per problem form and tiling serves every
/// batch and key length.
HIDET_INLINE Tensor attention_decode(const Tensor &q, const Tensor &k, const Tensor &v, const std::optional<Tensor> &mask,
                                     bool is_causal, double scale, bool heads_last) {
  const Shape &sq = q.shape();
  const std::int64_t B = sq[0], H = sq[1], Sq = sq[2], D = sq[3], Skv = k.shape()[2];
  templates::AttentionProblem p;
  p.batch = int(B), p.heads = int(H), p.kv_heads = int(k.shape()[1]), p.seq_q = int(Sq), p.seq_kv = int(Skv);
  p.head_dim = int(D), p.dtype = q.dtype(), p.causal = is_causal, p.heads_last = heads_last;
  if (mask)
    p.has_mask = true, p.mask_dtype = mask->dtype(), p.mask_batch = int(mask->shape()[0]),
    p.mask_heads = int(mask->shape()[1]);
  const auto &dev = runtime::device_info(0);
  const int sms = dev.emulated || dev.sm_count <= 0 ? 132 : dev.sm_count;
  const auto cfg = templates::attention_decode_heuristic_config(p, B, Skv, sms);
  // the build's identity: everything but the run-time batch and key length
  std::string key = str_cat(p.dtype, " heads ", H, " kv ", p.kv(), " q ", Sq, " d ", D, is_causal ? " causal" : "",
                            p.has_mask ? str_cat(" mask ", p.mask_dtype, p.mask_batch > 1 ? " batched" : "", " heads ",
                                                 p.mask_heads)
                                       : std::string(),
                            heads_last ? " heads last" : "", " | ", cfg.str());
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<templates::AttentionDecode>> built;
  std::shared_ptr<templates::AttentionDecode> r;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = built.find(key); it != built.end()) r = it->second;
  }
  if (!r) {
    auto made = std::make_shared<templates::AttentionDecode>(p, cfg); // compiles outside the lock
    std::lock_guard<std::mutex> lock(mu);
    r = built.emplace(key, made).first->second;
  }
  Tensor out = heads_last ? empty({B, Sq, H, D}, q.dtype(), q.device()) : empty({B, H, Sq, D}, q.dtype(), q.device());
  (*r)(aligned(q), aligned(k), aligned(v), mask ? *mask : Tensor(), out, scale);
  return out;
}

struct SymbolicBuilds {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<templates::Attention>> built; ///< symbolic problem | tiling
  std::set<std::string> failed; ///< builds that failed (run per shape)
  std::size_t count = 0;
};
HIDET_INLINE SymbolicBuilds &symbolic_builds() {
  static SymbolicBuilds b;
  return b;
}

/// The node of attention over symbolic extents (q's shape `qs`, k's `ks`, the mask's `ms`) run on
/// concrete inputs `in` while a graph binds the symbols: the mma.sync (f16, bf16) or f32 template
/// built once for symbolic batch and lengths (templates::AttentionSymbols) with the heuristic
/// tiling for these values (the mma.sync kernel where that is the Hopper one; split-KV with a
/// power of two of runs); nullopt where the template does not serve (the constant-shape path runs).
HIDET_INLINE std::optional<Tensor> attention_symbolic(const std::vector<Tensor> &in, const SymShape &qs,
                                                      const SymShape &ks, const std::optional<SymShape> &ms,
                                                      bool is_causal, std::optional<double> scale, bool heads_last) {
  const SymbolValues *values = SymbolBinding::current();
  if (!values || in.size() < 3 || qs.size() != 4 || ks.size() != 4) return std::nullopt;
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  for (const Tensor &t : in)
    if (t.is_symbolic() || !t.device().is_cuda()) return std::nullopt;
  if (in.size() > 3 && in[3].ndim() <= 4) { // few query rows: the decode kernel (built once for every batch and length)
    Shape m4(4 - in[3].ndim(), 1);
    for (auto e : in[3].shape()) m4.push_back(e);
    if (decode_applies(q, k, v, in[3].reshape(m4))) return std::nullopt;
  } else if (in.size() == 3 && decode_applies(q, k, v, std::nullopt)) {
    return std::nullopt;
  }
  if (!templated_dtype(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype() || q.ndim() != 4 || k.ndim() != 4 ||
      v.shape() != k.shape())
    return std::nullopt;
  for (const Dim *d : {&qs[1], &qs[3], &ks[1], &ks[3]})
    if (!d->is_constant()) return std::nullopt; // heads and head dim: constants
  if (qs[0] != ks[0] || (qs[0].is_constant() && qs[2].is_constant() && ks[2].is_constant())) return std::nullopt;
  try {
    if (evaluate_shape(qs, *values) != q.shape() || evaluate_shape(ks, *values) != k.shape()) return std::nullopt;
  } catch (const ValueError &) {
    return std::nullopt;
  }
  const Shape &sq = q.shape();
  const std::int64_t B = sq[0], H = sq[1], Sq = sq[2], Skv = k.shape()[2], D = sq[3];
  const std::int64_t Hkv = k.shape()[1];
  if (k.shape()[3] != D || k.shape()[0] != B || Hkv <= 0 || H % Hkv != 0 || !templated_head_dim(q.dtype(), D))
    return std::nullopt;
  templates::AttentionProblem p;
  p.batch = int(B), p.heads = int(H), p.seq_q = int(Sq), p.seq_kv = int(Skv), p.head_dim = int(D);
  p.dtype = q.dtype(), p.causal = is_causal, p.heads_last = heads_last, p.kv_heads = int(Hkv);
  templates::AttentionSymbols sym{qs[0], qs[2], ks[2]};
  std::optional<Tensor> mask;
  if (in.size() > 3) { // an additive mask [Sq, Skv] with leading [B or 1, H or 1]
    const Tensor &m = in[3];
    if (!ms || ms->size() != m.ndim() || m.ndim() < 2 ||
        !(m.dtype() == dtypes::f32 || m.dtype().is_half() || m.dtype().is_bool()))
      return std::nullopt;
    SymShape m4(4 - ms->size(), Dim(1));
    m4.insert(m4.end(), ms->begin(), ms->end());
    if (m4[2] != qs[2] || m4[3] != ks[2] || !(m4[0] == 1 || m4[0] == qs[0]) || !(m4[1] == 1 || m4[1] == qs[1]))
      return std::nullopt;
    p.has_mask = true, p.mask_dtype = m.dtype(), p.mask_batch = m4[0] == 1 ? 1 : int(B);
    p.mask_heads = int(m4[1].value());
    sym.mask_batched = m4[0] != 1;
    Shape m4v(4 - m.ndim(), 1);
    for (auto e : m.shape()) m4v.push_back(e);
    mask = m.reshape(m4v);
  }
  if (B > 65535 || H > 65535 || !templates::attention_fits_int32(p)) return std::nullopt;
  const auto &dev = runtime::device_info(0);
  const int sms = dev.sm_count > 0 ? dev.sm_count : 132;
  auto cfg = templates::attention_heuristic_config(p, sms, templates::wgmma_available());
  // The Hopper kernel takes constant sizes; over symbols the mma.sync kernel serves instead (one
  // build for every size rather than one per size). Split-KV keeps a power of two of runs, so a
  // growing key length (decoding) builds again only when the count of runs doubles or halves.
  if (cfg.wgmma) cfg = templates::attention_mma_config(p, sms);
  if (cfg.kv_splits > 1) cfg.kv_splits = int(std::bit_floor(unsigned(cfg.kv_splits)));
  std::string key = str_cat(p.dtype, " ", sym.str(), ", heads ", H, " kv ", Hkv, ", d ", D, is_causal ? ", causal" : "",
                            p.has_mask ? str_cat(", mask ", p.mask_dtype, " heads ", p.mask_heads) : std::string(),
                            heads_last ? ", out [B, Sq, H, D]" : "", " | ", cfg.str());
  auto &builds = symbolic_builds();
  std::shared_ptr<templates::Attention> r;
  {
    std::lock_guard<std::mutex> lock(builds.mu);
    if (builds.failed.count(key)) return std::nullopt;
    if (auto it = builds.built.find(key); it != builds.built.end()) r = it->second;
  }
  if (!r) {
    std::shared_ptr<templates::Attention> made;
    try {
      made = std::make_shared<templates::Attention>(p, cfg, &sym); // compiles outside the lock
    } catch (const Error &e) { // logged once; this problem then runs per shape
      std::fprintf(stderr, "hidet: attention %s: the template for symbolic sizes failed (%s); built per shape instead\n",
                   key.c_str(), e.what());
      std::lock_guard<std::mutex> lock(builds.mu);
      builds.failed.insert(key);
      return std::nullopt;
    }
    std::lock_guard<std::mutex> lock(builds.mu);
    auto [it, fresh] = builds.built.emplace(key, made);
    if (fresh) ++builds.count;
    r = it->second;
  }
  const double s = scale ? *scale : 1.0 / std::sqrt(double(D));
  Tensor out = heads_last ? empty({B, Sq, H, D}, q.dtype(), q.device()) : empty({B, H, Sq, D}, q.dtype(), q.device());
  if (mask) (*r)(aligned(q), aligned(k), aligned(v), *mask, out, s, *values);
  else (*r)(aligned(q), aligned(k), aligned(v), out, s, *values);
  return out;
}


/// An attention node's attributes: "is_causal=..., scale=..., heads_last=true" (scale as the shortest
/// text that reads back as the same double: passes rebuild the node from it).
HIDET_INLINE std::string node_attrs(bool is_causal, std::optional<double> scale, bool heads_last) {
  std::string attrs = str_cat("is_causal=", is_causal ? "true" : "false");
  if (scale) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof(buf), *scale);
    attrs += ", scale=" + std::string(buf, r.ptr);
  }
  if (heads_last) attrs += ", heads_last=true";
  return attrs;
}

/// Runs the template for problem `p` (tuned once per problem in this search space) on q, k, v
/// (realigned where off a 16-byte boundary) into a new output, [B, H, Sq, Dv] or (heads last)
/// [B, Sq, H, Dv].
HIDET_INLINE Tensor run_template(const templates::AttentionProblem &p, const Tensor &q, const Tensor &k, const Tensor &v,
                                 const std::optional<Tensor> &mask, double s) {
  const std::int64_t B = p.batch, H = p.heads, Sq = p.seq_q, Dv = p.dv();
  Tensor out = p.heads_last ? empty({B, Sq, H, Dv}, p.dtype, q.device()) : empty({B, H, Sq, Dv}, p.dtype, q.device());
  const Tensor qa = aligned(q), ka = aligned(k), va = aligned(v);
  auto r = choose(p, option::search_space(), qa, ka, va, mask, out, s);
  if (mask) (*r)(qa, ka, va, *mask, out, s);
  else (*r)(qa, ka, va, out, s);
  return out;
}

/// Attention as a composition of products, softmax and element-wise operators (`mask` additive,
/// `s` the scale): the path of the head dims and dtypes that no template serves. Traced on symbolic
/// tensors (graph::fuse_attention's rule for such nodes) it records those operators as nodes, which
/// the graph's passes fuse (the scale into the first product's epilogue, the casts into the
/// softmax, the permute into the second product).
HIDET_INLINE Tensor composed(const Tensor &q, const Tensor &k, const Tensor &v, const std::optional<Tensor> &mask,
                             bool is_causal, double s, bool heads_last) {
  const Shape &sq = q.shape();
  const std::int64_t B = sq[0], H = sq[1], Sq = sq[2], Hkv = k.shape()[1], Skv = k.shape()[2];
  // Scores in f32 for half inputs (the matmul accumulates in f32 either way).
  // Grouped-query attention: each kv head repeated for its H / Hkv q heads (k and v may differ in
  // their head dims).
  auto repeat_kv = [&](const Tensor &t) {
    const std::int64_t d = t.shape()[3];
    return Hkv == H ? t : broadcast_to(unsqueeze(t, 2), {B, Hkv, H / Hkv, Skv, d}).reshape({B, H, Skv, d});
  };
  Tensor scores = matmul(q, transpose(repeat_kv(k), -2, -1));
  if (scores.dtype().is_half()) scores = cast(scores, dtypes::f32);
  scores = scores * s;
  if (mask) scores = scores + *mask;
  if (is_causal) scores = scores + causal_bias(Sq, Skv, q.device());
  Tensor probs = softmax(scores, -1);
  // A row with every key masked attends to nothing: 0, as PyTorch (softmax alone gives NaN).
  if (mask || is_causal)
    probs = where(eq(max(scores, {-1}, true), -std::numeric_limits<double>::infinity()), zeros_like(probs), probs);
  if (probs.dtype() != v.dtype()) probs = cast(probs, v.dtype());
  Tensor o = matmul(probs, repeat_kv(v));
  return heads_last ? permute(o, {0, 2, 1, 3}) : o;
}

/// Attention, its output [B, H, Sq, D] or (heads_last) [B, Sq, H, D].
HIDET_INLINE Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                              const std::optional<Tensor> &attn_mask, bool is_causal,
                              std::optional<double> scale, bool heads_last) {
  if (detail::has_symbolic_extents({q, k, v}) || (attn_mask && detail::has_symbolic_extents({*attn_mask}))) {
    std::vector<Tensor> ins{q, k, v};
    if (attn_mask) ins.push_back(*attn_mask);
    // Run inside a graph that binds the symbols: one kernel for every value where the template
    // takes them (attention_symbolic), else per shape.
    const SymShape qs = q.sym_shape(), ks = k.sym_shape();
    const std::optional<SymShape> ms = attn_mask ? std::optional<SymShape>(attn_mask->sym_shape()) : std::nullopt;
    return detail::trace_by_probing(heads_last ? "scaled_dot_product_attention_heads_last" : "scaled_dot_product_attention",
                                    ins, [=](const std::vector<Tensor> &in) {
                                      if (auto y = attention_symbolic(in, qs, ks, ms, is_causal, scale, heads_last)) return *y;
                                      return attention(in[0], in[1], in[2], in.size() > 3 ? std::optional<Tensor>(in[3]) : std::nullopt,
                                                       is_causal, scale, heads_last);
                                    });
  }
  auto shapes = [&] {
    std::string s = str_cat("q ", shape_str(q.shape()), ", k ", shape_str(k.shape()), ", v ",
                            shape_str(v.shape()));
    if (attn_mask) s += str_cat(", attn_mask ", shape_str(attn_mask->shape()));
    return s;
  };
  auto fail = [&](const std::string &why) {
    throw ValueError(str_cat(op, ": ", why, " (", shapes(), ")"));
  };
  if (!q.defined() || !k.defined() || !v.defined() || (attn_mask && !attn_mask->defined()))
    throw ValueError(str_cat(op, ": q, k, v and attn_mask must be defined tensors"));
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4)
    fail("q, k and v must be 4-D [batch, heads, seq, head_dim]; reshape other layouts first");
  const auto &sq = q.shape(), &sk = k.shape(), &sv = v.shape();
  if (sk[0] != sq[0] || sv[0] != sq[0] || sv[1] != sk[1] || sk[1] <= 0 || sq[1] % sk[1] != 0)
    fail("k and v must have q's batch (dim 0) and one count of heads (dim 1) that divides q's (grouped-query "
         "attention: q head h reads kv head h / (H / Hkv))");
  if (sk[2] != sv[2]) fail("k and v must have the same sequence length (dim 2)");
  if (sk[3] != sq[3]) fail(str_cat("k's head dim ", sk[3], " must equal q's ", sq[3]));
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype())
    fail(str_cat("q, k and v must have one dtype, got ", q.dtype(), ", ", k.dtype(), " and ",
                 v.dtype()));
  if (!q.dtype().is_float()) fail(str_cat("q, k and v must be floating point, got ", q.dtype()));
  if (q.device() != k.device() || q.device() != v.device())
    fail(str_cat("q, k and v must be on one device, got ", q.device_str(), ", ", k.device_str(),
                 " and ", v.device_str()));
  for (auto d : sq)
    if (d <= 0) fail("sizes must be positive");
  if (sk[2] <= 0) fail("sizes must be positive");
  // D: q and k's head dim; Dv: v's and the output's (PyTorch allows them to differ)
  const std::int64_t B = sq[0], H = sq[1], Sq = sq[2], Skv = sk[2], D = sq[3], Dv = sv[3], Hkv = sk[1];
  if (attn_mask) {
    // A mask broadcast over the queries or the keys, as PyTorch allows (a padding mask [B, 1, 1,
    // Skv]: BERT's extended attention mask, LayoutLM's; or [Skv]): expanded to [..., Sq, Skv].
    const Shape &ms = attn_mask->shape();
    const std::size_t r = ms.size();
    if (r >= 1 && r <= 4 && (ms.back() == 1 || ms.back() == Skv) && (r == 1 || ms[r - 2] == 1 || ms[r - 2] == Sq)) {
      Shape full = r == 1 ? Shape{Sq, Skv} : ms;
      full[full.size() - 2] = Sq, full.back() = Skv;
      if (full != ms) return attention(q, k, v, broadcast_to(*attn_mask, full), is_causal, scale, heads_last);
    }
  }
  std::optional<Tensor> mask;
  if (attn_mask) {
    const auto &ms = attn_mask->shape();
    if (ms.size() < 2 || ms.size() > 4 || ms[ms.size() - 2] != Sq || ms.back() != Skv)
      fail(str_cat("attn_mask must be [Sq, Skv] = [", Sq, ", ", Skv,
                   "] (dims of 1 broadcast), optionally with leading [B or 1, H or 1]"));
    Shape m4(4 - ms.size(), 1);
    m4.insert(m4.end(), ms.begin(), ms.end());
    if ((m4[0] != 1 && m4[0] != B) || (m4[1] != 1 && m4[1] != H))
      fail(str_cat("attn_mask's leading dims must be 1 or q's batch ", B, " and heads ", H));
    if (attn_mask->device() != q.device())
      fail(str_cat("attn_mask is on ", attn_mask->device_str(), " but q on ", q.device_str()));
    DataType md = attn_mask->dtype();
    if (!attn_mask->is_symbolic() && !any_symbolic({q, k, v}) && (md.is_bool() || md == dtypes::f32 || md.is_half()) &&
        decode_applies(q, k, v, attn_mask->reshape(m4)))
      return attention_decode(q, k, v, attn_mask->reshape(m4), is_causal, scale ? *scale : 1.0 / std::sqrt(double(D)),
                              heads_last);
    if (md.is_bool()) {
      mask = attention_additive_mask(attn_mask->reshape(m4)); // kernels: capturable
    } else if (md == dtypes::f32 || md.is_half()) {
      mask = attn_mask->reshape(m4);
    } else {
      fail(str_cat(
          "attn_mask must be f32, f16, bf16 (added to the scores) or bool (true = attend), got ",
          md));
    }
  }
  if (any_symbolic({q, k, v}) || (attn_mask && attn_mask->is_symbolic())) {
    // Record the node; running it calls this function on concrete inputs. A mask that holds data
    // was converted just now (a bool mask to its additive form, once, not per run); one that
    // masks nothing (all zeros: a padding mask without padding) is dropped, and one that masks
    // exactly the keys after each query (j > i: GPT-2's causal mask) becomes is_causal (the
    // kernel then skips the masked tiles instead of reading a mask).
    std::vector<Tensor> ins{q, k, v};
    if (mask && !mask->is_symbolic()) {
      std::vector<double> mv = mask->to_double_vector();
      bool nothing = std::all_of(mv.begin(), mv.end(), [](double x) { return x == 0.0; });
      // Masked: -inf, or the mask dtype's lowest value (torch.finfo(dtype).min, HF's choice).
      const double lowest = mask->dtype() == dtypes::f16 ? -65504.0 : mask->dtype() == dtypes::bf16 ? -3.3895313892515355e38
                                                                                                     : -3.4028234663852886e38;
      bool causal = !nothing;
      for (std::size_t e = 0; causal && e < mv.size(); ++e) {
        const auto i = std::int64_t(e / std::size_t(Skv)) % Sq, j = std::int64_t(e % std::size_t(Skv));
        causal = j <= i ? mv[e] == 0.0 : mv[e] <= lowest;
      }
      if (causal) is_causal = true;
      else if (!nothing) ins.push_back(*mask);
    } else if (attn_mask) {
      ins.push_back(*attn_mask);
    }
    const std::string attrs = node_attrs(is_causal, scale, heads_last);
    auto run = [is_causal, scale, heads_last](const std::vector<Tensor> &in) {
      std::optional<Tensor> m;
      if (in.size() > 3) m = in[3];
      return std::vector<Tensor>{attention(in[0], in[1], in[2], m, is_causal, scale, heads_last)};
    };
    SymShape out = q.sym_shape();
    out[3] = v.sym_shape()[3];
    if (heads_last) std::swap(out[1], out[2]);
    return mark_scratch_build(trace_operator("ScaledDotProductAttention", ins, attrs,
                          {{out, q.dtype(), q.device()}}, run)[0]);
  }
  const double s = scale ? *scale : 1.0 / std::sqrt(double(D));
  if (!attn_mask && decode_applies(q, k, v, std::nullopt)) return attention_decode(q, k, v, std::nullopt, is_causal, s, heads_last);

  // The template indexes with 32-bit integers and puts heads and batch on grid y and z.
  const std::int64_t lim = std::int64_t(1) << 31;
  const bool fits = B <= 65535 && H <= 65535 && B * H * std::max(Sq, Skv) * std::max(D, Dv) < lim &&
                    (!mask || mask->numel() < lim);
  if (templated_dtype(q.dtype()) && templated_head_dims(q.dtype(), D, Dv) && q.device().is_cuda() && fits) {
    templates::AttentionProblem p;
    p.batch = int(B), p.heads = int(H), p.seq_q = int(Sq), p.seq_kv = int(Skv), p.head_dim = int(D);
    p.head_dim_v = Dv != D ? int(Dv) : 0;
    p.dtype = q.dtype(), p.causal = is_causal, p.kv_heads = int(Hkv);
    if (mask)
      p.has_mask = true, p.mask_dtype = mask->dtype(), p.mask_batch = int(mask->shape()[0]),
      p.mask_heads = int(mask->shape()[1]);
    p.heads_last = heads_last;
    return run_template(p, q, k, v, mask, s);
  }

  return composed(q, k, v, mask, is_causal, s, heads_last);
}
} // namespace attention_detail

HIDET_INLINE bool attention_runs_composed(const Tensor &q, const Tensor &k, const Tensor &v) {
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || !is_constant_shape(q.sym_shape()) ||
      !is_constant_shape(k.sym_shape()) || !is_constant_shape(v.sym_shape()))
    return false;
  const SymShape &sq = q.sym_shape();
  const std::int64_t sq_len = sq[2].value(), D = sq[3].value();
  // The decode kernel (attention_decode.hpp) serves up to 8 query rows of any head dim (v's that
  // of q); the templates, f16 and bf16 at head dims 16, 32, 64 or 128 (v's may differ) and f32 at
  // a multiple of 32 up to 128.
  const std::int64_t Dv = v.sym_shape()[3].value();
  if ((sq_len <= 8 && Dv == D) || !q.dtype().is_float()) return false;
  return !attention_detail::templated_dtype(q.dtype()) || !attention_detail::templated_head_dims(q.dtype(), D, Dv);
}

HIDET_INLINE Tensor scaled_dot_product_attention_composed(const Tensor &q, const Tensor &k, const Tensor &v,
                                                          const std::optional<Tensor> &attn_mask, bool is_causal,
                                                          std::optional<double> scale, bool heads_last) {
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4 || !is_constant_shape(q.sym_shape()) ||
      !is_constant_shape(k.sym_shape()) || !is_constant_shape(v.sym_shape()))
    throw ValueError(str_cat("scaled_dot_product_attention_composed: q, k and v must be 4-D of constant extents, got ",
                             shape_str(q.sym_shape()), ", ", shape_str(k.sym_shape()), " and ", shape_str(v.sym_shape())));
  std::optional<Tensor> mask = attn_mask;
  if (mask && mask->dtype().is_bool()) mask = attention_additive_mask(*mask);
  const double s = scale ? *scale : 1.0 / std::sqrt(double(q.sym_shape()[3].value()));
  return attention_detail::composed(q, k, v, mask, is_causal, s, heads_last);
}

HIDET_INLINE Tensor attention_additive_mask(const Tensor &mask) {
  if (!mask.dtype().is_bool()) throw ValueError(str_cat("attention_additive_mask: expected a bool mask, got ", mask.dtype()));
  return where(mask, ops::full({1}, 0.0, dtypes::f32, mask.device()),
               ops::full({1}, -std::numeric_limits<double>::infinity(), dtypes::f32, mask.device()));
}

HIDET_INLINE std::size_t attention_symbolic_builds() {
  auto &b = attention_detail::symbolic_builds();
  std::lock_guard<std::mutex> lock(b.mu);
  return b.count;
}

HIDET_INLINE Tensor scaled_dot_product_attention(const Tensor &q, const Tensor &k, const Tensor &v,
                                                 const std::optional<Tensor> &attn_mask, bool is_causal,
                                                 std::optional<double> scale) {
  return attention_detail::attention(q, k, v, attn_mask, is_causal, scale, false);
}

HIDET_INLINE Tensor scaled_dot_product_attention_packed(const PackedHeads &q, const PackedHeads &k, const PackedHeads &v,
                                                        const std::optional<Tensor> &attn_mask, bool is_causal,
                                                        std::optional<double> scale, bool heads_last) {
  const char *op = "scaled_dot_product_attention_packed";
  const std::pair<const PackedHeads *, const char *> ins[] = {{&q, "q"}, {&k, "k"}, {&v, "v"}};
  for (const auto &[in, name] : ins) {
    if (!in->x.defined() || in->x.ndim() != 4)
      throw ValueError(str_cat(op, ": ", name, " must be a 4-D tensor [B, S, H, W]",
                               in->x.defined() ? str_cat(", got ", shape_str(in->x.sym_shape())) : std::string()));
    const Dim w = in->x.sym_shape()[3];
    if (in->dim <= 0 || in->offset < 0 || !w.is_constant() || in->offset + in->dim > w.value())
      throw ValueError(str_cat(op, ": ", name, "'s columns [", in->offset, ", ", in->offset + in->dim,
                               ") must lie inside its constant last dim ", w.str()));
  }
  // The heads as attention's [B, H, S, D] operands (views of the columns, permuted).
  auto heads = [](const PackedHeads &in) {
    return permute(slice(in.x, {3}, {in.offset}, {in.offset + in.dim}), {0, 2, 1, 3});
  };
  auto unpacked = [&] { return attention_detail::attention(heads(q), heads(k), heads(v), attn_mask, is_causal, scale, heads_last); };
  if (detail::has_symbolic_extents({q.x, k.x, v.x}) || (attn_mask && detail::has_symbolic_extents({*attn_mask})))
    return unpacked(); // over symbolic extents: the operators as they are
  const bool symbolic = any_symbolic({q.x, k.x, v.x}) || (attn_mask && attn_mask->is_symbolic());
  const Shape &xq = q.x.shape(), &xk = k.x.shape(), &xv = v.x.shape();
  const DataType dt = q.x.dtype();
  // What the kernel needs; anything else (and every error) goes through the unpacked operators.
  bool served = dt.is_half() && k.x.dtype() == dt && v.x.dtype() == dt && xk[0] == xq[0] && xv[0] == xq[0] &&
                xv[1] == xk[1] && xv[2] == xk[2] && xk[2] > 0 && xq[2] % xk[2] == 0 && q.dim == k.dim && xq[1] > 8 &&
                attention_detail::templated_head_dims(dt, q.dim, v.dim) && q.x.device().is_cuda() &&
                k.x.device() == q.x.device() && v.x.device() == q.x.device();
  for (const auto &[in, name] : ins) served = served && in->x.shape()[3] % 8 == 0 && in->offset % 8 == 0;
  const std::int64_t B = xq[0], Sq = xq[1], H = xq[2], Skv = xk[1], Hkv = xk[2];
  std::optional<Tensor> mask;
  if (served && attn_mask) {
    const Shape &ms = attn_mask->shape();
    const DataType md = attn_mask->dtype();
    served = ms.size() >= 2 && ms.size() <= 4 && ms[ms.size() - 2] == Sq && ms.back() == Skv &&
             (md.is_bool() || md == dtypes::f32 || md.is_half()) && attn_mask->device() == q.x.device();
    if (served) {
      Shape m4(4 - ms.size(), 1);
      m4.insert(m4.end(), ms.begin(), ms.end());
      served = (m4[0] == 1 || m4[0] == B) && (m4[1] == 1 || m4[1] == H);
      if (served) mask = md.is_bool() ? attention_additive_mask(attn_mask->reshape(m4)) : attn_mask->reshape(m4);
    }
  }
  const std::int64_t lim = std::int64_t(1) << 31;
  served = served && B <= 65535 && H <= 65535 && B * std::max(Sq, Skv) * H * std::max({xq[3], xk[3], xv[3]}) < lim &&
           (!mask || mask->numel() < lim);
  if (!served) return unpacked();
  templates::AttentionProblem p;
  p.batch = int(B), p.heads = int(H), p.kv_heads = int(Hkv), p.seq_q = int(Sq), p.seq_kv = int(Skv);
  p.head_dim = int(q.dim), p.head_dim_v = v.dim != q.dim ? int(v.dim) : 0, p.dtype = dt, p.causal = is_causal;
  p.heads_last = heads_last;
  if (mask)
    p.has_mask = true, p.mask_dtype = mask->dtype(), p.mask_batch = int(mask->shape()[0]), p.mask_heads = int(mask->shape()[1]);
  // Where the Hopper kernel would serve the permuted copies (long sequences at head dim 64 or 128),
  // they are made: it outruns the mma.sync kernel there by more than the copies cost.
  const auto &dev = runtime::device_info(0);
  if (templates::attention_heuristic_config(p, dev.sm_count > 0 ? dev.sm_count : 132, templates::wgmma_available()).wgmma)
    return unpacked();
  p.in_q = {int(xq[3]), int(q.offset)}, p.in_k = {int(xk[3]), int(k.offset)}, p.in_v = {int(xv[3]), int(v.offset)};
  if (symbolic) { // a node of the graph; its run calls this function on concrete tensors
    std::vector<Tensor> in{q.x, k.x, v.x};
    if (mask) in.push_back(*mask);
    const std::string attrs = str_cat("q=", q.offset, ":", q.dim, ", k=", k.offset, ":", k.dim, ", v=", v.offset, ":",
                                      v.dim, ", ", attention_detail::node_attrs(is_causal, scale, heads_last));
    const std::int64_t qo = q.offset, qd = q.dim, ko = k.offset, kd = k.dim, vo = v.offset, vd = v.dim;
    auto run = [=](const std::vector<Tensor> &t) {
      std::optional<Tensor> m;
      if (t.size() > 3) m = t[3];
      return std::vector<Tensor>{scaled_dot_product_attention_packed({t[0], qo, qd}, {t[1], ko, kd}, {t[2], vo, vd}, m,
                                                                     is_causal, scale, heads_last)};
    };
    SymShape out{q.x.sym_shape()[0], Dim(H), q.x.sym_shape()[1], Dim(v.dim)};
    if (heads_last) std::swap(out[1], out[2]);
    return mark_scratch_build(trace_operator("ScaledDotProductAttentionPacked", in, attrs, {{out, dt, q.x.device()}}, run)[0]);
  }
  return attention_detail::run_template(p, q.x, k.x, v.x, mask, scale ? *scale : 1.0 / std::sqrt(double(q.dim)));
}

HIDET_INLINE Tensor scaled_dot_product_attention_heads_last(const Tensor &q, const Tensor &k, const Tensor &v,
                                                            const std::optional<Tensor> &attn_mask, bool is_causal,
                                                            std::optional<double> scale) {
  return attention_detail::attention(q, k, v, attn_mask, is_causal, scale, true);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
