// A readable, stable text form of the IR, used by tests, error messages and the HIDET_DUMP_IR
// dumps of the lowering pipeline.
//
//  * Variables print as their hint, made unique per printer in order of first appearance
//    (x, x_1, x_2, ...). Identity decides: two distinct variables with the same hint print as two
//    names; an empty hint prints as "v".
//  * Constants carry their dtype where it is not the default: 3 (i32), 3i64, 3u32, 1.5f (f32),
//    2.0 (f64), f16(1.5), bf16(1.5), true/false.
//  * Expressions print with C precedence and only the parentheses that precedence needs.
//  * Statements print one per line, indented by two spaces per block.
//  * Layouts print with LayoutNode::str().
#pragma once

#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "hidet/ir/func.hpp"
#include "hidet/ir/layout.hpp"

namespace hidet::ir {

/// Prints IR nodes to a stream; variable names stay consistent across calls on one printer.
class IRPrinter {
public:
  explicit IRPrinter(std::ostream &os) : os_(os) {}

  void print(const Expr &e) { print_expr(e, 0); }
  void print(const Type &t) { print_type(t); }
  void print(const Stmt &s) { print_stmt(s, 0); }
  void print(const Function &f) { print_function(f); }
  void print(const Module &m);

  /// The unique printed name of a variable (assigned on first use).
  const std::string &name_of(const VarNode *v);

private:
  // C operator precedence: a larger number binds tighter.
  static constexpr int kPrimary = 100, kUnary = 90, kSelect = 20;
  static int precedence(BinaryOp op);
  static int precedence(const Expr &e);
  static std::string float_text(double v, bool as_f32);
  void print_constant(const ConstantNode *c);
  void print_list(const std::vector<Expr> &xs);
  /// Prints `e`, parenthesized when its precedence is below `min_prec`.
  void print_expr(const Expr &e, int min_prec);
  void print_string(const std::string &s);
  void print_type(const Type &t);
  void indent(int level);
  /// Prints `{`, the block body one level deeper, and `}` (no trailing newline).
  void print_block(const Stmt &body, int level);
  void print_operands(const std::vector<AsmOperand> &ops);
  void print_stmt(const Stmt &s, int level);
  void print_dims(const char *label, const std::array<Expr, 3> &dims);
  void print_function(const Function &f);

  std::ostream &os_;
  std::unordered_map<const VarNode *, std::string> names_;
  std::unordered_set<std::string> used_;
};

/// The text form of a node, printed with a fresh printer (names start over for each call).
template <class T>
  requires requires(IRPrinter &p, const T &x) { p.print(x); }
std::string to_string(const T &node) {
  std::ostringstream os;
  IRPrinter(os).print(node);
  return os.str();
}
inline std::string to_string(const Var &v) { return to_string(Expr(v)); }

inline std::ostream &operator<<(std::ostream &os, const Expr &e) { return os << to_string(e); }
inline std::ostream &operator<<(std::ostream &os, const Var &v) { return os << to_string(v); }
inline std::ostream &operator<<(std::ostream &os, const Type &t) { return os << to_string(t); }
inline std::ostream &operator<<(std::ostream &os, const Stmt &s) { return os << to_string(s); }
inline std::ostream &operator<<(std::ostream &os, const Function &f) { return os << to_string(f); }
inline std::ostream &operator<<(std::ostream &os, const Module &m) { return os << to_string(m); }

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/printer.ipp"
#endif
