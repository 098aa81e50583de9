// Emulator tests: numerics of kernels against host references (matmul with partial tiles, tiled
// shared-memory matmul, divergent control flow, warp shuffles and votes, atomics, f16/bf16
// rounding, dynamic shared memory).
#include <doctest/doctest.h>

#include <random>

#include "hidet/backend/emulator/program.hpp"
#include "test_emulator_kernels.hpp"

using namespace emu_test;
using hidet::backend::Dim3;
using hidet::backend::KernelArg;
using hidet::backend::emu::Program;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(-4, 4); // small integers: exact sums
  std::vector<float> v(n);
  for (auto &x : v) x = float(d(g));
  return v;
}

KernelArg ptr(void *p) { return KernelArg::pointer(p); }
KernelArg i32(std::int64_t v) { return KernelArg::integer(hidet::dtypes::i32, v); }

} // namespace

TEST_CASE("emulator: naive matmul with partial tiles matches a host reference") {
  const int M = 33, N = 45, K = 27;
  unsigned seed = 1234;
  auto A = random_floats(M * K, seed), B = random_floats(K * N, seed + 1);
  std::vector<float> C(M * N, -1.0f);
  Program p(make_module({naive_matmul()}));
  p.launch("matmul", {ptr(A.data()), ptr(B.data()), ptr(C.data()), i32(M), i32(N), i32(K)},
           Dim3{(N + 31) / 32, (M + 7) / 8, 1}, Dim3{32, 8, 1}, 0);
  bool nonzero = false;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += double(A[m * K + k]) * B[k * N + n];
      INFO("m=", m, " n=", n, " seed=", seed);
      REQUIRE(C[m * N + n] == doctest::Approx(ref));
      nonzero |= ref != 0;
    }
  CHECK(nonzero);
}
