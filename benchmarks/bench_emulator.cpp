// Benchmark of the SIMT emulator on one core: thread-statements per second on an arithmetic loop
// kernel (i32, and the same loop in f16 and i8, which compute in a wider type and round or wrap
// after each operation), and the time of the naive matmul at 128x128x128 with 32x32 blocks
// (targets: at least 50 million thread-statements per second; the matmul in under one second).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "hidet/backend/emulator/program.hpp"
#include "test_emulator_kernels.hpp"

using hidet::backend::Dim3;
using hidet::backend::KernelArg;
using hidet::backend::emu::Program;

namespace {

template <class F> double best_seconds(int reps, F &&f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
  }
  return best;
}

} // namespace

int main() {
  // 1. arithmetic loop: per thread, `iters` iterations of one statement plus the loop test.
  Program arith(hidet::ir::make_module({emu_test::arith_loop()}));
  const int blocks = 16, threads = 256, iters = 2000;
  std::vector<std::int32_t> out(1 << 20);
  std::vector<KernelArg> args = {KernelArg::pointer(out.data()),
                                 KernelArg::integer(hidet::dtypes::i32, iters)};
  double t_arith = best_seconds(3, [&] { arith.launch("arith", args, Dim3{blocks, 1, 1}, Dim3{threads, 1, 1}, 0); });
  // thread-statements: per thread 2 declarations + loop init + iters x (loop test + body) + store
  double stmts = double(blocks) * threads * (4.0 + 2.0 * iters);

  // 1b. the same loop in f16 (computed in f32, rounded to f16 after each operation) and in i8
  auto narrow_rate = [&](hidet::DataType d) {
    Program p(hidet::ir::make_module({emu_test::arith_loop_of(d)}));
    std::vector<std::uint8_t> buf(std::size_t(1 << 20) * d.nbytes());
    std::vector<KernelArg> a = {KernelArg::pointer(buf.data()),
                                KernelArg::integer(hidet::dtypes::i32, iters)};
    std::string name = "arith_" + std::string(d.short_name());
    double t =
        best_seconds(3, [&] { p.launch(name, a, Dim3{blocks, 1, 1}, Dim3{threads, 1, 1}, 0); });
    return stmts / t / 1e6;
  };
  double f16_rate = narrow_rate(hidet::dtypes::f16), i8_rate = narrow_rate(hidet::dtypes::i8);

  // 2. naive matmul 128x128x128, 32x32 blocks
  const int n = 128;
  std::vector<float> A(n * n, 1.0f), B(n * n, 2.0f), C(n * n, 0.0f);
  Program mm(hidet::ir::make_module({emu_test::naive_matmul()}));
  auto i32 = [](int v) { return KernelArg::integer(hidet::dtypes::i32, v); };
  std::vector<KernelArg> margs = {KernelArg::pointer(A.data()), KernelArg::pointer(B.data()),
                                  KernelArg::pointer(C.data()), i32(n), i32(n), i32(n)};
  double t_mm = best_seconds(3, [&] { mm.launch("matmul", margs, Dim3{n / 32, n / 32, 1}, Dim3{32, 32, 1}, 0); });
  bool ok = C[0] == 2.0f * n && C[n * n - 1] == 2.0f * n;

  std::printf("%-44s %14s %10s\n", "benchmark (one core)", "value", "target");
  std::printf("%-44s %11.1f M/s %10s\n", "arith loop: thread-statements per second", stmts / t_arith / 1e6,
              ">= 50 M/s");
  std::printf("%-44s %11.1f M/s\n", "the loop in f16: thread-statements per second", f16_rate);
  std::printf("%-44s %11.1f M/s\n", "the loop in i8: thread-statements per second", i8_rate);
  std::printf("%-44s %12.3f s %10s\n", "naive matmul 128x128x128 (32x32 blocks)", t_mm, "< 1 s");
  std::printf("%-44s %14s\n", "matmul result check", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
