// Control flow in Hidet Script: if_/else_if/else_, for_ over ranges and grids, while_,
// break_/continue_/return_. Bodies are C++ lambdas; what they emit goes into the branch or loop.
#pragma once

#include <array>
#include <utility>
#include <vector>

#include "hidet/lang/var.hpp"

namespace hidet::lang {

/// Handle returned by if_ to attach else_if/else_ branches.
class IfChain {
public:
  IfChain(FunctionBuilder *b, std::size_t depth, std::size_t index, SourceLoc loc)
      : b_(b), depth_(depth), index_(index), loc_(loc) {}

  /// Adds `else if (cond) { body }`.
  template <class F> IfChain else_if(const Operand &cond, F &&body) {
    auto c = detail::to_bool(cond, "else_if");
    branches_check(cond.loc);
    b_->push_scope();
    body();
    branches_.push_back({c, b_->pop_scope(), cond.loc});
    rebuild();
    return *this;
  }
  /// Adds `else { body }`.
  template <class F> void else_(F &&body, HIDET_LOC_PARAM) {
    branches_check(loc_);
    b_->push_scope();
    body();
    else_body_ = b_->pop_scope();
    rebuild();
  }

  struct Branch {
    ir::Expr cond;
    ir::Stmt body;
    SourceLoc loc;
  };
  std::vector<Branch> branches_;

private:
  void branches_check(SourceLoc loc) {
    if (current_builder() != b_ || b_->scope_depth() != depth_ || b_->current_scope().size() != index_ + 1 ||
        !b_->current_scope()[index_].same_as(last_))
      throw DSLError("else_/else_if must directly follow its if_ (as in if_(c, ...).else_(...))", loc);
  }
  void rebuild() {
    ir::Stmt s = else_body_;
    for (auto it = branches_.rbegin(); it != branches_.rend(); ++it)
      s = ir::IfStmtNode::make(it->cond, it->body, s, it->loc);
    b_->current_scope()[index_] = s;
    last_ = s;
  }
  friend IfChain make_if(FunctionBuilder &, ir::Expr, ir::Stmt, SourceLoc);
  FunctionBuilder *b_;
  std::size_t depth_, index_;
  SourceLoc loc_;
  ir::Stmt else_body_;
  ir::Stmt last_;
};

inline IfChain make_if(FunctionBuilder &b, ir::Expr cond, ir::Stmt then, SourceLoc loc) {
  auto s = ir::IfStmtNode::make(cond, then, {}, loc);
  b.emit(s);
  IfChain chain(&b, b.scope_depth(), b.current_scope().size() - 1, loc);
  chain.branches_.push_back({cond, then, loc});
  chain.last_ = s;
  return chain;
}

/// if (cond) { body }; returns a chain for .else_if(...) / .else_(...).
template <class F> IfChain if_(const Operand &cond, F &&body) {
  auto &b = require_builder("if_", cond.loc);
  auto c = detail::to_bool(cond, "if_");
  b.push_scope();
  body();
  return make_if(b, c, b.pop_scope(), cond.loc);
}

/// A loop range: start, stop, step and an unroll hint.
struct Range {
  Operand start, stop, step;
  int unroll_factor = 0;
  /// Asks codegen to unroll (fully by default, or by `factor`).
  Range unroll(int factor = -1) const {
    Range r = *this;
    r.unroll_factor = factor;
    return r;
  }
};

/// range(stop), range(start, stop), range(start, stop, step): like Python's range.
inline Range range(const Operand &stop) {
  Operand zero(0), one(1);
  zero.loc = one.loc = stop.loc;
  return Range{zero, stop, one};
}
inline Range range(const Operand &start, const Operand &stop, const Operand &step = Operand(1)) {
  return Range{start, stop, step};
}

namespace detail {
template <class F> void emit_for(const Range &r, const char *hint, SourceLoc loc, F &&body) {
  auto &b = require_builder("for_", loc);
  for (auto *o : {&r.start, &r.stop, &r.step}) {
    require_scalar(*o, "range");
    if (!ir::dtype_of(o->node->type).is_integer())
      throw DSLError(str_cat("range bounds must be integers, got ", ir::dtype_of(o->node->type)), o->loc);
  }
  DataType t = binary_type(r.start, r.stop, "range");
  std::int64_t step;
  if (ir::as_const_int(r.step.node, step) && step == 0) throw DSLError("range step is 0", r.step.loc);
  auto v = ir::make_var(ir::scalar_type(t), hint, loc);
  b.push_scope();
  b.loop_depth++;
  try {
    body(Var(v));
  } catch (...) {
    b.loop_depth--;
    throw;
  }
  b.loop_depth--;
  auto s = b.pop_scope();
  b.emit(ir::ForStmtNode::make(v, convert(r.start.node, t, loc), convert(r.stop.node, t, loc),
                               convert(r.step.node, t, loc), r.unroll_factor, s, loc));
}
} // namespace detail

/// for (i in range) { body(i) }
template <class F> void for_(const Range &r, F &&body, HIDET_LOC_PARAM) {
  detail::emit_for(r, "i", loc_, [&](Var i) { body(i); });
}

/// A multi-dimensional iteration space: grid(4, 8) iterates i in [0,4), j in [0,8).
template <std::size_t N> struct Grid {
  std::array<Range, N> ranges;
  Grid unroll(int factor = -1) const {
    Grid g = *this;
    for (auto &r : g.ranges) r.unroll_factor = factor;
    return g;
  }
};
template <class... Ops> Grid<sizeof...(Ops)> grid(const Ops &...extents) {
  return Grid<sizeof...(Ops)>{{range(Operand(extents))...}};
}

namespace detail {
template <std::size_t N, std::size_t I, class F> void emit_grid(const Grid<N> &g, SourceLoc loc, std::vector<Var> &vars, F &body) {
  if constexpr (I == N) {
    [&]<std::size_t... K>(std::index_sequence<K...>) { body(vars[K]...); }(std::make_index_sequence<N>{});
  } else {
    static const char *hints[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
    emit_for(g.ranges[I], hints[I % 8], loc, [&](Var v) {
      vars.push_back(v);
      emit_grid<N, I + 1>(g, loc, vars, body);
      vars.pop_back();
    });
  }
}
} // namespace detail

/// Nested loops over a grid: for_(grid(4, 8), [&](Var i, Var j) { ... }).
template <std::size_t N, class F> void for_(const Grid<N> &g, F &&body, HIDET_LOC_PARAM) {
  std::vector<Var> vars;
  detail::emit_grid<N, 0>(g, loc_, vars, body);
}

/// while (cond) { body }; cond is re-evaluated before every iteration.
template <class F> void while_(const Operand &cond, F &&body) {
  auto &b = require_builder("while_", cond.loc);
  auto c = detail::to_bool(cond, "while_");
  b.push_scope();
  b.loop_depth++;
  try {
    body();
  } catch (...) {
    b.loop_depth--;
    throw;
  }
  b.loop_depth--;
  b.emit(ir::WhileStmtNode::make(c, b.pop_scope(), cond.loc));
}

/// Leaves the innermost loop.
inline void break_(HIDET_LOC_PARAM) {
  auto &b = require_builder("break_", loc_);
  if (b.loop_depth == 0) throw DSLError("break_ used outside a loop (for_ or while_)", loc_);
  b.emit(ir::BreakStmtNode::make(loc_));
}
/// Skips to the next iteration of the innermost loop.
inline void continue_(HIDET_LOC_PARAM) {
  auto &b = require_builder("continue_", loc_);
  if (b.loop_depth == 0) throw DSLError("continue_ used outside a loop (for_ or while_)", loc_);
  b.emit(ir::ContinueStmtNode::make(loc_));
}
/// Returns from a kernel or a void device function.
inline void return_(HIDET_LOC_PARAM) {
  auto &b = require_builder("return_", loc_);
  if (b.ret_type && !ir::is_void(b.ret_type))
    throw DSLError(str_cat("function '", b.name(), "' returns a value: use return_(value)"), loc_);
  b.emit(ir::ReturnStmtNode::make({}, loc_));
}
/// Returns a value from a device function.
inline void return_(const Operand &value) {
  auto &b = require_builder("return_", value.loc);
  if (!b.ret_type || ir::is_void(b.ret_type))
    throw DSLError(str_cat("function '", b.name(), "' returns void: use return_() without a value"), value.loc);
  b.emit(ir::ReturnStmtNode::make(detail::store_value(value, ir::dtype_of(b.ret_type), "return_"), value.loc));
}

} // namespace hidet::lang
