// Definitions for hidet/graph/pattern.hpp.
#pragma once

#include "hidet/graph/pattern.hpp"

#include <algorithm>
#include <set>

#include "hidet/error.hpp"
#include "hidet/graph/detail/node_attrs.hpp"
#include "hidet/graph/detail/rewriter.hpp"
#include "hidet/util/env.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

HIDET_INLINE Pattern Pattern::any(std::string name) {
  Pattern p;
  p.kind_ = Kind::any;
  p.capture_ = std::move(name);
  return p;
}

HIDET_INLINE Pattern Pattern::constant(std::string name) {
  Pattern p;
  p.kind_ = Kind::constant;
  p.capture_ = std::move(name);
  return p;
}

HIDET_INLINE Pattern Pattern::op(std::string names, std::vector<Pattern> inputs, std::string name) {
  Pattern p;
  p.kind_ = Kind::op;
  for (std::size_t pos = 0; pos <= names.size();) {
    std::size_t bar = std::min(names.find('|', pos), names.size());
    if (bar > pos) p.names_.push_back(names.substr(pos, bar - pos));
    pos = bar + 1;
  }
  if (p.names_.empty()) throw ValueError("Pattern::op: give at least one operator name");
  p.inputs_ = std::move(inputs);
  p.capture_ = std::move(name);
  return p;
}

HIDET_INLINE Pattern Pattern::one_of(std::vector<Pattern> alternatives) {
  if (alternatives.empty()) throw ValueError("Pattern::one_of: give at least one alternative");
  Pattern p;
  p.kind_ = Kind::one_of;
  p.inputs_ = std::move(alternatives);
  return p;
}

HIDET_INLINE std::string Pattern::str() const {
  auto list = [](const std::vector<Pattern> &ps, const char *sep) {
    std::string s;
    for (const auto &p : ps) s += (s.empty() ? "" : sep) + p.str();
    return s;
  };
  switch (kind_) {
  case Kind::any: return "any " + capture_;
  case Kind::constant: return "constant " + capture_;
  case Kind::one_of: return "one_of(" + list(inputs_, " | ") + ")";
  default: break;
  }
  std::string names;
  for (const auto &n : names_) names += (names.empty() ? "" : "|") + n;
  return names + "(" + list(inputs_, ", ") + ")";
}

HIDET_INLINE const Tensor &Match::operator[](const std::string &name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw ValueError(str_cat("rewrite: the pattern captured no tensor named '", name, "'"));
  return it->second;
}

HIDET_INLINE std::string Match::attr(const std::string &op, const std::string &key) const {
  auto it = ops.find(op);
  if (it == ops.end()) throw ValueError(str_cat("rewrite: the pattern captured no operator named '", op, "'"));
  return detail::attr_text(it->second->attrs(), key);
}

HIDET_INLINE const std::string &Match::op_name(const std::string &op) const {
  auto it = ops.find(op);
  if (it == ops.end()) throw ValueError(str_cat("rewrite: the pattern captured no operator named '", op, "'"));
  return it->second->name();
}

/// Matches patterns against a graph's tensors (see the top of pattern.hpp).
struct PatternMatcher {
  Match match;                            ///< captured tensors of the rewritten graph (old ones)
  std::vector<const Operator *> interior; ///< matched operators other than the root

  bool capture(const std::string &name, const Tensor &t) {
    if (name.empty()) return true;
    auto it = match.tensors.find(name);
    if (it != match.tensors.end()) return detail::identity_of(it->second) == detail::identity_of(t);
    match.tensors[name] = t;
    return true;
  }

  bool match_op(const Pattern &p, const std::shared_ptr<const Operator> &op) {
    if (std::find(p.names_.begin(), p.names_.end(), op->name()) == p.names_.end()) return false;
    if (op->inputs().size() != p.inputs_.size() || op->num_outputs() != 1) return false;
    for (std::size_t i = 0; i < p.inputs_.size(); ++i)
      if (!match_tensor(p.inputs_[i], op->inputs()[i])) return false;
    if (!p.capture_.empty()) match.ops[p.capture_] = op;
    return true;
  }

  bool match_tensor(const Pattern &p, const Tensor &t) {
    switch (p.kind_) {
    case Pattern::Kind::any: return capture(p.capture_, t);
    case Pattern::Kind::constant: return !t.is_symbolic() && t.defined() && capture(p.capture_, t);
    case Pattern::Kind::one_of:
      for (const auto &alt : p.inputs_) {
        PatternMatcher saved = *this;
        if (match_tensor(alt, t)) return true;
        *this = std::move(saved);
      }
      return false;
    default: break;
    }
    auto tr = t.trace();
    if (!tr || tr.index != 0 || !match_op(p, tr.op)) return false;
    interior.push_back(tr.op.get());
    return true;
  }

  /// Matches `p` at the root operator `op` (op patterns, or one_of of them).
  bool match_root(const Pattern &p, const std::shared_ptr<const Operator> &op) {
    if (p.kind_ == Pattern::Kind::one_of) {
      for (const auto &alt : p.inputs_) {
        PatternMatcher saved = *this;
        if (match_root(alt, op)) return true;
        *this = std::move(saved);
      }
      return false;
    }
    return p.kind_ == Pattern::Kind::op && match_op(p, op);
  }
};

namespace detail {
/// One sweep of rewrite(); `fired_any` is set when a rule fired.
inline FlowGraph rewrite_once(const FlowGraph &graph, const std::vector<RewriteRule> &rules,
                              std::map<std::string, int> *fired, bool &fired_any) {
  const Readers readers(graph);
  std::set<const Operator *> built; // operators of the new graph so far
  return rewrite_nodes(graph, [&](const OpPtr &op, GraphRewriter &rw) -> NodeRewrite {
    for (const auto &rule : rules) {
      if (op->num_outputs() != 1) break;
      PatternMatcher m;
      if (!m.match_root(rule.pattern, op)) continue;
      bool private_interior = true;
      for (const Operator *inner : m.interior)
        private_interior = private_interior && readers.single({inner, 0});
      if (!private_interior) continue;
      Match match = m.match;
      for (auto &[name, t] : match.tensors)
        t = rw.map(t);
      std::optional<Tensor> y;
      try {
        y = rule.replace(match);
      } catch (const ValueError &) {
        y.reset(); // an operator refused the arguments: decline
      }
      const TensorMeta &meta = op->output_metas()[0];
      if (!y || !y->defined() || y->dtype() != meta.dtype || !(y->sym_shape() == meta.shape))
        continue;
      if (auto tr = y->trace(); tr && !built.count(tr.op.get()) && !tr.op->origin())
        std::const_pointer_cast<Operator>(tr.op)->set_origin(op->origin_or_self());
      if (auto tr = y->trace()) built.insert(tr.op.get());
      if (fired) ++(*fired)[rule.name];
      fired_any = true;
      return *y;
    }
    std::vector<Tensor> outs = rw.keep(*op);
    for (const auto &t : outs)
      built.insert(t.trace().op.get());
    return outs;
  });
}
} // namespace detail

HIDET_INLINE FlowGraph rewrite(const FlowGraph &graph, const std::vector<RewriteRule> &all_rules,
                               std::map<std::string, int> *fired) {
  // HIDET_GRAPH_RULES_OFF: rules named there (comma-separated) are left out, to bisect a graph's
  // results on a GPU (e.g. attention_repeated_kv).
  std::vector<RewriteRule> rules;
  const std::string off = util::env_string_or("HIDET_GRAPH_RULES_OFF", "");
  for (const auto &r : all_rules)
    if (("," + off + ",").find("," + r.name + ",") == std::string::npos) rules.push_back(r);
  FlowGraph g = graph;
  for (int round = 0; round < 32; ++round) {
    bool fired_any = false;
    g = detail::rewrite_once(g, rules, fired, fired_any);
    if (!fired_any) return g;
  }
  return g;
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
