// Primitive tests: vector copies, cp.async, ldmatrix, mma.sync (every lane's fragment, exact
// small-integer inputs), packed half2, checked against host references; on the GPU when present,
// else on the emulator (where NVRTC also compiles each module for sm_90a). Hopper primitives:
// compiled for sm_90a and rejected by the emulator. Bad input: fragment shapes and dtypes,
// wgmma built for an older arch.
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include "hidet/backend/nvrtc.hpp" // CompiledModule::binary()
#include "hidet/hidet.hpp"
#include "hidet/ir/printer.hpp" // ir::to_string
#include "hidet/runtime/tensor_map.hpp"

using namespace hidet::lang;

namespace {
std::mt19937 &rng() {
  static std::mt19937 g(1234);
  return g;
}
/// n random integers in [lo, hi] as doubles.
std::vector<double> small_ints(std::size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<double> v(n);
  for (auto &x : v) x = d(rng());
  return v;
}
const char *where(const hidet::CompiledModule &cm) { return cm.emulated() ? "the emulator" : "the GPU"; }
bool has(const std::string &s, const std::string &sub) { return s.find(sub) != std::string::npos; }
} // namespace

TEST_CASE("load_vector / store_vector: 16, 8 and 4 bytes") {
  for (int bytes : {16, 8, 4}) {
    int per = bytes / 4;
    auto mod = script_module("vec");
    mod.kernel("vec", {f32[32 * 4], f32[32 * 4]}, [&](Tensor a, Tensor b) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 32;
      auto r = register_tensor(f32[4], "r");
      Var t = threadIdx.x;
      load_vector(r, a[t * per], bytes);
      for (int i = 0; i < per; ++i) r[i] = r[i] * 2.0f;
      store_vector(b[t * per], r, bytes);
    });
    auto cm = mod.build();
    auto in = small_ints(128, -50, 50);
    auto a = hidet::asarray(in, {128}, hidet::f32), b = hidet::zeros({128}, hidet::f32);
    cm(a, b);
    auto out = b.to_vector<float>();
    for (int i = 0; i < 128; ++i) {
      float want = i < 32 * per ? float(2 * in[std::size_t(i)]) : 0.f;
      REQUIRE_MESSAGE(out[std::size_t(i)] == want, "bytes ", bytes, " index ", i, " on ", where(cm));
    }
    if (bytes == 16) CHECK(has(cm.source(), "uint4"));
  }
}

TEST_CASE("cp_async with zero-fill, commit and wait groups") {
  auto mod = script_module("cpa");
  mod.kernel("cpa", {f32[128], f32[128]}, [&](Tensor a, Tensor b) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    auto s = shared_tensor(f32[128], "s");
    Var t = threadIdx.x;
    // even threads copy 16 bytes, odd threads read 8 and zero-fill the other 8
    cp_async(s[t * 4], a[t * 4], 16, Expr(t % 2 * 8 + 8));
    cp_async_commit_group();
    cp_async_wait_group(0);
    syncthreads();
    for (int i = 0; i < 4; ++i) b[(31 - t) * 4 + i] = s[(31 - t) * 4 + i];
  });
  auto cm = mod.build();
  CHECK(has(cm.source(), "cp.async.cg.shared.global"));
  auto in = small_ints(128, 1, 9);
  auto a = hidet::asarray(in, {128}, hidet::f32), b = hidet::zeros({128}, hidet::f32);
  cm(a, b);
  auto out = b.to_vector<float>();
  for (int i = 0; i < 128; ++i) {
    int t = i / 4, j = i % 4;
    float want = (t % 2 == 1 || j < 2) ? float(in[std::size_t(i)]) : 0.f;
    REQUIRE_MESSAGE(out[std::size_t(i)] == want, "index ", i, " on ", where(cm));
  }
}

TEST_CASE("prefetch_l2 before grid_dependency_wait(): the kernel's own wait replaces the one at its start") {
  // A row sum whose blocks prefetch their rows into the L2, then wait for the kernel before them
  // (programmatic dependent launch), then read. Run twice in a stream: the second launch's
  // prefetches may overlap the first's end, its reads may not.
  const int rows = 37, cols = 96;
  auto mod = script_module("pf");
  mod.kernel("pf", {f32[rows][cols], f32[rows]}, [&](Tensor a, Tensor out) {
    attrs.cuda.grid_dim = rows;
    attrs.cuda.block_dim = 32;
    auto acc = register_tensor(f32[1], "acc");
    Var r = blockIdx.x, t = threadIdx.x;
    if_(t < cols / 32, [&] { prefetch_l2(a[r][t * 32]); });
    grid_dependency_wait();
    acc[0] = 0.0f;
    for_(range(cols / 32), [&](Var j) { acc[0] = acc[0] + a[r][j * 32 + t]; });
    for (int off = 16; off > 0; off /= 2)
      acc[0] = acc[0] + shfl_xor_sync(0xffffffffu, acc[0], off);
    if_(t == 0, [&] { out[r] = acc[0]; });
  });
  auto cm = mod.build();
  const std::string &src = cm.source();
  CHECK(has(src, "asm volatile(\"prefetch.global.L2 [%0];\""));
  // One wait: the kernel's own, after the prefetch; none on the signature's line.
  CHECK(src.find("HIDET_GRID_DEPENDENCY_SYNC()") != std::string::npos);
  const auto first = src.find("HIDET_GRID_DEPENDENCY_SYNC();");
  REQUIRE(first != std::string::npos);
  CHECK(src.find("HIDET_GRID_DEPENDENCY_SYNC();", first + 1) == std::string::npos);
  CHECK(src.find("prefetch.global.L2") < first);
  CHECK_FALSE(has(src, ") { HIDET_GRID_DEPENDENCY_SYNC();"));
  auto in = small_ints(std::size_t(rows) * cols, -20, 20);
  auto a = hidet::asarray(in, {rows, cols}, hidet::f32), out = hidet::zeros({rows}, hidet::f32);
  cm(a, out);
  cm(a, out);
  auto got = out.to_vector<float>();
  for (int r = 0; r < rows; ++r) {
    double want = 0;
    for (int c = 0; c < cols; ++c) want += in[std::size_t(r * cols + c)];
    REQUIRE_MESSAGE(got[std::size_t(r)] == float(want), "row ", r, " on ", where(cm));
  }
}

TEST_CASE("grid_dependency_wait() misused: memory before it, twice, in a loop, in a device function; prefetch_l2 outside its tensor") {
  auto build = [](const std::function<void(Tensor, Tensor)> &body) {
    auto mod = script_module("gw");
    mod.kernel("gw", {f32[64], f32[64]}, [&](Tensor a, Tensor b) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 64;
      body(a, b);
    });
    return mod.build();
  };
  auto expect = [&](const std::function<void(Tensor, Tensor)> &body, const std::string &text) {
    try {
      build(body);
      FAIL("built; expected: ", text);
    } catch (const hidet::DSLError &e) {
      INFO(std::string(e.what()));
      CHECK(has(e.what(), text));
    }
  };
  expect([](Tensor a, Tensor b) {
    Var v = a[threadIdx.x];
    grid_dependency_wait();
    b[threadIdx.x] = v;
  }, "kernel 'gw' reads global tensor 'arg0' before its grid_dependency_wait()");
  expect([](Tensor a, Tensor b) {
    b[threadIdx.x] = 1.0f;
    grid_dependency_wait();
    b[threadIdx.x] = a[threadIdx.x];
  }, "kernel 'gw' writes global tensor 'arg1' before its grid_dependency_wait()");
  expect([](Tensor a, Tensor b) {
    auto s = shared_tensor(f32[64], "s");
    s[threadIdx.x] = 0.0f;
    grid_dependency_wait();
    b[threadIdx.x] = a[threadIdx.x] + s[threadIdx.x];
  }, "writes shared tensor 's' before its grid_dependency_wait()");
  expect([](Tensor a, Tensor b) {
    syncthreads();
    grid_dependency_wait();
    b[threadIdx.x] = a[threadIdx.x];
  }, "calls syncthreads before its grid_dependency_wait()");
  expect([](Tensor a, Tensor b) {
    grid_dependency_wait();
    grid_dependency_wait();
    b[threadIdx.x] = a[threadIdx.x];
  }, "calls grid_dependency_wait() 2 times");
  expect([](Tensor a, Tensor b) {
    for_(range(2), [&](Var) { grid_dependency_wait(); });
    b[threadIdx.x] = a[threadIdx.x];
  }, "calls grid_dependency_wait() inside a loop or a branch");
  try {
    auto mod = script_module("gwd");
    mod.device_function("helper", {}, [&] { grid_dependency_wait(); });
    mod.kernel("k", {f32[4]}, [&](Tensor a) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 4;
      a[threadIdx.x] = 0.0f;
    });
    mod.build();
    FAIL("built a device function that waits");
  } catch (const hidet::DSLError &e) {
    CHECK(has(e.what(), "grid_dependency_wait() in device function 'helper'"));
  }
  // Register tensors and index arithmetic may come first.
  auto ok = build([](Tensor a, Tensor b) {
    auto r = register_tensor(f32[1], "r");
    r[0] = 2.0f;
    Var i = threadIdx.x * 1;
    prefetch_l2(a[i]);
    grid_dependency_wait();
    b[i] = a[i] * r[0];
  });
  auto x = hidet::asarray(small_ints(64, -9, 9), {64}, hidet::f32), y = hidet::zeros({64}, hidet::f32);
  ok(x, y);
  CHECK(y.to_vector<float>() == [&] {
    auto v = x.to_vector<float>();
    for (auto &e : v) e *= 2;
    return v;
  }());
  // prefetch_l2 needs global memory; on the emulator an address past its tensor is caught.
  expect([](Tensor a, Tensor b) {
    auto r = register_tensor(f32[4], "r");
    prefetch_l2(r[0]);
    b[threadIdx.x] = a[threadIdx.x];
  }, "prefetch_l2: the address operand must be in global memory");
  auto past = build([](Tensor a, Tensor b) {
    prefetch_l2(a[threadIdx.x + 8]);
    grid_dependency_wait();
    b[threadIdx.x] = a[threadIdx.x];
  });
  if (past.emulated()) {
    try {
      past(x, y);
      hidet::synchronize();
      FAIL("a prefetch past its tensor ran on the emulator");
    } catch (const hidet::Error &e) {
      INFO(std::string(e.what()));
      CHECK(has(e.what(), "out-of-bounds address computation of global tensor 'arg0'"));
    }
  }
}

TEST_CASE("ldmatrix x1 / x2 / x4, plain and transposed: every lane's words") {
  for (int num : {1, 2, 4})
    for (bool trans : {false, true}) {
      auto mod = script_module("ldm");
      mod.kernel("ldm", {f16[32][8], f32[32][8]}, [&](Tensor a, Tensor out) {
        attrs.cuda.grid_dim = 1;
        attrs.cuda.block_dim = 32;
        auto s = shared_tensor(f16[32][8], "s");
        auto r = register_tensor(f16[8], "r");
        Var l = threadIdx.x;
        for (int j = 0; j < 8; ++j) s[l][j] = a[l][j];
        for (int j = 0; j < 8; ++j) r[j] = 0.0f;
        syncthreads();
        ldmatrix(r, s[l][0], num, trans); // lane l addresses row l % 8 of matrix l / 8
        for (int j = 0; j < 8; ++j) out[l][j] = r[j];
      });
      auto cm = mod.build();
      std::vector<double> in(256);
      for (int i = 0; i < 256; ++i) in[std::size_t(i)] = i; // matrix m, row r, col c: 64m + 8r + c
      auto a = hidet::asarray(in, {32, 8}, hidet::f16), o = hidet::zeros({32, 8}, hidet::f32);
      cm(a, o);
      auto out = o.to_vector<float>();
      for (int l = 0; l < 32; ++l)
        for (int m = 0; m < 4; ++m)
          for (int h = 0; h < 2; ++h) {
            int g = l / 4, q = 2 * (l % 4) + h;
            int want = m >= num ? 0 : trans ? 64 * m + 8 * q + g : 64 * m + 8 * g + q;
            REQUIRE_MESSAGE(out[std::size_t(l * 8 + 2 * m + h)] == float(want), "x", num, trans ? ".trans" : "",
                            " lane ", l, " word ", m, " half ", h, " on ", where(cm));
          }
    }
}

TEST_CASE("stmatrix x1 / x2 / x4, plain and transposed: the inverse of ldmatrix") {
  if (!hidet::runtime::cuda_emulated() && hidet::runtime::device_info(0).arch() < std::string("sm_90")) {
    MESSAGE("stmatrix needs sm_90; this GPU is ", hidet::runtime::device_info(0).arch(), ": not run");
    return;
  }
  for (int num : {1, 2, 4})
    for (bool trans : {false, true}) {
      auto mod = script_module("stm");
      mod.kernel("stm", {f32[32][8]}, [&](Tensor out) {
        attrs.cuda.grid_dim = 1;
        attrs.cuda.block_dim = 32;
        auto s = shared_tensor(f16[32][8], "s");
        auto r = register_tensor(f16[8], "r");
        Var l = threadIdx.x;
        for (int j = 0; j < 8; ++j) s[l][j] = -1.0f;
        // word m of lane l: elements (l / 4, 2 (l % 4) + h) of matrix m, valued 64 m + 8 row + col
        for (int m = 0; m < 4; ++m)
          for (int h = 0; h < 2; ++h) r[2 * m + h] = cast(64 * m + 8 * (l / 4) + 2 * (l % 4) + h, f32);
        syncwarp();
        stmatrix(s[l][0], r, num, trans); // lane l addresses row l % 8 of matrix l / 8
        syncwarp();
        for (int j = 0; j < 8; ++j) out[l][j] = s[l][j];
      });
      auto cm = mod.build();
      auto o = hidet::zeros({32, 8}, hidet::f32);
      cm(o);
      auto out = o.to_vector<float>();
      for (int m = 0; m < 4; ++m)
        for (int row = 0; row < 8; ++row)
          for (int col = 0; col < 8; ++col) {
            int want = m >= num ? -1 : trans ? 64 * m + 8 * col + row : 64 * m + 8 * row + col;
            REQUIRE_MESSAGE(out[std::size_t((8 * m + row) * 8 + col)] == float(want), "x", num,
                            trans ? ".trans" : "", " matrix ", m, " row ", row, " col ", col, " on ", where(cm));
          }
    }
}

TEST_CASE("stmatrix: bad operands are DSL errors") {
  auto bad = [&](auto body) {
    auto mod = script_module("stm_bad");
    mod.kernel("stm_bad", {f32[1]}, [&](Tensor) {
      attrs.cuda.block_dim = 32;
      body();
    });
  };
  CHECK_THROWS_WITH_AS(bad([] {
                         auto s = shared_tensor(f16[8][8], "s");
                         auto r = register_tensor(f16[8], "r");
                         stmatrix(s[0][0], r, 3);
                       }),
                       doctest::Contains("num = 3"), hidet::DSLError);
  CHECK_THROWS_WITH_AS(bad([] {
                         auto s = shared_tensor(f16[8][8], "s");
                         auto r = register_tensor(f16[4], "r");
                         stmatrix(s[0][0], r, 4);
                       }),
                       doctest::Contains("stmatrix"), hidet::DSLError);
  CHECK_THROWS_WITH_AS(bad([] {
                         auto g = register_tensor(f16[8], "g");
                         auto r = register_tensor(f16[8], "r");
                         stmatrix(g[0], r, 4);
                       }),
                       doctest::Contains("row address"), hidet::DSLError);
}

namespace {
/// PTX ISA fragment layouts (row, col) of element i of lane l, for l an int or an Expr.
template <class L> auto frag_a(int k, L l, int i) {
  auto g = l / 4, q = l % 4;
  if (k == 16) return std::make_pair(g + 8 * ((i >> 1) & 1), q * 2 + ((i & 1) + 8 * (i >> 2)));
  if (k == 8) return std::make_pair(g + 8 * (i & 1), q * 1 + 4 * (i >> 1));
  return std::make_pair(g + 8 * ((i >> 2) & 1), q * 4 + ((i & 3) + 16 * (i >> 3)));
}
template <class L> auto frag_b(int k, L l, int i) {
  auto g = l / 4, q = l % 4;
  if (k == 16) return std::make_pair(q * 2 + ((i & 1) + 8 * (i >> 1)), g);
  if (k == 8) return std::make_pair(q * 1 + 4 * i, g);
  return std::make_pair(q * 4 + ((i & 3) + 16 * (i >> 2)), g);
}
template <class L> auto frag_c(L l, int i) {
  auto g = l / 4, q = l % 4;
  return std::make_pair(g + 8 * (i >> 1), q * 2 + (i & 1));
}

/// One warp: loads A (16 x k), B (k x 8), C (16 x 8) into fragments, mma, stores D; checks D.
void check_mma(MmaShape shape, hidet::DataType ab, hidet::DataType acc) {
  int k = shape.k;
  auto fr = mma_fragments(shape);
  auto mod = script_module("mma");
  mod.kernel("mma", {hidet::lang::TensorSpec(ab, {})[16][k], hidet::lang::TensorSpec(ab, {})[k][8],
                     hidet::lang::TensorSpec(acc, {})[16][8], f32[16][8]},
             [&](Tensor a, Tensor b, Tensor c, Tensor d) {
               attrs.cuda.grid_dim = 1;
               attrs.cuda.block_dim = 32;
               auto af = register_tensor(hidet::lang::TensorSpec(ab, {})[fr.a], "af");
               auto bf = register_tensor(hidet::lang::TensorSpec(ab, {})[fr.b], "bf");
               auto cf = register_tensor(hidet::lang::TensorSpec(acc, {})[4], "cf");
               Var l = threadIdx.x;
               Expr le = l;
               for (int i = 0; i < fr.a; ++i) {
                 auto [r, col] = frag_a(k, le, i);
                 af[i] = a[r][col];
               }
               for (int i = 0; i < fr.b; ++i) {
                 auto [r, col] = frag_b(k, le, i);
                 bf[i] = b[r][col];
               }
               for (int i = 0; i < 4; ++i) {
                 auto [r, col] = frag_c(le, i);
                 cf[i] = c[r][col];
               }
               mma_sync(cf, af, bf, cf, shape);
               for (int i = 0; i < 4; ++i) {
                 auto [r, col] = frag_c(le, i);
                 d[r][col] = cf[i];
               }
             });
  auto cm = mod.build();
  int lo = ab.is_integer() ? -100 : -3, hi = ab.is_integer() ? 100 : 3;
  auto va = small_ints(std::size_t(16 * k), lo, hi), vb = small_ints(std::size_t(k * 8), lo, hi);
  auto vc = small_ints(16 * 8, -8, 8);
  auto a = hidet::asarray(va, {16, k}, ab), b = hidet::asarray(vb, {k, 8}, ab);
  auto c = hidet::asarray(vc, {16, 8}, acc), d = hidet::zeros({16, 8}, hidet::f32);
  cm(a, b, c, d);
  auto out = d.to_vector<float>();
  double max_abs = 0;
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 8; ++col) {
      double want = vc[std::size_t(r * 8 + col)];
      for (int j = 0; j < k; ++j) want += va[std::size_t(r * k + j)] * vb[std::size_t(j * 8 + col)];
      max_abs = std::max(max_abs, std::abs(want));
      REQUIRE_MESSAGE(double(out[std::size_t(r * 8 + col)]) == want, "m16n8k", k, " ", ab, "->", acc, " D[", r, "][",
                      col, "] (lane ", (r % 8) * 4 + col / 2, ") on ", where(cm), ", seed 1234");
    }
  CHECK(max_abs > 0);
  CHECK(has(cm.source(), "mma.sync.aligned.m16n8k"));
}
} // namespace

TEST_CASE("mma.sync m16n8k16 f16 -> f32") { check_mma(mma_m16n8k16, hidet::f16, hidet::f32); }
TEST_CASE("mma.sync m16n8k16 bf16 -> f32") { check_mma(mma_m16n8k16, hidet::bf16, hidet::f32); }
TEST_CASE("mma.sync m16n8k16 f16 -> f16") { check_mma(mma_m16n8k16, hidet::f16, hidet::f16); }
TEST_CASE("mma.sync m16n8k8 tf32 -> f32") { check_mma(mma_m16n8k8, hidet::f32, hidet::f32); }
TEST_CASE("mma.sync m16n8k32 i8 -> i32") { check_mma(mma_m16n8k32, hidet::i8, hidet::i32); }

TEST_CASE("ldmatrix x4 feeds mma.sync: the A fragment from shared memory") {
  // A (16x16 f16) in shared memory; lane l gives row (l % 16), column 8 * (l / 16): the standard
  // addressing that makes ldmatrix.x4 produce the m16n8k16 A fragment.
  auto mod = script_module("ldm_mma");
  mod.kernel("ldm_mma", {f16[16][16], f16[16][8], f32[16][8]}, [&](Tensor a, Tensor b, Tensor d) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    auto s = shared_tensor(f16[16][16], "s");
    auto af = register_tensor(f16[8], "af");
    auto bf = register_tensor(f16[4], "bf");
    auto cf = register_tensor(f32[4], "cf");
    Var l = threadIdx.x;
    Expr le = l;
    for (int j = 0; j < 8; ++j) s[l / 2][l % 2 * 8 + j] = a[l / 2][l % 2 * 8 + j];
    syncthreads();
    ldmatrix(af, s[l % 16][l / 16 * 8], 4);
    for (int i = 0; i < 4; ++i) {
      auto [r, col] = frag_b(16, le, i);
      bf[i] = b[r][col];
      cf[i] = 0.0f;
    }
    mma_sync(cf, af, bf, cf);
    for (int i = 0; i < 4; ++i) {
      auto [r, col] = frag_c(le, i);
      d[r][col] = cf[i];
    }
  });
  auto cm = mod.build();
  auto va = small_ints(256, -3, 3), vb = small_ints(128, -3, 3);
  auto a = hidet::asarray(va, {16, 16}, hidet::f16), b = hidet::asarray(vb, {16, 8}, hidet::f16);
  auto d = hidet::zeros({16, 8}, hidet::f32);
  cm(a, b, d);
  auto out = d.to_vector<float>();
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 8; ++col) {
      double want = 0;
      for (int j = 0; j < 16; ++j) want += va[std::size_t(r * 16 + j)] * vb[std::size_t(j * 8 + col)];
      REQUIRE_MESSAGE(double(out[std::size_t(r * 8 + col)]) == want, "D[", r, "][", col, "] on ", where(cm));
    }
}

TEST_CASE("half2: pack, unpack, add, sub, mul, fma in f16 and bf16") {
  for (auto dt : {hidet::DataType(hidet::f16), hidet::DataType(hidet::bf16)}) {
    auto mod = script_module("h2");
    mod.kernel("h2", {f32[32][3], f32[32][10]}, [&](Tensor in, Tensor out) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 32;
      Var t = threadIdx.x;
      Var x = in[t][0], y = in[t][1], z = in[t][2];
      Var p = half2_pack(x, y, dt), q = half2_pack(z, x, dt);
      Expr r[] = {half2_add(p, q, dt), half2_sub(p, q, dt), half2_mul(p, q, dt), half2_fma(p, q, p, dt)};
      out[t][0] = half2_unpack(p, 0, dt);
      out[t][1] = half2_unpack(p, 1, dt);
      for (int i = 0; i < 4; ++i) {
        Var v = r[i];
        out[t][2 + 2 * i] = half2_unpack(v, 0, dt);
        out[t][3 + 2 * i] = half2_unpack(v, 1, dt);
      }
    });
    auto cm = mod.build();
    std::vector<double> in(96);
    std::uniform_int_distribution<int> d(-40, 40);
    for (auto &v : in) v = d(rng()) * 0.125 + 0.0625; // x.0625 steps: some products round
    auto ti = hidet::asarray(in, {32, 3}, hidet::f32), to = hidet::zeros({32, 10}, hidet::f32);
    cm(ti, to);
    auto out = to.to_vector<float>();
    auto rnd = [&](double v) {
      float f = float(v);
      return dt == hidet::DataType(hidet::f16) ? hidet::half_bits_to_float(hidet::float_to_half_bits(f))
                                               : hidet::bf16_bits_to_float(hidet::float_to_bf16_bits(f));
    };
    for (int t = 0; t < 32; ++t) {
      double x = rnd(in[std::size_t(t * 3)]), y = rnd(in[std::size_t(t * 3 + 1)]), z = rnd(in[std::size_t(t * 3 + 2)]);
      double want[10] = {x, y, rnd(x + z), rnd(y + x), rnd(x - z), rnd(y - x), rnd(x * z), rnd(y * x),
                         rnd(x * z + x), rnd(y * x + y)};
      for (int j = 0; j < 10; ++j)
        REQUIRE_MESSAGE(double(out[std::size_t(t * 10 + j)]) == want[j], dt, " thread ", t, " output ", j, " on ",
                        where(cm));
    }
  }
}

namespace {
/// A kernel that uses every Hopper primitive (compile check; it is not meant to be run).
hidet::lang::ScriptModule hopper_module() {
  auto mod = script_module("hopper");
  mod.kernel("hopper_all", {u8[128], f32[128][8]}, [&](Tensor tmap, Tensor out) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 128;
    auto bar = shared_tensor(u64[1], "bar");
    auto tile = shared_tensor(f16[64][64], "tile");
    auto acc = register_tensor(f32[32], "acc");
    setmaxnreg(240, true);
    if_(threadIdx.x == 0, [&] {
      mbarrier_init(bar, 1);
      fence_mbarrier_init();
    });
    syncthreads();
    if_(threadIdx.x == 0, [&] {
      mbarrier_arrive_expect_tx(bar, 64 * 64 * 2);
      tma_load(tile, tmap, bar, {0, 0});
      tma_load_multicast(tile, tmap, bar, {0, 0}, 3);
    });
    mbarrier_wait(bar, 0);
    mbarrier_arrive(bar);
    mbarrier_arrive_cluster(bar, 1);
    cp_async_mbarrier_arrive(bar);
    Var desc = make_wgmma_desc(tile, 16, 1024, Swizzle::B128);
    wgmma_fence();
    wgmma(acc, desc, desc, 64, hidet::f16, 0);
    auto frag = register_tensor(u32[4], "frag");
    for (int i = 0; i < 4; ++i) frag[i] = half2_pack(acc[2 * i], acc[2 * i + 1], hidet::bf16);
    wgmma_rs(acc, frag, desc, 64, hidet::bf16, 1, true);
    wgmma_commit_group();
    wgmma_wait_group(0);
    fence_proxy_async();
    if_(threadIdx.x == 0, [&] {
      tma_store(tmap, tile, {0, 0});
      tma_commit_group();
      tma_wait_group(0);
    });
    cluster_sync();
    out[threadIdx.x][0] = acc[0] + cluster_ctarank() + cluster_nctarank();
  });
  return mod;
}
} // namespace

TEST_CASE("Hopper primitives compile for sm_90a; the emulator rejects them") {
  hidet::BuildOptions o;
  o.arch = "sm_90a";
  auto cm = hopper_module().build(o);
  for (const char *ptx : {"setmaxnreg.inc.sync.aligned.u32 240", "mbarrier.init.shared::cta.b64",
                          "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx",
                          "cp.async.mbarrier.arrive.noinc.shared::cta.b64", "cp.async.bulk.tensor.2d.shared::cluster",
                          "mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;",
                          "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64 _, [remote]",
                          "cp.async.bulk.tensor.2d.global.shared::cta", "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
                          "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                          "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "
                          "%30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;",
                          "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group.sync.aligned 0", "fence.proxy.async",
                          "barrier.cluster.arrive", "%%cluster_ctarank"})
    CHECK_MESSAGE(has(cm.source(), ptx), ptx);
  if (cm.emulated()) {
    if (hidet::detail::nvrtc_available()) CHECK(!cm.binary().cubin.empty()); // NVRTC compiled it for sm_90a
    auto tmap = hidet::zeros({128}, hidet::u8), out = hidet::zeros({128, 8}, hidet::f32);
    try {
      cm(tmap, out);
      FAIL("the emulator ran a Hopper kernel");
    } catch (const hidet::EmulatorError &e) {
      std::string m = e.what();
      CHECK(has(m, "setmaxnreg"));
      CHECK(has(m, "hopper_all"));
      CHECK(has(m, "run this kernel on a GPU"));
      CHECK(has(m, "test_primitives.cpp"));
    }
  }
}

TEST_CASE("bad input: mma fragment shape and dtype, wgmma for an older arch") {
  auto kernel_with = [](auto body) {
    auto mod = script_module("bad");
    mod.kernel("bad", {f32[4]}, [&](Tensor) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 32;
      body();
    });
  };
  int line = 0;
  try {
    kernel_with([&] {
      auto a = register_tensor(f16[4], "a_frag"), b = register_tensor(f16[4], "b"), c = register_tensor(f32[4], "c");
      line = __LINE__ + 1;
      mma_sync(c, a, b, c, mma_m16n8k16);
    });
    FAIL("no error");
  } catch (const hidet::DSLError &e) {
    std::string m = e.what();
    CHECK(has(m, "a_frag"));
    CHECK(has(m, "has 4 f16 elements"));
    CHECK(has(m, "needs 8 f16 per lane"));
    CHECK(e.loc().line == std::uint32_t(line));
  }
  try {
    kernel_with([&] {
      auto a = register_tensor(f32[8], "a"), b = register_tensor(f32[4], "b"), c = register_tensor(f32[4], "c");
      mma_sync(c, a, b, c, mma_m16n8k16);
    });
    FAIL("no error");
  } catch (const hidet::DSLError &e) {
    CHECK(has(e.what(), "inputs are f32; m16n8k16 takes f16 or bf16"));
    CHECK(has(e.what(), "test_primitives.cpp"));
  }
  try {
    kernel_with([&] {
      auto a = register_tensor(i8[16], "a"), b = register_tensor(i8[8], "b"), c = register_tensor(f32[4], "c");
      mma_sync(c, a, b, c, mma_m16n8k32);
    });
    FAIL("no error");
  } catch (const hidet::DSLError &e) {
    CHECK(has(e.what(), "accumulators are f32; i8 accumulates in i32"));
  }
  // wgmma in a module built for sm_80 (and for sm_90 without the 'a')
  auto mod = script_module("old_arch");
  int wline = 0;
  mod.kernel("needs_hopper", {f32[128]}, [&](Tensor o) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 128;
    auto acc = register_tensor(f32[4], "acc");
    wgmma_fence();
    wline = __LINE__ + 1;
    wgmma(acc, 0ull, 0ull, 8, hidet::bf16);
    o[threadIdx.x] = acc[0];
  });
  for (const char *arch : {"sm_80", "sm_90"}) {
    hidet::BuildOptions o;
    o.arch = arch;
    try {
      mod.build(o);
      FAIL("built wgmma for ", arch);
    } catch (const hidet::DSLError &e) {
      std::string m = e.what();
      CHECK(has(m, "wgmma_fence in kernel 'needs_hopper' needs sm_90a"));
      CHECK(has(m, std::string("built for ") + arch));
      CHECK(has(m, "test_primitives.cpp"));
      CHECK(e.loc().line == std::uint32_t(wline - 2));
    }
  }
}

namespace {
/// A kernel that TMA-loads the 64x32 f16 box at a[64:128][32:64] into shared memory and copies it
/// to `out`; the tensor map is a u8[128] tensor in global memory or a by-value parameter.
hidet::lang::ScriptModule tma_module(bool by_value) {
  auto mod = script_module("tma");
  hidet::lang::ParamSpec map_spec = by_value ? tensor_map_param() : hidet::lang::ParamSpec(u8[128]);
  mod.kernel("tma", {map_spec, f16[128][64], f32[64][32]}, [&](Tensor tmap, Tensor, Tensor out) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 128;
    // TMA needs an aligned destination: dynamic shared memory (1024-byte aligned) at offset 0;
    // the mbarrier after the tile.
    attrs.cuda.dynamic_smem_bytes = 64 * 32 * 2 + 8;
    auto tile = dynamic_shared_tensor(f16[64][32], 0, "tile");
    auto bar = dynamic_shared_tensor(u64[1], 64 * 32 * 2, "bar");
    if_(threadIdx.x == 0, [&] {
      mbarrier_init(bar, 1);
      fence_mbarrier_init();
    });
    syncthreads();
    if_(threadIdx.x == 0, [&] {
      mbarrier_arrive_expect_tx(bar, 64 * 32 * 2);
      tma_load(tile, tmap, bar, {32, 64}); // column 32, row 64: the box at a[64:128][32:64]
    });
    mbarrier_wait(bar, 0);
    for (int j = 0; j < 16; ++j) {
      Var e = threadIdx.x * 16 + j;
      out[e / 32][e % 32] = tile[e / 32][e % 32];
    }
  });
  return mod;
}
} // namespace

TEST_CASE("TMA: a by-value tensor map is a const __grid_constant__ parameter; misuse is reported") {
  hidet::BuildOptions o;
  o.arch = "sm_90a";
  auto cm = tma_module(true).build(o);
  CHECK(has(cm.source(), "const __grid_constant__ hidet_tensor_map arg0_by_value"));
  CHECK(has(cm.source(), "const uint8_t *arg0 = (const uint8_t *)&arg0_by_value;"));
  CHECK(has(cm.source(), "struct __align__(64) hidet_tensor_map { uint8_t bytes[128]; };"));
  // a by-value tensor map is read-only
  auto mod = script_module("bad");
  int line = 0;
  try {
    mod.kernel("bad", {tensor_map_param(), f32[4]}, [&](Tensor tmap, Tensor) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 32;
      line = __LINE__ + 1;
      tmap[0] = 1;
    });
    FAIL("stored to a tensor map");
  } catch (const hidet::DSLError &e) {
    CHECK(has(e.what(), "is a by-value kernel parameter (a tensor map) and is read-only"));
    CHECK(e.loc().line == std::uint32_t(line));
  }
  // passing a tensor where the kernel takes a tensor map (and the reverse) names the parameter
  auto a = hidet::zeros({128, 64}, hidet::f16), out = hidet::zeros({64, 32}, hidet::f32);
  try {
    cm(a, a, out);
    FAIL("launched with a tensor for a tensor map");
  } catch (const hidet::ValueError &e) {
    CHECK(has(e.what(), "kernel 'tma' argument 0"));
    CHECK(has(e.what(), "expected a hidet::TensorMap"));
  }
}

TEST_CASE("TMA: a 64x32 f16 box through an mbarrier into shared memory (GPU only)") {
  if (hidet::runtime::cuda_emulated()) {
    MESSAGE("SKIP: TMA needs a Hopper GPU");
    return;
  }
  for (bool by_value : {false, true}) {
    hidet::BuildOptions o;
    o.arch = "sm_90a";
    auto cm = tma_module(by_value).build(o);
    auto va = small_ints(128 * 64, -100, 100);
    auto a = hidet::asarray(va, {128, 64}, hidet::f16), out = hidet::zeros({64, 32}, hidet::f32);
    auto tmap = hidet::TensorMap::tiled(a, {64, 32});
    if (by_value) cm(tmap, a, out);
    else cm(tmap.to_device(), a, out);
    auto h = out.to_vector<float>();
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 32; ++c)
        REQUIRE_MESSAGE(double(h[std::size_t(r * 32 + c)]) == va[std::size_t((64 + r) * 64 + 32 + c)], "(", r, ", ", c,
                        ") by value: ", by_value);
  }
}

TEST_CASE("thread-block clusters: cluster_dim compiles to __cluster_dims__; ranks and remote arrivals on the GPU") {
  auto mod = script_module("clusters");
  mod.kernel("cluster_ranks", {i32[8][3]}, [&](Tensor out) {
    attrs.cuda.grid_dim = 8;
    attrs.cuda.block_dim = 32;
    attrs.cuda.cluster_dim = {2, 1, 1};
    // Each block's barrier expects one arrival from each block of the cluster (mapa + remote
    // mbarrier.arrive): its phase 0 completes only if the other block's arrival reached it.
    auto bar = shared_tensor(u64[1], "bar");
    if_(threadIdx.x == 0, [&] {
      mbarrier_init(bar, 2);
      fence_mbarrier_init();
    });
    cluster_sync();
    if_(threadIdx.x == 0, [&] {
      mbarrier_arrive_cluster(bar, 0);
      mbarrier_arrive_cluster(bar, 1);
      mbarrier_wait(bar, 0);
      out[blockIdx.x][0] = cluster_ctarank();
      out[blockIdx.x][1] = cluster_nctarank();
      out[blockIdx.x][2] = 7;
    });
    cluster_sync(); // no block exits while the other may still arrive on its barrier
  });
  hidet::BuildOptions o;
  o.arch = "sm_90a";
  auto cm = mod.build(o);
  CHECK(has(cm.source(), "__cluster_dims__(2, 1, 1)"));
  CHECK(has(hidet::ir::to_string(cm.lowered_ir()), "cluster_dim=(2, 1, 1)"));
  // Too many blocks per cluster, and clusters for an older arch.
  try {
    auto bad = script_module("bad");
    bad.kernel("big_cluster", {i32[8]}, [&](Tensor) {
      attrs.cuda.grid_dim = 16;
      attrs.cuda.block_dim = 32;
      attrs.cuda.cluster_dim = {4, 4};
    });
    FAIL("a 16-block cluster was accepted");
  } catch (const hidet::DSLError &e) {
    CHECK(has(e.what(), "cluster_dim has 16 blocks; portable clusters have at most 8"));
  }
  hidet::BuildOptions old;
  old.arch = "sm_80";
  try {
    mod.build(old);
    FAIL("built a cluster kernel for sm_80");
  } catch (const hidet::DSLError &e) {
    CHECK(has(e.what(), "kernel 'cluster_ranks' has cluster_dim (2, 1, 1); thread-block clusters need sm_90"));
  }
  if (hidet::runtime::cuda_emulated()) {
    MESSAGE("SKIP (run part): clusters need a Hopper GPU");
    return;
  }
  auto out = hidet::full({8, 3}, -1, hidet::i32);
  cm(out);
  auto h = out.to_vector<std::int32_t>();
  for (int b = 0; b < 8; ++b) {
    CHECK_MESSAGE(h[std::size_t(b * 3)] == b % 2, "block ", b);
    CHECK_MESSAGE(h[std::size_t(b * 3 + 1)] == 2, "block ", b);
    CHECK_MESSAGE(h[std::size_t(b * 3 + 2)] == 7, "block ", b);
  }
}
