// CUDA constructs in Hidet Script: threadIdx/blockIdx/blockDim/gridDim, barriers, atomics, warp
// shuffles and votes, printf_, math functions, dynamic shared memory and inline PTX.
#pragma once

#include <string>
#include <vector>

#include "hidet/ir/intrinsic.hpp"
#include "hidet/lang/var.hpp"

namespace hidet::lang {

/// One CUDA special register (threadIdx.x, ...): an i32 expression usable only in device code.
struct SpecialReg {
  ir::BuiltinKind which;
  ir::Expr to_ir(SourceLoc loc) const {
    require_kernel(ir::builtin_name(which), loc);
    return ir::BuiltinNode::make(which, loc);
  }
};
struct SpecialDim3 {
  SpecialReg x, y, z;
};
inline constexpr SpecialDim3 threadIdx{{ir::BuiltinKind::ThreadIdxX}, {ir::BuiltinKind::ThreadIdxY}, {ir::BuiltinKind::ThreadIdxZ}};
inline constexpr SpecialDim3 blockIdx{{ir::BuiltinKind::BlockIdxX}, {ir::BuiltinKind::BlockIdxY}, {ir::BuiltinKind::BlockIdxZ}};
inline constexpr SpecialDim3 blockDim{{ir::BuiltinKind::BlockDimX}, {ir::BuiltinKind::BlockDimY}, {ir::BuiltinKind::BlockDimZ}};
inline constexpr SpecialDim3 gridDim{{ir::BuiltinKind::GridDimX}, {ir::BuiltinKind::GridDimY}, {ir::BuiltinKind::GridDimZ}};

namespace detail {
inline ir::Expr call(ir::Intrinsic op, std::vector<ir::Expr> args, DataType ret, SourceLoc loc) {
  return ir::CallNode::make_intrinsic(op, std::move(args), ir::scalar_type(ret), loc);
}
inline void emit_void_call(ir::Intrinsic op, std::vector<ir::Expr> args, SourceLoc loc, std::string text = {}) {
  auto &b = require_kernel(std::string(ir::intrinsic_name(op)).c_str(), loc);
  b.emit(ir::EvaluateStmtNode::make(
      ir::CallNode::make_intrinsic(op, std::move(args), ir::void_type(), loc, std::move(text)), loc));
}
} // namespace detail

/// A call with side effects whose value may be ignored: `atomic_add(x, 1);` emits the call as a
/// statement; `Var old = atomic_add(x, 1);` uses its value instead (then it is not emitted twice).
/// An Action used as an expression is evaluated where the expression is used: bind it to a Var
/// if you need its value more than once.
class Action {
public:
  Action(ir::Expr call, SourceLoc loc) : call_(std::move(call)), loc_(loc) {}
  Action(const Action &) = delete;
  Action &operator=(const Action &) = delete;
  ~Action() {
    if (!used_ && call_) {
      if (auto *b = current_builder()) b->emit(ir::EvaluateStmtNode::make(call_, loc_));
    }
  }
  ir::Expr to_ir(SourceLoc) const {
    used_ = true;
    return call_;
  }

private:
  ir::Expr call_;
  SourceLoc loc_;
  mutable bool used_ = false;
};

/// __syncthreads(): a barrier for all threads of the block.
inline void syncthreads(HIDET_LOC_PARAM) { detail::emit_void_call(ir::Intrinsic::SyncThreads, {}, loc_); }
/// __syncwarp(mask)
inline void syncwarp(unsigned mask = 0xffffffffu, HIDET_LOC_PARAM) {
  detail::emit_void_call(ir::Intrinsic::SyncWarp, {ir::ConstantNode::make_int(dtypes::u32, mask)}, loc_);
}

namespace detail {
inline Action atomic(ir::Intrinsic op, const Element &dst, std::vector<Operand> vals, SourceLoc loc) {
  require_kernel(std::string(ir::intrinsic_name(op)).c_str(), loc);
  std::vector<ir::Expr> args{dst.address().ir()};
  for (auto &v : vals) args.push_back(store_value(v, dst.dtype(), ir::intrinsic_name(op).data()));
  return Action(call(op, std::move(args), dst.dtype(), loc), loc);
}
} // namespace detail

/// atomicAdd(&dst, v); returns the old value.
inline Action atomic_add(const Element &dst, const Operand &v) { return detail::atomic(ir::Intrinsic::AtomicAdd, dst, {v}, v.loc); }
inline Action atomic_min(const Element &dst, const Operand &v) { return detail::atomic(ir::Intrinsic::AtomicMin, dst, {v}, v.loc); }
inline Action atomic_max(const Element &dst, const Operand &v) { return detail::atomic(ir::Intrinsic::AtomicMax, dst, {v}, v.loc); }
inline Action atomic_exchange(const Element &dst, const Operand &v) { return detail::atomic(ir::Intrinsic::AtomicExch, dst, {v}, v.loc); }
/// atomicCAS(&dst, compare, value); returns the old value.
inline Action atomic_cas(const Element &dst, const Operand &compare, const Operand &value) {
  return detail::atomic(ir::Intrinsic::AtomicCas, dst, {compare, value}, compare.loc);
}

namespace detail {
inline Expr shfl(ir::Intrinsic op, const Operand &mask, const Operand &v, const Operand &lane, int width) {
  require_scalar(v, "shfl");
  require_kernel(std::string(ir::intrinsic_name(op)).c_str(), v.loc);
  DataType d = ir::dtype_of(v.node->type);
  if (v.weak && d == dtypes::f64 && !v.weak_float_is_double) d = dtypes::f32;
  return call(op, {convert(mask.node, dtypes::u32, mask.loc), convert(v.node, d, v.loc), convert(lane.node, dtypes::i32, lane.loc), ir::int32(width)}, d, v.loc);
}
} // namespace detail

/// __shfl_sync(mask, v, src_lane, width)
inline Expr shfl_sync(const Operand &mask, const Operand &v, const Operand &src_lane, int width = 32) {
  return detail::shfl(ir::Intrinsic::ShflSync, mask, v, src_lane, width);
}
inline Expr shfl_up_sync(const Operand &mask, const Operand &v, const Operand &delta, int width = 32) {
  return detail::shfl(ir::Intrinsic::ShflUpSync, mask, v, delta, width);
}
inline Expr shfl_down_sync(const Operand &mask, const Operand &v, const Operand &delta, int width = 32) {
  return detail::shfl(ir::Intrinsic::ShflDownSync, mask, v, delta, width);
}
inline Expr shfl_xor_sync(const Operand &mask, const Operand &v, const Operand &lane_mask, int width = 32) {
  return detail::shfl(ir::Intrinsic::ShflXorSync, mask, v, lane_mask, width);
}
/// Warp votes.
inline Expr any_sync(const Operand &mask, const Operand &pred) {
  return detail::call(ir::Intrinsic::AnySync, {detail::convert(mask.node, dtypes::u32, mask.loc), detail::to_bool(pred, "any_sync")}, dtypes::boolean, pred.loc);
}
inline Expr all_sync(const Operand &mask, const Operand &pred) {
  return detail::call(ir::Intrinsic::AllSync, {detail::convert(mask.node, dtypes::u32, mask.loc), detail::to_bool(pred, "all_sync")}, dtypes::boolean, pred.loc);
}
inline Expr ballot_sync(const Operand &mask, const Operand &pred) {
  return detail::call(ir::Intrinsic::BallotSync, {detail::convert(mask.node, dtypes::u32, mask.loc), detail::to_bool(pred, "ballot_sync")}, dtypes::u32, pred.loc);
}

/// Device-side printf (CUDA printf semantics). Named with a trailing underscore so it never
/// resolves to the host's ::printf.
template <class... Args> void printf_(const char *format, const Args &...args) {
  std::vector<Operand> ops{Operand(args)...};
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

// ---- math ------------------------------------------------------------------------------------

namespace detail {
/// Float math: an integer argument is converted to f32.
inline ir::Expr float_arg(const Operand &x, const char *fn) {
  require_scalar(x, fn);
  DataType d = ir::dtype_of(x.node->type);
  if (d.is_float()) return (x.weak && !x.weak_float_is_double) ? convert(x.node, dtypes::f32, x.loc) : x.node;
  return convert(x.node, dtypes::f32, x.loc);
}
inline Expr math1(ir::Intrinsic op, const Operand &x) {
  auto a = float_arg(x, ir::intrinsic_name(op).data());
  return call(op, {a}, ir::dtype_of(a->type), x.loc);
}
inline Expr math2(ir::Intrinsic op, const Operand &x, const Operand &y, bool allow_int) {
  const char *fn = ir::intrinsic_name(op).data();
  require_scalar(x, fn), require_scalar(y, fn);
  DataType t = binary_type(x, y, fn);
  if (!allow_int && !t.is_float()) t = dtypes::f32;
  return call(op, {convert(x.node, t, x.loc), convert(y.node, t, y.loc)}, t, x.loc);
}
} // namespace detail

#define HIDET_MATH1(name, op)                                                                      \
  inline Expr name(const Operand &x) { return detail::math1(ir::Intrinsic::op, x); }
HIDET_MATH1(exp, Exp) HIDET_MATH1(exp2, Exp2) HIDET_MATH1(log, Log) HIDET_MATH1(log2, Log2)
HIDET_MATH1(sqrt, Sqrt) HIDET_MATH1(rsqrt, Rsqrt) HIDET_MATH1(sin, Sin) HIDET_MATH1(cos, Cos)
HIDET_MATH1(tanh, Tanh) HIDET_MATH1(erf, Erf) HIDET_MATH1(floor, Floor) HIDET_MATH1(ceil, Ceil)
HIDET_MATH1(round, Round)
#undef HIDET_MATH1

/// isnan(x) -> bool
inline Expr isnan(const Operand &x) {
  auto a = detail::float_arg(x, "isnan");
  return detail::call(ir::Intrinsic::IsNan, {a}, dtypes::boolean, x.loc);
}
/// |x| for floats and integers.
inline Expr abs(const Operand &x) {
  detail::require_scalar(x, "abs");
  DataType d = ir::dtype_of(x.node->type);
  if (!d.is_float()) d = detail::int_promote(d);
  return detail::call(ir::Intrinsic::Abs, {detail::convert(x.node, d, x.loc)}, d, x.loc);
}
inline Expr pow(const Operand &x, const Operand &y) { return detail::math2(ir::Intrinsic::Pow, x, y, false); }
inline Expr min(const Operand &x, const Operand &y) { return detail::math2(ir::Intrinsic::Min, x, y, true); }
inline Expr max(const Operand &x, const Operand &y) { return detail::math2(ir::Intrinsic::Max, x, y, true); }
/// x * y + z with a single rounding.
inline Expr fma(const Operand &x, const Operand &y, const Operand &z) {
  detail::require_scalar(x, "fma"), detail::require_scalar(y, "fma"), detail::require_scalar(z, "fma");
  DataType t = detail::binary_type(x, y, "fma");
  if (!t.is_float()) t = dtypes::f32;
  return detail::call(ir::Intrinsic::Fma, {detail::convert(x.node, t, x.loc), detail::convert(y.node, t, y.loc), detail::convert(z.node, t, z.loc)}, t, x.loc);
}

// ---- dynamic shared memory and inline PTX ----------------------------------------------------

/// A tensor view of the kernel's dynamic shared memory starting at `byte_offset`; set
/// attrs.cuda.dynamic_smem_bytes to the total size. Dims may be run-time expressions.
inline Tensor dynamic_shared_tensor(const TensorSpec &spec, const Operand &byte_offset = Operand(0),
                                    std::string name = "dyn_smem", HIDET_LOC_PARAM) {
  require_kernel("dynamic_shared_tensor", loc_);
  auto u8p = ir::CallNode::make_intrinsic(ir::Intrinsic::DynamicSharedMemory, {}, ir::pointer_type(ir::scalar_type(dtypes::u8)), loc_);
  auto off = detail::convert(Operand(byte_offset).node, dtypes::i32, loc_);
  auto p = ir::CastNode::make(ir::BinaryNode::make(ir::BinaryOp::Add, u8p, off, loc_),
                              ir::pointer_type(ir::scalar_type(spec.dtype())), loc_);
  return detail::declare_tensor(spec, ir::Scope::Shared, std::move(name), p, loc_);
}

/// An operand of inline PTX: a constraint and a value (an lvalue Var for outputs).
struct AsmArg {
  std::string constraint;
  Expr value;
};

/// asm volatile(templ : outputs : inputs : "memory"). Outputs must be variables.
inline void asm_(const std::string &templ, const std::vector<AsmArg> &outputs, const std::vector<AsmArg> &inputs,
                 HIDET_LOC_PARAM) {
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
