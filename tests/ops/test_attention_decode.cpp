// The decode attention kernel (ops/templates/attention_decode.hpp), on the GPU when present, else
// on the emulator: few query rows over a cache of odd length with grouped-query heads, bool and
// additive masks (HF's static-cache masks: the dtype's lowest value past each row's position),
// causal, the output with the heads last, split-KV combined in the kernel (launched twice: the
// counters reset), every tiling the checks accept on a small problem, against a double reference;
// keys outside the attended range are never read (they hold NaN here); ops'
// scaled_dot_product_attention takes it for few query rows; bad configurations.
#include "ops_test_util.hpp"

#include "hidet/ops/templates/attention_decode.hpp"

using namespace ops_test;
using hidet::ops::templates::AttentionDecode;
using hidet::ops::templates::AttentionDecodeConfig;
using hidet::ops::templates::AttentionProblem;

namespace {
struct Case {
  std::int64_t B, H, Hkv, Sq, S, D;
  DataType dt = dtypes::f16;
  bool causal = false;
  int mask =
      0; ///< 0 none, 1 bool [B, 1, Sq, S], 2 additive [1, H, Sq, S] (lowest value where masked)
  bool heads_last = false;
};

/// The key length each (b, i) attends to: a static cache's valid length grows with b, and query
/// i of Sq sees i more.
std::int64_t valid(const Case &c, std::int64_t b, std::int64_t i) {
  return std::min<std::int64_t>(c.S, 5 + (b * 37) % (c.S - 6) + i);
}

Tensor make_mask(const Case &c) {
  if (c.mask == 1) {
    std::vector<double> m(std::size_t(c.B * c.Sq * c.S));
    for (std::int64_t b = 0; b < c.B; ++b)
      for (std::int64_t i = 0; i < c.Sq; ++i)
        for (std::int64_t j = 0; j < c.S; ++j)
          m[std::size_t((b * c.Sq + i) * c.S + j)] = j < valid(c, b, i) ? 1 : 0;
    return asarray(m, {c.B, 1, c.Sq, c.S}, dtypes::boolean);
  }
  const double lowest = c.dt == dtypes::f16    ? -65504.0
                        : c.dt == dtypes::bf16 ? -3.3895313892515355e38
                                               : -3.4028234663852886e38;
  std::vector<double> m(std::size_t(c.H * c.Sq * c.S));
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::int64_t h = 0; h < c.H; ++h) // per head: row h % 3 attends to keys [h % 3, valid)
    for (std::int64_t i = 0; i < c.Sq; ++i)
      for (std::int64_t j = 0; j < c.S; ++j)
        m[std::size_t((h * c.Sq + i) * c.S + j)] =
            j >= h % 3 && j < valid(c, 0, i) ? u(g_rng) : lowest;
  return asarray(m, {1, c.H, c.Sq, c.S}, c.dt);
}

/// Whether query i of head h in batch b attends to key j (the masks above, causality).
bool attends(const Case &c, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
  if (c.causal && j > i) return false;
  if (c.mask == 1) return j < valid(c, b, i);
  if (c.mask == 2) return j >= h % 3 && j < valid(c, 0, i);
  return true;
}

/// K or V [B, Hkv, S, D] with NaN in the keys of batch b past the last one that some row of b
/// attends to: the kernel must not read them.
Tensor make_cache(const Case &c) {
  Tensor t = make({c.B, c.Hkv, c.S, c.D}, c.dt);
  auto v = t.to_double_vector();
  for (std::int64_t b = 0; b < c.B; ++b) {
    std::int64_t last = -1;
    for (std::int64_t h = 0; h < c.H; ++h)
      for (std::int64_t i = 0; i < c.Sq; ++i)
        for (std::int64_t j = 0; j < c.S; ++j)
          if (attends(c, b, h, i, j)) last = std::max(last, j);
    for (std::int64_t j = last + 1; j < c.S; ++j)
      for (std::int64_t h = 0; h < c.Hkv; ++h)
        for (std::int64_t d = 0; d < c.D; ++d)
          v[std::size_t(((b * c.Hkv + h) * c.S + j) * c.D + d)] = std::nan("");
  }
  return asarray(v, {c.B, c.Hkv, c.S, c.D}, c.dt);
}

std::vector<double> reference(const Case &c, const Tensor &q, const Tensor &k, const Tensor &v,
                              const Tensor *mask, double scale) {
  auto qv = q.to_double_vector(), kv = k.to_double_vector(), vv = v.to_double_vector();
  std::vector<double> mv = mask ? mask->to_double_vector() : std::vector<double>{};
  const std::int64_t G = c.H / c.Hkv;
  std::vector<double> out(std::size_t(c.B * c.H * c.Sq * c.D), 0.0);
  for (std::int64_t b = 0; b < c.B; ++b)
    for (std::int64_t h = 0; h < c.H; ++h)
      for (std::int64_t i = 0; i < c.Sq; ++i) {
        std::vector<double> s(std::size_t(c.S), -INFINITY);
        double mx = -INFINITY;
        for (std::int64_t j = 0; j < c.S; ++j) {
          if (c.causal && j > i) continue;
          double add = 0;
          if (c.mask == 1 && mv[std::size_t((b * c.Sq + i) * c.S + j)] == 0) continue;
          if (c.mask == 2) add = mv[std::size_t((h * c.Sq + i) * c.S + j)];
          if (!attends(c, b, h, i, j)) continue; // (an additive mask's lowest value weighs 0 too)
          double dot = 0;
          for (std::int64_t d = 0; d < c.D; ++d)
            dot += qv[std::size_t(((b * c.H + h) * c.Sq + i) * c.D + d)] *
                   kv[std::size_t(((b * c.Hkv + h / G) * c.S + j) * c.D + d)];
          s[std::size_t(j)] = dot * scale + add;
          mx = std::max(mx, s[std::size_t(j)]);
        }
        if (mx == -INFINITY) continue; // no key: 0
        double l = 0;
        std::vector<double> o(std::size_t(c.D), 0.0);
        for (std::int64_t j = 0; j < c.S; ++j) {
          double p = std::exp(s[std::size_t(j)] - mx);
          if (p == 0) continue; // masked keys hold NaN in the test's cache
          l += p;
          for (std::int64_t d = 0; d < c.D; ++d)
            o[std::size_t(d)] += p * vv[std::size_t(((b * c.Hkv + h / G) * c.S + j) * c.D + d)];
        }
        for (std::int64_t d = 0; d < c.D; ++d) {
          std::int64_t at = c.heads_last ? ((b * c.Sq + i) * c.H + h) * c.D + d
                                         : ((b * c.H + h) * c.Sq + i) * c.D + d;
          out[std::size_t(at)] = o[std::size_t(d)] / l;
        }
      }
  return out;
}

AttentionProblem problem_of(const Case &c) {
  AttentionProblem p;
  p.batch = int(c.B), p.heads = int(c.H), p.kv_heads = int(c.Hkv), p.seq_q = int(c.Sq),
  p.seq_kv = int(c.S);
  p.head_dim = int(c.D), p.dtype = c.dt, p.causal = c.causal, p.heads_last = c.heads_last;
  if (c.mask)
    p.has_mask = true, p.mask_dtype = c.mask == 1 ? dtypes::boolean : c.dt,
    p.mask_batch = c.mask == 1 ? int(c.B) : 1, p.mask_heads = c.mask == 1 ? 1 : int(c.H);
  return p;
}

o::Shape out_shape(const Case &c) {
  return c.heads_last ? o::Shape{c.B, c.Sq, c.H, c.D} : o::Shape{c.B, c.H, c.Sq, c.D};
}

void check_direct(const Case &c, const AttentionDecodeConfig &cfg) {
  INFO("B " << c.B << " H " << c.H << " Hkv " << c.Hkv << " Sq " << c.Sq << " S " << c.S << " D "
            << c.D << " " << c.dt << (c.causal ? " causal" : "") << " mask " << c.mask
            << (c.heads_last ? " heads last" : "") << ", config " << cfg.str());
  Tensor q = make({c.B, c.H, c.Sq, c.D}, c.dt), k = make_cache(c), v = make_cache(c);
  Tensor mask = c.mask ? make_mask(c) : Tensor();
  const double scale = 0.3;
  auto want = reference(c, q, k, v, c.mask ? &mask : nullptr, scale);
  AttentionDecode run(problem_of(c), cfg);
  for (int launch = 0; launch < 2; ++launch) {
    INFO("launch " << launch);
    Tensor out = hidet::full(out_shape(c), std::nan(""), c.dt);
    run(q, k, v, mask, out, scale);
    expect_close(out, out_shape(c), want);
  }
}

AttentionDecodeConfig config(int rows, int block_kv, int warps, int splits) {
  AttentionDecodeConfig c;
  c.rows = rows, c.block_kv = block_kv, c.warps = warps, c.splits = splits;
  return c;
}
} // namespace

TEST_CASE("attention_decode: grouped heads, static-cache masks, causal, heads last, split-KV") {
  // Llama-like decode: 6 q heads on 2 kv heads (3 rows per kv head), one query, a bool mask per
  // batch whose valid lengths differ, a cache of 77 slots; split over 4 blocks.
  check_direct({2, 6, 2, 1, 77, 64}, config(3, 64, 4, 4));
  // two rows per block: 2 row groups of the 3 rows (a partial one), one part
  check_direct({2, 6, 2, 1, 77, 64}, config(2, 32, 2, 1));
  // bf16, two queries (speculative decoding), an additive per-head mask with the lowest value
  // where masked (HF's), head dim 128, the output [B, Sq, H, D]
  Case c{1, 4, 1, 2, 90, 128, dtypes::bf16, false, 2, true};
  check_direct(c, config(8, 64, 4, 3));
  // f32 (4-element vectors), causal without a mask (keys j <= i), 3 queries
  check_direct({3, 2, 2, 3, 41, 32, dtypes::f32, true, 0, false}, config(3, 32, 2, 2));
  // no mask, no causality: every key, split into many parts (some empty)
  check_direct({1, 4, 4, 1, 70, 64, dtypes::f16}, config(1, 32, 4, 16));
  // causal and a bool mask together
  check_direct({2, 4, 2, 3, 33, 64, dtypes::f16, true, 1, false}, config(6, 64, 4, 2));
  // A cache of 1200 slots scanned by 64 threads, 8 keys each per pass: three passes, the batches'
  // last attended keys (4 to 1151) in each of them
  check_direct({32, 2, 1, 1, 1200, 32, dtypes::f16, false, 1, false}, config(2, 32, 2, 3));
}

TEST_CASE("attention_decode: every tiling the checks accept, on one small problem") {
  std::vector<AttentionDecodeConfig> all;
  for (int rows : {1, 3, 8})
    for (int bkv : {32, 64, 128})
      for (int warps : {2, 4, 8})
        for (int splits : {1, 5}) {
          auto c = config(rows, bkv, warps, splits);
          try {
            Case x{1, 8, 2, 1, 150, 64, dtypes::f16, false, 1, false};
            hidet::ops::templates::check_attention_decode(problem_of(x), c);
            all.push_back(c);
          } catch (const ValueError &) {
          }
        }
  CHECK(all.size() >= 30);
  for (const auto &c : configs_to_run(all, 8))
    check_direct({1, 8, 2, 1, 150, 64, dtypes::f16, false, 1, false}, c);
}

TEST_CASE(
    "attention_decode: a row that attends to no key gives 0; the operator takes few query rows") {
  Case c{1, 2, 1, 1, 40, 32, dtypes::f16, false, 1, false};
  Tensor q = make({1, 2, 1, 32}, dtypes::f16), k = make({1, 1, 40, 32}, dtypes::f16),
         v = make({1, 1, 40, 32}, dtypes::f16);
  Tensor none = hidet::zeros({1, 1, 1, 40}, dtypes::boolean);
  for (int splits : {1, 3}) {
    AttentionDecode run(problem_of(c), config(2, 32, 2, splits));
    Tensor out = hidet::full({1, 2, 1, 32}, std::nan(""), dtypes::f16);
    run(q, k, v, none, out, 0.5);
    expect_close(out, {1, 2, 1, 32}, std::vector<double>(64, 0.0), true);
  }
  // ops::scaled_dot_product_attention at Sq = 1 with a bool static-cache mask and grouped heads:
  // the decode kernel, whose cache holds NaN past the valid keys (the tiled kernel would read them)
  Case d{2, 8, 2, 1, 100, 64, dtypes::f16, false, 1, false};
  Tensor dq = make({2, 8, 1, 64}, dtypes::f16), dk = make_cache(d), dv = make_cache(d),
         dm = make_mask(d);
  Tensor got = o::scaled_dot_product_attention(dq, dk, dv, dm, false, 0.125);
  expect_close(got, {2, 8, 1, 64}, reference(d, dq, dk, dv, &dm, 0.125));
  // and the heads-last form, without a mask
  Case e{1, 4, 2, 1, 50, 64, dtypes::bf16, false, 0, true};
  Tensor eq = make({1, 4, 1, 64}, dtypes::bf16), ek = make_cache(e), ev = make_cache(e);
  got = o::scaled_dot_product_attention_heads_last(eq, ek, ev, std::nullopt, false, std::nullopt);
  expect_close(got, {1, 1, 4, 64}, reference(e, eq, ek, ev, nullptr, 1.0 / 8));
}

TEST_CASE(
    "attention_decode: a node over a symbolic batch and cache length runs it at every value") {
  // A decoding step traced with symbols (dynamo's dynamic batch): one query row, the cache length
  // t and batch n symbolic, a bool mask per batch. The node takes the decode kernel at each value
  // (not the tiled kernel built for symbols), and each value's result matches the reference.
  const std::int64_t H = 8, Hkv = 2, D = 64;
  Tensor q = symbol({Dim::symbol("n"), Dim(H), Dim(1), Dim(D)}, dtypes::f16, "cuda", "q");
  Tensor k =
      symbol({Dim::symbol("n"), Dim(Hkv), Dim::symbol("t"), Dim(D)}, dtypes::f16, "cuda", "k");
  Tensor v =
      symbol({Dim::symbol("n"), Dim(Hkv), Dim::symbol("t"), Dim(D)}, dtypes::f16, "cuda", "v");
  Tensor m =
      symbol({Dim::symbol("n"), Dim(1), Dim(1), Dim::symbol("t")}, dtypes::boolean, "cuda", "m");
  Tensor y = o::scaled_dot_product_attention(q, k, v, m, false, 0.125);
  const auto &node = *y.trace().op;
  const std::size_t before = o::attention_symbolic_builds();
  for (auto [n, t] : {std::pair<std::int64_t, std::int64_t>{1, 60}, {3, 45}, {2, 130}}) {
    INFO("n " << n << ", t " << t);
    Case c{n, H, Hkv, 1, t, D, dtypes::f16, false, 1, false};
    Tensor qc = make({n, H, 1, D}, dtypes::f16), kc = make_cache(c), vc = make_cache(c),
           mc = make_mask(c);
    Tensor got = [&] {
      SymbolBinding bind({{"n", n}, {"t", t}});
      return node.run({qc, kc, vc, mc})[0];
    }();
    expect_close(got, {n, H, 1, D}, reference(c, qc, kc, vc, &mc, 0.125));
  }
  CHECK(o::attention_symbolic_builds() == before);
}

TEST_CASE("attention_decode: what it cannot serve") {
  Case c{1, 4, 2, 1, 40, 64};
  expect_error(
      [&] { hidet::ops::templates::check_attention_decode(problem_of(c), config(9, 64, 4, 1)); },
      {"rows"});
  expect_error(
      [&] { hidet::ops::templates::check_attention_decode(problem_of(c), config(4, 48, 4, 1)); },
      {"block_kv"});
  expect_error(
      [&] { hidet::ops::templates::check_attention_decode(problem_of(c), config(4, 64, 4, 65)); },
      {"splits"});
  Case odd{1, 4, 2, 1, 40, 60};
  expect_error(
      [&] { hidet::ops::templates::check_attention_decode(problem_of(odd), config(4, 64, 4, 1)); },
      {"head dim", "16-byte"});
  Case gqa{1, 6, 4, 1, 40, 64};
  expect_error(
      [&] { hidet::ops::templates::check_attention_decode(problem_of(gqa), config(4, 64, 4, 1)); },
      {"divide"});
}
