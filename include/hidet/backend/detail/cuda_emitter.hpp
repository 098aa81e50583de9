// Internal to codegen: the emitter class whose members the codegen .ipp files define
// (impl/codegen.ipp, impl/codegen_intrinsics.ipp, impl/codegen_primitives.ipp). Public headers do
// not include it.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "hidet/backend/codegen_names.hpp"
#include "hidet/backend/cuda_prelude.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/transforms/simplify_index.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend {
struct CudaSource; // hidet/backend/codegen.hpp
} // namespace hidet::backend

namespace hidet::backend::detail {

/// Emits one module. Features used while printing (f16, bf16, dynamic smem, CAS atomics) are
/// recorded and select the parts of the prelude.
class CudaEmitter {
public:
  explicit CudaEmitter(const ir::Module &m) : mod_(m) {}

  CudaSource run();

  // ---- types ------------------------------------------------------------------------------
  std::string dtype(DataType d) {
    if (d == dtypes::f16)
      features_.f16 = true;
    if (d == dtypes::bf16)
      features_.bf16 = true;
    if (d.is_fp8())
      features_.fp8 = true;
    return std::string(d.c_name());
  }
  /// The C spelling of a scalar, pointer or void type ("float", "half *", "void").
  std::string type(const ir::Type &t) {
    if (auto s = t.as<ir::ScalarTypeNode>())
      return dtype(s->dtype);
    if (auto p = t.as<ir::PointerTypeNode>())
      return type(p->base) + " *";
    if (auto tt = t.as<ir::TensorTypeNode>())
      return dtype(tt->dtype) + " *";
    return "void";
  }

  // ---- expressions ------------------------------------------------------------------------
  std::string expr(const ir::Expr &e);
  std::string constant(const ir::ConstantNode *c);
  std::string cast(const std::string &x, const ir::Type &from, const ir::Type &to);
  /// A scalar of dtype `d` converted to float (f16/bf16/fp8) or left as is.
  std::string to_float(const std::string &x, DataType d) {
    if (d == dtypes::f16)
      return "__half2float(" + x + ")";
    if (d == dtypes::bf16)
      return "__bfloat162float(" + x + ")";
    if (d.is_fp8())
      return "((float)(" + x + "))";
    return x;
  }
  /// A float expression rounded to f16/bf16/fp8 (or left as is for other dtypes); fp8 saturates
  /// (cvt.rn.satfinite).
  std::string from_float(const std::string &x, DataType d) {
    if (d == dtypes::f16)
      return "__float2half_rn(" + x + ")";
    if (d == dtypes::bf16)
      return "__float2bfloat16_rn(" + x + ")";
    if (d.is_fp8())
      return dtype(d) + "((float)(" + x + "))";
    return x;
  }
  std::string call(const ir::CallNode *c);      // impl/codegen_intrinsics.ipp
  std::string math_call(const ir::CallNode *c); // impl/codegen_intrinsics.ipp
  std::string atomic_call(const ir::CallNode *c);
  std::string warp_call(const ir::CallNode *c);
  std::string primitive_call(const ir::CallNode *c); // impl/codegen_primitives.ipp
  std::string var_name(const ir::VarNode *v) {
    auto it = names_.find(v);
    if (it != names_.end())
      return it->second;
    return names_[v] = table_.fresh(v->hint);
  }
  /// `base[offset]` for a tensor element. The row-major offset of several indices that divide
  /// (an element-wise kernel's multi-index unravelled from its flat index, raveled here again) is
  /// simplified without ranges (ir::simplify_index's identities that hold for every value: a
  /// DenseNet concatenation's `out[(((v / 4608) * 6 + (v / 768) % 6) * 6 + (v / 128) % 6) * 128 +
  /// v % 128]` is `out[v]`); lowering simplified each index alone.
  std::string element(const ir::Var &base, const std::vector<ir::Expr> &indices) {
    auto tt = base->type.as<ir::TensorTypeNode>();
    HIDET_ASSERT(tt, "indexing non-tensor ", base->hint);
    ir::Expr offset = ir::tensor_offset(*tt, indices);
    if (indices.size() > 1 && !tt->layout && divides(offset)) offset = ir::simplify_index(offset, {});
    return var_name(base.get()) + "[" + expr(offset) + "]";
  }
  /// True when integer expression `e` has a division or remainder (outside calls and loads).
  static bool divides(const ir::Expr &e) {
    auto b = e.as<ir::BinaryNode>();
    if (!b) return false;
    return b->op == ir::BinaryOp::Div || b->op == ir::BinaryOp::Mod || divides(b->a) || divides(b->b);
  }
  [[noreturn]] void unsupported(const std::string &what, SourceLoc loc) {
    throw DSLError(str_cat("cannot generate CUDA for ", what, " in function '", func_->name, "'"),
                   loc.valid() ? loc : func_->loc);
  }

  // ---- statements -------------------------------------------------------------------------
  void stmt(const ir::Stmt &s);
  void block(const ir::Stmt &s) {
    ++indent_;
    stmt(s);
    --indent_;
  }
  void line(const std::string &text) {
    out_ << std::string(2 * indent_, ' ') << text << '\n';
    ++lines_;
  }
  void raw_line(const std::string &text) {
    out_ << text << '\n';
    ++lines_;
  }
  /// Emits a #line directive when the compiler's current line would differ from `loc`.
  void mark(SourceLoc loc);
  void declare(const ir::DeclareStmtNode *d);
  void function(const ir::Function &f);
  std::string signature(const ir::Function &f);

  const ir::Module &mod_;
  PreludeFeatures features_;
  std::ostringstream out_;
  std::size_t lines_ = 0; ///< lines written to out_
  int indent_ = 0;
  bool have_mark_ = false;
  std::string mark_file_;
  std::uint32_t line_base_ = 0;
  std::size_t lines_at_mark_ = 0;
  NameTable module_names_, table_;
  std::unordered_map<const ir::VarNode *, std::string> names_;
  std::unordered_map<std::string, std::string> func_names_; ///< IR name -> emitted name
  const ir::FunctionNode *func_ = nullptr;
};

} // namespace hidet::backend::detail

#include "hidet/util/cold_end.hpp"
