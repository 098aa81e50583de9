// Definitions for hidet/ops/schedule_matmul.hpp.
#pragma once

#include "hidet/ops/schedule_matmul.hpp"

#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

HIDET_INLINE Plan matmul_plan(const Shape &sa, DataType da, const Shape &sb, DataType db, const Shape &out, DataType out_dtype,
                              DataType cd) {
  using namespace hidet::lang;
  Plan plan;
  plan.module = script_module("matmul");
  plan.buffers.push_back({PlanBuffer::Role::Input, 0, "a", to_sym_shape(sa), da});
  plan.buffers.push_back({PlanBuffer::Role::Input, 1, "b", to_sym_shape(sb), db});
  plan.buffers.push_back({PlanBuffer::Role::Output, 0, "c", to_sym_shape(out), out_dtype});
  std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), batch(out.begin(), out.end() - 2);
  std::int64_t nbatch = shape_numel(batch);
  HIDET_ASSERT(nbatch <= 65535, "matmul: batch of ", nbatch, " exceeds the grid's z limit");
  std::vector<lang::ParamSpec> specs{param_spec("a", da, sa), param_spec("b", db, sb), param_spec("c", out_dtype, out)};
  constexpr int BM = kMatmulTileM, BN = kMatmulTileN, BK = kMatmulTileK;
  define_kernel(plan.module, "matmul_tiled", specs, [&](const std::vector<ir::Var> &p) {
    auto tiles = [](std::int64_t v, int t) { return int(std::max<std::int64_t>(1, (v + t - 1) / t)); };
    attrs.cuda.grid_dim = {tiles(n, BN), tiles(m, BM), int(std::max<std::int64_t>(nbatch, 1))};
    attrs.cuda.block_dim = 256;
    // Batch indices of a and b for this block.
    Var bz = blockIdx.z;
    auto bidx = unravel(bz.ir(), batch);
    std::vector<ir::Expr> ia, ib;
    for (std::size_t d = 0; d < ba.size(); ++d) ia.push_back(ba[d] == 1 ? ir::int32(0) : bidx[batch.size() - ba.size() + d]);
    for (std::size_t d = 0; d < bb.size(); ++d) ib.push_back(bb[d] == 1 ? ir::int32(0) : bidx[batch.size() - bb.size() + d]);
    auto at = [](const ir::Var &t, std::vector<ir::Expr> idx, const Expr &i, const Expr &j) {
      idx.push_back(i.ir()), idx.push_back(j.ir());
      return Expr(lang::Element(t, idx, {}).to_ir({}));
    };
    lang::Tensor as = shared_tensor(TensorSpec(cd, {ir::int32(BK), ir::int32(BM)}), "as");
    lang::Tensor bs = shared_tensor(TensorSpec(cd, {ir::int32(BK), ir::int32(BN)}), "bs");
    lang::Tensor acc = register_tensor(TensorSpec(cd, {ir::int32(4), ir::int32(4)}), "acc");
    lang::Tensor ar = register_tensor(TensorSpec(cd, {ir::int32(4)}), "ar");
    lang::Tensor br = register_tensor(TensorSpec(cd, {ir::int32(4)}), "br");
    Var tid = threadIdx.x;
    Var ty = tid / 16, tx = tid % 16;
    Var m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    Expr zero = Expr(cd.is_float() ? ir::ConstantNode::make_float(cd, 0) : ir::ConstantNode::make_int(cd, 0));
    for_(range(4).unroll(), [&](Var i) {
      for_(range(4).unroll(), [&](Var j) { acc[i][j] = zero; });
    });
    for_(range(0, int(k), BK), [&](Var k0) {
      for_(range(4).unroll(), [&](Var l) {
        Var e = tid + l * 256;
        // a: 64 rows x 16 columns, consecutive threads along k.
        Var row = e / BK, kk = e % BK;
        Var gr = m0 + row, gk = k0 + kk;
        Expr ok = gr < int(m) && gk < int(k);
        as[kk][row] = select(ok, cast(at(p[0], ia, min(gr, int(m - 1)), min(gk, int(k - 1))), cd), zero);
        // b: 16 rows x 64 columns, consecutive threads along n.
        Var kb = e / BN, col = e % BN;
        Var gkb = k0 + kb, gc = n0 + col;
        Expr okb = gkb < int(k) && gc < int(n);
        bs[kb][col] = select(okb, cast(at(p[1], ib, min(gkb, int(k - 1)), min(gc, int(n - 1))), cd), zero);
      });
      syncthreads();
      for_(range(BK).unroll(), [&](Var kk) {
        for_(range(4).unroll(), [&](Var i) {
          ar[i] = as[kk][ty + i * 16];
          br[i] = bs[kk][tx + i * 16];
        });
        for_(range(4).unroll(), [&](Var i) {
          for_(range(4).unroll(), [&](Var j) { acc[i][j] = acc[i][j] + ar[i] * br[j]; });
        });
      });
      syncthreads();
    });
    for_(range(4).unroll(), [&](Var i) {
      for_(range(4).unroll(), [&](Var j) {
        Var r = m0 + ty + i * 16, c = n0 + tx + j * 16;
        if_(r < int(m) && c < int(n), [&] {
          std::vector<ir::Expr> oi(bidx.begin(), bidx.end());
          oi.push_back(r.ir()), oi.push_back(c.ir());
          store(p[2], oi, Expr(acc[i][j]).ir());
        });
      });
    });
  });
  plan.steps.push_back({"matmul_tiled", {0, 1, 2}, shape_numel(out)});
  return plan;
}

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"
