// Row-resident schedule of a normalization over the last axis: softmax, log_softmax,
// layer_norm, rms_norm, group_norm's view, and any task of the same form.
//
// The form: one output out[rows..., n] (an element-wise definition) whose reductions all reduce
// the last axis of the same row, out.shape[:-1] (+ [1] with keepdims), and are read only at the
// row being computed (m[rows..., 0]). The general schedule materializes every reduction with its
// own kernel, so a softmax reads its input three times and writes twice more. Here one kernel
// does it all, with each row read from memory once and written once:
//  * a group of T threads (a warp, or up to 512 threads; for a row of fewer than 32 chunks the
//    power of two that gives each thread one chunk, several rows to a warp) owns a row; thread
//    `lane` owns the chunks c = lane + k * T (k < K) of V contiguous elements (16 bytes of the
//    widest dtype);
//  * phase p < P computes reduction p: each thread combines its K * V elements, then a
//    warp-shuffle butterfly and, for T > 32, one shared-memory exchange across the warps leave
//    the finished value in every thread (a scalar register);
//  * phase P evaluates the output from registers and stores it with vector stores.
// Inputs read as x[lead..., column] (the row's own data, or a parameter row like a weight) are
// loaded with 16-byte vector loads into registers once, in the first phase that needs them
// (the output phase loads one chunk at a time). An element-wise definition read at
// (row, column) in two or more phases (softmax's exp(x - max)) is computed once into registers
// too. Other reads are evaluated in place. A task qualifies only when every read that a
// reduction makes along the row is such a register read, and the registers held across phases
// fit the budget (at most 128 bytes per array and 256 bytes per thread with T <= 512: rows up
// to 16K f32 elements for softmax and layer_norm, 20K (softmax) to 32K (layer_norm) f16); other
// tasks keep the general schedule. Numerics are those of the compute
// definition: reductions accumulate in their acc_dtype and are finished like the general
// schedule's (Mean divides by n), in a different summation order.
#pragma once

#include "hidet/ops/plan.hpp"
#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::detail {

/// A row kept in registers by the row-resident schedule.
struct RowCache {
  const TensorNode *node = nullptr; ///< an Input (loaded) or a Compute (computed)
  ir::Expr read;                    ///< Input: the read node[lead..., column] over the placeholders
  ir::Expr value;                   ///< Compute: its value over the placeholders
  int first_phase = 0;              ///< the first phase that reads it
};

/// The analysis of a task by the row-resident schedule (see the top of this file).
struct RowResident {
  const TensorNode *out = nullptr;
  std::vector<const TensorNode *> reduces; ///< phase p < P computes reduces[p]; phase P stores out
  std::vector<ir::Var> rv;                 ///< placeholders of the row indices (out's leading axes)
  ir::Var jv;                              ///< placeholder of the column
  std::vector<ir::Expr> phase_value;       ///< per phase: reduced term / output value
  std::vector<RowCache> caches; ///< computed caches in dependency order, then loaded ones
  Dim rows = 0;       ///< rows (a symbol's expression for a symbolic task)
  std::int64_t n = 0; ///< the row length (constant)
  int V = 1, T = 32, K = 1, rows_per_block = 1;
};

/// Maximal bytes per thread of one register array, and of all arrays held across phases.
inline constexpr int kRowArrayBytes = 128, kRowResidentBytes = 256, kRowMaxThreads = 512;

/// Analyzes `task` for the row-resident schedule; nullopt when it does not have the form (see
/// the top of this file) or its rows do not fit in registers. `threads_per_row` (a power of two
/// from 32 to 1024) overrides the choice of T, for measurements.
std::optional<RowResident> analyze_row_resident(const Task &task, int threads_per_row = 0);

/// Emits the row-resident kernel (see the top of this file); params: the task's inputs, then out.
void emit_row_resident(const RowResident &r, const Task &task, const std::vector<ir::Var> &params);

/// The row-resident plan of `task`, or nullopt when the schedule does not apply.
std::optional<Plan> schedule_row_resident(const Task &task, int threads_per_row = 0);

} // namespace hidet::ops::detail

#include "hidet/util/cold_end.hpp"

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/schedule_row.ipp"
#endif
