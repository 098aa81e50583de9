// Tutorial 03: register tiling with task mappings.
//
// Why: the tiled kernel of tutorial 02 reads two shared-memory values for every multiply-add.
// Shared memory is fast but not free: an SM can issue far more FMAs per cycle than it can serve
// shared loads, so that kernel waits on shared memory. The cure is to reuse values in registers:
// if a thread computes an 8 x 8 patch of c, then per step of k it loads 8 values of a and 8 of b
// and does 64 FMAs with them, 4 FMAs per load instead of one half.
//
// Who computes what: a block of 256 threads owns a 128 x 128 tile of c. Writing out the index
// arithmetic for warps, lanes and repeated sub-tiles by hand is where matmul kernels usually go
// wrong. Hidet describes it with a task mapping, a small algebra:
//   spatial(4, 2)   the 8 warps form a 4 x 2 grid of warp tiles (32 x 64 each),
//   repeat(2, 2)    each lane's patch repeats 2 x 2 times inside its warp tile (16 and 32 apart),
//   spatial(4, 8)   the 32 lanes form a 4 x 8 grid,
//   repeat(4, 4)    each repeat is a contiguous 4 x 4 block of accumulators.
// Composition `outer * inner` places the inner task grid inside each task of the outer one
// (task = outer_task * inner_shape + inner_task), so the whole assignment is the product
//   spatial(4, 2) * repeat(2, 2) * spatial(4, 8) * repeat(4, 4)     (256 workers, 128 x 128 tasks).
// The kernel in include/hidet/ops/templates/matmul_f32.hpp uses the spatial parts to find the
// thread's warp and lane coordinates and loops over the repeat parts with unrolled loops, so that
// the accumulators are a register tensor indexed only by compile-time constants. Contiguous 4 x 4
// blocks let each thread read its 8 values of a and 8 of b per k step as four 16-byte vectors;
// lanes of a warp reading the same values get them by broadcast.
//
// The kernel also uses mappings to copy tiles from global to shared memory (`repeat(1, 4) *
// spatial(8, 32)`: a warp reads 32 consecutive floats of one row), a strided layout for the
// transposed a tile (rows padded by 4 floats so that a warp's stores hit 32 different banks), and
// double buffering: two shared tiles, the next one loaded into registers while the current one
// is used, so that one barrier per k step suffices and the loads overlap the FMAs.
//
// This program prints a small mapping as a grid of thread ids, checks on the host that the
// kernel's index formula is exactly the composed mapping for every thread, and then runs the
// kernel (default 128 x 128 x 8 tiling, a smaller one, and the smaller one with split-k: blocks
// along k write partial products that a second kernel sums, for shapes with few tiles) on shapes
// with partial tiles against a double-precision host reference.
//
// Usage: 03_task_mappings [m n k]   (default 200 300 100: partial tiles on every edge).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <hidet/hidet.hpp>
#include <hidet/ops/templates/matmul_f32.hpp>

using namespace hidet::lang;
using hidet::ops::templates::MatmulF32Config;

// The kernel's formula for the (ri, ti) x (rj, tj) accumulator of thread `t` (see the template).
static std::pair<long, long> formula(const MatmulF32Config &c, int t, int ri, int ti, int rj, int tj) {
  int warp = t / 32, lane = t % 32;
  long wi = warp / c.warps_n, wj = warp % c.warps_n, li = lane / c.lanes_n, lj = lane % c.lanes_n;
  long i = ((wi * c.repeat_m + ri) * c.lanes_m + li) * c.thread_m + ti;
  long j = ((wj * c.repeat_n + rj) * c.lanes_n + lj) * c.thread_n + tj;
  return {i, j};
}

// The formula must list exactly mapping.tasks_of(t), in order, for every thread.
static bool formula_matches_mapping(const MatmulF32Config &c) {
  auto mapping = hidet::ops::templates::matmul_f32_c_mapping(c);
  for (int t = 0; t < c.threads(); ++t) {
    auto tasks = mapping.tasks_of(t);
    std::size_t q = 0; // tasks_of lists the repeats outer to inner: ri, rj, then ti, tj
    for (int ri = 0; ri < c.repeat_m; ++ri)
      for (int rj = 0; rj < c.repeat_n; ++rj)
        for (int ti = 0; ti < c.thread_m; ++ti)
          for (int tj = 0; tj < c.thread_n; ++tj, ++q) {
            auto [i, j] = formula(c, t, ri, ti, rj, tj);
            if (q >= tasks.size() || tasks[q][0] != i || tasks[q][1] != j) {
              std::printf("thread %d: the formula gives (%ld, %ld) as task %zu of %s\n", t, i, j, q,
                          mapping.str().c_str());
              return false;
            }
          }
    if (q != tasks.size()) return false;
  }
  return true;
}

static int run(int m, int n, int k, const MatmulF32Config &cfg) {
  hidet::ops::templates::MatmulF32 matmul(m, n, k, cfg);
  unsigned seed = std::random_device{}();
  hidet::manual_seed(seed);
  auto a = hidet::randn({m, k}, hidet::f32, "cuda");
  auto b = hidet::randn({k, n}, hidet::f32, "cuda");
  auto c = hidet::full({m, n}, std::nan(""), hidet::f32, "cuda"); // poison
  matmul(a, b, c);
  auto ha = a.to_vector<float>(), hb = b.to_vector<float>(), hc = c.to_vector<float>();
  double err2 = 0, ref2 = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int kk = 0; kk < k; ++kk) {
        double p = double(ha[std::size_t(i) * k + kk]) * hb[std::size_t(kk) * n + j];
        ref += p, mag += std::abs(p);
      }
      double got = hc[std::size_t(i) * n + j];
      err2 += (got - ref) * (got - ref), ref2 += ref * ref;
      if (!(std::abs(got - ref) <= 1e-6 * k * mag + 1e-6)) {
        std::printf("FAILED %dx%dx%d, tiling %s: c[%d][%d] = %.8g, want %.8g (seed %u)\n", m, n, k,
                    cfg.str().c_str(), i, j, got, ref, seed);
        return 1;
      }
    }
  double rel = std::sqrt(err2 / ref2);
  std::printf("matmul %dx%dx%d, tiling %s, on %s: relative error %.3g (seed %u)\n", m, n, k,
              cfg.str().c_str(), c.device_str().c_str(), rel, seed);
  return rel < 1e-5 && ref2 > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  int m = 200, n = 300, k = 100;
  if (argc == 4) m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  if (m <= 0 || n <= 0 || k <= 0) {
    std::fprintf(stderr, "usage: %s [m n k] (positive sizes)\n", argv[0]);
    return 2;
  }

  // A small mapping, printed as the owner (thread id) of every task: 2 warps of 4 x 8 lanes in
  // a 1 x 2 warp grid, with 2 x 1 repeats of 1 x 1 patches.
  auto small = spatial(1, 2) * repeat(2, 1) * spatial(4, 8) * repeat(1, 1);
  std::printf("%s (%lld workers):\n%s\n", small.str().c_str(), (long long)small.num_workers(),
              small.grid_str().c_str());

  MatmulF32Config big;                                  // 128 x 128 x 8, 256 threads, 8 x 8 per thread
  MatmulF32Config little{2, 2, 1, 2, 4, 8, 2, 2, 8, 0}; // 16 x 64 x 8, 128 threads, 2 x 4 per thread
  for (auto *cfg : {&big, &little}) {
    auto mapping = hidet::ops::templates::matmul_f32_c_mapping(*cfg);
    bool ok = formula_matches_mapping(*cfg);
    std::printf("%s: %lld workers, task shape %lldx%lld; kernel formula %s the mapping\n",
                mapping.str().c_str(), (long long)mapping.num_workers(), (long long)mapping.task_shape()[0],
                (long long)mapping.task_shape()[1], ok ? "matches" : "DOES NOT match");
    if (!ok) return 1;
  }
  MatmulF32Config split = little;
  split.split_k = 3; // three blocks along k per tile, partial products summed by a second kernel
  int fails = run(m, n, k, big) + run(m, n, k, little) + run(m, n, k, split);
  std::printf(fails ? "FAILED\n" : "OK\n");
  return fails ? 1 : 0;
}
