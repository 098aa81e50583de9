// The grouped product of mixture-of-experts layers (ops::grouped_matmul,
// include/hidet/ops/templates/matmul_grouped.hpp), on the GPU when present, else on the emulator:
// every kernel kind (tensor cores, FMA, GEMV) against a double-precision host reference on random
// inputs of odd sizes, with empty experts, every row in one expert, rows past the last offset,
// offsets past S and decreasing ones, int32 and int64 offsets; one build serving every routing and
// every S; weights of experts without rows never reaching the output; the heuristic's choices; the
// node a symbolic x records; errors.
#include "ops_test_util.hpp"

#include <limits>

#include "hidet/graph.hpp"
#include "hidet/ops/templates/matmul_grouped.hpp"

using namespace ops_test;
namespace t = hidet::ops::templates;

namespace {

/// The host reference: expert e takes rows [start, end) with end = clamp(offs[e], 0, S) and start
/// the largest end before it; other rows are 0.
std::vector<double> reference(const Tensor &x, const Tensor &w,
                              const std::vector<std::int64_t> &offs) {
  const std::int64_t S = x.shape()[0], K = x.shape()[1], N = w.shape()[2];
  auto xv = x.to_double_vector(), wv = w.to_double_vector();
  std::vector<double> out(std::size_t(S * N), 0.0);
  std::int64_t start = 0;
  for (std::size_t e = 0; e < offs.size(); ++e) {
    std::int64_t end = std::clamp<std::int64_t>(offs[e], 0, S);
    for (std::int64_t r = start; r < end; ++r)
      for (std::int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (std::int64_t q = 0; q < K; ++q)
          acc += xv[std::size_t(r * K + q)] * wv[std::size_t((std::int64_t(e) * K + q) * N + j)];
        out[std::size_t(r * N + j)] = acc;
      }
    start = std::max(start, end);
  }
  return out;
}

Tensor offsets(const std::vector<std::int64_t> &offs, DataType dt) {
  std::vector<double> v(offs.begin(), offs.end());
  return asarray(v, {std::int64_t(offs.size())}, dt).to(Device::cuda());
}

/// Runs a built kernel on x, w, offs and compares with the reference (tolerance scaled by the
/// reduction length for half dtypes).
void check_kernel(const t::MatmulGrouped &mm, const Tensor &x, const Tensor &w,
                  const std::vector<std::int64_t> &offs, DataType offs_dt) {
  const std::int64_t S = x.shape()[0], N = w.shape()[2];
  INFO("config " << mm.config().str() << ", S = " << S << ", offs dtype " << offs_dt);
  Tensor out = empty({S, N}, x.dtype(), Device::cuda());
  mm(x.to(Device::cuda()), w.to(Device::cuda()), offsets(offs, offs_dt), out);
  auto want = reference(x, w, offs);
  bool any_rows = false;
  for (double v : want)
    any_rows |= v != 0;
  expect_close(out, {S, N}, want, !any_rows, x.dtype() == dtypes::f32 ? 10 : 4);
}

/// The routings every kernel is checked on, for S rows over 5 experts.
std::vector<std::vector<std::int64_t>> routings(std::int64_t S) {
  return {
      {S / 5, S / 5, S / 2, S - 4,
       S - 4},                         // expert 1 and 4 empty; the last 4 rows past the end (zeros)
      {0, 0, S, S, S},                 // every row in expert 2
      {3, S + 7, S + 9, S + 20, 1000}, // ends past S: clamped
      {S / 2, 2, S - 1, S / 3, S},     // decreasing ends: experts 1 and 3 get no rows
      {0, 0, 0, 0, 0},                 // no rows at all: zeros
  };
}

} // namespace

TEST_CASE(
    "grouped_matmul: every kernel kind against the host reference, odd sizes, every routing") {
  const int E = 5;
  struct Case {
    t::MatmulGroupedConfig cfg;
    DataType dt;
    std::int64_t S, N, K;
  };
  t::MatmulGroupedConfig mma64, mma128, fma, gemv8, gemv2;
  mma64.mma = t::MatmulF16Config{2, 2, 32, 32, 32, 3, 1};
  fma.kind = t::GroupedKind::Fma;
  gemv8.kind = gemv2.kind = t::GroupedKind::Gemv;
  gemv2.gemv_rows = 2, gemv2.gemv_lanes = 4, gemv2.gemv_unroll = 2;
  std::vector<Case> cases{
      {mma64, dtypes::f16, 77, 40, 45},  // K not a multiple of 8: x padded
      {mma64, dtypes::bf16, 70, 29, 32}, // N odd: weight padded, unpaired stores
      {mma128, dtypes::f16, 150, 136, 64}, {fma, dtypes::f32, 77, 70, 37},
      {fma, dtypes::f16, 45, 33, 20},      {gemv8, dtypes::f32, 13, 72, 41}, // 16-byte vectors
      {gemv8, dtypes::f16, 11, 35, 50},                                      // N odd: element loads
      {gemv8, dtypes::bf16, 9, 44, 33}, // N = 4 (mod 8): 8-byte vectors
      {gemv2, dtypes::f16, 6, 48, 70},
  };
  for (const auto &c : configs_to_run(cases, 1)) {
    INFO("case " << c.cfg.str() << " " << c.dt << " S " << c.S << " N " << c.N << " K " << c.K
                 << ", seed " << g_seed);
    Tensor w = make({E, c.K, c.N}, c.dt, -1, 1);
    const DataType offs_dt = c.S % 2 ? dtypes::i32 : dtypes::i64;
    t::MatmulGrouped mm(E, int(c.N), int(c.K), c.dt, offs_dt, c.cfg);
    for (std::int64_t S : {c.S, c.S / 3 + 1}) { // one build for every S
      Tensor x = make({S, c.K}, c.dt, -1, 1);
      for (const auto &offs : routings(S))
        check_kernel(mm, x, w, offs, offs_dt);
    }
  }
}

TEST_CASE("grouped_matmul: the weights of experts without rows never reach the output") {
  // Experts 0, 2 and 3 get no rows and hold NaN: a product over every expert (and a choice after
  // it) would carry NaN * 0 = NaN into each row; the grouped kernels never read those weights.
  const std::int64_t E = 4, K = 24, N = 32;
  for (auto dt : {dtypes::f16, dtypes::f32}) {
    for (std::int64_t S : {3, 40}) { // decode (the GEMV kernel) and the tiled kernels
      INFO(dt << " S = " << S);
      auto wv = make({E, K, N}, dt, -1, 1).to_double_vector();
      for (std::int64_t e : {0, 2, 3})
        for (std::int64_t i = 0; i < K * N; ++i)
          wv[std::size_t(e * K * N + i)] = std::numeric_limits<double>::quiet_NaN();
      Tensor w = asarray(wv, {E, K, N}, dt);
      Tensor x = make({S, K}, dt, -1, 1);
      std::vector<std::int64_t> offs{0, S, S, S};
      Tensor out =
          o::grouped_matmul(x.to(Device::cuda()), w.to(Device::cuda()), offsets(offs, dtypes::i64));
      auto got = out.to_double_vector();
      for (double v : got)
        REQUIRE_FALSE(std::isnan(v));
      expect_close(out, {S, N}, reference(x, w, {0, S, S, S}), false, 4);
    }
  }
}

TEST_CASE("grouped_matmul: the operator, its heuristic, cpu tensors and the node of a symbolic x") {
  const std::int64_t E = 3, K = 20, N = 24;
  Tensor w = make({E, K, N}, dtypes::f16, -1, 1);
  // the heuristic: decode runs the GEMV kernel, prefill the tensor cores (f16) or the FMA kernel
  // (f32)
  CHECK(t::matmul_grouped_heuristic_config(2, 8, 4096, 4096, dtypes::f16, 132, true).kind ==
        t::GroupedKind::Gemv);
  // rows per block: an expert's share of the rows (1 token, top-2: one row each; 8 tokens over 8
  // experts: 2; 16 rows over 2 experts: 8)
  CHECK(t::matmul_grouped_heuristic_config(2, 8, 4096, 4096, dtypes::f16, 132, true).gemv_rows ==
        1);
  CHECK(t::matmul_grouped_heuristic_config(16, 8, 4096, 4096, dtypes::f16, 132, true).gemv_rows ==
        2);
  CHECK(t::matmul_grouped_heuristic_config(16, 2, 4096, 4096, dtypes::f16, 132, true).gemv_rows ==
        8);
  CHECK(t::matmul_grouped_heuristic_config(1, 8, 4096, 4096, dtypes::f16, 132, true).gemv_rows ==
        1);
  // Mixtral-8x7B at batch 1: the gate-up strips fill the GPU with 8 lanes, the down projection's
  // 4096 columns take 4-lane strips
  CHECK(t::matmul_grouped_heuristic_config(2, 8, 28672, 4096, dtypes::f16, 132, true).gemv_lanes ==
        8);
  CHECK(t::matmul_grouped_heuristic_config(2, 8, 4096, 14336, dtypes::f16, 132, true).gemv_lanes ==
        4);
  auto prefill = t::matmul_grouped_heuristic_config(1024, 8, 28672, 4096, dtypes::bf16, 132, true);
  CHECK(prefill.kind == t::GroupedKind::Mma);
  CHECK(prefill.mma.block_m() == 128);
  CHECK(t::matmul_grouped_heuristic_config(1024, 8, 4096, 4096, dtypes::f32, 132, true).kind ==
        t::GroupedKind::Fma);
  CHECK(t::matmul_grouped_heuristic_config(1024, 8, 4096, 4096, dtypes::f16, 132, false).kind ==
        t::GroupedKind::Fma);

  for (std::int64_t S : {2, 30}) {
    Tensor x = make({S, K}, dtypes::f16, -1, 1).to(Device::cpu());
    std::vector<std::int64_t> offs{S / 2, S / 2, S - 1};
    Tensor offs_t =
        asarray(std::vector<double>(offs.begin(), offs.end()), {E}, dtypes::i32, Device::cpu());
    Tensor y = o::grouped_matmul(x, w.to(Device::cpu()),
                                 offs_t); // cpu tensors: run on the device, back on the cpu
    CHECK(y.device().is_cpu());
    expect_close(y, {S, N}, reference(x, w, offs), false, 4);
  }

  // a symbolic x records one GroupedMatmul node; the graph runs it at every S
  Dim s = Dim::symbol("s");
  Tensor xs = symbol({s, Dim(K)}, dtypes::f16, "cuda", "x");
  Tensor os = symbol({E}, dtypes::i64, "cuda", "offs");
  Tensor ys = o::grouped_matmul(xs, w.to(Device::cuda()), os);
  CHECK(ys.sym_shape() == SymShape{s, Dim(N)});
  FlowGraph g({ys}, {xs, os});
  CHECK(g.str().find("GroupedMatmul") != std::string::npos);
  for (std::int64_t S : {5, 19}) {
    Tensor x = make({S, K}, dtypes::f16, -1, 1);
    std::vector<std::int64_t> offs{1, S - 2, S - 2};
    Tensor y = g.run({x.to(Device::cuda()), offsets(offs, dtypes::i64)})[0];
    expect_close(y, {S, N}, reference(x, w, offs), false, 4);
  }
  // specialized to one S, the node is traced again at constant shapes
  FlowGraph g7 = g.specialize({{"s", 7}});
  CHECK(g7.str().find("GroupedMatmul") != std::string::npos);
}

TEST_CASE("grouped_matmul: bad input names what was wrong") {
  Tensor x = make({6, 8}, dtypes::f16), w = make({3, 8, 5}, dtypes::f16);
  Tensor offs = asarray(std::vector<double>{2, 4, 6}, {3}, dtypes::i32);
  expect_error(
      [&] {
        o::grouped_matmul(x.reshape({2, 3, 8}), w, offs);
      },
      {"grouped_matmul", "x [S, K]", "(2, 3, 8)"});
  expect_error(
      [&] {
        o::grouped_matmul(make({6, 7}, dtypes::f16), w, offs);
      },
      {"grouped_matmul", "the last dimension of x"});
  expect_error(
      [&] {
        o::grouped_matmul(x, w, asarray(std::vector<double>{2, 6}, {2}, dtypes::i32));
      },
      {"the length of offs", "expert count"});
  expect_error(
      [&] {
        o::grouped_matmul(x, make({3, 8, 5}, dtypes::f32), offs);
      },
      {"share a dtype", "f16", "f32"});
  expect_error(
      [&] {
        o::grouped_matmul(x, w, asarray(std::vector<double>{2, 4, 6}, {3}, dtypes::f32));
      },
      {"offs must be int32 or int64", "f32"});
  expect_error(
      [&] {
        o::grouped_matmul(make({6, 8}, dtypes::i32), make({3, 8, 5}, dtypes::i32), offs);
      },
      {"f32, f16 and bf16", "i32"});
  t::MatmulGroupedConfig bad;
  bad.kind = t::GroupedKind::Gemv;
  bad.gemv_rows = 3;
  expect_error([&] { t::check_matmul_grouped_config(bad, dtypes::f16); },
               {"gemv_rows must be 1, 2, 4 or 8"});
  t::MatmulGroupedConfig mma_f32;
  expect_error([&] { t::check_matmul_grouped_config(mma_f32, dtypes::f32); },
               {"tensor-core kernel takes f16 or bf16"});
}
