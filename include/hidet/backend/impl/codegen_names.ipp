// Definitions for hidet/backend/codegen_names.hpp.
#pragma once

#include "hidet/backend/codegen_names.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend {

HIDET_INLINE bool is_reserved_cuda_name(std::string_view s) {
  static constexpr std::string_view list[] = {
      // C++ keywords and alternative tokens
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "restrict", "main",
      "NULL", "std", "INFINITY", "NAN",
      // CUDA built-ins and types
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "uint3", "int2", "int4",
      "float2", "float4", "half", "half2", "bfloat16", "nv_bfloat16", "int8_t", "int16_t",
      "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t", "ptrdiff_t",
      "printf", "malloc", "free", "assert", "clock", "clock64", "atomicAdd", "atomicSub",
      "atomicMin", "atomicMax", "atomicExch", "atomicCAS", "atomicAnd", "atomicOr", "atomicXor",
      // math functions codegen may call
      "min", "max", "abs", "llabs", "labs", "exp", "expf", "exp2", "exp2f", "log", "logf", "log2",
      "log2f", "sqrt", "sqrtf", "rsqrt", "rsqrtf", "sin", "sinf", "cos", "cosf", "tanh", "tanhf",
      "erf", "erff", "pow", "powf", "fabs", "fabsf", "fmin", "fminf", "fmax", "fmaxf", "fma",
      "fmaf", "floor", "floorf", "ceil", "ceilf", "round", "roundf", "isnan", "isinf", "fmod",
      "fmodf", "hexp", "hexp2", "hlog", "hlog2", "hsqrt", "hrsqrt", "hsin", "hcos", "htanh",
      "hfloor", "hceil", "hrint", "signbit", "trunc", "truncf", "htrunc", "tan", "tanf", "asin",
      "asinf", "acos", "acosf", "atan", "atanf", "atan2", "atan2f", "sinh", "sinhf", "cosh",
      "coshf", "asinh", "asinhf", "acosh", "acoshf", "atanh", "atanhf", "log1p", "log1pf", "expm1",
      "expm1f", "log10", "log10f", "erfinv", "erfinvf", "erfc", "erfcf",
      // names of the prelude
      "hidet_dynamic_smem", "hidet_atomic_rmw", "hidet_exp_ftz", "hidet_erfc"};
  static const std::unordered_set<std::string_view> words(std::begin(list), std::end(list));
  if (words.count(s))
    return true;
  if (s.size() >= 2 && s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z')))
    return true;
  return false;
}

HIDET_INLINE bool is_c_identifier(std::string_view s) {
  if (s.empty())
    return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0]))
    return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9'))
      return false;
  return true;
}

HIDET_INLINE std::string NameTable::fresh(std::string_view hint) {
  std::string s;
  for (char c : hint) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty())
    s = "v";
  if (s[0] >= '0' && s[0] <= '9')
    s = "v" + s;
  if (s.size() >= 2 && s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z')))
    s = "v" + s;
  if (is_reserved_cuda_name(s))
    s += "_";
  std::string name = s;
  for (int k = 1; taken(name); ++k)
    name = s + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

} // namespace hidet::backend

#include "hidet/util/cold_end.hpp"
