// Definitions for hidet/graph/flow_graph.hpp.
#pragma once

#include "hidet/graph/flow_graph.hpp"

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "hidet/error.hpp"
#include "hidet/graph/detail/tensor_key.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

namespace detail {

/// "float32[2, 3][cuda]": a tensor's type as graphs print it.
inline std::string type_str(const SymShape &shape, DataType dtype, Device device) {
  return str_cat(dtype.name(), sym_shape_str(shape), "[", device.is_cpu() ? "cpu" : "cuda", "]");
}
inline std::string type_str(const Tensor &t) { return type_str(t.sym_shape(), t.dtype(), t.device()); }

/// The same tensor with data: one storage, offset, shape and dtype.
inline bool same_constant(const Tensor &a, const Tensor &b) {
  return a.storage() == b.storage() && a.offset() == b.offset() && a.shape() == b.shape() &&
         a.dtype() == b.dtype();
}

/// Hidet's naming: the first use of a base name is the name itself, later ones base_1, base_2...
class Namer {
public:
  std::string next(const std::string &base) {
    std::string b = base.empty() ? "x" : base;
    if (used_.insert(b).second) return b;
    for (int &i = count_[b];;) {
      std::string name = str_cat(b, "_", ++i);
      if (used_.insert(name).second) return name;
    }
  }

private:
  std::set<std::string> used_;
  std::map<std::string, int> count_;
};

/// Names of a graph's tensors for printing.
struct GraphNames {
  std::map<TensorKey, std::string> symbolic;
  std::vector<std::pair<Tensor, std::string>> constants;

  std::string of(const Tensor &t) const {
    if (t.is_symbolic()) {
      auto it = symbolic.find(key_of(t));
      return it != symbolic.end() ? it->second : "?";
    }
    for (const auto &[c, name] : constants)
      if (same_constant(c, t)) return name;
    return "?";
  }
};

inline GraphNames name_graph(const FlowGraph &g) {
  GraphNames names;
  Namer namer;
  for (const auto &x : g.inputs())
    names.symbolic[key_of(x)] = namer.next(x.name());
  for (const auto &c : g.constants())
    names.constants.emplace_back(c, namer.next("c"));
  for (const auto &op : g.nodes())
    for (int i = 0; i < op->num_outputs(); ++i)
      names.symbolic[{op.get(), i}] = namer.next("x");
  return names;
}

/// For d = a*s + b with one symbol s and a != 0: s, a and b.
struct LinearDim {
  std::string symbol;
  std::int64_t a = 0, b = 0;
};
inline std::optional<LinearDim> as_linear(const Dim &d) {
  auto syms = d.symbols();
  if (syms.size() != 1) return std::nullopt;
  std::int64_t b = d.evaluate({{syms[0], 0}}), a = d.evaluate({{syms[0], 1}}) - b;
  if (a == 0 || !(d == a * Dim::symbol(syms[0]) + b)) return std::nullopt;
  return LinearDim{syms[0], a, b};
}

inline std::string input_label(const Tensor &x, std::size_t i) {
  return str_cat("graph input ", i, x.name().empty() ? "" : " '" + x.name() + "'", " (",
                 type_str(x), ")");
}

/// Copies src into dst (same shape and dtype), stream-ordered on the current stream; nothing when
/// they are one memory.
inline void copy_into(const Tensor &dst, const Tensor &src) {
  if (dst.data_ptr() == src.data_ptr() && dst.device() == src.device()) return;
  runtime::detail::copy_bytes(dst.data_ptr(), dst.device(), dst.is_host_memory(), src.data_ptr(), src.device(),
                              src.is_host_memory(), src.nbytes());
}

/// True when the memory of a and b overlaps.
inline bool overlaps(const Tensor &a, const Tensor &b) {
  if (!a.storage() || !b.storage() || a.nbytes() == 0 || b.nbytes() == 0) return false;
  auto *pa = static_cast<const char *>(a.data_ptr()), *pb = static_cast<const char *>(b.data_ptr());
  return pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

/// Writes the updates of a run: `values[j]` into `dsts[j]`. A value or an output (`outputs`,
/// replaced by a copy) that overlaps an updated input other than as that input's own new value
/// is copied first, so that every write reads the values of the run.
inline void write_updates(const std::vector<Tensor> &dsts, std::vector<Tensor> values, std::vector<Tensor> &outputs) {
  auto overlaps_a_dst = [&](const Tensor &t, std::size_t self) {
    for (std::size_t j = 0; j < dsts.size(); ++j)
      if (j != self && overlaps(t, dsts[j])) return true;
    return false;
  };
  auto same_memory = [](const Tensor &a, const Tensor &b) {
    return a.data_ptr() == b.data_ptr() && a.device() == b.device();
  };
  for (std::size_t j = 0; j < values.size(); ++j)
    if (overlaps_a_dst(values[j], same_memory(values[j], dsts[j]) ? j : std::size_t(-1)) ||
        (!same_memory(values[j], dsts[j]) && overlaps(values[j], dsts[j])))
      values[j] = values[j].clone();
  for (auto &o : outputs) {
    // An output that is an update's new value made in place keeps it; one that views an input's
    // old value is copied before the input is written.
    bool new_value = false;
    for (std::size_t j = 0; j < values.size() && !new_value; ++j)
      new_value = same_memory(o, values[j]) && same_memory(values[j], dsts[j]) && o.nbytes() == dsts[j].nbytes();
    if (!new_value && overlaps_a_dst(o, std::size_t(-1))) o = o.clone();
  }
  for (std::size_t j = 0; j < values.size(); ++j) copy_into(dsts[j], values[j]);
}

inline std::string dot_escape(const std::string &s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

} // namespace detail

HIDET_INLINE FlowGraph::FlowGraph(std::vector<Tensor> outputs, std::vector<Tensor> inputs,
                                  std::vector<InputUpdate> updates)
    : inputs_(std::move(inputs)), outputs_(std::move(outputs)), updates_(std::move(updates)) {
  using detail::type_str;
  if (outputs_.empty() && updates_.empty()) throw ValueError("trace_from: no outputs given");
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const Tensor &o = outputs_[i];
    if (!o.defined()) throw ValueError(str_cat("trace_from: output ", i, " is an undefined tensor"));
    if (!o.is_symbolic())
      throw ValueError(str_cat("trace_from: output ", i, " (", type_str(o),
                               ") holds data: it does not depend on any symbolic tensor; trace "
                               "from the result of operators applied to hidet::symbol(...)"));
  }
  for (std::size_t j = 0; j < updates_.size(); ++j) {
    const auto &[x, v] = updates_[j];
    if (!x.defined() || !v.defined())
      throw ValueError(str_cat("trace_from: update ", j, " has an undefined ", x.defined() ? "value" : "input"));
    if (!x.is_symbolic() || x.trace())
      throw ValueError(str_cat("trace_from: update ", j, " updates ", type_str(x),
                               x.is_symbolic() ? str_cat(", output ", x.trace().index, " of ", x.trace().op->name())
                                               : ", a tensor with data",
                               "; only a graph input (hidet::symbol(...)) is updated in place"));
    if (v.dtype() != x.dtype() || !(v.sym_shape() == x.sym_shape()))
      throw ValueError(str_cat("trace_from: update ", j, " of input '", x.name(), "' (", type_str(x),
                               ") gives a value of ", type_str(v), "; the new value must have the input's "
                               "shape and dtype"));
  }
  std::set<const void *> input_ids;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const Tensor &x = inputs_[i];
    if (!x.is_symbolic())
      throw ValueError(str_cat("trace_from: input ", i, x.defined() ? str_cat(" (", type_str(x), ")") : "",
                               " is not symbolic; graph inputs come from hidet::symbol(...) or "
                               "symbol_like(...)"));
    if (auto tr = x.trace())
      throw ValueError(str_cat("trace_from: input ", i, " (", type_str(x), ") is output ", tr.index,
                               " of ", tr.op->name(), ", not a graph input; pass the symbols the "
                               "graph starts from"));
    if (!input_ids.insert(x.symbolic_info()).second)
      throw ValueError(str_cat("trace_from: input ", i, " ('", x.name(), "') is given twice"));
  }
  const bool collect = inputs_.empty();

  // Depth-first, post-order over the operators (an explicit stack: models are deep).
  std::unordered_set<const Operator *> visited;
  auto leaf = [&](const Tensor &t) {
    if (input_ids.count(t.symbolic_info())) return;
    if (collect) {
      input_ids.insert(t.symbolic_info());
      inputs_.push_back(t);
      return;
    }
    std::string names;
    for (const auto &x : inputs_)
      names += (names.empty() ? "" : ", ") + (x.name().empty() ? std::string("?") : x.name());
    throw ValueError(str_cat("trace_from: the outputs depend on the symbolic tensor ",
                             t.name().empty() ? "" : "'" + t.name() + "' ", "(", type_str(t),
                             "), which is not among the graph's inputs (", names,
                             "); add it to the inputs"));
  };
  struct Frame {
    std::shared_ptr<const Operator> op;
    std::size_t next = 0;
  };
  std::vector<Tensor> roots = outputs_;
  for (const auto &u : updates_) {
    if (u.value.is_symbolic()) roots.push_back(u.value);
    roots.push_back(u.input);
  }
  for (const auto &out : roots) {
    auto tr = out.trace();
    if (!tr) {
      leaf(out);
      continue;
    }
    if (visited.count(tr.op.get())) continue;
    std::vector<Frame> stack{{tr.op, 0}};
    visited.insert(tr.op.get());
    while (!stack.empty()) {
      Frame &f = stack.back();
      if (f.next == f.op->inputs().size()) {
        nodes_.push_back(f.op);
        stack.pop_back();
        continue;
      }
      const Tensor &in = f.op->inputs()[f.next++];
      if (!in.is_symbolic()) continue; // a constant
      auto itr = in.trace();
      if (!itr) {
        leaf(in);
      } else if (visited.insert(itr.op.get()).second) {
        stack.push_back({itr.op, 0});
      }
    }
  }
  for (std::size_t j = 0; j < updates_.size(); ++j) {
    std::size_t i = 0;
    while (inputs_[i].symbolic_info() != updates_[j].input.symbolic_info()) ++i;
    for (std::size_t k = 0; k < j; ++k)
      if (updated_[k] == i)
        throw ValueError(str_cat("trace_from: input ", i, " ('", inputs_[i].name(), "') is updated twice"));
    updated_.push_back(i);
  }
}

HIDET_INLINE std::vector<std::size_t> FlowGraph::updated_inputs() const { return updated_; }

HIDET_INLINE std::vector<Tensor> FlowGraph::constants() const {
  std::vector<Tensor> out;
  auto add = [&](const Tensor &t) {
    if (t.is_symbolic()) return;
    bool seen = false;
    for (const auto &c : out)
      seen = seen || detail::same_constant(c, t);
    if (!seen) out.push_back(t);
  };
  for (const auto &op : nodes_)
    for (const auto &t : op->inputs())
      add(t);
  for (const auto &u : updates_)
    add(u.value);
  return out;
}

HIDET_INLINE SymbolValues FlowGraph::bind_symbols(const std::vector<Tensor> &inputs) const {
  using detail::input_label;
  using detail::type_str;
  if (inputs.size() != inputs_.size()) {
    std::string want;
    for (const auto &x : inputs_)
      want += (want.empty() ? "" : ", ") + str_cat(x.name(), ": ", type_str(x));
    throw ValueError(str_cat("graph expects ", inputs_.size(), " input", inputs_.size() == 1 ? "" : "s",
                             " (", want, "), got ", inputs.size()));
  }
  SymbolValues values;
  std::map<std::string, std::string> bound_by; // symbol -> where its value came from
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &x = inputs_[i], &given = inputs[i];
    // A symbolic tensor of constant shape traces the graph again at that shape (specialize()).
    if (!given.defined() || (given.is_symbolic() && !given.symbolic_info()->constant_shape))
      throw ValueError(str_cat(input_label(x, i), ": expected a tensor with data (or a symbolic tensor of constant shape), got ",
                               given.defined() ? "the symbolic shape " + sym_shape_str(given.sym_shape()) : "an undefined tensor"));
    if (given.dtype() != x.dtype())
      throw ValueError(str_cat(input_label(x, i), ": got dtype ", given.dtype().name()));
    if (!(given.device() == x.device()))
      throw ValueError(str_cat(input_label(x, i), ": got a tensor on ", given.device_str()));
    SymShape copy; // graph inputs are symbolic: their shape is read in place (a decoding step has 67)
    const SymShape &want = x.symbolic_info() ? x.symbolic_info()->shape : (copy = x.sym_shape());
    const auto &got = given.shape();
    if (got.size() != want.size())
      throw ValueError(str_cat(input_label(x, i), ": got shape ", sym_shape_str(to_sym_shape(got)),
                               " of rank ", got.size()));
    for (std::size_t d = 0; d < want.size(); ++d) {
      if (want[d].is_constant()) {
        if (want[d].value() != got[d])
          throw ValueError(str_cat(input_label(x, i), ": got shape ", sym_shape_str(to_sym_shape(got)),
                                   "; dim ", d, " must be ", want[d].value()));
      } else if (auto lin = detail::as_linear(want[d])) {
        // The first extent of the form a*s + b that meets s binds it.
        const std::string &sym = lin->symbol;
        if (values.count(sym)) continue; // checked below
        if ((got[d] - lin->b) % lin->a != 0)
          throw ValueError(str_cat(input_label(x, i), ": dim ", d, " is ", got[d], ", which ",
                                   want[d].str(), " cannot equal"));
        values[sym] = (got[d] - lin->b) / lin->a;
        bound_by[sym] = str_cat("input ", i, x.name().empty() ? "" : " '" + x.name() + "'", " dim ", d);
      }
    }
  }
  // Every symbolic extent must equal its value under the bound symbols.
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto *info = inputs_[i].symbolic_info();
    if (info && info->constant_shape) continue; // checked above
    const SymShape want = inputs_[i].sym_shape();
    const auto &got = inputs[i].shape();
    for (std::size_t d = 0; d < want.size(); ++d) {
      if (want[d].is_constant()) continue;
      std::int64_t v = want[d].evaluate(values);
      if (v == got[d]) continue;
      auto lin = detail::as_linear(want[d]);
      if (lin && want[d] == Dim::symbol(lin->symbol))
        throw ValueError(str_cat(input_label(inputs_[i], i), ": the symbol ", lin->symbol, " is ", got[d],
                                 " here (dim ", d, ") but ", v, " from ", bound_by[lin->symbol]));
      throw ValueError(str_cat(input_label(inputs_[i], i), ": dim ", d, " is ", got[d], " but ",
                               want[d].str(), " = ", v));
    }
  }
  return values;
}

HIDET_INLINE bool FlowGraph::has_symbolic_extents() const {
  for (const auto &x : inputs_)
    if (!is_constant_shape(x.sym_shape())) return true;
  return false;
}

HIDET_INLINE std::vector<std::string> FlowGraph::node_symbols() const {
  std::set<std::string> found;
  auto add = [&](const SymShape &shape) {
    for (const Dim &d : shape)
      for (auto &name : d.symbols())
        found.insert(name);
  };
  for (const auto &op : nodes_) {
    for (const auto &x : op->inputs())
      add(x.sym_shape());
    for (const auto &m : op->output_metas())
      add(m.shape);
  }
  return {found.begin(), found.end()};
}

HIDET_INLINE FlowGraph FlowGraph::specialize(const SymbolValues &values) const {
  std::vector<Tensor> stand_ins;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const Tensor &x = inputs_[i];
    std::vector<std::int64_t> shape;
    try {
      shape = evaluate_shape(x.sym_shape(), values);
    } catch (const ValueError &e) {
      throw ValueError(str_cat("specialize: graph input ", i, x.name().empty() ? "" : " '" + x.name() + "'", " ",
                               sym_shape_str(x.sym_shape()), ": ", e.what()));
    }
    stand_ins.push_back(Tensor::symbolic(to_sym_shape(shape), x.dtype(), x.device(), x.name()));
  }
  std::vector<Tensor> results = run_impl(stand_ins, nullptr);
  std::vector<Tensor> outs(results.begin(), results.begin() + std::ptrdiff_t(outputs_.size()));
  std::vector<InputUpdate> updates;
  for (std::size_t j = 0; j < updates_.size(); ++j)
    updates.push_back({stand_ins[updated_[j]], results[outputs_.size() + j]});
  return FlowGraph(std::move(outs), stand_ins, std::move(updates));
}

HIDET_INLINE std::vector<Tensor> FlowGraph::run(const std::vector<Tensor> &inputs) const {
  std::vector<Tensor> values = run_impl(inputs, nullptr);
  std::vector<Tensor> outs(values.begin(), values.begin() + std::ptrdiff_t(outputs_.size()));
  if (!updates_.empty() && !any_symbolic(inputs)) {
    std::vector<Tensor> dsts;
    for (std::size_t i : updated_) dsts.push_back(inputs[i]);
    detail::write_updates(dsts, std::vector<Tensor>(values.begin() + std::ptrdiff_t(outputs_.size()), values.end()),
                          outs);
  }
  return outs;
}

HIDET_INLINE std::vector<Tensor> FlowGraph::run_functional(const std::vector<Tensor> &inputs) const {
  return run_impl(inputs, nullptr);
}

HIDET_INLINE std::vector<std::vector<Tensor>> FlowGraph::node_outputs(const std::vector<Tensor> &inputs) const {
  std::vector<std::vector<Tensor>> all;
  run_impl(inputs, &all);
  return all;
}

HIDET_INLINE std::vector<Tensor> FlowGraph::run_impl(const std::vector<Tensor> &inputs,
                                                     std::vector<std::vector<Tensor>> *all) const {
  SymbolValues values = bind_symbols(inputs);
  std::map<detail::TensorKey, Tensor> env;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    env[detail::key_of(inputs_[i])] = inputs[i];
  auto value_of = [&](const Tensor &t) -> Tensor {
    if (!t.is_symbolic()) return t;
    auto it = env.find(detail::key_of(t));
    HIDET_ASSERT(it != env.end(), "graph tensor ", detail::type_str(t), " has no value");
    return it->second;
  };
  SymbolBinding binding(values); // for nodes whose attributes hold symbols (a reshape to [n, s, 12, 64])
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    const auto &op = nodes_[k];
    std::vector<Tensor> ins;
    for (const auto &t : op->inputs())
      ins.push_back(value_of(t));
    std::vector<Tensor> outs;
    try {
      // On symbolic inputs (tracing the graph again, specialize()), a node traced at constant shapes
      // is the same node on the new inputs: task-defined operators stay what fusion works with.
      bool constant_node = any_symbolic(ins);
      for (const auto &t : op->inputs()) constant_node = constant_node && is_constant_shape(t.sym_shape());
      for (const auto &m : op->output_metas()) constant_node = constant_node && is_constant_shape(m.shape);
      outs = constant_node ? outputs_of(op->with_inputs(ins)) : op->run(ins);
    } catch (const ValueError &e) {
      throw ValueError(str_cat("graph node ", k, " (", op->name(), "): ", e.what()));
    }
    for (int i = 0; i < op->num_outputs(); ++i) {
      auto want = evaluate_shape(op->output_metas()[std::size_t(i)].shape, values);
      if (outs[std::size_t(i)].shape() != want)
        throw ValueError(str_cat("graph node ", k, " (", op->name(), "): output ", i, " has shape ",
                                 sym_shape_str(to_sym_shape(outs[std::size_t(i)].shape())),
                                 " but was traced as ", sym_shape_str(op->output_metas()[std::size_t(i)].shape),
                                 " = ", sym_shape_str(to_sym_shape(want))));
      env[{op.get(), i}] = outs[std::size_t(i)];
    }
    if (all) all->push_back(std::move(outs));
  }
  std::vector<Tensor> out;
  for (const auto &t : outputs_)
    out.push_back(value_of(t));
  for (const auto &u : updates_)
    out.push_back(value_of(u.value));
  return out;
}

HIDET_INLINE Tensor FlowGraph::single_output(std::vector<Tensor> outs) const {
  if (outs.size() != 1)
    throw ValueError(str_cat("the graph has ", outs.size(), " outputs; call run() to get all of them"));
  return outs[0];
}

HIDET_INLINE std::string FlowGraph::str() const {
  using detail::type_str;
  auto names = detail::name_graph(*this);
  std::ostringstream os;
  os << "Graph(";
  for (std::size_t i = 0; i < inputs_.size(); ++i)
    os << (i ? ", " : "") << names.of(inputs_[i]) << ": " << type_str(inputs_[i]);
  os << "){\n";
  for (const auto &[c, name] : names.constants)
    os << "  " << name << " = Constant(" << type_str(c) << ")\n";
  for (const auto &op : nodes_) {
    os << "  ";
    for (int i = 0; i < op->num_outputs(); ++i) {
      const auto &m = op->output_metas()[std::size_t(i)];
      os << (i ? ", " : "") << names.symbolic[{op.get(), i}] << ": " << type_str(m.shape, m.dtype, m.device);
    }
    os << " = " << op->name() << "(";
    for (std::size_t j = 0; j < op->inputs().size(); ++j)
      os << (j ? ", " : "") << names.of(op->inputs()[j]);
    if (!op->attrs().empty()) os << (op->inputs().empty() ? "" : ", ") << op->attrs();
    os << ")\n";
  }
  for (const auto &u : updates_) // an input updated in place: written after the nodes ran
    os << "  " << names.of(u.input) << " <- " << names.of(u.value) << "\n";
  os << "  return";
  for (std::size_t i = 0; i < outputs_.size(); ++i)
    os << (i ? ", " : " ") << names.of(outputs_[i]);
  os << "\n}";
  return os.str();
}

HIDET_INLINE std::string FlowGraph::dot() const {
  using detail::dot_escape;
  using detail::type_str;
  auto names = detail::name_graph(*this);
  std::ostringstream os;
  os << "digraph FlowGraph {\n  node [shape=box, fontname=\"monospace\"];\n";
  std::map<detail::TensorKey, std::string> source; // tensor -> DOT node producing it
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    os << "  in" << i << " [shape=ellipse, label=\"" << dot_escape(names.of(inputs_[i])) << "\\n"
       << dot_escape(type_str(inputs_[i])) << "\"];\n";
    source[detail::key_of(inputs_[i])] = str_cat("in", i);
  }
  for (std::size_t i = 0; i < names.constants.size(); ++i)
    os << "  c" << i << " [shape=note, label=\"" << dot_escape(names.constants[i].second) << "\\n"
       << dot_escape(type_str(names.constants[i].first)) << "\"];\n";
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    const auto &op = nodes_[k];
    os << "  n" << k << " [label=\"" << dot_escape(op->name())
       << (op->attrs().empty() ? "" : "\\n" + dot_escape(op->attrs())) << "\"];\n";
    for (const auto &t : op->inputs()) {
      std::string from;
      if (t.is_symbolic()) {
        from = source[detail::key_of(t)];
      } else {
        for (std::size_t i = 0; i < names.constants.size(); ++i)
          if (detail::same_constant(names.constants[i].first, t)) from = str_cat("c", i);
      }
      os << "  " << from << " -> n" << k << " [label=\"" << dot_escape(names.of(t)) << "\"];\n";
    }
    for (int i = 0; i < op->num_outputs(); ++i)
      source[{op.get(), i}] = str_cat("n", k);
  }
  for (std::size_t i = 0; i < outputs_.size(); ++i)
    os << "  out" << i << " [shape=ellipse, label=\"output " << i << "\"];\n  "
       << source[detail::key_of(outputs_[i])] << " -> out" << i << " [label=\""
       << dot_escape(names.of(outputs_[i]) + ": " + type_str(outputs_[i])) << "\"];\n";
  for (std::size_t j = 0; j < updates_.size(); ++j) { // the update: an edge back into the input
    std::string from;
    if (updates_[j].value.is_symbolic()) {
      from = source[detail::key_of(updates_[j].value)];
    } else {
      for (std::size_t i = 0; i < names.constants.size(); ++i)
        if (detail::same_constant(names.constants[i].first, updates_[j].value)) from = str_cat("c", i);
    }
    os << "  " << from << " -> in" << updated_[j] << " [style=dashed, label=\""
       << dot_escape(names.of(updates_[j].value) + " (in place)") << "\"];\n";
  }
  os << "}\n";
  return os.str();
}

HIDET_INLINE std::ostream &operator<<(std::ostream &os, const FlowGraph &g) { return os << g.str(); }

HIDET_INLINE FlowGraph trace_from(const Tensor &output, std::vector<Tensor> inputs) {
  return FlowGraph({output}, std::move(inputs));
}

HIDET_INLINE FlowGraph trace_from(std::vector<Tensor> outputs, std::vector<Tensor> inputs) {
  return FlowGraph(std::move(outputs), std::move(inputs));
}

HIDET_INLINE FlowGraph trace_from(std::vector<Tensor> outputs, std::vector<Tensor> inputs,
                                  std::vector<InputUpdate> updates) {
  return FlowGraph(std::move(outputs), std::move(inputs), std::move(updates));
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
