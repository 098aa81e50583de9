// Benchmark: a model whose batch and sequence length change from call to call (dynamic shapes),
// through graph::ShapeDispatch in its two modes, side by side on one GPU:
//  * per shape (the default): each new shape is specialized, optimized with every pass and compiled;
//  * shape_generic: the symbolic graph is optimized once; a new shape compiles that graph at its
//    values, and the shape-generic kernels (element-wise, norms, softmax, reductions, layout
//    operators and their fusions) are built once for all shapes.
// Model: the BERT-base encoder of benchmarks/models.hpp (12 layers, f16, random weights) on
// [n, s, 768] (viewed as [n*s, 768]), n = 1 and s in a list of sequence lengths, then again at each
// length (cached).
// For each mode and length: the first call (trace/optimize/compile/run) in ms, the task kernels
// and the NVRTC compiles it caused, and the CUDA-graph replay latency once compiled. Each mode runs
// in a process of its own (the program runs itself with HIDET_BENCH_DYNAMIC_MODE) on a fresh NVRTC
// disk cache, so no kernel one mode built serves the other. HIDET_BENCH_SEQS=64,96,... picks the
// lengths; HIDET_BENCH_LAYERS the depth; HIDET_BENCH_PROFILE=1 prints each mode's per-kernel
// profile (graph::profile) at the first length.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "hidet/backend/compile_cache.hpp"
#include "hidet/graph/profile.hpp"
#include "hidet/runtime/timing.hpp"
#include "models.hpp"

using namespace hidet;

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::int64_t> seqs() {
  std::vector<std::int64_t> r;
  const char *env = std::getenv("HIDET_BENCH_SEQS");
  std::stringstream ss(env ? env : "128,96,200,64,160,77");
  for (std::string item; std::getline(ss, item, ',');) r.push_back(std::stoll(item));
  return r;
}
} // namespace

int main(int, char **argv) {
  const char *mode = std::getenv("HIDET_BENCH_DYNAMIC_MODE");
  if (!mode) {
    for (const char *m : {"per_shape", "shape_generic"}) {
      std::string cache = str_cat("/tmp/hidet-bench-dynamic-", m);
      std::fflush(stdout);
      if (std::system(str_cat("rm -rf ", cache, " && HIDET_CACHE_DIR=", cache, " HIDET_BENCH_DYNAMIC_MODE=", m, " ",
                              argv[0], " 2>/dev/null")
                          .c_str()) != 0)
        return 1;
    }
    return 0;
  }
  const bool generic = std::string(mode) == "shape_generic";
  const auto &dev = runtime::device_info(0);
  const DataType dt = dtypes::f16;
  models::Bert::Config cfg;
  if (const char *l = std::getenv("HIDET_BENCH_LAYERS")) cfg.layers = std::atoi(l);
  models::Bert bert(cfg, dt);
  std::printf("hidet dynamic shapes, %s (%s): BERT-base %d layers f16, batch 1, sequence lengths change\n",
              dev.name.c_str(), dev.emulated ? "emulator" : dev.arch().c_str(), cfg.layers);
  if (!generic)
    std::printf("%-14s %5s %12s %7s %7s %11s %9s\n", "mode", "seq", "first call", "tasks", "nvrtc", "replay ms", "max err");
  Tensor spec = symbol({Dim("n"), Dim("s"), Dim(cfg.hidden)}, dt, "cuda", "x");
  auto net = [&](const Tensor &x, Dim n, Dim s) { return bert(x.reshape(SymShape{n * s, Dim(cfg.hidden)}), n, s); };
  {
    graph::DispatchOptions opts;
    opts.shape_generic = generic;
    opts.cuda_graph = true;
    graph::ShapeDispatch model([&](const std::vector<Tensor> &xs) {
      // Traced on the symbols (shape_generic) or on one shape's constants (per shape).
      const SymShape shape = xs[0].sym_shape();
      return std::vector<Tensor>{net(xs[0], shape[0], shape[1])};
    }, {spec}, opts);
    double total = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (std::int64_t s : seqs()) {
        Tensor x = randn({1, s, cfg.hidden}, dt);
        backend::reset_compile_cache_stats();
        std::size_t tasks = ops::compiled_task_count();
        auto t0 = std::chrono::steady_clock::now();
        Tensor y = model(x);
        current_stream().synchronize();
        double first = ms_since(t0);
        if (pass == 0) total += first;
        std::size_t nvrtc = backend::compile_cache_stats().compiles;
        tasks = ops::compiled_task_count() - tasks;
        if (pass == 1) { // compiled: time the replay and check the result once
          double replay = median_ms([&] { (void)model(x); });
          Tensor want = net(x, 1, s);
          auto w = want.to_double_vector(), g = y.to_double_vector();
          double err = 0;
          for (std::size_t i = 0; i < w.size(); ++i) err = std::max(err, std::abs(w[i] - g[i]));
          std::printf("%-14s %5lld %9.1f ms %7zu %7zu %11.3f %9.2e\n", generic ? "shape_generic" : "per shape",
                      (long long)s, first, tasks, nvrtc, replay, err);
        } else {
          std::printf("%-14s %5lld %9.1f ms %7zu %7zu %11s %9s\n", generic ? "shape_generic" : "per shape", (long long)s,
                      first, tasks, nvrtc, "-", "-");
        }
        std::fflush(stdout);
      }
    Tensor x0 = randn({1, seqs()[0], cfg.hidden}, dt);
    if (std::getenv("HIDET_BENCH_PROFILE"))
      std::printf("%s", graph::profile(model.compiled_for({x0}).graph(), {x0}).str(12).c_str());
    std::printf("%-14s total first calls %.1f ms over %zu new shapes; %zu nodes in the compiled graph\n",
                generic ? "shape_generic" : "per shape", total, seqs().size(),
                model.compiled_for({x0}).graph().nodes().size());
  }
  return 0;
}
