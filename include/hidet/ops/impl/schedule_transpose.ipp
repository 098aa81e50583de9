// Definitions for hidet/ops/schedule_transpose.hpp.
#pragma once

#include "hidet/ops/schedule_transpose.hpp"

#include "hidet/ir/equal.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// Elements per row of a shared tile s[l][a] of `ta` elements along a: padded to a multiple of 4
/// bytes plus one 4-byte word (one element more for 8-byte dtypes).
HIDET_INLINE int transpose_tile_row(int ta, DataType dt) {
  if (dt.nbytes() > 4) return ta + 1;
  int words = (ta * int(dt.nbytes()) + 3) / 4 + 1;
  return words * 4 / int(dt.nbytes());
}

HIDET_INLINE std::optional<TransposePattern>
find_transpose(const ir::Expr &value, const std::vector<ir::Var> &axes, const Shape &shape,
               std::int64_t tile_elems) {
  std::size_t d = axes.size();
  if (d < 2 || shape.back() < 2) return std::nullopt;
  const ir::VarNode *last = axes.back().get();
  struct Collect : ir::IRVisitor {
    std::vector<const ir::TensorElementNode *> reads;
    void visit_TensorElement(const ir::TensorElementNode *n) override {
      reads.push_back(n);
      ir::IRVisitor::visit_TensorElement(n);
    }
  } c;
  c.visit(value);
  TransposePattern p;
  for (auto *r : c.reads) {
    if (r->indices.empty()) continue;
    const ir::Expr &inner = r->indices.back();
    int a = -1;
    for (std::size_t k = 0; k + 1 < d; ++k)
      if (is_var(inner, axes[k].get())) a = int(k);
    if (a < 0 || (p.a >= 0 && a != p.a) || shape[std::size_t(a)] < 2) continue;
    bool walks_last = false;
    for (std::size_t k = 0; k + 1 < r->indices.size(); ++k)
      walks_last = walks_last || mentions(r->indices[k], last);
    if (!walks_last) continue;
    ir::Expr re = ir::TensorElementNode::make(r->base, r->indices, r->loc);
    bool seen = false;
    for (auto &q : p.reads)
      seen = seen || ir::structural_equal(q, re);
    if (seen) continue;
    p.a = a;
    p.reads.push_back(re);
  }
  if (p.reads.empty() || p.reads.size() > 4) return std::nullopt;
  std::int64_t A = shape[std::size_t(p.a)], L = shape.back();
  // Smaller tiles while the reads' shared tiles pass the 48 KB of static shared memory (four f32
  // reads of 4096 elements would take 65 KB).
  for (;; tile_elems /= 2) {
    std::int64_t side = 1;
    while (side * side < tile_elems)
      side *= 2;
    p.ta = std::min<std::int64_t>(side, pow2_ceil(A));
    p.tl = std::min<std::int64_t>(pow2_ceil(L), tile_elems / p.ta);
    p.ta = std::min<std::int64_t>(pow2_ceil(A), tile_elems / p.tl);
    std::int64_t bytes = 0;
    for (const auto &r : p.reads)
      bytes += p.tl * transpose_tile_row(int(p.ta), ir::dtype_of(r->type)) * std::int64_t(ir::dtype_of(r->type).nbytes());
    if (bytes <= 48 * 1024 || tile_elems <= 256) break;
  }
  return p;
}

HIDET_INLINE void emit_transpose_tiled(const TensorNode &node, const ir::Expr &value,
                                       const TransposePattern &p, const ir::Var &out) {
  using namespace hidet::lang;
  const Shape shape = constant_shape(node.shape);
  std::size_t d = shape.size();
  int a = p.a;
  std::int64_t A = shape[std::size_t(a)], L = shape.back();
  int TA = int(p.ta), TL = int(p.tl);
  std::int64_t tiles_a = (A + TA - 1) / TA, tiles_l = (L + TL - 1) / TL;
  Shape rest_shape;
  std::vector<std::size_t> rest_axes;
  for (std::size_t k = 0; k + 1 < d; ++k)
    if (int(k) != a) rest_shape.push_back(shape[k]), rest_axes.push_back(k);
  std::int64_t blocks = tiles_a * tiles_l * shape_numel(rest_shape);
  attrs.cuda.grid_dim = int(std::max<std::int64_t>(1, blocks));
  attrs.cuda.block_dim = kTransposeBlock;
  int iters = (TA * TL + kTransposeBlock - 1) / kTransposeBlock;
  bool exact = TA * TL % kTransposeBlock == 0;

  Var b = blockIdx.x;
  Var tid = threadIdx.x;
  Var l0 = b % int(tiles_l) * TL;
  Var a0 = b / int(tiles_l) % int(tiles_a) * TA;
  std::map<const ir::VarNode *, ir::Expr> fixed;
  if (!rest_shape.empty()) {
    Var rest = b / int(tiles_l * tiles_a);
    auto ridx = unravel(rest.ir(), rest_shape);
    for (std::size_t k = 0; k < rest_axes.size(); ++k)
      fixed[node.axes[rest_axes[k]].get()] = let(dtypes::i32, ridx[k], "i").ir();
  }
  // Shared tiles s[l][a], rows padded to a multiple of 4 bytes plus one 4-byte word.
  std::vector<lang::Tensor> tiles;
  for (std::size_t r = 0; r < p.reads.size(); ++r) {
    DataType dt = ir::dtype_of(p.reads[r]->type);
    tiles.push_back(shared_tensor(TensorSpec(dt, {ir::int32(TL), ir::int32(transpose_tile_row(TA, dt))}),
                                  str_cat("tile", r)));
  }
  auto at = [&](const Var &ga, const Var &gl) {
    auto s = fixed;
    s[node.axes[std::size_t(a)].get()] = ga.ir();
    s[node.axes.back().get()] = gl.ir();
    return s;
  };
  // Phase 1: consecutive threads along a (the reads' contiguous index).
  for_(range(iters).unroll(), [&](Var it) {
    Var e = tid + it * kTransposeBlock;
    Var al = e % TA, ll = e / TA;
    Var ga = a0 + al, gl = l0 + ll;
    Expr ok = ga < int(A) && gl < int(L);
    if (!exact) ok = ok && e < TA * TL;
    if_(ok, [&] {
      ReadRewriter rw(at(ga, gl), nullptr);
      for (std::size_t r = 0; r < p.reads.size(); ++r)
        tiles[r][ll][al] = Operand::of(rw.mutate(p.reads[r]), {});
    });
  });
  syncthreads();
  // Phase 2: consecutive threads along the last axis (the output's contiguous index).
  for_(range(iters).unroll(), [&](Var it) {
    Var e = tid + it * kTransposeBlock;
    Var ll = e % TL, al = e / TL;
    Var ga = a0 + al, gl = l0 + ll;
    Expr ok = ga < int(A) && gl < int(L);
    if (!exact) ok = ok && e < TA * TL;
    if_(ok, [&] {
      auto staged = [&](const ir::Expr &read, const std::vector<ir::Expr> &) -> ir::Expr {
        for (std::size_t r = 0; r < p.reads.size(); ++r)
          if (ir::structural_equal(read, p.reads[r]))
            return lang::Element(tiles[r].var(), {ll.ir(), al.ir()}, {}).to_ir({});
        return {};
      };
      auto s = at(ga, gl);
      ReadRewriter rw(s, staged);
      std::vector<ir::Expr> idx(d);
      for (std::size_t k = 0; k < d; ++k)
        idx[k] = ReadRewriter(s, nullptr).mutate(ir::Expr(node.axes[k]));
      store(out, idx, rw.mutate(value));
    });
  });
}

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"
