// Concrete data layouts: a small algebra of maps from a tensor index to a storage offset.
//
// Laws (each is tested over the whole domain in tests/ir/test_layouts.cpp):
//  * row_major(s0..sn)(i)      = sum_k i_k * prod_{m>k} s_m      (a bijection onto [0, numel))
//  * column_major(s0..sn)(i)   = sum_k i_k * prod_{m<k} s_m      (a bijection onto [0, numel))
//  * strided(shape, st)(i)     = sum_k i_k * st_k;  size = 1 + sum_k (s_k - 1) * st_k
//  * local(s0..sn)(i)          = 0;  size = 1   (every worker keeps its own copy: the index
//                                                 names which worker's copy, not a slot in it)
//  * (a * b)(c)                = a(c / shape_b) * size_b + b(c mod shape_b)   (per dimension;
//                                 shape = shape_a .* shape_b, size = size_a * size_b).
//                                 Composition is associative. local(w) * row_major(t) is the
//                                 register tile of one worker: t elements, replicated w times.
//  * (a + b)(i, j)             = a(i) * size_b + b(j);  shape = shape_a ++ shape_b,
//                                 size = size_a * size_b
//  * swizzle(a, d, r, k)(i)    = a(i with i_d replaced by i_d ^ ((i_r >> k) mod shape_d)),
//                                 shape_d a power of two. For each fixed value of the other
//                                 indices the swizzle permutes dimension d, so it is a bijection
//                                 onto the offsets of `a`. To keep 16-byte vectors contiguous,
//                                 swizzle a layout of vectors and compose it with the vector:
//                                 swizzle(row_major(R, C / V), 1) * row_major(1, V).
// Dims are IR expressions (usually constants); offsets are IR expressions built with the fold_*
// helpers, so constant indices give constant offsets.
#pragma once

#include <concepts>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "hidet/ir/eval.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

// ---- index arithmetic that folds constants --------------------------------------------------

/// a / b with constant folding and x / 1 = x (operands are unified to the wider dtype).
Expr fold_div(const Expr &a, const Expr &b);
/// a % b with constant folding and x % 1 = 0.
Expr fold_mod(const Expr &a, const Expr &b);
/// a ^ b with constant folding and x ^ 0 = x.
Expr fold_xor(const Expr &a, const Expr &b);
/// a + b and a * b on operands of possibly different integer widths (unified, then folded).
Expr fold_add_any(const Expr &a, const Expr &b);
Expr fold_mul_any(const Expr &a, const Expr &b);

// ---- layout nodes --------------------------------------------------------------------------

/// offset(i) = sum_k i_k * strides_k. row_major and column_major are strided layouts.
struct StridedLayoutNode : LayoutNode {
  std::vector<Expr> strides;
  std::string name; ///< "row_major", "column_major" or "strided" (printing only)
  StridedLayoutNode(std::vector<Expr> shape, std::vector<Expr> st, std::string n)
      : LayoutNode(std::move(shape)), strides(std::move(st)), name(std::move(n)) {}
  Expr offset(const std::vector<Expr> &idx) const override;
  Expr storage_size() const override;
  std::string str() const override;
  bool equals(const LayoutNode &o) const override;
  std::size_t hash() const override;
};

/// Replicated per worker: every index maps to offset 0, storage size 1.
struct LocalLayoutNode : LayoutNode {
  using LayoutNode::LayoutNode;
  Expr offset(const std::vector<Expr> &idx) const override;
  Expr storage_size() const override;
  std::string str() const override;
  bool equals(const LayoutNode &o) const override;
  std::size_t hash() const override;
};

/// (outer * inner)(c) = outer(c / shape_inner) * size_inner + inner(c mod shape_inner).
struct ComposedLayoutNode : LayoutNode {
  Layout outer, inner;
  ComposedLayoutNode(std::vector<Expr> shape, Layout o, Layout i)
      : LayoutNode(std::move(shape)), outer(std::move(o)), inner(std::move(i)) {}
  Expr offset(const std::vector<Expr> &idx) const override;
  Expr storage_size() const override;
  std::string str() const override;
  bool equals(const LayoutNode &o) const override;
  std::size_t hash() const override;
  static bool is_composite(const Layout &l);
  static bool is_concat(const Layout &l);
};

/// (lhs + rhs)(i, j) = lhs(i) * size_rhs + rhs(j); the shape is the concatenation.
struct ConcatLayoutNode : LayoutNode {
  Layout lhs, rhs;
  ConcatLayoutNode(std::vector<Expr> shape, Layout l, Layout r)
      : LayoutNode(std::move(shape)), lhs(std::move(l)), rhs(std::move(r)) {}
  Expr offset(const std::vector<Expr> &idx) const override;
  Expr storage_size() const override;
  std::string str() const override;
  bool equals(const LayoutNode &o) const override;
  std::size_t hash() const override;
};

/// Hidet's XOR swizzle: index `dim` is replaced by index_dim ^ ((index_regards >> log_step) mod
/// shape_dim) before the base layout is applied.
struct SwizzleLayoutNode : LayoutNode {
  Layout base;
  int dim, regards_dim, log_step;
  SwizzleLayoutNode(Layout b, int d, int r, int s)
      : LayoutNode(b->shape), base(std::move(b)), dim(d), regards_dim(r), log_step(s) {}
  Expr offset(const std::vector<Expr> &idx) const override;
  Expr storage_size() const override;
  std::string str() const override;
  bool equals(const LayoutNode &o) const override;
  std::size_t hash() const override;
};

// ---- constructors ---------------------------------------------------------------------------

/// strided(shape, strides): offset = dot(index, strides).
Layout strided(std::vector<Expr> shape, std::vector<Expr> strides,
               std::source_location loc = std::source_location::current());
Layout strided(const std::vector<std::int64_t> &shape, const std::vector<std::int64_t> &strides,
               std::source_location loc = std::source_location::current());

/// row_major(shape): the last dimension is contiguous.
Layout row_major(std::vector<Expr> shape);
/// column_major(shape): the first dimension is contiguous.
Layout column_major(std::vector<Expr> shape);
/// local(shape): one element per worker; see the law at the top of this file.
inline Layout local(std::vector<Expr> shape) { return Layout(new LocalLayoutNode(std::move(shape))); }

/// Integer-dims forms: row_major({4, 8}) or row_major(4, 8).
Layout row_major(const std::vector<std::int64_t> &shape,
                 std::source_location loc = std::source_location::current());
Layout column_major(const std::vector<std::int64_t> &shape,
                    std::source_location loc = std::source_location::current());
Layout local(const std::vector<std::int64_t> &shape,
             std::source_location loc = std::source_location::current());
template <std::integral... D> Layout row_major(D... dims) { return row_major(std::vector<std::int64_t>{std::int64_t(dims)...}); }
template <std::integral... D> Layout column_major(D... dims) { return column_major(std::vector<std::int64_t>{std::int64_t(dims)...}); }
template <std::integral... D> Layout local(D... dims) { return local(std::vector<std::int64_t>{std::int64_t(dims)...}); }

/// outer * inner (ranks must agree); see the composition law at the top of this file.
Layout compose(const Layout &outer, const Layout &inner,
               std::source_location loc = std::source_location::current());
/// lhs ++ rhs; see the concatenation law at the top of this file.
Layout concat(const Layout &lhs, const Layout &rhs);
inline Layout operator*(const Layout &outer, const Layout &inner) { return compose(outer, inner); }
inline Layout operator+(const Layout &lhs, const Layout &rhs) { return concat(lhs, rhs); }

/// Hidet's swizzle: see the law at the top of this file. `regards_dim` defaults to the other
/// dimension of a rank-2 layout. The swizzled dimension must be a constant power of two.
Layout swizzle(const Layout &base, int dim, int regards_dim = -1, int log_step = 0,
               std::source_location loc = std::source_location::current());

// ---- host-side evaluation -------------------------------------------------------------------

/// The layout's shape as integers; throws hidet::Error when a dimension is symbolic.
std::vector<std::int64_t> const_shape(const Layout &l);

/// The offset of index `idx`, evaluated on the host (constant dims only).
std::int64_t offset_of(const Layout &l, const std::vector<std::int64_t> &idx);

/// The storage size, evaluated on the host (constant dims only).
std::int64_t storage_size_of(const Layout &l);

/// A table of the offsets of a rank-1 or rank-2 layout with constant dims, one row per line, e.g.
/// for column_major(2, 3): "0 2 4\n1 3 5\n".
std::string offset_table(const Layout &l);

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/layouts.ipp"
#endif
