// Compiled expression nodes of the SIMT emulator: arithmetic, casts, selects, and the checked
// memory accesses (tensor elements, addresses, pointer dereferences). Each node evaluates for all
// active threads of a block at once (see exec.hpp). Arithmetic nodes are instantiated per domain
// (value.hpp: domain_of) and normalize results of narrower dtypes after their loop; memory
// accesses and casts are one class each that dispatch on the dtype at run time.
#pragma once

#include <array>
#include <sstream>

#include "hidet/backend/emulator/exec.hpp"
#include "hidet/ir/expr.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::backend::emu {

/// Rounds or wraps the results of the threads in `s` to dtype `d` (value.hpp: canonical): results
/// computed in a wider domain, or converted to `d` without its rounding or wrap.
inline void normalize(DataType d, Slot *r, ActiveSet s) {
  with_dtype(d, [&]<DTypeCode K>() {
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      r[t] = Num<K>::put(Num<K>::get(r[t]));
    }
  });
}

/// Integer or floating binary operation `Op` on domain K (comparisons yield bool).
template <DTypeCode K, ir::BinaryOp Op> Slot binary_apply(typename Num<K>::C a, Slot bs) {
  using N = Num<K>;
  using C = typename N::C;
  using B = ir::BinaryOp;
  if constexpr (Op == B::Shl || Op == B::Shr) {
    if constexpr (N::is_float) {
      return bs;
    } else {
      using P = decltype(+a); // C++ integer promotion
      using UP = std::make_unsigned_t<P>;
      std::uint64_t s = std::uint64_t(bs.i);
      if (s >= 8 * sizeof(P)) {
        if constexpr (Op == B::Shl) return N::put(C(0));
        else if constexpr (std::is_signed_v<C>) return N::put(C(a < 0 ? -1 : 0));
        else return N::put(C(0));
      }
      if constexpr (Op == B::Shl) return N::put(C(P(UP(P(a)) << s)));
      else return N::put(C(P(a) >> s));
    }
  } else {
    C b = N::get(bs);
    if constexpr (Op == B::Lt) return Slot{a < b};
    else if constexpr (Op == B::Le) return Slot{a <= b};
    else if constexpr (Op == B::Gt) return Slot{a > b};
    else if constexpr (Op == B::Ge) return Slot{a >= b};
    else if constexpr (Op == B::Eq) return Slot{a == b};
    else if constexpr (Op == B::Ne) return Slot{a != b};
    else if constexpr (N::is_float) {
      if constexpr (Op == B::Add) return N::put(a + b);
      else if constexpr (Op == B::Sub) return N::put(a - b);
      else if constexpr (Op == B::Mul) return N::put(a * b);
      else if constexpr (Op == B::Div) return N::put(a / b);
      else if constexpr (Op == B::Mod) return N::put(std::fmod(a, b));
      else return N::put(a); // bitwise ops do not exist on floats (rejected by make())
    } else {
      using U = std::uint64_t;
      if constexpr (Op == B::Add) return N::put(C(U(a) + U(b)));
      else if constexpr (Op == B::Sub) return N::put(C(U(a) - U(b)));
      else if constexpr (Op == B::Mul) return N::put(C(U(a) * U(b)));
      else if constexpr (Op == B::Div || Op == B::Mod) {
        // b != 0 was checked by the caller; MIN / -1 wraps instead of trapping
        if constexpr (std::is_signed_v<C>)
          if (b == C(-1)) return N::put(Op == B::Div ? C(U(0) - U(a)) : C(0));
        if constexpr (Op == B::Div) return N::put(C(a / b));
        else return N::put(C(a % b));
      } else if constexpr (Op == B::BitAnd) return N::put(C(U(a) & U(b)));
      else if constexpr (Op == B::BitOr) return N::put(C(U(a) | U(b)));
      else if constexpr (Op == B::BitXor) return N::put(C(U(a) ^ U(b)));
      else if constexpr (Op == B::LogicalAnd) return Slot{a && b};
      else return Slot{a || b};
    }
  }
}

/// The operands of a binary node.
struct BinaryOperands : ENode {
  ENode *a = nullptr, *b = nullptr;
  bool narrow = false; ///< the dtype is narrower than the domain: normalize the results
};

/// a Op b computed in domain K (value.hpp: domain_of; comparisons: with_compare_domain).
template <DTypeCode K, ir::BinaryOp Op> struct BinaryE : BinaryOperands {
  void eval(Context &c, ActiveSet s) override {
    emu::eval(a, c, s);
    emu::eval(b, c, s);
    const Slot *x = c.reg(a->dst), *y = c.reg(b->dst);
    Slot *d = c.reg(dst);
    using N = Num<K>;
    constexpr bool checks_zero =
        !N::is_float && (Op == ir::BinaryOp::Div || Op == ir::BinaryOp::Mod);
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      if constexpr (checks_zero)
        if (y[t].i == 0) [[unlikely]]
          c.fail(loc, t,
                 str_cat("integer division by zero: ", x[t].i, " ", ir::binary_op_symbol(Op),
                         " 0 (dtype ", dtype, ")"));
      d[t] = binary_apply<K, Op>(N::get(x[t]), y[t]);
    }
    if (narrow) normalize(dtype, d, s);
  }
};

/// Builds a BinaryE for a runtime op and operand dtype (null for the logical ops: LogicalE).
inline BinaryOperands *make_binary_node(ir::BinaryOp op, DataType d) {
#define HIDET_EMU_OP(O)                                                                            \
  case ir::BinaryOp::O: return new BinaryE<K, ir::BinaryOp::O>();
  if (ir::is_comparison(op))
    return with_compare_domain(d, [&]<DTypeCode K>() -> BinaryOperands * {
      switch (op) {
        HIDET_EMU_OP(Lt) HIDET_EMU_OP(Le) HIDET_EMU_OP(Gt) HIDET_EMU_OP(Ge) HIDET_EMU_OP(Eq)
        HIDET_EMU_OP(Ne)
      default: return nullptr;
      }
    });
  BinaryOperands *n = with_domain(domain_of(d), [&]<DTypeCode K>() -> BinaryOperands * {
    switch (op) {
      HIDET_EMU_OP(Add) HIDET_EMU_OP(Sub) HIDET_EMU_OP(Mul) HIDET_EMU_OP(Div) HIDET_EMU_OP(Mod)
    default: break;
    }
    // Bitwise operations and shifts exist on integers and bool only (ir::make rejects them on
    // floats): no node classes for the float domains.
    if constexpr (!Num<K>::is_float) {
      switch (op) {
        HIDET_EMU_OP(BitAnd) HIDET_EMU_OP(BitOr) HIDET_EMU_OP(BitXor) HIDET_EMU_OP(Shl) HIDET_EMU_OP(Shr)
      default: break;
      }
    }
    return nullptr;
  });
#undef HIDET_EMU_OP
  if (n) n->narrow = narrower_than_domain(d);
  return n;
}

/// a && b, a || b with C++ short-circuit: b only runs for the threads that need it.
struct LogicalE : ENode {
  ENode *a = nullptr, *b = nullptr;
  bool is_and = true;
  ThreadBuf buf;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(a, c, s);
    const Slot *x = c.reg(a->dst);
    if (b->may_fault)
      emu::eval(b, c, filter(s, buf.data(), [&](int t) { return (x[t].i != 0) == is_and; }));
    else
      emu::eval(b, c, s);
    const Slot *y = c.reg(b->dst);
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      bool xv = x[t].i != 0;
      d[t].i = is_and ? (xv && y[t].i != 0) : (xv || y[t].i != 0);
    }
  }
};

/// -a, !a, ~a computed in domain K.
template <DTypeCode K> struct UnaryE : ENode {
  ENode *a = nullptr;
  ir::UnaryOp op = ir::UnaryOp::Neg;
  bool narrow = false; ///< the dtype is narrower than the domain: normalize the results
  void eval(Context &c, ActiveSet s) override {
    emu::eval(a, c, s);
    using N = Num<K>;
    using C = typename N::C;
    const Slot *x = c.reg(a->dst);
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      C v = N::get(x[t]);
      if (op == ir::UnaryOp::LogicalNot) d[t] = Slot{!v};
      else if constexpr (N::is_float) d[t] = N::put(-v);
      else if (op == ir::UnaryOp::Neg) d[t] = N::put(C(std::uint64_t(0) - std::uint64_t(v)));
      else d[t] = N::put(C(~std::uint64_t(v)));
    }
    if (narrow) normalize(dtype, d, s);
  }
};

/// A value under another name: a reinterpreting cast (pointers), &tensor, &*p. Aliases a's register.
struct AliasE : ENode {
  ENode *a = nullptr;
  void eval(Context &c, ActiveSet s) override { emu::eval(a, c, s); }
};

/// Scalar conversion between dtypes (value.hpp: cast_target, convert_as): one loop per kind of
/// conversion, the kind chosen once per launch outside the loop.
struct CastE : ENode {
  ENode *a = nullptr;
  DataType from;
  CastTarget target;
  template <SlotKind F, CastClass T> void convert(const Slot *x, Slot *d, ActiveSet s) const {
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      d[t] = convert_as<F, T>(x[t], target);
    }
  }
  void eval(Context &c, ActiveSet s) override {
    emu::eval(a, c, s);
    const Slot *x = c.reg(a->dst);
    Slot *d = c.reg(dst);
    with_conversion(from, target, [&]<SlotKind F, CastClass T>() { convert<F, T>(x, d, s); });
    if (target.post) normalize(target.to, d, s);
  }
};

/// cond ? t : f; only the chosen side runs when a side may fault.
struct SelectE : ENode {
  ENode *cond = nullptr, *t = nullptr, *f = nullptr;
  ThreadBuf tb, fb;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(cond, c, s);
    const Slot *cv = c.reg(cond->dst);
    if (t->may_fault || f->may_fault) {
      emu::eval(t, c, filter(s, tb.data(), [&](int i) { return cv[i].i != 0; }));
      emu::eval(f, c, filter(s, fb.data(), [&](int i) { return cv[i].i == 0; }));
    } else {
      emu::eval(t, c, s);
      emu::eval(f, c, s);
    }
    const Slot *x = c.reg(t->dst), *y = c.reg(f->dst);
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) {
      int i = s.idx[k];
      d[i] = cv[i].i ? x[i] : y[i];
    }
  }
};

/// pointer +/- integer (scaled by the pointee size).
struct PtrAddE : ENode {
  ENode *a = nullptr, *b = nullptr;
  std::int64_t scale = 1; ///< pointee bytes, negated for subtraction
  void eval(Context &c, ActiveSet s) override {
    emu::eval(a, c, s);
    emu::eval(b, c, s);
    const Slot *x = c.reg(a->dst), *y = c.reg(b->dst);
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      d[t].i = x[t].i + y[t].i * scale;
    }
  }
};

/// The checked address computation of tensor[indices...]: every index in [0, dim), then the
/// element inside a live allocation (registry), then the race-check bookkeeping for shared memory.
struct TensorAccess {
  static constexpr int kMaxRank = 8;
  ENode *base = nullptr;
  std::vector<ENode *> idx, dims;
  ENode *offset = nullptr; ///< the layout's offset expression; null: row-major
  DataType dtype;
  std::size_t esize = 1;
  std::string name;
  const char *scope = "global";
  SourceLoc loc;
  AllocCache cache;

  void eval_parts(Context &c, ActiveSet s) {
    emu::eval(base, c, s);
    for (auto *e : idx) emu::eval(e, c, s);
    for (auto *e : dims) emu::eval(e, c, s);
    if (offset) emu::eval(offset, c, s);
  }

  /// Per-eval register pointers (set by bind()).
  const Slot *bp = nullptr, *op = nullptr;
  std::array<const Slot *, kMaxRank> ip{}, dp{};
  void bind(Context &c) {
    bp = c.reg(base->dst);
    op = offset ? c.reg(offset->dst) : nullptr;
    for (std::size_t i = 0; i < idx.size(); ++i) ip[i] = c.reg(idx[i]->dst), dp[i] = c.reg(dims[i]->dst);
  }

  /// The checked address of thread t's element; `what` is "read", "write", ...
  std::uintptr_t address(Context &c, int t, Access k, const char *what, bool record = true) {
    std::int64_t off = 0;
    const std::size_t r = idx.size();
    for (std::size_t i = 0; i < r; ++i) {
      std::int64_t v = ip[i][t].i, d = dp[i][t].i;
      if (v < 0 || v >= d) [[unlikely]]
        c.fail(loc, t,
               str_cat("out-of-bounds ", what, " of ", scope, " tensor '", name, "': index ",
                       tuple_str(ip, t), " is outside its shape ", tuple_str(dp, t),
                       " (dimension ", i, "); guard the access or fix the index"));
      off = off * d + v;
    }
    if (op) off = op[t].i;
    std::uintptr_t addr = std::uintptr_t(bp[t].i + off * std::int64_t(esize));
    const Alloc *a = nullptr;
    AccessFault f = c.mem.check(addr, esize, t, cache, a);
    if (f != AccessFault::None) [[unlikely]]
      c.fail(loc, t,
             str_cat("out-of-bounds ", what, " of ", scope, " tensor '", name, "' at index ",
                     tuple_str(ip, t), " (shape ", tuple_str(dp, t), ", element offset ", off,
                     "): ", describe_fault(f, addr, esize, a)));
    if (record && c.racecheck && a->kind == MemKind::Shared) c.shared_access(a, addr, esize, t, k, loc, name);
    return addr;
  }

  std::string tuple_str(const std::array<const Slot *, kMaxRank> &p, int t) const {
    std::ostringstream os;
    os << "(";
    for (std::size_t i = 0; i < idx.size(); ++i) os << (i ? ", " : "") << p[i][t].i;
    os << ")";
    return os.str();
  }
};

/// tensor[indices...] as a value.
struct LoadE : ENode {
  TensorAccess acc;
  void eval(Context &c, ActiveSet s) override {
    acc.eval_parts(c, s);
    acc.bind(c);
    Slot *d = c.reg(dst);
    const DataType dt = acc.dtype;
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      auto addr = acc.address(c, t, Access::Read, "read");
      d[t] = load_value(dt, reinterpret_cast<const void *>(addr));
    }
  }
};

/// &tensor[indices...] (bounds-checked, not an access).
struct ElementAddressE : ENode {
  TensorAccess acc;
  void eval(Context &c, ActiveSet s) override {
    acc.eval_parts(c, s);
    acc.bind(c);
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      d[t].i = std::int64_t(acc.address(c, t, Access::Read, "address computation", false));
    }
  }
};

/// Checks a pointer access of `n` bytes by thread t; returns the allocation.
inline const Alloc *check_pointer(Context &c, SourceLoc loc, int t, std::uintptr_t addr,
                                  std::size_t n, AllocCache &cache, const char *what) {
  const Alloc *a = nullptr;
  AccessFault f = c.mem.check(addr, n, t, cache, a);
  if (f != AccessFault::None) [[unlikely]]
    c.fail(loc, t, str_cat("invalid ", what, " through a pointer: ", describe_fault(f, addr, n, a)));
  return a;
}

/// *pointer as a value.
struct DerefE : ENode {
  ENode *ptr = nullptr;
  std::size_t esize = 1;
  AllocCache cache;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(ptr, c, s);
    const Slot *p = c.reg(ptr->dst);
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      auto addr = std::uintptr_t(p[t].i);
      const Alloc *a = check_pointer(c, loc, t, addr, esize, cache, "read");
      if (c.racecheck && a->kind == MemKind::Shared)
        c.shared_access(a, addr, esize, t, Access::Read, loc, "*pointer");
      d[t] = load_value(dtype, reinterpret_cast<const void *>(addr));
    }
  }
};

} // namespace hidet::backend::emu
