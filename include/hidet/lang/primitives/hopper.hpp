// Hopper (sm_90 / sm_90a) primitives in Hidet Script: mbarriers, the tensor memory accelerator
// (TMA: bulk tensor copies described by a tensor map, see hidet/runtime/tensor_map.hpp), wgmma
// (warpgroup matrix multiply-accumulate from shared-memory descriptors), setmaxnreg and
// thread-block cluster ids. These run only on a GPU: the emulator rejects them with an
// EmulatorError; building a module that uses them for an older arch is a DSLError.
//
//   auto bar = shared_tensor(u64[1], "bar");
//   if_(threadIdx.x == 0, [&] { mbarrier_init(bar, 1); fence_mbarrier_init(); });
//   syncthreads();
//   if_(threadIdx.x == 0, [&] {
//     mbarrier_arrive_expect_tx(bar, 64 * 64 * 2);
//     tma_load(tile, tmap, bar, {k0, m0});
//   });
//   mbarrier_wait(bar, 0);
#pragma once

#include <initializer_list>

#include "hidet/lang/control.hpp"
#include "hidet/lang/primitives/memory.hpp"

namespace hidet::lang {

namespace detail {
/// Throws a DSLError unless `bar` is a u64 (or i64) in shared memory.
void require_mbarrier(const PtrArg &bar, const char *fn);
/// A scalar operand converted to u32.
ir::Expr u32_arg(const Operand &x, const char *fn);
} // namespace detail

// ---- mbarrier ----------------------------------------------------------------------------------

/// mbarrier.init: the barrier expects `count` arrivals per phase.
void mbarrier_init(const PtrArg &bar, const Operand &count);
/// mbarrier.arrive: one arrival of this thread.
void mbarrier_arrive(const PtrArg &bar);
/// One arrival on the barrier at `bar`'s offset in the shared memory of block `cta` of this
/// thread-block cluster (mapa + mbarrier.arrive.shared::cluster, release at CTA scope, as for a
/// local arrival); `cta` may be this block's rank.
void mbarrier_arrive_cluster(const PtrArg &bar, const Operand &cta);
/// mbarrier.arrive.expect_tx: one arrival, and the phase also waits for `bytes` of TMA traffic.
void mbarrier_arrive_expect_tx(const PtrArg &bar, const Operand &bytes);
/// cp.async.mbarrier.arrive.noinc: one arrival on `bar` once every cp.async this thread issued
/// before it has completed (the copies then complete the phase like TMA bytes do). .noinc: the
/// arrival counts against the barrier's init count, so count these threads in mbarrier_init.
void cp_async_mbarrier_arrive(const PtrArg &bar);
/// mbarrier.try_wait.parity: true when the phase of parity `phase` (0 or 1) has completed.
Expr mbarrier_try_wait(const PtrArg &bar, const Operand &phase);
/// Spins until the phase of parity `phase` has completed.
void mbarrier_wait(const PtrArg &bar, const Operand &phase);
/// fence.proxy.async.shared::cta: makes generic-proxy writes to shared memory visible to TMA/wgmma.
inline void fence_proxy_async(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::FenceProxyAsync, {}, loc_); }
/// fence.mbarrier_init.release.cluster: publishes mbarrier_init to the async proxy and the cluster.
inline void fence_mbarrier_init(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::FenceMbarrierInit, {}, loc_); }

// ---- TMA ---------------------------------------------------------------------------------------

namespace detail {
/// The coordinates of a TMA box (1 to 5) as i32 expressions.
std::vector<ir::Expr> tma_coords(std::initializer_list<Operand> coords, const char *fn,
                                 SourceLoc loc);
} // namespace detail

/// cp.async.bulk.tensor (global -> shared): loads the box at `coords` (innermost dimension
/// first) of the tensor map `tmap` (a 128-byte CUtensorMap in global memory, TensorMap::
/// to_device()) into shared `dst`; completion is signalled on `bar` as transaction bytes.
void tma_load(const PtrArg &dst, const PtrArg &tmap, const PtrArg &bar,
              std::initializer_list<Operand> coords);
/// tma_load with .multicast::cluster: the box lands at `dst`'s offset in the shared memory of
/// every block of the cluster whose rank is a bit of `cta_mask`, and each of them counts its
/// bytes on the barrier at `bar`'s offset in its own shared memory.
void tma_load_multicast(const PtrArg &dst, const PtrArg &tmap, const PtrArg &bar,
                        std::initializer_list<Operand> coords, const Operand &cta_mask);
/// cp.async.bulk.tensor (shared -> global): stores shared `src` to the box at `coords`; complete
/// with tma_commit_group() and tma_wait_group(0).
void tma_store(const PtrArg &tmap, const PtrArg &src, std::initializer_list<Operand> coords);
/// cp.async.bulk.commit_group / wait_group n (bulk stores of this thread).
inline void tma_commit_group(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::TmaCommitGroup, {}, loc_); }
inline void tma_wait_group(int n, HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::TmaWaitGroup, {detail::imm(n)}, loc_); }

// ---- wgmma -------------------------------------------------------------------------------------

/// The 32-bit shared-window address of a shared-memory pointer (cvta.to.shared).
Expr smem_address(const PtrArg &p);
/// Shared-memory swizzle modes of wgmma descriptors (and tensor maps).
enum class Swizzle : std::uint8_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };
/// A wgmma shared-memory matrix descriptor: start address, leading- and stride-dimension byte
/// offsets (multiples of 16) and the swizzle mode of the tile at `p`.
Expr make_wgmma_desc(const PtrArg &p, int leading_bytes, int stride_bytes, Swizzle swizzle);
/// wgmma.fence: orders register accesses of the accumulators before the next wgmma.
inline void wgmma_fence(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::WgmmaFence, {}, loc_); }
/// wgmma.commit_group and wgmma.wait_group n.
inline void wgmma_commit_group(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::WgmmaCommitGroup, {}, loc_); }
inline void wgmma_wait_group(int n, HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::WgmmaWaitGroup, {detail::imm(n)}, loc_); }

/// wgmma.mma_async m64n{n}k16 with f32 accumulators: D = A * B + (scale_d ? D : 0) for the
/// warpgroup (128 threads). `d` is this thread's f32[n / 2] fragment; A and B come from shared
/// memory descriptors (make_wgmma_desc); `ab` is f16 or bf16; trans_a/trans_b select MN-major.
/// With `ab` f8e4m3 or f8e5m2 it is m64n{n}k32 (32 bytes of k per row, as for f16): both
/// operands must be K-major (the hardware has no transposed mode for 8-bit inputs).
void wgmma(const PtrArg &d, const Operand &desc_a, const Operand &desc_b, int n, DataType ab,
           const Operand &scale_d = Operand(1), bool trans_a = false, bool trans_b = false);

/// wgmma.mma_async m64n{n}k16 with A from registers: D = A * B + (scale_d ? D : 0), where `a` is
/// this thread's u32[4] fragment of A's 64 x 16 tile (packed f16/bf16 pairs, laid out like
/// mma.sync's m16n8k16 A fragment per warp: lane (g, q) of warp w holds rows 16 w + g and + 8,
/// columns 2 q, + 1 and 8 + 2 q, + 1). That is the layout of an f32 accumulator of the
/// warpgroup's m64 wgmma: pairs 2 i, 2 i + 1 of 16 accumulator columns, packed, give a[i], so a
/// product's result can feed the next one without shared memory. B as in wgmma; trans_b: MN-major.
void wgmma_rs(const PtrArg &d, const PtrArg &a, const Operand &desc_b, int n, DataType ab,
              const Operand &scale_d = Operand(1), bool trans_b = false);

// ---- registers and clusters -----------------------------------------------------------------------

/// setmaxnreg.inc / .dec: the warpgroup's per-thread register budget becomes `count` (24..256,
/// a multiple of 8). Producer warpgroups decrease, consumer warpgroups increase.
void setmaxnreg(int count, bool increase, HIDET_LOC_PARAM);
/// This block's rank in its cluster (%cluster_ctarank) and the cluster's block count.
Expr cluster_ctarank(HIDET_LOC_PARAM);
Expr cluster_nctarank(HIDET_LOC_PARAM);
/// barrier.cluster.arrive + wait: all threads of all blocks of the cluster.
inline void cluster_sync(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::ClusterSync, {}, loc_); }

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/primitives/impl/hopper.ipp"
#endif
