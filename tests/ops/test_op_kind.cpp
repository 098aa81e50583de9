// Operator kinds (include/hidet/ops/op_kind.hpp): every listed kind is the kind of the node its
// operator records, traced on symbolic inputs (no kernel runs), so that a kind whose name drifts
// from its operator's is caught here; names not listed are OpKind::other.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "hidet/ops.hpp"
#include "hidet/ops/collective.hpp"

using namespace hidet;
using namespace hidet::ops;

static_assert(op_kind("Matmul") == OpKind::Matmul);
static_assert(op_kind_name(OpKind::Conv2dNhwc) == "Conv2dNhwc");
static_assert(op_kind("FusedSum") == OpKind::other && op_kind("") == OpKind::other);
static_assert(op_kind_name(OpKind::other).empty());

TEST_CASE("every listed kind is the kind its operator records") {
  const DataType f32 = dtypes::f32, f16 = dtypes::f16;
  Tensor x = symbol({2, 8, 6, 6}, f32), y = symbol({2, 8, 6, 6}, f32);
  Tensor a = symbol({6, 4}, f32), b = symbol({4, 5}, f32);
  Tensor w = symbol({8, 8, 3, 3}, f32), c = symbol({8}, f32);
  Tensor q = symbol({1, 2, 8, 64}, f16), k = symbol({1, 2, 8, 64}, f16),
         v = symbol({1, 2, 8, 64}, f16);
  Tensor qs = symbol({"b", 2, 8, 64}, f16), ks = symbol({"b", 2, 8, 64}, f16),
         vs = symbol({"b", 2, 8, 64}, f16);
  auto product_epilogue = std::make_shared<const Epilogue>(Epilogue::identity({6, 5}, f32));
  const std::vector<std::pair<OpKind, Tensor>> recorded{
      {OpKind::Add, x + y},
      {OpKind::Sub, x - y},
      {OpKind::Mul, x * y},
      {OpKind::Mul, x * 0.5},
      {OpKind::Div, x / y},
      {OpKind::Div, x / 2.0},
      {OpKind::Neg, ops::neg(x)},
      {OpKind::Abs, ops::abs(x)},
      {OpKind::Exp, ops::exp(x)},
      {OpKind::Tanh, ops::tanh(x)},
      {OpKind::Relu, ops::relu(x)},
      {OpKind::Sigmoid, ops::sigmoid(x)},
      {OpKind::Silu, ops::silu(x)},
      {OpKind::Gelu, ops::gelu(x)},
      {OpKind::Cast, ops::cast(x, f16)},
      {OpKind::Reshape, x.reshape({2, 8, 36})},
      {OpKind::Reshape, ops::reshape(x, {16, 36})},
      {OpKind::Permute, ops::permute(x, {0, 2, 3, 1})},
      {OpKind::Slice, ops::slice(x, {1}, {0}, {4})},
      {OpKind::Concat, ops::concat({x, y}, 1)},
      {OpKind::Matmul, ops::matmul(a, b)},
      {OpKind::FusedMatmul, ops::matmul(a, b, product_epilogue, {})},
      {OpKind::Conv2d, ops::conv2d(x, w, c, {1}, {1})},
      {OpKind::Conv2dNhwc,
       ops::conv2d_nhwc(ops::permute(x, {0, 2, 3, 1}), ops::permute(w, {0, 2, 3, 1}))},
      {OpKind::BatchNorm, ops::batch_norm(x, c, c, c, c)},
      {OpKind::GroupNorm, ops::group_norm(x, 2, c, c).trace().op->inputs()[0]}, // under its reshape back
      {OpKind::MaxPool2d, ops::max_pool2d(x, {2})},
      {OpKind::AvgPool2d, ops::avg_pool2d(x, {2})},
      {OpKind::AdaptiveAvgPool2d, ops::adaptive_avg_pool2d(x, {1, 1})},
      {OpKind::ScaledDotProductAttention, ops::scaled_dot_product_attention(q, k, v)},
      {OpKind::ScaledDotProductAttentionHeadsLast,
       ops::scaled_dot_product_attention_heads_last(qs, ks, vs)},
  };
  // The collectives, traced by rank 0 of two emulated ranks (tracing runs nothing).
  std::vector<std::pair<OpKind, Tensor>> collectives;
  set_cuda_emulation(true);
  distributed::run_emulated(2, [&](const distributed::Communicator &comm) {
    if (comm.rank() != 0) return;
    Tensor z = symbol({2, 8, 6}, f32, comm.device());
    collectives = {{OpKind::AllReduce, ops::all_reduce(z, comm)},
                   {OpKind::AllGather, ops::all_gather(z, comm).trace().op->inputs()[0]},
                   {OpKind::ReduceScatter, ops::reduce_scatter(z, comm)},
                   {OpKind::Broadcast, ops::broadcast(z, comm)},
                   {OpKind::Send, ops::send(z, comm, 1)},
                   {OpKind::Recv, ops::recv(z, comm, 1)}};
  });
  std::set<OpKind> seen;
  auto all = recorded;
  all.insert(all.end(), collectives.begin(), collectives.end());
  for (const auto &[kind, t] : all) {
    CAPTURE(op_kind_name(kind));
    REQUIRE(t.trace());
    CHECK(t.trace().op->name() == op_kind_name(kind));
    CHECK(kind_of(*t.trace().op) == kind);
    seen.insert(kind);
  }
  // Every kind listed is traced above.
#define HIDET_TEST_KIND_SEEN(name)                                                                 \
  CHECK_MESSAGE(seen.count(OpKind::name), "no operator above records " #name);
  HIDET_OP_KINDS(HIDET_TEST_KIND_SEEN)
#undef HIDET_TEST_KIND_SEEN
  // Operators not listed: fused nodes and operators no pass treats apart.
  CHECK(kind_of(*ops::softmax(x, -1).trace().op) == OpKind::other);
  CHECK(kind_of(*ops::sum(x, {1}).trace().op) == OpKind::other);
}
