// The few-rows product (ops/templates/matmul_gemv.hpp), on the GPU when present, else on the
// emulator: every lane count, unroll and row count with and without split-k (the in-kernel
// fixup, launched twice so that the counters are seen reset) on shapes with partial column
// vectors, k slices and row blocks, in f16, bf16 and f32, against a double reference; symbolic
// rows; epilogues; ops::matmul's dispatch for m <= 8; bad configurations. And the mma.sync
// template's split-k summed in the kernel, which serves 9 to 32 rows (a batch of decoding steps).
#include <array>

#include "ops_test_util.hpp"

#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/matmul_templates.hpp"
#include "hidet/ops/templates/matmul_f16.hpp"

using namespace ops_test;
using hidet::ops::templates::MatmulGemv;
using hidet::ops::templates::MatmulGemvConfig;
using hidet::ops::templates::MatmulRows;
using o::Idx;
using o::Task;

namespace {
std::vector<double> ref_matmul(const std::vector<double> &a, const std::vector<double> &b,
                               std::int64_t m, std::int64_t n, std::int64_t k) {
  std::vector<double> c(std::size_t(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j)
        c[std::size_t(i * n + j)] += a[std::size_t(i * k + p)] * b[std::size_t(p * n + j)];
  return c;
}

MatmulGemvConfig cfg(int rows, int lanes, int warps, int unroll, int split) {
  MatmulGemvConfig c;
  c.rows = rows, c.lanes_n = lanes, c.warps = warps, c.unroll = unroll, c.split_k = split;
  return c;
}

void check(const MatmulGemvConfig &c, int m, int n, int k, DataType dt) {
  MatmulGemv mm(m, n, k, dt, c);
  INFO("config " << c.str() << " (" << mm.slices() << " slices), " << m << "x" << n << "x" << k
                 << " " << dt);
  Tensor a = make({m, k}, dt), b = make({k, n}, dt);
  auto want = ref_matmul(a.to_double_vector(), b.to_double_vector(), m, n, k);
  for (int run = 0; run < 2;
       ++run) { // split-k: the counters must be back at zero for the second run
    INFO("run " << run);
    Tensor out = hidet::full({m, n}, std::nan(""), dt);
    mm(a, b, out);
    expect_close(out, {m, n}, want);
  }
}

Task add_bias_task(const SymShape &shape, DataType dt) {
  auto x = o::input("x", shape, dt);
  auto b = o::input("bias", {shape.back()}, dt);
  auto y = o::compute("add", shape, [&](const Idx &i) { return x.at(i) + b.at({i.back()}); });
  return Task{"add", {x, b}, {y}, ""};
}
Task residual_silu_task(const SymShape &shape, DataType dt) { // r + silu(x), x as input 1
  auto r = o::input("r", shape, dt);
  auto x = o::input("x", shape, dt);
  auto y = o::compute("add", shape, [&](const Idx &i) {
    o::Expr v = x.at(i);
    return r.at(i) + v / (lang::cast(1.0f, dt) + lang::exp(-v));
  });
  return Task{"add_silu", {r, x}, {y}, ""};
}
std::shared_ptr<const o::Epilogue> then(const o::Epilogue &e, const Task &t, std::size_t j) {
  auto next = e.then(t, j, t.str(), t.name);
  REQUIRE(next.has_value());
  return std::make_shared<const o::Epilogue>(*next);
}
} // namespace

TEST_CASE(
    "matmul_gemv: lanes, warps, unroll and rows, with and without split-k, on partial tiles") {
  // n = 200: 16-byte vectors (f16: 8 elements), partial column blocks at every lane count;
  // k = 333: partial k slices and steps (a's elements one by one: k is odd);
  // m = 3 with rows 2 and 4: a partial row block.
  for (DataType dt : {dtypes::f16, dtypes::bf16, dtypes::f32}) {
    check(cfg(1, 32, 4, 4, 1), 1, 200, 333, dt);
    check(cfg(4, 8, 2, 2, 3), 3, 200, 333, dt);
  }
  std::vector<MatmulGemvConfig> all;
  for (int lanes : {8, 16, 32})
    for (int unroll : {1, 2, 4, 8})
      for (int split : {1, 4})
        all.push_back(cfg(unroll == 8 ? 8 : unroll == 4 ? 2 : 1, lanes, 2, unroll, split));
  for (const auto &c : configs_to_run(all))
    check(c, c.rows == 2 ? 3 : c.rows, 200, 333, dtypes::f16);
  // n odd: one element per thread (no vector loads); n = 4 mod 8: 8-byte vectors; k = 256 with
  // whole slices (no k guard) and a's elements as vectors.
  check(cfg(2, 8, 1, 4, 2), 2, 77, 256, dtypes::f16);
  check(cfg(8, 16, 4, 4, 2), 8, 76, 256, dtypes::bf16);
  check(cfg(1, 8, 4, 8, 8), 1, 96, 1024, dtypes::f16);
  check(cfg(2, 8, 2, 4, 2), 5, 99, 64, dtypes::f32); // more rows than a block: grid z
  // more than 16 slices (the completing block's sum is a loop, not unrolled code), 4 rows of
  // outputs per thread: 32 lanes x 8 columns x 4 rows over 2 warps
  check(cfg(4, 32, 2, 2, 20), 4, 256, 2000, dtypes::bf16);
  // The pipeline (two buffers of b's rows in turn): an odd and an even count of steps per slice,
  // partial slices and steps (k = 333), whole ones (k = 1024), split and not.
  for (auto [rows, lanes, warps, unroll, split, m, n, k] : std::vector<std::array<int, 8>>{
           {1, 8, 2, 2, 1, 1, 200, 333},      // 21 steps: odd, a partial step
           {2, 16, 2, 4, 3, 2, 96, 333},      // 3 slices of 7 steps, the last partial
           {1, 8, 4, 8, 2, 1, 96, 1024},      // 2 whole slices of 4 steps
           {4, 32, 1, 2, 1, 3, 256, 1000}}) { // 500 steps, a partial row block
    MatmulGemvConfig c = cfg(rows, lanes, warps, unroll, split);
    c.pipeline = true;
    for (DataType dt : {dtypes::f16, dtypes::bf16, dtypes::f32})
      check(c, m, n, k, dt);
  }
}

TEST_CASE("matmul_gemv: symbolic rows and epilogues") {
  const Dim rows = Dim::symbol("b");
  const std::int64_t n = 136, k = 520;
  for (DataType dt : {dtypes::f16, dtypes::bf16}) {
    INFO("dtype " << dt);
    Tensor w = make({k, n}, dt), bias = make({n}, dt);
    auto plain = o::Epilogue::identity({rows, Dim(n)}, dt);
    auto with_bias = then(plain, add_bias_task({rows, Dim(n)}, dt), 0);
    auto with_silu = then(*with_bias, residual_silu_task({rows, Dim(n)}, dt), 1);
    MatmulGemvConfig c = cfg(4, 16, 4, 4, 4);
    MatmulGemv mm(MatmulRows(rows), int(n), int(k), dt, c, with_silu);
    for (std::int64_t m : {1, 3, 4, 7}) {
      INFO("rows " << m);
      Tensor x = make({m, k}, dt), r = make({m, n}, dt);
      Tensor want = o::add(r, o::silu(o::add(o::matmul(x, w), bias)));
      Tensor got = hidet::empty({m, n}, dt, "cuda");
      mm(x, w, got, {bias, r}, {{"b", m}});
      expect_close(got, {m, n}, want.to_double_vector(), false, 2);
    }
  }
}

TEST_CASE("matmul_gemv: ops::matmul takes it for one row, and for 2 to 8 where the mma.sync kernel cannot") {
  // one row: the gemv; 2 to 8 rows of f16/bf16: the few-rows mma.sync kernel, split; the gemv
  // again where n or k is not a multiple of 8 (mma.sync would copy b into a padded buffer) and in f32
  for (int m : {1, 2, 5, 8}) {
    INFO("rows " << m);
    auto cands = o::matmul_candidates(m, 4096, 2048, dtypes::bf16, 0);
    REQUIRE(cands.size() == 1);
    if (m == 1) {
      CHECK(cands[0].label.rfind("gemv ", 0) == 0);
    } else {
      CHECK(cands[0].label.rfind("mma.sync 16x64x64", 0) == 0);
      CHECK(cands[0].label.find("split-k") != std::string::npos);
    }
    CHECK(o::matmul_candidates(m, 4100, 2048, dtypes::bf16, 0)[0].label.rfind("gemv ", 0) == 0);
    CHECK(o::matmul_candidates(m, 4096, 2044, dtypes::f16, 0)[0].label.rfind("gemv ", 0) == 0);
    CHECK(o::matmul_candidates(m, 4096, 2048, dtypes::f32, 0)[0].label.rfind("gemv ", 0) == 0);
  }
  CHECK(o::matmul_candidates(9, 4096, 2048, dtypes::bf16, 0)[0].label.rfind("gemv ", 0) != 0);
  // one row of a b of 32M elements or more (an 8B model's MLP): the mma.sync kernel
  CHECK(o::matmul_candidates(1, 14336, 4096, dtypes::bf16, 0)[0].label.rfind("mma.sync ", 0) == 0);
  CHECK(o::matmul_candidates(1, 4096, 4096, dtypes::bf16, 0)[0].label.rfind("gemv ", 0) == 0);
  // the split keeps about two blocks per multiprocessor: 4096 columns are 64 tiles of 64, split 4
  auto f = hidet::ops::templates::matmul_f16_few_rows_config(8, 4096, 4096, 132);
  CHECK(f.split_k == 4);
  CHECK(hidet::ops::templates::matmul_f16_few_rows_config(8, 8192, 2048, 132).split_k == 2);
  // Llama's shapes on 132 multiprocessors: every multiprocessor streams, with about 4 blocks each.
  // One row: 8 warps, pipelined, 2 rows of b per step; 8 lanes at 2048 columns, 16 at 6144.
  auto h = hidet::ops::templates::matmul_gemv_heuristic_config(1, 2048, 2048, dtypes::bf16, 132);
  CHECK(h.lanes_n == 8);
  CHECK((h.warps == 8 && h.unroll == 2 && h.pipeline));
  const std::int64_t blocks = std::int64_t(2048 / (8 * 8)) * h.split_k;
  CHECK(blocks >= 2 * 132);
  CHECK(blocks <= 4 * 132);
  auto qkv = hidet::ops::templates::matmul_gemv_heuristic_config(1, 6144, 4096, dtypes::bf16, 132);
  CHECK(qkv.lanes_n == 16);
  CHECK(qkv.split_k == 8); // 48 column strips of 128
  // more rows keep the tiling without the pipeline
  auto two = hidet::ops::templates::matmul_gemv_heuristic_config(2, 2048, 2050, dtypes::bf16, 132);
  CHECK((two.warps == 4 && two.unroll == 8 && !two.pipeline));
  auto lm_head =
      hidet::ops::templates::matmul_gemv_heuristic_config(1, 128256, 2048, dtypes::bf16, 132);
  CHECK(lm_head.lanes_n == 32);
  CHECK(lm_head.split_k == 1); // 501 column strips: one wave without splitting
  // through the operator: a [2, 3, k] (rows folded) with a bias and a residual in one kernel
  const std::int64_t n = 72, k = 100;
  Tensor x = make({2, 3, k}, dtypes::f16), w = make({k, n}, dtypes::f16),
         bias = make({n}, dtypes::f16);
  Tensor r = make({6, n}, dtypes::f16);
  auto plain = o::Epilogue::identity({Dim(6), Dim(n)}, dtypes::f16);
  auto e = then(*then(plain, add_bias_task({Dim(6), Dim(n)}, dtypes::f16), 0),
                residual_silu_task({Dim(6), Dim(n)}, dtypes::f16), 1);
  Tensor want = o::add(r, o::silu(o::add(o::matmul(x.reshape({6, k}), w), bias)));
  Tensor got = o::matmul(x.reshape({6, k}), w, e, {bias, r});
  expect_close(got, {6, n}, want.to_double_vector(), false, 2);
  Tensor y = o::matmul(x, w); // [2, 3, n]
  expect_close(y, {2, 3, n}, ref_matmul(x.to_double_vector(), w.to_double_vector(), 6, n, k));
}

TEST_CASE(
    "matmul_gemv: int8 b (weight-only quantization), and ops::matmul of a half a by an int8 b") {
  // integers in [-127, 127] for b: exact products, so the reference is exact too
  auto int8_b = [](std::int64_t k, std::int64_t n) {
    return make({k, n}, dtypes::i8, -127, 128, true);
  };
  for (DataType dt : {dtypes::f16, dtypes::bf16, dtypes::f32})
    for (auto [rows, split] : {std::pair<int, int>{1, 1}, {2, 3}, {4, 2}}) {
      MatmulGemvConfig c = cfg(rows, 16, 2, 4, split);
      c.int8_b = true;
      const int m = rows == 4 ? 3 : rows, n = 112, k = 200;
      MatmulGemv mm(m, n, k, dt, c);
      INFO(dt << " " << c.str() << ", " << m << "x" << n << "x" << k);
      Tensor a = make({m, k}, dt, -1, 1), b = int8_b(k, n);
      auto want = ref_matmul(a.to_double_vector(), b.to_double_vector(), m, n, k);
      Tensor out = hidet::full({m, n}, std::nan(""), dt);
      mm(a, b, out);
      expect_close(out, {m, n}, want, false, dt == dtypes::f32 ? 100 : 1);
    }
  // n odd: one int8 per load; through ops::matmul, few rows (the kernel) and many (b converted)
  for (std::int64_t m : {2, 20}) {
    INFO("rows " << m);
    Tensor a = make({m, 64}, dtypes::bf16, -1, 1), b = int8_b(64, 33);
    Tensor got = o::matmul(a, b);
    CHECK(got.dtype() == dtypes::bf16);
    expect_close(got, {m, 33}, ref_matmul(a.to_double_vector(), b.to_double_vector(), m, 33, 64));
  }
}

TEST_CASE("mma.sync with split-k summed in the kernel: few rows on the tensor cores") {
  using hidet::ops::templates::MatmulF16;
  using hidet::ops::templates::MatmulF16Config;
  // 33 rows (a partial 64-row tile... of 32 + 1), k = 333: partial k tiles and slices (3 of 6, 6, 6
  // tiles)
  for (DataType dt : {dtypes::f16, dtypes::bf16})
    for (auto [rows, split] : {std::pair<int, int>{33, 3}, {16, 4}, {20, 1}}) {
      MatmulF16Config c{1, 2, rows <= 16 ? 16 : 32, 32, 32, 3, 1};
      c.split_k = split;
      const int m = rows, n = 200, k = 333;
      INFO(dt << " " << c.str() << ", " << m << "x" << n << "x" << k);
      MatmulF16 mm(m, n, k, dt, c);
      Tensor a = make({m, k}, dt), b = make({k, n}, dt);
      auto want = ref_matmul(a.to_double_vector(), b.to_double_vector(), m, n, k);
      for (int run = 0; run < 2; ++run) {
        Tensor out = hidet::full({m, n}, std::nan(""), dt);
        mm(a, b, out);
        expect_close(out, {m, n}, want);
      }
    }
  // symbolic rows with an epilogue (bias, residual + silu), split 4
  const Dim rows = Dim::symbol("b");
  const std::int64_t n = 72, k = 256;
  Tensor w = make({k, n}, dtypes::f16), bias = make({n}, dtypes::f16);
  auto plain = o::Epilogue::identity({rows, Dim(n)}, dtypes::f16);
  auto e = then(*then(plain, add_bias_task({rows, Dim(n)}, dtypes::f16), 0),
                residual_silu_task({rows, Dim(n)}, dtypes::f16), 1);
  MatmulF16Config c{1, 2, 32, 32, 64, 4, 1};
  c.split_k = 4;
  MatmulF16 mm(MatmulRows(rows), int(n), int(k), dtypes::f16, c, {}, e);
  for (std::int64_t m : {9, 32, 40}) { // 40: two row tiles
    INFO("rows " << m);
    Tensor x = make({m, k}, dtypes::f16), r = make({m, n}, dtypes::f16);
    Tensor want = o::add(r, o::silu(o::add(o::matmul(x, w), bias)));
    Tensor got = hidet::empty({m, n}, dtypes::f16, "cuda");
    mm(x, w, got, {bias, r}, {{"b", m}});
    expect_close(got, {m, n}, want.to_double_vector(), false, 2);
  }
  // the dispatch: 9 to 32 rows take it without Hopper, split so that the grid fills the SMs; 33 and more (a
  // CNN's last stage at batch 1: 49) take the tiled templates, unsplit at this k
  for (int m : {9, 32, 33, 49, 64}) {
    INFO("rows " << m);
    auto cands = o::matmul_candidates(m, 2048, 2048, dtypes::bf16, 0);
    REQUIRE(!cands.empty());
    const std::string &label = cands[0].label;
    // (a Hopper GPU takes its wgmma template, split, at up to 32 rows, and may split it past 32:
    // the few-rows path is mma.sync's)
    const bool hopper = o::matmul_wgmma_available();
    CHECK((label.rfind("mma.sync ", 0) == 0 && label.find("split-k") != std::string::npos) == (m <= 32 && !hopper));
    if (hopper && m <= 32) CHECK((label.rfind("wgmma ", 0) == 0 && label.find("split-k") != std::string::npos));
  }
  expect_error(
      [] {
        hidet::ops::templates::check_matmul_f16_config(
            MatmulF16Config{1, 2, 32, 32, 64, 4, 1, false, 65});
      },
      {"split_k"});
}

TEST_CASE("matmul: space 1 offers the few-rows mma.sync kernel at 2 to 32 rows, each variant correct") {
  // Around its heuristic (half and twice the split, 128-column tiles), beside the gemv's
  // candidates at 2 to 8 rows; n and k not multiples of the tiles (partial tiles and slices).
  const int n = 200, k = 1000;
  for (int m : {5, 20}) {
    std::vector<o::MatmulCandidate> mma;
    for (auto &c : o::matmul_candidates(m, n, k, dtypes::bf16, 1))
      if (c.label.rfind("mma.sync ", 0) == 0 && c.label.find("split-k") != std::string::npos) mma.push_back(c);
    INFO("rows " << m);
    REQUIRE(mma.size() >= 3);
    CHECK(o::matmul_candidates(m, n, k, dtypes::bf16, 0)[0].label.rfind("mma.sync ", 0) == 0);
    Tensor a = make({m, k}, dtypes::bf16), b = make({k, n}, dtypes::bf16);
    auto want = ref_matmul(a.to_double_vector(), b.to_double_vector(), m, n, k);
    for (auto &c : mma) {
      INFO(c.label);
      Tensor out = hidet::full({m, n}, std::nan(""), dtypes::bf16);
      c.build()(a, b, out, {});
      expect_close(out, {m, n}, want);
    }
  }
}

TEST_CASE("matmul_gemv: bad configurations and dtypes") {
  expect_error([] { hidet::ops::templates::check_matmul_gemv_config(cfg(9, 32, 4, 4, 1)); },
               {"rows", "[1, 8]"});
  expect_error([] { hidet::ops::templates::check_matmul_gemv_config(cfg(1, 4, 4, 4, 1)); },
               {"lanes_n"});
  expect_error([] { hidet::ops::templates::check_matmul_gemv_config(cfg(1, 32, 4, 3, 1)); },
               {"unroll"});
  expect_error([] { hidet::ops::templates::check_matmul_gemv_config(cfg(1, 32, 4, 4, 0)); },
               {"split_k"});
  expect_error([] { MatmulGemv(1, 8, 8, dtypes::i32, MatmulGemvConfig{}); },
               {"matmul_gemv", "f16, bf16 or f32"});
}
