// Compiled call nodes of the SIMT emulator: device-function calls (with their register frames),
// math intrinsics, barriers, atomics, warp shuffles and votes, printf and dynamic shared memory.
#pragma once

#include <cstdio>

#include "hidet/backend/emulator/expr_nodes.hpp"
#include "hidet/ir/func.hpp"

namespace hidet::backend::emu {

/// Fixed registers of every frame: the 12 builtins (ir::BuiltinKind order), the per-thread
/// "returned" flag and the return value.
inline constexpr int kReturnedReg = 12, kReturnValueReg = 13, kFixedRegs = 14;

/// A compiled function: its register count, constants, parameters and body.
struct FuncCode {
  std::string name;
  ir::Function fn;
  int nregs = kFixedRegs;
  std::vector<std::pair<int, Slot>> consts; ///< registers filled with a constant on entry
  unsigned builtins_used = 0;               ///< bit i: builtin register i is read
  std::vector<int> param_regs;
  std::vector<FuncCode *> callees;
  SNode *body = nullptr;
};

/// Makes frame `depth` current for `f` (registers sized, constants and builtins filled, no
/// thread returned); returns the previous frame's registers.
inline Slot *enter_frame(Context &c, const FuncCode &f, int depth) {
  Slot *prev = c.regs;
  if (int(c.frames.size()) <= depth) c.frames.resize(depth + 1);
  auto &regs = c.frames[depth].regs;
  std::size_t need = std::size_t(f.nregs) * c.T;
  if (regs.size() < need) regs.resize(need);
  c.regs = regs.data();
  c.depth = depth;
  const int T = c.T;
  for (auto &[r, v] : f.consts) std::fill_n(c.reg(r), T, v);
  std::fill_n(c.reg(kReturnedReg), T, Slot{0});
  const std::uint32_t bx = c.block.x, by = c.block.y;
  const std::uint32_t uniform[9] = {c.block_idx.x, c.block_idx.y, c.block_idx.z, c.block.x,
                                    c.block.y,     c.block.z,     c.grid.x,      c.grid.y,
                                    c.grid.z};
  for (int b = 0; b < 12; ++b) {
    if (!(f.builtins_used >> b & 1u)) continue;
    Slot *d = c.reg(b);
    if (b >= 3) std::fill_n(d, T, Slot{std::int64_t(uniform[b - 3])});
    else
      for (int t = 0; t < T; ++t)
        d[t].i = b == 0 ? t % bx : b == 1 ? (t / bx) % by : t / (bx * by);
  }
  return prev;
}

/// Releases frame `depth` (its register arrays) and makes `prev` current again.
inline void leave_frame(Context &c, int depth, Slot *prev) {
  auto &fs = c.frames[depth];
  for (auto &a : fs.arrays) c.mem.remove(a.begin);
  fs.arrays.clear();
  c.regs = prev;
  c.depth = depth - 1;
}

/// A call of a device function of the module.
struct CallE : ENode {
  FuncCode *callee = nullptr;
  std::vector<ENode *> args;
  bool returns_value = false;
  void eval(Context &c, ActiveSet s) override {
    for (auto *a : args) emu::eval(a, c, s);
    if (s.n == 0) return;
    if (c.depth + 1 >= 64) c.fail(loc, s.idx[0], "device-function calls nested deeper than 64");
    Slot *caller = c.regs;
    int depth = c.depth + 1;
    Slot *prev = enter_frame(c, *callee, depth);
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Slot *src = caller + std::size_t(args[i]->dst) * c.T;
      Slot *d = c.reg(callee->param_regs[i]);
      for (int k = 0; k < s.n; ++k) d[s.idx[k]] = src[s.idx[k]];
    }
    callee->body->exec(c, s);
    if (returns_value) {
      const Slot *r = c.reg(kReturnValueReg);
      Slot *d = caller + std::size_t(dst) * c.T;
      for (int k = 0; k < s.n; ++k) d[s.idx[k]] = r[s.idx[k]];
    }
    leave_frame(c, depth, prev);
  }
};

/// The inverse of erf on [-1, 1] (CUDA's erfinv; the C++ library has none): Giles' single-precision
/// approximation refined by Newton steps to double precision, on erf, or on erfc for |y| > 0.5
/// where 1 - |y| is exact and erfc keeps the tails accurate. erfinv(+-1) = +-inf; NaN outside.
inline double erfinv(double y) {
  if (!(std::fabs(y) <= 1)) return std::nan("");
  if (std::fabs(y) == 1) return std::copysign(INFINITY, y);
  double a = std::fabs(y), w = -std::log((1 - a) * (1 + a)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  double x = p * a;
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 30; ++i) { // 2 or 3 steps, more in the tails of double beyond f32's range
    double f = a <= 0.5 ? std::erf(x) - a : (1 - a) - std::erfc(x);
    double step = f / (two_over_sqrt_pi * std::exp(-x * x));
    x -= step;
    if (!(std::fabs(step) > 1e-16 * x)) break;
  }
  return std::copysign(x, y);
}

/// A math intrinsic computed in domain K (of the argument dtype; isnan yields bool).
template <DTypeCode K> struct MathE : ENode {
  ir::Intrinsic op = ir::Intrinsic::Exp;
  std::array<ENode *, 3> a{};
  int nargs = 1;
  bool narrow = false; ///< the dtype is narrower than the domain: normalize the results
  void eval(Context &c, ActiveSet s) override {
    for (int i = 0; i < nargs; ++i) emu::eval(a[i], c, s);
    using N = Num<K>;
    using C = typename N::C;
    const Slot *x = c.reg(a[0]->dst);
    const Slot *y = nargs > 1 ? c.reg(a[1]->dst) : x;
    const Slot *z = nargs > 2 ? c.reg(a[2]->dst) : x;
    Slot *d = c.reg(dst);
    auto run = [&](auto f) {
      for (int k = 0; k < s.n; ++k) {
        int t = s.idx[k];
        d[t] = f(N::get(x[t]), N::get(y[t]), N::get(z[t]));
      }
    };
    using I = ir::Intrinsic;
    if constexpr (N::is_float) {
      switch (op) {
#define HIDET_EMU_MATH(E, EXPR)                                                                    \
  case I::E: run([](C p, C q, C r) { (void)q, (void)r; return N::put(C(EXPR)); }); break;
        HIDET_EMU_MATH(Exp, std::exp(p)) HIDET_EMU_MATH(Exp2, std::exp2(p))
        HIDET_EMU_MATH(Log, std::log(p)) HIDET_EMU_MATH(Log2, std::log2(p))
        HIDET_EMU_MATH(Sqrt, std::sqrt(p)) HIDET_EMU_MATH(Rsqrt, C(1) / std::sqrt(p))
        HIDET_EMU_MATH(Sin, std::sin(p)) HIDET_EMU_MATH(Cos, std::cos(p))
        HIDET_EMU_MATH(Tanh, std::tanh(p)) HIDET_EMU_MATH(Erf, std::erf(p))
        HIDET_EMU_MATH(Pow, std::pow(p, q)) HIDET_EMU_MATH(Abs, std::fabs(p))
        HIDET_EMU_MATH(Min, std::fmin(p, q)) HIDET_EMU_MATH(Max, std::fmax(p, q))
        HIDET_EMU_MATH(Fma, std::fma(double(p), double(q), double(r))) HIDET_EMU_MATH(Floor, std::floor(p))
        HIDET_EMU_MATH(Ceil, std::ceil(p)) HIDET_EMU_MATH(Round, std::round(p))
        HIDET_EMU_MATH(Trunc, std::trunc(p)) HIDET_EMU_MATH(Tan, std::tan(p))
        HIDET_EMU_MATH(Asin, std::asin(p)) HIDET_EMU_MATH(Acos, std::acos(p))
        HIDET_EMU_MATH(Atan, std::atan(p)) HIDET_EMU_MATH(Atan2, std::atan2(p, q))
        HIDET_EMU_MATH(Sinh, std::sinh(p)) HIDET_EMU_MATH(Cosh, std::cosh(p))
        HIDET_EMU_MATH(Asinh, std::asinh(p)) HIDET_EMU_MATH(Acosh, std::acosh(p))
        HIDET_EMU_MATH(Atanh, std::atanh(p)) HIDET_EMU_MATH(Log1p, std::log1p(p))
        HIDET_EMU_MATH(Expm1, std::expm1(p)) HIDET_EMU_MATH(Log10, std::log10(p))
        HIDET_EMU_MATH(Erfinv, erfinv(double(p))) HIDET_EMU_MATH(Erfc, std::erfc(p))
        HIDET_EMU_MATH(Fmod, std::fmod(p, q))
#undef HIDET_EMU_MATH
      case I::IsNan: run([](C p, C, C) { return Slot{std::isnan(p) ? 1 : 0}; }); break;
      default: c.fail(loc, -1, str_cat("intrinsic ", ir::intrinsic_name(op), " is not a math function"));
      }
    } else {
      switch (op) {
      case I::Abs:
        run([](C p, C, C) { return N::put(p < C(0) ? C(std::uint64_t(0) - std::uint64_t(p)) : p); });
        break;
      case I::Min: run([](C p, C q, C) { return N::put(p < q ? p : q); }); break;
      case I::Max: run([](C p, C q, C) { return N::put(p < q ? q : p); }); break;
      case I::IsNan: run([](C, C, C) { return Slot{0}; }); break;
      default:
        c.fail(loc, -1,
               str_cat("the emulator does not support intrinsic ", ir::intrinsic_name(op),
                       " on dtype ", a[0]->dtype, "; run this kernel on a GPU"));
      }
    }
    if (narrow) normalize(dtype, d, s);
  }
};

/// syncthreads(): every live thread of the block must arrive.
struct BarrierE : ENode {
  void eval(Context &c, ActiveSet s) override {
    int live = c.live_threads();
    if (s.n != live) [[unlikely]] {
      for (int k = 0; k < s.n; ++k) c.mark[s.idx[k]] = 1;
      std::string arrived, missed;
      int na = 0, nm = 0;
      for (int t = 0; t < c.T; ++t) {
        if (c.exited[t].i) continue;
        std::string &out = c.mark[t] ? arrived : missed;
        int &cnt = c.mark[t] ? na : nm;
        if (cnt < 8) out += (cnt ? ", " : "") + c.thread_str(t);
        else if (cnt == 8) out += ", ...";
        ++cnt;
      }
      for (int k = 0; k < s.n; ++k) c.mark[s.idx[k]] = 0;
      c.fail(loc, -1,
             str_cat("barrier (syncthreads) reached by only some threads of the block: ", na,
                     " of ", live, " live threads arrived [", arrived, "], ", nm, " missed [",
                     missed, "]; a barrier must not sit in divergent code (an if, a loop with a "
                     "thread-dependent trip count, or after an early return)"));
    }
    c.barrier();
  }
};

/// a + b on dtype d (atomic add): computed in d's domain, then rounded or wrapped to d.
inline Slot add_values(DataType d, Slot a, Slot b) {
  Slot r;
  if (d == dtypes::f64) {
    r.f = a.f + b.f;
    return r;
  }
  if (d.is_float()) {
    r.f = float(a.f) + float(b.f);
    return d == dtypes::f32 ? r : canonical(d, r);
  }
  r.i = std::int64_t(std::uint64_t(a.i) + std::uint64_t(b.i));
  return d.nbytes() < 8 ? canonical(d, r) : r;
}
/// a < b and a == b on dtype d (registers hold normalized values: value.hpp, with_compare_domain).
inline bool less_values(DataType d, Slot a, Slot b) {
  if (d.is_float()) return a.f < b.f;
  if (d == dtypes::u64) return std::uint64_t(a.i) < std::uint64_t(b.i);
  return a.i < b.i;
}
inline bool equal_values(DataType d, Slot a, Slot b) {
  return d.is_float() ? a.f == b.f : a.i == b.i;
}

/// atomic_add/min/max/exchange/cas(address, value[, value]) -> old value, on the node's dtype.
struct AtomicE : ENode {
  ir::Intrinsic op = ir::Intrinsic::AtomicAdd;
  ENode *ptr = nullptr, *v1 = nullptr, *v2 = nullptr; ///< cas: (ptr, compare v1, value v2)
  AllocCache cache;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(ptr, c, s);
    emu::eval(v1, c, s);
    if (v2) emu::eval(v2, c, s);
    const Slot *p = c.reg(ptr->dst), *x = c.reg(v1->dst), *y = v2 ? c.reg(v2->dst) : x;
    Slot *d = c.reg(dst);
    const DataType dt = dtype;
    const std::size_t n = dt.nbytes();
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      auto addr = std::uintptr_t(p[t].i);
      const Alloc *a = check_pointer(c, loc, t, addr, n, cache, "atomic access");
      if (c.racecheck && a->kind == MemKind::Shared)
        c.shared_access(a, addr, n, t, Access::Atomic, loc, "*pointer");
      void *mp = reinterpret_cast<void *>(addr);
      Slot old = load_value(dt, mp), nv = old, v = x[t];
      switch (op) {
      case ir::Intrinsic::AtomicAdd: nv = add_values(dt, old, v); break;
      case ir::Intrinsic::AtomicMin: nv = less_values(dt, v, old) ? v : old; break;
      case ir::Intrinsic::AtomicMax: nv = less_values(dt, old, v) ? v : old; break;
      case ir::Intrinsic::AtomicExch: nv = v; break;
      case ir::Intrinsic::AtomicCas:
        if (equal_values(dt, old, v)) nv = y[t];
        break;
      default: break;
      }
      store_value(dt, mp, nv);
      d[t] = old;
    }
  }
};

/// shfl_sync / shfl_up_sync / shfl_down_sync / shfl_xor_sync(mask, value, lane|delta, width).
struct ShuffleE : ENode {
  ir::Intrinsic op = ir::Intrinsic::ShflSync;
  ENode *mask = nullptr, *value = nullptr, *lane = nullptr, *width = nullptr;
  void eval(Context &c, ActiveSet s) override {
    for (auto *e : {mask, value, lane, width})
      if (e) emu::eval(e, c, s);
    const Slot *v = c.reg(value->dst), *l = c.reg(lane->dst);
    const Slot *w = width ? c.reg(width->dst) : nullptr;
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) c.mark[s.idx[k]] = 1;
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k], ln = t % 32, warp_base = t - ln;
      int wd = w ? int(w[t].i) : 32;
      if (wd <= 0 || wd > 32 || (wd & (wd - 1))) {
        for (int j = 0; j < s.n; ++j) c.mark[s.idx[j]] = 0;
        c.fail(loc, t, str_cat(ir::intrinsic_name(op), ": width ", wd, " is not a power of two in [1, 32]"));
      }
      int seg = ln & ~(wd - 1);
      std::int64_t a = l[t].i;
      int src = ln;
      switch (op) {
      case ir::Intrinsic::ShflSync: src = seg + int(a & (wd - 1)); break;
      case ir::Intrinsic::ShflUpSync: src = ln - int(a) >= seg ? ln - int(a) : ln; break;
      case ir::Intrinsic::ShflDownSync: src = ln + int(a) < seg + wd ? ln + int(a) : ln; break;
      default: src = int((ln ^ int(a)) & 31) < seg + wd ? int((ln ^ int(a)) & 31) : ln; break;
      }
      int st = warp_base + src;
      if (st >= c.T || !c.mark[st]) [[unlikely]] {
        for (int j = 0; j < s.n; ++j) c.mark[s.idx[j]] = 0;
        c.fail(loc, t,
               str_cat(ir::intrinsic_name(op), " reads lane ", src,
                       st >= c.T ? ", which does not exist in this block"
                                 : ", which did not reach the shuffle (it is not active)"));
      }
      d[t] = v[st];
    }
    for (int k = 0; k < s.n; ++k) c.mark[s.idx[k]] = 0;
  }
};

/// any_sync / all_sync / ballot_sync(mask, predicate) over the active lanes of each warp.
struct VoteE : ENode {
  ir::Intrinsic op = ir::Intrinsic::AnySync;
  ENode *mask = nullptr, *pred = nullptr;
  void eval(Context &c, ActiveSet s) override {
    emu::eval(mask, c, s);
    emu::eval(pred, c, s);
    const Slot *m = c.reg(mask->dst), *p = c.reg(pred->dst);
    Slot *d = c.reg(dst);
    std::uint32_t votes[kMaxThreads / 32] = {}, active[kMaxThreads / 32] = {};
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k], ln = t % 32;
      if (!(std::uint32_t(m[t].i) >> ln & 1u)) continue;
      active[t / 32] |= 1u << ln;
      if (p[t].i) votes[t / 32] |= 1u << ln;
    }
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k], w = t / 32;
      std::uint32_t in = votes[w] & std::uint32_t(m[t].i);
      if (op == ir::Intrinsic::AnySync) d[t].i = in != 0;
      else if (op == ir::Intrinsic::AllSync) d[t].i = in == (active[w] & std::uint32_t(m[t].i));
      else d[t].i = std::int64_t(in);
    }
  }
};

/// Formats one printf call with C semantics (the value of each argument given with its dtype).
inline std::string format_printf(const std::string &fmt, const std::vector<std::pair<DataType, Slot>> &args) {
  std::string out;
  std::size_t ai = 0;
  char buf[512];
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out += '%', ++i;
      continue;
    }
    std::size_t j = i + 1;
    std::string spec = "%";
    while (j < fmt.size() && std::strchr("-+ #0123456789.*", fmt[j])) spec += fmt[j++];
    while (j < fmt.size() && std::strchr("hlLqjzt", fmt[j])) ++j; // length: from the dtype
    if (j >= fmt.size()) break;
    char conv = fmt[j];
    i = j;
    if (ai >= args.size()) {
      out += "<missing printf argument>";
      continue;
    }
    auto [dt, v] = args[ai++];
    double fv = dt.is_float() ? v.f : double(v.i);
    std::int64_t iv = dt.is_float() ? std::int64_t(v.f) : v.i;
    switch (conv) {
    case 'd': case 'i': std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), (long long)iv); break;
    case 'u': case 'x': case 'X': case 'o':
      std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), (unsigned long long)iv);
      break;
    case 'c': std::snprintf(buf, sizeof buf, (spec + "c").c_str(), int(iv)); break;
    case 'p': std::snprintf(buf, sizeof buf, "%p", reinterpret_cast<void *>(iv)); break;
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
      std::snprintf(buf, sizeof buf, (spec + conv).c_str(), fv);
      break;
    default: std::snprintf(buf, sizeof buf, "<unsupported printf conversion %%%c>", conv);
    }
    out += buf;
  }
  return out;
}

/// printf(format, args...): one line per active thread, in thread order.
struct PrintfE : ENode {
  std::string fmt;
  std::vector<ENode *> args;
  void eval(Context &c, ActiveSet s) override {
    for (auto *a : args) emu::eval(a, c, s);
    std::vector<std::pair<DataType, Slot>> vals(args.size());
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) {
      int t = s.idx[k];
      for (std::size_t i = 0; i < args.size(); ++i) vals[i] = {args[i]->dtype, c.reg(args[i]->dst)[t]};
      std::string line = format_printf(fmt, vals);
      std::fwrite(line.data(), 1, line.size(), stdout);
      d[t].i = std::int64_t(line.size());
    }
    std::fflush(stdout);
  }
};

/// The u8 pointer to the block's dynamic shared memory.
struct DynamicSmemE : ENode {
  void eval(Context &c, ActiveSet s) override {
    Slot *d = c.reg(dst);
    for (int k = 0; k < s.n; ++k) d[s.idx[k]].i = std::int64_t(c.dynamic_smem.begin);
  }
};

/// A call that does nothing on the emulator (syncwarp: lanes already run in lockstep).
struct NopE : ENode {};

} // namespace hidet::backend::emu
