// Codegen text tests on hand-built lowered IR: exact lines for small kernels, every intrinsic's
// spelling, casts, constants, #line directives, name uniquing and user errors.
#include <doctest/doctest.h>

#include "codegen_test_kernels.hpp"
#include "hidet/backend/codegen.hpp"

using namespace hidet;
using namespace hidet::ir;
using namespace hidet::test_kernels;
using hidet::backend::generate_cuda;

namespace {

bool has(const std::string &s, const std::string &sub) { return s.find(sub) != std::string::npos; }
int count(const std::string &s, const std::string &sub) {
  int n = 0;
  for (auto p = s.find(sub); p != std::string::npos; p = s.find(sub, p + 1))
    ++n;
  return n;
}

/// A kernel `k(params)` with the given body and a 1-D block of 128 threads.
Module kernel(std::vector<Var> params, std::vector<Stmt> body, std::string name = "k") {
  FuncAttrs a;
  a.has_grid = a.has_block = true;
  a.block_dim = {c32(128), Expr(), Expr()};
  return make_module({make_function(name, std::move(params), seq(std::move(body)), void_type(),
                                    FuncKind::Kernel, a)});
}
Var scalar(DataType d, const char *hint) { return make_var(scalar_type(d), hint); }
Var tensor(DataType d, std::vector<Expr> shape, const char *hint, Scope s = Scope::Global) {
  return make_var(TensorTypeNode::make(d, std::move(shape), s), hint);
}
/// The code of a kernel that stores `e` into a one-element buffer of e's dtype.
std::string code_of(Expr e, std::vector<Var> extra = {}) {
  Var out = tensor(dtype_of(e->type), {c32(1)}, "out");
  extra.insert(extra.begin(), out);
  return generate_cuda(kernel(extra, {BufferStoreStmtNode::make(out, {c32(0)}, e)})).code;
}

} // namespace

TEST_CASE("naive matmul: signature, indexing, #line directives, no f16 headers") {
  auto src = generate_cuda(naive_matmul());
  REQUIRE(src.kernels == std::vector<std::string>{"matmul"});
  const std::string &c = src.code;
  CHECK(has(c,
            "extern \"C\" __global__ void __launch_bounds__(256) matmul(float * __restrict__ A, "
            "float * __restrict__ B, float * __restrict__ C, int32_t M, int32_t N, int32_t K) {"));
  CHECK(has(c, "  int32_t i = (((int)blockIdx.y * 16) + (int)threadIdx.y);\n"));
  CHECK(has(c, "  if (((i < M) && (j < N))) {\n"));
  CHECK(has(c, "    float acc = 0.0f;\n"));
  CHECK(has(c, "    for (int32_t k = 0; k < K; k += 1) {\n"));
  CHECK(has(c, "      acc = (acc + (A[((i * K) + k)] * B[((k * N) + j)]));\n"));
  CHECK(has(c, "    C[((i * N) + j)] = acc;\n"));
  CHECK(has(c, "#line 10 \"matmul.cpp\"\nextern \"C\""));
  // Every kernel first waits for the kernel before it (programmatic dependent launch), on the
  // signature's line; the prelude defines the wait for sm_90 on and as nothing before.
  CHECK(has(c, "int32_t K) { HIDET_GRID_DEPENDENCY_SYNC();\n"));
  CHECK(has(c, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\nstatic __device__ __forceinline__ void "
               "hidet_grid_dependency_sync() {\n  asm volatile(\"griddepcontrol.wait;\""));
  // then a grid of at most half as many blocks as the GPU has multiprocessors lets the next
  // kernel launch at once (HIDET_PDL_TRIGGER=0: never)
  CHECK(has(c, "if ((unsigned long long)gridDim.x * gridDim.y * gridDim.z * 2 <= sms) asm volatile(\"griddepcontrol.launch_dependents;"));
  CHECK(has(c, "#define HIDET_GRID_DEPENDENCY_SYNC() hidet_grid_dependency_sync()\n#else\n#define HIDET_GRID_DEPENDENCY_SYNC()\n#endif"));
  // Statements on consecutive lines 11..16 follow the compiler's own line count: one directive.
  // The closing brace of the loop occupies line 17, so line 17's store needs a new directive.
  CHECK(count(c, "#line ") == 2);
  CHECK(has(c, "#line 17 \"matmul.cpp\"\n    C[((i * N) + j)] = acc;"));
  CHECK_FALSE(has(c, "cuda_fp16.h"));
  CHECK_FALSE(has(c, "cuda_bf16.h"));
  CHECK_FALSE(has(c, "hidet_dynamic_smem"));
  CHECK(has(c, "typedef long long int64_t;"));
  CHECK_FALSE(has(c, "#include <std"));
}

TEST_CASE("#line directives follow the compiler's line count and escape file names") {
  Var out = tensor(dtypes::i32, {c32(4)}, "out");
  const char *f = "dir \"q\"\\a.cpp";
  auto st = [&](int i, std::uint32_t line) {
    return BufferStoreStmtNode::make(out, {c32(i)}, c32(i), SourceLoc(f, line));
  };
  // Two statements on line 5 (the second would otherwise be counted as line 6), then line 6,
  // then a statement without a location, then line 30.
  auto c =
      generate_cuda(kernel({out}, {st(0, 5), st(1, 5), st(2, 6),
                                   BufferStoreStmtNode::make(out, {c32(3)}, c32(3)), st(3, 30)}))
          .code;
  CHECK(has(
      c, "#line 5 \"dir \\\"q\\\"\\\\a.cpp\"\n  out[0] = 0;\n#line 5 \"dir \\\"q\\\"\\\\a.cpp\"\n"
         "  out[1] = 1;\n  out[2] = 2;\n  out[3] = 3;\n#line 30 "));
  CHECK(count(c, "#line ") == 3);
}

TEST_CASE("shared memory, __syncthreads and launch bounds with min blocks") {
  auto c = generate_cuda(shared_transpose()).code;
  CHECK(has(c, "extern \"C\" __global__ void __launch_bounds__(256, 2) transpose("));
  CHECK(has(c, "  __shared__ __align__(16) float tile[272];\n"));
  CHECK(has(c,
            "  tile[(((int)threadIdx.y * 17) + (int)threadIdx.x)] = in[(((int)threadIdx.y * 16) + "
            "(int)threadIdx.x)];\n  __syncthreads();\n"));
  CHECK(has(c, "out[(((int)threadIdx.x * 16) + (int)threadIdx.y)] = tile["));
}

TEST_CASE("no launch bounds when the block size is symbolic; register tensors; views") {
  Var n = scalar(dtypes::i32, "n");
  Var p = tensor(dtypes::f32, {n}, "p");
  Var reg = tensor(dtypes::f32, {c32(4), c32(2)}, "reg", Scope::Register);
  Var view = tensor(dtypes::f32, {c32(8)}, "view");
  FuncAttrs a;
  a.has_block = true;
  a.block_dim = {n, Expr(), Expr()};
  Stmt body = seq(
      {DeclareStmtNode::make(reg),
       DeclareStmtNode::make(view, BinaryNode::make(BinaryOp::Add, AddressNode::make(p), c32(8))),
       BufferStoreStmtNode::make(reg, {c32(3), c32(1)}, TensorElementNode::make(view, {c32(2)}))});
  auto c = generate_cuda(
               make_module({make_function("k", {p, n}, body, void_type(), FuncKind::Kernel, a)}))
               .code;
  CHECK(has(c, "extern \"C\" __global__ void k(float * __restrict__ p, int32_t n) {"));
  CHECK(has(c, "  __align__(16) float reg[8];\n"));
  CHECK(has(c, "  float *view = (float *)((p + 8));\n"));
  CHECK(has(c, "  reg[7] = view[2];\n"));
}

TEST_CASE("variable names: unique per function, valid, never reserved") {
  std::vector<Var> vars = {
      scalar(dtypes::i32, "i"),     scalar(dtypes::i32, "i"),         scalar(dtypes::i32, "i_1"),
      scalar(dtypes::i32, "int"),   scalar(dtypes::i32, "threadIdx"), scalar(dtypes::i32, "2x"),
      scalar(dtypes::i32, "a.b c"), scalar(dtypes::i32, "__x"),       scalar(dtypes::i32, ""),
      scalar(dtypes::i32, "expf"),  scalar(dtypes::i32, "k")};
  std::vector<Stmt> body;
  for (auto &v : vars)
    body.push_back(DeclareStmtNode::make(v, c32(1)));
  auto c = generate_cuda(kernel({}, body)).code;
  for (const char *n :
       {"int32_t i = 1;", "int32_t i_1 = 1;", "int32_t i_1_1 = 1;", "int32_t int_ = 1;",
        "int32_t threadIdx_ = 1;", "int32_t v2x = 1;", "int32_t a_b_c = 1;", "int32_t v__x = 1;",
        "int32_t v = 1;", "int32_t expf_ = 1;", "int32_t k_1 = 1;"}) // "k" is the kernel's name
    CHECK_MESSAGE(has(c, n), n);
}

TEST_CASE("math intrinsics per dtype") {
  auto one = [&](Intrinsic op, DataType d, int nargs = 1) {
    Var x = scalar(d, "x");
    std::vector<Expr> args(nargs, x);
    return code_of(call(op, args, op == Intrinsic::IsNan ? dtypes::boolean : d), {x});
  };
  CHECK(has(one(Intrinsic::Exp, dtypes::f32), "out[0] = expf(x);"));
  CHECK(has(one(Intrinsic::Rsqrt, dtypes::f64), "out[0] = rsqrt(x);"));
  CHECK(has(one(Intrinsic::Fma, dtypes::f32, 3), "out[0] = fmaf(x, x, x);"));
  CHECK(has(one(Intrinsic::Min, dtypes::f32, 2), "out[0] = fminf(x, x);"));
  CHECK(has(one(Intrinsic::IsNan, dtypes::f32), "out[0] = isnan(x);"));
  CHECK(has(one(Intrinsic::Abs, dtypes::f64), "out[0] = fabs(x);"));
  // exp of 16-bit floats: the fast f32 exp, rounded; other functions keep the native half ones
  CHECK(has(one(Intrinsic::Exp, dtypes::f16), "out[0] = __float2half_rn(hidet_exp_ftz(__half2float(x)));"));
  CHECK(has(one(Intrinsic::Exp, dtypes::bf16), "out[0] = __float2bfloat16_rn(hidet_exp_ftz(__bfloat162float(x)));"));
  std::string h = one(Intrinsic::Log, dtypes::f16);
  CHECK(has(h, "out[0] = hlog(x);"));
  CHECK(has(h, "#include <cuda_fp16.h>"));
  CHECK_FALSE(has(h, "cuda_bf16.h"));
  std::string b = one(Intrinsic::Tanh, dtypes::bf16);
  CHECK(has(b, "out[0] = htanh(x);"));
  CHECK(has(b, "#include <cuda_bf16.h>\ntypedef __nv_bfloat16 bfloat16;"));
  CHECK(has(one(Intrinsic::Erf, dtypes::f16), "out[0] = __float2half_rn(erff(__half2float(x)));"));
  CHECK(has(one(Intrinsic::Pow, dtypes::bf16, 2),
            "out[0] = __float2bfloat16_rn(powf(__bfloat162float(x), __bfloat162float(x)));"));
  CHECK(has(one(Intrinsic::Round, dtypes::f16), "__float2half_rn(roundf(__half2float(x)))"));
  CHECK(has(one(Intrinsic::Tan, dtypes::f32), "out[0] = tanf(x);"));
  CHECK(has(one(Intrinsic::Erfinv, dtypes::f64), "out[0] = erfinv(x);"));
  // erfc: the branch-free helper in f32 (halves through f32), defined once; f64 the library's
  std::string ec = one(Intrinsic::Erfc, dtypes::f16);
  CHECK(has(ec, "out[0] = __float2half_rn(hidet_erfc(__half2float(x)));"));
  CHECK(has(ec, "static __device__ __forceinline__ float hidet_erfc(float z)"));
  CHECK(has(one(Intrinsic::Erfc, dtypes::f32), "out[0] = hidet_erfc(x);"));
  CHECK(has(one(Intrinsic::Erfc, dtypes::f64), "out[0] = erfc(x);"));
  CHECK_FALSE(has(one(Intrinsic::Erfc, dtypes::f64), "hidet_erfc"));
  CHECK(has(one(Intrinsic::Atan2, dtypes::f32, 2), "out[0] = atan2f(x, x);"));
  CHECK(has(one(Intrinsic::Fmod, dtypes::bf16, 2),
            "out[0] = __float2bfloat16_rn(fmodf(__bfloat162float(x), __bfloat162float(x)));"));
  CHECK(has(one(Intrinsic::Log1p, dtypes::f16),
            "out[0] = __float2half_rn(log1pf(__half2float(x)));"));
  CHECK(has(one(Intrinsic::Trunc, dtypes::bf16), "out[0] = htrunc(x);"));
  CHECK(has(one(Intrinsic::Max, dtypes::f16, 2), "out[0] = __hmax(x, x);"));
  CHECK(has(one(Intrinsic::IsNan, dtypes::bf16), "out[0] = __hisnan(x);"));
  CHECK(has(one(Intrinsic::Abs, dtypes::i32), "out[0] = abs(x);"));
  CHECK(has(one(Intrinsic::Abs, dtypes::i64), "out[0] = llabs(x);"));
  CHECK(has(one(Intrinsic::Abs, dtypes::u32), "out[0] = x;"));
  CHECK(has(one(Intrinsic::Max, dtypes::u64, 2), "out[0] = max(x, x);"));
  CHECK(has(one(Intrinsic::Min, dtypes::i8, 2), "out[0] = ((int8_t)min((int)(x), (int)(x)));"));
  CHECK_THROWS_WITH_AS(one(Intrinsic::Exp, dtypes::i32), doctest::Contains("intrinsic exp on i32"),
                       DSLError);
}

TEST_CASE("barriers, atomics, shuffles, votes, printf, dynamic shared memory, asm, assert") {
  auto c = generate_cuda(every_intrinsic()).code;
  CHECK(has(c, "  __syncthreads();\n"));
  CHECK(has(c, "  __syncwarp(4294967295u);\n"));
  CHECK(has(c, "buf_f32[20] = atomicAdd((&buf_f32[4]), buf_f32[5]);"));
  CHECK(has(c, "buf_f32[21] = hidet_atomic_rmw<float, uint32_t>((&buf_f32[4]), buf_f32[5], 0);"));
  CHECK(has(c, "buf_i64[20] = ((int64_t)atomicAdd((unsigned long long *)((&buf_i64[4])), "
               "(unsigned long long)(buf_i64[5])));"));
  CHECK(has(c, "buf_u32[24] = atomicCAS((&buf_u32[4]), buf_u32[5], buf_u32[6]);"));
  CHECK(has(c, "buf_f16[24] = __ushort_as_half(atomicCAS((unsigned short *)((&buf_f16[4])), "
               "__half_as_ushort(buf_f16[5]), __half_as_ushort(buf_f16[6])));"));
  CHECK(has(
      c, "template <class T, class Bits>\nstatic __device__ __forceinline__ T hidet_atomic_rmw"));
  CHECK(has(c, "buf_f32[30] = __shfl_sync(4294967295u, buf_f32[8], 1, 32);"));
  CHECK(has(c, "buf_f32[34] = __shfl_xor_sync(4294967295u, buf_f32[8], 2);"));
  CHECK(has(c, "buf_i8[31] = ((int8_t)__shfl_up_sync(4294967295u, (int)(buf_i8[8]), 1, 32));"));
  CHECK(has(c, "buf_bool[1] = ((bool)__any_sync(4294967295u, buf_bool[0]));"));
  CHECK(has(c, "buf_u32[9] = ((uint32_t)__ballot_sync(4294967295u, buf_bool[0]));"));
  CHECK(has(c,
            "printf(\"h=%f b=%f f=%f i=%lld \\\"100%%\\\"\\\\ \\t\\n\", "
            "(double)__half2float(buf_f16[0]), (double)__bfloat162float(buf_bf16[0]), buf_f32[0], "
            "buf_i64[0]);"));
  CHECK(has(c, "extern __shared__ __align__(1024) uint8_t hidet_dynamic_smem[];"));
  CHECK(has(c, "float *smem = (float *)(hidet_dynamic_smem);"));
  CHECK(has(c, "asm volatile(\"mov.u32 %0, %1;\" : \"=r\"(r) : \"r\"(buf_u32[0]) : \"memory\");"));
  CHECK(has(c, "if (!((buf_i32[0] < 100))) {"));
  CHECK(has(c, "\"user.cpp:77\", \"every_intrinsic\""));
  CHECK(has(c, "\"value \\\"too\\\" large: 100%\");\n    __trap();"));
  // The device function is emitted before its caller.
  auto dev =
      c.find("static __device__ __forceinline__ float square(float a) {\n  return (a * a);\n}");
  REQUIRE(dev != std::string::npos);
  CHECK(dev < c.find("every_intrinsic("));
  CHECK(has(c, "buf_f32[0] = square(buf_f32[1]);"));
}

TEST_CASE("casts between dtypes") {
  Var h = scalar(dtypes::f16, "h"), b = scalar(dtypes::bf16, "b"), f = scalar(dtypes::f32, "f"),
      i = scalar(dtypes::i32, "i"), q = scalar(dtypes::boolean, "q"), d = scalar(dtypes::f64, "d");
  auto cast_code = [&](Var x, DataType to) {
    return code_of(CastNode::make(x, scalar_type(to)), {x});
  };
  CHECK(has(cast_code(f, dtypes::f16), "out[0] = __float2half_rn(f);"));
  CHECK(has(cast_code(f, dtypes::bf16), "out[0] = __float2bfloat16_rn(f);"));
  CHECK(has(cast_code(i, dtypes::f16), "out[0] = __float2half_rn((float)(i));"));
  CHECK(has(cast_code(d, dtypes::bf16), "out[0] = __float2bfloat16_rn((float)(d));"));
  CHECK(has(cast_code(b, dtypes::f16), "out[0] = __float2half_rn(__bfloat162float(b));"));
  CHECK(has(cast_code(h, dtypes::bf16), "out[0] = __float2bfloat16_rn(__half2float(h));"));
  CHECK(has(cast_code(h, dtypes::f32), "out[0] = __half2float(h);"));
  CHECK(has(cast_code(h, dtypes::i8), "out[0] = ((int8_t)__half2float(h));"));
  CHECK(has(cast_code(b, dtypes::boolean), "out[0] = (__bfloat162float(b) != 0.0f);"));
  CHECK(has(cast_code(q, dtypes::f16), "out[0] = __float2half_rn((float)(q));"));
  CHECK(has(cast_code(f, dtypes::i64), "out[0] = ((int64_t)(f));"));
  CHECK(has(cast_code(i, dtypes::boolean), "out[0] = ((bool)(i));"));
}

TEST_CASE("constants") {
  auto k = [&](Expr e) {
    auto c = code_of(e);
    auto p = c.find("out[0] = ");
    REQUIRE(p != std::string::npos);
    return c.substr(p + 9, c.find(";\n", p) - p - 9);
  };
  CHECK(k(ConstantNode::make_float(dtypes::f32, 0.1)) == "0.100000001f");
  CHECK(k(ConstantNode::make_float(dtypes::f32, 3.0)) == "3.0f");
  CHECK(k(ConstantNode::make_float(dtypes::f32, -2.5)) == "(-2.5f)");
  CHECK(k(ConstantNode::make_float(dtypes::f32, -0.0)) == "(-0.0f)");
  CHECK(k(ConstantNode::make_float(dtypes::f32, 1e-45)) == "1.40129846e-45f");
  CHECK(k(ConstantNode::make_float(dtypes::f32, INFINITY)) == "__int_as_float(0x7f800000)");
  CHECK(k(ConstantNode::make_float(dtypes::f32, NAN)) == "__int_as_float(0x7fffffff)");
  CHECK(k(ConstantNode::make_float(dtypes::f64, 0.1)) == "0.10000000000000001");
  CHECK(k(ConstantNode::make_float(dtypes::f64, -INFINITY)) ==
        "__longlong_as_double(0xfff0000000000000LL)");
  CHECK(k(ConstantNode::make_float(dtypes::f16, 1.5)) == "__float2half_rn(1.5f)");
  CHECK(k(ConstantNode::make_float(dtypes::bf16, -1.0)) == "__float2bfloat16_rn((-1.0f))");
  CHECK(k(ConstantNode::make_int(dtypes::i32, -2147483648LL)) == "(-2147483647 - 1)");
  CHECK(k(ConstantNode::make_int(dtypes::i32, 7)) == "7");
  CHECK(k(ConstantNode::make_int(dtypes::i64, 1LL << 40)) == "1099511627776LL");
  CHECK(k(ConstantNode::make_int(dtypes::i64, INT64_MIN)) == "(-9223372036854775807LL - 1)");
  CHECK(k(ConstantNode::make_int(dtypes::u64, -1)) == "18446744073709551615ULL");
  CHECK(k(ConstantNode::make_int(dtypes::u32, -1)) == "4294967295u");
  CHECK(k(ConstantNode::make_int(dtypes::i8, -3)) == "((int8_t)-3)");
  CHECK(k(ConstantNode::make_int(dtypes::boolean, 1)) == "true");
}

TEST_CASE("small integer arithmetic wraps to the operand type; float % uses fmod; half / is fast") {
  Var a = scalar(dtypes::i8, "a"), f = scalar(dtypes::f16, "f");
  CHECK(has(code_of(BinaryNode::make(BinaryOp::Add, a, a), {a}), "out[0] = ((int8_t)(a + a));"));
  CHECK(has(code_of(BinaryNode::make(BinaryOp::Mod, f, f), {f}),
            "out[0] = __float2half_rn(fmodf(__half2float(f), __half2float(f)));"));
  // f16/bf16 division: f32 with the fast reciprocal, rounded
  CHECK(has(code_of(BinaryNode::make(BinaryOp::Div, f, f), {f}),
            "out[0] = __float2half_rn(__fdividef(__half2float(f), __half2float(f)));"));
  Var b = scalar(dtypes::bf16, "b");
  CHECK(has(code_of(BinaryNode::make(BinaryOp::Div, b, b), {b}),
            "out[0] = __float2bfloat16_rn(__fdividef(__bfloat162float(b), __bfloat162float(b)));"));
}

TEST_CASE("user errors: kernel names, unknown callees, shared tensors of unknown size") {
  CHECK_THROWS_WITH_AS(generate_cuda(kernel({}, {}, "2bad")),
                       doctest::Contains("kernel name '2bad'"), ValueError);
  CHECK_THROWS_WITH_AS(
      generate_cuda(kernel({}, {}, "threadIdx")),
      doctest::Contains("'threadIdx' is not a valid CUDA identifier or is reserved"), ValueError);
  Stmt bad_call = eval(CallNode::make_func("nowhere", {}, void_type(), SourceLoc("u.cpp", 9)));
  CHECK_THROWS_WITH_AS(generate_cuda(kernel({}, {bad_call})),
                       doctest::Contains("u.cpp:9: cannot generate CUDA for a call to 'nowhere'"),
                       DSLError);
  Var n = scalar(dtypes::i32, "n");
  Var s = tensor(dtypes::f32, {n}, "tile", Scope::Shared);
  CHECK_THROWS_WITH_AS(
      generate_cuda(kernel({n}, {DeclareStmtNode::make(s, {}, SourceLoc("u.cpp", 3))})),
      doctest::Contains(
          "u.cpp:3: cannot generate CUDA for shared tensor 'tile' without a constant size"),
      DSLError);
}

TEST_CASE("device functions: callee order, renaming on clashes, several kernels") {
  Var x = scalar(dtypes::f32, "x");
  auto f32 = scalar_type(dtypes::f32);
  // "expf" clashes with the CUDA math function: it is renamed, and its callers follow.
  Function inner = make_function("expf", {x}, ReturnStmtNode::make(x), f32, FuncKind::Device);
  Var y = scalar(dtypes::f32, "y");
  Function outer =
      make_function("outer", {y}, ReturnStmtNode::make(CallNode::make_func("expf", {y}, f32)), f32,
                    FuncKind::Device);
  Var o = tensor(dtypes::f32, {c32(1)}, "o");
  Stmt body = BufferStoreStmtNode::make(
      o, {c32(0)}, CallNode::make_func("outer", {ConstantNode::make_float(dtypes::f32, 1)}, f32));
  FuncAttrs a;
  Module m = make_module({make_function("k1", {o}, body, void_type(), FuncKind::Kernel, a), outer,
                          inner, make_function("k2", {o}, body, void_type(), FuncKind::Kernel, a)});
  auto src = generate_cuda(m);
  CHECK(src.kernels == std::vector<std::string>{"k1", "k2"});
  auto pi = src.code.find("float expf_(float x)"), po = src.code.find("float outer(float y)");
  REQUIRE(pi != std::string::npos);
  REQUIRE(po != std::string::npos);
  CHECK(pi < po);
  CHECK(has(src.code, "return expf_(y);"));
  CHECK(has(src.code, "o[0] = outer(1.0f);"));
  CHECK_FALSE(has(src.code, "__launch_bounds__"));
}

TEST_CASE("the offset of an unravelled flat index raveled again is the flat index") {
  // An element-wise kernel over [2, 6, 6, 128] indexes its output with v's multi-index and a
  // [2, 6, 6, 32] input with the same pixel: out[v] and x[(v / 128) * 32 + ...].
  Var v = scalar(dtypes::i32, "v");
  Var out = tensor(dtypes::f32, {c32(2), c32(6), c32(6), c32(128)}, "out");
  Var x = tensor(dtypes::f32, {c32(2), c32(6), c32(6), c32(32)}, "x");
  auto bin = [](BinaryOp op, Expr a, Expr b) { return BinaryNode::make(op, a, b); };
  Expr n = bin(BinaryOp::Div, v, c32(4608)), h = bin(BinaryOp::Mod, bin(BinaryOp::Div, v, c32(768)), c32(6)),
       w = bin(BinaryOp::Mod, bin(BinaryOp::Div, v, c32(128)), c32(6)), c = bin(BinaryOp::Mod, v, c32(128));
  Expr read = TensorElementNode::make(x, {n, h, w, bin(BinaryOp::Mod, c, c32(32))});
  std::string code = generate_cuda(kernel({v, out, x}, {BufferStoreStmtNode::make(out, {n, h, w, c}, read)})).code;
  INFO(code);
  CHECK(has(code, "out[v] = x[(((v / 128) * 32) + ((v % 128) % 32))];"));
  // A single index is emitted as lowering left it.
  Var flat = tensor(dtypes::f32, {c32(9216)}, "flat");
  std::string one = generate_cuda(kernel({v, flat}, {BufferStoreStmtNode::make(flat, {bin(BinaryOp::Add, bin(BinaryOp::Mul, bin(BinaryOp::Div, v, c32(128)), c32(128)), c)}, ConstantNode::make_float(dtypes::f32, 0.0))})).code;
  CHECK(has(one, "flat[(((v / 128) * 128) + (v % 128))] = 0.0f;"));
}
