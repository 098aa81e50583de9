// Definitions for hidet/lang/primitives/half.hpp.
#pragma once
#include "hidet/lang/primitives/half.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

namespace detail {
HIDET_INLINE void require_half(DataType d, const char *fn, SourceLoc loc) {
  if (!d.is_half()) throw DSLError(str_cat(fn, ": the packed dtype is ", d, "; use f16 or bf16"), loc);
}
HIDET_INLINE ir::Expr packed(const Operand &x, const char *fn) {
  require_scalar(x, fn);
  DataType d = ir::dtype_of(x.node->type);
  if (d != dtypes::u32 && !(x.weak && d.is_integer()))
    throw DSLError(str_cat(fn, ": a packed pair is a u32, got ", d, " (build one with half2_pack)"), x.loc);
  return convert(x.node, dtypes::u32, x.loc);
}
HIDET_INLINE Expr half2_op(ir::Intrinsic op, std::vector<const Operand *> xs, DataType d) {
  const char *fn = ir::intrinsic_name(op).data();
  require_half(d, fn, xs[0]->loc);
  std::vector<ir::Expr> args;
  for (auto *x : xs) args.push_back(packed(*x, fn));
  args.push_back(imm(int(d.code)));
  return call(op, std::move(args), dtypes::u32, xs[0]->loc);
}
} // namespace detail

HIDET_INLINE Expr to_f16(const Operand &x) {
  detail::require_scalar(x, "to_f16");
  return Expr(detail::convert(x.node, dtypes::f16, x.loc));
}

HIDET_INLINE Expr to_bf16(const Operand &x) {
  detail::require_scalar(x, "to_bf16");
  return Expr(detail::convert(x.node, dtypes::bf16, x.loc));
}

HIDET_INLINE Expr to_f32(const Operand &x) {
  detail::require_scalar(x, "to_f32");
  return Expr(detail::convert(x.node, dtypes::f32, x.loc));
}

HIDET_INLINE Expr half2_pack(const Operand &lo, const Operand &hi, DataType d) {
  detail::require_half(d, "half2_pack", lo.loc);
  detail::require_scalar(lo, "half2_pack"), detail::require_scalar(hi, "half2_pack");
  return detail::call(ir::Intrinsic::Half2Pack,
                      {detail::convert(lo.node, dtypes::f32, lo.loc), detail::convert(hi.node, dtypes::f32, hi.loc),
                       detail::imm(int(d.code))},
                      dtypes::u32, lo.loc);
}

HIDET_INLINE Expr half2_unpack(const Operand &p, int index, DataType d) {
  detail::require_half(d, "half2_unpack", p.loc);
  if (index != 0 && index != 1) throw DSLError(str_cat("half2_unpack: index ", index, " is not 0 or 1"), p.loc);
  return detail::call(ir::Intrinsic::Half2Unpack, {detail::packed(p, "half2_unpack"), detail::imm(index), detail::imm(int(d.code))},
                      dtypes::f32, p.loc);
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
