// Emulator tests: numerics of kernels against host references (matmul with partial tiles, tiled
// shared-memory matmul, divergent control flow, warp shuffles and votes, atomics, f16/bf16
// rounding, dynamic shared memory).
#include <cmath>
#include <doctest/doctest.h>

#include <random>

#include "hidet/backend/emulator/call_nodes.hpp" // format_printf, Slot (internal)
#include "hidet/backend/emulator/program.hpp"
#include "test_emulator_kernels.hpp"

using namespace emu_test;
using hidet::backend::Dim3;
using hidet::backend::KernelArg;
using hidet::backend::emu::Program;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(-4, 4); // small integers: exact sums
  std::vector<float> v(n);
  for (auto &x : v) x = float(d(g));
  return v;
}

KernelArg ptr(void *p) { return KernelArg::pointer(p); }
KernelArg i32(std::int64_t v) { return KernelArg::integer(hidet::dtypes::i32, v); }

} // namespace

TEST_CASE("emulator: naive matmul with partial tiles matches a host reference") {
  const int M = 33, N = 45, K = 27;
  unsigned seed = 1234;
  auto A = random_floats(M * K, seed), B = random_floats(K * N, seed + 1);
  std::vector<float> C(M * N, -1.0f);
  Program p(make_module({naive_matmul()}));
  p.launch("matmul", {ptr(A.data()), ptr(B.data()), ptr(C.data()), i32(M), i32(N), i32(K)},
           Dim3{(N + 31) / 32, (M + 7) / 8, 1}, Dim3{32, 8, 1}, 0);
  bool nonzero = false;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += double(A[m * K + k]) * B[k * N + n];
      INFO("m=", m, " n=", n, " seed=", seed);
      REQUIRE(C[m * N + n] == doctest::Approx(ref));
      nonzero |= ref != 0;
    }
  CHECK(nonzero);
}

TEST_CASE("emulator: tiled shared-memory matmul with syncthreads, partial tiles") {
  // C = A B with 8x8 tiles staged in shared memory; out-of-range tile entries are zero-filled.
  const int TS = 8;
  Var M = scalar(dtypes::i32, "M"), N = scalar(dtypes::i32, "N"), K = scalar(dtypes::i32, "K");
  Var A = tensor(dtypes::f32, {M, K}, "A"), B = tensor(dtypes::f32, {K, N}, "B"),
      C = tensor(dtypes::f32, {M, N}, "C");
  Var sa = tensor(dtypes::f32, {int32(TS), int32(TS)}, "sa", Scope::Shared);
  Var sb = tensor(dtypes::f32, {int32(TS), int32(TS)}, "sb", Scope::Shared);
  Var i = scalar(dtypes::i32, "i"), j = scalar(dtypes::i32, "j"), k0 = scalar(dtypes::i32, "k0"),
      kk = scalar(dtypes::i32, "kk"), acc = scalar(dtypes::f32, "acc");
  X ty = tid_y(), tx = tid_x();
  auto tiles = X(K) + (TS - 1);
  Stmt body = seq({
      when(X(i) < M && (X(k0) * TS + tx) < K, store(sa, {ty, tx}, at(A, {i, X(k0) * TS + tx})),
           store(sa, {ty, tx}, f32(0))),
      when((X(k0) * TS + ty) < K && X(j) < N, store(sb, {ty, tx}, at(B, {X(k0) * TS + ty, j})),
           store(sb, {ty, tx}, f32(0))),
      barrier(),
      loop(kk, 0, TS, set(acc, X(acc) + at(sa, {ty, kk}) * at(sb, {kk, tx}))),
      barrier(),
  });
  Function f = kernel("tiled", {A, B, C, M, N, K},
                      {decl(sa), decl(sb), let(i, bid_y() * TS + ty), let(j, bid_x() * TS + tx),
                       let(acc, f32(0)), loop(k0, 0, tiles / TS, body),
                       when(X(i) < M && X(j) < N, store(C, {i, j}, acc))});
  const int m = 33, n = 45, kd = 27;
  unsigned seed = 99;
  auto a = random_floats(m * kd, seed), b = random_floats(kd * n, seed + 1);
  std::vector<float> c(m * n, -7.0f);
  Program p(make_module({f}));
  setenv("HIDET_EMULATOR_RACECHECK", "1", 1); // a correct kernel passes the race check
  p.launch("tiled", {ptr(a.data()), ptr(b.data()), ptr(c.data()), i32(m), i32(n), i32(kd)},
           Dim3{(n + TS - 1) / TS, (m + TS - 1) / TS, 1}, Dim3{TS, TS, 1}, 0);
  unsetenv("HIDET_EMULATOR_RACECHECK");
  for (int r = 0; r < m; ++r)
    for (int q = 0; q < n; ++q) {
      double ref = 0;
      for (int x = 0; x < kd; ++x) ref += double(a[r * kd + x]) * b[x * n + q];
      INFO("r=", r, " q=", q, " seed=", seed);
      REQUIRE(c[r * n + q] == doctest::Approx(ref));
    }
}

TEST_CASE("emulator: divergent loops with break, continue, while and early return") {
  // t % 5 == 0: out = -1 and return. Else acc = sum of i in [0, t) with i % 3 != 0, stopping at
  // i > 20 (break); then while (acc % 4 != 0) acc += 1.
  Var out = tensor(dtypes::i32, {int32(64)}, "out");
  Var t = scalar(dtypes::i32, "t"), i = scalar(dtypes::i32, "i"), acc = scalar(dtypes::i32, "acc");
  Function f = kernel(
      "divergent", {out},
      {let(t, tid_x()),
       when(X(t) % 5 == 0, seq({store(out, {t}, -1), ReturnStmtNode::make()})),
       let(acc, 0),
       loop(i, 0, t,
            seq({when(X(i) % 3 == 0, ContinueStmtNode::make()),
                 when(X(20) < i, BreakStmtNode::make()), set(acc, X(acc) + i)})),
       WhileStmtNode::make(bin(BinaryOp::Ne, X(acc) % 4, 0), set(acc, X(acc) + 1)),
       store(out, {t}, acc)});
  std::vector<std::int32_t> o(64, 12345);
  Program p(make_module({f}));
  p.launch("divergent", {ptr(o.data())}, Dim3{}, Dim3{64, 1, 1}, 0);
  for (int tt = 0; tt < 64; ++tt) {
    int ref;
    if (tt % 5 == 0) ref = -1;
    else {
      ref = 0;
      for (int q = 0; q < tt; ++q) {
        if (q % 3 == 0) continue;
        if (q > 20) break;
        ref += q;
      }
      while (ref % 4 != 0) ++ref;
    }
    INFO("thread ", tt);
    CHECK(o[tt] == ref);
  }
}

TEST_CASE("emulator: warp shuffle reductions and votes") {
  // two full warps
  const int T = 64;
  Var in = tensor(dtypes::i32, {int32(T)}, "in"), sums = tensor(dtypes::i32, {int32(T)}, "sums"),
      xsum = tensor(dtypes::i32, {int32(T)}, "xsum"), votes = tensor(dtypes::u32, {int32(T)}, "votes"),
      bc = tensor(dtypes::i32, {int32(T)}, "bc");
  Var t = scalar(dtypes::i32, "t"), v = scalar(dtypes::i32, "v"), w = scalar(dtypes::i32, "w");
  X full = ConstantNode::make_int(dtypes::u32, 0xffffffffll);
  auto shfl = [&](Intrinsic op, X val, X lane, int width = 32) {
    return call(op, {full, val, lane, int32(width)}, dtypes::i32);
  };
  std::vector<Stmt> body = {let(t, tid_x()), let(v, at(in, {t})), let(w, at(in, {t}))};
  for (int off = 16; off >= 1; off /= 2) {
    body.push_back(set(v, X(v) + shfl(Intrinsic::ShflDownSync, v, off)));
    body.push_back(set(w, X(w) + shfl(Intrinsic::ShflXorSync, w, off)));
  }
  X pos = bin(BinaryOp::Gt, at(in, {t}), 0);
  X any = call(Intrinsic::AnySync, {full, bin(BinaryOp::Gt, at(in, {t}), 8)}, dtypes::boolean);
  X all = call(Intrinsic::AllSync, {full, pos}, dtypes::boolean);
  X ballot = call(Intrinsic::BallotSync, {full, pos}, dtypes::u32);
  body.push_back(store(sums, {t}, v));
  body.push_back(store(xsum, {t}, w));
  body.push_back(store(votes, {t}, ballot));
  body.push_back(store(bc, {t}, cast(any, dtypes::i32) * 2 + cast(all, dtypes::i32) +
                                  shfl(Intrinsic::ShflSync, t, 3, 8) * 4 +
                                  shfl(Intrinsic::ShflUpSync, t, 1, 16) * 1000));
  Function f = kernel("warp", {in, sums, xsum, votes, bc}, body);
  std::vector<std::int32_t> input(T), s(T), xs(T), b(T);
  std::vector<std::uint32_t> vo(T);
  std::mt19937 g(7);
  for (int q = 0; q < T; ++q) input[q] = int(g() % 10) - (q < 32 ? 2 : -1); // warp 1: all > 0
  Program p(make_module({f}));
  p.launch("warp", {ptr(input.data()), ptr(s.data()), ptr(xs.data()), ptr(vo.data()), ptr(b.data())},
           Dim3{}, Dim3{T, 1, 1}, 0);
  for (int warp = 0; warp < T / 32; ++warp) {
    int total = 0, any = 0, all = 1;
    std::uint32_t bal = 0;
    for (int l = 0; l < 32; ++l) {
      int x = input[warp * 32 + l];
      total += x, any |= x > 8, all &= x > 0;
      if (x > 0) bal |= 1u << l;
    }
    INFO("warp ", warp);
    CHECK(s[warp * 32] == total);
    for (int l = 0; l < 32; ++l) {
      int tt = warp * 32 + l;
      INFO("lane ", l);
      CHECK(xs[tt] == total);
      CHECK(vo[tt] == bal);
      int src3 = (l & ~7) + 3, up = (l % 16) >= 1 ? tt - 1 : tt;
      CHECK(b[tt] == any * 2 + all + (warp * 32 + src3) * 4 + up * 1000);
    }
  }
}

TEST_CASE("emulator: atomics (histogram, max, f16 add, cas)") {
  const int T = 256;
  Var in = tensor(dtypes::i32, {int32(2 * T)}, "in"), hist = tensor(dtypes::i32, {int32(16)}, "hist"),
      mx = tensor(dtypes::i32, {int32(1)}, "mx"), hs = tensor(dtypes::f16, {int32(1)}, "hs"),
      fs = tensor(dtypes::f32, {int32(1)}, "fs"), cas = tensor(dtypes::u32, {int32(1)}, "cas");
  Var t = scalar(dtypes::i32, "t");
  auto addr = [](const Var &v, X i) { return X(AddressNode::make(at(v, {i}))); };
  Function f = kernel(
      "atomics", {in, hist, mx, hs, fs, cas},
      {let(t, bid_x() * T + tid_x()),
       eval(call(Intrinsic::AtomicAdd, {addr(hist, X(at(in, {t})) % 16), int32(1)}, dtypes::i32)),
       eval(call(Intrinsic::AtomicMax, {addr(mx, 0), at(in, {t})}, dtypes::i32)),
       eval(call(Intrinsic::AtomicAdd, {addr(hs, 0), ConstantNode::make_float(dtypes::f16, 0.1)}, dtypes::f16)),
       eval(call(Intrinsic::AtomicAdd, {addr(fs, 0), f32(1)}, dtypes::f32)),
       // cas(cas, 0 -> t+1): exactly the first thread in order wins
       eval(call(Intrinsic::AtomicCas, {addr(cas, 0), ConstantNode::make_int(dtypes::u32, 0),
                                        cast(X(t) + 1, dtypes::u32)}, dtypes::u32))});
  std::vector<std::int32_t> input(T * 2), h(16, 0), m(1, -1000);
  hidet::float16 hsum(0.0f);
  float fsum = 0;
  std::uint32_t c = 0;
  std::mt19937 g(3);
  for (auto &x : input) x = int(g() % 1000);
  Program p(make_module({f}));
  p.launch("atomics", {ptr(input.data()), ptr(h.data()), ptr(m.data()), ptr(&hsum), ptr(&fsum), ptr(&c)},
           Dim3{2, 1, 1}, Dim3{T, 1, 1}, 0);
  std::vector<int> ref(16, 0);
  for (int x : input) ref[x % 16]++;
  CHECK(h == ref);
  CHECK(m[0] == *std::max_element(input.begin(), input.end()));
  CHECK(fsum == float(2 * T));
  // f16: 512 additions of f16(0.1), rounded to f16 after each one (stalls well below 51.2)
  float href = 0, tenth = float(hidet::float16(0.1f));
  for (int q = 0; q < 2 * T; ++q) href = float(hidet::float16(href + tenth));
  CHECK(href < 50.0f);
  CHECK(float(hsum) == href);
  CHECK(c == 1u);
}

TEST_CASE("emulator: f16 and bf16 arithmetic rounds like the GPU (fma contraction, then each op), bit-exact") {
  const int T = 256;
  for (DataType d : {dtypes::f16, dtypes::bf16}) {
    Var a = tensor(d, {int32(T)}, "a"), b = tensor(d, {int32(T)}, "b"), o = tensor(d, {int32(T)}, "o"),
        q = tensor(d, {int32(T)}, "q");
    Var t = scalar(dtypes::i32, "t");
    // o = (a * b + a) / b ; q = half(f32(a) * 3.3f)
    Function f = kernel("halves", {a, b, o, q},
                        {let(t, tid_x()),
                         store(o, {t}, (at(a, {t}) * at(b, {t}) + at(a, {t})) / at(b, {t})),
                         store(q, {t}, cast(cast(at(a, {t}), dtypes::f32) * f32(3.3), d))});
    std::vector<std::uint16_t> av(T), bv(T), ov(T), qv(T);
    std::mt19937 g(11);
    std::uniform_real_distribution<float> dist(-3, 3);
    auto to_bits = [&](float x) { return d == dtypes::f16 ? hidet::float_to_half_bits(x) : hidet::float_to_bf16_bits(x); };
    auto to_f = [&](std::uint16_t x) { return d == dtypes::f16 ? hidet::half_bits_to_float(x) : hidet::bf16_bits_to_float(x); };
    auto rnd = [&](float x) { return to_f(to_bits(x)); };
    for (int k = 0; k < T; ++k) av[k] = to_bits(dist(g)), bv[k] = to_bits(dist(g) + 5);
    Program p(make_module({f}));
    p.launch("halves", {ptr(av.data()), ptr(bv.data()), ptr(ov.data()), ptr(qv.data())}, Dim3{}, Dim3{T, 1, 1}, 0);
    for (int k = 0; k < T; ++k) {
      float x = to_f(av[k]), y = to_f(bv[k]);
      // a * b + a is contracted into one fma (CUDA's -fmad=true): a single rounding; / rounds again.
      float ref = rnd(rnd(float(std::fma(double(x), double(y), double(x)))) / y);
      INFO(d, " k=", k);
      CHECK(ov[k] == to_bits(ref));
      CHECK(qv[k] == to_bits(float(x) * 3.3f));
    }
  }
}

TEST_CASE("emulator: dynamic shared memory as a view, reversed through a barrier") {
  const int T = 128;
  Var in = tensor(dtypes::f32, {int32(T)}, "in"), out = tensor(dtypes::f32, {int32(T)}, "out");
  Var buf = tensor(dtypes::f32, {int32(T)}, "buf", Scope::Shared);
  Var t = scalar(dtypes::i32, "t");
  Expr dynp = CallNode::make_intrinsic(Intrinsic::DynamicSharedMemory, {}, pointer_type(scalar_type(dtypes::u8)));
  Expr fptr = CastNode::make(dynp, pointer_type(scalar_type(dtypes::f32)));
  Function f = kernel("reverse", {in, out},
                      {let(buf, fptr), let(t, tid_x()), store(buf, {t}, at(in, {t})), barrier(),
                       store(out, {t}, at(buf, {X(T - 1) - t}))});
  std::vector<float> a = random_floats(T, 5), o(T, 0);
  Program p(make_module({f}));
  p.launch("reverse", {ptr(a.data()), ptr(o.data())}, Dim3{}, Dim3{T, 1, 1}, T * sizeof(float));
  for (int k = 0; k < T; ++k) CHECK(o[k] == a[T - 1 - k]);
}

TEST_CASE("emulator: device functions, register tensors, integer wrap and casts") {
  // sq(x) = x * x as a device function; a register tensor of 4 per thread; i8 wraps; float->int
  // saturates.
  Var x = scalar(dtypes::i32, "x");
  Function sq = make_function("sq", {x}, ReturnStmtNode::make(X(x) * x), scalar_type(dtypes::i32),
                              FuncKind::Device);
  const int T = 32;
  Var out = tensor(dtypes::i32, {int32(T)}, "out"), w = tensor(dtypes::i8, {int32(T)}, "w"),
      s = tensor(dtypes::i32, {int32(T)}, "s");
  Var r = tensor(dtypes::i32, {int32(4)}, "r", Scope::Register);
  Var t = scalar(dtypes::i32, "t"), i = scalar(dtypes::i32, "i"), acc = scalar(dtypes::i32, "acc");
  X sqc = X(CallNode::make_func("sq", {Expr(X(t) + 0)}, scalar_type(dtypes::i32)));
  Function f = kernel(
      "misc", {out, w, s},
      {let(t, tid_x()), decl(r), loop(i, 0, 4, store(r, {i}, X(t) + i)), let(acc, 0),
       loop(i, 0, 4, set(acc, X(acc) + at(r, {i}))), store(out, {t}, X(acc) + sqc),
       store(w, {t}, cast(X(t) * 9, dtypes::i8) + ConstantNode::make_int(dtypes::i8, 100)),
       store(s, {t}, cast(cast(X(t) - 16, dtypes::f32) * f32(3e8), dtypes::i32))});
  std::vector<std::int32_t> o(T), sv(T);
  std::vector<std::int8_t> wv(T);
  Program p(make_module({sq, f}));
  p.launch("misc", {ptr(o.data()), ptr(wv.data()), ptr(sv.data())}, Dim3{}, Dim3{T, 1, 1}, 0);
  for (int k = 0; k < T; ++k) {
    INFO("k=", k);
    CHECK(o[k] == 4 * k + 6 + k * k);
    CHECK(wv[k] == std::int8_t(std::int8_t(k * 9) + 100));
    double v = double(float(k - 16) * 3e8f);
    std::int32_t ref = v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : std::int32_t(v);
    CHECK(sv[k] == ref);
  }
}

TEST_CASE("emulator: printf formats with C semantics, one line per active thread") {
  using hidet::backend::emu::format_printf;
  using hidet::backend::emu::Slot;
  Slot i{-42}, u{255};
  Slot f;
  f.f = 1.5;
  CHECK(format_printf("t=%d x=%04x f=%.2f %% %u\n", {{dtypes::i32, i}, {dtypes::u32, u},
                                                     {dtypes::f32, f}, {dtypes::u32, u}}) ==
        "t=-42 x=00ff f=1.50 % 255\n");
  CHECK(format_printf("%lld %g", {{dtypes::i64, i}, {dtypes::f64, f}}) == "-42 1.5");
  CHECK(format_printf("%d", {}) == "<missing printf argument>");
  // a kernel printing from two of four threads runs (output goes to stdout)
  Var t = scalar(dtypes::i32, "t");
  X pr = CallNode::make_intrinsic(Intrinsic::Printf, {Expr(X(t) * 10)}, scalar_type(dtypes::i32), {},
                                  "emulator printf from thread %d\n");
  Function fk = kernel("printer", {}, {let(t, tid_x()), when(X(t) % 2 == 0, eval(pr))});
  Program p(make_module({fk}));
  CHECK_NOTHROW(p.launch("printer", {}, Dim3{}, Dim3{4, 1, 1}, 0));
}
