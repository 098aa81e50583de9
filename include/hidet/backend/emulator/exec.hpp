// Execution state of the SIMT emulator. The threads of a block run in lockstep: every compiled
// expression node (ENode) evaluates for all active threads of the block at once into a per-thread
// register array, and every compiled statement node (SNode) runs for an active set of threads and
// returns the threads that continue after it (break, continue and return remove threads; loops and
// ifs put them back where CUDA would). A Context holds the state of one launch: the block being
// run, the register frames (one per active device-function call), the live allocations, per-block
// shared memory and the counters of the checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "hidet/backend/emulator/checks.hpp"
#include "hidet/backend/emulator/value.hpp"
#include "hidet/backend/kernel_arg.hpp"
#include "hidet/error.hpp"

namespace hidet::backend::emu {

/// The largest block the emulator (and CUDA) runs.
inline constexpr int kMaxThreads = 1024;

/// A sorted list of the indices (linear thread ids in the block) of the active threads.
struct ActiveSet {
  const std::uint16_t *idx = nullptr;
  int n = 0;
};

/// A node-owned buffer for an active set (kMaxThreads entries).
struct ThreadBuf {
  std::vector<std::uint16_t> v;
  std::uint16_t *data() {
    if (v.empty()) v.resize(kMaxThreads);
    return v.data();
  }
};

struct Context;

/// A compiled expression: eval() writes the value of every active thread into register `dst` of
/// the current frame. Variables and constants are `trivial`: their register already holds them.
struct ENode {
  int dst = -1;
  SourceLoc loc;
  DataType dtype = dtypes::i32; ///< the value's dtype (u64 for pointers)
  bool trivial = false;
  bool may_fault = false; ///< touches memory, calls, divides: must not run for masked-off threads
  virtual ~ENode() = default;
  virtual void eval(Context &, ActiveSet) {}
};

/// Evaluates `e` unless its register already holds its value.
inline void eval(ENode *e, Context &c, ActiveSet s) {
  if (!e->trivial) e->eval(c, s);
}

/// A compiled statement: runs for `in` and returns the threads that continue after it.
struct SNode {
  SourceLoc loc;
  virtual ~SNode() = default;
  virtual ActiveSet exec(Context &, ActiveSet in) = 0;
};

/// A per-thread register array of one frame (declared register tensor).
struct RegArray {
  const void *key = nullptr;
  std::unique_ptr<std::byte[]> mem;
  std::uintptr_t begin = 0;
};

/// The storage of one call frame: registers (nregs x T slots) and its register arrays.
struct FrameStore {
  std::vector<Slot> regs;
  std::vector<RegArray> arrays;
};

/// A shared-memory buffer of the current block.
struct SharedBuffer {
  std::unique_ptr<std::byte[]> mem;
  std::unique_ptr<SharedShadow> shadow;
  std::uintptr_t begin = 0;
  std::size_t bytes = 0;
};

/// The state of one launch.
struct Context {
  std::string kernel;
  Dim3 grid, block, block_idx;
  int T = 0; ///< threads per block

  Slot *regs = nullptr; ///< current frame's registers
  int depth = 0;
  std::vector<FrameStore> frames;
  const Slot *exited = nullptr; ///< the kernel frame's "returned" flags: exited threads

  Registry mem;
  std::unordered_map<const void *, SharedBuffer> shared; ///< per block, by declaration
  SharedBuffer dynamic_smem;
  bool racecheck = false;
  std::uint64_t steps = 0, max_steps = 0;

  std::vector<std::uint16_t> all;  ///< 0..T-1
  std::vector<std::uint8_t> mark;  ///< scratch flags, one per thread, kept all-zero between uses

  /// Registers `r` of the current frame.
  Slot *reg(int r) const { return regs + std::size_t(r) * T; }
  ActiveSet all_threads() const { return {all.data(), T}; }

  /// "(x, y, z)" of linear thread id t.
  std::string thread_str(int t) const {
    int x = t % int(block.x), y = (t / int(block.x)) % int(block.y), z = t / int(block.x * block.y);
    return str_cat("(", x, ", ", y, ", ", z, ")");
  }
  /// Throws an EmulatorError naming the kernel, the block, the thread (t < 0: none) and `loc`.
  [[noreturn]] void fail(SourceLoc loc, int t, const std::string &what) const {
    std::string who = str_cat("emulated kernel '", kernel, "', block (", block_idx.x, ", ",
                              block_idx.y, ", ", block_idx.z, ")");
    if (t >= 0) who += ", thread " + thread_str(t);
    if (!loc.valid()) who += " (no source line recorded)";
    throw EmulatorError(who + ": " + what, loc);
  }
  /// Counts `n` thread-statements against the step limit.
  void count(int n, SourceLoc loc) {
    steps += std::uint64_t(n);
    if (steps > max_steps) [[unlikely]]
      fail(loc, -1,
           str_cat("the launch ran past the step limit of ", max_steps,
                   " thread-statements (an endless loop?); raise HIDET_EMULATOR_MAX_STEPS if "
                   "the kernel really needs more"));
  }
  /// Number of threads of the block that have not exited.
  int live_threads() const {
    int n = 0;
    for (int t = 0; t < T; ++t) n += exited[t].i == 0;
    return n;
  }

  /// Race-check bookkeeping for an access of thread t to [addr, addr+n) inside shared `a`.
  void shared_access(const Alloc *a, std::uintptr_t addr, std::size_t n, int t, Access k,
                     SourceLoc loc, const std::string &tensor) {
    SharedShadow *s = a->shadow;
    if (!s) return;
    std::size_t off = addr - a->begin;
    for (std::size_t b = off; b < off + n && b < s->written.size(); ++b) {
      if (k == Access::Atomic) {
        s->written[b] = 1;
        continue;
      }
      int w = s->writer[b], r = s->reader[b];
      auto race = [&](int other, const char *other_did) {
        fail(loc, t,
             str_cat("shared-memory race on '", tensor, "' (allocation '", a->name,
                     "', byte offset ", b, "): this thread ",
                     k == Access::Read ? "reads" : "writes", " it and ",
                     other >= 0 ? "thread " + thread_str(other) : std::string("other threads"),
                     " ", other_did, " it since the last barrier; put a syncthreads() between "
                     "the two accesses (or use an atomic)"));
      };
      if (k == Access::Read) {
        if (!s->written[b])
          fail(loc, t,
               str_cat("read of shared memory '", tensor, "' (allocation '", a->name,
                       "', byte offset ", b, ") that nothing wrote since the block started"));
        if (w >= 0 && w != t) race(w, "wrote");
        s->reader[b] = std::int16_t((r == -1 || r == t) ? t : -2);
      } else {
        if (w >= 0 && w != t) race(w, "wrote");
        if (r == -2 || (r >= 0 && r != t)) race(r, "read");
        s->writer[b] = std::int16_t(t);
        s->written[b] = 1;
      }
    }
  }
  /// A block-wide barrier: a new race-check epoch.
  void barrier() {
    for (auto &[k, b] : shared)
      if (b.shadow) b.shadow->new_epoch();
    if (dynamic_smem.shadow) dynamic_smem.shadow->new_epoch();
  }
};

/// Copies the threads of `in` for which `keep(t)` holds into `out`; returns the new set.
template <class F> ActiveSet filter(ActiveSet in, std::uint16_t *out, F &&keep) {
  int m = 0;
  for (int k = 0; k < in.n; ++k)
    if (keep(in.idx[k])) out[m++] = in.idx[k];
  return {out, m};
}

/// The sorted union of two disjoint sorted sets, into `out`.
inline ActiveSet merge(ActiveSet a, ActiveSet b, std::uint16_t *out) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  std::merge(a.idx, a.idx + a.n, b.idx, b.idx + b.n, out);
  return {out, a.n + b.n};
}

} // namespace hidet::backend::emu
