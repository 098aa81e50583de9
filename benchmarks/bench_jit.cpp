// bench_jit: the cost of the JIT path for the naive matmul of tutorial 01.
//  * cold NVRTC compile (a source never seen by the cache),
//  * warm load from the disk cache (compile_cuda_cached after clearing the in-process cache, plus
//    cuModuleLoadData when a GPU is present),
//  * host launch overhead of CompiledModule's call against a raw cuLaunchKernel of the same
//    CUfunction with pre-packed arguments, in the same run (GPU only).
// Targets (issue 2): warm load under 5 ms; launch overhead at most 1.5x the raw launch.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "hidet/backend/codegen.hpp"
#include "hidet/backend/compile_cache.hpp"
#include "hidet/backend/nvrtc.hpp"
#include "hidet/hidet.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/detail/kernel_info.hpp"
#include "hidet/transforms/lower.hpp"

using namespace hidet::lang;
using hidet::f32;
using hidet::zeros;
namespace backend = hidet::backend;
namespace runtime = hidet::runtime;
namespace cuda = hidet::cuda;
namespace ir = hidet::ir;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static ScriptModule matmul_module(int m, int n, int k) {
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
  return mod;
}

int main() {
  auto tmp = std::filesystem::temp_directory_path() / ("hidet-bench-jit-" + std::to_string(::getpid()));
  ::setenv("HIDET_CACHE_DIR", tmp.c_str(), 1);
  const bool gpu = runtime::gpu_present() && !runtime::cuda_emulated();
  backend::CompileOptions opts;
  opts.arch = gpu ? runtime::device_info(0).arch() : backend::default_cuda_arch();

  auto lowered = ir::lower(matmul_module(3, 5, 4).ir());
  std::string source = backend::generate_cuda(lowered).code;

  // Cold compiles: a distinct source each time (a comment), so no cache can answer.
  std::vector<double> cold;
  backend::nvrtc_version(); // load libnvrtc outside the timing
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    auto bin = backend::nvrtc_compile(source + "\n// variant " + std::to_string(r), "matmul", opts);
    cold.push_back(ms_since(t0));
  }
  // Warm loads: the entry is on disk; the in-process cache is cleared each time.
  backend::compile_cuda_cached(source, "matmul", opts);
  std::vector<double> warm, warm_load;
  for (int r = 0; r < 20; ++r) {
    backend::clear_memory_compile_cache();
    auto t0 = Clock::now();
    auto bin = backend::compile_cuda_cached(source, "matmul", opts);
    warm.push_back(ms_since(t0));
    if (!bin.from_cache) std::printf("warning: warm load did not hit the disk cache\n");
    if (gpu) {
      auto t1 = Clock::now();
      auto mod = cuda::load_module(bin.cubin);
      warm_load.push_back(ms_since(t0));
      (void)t1;
      cuda::unload_module(mod);
    }
  }
  std::printf("bench_jit on %s (arch %s)\n", runtime::device_info(0).name.c_str(), opts.arch.c_str());
  std::printf("| measurement | median | target |\n|---|---|---|\n");
  std::printf("| cold NVRTC compile, naive matmul | %.1f ms | |\n", median(cold));
  std::printf("| warm load from disk cache (read + verify) | %.3f ms | < 5 ms |\n", median(warm));
  if (gpu) std::printf("| warm load from disk cache + cuModuleLoadData | %.3f ms | < 5 ms |\n", median(warm_load));

  if (!gpu) {
    std::printf("| launch overhead | needs a GPU | <= 1.5x raw |\n");
    std::filesystem::remove_all(tmp);
    return 0;
  }
  // Launch overhead: a 1x1 kernel launched N times back to back, host time per launch.
  auto cm = matmul_module(1, 1, 1).build();
  auto a = zeros({1, 1}, f32, "cuda"), b = zeros({1, 1}, f32, "cuda"), c = zeros({1, 1}, f32, "cuda");
  const auto &info = cm["matmul"].info();
  std::vector<backend::KernelArg> kargs{backend::KernelArg::pointer(a.data_ptr()), backend::KernelArg::pointer(b.data_ptr()),
                                        backend::KernelArg::pointer(c.data_ptr())};
  auto packed = cuda::pack_kernel_args(kargs);
  CUstream stream = runtime::current_stream().handle();
  const auto &drv = cuda::driver();
  const int n = 20000;
  std::vector<double> hidet_us, raw_us;
  for (int rep = 0; rep < 7; ++rep) {
    runtime::synchronize(0);
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) cm(a, b, c);
    hidet_us.push_back(ms_since(t0) * 1000.0 / n);
    runtime::synchronize(0);
    t0 = Clock::now();
    for (int i = 0; i < n; ++i)
      drv.cuLaunchKernel(info.function, 1, 1, 1, 32, 32, 1, 0, stream, packed.params.data(), nullptr);
    raw_us.push_back(ms_since(t0) * 1000.0 / n);
    runtime::synchronize(0);
  }
  double h = median(hidet_us), r = median(raw_us);
  std::printf("| host launch: CompiledModule call | %.2f us | |\n", h);
  std::printf("| host launch: raw cuLaunchKernel | %.2f us | |\n", r);
  std::printf("| launch overhead ratio | %.2fx | <= 1.5x |\n", h / r);
  std::filesystem::remove_all(tmp);
  return 0;
}
