// Type specifications in Hidet Script: `f32` is a dtype, `f32[m][k]` a tensor type whose dims
// are integers or symbolic dimensions (`symbol("m")`), optionally with a layout.
#pragma once

#include <string>
#include <vector>

#include "hidet/ir/layout.hpp"
#include "hidet/lang/expr.hpp"

namespace hidet {

namespace lang {

/// One dimension of a tensor type: an integer, or an integer expression (a symbolic dim).
struct DimArg {
  ir::Expr e;
  SourceLoc loc;
  DimArg(int v, HIDET_LOC_PARAM) : e(ir::int32(v)), loc(loc_) { check(v); }
  DimArg(long v, HIDET_LOC_PARAM) : DimArg(static_cast<long long>(v), loc_) {}
  DimArg(long long v, HIDET_LOC_PARAM);
  DimArg(unsigned v, HIDET_LOC_PARAM) : DimArg(static_cast<long long>(v), loc_) {}
  DimArg(unsigned long v, HIDET_LOC_PARAM) : DimArg(static_cast<long long>(v), loc_) {}
  DimArg(const Expr &x, HIDET_LOC_PARAM);

private:
  void check(long long v) const;
};

/// A tensor type under construction: dtype, shape, optional layout and a parameter name.
class TensorSpec {
public:
  TensorSpec(DataType d, std::vector<ir::Expr> shape) : dtype_(d), shape_(std::move(shape)) {}
  /// Appends a dimension: f32[4][8].
  TensorSpec operator[](const DimArg &d) const;
  /// The same type with a layout; the layout's shape must equal the tensor's (checked for
  /// constant dims when the tensor's shape is known), else a DSLError at the caller's line.
  TensorSpec with_layout(ir::Layout l, HIDET_LOC_PARAM) const;
  /// Names the parameter (used in messages and generated code).
  TensorSpec named(std::string n) const;
  DataType dtype() const { return dtype_; }
  const std::vector<ir::Expr> &shape() const { return shape_; }
  const ir::Layout &layout() const { return layout_; }
  const std::string &name() const { return name_; }
  /// The IR tensor type in memory scope `s`.
  ir::Type ir_type(ir::Scope s) const { return ir::TensorTypeNode::make(dtype_, shape_, s, layout_); }

private:
  bool layout_shape_matches(const ir::LayoutNode &l) const;
  DataType dtype_;
  std::vector<ir::Expr> shape_;
  ir::Layout layout_;
  std::string name_;
};

/// A dtype that can start a tensor type: f32[4][8]. Usable wherever a DataType is.
struct DTypeSpec : DataType {
  constexpr DTypeSpec(DTypeCode c) : DataType(c) {}
  TensorSpec operator[](const DimArg &d) const { return TensorSpec(*this, {d.e}); }
};

/// A symbolic dimension: a named i32 whose value the launcher takes from the argument tensors.
Expr symbol(std::string name, HIDET_LOC_PARAM);

} // namespace lang

// The dtypes, usable both as data types (hidet::randn({2, 3}, hidet::f32)) and to start tensor
// types in Hidet Script (f32[m][k]).
inline constexpr lang::DTypeSpec boolean{DTypeCode::Bool};
inline constexpr lang::DTypeSpec i8{DTypeCode::I8}, i16{DTypeCode::I16}, i32{DTypeCode::I32},
    i64{DTypeCode::I64};
inline constexpr lang::DTypeSpec u8{DTypeCode::U8}, u16{DTypeCode::U16}, u32{DTypeCode::U32},
    u64{DTypeCode::U64};
inline constexpr lang::DTypeSpec f16{DTypeCode::F16}, bf16{DTypeCode::BF16}, f32{DTypeCode::F32},
    f64{DTypeCode::F64};
inline constexpr lang::DTypeSpec f8e4m3{DTypeCode::F8E4M3}, f8e5m2{DTypeCode::F8E5M2};

namespace lang {
using hidet::bf16;
using hidet::boolean;
using hidet::f16;
using hidet::f32;
using hidet::f64;
using hidet::f8e4m3;
using hidet::f8e5m2;
using hidet::i16;
using hidet::i32;
using hidet::i64;
using hidet::i8;
using hidet::u16;
using hidet::u32;
using hidet::u64;
using hidet::u8;
} // namespace lang

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/types.ipp"
#endif
