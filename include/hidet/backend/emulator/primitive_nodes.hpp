// Emulator nodes of the primitives (lang/primitives/): vector copies, cp.async (run at once, so
// commit and wait groups do nothing), ldmatrix, stmatrix and mma.sync over the 32 lanes of each warp with
// the PTX ISA's fragment layouts, and packed half2 arithmetic. The Hopper primitives (mbarrier,
// TMA, wgmma, setmaxnreg, clusters) compile to a node that fails when reached, naming the
// instruction, the kernel and the line, and saying to run on a GPU.
#pragma once

#include "hidet/backend/emulator/call_nodes.hpp"

namespace hidet::backend::emu {

namespace prim {
/// Fails unless every warp that has an active lane has all 32 lanes active (the .aligned rule).
inline void require_full_warps(Context &c, ActiveSet s, SourceLoc loc, const char *what) {
  int k = 0;
  while (k < s.n) {
    int w = s.idx[k] / 32, n = 0;
    while (k < s.n && s.idx[k] / 32 == w) ++k, ++n;
    if (n != 32 || (w + 1) * 32 > c.T)
      c.fail(loc, w * 32,
             str_cat(what, " was executed by ", n, " of the 32 lanes of warp ", w,
                     "; all 32 lanes of a warp must execute it together (no divergence, and a block "
                     "size that is a multiple of 32)"));
  }
}
/// A checked access of `n` bytes at `addr` by thread t (alignment, bounds, race bookkeeping).
inline void *access(Context &c, SourceLoc loc, int t, std::int64_t addr, std::size_t n, std::size_t align,
                    AllocCache &cache, Access kind, const char *what) {
  if (align > 1 && std::uint64_t(addr) % align != 0)
    c.fail(loc, t, str_cat(what, ": address 0x", std::hex, addr, std::dec, " is not aligned to ", align, " bytes"));
  const Alloc *a = check_pointer(c, loc, t, std::uintptr_t(addr), n, cache, what);
  if (c.racecheck && a->kind == MemKind::Shared) c.shared_access(a, std::uintptr_t(addr), n, t, kind, loc, what);
  return reinterpret_cast<void *>(addr);
}
} // namespace prim

/// copy_vector(dst, src, bytes) and cp_async(dst, src, bytes, src_bytes): `bytes` aligned bytes,
/// the part past src_bytes zero-filled.
struct CopyVectorE : ENode {
  ENode *dst = nullptr, *src = nullptr, *src_bytes = nullptr; ///< src_bytes: cp.async only
  std::size_t bytes = 16;
  const char *what = "copy_vector";
  AllocCache dcache, scache;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(dst, c, s), emu::eval(src, c, s);
    if (src_bytes) emu::eval(src_bytes, c, s);
    const Slot *d = c.reg(dst->dst), *p = c.reg(src->dst), *sb = src_bytes ? c.reg(src_bytes->dst) : nullptr;
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      std::int64_t n = sb ? sb[t].i : std::int64_t(bytes);
      if (n < 0 || n > std::int64_t(bytes))
        c.fail(loc, t, str_cat(what, ": src_bytes = ", n, " is outside [0, ", bytes, "]"));
      std::byte buf[16] = {};
      if (n > 0) std::memcpy(buf, prim::access(c, loc, t, p[t].i, std::size_t(n), bytes, scache, Access::Read, what), std::size_t(n));
      std::memcpy(prim::access(c, loc, t, d[t].i, bytes, bytes, dcache, Access::Write, what), buf, bytes);
    }
  }
};

/// prefetch_l2(p): nothing to do but check that p lies inside its tensor in global memory.
struct PrefetchE : ENode {
  ENode *addr = nullptr;
  AllocCache cache;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(addr, c, s);
    const Slot *p = c.reg(addr->dst);
    for (int k = 0; k < s.n; ++k)
      (void)prim::access(c, loc, s.idx[k], p[s.idx[k]].i, 1, 1, cache, Access::Read, "prefetch_l2");
  }
};

/// ldmatrix.x{num}[.trans] and its inverse stmatrix: lanes 8i..8i+7 address the rows of matrix
/// i in shared memory; word i of lane l's registers is M_i[l/4][2(l%4) .. +1] (transposed:
/// M_i[2(l%4) .. +1][l/4]), low half first. ldmatrix loads the rows into the words, stmatrix
/// (`store`) stores the words into the rows.
struct MatrixE : ENode {
  ENode *regs = nullptr, *row = nullptr;
  int num = 4;
  bool trans = false, store = false;
  AllocCache rcache, wcache;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(regs, c, s), emu::eval(row, c, s);
    const char *name = store ? "stmatrix" : "ldmatrix";
    prim::require_full_warps(c, s, loc, name);
    const Slot *w = c.reg(regs->dst), *r = c.reg(row->dst);
    const Access rows = store ? Access::Write : Access::Read, words = store ? Access::Read : Access::Write;
    const std::string row_what = str_cat(name, " row"), word_what = str_cat(name, store ? " source" : " destination");
    for (int k = 0; k < s.n; k += 32) {
      int base = s.idx[k];
      for (int m = 0; m < num; ++m) {
        std::uint16_t mat[8][8];
        auto row_at = [&](int j) {
          int t = base + 8 * m + j;
          return prim::access(c, loc, t, r[t].i, 16, 16, rcache, rows, row_what.c_str());
        };
        if (!store)
          for (int j = 0; j < 8; ++j) std::memcpy(mat[j], row_at(j), 16);
        for (int l = 0; l < 32; ++l) {
          int t = base + l, g = l / 4, q = 2 * (l % 4);
          std::uint16_t &lo = trans ? mat[q][g] : mat[g][q], &hi = trans ? mat[q + 1][g] : mat[g][q + 1];
          void *word = prim::access(c, loc, t, w[t].i + 4 * m, 4, 4, wcache, words, word_what.c_str());
          std::uint32_t v = std::uint32_t(lo) | std::uint32_t(hi) << 16;
          if (store) {
            std::memcpy(&v, word, 4);
            lo = std::uint16_t(v & 0xffffu), hi = std::uint16_t(v >> 16);
          } else {
            std::memcpy(word, &v, 4);
          }
        }
        if (store)
          for (int j = 0; j < 8; ++j) std::memcpy(row_at(j), mat[j], 16);
      }
    }
  }
};

/// mma.sync m16n8k{16,8,32}: gathers A (16 x k), B (k x 8) and C (16 x 8) from the fragments of
/// the 32 lanes (PTX ISA layouts), computes D = A B + C exactly in double (i64 for integers) and
/// scatters D rounded to its dtype.
struct MmaE : ENode {
  ENode *d = nullptr, *a = nullptr, *b = nullptr, *cc = nullptr;
  int k = 16;
  DataType ab, acc;
  AllocCache cache[4];

  // (row, col) of fragment element i of lane l; g = l / 4, q = l % 4.
  static std::pair<int, int> a_pos(int k, int l, int i) {
    int g = l >> 2, q = l & 3;
    if (k == 16) return {g + 8 * ((i >> 1) & 1), q * 2 + (i & 1) + 8 * (i >> 2)};
    if (k == 8) return {g + 8 * (i & 1), q + 4 * (i >> 1)};
    return {g + 8 * ((i >> 2) & 1), q * 4 + (i & 3) + 16 * (i >> 3)};
  }
  static std::pair<int, int> b_pos(int k, int l, int i) {
    int g = l >> 2, q = l & 3;
    if (k == 16) return {q * 2 + (i & 1) + 8 * (i >> 1), g};
    if (k == 8) return {q + 4 * i, g};
    return {q * 4 + (i & 3) + 16 * (i >> 2), g};
  }
  static std::pair<int, int> c_pos(int l, int i) { return {(l >> 2) + 8 * (i >> 1), (l & 3) * 2 + (i & 1)}; }

  double read(Context &c, int t, std::int64_t addr, DataType dt, int slot) {
    void *p = prim::access(c, loc, t, addr, dt.nbytes(), dt.nbytes(), cache[slot], Access::Read, "mma_sync operand");
    Slot v = load_value(dt, p);
    if (!dt.is_float()) return double(v.i);
    if (k == 8) { // tf32: the low 13 mantissa bits are ignored
      float f = float(v.f);
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      u &= 0xffffe000u;
      std::memcpy(&f, &u, 4);
      return f;
    }
    return v.f;
  }

  void eval(Context &c, ActiveSet s) override {
    for (auto *e : {d, a, b, cc}) emu::eval(e, c, s);
    prim::require_full_warps(c, s, loc, "mma_sync");
    const Slot *pd = c.reg(d->dst), *pa = c.reg(a->dst), *pb = c.reg(b->dst), *pc = c.reg(cc->dst);
    const int na = k == 16 ? 8 : k == 8 ? 4 : 16, nb = na / 2;
    const std::size_t ea = ab.nbytes(), ec = acc.nbytes();
    for (int w = 0; w < s.n; w += 32) {
      int base = s.idx[w];
      double A[16][32], B[32][8], C[16][8];
      for (int l = 0; l < 32; ++l) {
        int t = base + l;
        for (int i = 0; i < na; ++i) {
          auto [r, col] = a_pos(k, l, i);
          A[r][col] = read(c, t, pa[t].i + std::int64_t(i * ea), ab, 0);
        }
        for (int i = 0; i < nb; ++i) {
          auto [r, col] = b_pos(k, l, i);
          B[r][col] = read(c, t, pb[t].i + std::int64_t(i * ea), ab, 1);
        }
        for (int i = 0; i < 4; ++i) {
          auto [r, col] = c_pos(l, i);
          C[r][col] = read(c, t, pc[t].i + std::int64_t(i * ec), acc, 2);
        }
      }
      for (int l = 0; l < 32; ++l) {
        int t = base + l;
        for (int i = 0; i < 4; ++i) {
          auto [r, col] = c_pos(l, i);
          Slot v;
          if (acc.is_float()) {
            double sum = C[r][col];
            for (int j = 0; j < k; ++j) sum += A[r][j] * B[j][col];
            v.f = acc == dtypes::f16 ? double(round_f16(float(sum))) : double(float(sum));
          } else {
            std::int64_t sum = std::int64_t(C[r][col]);
            for (int j = 0; j < k; ++j) sum += std::int64_t(A[r][j]) * std::int64_t(B[j][col]);
            v.i = std::clamp<std::int64_t>(sum, INT32_MIN, INT32_MAX); // .satfinite
          }
          store_value(acc, prim::access(c, loc, t, pd[t].i + std::int64_t(i * ec), ec, ec, cache[3], Access::Write,
                                        "mma_sync destination"),
                      v);
        }
      }
    }
  }
};

/// Packed half2 operations on u32 values (pack, unpack, add, sub, mul, fma).
struct Half2E : ENode {
  ir::Intrinsic op = ir::Intrinsic::Half2Add;
  std::array<ENode *, 3> x{};
  int nargs = 2;
  bool bf = false;
  float get(std::uint32_t p, int i) const {
    auto h = std::uint16_t(i ? p >> 16 : p & 0xffffu);
    return bf ? bf16_bits_to_float(h) : half_bits_to_float(h);
  }
  std::uint32_t put(double v) const {
    float f = float(v);
    return bf ? float_to_bf16_bits(f) : float_to_half_bits(f);
  }
  void eval(Context &c, ActiveSet s) override {
    for (int i = 0; i < nargs; ++i) emu::eval(x[std::size_t(i)], c, s);
    const Slot *p = c.reg(x[0]->dst), *q = nargs > 1 ? c.reg(x[1]->dst) : p, *r = nargs > 2 ? c.reg(x[2]->dst) : p;
    Slot *d = c.reg(dst);
    using I = ir::Intrinsic;
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      auto u = [&](const Slot *v) { return std::uint32_t(v[t].i); };
      if (op == I::Half2Pack) {
        d[t].i = std::int64_t(put(p[t].f) | put(q[t].f) << 16);
        continue;
      }
      if (op == I::Half2Unpack) {
        d[t].f = get(u(p), int(q[t].i));
        continue;
      }
      std::uint32_t out = 0;
      for (int h = 0; h < 2; ++h) {
        double a = get(u(p), h), b = get(u(q), h), v = 0;
        switch (op) {
        case I::Half2Add: v = a + b; break;
        case I::Half2Sub: v = a - b; break;
        case I::Half2Mul: v = a * b; break;
        default: v = a * b + double(get(u(r), h)); break;
        }
        out |= put(v) << (16 * h);
      }
      d[t].i = std::int64_t(out);
    }
  }
};

/// A primitive the emulator cannot run (Hopper): fails when a thread reaches it.
struct UnsupportedPrimitiveE : ENode {
  std::string name;
  void eval(Context &c, ActiveSet s) override {
    if (s.n == 0) return;
    c.fail(loc, s.idx[0],
           str_cat("'", name, "' is a Hopper (sm_90) instruction that the emulator cannot run; run this "
                   "kernel on a GPU (unset HIDET_EMULATE)"));
  }
};

/// The emulator node of primitive call `c` with compiled arguments `args`; sets `rd` to the
/// result's register dtype.
inline ENode *make_primitive_node(const ir::CallNode &c, const std::vector<ENode *> &args, DataType &rd) {
  using I = ir::Intrinsic;
  auto imm = [&](std::size_t i) {
    std::int64_t v = 0;
    if (i >= c.args.size() || !ir::as_const_int(c.args[i], v))
      throw EmulatorError(str_cat(ir::intrinsic_name(c.op), ": operand ", i, " must be a constant"), c.loc);
    return v;
  };
  auto pointee = [&](std::size_t i) { return ir::dtype_of(c.args.at(i)->type.as<ir::PointerTypeNode>()->base); };
  switch (c.op) {
  case I::CopyVector: case I::CpAsync: {
    auto *n = new CopyVectorE();
    n->dst = args.at(0), n->src = args.at(1), n->bytes = std::size_t(imm(2));
    if (c.op == I::CpAsync) n->src_bytes = args.at(3), n->what = "cp_async";
    return n;
  }
  case I::CpAsyncCommitGroup: case I::CpAsyncWaitGroup: return new NopE();
  case I::PrefetchL2: {
    auto *n = new PrefetchE();
    n->addr = args.at(0);
    return n;
  }
  case I::Ldmatrix: case I::Stmatrix: {
    auto *n = new MatrixE();
    n->store = c.op == I::Stmatrix;
    n->regs = args.at(n->store ? 1 : 0), n->row = args.at(n->store ? 0 : 1);
    n->num = int(imm(2)), n->trans = imm(3) != 0;
    return n;
  }
  case I::MmaSync: {
    auto *n = new MmaE();
    n->d = args.at(0), n->a = args.at(1), n->b = args.at(2), n->cc = args.at(3), n->k = int(imm(6));
    n->acc = pointee(0), n->ab = pointee(1);
    return n;
  }
  case I::Half2Pack: case I::Half2Unpack: case I::Half2Add: case I::Half2Sub: case I::Half2Mul:
  case I::Half2Fma: {
    auto *n = new Half2E();
    n->op = c.op, n->nargs = int(args.size()) - 1;
    for (int i = 0; i < n->nargs; ++i) n->x[std::size_t(i)] = args[std::size_t(i)];
    n->bf = imm(args.size() - 1) == int(DTypeCode::BF16);
    rd = c.op == I::Half2Unpack ? dtypes::f32 : dtypes::u32;
    return n;
  }
  default: {
    auto *n = new UnsupportedPrimitiveE();
    n->name = std::string(ir::intrinsic_name(c.op));
    return n;
  }
  }
}

} // namespace hidet::backend::emu
