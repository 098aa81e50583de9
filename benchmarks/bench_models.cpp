// Benchmark: whole models through the graph API (benchmarks/models.hpp, random weights):
// ResNet-50 (224x224) and a BERT-base encoder (12 layers, seq 128), batch 1 and 16, f16 and f32.
// For each: eager latency, the optimized and compiled graph's (graph::CompiledGraph: one planned
// workspace), its CUDA graph replay's, operators before and after optimization, the time to
// trace + optimize + compile + first run (kernel compiles; NVRTC's disk cache cold or warm as
// found), and the workspace (intermediates and the operators' temporaries, as planned) against
// the sum of the blocks it holds. benchmarks/bench_models_torch.py
// times the same models with PyTorch eager and torch.compile on the same GPU.
// HIDET_BENCH_MODELS=<regex> selects rows by name (default: all); HIDET_BENCH_PROFILE=<regex>
// prints graph::profile of the optimized graph for the rows it matches.
// Compile time cold and warm: before the table, the program runs itself twice in compile-only mode
// (HIDET_BENCH_COMPILE_ONLY=1: trace, optimize, compile and run once per row, timed) on a fresh
// NVRTC disk cache: the first process compiles every kernel (cold), the second finds them on disk
// (warm). HIDET_BENCH_COMPILE_ROWS=<regex> picks those rows (default: the batch-1 f16 models).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <regex>

#include "hidet/backend/compile_cache.hpp"
#include "hidet/graph/build.hpp"
#include "hidet/runtime/timing.hpp"
#include "models.hpp"

using namespace hidet;

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void row(const std::string &name, const std::function<Tensor(const Tensor &)> &model, const Tensor &input,
         const graph::PassContext &ctx = {}) {
  const char *filter = std::getenv("HIDET_BENCH_MODELS");
  if (filter && !std::regex_search(name, std::regex(filter))) return;
  if (std::getenv("HIDET_BENCH_COMPILE_ONLY")) {
    auto t0 = std::chrono::steady_clock::now();
    Tensor xs = symbol_like(input);
    FlowGraph g = trace_from(model(xs));
    double t_trace = since(t0);
    FlowGraph opt = graph::optimize(g, ctx);
    double t_opt = since(t0);
    graph::BuildStats bs = graph::build(opt);
    double t_build = since(t0);
    graph::CompiledGraph compiled = graph::compile(opt);
    double t_compile = since(t0);
    (void)compiled(input);
    current_stream().synchronize();
    auto cs = backend::compile_cache_stats();
    std::printf("  %-24s %6.2f s (trace %.2f, optimize %.2f, build %.2f: %zu kernels, compile %.2f, first run %.2f; "
                "NVRTC: %llu compiles, %llu disk hits, %llu memory hits)\n",
                name.c_str(), since(t0), t_trace, t_opt - t_trace, t_build - t_opt, bs.nodes, t_compile - t_build,
                since(t0) - t_compile,
                (unsigned long long)cs.compiles, (unsigned long long)cs.disk_hits, (unsigned long long)cs.memory_hits);
    std::fflush(stdout);
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  Tensor xs = symbol_like(input);
  FlowGraph g = trace_from(model(xs));
  FlowGraph opt = graph::optimize(g, ctx);
  graph::CompiledGraph compiled = graph::compile(opt);
  Tensor got = compiled(input);
  current_stream().synchronize();
  double compile = since(t0);
  graph::CudaGraph cg = compiled.cuda_graph();
  Tensor want = model(input);
  auto w = want.to_double_vector(), a = got.to_double_vector(), c = cg.run({input})[0].to_double_vector();
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    err = std::max({err, std::abs(a[i] - w[i]), std::abs(c[i] - w[i])});
    scale = std::max(scale, std::abs(w[i]));
  }
  double eager = median_ms([&] { (void)model(input); });
  double fused = median_ms([&] { (void)compiled(input); });
  double replay = median_ms([&] { (void)cg.run(); });
  const auto &plan = compiled.memory_plan();
  std::printf("%-24s %9.3f %9.3f %9.3f %6zu %6zu %9.1f %10.1f %10.1f%s\n", name.c_str(), eager, fused, replay,
              g.nodes().size(), opt.nodes().size(), compile, double(plan.workspace_bytes) / (1 << 20),
              double(plan.total_bytes) / (1 << 20), err > 0.02 * (1 + scale) ? "  MISMATCH" : "");
  std::fflush(stdout);
  const char *prof = std::getenv("HIDET_BENCH_PROFILE");
  if (prof && std::regex_search(name, std::regex(prof))) std::printf("%s", graph::profile(opt, {input}).str(12).c_str());
}
} // namespace

/// Runs this program twice in compile-only mode on a fresh disk cache (see the top of the file).
void compile_times(const char *self) {
  const char *rows = std::getenv("HIDET_BENCH_COMPILE_ROWS");
  std::string cache = "/tmp/hidet-bench-compile-cache";
  std::string env = str_cat("HIDET_CACHE_DIR=", cache, " HIDET_BENCH_COMPILE_ONLY=1 HIDET_BENCH_MODELS='",
                            rows ? rows : "f16 b1$", "' ");
  std::fflush(stdout);
  if (std::system(str_cat("rm -rf ", cache).c_str()) != 0) return;
  for (const char *kind : {"cold (empty disk cache)", "warm (disk cache filled by the run above)"}) {
    std::printf("compile time, trace + optimize + compile + first run, new process, %s:\n", kind);
    std::fflush(stdout);
    if (std::system(str_cat(env, self, " 2>/dev/null | grep -v '^hidet models'").c_str()) != 0) return;
  }
}

int main(int, char **argv) {
  if (!std::getenv("HIDET_BENCH_COMPILE_ONLY")) compile_times(argv[0]);
  const auto &dev = runtime::device_info(0);
  std::printf("hidet models, %s (%s)\n", dev.name.c_str(), dev.emulated ? "emulator" : dev.arch().c_str());
  bool compile_only = std::getenv("HIDET_BENCH_COMPILE_ONLY") != nullptr;
  if (!compile_only)
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
    if (dt != dtypes::f32) continue;
    // f32 models with mixed precision (PassContext::mixed_precision = f16): matmuls,
    // convolutions and attention on the tensor cores, the rest in f32.
    graph::PassContext amp;
    amp.mixed_precision = dtypes::f16;
    for (std::int64_t batch : {1, 16}) {
      std::string suffix = str_cat(" f32+amp b", batch);
      row("resnet50" + suffix, [&](const Tensor &x) { return resnet(x); }, randn({batch, 3, 224, 224}, dt), amp);
      row("bert-base s128" + suffix, [&](const Tensor &x) { return bert(x, batch, 128); }, randn({batch * 128, 768}, dt),
          amp);
    }
  }
  return 0;
}
