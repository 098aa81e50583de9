// The in-kernel reduction of split work (split-k products, split-KV decode attention): the blocks
// that share an output tile each write their partial result to a workspace, then count themselves
// on the tile's counter; the block that completes the count sees every slice and combines them.
//
// The counter (i32, zero before the first launch) goes back by `splits` rather than to 0 once the
// last block is done: launches of one kernel on several streams at once, which share the counters,
// leave it consistent, a multiple of `splits` when all are done.
#pragma once

#include <functional>

#include "hidet/lang.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Called by every thread of a block after it wrote its slice of the tile that `counter` counts:
/// `last` runs in the block that completes the count (every thread of it), after a fence that makes
/// the other blocks' slices visible. `tid` is the thread's index in the block; `done` a shared i32[1]
/// of the kernel (a name of its own: kernels that declare their shared memory up front keep it so).
inline void last_block_of_splits(const lang::Element &counter, const lang::Expr &tid, int splits,
                                 const lang::Tensor &done, const std::function<void()> &last) {
  using namespace lang;
  threadfence();
  syncthreads();
  if_(tid == 0, [&] {
    Var before = var(i32, 0, "before");
    before = atomic_add(counter, 1);
    done[0] = select((before + 1) % splits == 0, 1, 0);
  });
  syncthreads();
  if_(done[0] == 1, [&] {
    threadfence();
    last();
    if_(tid == 0, [&] { (void)atomic_add(counter, -splits); });
  });
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
