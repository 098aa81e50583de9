// Built-in functions a Call can name: math, barriers, atomics, warp shuffles and votes, printf,
// dynamic shared memory. Codegen maps each to CUDA; the emulator implements each on the CPU.
#pragma once

#include <cstdint>
#include <string_view>

#include "hidet/config.hpp"

namespace hidet::ir {

/// X(enumerator, name as printed)
#define HIDET_INTRINSICS(X)                                                                        \
  /* math: same dtype in and out (f16, bf16, f32, f64; abs/min/max also integers) */              \
  X(Exp, "exp") X(Exp2, "exp2") X(Log, "log") X(Log2, "log2") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt")    \
  X(Sin, "sin") X(Cos, "cos") X(Tanh, "tanh") X(Erf, "erf") X(Pow, "pow") X(Abs, "abs")            \
  X(Min, "min") X(Max, "max") X(Fma, "fma") X(Floor, "floor") X(Ceil, "ceil") X(Round, "round")    \
  X(Trunc, "trunc") X(Tan, "tan") X(Asin, "asin") X(Acos, "acos") X(Atan, "atan")                  \
  X(Atan2, "atan2") X(Sinh, "sinh") X(Cosh, "cosh") X(Asinh, "asinh") X(Acosh, "acosh")            \
  X(Atanh, "atanh") X(Log1p, "log1p") X(Expm1, "expm1") X(Log10, "log10") X(Erfinv, "erfinv")      \
  X(Erfc, "erfc")                                                                                  \
  X(Fmod, "fmod") /* floats only: C fmod, the sign of the dividend */                              \
  X(IsNan, "isnan")                                                                                \
  /* barriers */                                                                                   \
  X(SyncThreads, "syncthreads") X(SyncWarp, "syncwarp")                                            \
  X(ThreadFence, "threadfence") /* __threadfence(): orders this thread's memory accesses GPU-wide */ \
  X(ThreadFenceSystem, "threadfence_system") /* __threadfence_system(): also for the host */        \
  /* programmatic dependent launch (sm_90 on; nothing before): lang/cuda.hpp */                  \
  X(GridDependencyWait, "grid_dependency_wait")                                                    \
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
  X(DynamicSharedMemory, "dynamic_shared_memory")                                                 \
  /* primitives (lang/primitives/): constant operands are i32 constants */                         \
  /* (dst, src, bytes 4|8|16): one vector load and one vector store */                             \
  X(CopyVector, "copy_vector")                                                                     \
  /* (address in global memory): its 128-byte line into the L2; a hint, no value, no fault */      \
  X(PrefetchL2, "prefetch_l2")                                                                     \
  /* cp.async (dst shared, src global, bytes 4|8|16, src_bytes): zero-fills past src_bytes */      \
  X(CpAsync, "cp_async") X(CpAsyncCommitGroup, "cp_async_commit_group")                            \
  X(CpAsyncWaitGroup, "cp_async_wait_group") /* (n) */                                             \
  /* ldmatrix (dst registers, this lane's row address in shared, num 1|2|4, trans 0|1) */          \
  X(Ldmatrix, "ldmatrix")                                                                          \
  /* stmatrix (this lane's row address in shared, src registers, num 1|2|4, trans 0|1): sm_90 */   \
  X(Stmatrix, "stmatrix")                                                                          \
  /* mma.sync (d, a, b, c, m, n, k): pointers to register fragments; dtypes from the pointees */   \
  X(MmaSync, "mma_sync")                                                                           \
  /* packed pairs of f16/bf16 in a u32 (low half first); the last operand is the DTypeCode */      \
  X(Half2Pack, "half2_pack")     /* (lo f32, hi f32, dtype) -> u32 */                              \
  X(Half2Unpack, "half2_unpack") /* (packed, index 0|1, dtype) -> f32 */                           \
  X(Half2Add, "half2_add") X(Half2Sub, "half2_sub") X(Half2Mul, "half2_mul")                       \
  X(Half2Fma, "half2_fma")                                                                         \
  /* Hopper (sm_90a), not emulated: mbarrier (bar is a u64 in shared memory) */                  \
  X(MbarrierInit, "mbarrier_init")                       /* (bar, count) */                        \
  X(MbarrierArrive, "mbarrier_arrive")                   /* (bar) */                               \
  X(MbarrierArriveCluster, "mbarrier_arrive_cluster")    /* (bar, cta): on block cta's copy */     \
  X(MbarrierArriveExpectTx, "mbarrier_arrive_expect_tx") /* (bar, bytes) */                        \
  X(CpAsyncMbarrierArrive, "cp_async_mbarrier_arrive")  /* (bar): after this thread's cp.async */ \
  X(MbarrierTryWait, "mbarrier_try_wait")                /* (bar, phase) -> bool */                \
  X(FenceProxyAsync, "fence_proxy_async") X(FenceMbarrierInit, "fence_mbarrier_init")              \
  /* TMA: (dst shared, tensor map, bar, coords...), (tensor map, src shared, coords...) */         \
  X(TmaLoad, "tma_load") X(TmaStore, "tma_store") X(TmaCommitGroup, "tma_commit_group")            \
  X(TmaWaitGroup, "tma_wait_group") /* (n) */                                                      \
  X(TmaLoadMulticast, "tma_load_multicast") /* (dst, tensor map, bar, cta mask u16, coords...) */  \
  /* wgmma (d f32 registers, desc_a u64, desc_b u64, scale_d, n, ab dtype, trans_a, trans_b) */    \
  /* wgmma_rs: A from registers (d f32 registers, a u32[4] registers, desc_b u64, scale_d, n,      \
     ab dtype, trans_b) */                                                                         \
  X(Wgmma, "wgmma") X(WgmmaRs, "wgmma_rs") X(WgmmaFence, "wgmma_fence") X(WgmmaCommitGroup, "wgmma_commit_group")         \
  X(WgmmaWaitGroup, "wgmma_wait_group") /* (n) */                                                  \
  X(SmemAddress, "smem_address") /* (pointer to shared) -> u32 shared-window address */            \
  X(SetMaxNReg, "setmaxnreg")    /* (count, increase 0|1) */                                       \
  /* thread-block clusters */                                                                      \
  X(ClusterCtaRank, "cluster_ctarank") X(ClusterNumCtas, "cluster_nctarank")                       \
  X(ClusterSync, "cluster_sync")

enum class Intrinsic : std::uint8_t {
  None, ///< a call to a device function of the module, by name
#define HIDET_X(e, n) e,
  HIDET_INTRINSICS(HIDET_X)
#undef HIDET_X
};

/// The intrinsic's name as printed ("exp", "mma_sync", ...); "<call>" for None.
std::string_view intrinsic_name(Intrinsic op);

/// True for the math intrinsics (pure, elementwise on scalars).
inline bool is_math_intrinsic(Intrinsic op) {
  return op >= Intrinsic::Exp && op <= Intrinsic::IsNan;
}

/// True for the primitives of lang/primitives/ (codegen_primitives.hpp, primitive_nodes.hpp).
inline bool is_primitive_intrinsic(Intrinsic op) {
  return op >= Intrinsic::CopyVector && op <= Intrinsic::ClusterSync;
}
/// True for the primitives that need sm_90a (wgmma, setmaxnreg) or sm_90 (the other Hopper ones).
inline bool is_hopper_intrinsic(Intrinsic op) {
  return op >= Intrinsic::MbarrierInit && op <= Intrinsic::ClusterSync;
}

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/intrinsic.ipp"
#endif
