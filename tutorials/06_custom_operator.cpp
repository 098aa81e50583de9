// Defining a new operator by its compute definition.
//
// An operator is a task: named inputs, outputs given as compute definitions over the inputs,
// and attributes. The auto-scheduler turns the definition into kernels: element-wise parts are
// inlined, reductions get warp-shuffle and block reductions. Here we define
//     y[i] = sqrt(sum_j (x[i][j] * scale)^2)          (a scaled row-wise L2 norm)
// and run it eagerly through the kernel cache with ops::run_task.
#include <cmath>
#include <iostream>

#include "hidet/hidet.hpp"
#include "hidet/ops.hpp"

using namespace hidet;
using hidet::ops::Idx;

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
  std::cout << "ok\n";
  return 0;
}
