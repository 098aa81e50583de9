// Benchmark: the host time of a CUDA graph's replay against its kernel count. A graph of N
// element-wise kernels in a chain (x + 1, N times, unfused: one kernel each) is captured
// (graph::CudaGraph), then replayed: per N, the median host time of run() (its input checks and
// the launch; the GPU idle before it), of run(inputs) (the inputs copied in first), and the
// median time to the end of the work on the GPU. A decoding step's graph has about 460 kernels
// (the 8B model at TP = 2): its replay took 0.55 ms of host time in cProfile (docs/distributed.md),
// while a torch CUDA graph of 1,000 one-element kernels replays in about 10 us. Run it with
// HIDET_PDL=0 too: hidet launches kernels as programmatic dependents on Hopper, which a replay
// may pay per kernel. Without a GPU (the emulator) the times mean nothing; the flow is checked.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hidet/graph.hpp"
#include "hidet/hidet.hpp"

using namespace hidet;

namespace {
double us_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
} // namespace

int main() {
  const bool gpu = !runtime::cuda_emulated();
  const char *pdl = std::getenv("HIDET_PDL");
  std::printf("CUDA graph replay, host time against kernels (%s; HIDET_PDL=%s)\n",
              gpu ? "GPU" : "emulator: the times mean nothing", pdl ? pdl : "unset (on from sm_90)");
  std::printf("%8s %14s %18s %14s %12s\n", "kernels", "run() us", "run(inputs) us", "GPU end us", "host/kernel");
  const int reps = gpu ? 50 : 2;
  for (int n : gpu ? std::vector<int>{1, 10, 100, 300, 500, 1000} : std::vector<int>{1, 10}) {
    Tensor x = zeros({256}, dtypes::f32, Device::cuda());
    Tensor xs = symbol_like(x);
    Tensor y = xs;
    for (int i = 0; i < n; ++i) y = y + 1.0;
    graph::CompiledGraph compiled(graph::trace_from(y, {xs}));
    (void)compiled.run({x});
    (void)compiled.run({x});
    graph::CudaGraph cg(compiled);
    const double got = cg.run({x})[0].to_double_vector()[0];
    if (got != double(n)) {
      std::printf("kernels %d: the replay gave %g, not %d\n", n, got, n);
      return 1;
    }
    std::vector<double> host, host_in, end;
    for (int r = 0; r < reps; ++r) {
      current_stream().synchronize();
      auto t0 = std::chrono::steady_clock::now();
      (void)cg.run();
      host.push_back(us_since(t0));
      current_stream().synchronize();
      end.push_back(us_since(t0));
      t0 = std::chrono::steady_clock::now();
      (void)cg.run({x});
      host_in.push_back(us_since(t0));
      current_stream().synchronize();
    }
    std::printf("%8d %14.1f %18.1f %14.1f %12.2f\n", n, median(host), median(host_in), median(end),
                median(host) / n);
  }
  return 0;
}
