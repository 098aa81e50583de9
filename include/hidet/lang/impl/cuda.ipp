// Definitions for hidet/lang/cuda.hpp.
#pragma once
#include "hidet/lang/cuda.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE ir::Expr SpecialReg::to_ir(SourceLoc loc) const {
  require_kernel(ir::builtin_name(which), loc);
  return ir::BuiltinNode::make(which, loc);
}

HIDET_INLINE Action::~Action() {
  if (!used_ && call_) {
    if (auto *b = current_builder()) b->emit(ir::EvaluateStmtNode::make(call_, loc_));
  }
}

HIDET_INLINE ir::Expr Action::to_ir(SourceLoc) const {
  used_ = true;
  return call_;
}

namespace detail {
HIDET_INLINE void emit_void_call(ir::Intrinsic op, std::vector<ir::Expr> args, SourceLoc loc,
                                 std::string text) {
  auto &b = require_kernel(std::string(ir::intrinsic_name(op)).c_str(), loc);
  b.emit(ir::EvaluateStmtNode::make(
      ir::CallNode::make_intrinsic(op, std::move(args), ir::void_type(), loc, std::move(text)), loc));
}
} // namespace detail

HIDET_INLINE void syncwarp(unsigned mask, std::source_location loc_) {
  detail::emit_void_call(ir::Intrinsic::SyncWarp, {ir::ConstantNode::make_int(dtypes::u32, mask)}, loc_);
}

namespace detail {
HIDET_INLINE Action atomic(ir::Intrinsic op, const Element &dst, std::vector<Operand> vals,
                           SourceLoc loc) {
  require_kernel(std::string(ir::intrinsic_name(op)).c_str(), loc);
  if (dst.dtype().is_fp8())
    throw DSLError(str_cat(ir::intrinsic_name(op), ": ", dst.base()->hint, " is ", dst.dtype(),
                           "; CUDA has no atomics on 8-bit floats: accumulate in f32 or f16"),
                   loc);
  std::vector<ir::Expr> args{dst.address().ir()};
  for (auto &v : vals) args.push_back(store_value(v, dst.dtype(), ir::intrinsic_name(op).data()));
  return Action(call(op, std::move(args), dst.dtype(), loc), loc);
}

HIDET_INLINE Expr shfl(ir::Intrinsic op, const Operand &mask, const Operand &v, const Operand &lane,
                       int width) {
  require_scalar(v, "shfl");
  require_kernel(std::string(ir::intrinsic_name(op)).c_str(), v.loc);
  DataType d = ir::dtype_of(v.node->type);
  if (v.weak && d == dtypes::f64 && !v.weak_float_is_double) d = dtypes::f32;
  if (d.is_fp8()) d = dtypes::f32; // shuffled as f32 (its value converts back exactly)
  return call(op, {convert(mask.node, dtypes::u32, mask.loc), convert(v.node, d, v.loc), convert(lane.node, dtypes::i32, lane.loc), ir::int32(width)}, d, v.loc);
}
} // namespace detail

HIDET_INLINE Expr any_sync(const Operand &mask, const Operand &pred) {
  return detail::call(ir::Intrinsic::AnySync, {detail::convert(mask.node, dtypes::u32, mask.loc), detail::to_bool(pred, "any_sync")}, dtypes::boolean, pred.loc);
}
HIDET_INLINE Expr all_sync(const Operand &mask, const Operand &pred) {
  return detail::call(ir::Intrinsic::AllSync, {detail::convert(mask.node, dtypes::u32, mask.loc), detail::to_bool(pred, "all_sync")}, dtypes::boolean, pred.loc);
}
HIDET_INLINE Expr ballot_sync(const Operand &mask, const Operand &pred) {
  return detail::call(ir::Intrinsic::BallotSync, {detail::convert(mask.node, dtypes::u32, mask.loc), detail::to_bool(pred, "ballot_sync")}, dtypes::u32, pred.loc);
}

namespace detail {
HIDET_INLINE void emit_printf(const char *format, const std::vector<Operand> &ops) {
  SourceLoc loc = ops.empty() ? SourceLoc{} : ops[0].loc;
  std::vector<ir::Expr> a;
  for (auto &o : ops) {
    detail::require_scalar(o, "printf_");
    DataType d = ir::dtype_of(o.node->type);
    // C varargs promotion: float and halves print as double, small ints as int.
    if (d.is_float()) a.push_back(detail::convert(o.node, dtypes::f64, o.loc));
    else if (d.nbytes() < 4 || d.is_bool()) a.push_back(detail::convert(o.node, dtypes::i32, o.loc));
    else a.push_back(o.node);
  }
  detail::emit_void_call(ir::Intrinsic::Printf, std::move(a), loc, format);
}

HIDET_INLINE ir::Expr float_arg(const Operand &x, const char *fn) {
  require_scalar(x, fn);
  DataType d = ir::dtype_of(x.node->type);
  if (d.is_float()) return (x.weak && !x.weak_float_is_double) ? convert(x.node, dtypes::f32, x.loc) : x.node;
  return convert(x.node, dtypes::f32, x.loc);
}
HIDET_INLINE Expr math1(ir::Intrinsic op, const Operand &x) {
  auto a = float_arg(x, ir::intrinsic_name(op).data());
  return call(op, {a}, ir::dtype_of(a->type), x.loc);
}
HIDET_INLINE Expr math2(ir::Intrinsic op, const Operand &x, const Operand &y, bool allow_int) {
  const char *fn = ir::intrinsic_name(op).data();
  require_scalar(x, fn), require_scalar(y, fn);
  DataType t = binary_type(x, y, fn);
  if (!allow_int && !t.is_float()) t = dtypes::f32;
  return call(op, {convert(x.node, t, x.loc), convert(y.node, t, y.loc)}, t, x.loc);
}
} // namespace detail

HIDET_INLINE Expr isnan(const Operand &x) {
  auto a = detail::float_arg(x, "isnan");
  return detail::call(ir::Intrinsic::IsNan, {a}, dtypes::boolean, x.loc);
}

HIDET_INLINE Expr abs(const Operand &x) {
  detail::require_scalar(x, "abs");
  DataType d = ir::dtype_of(x.node->type);
  if (!d.is_float()) d = detail::int_promote(d);
  return detail::call(ir::Intrinsic::Abs, {detail::convert(x.node, d, x.loc)}, d, x.loc);
}

HIDET_INLINE Expr fma(const Operand &x, const Operand &y, const Operand &z) {
  detail::require_scalar(x, "fma"), detail::require_scalar(y, "fma"), detail::require_scalar(z, "fma");
  DataType t = detail::binary_type(x, y, "fma");
  if (!t.is_float()) t = dtypes::f32;
  return detail::call(ir::Intrinsic::Fma, {detail::convert(x.node, t, x.loc), detail::convert(y.node, t, y.loc), detail::convert(z.node, t, z.loc)}, t, x.loc);
}

HIDET_INLINE Tensor dynamic_shared_tensor(const TensorSpec &spec, const Operand &byte_offset,
                                          std::string name, std::source_location loc_) {
  require_kernel("dynamic_shared_tensor", loc_);
  auto u8p = ir::CallNode::make_intrinsic(ir::Intrinsic::DynamicSharedMemory, {}, ir::pointer_type(ir::scalar_type(dtypes::u8)), loc_);
  auto off = detail::convert(Operand(byte_offset).node, dtypes::i32, loc_);
  auto p = ir::CastNode::make(ir::BinaryNode::make(ir::BinaryOp::Add, u8p, off, loc_),
                              ir::pointer_type(ir::scalar_type(spec.dtype())), loc_);
  return detail::declare_tensor(spec, ir::Scope::Shared, std::move(name), p, loc_);
}

HIDET_INLINE void asm_(const std::string &templ, const std::vector<AsmArg> &outputs,
                       const std::vector<AsmArg> &inputs, std::source_location loc_) {
  auto &b = require_kernel("asm_", loc_);
  std::vector<ir::AsmOperand> outs, ins;
  for (auto &o : outputs) {
    if (!o.value.defined() || !ir::is_lvalue(o.value.ir()))
      throw DSLError(str_cat("asm_ output '", o.constraint, "' must be a variable or tensor element"), loc_);
    outs.push_back({o.constraint, o.value.ir()});
  }
  for (auto &i : inputs) ins.push_back({i.constraint, i.value.ir()});
  b.emit(ir::AsmStmtNode::make(templ, std::move(outs), std::move(ins), true, true, loc_));
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
