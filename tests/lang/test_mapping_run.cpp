// Runs a kernel written with task mappings and a swizzled shared-memory layout, on the GPU when
// present and on the CPU emulator otherwise, and compares it with a host reference.
#include <doctest/doctest.h>

#include "hidet/hidet.hpp"
#include "hidet/lang/mapping.hpp"


using namespace hidet::lang;

TEST_CASE("transpose through a swizzled shared tile, with task mappings") {
  constexpr int n = 64;
  // 128 workers cover the 64x64 tile: each thread copies 8 rows x 4 consecutive columns.
  auto m = repeat(8, 1) * spatial(8, 16) * repeat(1, 4);
  REQUIRE(m.num_workers() == 128);
  REQUIRE(m.task_shape() == std::vector<std::int64_t>{n, n});
  // Rows of 16 vectors of 4 f32 (16 bytes); the vector column is XOR-swizzled with the row.
  auto tile_layout = swizzle(row_major(n, n / 4), 1) * row_major(1, 4);
  auto mod = script_module("mapping_transpose");
  mod.kernel("transpose", {f32[n][n], f32[n][n]}, [&](Tensor a, Tensor b) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 128;
    auto tile = shared_tensor(f32[n][n].with_layout(tile_layout), "tile");
    for_(m.on(threadIdx.x), [&](Expr i, Expr j) { tile[i][j] = a[i][j]; });
    syncthreads();
    for_(m.on(threadIdx.x), [&](Expr i, Expr j) { b[i][j] = tile[j][i]; });
  });
  auto cm = mod.build();
  auto a = hidet::randn({n, n}, f32, "cuda");
  auto b = hidet::empty({n, n}, f32, "cuda");
  cm(a, b);
  auto ha = a.to_vector<float>(), hb = b.to_vector<float>();
  int bad = 0;
  double max_abs = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      max_abs = std::max(max_abs, double(std::abs(hb[std::size_t(i * n + j)])));
      if (hb[std::size_t(i * n + j)] != ha[std::size_t(j * n + i)] && bad++ == 0)
        FAIL_CHECK("first mismatch at (", i, ", ", j, "): got ", hb[std::size_t(i * n + j)], ", want ",
                   ha[std::size_t(j * n + i)]);
    }
  CHECK(bad == 0);
  CHECK(max_abs > 0); // not an all-zero output
  std::string where = cm.emulated() ? "the emulator" : "the GPU";
  MESSAGE("ran on ", where);
  // the generated source indexes the shared tile through the swizzle (an XOR)
  CHECK(cm.source().find(" ^ ") != std::string::npos);
}
