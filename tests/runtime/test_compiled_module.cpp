// CompiledModule end to end: DSL kernels lowered, compiled with NVRTC and run on the 'cuda'
// device (the GPU when there is one, otherwise the CPU emulator), compared with host
// references; launch-argument checks; build errors.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <random>
#include <thread>

#include "hidet/backend/compile_cache.hpp"
#include "hidet/hidet.hpp"

using namespace hidet::lang;
using hidet::asarray;
using hidet::CompiledModule;
using hidet::Error;
using hidet::float16;
using hidet::full;
using hidet::empty;
using hidet::zeros;
using hidet::ones;
namespace backend = hidet::backend;
namespace runtime = hidet::runtime;

namespace {

std::uint64_t fresh_seed() {
  static std::random_device rd;
  std::uint64_t s = (std::uint64_t(rd()) << 32) ^ rd();
  MESSAGE("seed " << s);
  return s;
}

std::vector<float> random_floats(std::size_t n, std::mt19937_64 &rng) {
  std::uniform_int_distribution<int> d(-8, 8); // small integers: exact f32 products and sums
  std::vector<float> v(n);
  for (auto &x : v) x = float(d(rng)) / 4.0f;
  return v;
}

template <class F> void expect_error(F &&f, const std::string &text) {
  try {
    f();
    FAIL("expected an error containing: " << text);
  } catch (const Error &e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(msg.find(text) != std::string::npos);
  }
}

CompiledModule naive_matmul(int m, int n, int k) {
  auto mod = script_module("naive_matmul");
  mod.kernel("matmul", {f32[m][k], f32[k][n], f32[m][n]}, [&](Tensor a, Tensor b, Tensor c) {
    attrs.cuda.grid_dim = {ceil_div(m, 16), ceil_div(n, 16)};
    attrs.cuda.block_dim = {16, 16};
    Expr i = threadIdx.x + blockIdx.x * blockDim.x;
    Expr j = threadIdx.y + blockIdx.y * blockDim.y;
    if_(i < m && j < n, [&] {
      Var acc = 0.0f;
      for_(range(k), [&](Var kk) { acc += a[i][kk] * b[kk][j]; });
      c[i][j] = acc;
    });
  });
  return mod.build();
}

} // namespace

TEST_CASE("naive matmul with partial tiles matches the host reference exactly") {
  std::mt19937_64 rng(fresh_seed());
  const int m = 37, n = 45, k = 29;
  auto cm = naive_matmul(m, n, k);
  CHECK(cm.source().find("extern \"C\" __global__") != std::string::npos);
  auto ha = random_floats(m * k, rng), hb = random_floats(k * n, rng);
  auto a = asarray(ha, {m, k}, "cuda"), b = asarray(hb, {k, n}, "cuda");
  auto c = full({m, n}, std::nanf(""), f32, "cuda"); // poisoned: every element must be written
  cm(a, b, c);
  auto hc = c.to_vector<float>();
  bool nonzero = false;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int kk = 0; kk < k; ++kk) ref += double(ha[i * k + kk]) * hb[kk * n + j];
      nonzero |= ref != 0;
      if (hc[i * n + j] != ref) {
        FAIL("c[" << i << ", " << j << "] = " << hc[i * n + j] << ", expected " << ref);
      }
    }
  CHECK(nonzero);
}

TEST_CASE("symbolic dims: one kernel serves every size") {
  auto n = symbol("n");
  auto mod = script_module();
  mod.kernel("axpb", {f32[n], f32[n], f32}, [&](Tensor x, Tensor y, Var alpha) {
    attrs.cuda.grid_dim = ceil_div(n, 64);
    attrs.cuda.block_dim = 64;
    Expr i = blockIdx.x * 64 + threadIdx.x;
    if_(i < n, [&] { y[i] = alpha * x[i] + 1.0f; });
  });
  auto cm = mod.build();
  for (int len : {1, 63, 64, 65, 300}) {
    std::vector<float> hx(len);
    for (int i = 0; i < len; ++i) hx[i] = float(i % 7) - 3;
    auto x = asarray(hx, {len}, "cuda");
    auto y = full({len}, -999.0, f32, "cuda");
    cm(x, y, 2.5f);
    auto hy = y.to_vector<float>();
    for (int i = 0; i < len; ++i) REQUIRE(hy[i] == 2.5f * hx[i] + 1.0f);
  }
}

TEST_CASE("chained kernels see each other's writes (programmatic dependent launch on Hopper)") {
  // Each step reads elements that other blocks of the step before wrote (a scatter by a stride
  // coprime to n) and overwrites the buffer that step read: a kernel that started before the one
  // before it had completed would read stale values or clobber its input. On sm_90 and later
  // every launch here is a programmatic dependent one, which is only correct because each kernel
  // waits (griddepcontrol.wait) before touching memory.
  const bool gpu = !runtime::cuda_emulated();
  const int n = gpu ? 1 << 20 : 3000, steps = gpu ? 64 : 5, stride = 1021; // i * stride fits in int32
  auto mod = script_module("pdl_chain");
  mod.kernel("step", {f32[n], f32[n]}, [&](Tensor x, Tensor y) {
    attrs.cuda.grid_dim = ceil_div(n, 256);
    attrs.cuda.block_dim = 256;
    Expr i = blockIdx.x * 256 + threadIdx.x;
    if_(i < n, [&] {
      Var v = x[(i * stride) % n];
      for_(range(32), [&](Var) { v = v * 1.0f + 0.0f; }); // some work before the store
      y[i] = v + 1.0f;
    });
  });
  auto cm = mod.build();
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = float(i % 1000);
  // Every fourth result goes through a device-to-device copy (clone): a kernel after a copy must
  // see the copy's bytes, and a copy after a kernel the kernel's.
  auto cur = asarray(h, {n}, "cuda"), other = full({n}, -1.0, f32, "cuda");
  for (int s = 0; s < steps; ++s) {
    cm(cur, other);
    std::swap(cur, other);
    if (s % 4 == 3) cur = cur.clone();
  }
  auto got = cur.to_vector<float>();
  // After `steps` scatters, element i holds h[i * stride^steps mod n] + steps.
  std::int64_t mul = 1;
  for (int s = 0; s < steps; ++s) mul = mul * stride % n;
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += got[std::size_t(i)] != h[std::size_t(std::int64_t(i) * mul % n)] + float(steps);
  CHECK(bad == 0);
}

TEST_CASE("shared-memory transpose with barriers") {
  const int rows = 70, cols = 45;
  auto mod = script_module();
  mod.kernel("transpose", {i32[rows][cols], i32[cols][rows]}, [&](Tensor a, Tensor b) {
    attrs.cuda.grid_dim = {ceil_div(cols, 16), ceil_div(rows, 16)};
    attrs.cuda.block_dim = {16, 16};
    auto tile = shared_tensor(i32[16][17], "tile");
    Expr r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if_(r < rows && c < cols, [&] { tile[threadIdx.y][threadIdx.x] = a[r][c]; });
    syncthreads();
    Expr orow = blockIdx.x * 16 + threadIdx.y, ocol = blockIdx.y * 16 + threadIdx.x;
    if_(orow < cols && ocol < rows, [&] { b[orow][ocol] = tile[threadIdx.x][threadIdx.y]; });
  });
  auto cm = mod.build();
  std::vector<int32_t> ha(rows * cols);
  for (int i = 0; i < rows * cols; ++i) ha[i] = i * 7 + 1;
  auto a = asarray(ha, {rows, cols}, "cuda");
  auto b = full({cols, rows}, -1, i32, "cuda");
  cm(a, b);
  auto hb = b.to_vector<int32_t>();
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) REQUIRE(hb[j * rows + i] == ha[i * cols + j]);
}

TEST_CASE("warp shuffles, atomics, dynamic shared memory and device functions") {
  const int rows = 13, cols = 100;
  auto n = symbol("n");
  auto mod = script_module();
  auto square = mod.device_function("square", f32, {f32}, [&](Var x) { return_(x * x); });
  mod.kernel("row_sum_sq", {f32[n][cols], f32[n], i32[8]}, [&](Tensor x, Tensor out, Tensor hist) {
    attrs.cuda.grid_dim = n;
    attrs.cuda.block_dim = 32;
    attrs.cuda.dynamic_smem_bytes = cols * 4;
    auto buf = dynamic_shared_tensor(f32[cols]);
    Expr row = blockIdx.x, lane = threadIdx.x;
    for_(range(lane, cols, 32), [&](Var j) { buf[j] = x[row][j]; });
    syncthreads();
    Var acc = 0.0f;
    for_(range(lane, cols, 32), [&](Var j) { acc += square(buf[j]); });
    for_(range(5), [&](Var s) { acc += shfl_xor_sync(0xffffffffu, acc, Expr(1) << (4 - s)); });
    if_(lane == 0, [&] {
      out[row] = acc;
      atomic_add(hist[row % 8], 1);
    });
  });
  auto cm = mod.build();
  std::mt19937_64 rng(fresh_seed());
  auto hx = random_floats(rows * cols, rng);
  auto x = asarray(hx, {rows, cols}, "cuda");
  auto out = empty({rows}, f32, "cuda");
  auto hist = zeros({8}, i32, "cuda");
  cm(x, out, hist);
  auto ho = out.to_vector<float>();
  auto hh = hist.to_vector<int32_t>();
  for (int r = 0; r < rows; ++r) {
    double ref = 0;
    for (int j = 0; j < cols; ++j) ref += double(hx[r * cols + j]) * hx[r * cols + j];
    CHECK(ho[r] == doctest::Approx(ref).epsilon(1e-6));
  }
  for (int b = 0; b < 8; ++b) CHECK(hh[b] == (rows / 8 + (b < rows % 8 ? 1 : 0)));
}

TEST_CASE("f16 arithmetic rounds like the hardware") {
  const int len = 256;
  auto mod = script_module();
  mod.kernel("f16_axpb", {f16[len], f16[len]}, [&](Tensor x, Tensor y) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = len;
    y[threadIdx.x] = x[threadIdx.x] * cast(1.5f, f16) + cast(0.1f, f16);
  });
  auto cm = mod.build();
  std::vector<float16> hx(len);
  for (int i = 0; i < len; ++i) hx[i] = float16(float(i) * 0.37f - 40.0f);
  auto x = asarray(hx, {len}, "cuda");
  auto y = empty({len}, f16, "cuda");
  cm(x, y);
  auto hy = y.to_vector<float16>();
  for (int i = 0; i < len; ++i) {
    // x * 1.5 + 0.1 is contracted into one f16 fma (CUDA's -fmad=true): a single rounding.
    double exact = double(float(hx[i])) * double(float(float16(1.5f))) + double(float(float16(0.1f)));
    float16 ref{float(exact)};
    REQUIRE(hy[i].bits == ref.bits);
  }
}

TEST_CASE("launch arguments are checked and named") {
  auto cm = naive_matmul(4, 5, 6);
  auto a = zeros({4, 6}, f32, "cuda"), b = zeros({6, 5}, f32, "cuda"), c = zeros({4, 5}, f32, "cuda");
  expect_error([&] { cm(a, b); }, "takes 3 arguments");
  expect_error([&] { cm(a, b, zeros({4, 5}, f16, "cuda")); }, "argument 2 (arg2: f32[4, 5] global): expected dtype float32, got float16");
  expect_error([&] { cm(a, b, zeros({5, 4}, f32, "cuda")); }, "shape mismatch at dimension 0: expected 4");
  expect_error([&] { cm(a, b, zeros({20}, f32, "cuda")); }, "expected rank 2");
  expect_error([&] { cm(a, zeros({6, 5}, f32, "cpu"), c); }, "is on cpu");
  expect_error([&] { cm(a, b, 3); }, "expected a tensor, got a scalar");
  cm(a, b, c); // still usable
  expect_error([&] { cm["nope"]; }, "has no kernel named 'nope'");
  // A tensor on a GPU other than cuda:0: on a GPU hidet runs one GPU per process (the emulator's
  // several devices are exempt: its collectives run one emulated GPU per thread).
  if (hidet::cuda_device_count() < 2) {
    MESSAGE("one CUDA device: no tensor on cuda:1 to refuse");
  } else if (hidet::cuda_emulated()) {
    cm(a, b, zeros({4, 5}, f32, "cuda:1"));
  } else {
    expect_error(
        [&] {
          cm(a, b, zeros({4, 5}, f32, "cuda:1"));
        },
        "argument 2 (arg2: f32[4, 5] global): the tensor is on cuda:1; hidet runs its kernels on "
        "cuda:0, one "
        "GPU per process");
    cm(a, b, c); // still usable
  }
}

TEST_CASE("symbolic dims must agree across arguments; launch dims are checked") {
  auto n = symbol("n");
  auto mod = script_module();
  mod.kernel("copy", {f32[n], f32[n], i32}, [&](Tensor x, Tensor y, Var threads) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = threads;
    if_(threadIdx.x < n, [&] { y[threadIdx.x] = x[threadIdx.x]; });
  });
  auto cm = mod.build();
  auto x = zeros({8}, f32, "cuda");
  expect_error([&] { cm(x, zeros({9}, f32, "cuda"), 32); }, "shape mismatch at dimension 0: expected 8 (n)");
  expect_error([&] { cm(x, zeros({8}, f32, "cuda"), 2048); }, "2048 threads; CUDA allows at most 1024");
  expect_error([&] { cm(x, zeros({8}, f32, "cuda"), 0); }, "must be positive");
}

TEST_CASE("build errors: too much static shared memory, a failing NVRTC compile") {
  auto mod = script_module();
  mod.kernel("big_smem", {f32[4]}, [&](Tensor t) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    auto s = shared_tensor(f32[128][128]); // 64 KB
    s[threadIdx.x][0] = 1.0f;
    syncthreads();
    t[0] = s[0][0];
  });
  expect_error([&] { mod.build(); }, "65536 bytes of static shared memory");

  auto bad = script_module();
  bad.kernel("bad_ptx", {f32[4]}, [&](Tensor t) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 1;
    asm_("this.is.not.ptx;", {}, {});
    t[0] = 1.0f;
  });
  try {
    bad.build();
    FAIL("expected a compile error");
  } catch (const Error &e) {
    std::string msg = e.what();
    INFO(msg);
    bool nvrtc_error = msg.find("bad_ptx") != std::string::npos && msg.find("ptxas") != std::string::npos && msg.find("source: ") != std::string::npos;
    bool emulator_error = msg.find("inline PTX") != std::string::npos;
    CHECK((nvrtc_error || emulator_error));
  }
}

TEST_CASE("a second build of the same module compiles nothing") {
  auto cm1 = naive_matmul(7, 9, 11);
  auto before = backend::compile_cache_stats();
  auto cm2 = naive_matmul(7, 9, 11);
  auto after = backend::compile_cache_stats();
  CHECK(after.compiles == before.compiles);
  CHECK(cm1.source() == cm2.source());
}

TEST_CASE("a module built on a thread the user started runs on any thread") {
  // A fresh std::thread has no current CUDA context; building loads the module all the same.
  const int m = 5, n = 3, k = 6;
  std::optional<CompiledModule> cm;
  std::string err;
  std::thread th([&] {
    try {
      cm = naive_matmul(m, n, k);
    } catch (const std::exception &e) {
      err = e.what();
    }
  });
  th.join();
  REQUIRE(err == "");
  REQUIRE(cm);
  std::mt19937_64 rng(fresh_seed());
  auto av = random_floats(m * k, rng), bv = random_floats(k * n, rng);
  auto a = asarray(av, {m, k}, "cuda"), b = asarray(bv, {k, n}, "cuda");
  auto c = full({m, n}, std::nanf(""), f32, "cuda");
  std::thread th2([&] { // launched from yet another fresh thread
    try {
      (*cm)(a, b, c);
    } catch (const std::exception &e) {
      err = e.what();
    }
  });
  th2.join();
  REQUIRE(err == "");
  auto got = c.to_vector<float>();
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float ref = 0;
      for (int kk = 0; kk < k; ++kk) ref += av[i * k + kk] * bv[kk * n + j];
      CHECK(got[i * n + j] == ref);
    }
}

TEST_CASE("a faulting kernel throws and the device stays usable") {
  if (!runtime::cuda_emulated()) return; // on a GPU an illegal address loses the context (tested in runtime/gpu_fault)
  auto mod = script_module();
  mod.kernel("oob", {f32[8]}, [&](Tensor t) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 16;
    t[threadIdx.x] = 1.0f; // threads 8..15 write out of bounds
  });
  auto cm = mod.build();
  auto t = zeros({8}, f32, "cuda");
  expect_error([&] { cm(t); }, "out-of-bounds write of global tensor");
  auto cm2 = naive_matmul(3, 3, 3);
  auto a = ones({3, 3}, f32, "cuda"), c = zeros({3, 3}, f32, "cuda");
  cm2(a, a, c);
  CHECK(c.to_vector<float>()[4] == 3.0f);
}
