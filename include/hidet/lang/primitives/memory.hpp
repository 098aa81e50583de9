// Memory primitives in Hidet Script: 4/8/16-byte vector copies between memories and cp.async
// (global -> shared without registers, with commit and wait groups). Also the pointer operand
// (PtrArg) that every primitive takes: a tensor, a tensor element or a pointer expression.
//
//   load_vector(regs[0], a[row][col]);            // 16 bytes: global -> registers
//   cp_async(smem[r][c], a[row][col], 16);        // global -> shared, asynchronously
//   cp_async_commit_group();  cp_async_wait_group(0);  syncthreads();
#pragma once

#include <optional>
#include <string>

#include "hidet/lang/cuda.hpp"

namespace hidet::lang {

/// A pointer operand of a primitive: `t` (a whole tensor), `t[i][j]` (the address of an
/// element) or a pointer-typed expression. Records what the front end can check: the pointee
/// dtype, the memory scope, and how many elements remain from the pointer to the tensor's end.
struct PtrArg {
  ir::Expr ptr;                     ///< the pointer expression
  DataType dtype;                   ///< the pointee dtype
  std::string name = "pointer";     ///< the tensor's name, for messages
  std::optional<ir::Scope> scope;   ///< unknown for plain pointers
  std::int64_t avail = -1;          ///< elements from `ptr` to the tensor's end; -1 unknown
  SourceLoc loc;

  PtrArg(const Tensor &t, HIDET_LOC_PARAM);
  PtrArg(const Element &e, HIDET_LOC_PARAM);
  PtrArg(const Expr &p, HIDET_LOC_PARAM);

  /// Bytes from the pointer to the tensor's end (-1 unknown).
  std::int64_t avail_bytes() const { return avail < 0 ? -1 : avail * std::int64_t(dtype.nbytes()); }
  /// "register tensor 'a_frag'" / "pointer".
  std::string describe() const;

private:
  void init(const ir::Var &v, const std::vector<ir::Expr> &idx, SourceLoc l);
};

namespace detail {
/// An i32 constant operand of an intrinsic.
inline ir::Expr imm(std::int64_t v) { return ir::int32(v); }
/// Throws a DSLError when `p` is known to live in another memory than `want`.
void require_scope(const PtrArg &p, ir::Scope want, const char *prim, const char *role);
/// Throws a DSLError when fewer than `bytes` bytes remain from `p` to its tensor's end.
void require_bytes(const PtrArg &p, std::int64_t bytes, const char *prim, const char *role);
void require_vector_bytes(int bytes, const char *prim, SourceLoc loc);
inline void emit_intrinsic(ir::Intrinsic op, std::vector<ir::Expr> args, SourceLoc loc) {
  emit_void_call(op, std::move(args), loc);
}
} // namespace detail

/// Copies `bytes` (4, 8 or 16) from `src` to `dst` as one vector load and one vector store (both
/// addresses must be aligned to `bytes`). Any memories; typically global -> registers.
void copy_vector(const PtrArg &dst, const PtrArg &src, int bytes = 16);
/// A vector load: `bytes` from `src` (global or shared) into the register tensor at `dst`.
void load_vector(const PtrArg &dst, const PtrArg &src, int bytes = 16);
/// A vector store: `bytes` from the register tensor at `src` to `dst` (global or shared).
void store_vector(const PtrArg &dst, const PtrArg &src, int bytes = 16);

/// prefetch.global.L2: brings the 128-byte line holding `p` (global memory) into the L2 cache. A
/// hint: no value, no fault; the L2 is where every multiprocessor's loads and stores meet, so a
/// line fetched early is never stale. Before grid_dependency_wait() it starts reading a kernel's
/// weights while the kernel before it still runs. A no-op on the emulator, which checks that `p`
/// lies inside its tensor.
void prefetch_l2(const PtrArg &p);

/// cp.async: copies `bytes` (4, 8 or 16) from global `src` to shared `dst` without staging in
/// registers; only the first `src_bytes` (default all) are read, the rest is zero-filled (for
/// partial tiles). Completes at cp_async_wait_group (the emulator copies at once).
void cp_async(const PtrArg &dst, const PtrArg &src, int bytes = 16,
              const Operand &src_bytes = Operand(-1));
/// Closes the group of cp.async issued by this thread since the last commit.
inline void cp_async_commit_group(HIDET_LOC_PARAM) {
  detail::emit_intrinsic(ir::Intrinsic::CpAsyncCommitGroup, {}, loc_);
}
/// Waits until at most `n` committed cp.async groups of this thread are pending.
void cp_async_wait_group(int n, HIDET_LOC_PARAM);
/// Waits for all committed cp.async groups of this thread.
inline void cp_async_wait_all(HIDET_LOC_PARAM) { cp_async_wait_group(0, loc_); }

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/primitives/impl/memory.ipp"
#endif
