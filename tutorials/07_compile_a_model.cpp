// Compiling a model: build a small transformer encoder from hidet's operators, trace it,
// optimize it, check the optimized graph against the traced one, compile it into one planned
// workspace, and time eager execution, the compiled graph and its CUDA graph replay.
//
// 1. A model is a plain struct holding its weights; calling it applies operators. On tensors
//    with data the operators run at once (eager); on a symbolic tensor they record a FlowGraph.
// 2. graph::optimize rewrites the graph: element-wise chains fuse into the kernels that feed
//    them or that they feed (matmul epilogues: bias, GELU, the residual add), so the optimized
//    graph has far fewer operators. PassContext{.verbose = true} logs each pass.
// 3. graph::correctness_report compares every operator's value in the optimized graph with the
//    traced graph's, as Hidet's table.
// 4. graph::compile builds every kernel in parallel (a progress bar on a terminal) and plans one
//    workspace for all intermediates; cuda_graph() captures a run for one-launch replays.
// 5. graph::ShapeDispatch serves a symbolic batch size: one compiled graph per size seen.
//
// Without a GPU everything runs on the CPU emulator: the times printed are then the emulator's.
#include <cmath>
#include <cstdio>
#include <iostream>

#include <hidet/graph.hpp>
#include <hidet/runtime/timing.hpp>

namespace o = hidet::ops;
using hidet::Tensor;

// One encoder layer (BERT's design) on hidden states [batch * seq, hidden].
struct EncoderLayer {
  std::int64_t hidden, heads;
  Tensor wq, wk, wv, wo, bq, bk, bv, bo, w1, b1, w2, b2, g1, c1, g2, c2;

  EncoderLayer(std::int64_t hidden_, std::int64_t heads_, hidet::DataType dt) : hidden(hidden_), heads(heads_) {
    auto w = [&](std::int64_t i, std::int64_t j) {
      return o::cast(hidet::randn({i, j}) * (1.0 / std::sqrt(double(i))), dt);
    };
    auto v = [&](std::int64_t n, double center) { return o::cast(hidet::randn({n}) * 0.1 + center, dt); };
    wq = w(hidden, hidden), wk = w(hidden, hidden), wv = w(hidden, hidden), wo = w(hidden, hidden);
    bq = v(hidden, 0), bk = v(hidden, 0), bv = v(hidden, 0), bo = v(hidden, 0);
    w1 = w(hidden, 4 * hidden), b1 = v(4 * hidden, 0), w2 = w(4 * hidden, hidden), b2 = v(hidden, 0);
    g1 = v(hidden, 1), c1 = v(hidden, 0), g2 = v(hidden, 1), c2 = v(hidden, 0);
  }

  Tensor operator()(const Tensor &x, std::int64_t batch, std::int64_t seq) const {
    auto heads_of = [&](const Tensor &t) {
      return o::transpose(t.reshape({batch, seq, heads, hidden / heads}), 1, 2); // [b, h, s, d]
    };
    Tensor q = heads_of(o::matmul(x, wq) + bq), k = heads_of(o::matmul(x, wk) + bk),
           v = heads_of(o::matmul(x, wv) + bv);
    Tensor a = o::transpose(o::scaled_dot_product_attention(q, k, v), 1, 2).reshape({batch * seq, hidden});
    Tensor h = o::layer_norm(o::matmul(a, wo) + bo + x, 1, g1, c1);
    Tensor f = o::gelu(o::matmul(h, w1) + b1);
    return o::layer_norm(o::matmul(f, w2) + b2 + h, 1, g2, c2);
  }
};

int main() {
  const std::int64_t batch = 2, seq = 16, hidden = 64, heads = 4;
  const hidet::DataType dt = hidet::f16;
  EncoderLayer layer1(hidden, heads, dt), layer2(hidden, heads, dt);
  auto model = [&](const Tensor &x, std::int64_t b) { return layer2(layer1(x, b, seq), b, seq); };
  Tensor input = hidet::randn({batch * seq, hidden}, dt);

  // 1. Trace: the same code on a symbolic tensor records the graph.
  Tensor x = hidet::symbol_like(input, "hidden_states");
  hidet::FlowGraph graph = hidet::trace_from(model(x, batch));
  std::printf("traced: %zu operators, %zu constants\n", graph.nodes().size(), graph.constants().size());

  // 2. Optimize (log each pass).
  hidet::graph::PassContext ctx;
  ctx.verbose = true;
  hidet::FlowGraph opt = hidet::graph::optimize(graph, ctx);
  std::printf("optimized: %zu operators\n", opt.nodes().size());
  std::cout << opt << "\n";

  // 3. The optimized graph against the traced one, operator by operator.
  auto report = hidet::graph::correctness_report(graph, opt, {input});
  std::cout << report.str() << "\n";

  // 4. Compile (kernels in parallel, one workspace) and capture a CUDA graph.
  hidet::graph::CompiledGraph compiled = hidet::graph::compile(opt);
  std::printf("compiled in %.2f s; %s\n", compiled.stats().compile_seconds, compiled.memory_plan().str().c_str());
  hidet::graph::CudaGraph replay = compiled.cuda_graph();

  Tensor want = model(input, batch);
  Tensor got = compiled(input);
  Tensor got_replay = replay.run({input})[0];
  auto w = want.to_double_vector(), g = got.to_double_vector(), r = got_replay.to_double_vector();
  double err = 0;
  for (std::size_t i = 0; i < w.size(); ++i)
    err = std::max({err, std::abs(g[i] - w[i]) / (1 + std::abs(w[i])), std::abs(r[i] - w[i]) / (1 + std::abs(w[i]))});
  std::printf("max relative difference from eager: %.2e\n", err);

  // Time the three ways of running the model (median of a few batches of calls).
  bool emulated = hidet::runtime::cuda_emulated();
  int batches = emulated ? 3 : 15;
  double batch_ms = emulated ? 0.0 : 2.0;
  double eager_ms = hidet::median_ms([&] { (void)model(input, batch); }, batches, batch_ms);
  double compiled_ms = hidet::median_ms([&] { (void)compiled(input); }, batches, batch_ms);
  double replay_ms = hidet::median_ms([&] { (void)replay.run(); }, batches, batch_ms);
  std::printf("%s: eager %.3f ms, compiled graph %.3f ms, CUDA graph %.3f ms\n",
              emulated ? "emulator" : "GPU", eager_ms, compiled_ms, replay_ms);

  // 5. A symbolic batch size: compiled once per size seen.
  hidet::graph::ShapeDispatch dispatch(
      [&](const std::vector<Tensor> &xs) {
        std::int64_t b = xs[0].shape()[0] / seq; // each traced shape is concrete
        return std::vector<Tensor>{model(xs[0], b)};
      },
      {hidet::symbol({hidet::Dim("t"), hidden}, dt, "cuda", "tokens")});
  for (std::int64_t b : {1, 3, 1}) {
    Tensor in = hidet::randn({b * seq, hidden}, dt);
    Tensor out = dispatch(in);
    std::printf("batch %lld: output %s\n", static_cast<long long>(b), hidet::sym_shape_str(out.sym_shape()).c_str());
  }
  std::printf("shapes compiled: %zu\n", dispatch.num_compilations());

  bool ok = err < 2e-2 && !report.any_flagged() && dispatch.num_compilations() == 2;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
