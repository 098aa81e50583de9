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
  ir::Expr to_ir(SourceLoc loc) const;
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
/// Emits a call of `op` as a statement (device code only).
void emit_void_call(ir::Intrinsic op, std::vector<ir::Expr> args, SourceLoc loc,
                    std::string text = {});
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
  ~Action();
  ir::Expr to_ir(SourceLoc) const;

private:
  ir::Expr call_;
  SourceLoc loc_;
  mutable bool used_ = false;
};

/// __syncthreads(): a barrier for all threads of the block.
inline void syncthreads(HIDET_LOC_PARAM) { detail::emit_void_call(ir::Intrinsic::SyncThreads, {}, loc_); }
/// __syncwarp(mask)
void syncwarp(unsigned mask = 0xffffffffu, HIDET_LOC_PARAM);
/// __threadfence(): this thread's writes before it are seen by every thread of the GPU before
/// its writes after it (publish data, then raise a flag or count with an atomic).
inline void threadfence(HIDET_LOC_PARAM) { detail::emit_void_call(ir::Intrinsic::ThreadFence, {}, loc_); }
/// __threadfence_system(): as threadfence(), for the host and other devices too (writes to mapped
/// host memory that the host reads without synchronizing).
inline void threadfence_system(HIDET_LOC_PARAM) { detail::emit_void_call(ir::Intrinsic::ThreadFenceSystem, {}, loc_); }
/// Waits until the kernel before this one in the stream has completed and its writes are visible
/// (griddepcontrol.wait from sm_90 on; nothing before, and nothing on the emulator). Every kernel
/// waits at its start by itself (docs/notes/programmatic_launch.md): a kernel that calls this
/// waits here instead, so that what comes before it overlaps the end of the kernel before, which
/// may still be writing any buffer. The verifier (transforms/verify.hpp) allows one call, at the
/// kernel body's top level, and before it no access to global or shared memory except
/// prefetch_l2 (lang/primitives/memory.hpp): index arithmetic, register tensors and prefetches.
inline void grid_dependency_wait(HIDET_LOC_PARAM) {
  detail::emit_void_call(ir::Intrinsic::GridDependencyWait, {}, loc_);
}

namespace detail {
/// An atomic read-modify-write of `dst` with `vals` (converted to dst's dtype).
Action atomic(ir::Intrinsic op, const Element &dst, std::vector<Operand> vals, SourceLoc loc);
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
/// A warp shuffle of `v` (its dtype kept; a weak float literal becomes f32).
Expr shfl(ir::Intrinsic op, const Operand &mask, const Operand &v, const Operand &lane, int width);
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
Expr any_sync(const Operand &mask, const Operand &pred);
Expr all_sync(const Operand &mask, const Operand &pred);
Expr ballot_sync(const Operand &mask, const Operand &pred);

namespace detail {
/// Emits printf_(format, ops...), with C varargs promotion of the operands.
void emit_printf(const char *format, const std::vector<Operand> &ops);
} // namespace detail

/// Device-side printf (CUDA printf semantics). Named with a trailing underscore so it never
/// resolves to the host's ::printf.
template <class... Args> void printf_(const char *format, const Args &...args) {
  detail::emit_printf(format, {Operand(args)...});
}

// ---- math ------------------------------------------------------------------------------------

namespace detail {
/// Float math: an integer argument is converted to f32.
ir::Expr float_arg(const Operand &x, const char *fn);
/// A unary float math function.
Expr math1(ir::Intrinsic op, const Operand &x);
/// A binary math function on the promoted type (f32 for integers unless `allow_int`).
Expr math2(ir::Intrinsic op, const Operand &x, const Operand &y, bool allow_int);
} // namespace detail

#define HIDET_MATH1(name, op)                                                                      \
  inline Expr name(const Operand &x) { return detail::math1(ir::Intrinsic::op, x); }
HIDET_MATH1(exp, Exp) HIDET_MATH1(exp2, Exp2) HIDET_MATH1(log, Log) HIDET_MATH1(log2, Log2)
HIDET_MATH1(sqrt, Sqrt) HIDET_MATH1(rsqrt, Rsqrt) HIDET_MATH1(sin, Sin) HIDET_MATH1(cos, Cos)
HIDET_MATH1(tanh, Tanh) HIDET_MATH1(erf, Erf) HIDET_MATH1(floor, Floor) HIDET_MATH1(ceil, Ceil)
HIDET_MATH1(round, Round) HIDET_MATH1(trunc, Trunc) HIDET_MATH1(tan, Tan) HIDET_MATH1(asin, Asin)
HIDET_MATH1(acos, Acos) HIDET_MATH1(atan, Atan) HIDET_MATH1(sinh, Sinh) HIDET_MATH1(cosh, Cosh)
HIDET_MATH1(asinh, Asinh) HIDET_MATH1(acosh, Acosh) HIDET_MATH1(atanh, Atanh)
HIDET_MATH1(log1p, Log1p) HIDET_MATH1(expm1, Expm1) HIDET_MATH1(log10, Log10)
HIDET_MATH1(erfinv, Erfinv) HIDET_MATH1(erfc, Erfc)
#undef HIDET_MATH1

/// isnan(x) -> bool
Expr isnan(const Operand &x);
/// |x| for floats and integers.
Expr abs(const Operand &x);
inline Expr pow(const Operand &x, const Operand &y) { return detail::math2(ir::Intrinsic::Pow, x, y, false); }
/// The angle of the point (x, y) in (-pi, pi]: atan2(y, x) as in C.
inline Expr atan2(const Operand &y, const Operand &x) {
  return detail::math2(ir::Intrinsic::Atan2, y, x, false);
}
/// C fmod: x - trunc(x / y) * y, the sign of x (floats; integers are converted to f32).
inline Expr fmod(const Operand &x, const Operand &y) {
  return detail::math2(ir::Intrinsic::Fmod, x, y, false);
}
inline Expr min(const Operand &x, const Operand &y) { return detail::math2(ir::Intrinsic::Min, x, y, true); }
inline Expr max(const Operand &x, const Operand &y) { return detail::math2(ir::Intrinsic::Max, x, y, true); }
/// x * y + z with a single rounding.
Expr fma(const Operand &x, const Operand &y, const Operand &z);

// ---- dynamic shared memory and inline PTX ----------------------------------------------------

/// A tensor view of the kernel's dynamic shared memory starting at `byte_offset`; set
/// attrs.cuda.dynamic_smem_bytes to the total size. Dims may be run-time expressions.
Tensor dynamic_shared_tensor(const TensorSpec &spec, const Operand &byte_offset = Operand(0),
                             std::string name = "dyn_smem", HIDET_LOC_PARAM);

/// An operand of inline PTX: a constraint and a value (an lvalue Var for outputs).
struct AsmArg {
  std::string constraint;
  Expr value;
};

/// asm volatile(templ : outputs : inputs : "memory"). Outputs must be variables.
void asm_(const std::string &templ, const std::vector<AsmArg> &outputs,
          const std::vector<AsmArg> &inputs, HIDET_LOC_PARAM);

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/cuda.ipp"
#endif
