// Operators as tasks: named inputs, outputs given by compute definitions, and attributes.
//
// Attributes are plain structs reflected with Boost.Hana, so every operator's attributes print,
// hash and compare without hand-written code:
//   struct SoftmaxAttrs { BOOST_HANA_DEFINE_STRUCT(SoftmaxAttrs, (int, axis)); };
//   attrs_str(SoftmaxAttrs{1}) == "axis=1"
// A Task also carries, for injective operators, the inverse index map of each input (input index
// -> output index) that epilogue fusion needs.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/members.hpp>
#include <functional>
#include <optional>
#include <sstream>

#include "hidet/ops/compute.hpp"
#include "hidet/util/hash.hpp"

namespace hidet::ops {

namespace detail {
template <class T> struct is_vector : std::false_type {};
template <class T> struct is_vector<std::vector<T>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

/// Prints one attribute value: numbers, bools, strings, dtypes, vectors and optionals.
template <class T> void print_attr(std::ostream &os, const T &v) {
  if constexpr (std::is_same_v<T, bool>) os << (v ? "true" : "false");
  else if constexpr (is_vector<T>::value) {
    os << "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) os << ", ";
      print_attr(os, v[i]);
    }
    os << "]";
  } else if constexpr (is_optional<T>::value) {
    if (v) print_attr(os, *v);
    else os << "none";
  } else if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    os << s.str();
  } else if constexpr (std::is_enum_v<T>) {
    os << static_cast<long long>(v);
  } else {
    os << v;
  }
}
/// "[1, 2, 3]": a list of integers as attributes and messages print it.
std::string ints_str(const std::vector<std::int64_t> &v);
} // namespace detail

/// "name1=value1, name2=value2": the attributes as text (also their identity in caches).
template <class A> std::string attrs_str(const A &a) {
  std::ostringstream os;
  bool first = true;
  boost::hana::for_each(boost::hana::accessors<A>(), [&](auto pair) {
    if (!first) os << ", ";
    first = false;
    os << boost::hana::to<char const *>(boost::hana::first(pair)) << "=";
    detail::print_attr(os, boost::hana::second(pair)(a));
  });
  return os.str();
}
/// Field-by-field equality of two attribute structs.
template <class A> bool attrs_equal(const A &a, const A &b) {
  bool eq = true;
  boost::hana::for_each(boost::hana::accessors<A>(), [&](auto pair) {
    eq = eq && boost::hana::second(pair)(a) == boost::hana::second(pair)(b);
  });
  return eq;
}
/// A hash of the attributes (of their printed form, which is exact for every supported field).
template <class A> std::size_t attrs_hash(const A &a) { return std::hash<std::string>{}(attrs_str(a)); }

/// Maps an index of one tensor to an index of another.
using IndexMap = std::function<Idx(const Idx &)>;

/// An operator instance: its name, inputs, outputs (compute definitions over the inputs) and
/// attributes (as text, see attrs_str).
struct Task {
  std::string name;
  std::vector<TensorDef> inputs;
  std::vector<TensorDef> outputs;
  std::string attrs;
  /// For injective operators: inverse_map[i] maps an index of inputs[i] to the output index
  /// (empty when the operator is not injective or the map is not defined).
  std::vector<IndexMap> inverse_map;

  /// True when every output is an element-wise compute (no reduction anywhere).
  bool injective() const;
  /// "add(a: f32(2, 3), b: f32(n, 3)) -> f32(n, 3) {attrs}"
  std::string str() const;
};

/// All nodes reachable from `outputs`, each after the nodes it reads (inputs first).
std::vector<const TensorNode *> topo_order(const std::vector<TensorDef> &outputs);

/// The symbols in the extents of `task`'s tensors (inputs, outputs, intermediates and reduction
/// extents), sorted; empty for a task of constant shapes.
std::vector<std::string> task_symbols(const Task &task);

/// `task` with its symbols given `values` (each must have one): the same definition over constant
/// extents, symbol variables replaced by their values. A task of constant shapes comes back as it is.
Task specialize(const Task &task, const SymbolValues &values);

/// `task` with the symbols that `values` gives replaced by their values and the others kept
/// (a task over [n, 64, h, w] with {h: 56, w: 56}: over [n, 64, 56, 56]).
Task substitute(const Task &task, const SymbolValues &values);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/task.ipp"
#endif
