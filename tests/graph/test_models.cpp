// The models of benchmarks/models.hpp at small sizes (GPU when present, else the emulator):
// each is traced, optimized (reshape simplification, conv + batch_norm folding, fusion) and run
// on fresh random inputs against the same model run eagerly; the correctness report of the
// optimized graph flags nothing; the compiled graph (one planned workspace) matches the graph, and
// so does the compiled graph saved to a file and loaded.
#include "../ops/ops_test_util.hpp"

#include "../../benchmarks/models.hpp"

#include <filesystem>
#include <unistd.h>

using namespace ops_test;

namespace {
void check_model(const FlowGraph &g, const std::vector<Tensor> &in, const Tensor &want, double scale) {
  FlowGraph opt = graph::optimize(g);
  INFO(opt.str());
  CHECK(opt.nodes().size() < g.nodes().size());
  Tensor got = opt.run(in)[0];
  REQUIRE(got.dtype() == want.dtype());
  expect_close(got, want.shape(), want.to_double_vector(), false, scale);
  auto report = graph::correctness_report(g, opt, in);
  INFO(report.str());
  CHECK(!report.any_flagged());
  // The compiled graph (one planned workspace) gives the same values, run after run.
  graph::CompiledGraph cg(opt);
  INFO(cg.memory_plan().str());
  CHECK(cg.stats().unplanned == 0);
  CHECK(cg.workspace_bytes() < cg.memory_plan().total_bytes);
  for (int trial = 0; trial < 2; ++trial) {
    expect_close(cg.run(in)[0], want.shape(), got.to_double_vector(), false, 1);
    CHECK(cg.stats().unplanned == 0);
  }
  // Saved to a file and loaded, it replays the same kernels (TMA maps included on Hopper).
  auto path = std::filesystem::temp_directory_path() / str_cat("hidet-model-", ::getpid(), "-", g_rng(), ".hidet");
  cg.save(path.string());
  graph::CompiledGraph loaded = graph::CompiledGraph::load(path.string());
  std::filesystem::remove(path);
  expect_close(loaded.run(in)[0], want.shape(), got.to_double_vector(), false, 1);
}
} // namespace

TEST_CASE("a small ResNet (bottleneck blocks, conv + batch_norm folded)") {
  models::ResNet::Config cfg;
  cfg.blocks = {1, 1};
  cfg.width = 8;
  cfg.classes = 10;
  for (DataType dt : {dtypes::f32, dtypes::f16}) {
    CAPTURE(dt);
    models::ResNet net(cfg, dt);
    Tensor img = make({2, 3, 32, 32}, dt);
    Tensor x = symbol_like(img);
    FlowGraph g = trace_from(net(x));
    CHECK(g.str().find("BatchNorm") != std::string::npos);
    FlowGraph opt = graph::optimize(g);
    CHECK(opt.str().find("BatchNorm") == std::string::npos);
    // f16: every convolution but the stem runs channels-last.
    CHECK((opt.str().find("Conv2dNhwc") != std::string::npos) == (dt == dtypes::f16));
    check_model(g, {img}, net(img), dt == dtypes::f16 ? 2 : 10);
  }
}

TEST_CASE("a small BERT encoder and a GPT-2 block") {
  const std::int64_t batch = 2, seq = 8, hidden = 64;
  Tensor h = make({batch * seq, hidden}, dtypes::f32);
  Tensor x = symbol_like(h);
  models::Bert bert(models::Bert::Config{2, hidden, 2, 128}, dtypes::f32);
  check_model(trace_from(bert(x, batch, seq)), {h}, bert(h, batch, seq), 10);
  models::Gpt2Block gpt(hidden, 4, dtypes::f32);
  check_model(trace_from(gpt(x, batch, seq)), {h}, gpt(h, batch, seq), 10);
}
