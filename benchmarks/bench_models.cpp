// Benchmark: whole models through the graph API (benchmarks/models.hpp, random weights):
// ResNet-50 (224x224) and a BERT-base encoder (12 layers, seq 128), batch 1 and 16, f16 and f32.
// For each: eager latency, the optimized graph's, its CUDA graph replay's, operators before and
// after optimization, the time to optimize + build + first run (kernel compiles; NVRTC's disk
// cache cold or warm as found), and the static memory plan. benchmarks/bench_models_torch.py
// times the same models with PyTorch eager and torch.compile on the same GPU.
// HIDET_BENCH_MODELS=<regex> selects rows by name (default: all); HIDET_BENCH_PROFILE=<regex>
// prints graph::profile of the optimized graph for the rows it matches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <regex>

#include "hidet/runtime/timing.hpp"
#include "models.hpp"

using namespace hidet;

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void row(const std::string &name, const std::function<Tensor(const Tensor &)> &model, const Tensor &input) {
  const char *filter = std::getenv("HIDET_BENCH_MODELS");
  if (filter && !std::regex_search(name, std::regex(filter))) return;
  auto t0 = std::chrono::steady_clock::now();
  Tensor xs = symbol_like(input);
  FlowGraph g = trace_from(model(xs));
  FlowGraph opt = graph::optimize(g);
  graph::build(opt);
  Tensor got = opt(input);
  current_stream().synchronize();
  double compile = since(t0);
  graph::CudaGraph cg = opt.cuda_graph();
  Tensor want = model(input);
  auto w = want.to_double_vector(), a = got.to_double_vector(), c = cg.run({input})[0].to_double_vector();
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    err = std::max({err, std::abs(a[i] - w[i]), std::abs(c[i] - w[i])});
    scale = std::max(scale, std::abs(w[i]));
  }
  double eager = median_ms([&] { (void)model(input); });
  double fused = median_ms([&] { (void)opt(input); });
  double replay = median_ms([&] { (void)cg.run(); });
  auto plan = graph::plan_memory(opt);
  std::printf("%-24s %9.3f %9.3f %9.3f %6zu %6zu %9.1f %10.1f %10.1f%s\n", name.c_str(), eager, fused, replay,
              g.nodes().size(), opt.nodes().size(), compile, double(plan.workspace_bytes) / (1 << 20),
              double(plan.total_bytes) / (1 << 20), err > 0.02 * (1 + scale) ? "  MISMATCH" : "");
  std::fflush(stdout);
  const char *prof = std::getenv("HIDET_BENCH_PROFILE");
  if (prof && std::regex_search(name, std::regex(prof))) std::printf("%s", graph::profile(opt, {input}).str(12).c_str());
}
} // namespace

int main() {
  const auto &dev = runtime::device_info(0);
  std::printf("hidet models, %s (%s)\n", dev.name.c_str(), dev.emulated ? "emulator" : dev.arch().c_str());
  std::printf("%-24s %9s %9s %9s %6s %6s %9s %10s %10s\n", "model", "eager ms", "graph ms", "cudagraph", "ops",
              "opt", "build s", "plan MiB", "sum MiB");
  for (DataType dt : {dtypes::f16, dtypes::f32}) {
    models::ResNet resnet(models::ResNet::Config{}, dt);
    models::Bert bert(models::Bert::Config{}, dt);
    for (std::int64_t batch : {1, 16}) {
      std::string suffix = str_cat(" ", dt.short_name(), " b", batch);
      row("resnet50" + suffix, [&](const Tensor &x) { return resnet(x); }, randn({batch, 3, 224, 224}, dt));
      row("bert-base s128" + suffix, [&](const Tensor &x) { return bert(x, batch, 128); }, randn({batch * 128, 768}, dt));
    }
  }
  return 0;
}
