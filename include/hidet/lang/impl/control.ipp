// Definitions for hidet/lang/control.hpp.
#pragma once
#include "hidet/lang/control.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE void IfChain::branches_check(SourceLoc loc) {
  if (current_builder() != b_ || b_->scope_depth() != depth_ || b_->current_scope().size() != index_ + 1 ||
      !b_->current_scope()[index_].same_as(last_))
    throw DSLError("else_/else_if must directly follow its if_ (as in if_(c, ...).else_(...))", loc);
}

HIDET_INLINE void IfChain::rebuild() {
  ir::Stmt s = else_body_;
  for (auto it = branches_.rbegin(); it != branches_.rend(); ++it)
    s = ir::IfStmtNode::make(it->cond, it->body, s, it->loc);
  b_->current_scope()[index_] = s;
  last_ = s;
}

HIDET_INLINE Range Range::unroll(int factor) const {
  Range r = *this;
  r.unroll_factor = factor;
  return r;
}

HIDET_INLINE IfChain make_if(FunctionBuilder &b, ir::Expr cond, ir::Stmt then, SourceLoc loc) {
  auto s = ir::IfStmtNode::make(cond, then, {}, loc);
  b.emit(s);
  IfChain chain(&b, b.scope_depth(), b.current_scope().size() - 1, loc);
  chain.branches_.push_back({cond, then, loc});
  chain.last_ = s;
  return chain;
}

HIDET_INLINE Range range(const Operand &stop) {
  Operand zero(0), one(1);
  zero.loc = one.loc = stop.loc;
  return Range{zero, stop, one};
}

namespace detail {
HIDET_INLINE FunctionBuilder &begin_for(const Range &r, const char *hint, SourceLoc loc,
                                        ir::Var &v) {
  auto &b = require_builder("for_", loc);
  for (auto *o : {&r.start, &r.stop, &r.step}) {
    require_scalar(*o, "range");
    if (!ir::dtype_of(o->node->type).is_integer())
      throw DSLError(str_cat("range bounds must be integers, got ", ir::dtype_of(o->node->type)), o->loc);
  }
  DataType t = binary_type(r.start, r.stop, "range");
  std::int64_t step;
  if (ir::as_const_int(r.step.node, step) && step == 0) throw DSLError("range step is 0", r.step.loc);
  v = ir::make_var(ir::scalar_type(t), hint, loc);
  b.push_scope();
  b.loop_depth++;
  return b;
}

HIDET_INLINE void end_for(FunctionBuilder &b, const Range &r, const ir::Var &v, SourceLoc loc) {
  b.loop_depth--;
  DataType t = ir::dtype_of(v->type);
  auto s = b.pop_scope();
  b.emit(ir::ForStmtNode::make(v, convert(r.start.node, t, loc), convert(r.stop.node, t, loc),
                               convert(r.step.node, t, loc), r.unroll_factor, s, loc));
}
} // namespace detail

HIDET_INLINE void break_(std::source_location loc_) {
  auto &b = require_builder("break_", loc_);
  if (b.loop_depth == 0) throw DSLError("break_ used outside a loop (for_ or while_)", loc_);
  b.emit(ir::BreakStmtNode::make(loc_));
}

HIDET_INLINE void continue_(std::source_location loc_) {
  auto &b = require_builder("continue_", loc_);
  if (b.loop_depth == 0) throw DSLError("continue_ used outside a loop (for_ or while_)", loc_);
  b.emit(ir::ContinueStmtNode::make(loc_));
}

HIDET_INLINE void return_(std::source_location loc_) {
  auto &b = require_builder("return_", loc_);
  if (b.ret_type && !ir::is_void(b.ret_type))
    throw DSLError(str_cat("function '", b.name(), "' returns a value: use return_(value)"), loc_);
  b.emit(ir::ReturnStmtNode::make({}, loc_));
}

HIDET_INLINE void return_(const Operand &value) {
  auto &b = require_builder("return_", value.loc);
  if (!b.ret_type || ir::is_void(b.ret_type))
    throw DSLError(str_cat("function '", b.name(), "' returns void: use return_() without a value"), value.loc);
  b.emit(ir::ReturnStmtNode::make(detail::store_value(value, ir::dtype_of(b.ret_type), "return_"), value.loc));
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
