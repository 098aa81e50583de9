// Definitions for hidet/lang/types.hpp.
#pragma once
#include "hidet/lang/types.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE DimArg::DimArg(long long v, std::source_location loc_) : e(ir::int32(v)), loc(loc_) {
  if (v > INT32_MAX) throw DSLError(str_cat("tensor dimension ", v, " exceeds the i32 range"), loc);
  check(v);
}

HIDET_INLINE DimArg::DimArg(const Expr &x, std::source_location loc_) : e(x.ir()), loc(loc_) {
  if (!e || !ir::is_scalar(e->type) || !ir::dtype_of(e->type).is_integer())
    throw DSLError("a tensor dimension must be an integer or an integer expression", loc);
  if (ir::dtype_of(e->type) != dtypes::i32) e = ir::CastNode::make(e, ir::scalar_type(dtypes::i32), loc);
}

HIDET_INLINE void DimArg::check(long long v) const {
  if (v < 0) throw DSLError(str_cat("tensor dimension ", v, " is negative"), loc);
}

HIDET_INLINE TensorSpec TensorSpec::operator[](const DimArg &d) const {
  TensorSpec t = *this;
  t.shape_.push_back(d.e);
  return t;
}

HIDET_INLINE TensorSpec TensorSpec::with_layout(ir::Layout l, std::source_location loc_) const {
  HIDET_ASSERT(l, "with_layout(null)");
  if (!shape_.empty() && !layout_shape_matches(*l)) {
    auto dims = [](const std::vector<ir::Expr> &s) {
      std::string r;
      for (std::size_t i = 0; i < s.size(); ++i) {
        std::int64_t v;
        r += (i ? ", " : "") + (ir::as_const_int(s[i], v) ? std::to_string(v) : std::string("?"));
      }
      return "[" + r + "]";
    };
    throw DSLError(str_cat("layout ", l->str(), " has shape ", dims(l->shape), " but the tensor (",
                           dtype_, ") has shape ", dims(shape_),
                           "; give the tensor and its layout the same shape"),
                   loc_);
  }
  TensorSpec t = *this;
  t.layout_ = std::move(l);
  return t;
}

HIDET_INLINE TensorSpec TensorSpec::named(std::string n) const {
  TensorSpec t = *this;
  t.name_ = std::move(n);
  return t;
}

HIDET_INLINE bool TensorSpec::layout_shape_matches(const ir::LayoutNode &l) const {
  if (l.shape.size() != shape_.size()) return false;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    std::int64_t a, b;
    if (ir::as_const_int(shape_[i], a) && ir::as_const_int(l.shape[i], b) && a != b) return false;
  }
  return true;
}

HIDET_INLINE Expr symbol(std::string name, std::source_location loc_) {
  return Expr(ir::Expr(ir::make_var(ir::scalar_type(dtypes::i32), std::move(name), loc_)));
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
