// A small dlopen wrapper: open the first library of a list of candidate paths, look up symbols,
// and report every path tried (with dlerror()) when none loads. Libraries stay loaded for the
// life of the process.
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

#include "hidet/error.hpp"

namespace hidet::util {

/// A handle to a loaded shared library (never closed).
class DynamicLibrary {
public:
  DynamicLibrary() = default;

  /// Opens the first of `paths` that dlopen() accepts. Returns an unloaded library when none
  /// does; `tried` (if given) then lists "  <path>: <dlerror>" lines, one per attempt.
  static DynamicLibrary open_first(const std::vector<std::string> &paths,
                                   std::string *tried = nullptr);

  /// Like open_first, but throws `Err` naming `what`, every path tried and `hint` on failure.
  template <class Err = Error>
  static DynamicLibrary open_or_throw(const std::vector<std::string> &paths,
                                      const std::string &what, const std::string &hint) {
    std::string tried;
    DynamicLibrary lib = open_first(paths, &tried);
    if (!lib.loaded())
      throw Err(str_cat("could not load ", what, "; tried:\n", tried, hint));
    return lib;
  }

  bool loaded() const { return handle_ != nullptr; }
  /// The path that was opened.
  const std::string &path() const { return path_; }

  /// The symbol as a function pointer of type Fn, or nullptr when absent.
  template <class Fn> Fn symbol(const char *name) const {
    HIDET_ASSERT(handle_, "symbol lookup on an unloaded library");
    return reinterpret_cast<Fn>(::dlsym(handle_, name));
  }
  /// The symbol as Fn; throws `Err` naming the symbol and the library when absent.
  template <class Fn, class Err = Error> Fn require(const char *name) const {
    Fn f = symbol<Fn>(name);
    if (!f)
      throw Err(str_cat("symbol ", name, " not found in ", path_));
    return f;
  }

private:
  void *handle_ = nullptr;
  std::string path_;
};

} // namespace hidet::util

#if HIDET_HEADER_ONLY
#include "hidet/util/impl/dynlib.ipp"
#endif
