// Tutorial 02: a matrix multiplication tiled through shared memory.
//
// Why: in tutorial 01 every thread reads a whole row of a and a whole column of b from global
// memory, so each element of a is read n times and each element of b m times: 2 * m * n * k
// loads for m * n * k multiply-adds. Global memory (even through the caches) delivers a few
// bytes per FMA the GPU could do, so the naive kernel waits on memory, not arithmetic.
//
// Tiling: a block of T x T threads computes a T x T tile of c. It walks k in steps of T; at each
// step the block copies a T x T tile of a and one of b into shared memory (each thread copies one
// element of each), waits at a barrier, and then every thread reads its row of the a tile and its
// column of the b tile from shared memory, which is on-chip and about as fast as registers. Each
// element loaded from global memory is now used T times, so global traffic drops by a factor T.
//
// Two barriers per step: syncthreads() after the copy, so no thread reads a tile element before
// the thread that copies it has written it; and syncthreads() after the computation, so no thread
// overwrites the tile for the next step while another thread is still reading the current one.
//
// Partial tiles: m, n and k need not be multiples of T. Threads whose element of a or b lies
// outside the matrix store 0 into the tile (zeros add nothing to the dot products), and threads
// whose element of c lies outside the matrix skip the final store. Every thread still takes part
// in every barrier: a barrier inside a branch that only some threads reach would hang the block.
//
// Usage: 02_shared_memory_tiling [m n k]   (default 133 244 155: partial tiles on every edge;
// the CPU emulator runs it in a few seconds; try 333 444 555 or larger on a GPU).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <hidet/hidet.hpp>

using namespace hidet::lang;

constexpr int T = 32; // tile edge: a block of 32 x 32 threads

hidet::CompiledModule build_tiled_matmul(int m, int n, int k) {
  auto mod = script_module("tiled_matmul");
  mod.kernel("matmul", {f32[m][k], f32[k][n], f32[m][n]}, [&](Tensor a, Tensor b, Tensor c) {
    attrs.cuda.grid_dim = {ceil_div(n, T), ceil_div(m, T)}; // x walks the columns of c
    attrs.cuda.block_dim = {T, T};
    auto a_tile = shared_tensor(f32[T][T], "a_tile");
    auto b_tile = shared_tensor(f32[T][T], "b_tile");
    Var tx = threadIdx.x, ty = threadIdx.y;
    Var row = blockIdx.y * T + ty; // this thread's element of c
    Var col = blockIdx.x * T + tx;
    Var acc = 0.0f;
    for_(range(ceil_div(k, T)), [&](Var kt) {
      // Each thread copies one element of each tile (zero outside the matrices).
      Var ka = kt * T + tx, kb = kt * T + ty;
      if_(row < m && ka < k, [&] { a_tile[ty][tx] = a[row][ka]; }).else_([&] { a_tile[ty][tx] = 0.0f; });
      if_(kb < k && col < n, [&] { b_tile[ty][tx] = b[kb][col]; }).else_([&] { b_tile[ty][tx] = 0.0f; });
      syncthreads(); // the tiles are complete
      for_(range(T).unroll(), [&](Var kk) { acc += a_tile[ty][kk] * b_tile[kk][tx]; });
      syncthreads(); // everyone is done reading before the next copy
    });
    if_(row < m && col < n, [&] { c[row][col] = acc; });
  });
  return mod.build();
}

int main(int argc, char **argv) {
  int m = 133, n = 244, k = 155;
  if (argc == 4) m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  if (m <= 0 || n <= 0 || k <= 0) {
    std::fprintf(stderr, "usage: %s [m n k] (positive sizes)\n", argv[0]);
    return 2;
  }
  auto matmul = build_tiled_matmul(m, n, k);

  unsigned seed = std::random_device{}();
  hidet::manual_seed(seed);
  auto a = hidet::randn({m, k}, hidet::f32, "cuda");
  auto b = hidet::randn({k, n}, hidet::f32, "cuda");
  auto c = hidet::full({m, n}, std::nan(""), hidet::f32, "cuda"); // poison: every element must be written
  matmul(a, b, c);

  // Compare with a host reference in double precision: relative Frobenius error, and the first
  // element whose error is out of line.
  auto ha = a.to_vector<float>(), hb = b.to_vector<float>(), hc = c.to_vector<float>();
  double err2 = 0, ref2 = 0;
  long first_bad = -1;
  double bad_got = 0, bad_want = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int kk = 0; kk < k; ++kk) {
        ref += double(ha[std::size_t(i) * k + kk]) * hb[std::size_t(kk) * n + j];
        mag += std::abs(double(ha[std::size_t(i) * k + kk]) * hb[std::size_t(kk) * n + j]);
      }
      double got = hc[std::size_t(i) * n + j];
      err2 += (got - ref) * (got - ref), ref2 += ref * ref;
      // f32 accumulation: the error is bounded by about k * eps * sum |a * b|
      if (!(std::abs(got - ref) <= 1e-6 * k * mag + 1e-6) && first_bad < 0)
        first_bad = long(i) * n + j, bad_got = got, bad_want = ref;
    }
  double rel = std::sqrt(err2 / ref2);
  std::printf("tiled matmul %dx%dx%d (tile %d) on %s: relative error %.3g (seed %u)\n", m, n, k, T,
              c.device_str().c_str(), rel, seed);
  if (first_bad >= 0) {
    std::printf("FAILED at c[%ld][%ld]: got %.8g, want %.8g\n", first_bad / n, first_bad % n, bad_got, bad_want);
    return 1;
  }
  if (!(rel < 1e-5) || ref2 == 0) {
    std::printf("FAILED: relative error %.3g (or an all-zero reference)\n", rel);
    return 1;
  }
  std::printf("OK\n");
  return 0;
}
