// Definitions for hidet/lang/primitives/hopper.hpp.
#pragma once
#include "hidet/lang/primitives/hopper.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

namespace detail {
HIDET_INLINE void require_mbarrier(const PtrArg &bar, const char *fn) {
  if (bar.dtype != dtypes::u64 && bar.dtype != dtypes::i64)
    throw DSLError(str_cat(fn, ": the mbarrier is ", bar.describe(), " of ", bar.dtype,
                           "; declare it as shared_tensor(u64[1])"),
                   bar.loc);
  require_scope(bar, ir::Scope::Shared, fn, "mbarrier");
}
HIDET_INLINE ir::Expr u32_arg(const Operand &x, const char *fn) {
  require_scalar(x, fn);
  return convert(x.node, dtypes::u32, x.loc);
}
} // namespace detail

HIDET_INLINE void mbarrier_init(const PtrArg &bar, const Operand &count) {
  detail::require_mbarrier(bar, "mbarrier_init");
  detail::emit_intrinsic(ir::Intrinsic::MbarrierInit, {bar.ptr, detail::u32_arg(count, "mbarrier_init")}, bar.loc);
}

HIDET_INLINE void mbarrier_arrive(const PtrArg &bar) {
  detail::require_mbarrier(bar, "mbarrier_arrive");
  detail::emit_intrinsic(ir::Intrinsic::MbarrierArrive, {bar.ptr}, bar.loc);
}

HIDET_INLINE void mbarrier_arrive_cluster(const PtrArg &bar, const Operand &cta) {
  detail::require_mbarrier(bar, "mbarrier_arrive_cluster");
  detail::emit_intrinsic(ir::Intrinsic::MbarrierArriveCluster,
                         {bar.ptr, detail::u32_arg(cta, "mbarrier_arrive_cluster")}, bar.loc);
}

HIDET_INLINE void mbarrier_arrive_expect_tx(const PtrArg &bar, const Operand &bytes) {
  detail::require_mbarrier(bar, "mbarrier_arrive_expect_tx");
  detail::emit_intrinsic(ir::Intrinsic::MbarrierArriveExpectTx,
                         {bar.ptr, detail::u32_arg(bytes, "mbarrier_arrive_expect_tx")}, bar.loc);
}

HIDET_INLINE void cp_async_mbarrier_arrive(const PtrArg &bar) {
  detail::require_mbarrier(bar, "cp_async_mbarrier_arrive");
  detail::emit_intrinsic(ir::Intrinsic::CpAsyncMbarrierArrive, {bar.ptr}, bar.loc);
}

HIDET_INLINE Expr mbarrier_try_wait(const PtrArg &bar, const Operand &phase) {
  detail::require_mbarrier(bar, "mbarrier_try_wait");
  return detail::call(ir::Intrinsic::MbarrierTryWait, {bar.ptr, detail::u32_arg(phase, "mbarrier_try_wait")},
                      dtypes::boolean, bar.loc);
}

HIDET_INLINE void mbarrier_wait(const PtrArg &bar, const Operand &phase) {
  while_(!mbarrier_try_wait(bar, phase), [] {});
}

namespace detail {
HIDET_INLINE std::vector<ir::Expr> tma_coords(std::initializer_list<Operand> coords, const char *fn,
                                              SourceLoc loc) {
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

HIDET_INLINE void tma_load(const PtrArg &dst, const PtrArg &tmap, const PtrArg &bar,
                           std::initializer_list<Operand> coords) {
  detail::require_scope(dst, ir::Scope::Shared, "tma_load", "destination");
  detail::require_mbarrier(bar, "tma_load");
  std::vector<ir::Expr> args{dst.ptr, tmap.ptr, bar.ptr};
  for (auto &c : detail::tma_coords(coords, "tma_load", dst.loc)) args.push_back(c);
  detail::emit_intrinsic(ir::Intrinsic::TmaLoad, std::move(args), dst.loc);
}

HIDET_INLINE void tma_load_multicast(const PtrArg &dst, const PtrArg &tmap, const PtrArg &bar,
                                     std::initializer_list<Operand> coords, const Operand &cta_mask) {
  detail::require_scope(dst, ir::Scope::Shared, "tma_load_multicast", "destination");
  detail::require_mbarrier(bar, "tma_load_multicast");
  std::vector<ir::Expr> args{dst.ptr, tmap.ptr, bar.ptr, detail::u32_arg(cta_mask, "tma_load_multicast")};
  for (auto &c : detail::tma_coords(coords, "tma_load_multicast", dst.loc)) args.push_back(c);
  detail::emit_intrinsic(ir::Intrinsic::TmaLoadMulticast, std::move(args), dst.loc);
}

HIDET_INLINE void tma_store(const PtrArg &tmap, const PtrArg &src,
                            std::initializer_list<Operand> coords) {
  detail::require_scope(src, ir::Scope::Shared, "tma_store", "source");
  std::vector<ir::Expr> args{tmap.ptr, src.ptr};
  for (auto &c : detail::tma_coords(coords, "tma_store", src.loc)) args.push_back(c);
  detail::emit_intrinsic(ir::Intrinsic::TmaStore, std::move(args), src.loc);
}

HIDET_INLINE Expr smem_address(const PtrArg &p) {
  detail::require_scope(p, ir::Scope::Shared, "smem_address", "pointer");
  return detail::call(ir::Intrinsic::SmemAddress, {p.ptr}, dtypes::u32, p.loc);
}

HIDET_INLINE Expr make_wgmma_desc(const PtrArg &p, int leading_bytes, int stride_bytes,
                                  Swizzle swizzle) {
  Expr a = Expr(Operand::of(ir::CastNode::make(smem_address(p).ir(), ir::scalar_type(dtypes::u64), p.loc), p.loc));
  std::uint64_t hi = (std::uint64_t(leading_bytes >> 4) & 0x3fff) << 16 |
                     (std::uint64_t(stride_bytes >> 4) & 0x3fff) << 32 | std::uint64_t(swizzle) << 62;
  return ((a & Operand(0x3ffffu)) >> Operand(4u)) | Operand(static_cast<unsigned long long>(hi));
}

HIDET_INLINE void wgmma(const PtrArg &d, const Operand &desc_a, const Operand &desc_b, int n,
                        DataType ab, const Operand &scale_d, bool trans_a, bool trans_b) {
  const char *fn = "wgmma";
  if (n < 8 || n > 256 || n % 8 != 0)
    throw DSLError(str_cat("wgmma m64n", n, "k16: n must be a multiple of 8 in [8, 256]"), d.loc);
  if (!ab.is_half() && !ab.is_fp8())
    throw DSLError(str_cat("wgmma: inputs are ", ab, "; use f16, bf16, f8e4m3 or f8e5m2"), d.loc);
  if (ab.is_fp8() && (trans_a || trans_b))
    throw DSLError(str_cat("wgmma m64n", n, "k32 (", ab, "): 8-bit inputs must both be K-major; lay B out as [n][k]"),
                   d.loc);
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

HIDET_INLINE void wgmma_rs(const PtrArg &d, const PtrArg &a, const Operand &desc_b, int n, DataType ab,
                           const Operand &scale_d, bool trans_b) {
  const char *fn = "wgmma_rs";
  if (n < 8 || n > 256 || n % 8 != 0)
    throw DSLError(str_cat("wgmma_rs m64n", n, "k16: n must be a multiple of 8 in [8, 256]"), d.loc);
  if (!ab.is_half()) throw DSLError(str_cat("wgmma_rs: inputs are ", ab, "; use f16 or bf16"), d.loc);
  if (d.dtype != dtypes::f32)
    throw DSLError(str_cat("wgmma_rs: the accumulator ", d.describe(), " is ", d.dtype, "; use f32"), d.loc);
  detail::require_scope(d, ir::Scope::Register, fn, "accumulator");
  detail::require_scope(a, ir::Scope::Register, fn, "A fragment");
  if (d.avail >= 0 && d.avail < n / 2)
    throw DSLError(str_cat("wgmma_rs m64n", n, "k16: the accumulator ", d.describe(), " has ", d.avail,
                           " f32 elements from this point; the fragment needs ", n / 2,
                           " per thread: declare register_tensor(f32[", n / 2, "])"),
                   d.loc);
  if (a.dtype.nbytes() != 4 || (a.avail >= 0 && a.avail < 4))
    throw DSLError(str_cat("wgmma_rs: the A fragment ", a.describe(), " must be 4 32-bit words (u32[4]) from this point"),
                   a.loc);
  detail::require_scalar(desc_b, fn);
  detail::emit_intrinsic(ir::Intrinsic::WgmmaRs,
                         {d.ptr, a.ptr, detail::convert(desc_b.node, dtypes::u64, desc_b.loc),
                          detail::convert(Operand(scale_d).node, dtypes::i32, d.loc), detail::imm(n),
                          detail::imm(int(ab.code)), detail::imm(trans_b)},
                         d.loc);
}

HIDET_INLINE void setmaxnreg(int count, bool increase, std::source_location loc_) {
  if (count < 24 || count > 256 || count % 8 != 0)
    throw DSLError(str_cat("setmaxnreg(", count, "): the count must be a multiple of 8 in [24, 256]"), loc_);
  detail::emit_intrinsic(ir::Intrinsic::SetMaxNReg, {detail::imm(count), detail::imm(increase)}, loc_);
}

HIDET_INLINE Expr cluster_ctarank(std::source_location loc_) {
  require_kernel("cluster_ctarank", loc_);
  return detail::call(ir::Intrinsic::ClusterCtaRank, {}, dtypes::u32, loc_);
}

HIDET_INLINE Expr cluster_nctarank(std::source_location loc_) {
  require_kernel("cluster_nctarank", loc_);
  return detail::call(ir::Intrinsic::ClusterNumCtas, {}, dtypes::u32, loc_);
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
