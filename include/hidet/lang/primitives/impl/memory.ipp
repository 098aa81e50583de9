// Definitions for hidet/lang/primitives/memory.hpp.
#pragma once
#include "hidet/lang/primitives/memory.hpp"

#include "hidet/ir/eval.hpp"
#include "hidet/ir/layout.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE PtrArg::PtrArg(const Tensor &t, std::source_location loc_)
    : loc(loc_) {
  init(t.var(), {}, loc_);
  ptr = t.data().ir();
}

HIDET_INLINE PtrArg::PtrArg(const Element &e, std::source_location loc_)
    : loc(loc_) {
  init(e.base(), e.indices(), loc_);
  ptr = e.address().ir();
}

HIDET_INLINE PtrArg::PtrArg(const Expr &p, std::source_location loc_)
    : loc(loc_) {
  auto pt = p.ir() ? p.ir()->type.as<ir::PointerTypeNode>() : nullptr;
  if (!pt || !ir::is_scalar(pt->base))
    throw DSLError("a primitive's memory operand must be a tensor, a tensor element or a pointer "
                   "to a scalar",
                   loc_);
  ptr = p.ir();
  dtype = ir::dtype_of(pt->base);
}

HIDET_INLINE std::string PtrArg::describe() const {
  return scope ? str_cat(ir::scope_name(*scope), " tensor '", name, "'") : std::string("pointer");
}

HIDET_INLINE void PtrArg::init(const ir::Var &v, const std::vector<ir::Expr> &idx, SourceLoc l) {
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

namespace detail {
HIDET_INLINE void require_scope(const PtrArg &p, ir::Scope want, const char *prim,
                                const char *role) {
  if (p.scope && *p.scope != want)
    throw DSLError(str_cat(prim, ": the ", role, " operand must be in ", ir::scope_name(want),
                           " memory, but it is ", p.describe()),
                   p.loc);
}
HIDET_INLINE void require_bytes(const PtrArg &p, std::int64_t bytes, const char *prim,
                                const char *role) {
  if (p.avail >= 0 && p.avail_bytes() < bytes)
    throw DSLError(str_cat(prim, ": the ", role, " operand (", p.describe(), ") has ",
                           p.avail_bytes(), " bytes from this element to its end; the access needs ",
                           bytes),
                   p.loc);
}
HIDET_INLINE void require_vector_bytes(int bytes, const char *prim, SourceLoc loc) {
  if (bytes != 4 && bytes != 8 && bytes != 16)
    throw DSLError(str_cat(prim, ": ", bytes, " bytes is not a supported size; use 4, 8 or 16"), loc);
}
} // namespace detail

HIDET_INLINE void copy_vector(const PtrArg &dst, const PtrArg &src, int bytes) {
  detail::require_vector_bytes(bytes, "copy_vector", dst.loc);
  detail::require_bytes(dst, bytes, "copy_vector", "destination");
  detail::require_bytes(src, bytes, "copy_vector", "source");
  detail::emit_intrinsic(ir::Intrinsic::CopyVector, {dst.ptr, src.ptr, detail::imm(bytes)}, dst.loc);
}

HIDET_INLINE void prefetch_l2(const PtrArg &p) {
  detail::require_scope(p, ir::Scope::Global, "prefetch_l2", "address");
  detail::require_bytes(p, 1, "prefetch_l2", "address");
  detail::emit_intrinsic(ir::Intrinsic::PrefetchL2, {p.ptr}, p.loc);
}

HIDET_INLINE void load_vector(const PtrArg &dst, const PtrArg &src, int bytes) {
  detail::require_scope(dst, ir::Scope::Register, "load_vector", "destination");
  copy_vector(dst, src, bytes);
}

HIDET_INLINE void store_vector(const PtrArg &dst, const PtrArg &src, int bytes) {
  detail::require_scope(src, ir::Scope::Register, "store_vector", "source");
  copy_vector(dst, src, bytes);
}

HIDET_INLINE void cp_async(const PtrArg &dst, const PtrArg &src, int bytes,
                           const Operand &src_bytes) {
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

HIDET_INLINE void cp_async_wait_group(int n, std::source_location loc_) {
  if (n < 0 || n > 7) throw DSLError(str_cat("cp_async_wait_group(", n, "): n must be in [0, 7]"), loc_);
  detail::emit_intrinsic(ir::Intrinsic::CpAsyncWaitGroup, {detail::imm(n)}, loc_);
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
