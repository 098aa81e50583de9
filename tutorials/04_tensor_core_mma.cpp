// Tutorial 04: tensor cores with mma.sync, ldmatrix and a cp.async pipeline.
//
// Why: the FMA units of tutorial 03 do one multiply-add per lane per instruction. A tensor core
// does a whole small matrix product per warp instruction: mma.sync.m16n8k16 multiplies a 16 x 16
// tile of A by a 16 x 8 tile of B (f16 or bf16) and adds the 16 x 8 product to f32 accumulators,
// 2048 multiply-adds in one instruction. On an H100 that is an order of magnitude more
// arithmetic than the FMA units, so the rest of the kernel must now keep up with it.
//
// Fragments: the operands of mma.sync live in registers spread over the warp's 32 lanes. Lane l
// (g = l / 4, q = l % 4) holds 8 halves of A, 4 of B and 4 accumulators; for the accumulators,
// rows g and g + 8, columns 2q and 2q + 1 (docs/primitives.md draws all three layouts).
//
// ldmatrix: loading those scattered fragments element by element from shared memory would cost
// more than the mma. ldmatrix.x4 loads four 8 x 8 matrices at once: lanes 0-31 each give the
// address of one 8-half row, and every lane receives exactly its fragment words. With lane l
// pointing at row l % 16, column 8 * (l / 16) of a 16 x 16 A tile, the four matrices are the
// four quadrants, in the order the A fragment wants. b is row-major (k-major), but mma.sync wants
// B column-major: ldmatrix.x4.trans transposes each 8 x 8 matrix on the way, and with the same
// addressing gives the B fragments of two adjacent n8 tiles.
//
// Bank conflicts: the 8 row addresses of one ldmatrix phase hit the same column of 8 rows. In a
// plain row-major tile whose rows are 64 or 256 bytes long those rows share bank groups (up to
// an 8-way conflict). The tiles are stored with an XOR swizzle of 16-byte vectors instead:
// vector column v of row r is stored at column v ^ (r >> s), so the 8 rows land in 8 distinct
// 16-byte bank groups. This program checks that on the host for every ldmatrix phase.
//
// cp.async and the pipeline: cp.async copies 16 bytes from global to shared memory without
// passing through registers, and it is asynchronous: a thread issues copies, closes them into a
// "commit group", and later waits until at most n groups are still in flight. With 3 shared
// buffers (stages), the copies of tiles kt+1 and kt+2 run while the tensor cores work on tile
// kt. One iteration: wait_group(stages - 2) (my copies of tile kt have landed), syncthreads()
// (everyone's have, and everyone is done with the buffer of tile kt-1), issue the copies of tile
// kt+2 into that freed buffer, commit, compute on tile kt. The emulator performs cp.async at once
// and ignores the waits, which this ordering also tolerates.
//
// Partial tiles: cp.async takes a source size; bytes past it are zero-filled. Rows past m or k
// and vectors straddling the last column copy fewer (or zero) bytes, so partial tiles need no
// branch in the inner loop, and zeros add nothing to the products. The epilogue checks bounds.
// 16-byte copies need 16-byte aligned rows, i.e. k and n multiples of 8; otherwise the runner
// first copies a (or b) into a workspace with padded rows (MatmulF16 does it).
//
// Task mappings: warps own their 64 x 64 sub-tiles through spatial(2, 2); inside a warp the
// m16n8 mma tiles are repeat(4, 8); so c's mma tiles map to warps by
// spatial(2, 2) * repeat(4, 8). The global -> shared copies use auto_map over the tile's
// 16-byte vectors. The kernel is include/hidet/ops/templates/matmul_f16.hpp; it is also what
// benchmarks/bench_matmul measures for f16 and bf16.
//
// This program prints the warp mapping of a small tiling, checks the swizzles, and runs f16 and
// bf16 products (the default tiling and a 64 x 64 one) against a double-precision host reference
// with the f16/bf16 tolerance: the inputs are exact in the reference (it uses the same rounded
// values), the f32 accumulation adds ~k * 2^-24 relative error, and the final rounding to f16
// (bf16) adds up to 2^-11 (2^-8) of the value.
//
// Usage: 04_tensor_core_mma [m n k]   (default 150 140 100: partial tiles on every edge and
// k, n not multiples of 8, plus a 37 x 41 x 23 run with odd sizes; runs in seconds on the CPU emulator; try 333 444 555 on a GPU).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <hidet/hidet.hpp>
#include <hidet/ops/templates/matmul_f16.hpp>

#include "half_matmul_check.hpp"

using namespace hidet::lang;
using hidet::ops::templates::MatmulF16;
using hidet::ops::templates::MatmulF16Config;

// Every ldmatrix phase reads 8 rows (r0 .. r0+7, r0 a multiple of 8) at one 8-half column: their
// 16-byte vectors must fall into 8 distinct bank groups (offset / 8 mod 8) of the swizzled tile.
static bool conflict_free(int rows, int cols) {
  auto tile = hidet::ops::templates::matmul_f16_detail::swizzled_tile(1, rows, cols);
  for (int r0 = 0; r0 < rows; r0 += 8)
    for (int c = 0; c < cols; c += 8) {
      unsigned seen = 0;
      for (int r = r0; r < r0 + 8; ++r) seen |= 1u << (hidet::ir::offset_of(tile, {0, r, c}) / 8 % 8);
      if (seen != 0xff) {
        std::printf("tile %dx%d: rows %d..%d at column %d share bank groups\n", rows, cols, r0, r0 + 7, c);
        return false;
      }
    }
  return true;
}

static int run(int m, int n, int k, hidet::DataType dt, const MatmulF16Config &cfg) {
  MatmulF16 matmul(m, n, k, dt, cfg);
  return check_half_matmul(m, n, k, dt, cfg.str(), [&](auto &a, auto &b, auto &c) { matmul(a, b, c); });
}

int main(int argc, char **argv) {
  int m = 150, n = 140, k = 100;
  if (argc == 4) m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  if (m <= 0 || n <= 0 || k <= 0) {
    std::fprintf(stderr, "usage: %s [m n k] (positive sizes)\n", argv[0]);
    return 2;
  }

  // The mma tiles (16 x 8 each) of a 64 x 64 block tile, as the warp that computes them: 4 warps
  // of 32 x 32, each a 2 x 4 repeat of mma tiles.
  auto tiles = spatial(2, 2) * repeat(2, 4);
  std::printf("mma tiles of a 64x64 block -> warps, %s:\n%s\n", tiles.str().c_str(), tiles.grid_str().c_str());

  // The shared tiles of the tilings below: a is block_m x block_k, b is block_k x block_n.
  bool ok = conflict_free(128, 32) && conflict_free(32, 128) && conflict_free(64, 32) && conflict_free(32, 64);
  std::printf("ldmatrix phases on the swizzled tiles: %s\n", ok ? "conflict-free" : "CONFLICTS");
  if (!ok) return 1;

  MatmulF16Config big;                         // 128 x 128 x 32, 4 warps of 64 x 64, 3 stages
  MatmulF16Config little{2, 2, 32, 32, 32, 2, 1}; // 64 x 64 x 32, 4 warps of 32 x 32, 2 stages
  int fails = run(m, n, k, hidet::f16, big) + run(m, n, k, hidet::bf16, big) + run(m, n, k, hidet::f16, little) +
              run(37, 41, 23, hidet::bf16, little);
  std::printf(fails ? "FAILED\n" : "OK\n");
  return fails ? 1 : 0;
}
