// Definitions for hidet/lang/primitives/mma.hpp.
#pragma once
#include "hidet/lang/primitives/mma.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

namespace detail {
HIDET_INLINE MmaFragments mma_check(MmaShape s, const PtrArg &d, const PtrArg &a, const PtrArg &b,
                                    const PtrArg &c) {
  auto cfg = str_cat("mma_sync m", s.m, "n", s.n, "k", s.k);
  auto fail = [&](const std::string &why, SourceLoc l) { throw DSLError(cfg + ": " + why, l); };
  if (a.dtype != b.dtype)
    fail(str_cat("A is ", a.dtype, " but B is ", b.dtype, "; both inputs need the same dtype"), a.loc);
  if (c.dtype != d.dtype)
    fail(str_cat("C is ", c.dtype, " but D is ", d.dtype, "; the accumulators need the same dtype"), c.loc);
  MmaFragments f{};
  if (s.m == 16 && s.n == 8 && s.k == 16) {
    if (!a.dtype.is_half())
      fail(str_cat("inputs are ", a.dtype, "; m16n8k16 takes f16 or bf16 (use m16n8k8 for tf32, ",
                   "m16n8k32 for i8)"), a.loc);
    if (d.dtype != dtypes::f32 && !(d.dtype == dtypes::f16 && a.dtype == dtypes::f16))
      fail(str_cat("accumulators are ", d.dtype, "; ", a.dtype, " inputs accumulate in f32",
                   a.dtype == dtypes::f16 ? " or f16" : ""), d.loc);
    f = {8, 4, 4};
  } else if (s.m == 16 && s.n == 8 && s.k == 8) {
    if (a.dtype != dtypes::f32) fail(str_cat("inputs are ", a.dtype, "; m16n8k8 takes tf32 values in f32"), a.loc);
    if (d.dtype != dtypes::f32) fail(str_cat("accumulators are ", d.dtype, "; tf32 accumulates in f32"), d.loc);
    f = {4, 2, 4};
  } else if (s.m == 16 && s.n == 8 && s.k == 32) {
    if (a.dtype != dtypes::i8 && a.dtype != dtypes::u8)
      fail(str_cat("inputs are ", a.dtype, "; m16n8k32 takes i8 or u8"), a.loc);
    if (d.dtype != dtypes::i32) fail(str_cat("accumulators are ", d.dtype, "; i8 accumulates in i32"), d.loc);
    f = {16, 8, 4};
  } else {
    fail("unsupported shape; use mma_m16n8k16, mma_m16n8k8 or mma_m16n8k32", d.loc);
  }
  auto frag = [&](const PtrArg &p, const char *role, int need) {
    require_scope(p, ir::Scope::Register, cfg.c_str(), role);
    if (p.avail >= 0 && p.avail < need)
      fail(str_cat("operand ", role, " (", p.describe(), ") has ", p.avail, " ", p.dtype,
                   " elements from this point; the fragment needs ", need, " ", p.dtype,
                   " per lane: declare register_tensor(", p.dtype, "[", need, "])"),
           p.loc);
  };
  frag(a, "A", f.a), frag(b, "B", f.b), frag(c, "C", f.c), frag(d, "D", f.c);
  return f;
}
} // namespace detail

HIDET_INLINE MmaFragments mma_fragments(MmaShape shape) {
  if (shape.k == 16) return {8, 4, 4};
  if (shape.k == 8) return {4, 2, 4};
  return {16, 8, 4};
}

HIDET_INLINE void mma_sync(const PtrArg &d, const PtrArg &a, const PtrArg &b, const PtrArg &c,
                           MmaShape shape) {
  detail::mma_check(shape, d, a, b, c);
  detail::emit_intrinsic(ir::Intrinsic::MmaSync,
                         {d.ptr, a.ptr, b.ptr, c.ptr, detail::imm(shape.m), detail::imm(shape.n),
                          detail::imm(shape.k)},
                         d.loc);
}

HIDET_INLINE void ldmatrix(const PtrArg &dst, const PtrArg &row, int num, bool trans) {
  if (num != 1 && num != 2 && num != 4)
    throw DSLError(str_cat("ldmatrix: num = ", num, " matrices; use 1, 2 or 4"), dst.loc);
  detail::require_scope(dst, ir::Scope::Register, "ldmatrix", "destination");
  detail::require_scope(row, ir::Scope::Shared, "ldmatrix", "row address");
  if (dst.dtype.nbytes() != 2 && dst.dtype.nbytes() != 4)
    throw DSLError(str_cat("ldmatrix: the destination is ", dst.dtype,
                           "; use a register tensor of a 16-bit dtype (f16, bf16) or u32"),
                   dst.loc);
  detail::require_bytes(dst, 4 * num, "ldmatrix", "destination");
  detail::require_bytes(row, 16, "ldmatrix", "row address");
  detail::emit_intrinsic(ir::Intrinsic::Ldmatrix,
                         {dst.ptr, row.ptr, detail::imm(num), detail::imm(trans ? 1 : 0)}, dst.loc);
}

HIDET_INLINE void stmatrix(const PtrArg &row, const PtrArg &src, int num, bool trans) {
  if (num != 1 && num != 2 && num != 4)
    throw DSLError(str_cat("stmatrix: num = ", num, " matrices; use 1, 2 or 4"), src.loc);
  detail::require_scope(src, ir::Scope::Register, "stmatrix", "source");
  detail::require_scope(row, ir::Scope::Shared, "stmatrix", "row address");
  if (src.dtype.nbytes() != 2 && src.dtype.nbytes() != 4)
    throw DSLError(str_cat("stmatrix: the source is ", src.dtype,
                           "; use a register tensor of a 16-bit dtype (f16, bf16) or u32"),
                   src.loc);
  detail::require_bytes(src, 4 * num, "stmatrix", "source");
  detail::require_bytes(row, 16, "stmatrix", "row address");
  detail::emit_intrinsic(ir::Intrinsic::Stmatrix,
                         {row.ptr, src.ptr, detail::imm(num), detail::imm(trans ? 1 : 0)}, src.loc);
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
