// Built-in functions a Call can name: math, barriers, atomics, warp shuffles and votes, printf,
// dynamic shared memory. Codegen maps each to CUDA; the emulator implements each on the CPU.
#pragma once

#include <cstdint>
#include <string_view>

namespace hidet::ir {

/// X(enumerator, name as printed)
#define HIDET_INTRINSICS(X)                                                                        \
  /* math: same dtype in and out (f16, bf16, f32, f64; abs/min/max also integers) */              \
  X(Exp, "exp") X(Exp2, "exp2") X(Log, "log") X(Log2, "log2") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt")    \
  X(Sin, "sin") X(Cos, "cos") X(Tanh, "tanh") X(Erf, "erf") X(Pow, "pow") X(Abs, "abs")            \
  X(Min, "min") X(Max, "max") X(Fma, "fma") X(Floor, "floor") X(Ceil, "ceil") X(Round, "round")    \
  X(IsNan, "isnan")                                                                                \
  /* barriers */                                                                                   \
  X(SyncThreads, "syncthreads") X(SyncWarp, "syncwarp")                                            \
  /* atomics: (address, value[, value]) -> old value */                                            \
  X(AtomicAdd, "atomic_add") X(AtomicMin, "atomic_min") X(AtomicMax, "atomic_max")                 \
  X(AtomicExch, "atomic_exchange") X(AtomicCas, "atomic_cas")                                      \
  /* warp shuffles: (mask, value, lane|delta|lane_mask, width) -> value */                         \
  X(ShflSync, "shfl_sync") X(ShflUpSync, "shfl_up_sync") X(ShflDownSync, "shfl_down_sync")         \
  X(ShflXorSync, "shfl_xor_sync")                                                                  \
  /* votes: (mask, predicate) */                                                                   \
  X(AnySync, "any_sync") X(AllSync, "all_sync") X(BallotSync, "ballot_sync")                       \
  /* printf(format in Call::text, args...) */                                                      \
  X(Printf, "printf")                                                                              \
  /* pointer to the start of dynamic shared memory (u8*) */                                        \
  X(DynamicSharedMemory, "dynamic_shared_memory")

enum class Intrinsic : std::uint8_t {
  None, ///< a call to a device function of the module, by name
#define HIDET_X(e, n) e,
  HIDET_INTRINSICS(HIDET_X)
#undef HIDET_X
};

inline std::string_view intrinsic_name(Intrinsic op) {
  switch (op) {
  case Intrinsic::None: return "<call>";
#define HIDET_X(e, n)                                                                              \
  case Intrinsic::e: return n;
    HIDET_INTRINSICS(HIDET_X)
#undef HIDET_X
  }
  return "?";
}

/// True for the math intrinsics (pure, elementwise on scalars).
inline bool is_math_intrinsic(Intrinsic op) {
  return op >= Intrinsic::Exp && op <= Intrinsic::IsNan;
}

} // namespace hidet::ir
