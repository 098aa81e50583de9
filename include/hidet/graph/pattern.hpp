// Graph rewrites declared as (pattern, replacement) pairs in a small pattern language.
//
// A Pattern describes a tree of operators ending in one tensor:
//
//   using P = hidet::graph::Pattern;
//   P scores = P::op("Matmul", {P::any("q"), P::op("Permute", {P::any("k")}, "kt")});
//   P scaled = P::one_of({P::op("Mul|Div", {scores}, "scale"), scores});
//   P attention = P::op("Matmul", {P::op("Softmax", {scaled}, "softmax"), P::any("v")});
//
// - P::any(name) matches any tensor and captures it; a name used twice must meet the same tensor.
// - P::constant(name) matches a tensor with data (a constant of the graph) and captures it.
// - P::op(names, inputs, name) matches output 0 of an operator whose name is one of `names`
//   ("Mul|Div") with exactly as many inputs, each matching its pattern; `name` captures the
//   operator (for its attributes).
// - P::one_of(alternatives) matches the first alternative that matches.
//
// A RewriteRule pairs a pattern with a replacement function: given the Match (captured tensors,
// already of the graph being built, and captured operators), it builds the replacement from
// hidet::ops calls on them and returns it, or returns nothing to decline (an attribute it cannot
// serve, say). graph::rewrite(graph, rules) tries the rules at every operator in order (the first
// rule that matches and accepts wins) and repeats until no rule fires. A match never swallows a
// tensor used elsewhere: every operator of the match but its root must have its output read only
// by its parent in the match, and must not be a graph output. A replacement must have the shape
// and dtype of the tensor it replaces, or the rule is declined; a ValueError thrown by the
// replacement (an operator refusing its arguments) declines it too. The operator that makes
// the replacement records the root as its origin (for the correctness report).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hidet/graph/flow_graph.hpp"

namespace hidet::graph {

/// A pattern over a graph's tensors (see the top of the file).
class Pattern {
public:
  enum class Kind { any, constant, op, one_of };
  /// Any tensor, captured as `name`.
  static Pattern any(std::string name);
  /// A tensor with data, captured as `name`.
  static Pattern constant(std::string name);
  /// Output 0 of an operator named one of `names` ("Mul|Div") whose inputs match `inputs`; the
  /// operator is captured as `name` when it is not empty.
  static Pattern op(std::string names, std::vector<Pattern> inputs, std::string name = "");
  /// The first of `alternatives` that matches.
  static Pattern one_of(std::vector<Pattern> alternatives);

  Kind kind() const { return kind_; }
  /// "Matmul(Softmax(any q), any v)".
  std::string str() const;

private:
  friend struct PatternMatcher;
  Kind kind_ = Kind::any;
  std::vector<std::string> names_; ///< operator names (op)
  std::string capture_;            ///< the capture name
  std::vector<Pattern> inputs_;    ///< operand patterns (op) or alternatives (one_of)
};

/// What a pattern matched: the captured tensors (of the graph being built) and operators (of the
/// graph being rewritten).
struct Match {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::shared_ptr<const Operator>> ops;

  /// The captured tensor `name` (a ValueError names it when absent).
  const Tensor &operator[](const std::string &name) const;
  bool has(const std::string &name) const { return tensors.count(name) || ops.count(name); }
  /// The printed value of attribute `key` of the captured operator `op` ("" when absent).
  std::string attr(const std::string &op, const std::string &key) const;
  /// The name of the captured operator `op` ("Mul").
  const std::string &op_name(const std::string &op) const;
};

/// A rewrite: `pattern` and the replacement it is rewritten to (see the top of the file).
struct RewriteRule {
  std::string name;
  Pattern pattern;
  std::function<std::optional<Tensor>(const Match &)> replace;
};

/// Applies `rules` until none fires (see the top of the file); the input graph is unchanged.
/// `fired`, when given, receives the number of rewrites of each rule by name.
FlowGraph rewrite(const FlowGraph &graph, const std::vector<RewriteRule> &rules,
                  std::map<std::string, int> *fired = nullptr);

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/pattern.ipp"
#endif
