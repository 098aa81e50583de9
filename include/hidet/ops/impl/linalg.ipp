// Definitions for hidet/ops/linalg.hpp.
#pragma once

#include "hidet/ops/linalg.hpp"

#include <set>
#include <string>
#include <vector>

#include "hidet/ops/cache.hpp"
#include "hidet/ops/compute.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/schedule_common.hpp"
#include "hidet/ops/transform.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// The plan of A X = B for A: [batch, n, n], B and X: [batch, n, k] (see linalg.hpp): thread t
/// of the batch * k threads solves column t % k of system t / k.
HIDET_INLINE Plan solve_triangular_plan(const Dim &batch, const Dim &n, const Dim &k, DataType dt, bool upper,
                                        bool unit) {
  using namespace hidet::lang;
  Plan plan;
  plan.module = script_module("solve_triangular");
  const SymShape as{batch, n, n}, bs{batch, n, k};
  std::set<std::string> names;
  for (const Dim &d : {batch, n, k})
    for (const auto &s : d.symbols()) names.insert(s);
  plan.symbols.assign(names.begin(), names.end());
  plan.buffers.push_back({PlanBuffer::Role::Input, 0, "a", as, dt});
  plan.buffers.push_back({PlanBuffer::Role::Input, 1, "b", bs, dt});
  plan.buffers.push_back({PlanBuffer::Role::Output, 0, "x", bs, dt});
  const Dim columns = batch * k;
  define_kernel(
      plan.module, "solve_triangular",
      {param_spec("a", dt, as), param_spec("b", dt, bs), param_spec("x", dt, bs)},
      [&](const std::vector<ir::Var> &p) {
        attrs.cuda.grid_dim = blocks_for(columns, 128);
        attrs.cuda.block_dim = 128;
        Var t = blockIdx.x * 128 + threadIdx.x;
        const Expr N = dim_expr(n), K = dim_expr(k);
        if_(t < dim_expr(columns), [&] {
          Var z = t / K, c = t % K;
          auto at = [&](std::size_t param, const Expr &r, const Expr &col) {
            return Expr(lang::Element(p[param], {z.ir(), r.ir(), col.ir()}, {}).to_ir({}));
          };
          // Row r = i (forward) or n - 1 - i (backward); the rows solved before it are the
          // others of its triangle.
          for_(range(N), [&](Var i) {
            Var r = upper ? Expr(N - 1 - i) : Expr(i);
            Var s = let(dt, at(1, r, c).ir(), "s");
            for_(range(i), [&](Var j) {
              Var q = upper ? Expr(N - 1 - j) : Expr(j);
              s = s - at(0, r, q) * at(2, q, c);
            });
            if (!unit) s = s / at(0, r, r);
            store(p[2], {z.ir(), r.ir(), c.ir()}, s.ir());
          });
        });
      },
      plan.symbols);
  plan.steps.push_back({"solve_triangular", {0, 1, 2}, columns * n * n});
  return plan;
}

} // namespace hidet::ops::detail

namespace hidet::ops {

HIDET_INLINE Tensor solve_triangular(const Tensor &a, const Tensor &b, bool upper, bool left, bool unitriangular) {
  const SymShape as = a.sym_shape(), bs = b.sym_shape();
  const std::string sig = str_cat("A of shape ", shape_str(as), " and B of shape ", shape_str(bs));
  if (as.size() < 2 || bs.size() < 2)
    throw ValueError(str_cat("solve_triangular: A and B need at least 2 dimensions; got ", sig));
  if (as[as.size() - 1] != as[as.size() - 2])
    throw ValueError(str_cat("solve_triangular: A must be square in its last two dimensions; got ", sig));
  const Dim n = as.back();
  if ((left ? bs[bs.size() - 2] : bs.back()) != n)
    throw ValueError(str_cat("solve_triangular: B must have ", n.str(), " ", left ? "rows" : "columns",
                             " (A is ", n.str(), " x ", n.str(), ", left=", left ? "true" : "false", "); got ", sig));
  if (a.dtype() != b.dtype())
    throw ValueError(str_cat("solve_triangular: A and B must have one dtype; got ", a.dtype(), " and ", b.dtype()));
  if (a.dtype() != dtypes::f32 && a.dtype() != dtypes::f64)
    throw ValueError(str_cat("solve_triangular: dtype ", a.dtype(),
                             " is not supported (f32 or f64, as PyTorch on CUDA); cast A and B first"));
  if (!left) // X A = B  <=>  A^T X^T = B^T, the other triangle
    return transpose(solve_triangular(transpose(a, -2, -1), transpose(b, -2, -1), !upper, true, unitriangular),
                     -2, -1);
  const SymShape lead_a(as.begin(), as.end() - 2), lead_b(bs.begin(), bs.end() - 2);
  const SymShape lead = broadcast_shapes("solve_triangular", lead_a, lead_b, a.dtype(), b.dtype());
  const Dim k = bs.back(), batch = sym_numel(lead);
  auto full = [&](const Tensor &t, SymShape tail) {
    SymShape s = lead;
    s.insert(s.end(), tail.begin(), tail.end());
    Tensor e = t.sym_shape() == s ? t : broadcast_to(t, s);
    return e.reshape(SymShape{batch, tail[0], tail[1]});
  };
  const Tensor a3 = full(a, {n, n}), b3 = full(b, {n, k});
  SymShape out = lead;
  out.push_back(n);
  out.push_back(k);
  const std::string key = str_cat("solve_triangular{upper=", upper ? "true" : "false",
                                  ", unitriangular=", unitriangular ? "true" : "false", "}");
  const DataType dt = a.dtype();
  Tensor x = run_plan(key,
                      [&] {
                        return detail::solve_triangular_plan(a3.sym_shape()[0], n, k, dt, upper, unitriangular);
                      },
                      {a3, b3})[0];
  return x.reshape(out);
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
