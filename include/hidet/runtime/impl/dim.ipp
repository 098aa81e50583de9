// Definitions for hidet/runtime/dim.hpp.
#pragma once

#include "hidet/runtime/dim.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "hidet/error.hpp"

namespace hidet {

namespace runtime::detail {

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - floor_div(a, b) * b; }

/// A Dim as an operand of /, %: parenthesized unless a single atom or a non-negative constant.
inline std::string operand_str(const Dim &d) {
  const auto &t = d.terms();
  bool simple = t.empty() || (t.size() == 1 && ((t[0].atoms.empty() && t[0].coef >= 0) ||
                                                (t[0].atoms.size() == 1 && t[0].coef == 1)));
  return simple ? d.str() : "(" + d.str() + ")";
}

inline std::string symbols_str(const Dim &d) {
  std::string s;
  for (const auto &name : d.symbols())
    s += (s.empty() ? "" : ", ") + name;
  return s;
}

inline std::shared_ptr<const DimAtom> make_atom(DimAtom::Kind kind, Dim a, Dim b) {
  auto atom = std::make_shared<DimAtom>();
  atom->kind = kind;
  if ((kind == DimAtom::Max || kind == DimAtom::Min) && b.str() < a.str()) std::swap(a, b);
  switch (kind) {
  case DimAtom::Div:
    atom->key = operand_str(a) + " / " + operand_str(b);
    break;
  case DimAtom::Mod:
    atom->key = operand_str(a) + " % " + operand_str(b);
    break;
  case DimAtom::Max:
    atom->key = "max(" + a.str() + ", " + b.str() + ")";
    break;
  case DimAtom::Min:
    atom->key = "min(" + a.str() + ", " + b.str() + ")";
    break;
  case DimAtom::Symbol:
    break;
  }
  atom->a = std::move(a), atom->b = std::move(b);
  return atom;
}

inline bool atoms_less(const DimTerm &x, const DimTerm &y) {
  // More factors first (so the constant term prints last), then by the factors' printed forms.
  if (x.atoms.size() != y.atoms.size()) return x.atoms.size() > y.atoms.size();
  for (std::size_t i = 0; i < x.atoms.size(); ++i)
    if (x.atoms[i]->key != y.atoms[i]->key) return x.atoms[i]->key < y.atoms[i]->key;
  return false;
}
inline bool same_atoms(const DimTerm &x, const DimTerm &y) {
  return !atoms_less(x, y) && !atoms_less(y, x);
}

/// The Dim's terms whose coefficients `c` divides (quotients taken) and the rest.
inline void split_by_divisor(const Dim &a, std::int64_t c, std::vector<DimTerm> &divisible,
                             std::vector<DimTerm> &rest) {
  for (const auto &t : a.terms()) {
    if (t.coef % c == 0) {
      DimTerm q = t;
      q.coef /= c;
      divisible.push_back(std::move(q));
    } else {
      rest.push_back(t);
    }
  }
}

} // namespace runtime::detail

using runtime::detail::DimAtom;
using runtime::detail::DimTerm;

HIDET_INLINE Dim::Dim(std::int64_t v) {
  if (v != 0) terms_.push_back(DimTerm{v, {}});
}

HIDET_INLINE Dim Dim::symbol(const std::string &name) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char ch : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  if (!ok)
    throw ValueError(str_cat("Dim::symbol(\"", name,
                             "\"): a symbol's name is an identifier (letters, digits, '_')"));
  auto atom = std::make_shared<DimAtom>();
  atom->kind = DimAtom::Symbol;
  atom->name = atom->key = name;
  Dim d;
  d.terms_.push_back(DimTerm{1, {atom}});
  return d;
}

HIDET_INLINE Dim Dim::from_terms(std::vector<DimTerm> terms) {
  for (auto &t : terms)
    std::sort(t.atoms.begin(), t.atoms.end(),
              [](const auto &x, const auto &y) { return x->key < y->key; });
  std::sort(terms.begin(), terms.end(), runtime::detail::atoms_less);
  Dim d;
  for (auto &t : terms) {
    if (!d.terms_.empty() && runtime::detail::same_atoms(d.terms_.back(), t))
      d.terms_.back().coef += t.coef;
    else
      d.terms_.push_back(std::move(t));
    if (d.terms_.back().coef == 0) d.terms_.pop_back();
  }
  return d;
}

HIDET_INLINE bool Dim::is_constant() const {
  return terms_.empty() || (terms_.size() == 1 && terms_[0].atoms.empty());
}

HIDET_INLINE std::int64_t Dim::value() const {
  if (!is_constant())
    throw ValueError(str_cat("the dimension ", str(), " is symbolic; it has a value only once ",
                             runtime::detail::symbols_str(*this), " are bound"));
  return terms_.empty() ? 0 : terms_[0].coef;
}

HIDET_INLINE std::int64_t Dim::evaluate(const SymbolValues &values) const {
  std::int64_t sum = 0;
  for (const auto &t : terms_) {
    std::int64_t prod = t.coef;
    for (const auto &atom : t.atoms) {
      std::int64_t v = 0;
      switch (atom->kind) {
      case DimAtom::Symbol: {
        auto it = values.find(atom->name);
        if (it == values.end())
          throw ValueError(str_cat("the dimension ", str(), ": no value for the symbol '",
                                   atom->name, "'"));
        v = it->second;
        break;
      }
      case DimAtom::Div:
      case DimAtom::Mod: {
        std::int64_t a = atom->a.evaluate(values), b = atom->b.evaluate(values);
        if (b == 0)
          throw ValueError(str_cat("the dimension ", str(), ": ", atom->b.str(), " is 0 in ",
                                   atom->key));
        v = atom->kind == DimAtom::Div ? runtime::detail::floor_div(a, b)
                                       : runtime::detail::floor_mod(a, b);
        break;
      }
      case DimAtom::Max:
        v = std::max(atom->a.evaluate(values), atom->b.evaluate(values));
        break;
      case DimAtom::Min:
        v = std::min(atom->a.evaluate(values), atom->b.evaluate(values));
        break;
      }
      prod *= v;
    }
    sum += prod;
  }
  return sum;
}

namespace runtime::detail {
/// The atom as a Dim, with the symbols that `values` gives replaced by their values (none: the
/// atom itself).
HIDET_INLINE Dim atom_dim(const DimAtom &atom, const SymbolValues &values) {
  switch (atom.kind) {
  case DimAtom::Symbol: {
    auto it = values.find(atom.name);
    return it == values.end() ? Dim::symbol(atom.name) : Dim(it->second);
  }
  case DimAtom::Div: return atom.a.substitute(values) / atom.b.substitute(values);
  case DimAtom::Mod: return atom.a.substitute(values) % atom.b.substitute(values);
  case DimAtom::Max: return max(atom.a.substitute(values), atom.b.substitute(values));
  case DimAtom::Min: return min(atom.a.substitute(values), atom.b.substitute(values));
  }
  return Dim(0);
}
} // namespace runtime::detail

HIDET_INLINE Dim Dim::substitute(const SymbolValues &values) const {
  Dim sum(0);
  for (const auto &t : terms_) {
    Dim prod(t.coef);
    for (const auto &atom : t.atoms) prod *= runtime::detail::atom_dim(*atom, values);
    sum += prod;
  }
  return sum;
}

HIDET_INLINE std::vector<std::string> Dim::symbols() const {
  std::vector<std::string> out;
  for (const auto &t : terms_)
    for (const auto &atom : t.atoms) {
      if (atom->kind == DimAtom::Symbol) {
        out.push_back(atom->name);
      } else {
        for (const Dim *d : {&atom->a, &atom->b})
          for (auto &s : d->symbols())
            out.push_back(s);
      }
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

HIDET_INLINE std::string Dim::str() const {
  if (terms_.empty()) return "0";
  std::string s;
  for (std::size_t i = 0; i < terms_.size(); ++i) {
    const auto &t = terms_[i];
    std::int64_t c = t.coef;
    if (i > 0) {
      s += c < 0 ? " - " : " + ";
      c = c < 0 ? -c : c;
    } else if (c < 0 && !t.atoms.empty()) {
      s += "-";
      c = -c;
    }
    std::string factors;
    for (const auto &atom : t.atoms) {
      if (!factors.empty()) factors += "*";
      bool wrap = t.atoms.size() > 1 || c != 1;
      wrap = wrap && (atom->kind == DimAtom::Div || atom->kind == DimAtom::Mod);
      factors += wrap ? "(" + atom->key + ")" : atom->key;
    }
    if (factors.empty())
      s += std::to_string(c);
    else if (c == 1)
      s += factors;
    else
      s += std::to_string(c) + "*" + factors;
  }
  return s;
}

HIDET_INLINE Dim operator+(const Dim &a, const Dim &b) {
  std::vector<DimTerm> t = a.terms_;
  t.insert(t.end(), b.terms_.begin(), b.terms_.end());
  return Dim::from_terms(std::move(t));
}

HIDET_INLINE Dim Dim::operator-() const {
  std::vector<DimTerm> t = terms_;
  for (auto &x : t)
    x.coef = -x.coef;
  return from_terms(std::move(t));
}

HIDET_INLINE Dim operator-(const Dim &a, const Dim &b) { return a + (-b); }

HIDET_INLINE Dim operator*(const Dim &a, const Dim &b) {
  std::vector<DimTerm> t;
  for (const auto &x : a.terms_)
    for (const auto &y : b.terms_) {
      DimTerm p{x.coef * y.coef, x.atoms};
      p.atoms.insert(p.atoms.end(), y.atoms.begin(), y.atoms.end());
      t.push_back(std::move(p));
    }
  return Dim::from_terms(std::move(t));
}

namespace runtime::detail {
/// a / b when b is one term c * x1 * ... and every term of a is a multiple of it (768*s / 64*s =
/// 12): the quotient, exact for every value of the symbols; else nullopt.
HIDET_INLINE std::optional<Dim> exact_quotient(const Dim &a, const Dim &b) {
  if (b.terms().size() != 1 || b.terms()[0].coef == 0) return std::nullopt;
  const DimTerm &d = b.terms()[0];
  Dim q;
  for (const DimTerm &t : a.terms()) {
    if (t.coef % d.coef != 0) return std::nullopt;
    std::vector<std::shared_ptr<const DimAtom>> left = t.atoms;
    for (const auto &x : d.atoms) {
      auto it = std::find_if(left.begin(), left.end(), [&](const auto &y) { return y->key == x->key; });
      if (it == left.end()) return std::nullopt;
      left.erase(it);
    }
    Dim term(t.coef / d.coef);
    for (const auto &x : left) term = term * atom_dim(*x, {});
    q = q + term;
  }
  return q;
}
} // namespace runtime::detail

HIDET_INLINE Dim operator/(const Dim &a, const Dim &b) {
  if (b.is_constant()) {
    std::int64_t c = b.value();
    if (c == 0) throw ValueError(str_cat("the dimension ", a.str(), " / 0: division by zero"));
    if (a.is_constant()) return Dim(runtime::detail::floor_div(a.value(), c));
    // floor((c P + R) / c) = P + floor(R / c) for integer P.
    std::vector<DimTerm> divisible, rest;
    runtime::detail::split_by_divisor(a, c, divisible, rest);
    Dim p = Dim::from_terms(std::move(divisible)), r = Dim::from_terms(std::move(rest));
    if (r.is_constant()) return p + Dim(runtime::detail::floor_div(r.value(), c));
    Dim atom;
    atom.terms_.push_back(DimTerm{1, {runtime::detail::make_atom(DimAtom::Div, r, b)}});
    return p + atom;
  }
  if (a == b) return Dim(1);
  if (auto q = runtime::detail::exact_quotient(a, b)) return *q;
  Dim atom;
  atom.terms_.push_back(DimTerm{1, {runtime::detail::make_atom(DimAtom::Div, a, b)}});
  return atom;
}

HIDET_INLINE Dim operator%(const Dim &a, const Dim &b) {
  if (b.is_constant()) {
    std::int64_t c = b.value();
    if (c == 0) throw ValueError(str_cat("the dimension ", a.str(), " % 0: modulo by zero"));
    std::vector<DimTerm> divisible, rest;
    runtime::detail::split_by_divisor(a, c, divisible, rest);
    Dim r = Dim::from_terms(std::move(rest));
    if (r.is_constant()) return Dim(runtime::detail::floor_mod(r.value(), c));
    Dim atom;
    atom.terms_.push_back(DimTerm{1, {runtime::detail::make_atom(DimAtom::Mod, r, b)}});
    return atom;
  }
  if (a == b || runtime::detail::exact_quotient(a, b)) return Dim(0);
  Dim atom;
  atom.terms_.push_back(DimTerm{1, {runtime::detail::make_atom(DimAtom::Mod, a, b)}});
  return atom;
}

HIDET_INLINE bool operator==(const Dim &a, const Dim &b) {
  if (a.terms_.size() != b.terms_.size()) return false;
  for (std::size_t i = 0; i < a.terms_.size(); ++i)
    if (a.terms_[i].coef != b.terms_[i].coef ||
        !runtime::detail::same_atoms(a.terms_[i], b.terms_[i]))
      return false;
  return true;
}

HIDET_INLINE Dim max(const Dim &a, const Dim &b) {
  if (a.is_constant() && b.is_constant()) return Dim(std::max(a.value(), b.value()));
  if (a == b) return a;
  Dim atom;
  atom.terms_.push_back(DimTerm{1, {runtime::detail::make_atom(DimAtom::Max, a, b)}});
  return atom;
}

HIDET_INLINE Dim min(const Dim &a, const Dim &b) {
  if (a.is_constant() && b.is_constant()) return Dim(std::min(a.value(), b.value()));
  if (a == b) return a;
  Dim atom;
  atom.terms_.push_back(DimTerm{1, {runtime::detail::make_atom(DimAtom::Min, a, b)}});
  return atom;
}

HIDET_INLINE std::ostream &operator<<(std::ostream &os, const Dim &d) { return os << d.str(); }

HIDET_INLINE std::string sym_shape_str(const SymShape &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + shape[i].str();
  return s + "]";
}

HIDET_INLINE SymShape to_sym_shape(const std::vector<std::int64_t> &shape) {
  return SymShape(shape.begin(), shape.end());
}

HIDET_INLINE bool is_constant_shape(const SymShape &shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Dim &d) { return d.is_constant(); });
}

HIDET_INLINE std::vector<std::int64_t> constant_shape(const SymShape &shape) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_constant())
      throw ValueError(str_cat("the shape ", sym_shape_str(shape), " is symbolic (dim ", i, " is ",
                               shape[i].str(), ")"));
    out.push_back(shape[i].value());
  }
  return out;
}

HIDET_INLINE std::vector<std::int64_t> evaluate_shape(const SymShape &shape,
                                                      const SymbolValues &values) {
  std::vector<std::int64_t> out;
  for (const auto &d : shape)
    out.push_back(d.evaluate(values));
  return out;
}

HIDET_INLINE Dim sym_numel(const SymShape &shape) {
  Dim n(1);
  for (const auto &d : shape)
    n = n * d;
  return n;
}

} // namespace hidet
