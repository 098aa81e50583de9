// Differential test (GPU machine): the same kernels and inputs on the CPU emulator and on the GPU
// must agree — bitwise for integer kernels and for f16/f32 basic arithmetic, within a few ulp
// for transcendental math (the GPU's libdevice and the host's libm differ there).
// Without a GPU this test reports SKIP (exit code 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "hidet/hidet.hpp"

using namespace hidet::lang;
using hidet::asarray;
using hidet::CompiledModule;
using hidet::float16;
using hidet::zeros;
namespace runtime = hidet::runtime;

namespace {

/// Builds the module and runs `run(cm)` once on the emulator and once on the GPU.
template <class Build, class Run> auto both(Build &&build, Run &&run) {
  runtime::set_cuda_emulation(true);
  auto emu = run(build().build());
  runtime::set_cuda_emulation(false);
  auto gpu = run(build().build());
  return std::make_pair(emu, gpu);
}

ScriptModule integer_mix() {
  auto n = symbol("n");
  auto mod = script_module("int_mix");
  mod.kernel("mix", {i32[n], u32[n], i64[n], i32[64]}, [&](Tensor x, Tensor y, Tensor z, Tensor hist) {
    attrs.cuda.grid_dim = ceil_div(n, 128);
    attrs.cuda.block_dim = 128;
    Expr i = blockIdx.x * 128 + threadIdx.x;
    if_(i < n, [&] {
      Var v = x[i];
      Var u = cast(v, u32) * 2654435761u;
      u = u ^ (u >> 13);
      Var w = cast(v, i64) * 1000003 - 7;
      Var q = select(v != 0, (v * 31) / 7 - v % 5 + (v >> 2), 123);
      Var s = shfl_xor_sync(0xffffffffu, q, 3) + shfl_down_sync(0xffffffffu, q, 1);
      y[i] = u + cast(ballot_sync(0xffffffffu, v > 0), u32);
      z[i] = w + cast(s, i64);
      atomic_add(hist[(u >> 26) & 63], 1);
    });
  });
  return mod;
}

ScriptModule float_kernels() {
  auto n = symbol("n");
  auto mod = script_module("float_mix");
  mod.kernel("fmix", {f32[n], f16[n], f32[n], f16[n], f32[n]}, [&](Tensor x, Tensor h, Tensor basic, Tensor hout, Tensor trans) {
    attrs.cuda.grid_dim = ceil_div(n, 64);
    attrs.cuda.block_dim = 64;
    Expr i = blockIdx.x * 64 + threadIdx.x;
    if_(i < n, [&] {
      Var a = x[i];
      basic[i] = (a * 1.25f + 0.5f) / (abs(a) + 1.0f) - sqrt(abs(a)) + fma(a, a, -1.0f) + floor(a) + round(a * 3.0f);
      Var hv = h[i];
      hout[i] = hv * hv + cast(0.25f, f16) - hv / cast(3.0f, f16);
      trans[i] = exp(a * 0.1f) + tanh(a) + log(abs(a) + 1.0f) + sin(a) * cos(a) + erf(a * 0.5f);
    });
  });
  return mod;
}

std::uint32_t ulp_distance(float a, float b) {
  std::int32_t ia, ib;
  std::memcpy(&ia, &a, 4), std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::uint32_t(std::abs(std::int64_t(ia) - ib));
}

} // namespace

TEST_CASE("integer kernels agree bitwise") {
  const int n = 1024; // whole warps: the shuffles below use the full mask
  std::mt19937 rng(std::random_device{}());
  std::vector<std::int32_t> hx(n);
  for (auto &v : hx) v = std::int32_t(rng());
  auto [emu, gpu] = both(integer_mix, [&](CompiledModule cm) {
    auto x = asarray(hx, {n}, "cuda");
    auto y = zeros({n}, u32, "cuda");
    auto z = zeros({n}, i64, "cuda");
    auto hist = zeros({64}, i32, "cuda");
    cm(x, y, z, hist);
    return std::make_tuple(y.to_vector<std::uint32_t>(), z.to_vector<std::int64_t>(), hist.to_vector<std::int32_t>());
  });
  CHECK(std::get<0>(emu) == std::get<0>(gpu));
  CHECK(std::get<1>(emu) == std::get<1>(gpu));
  CHECK(std::get<2>(emu) == std::get<2>(gpu));
}

TEST_CASE("float kernels agree within rounding") {
  const int n = 777;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> d(-20.0f, 20.0f);
  std::vector<float> hx(n);
  std::vector<float16> hh(n);
  for (int i = 0; i < n; ++i) hx[i] = d(rng), hh[i] = float16(d(rng) * 0.1f);
  auto [emu, gpu] = both(float_kernels, [&](CompiledModule cm) {
    auto x = asarray(hx, {n}, "cuda");
    auto h = asarray(hh, {n}, "cuda");
    auto basic = zeros({n}, f32, "cuda"), trans = zeros({n}, f32, "cuda");
    auto hout = zeros({n}, f16, "cuda");
    cm(x, h, basic, hout, trans);
    return std::make_tuple(basic.to_vector<float>(), hout.to_vector<float16>(), trans.to_vector<float>());
  });
  auto &be = std::get<0>(emu), &bg = std::get<0>(gpu);
  for (int i = 0; i < n; ++i) REQUIRE_MESSAGE(ulp_distance(be[i], bg[i]) <= 2, "basic[" << i << "]: emulator " << be[i] << " gpu " << bg[i]);
  auto &he = std::get<1>(emu), &hg = std::get<1>(gpu);
  for (int i = 0; i < n; ++i) REQUIRE_MESSAGE(he[i].bits == hg[i].bits, "f16[" << i << "]");
  auto &te = std::get<2>(emu), &tg = std::get<2>(gpu);
  for (int i = 0; i < n; ++i)
    REQUIRE_MESSAGE(std::abs(te[i] - tg[i]) <= 1e-5f * (1 + std::abs(tg[i])), "trans[" << i << "]: emulator " << te[i] << " gpu " << tg[i]);
}

int main(int argc, char **argv) {
  if (!runtime::gpu_present()) {
    std::printf("differential test needs a GPU: SKIP\n");
    return 77;
  }
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
