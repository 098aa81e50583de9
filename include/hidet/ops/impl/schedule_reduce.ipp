// Definitions for hidet/ops/schedule_reduce.hpp.
#pragma once

#include "hidet/ops/schedule_reduce.hpp"

#include <cmath>
#include <limits>

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

HIDET_INLINE ir::Expr reduce_init(ReduceKind k, DataType d) {
  auto c = [&](double v) { return d.is_float() ? ir::ConstantNode::make_float(d, v) : ir::ConstantNode::make_int(d, std::int64_t(v)); };
  auto lowest = [&]() -> ir::Expr {
    if (d.is_float()) return ir::ConstantNode::make_float(d, -std::numeric_limits<double>::infinity());
    if (!d.is_signed()) return ir::ConstantNode::make_int(d, 0);
    return ir::ConstantNode::make_int(d, d.nbytes() == 8 ? std::numeric_limits<std::int64_t>::min() : -(std::int64_t(1) << (8 * d.nbytes() - 1)));
  };
  auto highest = [&]() -> ir::Expr {
    if (d.is_float()) return ir::ConstantNode::make_float(d, std::numeric_limits<double>::infinity());
    if (!d.is_signed()) return ir::ConstantNode::make_int(d, -1); // all bits set
    return ir::ConstantNode::make_int(d, d.nbytes() == 8 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << (8 * d.nbytes() - 1)) - 1);
  };
  switch (k) {
  case ReduceKind::Sum:
  case ReduceKind::Mean: return c(0);
  case ReduceKind::Prod: return c(1);
  case ReduceKind::Max:
  case ReduceKind::ArgMax: return lowest();
  case ReduceKind::Min:
  case ReduceKind::ArgMin: return highest();
  case ReduceKind::And: return c(1);
  case ReduceKind::Or: return c(0);
  }
  return c(0);
}

HIDET_INLINE void combine(ReduceKind k, Acc &acc, const lang::Expr &v, const lang::Expr *i) {
  using namespace hidet::lang;
  switch (k) {
  case ReduceKind::Sum:
  case ReduceKind::Mean: acc.v = lang::Operand(acc.v + v); break;
  case ReduceKind::Prod: acc.v = lang::Operand(acc.v * v); break;
  case ReduceKind::Max: acc.v = lang::Operand(select(v > acc.v || v != v, v, acc.v)); break; // NaN propagates
  case ReduceKind::Min: acc.v = lang::Operand(select(v < acc.v || v != v, v, acc.v)); break;
  case ReduceKind::And: acc.v = lang::Operand(min(acc.v, v)); break;
  case ReduceKind::Or: acc.v = lang::Operand(max(acc.v, v)); break;
  case ReduceKind::ArgMax:
  case ReduceKind::ArgMin: {
    Expr better = k == ReduceKind::ArgMax ? (v > acc.v) : (v < acc.v);
    Expr take = better || (v == acc.v && *i < *acc.i);
    if_(take, [&] {
      acc.v = lang::Operand(v);
      *acc.i = lang::Operand(*i);
    });
    break;
  }
  }
}

HIDET_INLINE void warp_reduce(ReduceKind k, Acc &acc, int width) {
  using namespace hidet::lang;
  for (int off = width / 2; off >= 1; off /= 2) {
    Var ov = shfl_xor_sync(0xffffffffu, acc.v, off);
    if (acc.i) {
      Var oi = shfl_xor_sync(0xffffffffu, *acc.i, off);
      Expr oie = oi;
      combine(k, acc, ov, &oie);
    } else {
      combine(k, acc, ov, nullptr);
    }
  }
}

HIDET_INLINE ir::Expr reduce_finish(ReduceKind k, const Acc &acc, const Dim &count, DataType out) {
  using namespace hidet::lang;
  if (is_arg_reduce(k)) return lang::detail::convert(acc.i->ir(), out, {});
  Expr v = acc.v;
  if (k == ReduceKind::Mean)
    v = v / cast(count.is_constant() ? Expr(double(count.value())) : dim_expr(count), acc.v.dtype());
  if (out.is_bool()) return (v != 0).ir();
  return lang::detail::convert(v.ir(), out, {});
}

/// out[idx] = value, or what `store_out` emits for it.
inline void finish_store(const StoreResult &store_out, const ir::Var &out, const std::vector<ir::Expr> &idx,
                         const ir::Expr &value) {
  if (store_out) store_out(idx, value);
  else store(out, idx, value);
}

HIDET_INLINE bool reads_contiguous_in(const ir::Expr &value, const ir::Var &raxis) {
  struct V : ir::IRVisitor {
    const ir::VarNode *target;
    bool found = false, in_last = false;
    void visit_Var(const ir::VarNode *v) override {
      if (v == target && in_last) found = true;
    }
    void visit_TensorElement(const ir::TensorElementNode *n) override {
      for (std::size_t i = 0; i < n->indices.size(); ++i) {
        bool saved = in_last;
        in_last = in_last || i + 1 == n->indices.size();
        visit(n->indices[i]);
        in_last = saved;
      }
    }
  } v;
  v.target = raxis.get();
  v.visit(value);
  return v.found;
}

HIDET_INLINE ReduceSchedule choose_reduce_schedule(const TensorNode &node, const ir::Expr &inlined_value) {
  ReduceSchedule s;
  Dim outs_d = sym_numel(node.shape), len_d = sym_numel(node.rextents);
  if (!outs_d.is_constant() || !len_d.is_constant()) {
    // Symbolic extents: one pass per output (no split), a warp per row when the row is short.
    s.row = !node.raxes.empty() && reads_contiguous_in(inlined_value, node.raxes.back()) &&
            (!len_d.is_constant() || len_d.value() >= 16);
    s.threads = len_d.is_constant() && len_d.value() <= 1024 ? 32 : 256;
    if (!s.row && outs_d.is_constant() && outs_d.value() < 16384) s.lanes = 8;
    s.chunk = len_d.is_constant() ? len_d.value() : 0;
    return s;
  }
  std::int64_t outs = outs_d.value(), len = len_d.value();
  s.row = !node.raxes.empty() && reads_contiguous_in(inlined_value, node.raxes.back()) && len >= 16;
  if (s.row) {
    s.threads = len <= 1024 ? 32 : 256;
    // Few rows and long rows: split each row over several blocks.
    if (outs < 264 && len >= 16384) s.splits = std::min<std::int64_t>((len + 8191) / 8192, std::max<std::int64_t>(1, 1056 / outs));
  } else {
    if (outs < 16384 && len >= 256) s.splits = std::min<std::int64_t>((len + 63) / 64, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(outs, 1)));
    s.splits = std::min<std::int64_t>(s.splits, 65535);
    if (outs < 16384 && len >= 32) s.lanes = 8;
  }
  s.chunk = (len + s.splits - 1) / s.splits;
  if (s.splits > 1) s.splits = (len + s.chunk - 1) / s.chunk;
  return s;
}

HIDET_INLINE void emit_row_reduce(const TensorNode &node, const ReduceSchedule &s, const std::map<const ir::VarNode *, ir::Var> &pmap,
                                  const std::map<const ir::VarNode *, const TensorNode *> &inlined, const ir::Var &out,
                                  const ir::Var &pv, const ir::Var &pi, const StoreResult &store_out) {
  using namespace hidet::lang;
  Dim outs = sym_numel(node.shape), len = sym_numel(node.rextents);
  Expr outs_e = dim_expr(outs), len_e = dim_expr(len);
  Expr chunk_e = s.splits > 1 ? Expr(int(s.chunk)) : len_e;
  int T = s.threads, rows_per_block = 256 / T;
  attrs.cuda.grid_dim = {blocks_for(outs, rows_per_block), int(s.splits)};
  attrs.cuda.block_dim = 256;
  bool arg = is_arg_reduce(node.reduce_kind);
  Var tid = threadIdx.x;
  Var row = T == 256 ? Var(blockIdx.x) : Var(blockIdx.x * rows_per_block + tid / T);
  Var lane = tid % T;
  Var begin = blockIdx.y * chunk_e;
  Var end = select(row < outs_e, min(begin + chunk_e, len_e), 0);
  Acc acc{let(node.acc_dtype, reduce_init(node.reduce_kind, node.acc_dtype), "acc"), std::nullopt};
  if (arg) acc.i = let(dtypes::i64, ir::ConstantNode::make_int(dtypes::i64, 0), "acc_i");
  for_(range(begin + lane, end, T), [&](Var r) {
    auto ridx = unravel(r.ir(), node.rextents);
    auto oidx = unravel(row.ir(), node.shape);
    std::map<const ir::VarNode *, ir::Expr> sub;
    for (std::size_t a = 0; a < node.axes.size(); ++a) sub[node.axes[a].get()] = oidx[a];
    for (std::size_t a = 0; a < node.raxes.size(); ++a) sub[node.raxes[a].get()] = ridx[a];
    Inliner inl(pmap, inlined, std::move(sub));
    Var v = let(node.acc_dtype, inl.mutate(node.value), "x");
    Expr ri = cast(r, i64);
    combine(node.reduce_kind, acc, v, arg ? &ri : nullptr);
  });
  warp_reduce(node.reduce_kind, acc);
  if (T == 256) {
    lang::Tensor sv = shared_tensor(TensorSpec(node.acc_dtype, {ir::int32(8)}), "red_v");
    std::optional<lang::Tensor> si;
    if (arg) si = shared_tensor(TensorSpec(dtypes::i64, {ir::int32(8)}), "red_i");
    if_(tid % 32 == 0, [&] {
      sv[tid / 32] = acc.v;
      if (arg) (*si)[tid / 32] = *acc.i;
    });
    syncthreads();
    acc.v = Operand(select(tid < 8, Expr(sv[tid % 8]), Expr(reduce_init(node.reduce_kind, node.acc_dtype))));
    if (arg) *acc.i = Operand(select(tid < 8, Expr((*si)[tid % 8]), Expr(0)));
    warp_reduce(node.reduce_kind, acc, 8);
  }
  if_(lane == 0 && row < outs_e, [&] {
    if (s.splits == 1) {
      finish_store(store_out, out, unravel(row.ir(), node.shape), reduce_finish(node.reduce_kind, acc, len, node.dtype));
    } else {
      store(pv, {(row * int(s.splits) + blockIdx.y).ir()}, acc.v.ir());
      if (arg) store(pi, {(row * int(s.splits) + blockIdx.y).ir()}, acc.i->ir());
    }
  });
}

HIDET_INLINE void emit_column_reduce(const TensorNode &node, const ReduceSchedule &s, const std::map<const ir::VarNode *, ir::Var> &pmap,
                                     const std::map<const ir::VarNode *, const TensorNode *> &inlined, const ir::Var &out,
                                     const ir::Var &pv, const ir::Var &pi, const StoreResult &store_out) {
  using namespace hidet::lang;
  Dim outs = sym_numel(node.shape), len = sym_numel(node.rextents);
  Expr outs_e = dim_expr(outs), len_e = dim_expr(len);
  Expr chunk_e = s.splits > 1 ? Expr(int(s.chunk)) : len_e;
  const int L = s.lanes, per_block = 256 / L; // threads per output; outputs per block
  attrs.cuda.grid_dim = {blocks_for(outs, per_block), int(s.splits)};
  attrs.cuda.block_dim = 256;
  bool arg = is_arg_reduce(node.reduce_kind);
  Var tx = L == 1 ? Var(threadIdx.x) : Var(threadIdx.x % per_block);
  Var ty = L == 1 ? Var(Expr(0)) : Var(threadIdx.x / per_block);
  Var o = blockIdx.x * per_block + tx;
  Acc acc{let(node.acc_dtype, reduce_init(node.reduce_kind, node.acc_dtype), "acc"), std::nullopt};
  if (arg) acc.i = let(dtypes::i64, ir::ConstantNode::make_int(dtypes::i64, 0), "acc_i");
  auto oidx = unravel(o.ir(), node.shape);
  if_(o < outs_e, [&] {
    Var begin = blockIdx.y * chunk_e;
    Var end = min(begin + chunk_e, len_e);
    for_(range(begin + ty, end, L), [&](Var r) {
      auto ridx = unravel(r.ir(), node.rextents);
      std::map<const ir::VarNode *, ir::Expr> sub;
      for (std::size_t a = 0; a < node.axes.size(); ++a) sub[node.axes[a].get()] = oidx[a];
      for (std::size_t a = 0; a < node.raxes.size(); ++a) sub[node.raxes[a].get()] = ridx[a];
      Inliner inl(pmap, inlined, std::move(sub));
      Var v = let(node.acc_dtype, inl.mutate(node.value), "x");
      Expr ri = cast(r, i64);
      combine(node.reduce_kind, acc, v, arg ? &ri : nullptr);
    });
  });
  if (L > 1) { // the lanes of each output meet in shared memory; lane 0 combines them in order
    lang::Tensor sv = shared_tensor(TensorSpec(node.acc_dtype, {ir::int32(L), ir::int32(per_block)}), "red_v");
    std::optional<lang::Tensor> si;
    if (arg) si = shared_tensor(TensorSpec(dtypes::i64, {ir::int32(L), ir::int32(per_block)}), "red_i");
    sv[ty][tx] = acc.v;
    if (arg) (*si)[ty][tx] = *acc.i;
    syncthreads();
    for (int j = 1; j < L; ++j) {
      Var v = let(node.acc_dtype, Expr(sv[j][tx]).ir(), "lane_v");
      if (arg) {
        Expr iv = Expr((*si)[j][tx]);
        combine(node.reduce_kind, acc, v, &iv);
      } else {
        combine(node.reduce_kind, acc, v, nullptr);
      }
    }
  }
  if_(o < outs_e && ty == 0, [&] {
    if (s.splits == 1) {
      finish_store(store_out, out, oidx, reduce_finish(node.reduce_kind, acc, len, node.dtype));
    } else {
      store(pv, {(blockIdx.y * outs_e + o).ir()}, acc.v.ir());
      if (arg) store(pi, {(blockIdx.y * outs_e + o).ir()}, acc.i->ir());
    }
  });
}

HIDET_INLINE void emit_combine_partials(const TensorNode &node, const ReduceSchedule &s, const ir::Var &pv, const ir::Var &pi,
                                        const ir::Var &out, const StoreResult &store_out) {
  using namespace hidet::lang;
  Dim outs = sym_numel(node.shape), len = sym_numel(node.rextents);
  Expr outs_e = dim_expr(outs);
  bool arg = is_arg_reduce(node.reduce_kind);
  // Partial sums of Mean are sums; combining them is a Sum until the final division.
  ReduceKind k = node.reduce_kind == ReduceKind::Mean ? ReduceKind::Sum : node.reduce_kind;
  attrs.cuda.grid_dim = blocks_for(outs, 256);
  attrs.cuda.block_dim = 256;
  Var o = blockIdx.x * 256 + threadIdx.x;
  if_(o < outs_e, [&] {
    Acc acc{let(node.acc_dtype, reduce_init(k, node.acc_dtype), "acc"), std::nullopt};
    if (arg) acc.i = let(dtypes::i64, ir::ConstantNode::make_int(dtypes::i64, 0), "acc_i");
    for_(range(int(s.splits)), [&](Var j) {
      Expr at = s.row ? o * int(s.splits) + j : j * outs_e + o;
      Var v = let(node.acc_dtype, lang::Element(pv, {at.ir()}, {}).to_ir({}), "x");
      if (arg) {
        Expr iv = Expr(lang::Element(pi, {at.ir()}, {}).to_ir({}));
        combine(k, acc, v, &iv);
      } else {
        combine(k, acc, v, nullptr);
      }
    });
    finish_store(store_out, out, unravel(o.ir(), node.shape), reduce_finish(node.reduce_kind, acc, len, node.dtype));
  });
}

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"
