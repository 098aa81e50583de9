// Definitions for hidet/graph/report.hpp.
#pragma once

#include "hidet/graph/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "hidet/error.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

namespace detail {
/// mean over elements of |a - e| / (|e| + 1); NaN where exactly one side is NaN counts as 1.
inline double mean_relative_error(const Tensor &actual, const Tensor &expected) {
  auto a = actual.to_double_vector(), e = expected.to_double_vector();
  if (a.size() != e.size())
    throw ValueError(str_cat("correctness_report: a tensor has ", a.size(), " elements in the optimized graph and ",
                             e.size(), " in the traced one"));
  if (a.empty()) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(e[i])) {
      sum += std::isnan(a[i]) && std::isnan(e[i]) ? 0 : 1;
      continue;
    }
    if (std::isinf(a[i]) || std::isinf(e[i])) {
      sum += a[i] == e[i] ? 0 : 1;
      continue;
    }
    sum += std::abs(a[i] - e[i]) / (std::abs(e[i]) + 1);
  }
  return sum / double(a.size());
}

inline double tolerance(DataType d) { return d.is_fp8() ? 1e-1 : d.is_half() ? 1e-2 : 1e-5; }

inline std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}
} // namespace detail

HIDET_INLINE double CorrectnessReport::max_error() const {
  double m = 0;
  for (const auto &r : rows)
    if (r.compared) m = std::max(m, r.error);
  return m;
}

HIDET_INLINE bool CorrectnessReport::any_flagged() const {
  return std::any_of(rows.begin(), rows.end(), [](const ReportRow &r) { return r.flagged; });
}

HIDET_INLINE std::string CorrectnessReport::str() const {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"", "kind", "operator", "dtype", "error", "attention"});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto &r = rows[i];
    cells.push_back({std::to_string(i), r.kind, r.op, std::string(r.dtype.name()),
                     r.compared ? detail::sci(r.error) : std::string("fused"),
                     r.flagged ? std::string("<------") : std::string()});
  }
  std::vector<std::size_t> width(6, 2);
  for (const auto &row : cells)
    for (std::size_t c = 0; c < 6; ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string> &row) {
    std::string l;
    for (std::size_t c = 0; c < 6; ++c) {
      l += row[c];
      if (c + 1 < 6) l += std::string(width[c] - row[c].size() + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(cells[0]);
  std::vector<std::string> rule;
  for (std::size_t c = 0; c < 6; ++c) rule.push_back(std::string(width[c], '-'));
  line(rule);
  for (std::size_t i = 1; i < cells.size(); ++i) line(cells[i]);
  return out;
}

HIDET_INLINE std::ostream &operator<<(std::ostream &os, const CorrectnessReport &r) { return os << r.str(); }

HIDET_INLINE CorrectnessReport correctness_report(const FlowGraph &graph, const FlowGraph &optimized,
                                                  const std::vector<Tensor> &inputs) {
  if (graph.inputs().size() != optimized.inputs().size())
    throw ValueError(str_cat("correctness_report: the traced graph has ", graph.inputs().size(),
                             " inputs, the optimized one ", optimized.inputs().size()));
  for (std::size_t i = 0; i < graph.inputs().size(); ++i)
    if (graph.inputs()[i].symbolic_info() != optimized.inputs()[i].symbolic_info())
      throw ValueError(str_cat("correctness_report: input ", i, " of the optimized graph is not input ", i,
                               " of the traced graph; pass the graph that graph::optimize was given"));
  auto reference = graph.node_outputs(inputs);
  auto actual = optimized.node_outputs(inputs);
  std::map<const Operator *, std::size_t> index_of;
  for (std::size_t k = 0; k < graph.nodes().size(); ++k) index_of[graph.nodes()[k].get()] = k;
  std::map<std::size_t, const std::vector<Tensor> *> actual_of; // traced node -> optimized outputs
  for (std::size_t k = 0; k < optimized.nodes().size(); ++k) {
    auto origin = optimized.nodes()[k]->origin_or_self();
    auto it = index_of.find(origin.get());
    if (it != index_of.end()) actual_of[it->second] = &actual[k];
  }
  CorrectnessReport report;
  for (const auto &x : graph.inputs())
    report.rows.push_back({"input", x.name(), x.dtype(), true, 0.0, false});
  for (std::size_t k = 0; k < graph.nodes().size(); ++k) {
    const auto &op = graph.nodes()[k];
    ReportRow row;
    row.kind = "operator";
    row.op = op->attrs().empty() ? op->name() : str_cat(op->name(), "(", op->attrs(), ")");
    row.dtype = op->output_metas().empty() ? dtypes::f32 : op->output_metas()[0].dtype;
    auto it = actual_of.find(k);
    if (it != actual_of.end() && !it->second->empty() && !reference[k].empty()) {
      row.compared = true;
      row.error = detail::mean_relative_error((*it->second)[0], reference[k][0]);
      row.flagged = !(row.error <= detail::tolerance(row.dtype));
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
