// Definitions for hidet/backend/codegen_primitives.hpp.
#pragma once

#include "hidet/backend/codegen_primitives.hpp"

#include <cstdint>
#include <string>

#include "hidet/backend/codegen.hpp"
#include "hidet/backend/detail/cuda_emitter.hpp"
#include "hidet/backend/nvrtc.hpp"
#include "hidet/ir/functor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend {

namespace primitive_detail {
/// The smallest SM version (80 for sm_80, ...) a primitive needs; `arch_specific` when it needs
/// the architecture-specific target (sm_90a).
struct ArchNeed {
  int sm = 0;
  bool arch_specific = false;
};
HIDET_INLINE ArchNeed arch_need(ir::Intrinsic op) {
  using I = ir::Intrinsic;
  switch (op) {
  case I::CopyVector: case I::PrefetchL2: return {0, false};
  case I::Ldmatrix: return {75, false};
  case I::Stmatrix: return {90, false};
  case I::Wgmma: case I::WgmmaRs: case I::WgmmaFence: case I::WgmmaCommitGroup: case I::WgmmaWaitGroup:
  case I::SetMaxNReg: return {90, true};
  default: return {ir::is_hopper_intrinsic(op) ? 90 : 80, false};
  }
}

HIDET_INLINE const char *kHelpers = R"(static __device__ __forceinline__ uint32_t hidet_smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ uint32_t hidet_half2_pack(float lo, float hi, int bf) {
  uint32_t r;
  if (bf) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
static __device__ __forceinline__ float hidet_half2_unpack(uint32_t p, int hi, int bf) {
  unsigned short h = (unsigned short)(hi ? p >> 16 : p & 0xffffu);
  if (bf) return __uint_as_float(((uint32_t)h) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ uint32_t hidet_half2_fma(uint32_t a, uint32_t b, uint32_t c, int bf) {
  uint32_t r;
  if (bf) asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  else asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
static __device__ __forceinline__ uint32_t hidet_half2_add(uint32_t a, uint32_t b, int bf) {
  return hidet_half2_fma(a, bf ? 0x3f803f80u : 0x3c003c00u, b, bf);
}
static __device__ __forceinline__ uint32_t hidet_half2_sub(uint32_t a, uint32_t b, int bf) {
  return hidet_half2_fma(b, bf ? 0xbf80bf80u : 0xbc00bc00u, a, bf);
}
static __device__ __forceinline__ uint32_t hidet_half2_mul(uint32_t a, uint32_t b, int bf) {
  return hidet_half2_fma(a, b, 0x80008000u, bf);
}
)";

HIDET_INLINE const char *kHopperHelpers = R"(static __device__ __forceinline__ bool hidet_mbarrier_try_wait(void *bar, uint32_t phase) {
  uint32_t ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
               : "=r"(ok) : "r"(hidet_smem_addr(bar)), "r"(phase) : "memory");
  return ok != 0;
}
static __device__ __forceinline__ uint32_t hidet_cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
static __device__ __forceinline__ uint32_t hidet_cluster_nctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
)";

/// `{%first, ..., %first+n-1}`
HIDET_INLINE std::string reg_list(int first, int n) {
  std::string r = "{";
  for (int i = 0; i < n; ++i) r += str_cat(i ? ", " : "", "%", first + i);
  return r + "}";
}
} // namespace primitive_detail

HIDET_INLINE void check_primitive_arch(const ir::Module &m, const std::string &arch) {
  int sm = parse_sm_arch(arch);
  bool specific = !arch.empty() && (arch.back() == 'a');
  if (sm < 0) return; // an arch name NVRTC will judge
  for (auto &f : m->functions) {
    struct V : ir::IRVisitor {
      int sm;
      bool specific;
      const std::string *arch;
      const ir::FunctionNode *fn;
      void visit_Call(const ir::CallNode *c) override {
        ir::IRVisitor::visit_Call(c);
        if (!ir::is_primitive_intrinsic(c->op)) return;
        auto need = primitive_detail::arch_need(c->op);
        bool ok = sm >= need.sm && (!need.arch_specific || (sm == need.sm && specific));
        if (ok) return;
        std::string want = need.arch_specific ? str_cat("sm_", need.sm, "a") : str_cat("sm_", need.sm, " or newer");
        throw DSLError(str_cat(ir::intrinsic_name(c->op), " in ", ir::func_kind_name(fn->func_kind), " '",
                               fn->name, "' needs ", want, ", but the module is built for ", *arch,
                               " (SM ", sm, "); build for ", need.arch_specific ? want : str_cat("sm_", need.sm),
                               " (BuildOptions::arch) on a GPU that has it, or avoid the instruction"),
                       c->loc.valid() ? c->loc : fn->loc);
      }
    } v;
    v.sm = sm, v.specific = specific, v.arch = &arch, v.fn = f.get();
    if (f->attrs.cluster_size() > 1 && sm < 90)
      throw DSLError(str_cat("kernel '", f->name, "' has cluster_dim (", f->attrs.cluster_dim[0], ", ",
                             f->attrs.cluster_dim[1], ", ", f->attrs.cluster_dim[2],
                             "); thread-block clusters need sm_90 or newer, but the module is built for ", arch),
                     f->loc);
    if (f->body) v.visit(f->body);
  }
}

namespace detail {

HIDET_INLINE std::string CudaEmitter::primitive_call(const ir::CallNode *c) {
  using I = ir::Intrinsic;
  using primitive_detail::reg_list;
  auto helpers = [&](const char *text) {
    if (features_.extra.find(text) == std::string::npos) features_.extra += text;
  };
  helpers(primitive_detail::kHelpers);
  features_.f16 = true; // the helpers use cvt on halves only, but keep the headers consistent
  auto a = [&](std::size_t i) { return expr(c->args.at(i)); };
  auto imm = [&](std::size_t i) {
    std::int64_t v = 0;
    if (i >= c->args.size() || !ir::as_const_int(c->args[i], v))
      unsupported(str_cat(ir::intrinsic_name(c->op), " with a non-constant operand ", i), c->loc);
    return v;
  };
  auto smem = [&](std::size_t i) { return "hidet_smem_addr(" + a(i) + ")"; };
  auto words = [&](std::size_t i, const char *t) { return str_cat("((", t, " *)(", a(i), "))"); };
  auto is_bf = [&](std::size_t i) { return imm(i) == int(DTypeCode::BF16) ? "1" : "0"; };
  if (ir::is_hopper_intrinsic(c->op)) helpers(primitive_detail::kHopperHelpers);
  switch (c->op) {
  case I::CopyVector: {
    std::int64_t n = imm(2);
    const char *t = n == 16 ? "uint4" : n == 8 ? "uint2" : "uint32_t";
    return str_cat("(*(", t, " *)(", a(0), ") = *(const ", t, " *)(", a(1), "))");
  }
  case I::PrefetchL2: return str_cat("asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(", a(0), "))");
  case I::CpAsync: {
    std::int64_t n = imm(2);
    return str_cat("asm volatile(\"cp.async.", n == 16 ? "cg" : "ca", ".shared.global [%0], [%1], ", n,
                   ", %2;\" :: \"r\"(", smem(0), "), \"l\"(", a(1), "), \"r\"((uint32_t)(", a(3), ")) : \"memory\")");
  }
  case I::CpAsyncCommitGroup: return "asm volatile(\"cp.async.commit_group;\" ::: \"memory\")";
  case I::CpAsyncWaitGroup: return str_cat("asm volatile(\"cp.async.wait_group ", imm(0), ";\" ::: \"memory\")");
  case I::Ldmatrix: {
    int n = int(imm(2));
    std::string outs;
    for (int i = 0; i < n; ++i) outs += str_cat(i ? ", " : "", "\"=r\"(", words(0, "uint32_t"), "[", i, "])");
    return str_cat("asm volatile(\"ldmatrix.sync.aligned.m8n8.x", n, imm(3) ? ".trans" : "", ".shared.b16 ",
                   reg_list(0, n), ", [%", n, "];\" : ", outs, " : \"r\"(", smem(1), ") : \"memory\")");
  }
  case I::Stmatrix: {
    int n = int(imm(2));
    std::string ins;
    for (int i = 0; i < n; ++i) ins += str_cat(", \"r\"(", words(1, "const uint32_t"), "[", i, "])");
    return str_cat("asm volatile(\"stmatrix.sync.aligned.m8n8.x", n, imm(3) ? ".trans" : "", ".shared.b16 [%0], ",
                   reg_list(1, n), ";\" :: \"r\"(", smem(0), ")", ins, " : \"memory\")");
  }
  case I::MmaSync: {
    auto pointee = [&](std::size_t i) {
      return ir::dtype_of(c->args.at(i)->type.as<ir::PointerTypeNode>()->base);
    };
    DataType cd = pointee(0), ab = pointee(1);
    int k = int(imm(6));
    auto nm = [](DataType d) { return d == dtypes::f32 ? "f32" : d == dtypes::f16 ? "f16" : d == dtypes::bf16 ? "bf16" : d == dtypes::i32 ? "s32" : d == dtypes::i8 ? "s8" : "u8"; };
    const char *in = k == 8 ? "tf32" : nm(ab);
    int na = k == 8 ? 4 : 4, nb = 2, nc = cd == dtypes::f16 ? 2 : 4;
    const char *cc = cd == dtypes::f32 ? "f" : "r";
    const char *ct = cd == dtypes::f32 ? "float" : cd == dtypes::i32 ? "int" : "uint32_t";
    std::string outs, ins;
    for (int i = 0; i < nc; ++i) outs += str_cat(i ? ", " : "", "\"=", cc, "\"(", words(0, ct), "[", i, "])");
    for (int i = 0; i < na; ++i) ins += str_cat(i ? ", " : "", "\"r\"(", words(1, "uint32_t"), "[", i, "])");
    for (int i = 0; i < nb; ++i) ins += str_cat(", \"r\"(", words(2, "uint32_t"), "[", i, "])");
    for (int i = 0; i < nc; ++i) ins += str_cat(", \"", cc, "\"(", words(3, ct), "[", i, "])");
    std::string op = str_cat("mma.sync.aligned.m16n8k", k, ".row.col", k == 32 ? ".satfinite" : "", ".", nm(cd), ".",
                             in, ".", in, ".", nm(cd));
    return str_cat("asm volatile(\"", op, " ", reg_list(0, nc), ", ", reg_list(nc, na), ", ", reg_list(nc + na, nb),
                   ", ", reg_list(nc + na + nb, nc), ";\" : ", outs, " : ", ins, ")");
  }
  case I::Half2Pack: return str_cat("hidet_half2_pack(", a(0), ", ", a(1), ", ", is_bf(2), ")");
  case I::Half2Unpack: return str_cat("hidet_half2_unpack(", a(0), ", ", imm(1), ", ", is_bf(2), ")");
  case I::Half2Add: return str_cat("hidet_half2_add(", a(0), ", ", a(1), ", ", is_bf(2), ")");
  case I::Half2Sub: return str_cat("hidet_half2_sub(", a(0), ", ", a(1), ", ", is_bf(2), ")");
  case I::Half2Mul: return str_cat("hidet_half2_mul(", a(0), ", ", a(1), ", ", is_bf(2), ")");
  case I::Half2Fma: return str_cat("hidet_half2_fma(", a(0), ", ", a(1), ", ", a(2), ", ", is_bf(3), ")");
  case I::MbarrierInit:
    return str_cat("asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(", smem(0), "), \"r\"(", a(1),
                   ") : \"memory\")");
  case I::MbarrierArrive:
    return str_cat("asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"(", smem(0), ") : \"memory\")");
  case I::MbarrierArriveExpectTx:
    return str_cat("asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(", smem(0),
                   "), \"r\"(", a(1), ") : \"memory\")");
  case I::MbarrierArriveCluster:
    return str_cat("asm volatile(\"{\\n.reg .b32 remote;\\nmapa.shared::cluster.u32 remote, %0, %1;\\n"
                   "mbarrier.arrive.shared::cluster.b64 _, [remote];\\n}\" :: \"r\"(",
                   smem(0), "), \"r\"(", a(1), ") : \"memory\")");
  case I::CpAsyncMbarrierArrive:
    return str_cat("asm volatile(\"cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\" :: \"r\"(", smem(0),
                   ") : \"memory\")");
  case I::MbarrierTryWait: return str_cat("hidet_mbarrier_try_wait(", a(0), ", ", a(1), ")");
  case I::FenceProxyAsync: return "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\")";
  case I::FenceMbarrierInit: return "asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\")";
  case I::TmaLoad: {
    int nd = int(c->args.size()) - 3;
    std::string coords;
    for (int i = 0; i < nd; ++i) coords += str_cat(", \"r\"(", a(3 + std::size_t(i)), ")");
    return str_cat("asm volatile(\"cp.async.bulk.tensor.", nd, "d.shared::cluster.global.mbarrier::complete_tx::bytes",
                   " [%0], [%1, ", reg_list(3, nd), "], [%2];\" :: \"r\"(", smem(0), "), \"l\"(", a(1), "), \"r\"(",
                   smem(2), ")", coords, " : \"memory\")");
  }
  case I::TmaLoadMulticast: {
    int nd = int(c->args.size()) - 4;
    std::string coords;
    for (int i = 0; i < nd; ++i) coords += str_cat(", \"r\"(", a(4 + std::size_t(i)), ")");
    return str_cat("asm volatile(\"cp.async.bulk.tensor.", nd,
                   "d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
                   " [%0], [%1, ", reg_list(4, nd), "], [%2], %3;\" :: \"r\"(", smem(0), "), \"l\"(", a(1), "), \"r\"(",
                   smem(2), "), \"h\"((unsigned short)(", a(3), "))", coords, " : \"memory\")");
  }
  case I::TmaStore: {
    int nd = int(c->args.size()) - 2;
    std::string coords;
    for (int i = 0; i < nd; ++i) coords += str_cat(", \"r\"(", a(2 + std::size_t(i)), ")");
    return str_cat("asm volatile(\"cp.async.bulk.tensor.", nd, "d.global.shared::cta.bulk_group [%0, ",
                   reg_list(2, nd), "], [%1];\" :: \"l\"(", a(0), "), \"r\"(", smem(1), ")", coords, " : \"memory\")");
  }
  case I::TmaCommitGroup: return "asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\")";
  case I::TmaWaitGroup: return str_cat("asm volatile(\"cp.async.bulk.wait_group ", imm(0), ";\" ::: \"memory\")");
  case I::WgmmaFence: return "asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\")";
  case I::WgmmaCommitGroup: return "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\")";
  case I::WgmmaWaitGroup: return str_cat("asm volatile(\"wgmma.wait_group.sync.aligned ", imm(0), ";\" ::: \"memory\")");
  case I::Wgmma: {
    int n = int(imm(4)), nd = n / 2;
    const auto code = DTypeCode(imm(5));
    const bool fp8 = code == DTypeCode::F8E4M3 || code == DTypeCode::F8E5M2;
    const char *in = code == DTypeCode::BF16 ? "bf16" : code == DTypeCode::F8E4M3 ? "e4m3" : code == DTypeCode::F8E5M2 ? "e5m2" : "f16";
    std::string outs;
    for (int i = 0; i < nd; ++i) outs += str_cat(i ? ", " : "", "\"+f\"(", words(0, "float"), "[", i, "])");
    // 8-bit inputs: k32 and no transpose immediates (both operands K-major)
    std::string trans = fp8 ? std::string() : str_cat(", ", imm(6), ", ", imm(7));
    return str_cat("asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %", nd + 2, ", 0;\\nwgmma.mma_async.sync.aligned.m64n",
                   n, fp8 ? "k32" : "k16", ".f32.", in, ".", in, " ", reg_list(0, nd), ", %", nd, ", %", nd + 1, ", p, 1, 1",
                   trans, ";\\n}\" : ", outs, " : \"l\"(", a(1), "), \"l\"(", a(2), "), \"r\"((int)(", a(3),
                   ")) : \"memory\")");
  }
  case I::WgmmaRs: {
    int n = int(imm(4)), nd = n / 2;
    const char *in = imm(5) == int(DTypeCode::BF16) ? "bf16" : "f16";
    std::string outs, ins;
    for (int i = 0; i < nd; ++i) outs += str_cat(i ? ", " : "", "\"+f\"(", words(0, "float"), "[", i, "])");
    for (int i = 0; i < 4; ++i) ins += str_cat(i ? ", " : "", "\"r\"(", words(1, "const uint32_t"), "[", i, "])");
    return str_cat("asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %", nd + 5, ", 0;\\nwgmma.mma_async.sync.aligned.m64n",
                   n, "k16.f32.", in, ".", in, " ", reg_list(0, nd), ", ", reg_list(nd, 4), ", %", nd + 4, ", p, 1, 1, ",
                   imm(6), ";\\n}\" : ", outs, " : ", ins, ", \"l\"(", a(2), "), \"r\"((int)(", a(3), ")) : \"memory\")");
  }
  case I::SmemAddress: return smem(0);
  case I::SetMaxNReg:
    return str_cat("asm volatile(\"setmaxnreg.", imm(1) ? "inc" : "dec", ".sync.aligned.u32 ", imm(0), ";\")");
  case I::ClusterCtaRank: return "hidet_cluster_ctarank()";
  case I::ClusterNumCtas: return "hidet_cluster_nctarank()";
  case I::ClusterSync:
    return "asm volatile(\"barrier.cluster.arrive.aligned;\\nbarrier.cluster.wait.aligned;\" ::: \"memory\")";
  default: unsupported(str_cat("intrinsic ", ir::intrinsic_name(c->op)), c->loc);
  }
}

} // namespace detail

} // namespace hidet::backend

#include "hidet/util/cold_end.hpp"
