// FP8: the 8-bit float dtypes (host conversions against their definition, device casts against
// the host's, arithmetic in Hidet Script) and ops::scaled_mm (the Hopper FP8 wgmma kernel on an
// H100/H200, the portable reduction kernel elsewhere and on the emulator) against a double
// reference on random inputs and partial tiles; bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "hidet/backend/nvrtc.hpp" // CompiledModule::binary()
#include "hidet/ops/templates/matmul_fp8.hpp"
#include "ops_test_util.hpp"

using namespace ops_test;
namespace tpl = hidet::ops::templates;

namespace {
struct Format {
  DataType dt;
  float (*to_float)(std::uint8_t);
  std::uint8_t (*from_float)(float);
  double max;
};
const Format formats[] = {{dtypes::f8e4m3, f8e4m3_bits_to_float, float_to_f8e4m3_bits, 448.0},
                          {dtypes::f8e5m2, f8e5m2_bits_to_float, float_to_f8e5m2_bits, 57344.0}};

/// The finite non-negative values of a format, ascending, with their bits.
std::vector<std::pair<double, std::uint8_t>> finite_values(const Format &f) {
  std::vector<std::pair<double, std::uint8_t>> v;
  for (int b = 0; b < 128; ++b) {
    float x = f.to_float(std::uint8_t(b));
    if (std::isfinite(x)) v.push_back({x, std::uint8_t(b)});
  }
  std::sort(v.begin(), v.end());
  return v;
}
} // namespace

TEST_CASE("fp8: the values of e4m3 and e5m2, and round to nearest even with saturation") {
  CHECK(f8e4m3_bits_to_float(0x38) == 1.0f);
  CHECK(f8e4m3_bits_to_float(0x7e) == 448.0f);
  CHECK(f8e4m3_bits_to_float(0x01) == std::ldexp(1.0f, -9)); // the smallest subnormal
  CHECK(std::isnan(f8e4m3_bits_to_float(0x7f)));
  CHECK(std::isnan(f8e4m3_bits_to_float(0xff)));
  CHECK(f8e5m2_bits_to_float(0x3c) == 1.0f);
  CHECK(f8e5m2_bits_to_float(0x7b) == 57344.0f);
  CHECK(std::isinf(f8e5m2_bits_to_float(0x7c)));
  CHECK(f8e5m2_bits_to_float(0x01) == std::ldexp(1.0f, -16));
  for (const auto &f : formats) {
    INFO(f.dt);
    auto vals = finite_values(f);
    // Law: every finite value converts back to its own bits (both signs).
    for (auto [x, b] : vals) {
      CHECK(f.from_float(float(x)) == b);
      if (x != 0) CHECK(f.from_float(float(-x)) == (b | 0x80));
    }
    // Law: strictly monotonic, and a point between two neighbours rounds to the nearer one, a
    // midpoint to the one with the even mantissa (even bits).
    for (std::size_t i = 0; i + 1 < vals.size(); ++i) {
      auto [lo, bl] = vals[i];
      auto [hi, bh] = vals[i + 1];
      REQUIRE(lo < hi);
      double mid = (lo + hi) / 2;
      CHECK(f.from_float(float(mid)) == ((bl % 2 == 0) ? bl : bh));
      CHECK(f.from_float(float(lo + (hi - lo) * 0.25)) == bl);
      CHECK(f.from_float(float(lo + (hi - lo) * 0.75)) == bh);
    }
    // Saturation (cvt.rn.satfinite): past the largest finite value and infinities clamp, NaN is 0x7f.
    CHECK(f.from_float(float(f.max * 1.5)) == f.from_float(float(f.max)));
    CHECK(f.from_float(INFINITY) == f.from_float(float(f.max)));
    CHECK(f.from_float(-INFINITY) == (f.from_float(float(f.max)) | 0x80));
    CHECK(f.from_float(NAN) == 0x7f);
  }
}

TEST_CASE("fp8: casts on the device match the host's conversions; printing and dtypes") {
  DataType d;
  REQUIRE(parse_dtype("float8_e4m3fn", d));
  CHECK(d == dtypes::f8e4m3);
  REQUIRE(parse_dtype("f8e5m2", d));
  CHECK(d == dtypes::f8e5m2);
  CHECK(dtypes::f8e4m3.nbytes() == 1);
  CHECK(dtypes::f8e4m3.is_float());
  CHECK(!dtypes::f8e4m3.is_half());
  CHECK(o::compute_dtype(dtypes::f8e5m2) == dtypes::f32);
  std::vector<double> xs;
  std::uniform_real_distribution<double> u(-3, 3);
  for (int i = 0; i < 997; ++i) xs.push_back(std::ldexp(u(g_rng), int(u(g_rng) * 6)));
  for (double x : {0.0, -0.0, 1e-9, 447.9, 448.0, 460.0, 1e6, -1e6, 57344.0, 61440.0, 1e30}) xs.push_back(x);
  auto x = asarray(xs, {std::int64_t(xs.size())}, dtypes::f32);
  for (const auto &f : formats) {
    INFO(f.dt, ", seed ", g_seed);
    auto y = o::cast(x, f.dt);
    REQUIRE(y.dtype() == f.dt);
    auto bits = o::cast(y, dtypes::f32).to_double_vector();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double want = f.to_float(f.from_float(float(xs[i])));
      REQUIRE_MESSAGE(bits[i] == want, "x = ", xs[i], " index ", i);
    }
    // back through f16 and bf16
    auto h = o::cast(o::cast(y, dtypes::f16), f.dt).to_double_vector();
    CHECK(h == y.to_double_vector());
  }
  auto t = asarray(std::vector<double>{1.0, -0.5, 448.0}, {3}, dtypes::f8e4m3);
  CHECK(t.to_double_vector() == std::vector<double>{1.0, -0.5, 448.0});
}

TEST_CASE("fp8: arithmetic in Hidet Script happens in f32") {
  using namespace hidet::lang;
  const int n = 256;
  auto mod = script_module("fp8_axpy");
  mod.kernel("axpy", {f8e4m3[n], f8e5m2[n], f8e4m3[n], f32[n]}, [&](lang::Tensor a, lang::Tensor b, lang::Tensor c, lang::Tensor s) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = n;
    Var i = threadIdx.x;
    Expr sum = a[i] * 2.0f + b[i]; // f8e4m3 * f32 + f8e5m2: f32
    CHECK(sum.dtype() == dtypes::f32);
    c[i] = sum;                     // rounded to e4m3, saturated
    s[i] = select(a[i] < b[i], -a[i], a[i] + a[i]);
  });
  auto cm = mod.build();
  auto a = make({n}, dtypes::f8e4m3, -300, 300), b = make({n}, dtypes::f8e5m2, -300, 300);
  auto c = hidet::empty({n}, dtypes::f8e4m3), s = hidet::empty({n}, dtypes::f32);
  cm(a, b, c, s);
  auto av = a.to_double_vector(), bv = b.to_double_vector(), cv = c.to_double_vector(), sv = s.to_double_vector();
  for (int i = 0; i < n; ++i) {
    INFO("i = ", i, ", seed ", g_seed);
    float sum = std::fma(float(av[i]), 2.0f, float(bv[i]));
    CHECK(cv[i] == f8e4m3_bits_to_float(float_to_f8e4m3_bits(sum)));
    CHECK(sv[i] == (av[i] < bv[i] ? -av[i] : av[i] + av[i]));
  }
  // no atomics on 8-bit floats
  auto bad = script_module("fp8_atomic");
  try {
    bad.kernel("k", {f8e4m3[4]}, [&](lang::Tensor a) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 4;
      atomic_add(a[threadIdx.x], 1.0f);
    });
    FAIL("atomic_add on f8e4m3 was accepted");
  } catch (const hidet::DSLError &e) {
    CHECK(std::string(e.what()).find("no atomics on 8-bit floats") != std::string::npos);
  }
}

namespace {
/// The double reference of scale * (a @ b^T) for a: [m, k], b: [n, k], and the scale of its
/// terms, scale * sum |a b| per element.
struct Reference {
  std::vector<double> value, magnitude;
};
Reference reference(const Tensor &a, const Tensor &b, double scale) {
  const std::int64_t m = a.shape()[0], n = b.shape()[0], k = a.shape()[1];
  auto av = a.to_double_vector(), bv = b.to_double_vector();
  Reference r{std::vector<double>(std::size_t(m * n)), std::vector<double>(std::size_t(m * n))};
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (std::int64_t t = 0; t < k; ++t) {
        double p = av[std::size_t(i * k + t)] * bv[std::size_t(j * k + t)];
        s += p, mag += std::abs(p);
      }
      r.value[std::size_t(i * n + j)] = scale * s, r.magnitude[std::size_t(i * n + j)] = scale * mag;
    }
  return r;
}
/// Compares c with the reference: the output dtype's rounding of the value plus `accumulation`
/// times the terms' magnitude. Hopper's FP8 tensor cores add each k32 step's products into an
/// accumulator of about 14 significant bits, truncating, not into a full f32 (cuBLASLt's "fast
/// accumulation"): on small integers (sums below 2^13) that is exact, on real values the error
/// measured on the H200 reached 2.3e-4 of the terms' magnitude (k = 560..2048).
void expect_fp8_close(const Tensor &c, const Reference &r, double accumulation) {
  auto got = c.to_double_vector();
  REQUIRE(got.size() == r.value.size());
  const double out_tol = tol(c.dtype());
  bool nonzero = false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    nonzero |= got[i] != 0;
    double bound = accumulation * r.magnitude[i] + out_tol * std::abs(r.value[i]) + 1e-6;
    if (!(std::abs(got[i] - r.value[i]) <= bound)) {
      FAIL_CHECK("first bad index " << i << ": got " << got[i] << ", want " << r.value[i] << " (bound " << bound
                                    << ", dtype " << c.dtype() << ", seed " << g_seed << ")");
      return;
    }
  }
  CHECK_MESSAGE(nonzero, "all-zero output");
}

/// scaled_mm(a, b, sa, sb, out) on random inputs against the double reference: small integers
/// (the products add up exactly, even in the tensor cores' narrow accumulator: only the output
/// rounds), or real values of a few units (their fp8 roundings are what the kernel sees).
void check_scaled_mm(std::int64_t m, std::int64_t n, std::int64_t k, DataType in_a, DataType in_b, DataType out,
                     bool ints = true) {
  INFO(m, "x", n, "x", k, " ", in_a, " x ", in_b, " -> ", out, std::string(ints ? " (integers)" : ""), ", seed ", g_seed);
  auto a = make({m, k}, in_a, -3, 4, ints), b = make({n, k}, in_b, -3, 4, ints);
  std::uniform_real_distribution<double> us(0.25, 2);
  const double sa = float(us(g_rng)), sb = float(us(g_rng));
  auto c = o::scaled_mm(a, b, asarray(std::vector<double>{sa}, {1}, dtypes::f32), asarray(std::vector<double>{sb}, {}, dtypes::f32), out);
  REQUIRE(c.dtype() == out);
  REQUIRE(c.shape() == o::Shape{m, n});
  expect_fp8_close(c, reference(a, b, sa * sb), ints ? 0 : 1e-3);
}
} // namespace

TEST_CASE("scaled_mm: FP8 products with per-tensor scales against a double reference") {
  const bool gpu = tpl::wgmma_available();
  std::vector<std::array<std::int64_t, 3>> shapes{{37, 45, 64}, {64, 128, 96}};
  if (gpu) // the wgmma kernel: partial tiles, several k tiles, split-k, the staged epilogue
    for (auto s : std::vector<std::array<std::int64_t, 3>>{{333, 444, 560}, {1024, 1000, 2048}, {128, 768, 3072},
                                                            {256, 512, 128}})
      shapes.push_back(s);
  for (auto [m, n, k] : shapes)
    for (DataType out : {dtypes::bf16, dtypes::f16, dtypes::f32}) check_scaled_mm(m, n, k, dtypes::f8e4m3, dtypes::f8e4m3, out);
  check_scaled_mm(64, 72, 80, dtypes::f8e5m2, dtypes::f8e5m2, dtypes::bf16);
  check_scaled_mm(19, 33, 40, dtypes::f8e4m3, dtypes::f8e5m2, dtypes::f16); // mixed: the portable kernel
  check_scaled_mm(40, 24, 100, dtypes::f8e4m3, dtypes::f8e4m3, dtypes::f32); // k % 16 != 0: the portable kernel
  // real values: the accumulation error stays within 1e-3 of the terms' magnitude
  if (gpu) check_scaled_mm(1024, 1000, 2048, dtypes::f8e4m3, dtypes::f8e4m3, dtypes::f32, false);
  check_scaled_mm(64, 128, 96, dtypes::f8e4m3, dtypes::f8e4m3, dtypes::f32, false);
}

TEST_CASE("scaled_mm: every space-2-sized tiling of the wgmma kernel on Hopper; the kernel compiles for sm_90a") {
  for (int s : {1024, 4096, 8192}) // the f16 model's picks, without its clusters (the 8-bit kernel has none)
    CHECK(tpl::matmul_fp8_heuristic_config(s, s, s, 132).cluster_size() == 1);
  if (!tpl::wgmma_available()) {
    if (!hidet::detail::nvrtc_available()) return;
    hidet::BuildOptions o;
    o.arch = "sm_90a";
    o.emulator_nvrtc = true; // the compile is this test's check (HIDET_EMULATOR_NVRTC=0 or not)
    for (DataType out : {dtypes::bf16, dtypes::f32}) { // the staged epilogue, the 8-byte f32 pairs
      auto cm = tpl::matmul_fp8_module(512, 768, 1024, dtypes::f8e4m3, out, tpl::MatmulWgmmaConfig{2, 256, 4}).build(o);
      CHECK(cm.source().find("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3") != std::string::npos);
      CHECK(!cm.binary().cubin.empty()); // NVRTC compiled it for sm_90a
    }
    return;
  }
  const std::int64_t m = 300, n = 520, k = 1040;
  auto a = make({m, k}, dtypes::f8e4m3, -3, 4, true), b = make({n, k}, dtypes::f8e4m3, -3, 4, true);
  auto sa = asarray(std::vector<double>{0.5}, {1}, dtypes::f32), sb = asarray(std::vector<double>{1.5}, {1}, dtypes::f32);
  const auto want = reference(a, b, 0.75);
  for (tpl::MatmulWgmmaConfig cfg : {tpl::MatmulWgmmaConfig{2, 256, 4}, tpl::MatmulWgmmaConfig{3, 192, 4},
                                     tpl::MatmulWgmmaConfig{2, 128, 6}, tpl::MatmulWgmmaConfig{1, 128, 6},
                                     tpl::MatmulWgmmaConfig{1, 256, 5}}) {
    for (int split : {1, 3}) {
      for (bool pingpong : {false, true}) {
        cfg.split_k = split;
        cfg.pingpong = pingpong && cfg.consumers > 1 && split == 1;
        if (pingpong && !cfg.pingpong) continue;
        INFO(cfg.str());
        tpl::MatmulFp8 mm(int(m), int(n), int(k), dtypes::f8e4m3, dtypes::bf16, cfg);
        auto c = hidet::full({m, n}, NAN, dtypes::bf16, "cuda"); // poison: an unwritten element fails
        mm(a, b, sa, sb, c);
        expect_fp8_close(c, want, 0);
      }
    }
  }
}

TEST_CASE("scaled_mm: bad input") {
  auto a = make({8, 32}, dtypes::f8e4m3), b = make({16, 32}, dtypes::f8e4m3);
  auto s = asarray(std::vector<double>{1.0}, {1}, dtypes::f32);
  auto fails = [](auto f, const char *text) {
    try {
      f();
      FAIL_CHECK("no error; expected ", text);
    } catch (const hidet::ValueError &e) {
      CHECK_MESSAGE(std::string(e.what()).find(text) != std::string::npos, e.what());
    }
  };
  fails([&] { o::scaled_mm(o::cast(a, dtypes::f16), b, s, s, dtypes::bf16); }, "a and b must be f8e4m3 or f8e5m2, got f16");
  fails([&] { o::scaled_mm(a, make({16, 31}, dtypes::f8e4m3), s, s, dtypes::bf16); }, "expected a [m, k] and b [n, k]");
  fails([&] { o::scaled_mm(a, b, asarray(std::vector<double>{1.0, 2.0}, {2}, dtypes::f32), s, dtypes::bf16); },
        "scale_a must be an f32 tensor of one element");
  fails([&] { o::scaled_mm(a, b, s, asarray(std::vector<double>{1.0}, {1}, dtypes::f16), dtypes::bf16); }, "scale_b must be an f32 tensor");
  fails([&] { o::scaled_mm(a, b, s, s, dtypes::i32); }, "out_dtype must be f16, bf16 or f32, got i32");
  // still usable afterwards
  CHECK(o::scaled_mm(a, b, s, s, dtypes::f32).shape() == o::Shape{8, 16});
}
