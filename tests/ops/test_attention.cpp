// scaled_dot_product_attention against a double-precision host reference (GPU when present, else
// the CPU emulator): the flash-attention template for f16/bf16 with head dims 16, 32, 64 and 128 (v's
// head dim may differ from q's; partial tiles, causal, additive and bool masks, every tiling of search space 1, the tuning path), its f32
// counterpart on CUDA cores (head dims 32 to 128, the same masks, every tiling of search space 2),
// the composed fallback for other head dims, and the operator's user errors.
#include <bit>
#include <set>

#include "ops_test_util.hpp"

#include "hidet/ops/attention.hpp"
#include "hidet/ops/templates/attention.hpp"
#include "hidet/ops/tuning.hpp"

using namespace ops_test;
namespace tpl = hidet::ops::templates;

namespace {
struct Problem {
  std::int64_t b, h, sq, skv, d;
  DataType dt;
  bool causal = false;
  o::Shape mask_shape; ///< empty: no mask
  DataType mask_dt = dtypes::f32;
  bool dead_rows = false; ///< the mask hides every key from query rows 3, 10, 17, ... (output 0, as PyTorch)
  std::int64_t kv_heads = 0; ///< grouped-query attention: k and v's heads (0: h)
  std::int64_t dv = 0;       ///< v's (and the output's) head dim (0: d)
  std::int64_t hkv() const { return kv_heads > 0 ? kv_heads : h; }
  std::int64_t vd() const { return dv > 0 ? dv : d; }
};

struct Inputs {
  Tensor q, k, v;
  std::optional<Tensor> mask;
};

Inputs make_inputs(const Problem &p) {
  Inputs in{make({p.b, p.h, p.sq, p.d}, p.dt),
            make({p.b, p.hkv(), p.skv, p.d}, p.dt),
            make({p.b, p.hkv(), p.skv, p.vd()}, p.dt),
            {}};
  if (!p.mask_shape.empty()) {
    auto dead = [&](std::size_t i) { return p.dead_rows && i / std::size_t(p.skv) % std::size_t(p.sq) % 7 == 3; };
    if (p.mask_dt.is_bool()) {
      // true = attend; key 0 always attended so that no row is masked entirely.
      std::vector<bool> m(std::size_t(o::shape_numel(p.mask_shape)));
      std::bernoulli_distribution keep(0.7);
      for (std::size_t i = 0; i < m.size(); ++i)
        m[i] = (i % std::size_t(p.skv) == 0 || keep(g_rng)) && !dead(i);
      in.mask = asarray(m, p.mask_shape).to("cuda");
    } else {
      // Values in [-2, 2) and about 10% -inf, never at key 0.
      std::vector<double> m(std::size_t(o::shape_numel(p.mask_shape)));
      std::uniform_real_distribution<double> u(-2, 2);
      for (std::size_t i = 0; i < m.size(); ++i)
        m[i] = ((i % std::size_t(p.skv) != 0 && u(g_rng) > 1.6) || dead(i)) ? -INFINITY : u(g_rng);
      in.mask = asarray(m, p.mask_shape, p.mask_dt).to("cuda");
    }
  }
  return in;
}

/// The reference output and, per element, sum_j p_j |v_j| (the magnitude the error scales with).
void reference(const Problem &p, const Inputs &in, double scale, std::vector<double> &out,
               std::vector<double> &mag) {
  auto q = in.q.to_double_vector(), k = in.k.to_double_vector(), v = in.v.to_double_vector();
  std::vector<double> m;
  o::Shape ms4;
  if (in.mask) {
    m = in.mask->to_double_vector();
    if (in.mask->dtype().is_bool())
      for (auto &x : m)
        x = x != 0 ? 0.0 : -INFINITY;
    ms4 = in.mask->shape();
    while (ms4.size() < 4)
      ms4.insert(ms4.begin(), 1);
  }
  const std::int64_t dv = p.vd();
  out.assign(std::size_t(p.b * p.h * p.sq * dv), 0), mag.assign(out.size(), 0);
  std::vector<double> s(std::size_t(p.skv));
  for (std::int64_t b = 0; b < p.b; ++b)
    for (std::int64_t h = 0; h < p.h; ++h)
      for (std::int64_t i = 0; i < p.sq; ++i) {
        const std::int64_t hk = h / (p.h / p.hkv()); // grouped-query attention: q head h's kv head
        double mx = -INFINITY;
        for (std::int64_t j = 0; j < p.skv; ++j) {
          double acc = 0;
          for (std::int64_t e = 0; e < p.d; ++e)
            acc += q[std::size_t(((b * p.h + h) * p.sq + i) * p.d + e)] *
                   k[std::size_t(((b * p.hkv() + hk) * p.skv + j) * p.d + e)];
          acc *= scale;
          if (in.mask) {
            // (dims of 1 broadcast: [B, 1, 1, Skv] padding masks)
            std::int64_t mb = ms4[0] == 1 ? 0 : b, mh = ms4[1] == 1 ? 0 : h, mi = ms4[2] == 1 ? 0 : i;
            acc += m[std::size_t(((mb * ms4[1] + mh) * ms4[2] + mi) * p.skv + j)];
          }
          if (p.causal && j > i) acc = -INFINITY;
          s[std::size_t(j)] = acc, mx = std::max(mx, acc);
        }
        if (mx == -INFINITY) continue; // every key masked: 0 (out and mag stay 0)
        double sum = 0;
        for (auto &x : s)
          sum += (x = std::exp(x - mx));
        for (std::int64_t e = 0; e < dv; ++e) {
          double acc = 0, mg = 0;
          for (std::int64_t j = 0; j < p.skv; ++j) {
            double pv = s[std::size_t(j)] / sum, vv = v[std::size_t(((b * p.hkv() + hk) * p.skv + j) * dv + e)];
            acc += pv * vv, mg += pv * std::abs(vv);
          }
          const auto o = std::size_t(((b * p.h + h) * p.sq + i) * dv + e);
          out[o] = acc, mag[o] = mg;
        }
      }
}

/// Checks `got` against the reference. Errors come from rounding P to the input dtype before
/// P V (relative eps_in per term, so up to eps_in * sum_j p_j |v_j|), from f32 scores and sums
/// (~1e-5 relative), and from rounding the output (eps_out of the value). The composed fallback
/// for half dtypes also rounds the scores and the softmax to the input dtype: `slack` widens the
/// rounding terms for it.
void check(const Problem &p, const Inputs &in, const Tensor &got, double scale,
           const std::string &what, double slack = 1) {
  std::vector<double> want, mag;
  reference(p, in, scale, want, mag);
  INFO(what << ": " << p.dt << " B=" << p.b << " H=" << p.h << " Sq=" << p.sq << " Skv=" << p.skv
            << " D=" << p.d << " Dv=" << p.vd() << (p.causal ? " causal" : "")
            << (p.mask_shape.empty() ? "" : " masked") << ", seed " << g_seed);
  REQUIRE(got.shape() == o::Shape{p.b, p.h, p.sq, p.vd()});
  REQUIRE(got.dtype() == p.dt);
  auto g = got.to_double_vector();
  double eps = p.dt == dtypes::f16    ? std::ldexp(1.0, -11)
               : p.dt == dtypes::bf16 ? std::ldexp(1.0, -8)
                                      : 1e-6;
  bool nonzero = false;
  for (std::size_t i = 0; i < g.size(); ++i) {
    nonzero |= g[i] != 0;
    double bound = slack * (1.01 * eps * std::abs(want[i]) + 2.0 * eps * mag[i]) + 1e-4 * mag[i] + 1e-6;
    if (!(std::abs(g[i] - want[i]) <= bound)) {
      auto idx = unravel(std::int64_t(i), got.shape());
      FAIL_CHECK("first bad index [" << idx[0] << ", " << idx[1] << ", " << idx[2] << ", " << idx[3]
                                     << "]: got " << g[i] << ", want " << want[i] << " (bound "
                                     << bound << ")");
      return;
    }
  }
  CHECK_MESSAGE(nonzero, "all-zero output");
}

void run_op(const Problem &p, std::optional<double> scale = std::nullopt) {
  auto in = make_inputs(p);
  auto out = o::scaled_dot_product_attention(in.q, in.k, in.v, in.mask, p.causal, scale);
  auto served = [&](std::int64_t d) { return p.dt.is_half() ? d == 16 || d == 32 || d == 64 || d == 128 : d % 32 == 0 && d <= 128; };
  const bool composed = !served(p.d) || !served(p.vd()) || (!p.dt.is_half() && p.vd() != p.d); // not a template
  check(p, in, out, scale ? *scale : 1.0 / std::sqrt(double(p.d)), "scaled_dot_product_attention",
        composed ? 4.0 : 1.0);
}
} // namespace

TEST_CASE("sdpa: flash template, f16/bf16, head dims 32, 64 and 128, partial tiles, causal") {
  run_op({3, 2, 49, 49, 32, dtypes::f16});       // a Swin window: 49 tokens, heads of 32
  run_op({1, 2, 70, 45, 32, dtypes::bf16, true});
  run_op({1, 2, 70, 90, 64, dtypes::f16});
  run_op({1, 2, 70, 90, 64, dtypes::bf16, true});
  run_op({1, 1, 33, 33, 128, dtypes::f16, true});
  run_op({2, 1, 33, 33, 128, dtypes::bf16}, 0.3);
  run_op({1, 1, 90, 40, 64, dtypes::f16, true});    // Sq > Skv: the last rows attend every key
  run_op({1, 1, 128, 128, 64, dtypes::bf16, true}); // whole tiles only
}

TEST_CASE("sdpa: additive and bool masks, broadcast over batch and heads") {
  run_op({2, 2, 40, 50, 64, dtypes::f16, false, {40, 50}, dtypes::f32});
  run_op({2, 2, 40, 50, 64, dtypes::bf16, true, {2, 1, 40, 50}, dtypes::bf16});
  run_op({1, 2, 20, 70, 128, dtypes::f16, false, {1, 2, 20, 70}, dtypes::f16});
  run_op({1, 2, 30, 45, 64, dtypes::f16, false, {30, 45}, dtypes::boolean});
  run_op({4, 3, 49, 49, 32, dtypes::f16, false, {1, 3, 49, 49}, dtypes::f16}); // Swin's position bias
}

TEST_CASE("sdpa: masks broadcast over the queries (padding masks [B, 1, 1, Skv] as LayoutLM's, and [Skv])") {
  run_op({2, 2, 40, 50, 64, dtypes::f16, false, {2, 1, 1, 50}, dtypes::f32});
  run_op({1, 2, 30, 45, 64, dtypes::bf16, true, {45}, dtypes::boolean});
  run_op({2, 2, 12, 20, 32, dtypes::f32, false, {2, 1, 1, 20}, dtypes::f32}); // the f32 template
  run_op({1, 2, 12, 20, 20, dtypes::f16, false, {1, 1, 1, 20}, dtypes::f16}); // the composed fallback
}

TEST_CASE("sdpa: query rows whose mask hides every key give 0, as PyTorch (ModernBERT's sliding window over padding)") {
  // the f16/bf16 flash template, the f32 template, the composed fallback (head dim 20), split-KV
  run_op({2, 2, 40, 50, 64, dtypes::f16, false, {2, 1, 40, 50}, dtypes::boolean, true});
  run_op({1, 2, 30, 45, 128, dtypes::bf16, true, {30, 45}, dtypes::f32, true});
  run_op({1, 2, 30, 45, 64, dtypes::f32, false, {1, 2, 30, 45}, dtypes::boolean, true});
  run_op({1, 2, 12, 20, 20, dtypes::f16, false, {12, 20}, dtypes::f16, true});
  run_op({1, 2, 12, 20, 20, dtypes::f32, true, {12, 20}, dtypes::boolean, true});
  run_op({1, 2, 4, 1500, 64, dtypes::f16, false, {1, 1, 4, 1500}, dtypes::boolean, true});
}

TEST_CASE("sdpa: grouped-query attention reads kv head h / (H / Hkv) without repeating K and V") {
  Problem p{2, 6, 37, 45, 64, dtypes::f16, true};
  p.kv_heads = 2; // the mma.sync kernel (the Hopper kernel takes as many kv heads as q heads)
  run_op(p);
  p = {1, 8, 1, 700, 128, dtypes::bf16}; // a decoding step: split-KV, one kv head (multi-query)
  p.kv_heads = 1;
  run_op(p);
  p = {1, 4, 20, 33, 64, dtypes::f32, false, {1, 4, 20, 33}, dtypes::boolean}; // the f32 kernel, a mask per q head
  p.kv_heads = 2;
  run_op(p);
  p = {2, 4, 9, 11, 20, dtypes::f16, true}; // the composed fallback (head dim 20)
  p.kv_heads = 2;
  run_op(p);
  // A template built for grouped-query attention names its kv heads; the Hopper kernel refuses it.
  tpl::AttentionProblem ap;
  ap.batch = 1, ap.heads = 8, ap.kv_heads = 2, ap.seq_q = 256, ap.seq_kv = 2048, ap.head_dim = 128;
  CHECK(ap.str().find("2 kv heads") != std::string::npos);
  CHECK_FALSE(tpl::attention_heuristic_config(ap, 132, true).wgmma);
  tpl::AttentionConfig wg;
  wg.wgmma = true, wg.consumers = 2, wg.block_kv = 128;
  expect_error([&] { (void)tpl::attention_module(ap, wg); }, {"Hopper kernel", "kv heads"});
  ap.kv_heads = 3;
  expect_error([&] { (void)tpl::attention_module(ap, {}); }, {"3 heads must divide q's 8"});
  expect_error([&] { (void)o::scaled_dot_product_attention(make({1, 8, 4, 64}, dtypes::f16), make({1, 3, 4, 64}, dtypes::f16),
                                                            make({1, 3, 4, 64}, dtypes::f16)); },
               {"divides q's", "grouped-query"});
}

TEST_CASE("sdpa: every tiling of search space 1") {
  for (int d : {32, 64, 128}) {
    Problem p{1, 1, 40, 72, d, d == 128 ? dtypes::bf16 : dtypes::f16, true};
    tpl::AttentionProblem ap;
    ap.seq_q = 40, ap.seq_kv = 72, ap.head_dim = d, ap.dtype = p.dt, ap.causal = true;
    auto cfgs = tpl::attention_candidates(ap, 1);
    CHECK(cfgs.size() > 4);
    CHECK(cfgs.size() <= 30);
    for (auto &c : configs_to_run(cfgs)) {
      auto in = make_inputs(p);
      auto out =
          full({p.b, p.h, p.sq, p.d}, NAN, p.dt, "cuda"); // poison: an unwritten element fails
      tpl::Attention att(ap, c);
      att(in.q, in.k, in.v, out, 1.0 / std::sqrt(double(d)));
      check(p, in, out, 1.0 / std::sqrt(double(d)), c.str());
    }
  }
}

TEST_CASE("sdpa: the Hopper kernel (wgmma, TMA) compiles for sm_90a; on Hopper every config is checked") {
  // Problems with partial Q and K/V tiles, both head dims and dtypes, causal (also Sq > Skv), an
  // additive mask broadcast over the batch, and the [B, Sq, H, D] output.
  struct Case {
    Problem p;
    bool heads_last = false;
  };
  std::vector<Case> cases{{{2, 3, 200, 333, 64, dtypes::f16}},
                          {{1, 2, 300, 300, 128, dtypes::bf16, true}},
                          {{1, 2, 333, 129, 128, dtypes::f16, true}},
                          {{2, 2, 130, 77, 64, dtypes::bf16, false, {1, 2, 130, 77}, dtypes::f16}},
                          {{1, 3, 257, 256, 128, dtypes::f16, false}, true},
                          {{1, 1, 64, 1000, 64, dtypes::f16, true}}};
  auto problem_of = [](const Case &c) {
    tpl::AttentionProblem ap;
    ap.batch = int(c.p.b), ap.heads = int(c.p.h), ap.seq_q = int(c.p.sq), ap.seq_kv = int(c.p.skv);
    ap.head_dim = int(c.p.d), ap.dtype = c.p.dt, ap.causal = c.p.causal, ap.heads_last = c.heads_last;
    if (!c.p.mask_shape.empty())
      ap.has_mask = true, ap.mask_dtype = c.p.mask_dt, ap.mask_batch = int(c.p.mask_shape[0]),
      ap.mask_heads = int(c.p.mask_shape[1]);
    return ap;
  };
  // The configs of search space 2 that exist for each head dim (the kernel is not emulated).
  auto ap128 = problem_of(cases[1]);
  auto wg = tpl::attention_candidates(ap128, 2, 132, true);
  CHECK(wg[0].wgmma);
  CHECK(std::count_if(wg.begin(), wg.end(), [](auto &c) { return c.wgmma; }) >= 8);
  if (!tpl::wgmma_available()) {
    if (!hidet::detail::nvrtc_available()) return;
    hidet::BuildOptions o;
    o.arch = "sm_90a";
    o.emulator_nvrtc = true; // the compile is this test's check (HIDET_EMULATOR_NVRTC=0 or not)
    for (auto &c : cases) {
      auto ap = problem_of(c);
      tpl::AttentionConfig cfg;
      cfg.wgmma = true, cfg.block_kv = 128;
      auto cm = tpl::attention_module(ap, cfg).build(o);
      INFO(ap.str());
      auto has = [&](const char *text) { return cm.source().find(text) != std::string::npos; };
      CHECK(has("wgmma.mma_async.sync.aligned.m64n128k16.f32"));
      CHECK(has("setmaxnreg"));
      CHECK(!cm.binary().cubin.empty()); // NVRTC compiled it for sm_90a
    }
    return;
  }
  // Each case runs the default and every cases.size()-th config of search space 2 (by its index),
  // so that together the cases cover the space for both head dims.
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const auto &c = cases[ci];
    auto ap = problem_of(c);
    auto cfgs = tpl::attention_candidates(ap, 2, 132, true);
    for (std::size_t j = 0; j < cfgs.size(); ++j) {
      const auto &cfg = cfgs[j];
      if (!cfg.wgmma || (j != 0 && j % cases.size() != ci)) continue;
      auto in = make_inputs(c.p);
      auto shape = c.heads_last ? o::Shape{c.p.b, c.p.sq, c.p.h, c.p.d} : o::Shape{c.p.b, c.p.h, c.p.sq, c.p.d};
      auto out = full(shape, NAN, c.p.dt, "cuda"); // poison: an unwritten element fails
      tpl::Attention att(ap, cfg);
      const double scale = 0.7 / std::sqrt(double(c.p.d));
      if (in.mask) att(in.q, in.k, in.v, *in.mask, out, scale);
      else att(in.q, in.k, in.v, out, scale);
      check(c.p, in, c.heads_last ? o::permute(out, {0, 2, 1, 3}) : out, scale, ap.str() + " | " + cfg.str());
    }
  }
  // Through the operator: the default config is the Hopper kernel for these problems.
  run_op({2, 2, 150, 300, 128, dtypes::f16, true});
  run_op({1, 2, 150, 1100, 64, dtypes::bf16});
}

TEST_CASE("sdpa: split-KV (decoding: few query rows, many keys) against the reference") {
  // The heuristic splits the keys when the query tiles leave most multiprocessors idle.
  tpl::AttentionProblem dec;
  dec.batch = 1, dec.heads = 32, dec.seq_q = 1, dec.seq_kv = 4096, dec.head_dim = 128;
  auto c = tpl::attention_heuristic_config(dec, 132, true);
  CHECK(!c.wgmma);
  CHECK(c.kv_splits == 8); // 64 tiles of 64 keys: runs of 8 tiles, 256 blocks
  dec.batch = 8; // 256 query blocks already fill the GPU
  CHECK(tpl::attention_heuristic_config(dec, 132, true).kv_splits == 1);
  // Explicit splits: runs of unequal length, an empty last run (causal), the partial last tile in
  // a middle run's block, the additive mask and the [B, Sq, H, D] output.
  struct Case {
    Problem p;
    int splits;
    bool heads_last = false;
  };
  for (const auto &cs : {Case{{1, 2, 1, 600, 64, dtypes::f16}, 4}, Case{{1, 1, 3, 333, 128, dtypes::bf16}, 3},
                         Case{{1, 2, 70, 300, 64, dtypes::f16, true}, 5},
                         Case{{2, 1, 2, 200, 32, dtypes::f16, false, {2, 1, 2, 200}, dtypes::f32}, 2, true}}) {
    tpl::AttentionProblem ap;
    ap.batch = int(cs.p.b), ap.heads = int(cs.p.h), ap.seq_q = int(cs.p.sq), ap.seq_kv = int(cs.p.skv);
    ap.head_dim = int(cs.p.d), ap.dtype = cs.p.dt, ap.causal = cs.p.causal, ap.heads_last = cs.heads_last;
    if (!cs.p.mask_shape.empty()) ap.has_mask = true, ap.mask_batch = int(cs.p.mask_shape[0]);
    tpl::AttentionConfig cfg;
    cfg.kv_splits = cs.splits;
    auto in = make_inputs(cs.p);
    auto shape = cs.heads_last ? o::Shape{cs.p.b, cs.p.sq, cs.p.h, cs.p.d} : o::Shape{cs.p.b, cs.p.h, cs.p.sq, cs.p.d};
    auto out = full(shape, NAN, cs.p.dt, "cuda");
    tpl::Attention att(ap, cfg);
    if (in.mask) att(in.q, in.k, in.v, *in.mask, out, 0.2);
    else att(in.q, in.k, in.v, out, 0.2);
    check(cs.p, in, cs.heads_last ? o::permute(out, {0, 2, 1, 3}) : out, 0.2, cfg.str());
  }
  // Through the operator: a decoding step (one query row per head) takes the split kernel.
  run_op({1, 2, 1, 1500, 64, dtypes::f16});
}

TEST_CASE("sdpa: inputs off a 16-byte boundary are realigned by the operator and refused by the template") {
  Problem p{2, 2, 150, 300, 64, dtypes::f16, true};
  auto in = make_inputs(p);
  auto shifted = [&](const Tensor &t) { // t's elements 2 bytes after a 16-byte boundary
    auto buf = hidet::empty({t.numel() + 8}, t.dtype(), "cuda");
    Tensor view(buf.storage(), t.shape(), t.dtype(), 2);
    std::vector<char> bytes(t.nbytes());
    t.copy_to_host(bytes.data());
    view.copy_from_host(bytes.data());
    return view;
  };
  Inputs off{shifted(in.q), shifted(in.k), shifted(in.v), {}};
  REQUIRE(reinterpret_cast<std::uintptr_t>(off.q.data_ptr()) % 16 != 0);
  auto out = o::scaled_dot_product_attention(off.q, off.k, off.v, std::nullopt, true);
  check(p, in, out, 1.0 / std::sqrt(64.0), "unaligned inputs");
  tpl::AttentionProblem ap;
  ap.batch = 2, ap.heads = 2, ap.seq_q = 150, ap.seq_kv = 300, ap.causal = true;
  tpl::Attention att(ap, tpl::attention_heuristic_config(ap, 132, tpl::wgmma_available()));
  CHECK_THROWS_WITH_AS(att(off.q, in.k, in.v, out, 0.125), doctest::Contains("q is not 16-byte aligned"),
                       hidet::ValueError);
}

TEST_CASE("sdpa: tuning over search space 1 picks a tiling, reuses it and stays correct") {
  int calls = 0;
  o::tuning::set_timer([&](const o::tuning::Launch &l) {
    l();
    return 1.0 + (++calls % 3); // deterministic fake times (the emulator's time means nothing)
  });
  hidet::option::search_space(1);
  Problem p{1, 2, 24, 40, 64, dtypes::f16, false, {24, 40}, dtypes::f32};
  run_op(p);
  int after_first = calls;
  run_op(p); // the choice and the kernels are reused: nothing is timed again
  CHECK(calls == after_first);
  hidet::option::search_space(0);
  o::tuning::set_timer(nullptr);
}

TEST_CASE("sdpa: head dim 16 and a head dim of v other than q's (LeViT), on every kernel and the composition") {
  auto with_dv = [](Problem p, std::int64_t dv, std::int64_t kv_heads = 0) {
    p.dv = dv, p.kv_heads = kv_heads;
    return p;
  };
  run_op(with_dv({1, 2, 49, 49, 16, dtypes::f16}, 32));                                      // LeViT's second stage
  run_op(with_dv({1, 3, 16, 49, 16, dtypes::bf16, false, {3, 16, 49}, dtypes::f16}, 64));     // its subsampling, a bias per head
  run_op(with_dv({2, 2, 37, 45, 32, dtypes::f16, true}, 128));                                // causal, partial tiles
  run_op(with_dv({1, 2, 40, 33, 128, dtypes::bf16, false, {40, 33}, dtypes::boolean}, 16));    // v narrower than q
  run_op({1, 2, 40, 33, 16, dtypes::f16, true});                                               // head dim 16 alone
  run_op(with_dv({2, 6, 21, 30, 16, dtypes::f16}, 32, 2));                                     // grouped-query attention
  run_op(with_dv({1, 2, 4, 700, 16, dtypes::f16}, 64));       // few query rows (no decode kernel): split-KV
  run_op(with_dv({1, 2, 9, 12, 32, dtypes::f32, true}, 64));  // f32: the composition
  run_op(with_dv({1, 2, 9, 12, 16, dtypes::f16}, 48), 0.5);   // a v head dim no kernel takes: the composition
  // heads last: the output [B, Sq, H, Dv]
  Problem p = with_dv({1, 4, 33, 33, 16, dtypes::f16}, 32);
  auto in = make_inputs(p);
  Tensor got = o::scaled_dot_product_attention_heads_last(in.q, in.k, in.v);
  REQUIRE(got.shape() == o::Shape{1, 33, 4, 32});
  check(p, in, o::permute(got, {0, 2, 1, 3}).clone(), 0.25, "heads last");
  // every tiling of search space 1 for q and k of 16, v of 32
  tpl::AttentionProblem ap;
  ap.seq_q = 40, ap.seq_kv = 72, ap.head_dim = 16, ap.head_dim_v = 32, ap.causal = true;
  CHECK(ap.str().find("v head dim 32") != std::string::npos);
  auto cfgs = tpl::attention_candidates(ap, 1, 132, true);
  CHECK(cfgs.size() > 4);
  for (auto &c : cfgs) CHECK_FALSE(c.wgmma); // the Hopper kernel takes v's head dim equal to q's
  p = with_dv({1, 1, 40, 72, 16, dtypes::f16, true}, 32);
  for (auto &c : configs_to_run(cfgs)) {
    in = make_inputs(p);
    auto out = full({1, 1, 40, 32}, NAN, p.dt, "cuda"); // poison: an unwritten element fails
    tpl::Attention att(ap, c);
    att(in.q, in.k, in.v, out, 0.25);
    check(p, in, out, 0.25, c.str());
  }
}

TEST_CASE("sdpa packed: q, k and v read in place from the heads of projections (LeViT's QKV split)") {
  // x [B, N, H, 64]: q its columns 0-15, k 16-31, v 32-63, each permuted (0, 2, 1, 3). The kernel
  // reads them in place; checked against the reference on the permuted copies.
  auto heads = [](const Tensor &x, std::int64_t off, std::int64_t d) {
    return o::permute(o::slice(x, {3}, {off}, {off + d}), {0, 2, 1, 3}).clone();
  };
  for (DataType dt : {dtypes::f16, dtypes::bf16}) {
    Problem p{2, 3, 49, 49, 16, dt, false, {3, 49, 49}, dt};
    p.dv = 32;
    Tensor x = make({2, 49, 3, 64}, dt);
    Inputs in{heads(x, 0, 16), heads(x, 16, 16), heads(x, 32, 32), make({3, 49, 49}, dt)};
    Tensor got = o::scaled_dot_product_attention_packed({x, 0, 16}, {x, 16, 16}, {x, 32, 32}, in.mask);
    check(p, in, got, 0.25, "packed");
    got = o::scaled_dot_product_attention_packed({x, 0, 16}, {x, 16, 16}, {x, 32, 32}, in.mask, false, 0.3, true);
    REQUIRE(got.shape() == o::Shape{2, 49, 3, 32});
    check(p, in, o::permute(got, {0, 2, 1, 3}).clone(), 0.3, "packed, heads last");
  }
  // LeViT's subsampling: q its own [B, 16, H, 16] tensor, k and v from one [B, 49, H, 80] (16 + 64),
  // causal; and grouped-query attention (k and v of 2 heads for q's 6).
  {
    Problem p{1, 8, 16, 49, 16, dtypes::f16, true};
    p.dv = 64;
    Tensor xq = make({1, 16, 8, 16}, dtypes::f16), xkv = make({1, 49, 8, 80}, dtypes::f16);
    Inputs in{heads(xq, 0, 16), heads(xkv, 0, 16), heads(xkv, 16, 64), {}};
    check(p, in, o::scaled_dot_product_attention_packed({xq, 0, 16}, {xkv, 0, 16}, {xkv, 16, 64}, std::nullopt, true), 0.25,
          "packed, q apart, causal");
    Problem g{1, 6, 21, 30, 32, dtypes::f16};
    g.kv_heads = 2;
    Tensor xg = make({1, 21, 6, 32}, dtypes::f16), xkg = make({1, 30, 2, 72}, dtypes::f16);
    Inputs ig{heads(xg, 0, 32), heads(xkg, 8, 32), heads(xkg, 40, 32), {}};
    check(g, ig, o::scaled_dot_product_attention_packed({xg, 0, 32}, {xkg, 8, 32}, {xkg, 40, 32}), 1.0 / std::sqrt(32.0),
          "packed, grouped-query");
  }
  { // heads of 128 over 160 keys: on Hopper the wgmma kernel over permuted copies (it outruns the
    // mma.sync kernel there), elsewhere read in place
    Problem p{1, 2, 130, 160, 128, dtypes::f16};
    Tensor xq = make({1, 130, 2, 128}, dtypes::f16), xkv = make({1, 160, 2, 256}, dtypes::f16);
    Inputs in{heads(xq, 0, 128), heads(xkv, 0, 128), heads(xkv, 128, 128), {}};
    check(p, in, o::scaled_dot_product_attention_packed({xq, 0, 128}, {xkv, 0, 128}, {xkv, 128, 128}),
          1.0 / std::sqrt(128.0), "packed, heads of 128");
  }
  // Columns the kernel cannot read in place (an offset of 4: rows off 16 bytes; head dim 20): the
  // permuted copies, the same result.
  {
    Problem p{1, 2, 20, 20, 16, dtypes::f16};
    Tensor x = make({1, 20, 2, 52}, dtypes::f16);
    Inputs in{heads(x, 4, 16), heads(x, 20, 16), heads(x, 36, 16), {}};
    check(p, in, o::scaled_dot_product_attention_packed({x, 4, 16}, {x, 20, 16}, {x, 36, 16}), 0.25, "packed, unaligned");
    Problem c{1, 2, 20, 20, 20, dtypes::f16};
    Inputs ic{heads(x, 0, 20), heads(x, 20, 20), heads(x, 32, 20), {}};
    check(c, ic, o::scaled_dot_product_attention_packed({x, 0, 20}, {x, 20, 20}, {x, 32, 20}), 1.0 / std::sqrt(20.0),
          "packed, head dim 20", 4.0);
  }
  Tensor x = make({1, 20, 2, 64}, dtypes::f16);
  expect_error([&] { (void)o::scaled_dot_product_attention_packed({x, 56, 16}, {x, 0, 16}, {x, 16, 16}); },
               {"scaled_dot_product_attention_packed", "q's columns [56, 72)", "last dim 64"});
  expect_error([&] { (void)o::scaled_dot_product_attention_packed({x.reshape({20, 2, 64}), 0, 16}, {x, 0, 16}, {x, 16, 16}); },
               {"q must be a 4-D tensor [B, S, H, W]"});
  tpl::AttentionProblem ap;
  ap.seq_q = ap.seq_kv = 20, ap.head_dim = 16, ap.in_q = {52, 4};
  expect_error([&] { tpl::check_attention_problem(ap); }, {"packed input [B, S, H, 52] at 4", "multiples of 8"});
}

TEST_CASE("sdpa: fallback for other head dims") {
  run_op({2, 1, 17, 23, 48, dtypes::f16, false, {17, 23}, dtypes::f32});
  run_op({1, 1, 9, 12, 80, dtypes::bf16, true});
  run_op({1, 2, 9, 12, 40, dtypes::f32, true});
}

TEST_CASE("sdpa: the f32 template, head dims 32 to 128, partial tiles, causal, masks, heads last") {
  run_op({1, 2, 20, 30, 64, dtypes::f32, true});
  run_op({3, 2, 49, 49, 32, dtypes::f32});                                      // a Swin window
  run_op({1, 1, 70, 90, 96, dtypes::f32, false, {70, 90}, dtypes::f32});      // several K/V tiles, a partial one
  run_op({1, 1, 33, 33, 128, dtypes::f32, true}, 0.3);
  run_op({1, 1, 90, 40, 64, dtypes::f32, true});                                // Sq > Skv
  run_op({2, 2, 40, 50, 64, dtypes::f32, false, {2, 1, 40, 50}, dtypes::f16});
  run_op({1, 2, 30, 45, 64, dtypes::f32, false, {30, 45}, dtypes::boolean});
  // heads last: the output [B, Sq, H, D] is the transpose of the [B, H, Sq, D] one
  Problem p{2, 3, 21, 37, 64, dtypes::f32, true};
  auto in = make_inputs(p);
  Tensor got = o::scaled_dot_product_attention_heads_last(in.q, in.k, in.v, std::nullopt, true);
  REQUIRE(got.shape() == o::Shape{2, 21, 3, 64});
  check(p, in, o::permute(got, {0, 2, 1, 3}).clone(), 1.0 / 8.0, "heads last");
}

TEST_CASE("sdpa: every f32 tiling of search space 2") {
  Problem p{1, 1, 21, 70, 32, dtypes::f32, true, {}};
  tpl::AttentionProblem ap;
  ap.seq_q = 21, ap.seq_kv = 70, ap.head_dim = 32, ap.dtype = dtypes::f32, ap.causal = true;
  auto cfgs = tpl::attention_candidates(ap, 2);
  CHECK(cfgs.size() >= 12);
  for (auto &c : configs_to_run(cfgs)) {
    REQUIRE(c.fma);
    auto in = make_inputs(p);
    auto out = full({p.b, p.h, p.sq, p.d}, NAN, p.dt, "cuda"); // poison: an unwritten element fails
    tpl::Attention att(ap, c);
    att(in.q, in.k, in.v, out, 1.0 / std::sqrt(32.0));
    check(p, in, out, 1.0 / std::sqrt(32.0), c.str());
  }
}

TEST_CASE("sdpa: user errors name the operator, the shapes and the rule") {
  auto q = make({1, 2, 8, 64}, dtypes::f16), k = make({1, 2, 10, 64}, dtypes::f16),
       v = make({1, 2, 10, 64}, dtypes::f16);
  auto sdpa = [](auto... a) { return o::scaled_dot_product_attention(a...); };
  expect_error(
      [&] {
        sdpa(q.reshape({2, 8, 64}), k, v);
      },
      {"scaled_dot_product_attention", "4-D", "(2, 8, 64)"});
  expect_error(
      [&] {
        sdpa(q, make({1, 2, 10, 32}, dtypes::f16), v);
      },
      {"k's head dim 32 must equal q's 64"});
  expect_error([&] { sdpa(q, k, make({1, 2, 11, 64}, dtypes::f16)); }, {"same sequence length"});
  expect_error(
      [&] {
        sdpa(q, make({1, 3, 10, 64}, dtypes::f16), v);
      },
      {"one count of heads", "divides q's", "(1, 3, 10, 64)"});
  expect_error([&] { sdpa(q, k.astype(dtypes::bf16), v); }, {"one dtype", "f16", "bf16"});
  expect_error(
      [&] {
        sdpa(make({1, 2, 8, 64}, dtypes::i32), make({1, 2, 10, 64}, dtypes::i32),
             make({1, 2, 10, 64}, dtypes::i32));
      },
      {"floating point"});
  expect_error(
      [&] {
        sdpa(q, k, v, std::optional<Tensor>(make({8, 11}, dtypes::f32)));
      },
      {"attn_mask", "[Sq, Skv] = [8, 10]", "dims of 1 broadcast"});
  expect_error(
      [&] {
        sdpa(q, k, v, std::optional<Tensor>(make({3, 1, 8, 10}, dtypes::f32)));
      },
      {"leading dims"});
  expect_error(
      [&] {
        sdpa(q, k, v, std::optional<Tensor>(make({8, 10}, dtypes::i32)));
      },
      {"attn_mask must be f32"});
}

TEST_CASE("sdpa template: problems the kernel cannot serve are ValueErrors naming the rule") {
  tpl::AttentionProblem p;
  p.batch = 64, p.heads = 32, p.seq_q = p.seq_kv = 8192, p.head_dim = 128;
  expect_error([&] { tpl::check_attention_problem(p); }, {"attention kernel for", "2^31"});
  p.batch = 1, p.dtype = dtypes::f64;
  expect_error([&] { tpl::check_attention_problem(p); }, {"f16, bf16 or f32"});
  p.dtype = dtypes::f16, p.head_dim = 96;
  expect_error([&] { tpl::check_attention_problem(p); }, {"head dims must be 16, 32, 64 or 128"});
  p.head_dim = 16, p.head_dim_v = 48;
  expect_error([&] { tpl::check_attention_problem(p); }, {"v head dim 48", "head dims must be 16, 32, 64 or 128"});
  p.head_dim = 64, p.head_dim_v = 32, p.dtype = dtypes::f32;
  expect_error([&] { tpl::check_attention_problem(p); }, {"v's head dim must equal q's (f32)"});
  tpl::AttentionConfig hopper;
  hopper.wgmma = true;
  expect_error([&] { tpl::check_attention_config(hopper, 64, 32); }, {"Hopper kernel takes v's head dim equal to q's"});
  p.head_dim_v = 0;
  p.dtype = dtypes::f32, p.head_dim = 80;
  expect_error([&] { tpl::check_attention_problem(p); }, {"head dim must be 32, 64, 96 or 128 (f32)"});
  p.head_dim = 64;
  expect_error([&] { tpl::attention_module(p, tpl::AttentionConfig{}); }, {"f32 problems take an fma config"});
  tpl::AttentionConfig f;
  f.fma = true, f.warp_q = 32;
  expect_error([&] { tpl::check_attention_config(f, 64); }, {"warp_q must be 4, 8 or 16"});
  expect_error(
      [&] {
        tpl::check_attention_config(tpl::AttentionConfig{4, 24, 64, 2, true}, 64);
      },
      {"warp_q must be 16 or 32"});
}

TEST_CASE("sdpa over symbolic batch and lengths: the template built once for every value") {
  // Nodes traced on q [n, H, s, D] and k, v [n, H, t, D] (and a mask [n, 1, s, t] or [s, t]), run
  // where a graph would bind n, s and t: one build per variant serves every value (lengths below
  // the split-KV range, so that the heuristic tiling stays the same).
  struct Variant {
    std::int64_t d;
    DataType dt;
    bool causal, heads_last;
    int mask; ///< 0: none, 1: [n, 1, s, t] f16, 2: [s, t] f32, 3: [n, 1, s, t] bool (true = attend)
  };
  const std::int64_t H = 2;
  for (const Variant &var : {Variant{64, dtypes::f16, false, false, 0}, Variant{64, dtypes::bf16, true, true, 0},
                             Variant{32, dtypes::f16, false, true, 1}, Variant{128, dtypes::f16, true, false, 2},
                             Variant{64, dtypes::f16, true, true, 3}, Variant{64, dtypes::f32, false, true, 2},
                             Variant{32, dtypes::f32, true, false, 3}}) {
    INFO("d " << var.d << ", " << var.dt << ", causal " << var.causal << ", heads_last " << var.heads_last
              << ", mask " << var.mask);
    Tensor q = symbol({Dim::symbol("n"), Dim(H), Dim::symbol("s"), Dim(var.d)}, var.dt, "cuda", "q");
    Tensor k = symbol({Dim::symbol("n"), Dim(H), Dim::symbol("t"), Dim(var.d)}, var.dt, "cuda", "k");
    Tensor v = symbol({Dim::symbol("n"), Dim(H), Dim::symbol("t"), Dim(var.d)}, var.dt, "cuda", "v");
    std::optional<Tensor> mask;
    if (var.mask == 1) mask = symbol({Dim::symbol("n"), Dim(1), Dim::symbol("s"), Dim::symbol("t")}, dtypes::f16, "cuda", "m");
    if (var.mask == 2) mask = symbol({Dim::symbol("s"), Dim::symbol("t")}, dtypes::f32, "cuda", "m");
    if (var.mask == 3) mask = symbol({Dim::symbol("n"), Dim(1), Dim::symbol("s"), Dim::symbol("t")}, dtypes::boolean, "cuda", "m");
    Tensor y = var.heads_last ? o::scaled_dot_product_attention_heads_last(q, k, v, mask, var.causal)
                              : o::scaled_dot_product_attention(q, k, v, mask, var.causal);
    const auto &node = *y.trace().op;
    std::size_t after_first = 0;
    bool first = true;
    for (auto [n, s, t] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 37, 37}, {2, 64, 90}, {3, 5, 131}, {1, 200, 200}}) {
      INFO("n " << n << ", s " << s << ", t " << t);
      Tensor qc = make({n, H, s, var.d}, var.dt), kc = make({n, H, t, var.d}, var.dt), vc = make({n, H, t, var.d}, var.dt);
      std::vector<Tensor> ins{qc, kc, vc};
      std::optional<Tensor> mc;
      if (var.mask == 1) mc = make({n, 1, s, t}, dtypes::f16, -1, 1);
      if (var.mask == 2) mc = make({s, t}, dtypes::f32, -1, 1);
      if (var.mask == 3) mc = make({n, 1, s, t}, dtypes::boolean);
      if (mc) ins.push_back(*mc);
      std::size_t before = o::attention_symbolic_builds();
      Tensor got = [&] {
        SymbolBinding bind({{"n", n}, {"s", s}, {"t", t}});
        return node.run(ins)[0];
      }();
      if (first) after_first = o::attention_symbolic_builds();
      else CHECK(o::attention_symbolic_builds() == before); // nothing built for a new n, s, t
      if (first) CHECK(after_first == before + 1);
      first = false;
      Tensor want = var.heads_last ? o::scaled_dot_product_attention_heads_last(qc, kc, vc, mc, var.causal)
                                   : o::scaled_dot_product_attention(qc, kc, vc, mc, var.causal);
      expect_close(got, want.shape(), want.to_double_vector(), false, 2);
    }
  }
}

TEST_CASE("sdpa over symbolic lengths with split-KV (decoding): one build per power of two of runs") {
  // Few query tiles against many keys: the heuristic splits the keys into runs. Over symbols the
  // count of runs is rounded down to a power of two and each run's tiles follow the key length at
  // run time, so the sizes below need two builds (2 and 4 runs), checked against the
  // constant-shape path. (At most 8 query rows go to the decode kernel instead:
  // test_attention_decode.cpp; these have 9 to 11.)
  const std::int64_t H = 2, D = 64;
  const int sms = hidet::runtime::device_info(0).sm_count > 0 ? hidet::runtime::device_info(0).sm_count : 132;
  for (bool heads_last : {false, true}) {
    INFO("heads_last " << heads_last);
    Tensor q = symbol({Dim::symbol("n"), Dim(H), Dim::symbol("s"), Dim(D)}, dtypes::f16, "cuda", "q");
    Tensor k = symbol({Dim::symbol("n"), Dim(H), Dim::symbol("t"), Dim(D)}, dtypes::f16, "cuda", "k");
    Tensor v = symbol({Dim::symbol("n"), Dim(H), Dim::symbol("t"), Dim(D)}, dtypes::f16, "cuda", "v");
    std::optional<Tensor> mask;
    if (heads_last) mask = symbol({Dim::symbol("n"), Dim(1), Dim::symbol("s"), Dim::symbol("t")}, dtypes::f16, "cuda", "m");
    Tensor y = heads_last ? o::scaled_dot_product_attention_heads_last(q, k, v, mask)
                          : o::scaled_dot_product_attention(q, k, v, mask);
    const auto &node = *y.trace().op;
    const std::size_t start = o::attention_symbolic_builds();
    std::set<int> runs;
    for (auto [n, s, t] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 9, 600}, {2, 11, 900}, {1, 10, 1000}, {1, 9, 2100}}) {
      INFO("n " << n << ", s " << s << ", t " << t);
      tpl::AttentionProblem ap;
      ap.batch = int(n), ap.heads = int(H), ap.seq_q = int(s), ap.seq_kv = int(t), ap.head_dim = int(D);
      const int splits = tpl::attention_mma_config(ap, sms).kv_splits;
      REQUIRE(splits > 1);
      runs.insert(int(std::bit_floor(unsigned(splits))));
      Tensor qc = make({n, H, s, D}, dtypes::f16), kc = make({n, H, t, D}, dtypes::f16), vc = make({n, H, t, D}, dtypes::f16);
      std::vector<Tensor> ins{qc, kc, vc};
      std::optional<Tensor> mc;
      if (heads_last) mc = make({n, 1, s, t}, dtypes::f16, -1, 1), ins.push_back(*mc);
      Tensor got = [&] {
        SymbolBinding bind({{"n", n}, {"s", s}, {"t", t}});
        return node.run(ins)[0];
      }();
      Tensor want = heads_last ? o::scaled_dot_product_attention_heads_last(qc, kc, vc, mc)
                               : o::scaled_dot_product_attention(qc, kc, vc, mc);
      expect_close(got, want.shape(), want.to_double_vector(), false, 2);
    }
    CHECK(runs == std::set<int>{2, 4});
    CHECK(o::attention_symbolic_builds() - start == runs.size());
  }
}
