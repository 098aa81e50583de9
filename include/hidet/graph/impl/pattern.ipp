// Definitions for hidet/graph/pattern.hpp.
#pragma once

#include "hidet/graph/pattern.hpp"

#include <cctype>
#include <set>

#include "hidet/error.hpp"

// Uses detail::TensorKey and key_of of flow_graph.ipp, which src/graph.cpp includes first.

namespace hidet::graph {

namespace detail {
/// The value of `key` in printed attributes "a=1, b=[2, 3], c=x" ("" when absent).
inline std::string attr_text(const std::string &attrs, const std::string &key) {
  std::size_t pos = 0;
  while (pos < attrs.size()) {
    std::size_t eq = attrs.find('=', pos);
    if (eq == std::string::npos) break;
    std::string name = attrs.substr(pos, eq - pos);
    std::size_t end = eq + 1;
    if (end < attrs.size() && attrs[end] == '[') end = attrs.find(']', end) + 1;
    else end = std::min(attrs.find(',', end), attrs.size());
    if (name == key) return attrs.substr(eq + 1, end - eq - 1);
    pos = attrs.find_first_not_of(", ", end);
    if (pos == std::string::npos) break;
  }
  return "";
}
/// "[2, 2]" -> {2, 2}.
inline std::vector<std::int64_t> attr_ints(const std::string &attrs, const std::string &key) {
  std::vector<std::int64_t> out;
  std::string t = attr_text(attrs, key);
  for (std::size_t i = 0; i < t.size();) {
    if (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '-') {
      std::size_t used = 0;
      out.push_back(std::stoll(t.substr(i), &used));
      i += used;
    } else {
      ++i;
    }
  }
  return out;
}

/// A tensor's identity: symbolic tensors by their state, constants by storage and offset.
inline std::pair<const void *, std::size_t> identity_of(const Tensor &t) {
  if (t.is_symbolic()) return {t.symbolic_info(), 0};
  return {t.storage().get(), t.offset()};
}
} // namespace detail

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
  std::map<TensorKey, int> uses;
  for (const auto &op : graph.nodes())
    for (const auto &t : op->inputs())
      if (t.is_symbolic()) ++uses[key_of(t)];
  for (const auto &t : graph.outputs()) uses[key_of(t)] += 2; // a graph output is never swallowed
  std::map<TensorKey, Tensor> new_of;
  auto map_input = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic() || !t.trace()) return t;
    return new_of.at(key_of(t));
  };
  std::set<const Operator *> built; // operators of the new graph so far
  for (const auto &op : graph.nodes()) {
    bool done = false;
    for (const auto &rule : rules) {
      if (op->num_outputs() != 1) break;
      PatternMatcher m;
      if (!m.match_root(rule.pattern, op)) continue;
      bool private_interior = true;
      for (const Operator *inner : m.interior) private_interior = private_interior && uses[{inner, 0}] == 1;
      if (!private_interior) continue;
      Match match = m.match;
      for (auto &[name, t] : match.tensors) t = map_input(t);
      std::optional<Tensor> y;
      try {
        y = rule.replace(match);
      } catch (const ValueError &) {
        y.reset(); // an operator refused the arguments: decline
      }
      const TensorMeta &meta = op->output_metas()[0];
      if (!y || !y->defined() || y->dtype() != meta.dtype || !(y->sym_shape() == meta.shape)) continue;
      if (auto tr = y->trace(); tr && !built.count(tr.op.get()) && !tr.op->origin())
        std::const_pointer_cast<Operator>(tr.op)->set_origin(op->origin_or_self());
      if (auto tr = y->trace()) built.insert(tr.op.get());
      new_of[{op.get(), 0}] = *y;
      if (fired) ++(*fired)[rule.name];
      fired_any = done = true;
      break;
    }
    if (done) continue;
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs()) ins.push_back(map_input(t));
    auto node = op->with_inputs(std::move(ins));
    built.insert(node.get());
    auto outs = outputs_of(node);
    for (int i = 0; i < op->num_outputs(); ++i) new_of[{op.get(), i}] = outs[std::size_t(i)];
  }
  std::vector<Tensor> outputs;
  for (const auto &t : graph.outputs()) outputs.push_back(map_input(t));
  return FlowGraph(std::move(outputs), graph.inputs());
}
} // namespace detail

HIDET_INLINE FlowGraph rewrite(const FlowGraph &graph, const std::vector<RewriteRule> &rules,
                               std::map<std::string, int> *fired) {
  FlowGraph g = graph;
  for (int round = 0; round < 32; ++round) {
    bool fired_any = false;
    g = detail::rewrite_once(g, rules, fired, fired_any);
    if (!fired_any) return g;
  }
  return g;
}

} // namespace hidet::graph
