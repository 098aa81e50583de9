// The row count m of a templated matrix product: a constant, or a symbolic Dim (a batch times a
// sequence length, n*s) so that one build of the kernels serves every value of the symbols.
//
// With symbolic rows, a template's kernels take the symbols (of the rows and of a fused
// epilogue, sorted by name) as i32 parameters after their own (lang::symbol_param on
// ops::symbol_var), guard every row against m, and size their grids with expressions that the
// launch evaluates; workspaces that depend on m are allocated per value of it. The tiling is
// chosen once, for the value the caller picked it for (the heuristics read a number): callers keep
// one build per tiling (ops::matmul_template_kernel_rows).
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/compute.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/dim.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

struct MatmulRows {
  Dim dim;
  MatmulRows(int m) : dim(m) {}
  MatmulRows(const Dim &d) : dim(d) {}
  bool symbolic() const { return !dim.is_constant(); }
  /// The constant row count (symbolic rows: a ValueError).
  int value() const {
    if (symbolic()) throw ValueError(str_cat("matmul template: the row count ", dim.str(), " is symbolic"));
    return int(dim.value());
  }
  /// m as an i32 expression of the symbols' variables (a constant when m is).
  lang::Expr expr() const { return dim_expr(dim); }
  /// m's value at `values` (a constant ignores them).
  std::int64_t at(const SymbolValues &values) const { return symbolic() ? dim.evaluate(values) : dim.value(); }
  /// "128", "s*b"
  std::string str() const { return dim.str(); }
};

/// The symbols a template kernel over `rows` with epilogue `epi` takes (sorted, each once).
inline std::vector<std::string> matmul_symbols(const MatmulRows &rows, const Epilogue *epi) {
  std::set<std::string> names;
  for (const auto &s : rows.dim.symbols()) names.insert(s);
  if (epi)
    for (const auto &s : epi->symbols()) names.insert(s);
  return {names.begin(), names.end()};
}

/// Appends the symbol parameters of `symbols` to a kernel's specs.
inline void push_symbol_params(std::vector<lang::ParamSpec> &specs, const std::vector<std::string> &symbols) {
  for (const auto &s : symbols) specs.push_back(lang::symbol_param(lang::Expr(ir::Expr(symbol_var(s)))));
}

/// Appends the values of `symbols` to a launch's arguments; a ValueError names a symbol without a value.
inline void push_symbol_args(std::vector<LaunchArg> &args, const std::vector<std::string> &symbols,
                             const SymbolValues &values) {
  for (const auto &s : symbols) {
    auto it = values.find(s);
    if (it == values.end())
      throw ValueError(str_cat("matmul template: no value for the symbol '", s, "' of its row count or epilogue"));
    args.emplace_back(it->second);
  }
}

/// Buffers that depend on the row count, kept per value of it (a buffer a CUDA graph captured
/// stays valid while its shape's value is in use).
class RowBuffers {
public:
  /// The buffer `name` for row count value `m`, made by make() the first time.
  template <class Make>
  const Tensor &get(const std::string &name, std::int64_t m, Make &&make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto &slot = buffers_[{name, m}];
    if (!slot.defined()) slot = make();
    return slot;
  }

private:
  std::mutex mu_;
  std::map<std::pair<std::string, std::int64_t>, Tensor> buffers_;
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
