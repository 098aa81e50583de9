// hidet::Dim: one extent of a symbolic tensor's shape: a constant (3) or an expression over named
// symbols ("n", "s") built with +, -, *, floor division, modulo, max and min, as shape functions
// need them ("n*s", "(h + 2) / 2").
//
// A Dim is kept in a canonical form, a sum of terms coef * a1 * a2 * ..., where each atom a is a
// symbol or an irreducible n / d, n % d, max(a, b), min(a, b). Two Dims are equal exactly when
// their canonical forms are (n*s == s*n, 2*n - n == n, (4*n) / 2 == 2*n), and a Dim without atoms
// is a constant. Division and modulo simplify when the divisor divides every coefficient; otherwise
// they stay atoms and are evaluated with floor semantics once the symbols have values.
//
//   Dim n = Dim::symbol("n"), s = Dim::symbol("s");
//   Dim rows = n * s;                                 // "n*s"
//   rows.evaluate({{"n", 2}, {"s", 128}});            // 256
//   Dim out = (Dim(224) + 2 * 3 - 7) / 2 + 1;         // 112, a constant
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "hidet/config.hpp"

namespace hidet {

/// Values of named symbols, e.g. {{"n", 8}, {"s", 128}}.
using SymbolValues = std::map<std::string, std::int64_t>;

class Dim;

namespace runtime::detail {
struct DimAtom;
/// coef * atoms[0] * atoms[1] * ... (atoms sorted by their printed form).
struct DimTerm {
  std::int64_t coef = 0;
  std::vector<std::shared_ptr<const DimAtom>> atoms;
};
} // namespace runtime::detail

/// A tensor extent: a constant or a canonical expression over named symbols (see the top).
class Dim {
public:
  /// The constant v.
  Dim(std::int64_t v = 0);
  Dim(int v) : Dim(std::int64_t(v)) {}
  /// The symbol `name`: symbol({"n", 3}) reads as a shape.
  Dim(const char *name) : Dim(symbol(name)) {}
  Dim(const std::string &name) : Dim(symbol(name)) {}
  /// The symbol `name` (a C identifier: letters, digits, '_', not starting with a digit).
  static Dim symbol(const std::string &name);

  /// True when no symbol occurs.
  bool is_constant() const;
  /// The constant's value; throws ValueError naming the Dim when it is symbolic.
  std::int64_t value() const;
  /// The value with `values` bound; throws ValueError naming a missing symbol, or on division
  /// or modulo by zero.
  std::int64_t evaluate(const SymbolValues &values) const;
  /// The Dim with the symbols that `values` gives replaced by their values, the others kept
  /// ("n*s" with {s: 128}: "128*n"); a constant once every symbol has a value.
  Dim substitute(const SymbolValues &values) const;
  /// The names of the symbols that occur, sorted.
  std::vector<std::string> symbols() const;
  /// "n*s", "2*n + 1", "(n + 1) / 2", "7".
  std::string str() const;

  friend Dim operator+(const Dim &a, const Dim &b);
  friend Dim operator-(const Dim &a, const Dim &b);
  friend Dim operator*(const Dim &a, const Dim &b);
  /// Floor division (Python's //), like shape functions use.
  friend Dim operator/(const Dim &a, const Dim &b);
  /// Floor modulo (the result has the divisor's sign).
  friend Dim operator%(const Dim &a, const Dim &b);
  Dim operator-() const;
  Dim &operator+=(const Dim &b) { return *this = *this + b; }
  Dim &operator-=(const Dim &b) { return *this = *this - b; }
  Dim &operator*=(const Dim &b) { return *this = *this * b; }
  /// Structural equality of the canonical forms.
  friend bool operator==(const Dim &a, const Dim &b);
  friend bool operator!=(const Dim &a, const Dim &b) { return !(a == b); }
  friend bool operator==(const Dim &a, std::int64_t b) { return a == Dim(b); }

  /// The canonical terms (for printers and hashing).
  const std::vector<runtime::detail::DimTerm> &terms() const { return terms_; }

private:
  friend Dim max(const Dim &a, const Dim &b);
  friend Dim min(const Dim &a, const Dim &b);
  static Dim from_terms(std::vector<runtime::detail::DimTerm> terms);
  std::vector<runtime::detail::DimTerm> terms_; ///< sorted by atoms; no zero coefficients
};

namespace runtime::detail {
/// An irreducible factor of a Dim term (see the top of the file).
struct DimAtom {
  enum Kind { Symbol, Div, Mod, Max, Min } kind;
  std::string name; ///< Symbol
  Dim a, b;         ///< Div, Mod: a / b, a % b; Max, Min: the operands (sorted)
  std::string key;  ///< the printed form: atoms sort and compare by it
};
} // namespace runtime::detail

/// max(a, b): a constant when both are, else an atom (or a when a == b).
Dim max(const Dim &a, const Dim &b);
/// min(a, b): a constant when both are, else an atom (or a when a == b).
Dim min(const Dim &a, const Dim &b);

std::ostream &operator<<(std::ostream &os, const Dim &d);

/// A shape whose extents may be symbolic.
using SymShape = std::vector<Dim>;

/// "[n, 3]": extents between brackets, the way graphs print shapes.
std::string sym_shape_str(const SymShape &shape);
/// The shape as Dims.
SymShape to_sym_shape(const std::vector<std::int64_t> &shape);
/// True when every extent is constant.
bool is_constant_shape(const SymShape &shape);
/// The constant extents; throws ValueError naming the first symbolic one.
std::vector<std::int64_t> constant_shape(const SymShape &shape);
/// Every extent evaluated with `values`.
std::vector<std::int64_t> evaluate_shape(const SymShape &shape, const SymbolValues &values);
/// The product of the extents.
Dim sym_numel(const SymShape &shape);

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/dim.ipp"
#endif
