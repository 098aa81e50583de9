// graph::shard_tensor_parallel (graph/tensor_parallel.hpp) on 2 and 4 emulated ranks: a Llama-style
// block (RMSNorm, Q/K/V heads split, causal attention, a SiLU-gated MLP) and a BERT-style block
// (biases, GELU) sharded with one all-reduce per attention block and per MLP, printed and run
// against the whole graph; a symbolic batch; a vocabulary-parallel head gathered at the output; a
// group left whole; a world of one.
#include "../ops/ops_test_util.hpp"

#include "hidet/distributed.hpp"
#include "hidet/graph.hpp"

using namespace ops_test;
using distributed::Communicator;

namespace {
const bool force_emulation = (hidet::set_cuda_emulation(true), true);

/// A weight every rank makes alike (seeded by `salt`), on `dev`.
Tensor shared_weight(const o::Shape &shape, std::uint64_t salt, Device dev, double scale) {
  std::mt19937_64 g(g_seed * 7919 + salt);
  std::normal_distribution<double> n(0, scale);
  std::vector<double> v(std::size_t(o::shape_numel(shape)));
  for (auto &x : v)
    x = n(g);
  return asarray(v, shape, dtypes::f32, dev);
}

struct Block {
  std::int64_t hidden = 32, heads = 4, ffn = 64;
  bool bert = false; ///< biases and GELU; else Llama's RMSNorm and SiLU-gated MLP
  Tensor wq, wk, wv, wo, w1, w3, w2, bq, bk, bv, bo, b1, b2;
  Block(Device dev, bool bert_, std::uint64_t salt) : bert(bert_) {
    auto w = [&](std::int64_t i, std::int64_t j) {
      return shared_weight({i, j}, salt++, dev, 1.0 / std::sqrt(double(i)));
    };
    auto b = [&](std::int64_t n) { return shared_weight({n}, salt++, dev, 0.1); };
    wq = w(hidden, hidden), wk = w(hidden, hidden), wv = w(hidden, hidden), wo = w(hidden, hidden);
    w1 = w(hidden, ffn), w3 = w(hidden, ffn), w2 = w(ffn, hidden);
    bq = b(hidden), bk = b(hidden), bv = b(hidden), bo = b(hidden), b1 = b(ffn), b2 = b(hidden);
  }
  /// x: [batch, seq, hidden].
  Tensor operator()(const Tensor &x) const {
    SymShape s = x.sym_shape();
    auto heads_of = [&](const Tensor &t) {
      return o::transpose(t.reshape(SymShape{s[0], s[1], heads, hidden / heads}), 1, 2);
    };
    auto proj = [&](const Tensor &t, const Tensor &w, const Tensor &bias) {
      return bert ? o::matmul(t, w) + bias : o::matmul(t, w);
    };
    Tensor n1 = bert ? x : o::rms_norm(x, 1);
    Tensor q = heads_of(proj(n1, wq, bq)), k = heads_of(proj(n1, wk, bk)),
           v = heads_of(proj(n1, wv, bv));
    Tensor a = o::transpose(o::scaled_dot_product_attention(q, k, v, std::nullopt, !bert), 1, 2)
                   .reshape(SymShape{s[0], s[1], hidden});
    Tensor h = x + proj(a, wo, bo);
    Tensor n2 = bert ? o::layer_norm(h, 1) : o::rms_norm(h, 1);
    Tensor f = bert ? o::gelu(proj(n2, w1, b1)) : o::silu(o::matmul(n2, w1)) * o::matmul(n2, w3);
    return h + proj(f, w2, b2);
  }
};

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
    ++n;
  return n;
}

void expect_close(const Tensor &got, const Tensor &want, const std::string &what) {
  auto g = got.to_double_vector(), w = want.to_double_vector();
  REQUIRE(g.size() == w.size());
  bool nonzero = false;
  for (std::size_t i = 0; i < g.size(); ++i) {
    nonzero = nonzero || g[i] != 0;
    if (std::abs(g[i] - w[i]) > 1e-4 * (1 + std::abs(w[i]))) {
      FAIL(what, ": index ", i, " got ", g[i], " want ", w[i], " (seed ", g_seed, ")");
      return;
    }
  }
  CHECK_MESSAGE(nonzero, what, ": all zero (seed ", g_seed, ")");
}
} // namespace

TEST_CASE("tensor parallel: Llama and BERT blocks, one all-reduce per attention and per MLP") {
  for (auto [world, bert] : {std::pair{2, false}, std::pair{4, false}, std::pair{2, true}}) {
    CAPTURE(world);
    CAPTURE(bert);
    // The whole model's output, once (the weights are the same on every device).
    Tensor x0 = shared_weight({2, 5, 32}, 1, Device::cuda(0), 1.0);
    Tensor want = Block(Device::cuda(0), bert, 200)(Block(Device::cuda(0), bert, 100)(x0));
    distributed::run_emulated(world, [&](const Communicator &comm) {
      const Device dev = comm.device();
      Block b1(dev, bert, 100), b2(dev, bert, 200);
      Tensor x = shared_weight({2, 5, 32}, 1, dev, 1.0);
      FlowGraph whole = trace_from(b2(b1(symbol_like(x))));
      graph::TensorParallelReport rep;
      FlowGraph mine = graph::shard_tensor_parallel(whole, comm, &rep);
      INFO(mine.str());
      CHECK(rep.column_parallel == (bert ? 4 : 5) * 2);
      CHECK(rep.row_parallel == 2 * 2);
      CHECK(rep.all_gathers == 0);
      CHECK(rep.groups_left_whole == 0);
      const std::string printed = mine.str();
      CHECK(count(printed, "AllReduce(") == 4);
      CHECK(count(printed, "AllGather(") == 0);
      // The heads are split: each rank's attention runs heads / world heads.
      CHECK(printed.find(
                str_cat("float32[2, ", 4 / world, ", 5, 8][cuda] = ScaledDotProductAttention")) !=
            std::string::npos);
      graph::CompiledGraph cg(graph::optimize(mine));
      expect_close(cg(x), want, "sharded graph, optimized and compiled");
    });
  }
}

TEST_CASE("tensor parallel: a symbolic batch; a vocabulary-parallel head; a group left whole") {
  distributed::run_emulated(2, [&](const Communicator &comm) {
    const Device dev = comm.device();
    Block blk(dev, false, 300);
    Tensor head = shared_weight({32, 50}, 2, dev, 0.2);
    Tensor xs = symbol({"n", 3, 32}, dtypes::f32, dev, "x");
    // The block, then a head whose logits are the output: gathered there (one all-gather).
    FlowGraph whole = trace_from(o::matmul(blk(xs), head));
    graph::TensorParallelReport rep;
    FlowGraph mine = graph::shard_tensor_parallel(whole, comm, &rep);
    INFO(mine.str());
    CHECK(rep.column_parallel == 6);
    CHECK(rep.row_parallel == 2);
    CHECK(rep.all_gathers == 1);
    for (std::int64_t n : {1, 3}) {
      Tensor x = shared_weight({n, 3, 32}, 3 + std::uint64_t(n), dev, 1.0);
      expect_close(mine.run({x})[0], whole.run({x})[0], str_cat("symbolic batch n=", n));
    }
    // A product whose value is normalized over the columns it would cut is left whole; the
    // product after it, whose columns are the output, is cut and gathered there.
    Tensor x2 = symbol({4, 32}, dtypes::f32, dev, "x");
    FlowGraph g2 = trace_from(
        o::matmul(o::softmax(o::matmul(x2, head), -1), shared_weight({50, 8}, 4, dev, 0.2)));
    FlowGraph m2 = graph::shard_tensor_parallel(g2, comm, &rep);
    INFO(m2.str());
    CHECK(rep.groups_left_whole == 1);
    CHECK(rep.column_parallel == 1);
    CHECK(rep.all_gathers == 1);
    CHECK(m2.str().find("float32[4, 50][cuda] = Softmax(") != std::string::npos);
    Tensor in2 = shared_weight({4, 32}, 5, dev, 1.0);
    expect_close(m2.run({in2})[0], g2.run({in2})[0], "a group left whole");
  });
  distributed::run_emulated(1, [&](const Communicator &comm) {
    Block blk(comm.device(), true, 400);
    FlowGraph g = trace_from(blk(symbol({1, 2, 32}, dtypes::f32, comm.device())));
    CHECK(graph::shard_tensor_parallel(g, comm).str() == g.str());
  });
  Tensor x = symbol({2, 3}, dtypes::f32);
  CHECK_THROWS_WITH_AS(graph::shard_tensor_parallel(trace_from(o::relu(x)), Communicator()),
                       doctest::Contains("undefined"), ValueError);
}
