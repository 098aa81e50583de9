// Correctness report: how far an optimized graph's values are from the traced graph's.
//
// correctness_report(graph, optimized, inputs) runs `graph` operator by operator (each through
// its own eager implementation: the reference) and `optimized` (what graph::optimize made of it)
// on the same inputs, and compares, for each input and each operator of `graph`, the optimized
// graph's value of the same tensor (found through Operator::origin()). The error of a tensor is
// the mean over its elements of |a - e| / (|e| + 1) (a: optimized, e: reference); it is flagged
// past 1e-5 for f32/f64 and 1e-2 for f16/bf16. A tensor that the optimized graph computes inside
// a fused kernel and never writes has no value to compare and shows "fused". Printing follows
// Hidet's table:
//
//       kind      operator                   dtype    error    attention
//   --  --------  -------------------------  -------  -------  ---------
//   0   input     x                          float32  0.0e+00
//   1   operator  Add                        float32  fused
//   2   operator  Sum(axes=[1], keepdims=0)  float32  1.2e-07
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "hidet/graph/flow_graph.hpp"

namespace hidet::graph {

/// One row of a report: a graph input or an operator's first output.
struct ReportRow {
  std::string kind;     ///< "input" or "operator"
  std::string op;       ///< the input's name, or the operator with its attributes
  DataType dtype;
  bool compared = false; ///< false: computed inside a fused kernel, no value to compare
  double error = 0;
  bool flagged = false; ///< error past the dtype's tolerance
};

/// A correctness report (see the top of the file).
struct CorrectnessReport {
  std::vector<ReportRow> rows;
  /// The largest error of the compared rows.
  double max_error() const;
  /// True when some row is flagged.
  bool any_flagged() const;
  /// Hidet's table.
  std::string str() const;
};

std::ostream &operator<<(std::ostream &os, const CorrectnessReport &r);

/// Compares `optimized` with `graph` on `inputs` (see the top of the file). Throws ValueError
/// when the two graphs have different inputs.
CorrectnessReport correctness_report(const FlowGraph &graph, const FlowGraph &optimized,
                                     const std::vector<Tensor> &inputs);

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/report.ipp"
#endif
