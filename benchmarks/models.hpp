// Models written from hidet's operators, with random weights: ResNet-50 (and smaller ResNets of
// the same bottleneck design), a BERT-base encoder (and smaller ones), and a GPT-2 block with
// causal attention. Each is a plain struct holding its weights; calling it applies the operators,
// eagerly on tensors with data or recording a graph on symbolic ones:
//
//   models::ResNet net(models::ResNet::Config{}, hidet::f16);     // ResNet-50
//   hidet::Tensor x = hidet::symbol({1, 3, 224, 224}, hidet::f16);
//   hidet::FlowGraph g = hidet::trace_from(net(x));
//
// Used by benchmarks/bench_models.cpp and, at small sizes, by tests/graph/test_models.cpp.
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include "hidet/graph.hpp"
#include "hidet/hidet.hpp"

namespace models {

using hidet::DataType;
using hidet::Tensor;
using hidet::Dim;
using hidet::SymShape;
namespace o = hidet::ops;

/// A weight of `shape` drawn from N(0, 1) / sqrt(fan_in).
inline Tensor weight(std::vector<std::int64_t> shape, std::int64_t fan_in, DataType dt) {
  return o::cast(hidet::randn(shape, hidet::f32) * (1.0 / std::sqrt(double(fan_in))), dt);
}
/// A vector of n values around `center` (biases, norms' scales and shifts).
inline Tensor vec(std::int64_t n, DataType dt, double center = 0, double spread = 0.1) {
  return o::cast(hidet::randn({n}, hidet::f32) * spread + center, dt);
}

/// Conv2d without bias + inference BatchNorm (+ ReLU).
struct ConvBN {
  Tensor w, mean, var, gamma, beta;
  std::int64_t stride, pad;
  ConvBN(std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t stride_, DataType dt)
      : w(weight({cout, cin, k, k}, cin * k * k, dt)), mean(vec(cout, dt)), var(o::abs(vec(cout, dt, 1.0, 0.1))),
        gamma(vec(cout, dt, 1.0)), beta(vec(cout, dt)), stride(stride_), pad(k / 2) {}
  Tensor operator()(const Tensor &x, bool relu = true) const {
    Tensor y = o::batch_norm(o::conv2d(x, w, std::nullopt, {stride}, {pad}), mean, var, gamma, beta);
    return relu ? o::relu(y) : y;
  }
};

/// ResNet with bottleneck blocks (ResNet-50 by default), NCHW.
struct ResNet {
  struct Config {
    std::vector<int> blocks{3, 4, 6, 3};
    std::int64_t width = 64; ///< channels of the stem; stage s has width * 2^s (x4 at the output)
    std::int64_t classes = 1000;
  };
  struct Bottleneck {
    ConvBN c1, c2, c3;
    std::optional<ConvBN> down;
    Bottleneck(std::int64_t cin, std::int64_t mid, std::int64_t stride, DataType dt)
        : c1(cin, mid, 1, 1, dt), c2(mid, mid, 3, stride, dt), c3(mid, mid * 4, 1, 1, dt) {
      if (stride != 1 || cin != mid * 4) down.emplace(cin, mid * 4, 1, stride, dt);
    }
    Tensor operator()(const Tensor &x) const {
      Tensor y = c3(c2(c1(x)), false);
      return o::relu(y + (down ? (*down)(x, false) : x));
    }
  };
  ConvBN stem;
  std::vector<Bottleneck> blocks;
  Tensor fc_w, fc_b;

  ResNet(const Config &cfg, DataType dt) : stem(3, cfg.width, 7, 2, dt) {
    std::int64_t cin = cfg.width;
    for (std::size_t s = 0; s < cfg.blocks.size(); ++s) {
      std::int64_t mid = cfg.width << s;
      for (int b = 0; b < cfg.blocks[s]; ++b) {
        blocks.emplace_back(cin, mid, b == 0 && s > 0 ? 2 : 1, dt);
        cin = mid * 4;
      }
    }
    fc_w = weight({cfg.classes, cin}, cin, dt), fc_b = vec(cfg.classes, dt);
  }
  Tensor operator()(const Tensor &x) const {
    Tensor y = o::max_pool2d(stem(x), {3}, {2}, {1});
    for (const auto &b : blocks) y = b(y);
    y = o::flatten(o::adaptive_avg_pool2d(y, {1, 1}), 1);
    return o::linear(y, fc_w, fc_b);
  }
};

/// A BERT encoder (BERT-base by default) on hidden states [batch * seq, hidden].
struct Bert {
  struct Config {
    int layers = 12;
    std::int64_t hidden = 768, heads = 12, ffn = 3072;
  };
  struct Layer {
    std::int64_t hidden, heads;
    Tensor wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2;
    Layer(const Config &c, DataType dt) : hidden(c.hidden), heads(c.heads) {
      auto w = [&](std::int64_t i, std::int64_t j) { return weight({i, j}, i, dt); };
      wq = w(hidden, hidden), wk = w(hidden, hidden), wv = w(hidden, hidden), wo = w(hidden, hidden);
      bq = vec(hidden, dt), bk = vec(hidden, dt), bv = vec(hidden, dt), bo = vec(hidden, dt);
      w1 = w(hidden, c.ffn), c1 = vec(c.ffn, dt), w2 = w(c.ffn, hidden), c2 = vec(hidden, dt);
      g1 = vec(hidden, dt, 1.0), b1 = vec(hidden, dt), g2 = vec(hidden, dt, 1.0), b2 = vec(hidden, dt);
    }
    /// x: [batch * seq, hidden]; batch and seq may be symbols (a graph traced once for all sizes).
    Tensor operator()(const Tensor &x, Dim batch, Dim seq, bool causal) const {
      auto split = [&](const Tensor &t) {
        return o::transpose(t.reshape(SymShape{batch, seq, heads, hidden / heads}), 1, 2);
      };
      Tensor q = split(o::matmul(x, wq) + bq), k = split(o::matmul(x, wk) + bk), v = split(o::matmul(x, wv) + bv);
      Tensor a = o::transpose(o::scaled_dot_product_attention(q, k, v, std::nullopt, causal), 1, 2)
                     .reshape(SymShape{batch * seq, hidden});
      Tensor h = o::layer_norm(o::matmul(a, wo) + bo + x, 1, g1, b1);
      Tensor f = o::gelu(o::matmul(h, w1) + c1);
      return o::layer_norm(o::matmul(f, w2) + c2 + h, 1, g2, b2);
    }
  };
  std::vector<Layer> layers;
  Bert(const Config &c, DataType dt) {
    for (int i = 0; i < c.layers; ++i) layers.emplace_back(c, dt);
  }
  Tensor operator()(const Tensor &x, Dim batch, Dim seq) const {
    Tensor y = x;
    for (const auto &l : layers) y = l(y, batch, seq, false);
    return y;
  }
};

/// A GPT-2 block (pre-norm, causal attention, tanh GELU) on [batch * seq, hidden].
struct Gpt2Block {
  std::int64_t hidden, heads;
  Tensor g1, b1, wqkv_q, wqkv_k, wqkv_v, bq, bk, bv, wo, bo, g2, b2, w1, c1, w2, c2;
  Gpt2Block(std::int64_t hidden_, std::int64_t heads_, DataType dt) : hidden(hidden_), heads(heads_) {
    auto w = [&](std::int64_t i, std::int64_t j) { return weight({i, j}, i, dt); };
    g1 = vec(hidden, dt, 1.0), b1 = vec(hidden, dt), g2 = vec(hidden, dt, 1.0), b2 = vec(hidden, dt);
    wqkv_q = w(hidden, hidden), wqkv_k = w(hidden, hidden), wqkv_v = w(hidden, hidden), wo = w(hidden, hidden);
    bq = vec(hidden, dt), bk = vec(hidden, dt), bv = vec(hidden, dt), bo = vec(hidden, dt);
    w1 = w(hidden, 4 * hidden), c1 = vec(4 * hidden, dt), w2 = w(4 * hidden, hidden), c2 = vec(hidden, dt);
  }
  Tensor operator()(const Tensor &x, std::int64_t batch, std::int64_t seq) const {
    auto split = [&](const Tensor &t) { return o::transpose(t.reshape({batch, seq, heads, hidden / heads}), 1, 2); };
    Tensor n1 = o::layer_norm(x, 1, g1, b1);
    Tensor q = split(o::matmul(n1, wqkv_q) + bq), k = split(o::matmul(n1, wqkv_k) + bk),
           v = split(o::matmul(n1, wqkv_v) + bv);
    Tensor a = o::transpose(o::scaled_dot_product_attention(q, k, v, std::nullopt, true), 1, 2)
                   .reshape({batch * seq, hidden});
    Tensor h = x + o::matmul(a, wo) + bo;
    Tensor f = o::gelu(o::matmul(o::layer_norm(h, 1, g2, b2), w1) + c1, true);
    return h + o::matmul(f, w2) + c2;
  }
};

} // namespace models
