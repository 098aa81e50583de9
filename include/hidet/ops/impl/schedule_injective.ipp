// Definitions for hidet/ops/schedule_injective.hpp.
#pragma once

#include "hidet/ops/schedule_injective.hpp"

#include "hidet/ops/schedule_transpose.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

HIDET_INLINE int injective_elems_per_thread(DataType d, std::int64_t numel) {
  int e = std::max(1, std::min(8, int(16 / d.nbytes())));
  // A small output gets fewer elements per thread, so that its blocks fill the GPU: 49K elements
  // at 8 a thread were 24 blocks, about one warp an SM, each thread's 8 elements one after the
  // other (6 us on an H200 for EVA-02's rotary embedding, where one element a thread gives 192).
  if (numel >= 0)
    while (e > 1 && numel < std::int64_t(kInjectiveBlock) * e * kInjectiveMinBlocks) e /= 2;
  return e;
}

HIDET_INLINE void emit_injective(const TensorNode &node, const std::vector<ir::Var> &params, const std::vector<const TensorNode *> &reads,
                                 const std::map<const ir::VarNode *, const TensorNode *> &inlined) {
  using namespace hidet::lang;
  std::map<const ir::VarNode *, ir::Var> pmap;
  for (std::size_t i = 0; i < reads.size(); ++i) pmap[reads[i]->buf.get()] = params[i];
  const ir::Var &out = params.back();
  ir::Expr value = Inliner(pmap, inlined, {}).mutate(node.value);
  if (is_constant_shape(node.shape))
    if (auto t = find_transpose(value, node.axes, constant_shape(node.shape))) {
      emit_transpose_tiled(node, value, *t, out);
      return;
    }
  Dim n = sym_numel(node.shape);
  int e = injective_elems_per_thread(node.dtype, n.is_constant() ? n.value() : -1);
  std::int64_t per_block = std::int64_t(kInjectiveBlock) * e;
  attrs.cuda.grid_dim = blocks_for(n, per_block);
  attrs.cuda.block_dim = kInjectiveBlock;
  Var base = blockIdx.x * int(per_block) + threadIdx.x;
  for_(range(e).unroll(), [&](Var k) {
    Var flat = base + k * kInjectiveBlock;
    if_(flat < dim_expr(n), [&] {
      auto idx = unravel(flat.ir(), node.shape);
      std::map<const ir::VarNode *, ir::Expr> s;
      for (std::size_t a = 0; a < node.axes.size(); ++a) s[node.axes[a].get()] = idx[a];
      // The reshapes, slices and concatenations inlined into `value` compose their index
      // arithmetic; lowering's simplify_index pass cancels most of it under the flat index's range
      // (`flat < n` and the launch dimensions).
      store(out, idx, ReadRewriter(std::move(s), nullptr).mutate(value));
    });
  });
}

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"
