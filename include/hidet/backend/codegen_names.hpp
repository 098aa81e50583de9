// Identifier picking for generated CUDA C++: valid C identifiers derived from name hints, unique
// within a scope ("i", "i_1", ...), never a C++ keyword, a CUDA built-in, a math function or a
// reserved spelling (leading "__" or "_X").
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

#include "hidet/config.hpp"

namespace hidet::backend {

/// True for spellings generated code must not use as a variable or function name.
bool is_reserved_cuda_name(std::string_view s);

/// True when `s` is a C identifier.
bool is_c_identifier(std::string_view s);

/// A set of identifiers in use; fresh() picks a new one from a hint.
class NameTable {
public:
  /// Marks `name` as taken.
  void reserve(const std::string &name) { used_.insert(name); }
  bool taken(const std::string &name) const { return used_.count(name) != 0; }

  /// A unique valid identifier based on `hint`: invalid characters become '_', a leading digit
  /// or reserved spelling gets a "v" prefix / "_" suffix, and clashes get "_1", "_2", ...
  std::string fresh(std::string_view hint);

private:
  std::unordered_set<std::string> used_;
};

} // namespace hidet::backend

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/codegen_names.ipp"
#endif
