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
  void branches_check(SourceLoc loc);
  void rebuild();
  friend IfChain make_if(FunctionBuilder &, ir::Expr, ir::Stmt, SourceLoc);
  FunctionBuilder *b_;
  std::size_t depth_, index_;
  SourceLoc loc_;
  ir::Stmt else_body_;
  ir::Stmt last_;
};

/// Emits `if (cond) then` into `b` and returns the chain that extends it.
IfChain make_if(FunctionBuilder &b, ir::Expr cond, ir::Stmt then, SourceLoc loc);

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
  Range unroll(int factor = -1) const;
};

/// range(stop), range(start, stop), range(start, stop, step): like Python's range.
Range range(const Operand &stop);
inline Range range(const Operand &start, const Operand &stop, const Operand &step = Operand(1)) {
  return Range{start, stop, step};
}

namespace detail {
/// Starts a for_ loop: checks the range, makes the loop variable `v` (of the range's promoted
/// type) and opens the body's scope. Returns the active builder.
FunctionBuilder &begin_for(const Range &r, const char *hint, SourceLoc loc, ir::Var &v);
/// Ends a for_ loop started by begin_for: closes the body's scope and emits the loop.
void end_for(FunctionBuilder &b, const Range &r, const ir::Var &v, SourceLoc loc);

template <class F> void emit_for(const Range &r, const char *hint, SourceLoc loc, F &&body) {
  ir::Var v;
  auto &b = begin_for(r, hint, loc, v);
  try {
    body(Var(v));
  } catch (...) {
    b.loop_depth--;
    throw;
  }
  end_for(b, r, v, loc);
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
void break_(HIDET_LOC_PARAM);
/// Skips to the next iteration of the innermost loop.
void continue_(HIDET_LOC_PARAM);
/// Returns from a kernel or a void device function.
void return_(HIDET_LOC_PARAM);
/// Returns a value from a device function.
void return_(const Operand &value);

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/control.ipp"
#endif
