// Benchmark: a BERT-base encoder layer (hidden 768, 12 heads, FFN 3072, seq 128; f16) run four
// ways: eager operators, the traced FlowGraph (reference interpreter), the optimized graph
// (fusion), and the optimized graph as a CUDA graph. Prints the latency of each, the number of
// operators before and after fusion, the time of graph::build (the fused kernels, in parallel;
// the disk cache warm or cold as found) and of the first run after it (template kernels), and
// the static memory plan of the fused graph (workspace against the sum of its intermediates). benchmarks/bench_graph_torch.py times the same layer with
// PyTorch eager and torch.compile on the same GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "hidet/graph.hpp"
#include "hidet/hidet.hpp"
#include "hidet/runtime/timing.hpp"

using namespace hidet;
namespace o = hidet::ops;

namespace {
struct Layer {
  std::int64_t batch, seq, hidden = 768, heads = 12, ffn = 3072;
  DataType dt = dtypes::f16;
  Tensor wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2;
  Layer(std::int64_t b, std::int64_t s) : batch(b), seq(s) {
    auto w = [&](std::int64_t i, std::int64_t j) { return randn({i, j}, dt) * (1.0 / std::sqrt(double(i))); };
    auto v = [&](std::int64_t n) { return randn({n}, dt) * 0.1; };
    wq = w(hidden, hidden), wk = w(hidden, hidden), wv = w(hidden, hidden), wo = w(hidden, hidden);
    bq = v(hidden), bk = v(hidden), bv = v(hidden), bo = v(hidden);
    w1 = w(hidden, ffn), c1 = v(ffn), w2 = w(ffn, hidden), c2 = v(hidden);
    g1 = ones({hidden}, dt), b1 = v(hidden), g2 = ones({hidden}, dt), b2 = v(hidden);
  }
  Tensor operator()(const Tensor &x) const { // x: [batch * seq, hidden]
    auto heads_of = [&](const Tensor &t) {   // [b*s, h] -> [b, heads, s, h/heads]
      return o::transpose(t.reshape({batch, seq, heads, hidden / heads}), 1, 2);
    };
    Tensor q = heads_of(o::matmul(x, wq) + bq), k = heads_of(o::matmul(x, wk) + bk),
           v = heads_of(o::matmul(x, wv) + bv);
    Tensor a = o::scaled_dot_product_attention(q, k, v);
    a = o::transpose(a, 1, 2).reshape({batch * seq, hidden});
    Tensor h = o::layer_norm(o::matmul(a, wo) + bo + x, 1, g1, b1);
    Tensor f = o::gelu(o::matmul(h, w1) + c1);
    return o::layer_norm(o::matmul(f, w2) + c2 + h, 1, g2, b2);
  }
};
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

int main() {
  const auto &dev = runtime::device_info(0);
  std::printf("hidet graph benchmark, %s (%s)\n", dev.name.c_str(), dev.emulated ? "emulator" : dev.arch().c_str());
  std::printf("%-28s %10s %10s %10s %10s %6s %6s %8s %10s\n", "model", "eager ms", "graph ms", "fused ms",
              "cudagraph", "ops", "fused", "build s", "1st run s");
  for (std::int64_t batch : {1, 16}) {
    Layer layer(batch, 128);
    Tensor x = randn({batch * 128, 768}, dtypes::f16);
    Tensor want = layer(x);
    Tensor xs = symbol_like(x);
    FlowGraph g = trace_from(layer(xs));
    FlowGraph opt = graph::optimize(g);
    auto st = graph::build(opt);
    auto t0 = std::chrono::steady_clock::now();
    Tensor got = opt(x);
    current_stream().synchronize();
    double first = seconds_since(t0);
    graph::CudaGraph cg = opt.cuda_graph();
    // Sanity: the fused graph and the CUDA graph agree with eager.
    auto w = want.to_double_vector(), a = got.to_double_vector(), c = cg.run({x})[0].to_double_vector();
    double err = 0;
    for (std::size_t i = 0; i < w.size(); ++i)
      err = std::max({err, std::abs(a[i] - w[i]), std::abs(c[i] - w[i])});
    double eager = median_ms([&] { (void)layer(x); });
    double interp = median_ms([&] { (void)g(x); });
    double fused = median_ms([&] { (void)opt(x); });
    double replay = median_ms([&] { (void)cg.run(); });
    char name[64];
    std::snprintf(name, sizeof name, "BERT layer f16 b%lld s128", (long long)batch);
    std::printf("%-28s %10.3f %10.3f %10.3f %10.3f %6zu %6zu %8.2f %10.2f%s\n", name, eager, interp, fused, replay,
                g.nodes().size(), opt.nodes().size(), st.seconds, first, err > 0.05 ? "  MISMATCH" : "");
    std::printf("  memory plan of the fused graph: %s\n", graph::plan_memory(opt).str().c_str());
  }
  return 0;
}
