// Epilogues: the consumer half of post-scheduling fusion.
//
// An anchor operator (a matmul template, a convolution) computes each element of its output in
// registers and stores it. An epilogue is the chain of injective operators that follows it,
// composed into one definition that the anchor's kernel evaluates at the store instead of
// writing the anchor's output: out = chain(x, inputs...), where x stands for the anchor's output.
// For that, every step must read the previous result exactly once per output element at an index
// that determines the output index (an element-wise operator, a broadcast of its *other* inputs,
// a permutation of the axes, a reshape): the steps' inverse index maps compose into `to_out`,
// which maps the index of an anchor element to the index of the output element it becomes.
// At the store of anchor element idx with value v, the kernel writes
//     out[to_out(idx)] = out's value at to_out(idx), with every read of x replaced by v,
// reading the epilogue's other inputs (biases, residuals) from extra kernel parameters. The
// anchor's value is rounded to x's dtype first, so a fused kernel computes what the unfused
// operators compute.
//
//   Epilogue e = Epilogue::identity({m, n}, f16);
//   e = *e.then(add_task, 0, "add");          // + bias: the bias becomes e.inputs[0]
//   e = *e.then(gelu_task, 0, "gelu");
//   Tensor y = ops::matmul(a, b, e, {bias});   // one kernel: gelu(a @ b + bias)
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hidet/ops/task.hpp"
#include "hidet/runtime/tensor.hpp"

namespace hidet::ops {

/// A chain of injective operators after an anchor, as one definition (see the top of the file).
struct Epilogue {
  TensorDef x;                   ///< stands for the anchor's output (an input node)
  TensorDef out;                 ///< the final value: a definition over x and `inputs`
  std::vector<TensorDef> inputs; ///< the other inputs `out` reads, in the order of the extra tensors
  IndexMap to_out;               ///< an index of x -> the index of `out` it becomes
  bool linear = true;            ///< out's row-major (flat) index equals x's (no axis permuted)
  /// Flat elements of x in aligned runs of `run` (r i .. r i + r - 1; run 1, 2, 4 or 8) stay
  /// neighbours in out's last axis, at a position that is a multiple of run (x's and out's last
  /// extents are multiples of run and no step moves x's last axis): stores of run elements as
  /// one vector stay valid. 2: paired stores.
  int run = 1;
  std::string key;               ///< identity of the chain (part of kernel cache keys)
  std::vector<std::string> members; ///< the fused operators' names, in order

  /// The epilogue that stores x unchanged (out = x). Extents may be symbolic (a row count b*s):
  /// the epilogue then serves every value of the symbols, and a kernel that emits it takes them
  /// as parameters (the steps after it must be tasks over the same symbols).
  static Epilogue identity(const Extents &shape, DataType dtype);
  /// This epilogue followed by the injective one-output task `t`, whose input `j` reads this
  /// epilogue's result; t's other inputs become extra inputs (appended in t's order). Empty when
  /// t cannot follow (not injective, more outputs, input j read at an index that does not
  /// determine the output index, or of another shape or dtype). `key` identifies t.
  std::optional<Epilogue> then(const Task &t, std::size_t j, const std::string &key,
                               const std::string &member) const;
  /// This epilogue followed by a (row-major) reshape of its result to `shape`.
  Epilogue reshape(const Extents &shape) const;
  /// The symbols in the extents of x, out and the extra inputs (sorted by name).
  std::vector<std::string> symbols() const;
  /// The epilogue as a task of its own: inputs (x, inputs...), output out (for fallbacks and
  /// references).
  Task task() const;
  /// True when the epilogue stores x unchanged.
  bool is_identity() const { return members.empty(); }
};

/// The index, in a tensor of shape `to`, of the element at `idx` of a tensor of shape `from` with
/// the same elements in row-major order (a reshape). The shapes split into the smallest groups of
/// consecutive dimensions with equal products; a dimension that is a group of its own on both
/// sides keeps its index (common reshapes cost no division), and the others are unravelled within
/// their group only ([2048, 2304] -> [16, 128, 3, 12, 64]: row / 128, row % 128, col / 768, ...).
/// Symbolic extents: groups are closed where the products are equal Dims, the smaller side (the
/// one whose product divides the other's exactly) extended first; products that cannot be
/// compared end in one group of all the remaining dimensions.
Idx reshape_index(const Idx &idx, const Extents &from, const Extents &to);

/// Checks that `e` can follow operator `op` whose output is dtype[shape], and that `extras` are
/// its other inputs; a ValueError naming `op` otherwise.
void check_epilogue(const char *op, const Epilogue &e, const Shape &shape, DataType dtype,
                    const std::vector<Tensor> &extras);
/// check_epilogue for an epilogue over symbolic extents whose symbols have `values` (x's shape
/// evaluated there must be `shape`, the extras' shapes their inputs' at those values).
void check_epilogue(const char *op, const Epilogue &e, const Shape &shape, DataType dtype,
                    const std::vector<Tensor> &extras, const SymbolValues &values);
/// Runs the epilogue on its own (one task kernel): its output from x, the anchor's output, and
/// `extras` (for anchors that no template served).
Tensor apply_epilogue(const Epilogue &e, const Tensor &x, const std::vector<Tensor> &extras);
/// The calls of math functions that take more than a few instructions (exp, erf/erfc, tanh, log,
/// pow, sin, ...; not abs, min, max, fma, floor, ceil, round, trunc, isnan) that the epilogue
/// evaluates per output element: templates weigh what their epilogue costs with it (GELU: 1).
int epilogue_math_calls(const Epilogue &e);
/// "fused_graph=FlowGraph(Matmul, Add, Gelu), anchor=0": the attributes of a fused anchor node.
std::string fused_attrs(const std::string &anchor, const Epilogue &e);

/// What to pass for an epilogue's output parameter (EpilogueEmitter::param_specs): `out` viewed
/// with the anchor's shape when the epilogue keeps the layout or there is none, else `out` as is.
Tensor epilogue_out_arg(const Epilogue *e, const Tensor &out, const Shape &anchor_shape);

namespace detail {

/// The epilogue inside a kernel body: bound to the kernel parameters holding `out` and the extra
/// inputs, for an anchor that indexes its output with shape `anchor_shape` (same elements as x,
/// row-major; a template's own view, e.g. [rows, n] for x of shape [b, s, n]).
class EpilogueEmitter {
public:
  /// Without an epilogue (`e` null): stores go straight to `out` (shape anchor_shape).
  EpilogueEmitter(const Epilogue *e, const Extents &anchor_shape, ir::Var out, std::vector<ir::Var> inputs);
  /// The value stored for anchor element `idx` with value `v` (any float dtype), in out's dtype.
  lang::Expr value(const Idx &idx, const lang::Expr &v) const;
  /// Stores the epilogue's value for anchor element `idx` with value `v`.
  void store(const Idx &idx, const lang::Expr &v) const;
  /// value() of a run of r anchor elements idxs[0 .. r) with values vs (r = 2, 4 or 8:
  /// neighbours in the anchor's last axis, the first at a multiple of r): an extra input that
  /// these elements read at r consecutive elements starting at a multiple of r (a residual of
  /// out's layout, a bias along the last axis) is read as one vector of r elements instead of r
  /// scalars, so the kernel's extra inputs must start at 16-byte aligned addresses (the caller's
  /// launch sees to it). Write the run's column as `c * r + x` with `c` a variable, so that the
  /// alignment shows; other reads stay scalar.
  std::vector<lang::Expr> value_run(const std::vector<Idx> &idxs, const std::vector<lang::Expr> &vs) const;
  /// True when out has x's dtype and elements (…, 2i) and (…, 2i + 1) of the anchor, whose last
  /// extent is even, are neighbours in out at an even position (paired stores stay valid and
  /// aligned): the epilogue is linear, or keeps runs of 2 (Epilogue::run).
  bool keeps_layout() const { return vector_width() >= 2; }
  /// The widest r of 8, 4, 2, 1 such that, when the anchor's last extent is a multiple of r, the
  /// anchor elements (…, r i .. r i + r - 1) are consecutive in out at an offset that is a
  /// multiple of r and out has x's dtype: one vector store of r elements may write them.
  int vector_width() const;
  /// The element of out that anchor element `idx` becomes.
  lang::Element at(const Idx &idx) const;
  /// The parameter specs of out and the extra inputs (after the anchor's own inputs).
  /// (Symbolic extents become expressions of the symbols' variables, ops::symbol_var: the kernel
  /// takes the symbols as parameters, e.g. through lang::symbol_param.)
  static std::vector<lang::ParamSpec> param_specs(const Epilogue *e, const Extents &anchor_shape, DataType anchor_dtype);

private:
  /// A replacement for each read of an extra input's parameter (param, the read).
  using ReadHook = std::function<ir::Expr(const ir::Var &, const ir::Expr &)>;
  /// out's value at anchor element `idx` with x read as `xv`.
  ir::Expr inline_value(const Idx &idx, const ir::Expr &xv, const ReadHook *on_read = nullptr) const;
  const Epilogue *e_;
  SymShape anchor_shape_;
  ir::Var out_;
  std::vector<ir::Var> inputs_;
};

} // namespace detail

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/epilogue.ipp"
#endif
