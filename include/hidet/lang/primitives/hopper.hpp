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
inline void require_mbarrier(const PtrArg &bar, const char *fn) {
  if (bar.dtype != dtypes::u64 && bar.dtype != dtypes::i64)
    throw DSLError(str_cat(fn, ": the mbarrier is ", bar.describe(), " of ", bar.dtype,
                           "; declare it as shared_tensor(u64[1])"),
                   bar.loc);
  require_scope(bar, ir::Scope::Shared, fn, "mbarrier");
}
inline ir::Expr u32_arg(const Operand &x, const char *fn) {
  require_scalar(x, fn);
  return convert(x.node, dtypes::u32, x.loc);
}
} // namespace detail

// ---- mbarrier ----------------------------------------------------------------------------------

/// mbarrier.init: the barrier expects `count` arrivals per phase.
inline void mbarrier_init(const PtrArg &bar, const Operand &count) {
  detail::require_mbarrier(bar, "mbarrier_init");
  detail::emit_intrinsic(ir::Intrinsic::MbarrierInit, {bar.ptr, detail::u32_arg(count, "mbarrier_init")}, bar.loc);
}
/// mbarrier.arrive: one arrival of this thread.
inline void mbarrier_arrive(const PtrArg &bar) {
  detail::require_mbarrier(bar, "mbarrier_arrive");
  detail::emit_intrinsic(ir::Intrinsic::MbarrierArrive, {bar.ptr}, bar.loc);
}
/// mbarrier.arrive.expect_tx: one arrival, and the phase also waits for `bytes` of TMA traffic.
inline void mbarrier_arrive_expect_tx(const PtrArg &bar, const Operand &bytes) {
  detail::require_mbarrier(bar, "mbarrier_arrive_expect_tx");
  detail::emit_intrinsic(ir::Intrinsic::MbarrierArriveExpectTx,
                         {bar.ptr, detail::u32_arg(bytes, "mbarrier_arrive_expect_tx")}, bar.loc);
}
/// cp.async.mbarrier.arrive.noinc: one arrival on `bar` once every cp.async this thread issued
/// before it has completed (the copies then complete the phase like TMA bytes do). .noinc: the
/// arrival counts against the barrier's init count, so count these threads in mbarrier_init.
inline void cp_async_mbarrier_arrive(const PtrArg &bar) {
  detail::require_mbarrier(bar, "cp_async_mbarrier_arrive");
  detail::emit_intrinsic(ir::Intrinsic::CpAsyncMbarrierArrive, {bar.ptr}, bar.loc);
}
/// mbarrier.try_wait.parity: true when the phase of parity `phase` (0 or 1) has completed.
inline Expr mbarrier_try_wait(const PtrArg &bar, const Operand &phase) {
  detail::require_mbarrier(bar, "mbarrier_try_wait");
  return detail::call(ir::Intrinsic::MbarrierTryWait, {bar.ptr, detail::u32_arg(phase, "mbarrier_try_wait")},
                      dtypes::boolean, bar.loc);
}
/// Spins until the phase of parity `phase` has completed.
inline void mbarrier_wait(const PtrArg &bar, const Operand &phase) {
  while_(!mbarrier_try_wait(bar, phase), [] {});
}
/// fence.proxy.async.shared::cta: makes generic-proxy writes to shared memory visible to TMA/wgmma.
inline void fence_proxy_async(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::FenceProxyAsync, {}, loc_); }
/// fence.mbarrier_init.release.cluster: publishes mbarrier_init to the async proxy and the cluster.
inline void fence_mbarrier_init(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::FenceMbarrierInit, {}, loc_); }

// ---- TMA ---------------------------------------------------------------------------------------

namespace detail {
inline std::vector<ir::Expr> tma_coords(std::initializer_list<Operand> coords, const char *fn, SourceLoc loc) {
  if (coords.size() < 1 || coords.size() > 5)
    throw DSLError(str_cat(fn, ": ", coords.size(), " coordinates; a tensor map has 1 to 5 dimensions"), loc);
  std::vector<ir::Expr> r;
  for (auto &c : coords) {
    require_scalar(c, fn);
    r.push_back(convert(c.node, dtypes::i32, c.loc));
  }
  return r;
}
} // namespace detail

/// cp.async.bulk.tensor (global -> shared): loads the box at `coords` (innermost dimension
/// first) of the tensor map `tmap` (a 128-byte CUtensorMap in global memory, TensorMap::
/// to_device()) into shared `dst`; completion is signalled on `bar` as transaction bytes.
inline void tma_load(const PtrArg &dst, const PtrArg &tmap, const PtrArg &bar, std::initializer_list<Operand> coords) {
  detail::require_scope(dst, ir::Scope::Shared, "tma_load", "destination");
  detail::require_mbarrier(bar, "tma_load");
  std::vector<ir::Expr> args{dst.ptr, tmap.ptr, bar.ptr};
  for (auto &c : detail::tma_coords(coords, "tma_load", dst.loc)) args.push_back(c);
  detail::emit_intrinsic(ir::Intrinsic::TmaLoad, std::move(args), dst.loc);
}
/// cp.async.bulk.tensor (shared -> global): stores shared `src` to the box at `coords`; complete
/// with tma_commit_group() and tma_wait_group(0).
inline void tma_store(const PtrArg &tmap, const PtrArg &src, std::initializer_list<Operand> coords) {
  detail::require_scope(src, ir::Scope::Shared, "tma_store", "source");
  std::vector<ir::Expr> args{tmap.ptr, src.ptr};
  for (auto &c : detail::tma_coords(coords, "tma_store", src.loc)) args.push_back(c);
  detail::emit_intrinsic(ir::Intrinsic::TmaStore, std::move(args), src.loc);
}
/// cp.async.bulk.commit_group / wait_group n (bulk stores of this thread).
inline void tma_commit_group(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::TmaCommitGroup, {}, loc_); }
inline void tma_wait_group(int n, HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::TmaWaitGroup, {detail::imm(n)}, loc_); }

// ---- wgmma -------------------------------------------------------------------------------------

/// The 32-bit shared-window address of a shared-memory pointer (cvta.to.shared).
inline Expr smem_address(const PtrArg &p) {
  detail::require_scope(p, ir::Scope::Shared, "smem_address", "pointer");
  return detail::call(ir::Intrinsic::SmemAddress, {p.ptr}, dtypes::u32, p.loc);
}
/// Shared-memory swizzle modes of wgmma descriptors (and tensor maps).
enum class Swizzle : std::uint8_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };
/// A wgmma shared-memory matrix descriptor: start address, leading- and stride-dimension byte
/// offsets (multiples of 16) and the swizzle mode of the tile at `p`.
inline Expr make_wgmma_desc(const PtrArg &p, int leading_bytes, int stride_bytes, Swizzle swizzle) {
  Expr a = Expr(Operand::of(ir::CastNode::make(smem_address(p).ir(), ir::scalar_type(dtypes::u64), p.loc), p.loc));
  std::uint64_t hi = (std::uint64_t(leading_bytes >> 4) & 0x3fff) << 16 |
                     (std::uint64_t(stride_bytes >> 4) & 0x3fff) << 32 | std::uint64_t(swizzle) << 62;
  return ((a & Operand(0x3ffffu)) >> Operand(4u)) | Operand(static_cast<unsigned long long>(hi));
}
/// wgmma.fence: orders register accesses of the accumulators before the next wgmma.
inline void wgmma_fence(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::WgmmaFence, {}, loc_); }
/// wgmma.commit_group and wgmma.wait_group n.
inline void wgmma_commit_group(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::WgmmaCommitGroup, {}, loc_); }
inline void wgmma_wait_group(int n, HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::WgmmaWaitGroup, {detail::imm(n)}, loc_); }

/// wgmma.mma_async m64n{n}k16 with f32 accumulators: D = A * B + (scale_d ? D : 0) for the
/// warpgroup (128 threads). `d` is this thread's f32[n / 2] fragment; A and B come from shared
/// memory descriptors (make_wgmma_desc); `ab` is f16 or bf16; trans_a/trans_b select MN-major.
inline void wgmma(const PtrArg &d, const Operand &desc_a, const Operand &desc_b, int n, DataType ab,
                  const Operand &scale_d = Operand(1), bool trans_a = false, bool trans_b = false) {
  const char *fn = "wgmma";
  if (n < 8 || n > 256 || n % 8 != 0)
    throw DSLError(str_cat("wgmma m64n", n, "k16: n must be a multiple of 8 in [8, 256]"), d.loc);
  if (!ab.is_half()) throw DSLError(str_cat("wgmma: inputs are ", ab, "; use f16 or bf16"), d.loc);
  if (d.dtype != dtypes::f32)
    throw DSLError(str_cat("wgmma: the accumulator ", d.describe(), " is ", d.dtype, "; use f32"), d.loc);
  detail::require_scope(d, ir::Scope::Register, fn, "accumulator");
  if (d.avail >= 0 && d.avail < n / 2)
    throw DSLError(str_cat("wgmma m64n", n, "k16: the accumulator ", d.describe(), " has ", d.avail,
                           " f32 elements from this point; the fragment needs ", n / 2,
                           " per thread: declare register_tensor(f32[", n / 2, "])"),
                   d.loc);
  detail::require_scalar(desc_a, fn), detail::require_scalar(desc_b, fn);
  detail::emit_intrinsic(ir::Intrinsic::Wgmma,
                         {d.ptr, detail::convert(desc_a.node, dtypes::u64, desc_a.loc),
                          detail::convert(desc_b.node, dtypes::u64, desc_b.loc),
                          detail::convert(Operand(scale_d).node, dtypes::i32, d.loc), detail::imm(n),
                          detail::imm(int(ab.code)), detail::imm(trans_a), detail::imm(trans_b)},
                         d.loc);
}

// ---- registers and clusters -----------------------------------------------------------------------

/// setmaxnreg.inc / .dec: the warpgroup's per-thread register budget becomes `count` (24..256,
/// a multiple of 8). Producer warpgroups decrease, consumer warpgroups increase.
inline void setmaxnreg(int count, bool increase, HIDET_LOC_PARAM) {
  if (count < 24 || count > 256 || count % 8 != 0)
    throw DSLError(str_cat("setmaxnreg(", count, "): the count must be a multiple of 8 in [24, 256]"), loc_);
  detail::emit_intrinsic(ir::Intrinsic::SetMaxNReg, {detail::imm(count), detail::imm(increase)}, loc_);
}
/// This block's rank in its cluster (%cluster_ctarank) and the cluster's block count.
inline Expr cluster_ctarank(HIDET_LOC_PARAM) {
  require_kernel("cluster_ctarank", loc_);
  return detail::call(ir::Intrinsic::ClusterCtaRank, {}, dtypes::u32, loc_);
}
inline Expr cluster_nctarank(HIDET_LOC_PARAM) {
  require_kernel("cluster_nctarank", loc_);
  return detail::call(ir::Intrinsic::ClusterNumCtas, {}, dtypes::u32, loc_);
}
/// barrier.cluster.arrive + wait: all threads of all blocks of the cluster.
inline void cluster_sync(HIDET_LOC_PARAM) { detail::emit_intrinsic(ir::Intrinsic::ClusterSync, {}, loc_); }

} // namespace hidet::lang
