// Defining a new operator by its compute definition.
//
// An operator is a task: named inputs, outputs given as compute definitions over the inputs,
// and attributes. The auto-scheduler turns the definition into kernels: element-wise parts are
// inlined, reductions get warp-shuffle and block reductions. Here we define
//     y[i] = sqrt(sum_j (x[i][j] * scale)^2)          (a scaled row-wise L2 norm)
// and run it eagerly through the kernel cache with ops::run_task.
//
// Part two: the operator is a graph citizen with no extra code. Given a symbolic tensor,
// run_task records it (a TaskOperator named ScaledRowNorm, holding its compute definition), so
// graph::optimize can fuse the element-wise work in front of it into its kernel. A kernel written
// directly in Hidet Script joins graphs through hidet::apply_operator (an opaque node that runs the
// kernel).
#include <cmath>
#include <iostream>

#include "hidet/graph.hpp"
#include "hidet/hidet.hpp"

using namespace hidet;
using hidet::ops::Idx;

/// A kernel of our own in Hidet Script: y = x * 2 + 1 over a [m, n] tensor.
CompiledModule build_affine(std::int64_t m, std::int64_t n) {
  using namespace hidet::lang;
  auto mod = script_module("affine");
  mod.kernel("affine", {f32[m][n], f32[m][n]}, [&](lang::Tensor x, lang::Tensor y) {
    attrs.cuda.grid_dim = int((m * n + 255) / 256);
    attrs.cuda.block_dim = 256;
    Expr i = threadIdx.x + blockIdx.x * 256;
    if_(i < int(m * n), [&] { y[i / int(n)][i % int(n)] = x[i / int(n)][i % int(n)] * 2.0f + 1.0f; });
  });
  return mod.build();
}

/// The kernel as an operator: eager on tensors with data, a graph node on symbolic ones.
Tensor affine(const Tensor &x) {
  auto run = [](const std::vector<Tensor> &in) {
    Tensor y = empty(in[0].shape(), f32, in[0].device());
    build_affine(in[0].shape()[0], in[0].shape()[1])(in[0], y); // compiled once, then cached on disk
    return std::vector<Tensor>{y};
  };
  return apply_operator("Affine", {x}, {{x.sym_shape(), f32, x.device()}}, run)[0];
}

/// The custom operator: builds the task on the first call for a shape, then reuses the kernel.
Tensor scaled_row_norm(const Tensor &x, double scale) {
  std::string attrs = "scale=" + std::to_string(scale);
  return ops::run_task(
      "scaled_row_norm{" + attrs + "}",
      [&] {
        auto in = ops::input("x", x.shape(), x.dtype());
        std::int64_t m = x.shape()[0], n = x.shape()[1];
        // The element-wise part: inlined into the reduction's kernel.
        auto scaled = ops::compute("scaled", {m, n}, [&](lang::Expr i, lang::Expr j) { return in[i][j] * float(scale); });
        auto sq = ops::reduce({m}, {n}, [&](const Idx &i, const Idx &r) {
          lang::Expr v = scaled.at({i[0], r[0]});
          return v * v;
        }, ops::ReduceKind::Sum);
        auto y = ops::compute("y", {m}, [&](lang::Expr i) { return lang::sqrt(sq[i]); });
        return ops::Task{"scaled_row_norm", {in}, {y}, attrs, {}};
      },
      {x})[0];
}

int main() {
  Tensor x = randn({3, 100}, f32);
  Tensor y = scaled_row_norm(x, 0.5);
  std::cout << "y = " << y << "\n";
  auto xv = x.to_double_vector(), yv = y.to_double_vector();
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 100; ++j) s += (xv[i * 100 + j] * 0.5) * (xv[i * 100 + j] * 0.5);
    if (std::abs(std::sqrt(s) - yv[i]) > 1e-3 * (1 + std::sqrt(s))) {
      std::cerr << "row " << i << ": " << yv[i] << " != " << std::sqrt(s) << "\n";
      return 1;
    }
  }

  // Part two: trace relu -> affine -> scaled_row_norm, optimize, run.
  Tensor xs = symbol_like(x);
  FlowGraph graph = trace_from(scaled_row_norm(ops::relu(affine(ops::relu(xs))), 0.5));
  FlowGraph opt = graph::optimize(graph);
  std::cout << graph << "\n" << opt << "\n";
  Tensor want = scaled_row_norm(ops::relu(affine(ops::relu(x))), 0.5), got = opt(x);
  auto wv = want.to_double_vector(), gv = got.to_double_vector();
  for (std::size_t i = 0; i < wv.size(); ++i)
    if (std::abs(wv[i] - gv[i]) > 1e-4 * (1 + std::abs(wv[i]))) {
      std::cerr << "graph row " << i << ": " << gv[i] << " != " << wv[i] << "\n";
      return 1;
    }
  std::cout << "ok\n";
  return 0;
}
