// Laws of the emulator's values (backend/emulator/value.hpp and the nodes that compute on them):
// for every dtype, each binary and unary operation, cast, math intrinsic, atomic and scalar kernel
// argument gives what CUDA C++ gives on the dtype's C type, bit for bit, over edge values and
// random values. The host reference: f16, bf16 and fp8 compute in f32 and round to the dtype;
// integer results wrap; float -> integer truncates and saturates (NaN -> 0); a shift by the
// promoted type's width or more gives 0 (a negative signed value shifted right: -1); signed
// MIN / -1 wraps to MIN and MIN % -1 is 0.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>

#include "hidet/backend/emulator/call_nodes.hpp" // erfinv (internal)
#include "hidet/backend/emulator/program.hpp"
#include "hidet/util/float16.hpp"
#include "test_emulator_kernels.hpp"

using namespace emu_test;
using hidet::backend::Dim3;
using hidet::backend::KernelArg;
using hidet::backend::emu::Program;

namespace {

// ---- host model of each dtype: its storage S and the C type it computes on ------------------
template <class T> struct PlainHost {
  using C = T;
  using S = T;
  static C to_c(S s) { return s; }
  static S to_s(C c) { return c; }
};
struct BoolHost {
  using C = bool;
  using S = std::uint8_t;
  static C to_c(S s) { return s != 0; }
  static S to_s(C c) { return c ? 1 : 0; }
};
template <class Bits, float (*TF)(Bits), Bits (*FF)(float)> struct NarrowHost {
  using C = float;
  using S = Bits;
  static C to_c(S s) { return TF(s); }
  static S to_s(C c) { return FF(c); }
};

template <class F> void with_host(DataType d, F &&f) {
  switch (d.code) {
  case DTypeCode::Bool:
    return f(BoolHost{});
  case DTypeCode::I8:
    return f(PlainHost<std::int8_t>{});
  case DTypeCode::I16:
    return f(PlainHost<std::int16_t>{});
  case DTypeCode::I32:
    return f(PlainHost<std::int32_t>{});
  case DTypeCode::I64:
    return f(PlainHost<std::int64_t>{});
  case DTypeCode::U8:
    return f(PlainHost<std::uint8_t>{});
  case DTypeCode::U16:
    return f(PlainHost<std::uint16_t>{});
  case DTypeCode::U32:
    return f(PlainHost<std::uint32_t>{});
  case DTypeCode::U64:
    return f(PlainHost<std::uint64_t>{});
  case DTypeCode::F16:
    return f(NarrowHost<std::uint16_t, hidet::half_bits_to_float, hidet::float_to_half_bits>{});
  case DTypeCode::BF16:
    return f(NarrowHost<std::uint16_t, hidet::bf16_bits_to_float, hidet::float_to_bf16_bits>{});
  case DTypeCode::F32:
    return f(PlainHost<float>{});
  case DTypeCode::F64:
    return f(PlainHost<double>{});
  case DTypeCode::F8E4M3:
    return f(NarrowHost<std::uint8_t, hidet::f8e4m3_bits_to_float, hidet::float_to_f8e4m3_bits>{});
  case DTypeCode::F8E5M2:
    return f(NarrowHost<std::uint8_t, hidet::f8e5m2_bits_to_float, hidet::float_to_f8e5m2_bits>{});
  }
}

const std::vector<DataType> kAllDtypes = {
    dtypes::boolean, dtypes::i8,  dtypes::i16, dtypes::i32,    dtypes::i64,
    dtypes::u8,      dtypes::u16, dtypes::u32, dtypes::u64,    dtypes::f16,
    dtypes::bf16,    dtypes::f32, dtypes::f64, dtypes::f8e4m3, dtypes::f8e5m2};

/// Edge and random values of host type H, as C values (already representable in the dtype).
template <class H> std::vector<typename H::C> samples(unsigned seed) {
  using C = typename H::C;
  std::vector<C> v;
  std::mt19937_64 g(seed);
  if constexpr (std::is_same_v<C, bool>) {
    v = {false, true};
  } else if constexpr (std::is_integral_v<C>) {
    using L = std::numeric_limits<C>;
    for (std::int64_t x :
         {0, 1, -1, 2, -2, 3, 5, -7, 31, 32, 33, 63, 64, 100, -100, 127, -128, 255, 65535})
      v.push_back(C(x));
    for (C x : {L::min(), L::max(), C(L::min() + 1), C(L::max() - 1), C(L::max() / 2)})
      v.push_back(x);
    for (int i = 0; i < 8; ++i)
      v.push_back(C(g()));
  } else {
    const double inf = std::numeric_limits<double>::infinity();
    for (double x :
         {0.0,   -0.0,  1.0,  -1.0,  0.5,   -0.5,    1.5,     2.5,     -2.5,        3.0,  7.25,
          -7.25, 100.3, 1e3,  448.0, 500.0, 57344.0, 65504.0, 70000.0, -70000.0,    1e-3, 1e-6,
          1e-8,  3e9,   -3e9, 1e20,  -1e20, 1e300,   inf,     -inf,    std::nan("")})
      v.push_back(H::to_c(H::to_s(C(x))));
    std::uniform_real_distribution<double> d(-100, 100);
    for (int i = 0; i < 8; ++i)
      v.push_back(H::to_c(H::to_s(C(d(g)))));
  }
  return v;
}

/// The register value of an integer (what a shift amount reads): sign- or zero-extended.
template <class C> std::uint64_t reg_bits(C v) {
  if constexpr (std::is_same_v<C, bool>)
    return v ? 1 : 0;
  else
    return std::uint64_t(std::int64_t(v));
}

/// CUDA C++ semantics of a binary arithmetic or bitwise operation on C (the reference).
template <class C> C ref_arith(BinaryOp op, C a, C b) {
  using B = BinaryOp;
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
    case B::Add:
      return a + b;
    case B::Sub:
      return a - b;
    case B::Mul:
      return a * b;
    case B::Div:
      return a / b;
    case B::Mod:
      return std::fmod(a, b);
    default:
      break;
    }
  } else {
    using U = std::uint64_t;
    using P = decltype(+a); // integer promotion
    using UP = std::make_unsigned_t<P>;
    const std::uint64_t s = reg_bits(b);
    switch (op) {
    case B::Add:
      return C(U(a) + U(b));
    case B::Sub:
      return C(U(a) - U(b));
    case B::Mul:
      return C(U(a) * U(b));
    case B::Div:
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(U(0) - U(a));
      return C(a / b);
    case B::Mod:
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(0);
      return C(a % b);
    case B::BitAnd:
      return C(U(a) & U(b));
    case B::BitOr:
      return C(U(a) | U(b));
    case B::BitXor:
      return C(U(a) ^ U(b));
    case B::Shl:
      return s >= 8 * sizeof(P) ? C(0) : C(P(UP(P(a)) << s));
    case B::Shr:
      if (s < 8 * sizeof(P)) return C(P(a) >> s);
      if constexpr (std::is_signed_v<C>) return C(a < 0 ? -1 : 0);
      return C(0);
    default:
      break;
    }
  }
  FAIL("no reference for ", std::string(ir::binary_op_symbol(op)));
  return C{};
}

bool ref_compare(BinaryOp op, auto a, auto b) {
  using B = BinaryOp;
  switch (op) {
  case B::Lt:
    return a < b;
  case B::Le:
    return a <= b;
  case B::Gt:
    return a > b;
  case B::Ge:
    return a >= b;
  case B::Eq:
    return a == b;
  case B::Ne:
    return a != b;
  case B::LogicalAnd:
    return a && b;
  case B::LogicalOr:
    return a || b;
  default:
    FAIL("not a comparison");
    return false;
  }
}

/// Whether two stored values agree: the same bits, or both NaN.
template <class H> bool same_value(typename H::S got, typename H::S want) {
  if (std::memcmp(&got, &want, sizeof got) == 0) return true;
  using C = typename H::C;
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(H::to_c(got)) && std::isnan(H::to_c(want));
  return false;
}

std::string show(auto v) {
  if constexpr (std::is_same_v<decltype(v), bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_integral_v<decltype(v)>)
    return std::to_string(std::int64_t(v)) + (std::is_unsigned_v<decltype(v)> ? "u" : "");
  else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", double(v));
    return buf;
  }
}

/// The outputs of an element-wise kernel: c[t] = value(t) in dtype rd, and w[t] = the same value
/// cast to the widest dtype of its kind (i64, u64 or f64). w shows the register itself: a result
/// left unrounded or unwrapped shows there even where the store to c would hide it.
struct Results {
  DataType rd;
  std::vector<std::uint8_t> c;
  std::vector<std::uint64_t> w;
};

DataType widest(DataType d) {
  return d.is_float() ? dtypes::f64 : d == dtypes::u64 ? dtypes::u64 : dtypes::i64;
}

/// Runs `value` over n threads (blocks of 256) with `inputs` bound to `ptrs`.
Results run_elementwise(std::vector<Var> inputs, std::vector<void *> ptrs, int n, DataType rd,
                        const std::function<X(const Var &t)> &value) {
  Results r{rd, std::vector<std::uint8_t>(std::size_t(n) * rd.nbytes()),
            std::vector<std::uint64_t>(std::size_t(n))};
  Var c = tensor(rd, {int32(n)}, "c"), w = tensor(widest(rd), {int32(n)}, "w");
  Var t = scalar(dtypes::i32, "t"), v = scalar(rd, "v");
  inputs.push_back(c), inputs.push_back(w);
  ptrs.push_back(r.c.data()), ptrs.push_back(r.w.data());
  Function f =
      kernel("elementwise", inputs,
             {let(t, bid_x() * 256 + tid_x()),
              when(X(t) < n,
                   seq({let(v, value(t)), store(c, {t}, v), store(w, {t}, cast(v, widest(rd)))}))});
  Program p(make_module({f}));
  std::vector<KernelArg> args;
  for (void *q : ptrs)
    args.push_back(KernelArg::pointer(q));
  p.launch("elementwise", args, Dim3{std::uint32_t((n + 255) / 256), 1, 1}, Dim3{256, 1, 1}, 0);
  return r;
}

/// Empty when element k of `r` holds `want` (a value of host type H, before rounding to the
/// dtype) in c and in w; else what the emulator gave.
template <class H>
std::string mismatch(const Results &r, int k, typename H::C want, bool any_zero = false) {
  using C = typename H::C;
  using S = typename H::S;
  S got, ws = H::to_s(want);
  std::memcpy(&got, r.c.data() + std::size_t(k) * sizeof(S), sizeof(S));
  C exact = H::to_c(ws); // want as the dtype holds it
  std::uint64_t wbits = r.w[std::size_t(k)];
  bool ok_c = same_value<H>(got, ws), ok_w;
  if constexpr (std::is_floating_point_v<C>) {
    double wv;
    std::memcpy(&wv, &wbits, 8);
    const double ev = double(exact);
    ok_w = std::memcmp(&wv, &ev, 8) == 0 || (std::isnan(wv) && std::isnan(ev));
    if (any_zero && wv == 0 && exact == 0 && H::to_c(got) == 0)
      ok_c = ok_w = true; // fmin/fmax(0, -0)
    if (ok_c && ok_w) return {};
    return "c " + show(H::to_c(got)) + ", w " + show(wv);
  } else {
    std::uint64_t want_bits = std::is_same_v<C, std::uint64_t> ? std::uint64_t(exact)
                                                               : std::uint64_t(std::int64_t(exact));
    ok_w = wbits == want_bits;
    if (ok_c && ok_w) return {};
    return "c " + show(H::to_c(got)) + ", w " + show(std::int64_t(wbits));
  }
}

bool is_comparison_op(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge ||
         op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::LogicalAnd ||
         op == BinaryOp::LogicalOr;
}

/// a op b over every pair of samples (pairs dividing an integer by zero left out).
template <class H> void check_binary(DataType d, BinaryOp op) {
  using C = typename H::C;
  using S = typename H::S;
  auto vals = samples<H>(unsigned(d.code) * 31 + unsigned(op));
  std::vector<S> av, bv;
  for (C x : vals)
    for (C y : vals) {
      if (!std::is_floating_point_v<C> && (op == BinaryOp::Div || op == BinaryOp::Mod) && y == C(0))
        continue;
      av.push_back(H::to_s(x)), bv.push_back(H::to_s(y));
    }
  const int n = int(av.size());
  const bool cmp = is_comparison_op(op);
  Var a = tensor(d, {int32(n)}, "a"), b = tensor(d, {int32(n)}, "b");
  Results r = run_elementwise({a, b}, {av.data(), bv.data()}, n, cmp ? dtypes::boolean : d,
                              [&](const Var &t) { return bin(op, at(a, {t}), at(b, {t})); });
  int bad = 0;
  for (int k = 0; k < n && bad < 3; ++k) {
    C x = H::to_c(av[std::size_t(k)]), y = H::to_c(bv[std::size_t(k)]);
    std::string m = cmp ? mismatch<BoolHost>(r, k, ref_compare(op, x, y))
                        : mismatch<H>(r, k, ref_arith<C>(op, x, y));
    if (!m.empty()) {
      ++bad;
      FAIL_CHECK(d, " ", show(x), " ", std::string(ir::binary_op_symbol(op)), " ", show(y),
                 ": emulator ", m, ", reference ",
                 cmp ? show(ref_compare(op, x, y)) : show(ref_arith<C>(op, x, y)));
    }
  }
}

/// The C++ conversion of a value of host type HF to host type HT with the emulator's rules.
template <class HF, class HT> typename HT::C ref_cast(typename HF::C v) {
  using CF = typename HF::C;
  using CT = typename HT::C;
  if constexpr (std::is_same_v<CT, bool>)
    return v != 0;
  else if constexpr (std::is_floating_point_v<CF> && !std::is_floating_point_v<CT>) {
    double x = double(v);
    if (std::isnan(x)) return CT(0);
    x = std::trunc(x);
    if (x <= double(std::numeric_limits<CT>::lowest())) return std::numeric_limits<CT>::lowest();
    if (x >= double(std::numeric_limits<CT>::max())) return std::numeric_limits<CT>::max();
    return CT(x);
  } else {
    return CT(v);
  }
}

template <class HF, class HT> void check_cast(DataType from, DataType to) {
  using SF = typename HF::S;
  std::vector<SF> av;
  for (auto x : samples<HF>(unsigned(from.code) * 17 + unsigned(to.code)))
    av.push_back(HF::to_s(x));
  const int n = int(av.size());
  Var a = tensor(from, {int32(n)}, "a");
  Results r =
      run_elementwise({a}, {av.data()}, n, to, [&](const Var &t) { return cast(at(a, {t}), to); });
  int bad = 0;
  for (int k = 0; k < n && bad < 3; ++k) {
    auto x = HF::to_c(av[std::size_t(k)]);
    auto want = ref_cast<HF, HT>(x);
    if (std::string m = mismatch<HT>(r, k, want); !m.empty()) {
      ++bad;
      FAIL_CHECK(from, " -> ", to, " of ", show(x), ": emulator ", m, ", reference ", show(want));
    }
  }
}

/// op(a[, b[, a]]) for a math intrinsic; ref computes the value in C (before rounding).
template <class H, class R> void check_math(DataType d, Intrinsic op, int nargs, R ref) {
  using C = typename H::C;
  using S = typename H::S;
  auto vals = samples<H>(unsigned(d.code) * 7 + unsigned(op));
  std::vector<S> av, bv;
  for (C x : vals)
    for (C y : (nargs > 1 ? vals : std::vector<C>{C(0)}))
      av.push_back(H::to_s(x)), bv.push_back(H::to_s(y));
  const int n = int(av.size());
  const bool isnan = op == Intrinsic::IsNan;
  const DataType rd = isnan ? dtypes::boolean : d;
  Var a = tensor(d, {int32(n)}, "a"), b = tensor(d, {int32(n)}, "b");
  Results r = run_elementwise({a, b}, {av.data(), bv.data()}, n, rd, [&](const Var &t) {
    std::vector<Expr> args = {at(a, {t})};
    if (nargs > 1) args.push_back(at(b, {t}));
    if (nargs > 2) args.push_back(at(a, {t}));
    return call(op, args, rd);
  });
  int bad = 0;
  for (int k = 0; k < n && bad < 3; ++k) {
    C x = H::to_c(av[std::size_t(k)]), y = H::to_c(bv[std::size_t(k)]);
    std::string m, want;
    if (isnan) {
      bool v = false;
      if constexpr (std::is_floating_point_v<C>) v = std::isnan(x);
      m = mismatch<BoolHost>(r, k, v), want = show(v);
    } else {
      C v = C(ref(x, y, x));
      m = mismatch<H>(r, k, v, op == Intrinsic::Min || op == Intrinsic::Max), want = show(v);
    }
    if (!m.empty()) {
      ++bad;
      FAIL_CHECK(d, " ", ir::intrinsic_name(op), "(", show(x), ", ", show(y), "): emulator ", m,
                 ", reference ", want);
    }
  }
}

} // namespace

TEST_CASE("emulator values: binary operations on every dtype match C++ on the dtype's type") {
  using B = BinaryOp;
  for (DataType d : kAllDtypes) {
    std::vector<B> ops = {B::Add, B::Sub, B::Mul, B::Div, B::Mod, B::Lt,
                          B::Le,  B::Gt,  B::Ge,  B::Eq,  B::Ne};
    if (d.is_integer() || d.is_bool()) ops.insert(ops.end(), {B::BitAnd, B::BitOr, B::BitXor});
    if (d.is_integer()) ops.insert(ops.end(), {B::Shl, B::Shr});
    if (d.is_bool()) ops.insert(ops.end(), {B::LogicalAnd, B::LogicalOr});
    with_host(d, [&]<class H>(H) {
      for (B op : ops)
        check_binary<H>(d, op);
    });
  }
}

TEST_CASE("emulator values: unary operations on every dtype") {
  for (DataType d : kAllDtypes) {
    std::vector<UnaryOp> ops = {UnaryOp::Neg};
    if (d.is_integer()) ops.push_back(UnaryOp::BitNot);
    if (d.is_bool()) ops.push_back(UnaryOp::LogicalNot);
    with_host(d, [&]<class H>(H) {
      using C = typename H::C;
      using S = typename H::S;
      std::vector<S> av;
      for (C x : samples<H>(unsigned(d.code)))
        av.push_back(H::to_s(x));
      const int n = int(av.size());
      for (UnaryOp op : ops) {
        Var a = tensor(d, {int32(n)}, "a");
        Results res = run_elementwise({a}, {av.data()}, n, d, [&](const Var &t) {
          return X(UnaryNode::make(op, at(a, {t})));
        });
        for (int k = 0; k < n; ++k) {
          C x = H::to_c(av[std::size_t(k)]), r;
          if constexpr (std::is_same_v<C, bool>)
            r = op == UnaryOp::LogicalNot ? !x : x;
          else if constexpr (std::is_floating_point_v<C>)
            r = -x;
          else
            r = op == UnaryOp::Neg ? C(std::uint64_t(0) - std::uint64_t(x)) : C(~std::uint64_t(x));
          std::string m = mismatch<H>(res, k, r);
          INFO(d, " op ", int(op), " of ", show(x), ": emulator ", m, ", reference ", show(r));
          CHECK(m.empty());
        }
      }
    });
  }
}

TEST_CASE("emulator values: casts between every pair of dtypes (CUDA conversion rules)") {
  for (DataType from : kAllDtypes)
    for (DataType to : kAllDtypes)
      with_host(from, [&]<class HF>(HF) {
        with_host(to, [&]<class HT>(HT) { check_cast<HF, HT>(from, to); });
      });
}

TEST_CASE("emulator values: math intrinsics on every dtype, rounded to the dtype") {
  using I = Intrinsic;
  for (DataType d : kAllDtypes) {
    with_host(d, [&]<class H>(H) {
      using C = typename H::C;
      if constexpr (std::is_floating_point_v<C>) {
#define HIDET_MATH(E, N, EXPR)                                                                     \
  check_math<H>(d, I::E, N, [](C p, C q, C r) {                                                    \
    (void)q, (void)r;                                                                              \
    return EXPR;                                                                                   \
  })
        HIDET_MATH(Exp, 1, std::exp(p));
        HIDET_MATH(Exp2, 1, std::exp2(p));
        HIDET_MATH(Log, 1, std::log(p));
        HIDET_MATH(Log2, 1, std::log2(p));
        HIDET_MATH(Sqrt, 1, std::sqrt(p));
        HIDET_MATH(Rsqrt, 1, C(1) / std::sqrt(p));
        HIDET_MATH(Sin, 1, std::sin(p));
        HIDET_MATH(Cos, 1, std::cos(p));
        HIDET_MATH(Tanh, 1, std::tanh(p));
        HIDET_MATH(Erf, 1, std::erf(p));
        HIDET_MATH(Pow, 2, std::pow(p, q));
        HIDET_MATH(Abs, 1, std::fabs(p));
        HIDET_MATH(Min, 2, std::fmin(p, q));
        HIDET_MATH(Max, 2, std::fmax(p, q));
        HIDET_MATH(Fma, 3, std::fma(double(p), double(q), double(r)));
        HIDET_MATH(Floor, 1, std::floor(p));
        HIDET_MATH(Ceil, 1, std::ceil(p));
        HIDET_MATH(Round, 1, std::round(p));
        HIDET_MATH(Trunc, 1, std::trunc(p));
        HIDET_MATH(Tan, 1, std::tan(p));
        HIDET_MATH(Asin, 1, std::asin(p));
        HIDET_MATH(Acos, 1, std::acos(p));
        HIDET_MATH(Atan, 1, std::atan(p));
        HIDET_MATH(Atan2, 2, std::atan2(p, q));
        HIDET_MATH(Sinh, 1, std::sinh(p));
        HIDET_MATH(Cosh, 1, std::cosh(p));
        HIDET_MATH(Asinh, 1, std::asinh(p));
        HIDET_MATH(Acosh, 1, std::acosh(p));
        HIDET_MATH(Atanh, 1, std::atanh(p));
        HIDET_MATH(Log1p, 1, std::log1p(p));
        HIDET_MATH(Expm1, 1, std::expm1(p));
        HIDET_MATH(Log10, 1, std::log10(p));
        HIDET_MATH(Fmod, 2, std::fmod(p, q));
        HIDET_MATH(Erfinv, 1, hidet::backend::emu::erfinv(double(p)));
#undef HIDET_MATH
      } else {
        using U = std::uint64_t;
        check_math<H>(d, I::Abs, 1, [](C p, C, C) { return p < C(0) ? C(U(0) - U(p)) : p; });
        check_math<H>(d, I::Min, 2, [](C p, C q, C) { return p < q ? p : q; });
        check_math<H>(d, I::Max, 2, [](C p, C q, C) { return p < q ? q : p; });
      }
      check_math<H>(d, I::IsNan, 1, [](C, C, C) { return C(0); });
    });
  }
}

TEST_CASE("emulator values: atomics on every dtype return the old value and store the new one") {
  using I = Intrinsic;
  for (DataType d : kAllDtypes) {
    with_host(d, [&]<class H>(H) {
      using C = typename H::C;
      using S = typename H::S;
      auto vals = samples<H>(unsigned(d.code) + 5);
      for (I op : {I::AtomicAdd, I::AtomicMin, I::AtomicMax, I::AtomicExch, I::AtomicCas}) {
        std::vector<S> mv, bv;
        for (C x : vals)
          for (C y : vals)
            mv.push_back(H::to_s(x)), bv.push_back(H::to_s(y));
        const int n = int(mv.size());
        const C swap_in = vals[1];
        std::vector<S> m0 = mv;
        Var m = tensor(d, {int32(n)}, "m"), b = tensor(d, {int32(n)}, "b");
        Results res = run_elementwise({m, b}, {mv.data(), bv.data()}, n, d, [&](const Var &t) {
          std::vector<Expr> args = {AddressNode::make(at(m, {t})), at(b, {t})};
          if (op == I::AtomicCas)
            args.push_back(d.is_float() ? ConstantNode::make_float(d, double(swap_in))
                                        : ConstantNode::make_int(d, std::int64_t(swap_in)));
          return call(op, args, d);
        });
        int bad = 0;
        for (int k = 0; k < n && bad < 3; ++k) {
          C x = H::to_c(m0[std::size_t(k)]), v = H::to_c(bv[std::size_t(k)]), r = x;
          switch (op) {
          case I::AtomicAdd:
            if constexpr (std::is_floating_point_v<C>)
              r = x + v;
            else
              r = C(std::uint64_t(x) + std::uint64_t(v));
            break;
          case I::AtomicMin:
            r = v < x ? v : x;
            break;
          case I::AtomicMax:
            r = x < v ? v : x;
            break;
          case I::AtomicExch:
            r = v;
            break;
          default:
            r = x == v ? swap_in : x;
            break;
          }
          std::string m_old = mismatch<H>(res, k, x);
          if (!m_old.empty() || !same_value<H>(mv[std::size_t(k)], H::to_s(r))) {
            ++bad;
            FAIL_CHECK(d, " ", ir::intrinsic_name(op), "(", show(x), ", ", show(v), "): old ",
                       m_old, " new ", show(H::to_c(mv[std::size_t(k)])), ", reference new ",
                       show(r));
          }
        }
      }
    });
  }
}

TEST_CASE("emulator values: scalar kernel arguments of every dtype convert like casts") {
  for (DataType d : kAllDtypes) {
    with_host(d, [&]<class H>(H) {
      using S = typename H::S;
      Var x = scalar(d, "x"), o = tensor(d, {int32(1)}, "o");
      Program p(make_module({kernel("arg", {x, o}, {store(o, {int32(0)}, X(x))})}));
      for (double v :
           {0.0, 1.0, -1.0, 2.75, -2.75, 300.5, -300.5, 7e4, 3e9, -3e9, 1e20, std::nan("")}) {
        S got{};
        auto launch = [&](KernelArg a) {
          p.launch("arg", {a, KernelArg::pointer(&got)}, Dim3{}, Dim3{1, 1, 1}, 0);
          return got;
        };
        INFO(d, " argument ", v);
        // a float argument converts like a cast from f64, an integer one like a cast from i64
        CHECK(same_value<H>(launch(KernelArg::floating(d, v)),
                            H::to_s(ref_cast<PlainHost<double>, H>(v))));
        if (!std::isnan(v) && std::fabs(v) < 1e19) {
          auto i = std::int64_t(v);
          CHECK(same_value<H>(launch(KernelArg::integer(d, i)),
                              H::to_s(ref_cast<PlainHost<std::int64_t>, H>(i))));
        }
      }
    });
  }
}
