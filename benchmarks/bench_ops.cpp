// Memory-bound operators against the measured device-to-device copy bandwidth.
// Prints: op, shape, time (us), GB/s, ratio to copy. Same table as bench_ops_torch.py.
// HIDET_BENCH_SMALL=1 uses small shapes (for a smoke run on the emulator).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "hidet/hidet.hpp"
#include "hidet/ops.hpp"

using namespace hidet;

/// Median-free mean time of `f` in microseconds after warm-up (synchronize + host clock).
static double time_us(const std::function<void()> &f, int iters) {
  f();
  synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  synchronize();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
}

int main() {
  bool small = std::getenv("HIDET_BENCH_SMALL") != nullptr;
  std::int64_t n = small ? 256 : 8192; // 8192 x 8192 f32 = 256 MB
  int iters = small ? 1 : 20;
  Tensor x = randn({n, n}, f32), row = randn({n}, f32), w = ones({n}, f32);
  Tensor dst = empty({n, n}, f32);
  double bytes = double(n) * n * 4;
  double copy_us = time_us([&] {
    runtime::detail::copy_bytes(dst.data_ptr(), dst.device(), dst.is_host_memory(), x.data_ptr(), x.device(), x.is_host_memory(), std::size_t(bytes));
  }, iters);
  double copy_gbs = 2 * bytes / copy_us / 1e3;
  std::printf("%-24s %-14s %10s %10s %8s\n", "op", "shape", "time_us", "GB/s", "vs_copy");
  auto row_out = [&](const char *op, double moved, double us) {
    double gbs = moved / us / 1e3;
    std::printf("%-24s %-14s %10.1f %10.1f %8.2f\n", op, (std::to_string(n) + "x" + std::to_string(n)).c_str(), us, gbs,
                gbs / copy_gbs);
  };
  row_out("copy", 2 * bytes, copy_us);
  row_out("add_broadcast_row", 2 * bytes, time_us([&] { (void)(x + row); }, iters));
  row_out("relu", 2 * bytes, time_us([&] { (void)ops::relu(x); }, iters));
  row_out("sum_last_axis", bytes, time_us([&] { (void)ops::sum(x, {1}); }, iters));
  row_out("sum_first_axis", bytes, time_us([&] { (void)ops::sum(x, {0}); }, iters));
  row_out("transpose_2d", 2 * bytes, time_us([&] { (void)ops::transpose(x); }, iters));
  row_out("softmax_last_axis", 2 * bytes, time_us([&] { (void)ops::softmax(x, -1); }, iters));
  row_out("layer_norm_last_axis", 2 * bytes, time_us([&] { (void)ops::layer_norm(x, 1, w); }, iters));
  return 0;
}
