// Operator kinds: the operators that graph passes recognize, listed once.
//
// A traced operator records its kind as its printed name ("Matmul", runtime/operator.hpp). Code
// that treats some operators specially tests the kind through this enum instead of comparing
// names, so that a misspelled kind does not compile:
//
//   if (ops::kind_of(*op) == ops::OpKind::Matmul) ...
//
// Each kind's enumerator is spelled as the name its operator records, and the name is derived from
// it (tests/ops/test_op_kind.cpp traces every kind's operator and checks its kind). Operators not
// listed here (fused nodes, a user's operators, the rest of the library) are OpKind::other.
#pragma once

#include <string_view>

#include "hidet/runtime/operator.hpp"

namespace hidet::ops {

/// The kinds graph passes recognize, each X(Name) with Name the name its operator records.
// clang-format off
#define HIDET_OP_KINDS(X)                                                                          \
  /* element-wise */                                                                               \
  X(Add) X(Sub) X(Mul) X(Div) X(Neg) X(Abs) X(Exp) X(Tanh) X(Relu) X(Sigmoid) X(Silu) X(Gelu)      \
  X(Cast)                                                                                          \
  /* views and data movement */                                                                    \
  X(Reshape) X(Permute) X(Slice) X(Concat)                                                         \
  /* products and convolutions (templates), and a product with its epilogue fused */               \
  X(Matmul) X(FusedMatmul) X(Conv2d) X(Conv2dNhwc) X(BatchNorm) X(GroupNorm)                       \
  /* pooling */                                                                                    \
  X(MaxPool2d) X(AvgPool2d) X(AdaptiveAvgPool2d)                                                   \
  /* attention (HeadsLast: the [B, Sq, H, D] layout, as recorded over symbolic extents) */         \
  X(ScaledDotProductAttention) X(ScaledDotProductAttentionHeadsLast)                              \
  /* collectives (ops/collective.hpp) */                                                           \
  X(AllReduce) X(AllGather) X(ReduceScatter) X(Broadcast) X(Send) X(Recv)
// clang-format on

/// An operator's kind (see the top of the file).
enum class OpKind {
  other, ///< an operator no pass recognizes by kind
#define HIDET_OP_KIND_ENUMERATOR(name) name,
  HIDET_OP_KINDS(HIDET_OP_KIND_ENUMERATOR)
#undef HIDET_OP_KIND_ENUMERATOR
};

/// The name an operator of kind `kind` records ("Matmul"); "" for OpKind::other.
constexpr std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
#define HIDET_OP_KIND_NAME(name)                                                                   \
  case OpKind::name:                                                                               \
    return #name;
    HIDET_OP_KINDS(HIDET_OP_KIND_NAME)
#undef HIDET_OP_KIND_NAME
  case OpKind::other:
    break;
  }
  return "";
}

/// The kind of an operator that records the name `name` (OpKind::other for a name not listed).
constexpr OpKind op_kind(std::string_view name) {
#define HIDET_OP_KIND_MATCH(kind)                                                                  \
  if (name == #kind) return OpKind::kind;
  HIDET_OP_KINDS(HIDET_OP_KIND_MATCH)
#undef HIDET_OP_KIND_MATCH
  return OpKind::other;
}

/// The kind of `op`.
inline OpKind kind_of(const Operator &op) { return op_kind(op.name()); }

} // namespace hidet::ops
