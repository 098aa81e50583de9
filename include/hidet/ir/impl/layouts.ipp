// Definitions for hidet/ir/layouts.hpp.
#pragma once
#include "hidet/ir/layouts.hpp"

#include <algorithm>
#include <functional>

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

namespace layout_detail {
/// The wider of the two integer dtypes (i64 wins over i32).
HIDET_INLINE DataType wider(const Expr &a, const Expr &b) {
  DataType x = dtype_of(a->type), y = dtype_of(b->type);
  return x.nbytes() >= y.nbytes() ? x : y;
}
/// `e` converted to the integer dtype `d` (constants are rebuilt, other expressions cast).
HIDET_INLINE Expr to_dtype(const Expr &e, DataType d) {
  if (dtype_of(e->type) == d) return e;
  std::int64_t v;
  if (as_const_int(e, v)) return ConstantNode::make_int(d, v, e->loc);
  return CastNode::make(e, scalar_type(d), e->loc);
}
/// An integer constant: i32 when it fits, else i64.
HIDET_INLINE Expr const_index(std::int64_t v) {
  return v == std::int32_t(v) ? int32(v) : ConstantNode::make_int(dtypes::i64, v);
}
} // namespace layout_detail

HIDET_INLINE Expr fold_div(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  Expr x = layout_detail::to_dtype(a, d), y = layout_detail::to_dtype(b, d);
  std::int64_t p = 0, q = 0;
  bool ca = as_const_int(x, p), cb = as_const_int(y, q);
  if (ca && cb && q != 0) return ConstantNode::make_int(d, p / q);
  if (cb && q == 1) return x;
  if (ca && p == 0) return x;
  return BinaryNode::make(BinaryOp::Div, x, y);
}
HIDET_INLINE Expr fold_mod(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  Expr x = layout_detail::to_dtype(a, d), y = layout_detail::to_dtype(b, d);
  std::int64_t p = 0, q = 0;
  bool ca = as_const_int(x, p), cb = as_const_int(y, q);
  if (ca && cb && q != 0) return ConstantNode::make_int(d, p % q);
  if (cb && q == 1) return ConstantNode::make_int(d, 0);
  if (ca && p == 0) return x;
  return BinaryNode::make(BinaryOp::Mod, x, y);
}
HIDET_INLINE Expr fold_xor(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  Expr x = layout_detail::to_dtype(a, d), y = layout_detail::to_dtype(b, d);
  std::int64_t p = 0, q = 0;
  bool ca = as_const_int(x, p), cb = as_const_int(y, q);
  if (ca && cb) return ConstantNode::make_int(d, p ^ q);
  if (cb && q == 0) return x;
  if (ca && p == 0) return y;
  return BinaryNode::make(BinaryOp::BitXor, x, y);
}
HIDET_INLINE Expr fold_add_any(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  return fold_add(layout_detail::to_dtype(a, d), layout_detail::to_dtype(b, d));
}
HIDET_INLINE Expr fold_mul_any(const Expr &a, const Expr &b) {
  DataType d = layout_detail::wider(a, b);
  return fold_mul(layout_detail::to_dtype(a, d), layout_detail::to_dtype(b, d));
}

namespace layout_detail {
/// Dims are equal when both are the same constant or the same expression object.
HIDET_INLINE bool dim_equal(const Expr &a, const Expr &b) {
  std::int64_t x, y;
  if (as_const_int(a, x) && as_const_int(b, y)) return x == y;
  return a.same_as(b);
}
HIDET_INLINE bool dims_equal(const std::vector<Expr> &a, const std::vector<Expr> &b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!dim_equal(a[i], b[i])) return false;
  return true;
}
HIDET_INLINE std::size_t mix(std::size_t h, std::size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}
HIDET_INLINE std::size_t dims_hash(std::size_t h, const std::vector<Expr> &dims) {
  for (auto &d : dims) {
    std::int64_t v;
    h = mix(h, as_const_int(d, v) ? std::hash<std::int64_t>()(v) : std::hash<const void *>()(d.get()));
  }
  return h;
}
/// "4", or the variable's name, or "?" for a compound expression.
HIDET_INLINE std::string dim_str(const Expr &d) {
  std::int64_t v;
  if (as_const_int(d, v)) return std::to_string(v);
  if (auto var = d.as<VarNode>()) return var->hint;
  return "?";
}
HIDET_INLINE std::string dims_str(const std::vector<Expr> &dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dim_str(dims[i]);
  return s;
}
HIDET_INLINE std::vector<Expr> to_dims(const std::vector<std::int64_t> &dims, const char *what,
                                       SourceLoc loc) {
  std::vector<Expr> out;
  for (auto d : dims) {
    if (d < 0) throw DSLError(str_cat(what, ": dimension ", d, " is negative"), loc);
    out.push_back(const_index(d));
  }
  return out;
}
/// A check that `n` indices were given to a layout of rank `rank`.
HIDET_INLINE void check_rank(const LayoutNode &l, std::size_t n) {
  HIDET_ASSERT(l.shape.size() == n, "layout ", l.str(), " of rank ", l.shape.size(), " indexed with ",
               n, " indices");
}
/// The textual form of a child of a composite layout (parenthesised when composite itself).
HIDET_INLINE std::string child_str(const Layout &l, bool composite) {
  return composite ? "(" + l->str() + ")" : l->str();
}
} // namespace layout_detail

HIDET_INLINE Expr StridedLayoutNode::offset(const std::vector<Expr> &idx) const {
  layout_detail::check_rank(*this, idx.size());
  Expr off = int32(0);
  for (std::size_t k = 0; k < idx.size(); ++k) off = fold_add_any(off, fold_mul_any(idx[k], strides[k]));
  return off;
}

HIDET_INLINE Expr StridedLayoutNode::storage_size() const {
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

HIDET_INLINE std::string StridedLayoutNode::str() const {
  if (name != "strided") return name + "(" + layout_detail::dims_str(shape) + ")";
  return "strided([" + layout_detail::dims_str(shape) + "], [" + layout_detail::dims_str(strides) + "])";
}

HIDET_INLINE bool StridedLayoutNode::equals(const LayoutNode &o) const {
  auto *s = dynamic_cast<const StridedLayoutNode *>(&o);
  return s && layout_detail::dims_equal(shape, s->shape) && layout_detail::dims_equal(strides, s->strides);
}

HIDET_INLINE std::size_t StridedLayoutNode::hash() const {
  return layout_detail::dims_hash(layout_detail::dims_hash(0x5171, shape), strides);
}

HIDET_INLINE Expr LocalLayoutNode::offset(const std::vector<Expr> &idx) const {
  layout_detail::check_rank(*this, idx.size());
  return int32(0);
}

HIDET_INLINE Expr LocalLayoutNode::storage_size() const { return int32(1); }

HIDET_INLINE std::string LocalLayoutNode::str() const {
  return "local(" + layout_detail::dims_str(shape) + ")";
}

HIDET_INLINE bool LocalLayoutNode::equals(const LayoutNode &o) const {
  auto *s = dynamic_cast<const LocalLayoutNode *>(&o);
  return s && layout_detail::dims_equal(shape, s->shape);
}

HIDET_INLINE std::size_t LocalLayoutNode::hash() const {
  return layout_detail::dims_hash(0x10ca1, shape);
}

HIDET_INLINE Expr ComposedLayoutNode::offset(const std::vector<Expr> &idx) const {
  layout_detail::check_rank(*this, idx.size());
  std::vector<Expr> oi, ii;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    oi.push_back(fold_div(idx[k], inner->shape[k]));
    ii.push_back(fold_mod(idx[k], inner->shape[k]));
  }
  return fold_add_any(fold_mul_any(outer->offset(oi), inner->storage_size()), inner->offset(ii));
}

HIDET_INLINE Expr ComposedLayoutNode::storage_size() const {
  return fold_mul_any(outer->storage_size(), inner->storage_size());
}

HIDET_INLINE std::string ComposedLayoutNode::str() const {
  return layout_detail::child_str(outer, is_concat(outer)) + " * " +
         layout_detail::child_str(inner, is_composite(inner));
}

HIDET_INLINE bool ComposedLayoutNode::equals(const LayoutNode &o) const {
  auto *s = dynamic_cast<const ComposedLayoutNode *>(&o);
  return s && outer->equals(*s->outer) && inner->equals(*s->inner);
}

HIDET_INLINE std::size_t ComposedLayoutNode::hash() const {
  return layout_detail::mix(layout_detail::mix(0xc0, outer->hash()), inner->hash());
}

HIDET_INLINE Expr ConcatLayoutNode::offset(const std::vector<Expr> &idx) const {
  layout_detail::check_rank(*this, idx.size());
  std::size_t n = lhs->shape.size();
  std::vector<Expr> a(idx.begin(), idx.begin() + n), b(idx.begin() + n, idx.end());
  return fold_add_any(fold_mul_any(lhs->offset(a), rhs->storage_size()), rhs->offset(b));
}

HIDET_INLINE Expr ConcatLayoutNode::storage_size() const {
  return fold_mul_any(lhs->storage_size(), rhs->storage_size());
}

HIDET_INLINE std::string ConcatLayoutNode::str() const {
  return layout_detail::child_str(lhs, ComposedLayoutNode::is_composite(lhs)) + " + " +
         layout_detail::child_str(rhs, ComposedLayoutNode::is_composite(rhs));
}

HIDET_INLINE bool ConcatLayoutNode::equals(const LayoutNode &o) const {
  auto *s = dynamic_cast<const ConcatLayoutNode *>(&o);
  return s && lhs->equals(*s->lhs) && rhs->equals(*s->rhs);
}

HIDET_INLINE std::size_t ConcatLayoutNode::hash() const {
  return layout_detail::mix(layout_detail::mix(0xca, lhs->hash()), rhs->hash());
}

HIDET_INLINE Expr SwizzleLayoutNode::offset(const std::vector<Expr> &idx) const {
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

HIDET_INLINE Expr SwizzleLayoutNode::storage_size() const { return base->storage_size(); }

HIDET_INLINE std::string SwizzleLayoutNode::str() const {
  return str_cat("swizzle(", base->str(), ", dim=", dim, ", regards_dim=", regards_dim,
                 ", log_step=", log_step, ")");
}

HIDET_INLINE bool SwizzleLayoutNode::equals(const LayoutNode &o) const {
  auto *s = dynamic_cast<const SwizzleLayoutNode *>(&o);
  return s && dim == s->dim && regards_dim == s->regards_dim && log_step == s->log_step &&
         base->equals(*s->base);
}

HIDET_INLINE std::size_t SwizzleLayoutNode::hash() const {
  std::size_t h = layout_detail::mix(0x5e, base->hash());
  return layout_detail::mix(layout_detail::mix(layout_detail::mix(h, dim), regards_dim), log_step);
}

HIDET_INLINE bool ComposedLayoutNode::is_composite(const Layout &l) {
  return dynamic_cast<const ComposedLayoutNode *>(l.get()) || dynamic_cast<const ConcatLayoutNode *>(l.get());
}
HIDET_INLINE bool ComposedLayoutNode::is_concat(const Layout &l) {
  return dynamic_cast<const ConcatLayoutNode *>(l.get()) != nullptr;
}

HIDET_INLINE Layout strided(std::vector<Expr> shape, std::vector<Expr> strides,
                            std::source_location loc) {
  if (shape.size() != strides.size())
    throw DSLError(str_cat("strided layout: shape [", layout_detail::dims_str(shape), "] has rank ",
                           shape.size(), " but ", strides.size(), " strides were given"),
                   loc);
  return Layout(new StridedLayoutNode(std::move(shape), std::move(strides), "strided"));
}
HIDET_INLINE Layout strided(const std::vector<std::int64_t> &shape,
                            const std::vector<std::int64_t> &strides, std::source_location loc) {
  std::vector<Expr> st;
  for (auto s : strides) st.push_back(layout_detail::const_index(s));
  return strided(layout_detail::to_dims(shape, "strided", loc), std::move(st), loc);
}

HIDET_INLINE Layout row_major(std::vector<Expr> shape) {
  std::vector<Expr> st(shape.size());
  Expr acc = int32(1);
  for (std::size_t k = shape.size(); k-- > 0;) {
    st[k] = acc;
    acc = fold_mul_any(acc, shape[k]);
  }
  return Layout(new StridedLayoutNode(std::move(shape), std::move(st), "row_major"));
}
HIDET_INLINE Layout column_major(std::vector<Expr> shape) {
  std::vector<Expr> st(shape.size());
  Expr acc = int32(1);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    st[k] = acc;
    acc = fold_mul_any(acc, shape[k]);
  }
  return Layout(new StridedLayoutNode(std::move(shape), std::move(st), "column_major"));
}

HIDET_INLINE Layout row_major(const std::vector<std::int64_t> &shape, std::source_location loc) {
  return row_major(layout_detail::to_dims(shape, "row_major", loc));
}
HIDET_INLINE Layout column_major(const std::vector<std::int64_t> &shape, std::source_location loc) {
  return column_major(layout_detail::to_dims(shape, "column_major", loc));
}
HIDET_INLINE Layout local(const std::vector<std::int64_t> &shape, std::source_location loc) {
  return local(layout_detail::to_dims(shape, "local", loc));
}

HIDET_INLINE Layout compose(const Layout &outer, const Layout &inner, std::source_location loc) {
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
HIDET_INLINE Layout concat(const Layout &lhs, const Layout &rhs) {
  HIDET_ASSERT(lhs && rhs, "concat of a null layout");
  std::vector<Expr> shape = lhs->shape;
  shape.insert(shape.end(), rhs->shape.begin(), rhs->shape.end());
  return Layout(new ConcatLayoutNode(std::move(shape), lhs, rhs));
}

HIDET_INLINE Layout swizzle(const Layout &base, int dim, int regards_dim, int log_step,
                            std::source_location loc) {
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

HIDET_INLINE std::vector<std::int64_t> const_shape(const Layout &l) {
  std::vector<std::int64_t> out;
  for (auto &d : l->shape) {
    std::int64_t v;
    if (!as_const_int(d, v)) throw Error(str_cat("layout ", l->str(), " has a symbolic dimension"));
    out.push_back(v);
  }
  return out;
}

HIDET_INLINE std::int64_t offset_of(const Layout &l, const std::vector<std::int64_t> &idx) {
  if (idx.size() != l->shape.size())
    throw Error(str_cat("layout ", l->str(), " has rank ", l->shape.size(), " but ", idx.size(), " indices were given"));
  std::vector<Expr> e;
  for (auto i : idx) e.push_back(layout_detail::const_index(i));
  auto v = try_evaluate(l->offset(e));
  if (!v) throw Error(str_cat("offset of layout ", l->str(), " is not a constant (symbolic dimensions?)"));
  return std::int64_t(*v);
}

HIDET_INLINE std::int64_t storage_size_of(const Layout &l) {
  auto v = try_evaluate(l->storage_size());
  if (!v) throw Error(str_cat("storage size of layout ", l->str(), " is not a constant"));
  return std::int64_t(*v);
}

HIDET_INLINE std::string offset_table(const Layout &l) {
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

#include "hidet/util/cold_end.hpp"
