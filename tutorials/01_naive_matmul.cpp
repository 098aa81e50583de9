// Tutorial 01: a naive matrix multiplication in Hidet Script.
//
// A kernel is a C++ lambda that builds the kernel's code: `Expr`s are expressions of the kernel,
// `if_` and `for_` emit control flow, `c[i][j] = ...` emits a store. `attrs.cuda.grid_dim` and
// `attrs.cuda.block_dim` say how many blocks and threads run it. `mod.build()` lowers the
// kernel, generates CUDA C++, compiles it with NVRTC (cached on disk) and loads it; calling the
// result checks the arguments and launches it. Without a GPU, the same kernel runs on hidet's
// CPU emulator, which checks every memory access.
//
// Each thread computes one element c[i][j] = sum_k a[i][k] * b[k][j]: thread (x, y) of block
// (bx, by) takes i = bx * 32 + x and j = by * 32 + y, and threads outside the matrix do nothing.
#include <cmath>
#include <cstdio>
#include <iostream>

#include <hidet/hidet.hpp>

using namespace hidet::lang;

hidet::CompiledModule build_matmul(int m, int n, int k) {
  auto mod = script_module("naive_matmul");
  mod.kernel("matmul", {f32[m][k], f32[k][n], f32[m][n]}, [&](Tensor a, Tensor b, Tensor c) {
    attrs.cuda.grid_dim = {ceil_div(m, 32), ceil_div(n, 32)};
    attrs.cuda.block_dim = {32, 32};
    Expr i = threadIdx.x + blockIdx.x * blockDim.x;
    Expr j = threadIdx.y + blockIdx.y * blockDim.y;
    if_(i < m && j < n, [&] {
      c[i][j] = 0.0f;
      for_(range(k), [&](Var kk) { c[i][j] += a[i][kk] * b[kk][j]; });
    });
  });
  return mod.build(); // lower -> CUDA C++ -> NVRTC (cached) -> loaded module
}

int main() {
  const int m = 333, n = 444, k = 555; // partial 32x32 tiles on both edges
  auto matmul = build_matmul(m, n, k);

  auto a = hidet::randn({m, k}, hidet::f32, "cuda");
  auto b = hidet::randn({k, n}, hidet::f32, "cuda");
  auto c = hidet::empty({m, n}, hidet::f32, "cuda");
  matmul(a, b, c);

  // Compare with a host reference in double precision.
  auto ha = a.to_vector<float>(), hb = b.to_vector<float>(), hc = c.to_vector<float>();
  double max_err = 0, max_ref = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int kk = 0; kk < k; ++kk) ref += double(ha[i * k + kk]) * hb[kk * n + j];
      max_err = std::max(max_err, std::abs(ref - hc[i * n + j]));
      max_ref = std::max(max_ref, std::abs(ref));
    }
  std::printf("matmul %dx%dx%d on %s: max abs error %.3g (max |c| %.3g)\n", m, n, k,
              c.device_str().c_str(), max_err, max_ref);
  std::printf("a small corner of c:\n");
  std::cout << c.reshape({m * n}).to("cpu") << "\n";
  if (!(max_err <= 1e-4 * std::max(1.0, max_ref)) || max_ref == 0) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("OK\n");
  return 0;
}
