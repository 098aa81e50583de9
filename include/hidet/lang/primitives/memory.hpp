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

#include "hidet/ir/eval.hpp"
#include "hidet/ir/layout.hpp"
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

  PtrArg(const Tensor &t, HIDET_LOC_PARAM) : loc(loc_) {
    init(t.var(), {}, loc_);
    ptr = t.data().ir();
  }
  PtrArg(const Element &e, HIDET_LOC_PARAM) : loc(loc_) {
    init(e.base(), e.indices(), loc_);
    ptr = e.address().ir();
  }
  PtrArg(const Expr &p, HIDET_LOC_PARAM) : loc(loc_) {
    auto pt = p.ir() ? p.ir()->type.as<ir::PointerTypeNode>() : nullptr;
    if (!pt || !ir::is_scalar(pt->base))
      throw DSLError("a primitive's memory operand must be a tensor, a tensor element or a pointer "
                     "to a scalar",
                     loc_);
    ptr = p.ir();
    dtype = ir::dtype_of(pt->base);
  }

  /// Bytes from the pointer to the tensor's end (-1 unknown).
  std::int64_t avail_bytes() const { return avail < 0 ? -1 : avail * std::int64_t(dtype.nbytes()); }
  /// "register tensor 'a_frag'" / "pointer".
  std::string describe() const {
    return scope ? str_cat(ir::scope_name(*scope), " tensor '", name, "'") : std::string("pointer");
  }

private:
  void init(const ir::Var &v, const std::vector<ir::Expr> &idx, SourceLoc l) {
    auto tt = v->type.as<ir::TensorTypeNode>();
    dtype = tt->dtype, name = v->hint, scope = tt->scope;
    auto size = ir::try_evaluate(ir::tensor_storage_size(*tt));
    if (!size) return;
    if (idx.empty()) {
      avail = std::int64_t(*size);
      return;
    }
    if (idx.size() != tt->rank())
      throw DSLError(str_cat("tensor '", name, "' has rank ", tt->rank(), " but is indexed with ",
                             idx.size(), " indices; give one index per dimension"),
                     l);
    auto off = ir::try_evaluate(ir::tensor_offset(*tt, idx));
    if (off) avail = std::int64_t(*size) - std::int64_t(*off);
  }
};

namespace detail {
/// An i32 constant operand of an intrinsic.
inline ir::Expr imm(std::int64_t v) { return ir::int32(v); }
/// Throws a DSLError when `p` is known to live in another memory than `want`.
inline void require_scope(const PtrArg &p, ir::Scope want, const char *prim, const char *role) {
  if (p.scope && *p.scope != want)
    throw DSLError(str_cat(prim, ": the ", role, " operand must be in ", ir::scope_name(want),
                           " memory, but it is ", p.describe()),
                   p.loc);
}
/// Throws a DSLError when fewer than `bytes` bytes remain from `p` to its tensor's end.
inline void require_bytes(const PtrArg &p, std::int64_t bytes, const char *prim, const char *role) {
  if (p.avail >= 0 && p.avail_bytes() < bytes)
    throw DSLError(str_cat(prim, ": the ", role, " operand (", p.describe(), ") has ",
                           p.avail_bytes(), " bytes from this element to its end; the access needs ",
                           bytes),
                   p.loc);
}
inline void require_vector_bytes(int bytes, const char *prim, SourceLoc loc) {
  if (bytes != 4 && bytes != 8 && bytes != 16)
    throw DSLError(str_cat(prim, ": ", bytes, " bytes is not a supported size; use 4, 8 or 16"), loc);
}
inline void emit_intrinsic(ir::Intrinsic op, std::vector<ir::Expr> args, SourceLoc loc) {
  emit_void_call(op, std::move(args), loc);
}
} // namespace detail

/// Copies `bytes` (4, 8 or 16) from `src` to `dst` as one vector load and one vector store (both
/// addresses must be aligned to `bytes`). Any memories; typically global -> registers.
inline void copy_vector(const PtrArg &dst, const PtrArg &src, int bytes = 16) {
  detail::require_vector_bytes(bytes, "copy_vector", dst.loc);
  detail::require_bytes(dst, bytes, "copy_vector", "destination");
  detail::require_bytes(src, bytes, "copy_vector", "source");
  detail::emit_intrinsic(ir::Intrinsic::CopyVector, {dst.ptr, src.ptr, detail::imm(bytes)}, dst.loc);
}
/// A vector load: `bytes` from `src` (global or shared) into the register tensor at `dst`.
inline void load_vector(const PtrArg &dst, const PtrArg &src, int bytes = 16) {
  detail::require_scope(dst, ir::Scope::Register, "load_vector", "destination");
  copy_vector(dst, src, bytes);
}
/// A vector store: `bytes` from the register tensor at `src` to `dst` (global or shared).
inline void store_vector(const PtrArg &dst, const PtrArg &src, int bytes = 16) {
  detail::require_scope(src, ir::Scope::Register, "store_vector", "source");
  copy_vector(dst, src, bytes);
}

/// cp.async: copies `bytes` (4, 8 or 16) from global `src` to shared `dst` without staging in
/// registers; only the first `src_bytes` (default all) are read, the rest is zero-filled (for
/// partial tiles). Completes at cp_async_wait_group (the emulator copies at once).
inline void cp_async(const PtrArg &dst, const PtrArg &src, int bytes = 16,
                     const Operand &src_bytes = Operand(-1)) {
  detail::require_vector_bytes(bytes, "cp_async", dst.loc);
  detail::require_scope(dst, ir::Scope::Shared, "cp_async", "destination");
  detail::require_scope(src, ir::Scope::Global, "cp_async", "source");
  detail::require_bytes(dst, bytes, "cp_async", "destination");
  std::int64_t sb;
  ir::Expr n = ir::as_const_int(src_bytes.node, sb) && sb < 0
                   ? detail::imm(bytes)
                   : detail::convert(src_bytes.node, dtypes::i32, src_bytes.loc);
  if (!(ir::as_const_int(n, sb) && sb == 0)) detail::require_bytes(src, bytes, "cp_async", "source");
  detail::emit_intrinsic(ir::Intrinsic::CpAsync, {dst.ptr, src.ptr, detail::imm(bytes), n}, dst.loc);
}
/// Closes the group of cp.async issued by this thread since the last commit.
inline void cp_async_commit_group(HIDET_LOC_PARAM) {
  detail::emit_intrinsic(ir::Intrinsic::CpAsyncCommitGroup, {}, loc_);
}
/// Waits until at most `n` committed cp.async groups of this thread are pending.
inline void cp_async_wait_group(int n, HIDET_LOC_PARAM) {
  if (n < 0 || n > 7) throw DSLError(str_cat("cp_async_wait_group(", n, "): n must be in [0, 7]"), loc_);
  detail::emit_intrinsic(ir::Intrinsic::CpAsyncWaitGroup, {detail::imm(n)}, loc_);
}
/// Waits for all committed cp.async groups of this thread.
inline void cp_async_wait_all(HIDET_LOC_PARAM) { cp_async_wait_group(0, loc_); }

} // namespace hidet::lang
