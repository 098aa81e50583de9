// Definitions for hidet/backend/codegen_intrinsics.hpp.
#pragma once

#include "hidet/backend/codegen_intrinsics.hpp"

#include <string>
#include <vector>

#include "hidet/backend/detail/cuda_emitter.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend::detail {

namespace intrinsic_tables {
/// Math function names: {f32, f64, f16/bf16 native or nullptr when computed in float}.
struct MathNames {
  const char *f32, *f64, *half;
};
HIDET_INLINE const MathNames *math_names(ir::Intrinsic op) {
  using I = ir::Intrinsic;
  static const MathNames exp{"expf", "exp", "hexp"}, exp2{"exp2f", "exp2", "hexp2"},
      log{"logf", "log", "hlog"}, log2{"log2f", "log2", "hlog2"}, sqrt{"sqrtf", "sqrt", "hsqrt"},
      rsqrt{"rsqrtf", "rsqrt", "hrsqrt"}, sin{"sinf", "sin", "hsin"}, cos{"cosf", "cos", "hcos"},
      tanh{"tanhf", "tanh", "htanh"}, erf{"erff", "erf", nullptr}, pow{"powf", "pow", nullptr},
      abs{"fabsf", "fabs", "__habs"}, min{"fminf", "fmin", "__hmin"},
      max{"fmaxf", "fmax", "__hmax"}, fma{"fmaf", "fma", "__hfma"},
      floor{"floorf", "floor", "hfloor"}, ceil{"ceilf", "ceil", "hceil"},
      round{"roundf", "round", nullptr}, trunc{"truncf", "trunc", "htrunc"},
      tan{"tanf", "tan", nullptr}, asin{"asinf", "asin", nullptr}, acos{"acosf", "acos", nullptr},
      atan{"atanf", "atan", nullptr}, atan2{"atan2f", "atan2", nullptr},
      sinh{"sinhf", "sinh", nullptr}, cosh{"coshf", "cosh", nullptr},
      asinh{"asinhf", "asinh", nullptr}, acosh{"acoshf", "acosh", nullptr},
      atanh{"atanhf", "atanh", nullptr}, log1p{"log1pf", "log1p", nullptr},
      expm1{"expm1f", "expm1", nullptr}, log10{"log10f", "log10", nullptr},
      erfinv{"erfinvf", "erfinv", nullptr}, erfc{"hidet_erfc", "erfc", nullptr}, fmod{"fmodf", "fmod", nullptr},
      isnan{"isnan", "isnan", "__hisnan"};
  switch (op) {
  case I::Exp:
    return &exp;
  case I::Exp2:
    return &exp2;
  case I::Log:
    return &log;
  case I::Log2:
    return &log2;
  case I::Sqrt:
    return &sqrt;
  case I::Rsqrt:
    return &rsqrt;
  case I::Sin:
    return &sin;
  case I::Cos:
    return &cos;
  case I::Tanh:
    return &tanh;
  case I::Erf:
    return &erf;
  case I::Pow:
    return &pow;
  case I::Abs:
    return &abs;
  case I::Min:
    return &min;
  case I::Max:
    return &max;
  case I::Fma:
    return &fma;
  case I::Floor:
    return &floor;
  case I::Ceil:
    return &ceil;
  case I::Round:
    return &round;
  case I::Trunc:
    return &trunc;
  case I::Tan:
    return &tan;
  case I::Asin:
    return &asin;
  case I::Acos:
    return &acos;
  case I::Atan:
    return &atan;
  case I::Atan2:
    return &atan2;
  case I::Sinh:
    return &sinh;
  case I::Cosh:
    return &cosh;
  case I::Asinh:
    return &asinh;
  case I::Acosh:
    return &acosh;
  case I::Atanh:
    return &atanh;
  case I::Log1p:
    return &log1p;
  case I::Expm1:
    return &expm1;
  case I::Log10:
    return &log10;
  case I::Erfinv:
    return &erfinv;
  case I::Erfc:
    return &erfc;
  case I::Fmod:
    return &fmod;
  case I::IsNan:
    return &isnan;
  default:
    return nullptr;
  }
}
/// The unsigned integer type of a dtype's size, for CAS loops.
HIDET_INLINE const char *bits_type(DataType d) {
  switch (d.nbytes()) {
  case 2:
    return "uint16_t";
  case 4:
    return "uint32_t";
  case 8:
    return "uint64_t";
  default:
    return nullptr;
  }
}
} // namespace intrinsic_tables

HIDET_INLINE std::string CudaEmitter::math_call(const ir::CallNode *c) {
  using I = ir::Intrinsic;
  if (c->args.empty() || !ir::is_scalar(c->args[0]->type))
    unsupported(str_cat("intrinsic ", ir::intrinsic_name(c->op), " without scalar arguments"),
                c->loc);
  DataType d = ir::dtype_of(c->args[0]->type);
  std::vector<std::string> a;
  for (auto &x : c->args)
    a.push_back(expr(x));
  auto join = [&](const std::vector<std::string> &v) {
    std::string r;
    for (std::size_t i = 0; i < v.size(); ++i)
      r += (i ? ", " : "") + v[i];
    return r;
  };
  if (d.is_integer() || d.is_bool()) {
    std::string t = dtype(d);
    bool small = d.nbytes() < 4;
    auto widen = [&](const std::string &x) { return small ? "(int)(" + x + ")" : x; };
    switch (c->op) {
    case I::Abs:
      if (!d.is_signed())
        return a[0];
      if (d == dtypes::i64)
        return "llabs(" + a[0] + ")";
      return small ? "((" + t + ")abs(" + widen(a[0]) + "))" : "abs(" + a[0] + ")";
    case I::Min:
    case I::Max: {
      const char *fn = c->op == I::Min ? "min" : "max";
      if (small)
        return str_cat("((", t, ")", fn, "(", widen(a[0]), ", ", widen(a[1]), "))");
      return str_cat(fn, "(", a[0], ", ", a[1], ")");
    }
    case I::IsNan:
      return "false";
    default:
      unsupported(str_cat("intrinsic ", ir::intrinsic_name(c->op), " on ", d,
                          " (it takes f16, bf16, f32 or f64; cast the argument first)"),
                  c->loc);
    }
  }
  const auto *names = intrinsic_tables::math_names(c->op);
  HIDET_ASSERT(names, "not a math intrinsic");
  // erfc in f32 (and f16/bf16 through f32): erfc(|z|) = u exp2(S(u) - z^2 log2(e)) with
  // u = 1 / (1 + |z| / 2) and S a degree-8 polynomial fitted to this form (least squares toward
  // the largest relative error, then rounded to f32); erfc(z) = 2 - erfc(-z) for z < 0. No branch
  // and 17 instructions (two of them MUFU), where erff branches between two ranges; GELU is
  // 0.5 x erfc(-x / sqrt(2)) and runs in matmul epilogues, per element. Relative error (CPU model
  // of these operations over |z| < 10): 5.3e-7 below 1, 9.5e-7 below 3, 2.8e-6 below 5 and
  // 7.5e-6 beyond (there erfc < 1.5e-12): the f32 exponent argument's own rounding dominates.
  if (c->op == I::Erfc && d != dtypes::f64) {
    static const char *helper =
        "static __device__ __forceinline__ float hidet_erfc(float z) {\n"
        "  float t = fabsf(z), u, e;\n"
        "  asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(u) : \"f\"(fmaf(0.5f, t, 1.0f)));\n"
        "  float s = 1.167525202e-01f;\n"
        "  s = fmaf(s, u, -8.191662431e-01f);\n"
        "  s = fmaf(s, u, 2.170226574e+00f);\n"
        "  s = fmaf(s, u, -2.624044895e+00f);\n"
        "  s = fmaf(s, u, 1.270042658e+00f);\n"
        "  s = fmaf(s, u, -3.591206372e-01f);\n"
        "  s = fmaf(s, u, 6.387174129e-01f);\n"
        "  s = fmaf(s, u, 1.431835532e+00f);\n"
        "  s = fmaf(s, u, -1.825243115e+00f);\n"
        "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(e) : \"f\"(fmaf(-1.44269504f, t * t, s)));\n"
        "  float r = u * e;\n"
        "  return z < 0.0f ? 2.0f - r : r;\n"
        "}\n";
    if (features_.extra.find(helper) == std::string::npos) features_.extra += helper;
  }
  if (d == dtypes::f32)
    return str_cat(names->f32, "(", join(a), ")");
  if (d == dtypes::f64)
    return str_cat(names->f64, "(", join(a), ")");
  dtype(d);
  // exp of f16/bf16: ex2.approx.ftz of x log2(e) in f32, then rounded (3 instructions); bf16's
  // hexp takes the accurate f32 path with its range checks, and __expf without ftz scales
  // around denormal results (f32 denormals are below f16's range; bf16's flush to zero).
  if (c->op == I::Exp) {
    static const char *helper =
        "static __device__ __forceinline__ float hidet_exp_ftz(float x) {\n"
        "  float y;\n"
        "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.4426950408889634f));\n"
        "  return y;\n"
        "}\n";
    if (features_.extra.find(helper) == std::string::npos) features_.extra += helper;
    return from_float("hidet_exp_ftz(" + to_float(a[0], d) + ")", d);
  }
  if (names->half)
    return str_cat(names->half, "(", join(a), ")");
  std::vector<std::string> f;
  for (auto &x : a)
    f.push_back(to_float(x, d));
  return from_float(str_cat(names->f32, "(", join(f), ")"), d);
}

HIDET_INLINE std::string CudaEmitter::atomic_call(const ir::CallNode *c) {
  using I = ir::Intrinsic;
  std::size_t want = c->op == I::AtomicCas ? 3 : 2;
  auto pt = c->args.empty() ? nullptr : c->args[0]->type.as<ir::PointerTypeNode>();
  if (c->args.size() != want || !pt || !ir::is_scalar(pt->base))
    unsupported(str_cat("intrinsic ", ir::intrinsic_name(c->op), " (expects a pointer to a scalar ",
                        "and ", want - 1, " value(s))"),
                c->loc);
  DataType d = ir::dtype_of(pt->base);
  std::string t = dtype(d), p = expr(c->args[0]), v = expr(c->args[1]);
  const char *bits = intrinsic_tables::bits_type(d);
  if (!bits || d.is_bool())
    unsupported(str_cat("intrinsic ", ir::intrinsic_name(c->op), " on ", d,
                        " (CUDA atomics need 2, 4 or 8-byte types)"),
                c->loc);
  bool native_int = d == dtypes::i32 || d == dtypes::u32 || d == dtypes::u64;
  auto rmw = [&](int op) {
    features_.atomic_rmw = true;
    return str_cat("hidet_atomic_rmw<", t, ", ", bits, ">(", p, ", ", v, ", ", op, ")");
  };
  auto via_ull = [&](const char *fn) {
    return str_cat("((int64_t)", fn, "((unsigned long long *)(", p, "), (unsigned long long)(", v,
                   ")))");
  };
  switch (c->op) {
  case I::AtomicAdd:
    if (native_int || d == dtypes::f32 || d == dtypes::f64 || d.is_half())
      return "atomicAdd(" + p + ", " + v + ")";
    if (d == dtypes::i64)
      return via_ull("atomicAdd");
    return rmw(3);
  case I::AtomicMin:
  case I::AtomicMax: {
    const char *fn = c->op == I::AtomicMin ? "atomicMin" : "atomicMax";
    if (native_int)
      return str_cat(fn, "(", p, ", ", v, ")");
    if (d == dtypes::i64)
      return str_cat(fn, "((long long *)(", p, "), (long long)(", v, "))");
    return rmw(c->op == I::AtomicMin ? 0 : 1);
  }
  case I::AtomicExch:
    if (native_int || d == dtypes::f32)
      return "atomicExch(" + p + ", " + v + ")";
    if (d == dtypes::i64)
      return via_ull("atomicExch");
    if (d == dtypes::f64)
      return str_cat("__longlong_as_double((long long)atomicExch((unsigned long long *)(", p,
                     "), (unsigned long long)__double_as_longlong(", v, ")))");
    return rmw(2);
  case I::AtomicCas: {
    std::string w = expr(c->args[2]);
    if (native_int)
      return str_cat("atomicCAS(", p, ", ", v, ", ", w, ")");
    if (d == dtypes::i64)
      return str_cat("((int64_t)atomicCAS((unsigned long long *)(", p, "), (unsigned long long)(",
                     v, "), (unsigned long long)(", w, ")))");
    if (d == dtypes::f32)
      return str_cat("__int_as_float(atomicCAS((int *)(", p, "), __float_as_int(", v,
                     "), __float_as_int(", w, ")))");
    if (d == dtypes::f64)
      return str_cat("__longlong_as_double((long long)atomicCAS((unsigned long long *)(", p,
                     "), (unsigned long long)__double_as_longlong(", v,
                     "), (unsigned long long)__double_as_longlong(", w, ")))");
    if (d == dtypes::f16)
      return str_cat("__ushort_as_half(atomicCAS((unsigned short *)(", p, "), __half_as_ushort(", v,
                     "), __half_as_ushort(", w, ")))");
    if (d == dtypes::bf16)
      return str_cat("__ushort_as_bfloat16(atomicCAS((unsigned short *)(", p,
                     "), __bfloat16_as_ushort(", v, "), __bfloat16_as_ushort(", w, ")))");
    return str_cat("((", t, ")atomicCAS((unsigned short *)(", p, "), (unsigned short)(", v,
                   "), (unsigned short)(", w, ")))");
  }
  default:
    HIDET_ASSERT(false, "not an atomic");
  }
  return {};
}

HIDET_INLINE std::string CudaEmitter::warp_call(const ir::CallNode *c) {
  using I = ir::Intrinsic;
  std::vector<std::string> a;
  for (auto &x : c->args)
    a.push_back(expr(x));
  switch (c->op) {
  case I::ShflSync:
  case I::ShflUpSync:
  case I::ShflDownSync:
  case I::ShflXorSync: {
    if (a.size() < 3 || a.size() > 4 || !ir::is_scalar(c->args[1]->type))
      unsupported(str_cat("intrinsic ", ir::intrinsic_name(c->op),
                          " (expects mask, a scalar value, lane and an optional width)"),
                  c->loc);
    const char *fn = c->op == I::ShflSync       ? "__shfl_sync"
                     : c->op == I::ShflUpSync   ? "__shfl_up_sync"
                     : c->op == I::ShflDownSync ? "__shfl_down_sync"
                                                : "__shfl_xor_sync";
    DataType d = ir::dtype_of(c->args[1]->type);
    std::string tail = ", " + a[2] + (a.size() == 4 ? ", " + a[3] : std::string()) + ")";
    if (d.nbytes() < 4 && !d.is_half())
      return str_cat("((", dtype(d), ")", fn, "(", a[0], ", (int)(", a[1], ")", tail, ")");
    return str_cat(fn, "(", a[0], ", ", a[1], tail);
  }
  case I::AnySync:
  case I::AllSync:
  case I::BallotSync: {
    if (a.size() != 2)
      unsupported(str_cat("intrinsic ", ir::intrinsic_name(c->op), " (expects mask, predicate)"),
                  c->loc);
    const char *fn = c->op == I::AnySync   ? "__any_sync"
                     : c->op == I::AllSync ? "__all_sync"
                                           : "__ballot_sync";
    std::string r = str_cat(fn, "(", a[0], ", ", a[1], ")");
    return ir::is_scalar(c->type) ? "((" + type(c->type) + ")" + r + ")" : r;
  }
  default:
    HIDET_ASSERT(false, "not a warp intrinsic");
  }
  return {};
}

HIDET_INLINE std::string CudaEmitter::call(const ir::CallNode *c) {
  using I = ir::Intrinsic;
  if (c->op == I::None) {
    auto it = func_names_.find(c->func_name);
    auto callee = mod_->lookup(c->func_name);
    if (it == func_names_.end() || !callee || callee->func_kind != ir::FuncKind::Device)
      unsupported(
          str_cat("a call to '", c->func_name, "', which is not a device function of the module"),
          c->loc);
    std::string r = it->second + "(";
    for (std::size_t i = 0; i < c->args.size(); ++i)
      r += (i ? ", " : "") + expr(c->args[i]);
    return r + ")";
  }
  if (ir::is_math_intrinsic(c->op))
    return math_call(c);
  switch (c->op) {
  case I::SyncThreads:
    return "__syncthreads()";
  case I::ThreadFence:
    return "__threadfence()";
  case I::ThreadFenceSystem:
    return "__threadfence_system()";
  case I::GridDependencyWait: // the kernel's own wait, placed by its author (lang/cuda.hpp)
    return "HIDET_GRID_DEPENDENCY_SYNC()";
  case I::SyncWarp:
    return "__syncwarp(" + (c->args.empty() ? "0xffffffffu" : expr(c->args[0])) + ")";
  case I::AtomicAdd:
  case I::AtomicMin:
  case I::AtomicMax:
  case I::AtomicExch:
  case I::AtomicCas:
    return atomic_call(c);
  case I::Printf: {
    std::string r = "printf(\"" + c_string_escape(c->text) + "\"";
    for (auto &x : c->args) {
      std::string v = expr(x);
      // Varargs: f16/bf16/fp8 have no default promotion; pass them as double like float.
      if (ir::is_scalar(x->type) && ir::dtype_of(x->type).is_narrow_float())
        v = "(double)" + to_float(v, ir::dtype_of(x->type));
      r += ", " + v;
    }
    return r + ")";
  }
  case I::DynamicSharedMemory: {
    features_.dynamic_smem = true;
    auto pt = c->type.as<ir::PointerTypeNode>();
    if (pt && ir::is_scalar(pt->base) && ir::dtype_of(pt->base) == dtypes::u8)
      return "hidet_dynamic_smem";
    return "((" + type(c->type) + ")hidet_dynamic_smem)";
  }
  default:
    if (ir::is_primitive_intrinsic(c->op))
      return primitive_call(c);
    return warp_call(c);
  }
}

} // namespace hidet::backend::detail

#include "hidet/util/cold_end.hpp"
