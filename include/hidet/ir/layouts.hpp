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

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "hidet/ir/eval.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

// ---- index arithmetic that folds constants --------------------------------------------------

namespace layout_detail {
/// The wider of the two integer dtypes (i64 wins over i32).
inline DataType wider(const Expr &a, const Expr &b) {
  DataType x = dtype_of(a->type), y = dtype_of(b->type);
  return x.nbytes() >= y.nbytes() ? x : y;
}
/// `e` converted to the integer dtype `d` (constants are rebuilt, other expressions cast).
inline Expr to_dtype(const Expr &e, DataType d) {
  if (dtype_of(e->type) == d) return e;
  std::int64_t v;
  if (as_const_int(e, v)) return ConstantNode::make_int(d, v, e->loc);
  return CastNode::make(e, scalar_type(d), e->loc);
}
/// An integer constant: i32 when it fits, else i64.
inline Expr const_index(std::int64_t v) {
  return v == std::int32_t(v) ? int32(v) : ConstantNode::make_int(dtypes::i64, v);
}
} // namespace layout_detail

/// a / b with constant folding and x / 1 = x (operands are unified to the wider dtype).
inline Expr fold_div(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  Expr x = layout_detail::to_dtype(a, d), y = layout_detail::to_dtype(b, d);
  std::int64_t p = 0, q = 0;
  bool ca = as_const_int(x, p), cb = as_const_int(y, q);
  if (ca && cb && q != 0) return ConstantNode::make_int(d, p / q);
  if (cb && q == 1) return x;
  if (ca && p == 0) return x;
  return BinaryNode::make(BinaryOp::Div, x, y);
}
/// a % b with constant folding and x % 1 = 0.
inline Expr fold_mod(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  Expr x = layout_detail::to_dtype(a, d), y = layout_detail::to_dtype(b, d);
  std::int64_t p = 0, q = 0;
  bool ca = as_const_int(x, p), cb = as_const_int(y, q);
  if (ca && cb && q != 0) return ConstantNode::make_int(d, p % q);
  if (cb && q == 1) return ConstantNode::make_int(d, 0);
  if (ca && p == 0) return x;
  return BinaryNode::make(BinaryOp::Mod, x, y);
}
/// a ^ b with constant folding and x ^ 0 = x.
inline Expr fold_xor(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  Expr x = layout_detail::to_dtype(a, d), y = layout_detail::to_dtype(b, d);
  std::int64_t p = 0, q = 0;
  bool ca = as_const_int(x, p), cb = as_const_int(y, q);
  if (ca && cb) return ConstantNode::make_int(d, p ^ q);
  if (cb && q == 0) return x;
  if (ca && p == 0) return y;
  return BinaryNode::make(BinaryOp::BitXor, x, y);
}
/// a + b and a * b on operands of possibly different integer widths (unified, then folded).
inline Expr fold_add_any(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  return fold_add(layout_detail::to_dtype(a, d), layout_detail::to_dtype(b, d));
}
inline Expr fold_mul_any(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  return fold_mul(layout_detail::to_dtype(a, d), layout_detail::to_dtype(b, d));
}

namespace layout_detail {
/// Dims are equal when both are the same constant or the same expression object.
inline bool dim_equal(const Expr &a, const Expr &b) {
  std::int64_t x, y;
  if (as_const_int(a, x) && as_const_int(b, y)) return x == y;
  return a.same_as(b);
}
inline bool dims_equal(const std::vector<Expr> &a, const std::vector<Expr> &b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!dim_equal(a[i], b[i])) return false;
  return true;
}
inline std::size_t mix(std::size_t h, std::size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}
inline std::size_t dims_hash(std::size_t h, const std::vector<Expr> &dims) {
  for (auto &d : dims) {
    std::int64_t v;
    h = mix(h, as_const_int(d, v) ? std::hash<std::int64_t>()(v) : std::hash<const void *>()(d.get()));
  }
  return h;
}
/// "4", or the variable's name, or "?" for a compound expression.
inline std::string dim_str(const Expr &d) {
  std::int64_t v;
  if (as_const_int(d, v)) return std::to_string(v);
  if (auto var = d.as<VarNode>()) return var->hint;
  return "?";
}
inline std::string dims_str(const std::vector<Expr> &dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dim_str(dims[i]);
  return s;
}
inline std::vector<Expr> to_dims(const std::vector<std::int64_t> &dims, const char *what, SourceLoc loc) {
  std::vector<Expr> out;
  for (auto d : dims) {
    if (d < 0) throw DSLError(str_cat(what, ": dimension ", d, " is negative"), loc);
    out.push_back(const_index(d));
  }
  return out;
}
/// A check that `n` indices were given to a layout of rank `rank`.
inline void check_rank(const LayoutNode &l, std::size_t n) {
  HIDET_ASSERT(l.shape.size() == n, "layout ", l.str(), " of rank ", l.shape.size(), " indexed with ",
               n, " indices");
}
/// The textual form of a child of a composite layout (parenthesised when composite itself).
inline std::string child_str(const Layout &l, bool composite) {
  return composite ? "(" + l->str() + ")" : l->str();
}
} // namespace layout_detail

// ---- layout nodes --------------------------------------------------------------------------

/// offset(i) = sum_k i_k * strides_k. row_major and column_major are strided layouts.
struct StridedLayoutNode : LayoutNode {
  std::vector<Expr> strides;
  std::string name; ///< "row_major", "column_major" or "strided" (printing only)
  StridedLayoutNode(std::vector<Expr> shape, std::vector<Expr> st, std::string n)
      : LayoutNode(std::move(shape)), strides(std::move(st)), name(std::move(n)) {}
  Expr offset(const std::vector<Expr> &idx) const override {
    layout_detail::check_rank(*this, idx.size());
    Expr off = int32(0);
    for (std::size_t k = 0; k < idx.size(); ++k) off = fold_add_any(off, fold_mul_any(idx[k], strides[k]));
    return off;
  }
  Expr storage_size() const override {
    if (name != "strided") return shape_numel(shape);
    Expr n = int32(1);
    for (std::size_t k = 0; k < shape.size(); ++k) {
      std::int64_t v;
      if (as_const_int(shape[k], v) && v == 0) return int32(0);
      Expr last = as_const_int(shape[k], v) ? layout_detail::const_index(v - 1)
                                            : BinaryNode::make(BinaryOp::Sub, shape[k],
                                                               layout_detail::to_dtype(int32(1), dtype_of(shape[k]->type)));
      n = fold_add_any(n, fold_mul_any(last, strides[k]));
    }
    return n;
  }
  std::string str() const override {
    if (name != "strided") return name + "(" + layout_detail::dims_str(shape) + ")";
    return "strided([" + layout_detail::dims_str(shape) + "], [" + layout_detail::dims_str(strides) + "])";
  }
  bool equals(const LayoutNode &o) const override {
    auto *s = dynamic_cast<const StridedLayoutNode *>(&o);
    return s && layout_detail::dims_equal(shape, s->shape) && layout_detail::dims_equal(strides, s->strides);
  }
  std::size_t hash() const override {
    return layout_detail::dims_hash(layout_detail::dims_hash(0x5171, shape), strides);
  }
};

/// Replicated per worker: every index maps to offset 0, storage size 1.
struct LocalLayoutNode : LayoutNode {
  using LayoutNode::LayoutNode;
  Expr offset(const std::vector<Expr> &idx) const override {
    layout_detail::check_rank(*this, idx.size());
    return int32(0);
  }
  Expr storage_size() const override { return int32(1); }
  std::string str() const override { return "local(" + layout_detail::dims_str(shape) + ")"; }
  bool equals(const LayoutNode &o) const override {
    auto *s = dynamic_cast<const LocalLayoutNode *>(&o);
    return s && layout_detail::dims_equal(shape, s->shape);
  }
  std::size_t hash() const override { return layout_detail::dims_hash(0x10ca1, shape); }
};

/// (outer * inner)(c) = outer(c / shape_inner) * size_inner + inner(c mod shape_inner).
struct ComposedLayoutNode : LayoutNode {
  Layout outer, inner;
  ComposedLayoutNode(std::vector<Expr> shape, Layout o, Layout i)
      : LayoutNode(std::move(shape)), outer(std::move(o)), inner(std::move(i)) {}
  Expr offset(const std::vector<Expr> &idx) const override {
    layout_detail::check_rank(*this, idx.size());
    std::vector<Expr> oi, ii;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      oi.push_back(fold_div(idx[k], inner->shape[k]));
      ii.push_back(fold_mod(idx[k], inner->shape[k]));
    }
    return fold_add_any(fold_mul_any(outer->offset(oi), inner->storage_size()), inner->offset(ii));
  }
  Expr storage_size() const override { return fold_mul_any(outer->storage_size(), inner->storage_size()); }
  std::string str() const override {
    return layout_detail::child_str(outer, is_concat(outer)) + " * " +
           layout_detail::child_str(inner, is_composite(inner));
  }
  bool equals(const LayoutNode &o) const override {
    auto *s = dynamic_cast<const ComposedLayoutNode *>(&o);
    return s && outer->equals(*s->outer) && inner->equals(*s->inner);
  }
  std::size_t hash() const override {
    return layout_detail::mix(layout_detail::mix(0xc0, outer->hash()), inner->hash());
  }
  static bool is_composite(const Layout &l);
  static bool is_concat(const Layout &l);
};

/// (lhs + rhs)(i, j) = lhs(i) * size_rhs + rhs(j); the shape is the concatenation.
struct ConcatLayoutNode : LayoutNode {
  Layout lhs, rhs;
  ConcatLayoutNode(std::vector<Expr> shape, Layout l, Layout r)
      : LayoutNode(std::move(shape)), lhs(std::move(l)), rhs(std::move(r)) {}
  Expr offset(const std::vector<Expr> &idx) const override {
    layout_detail::check_rank(*this, idx.size());
    std::size_t n = lhs->shape.size();
    std::vector<Expr> a(idx.begin(), idx.begin() + n), b(idx.begin() + n, idx.end());
    return fold_add_any(fold_mul_any(lhs->offset(a), rhs->storage_size()), rhs->offset(b));
  }
  Expr storage_size() const override { return fold_mul_any(lhs->storage_size(), rhs->storage_size()); }
  std::string str() const override {
    return layout_detail::child_str(lhs, ComposedLayoutNode::is_composite(lhs)) + " + " +
           layout_detail::child_str(rhs, ComposedLayoutNode::is_composite(rhs));
  }
  bool equals(const LayoutNode &o) const override {
    auto *s = dynamic_cast<const ConcatLayoutNode *>(&o);
    return s && lhs->equals(*s->lhs) && rhs->equals(*s->rhs);
  }
  std::size_t hash() const override {
    return layout_detail::mix(layout_detail::mix(0xca, lhs->hash()), rhs->hash());
  }
};

inline bool ComposedLayoutNode::is_composite(const Layout &l) {
  return dynamic_cast<const ComposedLayoutNode *>(l.get()) || dynamic_cast<const ConcatLayoutNode *>(l.get());
}
inline bool ComposedLayoutNode::is_concat(const Layout &l) {
  return dynamic_cast<const ConcatLayoutNode *>(l.get()) != nullptr;
}

/// Hidet's XOR swizzle: index `dim` is replaced by index_dim ^ ((index_regards >> log_step) mod
/// shape_dim) before the base layout is applied.
struct SwizzleLayoutNode : LayoutNode {
  Layout base;
  int dim, regards_dim, log_step;
  SwizzleLayoutNode(Layout b, int d, int r, int s)
      : LayoutNode(b->shape), base(std::move(b)), dim(d), regards_dim(r), log_step(s) {}
  Expr offset(const std::vector<Expr> &idx) const override {
    layout_detail::check_rank(*this, idx.size());
    std::int64_t extent = 0, regards_extent = 0;
    as_const_int(shape[dim], extent);
    as_const_int(shape[regards_dim], regards_extent);
    Expr r = fold_div(idx[regards_dim], int32(std::int64_t(1) << log_step));
    if ((regards_extent >> log_step) > extent) r = fold_mod(r, int32(extent));
    std::vector<Expr> j = idx;
    j[dim] = fold_xor(idx[dim], r);
    return base->offset(j);
  }
  Expr storage_size() const override { return base->storage_size(); }
  std::string str() const override {
    return str_cat("swizzle(", base->str(), ", dim=", dim, ", regards_dim=", regards_dim,
                   ", log_step=", log_step, ")");
  }
  bool equals(const LayoutNode &o) const override {
    auto *s = dynamic_cast<const SwizzleLayoutNode *>(&o);
    return s && dim == s->dim && regards_dim == s->regards_dim && log_step == s->log_step &&
           base->equals(*s->base);
  }
  std::size_t hash() const override {
    std::size_t h = layout_detail::mix(0x5e, base->hash());
    return layout_detail::mix(layout_detail::mix(layout_detail::mix(h, dim), regards_dim), log_step);
  }
};

// ---- constructors ---------------------------------------------------------------------------

/// strided(shape, strides): offset = dot(index, strides).
inline Layout strided(std::vector<Expr> shape, std::vector<Expr> strides,
                      std::source_location loc = std::source_location::current()) {
  if (shape.size() != strides.size())
    throw DSLError(str_cat("strided layout: shape [", layout_detail::dims_str(shape), "] has rank ",
                           shape.size(), " but ", strides.size(), " strides were given"),
                   loc);
  return Layout(new StridedLayoutNode(std::move(shape), std::move(strides), "strided"));
}
inline Layout strided(const std::vector<std::int64_t> &shape, const std::vector<std::int64_t> &strides,
                      std::source_location loc = std::source_location::current()) {
  std::vector<Expr> st;
  for (auto s : strides) st.push_back(layout_detail::const_index(s));
  return strided(layout_detail::to_dims(shape, "strided", loc), std::move(st), loc);
}

/// row_major(shape): the last dimension is contiguous.
inline Layout row_major(std::vector<Expr> shape) {
  std::vector<Expr> st(shape.size());
  Expr acc = int32(1);
  for (std::size_t k = shape.size(); k-- > 0;) {
    st[k] = acc;
    acc = fold_mul_any(acc, shape[k]);
  }
  return Layout(new StridedLayoutNode(std::move(shape), std::move(st), "row_major"));
}
/// column_major(shape): the first dimension is contiguous.
inline Layout column_major(std::vector<Expr> shape) {
  std::vector<Expr> st(shape.size());
  Expr acc = int32(1);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    st[k] = acc;
    acc = fold_mul_any(acc, shape[k]);
  }
  return Layout(new StridedLayoutNode(std::move(shape), std::move(st), "column_major"));
}
/// local(shape): one element per worker; see the law at the top of this file.
inline Layout local(std::vector<Expr> shape) { return Layout(new LocalLayoutNode(std::move(shape))); }

/// Integer-dims forms: row_major({4, 8}) or row_major(4, 8).
inline Layout row_major(const std::vector<std::int64_t> &shape,
                        std::source_location loc = std::source_location::current()) {
  return row_major(layout_detail::to_dims(shape, "row_major", loc));
}
inline Layout column_major(const std::vector<std::int64_t> &shape,
                           std::source_location loc = std::source_location::current()) {
  return column_major(layout_detail::to_dims(shape, "column_major", loc));
}
inline Layout local(const std::vector<std::int64_t> &shape,
                    std::source_location loc = std::source_location::current()) {
  return local(layout_detail::to_dims(shape, "local", loc));
}
template <std::integral... D> Layout row_major(D... dims) { return row_major(std::vector<std::int64_t>{std::int64_t(dims)...}); }
template <std::integral... D> Layout column_major(D... dims) { return column_major(std::vector<std::int64_t>{std::int64_t(dims)...}); }
template <std::integral... D> Layout local(D... dims) { return local(std::vector<std::int64_t>{std::int64_t(dims)...}); }

/// outer * inner (ranks must agree); see the composition law at the top of this file.
inline Layout compose(const Layout &outer, const Layout &inner,
                      std::source_location loc = std::source_location::current()) {
  HIDET_ASSERT(outer && inner, "compose of a null layout");
  if (outer->shape.size() != inner->shape.size())
    throw DSLError(str_cat("layout composition ", outer->str(), " * ", inner->str(),
                           ": ranks differ (", outer->shape.size(), " vs ", inner->shape.size(),
                           "); compose layouts of the same rank"),
                   loc);
  std::vector<Expr> shape;
  for (std::size_t k = 0; k < outer->shape.size(); ++k) shape.push_back(fold_mul_any(outer->shape[k], inner->shape[k]));
  return Layout(new ComposedLayoutNode(std::move(shape), outer, inner));
}
/// lhs ++ rhs; see the concatenation law at the top of this file.
inline Layout concat(const Layout &lhs, const Layout &rhs) {
  HIDET_ASSERT(lhs && rhs, "concat of a null layout");
  std::vector<Expr> shape = lhs->shape;
  shape.insert(shape.end(), rhs->shape.begin(), rhs->shape.end());
  return Layout(new ConcatLayoutNode(std::move(shape), lhs, rhs));
}
inline Layout operator*(const Layout &outer, const Layout &inner) { return compose(outer, inner); }
inline Layout operator+(const Layout &lhs, const Layout &rhs) { return concat(lhs, rhs); }

/// Hidet's swizzle: see the law at the top of this file. `regards_dim` defaults to the other
/// dimension of a rank-2 layout. The swizzled dimension must be a constant power of two.
inline Layout swizzle(const Layout &base, int dim, int regards_dim = -1, int log_step = 0,
                      std::source_location loc = std::source_location::current()) {
  HIDET_ASSERT(base, "swizzle of a null layout");
  int rank = int(base->shape.size());
  if (regards_dim < 0) {
    if (rank != 2)
      throw DSLError(str_cat("swizzle(", base->str(), ", dim=", dim, "): regards_dim can only be omitted for rank-2 "
                             "layouts; this one has rank ", rank),
                     loc);
    regards_dim = 1 - dim;
  }
  if (dim < 0 || dim >= rank || regards_dim >= rank || dim == regards_dim)
    throw DSLError(str_cat("swizzle(", base->str(), ", dim=", dim, ", regards_dim=", regards_dim,
                           "): dims must be distinct and in [0, ", rank, ")"),
                   loc);
  if (log_step < 0 || log_step > 30)
    throw DSLError(str_cat("swizzle(", base->str(), "): log_step ", log_step, " is out of [0, 30]"), loc);
  std::int64_t extent, regards;
  if (!as_const_int(base->shape[dim], extent) || !as_const_int(base->shape[regards_dim], regards))
    throw DSLError(str_cat("swizzle(", base->str(), "): the swizzled and regarded dimensions must be constants"), loc);
  if (extent <= 0 || (extent & (extent - 1)) != 0)
    throw DSLError(str_cat("swizzle(", base->str(), ", dim=", dim, "): the swizzled dimension has extent ", extent,
                           ", which is not a power of two"),
                   loc);
  return Layout(new SwizzleLayoutNode(base, dim, regards_dim, log_step));
}

// ---- host-side evaluation -------------------------------------------------------------------

/// The layout's shape as integers; throws hidet::Error when a dimension is symbolic.
inline std::vector<std::int64_t> const_shape(const Layout &l) {
  std::vector<std::int64_t> out;
  for (auto &d : l->shape) {
    std::int64_t v;
    if (!as_const_int(d, v)) throw Error(str_cat("layout ", l->str(), " has a symbolic dimension"));
    out.push_back(v);
  }
  return out;
}

/// The offset of index `idx`, evaluated on the host (constant dims only).
inline std::int64_t offset_of(const Layout &l, const std::vector<std::int64_t> &idx) {
  if (idx.size() != l->shape.size())
    throw Error(str_cat("layout ", l->str(), " has rank ", l->shape.size(), " but ", idx.size(), " indices were given"));
  std::vector<Expr> e;
  for (auto i : idx) e.push_back(layout_detail::const_index(i));
  auto v = try_evaluate(l->offset(e));
  if (!v) throw Error(str_cat("offset of layout ", l->str(), " is not a constant (symbolic dimensions?)"));
  return std::int64_t(*v);
}

/// The storage size, evaluated on the host (constant dims only).
inline std::int64_t storage_size_of(const Layout &l) {
  auto v = try_evaluate(l->storage_size());
  if (!v) throw Error(str_cat("storage size of layout ", l->str(), " is not a constant"));
  return std::int64_t(*v);
}

/// A table of the offsets of a rank-1 or rank-2 layout with constant dims, one row per line, e.g.
/// for column_major(2, 3): "0 2 4\n1 3 5\n".
inline std::string offset_table(const Layout &l) {
  auto s = const_shape(l);
  if (s.size() != 1 && s.size() != 2)
    throw Error(str_cat("offset_table(", l->str(), "): only rank-1 and rank-2 layouts print as a table"));
  std::int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.back();
  std::vector<std::string> cells;
  std::size_t width = 1;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      auto o = s.size() == 2 ? offset_of(l, {i, j}) : offset_of(l, {j});
      cells.push_back(std::to_string(o));
      width = std::max(width, cells.back().size());
    }
  std::string out;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      auto &c = cells[std::size_t(i * cols + j)];
      out += std::string(j ? 1 : 0, ' ') + std::string(width - c.size(), ' ') + c;
    }
    out += '\n';
  }
  return out;
}

} // namespace hidet::ir
