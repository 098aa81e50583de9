// Auto-schedule of a reduction out[i...] = reduce_{r} value(i..., r...).
//
// The scheduler looks at how the (inlined) value reads memory:
//  * Row schedule, when some read's innermost index moves with the innermost reduction axis
//    (the reduced data is contiguous): a group of T threads cooperates on one output, each
//    thread striding over the reduction by T (coalesced), then a warp-shuffle butterfly and,
//    for T = 256, a shared-memory step across the block's warps. T = 32 (8 rows per block) for
//    reductions up to 1024 elements, else T = 256 (one row per block). When a row is long and
//    there are few rows, the reduction is split over S blocks per row (blockIdx.y) that write
//    partial results, and a second kernel combines the S partials of each row.
//  * Column schedule otherwise (reduction over a leading axis, the kept axis is contiguous):
//    one thread per output, consecutive threads on consecutive outputs, so every step of the
//    serial loop over the reduction is a coalesced row of loads. With few outputs and a long
//    reduction the reduction is split over S slices (blockIdx.y) into partials [S, outputs],
//    combined by a second column kernel. With few outputs (a global average pool of NHWC
//    [1, 14, 14, 480]: 480 outputs of 196 elements), 8 threads share each output (lanes; 32
//    consecutive outputs per block keep the loads coalesced) and meet in shared memory.
// Accumulators use acc_dtype (f32 for f16/bf16); arg-reductions carry an (value, i64 index) pair
// and keep the first index among equal values.
#pragma once

#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// The identity of a reduction in dtype `d`.
ir::Expr reduce_init(ReduceKind k, DataType d);

/// An accumulator: a value and, for arg-reductions, an index.
struct Acc {
  lang::Var v;
  std::optional<lang::Var> i;
};

/// acc = combine(acc, (v, i)). For arg-reductions a tie keeps the smaller index.
void combine(ReduceKind k, Acc &acc, const lang::Expr &v, const lang::Expr *i);

/// Butterfly reduction across `width` lanes of a warp; every lane ends with the result.
void warp_reduce(ReduceKind k, Acc &acc, int width = 32);

/// The final value of an accumulator for output dtype `out` (Mean divides by `count`).
ir::Expr reduce_finish(ReduceKind k, const Acc &acc, const Dim &count, DataType out);

/// Whether some read in `value` has an innermost index that depends on the innermost reduction axis.
bool reads_contiguous_in(const ir::Expr &value, const ir::Var &raxis);

/// How a reduction is scheduled (see the top of this file).
struct ReduceSchedule {
  bool row = true;        ///< row schedule (else column)
  int threads = 32;       ///< row: threads per output (32 or 256)
  std::int64_t splits = 1; ///< blocks (row) or slices (column) per output
  std::int64_t chunk = 0; ///< reduction elements per split
  int lanes = 1;          ///< column: threads per output, each striding the slice by `lanes`
};

ReduceSchedule choose_reduce_schedule(const TensorNode &node, const ir::Expr &inlined_value);
/// Where a finished result goes: given the output's index and value (node's dtype), emits the
/// store. Null: out[idx] = value. The scheduler passes one that evaluates an element-wise output
/// over the result instead (schedule.hpp: a reduction's finish fused into its kernel).
using StoreResult = std::function<void(const std::vector<ir::Expr> &idx, const ir::Expr &value)>;

/// Kernel body: the row schedule. Reads `value` at (row axes, flat r in [begin, end)) and writes
/// either the finished result to out (splits == 1) or partials to pv[row][split] (and pi).
void emit_row_reduce(const TensorNode &node, const ReduceSchedule &s, const std::map<const ir::VarNode *, ir::Var> &pmap,
                     const std::map<const ir::VarNode *, const TensorNode *> &inlined, const ir::Var &out,
                     const ir::Var &pv, const ir::Var &pi, const StoreResult &store_out = nullptr);

/// Kernel body: the column schedule. Thread per output; blockIdx.y picks the reduction slice.
void emit_column_reduce(const TensorNode &node, const ReduceSchedule &s, const std::map<const ir::VarNode *, ir::Var> &pmap,
                        const std::map<const ir::VarNode *, const TensorNode *> &inlined, const ir::Var &out,
                        const ir::Var &pv, const ir::Var &pi, const StoreResult &store_out = nullptr);

/// Kernel body: combines the partials of a split reduction (row: pv[row][split], column:
/// pv[split][output]) and writes the finished result.
void emit_combine_partials(const TensorNode &node, const ReduceSchedule &s, const ir::Var &pv, const ir::Var &pi,
                           const ir::Var &out, const StoreResult &store_out = nullptr);

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule_reduce.ipp"
#endif
